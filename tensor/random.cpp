#include "tensor/random.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numbers>

#include "tensor/error.h"
#include "tensor/kernels/parallel.h"

namespace qkv {
namespace {

// SplitMix64's finalizer (Steele, Lea & Flood 2014): a bijective mix with good avalanche, applied
// to key + counter · golden ratio; two rounds keep consecutive counters independent-looking.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t draw(uint64_t seed, uint64_t counter) {
  return mix64(mix64(seed ^ 0x6A09E667F3BCC909ULL) + counter * 0x9E3779B97F4A7C15ULL);
}

// 24 random bits → a float in [0, 1) with every value exactly representable.
float unit_float(uint32_t bits) { return static_cast<float>(bits >> 8) * 0x1.0p-24f; }

// Calls body(i) for i in [0, n), shared among threads when the `elements` it fills are many (every
// value depends on its counter only, not on the thread that draws it).
template <class F>
void for_each(int64_t n, int64_t elements, F&& body) {
  kernels::parallel_for(n, elements, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) body(i);
  });
}

}  // namespace

void Generator::fill_uniform(float* out, int64_t n, float lo, float hi) {
  const uint64_t seed = state_.seed, base = state_.offset;
  const float scale = hi - lo;
  for_each(n, n,
           [&](int64_t i) { out[i] = lo + scale * unit_float(static_cast<uint32_t>(draw(seed, base + i))); });
  state_.offset += static_cast<uint64_t>(n);
}

void Generator::fill_normal(float* out, int64_t n, float mean, float std) {
  // Each counter gives two 32-bit uniforms u1, u2 and, by Box-Muller, two independent normals
  // sqrt(-2 ln u1)·cos(2π u2) and sqrt(-2 ln u1)·sin(2π u2) for elements 2j and 2j+1.
  const uint64_t seed = state_.seed, base = state_.offset;
  const int64_t pairs = (n + 1) / 2;
  for_each(pairs, n, [&](int64_t j) {
    const uint64_t r = draw(seed, base + j);
    const double u1 = (static_cast<double>(r >> 40) + 1.0) * 0x1.0p-24;  // in (0, 1]: log is finite
    const double u2 = static_cast<double>(r & 0xFFFFFF) * 0x1.0p-24;
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    out[2 * j] = mean + std * static_cast<float>(radius * std::cos(angle));
    if (2 * j + 1 < n) out[2 * j + 1] = mean + std * static_cast<float>(radius * std::sin(angle));
  });
  state_.offset += static_cast<uint64_t>(pairs);
}

namespace {

// Elements [0, n) of a Bernoulli(p) sequence starting at draw `base`, two per 64-bit draw: the
// draw base + j decides element 2j by its low 32 bits and element 2j+1 by its high 32 bits
// (24 bits of each, as unit_float reads them). Element i gets out[i] = (x ? x[i] : 1)·(kept ? on : 0).
// Half the draws of one per element: the hash is most of the cost of a mask. Work goes in blocks
// of kPairs draws: first the draws, then the elements reading their halves in memory order
// (little-endian: the low half first), two loops the compiler vectorizes, where one loop writing
// two elements per draw stayed scalar (8 times slower).
constexpr int64_t kPairs = 256;

// One block: elements [i0, i0 + len) from the draws first, first + 1, ... (key: draw()'s first
// round). A function of its own, not inside for_each's lambda, so that the compiler sees plain
// pointers and local arrays, and vectorizes both loops (inside the lambda it did not: 9 times slower).
template <bool kScaleInput>
void bernoulli_block(uint64_t key, uint64_t first, const float* x, float* out, int64_t len, float p,
                     float on) {
  uint64_t draws[kPairs];
  for (int64_t j = 0; j < (len + 1) / 2; ++j)
    draws[j] = mix64(key + (first + static_cast<uint64_t>(j)) * 0x9E3779B97F4A7C15ULL);
  uint32_t bits[2 * kPairs];
  std::memcpy(bits, draws, static_cast<size_t>((len + 1) / 2) * sizeof(uint64_t));
  for (int64_t i = 0; i < len; ++i) {
    const float m = unit_float(bits[i]) < p ? on : 0.0f;
    if constexpr (kScaleInput)
      out[i] = x[i] * m;
    else
      out[i] = m;
  }
}

template <bool kScaleInput>
void bernoulli_pairs(uint64_t seed, uint64_t base, const float* x, float* out, int64_t n, float p, float on) {
  static_assert(std::endian::native == std::endian::little);
  const uint64_t key = mix64(seed ^ 0x6A09E667F3BCC909ULL);  // draw()'s first round, once
  const int64_t blocks = (n + 2 * kPairs - 1) / (2 * kPairs);
  for_each(blocks, n, [&](int64_t blk) {
    const int64_t i0 = blk * 2 * kPairs;
    bernoulli_block<kScaleInput>(key, base + static_cast<uint64_t>(i0 / 2), kScaleInput ? x + i0 : nullptr,
                                 out + i0, std::min(2 * kPairs, n - i0), p, on);
  });
}
}  // namespace

void Generator::fill_bernoulli(float* out, int64_t n, float p) {
  bernoulli_pairs<false>(state_.seed, state_.offset, nullptr, out, n, p, 1.0f);
  state_.offset += static_cast<uint64_t>((n + 1) / 2);
}

void Generator::bernoulli_scale(const float* x, float* out, int64_t n, float p, float scale) {
  bernoulli_pairs<true>(state_.seed, state_.offset, x, out, n, p, scale);
  state_.offset += static_cast<uint64_t>((n + 1) / 2);
}

uint64_t Generator::next_below(uint64_t n) {
  if (n == 0) throw ValueError("Generator::next_below: n must be at least 1");
  // Rejection sampling removes the modulo bias of r % n.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t r;
  do r = draw(state_.seed, state_.offset++);
  while (r >= limit);
  return r % n;
}

double Generator::next_uniform() {
  return static_cast<double>(draw(state_.seed, state_.offset++) >> 11) * 0x1.0p-53;
}

Generator& default_generator() {
  static Generator g(0);
  return g;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace qkv
