#include "examples/long_range/task.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "tensor/error.h"

namespace long_range {

void check_task(const TaskOptions& task) {
  if (task.length < kMinLength || task.length > kMaxLength)
    throw qkv::ValueError("--length " + std::to_string(task.length) + " is outside " + std::to_string(kMinLength) +
                          " .. " + std::to_string(kMaxLength) + " tokens");
  const int64_t most_keys = std::min(kMaxKeys, task.length / 4);
  if (task.keys < 1 || task.keys > most_keys)
    throw qkv::ValueError("--keys " + std::to_string(task.keys) + " is outside 1 .. " + std::to_string(most_keys) +
                          " (at most a quarter of --length " + std::to_string(task.length) + ", and " +
                          std::to_string(kMaxKeys) + ")");
  if (task.values < 2 || task.values > kMaxValues)
    throw qkv::ValueError("--values " + std::to_string(task.values) + " is outside 2 .. " +
                          std::to_string(kMaxValues));
}

int64_t vocab_size(const TaskOptions& task) { return 1 + task.keys + task.keys * task.values; }

int64_t shortest(const TaskOptions& task) { return (3 * task.length + 3) / 4; }

bool is_needle(const TaskOptions& task, int64_t token) { return token > task.keys; }

int64_t key_of(const TaskOptions& task, int64_t token) {
  return is_needle(task, token) ? (token - 1 - task.keys) / task.values : token - 1;
}

Sequence draw_sequence(const TaskOptions& task, qkv::Generator& gen) {
  const int64_t lo = shortest(task);
  const int64_t n = lo + static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(task.length - lo + 1)));
  Sequence s;
  s.tokens.resize(static_cast<size_t>(n));
  s.tags.resize(static_cast<size_t>(n));
  // The needles' positions: the first K of a partial Fisher–Yates shuffle of 0 .. n−1, distinct
  // and each uniform.
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  std::vector<int64_t> value(static_cast<size_t>(task.keys));
  std::vector<bool> taken(static_cast<size_t>(n), false);
  for (int64_t q = 0; q < task.keys; ++q) {
    const auto j = q + static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(n - q)));
    std::swap(order[static_cast<size_t>(q)], order[static_cast<size_t>(j)]);
    const int64_t at = order[static_cast<size_t>(q)];
    value[static_cast<size_t>(q)] = static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(task.values)));
    s.needles.push_back(at);
    taken[static_cast<size_t>(at)] = true;
    s.tokens[static_cast<size_t>(at)] = 1 + task.keys + q * task.values + value[static_cast<size_t>(q)];
    s.tags[static_cast<size_t>(at)] = value[static_cast<size_t>(q)];
  }
  for (int64_t i = 0; i < n; ++i) {
    if (taken[static_cast<size_t>(i)]) continue;
    const auto q = static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(task.keys)));
    s.tokens[static_cast<size_t>(i)] = 1 + q;
    s.tags[static_cast<size_t>(i)] = value[static_cast<size_t>(q)];
  }
  return s;
}

std::vector<Sequence> generate(const TaskOptions& task, int64_t count, uint64_t seed) {
  check_task(task);
  qkv::Generator gen(seed);
  std::vector<Sequence> set;
  set.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) set.push_back(draw_sequence(task, gen));
  return set;
}

Batch make_batch(const std::vector<Sequence>& set, size_t first, size_t count) {
  if (count == 0 || first + count > set.size())
    throw qkv::ValueError("make_batch: sequences " + std::to_string(first) + " .. " +
                          std::to_string(first + count) + " of a set of " + std::to_string(set.size()));
  size_t T = 0;
  for (size_t b = first; b < first + count; ++b) T = std::max(T, set[b].tokens.size());
  std::vector<int64_t> ids(count * T, 0), tags(count * T, 0), lens(count);
  Batch batch;
  for (size_t b = 0; b < count; ++b) {
    const Sequence& s = set[first + b];
    std::copy(s.tokens.begin(), s.tokens.end(), ids.begin() + static_cast<std::ptrdiff_t>(b * T));
    std::copy(s.tags.begin(), s.tags.end(), tags.begin() + static_cast<std::ptrdiff_t>(b * T));
    lens[b] = static_cast<int64_t>(s.tokens.size());
    batch.tokens += lens[b];
  }
  const auto B = static_cast<int64_t>(count), width = static_cast<int64_t>(T);
  batch.ids = IndexTensor(std::move(ids), {B, width});
  batch.tags = IndexTensor(std::move(tags), {B, width});
  batch.valid_lens = IndexTensor(std::move(lens));
  return batch;
}

TaskStats task_stats(const TaskOptions& task, const std::vector<Sequence>& set, int64_t window) {
  std::vector<int64_t> per_tag(static_cast<size_t>(task.values), 0);
  int64_t tokens = 0, queries = 0, near = 0, distance = 0;
  double bound = 0;
  for (const Sequence& s : set) {
    for (size_t i = 0; i < s.tokens.size(); ++i) {
      ++tokens;
      ++per_tag[static_cast<size_t>(s.tags[i])];
      if (is_needle(task, s.tokens[i])) {
        bound += 1;  // a needle's tag is its own value, read from the token itself
        continue;
      }
      const int64_t d = std::abs(s.needles[static_cast<size_t>(key_of(task, s.tokens[i]))] - static_cast<int64_t>(i));
      ++queries;
      distance += d;
      near += d <= window ? 1 : 0;
      bound += d <= window ? 1.0 : 1.0 / static_cast<double>(task.values);
    }
  }
  TaskStats stats;
  if (tokens == 0) return stats;
  stats.majority = static_cast<double>(*std::max_element(per_tag.begin(), per_tag.end())) / static_cast<double>(tokens);
  stats.window_bound = bound / static_cast<double>(tokens);
  if (queries > 0) {
    stats.mean_distance = static_cast<double>(distance) / static_cast<double>(queries);
    stats.within_window = static_cast<double>(near) / static_cast<double>(queries);
  }
  return stats;
}

}  // namespace long_range
