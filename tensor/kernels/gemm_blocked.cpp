// The middle step between the textbook triple loop (gemm_reference.cpp) and the fast GEMM
// (gemm.cpp), kept for reading, for testing, and as the reference mode's matmul
// (tensor/reference_mode.h). It is otherwise identical to gemm(): the same loop nest of Goto &
// van de Geijn in the form of BLIS, the same block sizes MC, KC, NC, the same micro-tile MR×NR and
// the same packed layout. What differs:
//   - the micro-kernel is a scalar loop over an MR×NR array of accumulators, where gemm's keeps
//     them in SIMD registers and broadcasts A against vectors of B (gemm_microkernel.h); GCC
//     vectorizes the scalar loop over q on its own (docs/PERFORMANCE.md gives both speeds);
//   - its threads are OpenMP's: one `parallel for` with a static split over the B slivers of
//     each packed block, each thread computing whole columns of the block (gemm hands out row
//     blocks and column chunks of C as tasks to qkv's thread pool, tensor/kernels/parallel.h);
//   - A is always packed, one float at a time (gemm reads narrow row-major blocks of A in place
//     and packs a transposed operand in 8×8 SIMD transposes);
//   - an edge tile is computed whole, and only its valid part written (gemm runs a smaller
//     instance of its micro-kernel there), and a product narrower than a SIMD vector is not
//     turned into its transpose.
// Each element of C is the same chain of fused multiply-adds, k in order, one KC block after the
// other, as in gemm(), so on a SIMD build the two agree to the bit (tests/tensor/test_gemm.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tensor/kernels/gemm.h"
#include "tensor/kernels/gemm_blocking.h"
#include "tensor/kernels/gemm_microkernel.h"
#include "tensor/kernels/parallel.h"

namespace qkv::kernels {
namespace {

using gemm_detail::KC;
using gemm_detail::MC;
using gemm_detail::MR;
using gemm_detail::NC;
using gemm_detail::NR;

// Packs `lines` lines of a k-long panel into slivers of W lines: element p of line i is
// s[i·line_stride + p·k_stride], and sliver j holds out[j·W·k + p·W + r] = line j·W + r at p,
// zero past the last line. For A the lines are rows of op(A) (W = MR), for B columns of op(B)
// (W = NR); a transposed operand only swaps the two strides.
void pack(const float* s, int64_t line_stride, int64_t k_stride, int64_t lines, int64_t k, int64_t W,
          float* out) {
  for (int64_t j = 0; j * W < lines; ++j)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t r = 0; r < W; ++r) {
        const int64_t i = j * W + r;
        out[(j * k + p) * W + r] = i < lines ? s[i * line_stride + p * k_stride] : 0.0f;
      }
}

// The m×n corner (m ≤ MR, n ≤ NR) of C = alpha · a·b + beta · C for a packed MR×k sliver a and
// k×NR sliver b; C is not read when beta == 0. The fast micro-kernel's arithmetic, one float at a
// time: acc += a(r, p)·b(p, q) as a fused multiply-add, then alpha·acc + beta·C.
void scalar_micro_kernel(int64_t k, const float* a, const float* b, float alpha, float beta, float* C,
                         int64_t ldc, int64_t m, int64_t n) {
  float acc[MR][NR] = {};
  for (int64_t p = 0; p < k; ++p, a += MR, b += NR)
    for (int64_t r = 0; r < MR; ++r)
      for (int64_t q = 0; q < NR; ++q) acc[r][q] = std::fma(a[r], b[q], acc[r][q]);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t q = 0; q < n; ++q) {
      float& c = C[r * ldc + q];
      c = beta == 0.0f ? alpha * acc[r][q] : std::fma(alpha, acc[r][q], beta * c);
    }
}

}  // namespace

void gemm_blocked(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  // op(A)(i, p) = A[i·ars + p·acs] and op(B)(p, j) = B[p·brs + j·bcs].
  const int64_t ars = trans_a ? 1 : lda, acs = trans_a ? lda : 1;
  const int64_t brs = trans_b ? 1 : ldb, bcs = trans_b ? ldb : 1;
  if (K <= 0) {  // no k block to run: C = beta · C
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    return;
  }
  // Threads only for a product large enough to share (gemm's threshold), and not from inside a
  // parallel loop or task, as gemm does.
  const bool parallel = M * N * K >= gemm_detail::kMinParallelProduct && !in_parallel_task();
  const auto padded = [](int64_t n, int64_t unit) { return (n + unit - 1) / unit * unit; };
  std::vector<float> a_packed(static_cast<size_t>(padded(std::min(M, MC), MR) * std::min(K, KC))),
      b_packed(static_cast<size_t>(padded(std::min(N, NC), NR) * std::min(K, KC)));
  for (int64_t jc = 0; jc < N; jc += NC) {  // B block KC×NC: L3
    const int64_t n = std::min(NC, N - jc);
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t k = std::min(KC, K - pc);
      pack(B + pc * brs + jc * bcs, bcs, brs, n, k, NR, b_packed.data());
      const float beta_k = pc == 0 ? beta : 1.0f;  // later k blocks add to what the first wrote
      for (int64_t ic = 0; ic < M; ic += MC) {     // A block MC×KC: L2
        const int64_t m = std::min(MC, M - ic);
        pack(A + ic * ars + pc * acs, ars, acs, m, k, MR, a_packed.data());
        // Each thread takes whole B slivers: every element of C is computed by one thread, in the
        // same order whatever the thread count.
#pragma omp parallel for schedule(static) if (parallel)
        for (int64_t jr = 0; jr < n; jr += NR)    // B sliver KC×NR: L1
          for (int64_t ir = 0; ir < m; ir += MR)  // A sliver MR×KC, streamed through
            scalar_micro_kernel(k, a_packed.data() + ir * k, b_packed.data() + jr * k, alpha, beta_k,
                                C + (ic + ir) * ldc + jc + jr, ldc, std::min(MR, m - ir),
                                std::min(NR, n - jr));
      }
    }
  }
}

}  // namespace qkv::kernels
