// The fast softmax kernels: rows along the last dim, vectorized. The reference loops
// (softmax_reference.cpp) handle the other dims, and every dim in the reference mode.
#include "tensor/kernels/softmax.h"

#include <cmath>
#include <limits>

#include "tensor/kernels/parallel.h"
#include "tensor/kernels/row_ops.h"
#include "tensor/kernels/vecmath.h"
#include "tensor/reference_mode.h"

namespace qkv::kernels {
namespace {

// One row of n contiguous values x (n ≥ 1) to y.
void forward_row(int64_t n, const float* x, float* y, bool log) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t k = 0; k < n; ++k) m = x[k] > m ? x[k] : m;
  float s = 0.0f;
  if (log) {
#pragma omp simd reduction(+ : s)
    for (int64_t k = 0; k < n; ++k) s += vexp_nonpositive(x[k] - m);
    const float shift = m + std::log(s);
#pragma omp simd
    for (int64_t k = 0; k < n; ++k) y[k] = x[k] - shift;
    return;
  }
#pragma omp simd reduction(+ : s)
  for (int64_t k = 0; k < n; ++k) {
    y[k] = vexp_nonpositive(x[k] - m);
    s += y[k];
  }
  const float inv = 1.0f / s;
#pragma omp simd
  for (int64_t k = 0; k < n; ++k) y[k] *= inv;
}

void backward_row(int64_t n, const float* y, const float* dy, float* dx, bool log) {
  float s = 0.0f;
  if (log) {
#pragma omp simd reduction(+ : s)
    for (int64_t k = 0; k < n; ++k) s += dy[k];
#pragma omp simd
    for (int64_t k = 0; k < n; ++k) dx[k] = dy[k] - vexp_nonpositive(y[k]) * s;
    return;
  }
#pragma omp simd reduction(+ : s)
  for (int64_t k = 0; k < n; ++k) s += dy[k] * y[k];
#pragma omp simd
  for (int64_t k = 0; k < n; ++k) dx[k] = y[k] * (dy[k] - s);
}

}  // namespace

// x, y are (outer, n, inner); with inner == 1, rows of n contiguous values.
void softmax_forward(int64_t outer, int64_t n, int64_t inner, const float* x, float* y, bool log) {
  if (inner != 1 || n == 0 || reference_mode()) return softmax_forward_reference(outer, n, inner, x, y, log);
  parallel_for(outer, outer * n * 2, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) forward_row(n, x + r * n, y + r * n, log);
  });
}

// y, dy, dx are (outer, n, inner).
void softmax_backward(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy, float* dx,
                      bool log) {
  if (inner != 1 || n == 0 || reference_mode()) return softmax_backward_reference(outer, n, inner, y, dy, dx, log);
  parallel_for(outer, outer * n * 2, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) backward_row(n, y + r * n, dy + r * n, dx + r * n, log);
  });
}

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One row of masked_softmax_forward: positions [0, len) take part unless -inf. The last, partial
// group of kLanes is read from a copy padded with -inf, which takes no part. (A function of its
// own, not inside the parallel_for lambda, so that the compiler sees plain pointers and vectorizes
// the loops.)
void masked_softmax_row(int64_t n, int64_t len, const float* x, float* y) {
  const int64_t full = len - len % kLanes;
  float tail[kLanes], lanes[kLanes];
  for (int64_t i = 0; i < kLanes; ++i) tail[i] = full + i < len ? x[full + i] : kNegInf;
  // The maximum ignores NaN (x > m is false for it), as a reduction(max) does; a NaN logit makes
  // its row NaN through the exponentials, or, when nothing else is visible, by the check below.
  for (int64_t i = 0; i < kLanes; ++i) lanes[i] = kNegInf;
  for (int64_t k = 0; k < full; k += kLanes) {
#pragma omp simd
    for (int64_t i = 0; i < kLanes; ++i) lanes[i] = x[k + i] > lanes[i] ? x[k + i] : lanes[i];
  }
  for (int64_t i = 0; i < kLanes; ++i) lanes[i] = tail[i] > lanes[i] ? tail[i] : lanes[i];
  const float m = max_of_lanes(lanes);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (m == kNegInf) {  // nothing visible but NaN, if anything: an empty row, or every logit -inf
    bool any_nan = false;
    for (int64_t k = 0; k < len; ++k) any_nan |= std::isnan(x[k]);
    for (int64_t k = 0; k < n; ++k) y[k] = any_nan ? nan : 0.0f;
    return;
  }
  // vexp vectorizes where std::exp does not (tensor/kernels/vecmath.h); it never returns an exact
  // 0, so -inf logits are zeroed by the select.
  for (int64_t i = 0; i < kLanes; ++i) lanes[i] = 0.0f;
  for (int64_t k = 0; k < full; k += kLanes) {
#pragma omp simd
    for (int64_t i = 0; i < kLanes; ++i) {
      const float e = x[k + i] == kNegInf ? 0.0f : vexp(x[k + i] - m);
      y[k + i] = e;
      lanes[i] += e;
    }
  }
#pragma omp simd
  for (int64_t i = 0; i < kLanes; ++i) {
    tail[i] = tail[i] == kNegInf ? 0.0f : vexp(tail[i] - m);
    lanes[i] += tail[i];
  }
  const float sum = sum_of_lanes(lanes);
  if (std::isnan(sum)) {  // a visible NaN, or +inf (whose x - m is inf - inf): NaN in, NaN out
    for (int64_t k = 0; k < n; ++k) y[k] = nan;
    return;
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t k = 0; k < full; ++k) y[k] *= inv;
  for (int64_t k = full; k < len; ++k) y[k] = tail[k - full] * inv;
  for (int64_t k = len; k < n; ++k) y[k] = 0.0f;
}

}  // namespace

void masked_softmax_forward(int64_t rows, int64_t n, const float* x, const int64_t* lens, float* y) {
  parallel_for(rows, rows * n * 8, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) masked_softmax_row(n, lens ? lens[r] : n, x + r * n, y + r * n);
  });
}

}  // namespace qkv::kernels
