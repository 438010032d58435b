// The caching allocator behind tensor storage: freed buffers are reused by size class, counted in
// memory_stats, and returned to the system by empty_cache; under AddressSanitizer none is kept.
#include <doctest/doctest.h>

#include <omp.h>

#include "qkv.h"

using namespace qkv;

TEST_CASE("a freed buffer is handed out again for a request of its size class") {
  if (!caching_allocator_enabled()) return;  // AddressSanitizer build: checked below
  empty_cache();
  const float* first;
  {
    const Tensor a = Tensor::empty({1000});  // 4000 bytes: class 4096 (2048 · 2)
    first = a.data();
  }
  CHECK(memory_stats().cached_bytes == 4096);
  const Tensor b = Tensor::empty({900});  // 3600 bytes: class 4096 too (> 2048 · 1.75)
  CHECK(b.data() == first);
  CHECK(memory_stats().cached_bytes == 0);
  {
    const Tensor c = Tensor::empty({700});  // 2800 bytes: class 3072 (2048 · 1.5)
    CHECK(c.data() != first);
  }
  CHECK(memory_stats().cached_bytes == 3072);
  const Tensor d = Tensor::empty({1000});  // class 4096: nothing cached in it, a new buffer
  CHECK(d.data() != first);
  CHECK(memory_stats().cached_bytes == 3072);
  empty_cache();
}

TEST_CASE("memory_stats counts requested bytes as live and freed buffers as cached until empty_cache") {
  empty_cache();
  const MemoryStats start = memory_stats();
  CHECK(start.cached_bytes == 0);
  {
    const Tensor a = Tensor::empty({256, 256});  // 256 KiB, exactly a class
    const MemoryStats during = memory_stats();
    CHECK(during.live_storages == start.live_storages + 1);
    CHECK(during.live_bytes == start.live_bytes + 256 * 256 * 4);
    CHECK(during.cached_bytes == 0);
  }
  const MemoryStats after = memory_stats();
  CHECK(after.live_storages == start.live_storages);
  CHECK(after.live_bytes == start.live_bytes);
  CHECK(after.cached_bytes == (caching_allocator_enabled() ? 256 * 256 * 4 : 0));
  empty_cache();
  CHECK(memory_stats().cached_bytes == 0);
}

TEST_CASE("tensors allocated and freed on many threads at once leave the counts balanced") {
  empty_cache();
  const MemoryStats start = memory_stats();
  int clobbered = 0;
#pragma omp parallel num_threads(4) reduction(+ : clobbered)
  for (int i = 0; i < 2000; ++i) {
    // Each thread fills its buffer with its own number and reads it back: a buffer handed to two
    // threads at once would show the other's number.
    const float mark = static_cast<float>(omp_get_thread_num());
    Tensor t = Tensor::empty({1 + (i * 37 + omp_get_thread_num() * 101) % 5000});
    float* p = t.data();
    for (int64_t j = 0; j < t.numel(); ++j) p[j] = mark;
    for (int64_t j = 0; j < t.numel(); ++j) clobbered += p[j] != mark;
  }
  CHECK(clobbered == 0);
  CHECK(memory_stats().live_storages == start.live_storages);
  CHECK(memory_stats().live_bytes == start.live_bytes);
  empty_cache();
  CHECK(memory_stats().cached_bytes == 0);
}
