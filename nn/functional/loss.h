// Loss functions, with the semantics of torch.nn.functional (reduction, ignore_index, class
// weights, label smoothing), and sequence_cross_entropy for padded batches of sequences.
//
// Options are structs, so a call names what it changes (C++20 designated initializers):
//   cross_entropy(logits, targets, {.ignore_index = pad, .label_smoothing = 0.1f})
#pragma once

#include <cstdint>

#include "tensor/index_tensor.h"
#include "tensor/tensor.h"

namespace qkv::nn::functional {

// What a loss returns: the per-element losses (None), their mean, or their sum.
enum class Reduction { None, Mean, Sum };

struct CrossEntropyOptions {
  Tensor weight{};               // (C) per-class weights; undefined for all ones
  int64_t ignore_index = -100;   // elements with this target contribute nothing
  float label_smoothing = 0.0f;  // ε in [0, 1]
  Reduction reduction = Reduction::Mean;
  int64_t class_dim = -1;        // the dim of class scores; 1 for PyTorch's (N, C, d1, ...) layout
};

// Cross-entropy of logits against class targets, like torch.nn.functional.cross_entropy.
// Logits are (..., C) and targets (...): the classes are in the LAST dim, the layout of a tagger's
// (B, T, C) output. PyTorch puts them in dim 1, (N, C, d1, ...), which is class_dim = 1 here;
// for (N, C) the two agree. Per element, with label smoothing ε and class weights w (PyTorch's
// formula, including how the weights enter the smoothing term):
//   loss = (1-ε)·w[y]·(-log p[y]) + (ε/C)·Σ_c w[c]·(-log p[c]),   p = softmax(logits)
// and 0 where y == ignore_index. Mean divides the sum by Σ w[y] over the elements not ignored
// (their count when unweighted): a batch with every target ignored gives NaN, as in PyTorch.
// Log-softmax and NLL are fused into one node (softmax_cross_entropy, tensor/tensor.h).
// A target outside [0, C) that is not ignore_index throws IndexError.
Tensor cross_entropy(const Tensor& logits, const IndexTensor& target, const CrossEntropyOptions& options = {});

struct NLLLossOptions {
  Tensor weight{};               // (C) per-class weights; undefined for all ones
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::Mean;
  int64_t class_dim = -1;
};

// Negative log-likelihood of log-probabilities (..., C) against targets (...), like
// torch.nn.functional.nll_loss: loss = -w[y]·log_probs[y], 0 where ignored, and the weighted mean
// of cross_entropy. Composed from gather and a product, so nll_loss(log_softmax(x, -1), y) is the
// unfused form of cross_entropy(x, y).
Tensor nll_loss(const Tensor& log_probs, const IndexTensor& target, const NLLLossOptions& options = {});

// (input - target)², reduced. Input and target must have the same shape (PyTorch broadcasts them
// with a warning that the result is probably wrong; here it is an error).
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

struct BCEWithLogitsOptions {
  Tensor weight{};      // rescales each element's loss; broadcasts to the input
  Tensor pos_weight{};  // weight of the positive term; broadcasts to the input, typically (C)
  Reduction reduction = Reduction::Mean;
};

// Binary cross-entropy of logits x against targets y in [0, 1] of x's shape, like
// torch.nn.functional.binary_cross_entropy_with_logits, in the form that never overflows:
//   max(x, 0) - x·y + log(1 + e^-|x|)
// and with pos_weight p:  (1-y)·x + (1 + (p-1)·y)·(max(-x, 0) + log(1 + e^-|x|)).
// Mean is over all elements, whatever the weights.
Tensor binary_cross_entropy_with_logits(const Tensor& x, const Tensor& target,
                                        const BCEWithLogitsOptions& options = {});

// Cross-entropy of a padded batch of sequences: logits (B, T, C), targets (B, T), valid_lens (B).
// Step t of sequence b is real when t < valid_lens[b] and padding otherwise, whatever its target
// holds. Returns the mean over the real tokens,
//   Σ_{b,t} loss[b,t]·mask[b,t] / Σ_{b,t} mask[b,t],
// a scalar whose exp is the perplexity. d2l's MaskedSoftmaxCELoss (d2l 0.17, "Sequence to
// Sequence Learning") differs: it returns one loss per sequence, (loss·mask).mean(dim=1), which
// divides each masked sum by T, padded steps included. So d2l's loss of a sequence shrinks as its
// padding grows, and averaging it over the batch weighs sequences, not tokens, equally. Here
// every real token weighs the same and padding never dilutes the loss.
// Targets of real steps must be in [0, C); at least one step must be real.
Tensor sequence_cross_entropy(const Tensor& logits, const IndexTensor& targets, const IndexTensor& valid_lens,
                              float label_smoothing = 0.0f);

}  // namespace qkv::nn::functional
