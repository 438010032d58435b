// An RGB canvas with the few drawing operations figures need, saved as PNG through stb_image_write.
// Coordinates are pixels, x to the right and y down from the top-left corner; pixel (x, y) covers
// the square [x, x+1) x [y, y+1), so its centre is (x + 0.5, y + 0.5). Drawing clips silently to
// the canvas and to the clip rectangle, if one is set.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::plot {

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};

inline constexpr Rgb kWhite{255, 255, 255};
inline constexpr Rgb kBlack{0, 0, 0};

// A rectangle of pixels: columns x..x+width-1, rows y..y+height-1.
struct Rect {
  int x = 0, y = 0, width = 0, height = 0;
};

// Horizontal text reads left to right; vertical text is turned a quarter turn counter-clockwise
// and reads bottom to top, like a y-axis label.
enum class TextDirection { Horizontal, Vertical };

class Image {
 public:
  // A canvas filled with the background colour; each side must be in 1..kMaxSide (ValueError).
  static constexpr int kMaxSide = 16384;
  Image(int width, int height, Rgb background = kWhite);

  int width() const { return width_; }
  int height() const { return height_; }
  // The pixel at (x, y); IndexError outside the canvas.
  Rgb pixel(int x, int y) const;
  // Row-major RGB bytes, top row first: 3 * width * height of them.
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

  // Limits all drawing to a rectangle (itself clipped to the canvas) until clear_clip().
  void set_clip(Rect rect);
  void clear_clip();

  // Paints one pixel, or mixes colour into it with weight alpha in [0, 1] (0 keeps the old colour).
  void set_pixel(int x, int y, Rgb color);
  void blend_pixel(int x, int y, Rgb color, float alpha);

  void fill_rect(Rect rect, Rgb color);
  // The 1-pixel outline just inside rect.
  void stroke_rect(Rect rect, Rgb color);
  // An anti-aliased segment with round ends, thickness in pixels. Each pixel takes the share of
  // its area that lies within thickness/2 of the segment, approximated from its centre's distance.
  void draw_line(double x0, double y0, double x1, double y1, Rgb color, double thickness = 1.0);
  // An anti-aliased filled disc.
  void fill_circle(double cx, double cy, double radius, Rgb color);
  // Text in qkv's font (plot/font.h) whose box, text_width x text_height pixels (swapped when
  // vertical), has its top-left corner at (x, y). Each font pixel is a scale x scale block.
  void draw_text(int x, int y, std::string_view text, Rgb color, int scale = 1,
                 TextDirection direction = TextDirection::Horizontal);

  // The PNG file contents (8-bit RGB) as encoded by stb_image_write.
  std::vector<std::uint8_t> encode_png() const;
  // Writes the PNG file; FormatError naming the path if it cannot be written completely.
  void write_png(const std::string& path) const;

 private:
  bool inside_clip(int x, int y) const;

  int width_, height_;
  Rect clip_;
  std::vector<std::uint8_t> bytes_;
};

// The images in a grid, `columns` to a row, left to right and then top to bottom, each in a cell as
// large as the largest, on a white background: the heads of one attention layer side by side, as
// d2l's show_heatmaps draws them. ValueError for no images, columns below 1, or a grid wider or
// taller than Image::kMaxSide.
Image tile(const std::vector<Image>& images, int columns);

}  // namespace qkv::plot
