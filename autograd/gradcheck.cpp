#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv {
namespace {

// L = Σ r ⊙ y, accumulated in double so the finite differences lose as little as possible.
double project(const Tensor& y, const std::vector<float>& r) {
  const std::vector<float> v = y.to_vector();
  double acc = 0.0;
  for (size_t i = 0; i < v.size(); ++i) acc += static_cast<double>(r[i]) * v[i];
  return acc;
}

// Private copies of the inputs, leaves of their own, so the caller's tensors are left untouched.
// They keep the inputs' names; `checked` are those that require grad, reported at `positions`.
struct PrivateCopies {
  std::vector<Tensor> all, checked;
  std::vector<int64_t> positions;
};

PrivateCopies private_copies(const std::vector<Tensor>& inputs) {
  PrivateCopies c;
  for (const Tensor& in : inputs) {
    Tensor copy = in.detach().clone();
    if (!in.name().empty()) copy.set_name(in.name());
    if (in.requires_grad()) {
      copy.requires_grad_(true);
      c.checked.push_back(copy);
      c.positions.push_back(static_cast<int64_t>(c.all.size()));
    }
    c.all.push_back(copy);
  }
  return c;
}

// With `numeric_in_grad_mode`, fn is evaluated with grad mode on for the finite differences too (it
// takes a gradient itself).
GradcheckResult check(const std::function<Tensor()>& fn, const std::vector<Tensor>& tensors,
                      const std::vector<int64_t>& positions, const GradcheckOptions& options,
                      bool numeric_in_grad_mode = false);

// The first gradient as a function: G = ∂(Σ v ⊙ fn())/∂tensors with create_graph, flattened and
// concatenated (zeros for a tensor fn does not use).
std::function<Tensor()> first_gradient(const std::function<Tensor()>& fn, const std::vector<Tensor>& tensors,
                                       const Tensor& v) {
  return [fn, tensors, v] {
    BackwardOptions options;
    options.create_graph = true;
    options.allow_unused = true;
    const std::vector<Tensor> grads = grad({fn()}, tensors, {v}, options);
    std::vector<Tensor> flat;
    for (size_t k = 0; k < tensors.size(); ++k)
      flat.push_back(grads[k].defined() ? grads[k].reshape({-1}) : zeros({tensors[k].numel()}));
    return cat(flat, 0);
  };
}

// The first gradient G recorded with create_graph (`recorded`, flat) against backward's: they must
// agree within gradcheck's tolerance.
GradcheckResult same_first_gradient(const std::vector<float>& recorded, const std::function<Tensor()>& fn,
                                    const std::vector<Tensor>& tensors, const std::vector<int64_t>& positions,
                                    const Tensor& v, const GradcheckOptions& options) {
  BackwardOptions plain;
  plain.allow_unused = true;
  const std::vector<Tensor> grads = grad({fn()}, tensors, {v.detach()}, plain);
  size_t at = 0;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const std::vector<float> want =
        grads[k].defined() ? grads[k].to_vector() : std::vector<float>(static_cast<size_t>(tensors[k].numel()), 0.0f);
    for (size_t i = 0; i < want.size(); ++i, ++at) {
      const double err = std::fabs(static_cast<double>(recorded[at]) - want[i]);
      if (!(err <= options.atol + options.rtol * std::fabs(want[i]))) {
        GradcheckResult result;
        result.ok = false;
        result.worst_input = positions[k];
        result.worst_index = static_cast<int64_t>(i);
        result.analytic = recorded[at];
        result.numeric = want[i];
        result.error = err;
        std::ostringstream message;
        message << "the gradient recorded with create_graph differs from backward's: input " << positions[k]
                << " index " << i << ": " << recorded[at] << " vs " << want[i];
        result.message = message.str();
        return result;
      }
    }
  }
  return {};
}

// gradgradcheck of fn with respect to `tensors`, reported at `positions`; v is reported as the
// input after the last.
GradcheckResult check_twice(const std::function<Tensor()>& fn, const std::vector<Tensor>& tensors,
                            std::vector<int64_t> positions, int64_t v_position, const GradcheckOptions& options) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = fn();
  }
  Generator gen(options.seed + 1);
  const Tensor v = uniform(y.shape(), -1.0f, 1.0f, false, &gen).set_name("grad_output").requires_grad_(true);
  // The rules that record a graph are not the ones backward runs: first, both must give the same
  // first gradient (the finite differences below check G's derivatives, not G itself).
  const std::function<Tensor()> graph_gradient = first_gradient(fn, tensors, v);
  GradcheckResult same = same_first_gradient(graph_gradient().to_vector(), fn, tensors, positions, v, options);
  if (!same.ok) return same;
  std::vector<Tensor> checked = tensors;
  checked.push_back(v);
  positions.push_back(v_position);
  return check(graph_gradient, checked, positions, options, true);
}

}  // namespace

GradcheckResult gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options) {
  const PrivateCopies c = private_copies(inputs);
  return check_twice([&] { return fn(c.all); }, c.checked, c.positions, static_cast<int64_t>(c.all.size()), options);
}

GradcheckResult gradgradcheck_tensors(const std::function<Tensor()>& fn, const std::vector<Tensor>& tensors,
                                      const GradcheckOptions& options) {
  std::vector<int64_t> positions(tensors.size());
  for (size_t k = 0; k < tensors.size(); ++k) positions[k] = static_cast<int64_t>(k);
  return check_twice(fn, tensors, positions, static_cast<int64_t>(tensors.size()), options);
}

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  const PrivateCopies c = private_copies(inputs);
  return check([&] { return fn(c.all); }, c.checked, c.positions, options);
}

GradcheckResult gradcheck_tensors(const std::function<Tensor()>& fn, const std::vector<Tensor>& tensors,
                                  const GradcheckOptions& options) {
  std::vector<int64_t> positions(tensors.size());
  for (size_t k = 0; k < tensors.size(); ++k) positions[k] = static_cast<int64_t>(k);
  return check(fn, tensors, positions, options);
}

namespace {

// tensors[k] is reported as input positions[k].
GradcheckResult check(const std::function<Tensor()>& fn, const std::vector<Tensor>& tensors,
                      const std::vector<int64_t>& positions, const GradcheckOptions& options,
                      bool numeric_in_grad_mode) {
  GradcheckResult result;
  for (const Tensor& t : tensors)
    if (!t.is_leaf() || !t.requires_grad() || !t.is_contiguous())
      throw ValueError("gradcheck: every checked tensor must be a contiguous leaf that requires grad");
  for (Tensor t : tensors) t.zero_grad();

  const Tensor y = fn();
  Generator gen(options.seed);
  const Tensor r = uniform(y.shape(), -1.0f, 1.0f, false, &gen);
  const std::vector<float> rv = r.to_vector();
  if (!y.requires_grad()) {
    result.ok = false;
    result.message = "the output does not require grad: no input reaches it through the graph";
    return result;
  }
  (y * r).sum().backward();

  // "input 2", or "input 2 (blocks.0.attention.W_q.weight)" for a named tensor such as a parameter.
  auto label = [&](size_t k) {
    const std::string& name = tensors[k].name();
    return "input " + std::to_string(positions[k]) + (name.empty() ? "" : " (" + name + ")");
  };
  std::ostringstream fail;
  double worst_excess = -1.0;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Tensor analytic = tensors[k].grad();
    const std::vector<float> a = analytic.defined()
                                     ? analytic.to_vector()
                                     : std::vector<float>(static_cast<size_t>(tensors[k].numel()), 0.0f);
    // Perturb element by element: the tensor is contiguous, so flat index i is data()[i].
    Tensor x = tensors[k].detach();
    double max_numeric = 0.0, max_analytic = 0.0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const GradModeGuard grad_mode(numeric_in_grad_mode);
      const float saved = x.data()[i];
      x.data()[i] = saved + options.eps;
      const double plus = project(fn(), rv);
      x.data()[i] = saved - options.eps;
      const double minus = project(fn(), rv);
      x.data()[i] = saved;
      const double numeric = (plus - minus) / (2.0 * options.eps);
      const double err = std::fabs(a[i] - numeric);
      const double allowed = options.atol + options.rtol * std::fabs(numeric);
      max_numeric = std::max(max_numeric, std::fabs(numeric));
      max_analytic = std::max(max_analytic, std::fabs(static_cast<double>(a[i])));
      const double excess = std::isnan(err) ? INFINITY : err / allowed;
      if (excess > worst_excess) {
        worst_excess = excess;
        result.worst_input = static_cast<int64_t>(k);  // made a position at the end
        result.worst_index = i;
        result.analytic = a[i];
        result.numeric = numeric;
        result.error = err;
      }
    }
    if (max_analytic == 0.0 && max_numeric > options.atol) {
      result.ok = false;
      fail << label(k) << " of shape " << shape_str(x.shape()) << ": the analytic gradient is "
           << (analytic.defined() ? "identically zero" : "missing") << " but the numeric one reaches "
           << max_numeric << "; ";
    }
  }
  if (worst_excess > 1.0) {
    result.ok = false;
    fail << "worst element: " << label(static_cast<size_t>(result.worst_input)) << " index " << result.worst_index << ": analytic "
         << result.analytic << " vs numeric " << result.numeric << " (error " << result.error << ", allowed "
         << options.atol << " + " << options.rtol << "·|numeric|)";
  }
  result.message = fail.str();
  if (result.worst_input >= 0) result.worst_input = positions[static_cast<size_t>(result.worst_input)];
  return result;
}

}  // namespace

}  // namespace qkv
