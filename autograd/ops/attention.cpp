// fused_attention and fused_attention_packed (autograd/ops/attention.h): multi-head scaled
// dot-product attention as one op (Vaswani et al. 2017, eq. 1), and beside them their composed
// reference, composed_attention: per-head products, a masked softmax, a dropout and the merge of
// the heads, each with a backward of its own. tensor/kernels/attention.h has the equations of the
// fused forward and backward kernels and why they are fused; this file joins them to the graph.
//
// The dropout mask is the one the composed path draws: one bernoulli_scale call over the
// (B, H, Q, K) weights, from the same generator, so a seeded run gives the same mask either way.
// The generator is counter-based (tensor/random.h), so any run of that draw can be made alone,
// from the state the op started at: the kernel asks for a tile row's multipliers when it needs
// them, in forward and again in backward, and nothing of the mask is stored (as the dropout op,
// which draws its mask again in backward too). Stored, it would take one float per weight from
// forward to backward, as much memory as the weights.
//
// Backward keeps the forward's output and each row's log-sum-exp: the kernel makes each tile's
// weights again from Q, K and the log-sum-exp (tensor/kernels/attention.h), or, when the caller
// asked for the weights (need_weights), reads them, the same bits for a product per tile less.
#include "autograd/ops/attention.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "autograd/function.h"
#include "autograd/ops/dropout.h"
#include "autograd/ops/row_lengths.h"
#include "autograd/ops/softmax.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/kernels/attention.h"
#include "tensor/reference_mode.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

void check_heads(const Tensor& q, const Tensor& k, const Tensor& v) {
  const bool fits = q.dim() == 4 && k.dim() == 4 && v.dim() == 4 && k.shape() == v.shape() &&
                    q.size(0) == k.size(0) && q.size(1) == k.size(1) && q.size(3) == k.size(3);
  if (!fits)
    throw ShapeError("fused_attention: q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) +
                     " and v " + shape_str(v.shape()) +
                     " do not fit: expected (B, H, Q, d), (B, H, K, d) and (B, H, K, d)");
}

// The kernel reads each row of a head as d consecutive floats: x itself when it has them, else a
// contiguous copy (in the graph, so its gradient reaches x).
Tensor unit_last_stride(const Tensor& x) { return x.strides().back() == 1 ? x : x.contiguous(); }

kernels::HeadsView heads_view(const Tensor& x) {
  const Shape& s = x.strides();
  return {x.data(), s[0], s[1], s[2]};
}

kernels::ScoresView scores_view(const Tensor& x) {
  if (!x.defined()) return {};
  const Shape& s = x.strides();
  return {x.data(), s[0], s[1], s[2], s[3]};
}

float* data_or_null(Tensor& x) { return x.defined() ? x.data() : nullptr; }
const float* data_or_null(const Tensor& x) { return x.defined() ? x.data() : nullptr; }

// Writes out[i] = elements first + i, i < n, of the multipliers (0 with probability p, else
// 1/(1-p)) that bernoulli_scale over ones would give from `start`. Two elements come from each
// draw (element 2j from draw j's low half, 2j+1 from its high half), so an odd first element is
// the second of its pair.
void draw_multipliers(GeneratorState start, int64_t first, int64_t n, float p, float* out) {
  const float keep = 1.0f - p, scale = 1.0f / keep;
  Generator gen;
  if (n > 0 && first % 2 == 1) {
    float pair[2];
    gen.set_state({start.seed, start.offset + static_cast<uint64_t>(first / 2)});
    gen.fill_bernoulli(pair, 2, keep);
    *out++ = pair[1] * scale;
    ++first, --n;
  }
  gen.set_state({start.seed, start.offset + static_cast<uint64_t>(first / 2)});
  gen.fill_bernoulli(out, n, keep);
  for (int64_t i = 0; i < n; ++i) out[i] *= scale;
}

// The kernels' dropout multipliers, run by run, of the draw dropout(weights, p, gen) would make
// over the (B, H, Q, K) weights, and gen advanced past that draw; empty when p == 0.
kernels::DropoutDraw dropout_draw(const kernels::AttentionSizes& n, float p, Generator& gen) {
  if (p == 0.0f) return {};
  const GeneratorState start = gen.state();
  const int64_t TT = n.Tq * n.Tk, all = n.B * n.H * TT;
  gen.set_state({start.seed, start.offset + static_cast<uint64_t>((all + 1) / 2)});
  return [start, TT, Tk = n.Tk, p](int64_t block, int64_t row, int64_t key, int64_t count, float* out) {
    draw_multipliers(start, block * TT + row * Tk + key, count, p, out);
  };
}

// What both ops pass the kernels besides q, k and v: the valid length of every row of scores, the
// mask and the bias broadcast to the (B, H, Tq, Tk) scores, and the dropout draw.
struct Extras {
  IndexTensor lens;
  Tensor mask, bias;
  kernels::DropoutDraw keep;
  GeneratorState start;  // the generator before the draw: the composed reference draws it again
};

// Checks what both ops take besides q, k and v, before either mode runs, so that the reference
// mode refuses the same inputs with the same messages: valid_lens fits the scores, the mask and
// the bias broadcast to the (B, H, Tq, Tk) scores, dropout_p is in [0, 1). Returns the valid length
// of every row of scores (undefined without valid_lens).
IndexTensor checked_lengths(const char* op, const kernels::AttentionSizes& n, const IndexTensor& valid_lens,
                            const Tensor& mask, const Tensor& bias, float dropout_p) {
  const Shape scores{n.B, n.H, n.Tq, n.Tk};
  for (const auto& [t, what] : {std::pair{&mask, "mask"}, std::pair{&bias, "bias"}})
    if (t->defined() && broadcast_shapes(t->shape(), scores, op) != scores)
      throw ShapeError(std::string(op) + ": " + what + " of shape " + shape_str(t->shape()) +
                       " does not broadcast to the scores of shape " + shape_str(scores));
  if (!(dropout_p >= 0.0f && dropout_p < 1.0f))
    throw ValueError(std::string(op) + ": dropout_p must be in [0, 1), got " + std::to_string(dropout_p));
  return valid_lens.defined() ? score_row_lengths(op, scores, valid_lens) : IndexTensor();
}

Extras extras(const kernels::AttentionSizes& n, IndexTensor lens, const Tensor& mask, const Tensor& bias,
              float dropout_p, Generator& gen) {
  const Shape scores{n.B, n.H, n.Tq, n.Tk};
  const GeneratorState start = gen.state();
  // A broadcast bias is read through its zero strides; expand's backward sums its gradient back.
  return {std::move(lens), mask.defined() ? mask.detach().expand(scores) : Tensor(),
          bias.defined() ? bias.expand(scores) : Tensor(), dropout_draw(n, dropout_p, gen), start};
}

const int64_t* lens_or_null(const IndexTensor& lens) { return lens.defined() ? lens.data() : nullptr; }

// Announces the FLOPs of `products` of the kernels' (Tq, Tk)-by-d products over all B·H blocks:
// Q·Kᵀ, P'·V, or the four in backward. A multiply and an add per (block, query, visible key,
// feature), as matmul counts them; the softmax, mask and dropout passes between them are not
// counted. Counting visits every row's length, so it is done only when someone listens.
void count_products(const kernels::AttentionSizes& n, const IndexTensor& lens, int64_t products) {
  if (autograd::observed()) autograd::add_flops(products * 2 * kernels::attention_product_madds(n, lens_or_null(lens)));
}

// What the forward kernel gives: the output (B, Tq, H·d), each row's log-sum-exp (B, H, Tq), and
// the weights (B, H, Tq, Tk) when asked for.
struct Forward {
  Tensor out, lse, weights;
};

Forward run_forward(const kernels::AttentionSizes& n, kernels::HeadsView q, kernels::HeadsView k,
                    kernels::HeadsView v, const Extras& e, bool need_weights) {
  Forward f{Tensor::empty({n.B, n.Tq, n.H * n.d}), Tensor::empty({n.B, n.H, n.Tq}),
            need_weights ? Tensor::empty({n.B, n.H, n.Tq, n.Tk}) : Tensor()};
  kernels::attention_forward(n, q, k, v, lens_or_null(e.lens), scores_view(e.mask), scores_view(e.bias),
                             e.keep, f.out.data(), f.lse.data(), data_or_null(f.weights));
  count_products(n, e.lens, 2);  // S = Q·Kᵀ and O = P'·V
  return f;
}

// What backward reads: the heads, then the output, the log-sum-exps, the weights (undefined unless
// the forward wrote them), the mask and the bias, in that order.
std::vector<Tensor> saved_tensors(std::vector<Tensor> heads, const Forward& f, const Extras& e) {
  heads.insert(heads.end(), {f.out, f.lse, f.weights, e.mask, e.bias});
  return heads;
}

// The gradients of q, k, v and the broadcast bias from the kernel. dq, dk, dv are written (B, T, H, d)
// in memory (the layout of the (B, T, H·d) projections they flow back to) and handed over as
// (B, H, T, d) views, so the permute's backward is a view too, not a copy.
Grads backward(const kernels::AttentionSizes& n, const IndexTensor& lens, const kernels::DropoutDraw& keep,
               const Tensor& g, const BackwardContext& ctx) {
  const Tensor &q = ctx.saved[0], &k = ctx.saved[1], &v = ctx.saved[2];
  const Tensor &out = ctx.saved[3], &lse = ctx.saved[4], &weights = ctx.saved[5], &mask = ctx.saved[6],
               &bias = ctx.saved[7];
  const Tensor gc = g.contiguous();
  const auto buffer = [&](size_t input, int64_t T) {
    return ctx.needs[input] ? Tensor::empty({n.B, T, n.H, n.d}) : Tensor();
  };
  Tensor dq = buffer(0, n.Tq), dk = buffer(1, n.Tk), dv = buffer(2, n.Tk);
  Tensor dbias = ctx.needs[3] ? Tensor::empty({n.B, n.H, n.Tq, n.Tk}) : Tensor();
  kernels::attention_backward(n, heads_view(q), heads_view(k), heads_view(v), lens_or_null(lens),
                              scores_view(mask), scores_view(bias), keep, out.data(), lse.data(),
                              data_or_null(weights), gc.data(),
                              {data_or_null(dq), data_or_null(dk), data_or_null(dv), data_or_null(dbias)});
  // Q·Kᵀ again unless the weights were kept, dP' = dO·Vᵀ always, then dV, dQ and dK for the inputs
  // that need them: each a product of the size of one forward product.
  int64_t products = weights.defined() ? 1 : 2;
  for (size_t input = 0; input < 3; ++input) products += ctx.needs[input] ? 1 : 0;
  count_products(n, lens, products);
  const auto as_heads = [](const Tensor& x) { return x.defined() ? x.permute({0, 2, 1, 3}) : x; };
  return {as_heads(dq), as_heads(dk), as_heads(dv), dbias};
}

// The heads of a contiguous (B, T, 3·H·d) projection: Q, K and V its three column blocks.
struct PackedHeads {
  kernels::HeadsView q, k, v;
};

PackedHeads packed_heads(const Tensor& qkv, const kernels::AttentionSizes& n) {
  const int64_t D = n.H * n.d;
  const float* p = qkv.data();
  return {{p, n.Tq * 3 * D, n.d, 3 * D},
          {p + D, n.Tq * 3 * D, n.d, 3 * D},
          {p + 2 * D, n.Tq * 3 * D, n.d, 3 * D}};
}

// The gradients of the packed projection and of the bias: dq, dk and dv written straight into the
// column blocks of one (B, T, 3·H·d) gradient, as the projection is laid out. When the projection
// is freed after this call and nothing else holds it, the gradient is written over it: one
// (B, T, 3·H·d) buffer fewer while every earlier layer's activations are still alive.
Grads backward_packed(const kernels::AttentionSizes& n, const IndexTensor& lens,
                      const kernels::DropoutDraw& keep, const Tensor& g, const BackwardContext& ctx) {
  const Tensor &qkv = ctx.saved[0], &out = ctx.saved[1], &lse = ctx.saved[2], &weights = ctx.saved[3],
               &mask = ctx.saved[4], &bias = ctx.saved[5];
  const int64_t D = n.H * n.d;
  const Tensor gc = g.contiguous();
  const bool over_qkv = ctx.needs[0] && ctx.saved_freed_after && qkv.storage().use_count() == 1;
  Tensor dqkv = !ctx.needs[0] ? Tensor() : over_qkv ? qkv : Tensor::empty({n.B, n.Tq, 3 * D});
  Tensor dbias = ctx.needs[1] ? Tensor::empty({n.B, n.H, n.Tq, n.Tk}) : Tensor();
  float* d = data_or_null(dqkv);
  const PackedHeads h = packed_heads(qkv, n);
  kernels::attention_backward(
      n, h.q, h.k, h.v, lens_or_null(lens), scores_view(mask), scores_view(bias), keep, out.data(), lse.data(),
      data_or_null(weights), gc.data(),
      {d, d ? d + D : nullptr, d ? d + 2 * D : nullptr, data_or_null(dbias), 3 * D, over_qkv});
  // Q·Kᵀ again unless the weights were kept, dP' = dO·Vᵀ, then dV, dQ and dK.
  count_products(n, lens, (d ? 4 : 1) + (weights.defined() ? 0 : 1));
  return {dqkv, dbias};
}

void check_packed(const Tensor& qkv, int64_t heads) {
  if (qkv.dim() != 3 || heads <= 0 || qkv.size(2) % (3 * heads) != 0)
    throw ShapeError("fused_attention_packed: projection of shape " + shape_str(qkv.shape()) + " with " +
                     std::to_string(heads) +
                     " heads: expected (B, T, 3·H·d) for H = " + std::to_string(heads));
}

}  // namespace

FusedAttention composed_attention(const Tensor& q, const Tensor& k, const Tensor& v, const IndexTensor& valid_lens,
                                  const Tensor& mask, const Tensor& bias, float dropout_p, Generator& gen) {
  // Dividing by √d keeps the scores' variance at 1 for unit-variance queries and keys, whatever d
  // (Vaswani et al. 2017, section 3.2.1). k.transpose is a view: the matmul reads it as Kᵀ.
  const Tensor scores = q.matmul(k.transpose(-1, -2)) / std::sqrt(static_cast<float>(q.size(-1)));
  const Tensor weights = masked_softmax(scores, valid_lens, mask, bias);
  return {dropout(weights, dropout_p, gen).matmul(v), weights};
}

FusedAttention fused_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                         const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias,
                                         float dropout_p, Generator& gen, bool need_weights) {
  const FusedAttention heads = composed_attention(q, k, v, valid_lens, mask, bias, dropout_p, gen);
  const Tensor& o = heads.output;  // (B, H, Q, d) → (B, Q, H, d) → (B, Q, H·d)
  const Tensor merged = o.permute({0, 2, 1, 3}).reshape({o.size(0), o.size(2), o.size(1) * o.size(3)});
  return {merged, need_weights ? heads.weights.detach() : Tensor()};
}

FusedAttention fused_attention_packed_reference(const Tensor& qkv, int64_t heads, const IndexTensor& valid_lens,
                                                const Tensor& mask, const Tensor& bias, float dropout_p,
                                                Generator& gen, bool need_weights) {
  const int64_t B = qkv.size(0), T = qkv.size(1), D = qkv.size(2) / 3;
  // Column block i of the projection, (B, T, D) → (B, T, H, d) → (B, H, T, d)
  const auto block = [&](int64_t i) {
    return qkv.narrow(2, i * D, D).reshape({B, T, heads, D / heads}).permute({0, 2, 1, 3});
  };
  return fused_attention_reference(block(0), block(1), block(2), valid_lens, mask, bias, dropout_p, gen,
                                   need_weights);
}

FusedAttention fused_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                               const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias,
                               float dropout_p, Generator& gen, bool need_weights) {
  check_heads(q, k, v);
  const kernels::AttentionSizes n{q.size(0), q.size(1), q.size(2), k.size(2), q.size(3)};
  IndexTensor lens = checked_lengths("fused_attention", n, valid_lens, mask, bias, dropout_p);
  if (reference_mode())
    return fused_attention_reference(q, k, v, valid_lens, mask, bias, dropout_p, gen, need_weights);
  const autograd::Op op("fused_attention");
  const Tensor qs = unit_last_stride(q), ks = unit_last_stride(k), vs = unit_last_stride(v);
  const Extras e = extras(n, std::move(lens), mask, bias, dropout_p, gen);
  const Forward f = run_forward(n, heads_view(qs), heads_view(ks), heads_view(vs), e, need_weights);
  Tensor recorded =
      op.record(f.out, {qs, ks, vs, e.bias}, saved_tensors({qs, ks, vs}, f, e),
                       [n, lens = e.lens, keep = e.keep](const Tensor& g, const BackwardContext& ctx) {
                         return backward(n, lens, keep, g, ctx);
                       },
                       autograd::composed_backward(
                           [valid_lens = valid_lens.defined() ? valid_lens.clone() : IndexTensor(), dropout_p, start = e.start](const std::vector<Tensor>& in,
                                                                    const std::vector<Tensor>& saved) {
                             Generator replay;  // the same dropout draw as the forward's
                             replay.set_state(start);
                             return fused_attention_reference(in[0], in[1], in[2], valid_lens, saved[6], in[3],
                                                              dropout_p, replay, false)
                                 .output;
                           },
                           {0, 1, 2, 7}));
  return {recorded, f.weights};
}

FusedAttention fused_attention_packed(const Tensor& qkv, int64_t heads, const IndexTensor& valid_lens,
                                      const Tensor& mask, const Tensor& bias, float dropout_p,
                                      Generator& gen, bool need_weights) {
  check_packed(qkv, heads);
  const int64_t D = qkv.size(2) / 3;
  const kernels::AttentionSizes n{qkv.size(0), heads, qkv.size(1), qkv.size(1), D / heads};
  IndexTensor lens = checked_lengths("fused_attention_packed", n, valid_lens, mask, bias, dropout_p);
  if (reference_mode())
    return fused_attention_packed_reference(qkv, heads, valid_lens, mask, bias, dropout_p, gen, need_weights);
  const autograd::Op op("fused_attention_packed");
  const Tensor x = qkv.contiguous();
  const Extras e = extras(n, std::move(lens), mask, bias, dropout_p, gen);
  const PackedHeads h = packed_heads(x, n);
  const Forward f = run_forward(n, h.q, h.k, h.v, e, need_weights);
  Tensor recorded =
      op.record(f.out, {x, e.bias}, saved_tensors({x}, f, e),
                       [n, lens = e.lens, keep = e.keep](const Tensor& g, const BackwardContext& ctx) {
                         return backward_packed(n, lens, keep, g, ctx);
                       },
                       autograd::composed_backward(
                           [heads, valid_lens = valid_lens.defined() ? valid_lens.clone() : IndexTensor(), dropout_p,
                            start = e.start](const std::vector<Tensor>& in,
                                                                           const std::vector<Tensor>& saved) {
                             Generator replay;
                             replay.set_state(start);
                             return fused_attention_packed_reference(in[0], heads, valid_lens, saved[4], in[1],
                                                                     dropout_p, replay, false)
                                 .output;
                           },
                           {0, 5}));
  return {recorded, f.weights};
}

}  // namespace qkv
