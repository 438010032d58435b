// exp, sigmoid, tanh and the normal distribution function that vectorize: for the inner loops of
// fused kernels (the GRU gates, the masked softmax) and of elementwise ops (tanh, GELU).
//
// std::exp and std::tanh are calls into libm, which the compiler cannot turn into SIMD code
// (glibc's vector versions are only enabled with -ffast-math). In a GRU step that made the gate
// math cost more than the matrix product; vectorized, it costs a small part of it. They are the
// Cephes single-precision routines (S. L. Moshier), written branch-free and inline, so that a `#pragma omp simd` loop computes 8 (AVX2) or 16 (AVX-512) values at once. GCC
// vectorizes such a loop only with -fno-trapping-math (set in CMakeLists.txt): otherwise it keeps
// the clamps below as branches.
//
// Accuracy, checked against double-precision libm by tests/tensor/test_vecmath.cpp (the worst
// cases found over 44 million floats spread across the whole range are about half these bounds):
//   vexp: relative error < 2e-7 (2 ulp) on [-87, 88]; clamped outside, so never inf nor 0
//   vsigmoid: relative error < 3e-7;   vtanh: relative error < 3e-7, also near 0
// A NaN argument gives NaN.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace qkv::kernels {

// e^x: write x = k·ln2 + f with k an integer and |f| ≤ ln2/2; then e^x = 2^k · e^f, where 2^k is
// built in the exponent bits and e^f is a degree-7 polynomial (Cephes expf).
inline float vexp(float x) {
  // Clamping keeps 2^k a normal float, k in [-126, 127]. (Ternaries and nearbyint, because GCC
  // vectorizes them but not fmin, fmax or floor.)
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.3f ? 88.3f : x;
  const float k = std::nearbyint(x * 1.44269504088896341f);
  // ln2 split in a part exact in float and a remainder (Cody & Waite), so k·ln2 loses no bits.
  const float f = x - k * 0.693359375f + k * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * f + 1.3981999507e-3f;
  p = p * f + 8.3334519073e-3f;
  p = p * f + 4.1665795894e-2f;
  p = p * f + 1.6666665459e-1f;
  p = p * f + 5.0000001201e-1f;
  const float ef = p * f * f + f + 1.0f;
  const int32_t ki = static_cast<int32_t>(k == k ? k : 0.0f);  // a NaN x must not reach the cast
  return ef * std::bit_cast<float>((ki + 127) << 23);
}

// σ(x) = 1 / (1 + e^-x). vexp clamps, so e^-x is finite for every x and the result is in [0, 1].
inline float vsigmoid(float x) { return 1.0f / (1.0f + vexp(-x)); }

// tanh(x): an odd polynomial for |x| < 0.625, where 1 - 2/(e^2|x| + 1) would cancel; that formula
// (with x's sign) beyond. Both are computed and one is selected, which keeps the loop branch-free.
inline float vtanh(float x) {
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float a = std::fabs(x);
  const float large = std::copysign(1.0f - 2.0f / (vexp(2.0f * a) + 1.0f), x);
  return a < 0.625f ? small : large;
}

// e^t for the t ≤ 0 that a softmax exponentiates (t = x − max, or x − log-sum-exp). vexp clamps
// its argument at −87.3 so as never to return 0; here e^t below that is 0, as libm's exp gives for
// the −1e6 of a masked position. A NaN t gives NaN. (vexp is computed either way: a call on one
// branch only would keep the loops from vectorizing.)
inline float vexp_nonpositive(float t) {
  const float e = vexp(t);
  return t < -87.3f ? 0.0f : e;
}

// Φ(x), the standard normal distribution function, = erfc(−x/√2) / 2: GELU's gate. From Abramowitz
// & Stegun 7.1.26, erfc(z) ≈ (a1·t + a2·t² + a3·t³ + a4·t⁴ + a5·t⁵)·e^(−z²) with t = 1/(1 + p·z)
// for z ≥ 0, whose error is below 1.5e-7 absolute; for x < 0, Φ(x) = erfc(|x|/√2) / 2 directly,
// for x ≥ 0 one minus that: an error of 7.5e-8, and 3e-7 with float rounding (absolute: the far
// negative tail, where Φ is below that, is not resolved relative to itself; x·Φ(x) is near 0 there).
// Past |x| = 13.2 (z² > 87.3) e^(−z²) is 0, not vexp's clamped 1e-38: Φ is exactly 0 or 1 there, so
// that x·Φ(x) is exactly 0 or x however large x is.
//
// vnormal_cdf_from takes e^(−z²) = e^(−x²/2) from its caller: GELU's derivative Φ(x) + x·φ(x) needs
// the same exponential for φ(x) = e^(−x²/2)/√(2π), and one vexp per element serves both.
inline float vnormal_cdf_from(float x, float gauss) {
  const float z = std::fabs(x) * 0.70710678118654752f;
  const float t = 1.0f / (1.0f + 0.3275911f * z);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const float half_erfc = 0.5f * p * t * gauss;
  return x < 0.0f ? half_erfc : 1.0f - half_erfc;
}
inline float vgauss(float x) { return vexp_nonpositive(-0.5f * x * x); }  // e^(−x²/2)
inline float vnormal_cdf(float x) { return vnormal_cdf_from(x, vgauss(x)); }

}  // namespace qkv::kernels
