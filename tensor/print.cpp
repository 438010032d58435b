#include "tensor/print.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

namespace qkv {
namespace {

// PyTorch's print options: summarize past 1000 elements, showing 3 items at each edge.
constexpr int64_t kSummarizeThreshold = 1000;
constexpr int64_t kEdgeItems = 3;

struct Format {
  bool integers = true;  // every value is a whole number: print "2." like PyTorch
  bool scientific = false;
  int width = 1;
};

std::string format_value(float v, const Format& f) {
  char buf[64];
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (f.integers)
    std::snprintf(buf, sizeof buf, "%.0f.", v);
  else if (f.scientific)
    std::snprintf(buf, sizeof buf, "%.4e", v);
  else
    std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

Format choose_format(const std::vector<float>& shown) {
  Format f;
  float lo = INFINITY, hi = 0.0f;
  for (float v : shown) {
    if (!std::isfinite(v)) continue;
    if (v != std::nearbyint(v)) f.integers = false;
    const float a = std::fabs(v);
    if (a > 0) lo = std::min(lo, a);
    hi = std::max(hi, a);
  }
  // Like PyTorch: scientific notation when magnitudes span more than 1000× or leave [1e-4, 1e8).
  if (!f.integers && hi > 0 && (hi / lo > 1000.0f || hi >= 1e8f || lo < 1e-4f)) f.scientific = true;
  if (f.integers && hi >= 1e8f) f.integers = false, f.scientific = true;
  for (float v : shown) f.width = std::max<int>(f.width, static_cast<int>(format_value(v, f).size()));
  return f;
}

// Indices shown along a dim of size n: all, or the first and last kEdgeItems with "..." between.
std::vector<int64_t> shown_indices(int64_t n, bool summarize) {
  std::vector<int64_t> idx;
  if (summarize && n > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
    idx.push_back(-1);  // the ellipsis
    for (int64_t i = n - kEdgeItems; i < n; ++i) idx.push_back(i);
  } else {
    for (int64_t i = 0; i < n; ++i) idx.push_back(i);
  }
  return idx;
}

void collect(const Tensor& t, int64_t d, int64_t off, bool summarize, std::vector<float>& out) {
  if (d == t.dim()) {
    out.push_back(t.data()[off]);
    return;
  }
  for (int64_t i : shown_indices(t.shape()[d], summarize))
    if (i >= 0) collect(t, d + 1, off + i * t.strides()[d], summarize, out);
}

void print_dim(std::ostream& os, const Tensor& t, int64_t d, int64_t off, bool summarize, const Format& f,
               int indent) {
  if (d == t.dim()) {
    std::string s = format_value(t.data()[off], f);
    os << std::string(static_cast<size_t>(f.width) - s.size(), ' ') << s;
    return;
  }
  os << "[";
  const std::vector<int64_t> idx = shown_indices(t.shape()[d], summarize);
  for (size_t j = 0; j < idx.size(); ++j) {
    if (j) {
      os << ",";
      if (d + 1 == t.dim()) {
        os << " ";
      } else {
        os << std::string(static_cast<size_t>(t.dim() - d - 1), '\n')
           << std::string(static_cast<size_t>(indent + 1), ' ');
      }
    }
    if (idx[j] < 0)
      os << "...";
    else
      print_dim(os, t, d + 1, off + idx[j] * t.strides()[d], summarize, f, indent + 1);
  }
  os << "]";
}

}  // namespace

std::string format_values(const Tensor& t) {
  if (t.numel() == 0) return "[]";
  const bool summarize = t.numel() > kSummarizeThreshold;
  std::vector<float> shown;
  collect(t, 0, 0, summarize, shown);
  std::ostringstream os;
  print_dim(os, t, 0, 0, summarize, choose_format(shown), static_cast<int>(std::string("tensor(").size()));
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "tensor(undefined)";
  os << "tensor(" << format_values(t) << ", shape=" << shape_str(t.shape());
  if (!t.is_leaf())
    os << ", grad_fn=<" << t.grad_fn_name() << ">";
  else if (t.requires_grad())
    os << ", requires_grad=True";
  return os << ")";
}

std::string to_string(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

}  // namespace qkv
