// The reference softmax kernels: the formulas of softmax.h as plain loops over lines spaced
// `inner` apart, with libm's exp. The fast kernels (softmax.cpp) are tested against them, pass
// them the work along any dim other than the last, and all of it in the reference mode.
#include "tensor/kernels/softmax.h"

#include <cmath>
#include <limits>

#include "tensor/kernels/parallel.h"

namespace qkv::kernels {

// Both kernels handle one (o, i) line of n elements, spaced `inner` apart, per iteration.

void softmax_forward_reference(int64_t outer, int64_t n, int64_t inner, const float* x, float* y, bool log) {
  parallel_for(outer * inner, outer * n * inner * 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t base = (r / inner) * n * inner + r % inner;
      const float* xr = x + base;
      float* yr = y + base;
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < n; ++k) m = std::fmax(m, xr[k * inner]);
      float s = 0.0f;
      for (int64_t k = 0; k < n; ++k) {
        const float e = std::exp(xr[k * inner] - m);
        if (!log) yr[k * inner] = e;
        s += e;
      }
      if (log) {
        const float shift = m + std::log(s);
        for (int64_t k = 0; k < n; ++k) yr[k * inner] = xr[k * inner] - shift;
      } else {
        const float inv = 1.0f / s;
        for (int64_t k = 0; k < n; ++k) yr[k * inner] *= inv;
      }
    }
  });
}

void softmax_backward_reference(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy,
                      float* dx, bool log) {
  parallel_for(outer * inner, outer * n * inner * 3, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t base = (r / inner) * n * inner + r % inner;
      const float* yr = y + base;
      const float* gr = dy + base;
      float* dr = dx + base;
      float s = 0.0f;
      if (log) {
        for (int64_t k = 0; k < n; ++k) s += gr[k * inner];
        for (int64_t k = 0; k < n; ++k) dr[k * inner] = gr[k * inner] - std::exp(yr[k * inner]) * s;
      } else {
        for (int64_t k = 0; k < n; ++k) s += gr[k * inner] * yr[k * inner];
        for (int64_t k = 0; k < n; ++k) dr[k * inner] = yr[k * inner] * (gr[k * inner] - s);
      }
    }
  });
}

}  // namespace qkv::kernels
