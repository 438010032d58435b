// The key/value cache of a causal Transformer that generates one token at a time (GPT-2's `past`,
// nanoGPT and llm.c's inference; d2l 11.7.5 keeps the decoder's earlier inputs in its state for the
// same reason).
//
// A causal model predicts token t + 1 from tokens 0 .. t. Generating N tokens by running the whole
// prefix through the model at every step costs O(t) projections and O(t²) attention scores at step
// t. But with the causal restriction nothing about an earlier token changes when a later one
// arrives: its keys and values in every layer are what they were. So each layer keeps them, and a
// step computes the new token's query, key and value only, appends the key and value, and attends
// with one query over the cache: O(t) per step, O(N²) for the whole text instead of O(N³).
//
// The cache holds, per block, keys and values (B, H, capacity, d), filled up to `length`; the keys
// as attention reads them, already transformed by the position scheme at the position each token
// had (a rotary key is rotated once, when it is cached). TransformerEncoder::make_cache builds an
// empty one and forward_step fills it (nn/transformer.h), after checking what a caller may have
// changed: keys and values of one capacity in every layer, a length in 0 .. capacity. A step is
// the same computation as the last row of a forward over the whole prefix, to the bit, so
// generating with and without the cache gives the same tokens (tests/nn/test_kv_cache.cpp holds
// them to it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace qkv::nn {

struct KVCache {
  std::vector<Tensor> keys, values;  // per block: (B, H, capacity, d)
  int64_t length = 0;                // positions filled: the next token's position
  int64_t capacity() const { return keys.empty() ? 0 : keys.front().size(2); }
  void clear() { length = 0; }       // forget every position (the tensors are kept for reuse)
  // Before a step reads or writes it, what a caller may have changed: `num_layers` layers whose keys
  // and values all hold the same positions, and a length that counts the filled ones and leaves
  // room for one more. ValueError or ShapeError opening with `where`.
  void check(int64_t num_layers, const std::string& where) const;
  // The sequences kept, in order (a beam search keeps those it extends): row i becomes rows[i].
  void select_rows(const IndexTensor& rows);
};

}  // namespace qkv::nn
