#include "tensor/kernels/reduce.h"

#include <cmath>

#include "tensor/kernels/parallel.h"

namespace qkv::kernels {

void sum_dim(int64_t outer, int64_t n, int64_t inner, const float* x, float* out) {
  if (inner == 1) {
    // Each output is one contiguous row: a dot product with ones, vectorized with a fixed
    // lane-wise order (the compiler's simd reduction), the same on every thread.
    parallel_for(outer, outer * n, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const float* row = x + o * n;
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t k = 0; k < n; ++k) acc += row[k];
        out[o] = acc;
      }
    });
    return;
  }
  // Rows of `inner` outputs are accumulated together, k by k: contiguous and vectorizable.
  parallel_for(outer, outer * n * inner, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      float* y = out + o * inner;
      const float* base = x + o * n * inner;
      for (int64_t i = 0; i < inner; ++i) y[i] = 0.0f;
      for (int64_t k = 0; k < n; ++k) {
        const float* row = base + k * inner;
#pragma omp simd
        for (int64_t i = 0; i < inner; ++i) y[i] += row[i];
      }
    }
  });
}

void max_dim(int64_t outer, int64_t n, int64_t inner, const float* x, float* out, int64_t* index,
             bool is_max) {
  parallel_for(outer * inner, outer * n * inner, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t o = r / inner, i = r % inner;
      const float* p = x + o * n * inner + i;
      float best = p[0];
      int64_t arg = 0;
      for (int64_t k = 1; k < n && !std::isnan(best); ++k) {
        const float v = p[k * inner];
        if (std::isnan(v) || (is_max ? v > best : v < best)) best = v, arg = k;
      }
      out[r] = best;
      if (index) index[r] = arg;
    }
  });
}

double sum_abs_pow(int64_t n, const float* x, float p) {
  double acc = 0.0;
  if (p == 1.0f) {
    for (int64_t i = 0; i < n; ++i) acc += std::fabs(x[i]);
  } else if (p == 2.0f) {
    for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]) * x[i];
  } else {
    for (int64_t i = 0; i < n; ++i) acc += std::pow(std::fabs(static_cast<double>(x[i])), p);
  }
  return acc;
}

}  // namespace qkv::kernels
