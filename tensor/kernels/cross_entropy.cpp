// The cross-entropy rows of cross_entropy.h: the plain loops first, then the fast ones, which
// change only how a row's exponentials are computed and summed.
#include "tensor/kernels/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/kernels/parallel.h"
#include "tensor/kernels/vecmath.h"

namespace qkv::kernels {
namespace {

float weight_of(const CrossEntropyTargets& t, int64_t c) { return t.weight ? t.weight[c] : 1.0f; }

// Row n's loss from its logits zr (C) and their log-sum-exp: Σ_c t[c]·(lse − z[c]) with the
// one-hot part (1-ε)·w[y]·(lse − z[y]) taken alone, and the smoothing part
// (ε/C)·Σ_c w[c]·(lse − z[c]).
float row_loss(int64_t C, const float* zr, float lse, int64_t y, const CrossEntropyTargets& t) {
  const float keep = 1.0f - t.label_smoothing, spread = t.label_smoothing / static_cast<float>(C);
  float l = keep * weight_of(t, y) * (lse - zr[y]);
  if (spread > 0.0f) {
    float smooth = 0.0f;
    for (int64_t c = 0; c < C; ++c) smooth += weight_of(t, c) * (lse - zr[c]);
    l += spread * smooth;
  }
  return l;
}

// Σ_c w[c], the same for every row.
float total_weight(int64_t C, const CrossEntropyTargets& t) {
  float sum = 0.0f;
  for (int64_t c = 0; c < C; ++c) sum += weight_of(t, c);
  return sum;
}

// log Σ_c e^z_c = m + log Σ_c e^(z_c − m) of one row z (C), m its maximum, vectorized.
float log_sum_exp(int64_t C, const float* z) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t c = 0; c < C; ++c) m = z[c] > m ? z[c] : m;
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t c = 0; c < C; ++c) s += vexp_nonpositive(z[c] - m);
  return m + std::log(s);
}

// dz[j] = g·(mass·e^(z[j] − lse) − spread·w[j]) for one row (w = 1 when null): every class's
// gradient but the target's one-hot part, which the caller adds.
void row_backward(int64_t C, const float* __restrict z, const float* __restrict w, float lse, float g, float mass,
                  float spread, float* __restrict dz) {
  if (w) {
#pragma omp simd
    for (int64_t j = 0; j < C; ++j) dz[j] = g * (mass * vexp_nonpositive(z[j] - lse) - spread * w[j]);
  } else {
#pragma omp simd
    for (int64_t j = 0; j < C; ++j) dz[j] = g * (mass * vexp_nonpositive(z[j] - lse) - spread);
  }
}

// Forward over the rows of z (N, C), in parallel: lse[n] = row_lse(C, z_n), and the loss of every
// row not ignored.
template <class RowLogSumExp>
void forward_rows(int64_t N, int64_t C, const float* z, const CrossEntropyTargets& t, float* loss, float* lse,
                  RowLogSumExp row_lse) {
  parallel_for(N, N * C * 4, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* zr = z + n * C;
      lse[n] = row_lse(C, zr);
      const int64_t y = t.target[n];
      loss[n] = y == t.ignore_index ? 0.0f : row_loss(C, zr, lse[n], y, t);
    }
  });
}

// Backward over the rows of dz (N, C), in parallel: an ignored row gets 0, every other one
// gradient(n, y, dz_n).
template <class RowGradient>
void backward_rows(int64_t N, int64_t C, const CrossEntropyTargets& t, float* dz, RowGradient gradient) {
  parallel_for(N, N * C * 4, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const int64_t y = t.target[n];
      float* dr = dz + n * C;
      if (y == t.ignore_index)
        std::fill(dr, dr + C, 0.0f);
      else
        gradient(n, y, dr);
    }
  });
}

}  // namespace

// z is (N, C); loss and lse are (N).
void cross_entropy_forward_reference(int64_t N, int64_t C, const float* z, const CrossEntropyTargets& t, float* loss,
                                     float* lse) {
  forward_rows(N, C, z, t, loss, lse, [](int64_t C, const float* zr) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < C; ++c) m = std::fmax(m, zr[c]);
    float s = 0.0f;
    for (int64_t c = 0; c < C; ++c) s += std::exp(zr[c] - m);
    return m + std::log(s);
  });
}

// z and dz are (N, C); lse and dloss are (N).
void cross_entropy_backward_reference(int64_t N, int64_t C, const float* z, const float* lse, const float* dloss,
                                      const CrossEntropyTargets& t, float* dz) {
  const float keep = 1.0f - t.label_smoothing, spread = t.label_smoothing / static_cast<float>(C);
  const float all_weight = total_weight(C, t);
  backward_rows(N, C, t, dz, [&](int64_t n, int64_t y, float* dr) {
    // In the forward pass this was loss = Σ_c t[c]·(lse − z[c]); since d lse/dz[j] = p[j],
    //   dloss/dz[j] = (Σ_c t[c])·p[j] − t[j],   Σ_c t[c] = (1-ε)·w[y] + (ε/C)·Σ_c w[c].
    const float mass = keep * weight_of(t, y) + spread * all_weight;
    for (int64_t j = 0; j < C; ++j) {
      const float target_j = spread * weight_of(t, j) + (j == y ? keep * weight_of(t, y) : 0.0f);
      dr[j] = dloss[n] * (mass * std::exp(z[n * C + j] - lse[n]) - target_j);
    }
  });
}

// z is (N, C); loss and lse are (N). As the reference, with the log-sum-exp vectorized.
void cross_entropy_forward(int64_t N, int64_t C, const float* z, const CrossEntropyTargets& t, float* loss,
                           float* lse) {
  forward_rows(N, C, z, t, loss, lse, log_sum_exp);
}

// z and dz are (N, C); lse and dloss are (N). As the reference, with every class's gradient but the
// target's one-hot part in one vectorized loop, and that part added to the target's alone.
void cross_entropy_backward(int64_t N, int64_t C, const float* z, const float* lse, const float* dloss,
                            const CrossEntropyTargets& t, float* dz) {
  const float keep = 1.0f - t.label_smoothing, spread = t.label_smoothing / static_cast<float>(C);
  const float all_weight = total_weight(C, t);
  backward_rows(N, C, t, dz, [&](int64_t n, int64_t y, float* dr) {
    const float* zr = z + n * C;
    const float wy = weight_of(t, y), mass = keep * wy + spread * all_weight;
    row_backward(C, zr, t.weight, lse[n], dloss[n], mass, spread, dr);
    const float target_y = keep * wy + spread * wy;
    dr[y] = dloss[n] * (mass * vexp_nonpositive(zr[y] - lse[n]) - target_y);
  });
}

}  // namespace qkv::kernels
