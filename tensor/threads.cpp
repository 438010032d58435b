#include "tensor/threads.h"

#include <omp.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tensor/error.h"

namespace qkv {
namespace {

// Applies QKV_NUM_THREADS the first time anyone asks for the thread count. (Lazily rather than in a
// static initializer: the linker drops an object file from a static library when nothing refers to
// it, and its initializer with it.)
void apply_environment_once() {
  static const bool applied = [] {
    if (const char* env = std::getenv("QKV_NUM_THREADS")) {
      // Decimal digits only, as the programs' integer options: std::from_chars takes no '+' and no
      // whitespace, and must read the whole text.
      const char* const last = env + std::strlen(env);
      int n = 0;
      const auto [end, ec] = std::from_chars(env, last, n);
      if (ec == std::errc() && end == last && n >= 1 && n <= kMaxThreads)
        omp_set_num_threads(static_cast<int>(n));
      else  // not an error worth stopping a program for, but never silently ignored
        std::fprintf(stderr, "qkv: ignoring QKV_NUM_THREADS='%s' (expected an integer from 1 to %d)\n", env,
                     kMaxThreads);
    }
    return true;
  }();
  (void)applied;
}

}  // namespace

void set_num_threads(int n) {
  apply_environment_once();
  if (n < 1 || n > kMaxThreads)
    throw ValueError("set_num_threads: expected 1 to " + std::to_string(kMaxThreads) + " threads, got " +
                     std::to_string(n));
  omp_set_num_threads(n);
}

int get_num_threads() {
  apply_environment_once();
  return omp_get_max_threads();
}

}  // namespace qkv
