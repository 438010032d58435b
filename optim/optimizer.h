// Optimizer: the base of SGD, Adam and AdamW (optim/sgd.h, optim/adam.h).
//
// An optimizer holds the parameters it updates, in groups that share a learning rate and weight
// decay (so that biases and LayerNorm gains can go without weight decay), and a state per
// parameter: a step count and buffers such as Adam's moment estimates. A training step is
//
//   optimizer.zero_grad();
//   loss.backward();
//   optimizer.step();
//
// step() updates in place, with grad mode off, every parameter that has a gradient; parameters
// whose .grad() is undefined are skipped and their state does not advance (as in PyTorch). Each
// update is one fused loop over the raw floats of a parameter, split across threads by element,
// so results do not depend on the thread count.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace qkv::optim {

// Parameters that share hyperparameters; an unset value is taken from the optimizer's options.
//   AdamW opt({{.params = weights}, {.params = biases_and_norms, .weight_decay = 0.0}}, {.lr = 3e-4});
struct ParamGroup {
  std::vector<Tensor> params{};
  std::optional<double> lr{};
  std::optional<double> weight_decay{};
};

// What an optimizer needs to resume exactly where it stopped. Parameters are numbered in the
// order the optimizer received them, across groups (PyTorch numbers them the same way):
//   tensors  "state.<i>.<buffer>"     e.g. "state.3.exp_avg", the shape of parameter i
//   scalars  "state.<i>.step"         updates parameter i has received
//            "param_groups.<g>.lr", "param_groups.<g>.weight_decay"
// A parameter that has not been updated yet has no "state.<i>.*" entries. The other
// hyperparameters (betas, momentum, ...) are not saved: they come from the constructor.
struct OptimizerState {
  std::map<std::string, Tensor> tensors{};
  std::map<std::string, double> scalars{};
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient.
  void step();
  // Drops every parameter's gradient (set_to_none, PyTorch's default) or fills it with zeros.
  void zero_grad(bool set_to_none = true);

  // ---- learning rate: what schedulers change -------------------------------------------------
  size_t num_groups() const { return groups_.size(); }
  double lr(size_t group = 0) const;
  void set_lr(double lr);  // every group
  void set_lr(size_t group, double lr);
  double weight_decay(size_t group = 0) const;

  // Every parameter, in the numbering of OptimizerState.
  const std::vector<Tensor>& params() const { return params_; }
  const std::string& name() const { return name_; }

  // ---- state -----------------------------------------------------------------------------------
  // The optimizer's own buffers (not copies), as a module's state_dict gives its own tensors.
  OptimizerState state_dict() const;
  // Copies a state into this optimizer. Every problem (unknown or missing keys, wrong shapes,
  // a state for parameters or groups this optimizer does not have) is found before anything is
  // written and reported in one ValueError, so a failed load leaves the optimizer as it was.
  void load_state_dict(const OptimizerState& state);
  // The problems load_state_dict would report, one line each ("missing keys: state.0.step;");
  // empty when the state fits.
  std::vector<std::string> check_state_dict(const OptimizerState& state) const;

 protected:
  // `buffers` names the per-parameter tensors the subclass keeps, each of its parameter's shape.
  Optimizer(std::string name, std::vector<ParamGroup> groups, double lr, double weight_decay,
            std::vector<std::string> buffers);

  struct ParamState {
    int64_t step = 0;             // already counts the update being made when update() runs
    std::vector<Tensor> buffers;  // in the order of `buffers`, zeros before the first update
  };
  // Updates the n floats of one contiguous parameter p from its gradient g.
  virtual void update(float* p, const float* g, int64_t n, double lr, double weight_decay, ParamState& state) = 0;

  // Throws ValueError naming this optimizer unless ok.
  void require(bool ok, const std::string& what) const;
  static std::string format(double value);  // shortest readable form: 0.001, 1e-08

 private:
  struct Group {
    std::vector<size_t> members;  // indices into params_
    double lr;
    double weight_decay;
  };
  std::string name_;
  std::vector<Tensor> params_;
  std::vector<Group> groups_;
  std::vector<std::string> buffer_names_;
  std::vector<ParamState> state_;
};

}  // namespace qkv::optim
