// The fast GEMM: the blocked loops of Goto & van de Geijn ("Anatomy of high-performance matrix
// multiplication", ACM TOMS 2008) in the form of BLIS (Van Zee & van de Geijn 2015), around the
// micro-kernel of gemm_microkernel.h. docs/PERFORMANCE.md walks through it with measurements.
// gemm_blocked.cpp is the same loop nest with a scalar micro-kernel and OpenMP's threads: read it
// first.
// This file adds the SIMD micro-kernel (in smaller instances for the tiles at the edges of C),
// the threads, reading small blocks of A in place, and computing a product narrower than a SIMD
// vector as its transpose.
//
//   for jc in steps of NC over the columns of C          B block: KC×NC, shared, stays in L3
//     for pc in steps of KC over k                       pack op(B)[pc.., jc..] once for all threads
//       for each (row block ic of MC rows, column chunk) task, spread over threads:
//         pack op(A)[ic.., pc..] (or read it in place)     A block: MC×KC, private, stays in L2
//         for jr in steps of NR over the chunk             B sliver: KC×NR, in L1 or L2
//           for ir in steps of MR over the block
//             micro-kernel: C[ic+ir.., jc+jr..] (MR×NR) = alpha · A sliver · B sliver + beta' · C
//
// beta' is beta for the first pc step and 1 afterwards (the later steps accumulate). Packing copies
// the operands into the order the micro-kernel reads them, contiguous and aligned, and is where a
// transposed operand is handled: packing reads op(A)(i, k) = A[i·rs + k·cs] through row and column
// strides, and a transpose only swaps them. Threads share work by output blocks and never split k,
// so every element of C is computed by one thread in the same order whatever the thread count.
#include "tensor/kernels/gemm.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <utility>

#include "tensor/kernels/gemm_blocking.h"
#include "tensor/kernels/gemm_microkernel.h"
#include "tensor/kernels/parallel.h"
#include "tensor/precision.h"
#include "tensor/reference_mode.h"

namespace qkv::kernels {
namespace {

using namespace gemm_detail;

thread_local PackBuffer<float> t_a_buffer, t_b_buffer, t_b_part;

// Packs `lines` lines of a k-long panel into slivers of W lines for the micro-kernel: sliver j
// holds out[j·W·k + p·W + i] = s[(j·W + i)·rs + p·cs] for p < k, i < W, with zeros for the lines
// past `lines`. For A the lines are rows of op(A) (W = MR), for B columns of op(B) (W = NR). One
// of the strides is 1, and the loops follow the memory: when the W values of one p are contiguous
// (rs == 1), they are copied as they are, 4 values of p at a time across all the slivers, so that
// each cache line read is used whole while it is in L1 (one sliver at a time over all p reads
// lines that are far apart and evicts them before the next sliver uses the rest). When each line
// is contiguous along p (cs == 1), the sliver is a transpose, done in 8×8 blocks for the same
// reason, with SIMD shuffles, and the lines left over one at a time.
template <int64_t W>
void pack_panel(const float* s, int64_t rs, int64_t cs, int64_t lines, int64_t k, float* out) {
  const int64_t slivers = ceil_div(lines, W), full = lines / W;  // full: slivers without padding
  if (rs == 1) {
    constexpr int64_t P = 4;
    for (int64_t p0 = 0; p0 < k; p0 += P)
      for (int64_t j = 0; j < full; ++j)
        for (int64_t p = p0; p < std::min(k, p0 + P); ++p)
          for (int64_t i = 0; i < W; ++i) out[j * W * k + p * W + i] = s[p * cs + j * W + i];
    if (const int64_t rest = lines - full * W; rest > 0)
      for (int64_t p = 0; p < k; ++p)
        for (int64_t i = 0; i < W; ++i)
          out[full * W * k + p * W + i] = i < rest ? s[p * cs + full * W + i] : 0.0f;
    return;
  }
  constexpr int64_t P = 8;
  for (int64_t j = 0; j < slivers; ++j) {
    const int64_t n = std::min(W, lines - j * W);  // lines in this sliver
    const float* line = s + j * W * rs;
    float* sliver = out + j * W * k;
    int64_t i0 = 0;
    for (; i0 + 8 <= n; i0 += 8) {
      int64_t p0 = 0;
      for (; p0 + P <= k; p0 += P) transpose8x8(line + i0 * rs + p0, rs, sliver + p0 * W + i0, W);
      for (int64_t i = i0; i < i0 + 8; ++i)
        for (int64_t p = p0; p < k; ++p) sliver[p * W + i] = line[i * rs + p];
    }
    for (int64_t i = i0; i < n; ++i)
      for (int64_t p = 0; p < k; ++p) sliver[p * W + i] = line[i * rs + p];
    for (int64_t p = 0; n < W && p < k; ++p) std::fill(sliver + p * W + n, sliver + p * W + W, 0.0f);
  }
}

// Packs the m×k block a (m ≤ MC, k ≤ KC) into ceil(m/MR) slivers of MR rows.
void pack_a(Strided a, int64_t m, int64_t k, float* out) { pack_panel<MR>(a.p, a.rs, a.cs, m, k, out); }

// Packs columns [j0, j1) of the k×n block b into slivers of NR columns (j0 a multiple of NR), at
// their place in the packed block.
void pack_b(Strided b, int64_t k, int64_t j0, int64_t j1, float* out) {
  pack_panel<NR>(b.at(0, j0), b.cs, b.rs, j1 - j0, k, out + j0 * k);
}

// Where the micro-kernel finds the rows of an m×k block of op(A): in place in A (in_place.p is
// set), or in the copy made by pack_a.
struct ABlock {
  Strided in_place;
  const float* packed;
};

// C[0:m, 0:n] = alpha · (A block)·(packed B columns) + beta · C, for an m×k block of A and n
// columns of B packed by pack_b. Element (i, j) of C is at C[i·ldc + j], or at C[j·ldc + i] when
// c_trans (the product computed as its transpose, see gemm()). When bias is set (the last k step
// of gemm_bias), element (i, j) then gets bias[j] added, or bias[i] when c_trans: each tile while
// it is still in L1.
void macro_kernel(int64_t m, int64_t n, int64_t k, ABlock a, const float* b, float alpha, float beta,
                  float* C, int64_t ldc, bool c_trans, const float* bias) {
  alignas(64) float edge[MR * NR];
  // Read in place, a last sliver of fewer than MR rows would run past the block: it is packed on
  // the side (zero-padded, as pack_a does), once for all the column slivers.
  alignas(64) float tail[MR * KC];
  const Strided& in_place = a.in_place;
  const int64_t whole = in_place.p ? m / MR * MR : m;
  if (whole < m) pack_a(Strided{in_place.at(whole, 0), in_place.rs, in_place.cs}, m - whole, k, tail);
  // The rows × cols tile of C at c from rows [i, i + MR) of the A block and the B sliver b_sliver.
  // Rows of a row-major A read in place always make a whole sliver (the MR-row instance); every
  // other sliver is read down its columns: the packed copy, the partial last sliver packed aside,
  // or a transposed A in place.
  const auto tile = [&](int64_t i, const float* b_sliver, float* c, int64_t ldc_tile, int64_t rows,
                        int64_t cols) {
    if (in_place.p && i < whole && in_place.cs == 1) {
      tile_kernel<MR>(k, RowSliver{in_place.at(i, 0), in_place.rs}, b_sliver, alpha, beta, c, ldc_tile, rows,
                      cols);
      return;
    }
    const ColumnSliver sliver = !in_place.p  ? ColumnSliver{a.packed + i * k, MR}
                                : i >= whole ? ColumnSliver{tail, MR}
                                             : ColumnSliver{in_place.at(i, 0), in_place.cs};
    tile_kernel(k, sliver, b_sliver, alpha, beta, c, ldc_tile, rows, cols);
  };
  for (int64_t j = 0; j < n; j += NR) {
    const int64_t cols = std::min(NR, n - j);
    for (int64_t i = 0; i < m; i += MR) {
      const int64_t rows = std::min(MR, m - i);
      const float* b_sliver = b + j * k;
      if (!c_trans) {
        float* c = C + i * ldc + j;
        tile(i, b_sliver, c, ldc, rows, cols);
        for (int64_t r = 0; bias && r < rows; ++r)
          for (int64_t q = 0; q < cols; ++q) c[r * ldc + q] += bias[j + q];
        continue;
      }
      // A transposed tile is computed on the side, then copied to its place in Cᵀ.
      float* c = C + j * ldc + i;
      if (beta != 0.0f)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t q = 0; q < cols; ++q) edge[r * NR + q] = c[q * ldc + r];
      tile(i, b_sliver, edge, NR, rows, cols);
      for (int64_t q = 0; q < cols; ++q)
        for (int64_t r = 0; r < rows; ++r)
          c[q * ldc + r] = bias ? edge[r * NR + q] + bias[i + r] : edge[r * NR + q];
    }
  }
}

// C = beta · C (beta == 0 writes zeros without reading C): the whole product when k == 0.
void scale_c(int64_t M, int64_t N, float beta, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
}

// Whether a task reads its rows of A in place instead of packing them. Packing pays for itself
// when the packed block serves many slivers of B; for a task of few columns it is a large share of
// the time, while rows of a row-major A read in place are MR sequential streams, as fast as a
// packed sliver. Over many columns the packed copy wins: rows far apart in memory (a power-of-two
// lda) compete for the same cache sets. A transposed A is packed unless its block is small enough
// to stay in L1: read in place, each k touches a new cache line. docs/PERFORMANCE.md ("The GEMM,
// step by step") has the measurements behind both limits.
constexpr int64_t kInPlaceMaxCols = 256, kInPlaceMaxTransposed = 4096;  // floats: 16 KiB

bool reads_a_in_place(Strided a, int64_t rows, int64_t k, int64_t cols) {
  return a.cs == 1 ? cols <= kInPlaceMaxCols : rows * k <= kInPlaceMaxTransposed;
}

// Rows [i0, i1) of A over k steps from pc, for a task of `cols` columns: read in place, or packed
// into this thread's buffer.
ABlock a_block(Strided a, int64_t i0, int64_t i1, int64_t pc, int64_t k, int64_t cols) {
  const Strided block{a.at(i0, pc), a.rs, a.cs};
  if (reads_a_in_place(a, i1 - i0, k, cols)) return {block, nullptr};
  float* a_packed = t_a_buffer.get(ceil_div(i1 - i0, MR) * MR * k);
  pack_a(block, i1 - i0, k, a_packed);
  return {Strided{nullptr, 0, 0}, a_packed};
}

// A product of few rows and columns and many k steps, such as a weight's gradient (Xᵀ·dY summed
// over every row of a batch), computes little per pc step, and the loops below hand out work twice
// a step (the packing of B, then the tiles), each hand-out a wait for the other thread: two threads
// bought 1.4× on 64 × 128 × 6400. When one row block holds all of M, each thread here takes a part
// of C for all of k instead, with one hand-out for the whole product: a chunk of the columns, for
// which it packs its columns of B and all the rows of A, or, when M is the longer side, a block of
// the rows, for which it packs its rows of A and all of B (the operand packed twice is the smaller
// one). Each element of C is the same chain of the same micro-kernel as in the loops below, so the
// result is the same to the bit.
enum class Owned { none, columns, rows };

Owned owned_split(int threads, int64_t M, int64_t n, int64_t K) {
  if (threads <= 1 || M > MC || K <= KC) return Owned::none;
  if (n >= M && n >= threads * NR) return Owned::columns;
  if (M >= threads * MR) return Owned::rows;
  return Owned::none;
}

void owned_loops(Owned split, int threads, int64_t M, int64_t n, int64_t K, float alpha, Strided a, Strided b,
                 float beta, float* C, int64_t ldc, bool c_trans, const float* bias) {
  parallel_tasks(threads, threads, M * n * K, [&](int64_t t, int) {
    const bool by_columns = split == Owned::columns;
    const int64_t i0 = by_columns ? 0 : split_point(M, threads, MR, t);
    const int64_t i1 = by_columns ? M : split_point(M, threads, MR, t + 1);
    const int64_t j0 = by_columns ? split_point(n, threads, NR, t) : 0;
    const int64_t j1 = by_columns ? split_point(n, threads, NR, t + 1) : n;
    if (i0 == i1 || j0 == j1) return;
    // This thread's packed B, in a buffer of its own (the caller's t_b_buffer holds the blocked
    // loops' shared block).
    float* b_packed = t_b_part.get(std::min(KC, K) * (j1 - j0 + NR));
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t k = std::min(KC, K - pc);
      pack_b(Strided{b.at(pc, j0), b.rs, b.cs}, k, 0, j1 - j0, b_packed);
      const ABlock source = a_block(a, i0, i1, pc, k, j1 - j0);
      float* c = c_trans ? C + j0 * ldc + i0 : C + i0 * ldc + j0;
      const float* tile_bias = !bias || pc + k < K ? nullptr : c_trans ? bias + i0 : bias + j0;
      macro_kernel(i1 - i0, j1 - j0, k, source, b_packed, alpha, pc == 0 ? beta : 1.0f, c, ldc, c_trans,
                   tile_bias);
    }
  });
}

// The blocked loops, their packing and products shared among `threads` threads (parallel.h).
void blocked_loops(int threads, int64_t M, int64_t N, int64_t K, float alpha, Strided a, Strided b,
                   float beta, float* C, int64_t ldc, bool c_trans, const float* bias, float* b_packed) {
  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t n = std::min(NC, N - jc);
    if (const Owned split = owned_split(threads, M, n, K); split != Owned::none) {
      owned_loops(split, threads, M, n, K, alpha, a, Strided{b.at(0, jc), b.rs, b.cs}, beta,
                  c_trans ? C + jc * ldc : C + jc, ldc, c_trans, bias ? (c_trans ? bias : bias + jc) : nullptr);
      continue;
    }
    const TaskGrid grid = task_grid(M, n, threads);
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t k = std::min(KC, K - pc);
      const Strided b_block{b.at(pc, jc), b.rs, b.cs};
      parallel_tasks(threads, threads, k * n, [&](int64_t t, int) {
        pack_b(b_block, k, split_point(n, threads, NR, t), split_point(n, threads, NR, t + 1), b_packed);
      });
      parallel_tasks(grid.row_blocks * grid.col_chunks, threads, M * n * k, [&](int64_t task, int) {
        const auto [i0, i1, j0, j1] = task_bounds(grid, M, n, task);
        if (i0 == i1 || j0 == j1) return;
        const ABlock source = a_block(a, i0, i1, pc, k, j1 - j0);
        float* c = c_trans ? C + (jc + j0) * ldc + i0 : C + i0 * ldc + jc + j0;
        const float* tile_bias = !bias || pc + k < K ? nullptr : c_trans ? bias + i0 : bias + jc + j0;
        macro_kernel(i1 - i0, j1 - j0, k, source, b_packed + j0 * k, alpha, pc == 0 ? beta : 1.0f, c, ldc,
                     c_trans, tile_bias);
      });
    }
  }
}

// The whole product, for gemm and gemm_bias (bias set): the special cases, the precision, the
// transposed form, the threads, then the blocked loops.
void run_product(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                 const float* bias) {
  if (M <= 0 || N <= 0) return;
  if (reference_mode()) {  // the plain path: gemm_blocked's loops under OpenMP, in float32
    gemm_blocked(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    for (int64_t i = 0; bias && i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] += bias[j];
    return;
  }
  if (K <= 0) {
    scale_c(M, N, beta, C, ldc);
    for (int64_t i = 0; bias && i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] += bias[j];
    return;
  }
  Strided a = trans_a ? Strided{A, 1, lda} : Strided{A, lda, 1};
  Strided b = trans_b ? Strided{B, 1, ldb} : Strided{B, ldb, 1};
  const int threads = in_parallel_task() || M * N * K < kMinParallelProduct ? 1 : get_num_threads();
  if (get_matmul_precision() == MatmulPrecision::medium && M * N * K >= kMinBf16Product) {
    gemm_bf16(threads, M, N, K, alpha, a, b, beta, C, ldc, bias);
    return;
  }
  // A tile computes whole vectors of columns and rows in steps of MR_STEP (gemm_microkernel.h):
  // a product narrower than a vector leaves most of each vector empty (N = 8 on AVX-512: half).
  // The transposed product Cᵀ = op(B)ᵀ·op(A)ᵀ puts the long side along the tile's columns; it is
  // computed instead when that wastes clearly less (its tiles then reach C through the edge
  // buffer, transposed). The result is the same to the bit: each element is the same chain of
  // fused multiply-adds over k, with the two factors of each product swapped.
  const auto computed = [](int64_t rows, int64_t cols) {
    return ceil_div(rows, MR_STEP) * MR_STEP * ceil_div(cols, Simd::width) * Simd::width;
  };
  const bool c_trans = N < NR && 5 * computed(N, M) < 4 * computed(M, N);
  if (c_trans) {
    std::swap(M, N);
    const Strided at{a.p, a.cs, a.rs}, bt{b.p, b.cs, b.rs};  // op(A)ᵀ and op(B)ᵀ: swapped strides
    a = bt, b = at;
  }
  // The packed B block belongs to the calling thread and is shared by the threads.
  float* b_packed = t_b_buffer.get(std::min(KC, K) * ceil_div(std::min(NC, N), NR) * NR);
  blocked_loops(threads, M, N, K, alpha, a, b, beta, C, ldc, c_trans, bias, b_packed);
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  run_product(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr);
}

void gemm_bias(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
               const float* B, int64_t ldb, const float* bias, float* C, int64_t ldc) {
  run_product(trans_a, trans_b, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc, bias);
}

GemmConfig gemm_config() { return {Simd::name, MR, NR, MC, KC, NC}; }

namespace {

// The batch loop shared by both forms of gemm_batched: matrix i of A, B and C at the offsets
// given by off(i). Each product is computed the same way on any thread, so spreading the batch
// across threads (small matrices) or each product's tiles across threads (large ones) gives the
// same result.
template <class Offsets>
void batched(int64_t batch, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
             const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
             Offsets off) {
  const auto one = [&](int64_t i) {
    const auto [oa, ob, oc] = off(i);
    gemm(trans_a, trans_b, M, N, K, alpha, A + oa, lda, B + ob, ldb, beta, C + oc, ldc);
  };
  if (M * N * K < kMinParallelProduct * 16) {
    parallel_for(batch, batch * M * N * K, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) one(i);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i) one(i);
  }
}

struct Offset3 {
  int64_t a, b, c;
};

}  // namespace

void gemm_batched(int64_t batch, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* A, int64_t lda, int64_t stride_a, const float* B, int64_t ldb,
                  int64_t stride_b, float beta, float* C, int64_t ldc, int64_t stride_c) {
  batched(batch, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, [&](int64_t i) {
    return Offset3{i * stride_a, i * stride_b, i * stride_c};
  });
}

void gemm_batched_offsets(int64_t batch, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                          float alpha, const float* A, int64_t lda, const int64_t* offsets_a, const float* B,
                          int64_t ldb, const int64_t* offsets_b, float beta, float* C, int64_t ldc,
                          const int64_t* offsets_c) {
  batched(batch, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, [&](int64_t i) {
    return Offset3{offsets_a[i], offsets_b[i], offsets_c[i]};
  });
}

}  // namespace qkv::kernels
