// Layout and drawing of heatmaps and line plots. Both figures are laid out in the same way: measure
// every piece of text first, then place the boxes around the data area from the outside in
// (margin, axis label, tick labels, ticks), and only then draw.
#include "plot/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>

#include "plot/font.h"
#include "tensor/error.h"

namespace qkv::plot {
namespace {

constexpr Rgb kTextColor{34, 34, 34};
constexpr Rgb kAxisColor{85, 85, 85};
constexpr Rgb kGridColor{232, 232, 232};
constexpr Rgb kLegendBorder{200, 200, 200};

// Spacing in pixels at font scale 1; everything around text grows with the scale.
constexpr int kMargin = 12;  // canvas edge to the outermost text
constexpr int kGap = 6;      // between neighbouring pieces of text
constexpr int kTick = 4;     // tick mark length
constexpr int kMaxLabelChars = 24;

// ---- text helpers ----

std::string shorten(const std::string& label) {
  const std::string chars = printable(label);
  if (static_cast<int>(chars.size()) <= kMaxLabelChars) return chars;
  return chars.substr(0, kMaxLabelChars - 2) + "..";
}

int widest(const std::vector<std::string>& labels, int scale) {
  int w = 0;
  for (const auto& label : labels) w = std::max(w, text_width(label, scale));
  return w;
}

// The title is drawn one scale larger than the rest when it fits the given width.
int title_scale(const std::string& title, int scale, int available_width) {
  return text_width(title, scale + 1) <= available_width ? scale + 1 : scale;
}

// Text centred on (cx, cy). The font box includes the two descender rows, so this puts the
// middle of lowercase letters (font row 4) half a row above cy, which reads as centred.
void draw_centered(Image& image, int cx, int cy, const std::string& text, Rgb color, int scale) {
  image.draw_text(cx - text_width(text, scale) / 2, cy - text_height(scale) / 2, text, color,
                  scale);
}

// A number in an error message: six significant digits, as printf's %g.
std::string shown(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

// Keeps a span [start, start + length) inside [lo, hi) where possible, preferring its left end.
int clamp_start(int start, int length, int lo, int hi) {
  return std::max(lo, std::min(start, hi - length));
}

// The canvas of a figure, with an error naming the figure if its layout outgrew the largest image.
Image figure_canvas(const std::string& figure, int width, int height) {
  if (width > Image::kMaxSide || height > Image::kMaxSide) {
    throw ValueError(figure + ": the figure would be " + std::to_string(width) + "x" +
                     std::to_string(height) + " pixels, more than " +
                     std::to_string(Image::kMaxSide) + " on a side");
  }
  return Image(width, height);
}

// ---- ticks ----

struct Tick {
  double position;  // in axis units (log10 of the value on a log axis)
  std::string label;
};

// A number with a fixed count of decimals, or in short scientific notation ("2.5e6", "1e-5") for
// very large or very small magnitudes. Never prints a negative zero ("-0", "-0.00").
std::string format_number(double value, int decimals, bool scientific) {
  char buffer[64];
  if (!scientific || value == 0.0) {
    std::snprintf(buffer, sizeof buffer, "%.*f", scientific ? 0 : decimals, value);
    const std::string text = buffer;
    const bool negative_zero = text[0] == '-' && text.find_first_not_of("-0.") == std::string::npos;
    return negative_zero ? text.substr(1) : text;
  }
  std::snprintf(buffer, sizeof buffer, "%.*e", decimals, value);
  std::string text = buffer;  // e.g. "2.5e+06"
  const std::size_t e = text.find('e');
  std::string mantissa = text.substr(0, e);
  if (mantissa.find('.') != std::string::npos) {
    mantissa.erase(mantissa.find_last_not_of('0') + 1);
    if (mantissa.back() == '.') mantissa.pop_back();
  }
  const int exponent = std::stoi(text.substr(e + 1));
  return mantissa + "e" + std::to_string(exponent);
}

// Labels for multiples of step: as many decimals as the step has, or beyond 1e6 and below 1e-4
// scientific notation with as many digits as tell the largest value from its neighbour.
std::vector<Tick> label_linear_ticks(const std::vector<double>& values, double step) {
  double largest = 0;
  for (const double v : values) largest = std::max(largest, std::abs(v));
  const auto exponent = [](double v) { return static_cast<int>(std::floor(std::log10(v) + 1e-9)); };
  const bool scientific = largest >= 1e6 || step < 1e-4;
  const int decimals = scientific
                           ? std::clamp(exponent(std::max(largest, step)) - exponent(step), 0, 15)
                           : std::max(0, -exponent(step));
  std::vector<Tick> ticks;
  for (const double v : values) ticks.push_back({v, format_number(v, decimals, scientific)});
  return ticks;
}

// The multiples of step within [lo, hi].
std::vector<double> multiples_within(double lo, double hi, double step) {
  const double first = std::ceil(lo / step - 1e-9), last = std::floor(hi / step + 1e-9);
  std::vector<double> values;
  for (double i = 0; first + i <= last && i <= 1000; ++i) values.push_back((first + i) * step);
  return values;
}

// "Nice numbers" (Heckbert, Graphics Gems, 1990): the ticks are the multiples of the smallest step
// of the form {1, 2, 5} x 10^k that leaves at least min_spacing(labels) pixels between neighbouring
// ticks on an axis of the given pixel length. The search starts at a step between span/1000 and
// span/100 and ends at the first step above the span, within four decades. A span that is not a
// positive finite number (only possible through overflow of 10^x on a log axis) gets no ticks.
template <typename MinSpacing>
std::vector<Tick> nice_linear_ticks(double lo, double hi, int pixels, MinSpacing min_spacing) {
  const double span = hi - lo;
  double decade = std::pow(10.0, std::floor(std::log10(span)) - 2);
  if (!std::isfinite(span) || !(span > 0) || !(decade > 0)) return {};
  for (int d = 0; d < 4; ++d, decade *= 10) {
    for (const double mantissa : {1.0, 2.0, 5.0}) {
      const double step = mantissa * decade;
      std::vector<Tick> ticks = label_linear_ticks(multiples_within(lo, hi, step), step);
      if (step / span * pixels >= min_spacing(ticks) || step > span) return ticks;
    }
  }
  return {};
}

struct LogTicks {
  std::vector<Tick> major;
  std::vector<double> minor;  // positions of unlabelled marks
};

// Ticks of a log axis, positions in log10 units. Over less than 3 decades the labelled ticks
// are 1, 2 and 5 times powers of ten, if they have room; otherwise powers of ten, every k-th one
// if they crowd, with minor marks at 2..9 times each power when all powers are shown. A range too
// short for two such ticks gets nice linear values instead.
template <typename MinSpacing>
LogTicks log_ticks(double lo, double hi, int pixels, MinSpacing min_spacing) {
  const int first = static_cast<int>(std::floor(lo)), last = static_cast<int>(std::floor(hi));
  const auto inside = [&](double position) {
    return position >= lo - 1e-9 && position <= hi + 1e-9;
  };
  const auto ticks = [&](std::vector<int> mantissas, int every) {
    LogTicks t;
    for (int d = first; d <= last; ++d) {
      if (d % every != 0) continue;
      for (int m = 1; m <= 9; ++m) {
        const double position = d + std::log10(static_cast<double>(m));
        if (!inside(position)) continue;
        if (std::find(mantissas.begin(), mantissas.end(), m) == mantissas.end()) {
          if (every == 1) t.minor.push_back(position);
          continue;
        }
        const double value = m * std::pow(10.0, d);
        if (!(value > 0) || !std::isfinite(value)) continue;  // a padded axis end beyond doubles
        const bool plain = d >= -4 && d <= 5;
        t.major.push_back({position, format_number(value, plain ? std::max(0, -d) : 0, !plain)});
      }
    }
    return t;
  };
  const auto fits = [&](const LogTicks& t) {
    if (t.major.size() < 2) return false;
    for (std::size_t i = 1; i < t.major.size(); ++i) {
      if ((t.major[i].position - t.major[i - 1].position) / (hi - lo) * pixels <
          min_spacing(t.major))
        return false;
    }
    return true;
  };
  if (hi - lo < 3.0) {
    LogTicks t = ticks({1, 2, 5}, 1);
    if (fits(t)) return t;
  }
  for (int every = 1; every <= last - first; ++every) {
    LogTicks t = ticks({1}, every);
    if (fits(t)) return t;
  }
  LogTicks t;
  for (Tick tick : nice_linear_ticks(std::pow(10.0, lo), std::pow(10.0, hi), pixels, min_spacing)) {
    if (tick.position <= 0) continue;
    tick.position = std::log10(tick.position);
    t.major.push_back(tick);
  }
  return t;
}

// ---- heatmap ----

void check_heatmap(const HeatmapSpec& spec) {
  const std::string where = "draw_heatmap: ";
  if (spec.rows < 1 || spec.cols < 1 || spec.rows > Image::kMaxSide ||
      spec.cols > Image::kMaxSide) {
    throw ValueError(where + "the grid is " + std::to_string(spec.rows) + "x" +
                     std::to_string(spec.cols) + "; rows and cols must be in 1.." +
                     std::to_string(Image::kMaxSide));
  }
  const std::size_t cells = static_cast<std::size_t>(spec.rows) * spec.cols;
  if (spec.values.size() != cells) {
    throw ShapeError(where + "values has " + std::to_string(spec.values.size()) +
                     " elements but rows x cols = " + std::to_string(spec.rows) + "x" +
                     std::to_string(spec.cols) + " = " + std::to_string(cells));
  }
  const auto check_labels = [&](const std::vector<std::string>& labels, const char* name, int n) {
    if (!labels.empty() && static_cast<int>(labels.size()) != n) {
      throw ShapeError(where + "there are " + std::to_string(labels.size()) + " " + name + " but " +
                       std::to_string(n) + " " + (name[0] == 'r' ? "rows" : "columns"));
    }
  };
  check_labels(spec.row_labels, "row_labels", spec.rows);
  check_labels(spec.col_labels, "col_labels", spec.cols);
  for (std::size_t i = 0; i < cells; ++i) {
    if (!std::isfinite(spec.values[i])) {
      throw ValueError(where + "the value at row " + std::to_string(i / spec.cols) + " column " +
                       std::to_string(i % spec.cols) + " is " + shown(spec.values[i]) +
                       "; values must be finite");
    }
  }
  for (const auto& end : {spec.value_min, spec.value_max}) {
    if (end && !std::isfinite(*end))
      throw ValueError(where + "value_min and value_max must be finite");
  }
  if (spec.cell_size < 0 || spec.cell_size > 256) {
    throw ValueError(where + "cell_size is " + std::to_string(spec.cell_size) +
                     "; expected 0 (automatic) or 1..256");
  }
  if (spec.font_scale < 1 || spec.font_scale > 4) {
    throw ValueError(where + "font_scale is " + std::to_string(spec.font_scale) +
                     "; expected 1..4");
  }
  if (spec.annotate_decimals < 0 || spec.annotate_decimals > 6) {
    throw ValueError(where + "annotate_decimals is " + std::to_string(spec.annotate_decimals) +
                     "; expected 0..6");
  }
}

std::pair<double, double> heatmap_range(const HeatmapSpec& spec) {
  const auto [min_it, max_it] = std::minmax_element(spec.values.begin(), spec.values.end());
  double lo = *min_it, hi = *max_it;
  if (spec.colormap == Colormap::BlueWhiteRed) {
    hi = std::max(std::abs(lo), std::abs(hi));
    lo = -hi;
  }
  if (lo == hi) {  // a constant grid: centre its value in the colormap
    lo -= 0.5;
    hi += 0.5;
  }
  if (spec.value_min) lo = *spec.value_min;
  if (spec.value_max) hi = *spec.value_max;
  if (!(lo < hi)) {
    throw ValueError("draw_heatmap: the value range [" + shown(lo) + ", " + shown(hi) +
                     "] is empty; value_min must be below value_max");
  }
  return {lo, hi};
}

// Labels of one axis of the heatmap: the given ones, shortened, or every step-th index.
struct AxisLabels {
  std::vector<std::string> text;  // one per labelled cell
  std::vector<int> cells;         // which cells carry them
};

AxisLabels given_labels(const std::vector<std::string>& labels) {
  AxisLabels axis;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    axis.text.push_back(shorten(labels[i]));
    axis.cells.push_back(static_cast<int>(i));
  }
  return axis;
}

// Every step-th index, with step in 1, 2, 5, 10, 20, ... large enough to leave room between the
// labels along the axis: about two lines of text down a column of rows, and two gaps between the
// widest numbers along a row of columns.
AxisLabels index_labels(int n, int cell, int scale, bool along_width) {
  const int room = along_width ? text_width(std::to_string(n - 1), scale) + 2 * kGap * scale
                               : 2 * text_height(scale) + kGap * scale;
  for (int decade = 1;; decade *= 10) {
    for (const int mantissa : {1, 2, 5}) {
      const int step = mantissa * decade;
      if (step * cell >= room || step >= n) {
        AxisLabels axis;
        for (int i = 0; i < n; i += step) {
          axis.text.push_back(std::to_string(i));
          axis.cells.push_back(i);
        }
        return axis;
      }
    }
  }
}

// Black or white, whichever stands out on the background (Rec. 601 luma).
Rgb ink_on(Rgb background) {
  const double luma = 0.299 * background.r + 0.587 * background.g + 0.114 * background.b;
  return luma < 140 ? kWhite : kTextColor;
}

// ---- line plot ----

void check_line_plot(const LinePlotSpec& spec) {
  const std::string where = "draw_line_plot: ";
  if (spec.series.empty()) throw ValueError(where + "there are no series to draw");
  for (const Series& s : spec.series) {
    const std::string name = "series '" + s.name + "'";
    if (s.x.size() != s.y.size()) {
      throw ShapeError(where + name + " has " + std::to_string(s.x.size()) + " x values but " +
                       std::to_string(s.y.size()) + " y values");
    }
    if (s.x.empty()) throw ValueError(where + name + " has no points");
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      for (const auto& [axis, value, log] :
           {std::tuple{"x", s.x[i], spec.log_x}, std::tuple{"y", s.y[i], spec.log_y}}) {
        if (std::isfinite(value) && !(log && value <= 0)) continue;
        const std::string point =
            name + " has " + axis + "[" + std::to_string(i) + "] = " + shown(value);
        if (!std::isfinite(value)) throw ValueError(where + point + "; values must be finite");
        throw ValueError(where + point + " but the " + axis +
                         " axis is logarithmic and needs positive values");
      }
    }
  }
  for (const auto& [axis, range, log] :
       {std::tuple{"x", spec.x_range, spec.log_x}, std::tuple{"y", spec.y_range, spec.log_y}}) {
    if (!range) continue;
    const std::string text =
        std::string(axis) + "_range [" + shown(range->min) + ", " + shown(range->max) + "]";
    if (!std::isfinite(range->min) || !std::isfinite(range->max) || !(range->min < range->max)) {
      throw ValueError(where + text + " is empty or not finite; min must be below max");
    }
    if (log && range->min <= 0)
      throw ValueError(where + text + " must be positive on a logarithmic axis");
  }
  if (spec.width < 1 || spec.height < 1 || spec.width > Image::kMaxSide ||
      spec.height > Image::kMaxSide) {
    throw ValueError(where + "the figure size " + std::to_string(spec.width) + "x" +
                     std::to_string(spec.height) + " is outside 1.." +
                     std::to_string(Image::kMaxSide) + " on a side");
  }
  if (spec.font_scale < 1 || spec.font_scale > 4) {
    throw ValueError(where + "font_scale is " + std::to_string(spec.font_scale) +
                     "; expected 1..4");
  }
}

// The extent of one axis in axis units (log10 of values on a log axis): the fixed range, or the
// data's range widened by 4% on each side. A data range narrower than a billionth of its
// magnitude (all values equal, or as good as) is widened by half a decade on a log axis and by
// half its magnitude otherwise, so that ticks stay distinct; a fixed range that narrow, or a
// range wider than a double holds, is a ValueError.
std::pair<double, double> axis_limits(const LinePlotSpec& spec, bool is_x) {
  const bool log = is_x ? spec.log_x : spec.log_y;
  const std::string axis = is_x ? "x" : "y";
  const auto to_axis = [log](double v) { return log ? std::log10(v) : v; };
  const auto narrow = [](double lo, double hi) {
    return hi - lo <= 1e-9 * std::max(std::abs(lo), std::abs(hi));
  };
  const auto& fixed = is_x ? spec.x_range : spec.y_range;
  double lo = INFINITY, hi = -INFINITY;
  if (fixed) {
    lo = to_axis(fixed->min);
    hi = to_axis(fixed->max);
    if (narrow(lo, hi)) {
      throw ValueError("draw_line_plot: " + axis + "_range [" + shown(fixed->min) + ", " +
                       shown(fixed->max) + "] is too narrow for the size of its values");
    }
  } else {
    for (const Series& s : spec.series) {
      for (const double v : is_x ? s.x : s.y) {
        lo = std::min(lo, to_axis(v));
        hi = std::max(hi, to_axis(v));
      }
    }
    const double magnitude = std::max(std::abs(lo), std::abs(hi));
    const double pad = !narrow(lo, hi)         ? 0.04 * (hi - lo)
                       : log || magnitude == 0 ? 0.5
                                               : 0.5 * magnitude;
    lo -= pad;
    hi += pad;
  }
  if (!std::isfinite(hi - lo)) {
    throw ValueError("draw_line_plot: the " + axis + " values span more than a double can hold");
  }
  return {lo, hi};
}

struct AxisTicks {
  std::vector<Tick> major;
  std::vector<double> minor;
};

template <typename MinSpacing>
AxisTicks axis_ticks(double lo, double hi, bool log, int pixels, MinSpacing min_spacing) {
  if (!log) return {nice_linear_ticks(lo, hi, pixels, min_spacing), {}};
  LogTicks t = log_ticks(lo, hi, pixels, min_spacing);
  return {std::move(t.major), std::move(t.minor)};
}

// Series 0..9 are solid lines; later ones reuse the colours dashed.
constexpr std::size_t kSolidSeries = 10;

// Draws a polyline. Dashes are 4 line widths of ink then 2.5 of gap, and the pattern continues
// across the joints.
void draw_polyline(Image& image, const std::vector<std::pair<double, double>>& points, Rgb color,
                   double thickness, bool dashed) {
  const double on = 4.0 * thickness, off = 2.5 * thickness;
  double phase = 0;  // distance travelled within the current on+off period
  for (std::size_t i = 1; i < points.size(); ++i) {
    const auto [x0, y0] = points[i - 1];
    const auto [x1, y1] = points[i];
    if (!dashed) {
      image.draw_line(x0, y0, x1, y1, color, thickness);
      continue;
    }
    const double length = std::hypot(x1 - x0, y1 - y0);
    double done = 0;
    while (done < length) {
      const bool inking = phase < on;
      const double run = std::min(length - done, inking ? on - phase : on + off - phase);
      if (inking) {
        const double a = done / length, b = (done + run) / length;
        image.draw_line(x0 + a * (x1 - x0), y0 + a * (y1 - y0), x0 + b * (x1 - x0),
                        y0 + b * (y1 - y0), color, thickness);
      }
      done += run;
      phase = std::fmod(phase + run, on + off);
    }
  }
}

}  // namespace

Image draw_heatmap(const HeatmapSpec& spec) {
  check_heatmap(spec);
  const int s = spec.font_scale;
  const int text_h = text_height(s), margin = kMargin * s, gap = kGap * s, tick = kTick * s;
  const auto [lo, hi] = heatmap_range(spec);

  std::vector<std::string> notes;
  if (spec.annotate) {
    for (const float v : spec.values)
      notes.push_back(format_number(v, spec.annotate_decimals, false));
  }

  // Cell size: about 480 pixels across each side and at most 40 per cell, cells at most twice
  // as long as wide, and large enough for a line of text per label and for the widest annotation.
  int cell_w = spec.cell_size, cell_h = spec.cell_size;
  if (spec.cell_size == 0) {
    cell_w = std::clamp(480 / spec.cols, 2, 40);
    cell_h = std::clamp(480 / spec.rows, 2, 40);
    cell_w = std::min(cell_w, 2 * cell_h);
    cell_h = std::min(cell_h, 2 * cell_w);
    if (!spec.row_labels.empty()) cell_h = std::max(cell_h, text_h + 3 * s);
    if (!spec.col_labels.empty()) cell_w = std::max(cell_w, text_h + 3 * s);
    if (spec.annotate) {
      cell_w = std::max(cell_w, widest(notes, s) + gap);
      cell_h = std::max(cell_h, text_h + gap);
    }
  }
  const int heat_w = spec.cols * cell_w, heat_h = spec.rows * cell_h;

  const AxisLabels rows = spec.row_labels.empty() ? index_labels(spec.rows, cell_h, s, false)
                                                  : given_labels(spec.row_labels);
  const AxisLabels cols = spec.col_labels.empty() ? index_labels(spec.cols, cell_w, s, true)
                                                  : given_labels(spec.col_labels);
  // Column labels stand upright when one of them is wider than its cell.
  const bool cols_vertical = !spec.col_labels.empty() && widest(cols.text, s) > cell_w - 2 * s;
  const int col_labels_h = cols_vertical ? widest(cols.text, s) : text_h;

  // Colorbar: as tall as the grid but at least 120 pixels (times the scale), with at most about
  // eight ticks.
  const int bar_w = 14 * s, bar_h = std::max(heat_h, 120 * s);
  const std::vector<Tick> bar_ticks = nice_linear_ticks(
      lo, hi, bar_h,
      [&](const std::vector<Tick>&) { return std::max(2 * text_h + gap, bar_h / 8); });
  int bar_labels_w = 0;
  for (const Tick& t : bar_ticks) bar_labels_w = std::max(bar_labels_w, text_width(t.label, s));

  // Place boxes from the left and from the top.
  const int y_label_w = spec.y_label.empty() ? 0 : text_h + gap;
  const int heat_x = margin + y_label_w + widest(rows.text, s) + gap / 2 + tick;
  const int bar_x = heat_x + heat_w + 3 * gap;
  const int content_w = bar_x + bar_w + tick + gap / 2 + bar_labels_w + margin;
  const int t_scale = title_scale(spec.title, s, content_w - 2 * margin);
  const int title_h = spec.title.empty() ? 0 : text_height(t_scale) + 2 * gap;
  const int heat_y = margin + title_h + text_h / 2;  // room for the top colorbar label
  const int cols_bottom = heat_y + heat_h + tick + gap / 2 + col_labels_h;
  const int width = std::max({content_w, text_width(spec.title, t_scale) + 2 * margin,
                              heat_x + text_width(spec.x_label, s) + margin});
  // The x label is centred under the grid; if it is wider than the grid and the colorbar reaches
  // lower, it goes below the colorbar's last label.
  const int x_label_w = text_width(spec.x_label, s);
  const int x_label_x =
      clamp_start(heat_x + heat_w / 2 - x_label_w / 2, x_label_w, margin, width - margin);
  const int x_label_y = x_label_x + x_label_w > bar_x - gap
                            ? std::max(cols_bottom, heat_y + bar_h + text_h / 2) + gap
                            : cols_bottom + gap;
  const int x_label_bottom = spec.x_label.empty() ? cols_bottom : x_label_y + text_h;
  const int height = std::max({x_label_bottom, heat_y + bar_h + text_h / 2,
                               heat_y + text_width(spec.y_label, s)}) +
                     margin;
  Image image = figure_canvas("draw_heatmap", width, height);

  // Cells and the values written in them.
  for (int r = 0; r < spec.rows; ++r) {
    for (int c = 0; c < spec.cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * spec.cols + c;
      const Rgb color = colormap_color(spec.colormap, (spec.values[i] - lo) / (hi - lo));
      const Rect box{heat_x + c * cell_w, heat_y + r * cell_h, cell_w, cell_h};
      image.fill_rect(box, color);
      if (spec.annotate) {
        draw_centered(image, box.x + cell_w / 2, box.y + cell_h / 2, notes[i], ink_on(color), s);
      }
    }
  }
  image.stroke_rect({heat_x - 1, heat_y - 1, heat_w + 2, heat_h + 2}, kAxisColor);

  // Row labels right-aligned left of the grid; column labels below it.
  for (std::size_t k = 0; k < rows.text.size(); ++k) {
    const int cy = heat_y + rows.cells[k] * cell_h + cell_h / 2;
    image.fill_rect({heat_x - 1 - tick, cy, tick, std::max(1, s)}, kAxisColor);
    const int w = text_width(rows.text[k], s);
    image.draw_text(heat_x - 1 - tick - gap / 2 - w, cy - text_h / 2, rows.text[k], kTextColor, s);
  }
  for (std::size_t k = 0; k < cols.text.size(); ++k) {
    const int cx = heat_x + cols.cells[k] * cell_w + cell_w / 2;
    const int top = heat_y + heat_h + 1;
    image.fill_rect({cx, top, std::max(1, s), tick}, kAxisColor);
    if (cols_vertical) {  // reads upwards and ends at the tick, as matplotlib's rotation=90
      image.draw_text(cx - text_h / 2, top + tick + gap / 2, cols.text[k], kTextColor, s,
                      TextDirection::Vertical);
    } else {
      draw_centered(image, cx, top + tick + gap / 2 + text_h / 2, cols.text[k], kTextColor, s);
    }
  }

  // Colorbar: the colormap from high (top) to low, with its ticks.
  for (int y = 0; y < bar_h; ++y) {
    const double t = 1.0 - (y + 0.5) / bar_h;
    image.fill_rect({bar_x, heat_y + y, bar_w, 1}, colormap_color(spec.colormap, t));
  }
  image.stroke_rect({bar_x - 1, heat_y - 1, bar_w + 2, bar_h + 2}, kAxisColor);
  for (const Tick& t : bar_ticks) {
    const int y =
        heat_y + static_cast<int>(std::lround((hi - t.position) / (hi - lo) * (bar_h - 1)));
    image.fill_rect({bar_x + bar_w + 1, y, tick, std::max(1, s)}, kAxisColor);
    image.draw_text(bar_x + bar_w + 1 + tick + gap / 2, y - text_h / 2, t.label, kTextColor, s);
  }

  // Title centred over the grid, axis labels centred on it, each kept inside the canvas.
  if (!spec.title.empty()) {
    const int w = text_width(spec.title, t_scale);
    image.draw_text(clamp_start(heat_x + heat_w / 2 - w / 2, w, margin, width - margin), margin,
                    spec.title, kTextColor, t_scale);
  }
  if (!spec.x_label.empty()) image.draw_text(x_label_x, x_label_y, spec.x_label, kTextColor, s);
  if (!spec.y_label.empty()) {
    const int h = text_width(spec.y_label, s);
    image.draw_text(margin, clamp_start(heat_y + heat_h / 2 - h / 2, h, heat_y, height - margin),
                    spec.y_label, kTextColor, s, TextDirection::Vertical);
  }
  return image;
}

Image draw_line_plot(const LinePlotSpec& spec) {
  check_line_plot(spec);
  const int s = spec.font_scale;
  const int text_h = text_height(s), margin = kMargin * s, gap = kGap * s, tick = kTick * s;
  const double line_w = 2.0 * s, marker_r = 3.0 * s;

  // Legend: one row per named series, a line sample and the name.
  std::vector<std::size_t> named;
  for (std::size_t i = 0; i < spec.series.size(); ++i) {
    if (!spec.series[i].name.empty()) named.push_back(i);
  }
  const int sample_w = 24 * s, row_h = text_h + gap;
  int names_w = 0;
  for (const std::size_t i : named)
    names_w = std::max(names_w, text_width(shorten(spec.series[i].name), s));
  const int legend_w = named.empty() ? 0 : gap + sample_w + gap + names_w + gap;
  const int legend_h = named.empty() ? 0 : static_cast<int>(named.size()) * row_h + gap;

  // Vertical layout first: it fixes the plot height, which the y ticks need; their labels then
  // fix the left margin and so the plot width, which the x ticks need.
  const int t_scale = title_scale(spec.title, s, spec.width - 2 * margin);
  const int top = margin + (spec.title.empty() ? text_h / 2 : text_height(t_scale) + 2 * gap);
  const int below = tick + gap / 2 + text_h + (spec.x_label.empty() ? 0 : gap + text_h) + margin;
  const int height = std::max({spec.height, top + legend_h + below, top + 80 * s + below,
                               top + text_width(spec.y_label, s) + below});
  const int plot_h = height - top - below;

  const auto [ylo, yhi] = axis_limits(spec, false);
  const AxisTicks yt = axis_ticks(ylo, yhi, spec.log_y, plot_h, [&](const std::vector<Tick>&) {
    return std::max(2 * text_h + gap, plot_h / 10);
  });
  int y_labels_w = 0;
  for (const Tick& t : yt.major) y_labels_w = std::max(y_labels_w, text_width(t.label, s));
  const int left = margin + (spec.y_label.empty() ? 0 : text_h + gap) + y_labels_w + gap / 2 + tick;
  const int right = (named.empty() ? 0 : 2 * gap + legend_w) + margin;
  const int width =
      std::max({spec.width, left + 120 * s + right, text_width(spec.title, t_scale) + 2 * margin,
                text_width(spec.x_label, s) + 2 * margin});
  const int plot_w = width - left - right;

  const auto [xlo, xhi] = axis_limits(spec, true);
  const AxisTicks xt =
      axis_ticks(xlo, xhi, spec.log_x, plot_w, [&](const std::vector<Tick>& ticks) {
        int w = 0;
        for (const Tick& t : ticks) w = std::max(w, text_width(t.label, s));
        return std::max(w + 2 * gap, plot_w / 10);
      });

  // Axis units to pixel centres: the ends of each range land on the plot's edge pixels.
  const Rect plot{left, top, plot_w, plot_h};
  const auto px = [&](double u) {
    return plot.x + 0.5 + (u - xlo) / (xhi - xlo) * (plot.width - 1);
  };
  const auto py = [&](double u) {
    return plot.y + 0.5 + (yhi - u) / (yhi - ylo) * (plot.height - 1);
  };
  const auto column = [&](double u) { return static_cast<int>(std::floor(px(u))); };
  const auto row = [&](double u) { return static_cast<int>(std::floor(py(u))); };

  Image image = figure_canvas("draw_line_plot", width, height);
  for (const Tick& t : xt.major)
    image.fill_rect({column(t.position), plot.y, 1, plot.height}, kGridColor);
  for (const Tick& t : yt.major)
    image.fill_rect({plot.x, row(t.position), plot.width, 1}, kGridColor);

  image.set_clip(plot);
  for (std::size_t i = 0; i < spec.series.size(); ++i) {
    const Series& series = spec.series[i];
    std::vector<std::pair<double, double>> points;
    for (std::size_t k = 0; k < series.x.size(); ++k) {
      points.emplace_back(px(spec.log_x ? std::log10(series.x[k]) : series.x[k]),
                          py(spec.log_y ? std::log10(series.y[k]) : series.y[k]));
    }
    const Rgb color = series_color(static_cast<int>(i));
    draw_polyline(image, points, color, line_w, i >= kSolidSeries);
    if (spec.markers || points.size() == 1) {
      for (const auto& [x, y] : points) image.fill_circle(x, y, marker_r, color);
    }
  }
  image.clear_clip();
  image.stroke_rect({plot.x - 1, plot.y - 1, plot.width + 2, plot.height + 2}, kAxisColor);

  // Ticks outside the frame: major ones labelled, minor ones half as long.
  const int x_axis = plot.y + plot.height;
  for (const Tick& t : xt.major) {
    image.fill_rect({column(t.position), x_axis, std::max(1, s), tick}, kAxisColor);
    draw_centered(image, column(t.position), x_axis + tick + gap / 2 + text_h / 2, t.label,
                  kTextColor, s);
  }
  for (const double u : xt.minor) image.fill_rect({column(u), x_axis, 1, tick / 2}, kAxisColor);
  for (const Tick& t : yt.major) {
    image.fill_rect({plot.x - 1 - tick, row(t.position), tick, std::max(1, s)}, kAxisColor);
    const int w = text_width(t.label, s);
    image.draw_text(plot.x - 1 - tick - gap / 2 - w, row(t.position) - text_h / 2, t.label,
                    kTextColor, s);
  }
  for (const double u : yt.minor)
    image.fill_rect({plot.x - 1 - tick / 2, row(u), tick / 2, 1}, kAxisColor);

  if (!spec.title.empty()) {
    const int w = text_width(spec.title, t_scale);
    image.draw_text(clamp_start(plot.x + plot.width / 2 - w / 2, w, margin, width - margin), margin,
                    spec.title, kTextColor, t_scale);
  }
  if (!spec.x_label.empty()) {
    const int w = text_width(spec.x_label, s);
    image.draw_text(clamp_start(plot.x + plot.width / 2 - w / 2, w, margin, width - margin),
                    x_axis + tick + gap / 2 + text_h + gap, spec.x_label, kTextColor, s);
  }
  if (!spec.y_label.empty()) {
    const int h = text_width(spec.y_label, s);
    image.draw_text(margin,
                    clamp_start(plot.y + plot.height / 2 - h / 2, h, margin, height - margin),
                    spec.y_label, kTextColor, s, TextDirection::Vertical);
  }

  if (!named.empty()) {
    const Rect box{plot.x + plot.width + 2 * gap, plot.y, legend_w, legend_h};
    image.stroke_rect(box, kLegendBorder);
    for (std::size_t k = 0; k < named.size(); ++k) {
      const std::size_t i = named[k];
      const double cy = box.y + gap + k * row_h + text_h / 2.0;
      const double x0 = box.x + gap;
      const Rgb color = series_color(static_cast<int>(i));
      draw_polyline(image, {{x0, cy}, {x0 + sample_w, cy}}, color, line_w, i >= kSolidSeries);
      if (spec.markers) image.fill_circle(x0 + sample_w / 2.0, cy, marker_r, color);
      image.draw_text(box.x + gap + sample_w + gap, static_cast<int>(cy) - text_h / 2,
                      shorten(spec.series[i].name), kTextColor, s);
    }
  }
  return image;
}

}  // namespace qkv::plot
