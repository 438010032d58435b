// A character-level GPT (Radford et al. 2018 and 2019; the model of nanoGPT's shakespeare_char and
// llm.c), built from qkv's own Transformer encoder with the causal restriction:
//
//   X = Embedding(ids)                                 ids (B, T) → (B, T, D), no √D scaling (GPT-2)
//   H = encoder(X)                                     positions, N pre-LN blocks, a final LayerNorm;
//                                                      each token attends to itself and those before it
//   logits = H · Eᵀ                                    (B, T, V): the output layer is the embedding E
//                                                      itself (weight tying, Press & Wolf 2017)
//
// and trained to predict token t + 1 from tokens 0 .. t at every position at once. The embedding
// starts N(0, 0.02²), as GPT-2's: N(0, 1) rows, tied to the output, would start the logits with a
// spread of √D and the loss far above log V.
//
// Generation samples one character at a time. With the key/value cache (nn/kv_cache.h) a step
// runs the new character alone; without it every step runs the whole window again. The two give
// the same logits to the bit at every step, so the same text (tests/examples/test_lm.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/embedding.h"
#include "nn/transformer.h"
#include "tensor/random.h"

namespace lm {

struct ModelConfig {
  int64_t vocab_size = 0;
  int64_t context = 256;  // the longest window the model reads (max_len of its positions)
  int64_t d_model = 128, heads = 4, layers = 6, ffn_hidden = 512;
  std::string positions = "rotary";  // any of nn::position_scheme_names()
  std::string ffn = "gelu";           // any of nn::feed_forward_names()
  float dropout = 0.0f;
  bool recompute = false;  // each block recomputed in backward (nn::TransformerEncoderOptions::recompute)
};

class CharGPT : public qkv::nn::Module {
 public:
  explicit CharGPT(const ModelConfig& config);
  // ids (B, T), T <= context → logits (B, T, V)
  qkv::Tensor forward(const qkv::IndexTensor& ids);
  // One character per sequence, ids (B, 1), at position cache.length → logits (B, 1, V).
  qkv::Tensor forward_step(const qkv::IndexTensor& ids, qkv::nn::KVCache& cache);
  qkv::nn::KVCache make_cache(int64_t batch) const { return encoder->make_cache(batch, config.context); }

  ModelConfig config;
  std::shared_ptr<qkv::nn::Embedding> embedding;
  std::shared_ptr<qkv::nn::TransformerEncoder> encoder;
};

// The model with the same weights reading windows of up to `context` characters, longer or shorter
// than those it trained on: the position schemes that are functions of the position (sinusoidal,
// rotary, ALiBi, relative buckets, Fourier features, none) are rebuilt for the new length. A weight
// whose shape depends on the context, a learned table's one row per position, is refused: ValueError
// naming it, since it holds nothing for positions past its last row.
std::shared_ptr<CharGPT> with_context(const CharGPT& model, int64_t context);

struct SampleOptions {
  int64_t tokens = 500;      // characters to generate after the prompt
  double temperature = 1.0;  // 0: always the most likely character (greedy)
  int64_t top_k = 0;         // sample among the k most likely only; 0: all
  uint64_t seed = 1;
  bool cache = true;         // false: run the whole window at every step
};

// The window the model sees: the prompt and what follows it, up to `context` characters. When a
// character would make it longer, it is cut to its last context / 2 characters (the cached mode
// reads those into an empty cache), so that both modes see the same window at every step.
// Generates options.tokens characters after `prompt` (at least one id), calling on_token with each
// as it comes; `logits`, when given, receives each step's logits (V floats) before sampling. Its
// products are float32 whatever the matmul precision, so that both modes give the same bits.
std::vector<int32_t> generate(CharGPT& model, const std::vector<int32_t>& prompt, const SampleOptions& options,
                              const std::function<void(int32_t)>& on_token = {},
                              std::vector<std::vector<float>>* logits = nullptr);

// The id options pick from logits (V): the largest at temperature 0; otherwise a draw from
// softmax(logits / temperature) over the top_k largest (all when 0), with one uniform from gen.
// Never id 0, the unknown symbol: it stands for characters training never saw and has no text to
// write. ValueError for V below 2.
int32_t sample_id(const float* logits, int64_t V, const SampleOptions& options, qkv::Generator& gen);

}  // namespace lm
