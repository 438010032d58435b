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

// An error naming the figure if its layout outgrew the largest image.
void check_canvas(const std::string& figure, int width, int height) {
  if (width > Image::kMaxSide || height > Image::kMaxSide) {
    throw ValueError(figure + ": the figure would be " + std::to_string(width) + "x" +
                     std::to_string(height) + " pixels, more than " +
                     std::to_string(Image::kMaxSide) + " on a side");
  }
}

// The canvas of a figure.
Image figure_canvas(const std::string& figure, int width, int height) {
  check_canvas(figure, width, height);
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
  if (!spec.cell_text.empty() && spec.cell_text.size() != cells)
    throw ShapeError(where + "there are " + std::to_string(spec.cell_text.size()) + " cell_text entries but " +
                     std::to_string(cells) + " cells");
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

// ---- shared layout and labels ----

// The spacing of a figure at its font scale: everything around text grows with the scale.
struct Spacing {
  int scale, text_h, margin, gap, tick;
};

Spacing spacing_at(int scale) {
  return {scale, text_height(scale), kMargin * scale, kGap * scale, kTick * scale};
}

int widest_tick(const std::vector<Tick>& ticks, int scale) {
  int w = 0;
  for (const Tick& t : ticks) w = std::max(w, text_width(t.label, scale));
  return w;
}

// The title at its own scale, centred over [left, left + span) and kept inside the canvas.
void draw_title(Image& image, const std::string& title, int t_scale, int left, int span, int margin) {
  if (title.empty()) return;
  const int w = text_width(title, t_scale);
  image.draw_text(clamp_start(left + span / 2 - w / 2, w, margin, image.width() - margin), margin, title,
                  kTextColor, t_scale);
}

// The y-axis label, reading upwards at the left margin, centred on [top, top + span) and kept
// within [lowest, canvas height - margin).
void draw_y_label(Image& image, const std::string& label, const Spacing& sp, int top, int span, int lowest) {
  if (label.empty()) return;
  const int h = text_width(label, sp.scale);
  image.draw_text(sp.margin, clamp_start(top + span / 2 - h / 2, h, lowest, image.height() - sp.margin),
                  label, kTextColor, sp.scale, TextDirection::Vertical);
}

// A tick left of a vertical axis at row y, its label right-aligned against it.
void draw_left_tick(Image& image, int axis_x, int y, const std::string& label, const Spacing& sp) {
  image.fill_rect({axis_x - 1 - sp.tick, y, sp.tick, std::max(1, sp.scale)}, kAxisColor);
  const int w = text_width(label, sp.scale);
  image.draw_text(axis_x - 1 - sp.tick - sp.gap / 2 - w, y - sp.text_h / 2, label, kTextColor, sp.scale);
}

// ---- heatmap drawing ----

// Where everything of a heatmap goes, decided before anything is drawn.
struct HeatmapLayout {
  Spacing sp;
  double lo, hi;                   // the values at the ends of the colormap
  std::vector<std::string> notes;  // the values written in the cells, if annotated
  int cell_w, cell_h;
  AxisLabels rows, cols;
  bool cols_vertical;  // column labels stand upright
  Rect grid;           // the cells
  int bar_x, bar_w, bar_h;
  std::vector<Tick> bar_ticks;
  int t_scale;
  int x_label_x, x_label_y;
  int width, height;
};

// Cell size: about 480 pixels across each side and at most 40 per cell, cells at most twice as
// long as wide, and large enough for a line of text per label and for the widest annotation.
std::pair<int, int> heatmap_cell_size(const HeatmapSpec& spec, const HeatmapLayout& layout) {
  if (spec.cell_size != 0) return {spec.cell_size, spec.cell_size};
  int cell_w = std::clamp(480 / spec.cols, 2, 40);
  int cell_h = std::clamp(480 / spec.rows, 2, 40);
  cell_w = std::min(cell_w, 2 * cell_h);
  cell_h = std::min(cell_h, 2 * cell_w);
  const int s = layout.sp.scale;
  if (!spec.row_labels.empty()) cell_h = std::max(cell_h, layout.sp.text_h + 3 * s);
  if (!spec.col_labels.empty()) cell_w = std::max(cell_w, layout.sp.text_h + 3 * s);
  if (spec.annotate) {
    cell_w = std::max(cell_w, widest(layout.notes, s) + layout.sp.gap);
    cell_h = std::max(cell_h, layout.sp.text_h + layout.sp.gap);
  }
  return {cell_w, cell_h};
}

// The grid's cells and tick labels, and the colorbar beside it: as tall as the grid but at least
// 120 pixels (times the scale), with at most about eight ticks.
void layout_heatmap_grid(const HeatmapSpec& spec, HeatmapLayout& layout) {
  const int s = layout.sp.scale;
  if (spec.annotate && !spec.cell_text.empty()) {
    for (const std::string& text : spec.cell_text) layout.notes.push_back(printable(text));
  } else if (spec.annotate) {
    for (const float v : spec.values) layout.notes.push_back(format_number(v, spec.annotate_decimals, false));
  }
  std::tie(layout.cell_w, layout.cell_h) = heatmap_cell_size(spec, layout);
  layout.grid.width = spec.cols * layout.cell_w;
  layout.grid.height = spec.rows * layout.cell_h;
  layout.rows = spec.row_labels.empty() ? index_labels(spec.rows, layout.cell_h, s, false)
                                        : given_labels(spec.row_labels);
  layout.cols = spec.col_labels.empty() ? index_labels(spec.cols, layout.cell_w, s, true)
                                        : given_labels(spec.col_labels);
  // Column labels stand upright when one of them is wider than its cell.
  layout.cols_vertical = !spec.col_labels.empty() && widest(layout.cols.text, s) > layout.cell_w - 2 * s;
  layout.bar_w = 14 * s;
  layout.bar_h = std::max(layout.grid.height, 120 * s);
  const int min_spacing = std::max(2 * layout.sp.text_h + layout.sp.gap, layout.bar_h / 8);
  layout.bar_ticks = nice_linear_ticks(layout.lo, layout.hi, layout.bar_h,
                                       [&](const std::vector<Tick>&) { return min_spacing; });
}

// Places the boxes from the left and from the top, and so fixes the canvas size.
void place_heatmap_boxes(const HeatmapSpec& spec, HeatmapLayout& layout) {
  const Spacing& sp = layout.sp;
  const int s = sp.scale;
  const int bar_labels_w = widest_tick(layout.bar_ticks, s);
  const int col_labels_h = layout.cols_vertical ? widest(layout.cols.text, s) : sp.text_h;

  const int y_label_w = spec.y_label.empty() ? 0 : sp.text_h + sp.gap;
  layout.grid.x = sp.margin + y_label_w + widest(layout.rows.text, s) + sp.gap / 2 + sp.tick;
  layout.bar_x = layout.grid.x + layout.grid.width + 3 * sp.gap;
  const int content_w = layout.bar_x + layout.bar_w + sp.tick + sp.gap / 2 + bar_labels_w + sp.margin;
  layout.t_scale = title_scale(spec.title, s, content_w - 2 * sp.margin);
  const int title_h = spec.title.empty() ? 0 : text_height(layout.t_scale) + 2 * sp.gap;
  layout.grid.y = sp.margin + title_h + sp.text_h / 2;  // room for the top colorbar label
  const int cols_bottom = layout.grid.y + layout.grid.height + sp.tick + sp.gap / 2 + col_labels_h;
  const int x_label_w = text_width(spec.x_label, s);
  layout.width = std::max({content_w, text_width(spec.title, layout.t_scale) + 2 * sp.margin,
                           layout.grid.x + x_label_w + sp.margin});
  // The x label is centred under the grid; if it is wider than the grid and the colorbar reaches
  // lower, it goes below the colorbar's last label.
  const int bar_bottom = layout.grid.y + layout.bar_h + sp.text_h / 2;
  layout.x_label_x = clamp_start(layout.grid.x + layout.grid.width / 2 - x_label_w / 2, x_label_w, sp.margin,
                                 layout.width - sp.margin);
  layout.x_label_y = layout.x_label_x + x_label_w > layout.bar_x - sp.gap
                         ? std::max(cols_bottom, bar_bottom) + sp.gap
                         : cols_bottom + sp.gap;
  const int x_label_bottom = spec.x_label.empty() ? cols_bottom : layout.x_label_y + sp.text_h;
  layout.height =
      std::max({x_label_bottom, bar_bottom, layout.grid.y + text_width(spec.y_label, s)}) + sp.margin;
}

HeatmapLayout layout_heatmap(const HeatmapSpec& spec) {
  HeatmapLayout layout{};
  layout.sp = spacing_at(spec.font_scale);
  std::tie(layout.lo, layout.hi) = heatmap_range(spec);
  layout_heatmap_grid(spec, layout);
  place_heatmap_boxes(spec, layout);
  return layout;
}

// The cells, the values written in them, and the frame around them.
void draw_heatmap_cells(Image& image, const HeatmapSpec& spec, const HeatmapLayout& layout) {
  for (int r = 0; r < spec.rows; ++r) {
    for (int c = 0; c < spec.cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * spec.cols + c;
      const Rgb color = colormap_color(spec.colormap, (spec.values[i] - layout.lo) / (layout.hi - layout.lo));
      const Rect box{layout.grid.x + c * layout.cell_w, layout.grid.y + r * layout.cell_h, layout.cell_w,
                     layout.cell_h};
      image.fill_rect(box, color);
      if (spec.annotate) {
        draw_centered(image, box.x + layout.cell_w / 2, box.y + layout.cell_h / 2, layout.notes[i],
                      ink_on(color), layout.sp.scale);
      }
    }
  }
  const Rect& g = layout.grid;
  image.stroke_rect({g.x - 1, g.y - 1, g.width + 2, g.height + 2}, kAxisColor);
}

// Row labels right-aligned left of the grid; column labels below it.
void draw_heatmap_axes(Image& image, const HeatmapLayout& layout) {
  const Spacing& sp = layout.sp;
  for (std::size_t k = 0; k < layout.rows.text.size(); ++k) {
    draw_left_tick(image, layout.grid.x,
                   layout.grid.y + layout.rows.cells[k] * layout.cell_h + layout.cell_h / 2,
                   layout.rows.text[k], sp);
  }
  const int top = layout.grid.y + layout.grid.height + 1;
  for (std::size_t k = 0; k < layout.cols.text.size(); ++k) {
    const int cx = layout.grid.x + layout.cols.cells[k] * layout.cell_w + layout.cell_w / 2;
    image.fill_rect({cx, top, std::max(1, sp.scale), sp.tick}, kAxisColor);
    if (layout.cols_vertical) {  // reads upwards and ends at the tick, as matplotlib's rotation=90
      image.draw_text(cx - sp.text_h / 2, top + sp.tick + sp.gap / 2, layout.cols.text[k], kTextColor,
                      sp.scale, TextDirection::Vertical);
    } else {
      draw_centered(image, cx, top + sp.tick + sp.gap / 2 + sp.text_h / 2, layout.cols.text[k], kTextColor,
                    sp.scale);
    }
  }
}

// The colorbar: the colormap from high (top) to low, with its ticks.
void draw_colorbar(Image& image, Colormap colormap, const HeatmapLayout& layout) {
  const Spacing& sp = layout.sp;
  const int top = layout.grid.y;
  for (int y = 0; y < layout.bar_h; ++y) {
    const double t = 1.0 - (y + 0.5) / layout.bar_h;
    image.fill_rect({layout.bar_x, top + y, layout.bar_w, 1}, colormap_color(colormap, t));
  }
  image.stroke_rect({layout.bar_x - 1, top - 1, layout.bar_w + 2, layout.bar_h + 2}, kAxisColor);
  for (const Tick& t : layout.bar_ticks) {
    const int y = top + static_cast<int>(std::lround((layout.hi - t.position) / (layout.hi - layout.lo) *
                                                     (layout.bar_h - 1)));
    image.fill_rect({layout.bar_x + layout.bar_w + 1, y, sp.tick, std::max(1, sp.scale)}, kAxisColor);
    image.draw_text(layout.bar_x + layout.bar_w + 1 + sp.tick + sp.gap / 2, y - sp.text_h / 2, t.label,
                    kTextColor, sp.scale);
  }
}

// ---- line plot drawing ----

// The legend: one row per named series, a line sample and the name.
struct Legend {
  std::vector<std::size_t> named;  // the series it lists
  int sample_w, row_h, width, height;
};

Legend legend_for(const LinePlotSpec& spec, const Spacing& sp) {
  Legend legend{};
  for (std::size_t i = 0; i < spec.series.size(); ++i) {
    if (!spec.series[i].name.empty()) legend.named.push_back(i);
  }
  legend.sample_w = 24 * sp.scale;
  legend.row_h = sp.text_h + sp.gap;
  if (legend.named.empty()) return legend;
  int names_w = 0;
  for (const std::size_t i : legend.named)
    names_w = std::max(names_w, text_width(shorten(spec.series[i].name), sp.scale));
  legend.width = sp.gap + legend.sample_w + sp.gap + names_w + sp.gap;
  legend.height = static_cast<int>(legend.named.size()) * legend.row_h + sp.gap;
  return legend;
}

// Where everything of a line plot goes, and how axis units map to pixels.
struct LinePlotLayout {
  Spacing sp;
  double line_w, marker_r;
  Legend legend;
  int t_scale;
  int width, height;
  Rect plot;  // the axes' inside
  double xlo, xhi, ylo, yhi;
  AxisTicks xt, yt;

  // Axis units to pixel centres: the ends of each range land on the plot's edge pixels.
  double px(double u) const { return plot.x + 0.5 + (u - xlo) / (xhi - xlo) * (plot.width - 1); }
  double py(double u) const { return plot.y + 0.5 + (yhi - u) / (yhi - ylo) * (plot.height - 1); }
  int column(double u) const { return static_cast<int>(std::floor(px(u))); }
  int row(double u) const { return static_cast<int>(std::floor(py(u))); }
};

// The vertical layout first: it fixes the plot height, which the y ticks need; their labels then
// fix the left margin and so the plot width, which the x ticks need.
LinePlotLayout layout_line_plot(const LinePlotSpec& spec) {
  LinePlotLayout layout{};
  layout.sp = spacing_at(spec.font_scale);
  const Spacing& sp = layout.sp;
  const int s = sp.scale;
  layout.line_w = 2.0 * s;
  layout.marker_r = 3.0 * s;
  layout.legend = legend_for(spec, sp);
  layout.t_scale = title_scale(spec.title, s, spec.width - 2 * sp.margin);
  const int top = sp.margin + (spec.title.empty() ? sp.text_h / 2 : text_height(layout.t_scale) + 2 * sp.gap);
  const int below =
      sp.tick + sp.gap / 2 + sp.text_h + (spec.x_label.empty() ? 0 : sp.gap + sp.text_h) + sp.margin;
  layout.height = std::max({spec.height, top + layout.legend.height + below, top + 80 * s + below,
                            top + text_width(spec.y_label, s) + below});
  const int plot_h = layout.height - top - below;

  std::tie(layout.ylo, layout.yhi) = axis_limits(spec, false);
  layout.yt = axis_ticks(layout.ylo, layout.yhi, spec.log_y, plot_h, [&](const std::vector<Tick>&) {
    return std::max(2 * sp.text_h + sp.gap, plot_h / 10);
  });
  const int y_labels_w = widest_tick(layout.yt.major, s);
  const int left =
      sp.margin + (spec.y_label.empty() ? 0 : sp.text_h + sp.gap) + y_labels_w + sp.gap / 2 + sp.tick;
  const int right = (layout.legend.named.empty() ? 0 : 2 * sp.gap + layout.legend.width) + sp.margin;
  layout.width =
      std::max({spec.width, left + 120 * s + right, text_width(spec.title, layout.t_scale) + 2 * sp.margin,
                text_width(spec.x_label, s) + 2 * sp.margin});
  const int plot_w = layout.width - left - right;
  layout.plot = {left, top, plot_w, plot_h};

  std::tie(layout.xlo, layout.xhi) = axis_limits(spec, true);
  layout.xt = axis_ticks(layout.xlo, layout.xhi, spec.log_x, plot_w, [&](const std::vector<Tick>& ticks) {
    return std::max(widest_tick(ticks, s) + 2 * sp.gap, plot_w / 10);
  });
  return layout;
}

// Grid lines at the major ticks, under the series.
void draw_grid(Image& image, const LinePlotLayout& layout) {
  for (const Tick& t : layout.xt.major)
    image.fill_rect({layout.column(t.position), layout.plot.y, 1, layout.plot.height}, kGridColor);
  for (const Tick& t : layout.yt.major)
    image.fill_rect({layout.plot.x, layout.row(t.position), layout.plot.width, 1}, kGridColor);
}

// The series, clipped to the axes, then the frame over their ends.
void draw_series(Image& image, const LinePlotSpec& spec, const LinePlotLayout& layout) {
  image.set_clip(layout.plot);
  for (std::size_t i = 0; i < spec.series.size(); ++i) {
    const Series& series = spec.series[i];
    std::vector<std::pair<double, double>> points;
    for (std::size_t k = 0; k < series.x.size(); ++k) {
      points.emplace_back(layout.px(spec.log_x ? std::log10(series.x[k]) : series.x[k]),
                          layout.py(spec.log_y ? std::log10(series.y[k]) : series.y[k]));
    }
    const Rgb color = series_color(static_cast<int>(i));
    draw_polyline(image, points, color, layout.line_w, i >= kSolidSeries);
    if (spec.markers || points.size() == 1) {
      for (const auto& [x, y] : points) image.fill_circle(x, y, layout.marker_r, color);
    }
  }
  image.clear_clip();
  const Rect& p = layout.plot;
  image.stroke_rect({p.x - 1, p.y - 1, p.width + 2, p.height + 2}, kAxisColor);
}

// Ticks outside the frame: major ones labelled, minor ones half as long.
void draw_line_plot_axes(Image& image, const LinePlotLayout& layout) {
  const Spacing& sp = layout.sp;
  const int x_axis = layout.plot.y + layout.plot.height;
  for (const Tick& t : layout.xt.major) {
    image.fill_rect({layout.column(t.position), x_axis, std::max(1, sp.scale), sp.tick}, kAxisColor);
    draw_centered(image, layout.column(t.position), x_axis + sp.tick + sp.gap / 2 + sp.text_h / 2, t.label,
                  kTextColor, sp.scale);
  }
  for (const double u : layout.xt.minor)
    image.fill_rect({layout.column(u), x_axis, 1, sp.tick / 2}, kAxisColor);
  for (const Tick& t : layout.yt.major)
    draw_left_tick(image, layout.plot.x, layout.row(t.position), t.label, sp);
  for (const double u : layout.yt.minor)
    image.fill_rect({layout.plot.x - 1 - sp.tick / 2, layout.row(u), sp.tick / 2, 1}, kAxisColor);
}

// The legend right of the axes, its rows in series order.
void draw_legend(Image& image, const LinePlotSpec& spec, const LinePlotLayout& layout) {
  const Legend& legend = layout.legend;
  if (legend.named.empty()) return;
  const Spacing& sp = layout.sp;
  const Rect box{layout.plot.x + layout.plot.width + 2 * sp.gap, layout.plot.y, legend.width, legend.height};
  image.stroke_rect(box, kLegendBorder);
  for (std::size_t k = 0; k < legend.named.size(); ++k) {
    const std::size_t i = legend.named[k];
    const double cy = box.y + sp.gap + k * legend.row_h + sp.text_h / 2.0;
    const double x0 = box.x + sp.gap;
    const Rgb color = series_color(static_cast<int>(i));
    draw_polyline(image, {{x0, cy}, {x0 + legend.sample_w, cy}}, color, layout.line_w, i >= kSolidSeries);
    if (spec.markers) image.fill_circle(x0 + legend.sample_w / 2.0, cy, layout.marker_r, color);
    image.draw_text(box.x + sp.gap + legend.sample_w + sp.gap, static_cast<int>(cy) - sp.text_h / 2,
                    shorten(spec.series[i].name), kTextColor, sp.scale);
  }
}

// The title over the axes and the axis labels centred on them.
void draw_line_plot_labels(Image& image, const LinePlotSpec& spec, const LinePlotLayout& layout) {
  const Spacing& sp = layout.sp;
  const Rect& p = layout.plot;
  draw_title(image, spec.title, layout.t_scale, p.x, p.width, sp.margin);
  if (!spec.x_label.empty()) {
    const int w = text_width(spec.x_label, sp.scale);
    image.draw_text(clamp_start(p.x + p.width / 2 - w / 2, w, sp.margin, layout.width - sp.margin),
                    p.y + p.height + sp.tick + sp.gap / 2 + sp.text_h + sp.gap, spec.x_label, kTextColor,
                    sp.scale);
  }
  draw_y_label(image, spec.y_label, sp, p.y, p.height, sp.margin);
}

}  // namespace

ImageSize heatmap_size(const HeatmapSpec& spec) {
  check_heatmap(spec);
  const HeatmapLayout layout = layout_heatmap(spec);
  check_canvas("draw_heatmap", layout.width, layout.height);
  return {layout.width, layout.height};
}

Image draw_heatmap(const HeatmapSpec& spec) {
  check_heatmap(spec);
  const HeatmapLayout layout = layout_heatmap(spec);
  Image image = figure_canvas("draw_heatmap", layout.width, layout.height);
  draw_heatmap_cells(image, spec, layout);
  draw_heatmap_axes(image, layout);
  draw_colorbar(image, spec.colormap, layout);
  draw_title(image, spec.title, layout.t_scale, layout.grid.x, layout.grid.width, layout.sp.margin);
  if (!spec.x_label.empty())
    image.draw_text(layout.x_label_x, layout.x_label_y, spec.x_label, kTextColor, layout.sp.scale);
  draw_y_label(image, spec.y_label, layout.sp, layout.grid.y, layout.grid.height, layout.grid.y);
  return image;
}

Image draw_line_plot(const LinePlotSpec& spec) {
  check_line_plot(spec);
  const LinePlotLayout layout = layout_line_plot(spec);
  Image image = figure_canvas("draw_line_plot", layout.width, layout.height);
  draw_grid(image, layout);
  draw_series(image, spec, layout);
  draw_line_plot_axes(image, layout);
  draw_line_plot_labels(image, spec, layout);
  draw_legend(image, spec, layout);
  return image;
}

HeatmapSpec confusion_heatmap(const std::vector<std::vector<int64_t>>& counts, const std::vector<std::string>& labels,
                              const std::string& truth, const std::string& predicted) {
  const size_t C = labels.size();
  HeatmapSpec spec;
  spec.rows = spec.cols = static_cast<int>(C);
  spec.values.assign(C * C, 0.0f);
  spec.cell_text.assign(C * C, "");
  for (size_t r = 0; r < std::min(C, counts.size()); ++r) {
    int64_t total = 0;
    for (const int64_t v : counts[r]) total += v;
    for (size_t c = 0; c < std::min(C, counts[r].size()); ++c) {
      if (counts[r][c] == 0) continue;
      spec.values[r * C + c] = static_cast<float>(static_cast<double>(counts[r][c]) / static_cast<double>(total));
      spec.cell_text[r * C + c] = std::to_string(counts[r][c]);
    }
  }
  spec.row_labels = spec.col_labels = labels;
  spec.title = "Confusion matrix on test (colour: share of the " + truth.substr(0, truth.find(' ')) +
               " row; numbers: counts)";
  spec.x_label = predicted;
  spec.y_label = truth;
  spec.colormap = Colormap::Blues;
  spec.annotate = true;
  spec.value_min = 0.0f;
  spec.value_max = 1.0f;
  return spec;
}

}  // namespace qkv::plot
