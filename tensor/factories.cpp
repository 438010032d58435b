#include "tensor/factories.h"

#include <cmath>
#include <sstream>
#include <string>

#include "tensor/error.h"

namespace qkv {
namespace {

Tensor leaf(Tensor t, bool requires_grad) {
  t.impl()->requires_grad = requires_grad;
  return t;
}

// `op` is the factory the user called, named by Tensor::empty's errors.
Tensor filled(const char* op, const Shape& shape, float value, bool requires_grad) {
  Tensor t = Tensor::empty(shape, op);
  float* p = t.data();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = value;
  return leaf(t, requires_grad);
}

// uniform and normal, under the name of the factory called: rand and randn are theirs to the user.
Tensor uniform_as(const char* op, const Shape& shape, float lo, float hi, bool requires_grad, Generator* gen) {
  if (!(lo <= hi)) throw ValueError(std::string(op) + ": expected lo <= hi");
  Tensor t = Tensor::empty(shape, op);
  (gen ? *gen : default_generator()).fill_uniform(t.data(), t.numel(), lo, hi);
  return leaf(t, requires_grad);
}

Tensor normal_as(const char* op, const Shape& shape, float mean, float std, bool requires_grad, Generator* gen) {
  if (!(std >= 0)) throw ValueError(std::string(op) + ": expected std >= 0");
  Tensor t = Tensor::empty(shape, op);
  (gen ? *gen : default_generator()).fill_normal(t.data(), t.numel(), mean, std);
  return leaf(t, requires_grad);
}

}  // namespace

Tensor zeros(const Shape& shape, bool requires_grad) { return filled("zeros", shape, 0.0f, requires_grad); }
Tensor ones(const Shape& shape, bool requires_grad) { return filled("ones", shape, 1.0f, requires_grad); }
Tensor full(const Shape& shape, float value, bool requires_grad) {
  return filled("full", shape, value, requires_grad);
}
Tensor zeros_like(const Tensor& t) { return zeros(t.shape()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape()); }
Tensor full_like(const Tensor& t, float value) { return full(t.shape(), value); }

Tensor arange(float end) { return arange(0.0f, end, 1.0f); }

Tensor arange(float start, float end, float step) {
  auto refuse = [&](const std::string& why, double count = 0) {
    std::ostringstream what;
    what << "arange: start " << start << ", end " << end << ", step " << step << ": " << why;
    if (count != 0) what << " (" << count << ")";
    throw ValueError(what.str());
  };
  if (step == 0.0f || !std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
    refuse("expected finite start, end and a nonzero step");
  // The count in double, checked before it becomes an integer: converting a double beyond int64's
  // range is undefined behaviour (1e30 came out as a "negative size").
  const double count = std::ceil((static_cast<double>(end) - start) / step);
  if (!(count < 0x1p62)) refuse("expected at most 2^62 elements", count);
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  Tensor t = Tensor::empty({n}, "arange");
  for (int64_t i = 0; i < n; ++i) t.data()[i] = static_cast<float>(start + i * static_cast<double>(step));
  return t;
}

Tensor linspace(float start, float end, int64_t steps) {
  if (steps < 0) throw ValueError("linspace: steps must be >= 0, got " + std::to_string(steps));
  Tensor t = Tensor::empty({steps}, "linspace");
  const double delta = steps > 1 ? (static_cast<double>(end) - start) / (steps - 1) : 0.0;
  for (int64_t i = 0; i < steps; ++i) t.data()[i] = static_cast<float>(start + i * delta);
  if (steps > 1) t.data()[steps - 1] = end;
  return t;
}

Tensor eye(int64_t n, int64_t m) {
  if (m < 0) m = n;
  if (n < 0) throw ValueError("eye: n must be >= 0, got " + std::to_string(n));
  Tensor t = filled("eye", {n, m}, 0.0f, false);
  for (int64_t i = 0; i < std::min(n, m); ++i) t.data()[i * m + i] = 1.0f;
  return t;
}

Tensor tensor(std::vector<float> values, const Shape& shape, bool requires_grad) {
  if (static_cast<int64_t>(values.size()) != numel(shape))
    throw ShapeError("tensor: " + std::to_string(values.size()) + " values do not fill shape " +
                     shape_str(shape) + " (" + std::to_string(numel(shape)) + " elements)");
  Tensor t = Tensor::empty(shape, "tensor");
  std::copy(values.begin(), values.end(), t.data());
  return leaf(t, requires_grad);
}

Tensor tensor(std::initializer_list<float> values, bool requires_grad) {
  return tensor(std::vector<float>(values), {static_cast<int64_t>(values.size())}, requires_grad);
}

Tensor tensor(std::initializer_list<std::initializer_list<float>> rows, bool requires_grad) {
  const int64_t r = static_cast<int64_t>(rows.size());
  const int64_t c = r ? static_cast<int64_t>(rows.begin()->size()) : 0;
  std::vector<float> values;
  for (const auto& row : rows) {
    if (static_cast<int64_t>(row.size()) != c)
      throw ShapeError("tensor: ragged nested list: rows of length " + std::to_string(c) + " and " +
                       std::to_string(row.size()));
    values.insert(values.end(), row.begin(), row.end());
  }
  return tensor(std::move(values), {r, c}, requires_grad);
}

Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<float>>> blocks,
              bool requires_grad) {
  std::vector<float> values;
  Shape inner;
  for (const auto& block : blocks) {
    Tensor b = tensor(block);
    if (!inner.empty() && b.shape() != inner)
      throw ShapeError("tensor: ragged nested list: blocks of shape " + shape_str(inner) + " and " +
                       shape_str(b.shape()));
    inner = b.shape();
    values.insert(values.end(), b.data(), b.data() + b.numel());
  }
  if (inner.empty()) inner = {0, 0};
  return tensor(std::move(values), {static_cast<int64_t>(blocks.size()), inner[0], inner[1]}, requires_grad);
}

Tensor scalar_tensor(float value, bool requires_grad) { return filled("scalar_tensor", {}, value, requires_grad); }

Tensor to_float(const IndexTensor& index) {
  Tensor t = Tensor::empty(index.shape(), "to_float");
  const int64_t* src = index.data();
  for (int64_t i = 0, n = index.numel(); i < n; ++i) t.data()[i] = static_cast<float>(src[i]);
  return t;
}

Tensor sequence_mask(const IndexTensor& lengths, int64_t K) {
  if (K < 0) throw ValueError("sequence_mask: K must be >= 0, got " + std::to_string(K));
  Shape shape = lengths.shape();
  shape.push_back(K);
  Tensor mask = Tensor::empty(shape, "sequence_mask");
  float* m = mask.data();
  const int64_t* len = lengths.data();
  for (int64_t i = 0; i < lengths.numel(); ++i)
    for (int64_t k = 0; k < K; ++k) m[i * K + k] = k < len[i] ? 1.0f : 0.0f;
  return mask;
}

Tensor rand(const Shape& shape, bool requires_grad, Generator* gen) {
  return uniform_as("rand", shape, 0.0f, 1.0f, requires_grad, gen);
}

Tensor randn(const Shape& shape, bool requires_grad, Generator* gen) {
  return normal_as("randn", shape, 0.0f, 1.0f, requires_grad, gen);
}

Tensor uniform(const Shape& shape, float lo, float hi, bool requires_grad, Generator* gen) {
  return uniform_as("uniform", shape, lo, hi, requires_grad, gen);
}

Tensor normal(const Shape& shape, float mean, float std, bool requires_grad, Generator* gen) {
  return normal_as("normal", shape, mean, std, requires_grad, gen);
}

IndexTensor randint(int64_t lo, int64_t hi, const Shape& shape, Generator* gen) {
  if (lo >= hi)
    throw ValueError("randint: expected lo < hi, got [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     ")");
  Generator& g = gen ? *gen : default_generator();
  IndexTensor out = IndexTensor::full(shape, 0);
  int64_t* p = out.data();
  // In unsigned arithmetic, which wraps: hi - lo overflows int64 for a range wider than 2^63.
  const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  for (int64_t i = 0, n = out.numel(); i < n; ++i)
    p[i] = static_cast<int64_t>(static_cast<uint64_t>(lo) + g.next_below(range));
  return out;
}

IndexTensor randperm(int64_t n, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  IndexTensor out = IndexTensor::arange(n);
  int64_t* p = out.data();
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[g.next_below(static_cast<uint64_t>(i + 1))]);
  return out;
}

}  // namespace qkv
