// The all-reduce of data-parallel training against a memcpy of the same bytes, on the ranks of an
// MPI job (docs/distributed.md):
//
//   mpirun -np 2 build/bench/bench_allreduce [--floats N,N,...] [--repeats R]
//
// For each size (floats; by default the gradients of the tagger's tiny and brown models and of the
// lm): the library's blocking all-reduce, the nonblocking one waited for at once, the fixed-order
// sum (all-gather, then add in rank order), and one process's memcpy of the bytes, each the median
// of R runs; bandwidth is bytes / time, the "algorithm bandwidth" of NCCL's and MPI's benchmarks.
// Rank 0 prints. Without mpirun it runs as one rank, where every collective is a no-op.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "bench/timing.h"
#include "dist/world.h"

namespace {

std::vector<long long> parse_sizes(const std::string& text) {
  std::vector<long long> sizes;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) sizes.push_back(std::stoll(item));
  return sizes;
}

}  // namespace

int main(int argc, char** argv) {
  qkv::dist::World world(argc, argv);
  qkv::dist::ProcessGroup& g = world.group();
  // The models' parameter counts: the tagger's tiny and brown configs and the lm's default.
  std::vector<long long> sizes = {28'000, 1'700'000, 830'000};
  int repeats = 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--floats") sizes = parse_sizes(argv[i + 1]);
    if (std::string(argv[i]) == "--repeats") repeats = std::stoi(argv[i + 1]);
  }
  if (world.is_root())
    std::printf("%d rank(s) (%s), median of %d runs\n%12s %10s | %22s %22s %22s | %22s\n", g.size(),
                g.backend().c_str(), repeats, "floats", "MB", "all-reduce ms (GB/s)", "iallreduce+wait", "fixed order",
                "memcpy ms (GB/s)");
  for (const long long n : sizes) {
    std::vector<float> x(static_cast<size_t>(n), 1.0f), y(x.size());
    const std::span<float> span(x);
    g.barrier();
    const double reduce = qkv::bench::median_ms(repeats, [&] { g.all_reduce_sum(span); });
    g.barrier();
    const double async = qkv::bench::median_ms(repeats, [&] { g.all_reduce_sum_async(span)->wait(); });
    g.barrier();
    const double fixed = qkv::bench::median_ms(repeats, [&] { g.all_reduce_sum_fixed_order(span); });
    const double copy = qkv::bench::median_ms(repeats, [&] { std::memcpy(y.data(), x.data(), x.size() * sizeof(float)); });
    const double mb = static_cast<double>(n) * sizeof(float) / 1e6;
    const auto cell = [&](double ms) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%8.3f (%6.2f)", ms, mb / ms);
      return std::string(buf);
    };
    if (world.is_root())
      std::printf("%12lld %10.2f | %22s %22s %22s | %22s\n", n, mb, cell(reduce).c_str(), cell(async).c_str(),
                  cell(fixed).c_str(), cell(copy).c_str());
  }
  return 0;
}
