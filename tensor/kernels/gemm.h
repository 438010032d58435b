// Matrix multiply kernels on plain float arrays. Nothing here knows about Tensor or autograd.
//
//   C = alpha · op(A) · op(B) + beta · C        C is M×N, row-major, leading dimension ldc
//
// op(A) is M×K: A is stored row-major as M×K with leading dimension lda (trans_a = false), or as
// K×M (trans_a = true, so op(A) = Aᵀ). Likewise op(B) is K×N: B stored as K×N (trans_b = false)
// or N×K (trans_b = true). A transposed operand is read through its packing, never copied out, so
// backward (dX = dY·Wᵀ, dW = Xᵀ·dY) and attention scores (Q·Kᵀ) take the same fast path.
// When beta == 0, C is only written, never read (it may hold garbage or NaN).
#pragma once

#include <cstdint>

namespace qkv::kernels {

// The fast kernel: packed, cache-blocked, SIMD micro-kernel, threads (parallel.h) over output
// blocks only, so the result is bitwise identical for any number of threads. Runs serially when
// called from inside a parallel task. Under qkv::MatmulPrecision::medium (tensor/precision.h) it
// and all the forms below but gemm_blocked and gemm_reference round the operands to bfloat16
// and sum the products in float32 (gemm_bf16.cpp). In the reference mode (tensor/reference_mode.h)
// it and the forms below run gemm_blocked, in float32: the same result on a SIMD build.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// C = op(A)·op(B) + bias, bias (N) added to every row: a linear layer's x·Wᵀ + b. The bias is
// added to each micro-tile right after its last k step, while the tile is in L1, instead of in a
// pass of its own over a C too large for the caches. Same result as gemm followed by
// C[i][j] += bias[j], to the bit.
void gemm_bias(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
               const float* B, int64_t ldb, const float* bias, float* C, int64_t ldc);

// The middle step, for reading: the fast kernel's blocked loops and packing with a scalar
// micro-kernel, its column slivers shared among threads by a plain OpenMP parallel for
// (gemm_blocked.cpp says what else differs): the OpenMP-parallel blocked matmul that the reference
// mode runs. Same result as gemm, to the bit on a SIMD build, for any number of threads.
void gemm_blocked(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// The plain triple loop the other two are tested against. Accumulates in float, in k order.
void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                    int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// `batch` independent products; matrix b of each operand starts at base + b·stride. A stride of 0
// repeats one matrix across the batch (broadcasting). Small matrices are spread across threads;
// large ones are parallel inside.
void gemm_batched(int64_t batch, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* A, int64_t lda, int64_t stride_a, const float* B, int64_t ldb,
                  int64_t stride_b, float beta, float* C, int64_t ldc, int64_t stride_c);

// The same with matrix b of each operand at base + offsets[b] (the offsets of A, B and C are
// arrays of `batch` values): any batch of matrices that share their shape and leading dimension,
// such as the heads of a (B, T, H·d) projection seen as (B, H, T, d), whose offsets do not step
// evenly (h·d within a sequence, then T·H·d to the next one). Run exactly as gemm_batched.
void gemm_batched_offsets(int64_t batch, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                          float alpha, const float* A, int64_t lda, const int64_t* offsets_a, const float* B,
                          int64_t ldb, const int64_t* offsets_b, float beta, float* C, int64_t ldc,
                          const int64_t* offsets_c);

// How this build's fast kernel is shaped: the instruction set of its micro-kernel (chosen at build
// time: "avx512", "avx2" or "portable"), the micro-tile MR×NR it computes in registers, and the
// cache blocks MC (rows of A), KC (depth) and NC (columns of B) of the loops around it
// (docs/PERFORMANCE.md explains the choice). Tests use it to reach every tail of the tiling.
struct GemmConfig {
  const char* isa;
  int64_t mr, nr, mc, kc, nc;
};
GemmConfig gemm_config();

// Under MatmulPrecision::medium, products of fewer multiply-adds (M·N·K) than this stay in float32:
// packing small blocks into bfloat16 pairs costs more than the faster instruction saves (an
// attention score block over 16 dimensions is twice as slow in bfloat16; docs/PERFORMANCE.md).
inline constexpr int64_t kMinBf16Product = int64_t{1} << 17;

}  // namespace qkv::kernels
