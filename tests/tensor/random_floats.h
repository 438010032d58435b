// Random float arrays for the kernel tests: uniform in [lo, hi), the same for a given seed.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/random.h"

inline std::vector<float> random_floats(int64_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  qkv::Generator(seed).fill_uniform(v.data(), n, lo, hi);
  return v;
}
