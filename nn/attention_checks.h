// The checks an attention layer makes of its arguments before it computes anything, shared by the
// layers of nn/attention.h and the mechanisms of nn/attention_interface.h. Each error names the
// layer by its place in the model (Module::where()), not the op the configuration happens to run.
#pragma once

#include <cstdint>

#include "nn/module.h"

namespace qkv::nn {

// Throws ValueError unless the dropout probability p is in [0, 1); `layer` opens the message.
void check_dropout(const char* layer, float p);

// Throws ShapeError unless x is (B, T, features), for the given batch size (any when B < 0).
// `what` names x in the message ("queries").
void check_input(const Module& layer, const char* what, const Tensor& x, int64_t B, int64_t features);

// Throws ShapeError unless values (B, K, dv) pair with keys (B, K, ·).
void check_keys_values(const Module& layer, const Tensor& keys, const Tensor& values);

// valid_lens as the attention layers take it: undefined, (B) or, unless `per_example_only` says why
// not (a window, computed on the band), (B, Q); each length from 0 to K. Throws ShapeError or
// IndexError otherwise.
void check_valid_lens(const Module& layer, const IndexTensor& valid_lens, int64_t B, int64_t Q, int64_t K,
                      const char* per_example_only = nullptr);

}  // namespace qkv::nn
