// Cross-entropy of logits against class targets, row by row, forward and backward: the loops of
// the fused op qkv::softmax_cross_entropy (autograd/ops/cross_entropy.h), which joins them to the
// graph; its composed reference, softmax_cross_entropy_reference, is the same loss op by op.
//
//   z, dz are (N, C): N rows of C logits;  target, loss, lse, dloss are (N);  weight is (C), or null
//   for weight 1 on every class.
//
// Row n's target distribution is t[c] = (1-ε)·w[y]·[c = y] + (ε/C)·w[c], y = target[n] and ε the
// label smoothing. With lse = log Σ_c e^z[c], −log p[c] = lse − z[c], and
//   loss[n] = Σ_c t[c]·(lse − z[c])                 0 where y == ignore_index
//   dz[j]   = dloss[n]·((Σ_c t[c])·p[j] − t[j])     p[j] = e^(z[j] − lse); 0 where y == ignore_index
// which is "softmax minus one-hot" when ε = 0 and w = 1. lse is written out by forward for
// backward, which then needs the logits and nothing of size (N, C) more.
//
// Each row is computed by one thread in a fixed order, so results do not depend on the thread
// count. The targets are checked by the op: y is ignore_index or in [0, C).
#pragma once

#include <cstdint>

namespace qkv::kernels {

// What the rows are scored against.
struct CrossEntropyTargets {
  const int64_t* target;  // (N)
  const float* weight;    // (C), or null
  int64_t ignore_index;
  float label_smoothing;  // ε in [0, 1]
};

// The plain loops, with libm's exp, one element at a time: the specification the fast kernels
// below are tested against.
void cross_entropy_forward_reference(int64_t N, int64_t C, const float* z, const CrossEntropyTargets& t, float* loss,
                                     float* lse);
void cross_entropy_backward_reference(int64_t N, int64_t C, const float* z, const float* lse, const float* dloss,
                                      const CrossEntropyTargets& t, float* dz);

// The same, each row's log-sum-exp and gradient vectorized with vecmath.h's exp (a loop of libm
// calls made the op several times slower than its composed reference). They differ from the
// plain loops by a few ulp.
void cross_entropy_forward(int64_t N, int64_t C, const float* z, const CrossEntropyTargets& t, float* loss,
                           float* lse);
void cross_entropy_backward(int64_t N, int64_t C, const float* z, const float* lse, const float* dloss,
                            const CrossEntropyTargets& t, float* dz);

}  // namespace qkv::kernels
