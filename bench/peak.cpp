#include "bench/peak.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "tensor/kernels/gemm_microkernel.h"

namespace qkv::bench {
namespace {

using kernels::gemm_detail::Simd;
constexpr int kChains = static_cast<int>(kernels::gemm_detail::MR * kernels::gemm_detail::NR / Simd::width);
// 2^19 rounds of the chains: milliseconds on a core doing one 512-bit FMA a cycle, long beside the
// clock's resolution, short enough to repeat.
constexpr long kRounds = 1L << 19;
constexpr int kRepetitions = 12;

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Runs the chains on this thread and returns their GFLOP/s over the CPU time the thread got. Their
// result is stored where the compiler must assume it is read, so that it cannot drop them.
double run_chains(std::atomic<float>& sink) {
  const double start = thread_cpu_seconds();
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
  const double seconds = thread_cpu_seconds() - start;
  return 2.0 * Simd::width * kChains * static_cast<double>(kRounds) / seconds / 1e9;
}

}  // namespace

double peak_gflops(int threads) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::clamp(threads, 1, cores);
  std::atomic<float> sink{0.0f};
  double best = 0.0;
  for (int rep = 0; rep < kRepetitions; ++rep) {
    // Plain threads, not the kernels' parallel regions: the probe measures the cores, not how work
    // is handed out to them.
    std::vector<double> rates(static_cast<size_t>(threads));
    std::vector<std::thread> team;
    for (int t = 1; t < threads; ++t) team.emplace_back([&rates, &sink, t] { rates[t] = run_chains(sink); });
    rates[0] = run_chains(sink);
    for (std::thread& th : team) th.join();
    double total = 0.0;
    for (double r : rates) total += r;
    best = std::max(best, total);
  }
  return best;
}

}  // namespace qkv::bench
