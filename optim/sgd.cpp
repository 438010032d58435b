#include "optim/sgd.h"

#include "tensor/kernels/parallel.h"

namespace qkv::optim {

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(std::vector<ParamGroup>{{.params = std::move(params)}}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& options)
    : Optimizer("SGD", std::move(groups), options.lr, options.weight_decay,
                options.momentum != 0.0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{}),
      options_(options) {
  require(options.momentum >= 0.0, "invalid momentum " + format(options.momentum));
  require(!options.nesterov || (options.momentum > 0.0 && options.dampening == 0.0),
          "Nesterov momentum requires a momentum and zero dampening");
}

void SGD::update(float* p, const float* g, int64_t n, double lr, double weight_decay, ParamState& state) {
  // Scalars in float, as PyTorch's kernels use them with float tensors.
  const float wd = static_cast<float>(weight_decay), mu = static_cast<float>(options_.momentum);
  const float keep = static_cast<float>(1.0 - options_.dampening), step = static_cast<float>(-lr);
  const bool nesterov = options_.nesterov, first = state.step == 1;
  float* buf = mu != 0.0f ? state.buffers[0].data() : nullptr;
  kernels::parallel_for(n, n * 4, [=](int64_t begin, int64_t end) {  // by value: see adam.cpp
    for (int64_t i = begin; i < end; ++i) {
      float d = g[i];
      if (wd != 0.0f) d = d + wd * p[i];
      if (buf) {
        buf[i] = first ? d : buf[i] * mu + keep * d;
        d = nesterov ? d + mu * buf[i] : buf[i];
      }
      p[i] = p[i] + step * d;
    }
  });
}

}  // namespace qkv::optim
