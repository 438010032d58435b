// The RGB canvas: pixel access, clipping, anti-aliased lines, text and PNG output.
#include <doctest/doctest.h>
#include <stb/stb_image.h>

#include <algorithm>
#include <string>

#include "font_testing.h"
#include "plot/font.h"
#include "plot/image.h"
#include "png_testing.h"
#include "tensor/error.h"

using qkv::plot::Image;
using qkv::plot::Rgb;

TEST_CASE("image starts filled with its background colour") {
  const Image image(3, 2, Rgb{10, 20, 30});
  CHECK(image.width() == 3);
  CHECK(image.height() == 2);
  CHECK(image.bytes().size() == 3 * 2 * 3);
  CHECK(image.pixel(2, 1) == Rgb{10, 20, 30});
}

TEST_CASE("image rejects a bad size and pixel reads outside the canvas") {
  CHECK_THROWS_AS(Image(0, 5), qkv::ValueError);
  CHECK_THROWS_AS(Image(5, -1), qkv::ValueError);
  CHECK_THROWS_AS(Image(Image::kMaxSide + 1, 1), qkv::ValueError);
  const Image image(4, 4);
  CHECK_THROWS_AS(image.pixel(4, 0), qkv::IndexError);
  CHECK_THROWS_AS(image.pixel(0, -1), qkv::IndexError);
}

TEST_CASE("blend_pixel mixes colours by alpha and drawing off the canvas is ignored") {
  Image image(2, 2, qkv::plot::kWhite);
  image.blend_pixel(0, 0, qkv::plot::kBlack, 0.25f);
  CHECK(image.pixel(0, 0) == Rgb{191, 191, 191});  // 255 - 0.25 * 255 = 191.25
  image.blend_pixel(1, 0, Rgb{0, 0, 255}, 0.0f);
  CHECK(image.pixel(1, 0) == qkv::plot::kWhite);
  image.set_pixel(-1, 0, qkv::plot::kBlack);
  image.fill_rect({1, 1, 10, 10}, qkv::plot::kBlack);
  CHECK(image.pixel(1, 1) == qkv::plot::kBlack);
  CHECK(image.pixel(0, 1) == qkv::plot::kWhite);
}

TEST_CASE("clip rectangle limits drawing until it is cleared") {
  Image image(10, 10);
  image.set_clip({2, 3, 4, 5});
  image.fill_rect({0, 0, 10, 10}, qkv::plot::kBlack);
  int inked = 0;
  for (int y = 0; y < 10; ++y) {
    for (int x = 0; x < 10; ++x) {
      const bool inside = x >= 2 && x < 6 && y >= 3 && y < 8;
      CHECK((image.pixel(x, y) == qkv::plot::kBlack) == inside);
      inked += image.pixel(x, y) == qkv::plot::kBlack;
    }
  }
  CHECK(inked == 4 * 5);
  image.clear_clip();
  image.set_pixel(0, 0, qkv::plot::kBlack);
  CHECK(image.pixel(0, 0) == qkv::plot::kBlack);
}

TEST_CASE("draw_line through pixel centres inks one row and leaves its neighbours") {
  Image image(12, 10);
  image.draw_line(2.5, 5.5, 9.5, 5.5, qkv::plot::kBlack, 1.0);
  for (int x = 2; x <= 9; ++x) CHECK(image.pixel(x, 5) == qkv::plot::kBlack);
  for (int x = 0; x < 12; ++x) {
    CHECK(image.pixel(x, 4) == qkv::plot::kWhite);
    CHECK(image.pixel(x, 6) == qkv::plot::kWhite);
  }
}

TEST_CASE("draw_line between two pixel rows shares its ink between them") {
  // A 1-pixel line along y = 5 covers half of row 4 and half of row 5: both end up mid-grey,
  // 255 - 0.5 * 255 = 127.5, rounded to 128 (std::lround rounds halves away from zero).
  Image image(12, 10);
  image.draw_line(0.0, 5.0, 12.0, 5.0, qkv::plot::kBlack, 1.0);
  CHECK(image.pixel(6, 4) == Rgb{128, 128, 128});
  CHECK(image.pixel(6, 5) == Rgb{128, 128, 128});
  CHECK(image.pixel(6, 3) == qkv::plot::kWhite);
}

TEST_CASE("fill_circle inks the disc and not beyond its radius") {
  Image image(20, 20);
  image.fill_circle(10.0, 10.0, 4.0, qkv::plot::kBlack);
  CHECK(image.pixel(10, 10) == qkv::plot::kBlack);
  CHECK(image.pixel(12, 11) == qkv::plot::kBlack);  // centre at distance 2.9
  CHECK(image.pixel(15, 10) == qkv::plot::kWhite);  // centre at distance 5.5
  CHECK(image.pixel(13, 13) == qkv::plot::kWhite);  // centre at distance 4.9
}

TEST_CASE("draw_text renders each font pixel as a scale x scale block") {
  const int scale = 2, x0 = 3, y0 = 4;
  Image image(30, 30);
  image.draw_text(x0, y0, "Ag", qkv::plot::kBlack, scale);
  const auto ink = qkv::testing::font_ink("Ag");
  for (int y = 0; y < 30; ++y) {
    for (int x = 0; x < 30; ++x) {
      // The font pixel under (x, y); floor division, as pixels left of x0 are outside the text.
      const int fx = x >= x0 ? (x - x0) / scale : -1, fy = y >= y0 ? (y - y0) / scale : -1;
      const bool inked = ink.count({fx, fy}) == 1;
      CHECK_MESSAGE((image.pixel(x, y) == qkv::plot::kBlack) == inked, "at " << x << "," << y);
    }
  }
}

TEST_CASE("draw_text inks the whole measured box and nothing outside it") {
  // "Ag" reaches every edge of its box: A the top row and left column, g the descender row and
  // the last column.
  const int scale = 3, x0 = 5, y0 = 2;
  const int w = qkv::plot::text_width("Ag", scale), h = qkv::plot::text_height(scale);
  Image image(40, 40);
  image.draw_text(x0, y0, "Ag", qkv::plot::kBlack, scale);
  int left = 40, top = 40, right = -1, bottom = -1;
  for (int y = 0; y < 40; ++y) {
    for (int x = 0; x < 40; ++x) {
      if (image.pixel(x, y) != qkv::plot::kBlack) continue;
      left = std::min(left, x);
      top = std::min(top, y);
      right = std::max(right, x);
      bottom = std::max(bottom, y);
    }
  }
  CHECK(left == x0);
  CHECK(top == y0);
  CHECK(right == x0 + w - 1);
  CHECK(bottom == y0 + h - 1);
}

TEST_CASE("vertical text is the horizontal text turned a quarter turn counter-clockwise") {
  const std::string text = "Hi!";
  const int w = qkv::plot::text_width(text), h = qkv::plot::text_height();
  Image horizontal(w, h), vertical(h, w);
  horizontal.draw_text(0, 0, text, qkv::plot::kBlack);
  vertical.draw_text(0, 0, text, qkv::plot::kBlack, 1, qkv::plot::TextDirection::Vertical);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) CHECK(horizontal.pixel(x, y) == vertical.pixel(y, w - 1 - x));
  }
  // Reading upwards, the first letter is at the bottom: H's left stem is the bottom row.
  CHECK(vertical.pixel(0, w - 1) == qkv::plot::kBlack);
  CHECK(vertical.pixel(6, w - 1) == qkv::plot::kBlack);
}

TEST_CASE("write_png writes an 8-bit RGB PNG of the image size that decodes to its pixels") {
  const qkv::testing::TempDir dir("image_png");
  Image image(7, 5, Rgb{1, 2, 3});
  image.set_pixel(6, 4, Rgb{250, 128, 0});
  const std::string path = dir.file("small.png");
  image.write_png(path);

  const std::vector<std::uint8_t> bytes = qkv::testing::read_bytes(path);
  CHECK(bytes == image.encode_png());
  const qkv::testing::PngHeader header = qkv::testing::read_png_header(bytes);
  REQUIRE(header.valid);
  CHECK(header.width == 7);
  CHECK(header.height == 5);
  CHECK(header.bit_depth == 8);
  CHECK(header.color_type == 2);  // truecolour RGB

  int w = 0, h = 0, channels = 0;
  unsigned char* decoded =
      stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &channels, 3);
  REQUIRE(decoded != nullptr);
  CHECK(w == 7);
  CHECK(h == 5);
  CHECK(std::vector<std::uint8_t>(decoded, decoded + 7 * 5 * 3) == image.bytes());
  stbi_image_free(decoded);
}

TEST_CASE("write_png names the path it cannot write") {
  const qkv::testing::TempDir dir("image_bad_path");
  const std::string path = dir.file("missing_dir/figure.png");
  try {
    Image(4, 4).write_png(path);
    FAIL("write_png did not throw");
  } catch (const qkv::FormatError& e) {
    CHECK(std::string(e.what()).find(path) != std::string::npos);
  }
}

TEST_CASE("tile lays images out in a grid of equal cells, left to right then down") {
  // Three images of different sizes in two columns: cells of the largest, 3x2; a white hole last.
  const Image red(2, 1, Rgb{255, 0, 0}), green(3, 2, Rgb{0, 255, 0}), blue(1, 1, Rgb{0, 0, 255});
  const Image grid = qkv::plot::tile({red, green, blue}, 2);
  CHECK(grid.width() == 6);
  CHECK(grid.height() == 4);
  CHECK(grid.pixel(0, 0) == Rgb{255, 0, 0});
  CHECK(grid.pixel(2, 0) == qkv::plot::kWhite);  // right of the narrower first image
  CHECK(grid.pixel(3, 1) == Rgb{0, 255, 0});
  CHECK(grid.pixel(0, 2) == Rgb{0, 0, 255});
  CHECK(grid.pixel(4, 3) == qkv::plot::kWhite);
  CHECK(qkv::plot::tile({red, green}, 5).width() == 6);  // no wider than the images need
  CHECK_THROWS_AS(qkv::plot::tile({}, 2), qkv::ValueError);
  CHECK_THROWS_AS(qkv::plot::tile({red}, 0), qkv::ValueError);
  CHECK_THROWS_AS(qkv::plot::tile(std::vector<Image>(9, Image(2000, 10)), 9), qkv::ValueError);
}
