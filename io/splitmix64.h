// SplitMix64: the small deterministic generator the data pipeline uses to shuffle and sample.
//
// The same seed gives the same stream on every compiler and platform, which std::shuffle and the
// std:: distributions do not promise (their algorithms are implementation-defined). The mixing
// function is Steele, Lea & Flood, "Fast splittable pseudorandom number generators" (OOPSLA 2014),
// as in Vigna's reference splitmix64.c.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace qkv::io {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  // The next 64 random bits.
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, n), without modulo bias. Throws ValueError when n == 0.
  uint64_t below(uint64_t n);

  // Uniform in [0, 1), from the top 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // True with probability p.
  bool chance(double p) { return uniform() < p; }

 private:
  uint64_t state_;
};

// Fisher–Yates shuffle (Knuth, TAOCP vol. 2, Algorithm P), driven by `rng`.
template <class T>
void shuffle(std::vector<T>& items, SplitMix64& rng) {
  for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng.below(i)]);
}

}  // namespace qkv::io
