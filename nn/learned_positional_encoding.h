// Learned absolute positional encoding (BERT, Devlin et al. 2019; GPT, Radford et al. 2018): one
// trained vector per position, added to the token representations; the same interface as the
// sinusoidal PositionalEncoding (nn/positional_encoding.h). Seed 004 states the trade-off: it can fit
// the data, but costs max_len·D parameters and knows nothing past max_len, where the sinusoidal
// table extends to any length.
//
// LearnedPositionalEncoding(num_hiddens, dropout, max_len = 1000):
//   X: (B, T, D) with D = num_hiddens, T <= max_len  →  dropout(X + weight[:T]): (B, T, D)
//   weight: (max_len, D), a parameter, the rows of a torch.nn.Embedding(max_len, D) looked up at
//   0..T-1, like BERT's position_embeddings and GPT-2's wpe: a table trained there loads as weight.
//
// Initialization N(0, 0.02²), with BERT's and GPT-2's initializer_range of 0.02, rather
// than nn.Embedding's N(0, 1). Next to token embeddings of N(0, 1) features (nn::Embedding, which
// d2l's Transformer also scales by √D), a position vector starts as a small perturbation instead of
// noise as large as the token itself, and grows as far as the loss asks for it. (nn::init::normal_
// on weight sets another scale.)
#pragma once

#include <memory>

#include "nn/dropout.h"
#include "nn/module.h"

namespace qkv::nn {

class LearnedPositionalEncoding : public Module {
 public:
  LearnedPositionalEncoding(int64_t num_hiddens, float dropout, int64_t max_len = 1000);
  // offset: X holds positions offset .. offset + T − 1 (decoding with a key/value cache).
  Tensor forward(const Tensor& X, int64_t offset = 0) const;
  std::string extra_repr() const override;

  int64_t num_hiddens, max_len;
  Tensor weight;  // (max_len, num_hiddens)
  std::shared_ptr<Dropout> dropout;
};

}  // namespace qkv::nn
