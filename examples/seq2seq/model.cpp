#include "examples/seq2seq/model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "autograd/grad_mode.h"
#include "nn/init.h"
#include "tensor/error.h"

namespace seq2seq {

using qkv::nn::GRUOptions;

namespace {

// Eval mode for a scope, and the mode the model had back after it, however the scope is left.
class EvalScope {
 public:
  explicit EvalScope(qkv::nn::Module& m) : model_(m), was_training_(m.is_training()) { m.eval(); }
  ~EvalScope() { model_.train(was_training_); }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  qkv::nn::Module& model_;
  bool was_training_;
};

}  // namespace

Seq2SeqEncoder::Seq2SeqEncoder(const ModelConfig& c) {
  embedding =
      register_module("embedding", std::make_shared<qkv::nn::Embedding>(c.source_vocab, c.embed_size));
  rnn = register_module(
      "rnn", std::make_shared<qkv::nn::GRU>(
                 c.embed_size, c.num_hiddens,
                 GRUOptions{.num_layers = c.num_layers, .batch_first = true, .dropout = c.dropout}));
}

qkv::nn::GRUOutput Seq2SeqEncoder::forward(const IndexTensor& X) const {
  return rnn->forward(embedding->forward(X));  // (B, T) → (B, T, E) → (B, T, H), (L, B, H)
}

Seq2SeqAttentionDecoder::Seq2SeqAttentionDecoder(const ModelConfig& c) {
  attention = register_module("attention", std::make_shared<qkv::nn::AdditiveAttention>(
                                               c.num_hiddens, c.num_hiddens, c.num_hiddens, c.dropout));
  embedding =
      register_module("embedding", std::make_shared<qkv::nn::Embedding>(c.target_vocab, c.embed_size));
  rnn = register_module(
      "rnn", std::make_shared<qkv::nn::GRU>(
                 c.embed_size + c.num_hiddens, c.num_hiddens,
                 GRUOptions{.num_layers = c.num_layers, .batch_first = true, .dropout = c.dropout}));
  dense = register_module("dense", std::make_shared<qkv::nn::Linear>(c.num_hiddens, c.target_vocab));
}

DecoderState Seq2SeqAttentionDecoder::init_state(const qkv::nn::GRUOutput& enc,
                                                 const IndexTensor& enc_valid_lens) const {
  // d2l's AdditiveAttention applies W_k to the keys at every step; they do not change, so they are
  // projected here once (the same values and gradients; nn/attention.h).
  return {enc.output, attention->project_keys(enc.output), enc.h_n, enc_valid_lens};
}

Tensor Seq2SeqAttentionDecoder::forward(const IndexTensor& X, DecoderState& state) {
  const Tensor embedded = embedding->forward(X);  // (B, S, E)
  const int64_t S = embedded.size(1), L = state.hidden.size(0);
  std::vector<Tensor> outputs;
  attention_weights.clear();
  for (int64_t t = 0; t < S; ++t) {
    const Tensor query = state.hidden.select(0, L - 1).unsqueeze(1);  // (B, 1, H)
    const Tensor context = attention->forward_projected(query, state.enc_keys, state.enc_outputs,
                                                        state.enc_valid_lens);  // (B, 1, H)
    const Tensor x = qkv::cat({context, embedded.narrow(1, t, 1)}, -1);         // (B, 1, H + E)
    qkv::nn::GRUOutput out = rnn->forward(x, state.hidden);
    outputs.push_back(out.output);  // (B, 1, H)
    state.hidden = out.h_n;
    attention_weights.push_back(attention->attention_weights);
  }
  return dense->forward(qkv::cat(outputs, 1));  // (B, S, H) → (B, S, V)
}

Seq2Seq::Seq2Seq(const ModelConfig& c) {
  config = c;
  if (c.source_vocab < 1 || c.target_vocab < 1 || c.embed_size < 1 || c.num_hiddens < 1 || c.num_layers < 1)
    throw qkv::ValueError("Seq2Seq: vocabulary sizes, embed_size, num_hiddens and num_layers must be >= 1");
  encoder = register_module("encoder", std::make_shared<Seq2SeqEncoder>(c));
  decoder = register_module("decoder", std::make_shared<Seq2SeqAttentionDecoder>(c));
}

Tensor Seq2Seq::forward(const IndexTensor& src, const IndexTensor& src_valid_lens,
                        const IndexTensor& dec_input) {
  DecoderState state = decoder->init_state(encoder->forward(src), src_valid_lens);
  return decoder->forward(dec_input, state);
}

qkv::nn::StepModel Seq2Seq::start_decoding(const PaddedBatch& src, int64_t) {
  auto state = std::make_shared<DecoderState>(decoder->init_state(encoder->forward(src.ids), src.valid_lens));
  return {[this, state](const std::vector<int64_t>& last) {
            const auto N = static_cast<int64_t>(last.size());
            return decoder->forward(IndexTensor(last, {N, 1}), *state).reshape({N, config.target_vocab});
          },
          [state](const std::vector<int64_t>& rows) {
            const IndexTensor r(rows);
            std::vector<int64_t> lens;
            for (int64_t i : rows) lens.push_back(state->enc_valid_lens[i]);
            *state = {state->enc_outputs.index_select(0, r), state->enc_keys.index_select(0, r),
                      state->hidden.index_select(1, r), IndexTensor(std::move(lens))};
          }};
}

std::vector<AttentionMap> Seq2Seq::source_attention() const {
  return {{"additive attention", qkv::cat(decoder->attention_weights, 1)}};  // S steps of (B, 1, T)
}

TransformerSeq2Seq::TransformerSeq2Seq(const ModelConfig& c) {
  config = c;
  if (c.num_heads < 1 || c.num_hiddens % c.num_heads != 0)
    throw qkv::ValueError("TransformerSeq2Seq: hidden " + std::to_string(c.num_hiddens) +
                          " must be a positive multiple of heads " + std::to_string(c.num_heads));
  // The two stacks' options: the same sizes, pre-norm (it trains without a long warm-up), positions
  // covering the longest sequence.
  const auto sized = [&](auto o, int64_t vocab) {
    o.vocab_size = vocab, o.num_hiddens = c.num_hiddens, o.ffn_num_hiddens = c.ffn_num_hiddens;
    o.num_heads = c.num_heads, o.num_layers = c.num_layers, o.dropout = c.dropout;
    o.max_len = kMaxPositions, o.norm = qkv::nn::NormPlacement::Pre;
    return o;
  };
  const auto encoder = sized(qkv::nn::TransformerEncoderOptions{}, c.source_vocab);
  const auto decoder = sized(qkv::nn::TransformerDecoderOptions{}, c.target_vocab);
  transformer = register_module("transformer", std::make_shared<qkv::nn::Transformer>(encoder, decoder));
  // The embeddings start at N(0, 1/D), as the paper's (shared with the output layer) do, so that
  // scaled by √D they are of unit size, as the positional encoding is. At N(0, 1) the scaled
  // embedding is √D times the positions and a letter's place is learned slowly, yet in G2P the
  // alignment of letters to phonemes is the whole task.
  const float std = 1.0f / std::sqrt(static_cast<float>(c.num_hiddens));
  qkv::nn::init::normal_(transformer->encoder->embedding->weight, 0.0f, std);
  qkv::nn::init::normal_(transformer->decoder->embedding->weight, 0.0f, std);
}

Tensor TransformerSeq2Seq::forward(const IndexTensor& src, const IndexTensor& src_valid_lens,
                                   const IndexTensor& dec_input) {
  return transformer->forward(src, src_valid_lens, dec_input);
}

qkv::nn::StepModel TransformerSeq2Seq::start_decoding(const PaddedBatch& src, int64_t max_len) {
  auto cache = std::make_shared<qkv::nn::DecoderCache>(transformer->start_decoding(src.ids, src.valid_lens, max_len));
  return {[this, cache](const std::vector<int64_t>& last) {
            const auto N = static_cast<int64_t>(last.size());
            return transformer->decoder->forward_step(IndexTensor(last, {N, 1}), *cache).reshape({N, config.target_vocab});
          },
          [cache](const std::vector<int64_t>& rows) { cache->select_rows(IndexTensor(rows)); }};
}

std::vector<AttentionMap> TransformerSeq2Seq::source_attention() const {
  std::vector<AttentionMap> maps;
  const std::vector<Tensor> layers = transformer->decoder->cross_attention_weights();  // (B, H, S, T) each
  for (size_t l = 0; l < layers.size(); ++l)
    for (int64_t h = 0; h < layers[l].size(1); ++h)
      maps.push_back({"layer " + std::to_string(l + 1) + ", head " + std::to_string(h + 1), layers[l].select(1, h)});
  return maps;
}

std::unique_ptr<Translator> make_translator(const ModelConfig& config) {
  if (config.kind == "gru") return std::make_unique<Seq2Seq>(config);
  if (config.kind == "transformer") return std::make_unique<TransformerSeq2Seq>(config);
  throw qkv::ValueError("model '" + config.kind + "' is not one of gru, transformer");
}

PaddedBatch pad_batch(const std::vector<std::vector<int64_t>>& sequences, int64_t pad_id) {
  if (sequences.empty()) throw qkv::ValueError("pad_batch: no sequences");
  int64_t T = 0;
  for (const auto& s : sequences) {
    if (s.empty()) throw qkv::ValueError("pad_batch: an empty sequence");
    T = std::max<int64_t>(T, static_cast<int64_t>(s.size()));
  }
  const auto B = static_cast<int64_t>(sequences.size());
  std::vector<int64_t> ids(B * T, pad_id), lens(B);
  for (int64_t b = 0; b < B; ++b) {
    std::copy(sequences[b].begin(), sequences[b].end(), ids.begin() + b * T);
    lens[b] = static_cast<int64_t>(sequences[b].size());
  }
  return {IndexTensor(std::move(ids), {B, T}), IndexTensor(std::move(lens))};
}

std::vector<std::vector<qkv::nn::Hypothesis>> translate(Translator& model,
                                                        const std::vector<std::vector<int64_t>>& sources,
                                                        const DecodeOptions& o) {
  const PaddedBatch src = pad_batch(sources, o.pad);
  const qkv::nn::SearchOptions search{.bos = o.bos, .eos = o.eos, .max_len = o.max_len, .beam_size = o.beam,
                                      .n_best = o.n_best, .length_penalty = o.length_penalty};
  const EvalScope eval(model);
  qkv::NoGradGuard no_grad;
  const qkv::nn::StepModel steps = model.start_decoding(src, o.max_len);
  const auto B = static_cast<int64_t>(sources.size());
  if (o.beam > 1 || o.n_best > 1) return qkv::nn::beam_search(steps, B, search);
  std::vector<std::vector<qkv::nn::Hypothesis>> out;
  for (qkv::nn::Hypothesis& h : qkv::nn::greedy_search(steps, B, search)) out.push_back({std::move(h)});
  return out;
}

std::vector<AttentionMap> attention_of(Translator& model, const std::vector<int64_t>& source,
                                       const std::vector<int64_t>& output, int64_t bos) {
  if (output.empty()) throw qkv::ValueError("attention_of: an empty output has no attention");
  const PaddedBatch src = pad_batch({source}, 0);
  std::vector<int64_t> input{bos};
  input.insert(input.end(), output.begin(), output.end() - 1);
  const EvalScope eval(model);
  qkv::NoGradGuard no_grad;
  model.forward(src.ids, src.valid_lens, IndexTensor(input, {1, static_cast<int64_t>(input.size())}));
  std::vector<AttentionMap> maps = model.source_attention();
  for (AttentionMap& m : maps) m.weights = m.weights.select(0, 0);  // (S, T)
  return maps;
}

}  // namespace seq2seq
