// The gate math of one GRU step, on plain float arrays (PyTorch's torch.nn.GRU equations; Cho et
// al. 2014). The matrix products around it are GEMMs; this is everything elementwise in between.
//
//   gi (B, 3H) = x·W_ihᵀ + b_ih and gh (B, 3H) = h·W_hhᵀ + b_hh, each the three gates side by side
//   in the order r, z, n (gi_r = gi[:, 0:H], gi_z = gi[:, H:2H], gi_n = gi[:, 2H:3H]);
//   h, h_new (B, H) the previous and the new hidden state.
//
// Forward:
//   r = σ(gi_r + gh_r)            reset gate
//   z = σ(gi_z + gh_z)            update gate
//   n = tanh(gi_n + r ⊙ gh_n)     candidate state (r scales W_hn·h + b_hn, bias included)
//   h_new = (1 - z) ⊙ n + z ⊙ h
// gates (B, 3H) receives r, z, n side by side, for backward.
//
// Backward, given dh_new = dL/dh_new and the saved gates, gh and h:
//   dn = dh_new ⊙ (1 - z),   dz = dh_new ⊙ (h - n),   dh = dh_new ⊙ z   (the direct path only)
//   da_n = dn ⊙ (1 - n²)              through tanh;   a_n = gi_n + r ⊙ gh_n
//   da_r = da_n ⊙ gh_n ⊙ r ⊙ (1 - r)  through r's σ
//   da_z = dz ⊙ z ⊙ (1 - z)           through z's σ
//   dgi = [da_r, da_z, da_n],   dgh = [da_r, da_z, da_n ⊙ r]
// The caller adds the path through gh = h·W_hhᵀ + b_hh to dh:  dh += dgh·W_hh.
//
// Rows (batch elements) are split across threads; every output element is written by one thread.
#pragma once

#include <cstdint>

namespace qkv::kernels {

void gru_gates_forward(int64_t B, int64_t H, const float* gi, const float* gh, const float* h,
                       float* h_new, float* gates);

void gru_gates_backward(int64_t B, int64_t H, const float* gates, const float* gh, const float* h,
                        const float* dh_new, float* dgi, float* dgh, float* dh);

}  // namespace qkv::kernels
