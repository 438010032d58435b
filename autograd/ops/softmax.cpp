// Softmax and log-softmax along a dim, primitives of the Tensor API: one kernel for the forward and
// one for the backward, the max subtracted for stability, as torch.softmax. They have no reference
// of their own; the references of the fused ops are built from them.
//
// masked_softmax (autograd/ops/softmax.h), fused in the same way, and masked_softmax_reference, its
// composed reference: the valid-lengths softmax of every attention layer (d2l 11.3.2.1). d2l
// composes it of a comparison building the (B·Q, K) mask, masked_fill(-1e6) and softmax, each a
// pass over the scores with a backward pass of its own; here the lengths bound the kernel's loops,
// nothing else is materialized, and the exp is vectorized (vexp). docs/PERFORMANCE.md gives what
// that buys at the tagger's sizes.
#include "autograd/ops/softmax.h"

#include <limits>
#include <string>
#include <vector>

#include "autograd/function.h"
#include "autograd/ops/row_lengths.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/kernels/softmax.h"
#include "tensor/reference_mode.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

void split_at(const Shape& shape, int64_t d, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= shape[k];
  n = shape[d];
  for (int64_t k = d + 1; k < static_cast<int64_t>(shape.size()); ++k) inner *= shape[k];
}

Tensor softmax_op(const char* name, const Tensor& x, int64_t dim, bool log) {
  const autograd::Op op(name);
  const int64_t d = normalize_dim(dim, x.dim(), name);
  int64_t outer, n, inner;
  split_at(x.shape(), d, outer, n, inner);
  const Tensor in = x.detach().contiguous();
  Tensor out = Tensor::empty(x.shape());
  kernels::softmax_forward(outer, n, inner, in.data(), out.data(), log);
  return op.record(out, {x}, {out},
      [outer, n, inner, log](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor gc = g.contiguous();
        Tensor dx = Tensor::empty(g.shape());
        kernels::softmax_backward(outer, n, inner, ctx.saved[0].data(), gc.data(), dx.data(), log);
        return {dx};
      },
      [d, log](const Tensor& g, const BackwardContext& ctx) -> Grads {
        // y = softmax(x): dx = y ⊙ (g − Σ g⊙y);  y = log_softmax(x): dx = g − e^y ⊙ Σ g
        const Tensor& y = ctx.saved[0];
        return {log ? g - y.exp() * g.sum({d}, true) : y * (g - (g * y).sum({d}, true))};
      });
}

}  // namespace

// score_row_lengths (row_lengths.h): a (B) length is repeated over the Q queries (d2l's
// repeat_interleave) and the heads, a (B, Q) length over the heads.
void check_valid_lengths(const std::string& who, const IndexTensor& valid_lens, int64_t K, const std::string& context) {
  const int64_t* v = valid_lens.data();
  for (int64_t i = 0; i < valid_lens.numel(); ++i)
    if (v[i] < 0 || v[i] > K)
      throw IndexError(who + ": valid length " + std::to_string(v[i]) + " (element " + std::to_string(i) +
                       " of valid_lens) is out of range [0, " + std::to_string(K) + "]" + context);
}

IndexTensor score_row_lengths(const char* op, const Shape& scores, const IndexTensor& valid_lens) {
  const std::string name(op);
  if (scores.size() != 3 && scores.size() != 4)
    throw ShapeError(name + ": with valid_lens, X must be (B, Q, K) or (B, H, Q, K), got shape " + shape_str(scores));
  const int64_t B = scores.front(), Q = scores[scores.size() - 2], K = scores.back();
  const bool per_query = valid_lens.shape() == Shape{B, Q};
  if (valid_lens.shape() != Shape{B} && !per_query)
    throw ShapeError(name + ": valid_lens of shape " + shape_str(valid_lens.shape()) + " does not fit X of shape " +
                     shape_str(scores) + ": expected (" + std::to_string(B) + ") or (" + std::to_string(B) + "," +
                     std::to_string(Q) + ")");
  check_valid_lengths(name, valid_lens, K, " for X of shape " + shape_str(scores));
  const int64_t* v = valid_lens.data();
  const int64_t rows = K > 0 ? numel(scores) / K : 0, per_batch = B > 0 ? rows / B : 0;
  std::vector<int64_t> lens(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / per_batch;
    lens[static_cast<size_t>(r)] = per_query ? v[b * Q + r % Q] : v[b];
  }
  return IndexTensor(std::move(lens));
}

Tensor masked_softmax_reference(const Tensor& x, const IndexTensor& valid_lens) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor visible = x.ne(-inf);
  if (valid_lens.defined())  // 1 at the keys k < each row's valid length, rows as x lays them out
    visible = visible * sequence_mask(score_row_lengths("masked_softmax", x.shape(), valid_lens), x.size(-1))
                            .reshape(x.shape());
  const Tensor weights = where(visible, x, scalar_tensor(std::numeric_limits<float>::lowest())).softmax(-1);
  return weights * visible;
}

Tensor masked_softmax(const Tensor& x, const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias) {
  Tensor scores = bias.defined() ? x + bias : x;
  // A hidden key becomes −∞, which masked_softmax hides like a key past the valid length.
  if (mask.defined()) scores = where(mask, scores, scalar_tensor(-std::numeric_limits<float>::infinity()));
  return masked_softmax(scores, valid_lens);
}

// x (B, [H,] Q, K) → weights of the same shape; rows past their valid length are zero.
Tensor masked_softmax(const Tensor& x, const IndexTensor& valid_lens) {
  if (x.dim() == 0) throw ShapeError("masked_softmax: X must have at least one dim, got a scalar");
  if (reference_mode()) return masked_softmax_reference(x, valid_lens);
  const autograd::Op op("masked_softmax");
  const int64_t n = x.size(-1), rows = n > 0 ? x.numel() / n : 0;
  const IndexTensor lens = valid_lens.defined() ? score_row_lengths(op.name(), x.shape(), valid_lens) : IndexTensor();
  const Tensor in = x.detach().contiguous();
  Tensor out = Tensor::empty(x.shape());
  kernels::masked_softmax_forward(rows, n, in.data(), lens.defined() ? lens.data() : nullptr, out.data());
  return op.record(out, {x}, {out},
      [rows, n](const Tensor& g, const BackwardContext& ctx) -> Grads {
        // y is 0 at every hidden position, so the softmax backward gives those a zero gradient.
        const Tensor gc = g.contiguous();
        Tensor dx = Tensor::empty(g.shape());
        kernels::softmax_backward(rows, n, 1, ctx.saved[0].data(), gc.data(), dx.data(), false);
        return {dx};
      },
      [](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor& y = ctx.saved[0];
        return {y * (g - (g * y).sum({-1}, true))};
      });
}

Tensor Tensor::softmax(int64_t dim) const { return softmax_op("softmax", *this, dim, false); }
Tensor Tensor::log_softmax(int64_t dim) const { return softmax_op("log_softmax", *this, dim, true); }
Tensor softmax(const Tensor& x, int64_t dim) { return x.softmax(dim); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return x.log_softmax(dim); }

}  // namespace qkv
