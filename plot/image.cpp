#include "plot/image.h"

#include <stb/stb_image_write.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "plot/font.h"
#include "tensor/error.h"

namespace qkv::plot {

Image::Image(int width, int height, Rgb background) : width_(width), height_(height) {
  if (width < 1 || height < 1 || width > kMaxSide || height > kMaxSide) {
    throw ValueError("Image: size " + std::to_string(width) + "x" + std::to_string(height) +
                     " is outside 1.." + std::to_string(kMaxSide) + " on a side");
  }
  clip_ = {0, 0, width, height};
  bytes_.resize(static_cast<std::size_t>(width) * height * 3);
  for (std::size_t i = 0; i < bytes_.size(); i += 3) {
    bytes_[i] = background.r;
    bytes_[i + 1] = background.g;
    bytes_[i + 2] = background.b;
  }
}

Rgb Image::pixel(int x, int y) const {
  if (x < 0 || x >= width_ || y < 0 || y >= height_) {
    throw IndexError("Image::pixel: (" + std::to_string(x) + ", " + std::to_string(y) +
                     ") is outside the " + std::to_string(width_) + "x" + std::to_string(height_) +
                     " canvas");
  }
  const std::size_t i = (static_cast<std::size_t>(y) * width_ + x) * 3;
  return {bytes_[i], bytes_[i + 1], bytes_[i + 2]};
}

void Image::set_clip(Rect rect) {
  const int x0 = std::clamp(rect.x, 0, width_), y0 = std::clamp(rect.y, 0, height_);
  const int x1 = std::clamp(rect.x + rect.width, x0, width_);
  const int y1 = std::clamp(rect.y + rect.height, y0, height_);
  clip_ = {x0, y0, x1 - x0, y1 - y0};
}

void Image::clear_clip() { clip_ = {0, 0, width_, height_}; }

bool Image::inside_clip(int x, int y) const {
  return x >= clip_.x && x < clip_.x + clip_.width && y >= clip_.y && y < clip_.y + clip_.height;
}

void Image::set_pixel(int x, int y, Rgb color) { blend_pixel(x, y, color, 1.0f); }

void Image::blend_pixel(int x, int y, Rgb color, float alpha) {
  if (!inside_clip(x, y) || !(alpha > 0.0f)) return;
  alpha = std::min(alpha, 1.0f);
  std::uint8_t* p = &bytes_[(static_cast<std::size_t>(y) * width_ + x) * 3];
  const auto mix = [alpha](std::uint8_t old, std::uint8_t add) {
    return static_cast<std::uint8_t>(std::lround(old + alpha * (add - old)));
  };
  p[0] = mix(p[0], color.r);
  p[1] = mix(p[1], color.g);
  p[2] = mix(p[2], color.b);
}

void Image::fill_rect(Rect rect, Rgb color) {
  for (int y = rect.y; y < rect.y + rect.height; ++y) {
    for (int x = rect.x; x < rect.x + rect.width; ++x) set_pixel(x, y, color);
  }
}

void Image::stroke_rect(Rect rect, Rgb color) {
  if (rect.width < 1 || rect.height < 1) return;
  fill_rect({rect.x, rect.y, rect.width, 1}, color);
  fill_rect({rect.x, rect.y + rect.height - 1, rect.width, 1}, color);
  fill_rect({rect.x, rect.y, 1, rect.height}, color);
  fill_rect({rect.x + rect.width - 1, rect.y, 1, rect.height}, color);
}

void Image::draw_line(double x0, double y0, double x1, double y1, Rgb color, double thickness) {
  const double half = thickness / 2.0;
  const double dx = x1 - x0, dy = y1 - y0;
  const double length2 = dx * dx + dy * dy;
  const int xa = static_cast<int>(std::floor(std::min(x0, x1) - half - 1));
  const int xb = static_cast<int>(std::ceil(std::max(x0, x1) + half + 1));
  const int ya = static_cast<int>(std::floor(std::min(y0, y1) - half - 1));
  const int yb = static_cast<int>(std::ceil(std::max(y0, y1) + half + 1));
  for (int y = std::max(ya, clip_.y); y <= std::min(yb, clip_.y + clip_.height - 1); ++y) {
    for (int x = std::max(xa, clip_.x); x <= std::min(xb, clip_.x + clip_.width - 1); ++x) {
      const double px = x + 0.5 - x0, py = y + 0.5 - y0;
      // Distance from the pixel centre to the nearest point x0 + t (x1 - x0), t in [0, 1].
      const double t = length2 > 0 ? std::clamp((px * dx + py * dy) / length2, 0.0, 1.0) : 0.0;
      const double distance = std::hypot(px - t * dx, py - t * dy);
      blend_pixel(x, y, color, static_cast<float>(std::clamp(half + 0.5 - distance, 0.0, 1.0)));
    }
  }
}

void Image::fill_circle(double cx, double cy, double radius, Rgb color) {
  draw_line(cx, cy, cx, cy, color, 2.0 * radius);
}

void Image::draw_text(int x, int y, std::string_view text, Rgb color, int scale,
                      TextDirection direction) {
  const int columns = text_width(text);  // in font pixels
  for (const Rect& q : text_quads(text)) {
    // Turning the text counter-clockwise sends font row r to canvas column r and font column c to
    // canvas row (columns - 1 - c), so that the text reads upwards.
    const Rect turned =
        direction == TextDirection::Vertical ? Rect{q.y, columns - q.x - q.width, q.height, q.width} : q;
    fill_rect({x + turned.x * scale, y + turned.y * scale, turned.width * scale, turned.height * scale},
              color);
  }
}

std::vector<std::uint8_t> Image::encode_png() const {
  std::vector<std::uint8_t> png;
  const auto append = [](void* context, void* data, int size) {
    auto* out = static_cast<std::vector<std::uint8_t>*>(context);
    const auto* begin = static_cast<const std::uint8_t*>(data);
    out->insert(out->end(), begin, begin + size);
  };
  if (!stbi_write_png_to_func(append, &png, width_, height_, 3, bytes_.data(), width_ * 3)) {
    throw FormatError("encode_png: stb_image_write could not encode a " + std::to_string(width_) +
                      "x" + std::to_string(height_) + " image");
  }
  return png;
}

void Image::write_png(const std::string& path) const {
  const std::vector<std::uint8_t> png = encode_png();
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    throw FormatError("write_png: cannot open '" + path + "' for writing: " + std::strerror(errno));
  }
  const bool written = std::fwrite(png.data(), 1, png.size(), file) == png.size();
  const int write_errno = errno;
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed) {
    std::remove(path.c_str());  // leave no truncated PNG behind
    throw FormatError("write_png: writing " + std::to_string(png.size()) + " bytes to '" + path +
                      "' failed: " + std::strerror(written ? errno : write_errno));
  }
}

Image tile(const std::vector<Image>& images, int columns) {
  if (images.empty()) throw ValueError("tile: no images");
  if (columns < 1) throw ValueError("tile: columns is " + std::to_string(columns) + "; expected 1 or more");
  int cell_w = 0, cell_h = 0;
  for (const Image& image : images) {
    cell_w = std::max(cell_w, image.width());
    cell_h = std::max(cell_h, image.height());
  }
  const int64_t n = static_cast<int64_t>(images.size()), cols = std::min<int64_t>(columns, n);
  const int64_t rows = (n + cols - 1) / cols, width = cols * cell_w, height = rows * cell_h;
  if (width > Image::kMaxSide || height > Image::kMaxSide)
    throw ValueError("tile: " + std::to_string(n) + " images of up to " + std::to_string(cell_w) + "x" +
                     std::to_string(cell_h) + " in " + std::to_string(cols) + " columns make a " +
                     std::to_string(width) + "x" + std::to_string(height) + " image, over " +
                     std::to_string(Image::kMaxSide) + " pixels a side");
  Image out(static_cast<int>(width), static_cast<int>(height));
  for (int64_t k = 0; k < n; ++k) {
    const Image& image = images[static_cast<size_t>(k)];
    const int x0 = static_cast<int>((k % cols) * cell_w), y0 = static_cast<int>((k / cols) * cell_h);
    for (int y = 0; y < image.height(); ++y)
      for (int x = 0; x < image.width(); ++x) out.set_pixel(x0 + x, y0 + y, image.pixel(x, y));
  }
  return out;
}

}  // namespace qkv::plot
