// The ink of text as the set of font pixels it covers, for the tests of the font, of draw_text and
// of figures that write text. The font's rectangles may overlap where strokes meet; a set counts
// each pixel once.
#pragma once

#include <set>
#include <string_view>
#include <utility>

#include "plot/font.h"

namespace qkv::testing {

// Pixels (x, y) of text at scale 1, from the top-left corner of its box.
inline std::set<std::pair<int, int>> font_ink(std::string_view text) {
  std::set<std::pair<int, int>> pixels;
  for (const qkv::plot::Rect& q : qkv::plot::text_quads(text)) {
    for (int y = q.y; y < q.y + q.height; ++y) {
      for (int x = q.x; x < q.x + q.width; ++x) pixels.insert({x, y});
    }
  }
  return pixels;
}

}  // namespace qkv::testing
