// The bitmap font: glyph patterns, metrics and the treatment of characters it cannot draw.
#include <doctest/doctest.h>

#include <set>

#include "plot/font.h"

using qkv::plot::Glyph;

TEST_CASE("font glyph of A has its hand-drawn pixel pattern") {
  // The sheet in plot/font.cpp draws A as .###. / #...# / #...# / ##### / #...# / #...# / #...#
  // with two blank descender rows; bit 4 is the leftmost pixel.
  const Glyph expected = {0b01110, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001, 0, 0};
  CHECK(qkv::plot::glyph('A') == expected);
  CHECK(qkv::plot::glyph_pixel('A', 0, 1));
  CHECK_FALSE(qkv::plot::glyph_pixel('A', 0, 0));
  CHECK(qkv::plot::glyph_pixel('A', 4, 3));
  CHECK_FALSE(qkv::plot::glyph_pixel('A', 5, 3));  // outside the 5x9 grid
  CHECK_FALSE(qkv::plot::glyph_pixel('A', 2, -1));
}

TEST_CASE("font draws every printable ascii character with its own glyph") {
  std::set<Glyph> seen;
  for (int c = 33; c <= 126; ++c) {
    const Glyph& g = qkv::plot::glyph(static_cast<char>(c));
    int ink = 0;
    for (const auto row : g) ink += row != 0;
    CHECK_MESSAGE(ink > 0, "glyph of '" << static_cast<char>(c) << "' is blank");
    CHECK_MESSAGE(seen.insert(g).second,
                  "glyph of '" << static_cast<char>(c) << "' repeats another");
    for (const auto row : g) CHECK(row < (1 << qkv::plot::kGlyphWidth));
  }
  CHECK(qkv::plot::glyph(' ') == Glyph{});
}

TEST_CASE("font descenders sit below the baseline and capitals above it") {
  const auto below_baseline = [](char c) {
    const Glyph& g = qkv::plot::glyph(c);
    return g[7] != 0 || g[8] != 0;
  };
  for (const char c : std::string("gjpqy,;")) CHECK_MESSAGE(below_baseline(c), c);
  for (char c = 'A'; c <= 'Z'; ++c) CHECK_MESSAGE(!below_baseline(c), c);
  for (char c = '0'; c <= '9'; ++c) CHECK_MESSAGE(!below_baseline(c), c);
}

TEST_CASE("text_width counts six pixels per character less the last spacing column") {
  CHECK(qkv::plot::text_width("") == 0);
  CHECK(qkv::plot::text_width("A") == 5);
  CHECK(qkv::plot::text_width("abc") == 3 * 6 - 1);
  CHECK(qkv::plot::text_width("abc", 3) == 3 * (3 * 6 - 1));
  CHECK(qkv::plot::text_height() == 9);
  CHECK(qkv::plot::text_height(2) == 18);
}

TEST_CASE("printable turns each character the font lacks into one question mark") {
  CHECK(qkv::plot::printable("plain text 0.5") == "plain text 0.5");
  CHECK(qkv::plot::printable("caf\xC3\xA9") == "caf?");  // é is two bytes in UTF-8
  CHECK(qkv::plot::printable("\xE2\x86\x92x") == "?x");  // → is three
  CHECK(qkv::plot::printable("a\tb\n") == "a?b?");
  CHECK(qkv::plot::text_width("caf\xC3\xA9") == qkv::plot::text_width("cafe"));
  CHECK(qkv::plot::glyph('\x01') == qkv::plot::glyph('?'));
  CHECK(qkv::plot::glyph('\xC3') == qkv::plot::glyph('?'));
}
