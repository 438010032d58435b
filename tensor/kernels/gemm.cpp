// The fast GEMM: the blocked loops of Goto & van de Geijn ("Anatomy of high-performance matrix
// multiplication", ACM TOMS 2008) in the form of BLIS (Van Zee & van de Geijn 2015), around the
// micro-kernel of gemm_microkernel.h. docs/PERFORMANCE.md walks through it with measurements.
//
//   for jc in steps of NC over the columns of C          B block: KC×NC, shared, stays in L3
//     for pc in steps of KC over k                       pack op(B)[pc.., jc..] once for all threads
//       for each (row block ic of MC rows, column chunk) task, spread over threads:
//         pack op(A)[ic.., pc..]                           A block: MC×KC, private, stays in L2
//         for jr in steps of NR over the chunk             B sliver: KC×NR, stays in L1
//           for ir in steps of MR over the block
//             micro-kernel: C[ic+ir.., jc+jr..] (MR×NR) = alpha · A sliver · B sliver + beta' · C
//
// beta' is beta for the first pc step and 1 afterwards (the later steps accumulate). Packing copies
// the operands into the order the micro-kernel reads them, contiguous and aligned, and is where a
// transposed operand is handled: packing reads op(A)(i, k) = A[i·rs + k·cs] through row and column
// strides, and a transpose only swaps them. Threads share work by output blocks and never split k,
// so every element of C is computed by one thread in the same order whatever the thread count.
#include "tensor/kernels/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>

#include "tensor/kernels/gemm_microkernel.h"
#include "tensor/kernels/parallel.h"

namespace qkv::kernels {
namespace {

using namespace gemm_detail;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A matrix read through strides: element (i, j) is p[i·rs + j·cs]. A row-major operand has
// (rs, cs) = (ld, 1); its transpose is the same memory with (1, ld).
struct Strided {
  const float* p;
  int64_t rs, cs;
  const float* at(int64_t i, int64_t j) const { return p + i * rs + j * cs; }
};

// A 64-byte-aligned float buffer that only grows, so that packing reuses memory across calls
// instead of allocating each time. One per thread (thread_local), sized by the largest block seen.
class PackBuffer {
 public:
  float* get(int64_t n) {
    if (n > capacity_) {
      const size_t bytes = (static_cast<size_t>(n) * sizeof(float) + 63) / 64 * 64;
      data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
      if (!data_) throw std::bad_alloc();
      capacity_ = n;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  int64_t capacity_ = 0;
};

thread_local PackBuffer t_a_buffer, t_b_buffer;

// Packs the m×k block a (m ≤ MC, k ≤ KC) into ceil(m/MR) slivers of MR rows: sliver r holds, for
// each k, the MR values a(r·MR + i, k) side by side. Rows past m are zero, so that the
// micro-kernel always computes a whole tile.
void pack_a(Strided a, int64_t m, int64_t k, float* out) {
  for (int64_t r = 0; r < m; r += MR, out += MR * k) {
    const int64_t rows = std::min(MR, m - r);
    for (int64_t p = 0; p < k; ++p) {
      float* dst = out + p * MR;
      for (int64_t i = 0; i < rows; ++i) dst[i] = *a.at(r + i, p);
      for (int64_t i = rows; i < MR; ++i) dst[i] = 0.0f;
    }
  }
}

// Packs NR columns [j, j + cols) of the k×n block b into one sliver: row p holds b(p, j..j+NR)
// side by side, zero past the last column.
void pack_b_sliver(Strided b, int64_t k, int64_t j, int64_t cols, float* out) {
  if (b.cs == 1 && cols == NR) {  // rows of B are contiguous: copy NR floats per row
    for (int64_t p = 0; p < k; ++p)
      for (int64_t c = 0; c < NR; ++c) out[p * NR + c] = b.at(p, j)[c];
    return;
  }
  // B is read transposed (or this is the last, partial sliver): walk each column down k.
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t p = 0; p < k; ++p) out[p * NR + c] = *b.at(p, j + c);
  for (int64_t c = cols; c < NR; ++c)
    for (int64_t p = 0; p < k; ++p) out[p * NR + c] = 0.0f;
}

// C[0:m, 0:n] = alpha · (packed A block)·(packed B columns) + beta · C, for an m×k block of A
// packed by pack_a and n columns of B packed by pack_b_sliver (n ≤ the packed width).
void macro_kernel(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float alpha,
                  float beta, float* C, int64_t ldc) {
  alignas(64) float edge[MR * NR];
  for (int64_t j = 0; j < n; j += NR) {
    const int64_t cols = std::min(NR, n - j);
    for (int64_t i = 0; i < m; i += MR) {
      const int64_t rows = std::min(MR, m - i);
      const float* a_sliver = a + i * k;
      const float* b_sliver = b + j * k;
      float* c = C + i * ldc + j;
      if (rows == MR && cols == NR) {
        micro_kernel(k, a_sliver, b_sliver, alpha, beta, c, ldc);
        continue;
      }
      // A partial tile goes through a full one on the side, computed by the same micro-kernel
      // (so with the same arithmetic as a full tile), then the valid part is copied back.
      if (beta != 0.0f)
        for (int64_t r = 0; r < rows; ++r) std::copy(c + r * ldc, c + r * ldc + cols, edge + r * NR);
      micro_kernel(k, a_sliver, b_sliver, alpha, beta, edge, NR);
      for (int64_t r = 0; r < rows; ++r) std::copy(edge + r * NR, edge + r * NR + cols, c + r * ldc);
    }
  }
}

// C = beta · C (beta == 0 writes zeros without reading C): the whole product when k == 0.
void scale_c(int64_t M, int64_t N, float beta, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
}

// Splits [0, n) into `parts` nearly equal pieces whose boundaries are multiples of `unit`; returns
// the start of piece `p` (p = parts gives n).
int64_t split_point(int64_t n, int64_t parts, int64_t unit, int64_t p) {
  return std::min(n, ceil_div(ceil_div(n, unit) * p, parts) * unit);
}

// Below this many multiply-adds a product runs on one thread: waking the second thread and the
// barriers between packing and computing cost more than they save.
constexpr int64_t kMinParallelProduct = int64_t{1} << 16;

// Calls fn(i) for i in [0, n): on the calling thread alone, or shared among the threads of the
// enclosing parallel region when `team` (an orphaned `omp for`, which ends with a barrier). The
// serial case must not reach the `omp for`: gemm may run on one thread of someone else's team.
template <class F>
void for_each_index(bool team, int64_t n, F&& fn) {
  if (!team) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
#pragma omp for schedule(dynamic)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

// The blocked loops, run by every thread of a team of `threads` (or by the caller alone).
void blocked_loops(int threads, int64_t M, int64_t N, int64_t K, float alpha, Strided a, Strided b,
                   float beta, float* C, int64_t ldc, float* b_packed) {
  const bool team = threads > 1;
  // Row blocks of nearly equal height (multiples of MR, at most MC), and enough column chunks that
  // every thread has at least two tasks to balance when a core is busy with something else.
  const int64_t row_blocks = ceil_div(M, MC);
  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t n = std::min(NC, N - jc);
    const int64_t slivers = ceil_div(n, NR);
    const int64_t chunks = threads == 1 ? 1 : std::min(slivers, ceil_div(2 * threads, row_blocks));
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t k = std::min(KC, K - pc);
      const Strided b_block{b.at(pc, jc), b.rs, b.cs};
      for_each_index(team, slivers, [&](int64_t s) {
        pack_b_sliver(b_block, k, s * NR, std::min(NR, n - s * NR), b_packed + s * NR * k);
      });
      for_each_index(team, row_blocks * chunks, [&](int64_t task) {
        const int64_t block = task / chunks, chunk = task % chunks;
        const int64_t i0 = split_point(M, row_blocks, MR, block), i1 = split_point(M, row_blocks, MR, block + 1);
        const int64_t j0 = split_point(n, chunks, NR, chunk), j1 = split_point(n, chunks, NR, chunk + 1);
        if (i0 == i1 || j0 == j1) return;
        float* a_packed = t_a_buffer.get(ceil_div(i1 - i0, MR) * MR * k);
        pack_a(Strided{a.at(i0, pc), a.rs, a.cs}, i1 - i0, k, a_packed);
        macro_kernel(i1 - i0, j1 - j0, k, a_packed, b_packed + j0 * k, alpha, pc == 0 ? beta : 1.0f,
                     C + i0 * ldc + jc + j0, ldc);
      });
    }
  }
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) return scale_c(M, N, beta, C, ldc);
  const Strided a = trans_a ? Strided{A, 1, lda} : Strided{A, lda, 1};
  const Strided b = trans_b ? Strided{B, 1, ldb} : Strided{B, ldb, 1};
  const int threads = omp_in_parallel() || M * N * K < kMinParallelProduct ? 1 : get_num_threads();
  // The packed B block belongs to the calling thread and is shared by the team.
  float* b_packed = t_b_buffer.get(std::min(KC, K) * ceil_div(std::min(NC, N), NR) * NR);
  if (threads == 1) return blocked_loops(1, M, N, K, alpha, a, b, beta, C, ldc, b_packed);
#pragma omp parallel num_threads(threads)
  blocked_loops(threads, M, N, K, alpha, a, b, beta, C, ldc, b_packed);
}

GemmConfig gemm_config() { return {Simd::name, MR, NR, MC, KC, NC}; }

void gemm_batched(int64_t batch, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  float alpha, const float* A, int64_t lda, int64_t stride_a, const float* B,
                  int64_t ldb, int64_t stride_b, float beta, float* C, int64_t ldc,
                  int64_t stride_c) {
  // Each product is computed the same way on any thread, so spreading the batch across threads
  // (small matrices) or each product's tiles across threads (large ones) gives the same result.
  const auto one = [&](int64_t i) {
    gemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta,
         C + i * stride_c, ldc);
  };
  if (M * N * K < kMinParallelProduct * 16) {
    parallel_for(batch, batch * M * N * K, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) one(i);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i) one(i);
  }
}

}  // namespace qkv::kernels
