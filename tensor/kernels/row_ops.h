// Row operations of the kernels, as loops the compiler vectorizes: a dot product and y += α·x over
// n floats (`#pragma omp simd`), for the kernels that gather rows (banded attention, graph
// attention); and the lane reductions of the softmax rows (the masked softmax, attention).
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

// Reductions over a row in lanes: the row is read in groups of kLanes values, each group combined
// with the lanes element by element (a fixed-width loop the compiler makes one vector operation),
// and the lanes combined in a tree at the end. The rows of attention are short (the tagger's have
// 16 to 128 visible keys), and a `#pragma omp simd reduction` over the whole row spent most of its
// time outside its vector loop: a scalar loop for the last len % 16 values (vexp one at a time)
// and a serial sum of the 16 partial sums; in lanes, every value goes through the vector loop.
// The masked softmax and the tiled attention kernel reduce their rows this way.
constexpr int64_t kLanes = 16;

inline float max_of_lanes(float* lanes) {
  for (int64_t w = kLanes / 2; w >= 1; w /= 2)
    for (int64_t i = 0; i < w; ++i) lanes[i] = lanes[i + w] > lanes[i] ? lanes[i + w] : lanes[i];
  return lanes[0];
}

inline float sum_of_lanes(float* lanes) {
  for (int64_t w = kLanes / 2; w >= 1; w /= 2)
    for (int64_t i = 0; i < w; ++i) lanes[i] += lanes[i + w];
  return lanes[0];
}

}  // namespace qkv::kernels
