// Decoding a sequence model's output: greedy search and beam search (d2l 10.8, "Beam Search";
// Sutskever et al. 2014), batched over sources, for any model that produces the next token's logits
// one step at a time (a Transformer decoder with its cache, nn/transformer_decoder.h; a GRU decoder
// with its hidden state).
//
// Greedy search takes the likeliest token at every step. Beam search keeps the `beam_size`
// likeliest prefixes of each source instead: at every step each is extended by every token, and
// the beam_size best of those extensions go on. An extension by <eos> that ranks among the
// beam_size best is a finished hypothesis (ranked by its score, below); the others go on. A source
// is done once beam_size hypotheses have finished, or max_len tokens have been produced (the
// prefixes still open then finish as they are), or earlier when none of its open prefixes could
// still outscore its n_best-th finished one. With beam_size 1 it is greedy search; with a beam as
// wide as every prefix it is exact (tests/nn/test_decoding.cpp holds it to both).
//
// A hypothesis scores its log-probability divided by the length penalty of Wu et al. 2016 (eq. 14),
//   lp(y) = ((5 + |y|) / 6)^α,        |y| the tokens produced, <eos> included
// α = 0 ranks by log-probability alone, which favours short outputs; α near 1 ranks by the
// log-probability per token. The bound that ends a source early: an open prefix of log-probability
// ℓ < 0 can finish at best as ℓ / lp(max_len).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tensor/tensor.h"

namespace qkv::nn {

// What a search asks of a model holding a decoding state with one row per sequence (at first one
// per source, in order).
struct StepModel {
  // The next-token logits (N, V) of the N sequences, given each one's last token; advances each
  // row's state by that token.
  std::function<Tensor(const std::vector<int64_t>& last_tokens)> step;
  // Keep the rows `rows`, in that order: row i of the new state is row rows[i] of the old one
  // (a row may be kept twice, or not at all). DecoderCache::select_rows does it for a Transformer.
  std::function<void(const std::vector<int64_t>& rows)> select_rows;
};

struct SearchOptions {
  int64_t bos = 0, eos = 0;     // the ids that start and end a sequence
  int64_t max_len = 50;         // tokens at most, <eos> included
  int64_t beam_size = 4;
  int64_t n_best = 1;           // hypotheses returned per source, best first; at most beam_size
  double length_penalty = 0.0;  // α above
};

struct Hypothesis {
  std::vector<int64_t> ids;  // the tokens produced, <eos> included if it was
  double log_prob = 0;       // Σ log p(token | prefix, source)
  double score = 0;          // log_prob / lp(|ids|)
};

// Greedy search for `sources` sequences: one hypothesis each, stopped at <eos> or max_len.
std::vector<Hypothesis> greedy_search(const StepModel& model, int64_t sources, const SearchOptions& options);

// Beam search: for each source, its n_best hypotheses, best score first.
std::vector<std::vector<Hypothesis>> beam_search(const StepModel& model, int64_t sources, const SearchOptions& options);

// The length penalty lp above, for a hypothesis of `length` tokens.
double length_penalty(int64_t length, double alpha);

}  // namespace qkv::nn
