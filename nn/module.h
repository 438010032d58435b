// Module: the base of every layer and model.
//
// A module owns named parameters (tensors that train), buffers (tensors that don't: a positional
// table, running statistics) and child modules. Registering them by name is what makes
// named_parameters() yield dotted paths like "blocks.0.attention.W_q.weight" that line up with
// checkpoints, and what lets train()/eval(), zero_grad() and state_dict() reach the whole tree.
//
// Writing a layer (docs/new_layer.md walks through one):
//
//   class Scale : public qkv::nn::Module {
//    public:
//     explicit Scale(int64_t d) {
//       gamma = register_parameter("gamma", qkv::ones({d}, true));
//     }
//     qkv::Tensor forward(const qkv::Tensor& x) const { return x * gamma; }
//     qkv::Tensor gamma;
//   };
//
// Members hold the same tensors (Tensors are handles) and the same child modules (shared_ptr)
// that the registry holds, so forward() reads them directly. There is no virtual forward: layers
// take different arguments (attention takes queries, keys, values and valid lengths). Sequential
// wraps modules whose forward maps one tensor to one tensor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace qkv::nn {

// Parameters and persistent buffers by dotted name. Sorted by name (like a safetensors header).
using StateDict = std::map<std::string, Tensor>;

// What a load did, as PyTorch's load_state_dict reports it (its missing_keys and unexpected_keys),
// each list sorted: the module's entries given a value, those the state lacked, and the state's
// entries the module has not. After a strict load, missing and unexpected are empty; a non-strict
// load that matched nothing has an empty `loaded`, which the caller can see.
struct LoadResult {
  std::vector<std::string> loaded, missing, unexpected;
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // ---- the tree ----------------------------------------------------------------------------
  // Parameters of this module and, if recurse, of all its descendants, in registration order.
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {
    return children_;
  }
  int64_t num_parameters() const;  // total elements of all parameters

  // ---- modes and gradients ------------------------------------------------------------------
  // Training mode (dropout active) or evaluation mode, for this module and all descendants.
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad(bool set_to_none = true);

  // ---- state --------------------------------------------------------------------------------
  // Parameters and persistent buffers by dotted name. The tensors are the module's own (not
  // copies): save them, or pass a state dict of the same names to load_state_dict.
  StateDict state_dict() const;
  // Copies values into this module's tensors. Every problem is found before anything is written
  // and reported in one Error: with strict, missing and unexpected keys; always, shape mismatches.
  // So a failed load leaves the module exactly as it was. Returns what was loaded and what was not.
  LoadResult load_state_dict(const StateDict& state, bool strict = true);
  // The problems load_state_dict would report, one line each ("missing keys: fc.bias;",
  // "shape mismatches: fc.weight (expected (3,4), got (4,3));"); empty when the state fits.
  std::vector<std::string> check_state_dict(const StateDict& state, bool strict = true) const;

  // A tree of the modules with their parameter counts, like printing a PyTorch model.
  std::string summary() const;
  // The class's name without its namespace ("Linear"), found through RTTI on first use, as
  // libtorch does: a layer need not spell its own name. In a base class's constructor the object is
  // not yet of the derived class, so it names the base there.
  const std::string& type_name() const;
  // Where this module sits, for error messages: its dotted path from the root of its tree and its
  // type, "encoder.blocks.0.attention (MultiHeadAttention)", or the type alone at the root. A layer
  // names itself this way when it refuses an argument, so the user reads their own model's names.
  std::string where() const;
  // One line describing this module's configuration, e.g. "in=64, out=32, bias=true".
  virtual std::string extra_repr() const { return ""; }

 protected:
  // Registration returns its argument, so a member can be set in the same line:
  //   weight = register_parameter("weight", Tensor::empty({out, in}));
  // A parameter is made a leaf that requires grad, and named (Tensor::name()) with its dotted path
  // from the root of the tree, as named_parameters() gives it; the name follows the module when
  // it is registered into a larger tree, so anomaly reports and graph dumps can show it.
  Tensor register_parameter(const std::string& name, Tensor param);
  // A buffer is state without gradient; non-persistent buffers are left out of state_dict.
  Tensor register_buffer(const std::string& name, Tensor buffer, bool persistent = true);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name) const;
  void summarize(std::string& out, const std::string& name, int depth) const;
  // Names this module's parameters, and its descendants', after its place `path` in the tree.
  void set_path(const std::string& path);

  mutable std::once_flag type_name_once_;
  mutable std::string type_name_;
  std::string path_;  // dotted, from the root of the tree this module is in ("" for the root)
  bool training_ = true;
  std::vector<std::pair<std::string, Tensor>> parameters_;
  struct Buffer {
    std::string name;
    Tensor tensor;
    bool persistent;
  };
  std::vector<Buffer> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

}  // namespace qkv::nn
