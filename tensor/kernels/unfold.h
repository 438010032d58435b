// im2col for one-dimensional convolutions over channels-last sequences: each output position's
// receptive field laid out as one row, so that the convolution becomes a single matrix product
// (nn/functional/conv.h). Letters: N sequences, L positions, C channels, K taps of the kernel,
// p the zero padding on each side, d the dilation, L_out = L + 2p − d·(K − 1). Every array is
// contiguous, row-major.
//
// Each output element is written by one thread in a fixed order: results do not depend on the
// thread count. The backward gathers into each input position the gradients of the windows that
// read it, instead of scattering from each window, so no two threads add to the same float.
#pragma once

#include <cstdint>

namespace qkv::kernels {

// x (N, L, C) → cols (N, L_out, K·C):
//   cols[n, t, j·C + c] = x[n, t − p + j·d, c]   where 0 <= t − p + j·d < L, else 0
void unfold1d_forward(int64_t N, int64_t L, int64_t C, int64_t K, int64_t p, int64_t d, const float* x,
                      float* cols);
// In the forward this was cols[n, t, j·C + c] = x[n, s, c] with s = t − p + j·d, so with g = dL/dcols:
//   dx[n, s, c] = Σ_j g[n, s + p − j·d, j·C + c]   over the j for which 0 <= s + p − j·d < L_out
void unfold1d_backward(int64_t N, int64_t L, int64_t C, int64_t K, int64_t p, int64_t d, const float* g,
                       float* dx);

}  // namespace qkv::kernels
