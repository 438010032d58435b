// How kernels split work across threads. Every split gives each output element to exactly one
// thread, which computes it in a fixed order: results never depend on the thread count.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "tensor/threads.h"

namespace qkv::kernels {

// Below this many elements of work a kernel runs on one thread: waking a team costs a few
// microseconds, more than the work itself.
constexpr int64_t kMinParallelWork = 1 << 15;

// Calls fn(begin, end) on disjoint ranges covering [0, n), in parallel when `work` (an estimate of
// the total cost in element operations) is large enough and we are not already inside a parallel
// region.
template <class F>
void parallel_for(int64_t n, int64_t work, F&& fn) {
  const int threads = get_num_threads();
  if (n <= 1 || threads <= 1 || work < kMinParallelWork || omp_in_parallel()) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  const int64_t parts = std::min<int64_t>(n, threads);
#pragma omp parallel num_threads(static_cast<int>(parts))
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    if (begin < end) fn(begin, end);
  }
}

}  // namespace qkv::kernels
