#include "tensor/kernels/band.h"

#include "tensor/kernels/parallel.h"
#include "tensor/kernels/row_ops.h"

namespace qkv::kernels {

void band_scores_forward(int64_t N, int64_t T, int64_t d, int64_t w, float scale, const float* q,
                         const float* k, float* s) {
  const int64_t W = 2 * w + 1;
  parallel_for(N * T, N * T * W * d, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {  // r = n·T + i
      const int64_t n = r / T, i = r % T;
      for (int64_t o = 0; o < W; ++o) {
        const int64_t j = i + o - w;
        s[r * W + o] = (j >= 0 && j < T) ? scale * dot(q + r * d, k + (n * T + j) * d, d) : 0.0f;
      }
    }
  });
}

void band_scores_backward(int64_t N, int64_t T, int64_t d, int64_t w, float scale, const float* q,
                          const float* k, const float* g, float* dq, float* dk) {
  const int64_t W = 2 * w + 1;
  parallel_for(N * T, 2 * N * T * W * d, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {  // row r = n·T + i of dq, and row r = n·T + j of dk
      const int64_t n = r / T, t = r % T;
      if (dq) {
        float* out = dq + r * d;
        for (int64_t c = 0; c < d; ++c) out[c] = 0.0f;
        for (int64_t o = 0; o < W; ++o) {
          const int64_t j = t + o - w;
          if (j >= 0 && j < T) axpy(scale * g[r * W + o], k + (n * T + j) * d, out, d);
        }
      }
      if (dk) {
        float* out = dk + r * d;
        for (int64_t c = 0; c < d; ++c) out[c] = 0.0f;
        for (int64_t o = 0; o < W; ++o) {
          const int64_t i = t - o + w;  // the query that reaches key t at offset o
          if (i >= 0 && i < T) axpy(scale * g[(n * T + i) * W + o], q + (n * T + i) * d, out, d);
        }
      }
    }
  });
}

void band_sum_forward(int64_t N, int64_t T, int64_t dv, int64_t w, const float* p, const float* v,
                      float* out) {
  const int64_t W = 2 * w + 1;
  parallel_for(N * T, N * T * W * dv, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / T, i = r % T;
      float* y = out + r * dv;
      for (int64_t c = 0; c < dv; ++c) y[c] = 0.0f;
      for (int64_t o = 0; o < W; ++o) {
        const int64_t j = i + o - w;
        if (j >= 0 && j < T) axpy(p[r * W + o], v + (n * T + j) * dv, y, dv);
      }
    }
  });
}

void band_sum_backward(int64_t N, int64_t T, int64_t dv, int64_t w, const float* p, const float* v,
                       const float* g, float* dp, float* dvv) {
  const int64_t W = 2 * w + 1;
  parallel_for(N * T, 2 * N * T * W * dv, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / T, t = r % T;
      if (dp)
        for (int64_t o = 0; o < W; ++o) {
          const int64_t j = t + o - w;
          dp[r * W + o] = (j >= 0 && j < T) ? dot(g + r * dv, v + (n * T + j) * dv, dv) : 0.0f;
        }
      if (dvv) {
        float* out = dvv + r * dv;
        for (int64_t c = 0; c < dv; ++c) out[c] = 0.0f;
        for (int64_t o = 0; o < W; ++o) {
          const int64_t i = t - o + w;
          if (i >= 0 && i < T) axpy(p[(n * T + i) * W + o], g + (n * T + i) * dv, out, dv);
        }
      }
    }
  });
}

}  // namespace qkv::kernels
