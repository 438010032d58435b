#include "data/batching.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "tensor/random.h"
#include "tensor/error.h"

namespace qkv::data {
namespace {

void check_inputs(const std::vector<std::vector<int64_t>>& inputs,
                  const std::vector<std::vector<int64_t>>& targets, const BatchOptions& options) {
  if (options.batch_size < 1 || options.pool_batches < 1)
    throw ValueError("make_batches: batch_size and pool_batches must be at least 1, got " +
                     std::to_string(options.batch_size) + " and " +
                     std::to_string(options.pool_batches));
  if (!targets.empty() && targets.size() != inputs.size())
    throw ValueError("make_batches: " + std::to_string(inputs.size()) + " input sequences but " +
                     std::to_string(targets.size()) + " target sequences");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty())
      throw ValueError("make_batches: sentence " + std::to_string(i) + " is empty");
    if (!targets.empty() && targets[i].size() != inputs[i].size())
      throw ValueError("make_batches: sentence " + std::to_string(i) + " has " +
                       std::to_string(inputs[i].size()) + " inputs but " +
                       std::to_string(targets[i].size()) + " targets");
  }
}

// Lays out the sentences `rows` (indices into inputs) as one padded batch.
Batch pad_batch(const std::vector<std::vector<int64_t>>& inputs,
                const std::vector<std::vector<int64_t>>& targets, std::vector<int64_t> rows,
                const BatchOptions& options) {
  Batch batch;
  batch.batch_size = static_cast<int64_t>(rows.size());
  for (int64_t r : rows) batch.max_len = std::max<int64_t>(batch.max_len, inputs[r].size());
  const int64_t B = batch.batch_size, T = batch.max_len;
  batch.inputs.assign(B * T, options.pad_id);
  if (!targets.empty()) batch.targets.assign(B * T, options.ignore_index);
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<int64_t>& sentence = inputs[rows[b]];
    std::copy(sentence.begin(), sentence.end(), batch.inputs.begin() + b * T);
    if (!targets.empty())
      std::copy(targets[rows[b]].begin(), targets[rows[b]].end(), batch.targets.begin() + b * T);
    batch.valid_lens.push_back(static_cast<int64_t>(sentence.size()));
  }
  batch.indices = std::move(rows);
  return batch;
}

}  // namespace

std::vector<Batch> make_batches(const std::vector<std::vector<int64_t>>& inputs,
                                const std::vector<std::vector<int64_t>>& targets,
                                const BatchOptions& options) {
  check_inputs(inputs, targets, options);
  Generator rng(options.seed);
  std::vector<int64_t> order(inputs.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  if (options.shuffle) shuffle(order, rng);

  const int64_t n = static_cast<int64_t>(order.size());
  // batch_size · pool_batches sentences per pool, or one pool of all n when that is more (computed
  // so that it cannot overflow: a huge batch_size once made the product negative and the loop endless).
  const int64_t pool_size = options.batch_size > n / options.pool_batches ? std::max<int64_t>(n, 1)
                                                                          : options.batch_size * options.pool_batches;
  std::vector<Batch> batches;
  for (int64_t pool_begin = 0; pool_begin < n; pool_begin += pool_size) {
    const auto first = order.begin() + pool_begin;
    const auto last = order.begin() + std::min(n, pool_begin + pool_size);
    std::stable_sort(first, last,
                     [&](int64_t a, int64_t b) { return inputs[a].size() < inputs[b].size(); });
    for (auto begin = first; begin != last;) {
      const auto end = begin + std::min<int64_t>(options.batch_size, last - begin);
      batches.push_back(pad_batch(inputs, targets, {begin, end}, options));
      begin = end;
    }
  }
  if (options.shuffle) shuffle(batches, rng);
  return batches;
}

Batch select_rows(const Batch& batch, const std::vector<int64_t>& rows) {
  Batch out;
  out.batch_size = static_cast<int64_t>(rows.size());
  for (int64_t r : rows) {
    if (r < 0 || r >= batch.batch_size)
      throw ValueError("select_rows: row " + std::to_string(r) + " of a batch of " + std::to_string(batch.batch_size));
    out.max_len = std::max(out.max_len, batch.valid_lens[static_cast<size_t>(r)]);
  }
  const int64_t T = batch.max_len, t = out.max_len;
  for (int64_t r : rows) {
    const auto from = static_cast<std::ptrdiff_t>(r * T);
    out.inputs.insert(out.inputs.end(), batch.inputs.begin() + from, batch.inputs.begin() + from + t);
    if (!batch.targets.empty())
      out.targets.insert(out.targets.end(), batch.targets.begin() + from, batch.targets.begin() + from + t);
    out.valid_lens.push_back(batch.valid_lens[static_cast<size_t>(r)]);
    out.indices.push_back(batch.indices[static_cast<size_t>(r)]);
  }
  return out;
}

}  // namespace qkv::data
