#include "tensor/reference_mode.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace qkv {
namespace {

// The mode, with QKV_REFERENCE applied the first time anyone asks (lazily, as QKV_NUM_THREADS in
// tensor/threads.cpp: a static initializer in a library object nothing refers to never runs).
std::atomic<bool>& mode() {
  static std::atomic<bool> on = [] {
    const char* env = std::getenv("QKV_REFERENCE");
    if (!env || *env == '\0') return false;  // unset, or set empty to clear it
    if (std::strcmp(env, "1") == 0) return true;
    if (std::strcmp(env, "0") != 0)
      std::fprintf(stderr, "qkv: ignoring QKV_REFERENCE='%s' (expected 1 or 0)\n", env);
    return false;
  }();
  return on;
}

}  // namespace

bool reference_mode() { return mode().load(std::memory_order_relaxed); }

void set_reference_mode(bool on) { mode().store(on, std::memory_order_relaxed); }

ReferenceModeGuard::ReferenceModeGuard(bool on) : previous_(reference_mode()) { set_reference_mode(on); }

ReferenceModeGuard::~ReferenceModeGuard() { set_reference_mode(previous_); }

}  // namespace qkv
