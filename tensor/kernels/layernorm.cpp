#include "tensor/kernels/layernorm.h"

#include <algorithm>
#include <cmath>

#include "tensor/kernels/parallel.h"
#include "tensor/storage.h"
#include "tensor/threads.h"

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

namespace {

// dweight and dbias are sums over all N rows. A row's dx and its share of them come from the same
// values (g, x, mean, rstd), so one pass does both: the rows are cut into chunks of kChunkRows, a
// chunk's rows make their dx and add their terms into the chunk's own partial sums (in row order),
// and the partial sums are then added up chunk by chunk, in chunk order. The chunks are fixed by N
// alone, so the sums do not depend on the thread count; and the threads share the rows, where the
// columns of a 64-wide layer were too few to share (two threads ran it slower than one).
constexpr int64_t kChunkRows = 32;

// dx of rows [r0, r1).
void backward_rows(int64_t r0, int64_t r1, int64_t D, const float* x, const float* weight, const float* mean,
                   const float* rstd, const float* dy, float* dx) {
  for (int64_t r = r0; r < r1; ++r) {
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
}

}  // namespace

void layernorm_backward(int64_t N, int64_t D, const float* x, const float* weight, const float* mean,
                        const float* rstd, const float* dy, float* dx, float* dweight, float* dbias) {
  const int64_t chunks = (N + kChunkRows - 1) / kChunkRows;
  const bool sums = dweight || dbias;
  // Per chunk: D partial sums of g·x̂, then D of g.
  Scratch partial(sums ? chunks * 2 * D : 0);
  parallel_tasks(chunks, get_num_threads(), N * D * (dx ? 8 : 3), [&](int64_t chunk, int) {
    const int64_t r0 = chunk * kChunkRows, r1 = std::min(N, r0 + kChunkRows);
    if (dx) backward_rows(r0, r1, D, x, weight, mean, rstd, dy, dx);
    if (!sums) return;
    float *pw = partial.data() + chunk * 2 * D, *pb = pw + D;
    for (int64_t i = 0; i < 2 * D; ++i) pw[i] = 0.0f;
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * D;
      const float* gr = dy + r * D;
      const float m = mean[r], s = rstd[r];
#pragma omp simd
      for (int64_t i = 0; i < D; ++i) {
        pw[i] += gr[i] * (xr[i] - m) * s;
        pb[i] += gr[i];
      }
    }
  });
  if (!sums) return;
  // In the forward pass, column i was y[r][i] = x̂[r][i]·weight[i] + bias[i] for every row r, so
  // dweight[i] = Σ_r g[r][i]·x̂[r][i] and dbias[i] = Σ_r g[r][i]: the chunks' partial sums, added
  // in chunk order.
  for (int64_t i = 0; i < D; ++i) {
    if (dweight) dweight[i] = 0.0f;
    if (dbias) dbias[i] = 0.0f;
  }
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const float* pw = partial.data() + chunk * 2 * D;
    if (dweight) {
#pragma omp simd
      for (int64_t i = 0; i < D; ++i) dweight[i] += pw[i];
    }
    if (dbias) {
#pragma omp simd
      for (int64_t i = 0; i < D; ++i) dbias[i] += pw[D + i];
    }
  }
}

}  // namespace qkv::kernels
