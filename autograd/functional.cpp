#include "autograd/functional.h"

#include <string>

#include "autograd/engine.h"
#include "autograd/function.h"
#include "autograd/grad_mode.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"

namespace qkv {
namespace {

// Copies of the inputs that are leaves of their own and require grad, so that f's graph starts at
// them and the caller's tensors are left alone.
std::vector<Tensor> fresh_leaves(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> xs;
  for (const Tensor& x : inputs) {
    Tensor copy = x.detach().clone();
    copy.requires_grad_(true);
    xs.push_back(copy);
  }
  return xs;
}

void check_directions(const char* who, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v) {
  if (v.size() != inputs.size())
    throw ValueError(std::string(who) + ": " + std::to_string(v.size()) + " directions v for " +
                     std::to_string(inputs.size()) + " inputs (give one per input)");
  for (size_t i = 0; i < v.size(); ++i)
    if (!v[i].defined() || v[i].shape() != inputs[i].shape())
      throw ShapeError(std::string(who) + ": v[" + std::to_string(i) + "] of shape " +
                       (v[i].defined() ? shape_str(v[i].shape()) : std::string("undefined")) +
                       " does not match input " + std::to_string(i) + " of shape " + shape_str(inputs[i].shape()));
}

// The gradients, with zeros for an input the outputs do not depend on.
std::vector<Tensor> or_zeros(std::vector<Tensor> grads, const std::vector<Tensor>& like) {
  for (size_t i = 0; i < grads.size(); ++i)
    if (!grads[i].defined()) grads[i] = zeros(like[i].shape());
  return grads;
}

}  // namespace

namespace {

// H·v of f at xs, the leaves it reads.
FunctionalResult hvp_at(const std::function<Tensor()>& f, const std::vector<Tensor>& xs, const std::vector<Tensor>& v) {
  check_directions("hvp", xs, v);
  const GradModeGuard grad_mode(true);
  const Tensor y = f();
  if (y.numel() != 1)
    throw ShapeError("hvp: f must return a scalar (a Hessian is of a scalar function), got shape " +
                     shape_str(y.shape()));
  BackwardOptions twice;
  twice.create_graph = true;
  twice.allow_unused = true;
  const std::vector<Tensor> g = grad({y}, xs, {}, twice);  // ∇f, recorded
  Tensor dot;  // ∇f · v, whose gradient is H·v
  for (size_t i = 0; i < g.size(); ++i) {
    if (!g[i].defined() || !g[i].requires_grad()) continue;  // f is at most linear in x_i
    const Tensor term = (g[i] * v[i].detach()).sum();
    dot = dot.defined() ? dot + term : term;
  }
  BackwardOptions once;
  once.allow_unused = true;
  std::vector<Tensor> product = dot.defined() ? grad({dot}, xs, {}, once) : std::vector<Tensor>(xs.size());
  return {y.detach(), or_zeros(std::move(product), xs)};
}

}  // namespace

FunctionalResult hvp(const TensorsFn& f, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v) {
  const std::vector<Tensor> xs = fresh_leaves(inputs);
  return hvp_at([&] { return f(xs); }, xs, v);
}

FunctionalResult hvp_tensors(const std::function<Tensor()>& f, const std::vector<Tensor>& tensors,
                             const std::vector<Tensor>& v) {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (!tensors[i].defined() || !tensors[i].is_leaf() || !tensors[i].requires_grad())
      throw ValueError("hvp_tensors: tensor " + std::to_string(i) + " must be a leaf that requires grad");
  return hvp_at(f, tensors, v);
}

FunctionalResult jvp(const TensorsFn& f, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v) {
  check_directions("jvp", inputs, v);
  const GradModeGuard grad_mode(true);
  const std::vector<Tensor> xs = fresh_leaves(inputs);
  const Tensor y = f(xs);
  if (!y.requires_grad()) return {y.detach(), {zeros(y.shape())}};  // f does not depend on x
  // g(u) = Jᵀu, recorded; u is a dummy output gradient whose value does not matter.
  const Tensor u = zeros(y.shape()).requires_grad_(true);
  BackwardOptions twice;
  twice.create_graph = true;
  twice.allow_unused = true;
  const std::vector<Tensor> g = grad({y}, xs, {u}, twice);
  // The gradient of Σ_i v_i·g_i(u) with respect to u is Σ_i J_i v_i = J·v.
  std::vector<Tensor> outputs, directions;
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i].defined() && g[i].requires_grad()) outputs.push_back(g[i]), directions.push_back(v[i].detach());
  if (outputs.empty()) return {y.detach(), {zeros(y.shape())}};
  BackwardOptions once;
  once.allow_unused = true;
  const std::vector<Tensor> jv = grad(outputs, {u}, directions, once);
  return {y.detach(), or_zeros(jv, {y})};
}

Tensor checkpoint(const TensorsFn& fn, const std::vector<Tensor>& inputs) {
  // With no input to send a gradient to, there is no node to hang the recomputation on: fn is
  // recorded as usual (a model's first block takes the embeddings, which require grad).
  if (!autograd::needs_graph(inputs)) return fn(inputs);
  const autograd::Op op("checkpoint");
  // Where the default generator stood, so that the recomputation draws the same dropout masks.
  const GeneratorState before = default_generator().state();
  Tensor out;
  {
    const NoGradGuard no_grad;  // nothing inside fn is recorded, so nothing inside it is kept
    out = fn(inputs).detach();  // a tensor of its own, even when fn returns one it was given
  }
  const auto recompute = [fn, before](const Tensor& g, const autograd::BackwardContext& ctx,
                                      bool create_graph) -> std::vector<Tensor> {
    const GradModeGuard grad_mode(true);
    // Each input as the output of an identity of its own, attached where the input came from: the
    // walk below stops there, and hands back what arrived.
    std::vector<Tensor> xs, stops;
    std::vector<size_t> stop_of;
    for (size_t i = 0; i < ctx.saved.size(); ++i) {
      Tensor x = ctx.node->attach_input(i, ctx.saved[i].detach());
      if (ctx.needs[i]) {
        x = autograd::identity(x);
        stops.push_back(x);
        stop_of.push_back(i);
      }
      xs.push_back(x);
    }
    const GeneratorState after = default_generator().state();
    default_generator().set_state(before);
    const Tensor again = fn(xs);
    default_generator().set_state(after);
    std::vector<Tensor> grads(ctx.saved.size());
    if (!again.requires_grad()) return grads;
    BackwardOptions options;
    options.create_graph = create_graph;
    const std::vector<Tensor> caught = autograd::backward_until(again, g, stops, options);
    for (size_t k = 0; k < stops.size(); ++k) grads[stop_of[k]] = caught[k];
    return grads;
  };
  return op.record(
      out, inputs, inputs,
      [recompute](const Tensor& g, const autograd::BackwardContext& ctx) { return recompute(g, ctx, false); },
      [recompute](const Tensor& g, const autograd::BackwardContext& ctx) { return recompute(g, ctx, true); });
}

}  // namespace qkv
