// What the float32 GEMM (gemm.cpp) and its bfloat16 form (gemm_bf16.cpp) share: operands read
// through strides, the growing pack buffers, and how the output of one k step is cut into tasks
// for the threads. Internal to tensor/kernels.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

#include "tensor/kernels/gemm_microkernel.h"

namespace qkv::kernels::gemm_detail {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A matrix read through strides: element (i, j) is p[i·rs + j·cs]. A row-major operand has
// (rs, cs) = (ld, 1); its transpose is the same memory with (1, ld).
struct Strided {
  const float* p;
  int64_t rs, cs;
  const float* at(int64_t i, int64_t j) const { return p + i * rs + j * cs; }
};

// A 64-byte-aligned buffer of T that only grows, so that packing reuses memory across calls
// instead of allocating each time. One per thread (thread_local), sized by the largest block seen.
template <class T>
class PackBuffer {
 public:
  T* get(int64_t n) {
    if (n > capacity_) {
      const size_t bytes = (static_cast<size_t>(n) * sizeof(T) + 63) / 64 * 64;
      data_.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
      if (!data_) throw std::bad_alloc();
      capacity_ = n;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  int64_t capacity_ = 0;
};

// Splits [0, n) into `parts` nearly equal pieces whose boundaries are multiples of `unit`; returns
// the start of piece `p` (p = parts gives n).
inline int64_t split_point(int64_t n, int64_t parts, int64_t unit, int64_t p) {
  return std::min(n, ceil_div(ceil_div(n, unit) * p, parts) * unit);
}

// Below this many multiply-adds a product runs on one thread: waking the second thread and the
// barriers between packing and computing cost more than they save.
constexpr int64_t kMinParallelProduct = int64_t{1} << 16;

// How the M×n output of one pc step is cut into tasks: row blocks × column chunks, each task one
// (row block, column chunk) pair. Row blocks hold at most MC rows, so that their packed A fits in
// L2. Within that, the cut makes the busiest thread's share of micro-tiles smallest (when M is
// small, cutting columns balances better than cutting rows), preferring fewer column chunks on
// a tie, since each chunk packs its rows of A again.
struct TaskGrid {
  int64_t row_blocks, col_chunks;
};

inline TaskGrid task_grid(int64_t M, int64_t n, int threads) {
  const int64_t fewest_blocks = ceil_div(M, MC);
  if (threads == 1) return {fewest_blocks, 1};
  const int64_t row_tiles = ceil_div(M, MR), col_tiles = ceil_div(n, NR);
  TaskGrid best{fewest_blocks, 1};
  int64_t best_load = INT64_MAX;
  for (int64_t c = 1; c <= std::min<int64_t>(threads, col_tiles); ++c)
    for (int64_t r = fewest_blocks; r <= std::min(row_tiles, fewest_blocks + threads); ++r) {
      const int64_t load = ceil_div(r * c, threads) * ceil_div(row_tiles, r) * ceil_div(col_tiles, c);
      if (load < best_load) best = {r, c}, best_load = load;
    }
  return best;
}

// The rows [i0, i1) and columns [j0, j1) of the M×n output that task `task` of `grid` computes:
// row blocks and column chunks as even as their multiples of MR and NR allow. Possibly empty.
struct TaskBounds {
  int64_t i0, i1, j0, j1;
};

inline TaskBounds task_bounds(TaskGrid grid, int64_t M, int64_t n, int64_t task) {
  const int64_t block = task / grid.col_chunks, chunk = task % grid.col_chunks;
  return {split_point(M, grid.row_blocks, MR, block), split_point(M, grid.row_blocks, MR, block + 1),
          split_point(n, grid.col_chunks, NR, chunk), split_point(n, grid.col_chunks, NR, chunk + 1)};
}

// C = alpha · op(A)·op(B) + beta · C, then + bias[j] on every row when bias is set, with the
// operands rounded to bfloat16 and the products summed in float32 (gemm_bf16.cpp), on `threads`
// threads. Only in a build where bf16_matmul_available() (tensor/precision.h); elsewhere it aborts.
void gemm_bf16(int threads, int64_t M, int64_t N, int64_t K, float alpha, Strided a, Strided b, float beta,
               float* C, int64_t ldc, const float* bias);

}  // namespace qkv::kernels::gemm_detail
