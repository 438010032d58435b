#include "nn/functional/pooling.h"
#include "autograd/ops/reduce.h"

namespace qkv::nn::functional {

Tensor masked_max(const Tensor& x, const IndexTensor& valid_lens) {
  return qkv::masked_max(x, valid_lens);  // the fused op of autograd/ops/reduce.cpp
}

}  // namespace qkv::nn::functional
