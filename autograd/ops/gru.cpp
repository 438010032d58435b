// GRU recurrences as single graph nodes (autograd/ops/gru.h), each beside its composed reference.
// The gate math of a step (tensor/kernels/gru.h) takes about fifteen small ops when composed;
// gru_cell does it in one node. gru_sequence goes further and runs a whole layer's time loop in one
// node, with backpropagation through time written out below: the composed unroll also slices the
// input projections step by step, and the backward of each slice writes a gradient as large as the
// whole sequence (T² work over the unroll). docs/PERFORMANCE.md gives what each buys per step.
#include "autograd/ops/gru.h"

#include <algorithm>
#include <string>

#include "autograd/function.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/kernels/gemm.h"
#include "tensor/kernels/gru.h"
#include "tensor/kernels/reduce.h"
#include "tensor/reference_mode.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

void expect_shape(const Tensor& t, const Shape& expected, const char* op, const char* what) {
  if (t.shape() != expected)
    throw ShapeError(std::string(op) + ": " + what + " has shape " + shape_str(t.shape()) + ", expected " +
                     shape_str(expected));
}

}  // namespace

Tensor gru_cell_reference(const Tensor& gi, const Tensor& gh, const Tensor& h) {
  const int64_t H = h.size(1);
  const auto gate = [H](const Tensor& x, int64_t i) { return x.narrow(1, i * H, H); };  // r, z, n
  const Tensor r = (gate(gi, 0) + gate(gh, 0)).sigmoid();
  const Tensor z = (gate(gi, 1) + gate(gh, 1)).sigmoid();
  const Tensor n = (gate(gi, 2) + r * gate(gh, 2)).tanh();
  return (1.0f - z) * n + z * h;
}

// gi, gh (B, 3H), h (B, H) → h' (B, H)
Tensor gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h) {
  if (h.dim() != 2) throw ShapeError("gru_cell: h must be (B, H), got shape " + shape_str(h.shape()));
  const int64_t B = h.size(0), H = h.size(1);
  expect_shape(gi, {B, 3 * H}, "gru_cell", "gi");
  expect_shape(gh, {B, 3 * H}, "gru_cell", "gh");
  if (reference_mode()) return gru_cell_reference(gi, gh, h);
  const autograd::Op op("gru_cell");
  const Tensor gic = gi.detach().contiguous(), ghc = gh.detach().contiguous(), hc = h.detach().contiguous();
  Tensor out = Tensor::empty({B, H}), gates = Tensor::empty({B, 3 * H});
  kernels::gru_gates_forward(B, H, gic.data(), ghc.data(), hc.data(), out.data(), gates.data());
  return op.record(out, {gi, gh, h}, {gates, ghc, hc, gic},
      [B, H](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor gc = g.contiguous();
        Tensor dgi = Tensor::empty({B, 3 * H}), dgh = Tensor::empty({B, 3 * H}), dh = Tensor::empty({B, H});
        kernels::gru_gates_backward(B, H, ctx.saved[0].data(), ctx.saved[1].data(), ctx.saved[2].data(), gc.data(),
                                    dgi.data(), dgh.data(), dh.data());
        return {ctx.needs[0] ? dgi : Tensor(), ctx.needs[1] ? dgh : Tensor(), ctx.needs[2] ? dh : Tensor()};
      },
      autograd::composed_backward(
          [](const std::vector<Tensor>& in, const std::vector<Tensor>&) {
            return gru_cell_reference(in[0], in[1], in[2]);
          },
          {3, 1, 2}));
}

namespace {

// gru_sequence's rule under create_graph: its reference differentiated, from the saved gi (5), h0
// (0), W_hh (1) and b_hh (6).
autograd::BackwardFn sequence_graph_rule(bool reverse) {
  return autograd::composed_backward(
      [reverse](const std::vector<Tensor>& in, const std::vector<Tensor>&) {
        return gru_sequence_reference(in[0], in[1], in[2], in[3], reverse);
      },
      {5, 0, 1, 6});
}

}  // namespace

Tensor gru_sequence_reference(const Tensor& gi, const Tensor& h0, const Tensor& w_hh, const Tensor& b_hh,
                              bool reverse) {
  const int64_t T = gi.size(0);
  std::vector<Tensor> states(static_cast<size_t>(T));
  Tensor h = h0;
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s;
    const Tensor gh = b_hh.defined() ? h.matmul(w_hh.t()) + b_hh : h.matmul(w_hh.t());
    h = gru_cell_reference(gi.select(0, t), gh, h);
    states[static_cast<size_t>(t)] = h;
  }
  return stack(states, 0);
}

// gi (T, B, 3H), h0 (B, H), w_hh (3H, H), b_hh (3H) → every h_t (T, B, H)
Tensor gru_sequence(const Tensor& gi, const Tensor& h0, const Tensor& w_hh, const Tensor& b_hh, bool reverse) {
  if (gi.dim() != 3 || h0.dim() != 2 || gi.size(0) == 0)
    throw ShapeError("gru_sequence: expected gi (T, B, 3H) with T > 0 and h0 (B, H), got shapes " +
                     shape_str(gi.shape()) + " and " + shape_str(h0.shape()));
  const int64_t T = gi.size(0), B = h0.size(0), H = h0.size(1), G = 3 * H;
  expect_shape(gi, {T, B, G}, "gru_sequence", "gi");
  expect_shape(w_hh, {G, H}, "gru_sequence", "w_hh");
  if (b_hh.defined()) expect_shape(b_hh, {G}, "gru_sequence", "b_hh");
  if (reference_mode()) return gru_sequence_reference(gi, h0, w_hh, b_hh, reverse);
  const autograd::Op op("gru_sequence");
  const Tensor gic = gi.detach().contiguous(), hc0 = h0.detach().contiguous(), w = w_hh.detach().contiguous();
  const Tensor b = b_hh.defined() ? b_hh.detach().contiguous() : Tensor();

  // Step s handles time t(s); its previous state is h0 for s = 0, else the output of step s - 1.
  auto time_of = [T, reverse](int64_t s) { return reverse ? T - 1 - s : s; };
  // gh = h_{t-1}·W_hhᵀ + b_hh and the gates r, z, n of every step are kept for backward; without a
  // graph to record (evaluation), one step's worth is reused.
  const bool keep = autograd::needs_graph({gi, h0, w_hh, b_hh});
  const int64_t kept_steps = keep ? T : 1;
  Tensor out = Tensor::empty({T, B, H});
  Tensor gh = Tensor::empty({kept_steps, B, G}), gates = Tensor::empty({kept_steps, B, G});
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = time_of(s);
    const float* prev = s == 0 ? hc0.data() : out.data() + time_of(s - 1) * B * H;
    float* gh_t = gh.data() + (keep ? t : 0) * B * G;
    if (b.defined())
      for (int64_t i = 0; i < B; ++i) std::copy(b.data(), b.data() + G, gh_t + i * G);
    kernels::gemm(false, true, B, G, H, 1.0f, prev, H, w.data(), H, b.defined() ? 1.0f : 0.0f, gh_t, G);
    kernels::gru_gates_forward(B, H, gic.data() + t * B * G, gh_t, prev, out.data() + t * B * H,
                               gates.data() + (keep ? t : 0) * B * G);
  }
  autograd::add_flops(2 * T * B * G * H);  // the products h_{t-1}·W_hhᵀ (the gates are not counted)
  if (!keep) return out;

  return op.record(out, {gi, h0, w_hh, b_hh}, {hc0, w, out, gh, gates, gic, b},
      [T, B, H, G, time_of](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor &h0s = ctx.saved[0], &ws = ctx.saved[1], &hs = ctx.saved[2], &ghs = ctx.saved[3],
                     &gates_s = ctx.saved[4];
        const Tensor dout = g.contiguous();
        auto prev_of = [&](int64_t s) { return s == 0 ? h0s.data() : hs.data() + time_of(s - 1) * B * H; };
        Tensor dgi = Tensor::empty({T, B, G}), dgh = Tensor::empty({T, B, G});
        // dh: dL/dh_t of the step being undone, with every path from later steps summed in.
        Tensor dh = zeros({B, H}), dh_prev = Tensor::empty({B, H});
        for (int64_t s = T - 1; s >= 0; --s) {
          const int64_t t = time_of(s);
          // h_t reaches the loss directly (dout[t]) and through step s + 1 (already in dh).
          float* d = dh.data();
          const float* dy = dout.data() + t * B * H;
          for (int64_t i = 0; i < B * H; ++i) d[i] += dy[i];
          float* dgh_t = dgh.data() + t * B * G;
          kernels::gru_gates_backward(B, H, gates_s.data() + t * B * G, ghs.data() + t * B * G, prev_of(s), d,
                                      dgi.data() + t * B * G, dgh_t, dh_prev.data());
          // gh_t = h_{t-1}·W_hhᵀ + b_hh, so dh_{t-1} += dgh_t·W_hh
          kernels::gemm(false, false, B, H, G, 1.0f, dgh_t, G, ws.data(), H, 1.0f, dh_prev.data(), H);
          std::swap(dh, dh_prev);
        }
        Tensor dw, db;
        if (ctx.needs[2]) {
          // dW_hh = Σ_t dgh_tᵀ·h_{t-1}: the first step's previous state is h0, the others' are
          // outputs, which sit in hs one time step away: one product over all of them.
          dw = Tensor::empty({G, H});
          const int64_t first = time_of(0);
          kernels::gemm(true, false, G, H, B, 1.0f, dgh.data() + first * B * G, G, h0s.data(), H, 0.0f, dw.data(), H);
          if (T > 1) {
            // Forward: steps t = 1..T-1 read h_0..h_{T-2}.  Reverse: steps t = 0..T-2 read h_1..h_{T-1}.
            const bool rev = first == T - 1;
            const float* dg = dgh.data() + (rev ? 0 : B * G);
            const float* hp = hs.data() + (rev ? B * H : 0);
            kernels::gemm(true, false, G, H, (T - 1) * B, 1.0f, dg, G, hp, H, 1.0f, dw.data(), H);
          }
        }
        if (ctx.needs[3]) {
          db = Tensor::empty({G});
          kernels::sum_dim(1, T * B, G, dgh.data(), db.data());
        }
        autograd::add_flops(2 * T * B * G * H * (ctx.needs[2] ? 2 : 1));  // dh_{t-1} and dW_hh products
        return {ctx.needs[0] ? dgi : Tensor(), ctx.needs[1] ? dh : Tensor(), dw, db};
      },
      sequence_graph_rule(reverse));
}

}  // namespace qkv
