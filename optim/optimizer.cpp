#include "optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "autograd/grad_mode.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::optim {
namespace {

// "state.12.exp_avg" → (12, "exp_avg"); "param_groups.0.lr" → (0, "lr"). False if not of that form.
bool split_key(const std::string& key, const std::string& prefix, size_t& index, std::string& field) {
  if (key.compare(0, prefix.size(), prefix) != 0) return false;
  const size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size() || dot + 1 == key.size()) return false;
  index = 0;
  for (size_t k = prefix.size(); k < dot; ++k) {
    if (key[k] < '0' || key[k] > '9' || index > 100000000) return false;
    index = index * 10 + static_cast<size_t>(key[k] - '0');
  }
  field = key.substr(dot + 1);
  return true;
}

// A learning rate or weight decay: finite and >= 0 (NaN is neither).
bool valid_rate(double value) { return value >= 0.0 && std::isfinite(value); }

}  // namespace

std::string Optimizer::format(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

void Optimizer::require(bool ok, const std::string& what) const {
  if (!ok) throw ValueError(name_ + ": " + what);
}

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups, double lr, double weight_decay,
                     std::vector<std::string> buffers)
    : name_(std::move(name)), buffer_names_(std::move(buffers)) {
  require(!groups.empty(), "got no parameter groups");
  std::set<const TensorImpl*> seen;
  for (size_t g = 0; g < groups.size(); ++g) {
    Group group{{}, groups[g].lr.value_or(lr), groups[g].weight_decay.value_or(weight_decay)};
    // Finite: an infinite rate or decay turns every parameter into inf or NaN at the first step.
    require(valid_rate(group.lr), "invalid learning rate " + format(group.lr) + " in group " + std::to_string(g));
    require(valid_rate(group.weight_decay),
            "invalid weight_decay " + format(group.weight_decay) + " in group " + std::to_string(g));
    for (const Tensor& p : groups[g].params) {
      const std::string which = "parameter " + std::to_string(params_.size());
      require(p.defined(), which + " is undefined");
      require(p.is_leaf() && p.requires_grad(), which + " is not a leaf that requires grad");
      require(p.is_contiguous(), which + " is not contiguous");
      require(seen.insert(p.impl()).second, which + " appears twice");
      group.members.push_back(params_.size());
      params_.push_back(p);
    }
    groups_.push_back(std::move(group));
  }
  require(!params_.empty(), "got an empty parameter list");
  state_.resize(params_.size());
}

void Optimizer::step() {
  NoGradGuard no_grad;
  for (const Group& group : groups_)
    for (size_t i : group.members) {
      Tensor& p = params_[i];
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (!g.is_contiguous()) g = g.contiguous();
      ParamState& s = state_[i];
      if (s.buffers.size() != buffer_names_.size())
        for (size_t b = 0; b < buffer_names_.size(); ++b) s.buffers.push_back(zeros(p.shape()));
      ++s.step;
      update(p.data(), g.data(), p.numel(), group.lr, group.weight_decay, s);
      // The write went around Tensor's in-place methods: tell autograd the values changed.
      p.storage()->bump_version();
    }
}

void Optimizer::zero_grad(bool set_to_none) {
  for (Tensor& p : params_) p.zero_grad(set_to_none);
}

double Optimizer::lr(size_t group) const {
  require(group < groups_.size(), "no parameter group " + std::to_string(group));
  return groups_[group].lr;
}

void Optimizer::set_lr(double lr) {
  for (size_t g = 0; g < groups_.size(); ++g) set_lr(g, lr);
}

void Optimizer::set_lr(size_t group, double lr) {
  require(group < groups_.size(), "no parameter group " + std::to_string(group));
  require(valid_rate(lr), "invalid learning rate " + format(lr));
  groups_[group].lr = lr;
}

double Optimizer::weight_decay(size_t group) const {
  require(group < groups_.size(), "no parameter group " + std::to_string(group));
  return groups_[group].weight_decay;
}

OptimizerState Optimizer::state_dict() const {
  OptimizerState out;
  for (size_t g = 0; g < groups_.size(); ++g) {
    out.scalars["param_groups." + std::to_string(g) + ".lr"] = groups_[g].lr;
    out.scalars["param_groups." + std::to_string(g) + ".weight_decay"] = groups_[g].weight_decay;
  }
  for (size_t i = 0; i < state_.size(); ++i) {
    if (state_[i].step == 0) continue;
    const std::string prefix = "state." + std::to_string(i) + ".";
    out.scalars[prefix + "step"] = static_cast<double>(state_[i].step);
    for (size_t b = 0; b < buffer_names_.size(); ++b) out.tensors[prefix + buffer_names_[b]] = state_[i].buffers[b];
  }
  return out;
}

std::vector<std::string> Optimizer::check_state_dict(const OptimizerState& state) const {
  std::vector<std::string> unexpected, missing, invalid;
  // Which parameters have state: those with any "state.<i>.*" entry.
  std::set<size_t> stateful;
  for (const auto& [key, value] : state.scalars) {
    size_t index;
    std::string field;
    if (split_key(key, "state.", index, field) && field == "step" && index < params_.size()) {
      stateful.insert(index);
      if (!(value >= 1.0 && value <= 9e15 && value == static_cast<double>(static_cast<int64_t>(value))))
        invalid.push_back(key + " = " + format(value) + " (expected a whole number >= 1)");
    } else if (split_key(key, "param_groups.", index, field) && index < groups_.size() &&
               (field == "lr" || field == "weight_decay")) {
      if (!valid_rate(value)) invalid.push_back(key + " = " + format(value) + " (expected a finite number >= 0)");
    } else {
      unexpected.push_back(key);
    }
  }
  for (const auto& [key, t] : state.tensors) {
    size_t index;
    std::string field;
    bool known = split_key(key, "state.", index, field) && index < params_.size();
    known = known && std::find(buffer_names_.begin(), buffer_names_.end(), field) != buffer_names_.end();
    if (!known) {
      unexpected.push_back(key);
      continue;
    }
    stateful.insert(index);
    if (!t.defined() || t.shape() != params_[index].shape())
      invalid.push_back(key + " (expected shape " + shape_str(params_[index].shape()) + ", got " +
                        (t.defined() ? shape_str(t.shape()) : "undefined") + ")");
  }
  for (size_t g = 0; g < groups_.size(); ++g)
    for (const char* field : {".lr", ".weight_decay"})
      if (!state.scalars.count("param_groups." + std::to_string(g) + field))
        missing.push_back("param_groups." + std::to_string(g) + field);
  for (size_t i : stateful) {
    const std::string prefix = "state." + std::to_string(i) + ".";
    if (!state.scalars.count(prefix + "step")) missing.push_back(prefix + "step");
    for (const std::string& b : buffer_names_)
      if (!state.tensors.count(prefix + b)) missing.push_back(prefix + b);
  }

  std::vector<std::string> problems;
  auto report = [&problems](const char* what, const std::vector<std::string>& keys) {
    if (keys.empty()) return;
    std::string line = what;
    for (const std::string& k : keys) line += " " + k + ";";
    problems.push_back(line);
  };
  report("missing keys:", missing);
  report("unexpected keys:", unexpected);
  report("invalid values:", invalid);
  return problems;
}

void Optimizer::load_state_dict(const OptimizerState& state) {
  const std::vector<std::string> problems = check_state_dict(state);
  if (!problems.empty()) {
    std::string message = "load_state_dict: cannot load into " + name_ + " (nothing was changed):";
    for (const std::string& line : problems) message += "\n  " + line;
    throw ValueError(message);
  }
  // The parameters with state are those with a step: check_state_dict saw all their entries.
  std::set<size_t> stateful;
  for (const auto& [key, value] : state.scalars) {
    size_t index;
    std::string field;
    if (split_key(key, "state.", index, field) && field == "step") stateful.insert(index);
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].lr = state.scalars.at("param_groups." + std::to_string(g) + ".lr");
    groups_[g].weight_decay = state.scalars.at("param_groups." + std::to_string(g) + ".weight_decay");
  }
  for (size_t i = 0; i < state_.size(); ++i) {
    ParamState fresh;
    if (stateful.count(i)) {
      const std::string prefix = "state." + std::to_string(i) + ".";
      fresh.step = static_cast<int64_t>(state.scalars.at(prefix + "step"));
      for (const std::string& b : buffer_names_) fresh.buffers.push_back(state.tensors.at(prefix + b).detach().clone());
    }
    state_[i] = std::move(fresh);
  }
}

}  // namespace qkv::optim
