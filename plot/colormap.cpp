#include "plot/colormap.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string>

#include "tensor/error.h"

namespace qkv::plot {
namespace {

// Each colormap is a few evenly spaced stops, interpolated linearly in sRGB. The stops are the
// published values: viridis sampled at 9 points (matplotlib / R viridisLite), and ColorBrewer's
// 9-class Blues and 11-class RdBu (reversed so that blue is low), www.colorbrewer2.org.
constexpr std::array<Rgb, 9> kViridis = {{{0x44, 0x01, 0x54},
                                          {0x47, 0x2D, 0x7B},
                                          {0x3B, 0x52, 0x8B},
                                          {0x2C, 0x72, 0x8E},
                                          {0x21, 0x90, 0x8C},
                                          {0x27, 0xAD, 0x81},
                                          {0x5D, 0xC8, 0x63},
                                          {0xAA, 0xDC, 0x32},
                                          {0xFD, 0xE7, 0x25}}};
constexpr std::array<Rgb, 9> kBlues = {{{0xF7, 0xFB, 0xFF},
                                        {0xDE, 0xEB, 0xF7},
                                        {0xC6, 0xDB, 0xEF},
                                        {0x9E, 0xCA, 0xE1},
                                        {0x6B, 0xAE, 0xD6},
                                        {0x42, 0x92, 0xC6},
                                        {0x21, 0x71, 0xB5},
                                        {0x08, 0x51, 0x9C},
                                        {0x08, 0x30, 0x6B}}};
constexpr std::array<Rgb, 11> kBlueWhiteRed = {{{0x05, 0x30, 0x61},
                                                {0x21, 0x66, 0xAC},
                                                {0x43, 0x93, 0xC3},
                                                {0x92, 0xC5, 0xDE},
                                                {0xD1, 0xE5, 0xF0},
                                                {0xF7, 0xF7, 0xF7},
                                                {0xFD, 0xDB, 0xC7},
                                                {0xF4, 0xA5, 0x82},
                                                {0xD6, 0x60, 0x4D},
                                                {0xB2, 0x18, 0x2B},
                                                {0x67, 0x00, 0x1F}}};

// matplotlib's "tab10".
constexpr std::array<Rgb, 10> kSeries = {{{0x1F, 0x77, 0xB4},
                                          {0xFF, 0x7F, 0x0E},
                                          {0x2C, 0xA0, 0x2C},
                                          {0xD6, 0x27, 0x28},
                                          {0x94, 0x67, 0xBD},
                                          {0x8C, 0x56, 0x4B},
                                          {0xE3, 0x77, 0xC2},
                                          {0x7F, 0x7F, 0x7F},
                                          {0xBC, 0xBD, 0x22},
                                          {0x17, 0xBE, 0xCF}}};

Rgb interpolate(std::span<const Rgb> stops, double t) {
  t = std::isnan(t) ? 0.0 : std::clamp(t, 0.0, 1.0);
  const double position = t * static_cast<double>(stops.size() - 1);
  const std::size_t i = std::min(static_cast<std::size_t>(position), stops.size() - 2);
  const double f = position - static_cast<double>(i);
  const auto mix = [f](std::uint8_t a, std::uint8_t b) {
    return static_cast<std::uint8_t>(std::lround(a + f * (b - a)));
  };
  return {mix(stops[i].r, stops[i + 1].r), mix(stops[i].g, stops[i + 1].g),
          mix(stops[i].b, stops[i + 1].b)};
}

}  // namespace

Rgb colormap_color(Colormap map, double t) {
  switch (map) {
    case Colormap::Viridis:
      return interpolate(kViridis, t);
    case Colormap::Blues:
      return interpolate(kBlues, t);
    case Colormap::BlueWhiteRed:
      return interpolate(kBlueWhiteRed, t);
  }
  throw ValueError("colormap_color: unknown colormap " + std::to_string(static_cast<int>(map)));
}

Rgb series_color(int i) { return kSeries[static_cast<std::size_t>(i) % kSeries.size()]; }

}  // namespace qkv::plot
