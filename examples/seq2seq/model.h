// The two encoder–decoders of the seq2seq example, behind one interface (Translator) that training
// and decoding use, whichever is chosen (--model):
//
// gru          d2l's encoder-decoder with Bahdanau attention (d2l 10.4, "Bahdanau Attention"; zh 10.4):
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
// transformer  the encoder–decoder Transformer of "Attention Is All You Need" (d2l 11.7):
//             nn::Transformer (nn/transformer_decoder.h), L encoder and L decoder blocks of width H
//             with `heads` heads and an FFN of `ffn` hidden units, sinusoidal positions; the decoder's
//             cross-attention is where each output step reads the source.
//
// Letters: B batch, T source steps, S target steps, E embedding width, H hidden width, L layers,
// V vocabulary size. The GRUs are batch_first, so nothing is permuted; d2l's are time-major and
// permute around them, which is the same computation. Like d2l's, the GRU encoder reads padding too
// (no packed sequences): only the attention masks it, by the source valid lengths.
//
// Decoding is nn/decoding.h's greedy or beam search over a model's StepModel: the GRU's state is
// its hidden state and the encoder's outputs, the Transformer's its DecoderCache.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/attention.h"
#include "nn/decoding.h"
#include "nn/embedding.h"
#include "nn/gru.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/transformer_decoder.h"

namespace seq2seq {

using qkv::IndexTensor;
using qkv::Tensor;

struct ModelConfig {
  std::string kind = "gru";                    // "gru" or "transformer"
  int64_t source_vocab = 0, target_vocab = 0;  // V_src, V_tgt
  int64_t embed_size = 32;                     // E (the GRU's; the Transformer embeds into H)
  int64_t num_hiddens = 64;                    // H
  int64_t num_layers = 2;                      // L, in the encoder and in the decoder
  int64_t num_heads = 4;                       // the Transformer's
  int64_t ffn_num_hiddens = 256;               // the Transformer's
  float dropout = 0.1f;  // GRU: between layers and on the attention weights, as d2l's; Transformer: d2l's places
};

// The names of the models, for --model.
inline const std::vector<std::string> kModels = {"gru", "transformer"};

// The longest source or target a model takes, in tokens with <eos>: the Transformer's positions cover it.
inline constexpr int64_t kMaxPositions = 128;

// A batch of id sequences of different lengths, padded to the longest.
struct PaddedBatch {
  IndexTensor ids;         // (B, T), pad_id past each sequence's end
  IndexTensor valid_lens;  // (B)
};
// Throws qkv::ValueError for no sequences or an empty one.
PaddedBatch pad_batch(const std::vector<std::vector<int64_t>>& sequences, int64_t pad_id);

// One figure panel of a forward's attention over the source: a name ("layer 2, head 1") and the
// weights (B, S, T), a row per output step.
struct AttentionMap {
  std::string name;
  Tensor weights;
};

// What training and decoding need of a model, whichever it is.
class Translator : public qkv::nn::Module {
 public:
  // Teacher forcing: src (B, T), src_valid_lens (B), dec_input (B, S) = <bos> then the target
  // shifted right  →  logits (B, S, V_tgt).
  virtual Tensor forward(const IndexTensor& src, const IndexTensor& src_valid_lens, const IndexTensor& dec_input) = 0;
  // For decoding the sources `src` in eval mode without a graph: the model's state, one row per
  // source, behind nn/decoding.h's StepModel, for outputs of up to max_len tokens.
  virtual qkv::nn::StepModel start_decoding(const PaddedBatch& src, int64_t max_len) = 0;
  // The attention over the source of the last forward, one map per panel (per layer and head).
  virtual std::vector<AttentionMap> source_attention() const = 0;

  ModelConfig config;
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

// d2l's EncoderDecoder with the GRU parts: parameters named encoder.* and decoder.* (e.g.
// "decoder.attention.W_q.weight", "encoder.rnn.weight_ih_l0").
class Seq2Seq : public Translator {
 public:
  explicit Seq2Seq(const ModelConfig& config);
  Tensor forward(const IndexTensor& src, const IndexTensor& src_valid_lens, const IndexTensor& dec_input) override;
  qkv::nn::StepModel start_decoding(const PaddedBatch& src, int64_t max_len) override;
  std::vector<AttentionMap> source_attention() const override;  // one map: the additive attention's

  std::shared_ptr<Seq2SeqEncoder> encoder;
  std::shared_ptr<Seq2SeqAttentionDecoder> decoder;
};

// The encoder–decoder Transformer: parameters named transformer.encoder.* and transformer.decoder.*.
class TransformerSeq2Seq : public Translator {
 public:
  explicit TransformerSeq2Seq(const ModelConfig& config);
  Tensor forward(const IndexTensor& src, const IndexTensor& src_valid_lens, const IndexTensor& dec_input) override;
  qkv::nn::StepModel start_decoding(const PaddedBatch& src, int64_t max_len) override;
  std::vector<AttentionMap> source_attention() const override;  // per decoder layer and head

  std::shared_ptr<qkv::nn::Transformer> transformer;
};

// The model config.kind names, checked: ValueError naming the kind otherwise.
std::unique_ptr<Translator> make_translator(const ModelConfig& config);

// How to decode: the ids that start and end an output, and nn/decoding.h's search (beam 1: greedy).
struct DecodeOptions {
  int64_t bos = 0, eos = 0, pad = 0;
  int64_t max_len = 16;  // output tokens at most, <eos> included
  int64_t beam = 1, n_best = 1;
  double length_penalty = 0;
};

// The n_best outputs of each source (id sequences with <eos>, of any lengths), best first: greedy
// search with beam 1 (d2l's predict_seq2seq, for a batch), beam search otherwise. Runs without
// recording a graph, in eval mode, and leaves the model in the mode it found it in. Throws
// qkv::ValueError for no sources, an empty one or a bad option.
std::vector<std::vector<qkv::nn::Hypothesis>> translate(Translator& model,
                                                        const std::vector<std::vector<int64_t>>& sources,
                                                        const DecodeOptions& options);

// The attention over `source` with which the model produced `output` (ids, <eos> included if it
// was): a teacher-forced forward on the output, whose rows are the decoding steps', (S, T_valid) per map.
std::vector<AttentionMap> attention_of(Translator& model, const std::vector<int64_t>& source,
                                       const std::vector<int64_t>& output, int64_t bos);

}  // namespace seq2seq
