#include "tensor/storage.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace qkv {
namespace {

constexpr size_t kAlignment = 64;  // a cache line, and the width of an AVX-512 register

std::atomic<int64_t> g_live_storages{0};
std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_bytes{0};
std::atomic<int64_t> g_allocated_bytes{0};

void note_allocation(int64_t bytes) {
  g_live_storages.fetch_add(1, std::memory_order_relaxed);
  g_allocated_bytes.fetch_add(bytes, std::memory_order_relaxed);
  const int64_t live = g_live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

}  // namespace

Storage::Storage(int64_t numel) : numel_(numel) {
  // aligned_alloc wants a size that is a multiple of the alignment, and at least one block.
  const size_t bytes = static_cast<size_t>(numel > 0 ? numel : 1) * sizeof(float);
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  data_ = static_cast<float*>(std::aligned_alloc(kAlignment, rounded));
  if (!data_) throw std::bad_alloc();
  note_allocation(numel_ * static_cast<int64_t>(sizeof(float)));
}

Storage::~Storage() {
  std::free(data_);
  g_live_storages.fetch_sub(1, std::memory_order_relaxed);
  g_live_bytes.fetch_sub(numel_ * static_cast<int64_t>(sizeof(float)), std::memory_order_relaxed);
}

MemoryStats memory_stats() {
  return {g_live_storages.load(), g_live_bytes.load(), g_peak_bytes.load(), g_allocated_bytes.load()};
}

void reset_peak_memory() { g_peak_bytes.store(g_live_bytes.load()); }

}  // namespace qkv
