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
//
// The tree halves the lanes: lane i with lane i + 8, then i + 4, i + 2, i + 1. Written as array
// loops, GCC leaves it scalar, through the stack, and in attention's 64-key tiles the two trees of
// every row and tile cost as much as the rest of the softmax; with GCC or Clang it is the same
// tree in registers, four shuffles (each lane meets the same partner in the same order, so the sum
// has the same bits). The lanes
// of a maximum never hold NaN (the loops that fill them skip it), where vmaxps and the ternary
// could differ.
constexpr int64_t kLanes = 16;

// On GCC and Clang the tree runs on a vector of the 16 lanes (their vector extensions), each step
// a shuffle that brings lane i + w to lane i. (The vector never leaves this function: one passed
// between functions would change the ABI of a portable build.)
template <bool kMax>
inline float lanes_tree(float* lanes) {
#if defined(__GNUC__)
  using LaneVector = float __attribute__((vector_size(kLanes * sizeof(float))));
  LaneVector a, p;
  __builtin_memcpy(&a, lanes, sizeof a);
  const auto combine = [&] {
    if constexpr (kMax) a = p > a ? p : a;
    else a = a + p;
  };
  p = __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7), combine();
  p = __builtin_shufflevector(a, a, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11), combine();
  p = __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13), combine();
  p = __builtin_shufflevector(a, a, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14), combine();
  return a[0];
#else
  for (int64_t w = kLanes / 2; w >= 1; w /= 2)
    for (int64_t i = 0; i < w; ++i)
      if constexpr (kMax) lanes[i] = lanes[i + w] > lanes[i] ? lanes[i + w] : lanes[i];
      else lanes[i] += lanes[i + w];
  return lanes[0];
#endif
}

inline float max_of_lanes(float* lanes) { return lanes_tree<true>(lanes); }
inline float sum_of_lanes(float* lanes) { return lanes_tree<false>(lanes); }

}  // namespace qkv::kernels
