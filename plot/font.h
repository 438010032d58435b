// qkv's bitmap font, so that figures need no font files: every printable ASCII character (32..126)
// drawn by hand on a 5x9 pixel grid. Rows 0..6 hold capitals, digits and ascenders (the baseline
// is under row 6), rows 7..8 the descenders of g j p q y and the tail of the comma; lowercase
// letters are 5 rows tall. Text advances 6 pixels per character, leaving one blank column between
// glyphs. At scale k every font pixel becomes a k x k block.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace qkv::plot {

inline constexpr int kGlyphWidth = 5;    // pixels per row
inline constexpr int kGlyphHeight = 9;   // rows, top first: 7 above the baseline, 2 below
inline constexpr int kGlyphAdvance = 6;  // glyph width plus one column of spacing

// A glyph is one 5-bit mask per row; bit 4 is the leftmost pixel.
using Glyph = std::array<std::uint8_t, kGlyphHeight>;

// The glyph of a printable ASCII character; any other byte gets the glyph of '?'.
const Glyph& glyph(char c);

// Whether the glyph of c inks column x (0..4) of row y (0..8); false outside the grid.
bool glyph_pixel(char c, int x, int y);

// The characters the font draws for UTF-8 text: printable ASCII as is, and one '?' for each
// other character (a control byte, or a whole multi-byte sequence such as "é").
std::string printable(std::string_view text);

// Size in pixels of text drawn at a scale: 6*scale per character less the spacing after the last
// one, and 9*scale in height. Both count characters as printable() does.
int text_width(std::string_view text, int scale = 1);
int text_height(int scale = 1);

}  // namespace qkv::plot
