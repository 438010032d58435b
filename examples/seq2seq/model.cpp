#include "examples/seq2seq/model.h"

#include <algorithm>
#include <string>

#include "autograd/grad_mode.h"
#include "tensor/error.h"

namespace seq2seq {

using qkv::nn::GRUOptions;

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

Seq2Seq::Seq2Seq(const ModelConfig& c) : config(c) {
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

std::vector<Translation> greedy_decode(Seq2Seq& model, const std::vector<std::vector<int64_t>>& sources,
                                       int64_t bos_id, int64_t eos_id, int64_t pad_id, int64_t max_len) {
  if (max_len < 1)
    throw qkv::ValueError("greedy_decode: max_len must be >= 1, got " + std::to_string(max_len));
  const PaddedBatch src = pad_batch(sources, pad_id);
  const int64_t B = src.ids.size(0), T = src.ids.size(1);
  const bool was_training = model.is_training();
  model.eval();
  qkv::NoGradGuard no_grad;
  DecoderState state = model.decoder->init_state(model.encoder->forward(src.ids), src.valid_lens);
  std::vector<Translation> out(B);
  std::vector<bool> done(B, false);
  IndexTensor dec_input = IndexTensor::full({B, 1}, bos_id);
  for (int64_t step = 0; step < max_len; ++step) {
    const IndexTensor next = model.decoder->forward(dec_input, state).argmax(-1);  // (B, 1)
    const Tensor weights = model.decoder->attention_weights.back().contiguous();   // (B, 1, T)
    const float* w = weights.data();
    bool all_done = true;
    for (int64_t b = 0; b < B; ++b) {
      if (done[b]) continue;
      out[b].ids.push_back(next[b]);
      out[b].attention.emplace_back(w + b * T, w + b * T + src.valid_lens[b]);
      done[b] = next[b] == eos_id;
      all_done = all_done && done[b];
    }
    if (all_done) break;
    dec_input = next;
  }
  model.train(was_training);
  return out;
}

}  // namespace seq2seq
