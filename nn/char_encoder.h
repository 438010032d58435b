// CharEncoder: a word represented by its characters, with a convolution over them and max pooling.
// dos Santos & Zadrozny 2014 ("Learning Character-level Representations for Part-of-Speech
// Tagging") and Ma & Hovy 2016 ("End-to-end Sequence Labeling via Bi-directional LSTM-CNNs-CRF")
// tag with it; Kim et al. 2016 ("Character-Aware Neural Language Models") model language with it:
//
//   chars (N, L) ─ Embedding(num_chars, char_dim, padding_idx 0) → (N, L, char_dim)
//                ─ Conv1d(char_dim, filters, kernel_size, padding kernel_size / 2) → (N, L, filters)
//                ─ relu (or tanh) ─ max over each word's first lengths[n] positions → (N, filters)
//
//   chars: IndexTensor (N, L) of character ids, L the longest word of the batch; a word of length
//          n holds its ids at positions [0, n) and the padding id 0 at [n, L)
//   lengths: IndexTensor (N), values in [0, L]
//   → (N, filters)
// or with leading dims: chars (B, T, L) and lengths (B, T) → (B, T, filters), for sentences of T
// tokens; any number of leading dims is accepted.
//
// Padding is kept out of the result twice over. Inside a word, the convolution at the last
// characters reads padding positions, and those read zeros: row 0 of the embedding is zero and never
// trained (padding_idx), exactly the zero padding the convolution adds past L. And the max reads
// only the positions [0, lengths[n]). So a word's encoding is the same whatever L, i.e. whatever
// the other words of its batch. An id other than 0 at or past a word's length throws ValueError:
// it would leak into the last window. (Loading a state dict whose embedding row 0 is not zero would
// break this too; PyTorch's padding_idx has the same contract.)
//
// A length of 0 marks an empty slot, such as a padding token of a sentence batch: its encoding is
// the zero vector, and it takes no part in the computation (nor gets any gradient).
//
// Two shortcuts keep it fast, and neither changes what is computed. The convolution's products are
// computed at the valid positions only, one product over the Σ lengths windows instead of all N·L,
// since the max would not read the others (bench_char_encoder; docs/PERFORMANCE.md). And relu and tanh are
// nondecreasing, so max_l f(h_l) = f(max_l h_l): the activation is applied after the max, to L
// times fewer values (PyTorch's order gives the gradient to the first position of the maximum; so
// does this one).
//
// kernel_size must be odd, so that output position t is centred on character t.
// Parameters: embedding.weight (num_chars, char_dim), conv.weight (filters, char_dim, kernel_size),
// conv.bias (filters), as the same PyTorch model names them.
#pragma once

#include <memory>

#include "nn/conv1d.h"
#include "nn/embedding.h"
#include "nn/module.h"

namespace qkv::nn {

class CharEncoder : public Module {
 public:
  enum class Nonlinearity { ReLU, Tanh };

  CharEncoder(int64_t num_chars, int64_t char_dim, int64_t filters, int64_t kernel_size = 3,
              Nonlinearity nonlinearity = Nonlinearity::ReLU);
  Tensor forward(const IndexTensor& chars, const IndexTensor& lengths) const;
  std::string extra_repr() const override;

  int64_t num_chars, char_dim, filters, kernel_size;
  Nonlinearity nonlinearity;
  std::shared_ptr<Embedding> embedding;
  std::shared_ptr<Conv1d> conv;

 private:
  // words (M, L) with every length in [1, L] → (M, filters)
  Tensor encode(const IndexTensor& words, const IndexTensor& lengths) const;
};

}  // namespace qkv::nn
