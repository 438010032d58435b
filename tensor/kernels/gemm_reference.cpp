// The reference matmul: the textbook triple loop, kept beside the fast kernel as its specification.
#include "tensor/kernels/gemm.h"

namespace qkv::kernels {

void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                    int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  // A(i, k) is A[i·lda + k], or A[k·lda + i] when transposed; B(k, j) likewise.
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        const float a = trans_a ? A[k * lda + i] : A[i * lda + k];
        const float b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
        acc += a * b;
      }
      float& c = C[i * ldc + j];
      c = beta == 0.0f ? alpha * acc : alpha * acc + beta * c;
    }
  }
}

}  // namespace qkv::kernels
