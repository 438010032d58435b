#include "tensor/kernels/peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tensor/kernels/gemm_microkernel.h"

namespace qkv::kernels {
namespace {

using gemm_detail::Simd;
constexpr int kChains = static_cast<int>(gemm_detail::MR * gemm_detail::NR / Simd::width);
// 2^19 rounds of the chains: about 3.5 ms on one Zen 4 core (12 Mi 512-bit FMAs at one a cycle),
// long beside the clock's resolution and short enough that some of the repetitions fall between
// two moments in which the host gives a core to other work (with 5 repetitions of twice the
// length, 1 run in 3 on the busy host read a two-thread peak 10-50 % low).
constexpr long kRounds = 1L << 19;
constexpr int kRepetitions = 12;

// Runs the chains on this thread. Their result is stored where the compiler must assume it is
// read, so that it cannot drop them.
void run_chains(std::atomic<float>& sink) {
  const Simd::V b = Simd::broadcast(1.0000001f), c = Simd::broadcast(1e-7f);
  Simd::V acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = Simd::broadcast(static_cast<float>(i));
  for (long round = 0; round < kRounds; ++round) {
    // Fully unrolled, so that the accumulators live in registers (a loop over the array spilled
    // them with the 24 chains of the AVX-512 tile, and the probe read 70 % of peak).
#pragma GCC unroll 64
    for (int i = 0; i < kChains; ++i) acc[i] = Simd::fma(acc[i], b, c);
  }
  for (int i = 1; i < kChains; ++i) acc[0] = Simd::fma(acc[i], b, acc[0]);
  alignas(64) float out[Simd::width];
  Simd::store(out, acc[0]);
  sink.store(out[0], std::memory_order_relaxed);
}

// The seconds `threads` threads take to run their chains at once, from a common start (the
// threads are created first and wait for it) to the last one's end.
double time_team(int threads, std::atomic<float>& sink) {
  std::atomic<bool> go{false};
  std::vector<std::thread> team;
  for (int t = 1; t < threads; ++t)
    team.emplace_back([&] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      run_chains(sink);
    });
  const auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  run_chains(sink);
  for (std::thread& th : team) th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

double peak_gflops(int threads) {
  threads = std::max(threads, 1);
  std::atomic<float> sink{0.0f};
  const double flop = 2.0 * Simd::width * kChains * static_cast<double>(kRounds) * threads;
  double best = 0.0;
  // Plain threads, not the kernels' parallel regions: the probe measures the cores, not how work is
  // handed out to them.
  for (int rep = 0; rep < kRepetitions; ++rep) best = std::max(best, flop / time_team(threads, sink) / 1e9);
  return best;
}

}  // namespace qkv::kernels
