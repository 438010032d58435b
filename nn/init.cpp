#include "nn/init.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn::init {
namespace {

void fill_from(Tensor& t, const Tensor& values) {
  NoGradGuard no_grad;
  t.copy_(values);
}

void need_2d(const Tensor& t, const char* op) {
  if (t.dim() < 2)
    throw ShapeError(std::string(op) + ": fan in and fan out need a tensor of 2 or more dims, got shape " +
                     shape_str(t.shape()));
}

}  // namespace

int64_t fan_in(const Tensor& t) {
  need_2d(t, "fan_in");
  return t.numel() / t.size(0);
}

int64_t fan_out(const Tensor& t) {
  need_2d(t, "fan_out");
  return t.numel() / t.size(1);
}

void zeros_(Tensor& t) { constant_(t, 0.0f); }
void ones_(Tensor& t) { constant_(t, 1.0f); }

void constant_(Tensor& t, float value) {
  NoGradGuard no_grad;
  t.fill_(value);
}

void uniform_(Tensor& t, float lo, float hi, Generator* gen) {
  fill_from(t, qkv::uniform(t.shape(), lo, hi, false, gen));
}

void normal_(Tensor& t, float mean, float std, Generator* gen) {
  fill_from(t, qkv::normal(t.shape(), mean, std, false, gen));
}

void xavier_uniform_(Tensor& t, float gain, Generator* gen) {
  const float bound = gain * std::sqrt(6.0f / static_cast<float>(fan_in(t) + fan_out(t)));
  uniform_(t, -bound, bound, gen);
}

void xavier_normal_(Tensor& t, float gain, Generator* gen) {
  normal_(t, 0.0f, gain * std::sqrt(2.0f / static_cast<float>(fan_in(t) + fan_out(t))), gen);
}

void kaiming_uniform_(Tensor& t, float a, Generator* gen) {
  const float gain = std::sqrt(2.0f / (1.0f + a * a));
  const float bound = gain * std::sqrt(3.0f / static_cast<float>(fan_in(t)));
  uniform_(t, -bound, bound, gen);
}

}  // namespace qkv::nn::init
