// Matrix products. Operands reach the GEMM kernel through their strides: a transposed view such
// as k.transpose(-1, -2) or w.t() is passed as a transpose flag, never copied, so Q·Kᵀ and the
// backward products dA = dC·Bᵀ, dB = Aᵀ·dC all take the kernel's fast path.
#include <algorithm>
#include <optional>
#include <string>

#include "autograd/function.h"
#include "autograd/observer.h"
#include "tensor/error.h"
#include "tensor/kernels/gemm.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

// How the kernel reads a rows×cols matrix with strides (s0, s1): row-major (s1 == 1, leading
// dimension s0) or column-major, i.e. the transpose of a row-major cols×rows matrix (s0 == 1).
struct Layout {
  bool trans;
  int64_t ld;
};

std::optional<Layout> layout_of(int64_t rows, int64_t cols, int64_t s0, int64_t s1) {
  // The stride of a dim of size 1 never matters, so such a dim fits either layout.
  // Row-major: element (i, j) at i·s0 + j.
  if ((s1 == 1 || cols == 1) && (rows == 1 || s0 >= std::max<int64_t>(cols, 1)))
    return Layout{false, rows == 1 ? std::max<int64_t>(cols, 1) : s0};
  // Column-major: element (i, j) at i + j·s1, the transpose of a row-major cols×rows matrix.
  if ((s0 == 1 || rows == 1) && (cols == 1 || s1 >= std::max<int64_t>(rows, 1)))
    return Layout{true, cols == 1 ? std::max<int64_t>(rows, 1) : s1};
  return std::nullopt;
}

std::string mismatch(const Tensor& a, const Tensor& b) {
  return "matmul: shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
         " cannot be multiplied: " + std::to_string(a.shape().back()) +
         " != " + std::to_string(b.dim() == 1 ? b.shape()[0] : b.shape()[b.dim() - 2]);
}

// C (batch..., M, N) = A (batch..., M, K) · B (batch..., K, N), batch dims broadcast.
Tensor matmul_forward(const Tensor& a_in, const Tensor& b_in) {
  const int64_t M = a_in.size(-2), K = a_in.size(-1), N = b_in.size(-1);
  const Shape batch_a(a_in.shape().begin(), a_in.shape().end() - 2);
  const Shape batch_b(b_in.shape().begin(), b_in.shape().end() - 2);
  Tensor a = a_in.detach(), b = b_in.detach();

  // (…, M, K) · (K, N) with a contiguous: fold the batch into the rows, one big product.
  if (batch_b.empty() && !batch_a.empty() && a.is_contiguous()) {
    const int64_t rows = numel(batch_a) * M;
    Shape out_shape = batch_a;
    out_shape.push_back(M);
    out_shape.push_back(N);
    Tensor out = Tensor::empty(out_shape);
    std::optional<Layout> lb = layout_of(K, N, b.strides()[0], b.strides()[1]);
    if (!lb) b = b.contiguous(), lb = Layout{false, N};
    kernels::gemm(false, lb->trans, rows, N, K, 1.0f, a.data(), K, b.data(), lb->ld, 0.0f, out.data(), N);
    autograd::add_flops(2 * rows * N * K);  // a multiply and an add per (row, n, k)
    return out;
  }

  const Shape batch = broadcast_shapes(batch_a, batch_b, "matmul");
  Shape ea = batch, eb = batch, out_shape = batch;
  ea.insert(ea.end(), {M, K});
  eb.insert(eb.end(), {K, N});
  out_shape.insert(out_shape.end(), {M, N});
  a = a.expand(ea);
  b = b.expand(eb);
  const int64_t nd = static_cast<int64_t>(ea.size());
  std::optional<Layout> la = layout_of(M, K, a.strides()[nd - 2], a.strides()[nd - 1]);
  if (!la) a = a.contiguous(), la = Layout{false, K};
  std::optional<Layout> lb = layout_of(K, N, b.strides()[nd - 2], b.strides()[nd - 1]);
  if (!lb) b = b.contiguous(), lb = Layout{false, N};
  Tensor out = Tensor::empty(out_shape);
  const int64_t count = numel(batch);
  if (count == 0 || M == 0 || N == 0) return out;
  autograd::add_flops(2 * count * M * N * K);

  // Offsets of each batch's matrices. When they step evenly (a contiguous batch, or broadcasting
  // with stride 0) the strided batched call takes them; otherwise (the heads of a (B, T, H·d)
  // projection seen as (B, H, T, d)) the batched call with one offset per matrix does.
  std::vector<int64_t> off_a(count), off_b(count), off_c(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rem = i;
    off_a[i] = off_b[i] = 0;
    off_c[i] = i * M * N;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      off_a[i] += idx * a.strides()[d];
      off_b[i] += idx * b.strides()[d];
    }
  }
  const int64_t step_a = count > 1 ? off_a[1] - off_a[0] : 0, step_b = count > 1 ? off_b[1] - off_b[0] : 0;
  bool even = true;
  for (int64_t i = 1; i < count && even; ++i)
    even = off_a[i] - off_a[i - 1] == step_a && off_b[i] - off_b[i - 1] == step_b;
  if (even)
    kernels::gemm_batched(count, la->trans, lb->trans, M, N, K, 1.0f, a.data(), la->ld, step_a, b.data(),
                          lb->ld, step_b, 0.0f, out.data(), N, M * N);
  else
    kernels::gemm_batched_offsets(count, la->trans, lb->trans, M, N, K, 1.0f, a.data(), la->ld, off_a.data(),
                                  b.data(), lb->ld, off_b.data(), 0.0f, out.data(), N, off_c.data());
  return out;
}

}  // namespace

Tensor Tensor::matmul(const Tensor& other) const {
  const autograd::Op op("matmul");
  const Tensor& a = *this;
  const Tensor& b = other;
  if (a.dim() == 0 || b.dim() == 0)
    throw ShapeError("matmul: both operands need at least 1 dim, got shapes " + shape_str(a.shape()) +
                     " and " + shape_str(b.shape()));
  const int64_t k_b = b.dim() == 1 ? b.shape()[0] : b.shape()[b.dim() - 2];
  if (a.shape().back() != k_b) throw ShapeError(mismatch(a, b));
  // Vectors become 1-row or 1-column matrices, and that dim is removed from the result.
  if (a.dim() == 1 && b.dim() == 1) return a.unsqueeze(0).matmul(b.unsqueeze(1)).reshape({});
  if (a.dim() == 1) return a.unsqueeze(0).matmul(b).squeeze(-2);
  if (b.dim() == 1) return a.matmul(b.unsqueeze(1)).squeeze(-1);

  Tensor out = matmul_forward(a, b);
  return op.record(out, {a, b}, {a, b}, [](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor &x = ctx.saved[0], &w = ctx.saved[1];
        Tensor gx, gw;
        // C = A·B:  dA = dC·Bᵀ,  dB = Aᵀ·dC  (summed over broadcast batch dims)
        if (ctx.needs[0]) gx = g.matmul(w.transpose(-1, -2)).sum_to(x.shape());
        if (ctx.needs[1]) {
          if (w.dim() == 2 && x.dim() > 2) {
            // A shared weight: dB = Σ_batch Aᵀ·dC is one product over all rows at once. It is
            // written in B's own memory order, so that the gradient of a transposed view (linear's
            // weight.t()) reaches the weight contiguous, with no transposing copy: for a column-major
            // B as (dCᵀ·A)ᵀ, the same sums of the same products.
            const int64_t K = x.size(-1), N = g.size(-1);
            const Tensor rows = x.reshape({-1, K}), grads = g.reshape({-1, N});
            gw = w.strides()[1] != 1 ? grads.t().matmul(rows).t() : rows.t().matmul(grads);
          } else {
            gw = x.transpose(-1, -2).matmul(g).sum_to(w.shape());
          }
        }
        return {gx, gw};
      });
}

Tensor matmul(const Tensor& a, const Tensor& b) { return a.matmul(b); }

// torch.bmm: matmul without its broadcasting or its 1-d cases, so a shape that matmul would
// broadcast into something unintended is refused.
Tensor bmm(const Tensor& a, const Tensor& b) {
  if (a.dim() != 3 || b.dim() != 3 || a.size(0) != b.size(0) || a.size(2) != b.size(1))
    throw ShapeError("bmm: expected (B, n, m) and (B, m, p), got " + shape_str(a.shape()) + " and " +
                     shape_str(b.shape()));
  return a.matmul(b);
}

}  // namespace qkv
