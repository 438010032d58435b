// unfold1d (im2col, autograd/ops/unfold.h) and unfold1d_reference, its composed reference. The op
// is a kernel forward and a kernel backward (tensor/kernels/unfold.h); the reference pads, slices
// and concatenates, each piece a copy with a backward of its own. Either way the copy is K times
// the input, small beside the product of the convolution that follows (nn/functional/conv.h).
#include "autograd/ops/unfold.h"

#include <string>
#include <vector>

#include "autograd/function.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/kernels/unfold.h"
#include "tensor/reference_mode.h"

namespace qkv {

Tensor unfold1d_reference(const Tensor& x, int64_t kernel_size, int64_t padding, int64_t dilation) {
  const int64_t N = x.size(0), L = x.size(1), C = x.size(2);
  const int64_t L_out = L + 2 * padding - dilation * (kernel_size - 1);
  const Tensor edge = zeros({N, padding, C});
  const Tensor padded = padding > 0 ? cat({edge, x, edge}, 1) : x;  // padded[t] = x[t − padding]
  std::vector<Tensor> taps;
  for (int64_t j = 0; j < kernel_size; ++j) taps.push_back(padded.narrow(1, j * dilation, L_out));
  return cat(taps, 2);
}

// x (N, L, C) → (N, L_out, K·C), L_out = L + 2·padding − dilation·(K − 1)
Tensor unfold1d(const Tensor& x, int64_t kernel_size, int64_t padding, int64_t dilation) {
  if (x.dim() != 3)
    throw ShapeError("unfold1d: input must be 3-d (N, L, C), got shape " + shape_str(x.shape()));
  if (kernel_size < 1 || padding < 0 || dilation < 1)
    throw ValueError("unfold1d: expected kernel_size >= 1, padding >= 0 and dilation >= 1, got " +
                     std::to_string(kernel_size) + ", " + std::to_string(padding) + " and " +
                     std::to_string(dilation));
  const int64_t N = x.size(0), L = x.size(1), C = x.size(2), K = kernel_size;
  const int64_t L_out = L + 2 * padding - dilation * (K - 1);
  if (L_out < 1)
    throw ShapeError("unfold1d: a sequence of length " + std::to_string(L) + " with padding " +
                     std::to_string(padding) + " is shorter than the kernel's span " +
                     std::to_string(dilation * (K - 1) + 1));
  if (reference_mode()) return unfold1d_reference(x, kernel_size, padding, dilation);
  const autograd::Op op("unfold1d");
  const Tensor xc = x.detach().contiguous();
  Tensor cols = Tensor::empty({N, L_out, K * C});
  kernels::unfold1d_forward(N, L, C, K, padding, dilation, xc.data(), cols.data());
  return op.record(cols, {x}, {},
                          [N, L, C, K, padding, dilation](
                              const Tensor& g, const autograd::BackwardContext&) -> std::vector<Tensor> {
                            const Tensor gc = g.contiguous();
                            Tensor dx = Tensor::empty({N, L, C});
                            kernels::unfold1d_backward(N, L, C, K, padding, dilation, gc.data(), dx.data());
                            return {dx};
                          },
                          autograd::composed_backward(  // linear in x: its value does not matter
                              [kernel_size, padding, dilation](const std::vector<Tensor>& in, const std::vector<Tensor>&) {
                                return unfold1d_reference(in[0], kernel_size, padding, dilation);
                              },
                              {autograd::kValueUnused}));
}

}  // namespace qkv
