// The font: what each character draws, the box text_width and text_height measure, and the
// treatment of characters it cannot draw.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "font_testing.h"
#include "plot/font.h"

using qkv::testing::font_ink;

TEST_CASE("font draws every printable ascii character inside its measured box") {
  for (int c = 33; c <= 126; ++c) {
    const std::string text(1, static_cast<char>(c));
    const auto pixels = font_ink(text);
    CHECK_MESSAGE(!pixels.empty(), "'" << text << "' is blank");
    for (const auto& [x, y] : pixels) {
      CHECK_MESSAGE((x >= 0 && x < qkv::plot::text_width(text) && y >= 0 && y < qkv::plot::text_height()),
                    "'" << text << "' inks (" << x << ", " << y << ")");
    }
  }
  CHECK(font_ink(" ").empty());
}

TEST_CASE("font gives every printable ascii character its own shape but l and |") {
  // stb_easy_font draws l as a plain bar, the same as |; every other character differs.
  std::map<std::set<std::pair<int, int>>, char> seen;
  for (int c = 33; c <= 126; ++c) {
    const auto [first, added] = seen.emplace(font_ink(std::string(1, static_cast<char>(c))), c);
    if (c == '|') {
      CHECK(first->second == 'l');
    } else {
      CHECK_MESSAGE(added, "'" << static_cast<char>(c) << "' looks like '" << first->second << "'");
    }
  }
  CHECK(font_ink("A") != font_ink("B"));
}

TEST_CASE("font descenders sit below the baseline and capitals above it") {
  const auto below_baseline = [](char c) {
    const auto pixels = font_ink(std::string(1, c));
    return std::any_of(pixels.begin(), pixels.end(), [](const auto& p) { return p.second >= 7; });
  };
  for (const char c : std::string("gjpqy,;")) CHECK_MESSAGE(below_baseline(c), c);
  for (char c = 'A'; c <= 'Z'; ++c) CHECK_MESSAGE(!below_baseline(c), c);
  for (char c = '0'; c <= '9'; ++c) CHECK_MESSAGE(!below_baseline(c), c);
}

TEST_CASE("font places text left to right, each character at its own advance") {
  // The ink of "AB" is A's, then B's moved right by A's width plus two blank columns.
  const int advance = qkv::plot::text_width("A") + 2;
  auto expected = font_ink("A");
  for (const auto& [x, y] : font_ink("B")) expected.insert({x + advance, y});
  CHECK(font_ink("AB") == expected);
}

TEST_CASE("text_width is proportional and ends at the last inked column") {
  CHECK(qkv::plot::text_width("") == 0);
  CHECK(qkv::plot::text_width("A") == 4);
  CHECK(qkv::plot::text_width("i") == 1);
  CHECK(qkv::plot::text_width("@") == 7);
  CHECK(qkv::plot::text_width("abc") == 6 + 6 + 4);
  CHECK(qkv::plot::text_width("abc", 3) == 3 * qkv::plot::text_width("abc"));
  CHECK(qkv::plot::text_height() == 9);
  CHECK(qkv::plot::text_height(2) == 18);
}

TEST_CASE("printable turns each character the font lacks into one question mark") {
  CHECK(qkv::plot::printable("plain text 0.5") == "plain text 0.5");
  CHECK(qkv::plot::printable("caf\xC3\xA9") == "caf?");  // é is two bytes in UTF-8
  CHECK(qkv::plot::printable("\xE2\x86\x92x") == "?x");  // → is three
  CHECK(qkv::plot::printable("a\tb\n") == "a?b?");
  CHECK(qkv::plot::printable("\x7F") == "?");  // DEL is not printable
  CHECK(qkv::plot::text_width("caf\xC3\xA9") == qkv::plot::text_width("caf?"));
  CHECK(font_ink("\x01") == font_ink("?"));
  CHECK(font_ink("\xC3\xA9") == font_ink("?"));
}
