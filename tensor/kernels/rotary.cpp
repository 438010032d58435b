#include "tensor/kernels/rotary.h"

#include "tensor/kernels/parallel.h"

namespace qkv::kernels {

void rotary(int64_t B, int64_t H, int64_t T, int64_t d, const float* x, RotaryRows x_at, const float* cos,
            const float* sin, bool inverse, float* y, RotaryRows y_at) {
  const int64_t half = d / 2;
  parallel_for(B * H * T, B * H * T * d * 2, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t t = r % T, h = r / T % H, b = r / (T * H);
      const float* xr = x + b * x_at.batch + h * x_at.head + t * x_at.row;
      float* yr = y + b * y_at.batch + h * y_at.head + t * y_at.row;
      const float* c = cos + t * half;
      const float* s = sin + t * half;
      const float sign = inverse ? -1.0f : 1.0f;
      for (int64_t i = 0; i < half; ++i) {
        const float even = xr[2 * i], odd = xr[2 * i + 1], si = sign * s[i];
        // Named products: each is rounded on its own, never fused into the sum (see rotary.h).
        const float ec = even * c[i], os = odd * si, es = even * si, oc = odd * c[i];
        yr[2 * i] = ec - os;
        yr[2 * i + 1] = es + oc;
      }
    }
  });
}

}  // namespace qkv::kernels
