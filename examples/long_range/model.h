// The long_range model: a small Transformer encoder (nn/transformer.h) and a linear tag head, one
// tag per token, whose attention is one of four mechanisms:
//   dense      softmax over every key, O(T²) time and memory (Vaswani et al. 2017)
//   window     dense attention restricted to keys within ±w of the query, computed on the band,
//              O(T·w) (the local attention Long Range Arena compares, Tay et al. 2021)
//   performer  FAVOR+ positive orthogonal random features, m of them, O(T·m) (Choromanski et al.
//              2021; nn/performer.h)
//   linformer  keys and values projected along the sequence to k rows, O(T·k) (Wang et al. 2020;
//              nn/linformer.h); its projections are built for --length tokens and refuse longer
//
//   ids (B, T), valid_lens (B) → Embedding·√D + sinusoidal positions → pre-norm blocks → LayerNorm
//   → Linear(D, V): logits (B, T, V)
// Pre-norm, so that training needs no long warm-up (Xiong et al. 2020); no dropout, since every
// training batch is freshly generated and cannot be memorized.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "examples/long_range/task.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/transformer.h"

namespace long_range {

using qkv::Tensor;

struct ModelOptions {
  std::string attention = "dense";  // one of mechanisms()
  int64_t window = 32;              // window: attend within ±window tokens
  int64_t features = 0;             // performer: m; linformer: k (0: the mechanism's default)
  int64_t d_model = 32, heads = 2, layers = 2;
};

// dense, window, performer, linformer.
const std::vector<std::string>& mechanisms();
// "dense, window, performer or linformer"
std::string mechanism_list();

// ValueError naming the option and what it expects: an unknown --attention; --d-model not a
// multiple of --heads or out of range; --window outside 1 .. length−1; --features outside the
// mechanism's range (performer 1 .. kMaxFeatures, linformer 1 .. length).
void check_model(const ModelOptions& model, const TaskOptions& task);
constexpr int64_t kMaxFeatures = 4096;

class TaggerModel : public qkv::nn::Module {
 public:
  TaggerModel(const ModelOptions& model, const TaskOptions& task);
  // ids (B, T), valid_lens (B) → logits (B, T, V).
  Tensor forward(const IndexTensor& ids, const IndexTensor& valid_lens);

  std::shared_ptr<qkv::nn::TransformerEncoder> encoder;
  std::shared_ptr<qkv::nn::Linear> head;
};

}  // namespace long_range
