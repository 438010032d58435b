#include "tensor/kernels/softmax.h"

#include <cmath>
#include <limits>

#include "tensor/kernels/parallel.h"
#include "tensor/kernels/vecmath.h"

namespace qkv::kernels {

// Both kernels handle one (o, i) line of n elements, spaced `inner` apart, per iteration.

void softmax_forward(int64_t outer, int64_t n, int64_t inner, const float* x, float* y, bool log) {
  parallel_for(outer * inner, outer * n * inner * 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t base = (r / inner) * n * inner + r % inner;
      const float* xr = x + base;
      float* yr = y + base;
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < n; ++k) m = std::fmax(m, xr[k * inner]);
      float s = 0.0f;
      for (int64_t k = 0; k < n; ++k) {
        const float e = std::exp(xr[k * inner] - m);
        if (!log) yr[k * inner] = e;
        s += e;
      }
      if (log) {
        const float shift = m + std::log(s);
        for (int64_t k = 0; k < n; ++k) yr[k * inner] = xr[k * inner] - shift;
      } else {
        const float inv = 1.0f / s;
        for (int64_t k = 0; k < n; ++k) yr[k * inner] *= inv;
      }
    }
  });
}

void softmax_backward(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy,
                      float* dx, bool log) {
  parallel_for(outer * inner, outer * n * inner * 3, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t base = (r / inner) * n * inner + r % inner;
      const float* yr = y + base;
      const float* gr = dy + base;
      float* dr = dx + base;
      float s = 0.0f;
      if (log) {
        for (int64_t k = 0; k < n; ++k) s += gr[k * inner];
        for (int64_t k = 0; k < n; ++k) dr[k * inner] = gr[k * inner] - std::exp(yr[k * inner]) * s;
      } else {
        for (int64_t k = 0; k < n; ++k) s += gr[k * inner] * yr[k * inner];
        for (int64_t k = 0; k < n; ++k) dr[k * inner] = yr[k * inner] * (gr[k * inner] - s);
      }
    }
  });
}

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One row of masked_softmax_forward: positions [0, len) take part unless -inf. (A function of its
// own, not inside the parallel_for lambda, so that the compiler sees plain pointers and vectorizes
// the loops.)
void masked_softmax_row(int64_t n, int64_t len, const float* x, float* y) {
  float m = kNegInf;
#pragma omp simd reduction(max : m)
  for (int64_t k = 0; k < len; ++k) m = x[k] > m ? x[k] : m;
  if (m == kNegInf) {  // nothing visible: an empty row, or every logit -inf
    for (int64_t k = 0; k < n; ++k) y[k] = 0.0f;
    return;
  }
  // vexp vectorizes where std::exp does not (tensor/kernels/vecmath.h); it never returns an exact
  // 0, so -inf logits are zeroed by the select.
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t k = 0; k < len; ++k) {
    const float e = x[k] == kNegInf ? 0.0f : vexp(x[k] - m);
    y[k] = e;
    s += e;
  }
  const float inv = 1.0f / s;
#pragma omp simd
  for (int64_t k = 0; k < len; ++k) y[k] *= inv;
  for (int64_t k = len; k < n; ++k) y[k] = 0.0f;
}

}  // namespace

void masked_softmax_forward(int64_t rows, int64_t n, const float* x, const int64_t* lens, float* y) {
  parallel_for(rows, rows * n * 8, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) masked_softmax_row(n, lens ? lens[r] : n, x + r * n, y + r * n);
  });
}

}  // namespace qkv::kernels
