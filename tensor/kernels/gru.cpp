#include "tensor/kernels/gru.h"

#include "tensor/kernels/parallel.h"
#include "tensor/kernels/vecmath.h"

namespace qkv::kernels {
namespace {

// The cost of one element (b, j) of a step, in units of a plain elementwise op, for parallel_for's
// decision: vectorized, the forward (two sigmoids, a tanh and the blend) costs about ten
// elementwise adds; the backward about a third of that.
constexpr int64_t kForwardCost = 10, kBackwardCost = 3;

// One row of the forward: gi, gh and gates hold r, z, n side by side (3H values), h and h_new H.
// (A function of its own, not inside the parallel_for lambda, so that the compiler sees plain
// pointers and vectorizes the loop.)
void forward_row(int64_t H, const float* gi, const float* gh, const float* h, float* h_new, float* gates) {
  const float *i_r = gi, *i_z = gi + H, *i_n = gi + 2 * H;
  const float *h_r = gh, *h_z = gh + H, *h_n = gh + 2 * H;
  float *r_out = gates, *z_out = gates + H, *n_out = gates + 2 * H;
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    const float r = vsigmoid(i_r[j] + h_r[j]);
    const float z = vsigmoid(i_z[j] + h_z[j]);
    const float n = vtanh(i_n[j] + r * h_n[j]);
    h_new[j] = (1.0f - z) * n + z * h[j];
    r_out[j] = r, z_out[j] = z, n_out[j] = n;
  }
}

// One row of the backward, with the same layout.
void backward_row(int64_t H, const float* gates, const float* gh, const float* h, const float* dh_new, float* dgi,
                  float* dgh, float* dh) {
  const float *rs = gates, *zs = gates + H, *ns = gates + 2 * H, *gh_n = gh + 2 * H;
  float *di_r = dgi, *di_z = dgi + H, *di_n = dgi + 2 * H;
  float *dg_r = dgh, *dg_z = dgh + H, *dg_n = dgh + 2 * H;
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    const float r = rs[j], z = zs[j], n = ns[j];
    // In the forward pass this was h_new = (1 - z)·n + z·h, so:
    const float dn = dh_new[j] * (1.0f - z), dz = dh_new[j] * (h[j] - n);
    dh[j] = dh_new[j] * z;
    // n = tanh(a_n) with a_n = gi_n + r·gh_n
    const float da_n = dn * (1.0f - n * n);
    // z = σ(a_z), r = σ(a_r), and σ' = σ(1 - σ); r reaches a_n multiplied by gh_n
    const float da_z = dz * z * (1.0f - z);
    const float da_r = da_n * gh_n[j] * r * (1.0f - r);
    di_r[j] = da_r, di_z[j] = da_z, di_n[j] = da_n;
    dg_r[j] = da_r, dg_z[j] = da_z, dg_n[j] = da_n * r;
  }
}

}  // namespace

void gru_gates_forward(int64_t B, int64_t H, const float* gi, const float* gh, const float* h,
                       float* h_new, float* gates) {
  parallel_for(B, B * H * kForwardCost, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      forward_row(H, gi + b * 3 * H, gh + b * 3 * H, h + b * H, h_new + b * H, gates + b * 3 * H);
  });
}

void gru_gates_backward(int64_t B, int64_t H, const float* gates, const float* gh, const float* h,
                        const float* dh_new, float* dgi, float* dgh, float* dh) {
  parallel_for(B, B * H * kBackwardCost, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      backward_row(H, gates + b * 3 * H, gh + b * 3 * H, h + b * H, dh_new + b * H, dgi + b * 3 * H,
                   dgh + b * 3 * H, dh + b * H);
  });
}

}  // namespace qkv::kernels
