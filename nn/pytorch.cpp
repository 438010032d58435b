#include "nn/pytorch.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "autograd/grad_mode.h"
#include "nn/attention.h"
#include "nn/transformer.h"
#include "nn/transformer_decoder.h"
#include "tensor/error.h"

namespace qkv::nn {
namespace {

// {PyTorch's name, qkv's name} of the parts of a layer, relative to the layer's own prefix.
using NamePairs = std::vector<std::pair<std::string, std::string>>;

NamePairs encoder_layer_names(const TransformerEncoderBlock& block) {
  const bool post = block.norm == NormPlacement::Post;
  return {{"self_attn.", "attention."},
          {"linear1.", "ffn.dense1."},
          {"linear2.", "ffn.dense2."},
          {"norm1.", post ? "addnorm1.ln." : "norm1."},
          {"norm2.", post ? "addnorm2.ln." : "norm2."}};
}

NamePairs decoder_layer_names(const TransformerDecoderBlock& block) {
  const bool post = block.norm == NormPlacement::Post;
  return {{"self_attn.", "attention1."},
          {"multihead_attn.", "attention2."},
          {"linear1.", "ffn.dense1."},
          {"linear2.", "ffn.dense2."},
          {"norm1.", post ? "addnorm1.ln." : "norm1."},
          {"norm2.", post ? "addnorm2.ln." : "norm2."},
          {"norm3.", post ? "addnorm3.ln." : "norm3."}};
}

// The names of a layer's parts, if it is one whose parts PyTorch names otherwise.
NamePairs layer_names(const Module& m) {
  if (const auto* block = dynamic_cast<const TransformerEncoderBlock*>(&m)) return encoder_layer_names(*block);
  if (const auto* block = dynamic_cast<const TransformerDecoderBlock*>(&m)) return decoder_layer_names(*block);
  return {};
}

bool is_stack(const Module& m) {
  return dynamic_cast<const TransformerEncoder*>(&m) || dynamic_cast<const TransformerDecoder*>(&m);
}

// The three projections, in the order PyTorch packs their rows, and PyTorch's names for their
// weights when it keeps them apart (kdim or vdim other than the embedding size).
const char* const kProjections[] = {"W_q.", "W_k.", "W_v."};
const char* const kSeparateWeights[] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};

// The state being converted, with the name each entry had in the input: two input entries that
// would land on one name (a packed in_proj_weight and a separate q_proj_weight, PyTorch's out_proj
// and qkv's W_o, layers.0 and blocks.0) are refused naming both, not resolved by whichever came
// last.
class Conversion {
 public:
  Conversion(const char* op, StateDict state) : op_(op), state_(std::move(state)) {
    for (const auto& [name, t] : state_) origin_.emplace(name, name);
  }

  StateDict take() { return std::move(state_); }

  // Moves every entry whose name starts with prefix + from to prefix + to.
  void rename(const std::string& prefix, const std::string& from, const std::string& to) {
    if (from == to) return;
    const std::string old_start = prefix + from;
    std::vector<std::string> names;
    for (auto it = state_.lower_bound(old_start); it != state_.end() && it->first.starts_with(old_start); ++it)
      names.push_back(it->first);
    std::vector<Entry> moved;
    for (const std::string& name : names) moved.push_back(remove(name, prefix + to + name.substr(old_start.size())));
    for (Entry& e : moved) put(std::move(e));
  }

  // packed (3D, ...) → W_q, W_k, W_v + suffix, (D, ...) each: rows [0, D), [D, 2D), [2D, 3D).
  void unpack(const std::string& p, const std::string& packed, const std::string& suffix) {
    if (!state_.count(p + packed)) return;
    const Tensor t = state_.at(p + packed);
    if (t.dim() == 0 || t.size(0) % 3 != 0)
      throw ValueError(std::string(op_) + ": " + p + packed + " has shape " + shape_str(t.shape()) +
                       ", expected a first dimension of 3·D (query, key and value rows)");
    const int64_t D = t.size(0) / 3;
    const Entry whole = remove(p + packed, "");
    for (int i = 0; i < 3; ++i) put({p + kProjections[i] + suffix, t.narrow(0, i * D, D), whole.origin});
  }

  // The reverse: the three stacked along the first dim, when all three are there.
  void pack(const std::string& p, const std::string& packed, const std::string& suffix) {
    std::vector<Tensor> parts;
    for (const char* projection : kProjections) {
      auto it = state_.find(p + projection + suffix);
      if (it == state_.end()) return;
      parts.push_back(it->second);
    }
    std::string origin;
    for (const char* projection : kProjections) origin = remove(p + projection + suffix, "").origin;
    put({p + packed, cat(parts, 0), origin});
  }

 private:
  struct Entry {
    std::string name;
    Tensor tensor;
    std::string origin;  // its name in the input
  };

  // The entry `name`, taken out, to be put back as `new_name`.
  Entry remove(const std::string& name, std::string new_name) {
    Entry e{std::move(new_name), state_.at(name), origin_.at(name)};
    state_.erase(name);
    origin_.erase(name);
    return e;
  }

  void put(Entry e) {
    if (auto it = origin_.find(e.name); it != origin_.end())
      throw ValueError(std::string(op_) + ": " + it->second + " and " + e.origin + " are both " + e.name +
                       " (one under PyTorch's name, one under qkv's, or packed and apart): keep one of them");
    origin_.emplace(e.name, e.origin);
    state_.emplace(std::move(e.name), std::move(e.tensor));
  }

  const char* op_;
  StateDict state_;
  std::map<std::string, std::string> origin_;
};

void from_torch_attention(Conversion& state, const std::string& p) {
  state.unpack(p, "in_proj_weight", "weight");
  state.unpack(p, "in_proj_bias", "bias");
  for (int i = 0; i < 3; ++i) state.rename(p, kSeparateWeights[i], std::string(kProjections[i]) + "weight");
  state.rename(p, "out_proj.", "W_o.");
}

// PyTorch packs the weights when the keys and values have the queries' width, the embedding size.
void to_torch_attention(Conversion& state, const std::string& p, const MultiHeadAttention& mha) {
  const int64_t D = mha.W_q->out_features;
  if (mha.W_q->in_features == D && mha.W_k->in_features == D && mha.W_v->in_features == D)
    state.pack(p, "in_proj_weight", "weight");
  else
    for (int i = 0; i < 3; ++i)
      state.rename(p, std::string(kProjections[i]) + "weight", kSeparateWeights[i]);
  state.pack(p, "in_proj_bias", "bias");
  state.rename(p, "W_o.", "out_proj.");
}

// Parents before children: a block's renames put its attention's entries under qkv's prefix
// before the attention unpacks them.
void from_torch(const Module& m, const std::string& prefix, Conversion& state) {
  if (is_stack(m)) state.rename(prefix, "layers.", "blocks.");
  for (const auto& [torch_name, qkv_name] : layer_names(m)) state.rename(prefix, torch_name, qkv_name);
  if (dynamic_cast<const MultiHeadAttention*>(&m)) from_torch_attention(state, prefix);
  for (const auto& [name, child] : m.named_children()) from_torch(*child, prefix + name + ".", state);
}

// Children before parents, the reverse order.
void to_torch(const Module& m, const std::string& prefix, Conversion& state) {
  for (const auto& [name, child] : m.named_children()) to_torch(*child, prefix + name + ".", state);
  if (const auto* mha = dynamic_cast<const MultiHeadAttention*>(&m)) to_torch_attention(state, prefix, *mha);
  for (const auto& [torch_name, qkv_name] : layer_names(m)) state.rename(prefix, qkv_name, torch_name);
  if (is_stack(m)) state.rename(prefix, "blocks.", "layers.");
}

}  // namespace

StateDict from_torch_state_dict(const Module& model, const StateDict& torch_state) {
  NoGradGuard no_grad;
  Conversion state("from_torch_state_dict", torch_state);
  from_torch(model, "", state);
  return state.take();
}

StateDict to_torch_state_dict(const Module& model) {
  NoGradGuard no_grad;
  Conversion state("to_torch_state_dict", model.state_dict());
  to_torch(model, "", state);
  return state.take();
}

}  // namespace qkv::nn
