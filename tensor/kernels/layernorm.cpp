#include "tensor/kernels/layernorm.h"

#include <cmath>

#include "tensor/kernels/parallel.h"

namespace qkv::kernels {

void layernorm_forward(int64_t N, int64_t D, const float* x, const float* weight, const float* bias,
                       float eps, float* y, float* mean, float* rstd) {
  parallel_for(N, N * D * 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * D;
      float* yr = y + r * D;
      // Two passes (mean, then the squares of the centered values): the one-pass E[x²] - E[x]²
      // cancels catastrophically when |mean| is large compared with the spread.
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < D; ++i) sum += xr[i];
      const float m = sum / static_cast<float>(D);
      float sq = 0.0f;
#pragma omp simd reduction(+ : sq)
      for (int64_t i = 0; i < D; ++i) sq += (xr[i] - m) * (xr[i] - m);
      const float s = 1.0f / std::sqrt(sq / static_cast<float>(D) + eps);
      mean[r] = m;
      rstd[r] = s;
      if (weight && bias) {
#pragma omp simd
        for (int64_t i = 0; i < D; ++i) yr[i] = (xr[i] - m) * s * weight[i] + bias[i];
      } else {
#pragma omp simd
        for (int64_t i = 0; i < D; ++i) {
          float v = (xr[i] - m) * s;
          if (weight) v *= weight[i];
          if (bias) v += bias[i];
          yr[i] = v;
        }
      }
    }
  });
}

void layernorm_backward(int64_t N, int64_t D, const float* x, const float* weight, const float* mean,
                        const float* rstd, const float* dy, float* dx, float* dweight, float* dbias) {
  if (dx) {
    parallel_for(N, N * D * 6, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = x + r * D;
        const float* gr = dy + r * D;
        float* dr = dx + r * D;
        const float m = mean[r], s = rstd[r];
        // mean(ĝ) and mean(ĝ·x̂), with ĝ = g·weight and x̂ = (x - mean)·rstd
        float sum_g = 0.0f, sum_gx = 0.0f;
#pragma omp simd reduction(+ : sum_g, sum_gx)
        for (int64_t i = 0; i < D; ++i) {
          const float gh = weight ? gr[i] * weight[i] : gr[i];
          sum_g += gh;
          sum_gx += gh * (xr[i] - m) * s;
        }
        const float mean_g = sum_g / static_cast<float>(D), mean_gx = sum_gx / static_cast<float>(D);
        // dx = rstd·(ĝ - mean(ĝ) - x̂·mean(ĝ·x̂))
#pragma omp simd
        for (int64_t i = 0; i < D; ++i) {
          const float gh = weight ? gr[i] * weight[i] : gr[i];
          dr[i] = s * (gh - mean_g - (xr[i] - m) * s * mean_gx);
        }
      }
    });
  }
  if (!dweight && !dbias) return;
  // In the forward pass, column i was y[r][i] = x̂[r][i]·weight[i] + bias[i] for every row r, so
  // dweight[i] = Σ_r g[r][i]·x̂[r][i] and dbias[i] = Σ_r g[r][i]. Columns go to threads in ranges
  // and each range is swept row by row, so each thread reads contiguous pieces of every row.
  parallel_for(D, N * D * 3, [&](int64_t c0, int64_t c1) {
    for (int64_t i = c0; i < c1; ++i) {
      if (dweight) dweight[i] = 0.0f;
      if (dbias) dbias[i] = 0.0f;
    }
    for (int64_t r = 0; r < N; ++r) {
      const float* xr = x + r * D;
      const float* gr = dy + r * D;
      const float m = mean[r], s = rstd[r];
      if (dweight) {
#pragma omp simd
        for (int64_t i = c0; i < c1; ++i) dweight[i] += gr[i] * (xr[i] - m) * s;
      }
      if (dbias) {
#pragma omp simd
        for (int64_t i = c0; i < c1; ++i) dbias[i] += gr[i];
      }
    }
  });
}

}  // namespace qkv::kernels
