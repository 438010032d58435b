// Reductions along one dim of a contiguous tensor viewed as (outer, n, inner): the dim being
// reduced has n elements, `outer` is the product of the dims before it, `inner` of those after.
//   x is (outer, n, inner)   out is (outer, inner)
// Each output is summed in a fixed order (long rows in blocks of fixed size, whose sums are then
// added in order), so results do not depend on the number of threads.
#pragma once

#include <cstdint>

namespace qkv::kernels {

// out[o, i] = Σ_k x[o, k, i]
void sum_dim(int64_t outer, int64_t n, int64_t inner, const float* x, float* out);

// out[o, i] = max_k x[o, k, i] and index[o, i] its k (the first, on ties). NaN wins: a NaN
// anywhere makes the result NaN, as in PyTorch. is_max = false gives the minimum.
void max_dim(int64_t outer, int64_t n, int64_t inner, const float* x, float* out, int64_t* index,
             bool is_max);

// The maximum over the first lengths[n] positions of each sequence, with its position:
//   x is (N, L, F), lengths (N) in [1, L]   out and index are (N, F)
//   out[n, f] = max_{l < lengths[n]} x[n, l, f],  index[n, f] its l (the first, on ties)
// Positions at and past lengths[n] are never read. NaN wins, as in max_dim.
void masked_max(int64_t N, int64_t L, int64_t F, const int64_t* lengths, const float* x, float* out,
                int64_t* index);

// Sum of |x|^p over n contiguous elements in double (p = 1, 2, or general), for norms: in
// blocks of fixed size, as above.
double sum_abs_pow(int64_t n, const float* x, float p);

}  // namespace qkv::kernels
