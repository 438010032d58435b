// Timing for the benchmarks: the best of `repeats` runs of fn, after one warm-up run. The best
// rather than the mean, because the machines are shared and other work only ever adds time. The
// median, for comparing with another framework timed the same way (bench/char_encoder_torch.py).
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace qkv::bench {

inline double best_ms(int repeats, const std::function<void()>& fn) {
  fn();
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

inline double median_ms(int repeats, const std::function<void()>& fn) {
  fn();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

inline double best_us(int repeats, const std::function<void()>& fn) { return 1000.0 * best_ms(repeats, fn); }

}  // namespace qkv::bench
