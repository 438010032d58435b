// The long_range task: keyed needle retrieval over long sequences, generated from a seed, in the
// spirit of Long Range Arena (Tay et al. 2021, "Long Range Arena: A Benchmark for Efficient
// Transformers": its retrieval and ListOps tasks, whose labels depend on tokens far apart).
//
// A sequence of n tokens (n drawn uniformly from ⌈3L/4⌉ .. L for --length L, so that a batch holds
// sequences of different lengths, padded and masked by valid_lens) holds
//   K needles   one per key q = 0 .. K−1, at K distinct positions drawn uniformly; the needle of key
//               q carries a value v_q drawn uniformly from 0 .. V−1: its token is the pair (q, v_q)
//   queries     every other position: a key q drawn uniformly, its token the bare key q
// and one tag per token, a class 0 .. V−1:
//   a query of key q is tagged v_q, the value its key's needle carries, wherever that needle is;
//   a needle is tagged its own value.
// Token ids: 0 pads, 1 + q is the query of key q, 1 + K + q·V + v the needle (q, v): 1 + K + K·V ids.
//
// Why it needs distant context: v_q is drawn independently of every other token, so a query's tag
// can be read from its key's needle and from nothing else. The needle sits at a uniform position,
// on average about n/3 tokens from a query (hundreds of tokens at L = 512), and a window of ±r
// holds it for a fraction of about 2r/n of the queries.
// What a model can reach without it (the figures train prints, measured on the test set):
//   chance     1/V: v_q is uniform, so every constant guess, the majority tag included, scores 1/V
//              on the queries in expectation (the majority tag of a finite test set, whose tags
//              come from 2 needles a sequence by default, scores somewhat more: train prints it)
//   window     the best any model whose tokens see only ±r can do: right where the needle is
//              within ±r of the query (and on the needles themselves), 1/V in expectation
//              elsewhere. A stack of L window layers of ±w sees r = L·w.
// With the defaults (K = 2, V = 8, L = 512, two layers of ±32) chance is 12.5% and the window bound
// about 35%; at L = 2048 the bound falls to about 18%.
// Dense attention can reach 1: one head whose query of key q attends to the needle of key q (a
// match of contents, wherever it sits) and copies its value. The task has no use for positions:
// the tags are a function of the tokens' contents alone, which makes it a clean test of whether
// an approximate attention can still find one token among thousands by its content.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/index_tensor.h"
#include "tensor/random.h"

namespace long_range {

using qkv::IndexTensor;

// The lengths the program takes: from a length short enough for a test to the longest for which
// dense attention's (T, T) weights of a small batch still fit in memory.
constexpr int64_t kMinLength = 16, kMaxLength = 4096;
constexpr int64_t kMaxKeys = 64, kMaxValues = 64;

struct TaskOptions {
  int64_t length = 512;  // L: each sequence has ⌈3L/4⌉ .. L tokens
  int64_t keys = 2;      // K: needles per sequence, one per key
  int64_t values = 8;    // V: the values a needle carries, which are the tags
};

// ValueError naming the option (--length, --keys, --values) and the range expected: lengths
// kMinLength .. kMaxLength, keys 1 .. min(kMaxKeys, L/4) (so that most tokens are queries), values
// 2 .. kMaxValues.
void check_task(const TaskOptions& task);

int64_t vocab_size(const TaskOptions& task);  // 1 + K + K·V
int64_t shortest(const TaskOptions& task);    // ⌈3L/4⌉

struct Sequence {
  std::vector<int64_t> tokens, tags;  // n each
  std::vector<int64_t> needles;       // K: the position of the needle of key q
};

// One sequence drawn from `gen` as the header describes.
Sequence draw_sequence(const TaskOptions& task, qkv::Generator& gen);
// `count` sequences from a generator seeded with `seed`: the same seed, the same sequences.
std::vector<Sequence> generate(const TaskOptions& task, int64_t count, uint64_t seed);

// The key of a query token, or of a needle token, and whether a token is a needle.
bool is_needle(const TaskOptions& task, int64_t token);
int64_t key_of(const TaskOptions& task, int64_t token);

// Sequences first .. first + count − 1 of `set`, padded with id 0 to the longest of them.
struct Batch {
  IndexTensor ids, tags, valid_lens;  // (B, T), (B, T), (B)
  int64_t tokens = 0;                 // the real tokens: the sum of valid_lens
};
Batch make_batch(const std::vector<Sequence>& set, size_t first, size_t count);

// What the header's reference points come to on `set`: the share of tokens tagged with the most
// frequent tag; the expected accuracy of the best model restricted to ±window; the mean distance
// from a query to its needle; the share of queries whose needle is within ±window.
struct TaskStats {
  double majority = 0, window_bound = 0, mean_distance = 0, within_window = 0;
};
TaskStats task_stats(const TaskOptions& task, const std::vector<Sequence>& set, int64_t window);

}  // namespace long_range
