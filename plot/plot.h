// Figures for the examples and the docs: heatmaps (attention weights, positional encodings,
// confusion matrices) and line plots (loss curves, scaling studies). Both take plain data, lay
// themselves out around their labels and return an Image, so saving one is
//   qkv::plot::draw_heatmap(spec).write_png("attention.png");
// Text uses stb_easy_font's glyphs (plot/font.h). Bad input throws ShapeError or ValueError
// naming the figure function and the offending value; nothing is drawn from NaN or Inf.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plot/colormap.h"
#include "plot/image.h"

namespace qkv::plot {

// A rows x cols grid of values drawn as square coloured cells, row 0 at the top as in a matrix,
// with a colorbar on the right. For attention weights, rows are queries (decoder steps) and
// columns are keys (source tokens).
struct HeatmapSpec {
  int rows = 0, cols = 0;
  std::vector<float> values;  // row-major, rows * cols finite values

  // One tick label per row / column (tokens, tag names). Empty: indices label every few rows.
  // Labels longer than 24 characters are shortened with "..".
  std::vector<std::string> row_labels, col_labels;
  std::string title, x_label, y_label;

  Colormap colormap = Colormap::Viridis;
  // The values at the low and high ends of the colormap. An unset end follows the data; with
  // BlueWhiteRed the automatic range is [-m, m], m = max |value|, so that white means zero.
  std::optional<float> value_min, value_max;

  bool annotate = false;      // write each value in its cell
  int annotate_decimals = 2;  // digits after the point in those values (0 for counts), 0..6
  // With annotate: rows * cols texts written in the cells instead of the values (row-major; "" leaves
  // a cell blank), for a figure coloured by one quantity and labelled by another, such as a
  // confusion matrix coloured by each row's share and labelled with counts. Empty: the values.
  std::vector<std::string> cell_text;

  // Side of the square cells in pixels, 1..256; 0 picks a width and a height from the grid size
  // and the labels (about 480 pixels across, cells at most twice as long as wide).
  int cell_size = 0;
  int font_scale = 1;  // integer scale of all text, 1..4
};

// ShapeError if values or labels do not fit rows x cols; ValueError for an empty grid,
// non-finite values, an empty value range or an option out of its bounds.
Image draw_heatmap(const HeatmapSpec& spec);

// A confusion matrix as a heatmap: counts[truth][predicted] over `labels` (rows the truth, columns
// the prediction), each cell coloured by its share of its row and annotated with its count, zeros
// left blank. `truth` and `predicted` name the axes ("gold tag", "predicted tag").
HeatmapSpec confusion_heatmap(const std::vector<std::vector<int64_t>>& counts, const std::vector<std::string>& labels,
                              const std::string& truth, const std::string& predicted);

// The size draw_heatmap(spec) would give, and every error it would throw, without drawing: a
// program can check a figure before the long work that fills in its values (give it zeros).
struct ImageSize {
  int width = 0, height = 0;
};
ImageSize heatmap_size(const HeatmapSpec& spec);

// One line of a line plot: the points (x[i], y[i]) joined in order.
struct Series {
  std::string name;  // legend entry; unnamed series stay out of the legend
  std::vector<double> x, y;
};

struct AxisRange {
  double min = 0, max = 1;
};

struct LinePlotSpec {
  std::vector<Series> series;
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;          // a log axis needs positive values and range
  std::optional<AxisRange> x_range, y_range;  // unset: the data's range plus a small margin
  bool markers = false;                       // also draw a dot at every point
  int width = 640, height = 400;              // the whole figure, in pixels; grown if the legend needs room
  int font_scale = 1;                         // integer scale of all text and lines, 1..4
};

// Draws the axes with "nice" ticks (1, 2 or 5 times a power of ten; decades on log axes), grid
// lines, the series, and a legend right of the axes when a series has a name. Series 0..9 are
// solid lines in the tab10 colours; series 10 and later reuse the colours, dashed.
// ShapeError if a series has unequal numbers of x and y; ValueError for no data, non-finite
// values, non-positive values on a log axis, an empty range or an option out of its bounds.
Image draw_line_plot(const LinePlotSpec& spec);

}  // namespace qkv::plot
