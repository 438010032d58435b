// The number of threads qkv's kernels use. Results do not depend on it: every kernel splits work so
// that each output is computed by one thread in a fixed order.
#pragma once

namespace qkv {

// The most threads qkv accepts, from set_num_threads and QKV_NUM_THREADS alike. More threads than
// the machine has cores only add waiting; tens of thousands exhaust the OpenMP runtime.
inline constexpr int kMaxThreads = 256;

// Sets the thread count for subsequent kernels: ValueError unless 1 <= n <= kMaxThreads. The
// environment variable QKV_NUM_THREADS sets the initial value (the same range; another value is
// ignored with a warning on stderr); otherwise OpenMP's default (OMP_NUM_THREADS or the cores).
void set_num_threads(int n);
int get_num_threads();

}  // namespace qkv
