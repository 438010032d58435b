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

// The names of the three projections, PyTorch's (separate, as used when kdim or vdim differ from
// the embedding size) beside qkv's.
const NamePairs kProjections = {
    {"q_proj_weight", "W_q.weight"}, {"k_proj_weight", "W_k.weight"}, {"v_proj_weight", "W_v.weight"}};
const char* const kQkvBiases[] = {"W_q.bias", "W_k.bias", "W_v.bias"};

// in_proj_weight (3D, in) → W_q, W_k, W_v (D, in) each; in_proj_bias (3D) likewise.
void unpack_attention(StateDict& state, const std::string& p) {
  auto split_three = [&](const std::string& packed, auto&& name_of) {
    auto it = state.find(p + packed);
    if (it == state.end()) return;
    const Tensor t = it->second;
    if (t.dim() == 0 || t.size(0) % 3 != 0)
      throw ValueError("from_torch_state_dict: " + p + packed + " has shape " + shape_str(t.shape()) +
                       ", expected a first dimension of 3·D (query, key and value rows)");
    const int64_t D = t.size(0) / 3;
    state.erase(it);
    for (int i = 0; i < 3; ++i) state.insert_or_assign(p + name_of(i), t.narrow(0, i * D, D));
  };
  split_three("in_proj_weight", [](int i) { return kProjections[i].second; });
  split_three("in_proj_bias", [](int i) { return std::string(kQkvBiases[i]); });
  for (const auto& [torch_name, qkv_name] : kProjections) rename(state, p, torch_name, qkv_name);
  rename(state, p, "out_proj.", "W_o.");
}

// The reverse: packed when all three projections read inputs of the same width, as PyTorch does.
void pack_attention(StateDict& state, const std::string& p, const MultiHeadAttention& mha) {
  const bool same_width = mha.W_k->in_features == mha.W_q->in_features &&
                          mha.W_v->in_features == mha.W_q->in_features &&
                          mha.W_q->in_features == mha.W_q->out_features;
  auto pack = [&](const std::string& packed, auto&& name_of) {
    std::vector<Tensor> parts;
    for (int i = 0; i < 3; ++i) {
      auto it = state.find(p + name_of(i));
      if (it == state.end()) return;
      parts.push_back(it->second);
    }
    for (int i = 0; i < 3; ++i) state.erase(p + name_of(i));
    state.insert_or_assign(p + packed, cat(parts, 0));
  };
  if (same_width)
    pack("in_proj_weight", [](int i) { return kProjections[i].second; });
  else
    for (const auto& [torch_name, qkv_name] : kProjections) rename(state, p, qkv_name, torch_name);
  pack("in_proj_bias", [](int i) { return std::string(kQkvBiases[i]); });
  rename(state, p, "W_o.", "out_proj.");
}

// Parents before children: a block's renames put its attention's entries under qkv's prefix
// before the attention unpacks them.
void from_torch(const Module& m, const std::string& prefix, StateDict& state) {
  if (dynamic_cast<const TransformerEncoder*>(&m)) rename(state, prefix, "layers.", "blocks.");
  if (const auto* block = dynamic_cast<const TransformerEncoderBlock*>(&m))
    for (const auto& [torch_name, qkv_name] : encoder_layer_names(*block))
      rename(state, prefix, torch_name, qkv_name);
  if (dynamic_cast<const MultiHeadAttention*>(&m)) unpack_attention(state, prefix);
  for (const auto& [name, child] : m.named_children()) from_torch(*child, prefix + name + ".", state);
}

// Children before parents, the reverse order.
void to_torch(const Module& m, const std::string& prefix, StateDict& state) {
  for (const auto& [name, child] : m.named_children()) to_torch(*child, prefix + name + ".", state);
  if (const auto* mha = dynamic_cast<const MultiHeadAttention*>(&m)) pack_attention(state, prefix, *mha);
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
