#include "io/splitmix64.h"

#include "tensor/error.h"

namespace qkv::io {

uint64_t SplitMix64::below(uint64_t n) {
  if (n == 0) throw ValueError("SplitMix64::below: n must be at least 1, got 0");
  // 2^64 mod n values at the bottom of the range would make small results more likely than large
  // ones; reject them and draw again. (-n) % n computes 2^64 mod n in 64-bit unsigned arithmetic.
  const uint64_t threshold = (0 - n) % n;
  for (;;) {
    const uint64_t r = next();
    if (r >= threshold) return r % n;
  }
}

}  // namespace qkv::io
