// Which examples each rank reads: PyTorch's DistributedSampler, on qkv's counter-based generator.
//
// Every rank draws the same permutation of the n examples for an epoch (a Generator seeded with
// seed + epoch, so all ranks agree without talking), and rank r takes the examples at positions
// r, r + size, r + 2·size, …: together the ranks read each example once per epoch.
//
// When size does not divide n, the last round is uneven. With drop_last = false (PyTorch's
// default) the permutation is padded with its own first examples so that every rank reads
// ceil(n / size) of them and takes as many steps (a few examples are read twice in the epoch); with
// drop_last = true it is cut to floor(n / size) per rank (a few are skipped this epoch, others the
// next, since the permutation changes).
//
// shard() is the same stride over the rows of one batch: the programs build the global batch on
// every rank and each rank takes its rows, so that N ranks step through exactly the batches one
// process would (the equivalence docs/distributed.md tests). A rank may get one row fewer than
// another, or none, when size does not divide the batch's rows.
#pragma once

#include <cstdint>
#include <vector>

namespace qkv::dist {

class DistributedSampler {
 public:
  DistributedSampler(int64_t n, int rank, int size, uint64_t seed, bool shuffle = true, bool drop_last = false);
  // This rank's examples for `epoch`, in the order to read them.
  std::vector<int64_t> indices(int64_t epoch) const;
  // How many that is, the same on every rank.
  int64_t num_samples() const { return per_rank_; }

 private:
  int64_t n_;
  int rank_, size_;
  uint64_t seed_;
  bool shuffle_, drop_last_;
  int64_t per_rank_;
};

// Rows rank, rank + size, … of a batch of `rows`.
std::vector<int64_t> shard(int64_t rows, int rank, int size);

}  // namespace qkv::dist
