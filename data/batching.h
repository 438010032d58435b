// Padded mini-batches of id sequences, for sequence labelling (one target per input position).
//
// A Batch of B sentences, the longest T tokens long, holds (B = batch size, T = time steps)
//   inputs      B×T row-major ids, pad_id past each sentence's end
//   targets     B×T row-major ids, ignore_index past the end, so the loss skips those positions
//               (PyTorch's CrossEntropyLoss(ignore_index=-100)); empty when no targets were given
//   valid_lens  B true lengths, the `valid_lens` of d2l's masked_softmax
//   indices     B positions in the input list, to put predictions back in corpus order
//
// Sentences of similar length share a batch so that little of it is padding, the "bucket
// iterator" of torchtext and AllenNLP: the order is shuffled, cut into pools of pool_batches
// batches, each pool is sorted by length (stably) and cut into batches, and the batches are
// shuffled again. Without shuffle the same happens on the corpus order and batches keep that
// order. Everything is a function of `seed`; pass seed + epoch for a fresh order each epoch.
#pragma once

#include <cstdint>
#include <vector>

namespace qkv::data {

struct Batch {
  int64_t batch_size = 0;  // B
  int64_t max_len = 0;     // T
  std::vector<int64_t> inputs;
  std::vector<int64_t> targets;
  std::vector<int64_t> valid_lens;
  std::vector<int64_t> indices;
};

struct BatchOptions {
  int64_t batch_size = 32;
  int64_t pool_batches = 50;  // batches per sorting pool; 1 pool over everything = fully sorted
  bool shuffle = true;
  uint64_t seed = 0;
  int64_t pad_id = 0;
  int64_t ignore_index = -100;
};

// Every sentence lands in exactly one batch; every batch has batch_size rows except at most one
// (the rest of the last pool). `targets` is empty (inputs only) or has one sequence per input, of
// equal length. Throws ValueError for an empty sentence, mismatched targets, or a batch_size or
// pool_batches below 1.
std::vector<Batch> make_batches(const std::vector<std::vector<int64_t>>& inputs,
                                const std::vector<std::vector<int64_t>>& targets,
                                const BatchOptions& options);

// The batch of the given rows of `batch` (indices into it, in the order given), cut to the longest
// of them: a rank's share of a global batch in data-parallel training (dist/sampler.h's shard).
// ValueError for a row out of range.
Batch select_rows(const Batch& batch, const std::vector<int64_t>& rows);

}  // namespace qkv::data
