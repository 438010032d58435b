// The two row operations of the kernels that gather rows (banded attention, graph attention): a dot
// product and y += α·x over n floats, as loops the compiler vectorizes (`#pragma omp simd`).
#pragma once

#include <cstdint>

namespace qkv::kernels {

inline float dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t c = 0; c < n; ++c) s += a[c] * b[c];
  return s;
}

// y += alpha · x over n values.
inline void axpy(float alpha, const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) y[c] += alpha * x[c];
}

}  // namespace qkv::kernels
