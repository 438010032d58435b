#include "nn/rms_norm.h"

#include <sstream>

#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn {

RMSNorm::RMSNorm(int64_t d, float eps_) : normalized_shape(d), eps(eps_) {
  if (d <= 0) throw ValueError("RMSNorm: normalized_shape must be positive, got " + std::to_string(d));
  weight = register_parameter("weight", ones({d}));
}

Tensor RMSNorm::forward(const Tensor& x) const {
  if (x.dim() == 0 || x.size(-1) != normalized_shape)
    throw ShapeError("RMSNorm: input of shape " + shape_str(x.shape()) + " does not end in the normalized size " +
                     std::to_string(normalized_shape));
  return x * ((x * x).mean({-1}, /*keepdim=*/true) + eps).rsqrt() * weight;
}

std::string RMSNorm::extra_repr() const {
  std::ostringstream s;
  s << normalized_shape << ", eps=" << eps;  // a stream prints 1.19209e-07, std::to_string 0.000000
  return s.str();
}

}  // namespace qkv::nn
