// Colormaps, heatmaps and line plots: colours, layout that adapts to the data, PNG output, and the
// errors for bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "font_testing.h"
#include "plot/colormap.h"
#include "plot/font.h"
#include "plot/plot.h"
#include "png_testing.h"
#include "tensor/error.h"

using qkv::plot::Colormap;
using qkv::plot::HeatmapSpec;
using qkv::plot::Image;
using qkv::plot::LinePlotSpec;
using qkv::plot::Rgb;

namespace {

double luma(Rgb c) { return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b; }

// A rows x cols heatmap of 0, 1, 2, ... with fixed cells, so that sizes are easy to predict.
HeatmapSpec counting_heatmap(int rows, int cols, int cell_size) {
  HeatmapSpec spec;
  spec.rows = rows;
  spec.cols = cols;
  for (int i = 0; i < rows * cols; ++i) spec.values.push_back(static_cast<float>(i));
  spec.cell_size = cell_size;
  return spec;
}

// The first pixel, in reading order, of the given colour; {-1, -1} if there is none.
std::pair<int, int> find_pixel(const Image& image, Rgb color) {
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) {
      if (image.pixel(x, y) == color) return {x, y};
    }
  }
  return {-1, -1};
}

bool block_is(const Image& image, int x0, int y0, int size, Rgb color) {
  for (int y = y0; y < y0 + size; ++y) {
    for (int x = x0; x < x0 + size; ++x) {
      if (!(image.pixel(x, y) == color)) return false;
    }
  }
  return true;
}

template <typename Error, typename Draw>
std::string error_of(Draw draw) {
  try {
    draw();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("colormap ends are the first and last published stops") {
  // viridis #440154 .. #FDE725; ColorBrewer Blues #F7FBFF .. #08306B; RdBu reversed #053061,
  // white-ish #F7F7F7 in the middle, #67001F.
  CHECK(qkv::plot::colormap_color(Colormap::Viridis, 0.0) == Rgb{0x44, 0x01, 0x54});
  CHECK(qkv::plot::colormap_color(Colormap::Viridis, 1.0) == Rgb{0xFD, 0xE7, 0x25});
  CHECK(qkv::plot::colormap_color(Colormap::Blues, 0.0) == Rgb{0xF7, 0xFB, 0xFF});
  CHECK(qkv::plot::colormap_color(Colormap::Blues, 1.0) == Rgb{0x08, 0x30, 0x6B});
  CHECK(qkv::plot::colormap_color(Colormap::BlueWhiteRed, 0.0) == Rgb{0x05, 0x30, 0x61});
  CHECK(qkv::plot::colormap_color(Colormap::BlueWhiteRed, 0.5) == Rgb{0xF7, 0xF7, 0xF7});
  CHECK(qkv::plot::colormap_color(Colormap::BlueWhiteRed, 1.0) == Rgb{0x67, 0x00, 0x1F});
}

TEST_CASE("colormap interpolates linearly between stops") {
  // Halfway between viridis stops 0 (#440154) and 1 (#472D7B), at t = 1/16:
  // (0x44 + 0x47) / 2 = 69.5 -> 70, (1 + 45) / 2 = 23, (84 + 123) / 2 = 103.5 -> 104.
  CHECK(qkv::plot::colormap_color(Colormap::Viridis, 1.0 / 16) == Rgb{70, 23, 104});
}

TEST_CASE("colormap clamps positions outside the unit interval and maps NaN to the low end") {
  for (const Colormap map : {Colormap::Viridis, Colormap::Blues, Colormap::BlueWhiteRed}) {
    CHECK(qkv::plot::colormap_color(map, -3.0) == qkv::plot::colormap_color(map, 0.0));
    CHECK(qkv::plot::colormap_color(map, 7.0) == qkv::plot::colormap_color(map, 1.0));
    CHECK(qkv::plot::colormap_color(map, std::nan("")) == qkv::plot::colormap_color(map, 0.0));
  }
}

TEST_CASE("sequential colormaps change brightness monotonically") {
  for (int i = 1; i <= 100; ++i) {
    const double t0 = (i - 1) / 100.0, t1 = i / 100.0;
    CHECK(luma(qkv::plot::colormap_color(Colormap::Viridis, t1)) >=
          luma(qkv::plot::colormap_color(Colormap::Viridis, t0)));  // dark to bright
    CHECK(luma(qkv::plot::colormap_color(Colormap::Blues, t1)) <=
          luma(qkv::plot::colormap_color(Colormap::Blues, t0)));  // bright to dark
  }
  CHECK(luma(qkv::plot::colormap_color(Colormap::Viridis, 1.0)) -
            luma(qkv::plot::colormap_color(Colormap::Viridis, 0.0)) >
        150);
}

TEST_CASE("diverging colormap darkens away from white on both sides") {
  for (int i = 1; i <= 50; ++i) {
    const double d0 = (i - 1) / 100.0, d1 = i / 100.0;
    CHECK(luma(qkv::plot::colormap_color(Colormap::BlueWhiteRed, 0.5 + d1)) <=
          luma(qkv::plot::colormap_color(Colormap::BlueWhiteRed, 0.5 + d0)));
    CHECK(luma(qkv::plot::colormap_color(Colormap::BlueWhiteRed, 0.5 - d1)) <=
          luma(qkv::plot::colormap_color(Colormap::BlueWhiteRed, 0.5 - d0)));
  }
  const Rgb low = qkv::plot::colormap_color(Colormap::BlueWhiteRed, 0.1);
  const Rgb high = qkv::plot::colormap_color(Colormap::BlueWhiteRed, 0.9);
  CHECK(low.b > low.r);    // blue below the middle
  CHECK(high.r > high.b);  // red above it
}

TEST_CASE("series colours follow tab10 and repeat after ten") {
  CHECK(qkv::plot::series_color(0) == Rgb{0x1F, 0x77, 0xB4});
  CHECK(qkv::plot::series_color(1) == Rgb{0xFF, 0x7F, 0x0E});
  CHECK(qkv::plot::series_color(13) == qkv::plot::series_color(3));
}

TEST_CASE("heatmap paints each cell in the colormap colour of its value") {
  // A 1x2 grid [0, 1] with the automatic range [0, 1]: the first cell is viridis(0), the one to
  // its right viridis(1). The colorbar never reaches t = 0 exactly, so the first viridis(0) pixel
  // in reading order is the top-left corner of cell 0.
  HeatmapSpec spec = counting_heatmap(1, 2, 12);
  const Image image = qkv::plot::draw_heatmap(spec);
  const Rgb low = qkv::plot::colormap_color(Colormap::Viridis, 0.0);
  const auto [x, y] = find_pixel(image, low);
  REQUIRE(x >= 0);
  CHECK(block_is(image, x, y, 12, low));
  CHECK(block_is(image, x + 12, y, 12, qkv::plot::colormap_color(Colormap::Viridis, 1.0)));
}

TEST_CASE("heatmap with BlueWhiteRed centres its automatic range on zero") {
  // Values -1 and 3: the range becomes [-3, 3], so -1 sits at t = 1/3 and 3 at t = 1.
  HeatmapSpec spec;
  spec.rows = 1;
  spec.cols = 2;
  spec.values = {-1.0f, 3.0f};
  spec.cell_size = 12;
  spec.colormap = Colormap::BlueWhiteRed;
  const Image image = qkv::plot::draw_heatmap(spec);
  const Rgb third = qkv::plot::colormap_color(Colormap::BlueWhiteRed, 2.0 / 6.0);
  const auto [x, y] = find_pixel(image, third);
  REQUIRE(x >= 0);
  CHECK(block_is(image, x, y, 12, third));
  CHECK(block_is(image, x + 12, y, 12, qkv::plot::colormap_color(Colormap::BlueWhiteRed, 1.0)));
}

TEST_CASE("heatmap grows by one cell width per added column") {
  const Image narrow = qkv::plot::draw_heatmap(counting_heatmap(4, 4, 10));
  const Image wide = qkv::plot::draw_heatmap(counting_heatmap(4, 8, 10));
  CHECK(wide.width() - narrow.width() == 4 * 10);
  CHECK(wide.height() == narrow.height());
}

TEST_CASE("heatmap stands column labels upright when they are wider than a cell") {
  // Short labels lie flat in one line of text below the grid; a long one turns the labels
  // upright, so the space below the grid grows from a text height to the longest label.
  HeatmapSpec flat = counting_heatmap(4, 2, 40);
  flat.col_labels = {"ab", "cd"};
  HeatmapSpec upright = flat;
  upright.col_labels = {"ab", "a-long-token"};
  const int grown = qkv::plot::draw_heatmap(upright).height() - qkv::plot::draw_heatmap(flat).height();
  CHECK(grown == qkv::plot::text_width("a-long-token") - qkv::plot::text_height());
}

TEST_CASE("heatmap shortens labels longer than 24 characters") {
  // An 80-character label takes the room of its first 22 characters and "..", while one of 24
  // characters is kept whole (".." is narrower than "xx" in the proportional font).
  HeatmapSpec shortened = counting_heatmap(2, 2, 20);
  shortened.row_labels = {std::string(22, 'x') + "..", "y"};
  HeatmapSpec beyond = shortened;
  beyond.row_labels = {std::string(80, 'x'), "y"};
  HeatmapSpec at_limit = shortened;
  at_limit.row_labels = {std::string(24, 'x'), "y"};
  const int width = qkv::plot::draw_heatmap(shortened).width();
  CHECK(qkv::plot::draw_heatmap(beyond).width() == width);
  CHECK(qkv::plot::draw_heatmap(at_limit).width() > width);
}

TEST_CASE("heatmap writes values in cells in ink that stands out") {
  // One dark cell (viridis 0) with the annotation "0": the cell holds white pixels of the digit.
  HeatmapSpec spec = counting_heatmap(1, 2, 30);
  spec.annotate = true;
  spec.annotate_decimals = 0;
  const Image image = qkv::plot::draw_heatmap(spec);
  const auto [x, y] = find_pixel(image, qkv::plot::colormap_color(Colormap::Viridis, 0.0));
  REQUIRE(x >= 0);
  int white = 0;
  for (int dy = 0; dy < 30; ++dy) {
    for (int dx = 0; dx < 30; ++dx) white += image.pixel(x + dx, y + dy) == qkv::plot::kWhite;
  }
  CHECK(white == static_cast<int>(qkv::testing::font_ink("0").size()));
}

TEST_CASE("heatmap writes cell_text in the cells instead of the values, blank where empty") {
  // Coloured by one quantity (a row's share) and labelled by another (a count).
  HeatmapSpec spec = counting_heatmap(1, 2, 30);
  spec.annotate = true;
  spec.cell_text = {"7", ""};
  const Image image = qkv::plot::draw_heatmap(spec);
  const auto [x, y] = find_pixel(image, qkv::plot::colormap_color(Colormap::Viridis, 0.0));
  REQUIRE(x >= 0);
  int white = 0, other_cell = 0;
  for (int dy = 0; dy < 30; ++dy) {
    for (int dx = 0; dx < 30; ++dx) {
      white += image.pixel(x + dx, y + dy) == qkv::plot::kWhite;
      other_cell += image.pixel(x + 30 + dx, y + dy) != image.pixel(x + 30, y);
    }
  }
  CHECK(white == static_cast<int>(qkv::testing::font_ink("7").size()));
  CHECK(other_cell == 0);  // the second cell's "" leaves it one colour
  spec.cell_text = {"1"};
  CHECK(error_of<qkv::ShapeError>([&] { qkv::plot::draw_heatmap(spec); }) ==
        "draw_heatmap: there are 1 cell_text entries but 2 cells");
}

TEST_CASE("heatmap png has a valid header with the image size") {
  const qkv::testing::TempDir dir("heatmap_png");
  HeatmapSpec spec = counting_heatmap(6, 9, 0);
  spec.title = "attention";
  spec.x_label = "key";
  spec.y_label = "query";
  const Image image = qkv::plot::draw_heatmap(spec);
  image.write_png(dir.file("heatmap.png"));
  const auto header = qkv::testing::read_png_header(qkv::testing::read_bytes(dir.file("heatmap.png")));
  REQUIRE(header.valid);
  CHECK(header.width == static_cast<std::uint32_t>(image.width()));
  CHECK(header.height == static_cast<std::uint32_t>(image.height()));
}

TEST_CASE("heatmap lays out grids from 1x1 to 128x128 with labels") {
  for (const int n : {1, 2, 17, 128}) {
    HeatmapSpec spec = counting_heatmap(n, n, 0);
    for (int i = 0; i < n; ++i) {
      spec.row_labels.push_back("row" + std::to_string(i));
      spec.col_labels.push_back("token_" + std::to_string(i));
    }
    spec.title = "grid";
    const Image image = qkv::plot::draw_heatmap(spec);
    // Every labelled row needs at least a line of text (9 pixels) of height.
    CHECK(image.height() > n * qkv::plot::text_height());
    CHECK(image.width() > n * qkv::plot::text_height());
  }
}

TEST_CASE("heatmap rejects values that do not fill rows x cols") {
  HeatmapSpec spec = counting_heatmap(2, 3, 0);
  spec.values.pop_back();
  const std::string message = error_of<qkv::ShapeError>([&] { qkv::plot::draw_heatmap(spec); });
  CHECK(message.find("draw_heatmap") != std::string::npos);
  CHECK(message.find("5 elements") != std::string::npos);
  CHECK(message.find("2x3") != std::string::npos);
}

TEST_CASE("heatmap rejects labels that do not match the grid") {
  HeatmapSpec spec = counting_heatmap(2, 3, 0);
  spec.col_labels = {"a", "b"};
  CHECK_THROWS_AS(qkv::plot::draw_heatmap(spec), qkv::ShapeError);
  spec.col_labels.clear();
  spec.row_labels = {"a", "b", "c"};
  CHECK_THROWS_AS(qkv::plot::draw_heatmap(spec), qkv::ShapeError);
}

TEST_CASE("heatmap rejects an empty grid and bad options") {
  CHECK_THROWS_AS(qkv::plot::draw_heatmap(counting_heatmap(0, 3, 0)), qkv::ValueError);
  HeatmapSpec spec = counting_heatmap(2, 2, 0);
  spec.cell_size = 300;
  CHECK_THROWS_AS(qkv::plot::draw_heatmap(spec), qkv::ValueError);
  spec = counting_heatmap(2, 2, 0);
  spec.font_scale = 0;
  CHECK_THROWS_AS(qkv::plot::draw_heatmap(spec), qkv::ValueError);
  spec = counting_heatmap(2, 2, 0);
  spec.annotate_decimals = 9;
  CHECK_THROWS_AS(qkv::plot::draw_heatmap(spec), qkv::ValueError);
}

TEST_CASE("heatmap names the cell that holds NaN or Inf") {
  HeatmapSpec spec = counting_heatmap(2, 3, 0);
  spec.values[4] = std::numeric_limits<float>::quiet_NaN();
  CHECK(error_of<qkv::ValueError>([&] { qkv::plot::draw_heatmap(spec); }).find("row 1 column 1") !=
        std::string::npos);
  spec.values[4] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(qkv::plot::draw_heatmap(spec), qkv::ValueError);
}

TEST_CASE("heatmap rejects an empty value range") {
  HeatmapSpec spec = counting_heatmap(2, 2, 0);
  spec.value_min = 1.0f;
  spec.value_max = 1.0f;
  CHECK_THROWS_AS(qkv::plot::draw_heatmap(spec), qkv::ValueError);
  spec.value_max.reset();
  spec.value_min = 10.0f;  // above the largest value, 3
  CHECK_THROWS_AS(qkv::plot::draw_heatmap(spec), qkv::ValueError);
  spec.value_min = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(qkv::plot::draw_heatmap(spec), qkv::ValueError);
}

TEST_CASE("heatmap of a constant grid draws without error") {
  HeatmapSpec spec;
  spec.rows = 2;
  spec.cols = 2;
  spec.values = {0.0f, 0.0f, 0.0f, 0.0f};
  spec.colormap = Colormap::BlueWhiteRed;
  const Image image = qkv::plot::draw_heatmap(spec);
  // Zero is the middle of the range it gets, so the cells are the colormap's white.
  CHECK(find_pixel(image, qkv::plot::colormap_color(Colormap::BlueWhiteRed, 0.5)).first >= 0);
}

TEST_CASE("line plot keeps the requested size when nothing needs more room") {
  LinePlotSpec spec;
  spec.series = {{"", {1, 2, 3}, {3, 1, 2}}};
  spec.width = 500;
  spec.height = 300;
  const Image image = qkv::plot::draw_line_plot(spec);
  CHECK(image.width() == 500);
  CHECK(image.height() == 300);
}

TEST_CASE("line plot grows taller for a legend with many entries") {
  LinePlotSpec spec;
  for (int i = 0; i < 30; ++i) {
    spec.series.push_back({"series " + std::to_string(i), {0, 1}, {0, static_cast<double>(i)}});
  }
  spec.height = 300;
  // Each legend entry takes a line of text plus a gap, 9 + 6 pixels.
  CHECK(qkv::plot::draw_line_plot(spec).height() > 30 * (9 + 6));
}

TEST_CASE("line plot draws each series in its palette colour") {
  LinePlotSpec spec;
  spec.series = {{"a", {0, 10}, {0, 10}}, {"b", {0, 10}, {10, 0}}};
  const Image image = qkv::plot::draw_line_plot(spec);
  for (int i = 0; i < 2; ++i) {
    int count = 0;
    for (int y = 0; y < image.height(); ++y) {
      for (int x = 0; x < image.width(); ++x) count += image.pixel(x, y) == qkv::plot::series_color(i);
    }
    // A 2-pixel-wide diagonal across a plot some 300 pixels tall has hundreds of fully covered
    // pixels; the legend sample alone has about 24.
    CHECK_MESSAGE(count > 200, "series " << i << " has " << count << " pixels");
  }
}

TEST_CASE("line plot on log axes and with one point draws without error") {
  LinePlotSpec spec;
  spec.series = {{"quadratic", {16, 64, 256, 1024}, {0.01, 0.16, 2.56, 40.96}}, {"one point", {100}, {1}}};
  spec.log_x = spec.log_y = true;
  spec.markers = true;
  const qkv::testing::TempDir dir("line_plot_png");
  const Image image = qkv::plot::draw_line_plot(spec);
  image.write_png(dir.file("scaling.png"));
  const auto header = qkv::testing::read_png_header(qkv::testing::read_bytes(dir.file("scaling.png")));
  REQUIRE(header.valid);
  CHECK(header.width == static_cast<std::uint32_t>(image.width()));
  CHECK(header.height == static_cast<std::uint32_t>(image.height()));
}

TEST_CASE("line plot rejects a series with unequal x and y counts") {
  LinePlotSpec spec;
  spec.series = {{"loss", {1, 2, 3}, {1, 2}}};
  const std::string message = error_of<qkv::ShapeError>([&] { qkv::plot::draw_line_plot(spec); });
  CHECK(message.find("'loss'") != std::string::npos);
  CHECK(message.find("3 x values but 2 y values") != std::string::npos);
}

TEST_CASE("line plot rejects missing data") {
  CHECK_THROWS_AS(qkv::plot::draw_line_plot(LinePlotSpec{}), qkv::ValueError);
  LinePlotSpec spec;
  spec.series = {{"empty", {}, {}}};
  CHECK_THROWS_AS(qkv::plot::draw_line_plot(spec), qkv::ValueError);
}

TEST_CASE("line plot names a non-finite point") {
  LinePlotSpec spec;
  spec.series = {{"loss", {1, 2, 3}, {1, std::nan(""), 2}}};
  CHECK(error_of<qkv::ValueError>([&] { qkv::plot::draw_line_plot(spec); }).find("y[1]") !=
        std::string::npos);
  spec.series[0].y[1] = 1;
  spec.series[0].x[2] = std::numeric_limits<double>::infinity();
  CHECK(error_of<qkv::ValueError>([&] { qkv::plot::draw_line_plot(spec); }).find("x[2]") !=
        std::string::npos);
}

TEST_CASE("line plot rejects non-positive values on a log axis") {
  LinePlotSpec spec;
  spec.series = {{"time", {1, 2, 3}, {0.5, 0.0, 2}}};
  CHECK_NOTHROW(qkv::plot::draw_line_plot(spec));
  spec.log_y = true;
  const std::string message = error_of<qkv::ValueError>([&] { qkv::plot::draw_line_plot(spec); });
  CHECK(message.find("'time'") != std::string::npos);
  CHECK(message.find("logarithmic") != std::string::npos);
  spec.log_y = false;
  spec.log_x = true;
  spec.x_range = qkv::plot::AxisRange{0, 10};
  CHECK_THROWS_AS(qkv::plot::draw_line_plot(spec), qkv::ValueError);
}

TEST_CASE("line plot rejects an empty range and bad sizes") {
  LinePlotSpec spec;
  spec.series = {{"a", {1, 2}, {1, 2}}};
  spec.y_range = qkv::plot::AxisRange{1, 1};
  CHECK_THROWS_AS(qkv::plot::draw_line_plot(spec), qkv::ValueError);
  spec.y_range.reset();
  spec.width = 0;
  CHECK_THROWS_AS(qkv::plot::draw_line_plot(spec), qkv::ValueError);
  spec.width = 400;
  spec.font_scale = 5;
  CHECK_THROWS_AS(qkv::plot::draw_line_plot(spec), qkv::ValueError);
}

TEST_CASE("line plot clips series to a fixed range") {
  // With y fixed to [0, 1], a series reaching y = 5 must not ink the title area above the axes.
  LinePlotSpec spec;
  spec.series = {{"", {0, 1}, {0, 5}}};
  spec.y_range = qkv::plot::AxisRange{0, 1};
  const Image image = qkv::plot::draw_line_plot(spec);
  for (int y = 0; y < 12; ++y) {  // the top margin, 12 pixels at font scale 1
    for (int x = 0; x < image.width(); ++x) CHECK(image.pixel(x, y) == qkv::plot::kWhite);
  }
}

TEST_CASE("line plot draws extreme magnitudes and nearly equal values") {
  const std::vector<std::vector<double>> ys = {{-1e300, 1e300}, {0, 1e-310}, {1e20, 1e20 + 1e5},
                                               {5, 5},          {0, 0},      {-3, -3}};
  for (const auto& y : ys) {
    LinePlotSpec spec;
    spec.series = {{"", {0, 1}, y}};
    const Image image = qkv::plot::draw_line_plot(spec);
    CHECK(image.width() == 640);
    spec.log_x = true;
    spec.series[0].x = {1e-320, 1e308};
    CHECK_NOTHROW(qkv::plot::draw_line_plot(spec));
  }
}

TEST_CASE("line plot rejects values spanning more than a double holds") {
  LinePlotSpec spec;
  spec.series = {{"", {0, 1}, {-1.7e308, 1.7e308}}};
  CHECK_THROWS_AS(qkv::plot::draw_line_plot(spec), qkv::ValueError);
  spec.series = {{"", {0, 1}, {1, 2}}};
  spec.y_range = qkv::plot::AxisRange{1e20, 1e20 + 1};  // the two ends are the same double
  CHECK_THROWS_AS(qkv::plot::draw_line_plot(spec), qkv::ValueError);
}

TEST_CASE("figures too large for an image are a ValueError naming the figure") {
  HeatmapSpec spec = counting_heatmap(1, 100, 256);  // 25600 pixels of cells
  CHECK(error_of<qkv::ValueError>([&] { qkv::plot::draw_heatmap(spec); }).find("draw_heatmap") !=
        std::string::npos);
  CHECK_THROWS_AS(qkv::plot::draw_heatmap(counting_heatmap(1, Image::kMaxSide + 1, 0)), qkv::ValueError);
  LinePlotSpec plot;
  plot.series = {{"", {0, 1}, {0, 1}}};
  plot.width = Image::kMaxSide + 1;
  CHECK_THROWS_AS(qkv::plot::draw_line_plot(plot), qkv::ValueError);
}

TEST_CASE("heatmap_size gives draw_heatmap's size and its errors without drawing") {
  HeatmapSpec spec = counting_heatmap(3, 5, 20);
  spec.row_labels = {"a", "bb", "ccc"};
  spec.title = "title";
  const Image image = qkv::plot::draw_heatmap(spec);
  const qkv::plot::ImageSize size = qkv::plot::heatmap_size(spec);
  CHECK(size.width == image.width());
  CHECK(size.height == image.height());
  const HeatmapSpec too_large = counting_heatmap(1, 100, 256);
  CHECK(error_of<qkv::ValueError>([&] { qkv::plot::heatmap_size(too_large); }) ==
        error_of<qkv::ValueError>([&] { qkv::plot::draw_heatmap(too_large); }));
  spec.values.pop_back();
  CHECK_THROWS_AS(qkv::plot::heatmap_size(spec), qkv::ShapeError);
}

TEST_CASE("heatmap annotations never show a negative zero") {
  // -0.001 with two decimals is written "0.00", exactly as 0 is: on a fixed range [-1, 1] both
  // values also get the same colour, so the two figures match pixel for pixel.
  HeatmapSpec negative;
  negative.rows = negative.cols = 1;
  negative.values = {-0.001f};
  negative.value_min = -1.0f;
  negative.value_max = 1.0f;
  negative.colormap = Colormap::BlueWhiteRed;
  negative.annotate = true;
  HeatmapSpec zero = negative;
  zero.values = {0.0f};
  CHECK(qkv::plot::draw_heatmap(negative).bytes() == qkv::plot::draw_heatmap(zero).bytes());
  negative.values = {-0.01f};
  CHECK(qkv::plot::draw_heatmap(negative).bytes() != qkv::plot::draw_heatmap(zero).bytes());
}
