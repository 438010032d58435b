// The number of threads qkv's kernels use. Results do not depend on it: every kernel splits work so
// that each output is computed by one thread in a fixed order.
#pragma once

namespace qkv {

// Sets the thread count for subsequent kernels (n >= 1). The environment variable
// QKV_NUM_THREADS sets the initial value; otherwise OpenMP's default (OMP_NUM_THREADS or the cores).
void set_num_threads(int n);
int get_num_threads();

}  // namespace qkv
