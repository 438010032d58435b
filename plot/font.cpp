// Text as rectangles, through stb_easy_font. The header defines its functions static, so every
// file that includes it gets its own copy and none defines an implementation macro.
#include "plot/font.h"

#include <stb/stb_easy_font.h>

#include <cstring>

namespace qkv::plot {
namespace {

constexpr int kFirstChar = 32;     // ' '
constexpr int kLastChar = 126;     // '~'
constexpr int kFontHeight = 9;     // the glyphs' rows; stb_easy_font_height's 12 adds line spacing
constexpr int kTrailingBlank = 2;  // blank columns after each glyph within its advance

// stb_easy_font writes each rectangle as four vertices of 16 bytes (x, y, z as floats, then an
// RGBA colour), corners in the order top-left, top-right, bottom-right, bottom-left; at most 11
// rectangles make a glyph ('X').
constexpr int kVertexBytes = 16;
constexpr int kQuadBytes = 4 * kVertexBytes;
constexpr int kMaxQuadsPerChar = 11;

float vertex_coordinate(const char* buffer, int vertex, int axis) {
  float value;
  std::memcpy(&value, buffer + vertex * kVertexBytes + axis * sizeof(float), sizeof value);
  return value;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= kFirstChar && byte <= kLastChar) {
      out += c;
    } else if ((byte & 0xC0) != 0x80) {  // not a UTF-8 continuation byte (10xxxxxx)
      out += '?';
    }
  }
  return out;
}

std::vector<Rect> text_quads(std::string_view text) {
  std::string chars = printable(text);  // stb reads a mutable C string, and only ASCII 32..126
  std::vector<char> buffer(chars.size() * kMaxQuadsPerChar * kQuadBytes);
  const int count =
      stb_easy_font_print(0, 0, chars.data(), nullptr, buffer.data(), static_cast<int>(buffer.size()));
  std::vector<Rect> quads;
  quads.reserve(count);
  for (int q = 0; q < count; ++q) {
    const char* quad = buffer.data() + q * kQuadBytes;
    // The corners are whole numbers: stb places strokes on the pixel grid.
    const int x0 = static_cast<int>(vertex_coordinate(quad, 0, 0));
    const int y0 = static_cast<int>(vertex_coordinate(quad, 0, 1));
    const int x1 = static_cast<int>(vertex_coordinate(quad, 2, 0));
    const int y1 = static_cast<int>(vertex_coordinate(quad, 2, 1));
    quads.push_back({x0, y0, x1 - x0, y1 - y0});
  }
  return quads;
}

int text_width(std::string_view text, int scale) {
  std::string chars = printable(text);
  return chars.empty() ? 0 : (stb_easy_font_width(chars.data()) - kTrailingBlank) * scale;
}

int text_height(int scale) { return kFontHeight * scale; }

}  // namespace qkv::plot
