#include "dist/sampler.h"

#include <numeric>
#include <string>

#include "tensor/error.h"
#include "tensor/random.h"

namespace qkv::dist {
namespace {

void check_rank(int rank, int size, const char* who) {
  if (size < 1 || rank < 0 || rank >= size)
    throw ValueError(std::string(who) + ": rank " + std::to_string(rank) + " of " + std::to_string(size) +
                     " ranks; expected 0 <= rank < size");
}

}  // namespace

DistributedSampler::DistributedSampler(int64_t n, int rank, int size, uint64_t seed, bool shuffle, bool drop_last)
    : n_(n), rank_(rank), size_(size), seed_(seed), shuffle_(shuffle), drop_last_(drop_last) {
  check_rank(rank, size, "dist::DistributedSampler");
  if (n < 0) throw ValueError("dist::DistributedSampler: " + std::to_string(n) + " examples");
  per_rank_ = drop_last ? n / size : (n + size - 1) / size;
  if (per_rank_ == 0 && n > 0)
    throw ValueError("dist::DistributedSampler: " + std::to_string(n) + " examples cannot give each of " +
                     std::to_string(size) + " ranks one with drop_last");
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(n_));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (shuffle_) {
    Generator rng(seed_ + static_cast<uint64_t>(epoch));
    shuffle(order, rng);
  }
  const int64_t total = per_rank_ * size_;
  for (int64_t i = n_; i < total; ++i) order.push_back(order[static_cast<size_t>(i % n_)]);  // pad
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank_));
  for (int64_t i = rank_; i < total; i += size_) mine.push_back(order[static_cast<size_t>(i)]);
  return mine;
}

std::vector<int64_t> shard(int64_t rows, int rank, int size) {
  check_rank(rank, size, "dist::shard");
  std::vector<int64_t> mine;
  for (int64_t r = rank; r < rows; r += size) mine.push_back(r);
  return mine;
}

}  // namespace qkv::dist
