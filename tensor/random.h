// Random numbers: a counter-based generator, so that results do not depend on the thread count.
//
// Draw number c of a generator with key k is hash(k, c): a pure function of the two. Filling a
// tensor of n values uses counters offset, offset+1, ..., offset+n-1 and then advances the
// offset by n (by ceil(n/2) for normal and Bernoulli values, two per draw), so any thread can
// compute any element, in any order, and get the same tensor.
// The state is just (seed, offset), which makes it trivial to save in a checkpoint. The same
// generator drives everything random in qkv: tensors, dropout, initialization, and the data
// pipeline's shuffles and samples (next_below, next_uniform, shuffle).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace qkv {

struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : state_{seed, 0} {}

  void manual_seed(uint64_t seed) { state_ = {seed, 0}; }
  GeneratorState state() const { return state_; }
  void set_state(GeneratorState s) { state_ = s; }

  // n values uniform in [lo, hi).
  void fill_uniform(float* out, int64_t n, float lo, float hi);
  // n values from N(mean, std²), by the Box-Muller transform.
  void fill_normal(float* out, int64_t n, float mean, float std);
  // n values that are 1 with probability p and 0 otherwise. Two values per 64-bit draw (element
  // 2j from its low half, 2j+1 from its high half), so the offset advances by ceil(n/2).
  void fill_bernoulli(float* out, int64_t n, float p);
  // out[i] = x[i] · (m[i] ? scale : 0), m the n values fill_bernoulli(p) would give from this
  // state, which advances the same way; the mask itself is never stored. x and out may be the
  // same array. This is dropout in one pass: forward from the state before the call, and backward
  // by a copy of the generator set back to that state.
  void bernoulli_scale(const float* x, float* out, int64_t n, float p, float scale);
  // One integer uniform in [0, n), for shuffles and sampling (n >= 1).
  uint64_t next_below(uint64_t n);
  // One double uniform in [0, 1), from the top 53 bits of a draw.
  double next_uniform();
  // True with probability p.
  bool next_chance(double p) { return next_uniform() < p; }

 private:
  GeneratorState state_;
};

// Fisher–Yates shuffle (Knuth, TAOCP vol. 2, Algorithm P): the same seed gives the same order on
// every compiler and platform, which std::shuffle does not promise.
template <class T>
void shuffle(std::vector<T>& items, Generator& gen) {
  for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[gen.next_below(i)]);
}

// The generator used when none is given: rand, randn, dropout, parameter initialization.
Generator& default_generator();

// Reseeds the default generator, like torch.manual_seed.
void manual_seed(uint64_t seed);

}  // namespace qkv
