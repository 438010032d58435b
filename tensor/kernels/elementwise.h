// Elementwise kernels on plain float arrays: maps over one, two or three operands, with
// NumPy-style broadcasting expressed as strides (a broadcast dim has stride 0).
// The output is always contiguous; inputs are read through their strides.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tensor/kernels/parallel.h"

namespace qkv::kernels {

// Dims and per-operand strides after merging neighbours that are contiguous for every operand:
// a (32,64,128) tensor with row-major strides becomes one dim of 262144, so the inner loop is long.
struct Collapsed {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;  // one vector per operand
};
Collapsed collapse_dims(const std::vector<int64_t>& shape,
                        const std::vector<std::vector<int64_t>>& strides);

// Elementwise work is cut into pieces of this many elements, the same for any thread count, so
// that a long row (a contiguous tensor collapses to one) is shared by threads, and every element
// is computed by the same code (vector body, never a remainder loop that a different cut would
// give it) whoever computes it.
constexpr int64_t kPiece = 16384;

// out[i] = f(x[i]) for contiguous x and out (n elements).
template <class F>
void unary_map(int64_t n, const float* x, float* out, F f) {
  parallel_for((n + kPiece - 1) / kPiece, n, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t i0 = p * kPiece, i1 = std::min(n, i0 + kPiece);
#pragma omp simd
      for (int64_t i = i0; i < i1; ++i) out[i] = f(x[i]);
    }
  });
}

// Calls piece(offsets, len) for every row (the last collapsed dim) of c, or for every piece of at
// most kPiece elements of a longer row, with each operand's offset of its start and its length,
// in parallel over pieces.
template <size_t N, class F>
void for_each_piece(const Collapsed& c, F&& piece) {
  const int64_t nd = static_cast<int64_t>(c.shape.size());
  const int64_t len = nd ? c.shape[nd - 1] : 1;
  int64_t rows = 1;
  for (int64_t k = 0; k + 1 < nd; ++k) rows *= c.shape[k];
  const int64_t pieces = std::max<int64_t>(1, (len + kPiece - 1) / kPiece);
  // The offsets of the start of row r, plus `start` elements along it.
  const auto offsets = [&](int64_t r, int64_t start, int64_t (&off)[N]) {
    for (size_t o = 0; o < N; ++o) off[o] = nd ? start * c.strides[o][nd - 1] : 0;
    for (int64_t k = nd - 2; k >= 0; --k) {  // row index → multi-index → offsets
      const int64_t i = r % c.shape[k];
      r /= c.shape[k];
      for (size_t o = 0; o < N; ++o) off[o] += i * c.strides[o][k];
    }
  };
  parallel_for(rows * pieces, rows * len, [&](int64_t begin, int64_t end) {
    int64_t off[N];
    if (pieces == 1) {
      for (int64_t r = begin; r < end; ++r) offsets(r, 0, off), piece(off, len);
      return;
    }
    for (int64_t t = begin; t < end; ++t) {
      const int64_t start = t % pieces * kPiece;
      offsets(t / pieces, start, off);
      piece(off, std::min(kPiece, len - start));
    }
  });
}

// out = f(a, b) over `shape`; a and b are read with strides sa and sb (0 where broadcast).
template <class F>
void binary_map(const std::vector<int64_t>& shape, const float* a, const std::vector<int64_t>& sa,
                const float* b, const std::vector<int64_t>& sb, float* out, F f) {
  std::vector<int64_t> so(shape.size());
  for (int64_t k = static_cast<int64_t>(shape.size()) - 1, s = 1; k >= 0; --k) so[k] = s, s *= shape[k];
  const Collapsed c = collapse_dims(shape, {sa, sb, so});
  const int64_t nd = static_cast<int64_t>(c.shape.size());
  const int64_t ia = nd ? c.strides[0][nd - 1] : 0, ib = nd ? c.strides[1][nd - 1] : 0;
  for_each_piece<3>(c, [&](const int64_t* off, int64_t len) {
    const float* pa = a + off[0];
    const float* pb = b + off[1];
    float* po = out + off[2];
    // The common stride patterns get their own loops so that the compiler vectorizes them.
    if (ia == 1 && ib == 1) {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i], pb[i]);
    } else if (ia == 1 && ib == 0) {
      const float vb = pb[0];
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i], vb);
    } else if (ia == 0 && ib == 1) {
      const float va = pa[0];
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) po[i] = f(va, pb[i]);
    } else {
      for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i * ia], pb[i * ib]);
    }
  });
}

// out = f(a, b, c) over `shape`, each operand read through its strides.
template <class F>
void ternary_map(const std::vector<int64_t>& shape, const float* a, const std::vector<int64_t>& sa,
                 const float* b, const std::vector<int64_t>& sb, const float* c3,
                 const std::vector<int64_t>& sc, float* out, F f) {
  std::vector<int64_t> so(shape.size());
  for (int64_t k = static_cast<int64_t>(shape.size()) - 1, s = 1; k >= 0; --k) so[k] = s, s *= shape[k];
  const Collapsed c = collapse_dims(shape, {sa, sb, sc, so});
  const int64_t nd = static_cast<int64_t>(c.shape.size());
  const int64_t ia = nd ? c.strides[0][nd - 1] : 0, ib = nd ? c.strides[1][nd - 1] : 0,
                ic = nd ? c.strides[2][nd - 1] : 0;
  for_each_piece<4>(c, [&](const int64_t* off, int64_t len) {
    for (int64_t i = 0; i < len; ++i)
      out[off[3] + i] = f(a[off[0] + i * ia], b[off[1] + i * ib], c3[off[2] + i * ic]);
  });
}

// dst = src elementwise over `shape`, both read/written through strides (src may broadcast).
void copy_strided(const std::vector<int64_t>& shape, const float* src,
                  const std::vector<int64_t>& src_strides, float* dst,
                  const std::vector<int64_t>& dst_strides);

}  // namespace qkv::kernels
