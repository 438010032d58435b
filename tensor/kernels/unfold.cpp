#include "tensor/kernels/unfold.h"

#include <algorithm>

#include "tensor/kernels/parallel.h"

namespace qkv::kernels {

void unfold1d_forward(int64_t N, int64_t L, int64_t C, int64_t K, int64_t p, int64_t d, const float* x,
                      float* cols) {
  const int64_t L_out = L + 2 * p - d * (K - 1);
  parallel_for(N * L_out, N * L_out * K * C, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {  // r = n·L_out + t
      const int64_t n = r / L_out, t = r % L_out;
      for (int64_t j = 0; j < K; ++j) {
        const int64_t s = t - p + j * d;
        float* dst = cols + (r * K + j) * C;
        if (s >= 0 && s < L)
          std::copy(x + (n * L + s) * C, x + (n * L + s + 1) * C, dst);
        else
          std::fill(dst, dst + C, 0.0f);
      }
    }
  });
}

void unfold1d_backward(int64_t N, int64_t L, int64_t C, int64_t K, int64_t p, int64_t d, const float* g,
                       float* dx) {
  const int64_t L_out = L + 2 * p - d * (K - 1);
  parallel_for(N * L, N * L * K * C, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {  // r = n·L + s
      const int64_t n = r / L, s = r % L;
      float* dst = dx + r * C;
      std::fill(dst, dst + C, 0.0f);
      for (int64_t j = 0; j < K; ++j) {
        const int64_t t = s + p - j * d;  // the window that read x[n, s] as its tap j
        if (t < 0 || t >= L_out) continue;
        const float* src = g + ((n * L_out + t) * K + j) * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) dst[c] += src[c];
      }
    }
  });
}

}  // namespace qkv::kernels
