// A program outside qkv's tree, built against the installed package: the data-parallel library,
// its collectives on a few values and a module's parameters broadcast from rank 0. Alone it runs
// in a group of one (dist::World picks the local group); under mpirun, in the MPI job.
#include <qkv/dist/same_start.h>
#include <qkv/dist/world.h>
#include <qkv/qkv.h>

#include <cstdint>
#include <cstdio>
#include <span>
#include <vector>

int main(int argc, char** argv) {
  qkv::dist::World world(argc, argv);
  qkv::dist::ProcessGroup& group = world.group();
  const int n = world.size(), rank = world.rank();
  const float ranks = static_cast<float>(n);
  // Every rank adds the same values, so each sum is n times them; rank 0's values reach every rank.
  std::vector<float> sum{1.0f, 2.0f, 3.0f}, ordered{0.5f, -1.0f}, root{4.0f + rank, 5.0f};
  std::vector<int64_t> counts{7, 9};
  group.all_reduce_sum(std::span<float>(sum));
  group.all_reduce_sum(std::span<int64_t>(counts));
  group.all_reduce_sum_fixed_order(std::span<float>(ordered));
  group.broadcast(std::span<float>(root), 0);
  std::vector<float> gathered(static_cast<size_t>(2 * n));
  group.all_gather(std::span<const float>(root), std::span<float>(gathered));
  // A layer initialized differently on every rank holds rank 0's weights after the broadcast.
  qkv::manual_seed(3);
  qkv::nn::Linear layer(2, 2);
  qkv::manual_seed(3 + static_cast<uint64_t>(rank));
  qkv::nn::Linear mine(2, 2);
  qkv::dist::broadcast_parameters(mine, group);
  bool ok = rank >= 0 && rank < n && world.is_root() == (rank == 0) &&
            group.backend() == (n == 1 ? "local" : "mpi") &&
            sum == std::vector<float>{ranks, 2 * ranks, 3 * ranks} && counts == std::vector<int64_t>{7 * n, 9 * n} &&
            ordered == std::vector<float>{0.5f * ranks, -ranks} && root == std::vector<float>{4, 5} &&
            mine.weight.to_vector() == layer.weight.to_vector() && mine.bias.to_vector() == layer.bias.to_vector();
  for (int r = 0; r < n; ++r) ok = ok && gathered[2 * r] == 4.0f && gathered[2 * r + 1] == 5.0f;
  std::printf("consumer_dist: rank %d of %d, %s group, sums %.0f %.0f %.0f %s\n", rank, n, group.backend().c_str(),
              sum[0], sum[1], sum[2], ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
