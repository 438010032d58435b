// d2l's encoder-decoder with Bahdanau attention (d2l 10.4, "Bahdanau Attention"; zh 10.4):
//
//   encoder   Seq2SeqEncoder: Embedding(V_src, E) → GRU(E, H, L layers)
//             outputs (B, T, H): the top layer's state at every source step, the keys and values
//             state   (L, B, H): every layer's final state, the decoder's initial state
//   decoder   Seq2SeqAttentionDecoder, one target step t at a time:
//             query   = top layer's state, (B, 1, H)
//             context = AdditiveAttention(query, outputs, outputs, src_valid_lens), (B, 1, H)
//             x       = [context, Embedding(V_tgt, E)(y_{t-1})], (B, 1, H + E)
//             out, state = GRU(H + E, H, L layers)(x, state)
//             logits  = Linear(H, V_tgt)(out), (B, 1, V_tgt)
//
// Letters: B batch, T source steps, S target steps, E embedding width, H hidden width, L layers,
// V vocabulary size. The GRUs are batch_first, so nothing is permuted; d2l's are time-major and
// permute around them, which is the same computation. Like d2l's, the encoder reads padding too
// (no packed sequences): only the attention masks it, by the source valid lengths.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/gru.h"
#include "nn/linear.h"
#include "nn/module.h"

namespace seq2seq {

using qkv::IndexTensor;
using qkv::Tensor;

struct ModelConfig {
  int64_t source_vocab = 0, target_vocab = 0;  // V_src, V_tgt
  int64_t embed_size = 32;                     // E
  int64_t num_hiddens = 64;                    // H
  int64_t num_layers = 2;                      // L
  float dropout = 0.1f;                        // between GRU layers and on the attention weights, as d2l's
};

class Seq2SeqEncoder : public qkv::nn::Module {
 public:
  explicit Seq2SeqEncoder(const ModelConfig& config);
  // X: (B, T) source ids  →  outputs (B, T, H), state (L, B, H)
  qkv::nn::GRUOutput forward(const IndexTensor& X) const;

  std::shared_ptr<qkv::nn::Embedding> embedding;
  std::shared_ptr<qkv::nn::GRU> rnn;
};

// What the decoder carries from step to step: d2l's `state` list.
struct DecoderState {
  Tensor enc_outputs;          // (B, T, H): the attention's keys and values
  Tensor enc_keys;             // (B, T, H): the keys through the attention's W_k, once for all steps
  Tensor hidden;               // (L, B, H)
  IndexTensor enc_valid_lens;  // (B)
};

class Seq2SeqAttentionDecoder : public qkv::nn::Module {
 public:
  explicit Seq2SeqAttentionDecoder(const ModelConfig& config);
  DecoderState init_state(const qkv::nn::GRUOutput& enc, const IndexTensor& enc_valid_lens) const;
  // X: (B, S) target ids, fed one step at a time  →  logits (B, S, V_tgt); advances state.hidden.
  // Keeps the attention weights of each step in attention_weights: S tensors of (B, 1, T).
  Tensor forward(const IndexTensor& X, DecoderState& state);

  std::shared_ptr<qkv::nn::AdditiveAttention> attention;
  std::shared_ptr<qkv::nn::Embedding> embedding;
  std::shared_ptr<qkv::nn::GRU> rnn;
  std::shared_ptr<qkv::nn::Linear> dense;
  std::vector<Tensor> attention_weights;
};

// d2l's EncoderDecoder: parameters named encoder.* and decoder.* (e.g.
// "decoder.attention.W_q.weight", "encoder.rnn.weight_ih_l0").
class Seq2Seq : public qkv::nn::Module {
 public:
  explicit Seq2Seq(const ModelConfig& config);
  // Teacher forcing: src (B, T), src_valid_lens (B), dec_input (B, S) = <bos> then the target
  // shifted right  →  logits (B, S, V_tgt).
  Tensor forward(const IndexTensor& src, const IndexTensor& src_valid_lens, const IndexTensor& dec_input);

  ModelConfig config;
  std::shared_ptr<Seq2SeqEncoder> encoder;
  std::shared_ptr<Seq2SeqAttentionDecoder> decoder;
};

// A batch of id sequences of different lengths, padded to the longest.
struct PaddedBatch {
  IndexTensor ids;         // (B, T), pad_id past each sequence's end
  IndexTensor valid_lens;  // (B)
};
// Throws qkv::ValueError for no sequences or an empty one.
PaddedBatch pad_batch(const std::vector<std::vector<int64_t>>& sequences, int64_t pad_id);

struct Translation {
  std::vector<int64_t> ids;  // the output, <eos> included if it was produced
  // One row per output id: its step's attention weights over the source's valid tokens.
  std::vector<std::vector<float>> attention;
};

// Greedy decoding (d2l's predict_seq2seq, for a batch): feed <bos>, then each step's argmax,
// until a sequence has produced <eos> or max_len ids. Sources are id sequences (<eos> included),
// of any lengths. Runs without recording a graph, in eval mode, and leaves the model in the mode
// it found it in. Throws qkv::ValueError for no sources, an empty one or max_len < 1.
std::vector<Translation> greedy_decode(Seq2Seq& model, const std::vector<std::vector<int64_t>>& sources,
                                       int64_t bos_id, int64_t eos_id, int64_t pad_id, int64_t max_len);

}  // namespace seq2seq
