// qkv's text, so that figures need no font files: the glyphs of stb_easy_font (Sean Barrett's
// public-domain bitmap font, <stb/stb_easy_font.h>), which builds each printable ASCII character
// (32..126) from a few axis-aligned rectangles on a pixel grid. Capitals, digits and ascenders
// take rows 0..6 (the baseline is under row 6), short lowercase letters such as a, e, o rows
// 2..6, and the descenders of g j p q y and the tail of the comma rows 7..8. Characters are
// proportional: most are 4 pixels wide, i and l 1, @ 7, each followed by 2 blank columns. At
// scale k every font pixel becomes a k x k block.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plot/image.h"

namespace qkv::plot {

// The characters the font draws for UTF-8 text: printable ASCII as is, and one '?' for each
// other character (a control byte, or a whole multi-byte sequence such as "é").
std::string printable(std::string_view text);

// The inked rectangles of text at scale 1, in font pixels from the top-left corner of its box.
// Rectangles may overlap where strokes meet.
std::vector<Rect> text_quads(std::string_view text);

// Size in pixels of the box that holds text drawn at a scale: from the first column to the last
// inked column of the last character (its trailing blank columns are not part of the box), and
// 9 rows high. Both count characters as printable() does.
int text_width(std::string_view text, int scale = 1);
int text_height(int scale = 1);

}  // namespace qkv::plot
