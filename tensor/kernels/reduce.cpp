#include "tensor/kernels/reduce.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tensor/kernels/parallel.h"

namespace qkv::kernels {

namespace {

// Long sums are cut into blocks of a fixed size, summed separately (in parallel when there are
// several) and then added in block order; fixed, so that the result is the same for any thread
// count.
constexpr int64_t kBlock = 16384;

// Σ x[0:n], vectorized with a fixed lane-wise order (the compiler's simd reduction).
float contiguous_sum(int64_t n, const float* x) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t k = 0; k < n; ++k) acc += x[k];
  return acc;
}

}  // namespace

void sum_dim(int64_t outer, int64_t n, int64_t inner, const float* x, float* out) {
  if (inner == 1) {
    // out[o] = Σ_k x[o, k]: one contiguous row each, in blocks of kBlock.
    const int64_t blocks = std::max<int64_t>(1, (n + kBlock - 1) / kBlock);
    if (blocks == 1) {
      parallel_for(outer, outer * n, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) out[o] = contiguous_sum(n, x + o * n);
      });
      return;
    }
    std::vector<float> partial(static_cast<size_t>(outer * blocks));
    parallel_for(outer * blocks, outer * n, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t o = t / blocks, k0 = t % blocks * kBlock;
        partial[t] = contiguous_sum(std::min(kBlock, n - k0), x + o * n + k0);
      }
    });
    for (int64_t o = 0; o < outer; ++o) {
      float acc = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) acc += partial[o * blocks + b];
      out[o] = acc;
    }
    return;
  }
  // out[o, i] = Σ_k x[o, k, i]: rows of `inner` outputs accumulated together, k by k (contiguous
  // and vectorizable), in one sweep over the rows. (Giving each thread half of every row instead
  // made a column sum slower on 2 threads than on one: the halves share cache lines.)
  parallel_for(outer, outer * n * inner, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      float* y = out + o * inner;
      const float* base = x + o * n * inner;
      for (int64_t i = 0; i < inner; ++i) y[i] = 0.0f;
      for (int64_t k = 0; k < n; ++k) {
        const float* row = base + k * inner;
#pragma omp simd
        for (int64_t i = 0; i < inner; ++i) y[i] += row[i];
      }
    }
  });
}

void max_dim(int64_t outer, int64_t n, int64_t inner, const float* x, float* out, int64_t* index,
             bool is_max) {
  parallel_for(outer * inner, outer * n * inner, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t o = r / inner, i = r % inner;
      const float* p = x + o * n * inner + i;
      float best = p[0];
      int64_t arg = 0;
      for (int64_t k = 1; k < n && !std::isnan(best); ++k) {
        const float v = p[k * inner];
        if (std::isnan(v) || (is_max ? v > best : v < best)) best = v, arg = k;
      }
      out[r] = best;
      if (index) index[r] = arg;
    }
  });
}

void masked_max(int64_t N, int64_t L, int64_t F, const int64_t* lengths, const float* x, float* out,
                int64_t* index) {
  // Row by row, so that the inner loop runs over F contiguous features.
  parallel_for(N, N * L * F, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      float* best = out + n * F;
      int64_t* arg = index + n * F;
      std::copy(x + n * L * F, x + (n * L + 1) * F, best);
      std::fill(arg, arg + F, int64_t{0});
      for (int64_t l = 1; l < lengths[n]; ++l) {
        const float* row = x + (n * L + l) * F;
        // Branch-free, so that the loop vectorizes: take v when it is larger, or NaN over a number.
#pragma omp simd
        for (int64_t f = 0; f < F; ++f) {
          const float v = row[f], b = best[f];
          const bool take = v > b || (v != v && b == b);
          best[f] = take ? v : b;
          arg[f] = take ? l : arg[f];
        }
      }
    }
  });
}

double sum_abs_pow(int64_t n, const float* x, float p) {
  // Blocks of kBlock values, each summed in double by one thread, then added in block order.
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<size_t>(blocks));
  parallel_for(blocks, p == 1.0f || p == 2.0f ? n : n * 20, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const float* v = x + b * kBlock;
      const int64_t len = std::min(kBlock, n - b * kBlock);
      double acc = 0.0;
      if (p == 1.0f) {
#pragma omp simd reduction(+ : acc)
        for (int64_t i = 0; i < len; ++i) acc += std::fabs(static_cast<double>(v[i]));
      } else if (p == 2.0f) {
#pragma omp simd reduction(+ : acc)
        for (int64_t i = 0; i < len; ++i) acc += static_cast<double>(v[i]) * v[i];
      } else {
        for (int64_t i = 0; i < len; ++i) acc += std::pow(std::fabs(static_cast<double>(v[i])), p);
      }
      partial[b] = acc;
    }
  });
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

}  // namespace qkv::kernels
