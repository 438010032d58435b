#include "tensor/storage.h"

#include <atomic>
#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace qkv {
namespace {

constexpr size_t kAlignment = 64;  // a cache line, and the width of an AVX-512 register

// AddressSanitizer must see every buffer come and go, to catch a use after free or an overflow
// into a neighbour: under it, no block is ever reused.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCaching = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kCaching = false;
#else
constexpr bool kCaching = true;
#endif
#else
constexpr bool kCaching = true;
#endif

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

// The caching allocator. A training step allocates the same set of buffers at every step
// (activations, gradients, temporaries); returning them to the system and asking again costs a
// system call and a page fault per 4 KiB page for every large buffer, a measurable share of a
// small model's step. So a freed buffer is kept, and handed out again for a request of its size class.
//
// Size classes: 4 per power of two, 2^k · {1, 1.25, 1.5, 1.75}, from 256 bytes up. A request is
// rounded up to its class, so a block serves any request of the class and wastes at most a fifth
// of itself (PyTorch's CUDA allocator rounds the same way with roundup_power2_divisions = 4).
// At most kMaxCachedBytes are kept; a block freed beyond that goes back to the system.
constexpr int kMinClassLog2 = 8;  // 256 bytes: every class is a multiple of the alignment
constexpr int kClasses = 4 * (64 - kMinClassLog2);
constexpr size_t kMaxCachedBytes = size_t{1} << 30;

struct SizeClass {
  int index;
  size_t bytes;
};

SizeClass size_class(size_t bytes) {
  if (bytes <= (size_t{1} << kMinClassLog2)) return {0, size_t{1} << kMinClassLog2};
  const int k = std::bit_width(bytes - 1) - 1;  // 2^k < bytes <= 2^(k+1)
  const size_t base = size_t{1} << k, step = base / 4;
  const size_t quarters = (bytes - base + step - 1) / step;  // 1..4
  return {(k - kMinClassLog2) * 4 + static_cast<int>(quarters), base + quarters * step};
}

class BlockCache {
 public:
  // A cached block of the class, or nullptr.
  float* take(const SizeClass& c) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<float*>& list = free_[c.index];
    if (list.empty()) return nullptr;
    float* p = list.back();
    list.pop_back();
    cached_bytes_ -= c.bytes;
    return p;
  }

  // Keeps the block for reuse, or frees it when the cache is full.
  void give(float* p, const SizeClass& c) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_bytes_ + c.bytes <= kMaxCachedBytes) {
        free_[c.index].push_back(p);
        cached_bytes_ += c.bytes;
        return;
      }
    }
    std::free(p);
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::vector<float*>& list : free_) {
      for (float* p : list) std::free(p);
      list.clear();
    }
    cached_bytes_ = 0;
  }

  int64_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int64_t>(cached_bytes_);
  }

 private:
  std::mutex mutex_;
  std::vector<float*> free_[kClasses];
  size_t cached_bytes_ = 0;
};

// Never destroyed: tensors held by static objects may be freed after any static destructor ran.
BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;
  return *cache;
}

// A block of at least `numel` floats (one, for 0): from the cache when it has one of the class.
float* allocate(int64_t numel) {
  // Past this, the byte count or its size class would overflow: no system has that much memory.
  constexpr int64_t kMaxNumel = (int64_t{1} << 60) / static_cast<int64_t>(sizeof(float));
  if (numel > kMaxNumel) throw std::bad_alloc();
  const size_t bytes = static_cast<size_t>(numel > 0 ? numel : 1) * sizeof(float);
  float* data = nullptr;
  if (kCaching) {
    const SizeClass c = size_class(bytes);
    data = block_cache().take(c);
    if (!data) data = static_cast<float*>(std::aligned_alloc(kAlignment, c.bytes));
  } else {
    // aligned_alloc wants a size that is a multiple of the alignment, and at least one block.
    data = static_cast<float*>(std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment));
  }
  if (!data) throw std::bad_alloc();
  return data;
}

void release(float* data, int64_t numel) {
  if (kCaching)
    block_cache().give(data, size_class(static_cast<size_t>(numel > 0 ? numel : 1) * sizeof(float)));
  else
    std::free(data);
}

}  // namespace

Storage::Storage(int64_t numel) : data_(allocate(numel)), numel_(numel) {
  note_allocation(numel_ * static_cast<int64_t>(sizeof(float)));
}

Storage::~Storage() {
  release(data_, numel_);
  g_live_storages.fetch_sub(1, std::memory_order_relaxed);
  g_live_bytes.fetch_sub(numel_ * static_cast<int64_t>(sizeof(float)), std::memory_order_relaxed);
}

Scratch::Scratch(int64_t numel) : data_(allocate(numel)), numel_(numel) {}

Scratch::~Scratch() { release(data_, numel_); }

MemoryStats memory_stats() {
  return {g_live_storages.load(), g_live_bytes.load(), g_peak_bytes.load(), block_cache().cached_bytes(),
          g_allocated_bytes.load()};
}

void reset_peak_memory() { g_peak_bytes.store(g_live_bytes.load()); }

void empty_cache() { block_cache().clear(); }

bool caching_allocator_enabled() { return kCaching; }

}  // namespace qkv
