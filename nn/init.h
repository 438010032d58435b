// Parameter initialization, in place, with PyTorch's formulas (torch.nn.init). Each draws from the
// default generator unless one is given, and runs without recording gradients.
//
// fan_in / fan_out of a weight of shape (out, in, ...) are in·receptive and out·receptive, where
// receptive is the product of the dims after the first two (1 for a Linear weight).
#pragma once

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace qkv::nn::init {

void zeros_(Tensor& t);
void ones_(Tensor& t);
void constant_(Tensor& t, float value);
void uniform_(Tensor& t, float lo, float hi, Generator* gen = nullptr);
void normal_(Tensor& t, float mean = 0.0f, float std = 1.0f, Generator* gen = nullptr);
// U(-b, b) with b = gain·sqrt(6 / (fan_in + fan_out))   (Glorot & Bengio 2010)
void xavier_uniform_(Tensor& t, float gain = 1.0f, Generator* gen = nullptr);
// N(0, s²) with s = gain·sqrt(2 / (fan_in + fan_out))
void xavier_normal_(Tensor& t, float gain = 1.0f, Generator* gen = nullptr);
// U(-b, b) with b = gain·sqrt(3 / fan_in), gain = sqrt(2 / (1 + a²))   (He et al. 2015). With
// a = sqrt(5) this is PyTorch's default for Linear weights: b = 1/sqrt(fan_in).
void kaiming_uniform_(Tensor& t, float a = 0.0f, Generator* gen = nullptr);

int64_t fan_in(const Tensor& t);
int64_t fan_out(const Tensor& t);

}  // namespace qkv::nn::init
