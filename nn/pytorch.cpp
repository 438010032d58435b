#include "nn/pytorch.h"

#include <string>
#include <utility>
#include <vector>

#include "autograd/grad_mode.h"
#include "nn/attention.h"
#include "nn/transformer.h"
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

// Moves every entry whose name starts with prefix + from to prefix + to.
void rename(StateDict& state, const std::string& prefix, const std::string& from, const std::string& to) {
  if (from == to) return;
  std::vector<std::pair<std::string, Tensor>> moved;
  const std::string old_start = prefix + from;
  for (auto it = state.lower_bound(old_start); it != state.end() && it->first.rfind(old_start, 0) == 0;) {
    moved.emplace_back(prefix + to + it->first.substr(old_start.size()), it->second);
    it = state.erase(it);
  }
  for (auto& [name, t] : moved) state.insert_or_assign(std::move(name), std::move(t));
}

// The three projections, in the order PyTorch packs their rows, and PyTorch's names for their
// weights when it keeps them apart (kdim or vdim other than the embedding size).
const char* const kProjections[] = {"W_q.", "W_k.", "W_v."};
const char* const kSeparateWeights[] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};

// packed (3D, ...) → W_q, W_k, W_v + suffix, (D, ...) each: rows [0, D), [D, 2D), [2D, 3D).
void unpack(StateDict& state, const std::string& p, const std::string& packed, const std::string& suffix) {
  auto it = state.find(p + packed);
  if (it == state.end()) return;
  const Tensor t = it->second;
  if (t.dim() == 0 || t.size(0) % 3 != 0)
    throw ValueError("from_torch_state_dict: " + p + packed + " has shape " + shape_str(t.shape()) +
                     ", expected a first dimension of 3·D (query, key and value rows)");
  const int64_t D = t.size(0) / 3;
  state.erase(it);
  for (int i = 0; i < 3; ++i) state.insert_or_assign(p + kProjections[i] + suffix, t.narrow(0, i * D, D));
}

// The reverse: the three stacked along the first dim, when all three are there.
void pack(StateDict& state, const std::string& p, const std::string& packed, const std::string& suffix) {
  std::vector<Tensor> parts;
  for (const char* projection : kProjections) {
    auto it = state.find(p + projection + suffix);
    if (it == state.end()) return;
    parts.push_back(it->second);
  }
  for (const char* projection : kProjections) state.erase(p + projection + suffix);
  state.insert_or_assign(p + packed, cat(parts, 0));
}

void from_torch_attention(StateDict& state, const std::string& p) {
  unpack(state, p, "in_proj_weight", "weight");
  unpack(state, p, "in_proj_bias", "bias");
  for (int i = 0; i < 3; ++i) rename(state, p, kSeparateWeights[i], std::string(kProjections[i]) + "weight");
  rename(state, p, "out_proj.", "W_o.");
}

// PyTorch packs the weights when the keys and values have the queries' width, the embedding size.
void to_torch_attention(StateDict& state, const std::string& p, const MultiHeadAttention& mha) {
  const int64_t D = mha.W_q->out_features;
  if (mha.W_q->in_features == D && mha.W_k->in_features == D && mha.W_v->in_features == D)
    pack(state, p, "in_proj_weight", "weight");
  else
    for (int i = 0; i < 3; ++i)
      rename(state, p, std::string(kProjections[i]) + "weight", kSeparateWeights[i]);
  pack(state, p, "in_proj_bias", "bias");
  rename(state, p, "W_o.", "out_proj.");
}

// Parents before children: a block's renames put its attention's entries under qkv's prefix
// before the attention unpacks them.
void from_torch(const Module& m, const std::string& prefix, StateDict& state) {
  if (dynamic_cast<const TransformerEncoder*>(&m)) rename(state, prefix, "layers.", "blocks.");
  if (const auto* block = dynamic_cast<const TransformerEncoderBlock*>(&m))
    for (const auto& [torch_name, qkv_name] : encoder_layer_names(*block))
      rename(state, prefix, torch_name, qkv_name);
  if (dynamic_cast<const MultiHeadAttention*>(&m)) from_torch_attention(state, prefix);
  for (const auto& [name, child] : m.named_children()) from_torch(*child, prefix + name + ".", state);
}

// Children before parents, the reverse order.
void to_torch(const Module& m, const std::string& prefix, StateDict& state) {
  for (const auto& [name, child] : m.named_children()) to_torch(*child, prefix + name + ".", state);
  if (const auto* mha = dynamic_cast<const MultiHeadAttention*>(&m)) to_torch_attention(state, prefix, *mha);
  if (const auto* block = dynamic_cast<const TransformerEncoderBlock*>(&m))
    for (const auto& [torch_name, qkv_name] : encoder_layer_names(*block))
      rename(state, prefix, qkv_name, torch_name);
  if (dynamic_cast<const TransformerEncoder*>(&m)) rename(state, prefix, "blocks.", "layers.");
}

}  // namespace

StateDict from_torch_state_dict(const Module& model, const StateDict& torch_state) {
  NoGradGuard no_grad;
  StateDict state = torch_state;
  from_torch(model, "", state);
  return state;
}

StateDict to_torch_state_dict(const Module& model) {
  NoGradGuard no_grad;
  StateDict state = model.state_dict();
  to_torch(model, "", state);
  return state;
}

}  // namespace qkv::nn
