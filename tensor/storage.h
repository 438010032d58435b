// Storage: the float buffer behind one or more tensors (views share it), 64-byte aligned so that
// kernels can use aligned SIMD loads on contiguous data, from a caching allocator (below).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qkv {

class Storage {
 public:
  // `numel` floats, uninitialized: every producer writes all of them. std::bad_alloc when the
  // system has not that much memory; Tensor::empty turns it into a qkv::Error naming the shape.
  explicit Storage(int64_t numel);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  float* data() { return data_; }
  const float* data() const { return data_; }
  int64_t numel() const { return numel_; }

  // Bumped by every in-place write, so that autograd can tell that a tensor it saved for backward
  // was modified afterwards (PyTorch's "version counter").
  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  float* data_;
  int64_t numel_;
  uint64_t version_ = 0;
};

// A kernel's scratch: `numel` floats, uninitialized, from the same caching allocator as tensor
// storage, so that a kernel called at every step with the same sizes reuses one buffer instead of
// asking the system (and faulting its pages in) again. Not tensor storage: memory_stats() does not
// count it. Freed, to the cache, when it goes out of scope.
class Scratch {
 public:
  explicit Scratch(int64_t numel);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  float* data() { return data_; }

 private:
  float* data_;
  int64_t numel_;
};

// Live allocations of tensor storage, for finding leaks and measuring peak memory.
struct MemoryStats {
  int64_t live_storages = 0;    // buffers currently allocated
  int64_t live_bytes = 0;       // their bytes (as requested)
  int64_t peak_bytes = 0;       // the most live_bytes has been since the last reset
  int64_t cached_bytes = 0;     // freed buffers kept by the caching allocator for reuse
  int64_t allocated_bytes = 0;  // every buffer ever allocated, freed or not (only grows)
};

MemoryStats memory_stats();
void reset_peak_memory();

// Freed storage is not returned to the system at once: buffers are kept in size classes (4 per
// power of two, a request rounded up to its class) and handed out again, up to 1 GiB in all, so a
// training step that allocates the same buffers every step stops paying for fresh pages. Like
// torch.cuda.empty_cache, empty_cache() returns every kept buffer to the system. Under
// AddressSanitizer nothing is kept, so that it sees every buffer come and go.
void empty_cache();
// Whether freed buffers are kept (false under AddressSanitizer).
bool caching_allocator_enabled();

}  // namespace qkv
