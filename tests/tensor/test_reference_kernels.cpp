// The kernels in the reference mode (tensor/reference_mode.h): the matmul is the blocked GEMM of
// gemm_blocked.cpp under OpenMP, and parallel loops are OpenMP's own with a static split; the same
// results as the default path, for any thread count.
#include <doctest/doctest.h>

#include <omp.h>

#include <array>
#include <atomic>
#include <cstring>
#include <string_view>
#include <vector>

#include "random_floats.h"
#include "tensor/kernels/gemm.h"
#include "tensor/kernels/parallel.h"
#include "tensor/precision.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"

using namespace qkv;
using namespace qkv::kernels;

namespace {

struct Threads {
  explicit Threads(int n) : saved(get_num_threads()) { set_num_threads(n); }
  ~Threads() { set_num_threads(saved); }
  int saved;
};

// C = op(A)·op(B) (+ bias) for random operands, as `kernel` computes it.
std::vector<float> product(bool ta, bool tb, int64_t M, int64_t N, int64_t K, bool with_bias) {
  const std::vector<float> A = random_floats(M * K, 1), B = random_floats(K * N, 2), bias = random_floats(N, 3);
  std::vector<float> C(static_cast<size_t>(M * N));
  if (with_bias)
    gemm_bias(ta, tb, M, N, K, A.data(), ta ? M : K, B.data(), tb ? K : N, bias.data(), C.data(), N);
  else
    gemm(ta, tb, M, N, K, 0.5f, A.data(), ta ? M : K, B.data(), tb ? K : N, 0.0f, C.data(), N);
  return C;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("in the reference mode gemm is the blocked GEMM under OpenMP: the fast path's bits with 1 and 2 threads") {
  // Each element is the same chain of fused multiply-adds in both (gemm_blocked.cpp), so on a SIMD
  // build the two agree to the bit; the portable micro-kernel may round a·b + c twice.
  const bool simd = std::string_view(gemm_config().isa) != "portable";
  const GemmConfig cfg = gemm_config();
  for (const bool ta : {false, true})
    for (const bool tb : {false, true})
      for (const bool bias : {false, true})
        for (const auto [M, N, K] : {std::array<int64_t, 3>{2 * cfg.mc + 5, 3 * cfg.nr + 1, cfg.kc + 3},
                                     std::array<int64_t, 3>{1024, 64, 64}, std::array<int64_t, 3>{1024, 3, 300}}) {
          CAPTURE(ta);
          CAPTURE(tb);
          CAPTURE(bias);
          CAPTURE(M);
          const std::vector<float> fast = product(ta, tb, M, N, K, bias);
          const ReferenceModeGuard reference;
          const Threads one(1);
          const std::vector<float> plain1 = product(ta, tb, M, N, K, bias);
          set_num_threads(2);
          const std::vector<float> plain2 = product(ta, tb, M, N, K, bias);
          CHECK(same_bits(plain1, plain2));
          if (simd) CHECK(same_bits(plain1, fast));
        }
}

TEST_CASE("in the reference mode products stay in float32 whatever the matmul precision") {
  if (!bf16_matmul_available()) return;
  const std::vector<float> highest = product(false, true, 512, 256, 256, false);
  set_matmul_precision(MatmulPrecision::medium);
  const std::vector<float> medium = product(false, true, 512, 256, 256, false);
  std::vector<float> plain;
  {
    const ReferenceModeGuard reference;
    plain = product(false, true, 512, 256, 256, false);
  }
  set_matmul_precision(MatmulPrecision::highest);
  CHECK_FALSE(same_bits(medium, highest));  // bfloat16 operands round differently...
  CHECK(same_bits(plain, highest));         // ...but not in the reference mode
}

TEST_CASE("in the reference mode parallel loops are OpenMP's static split, not the pool") {
  const Threads two(2);
  const ReferenceModeGuard reference;
  const PoolStats before = pool_stats();
  std::vector<int> seen(10000, 0);
  std::atomic<int> ranges{0}, in_region{0};
  parallel_for(10000, int64_t{1} << 24, [&](int64_t begin, int64_t end) {
    ranges.fetch_add(1);
    if (omp_in_parallel() && in_parallel_task()) in_region.fetch_add(1);
    for (int64_t i = begin; i < end; ++i) ++seen[static_cast<size_t>(i)];
  });
  // One contiguous range per thread, each index once, every range inside the OpenMP region.
  CHECK(ranges.load() == 2);
  CHECK(in_region.load() == 2);
  for (const int s : seen) REQUIRE(s == 1);
  // The tasks too, each told the OpenMP thread it runs on: both threads take some.
  std::atomic<int> tasks{0}, on_worker[2] = {0, 0};
  parallel_tasks(37, 2, int64_t{1} << 24, [&](int64_t, int worker) {
    tasks.fetch_add(1);
    if (worker == omp_get_thread_num() && worker >= 0 && worker < 2) on_worker[worker].fetch_add(1);
  });
  CHECK(tasks.load() == 37);
  CHECK(on_worker[0].load() + on_worker[1].load() == 37);
  CHECK(on_worker[0].load() > 0);
  CHECK(on_worker[1].load() > 0);
  const PoolStats after = pool_stats();
  CHECK(after.parallel_jobs == before.parallel_jobs);
  CHECK(after.serial_jobs == before.serial_jobs);
}
