#include "tensor/kernels/gru.h"

#include <cmath>

#include "tensor/kernels/parallel.h"

namespace qkv::kernels {
namespace {

// σ(x) = 1/(1+e^-x), in a form whose exponential never overflows.
inline float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

// About how many flops one element of a step costs, counting a transcendental as ten.
constexpr int64_t kCostPerElement = 40;

}  // namespace

void gru_gates_forward(int64_t B, int64_t H, const float* gi, const float* gh, const float* h,
                       float* h_new, float* gates) {
  parallel_for(B, B * H * kCostPerElement, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const float* i_r = gi + b * 3 * H;  // i_z = i_r + H, i_n = i_r + 2H; likewise for gh and gates
      const float* h_r = gh + b * 3 * H;
      float* g = gates + b * 3 * H;
      const float* hp = h + b * H;
      float* hn = h_new + b * H;
      for (int64_t j = 0; j < H; ++j) {
        const float r = sigmoid(i_r[j] + h_r[j]);
        const float z = sigmoid(i_r[H + j] + h_r[H + j]);
        const float n = std::tanh(i_r[2 * H + j] + r * h_r[2 * H + j]);
        hn[j] = (1.0f - z) * n + z * hp[j];
        g[j] = r, g[H + j] = z, g[2 * H + j] = n;
      }
    }
  });
}

void gru_gates_backward(int64_t B, int64_t H, const float* gates, const float* gh, const float* h,
                        const float* dh_new, float* dgi, float* dgh, float* dh) {
  parallel_for(B, B * H * 20, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const float* g = gates + b * 3 * H;
      const float* gh_n = gh + b * 3 * H + 2 * H;
      const float* hp = h + b * H;
      const float* dy = dh_new + b * H;
      float* di = dgi + b * 3 * H;
      float* dg = dgh + b * 3 * H;
      float* dx = dh + b * H;
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        const float r = g[j], z = g[H + j], n = g[2 * H + j];
        // In the forward pass this was h_new = (1 - z)·n + z·h, so:
        const float dn = dy[j] * (1.0f - z), dz = dy[j] * (hp[j] - n);
        dx[j] = dy[j] * z;
        // n = tanh(a_n) with a_n = gi_n + r·gh_n
        const float da_n = dn * (1.0f - n * n);
        // z = σ(a_z), r = σ(a_r), and σ' = σ(1 - σ); r reaches a_n multiplied by gh_n
        const float da_z = dz * z * (1.0f - z);
        const float da_r = da_n * gh_n[j] * r * (1.0f - r);
        di[j] = da_r, di[H + j] = da_z, di[2 * H + j] = da_n;
        dg[j] = da_r, dg[H + j] = da_z, dg[2 * H + j] = da_n * r;
      }
    }
  });
}

}  // namespace qkv::kernels
