// nn::GRUCell and nn::GRU against PyTorch's documented equations, computed independently below with
// plain loops over std::vector<float> (no qkv ops), and against the same cell composed of tensor ops.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "autograd/grad_mode.h"
#include "autograd/ops/gru.h"
#include "nn/gru.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "thread_testing.h"

using namespace qkv;
using namespace qkv::testing;
using V = std::vector<float>;

namespace {

// ---- the reference: torch.nn.GRU's equations, loop by loop -------------------------------------

using Params = std::map<std::string, V>;

// One direction of one layer. x is (T, B, in) time-major, h0 (B, H); returns every h_t, (T, B, H).
V ref_direction(const V& x, int T, int B, int in, int H, const Params& p, const std::string& suffix, V h,
                bool reverse) {
  const V& w_ih = p.at("weight_ih" + suffix);
  const V& w_hh = p.at("weight_hh" + suffix);
  const bool bias = p.count("bias_ih" + suffix) > 0;
  V out(static_cast<size_t>(T * B * H));
  for (int s = 0; s < T; ++s) {
    const int t = reverse ? T - 1 - s : s;
    V next(h.size());
    for (int b = 0; b < B; ++b)
      for (int j = 0; j < H; ++j) {
        float gi[3], gh[3];  // row j of gate g is row g·H + j of the stacked weights
        for (int g = 0; g < 3; ++g) {
          gi[g] = bias ? p.at("bias_ih" + suffix)[g * H + j] : 0.0f;
          gh[g] = bias ? p.at("bias_hh" + suffix)[g * H + j] : 0.0f;
          for (int k = 0; k < in; ++k) gi[g] += w_ih[(g * H + j) * in + k] * x[(t * B + b) * in + k];
          for (int k = 0; k < H; ++k) gh[g] += w_hh[(g * H + j) * H + k] * h[b * H + k];
        }
        const float r = 1.0f / (1.0f + std::exp(-(gi[0] + gh[0])));
        const float z = 1.0f / (1.0f + std::exp(-(gi[1] + gh[1])));
        const float n = std::tanh(gi[2] + r * gh[2]);
        next[b * H + j] = (1.0f - z) * n + z * h[b * H + j];
      }
    h = next;
    std::copy(h.begin(), h.end(), out.begin() + t * B * H);
  }
  return out;
}

struct RefResult {
  V output;  // (T, B, dirs·H)
  V h_n;     // (L·dirs, B, H)
};

RefResult ref_gru(const V& x, int T, int B, int in, int H, int L, bool bidirectional, const Params& p, const V& h0) {
  const int dirs = bidirectional ? 2 : 1;
  V layer_in = x;
  int width = in;
  RefResult r;
  for (int k = 0; k < L; ++k) {
    V layer_out(static_cast<size_t>(T * B * dirs * H));
    for (int d = 0; d < dirs; ++d) {
      const int row = k * dirs + d;
      const V start = h0.empty() ? V(static_cast<size_t>(B * H), 0.0f)
                                 : V(h0.begin() + row * B * H, h0.begin() + (row + 1) * B * H);
      const std::string suffix = "_l" + std::to_string(k) + (d == 1 ? "_reverse" : "");
      const V hs = ref_direction(layer_in, T, B, width, H, p, suffix, start, d == 1);
      for (int t = 0; t < T; ++t)
        for (int b = 0; b < B; ++b)
          for (int j = 0; j < H; ++j) layer_out[((t * B + b) * dirs + d) * H + j] = hs[(t * B + b) * H + j];
      const int last = d == 1 ? 0 : T - 1;
      r.h_n.insert(r.h_n.end(), hs.begin() + last * B * H, hs.begin() + (last + 1) * B * H);
    }
    layer_in = layer_out;
    width = dirs * H;
  }
  r.output = layer_in;
  return r;
}

// ---- fixed weights, loaded by PyTorch's names -------------------------------------------------

// Small deterministic values, different for every parameter: 0.4·sin(0.7·i + 1.3·which).
Params fixed_params(const nn::Module& m) {
  Params p;
  int which = 0;
  for (const auto& [name, t] : m.named_parameters()) {
    V v(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.4f * std::sin(0.7f * static_cast<float>(i) + 1.3f * static_cast<float>(which));
    p[name] = v;
    ++which;
  }
  return p;
}

void load(nn::Module& m, const Params& p) {
  nn::StateDict sd;
  for (const auto& [name, t] : m.named_parameters()) sd[name] = tensor(p.at(name), t.shape());
  m.load_state_dict(sd);
}

V values(int n, float scale, float phase) {
  V v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[i] = scale * std::cos(0.37f * static_cast<float>(i) + phase);
  return v;
}

void check_close(const Tensor& got, const V& want, float tol = 1e-5f) {
  const V g = got.to_vector();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
}

// Runs nn::GRU and the reference on the same weights and inputs, and compares output and h_n.
void check_against_reference(int T, int B, int in, int H, nn::GRUOptions opts, bool with_h0) {
  nn::GRU gru(in, H, opts);
  const Params p = fixed_params(gru);
  load(gru, p);
  const int dirs = opts.bidirectional ? 2 : 1, L = static_cast<int>(opts.num_layers);
  const V x = values(T * B * in, 1.0f, 0.0f);
  const V h0 = with_h0 ? values(L * dirs * B * H, 0.5f, 1.0f) : V();
  const RefResult ref = ref_gru(x, T, B, in, H, L, opts.bidirectional, p, h0);
  const Tensor xt = tensor(x, {T, B, in});
  const nn::GRUOutput out = gru.forward(xt, with_h0 ? tensor(h0, {L * dirs, B, H}) : Tensor());
  CHECK(out.output.shape() == Shape{T, B, dirs * H});
  CHECK(out.h_n.shape() == Shape{L * dirs, B, H});
  check_close(out.output, ref.output);
  check_close(out.h_n, ref.h_n);
}

std::vector<std::string> names(const nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [n, t] : m.named_parameters()) out.push_back(n);
  return out;
}

// The cell composed of tensor ops: the two products, then gru_cell's composed reference, the
// formula of nn/gru.h op by op.
Tensor composed_cell(const Tensor& x, const Tensor& h, const nn::GRU::LayerWeights& w) {
  return gru_cell_reference(x.matmul(w.weight_ih.t()) + w.bias_ih, h.matmul(w.weight_hh.t()) + w.bias_hh, h);
}

}  // namespace

TEST_CASE("GRU with one layer matches PyTorch's equations computed by hand") {
  check_against_reference(5, 2, 3, 4, {}, false);
}

TEST_CASE("GRU with two layers feeds the first layer's states to the second") {
  check_against_reference(4, 3, 2, 5, {.num_layers = 2}, false);
}

TEST_CASE("bidirectional GRU concatenates both directions and orders h_n layer-major") {
  check_against_reference(4, 2, 3, 3, {.bidirectional = true}, false);
  check_against_reference(3, 2, 2, 3, {.num_layers = 2, .bidirectional = true}, true);
}

TEST_CASE("GRU starts from the given h0") {
  check_against_reference(3, 2, 3, 4, {.num_layers = 2}, true);
}

TEST_CASE("GRU without bias has no bias parameters and matches the equations") {
  nn::GRU gru(3, 4, {.bias = false});
  CHECK(names(gru) == std::vector<std::string>{"weight_ih_l0", "weight_hh_l0"});
  check_against_reference(3, 2, 3, 4, {.bias = false}, true);
}

TEST_CASE("GRU with batch_first reads and writes (B T features)") {
  nn::GRU tm(3, 4, {.num_layers = 2, .bidirectional = true});
  nn::GRU bf(3, 4, {.num_layers = 2, .batch_first = true, .bidirectional = true});
  bf.load_state_dict(tm.state_dict());
  const Tensor x = randn({5, 2, 3}), h0 = randn({4, 2, 4});
  const nn::GRUOutput a = tm.forward(x, h0), b = bf.forward(x.transpose(0, 1).contiguous(), h0);
  CHECK(b.output.shape() == Shape{2, 5, 8});
  CHECK(b.output.transpose(0, 1).contiguous().to_vector() == a.output.to_vector());
  CHECK(b.h_n.to_vector() == a.h_n.to_vector());  // h_n stays (L·dirs, B, H)
}

TEST_CASE("GRUCell computes one step of the same equations") {
  nn::GRUCell cell(3, 4);
  CHECK(names(cell) == std::vector<std::string>{"weight_ih", "weight_hh", "bias_ih", "bias_hh"});
  // Load the cell's weights under the names of a one-layer GRU, then compare with the reference.
  Params p;
  const Params pc = fixed_params(cell);
  for (const auto& [name, v] : pc) p[name + "_l0"] = v;
  load(cell, pc);
  const V x = values(2 * 3, 1.0f, 0.2f), h = values(2 * 4, 0.5f, 0.9f);
  const V want = ref_direction(x, 1, 2, 3, 4, p, "_l0", h, false);
  check_close(cell.forward(tensor(x, {2, 3}), tensor(h, {2, 4})), want);
  // Without h, the state starts at zeros.
  check_close(cell.forward(tensor(x, {2, 3})), ref_direction(x, 1, 2, 3, 4, p, "_l0", V(8, 0.0f), false));
}

TEST_CASE("GRU parameter names and shapes match PyTorch's state_dict") {
  nn::GRU gru(3, 4, {.num_layers = 2, .bidirectional = true});
  CHECK(names(gru) == std::vector<std::string>{
                          "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                          "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse",
                          "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1",
                          "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"});
  const nn::StateDict sd = gru.state_dict();
  CHECK(sd.at("weight_ih_l0").shape() == Shape{12, 3});
  CHECK(sd.at("weight_ih_l1_reverse").shape() == Shape{12, 8});  // layer 1 reads both directions
  CHECK(sd.at("weight_hh_l1").shape() == Shape{12, 4});
  CHECK(sd.at("bias_hh_l0_reverse").shape() == Shape{12});
}

TEST_CASE("GRU parameters are initialized uniform in plus or minus one over the square root of H") {
  manual_seed(11);
  nn::GRU gru(10, 16, {.num_layers = 2});
  const float bound = 0.25f;  // 1/√16
  float largest = 0.0f;
  for (const Tensor& t : gru.parameters())
    for (float v : t.to_vector()) {
      CHECK(std::fabs(v) <= bound);
      largest = std::max(largest, std::fabs(v));
    }
  CHECK(largest > 0.95f * bound);
}

TEST_CASE("GRU applies dropout between layers only in training and never after the last layer") {
  manual_seed(2);
  nn::GRU deep(3, 6, {.num_layers = 2, .dropout = 0.5f});
  const Tensor x = randn({4, 2, 3});
  const V first = deep.forward(x).output.to_vector();
  CHECK(deep.forward(x).output.to_vector() != first);  // a new mask each call
  deep.eval();
  const V e1 = deep.forward(x).output.to_vector();
  CHECK(deep.forward(x).output.to_vector() == e1);
  // With one layer there is nothing between layers: training and evaluation agree.
  nn::GRU single(3, 6, {.dropout = 0.5f});
  const V train = single.forward(x).output.to_vector();
  single.eval();
  CHECK(single.forward(x).output.to_vector() == train);
}

TEST_CASE("GRU under NoGradGuard gives the same values and records no graph") {
  nn::GRU gru(3, 4, {.num_layers = 2, .bidirectional = true});
  const Tensor x = randn({6, 2, 3});
  const nn::GRUOutput with_graph = gru.forward(x);
  CHECK(with_graph.output.requires_grad());
  NoGradGuard no_grad;
  const nn::GRUOutput without = gru.forward(x);
  CHECK_FALSE(without.output.requires_grad());
  CHECK(without.output.to_vector() == with_graph.output.to_vector());
  CHECK(without.h_n.to_vector() == with_graph.h_n.to_vector());
}

TEST_CASE("fused GRU gradients match the cell composed of tensor ops") {
  manual_seed(5);
  const int64_t T = 6, B = 3, in = 4, H = 5;
  nn::GRU gru(in, H, {.bidirectional = true});
  Tensor x = randn({T, B, in}, true), h0 = randn({2, B, H}, true);
  const Tensor r = randn({T, B, 2 * H});
  const nn::GRUOutput out = gru.forward(x, h0);
  ((out.output * r).sum() + out.h_n.sum()).backward();
  const V dx = x.grad().to_vector(), dh0 = h0.grad().to_vector();
  std::vector<V> dparams;
  for (const Tensor& p : gru.parameters()) dparams.push_back(p.grad().to_vector());

  // The same computation with per-step composed ops.
  gru.zero_grad();
  x.zero_grad();
  h0.zero_grad();
  std::vector<Tensor> fwd(T), bwd(T);
  Tensor h = h0.select(0, 0);
  for (int64_t t = 0; t < T; ++t) fwd[t] = h = composed_cell(x.select(0, t), h, gru.weights[0]);
  h = h0.select(0, 1);
  for (int64_t t = T - 1; t >= 0; --t) bwd[t] = h = composed_cell(x.select(0, t), h, gru.weights[1]);
  const Tensor output = cat({stack(fwd, 0), stack(bwd, 0)}, 2);
  ((output * r).sum() + fwd[T - 1].sum() + bwd[0].sum()).backward();
  check_close(output, out.output.to_vector());
  check_close(x.grad(), dx, 1e-4f);
  check_close(h0.grad(), dh0, 1e-4f);
  const std::vector<Tensor> params = gru.parameters();
  for (size_t i = 0; i < params.size(); ++i) check_close(params[i].grad(), dparams[i], 1e-4f);
}

TEST_CASE("a 1000-step GRU unroll backpropagates") {
  manual_seed(9);
  nn::GRU gru(2, 3);
  Tensor x = randn({1000, 2, 2}, true);
  gru.forward(x).output.sum().backward();
  CHECK(std::isfinite(x.grad().abs().sum().item()));
  CHECK(x.grad().select(0, 0).abs().sum().item() > 0.0f);  // the gradient reaches the first step
  // The same length as 1000 GRUCell nodes chained in a graph, walked by the iterative engine.
  nn::GRUCell cell(2, 3);
  Tensor xs = randn({2, 2}, true);
  Tensor h;
  for (int t = 0; t < 1000; ++t) h = cell.forward(xs, h);
  h.sum().backward();
  CHECK(std::isfinite(cell.weight_hh.grad().abs().sum().item()));
}

TEST_CASE("GRU gives bitwise identical results with 1 and 2 threads") {
  auto once = [] {
    manual_seed(4);
    nn::GRU gru(24, 64, {.num_layers = 2, .bidirectional = true});
    Tensor x = randn({5, 64, 24}, true);  // B·H large enough for the gate kernel to go parallel
    const nn::GRUOutput out = gru.forward(x);
    (out.output.pow(2.0f).sum() + out.h_n.sum()).backward();
    V all = out.output.to_vector();
    for (const Tensor& t : gru.parameters()) {
      const V g = t.grad().to_vector();
      all.insert(all.end(), g.begin(), g.end());
    }
    const V dx = x.grad().to_vector();
    all.insert(all.end(), dx.begin(), dx.end());
    return all;
  };
  check_bitwise_identical_with_1_and_2_threads(once);
}

TEST_CASE("GRU names the shapes it expected") {
  nn::GRU gru(3, 4, {.num_layers = 2});
  CHECK_THROWS_WITH_AS(gru.forward(zeros({5, 2, 7})), "GRU: x has shape (5,2,7), expected (T, B, 3)", ShapeError);
  CHECK_THROWS_WITH_AS(gru.forward(zeros({5, 2, 3}), zeros({1, 2, 4})),
                       "GRU: h0 has shape (1,2,4), expected (num_layers·directions, B, H) = (2,2,4)", ShapeError);
  nn::GRUCell cell(3, 4);
  CHECK_THROWS_WITH_AS(cell.forward(zeros({2, 3}), zeros({3, 4})), "GRUCell: h has shape (3,4), expected (2,4)",
                       ShapeError);
  CHECK_THROWS_AS(nn::GRU(3, 4, {.dropout = 1.0f}), ValueError);
  CHECK_THROWS_AS(nn::GRU(3, 4, {.num_layers = 0}), ValueError);
}
