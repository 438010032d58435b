// The registry of attention mechanisms (nn/attention_interface.h, nn/registry.h).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/attention.h"
#include "nn/attention_interface.h"
#include "nn/linformer.h"
#include "nn/performer.h"
#include "nn/talking_heads.h"

namespace qkv::nn {

namespace {

std::shared_ptr<Attention> dense(const AttentionSetup& s) {
  auto attention = std::make_shared<MultiHeadAttention>(s.num_hiddens, s.num_hiddens, s.num_hiddens, s.num_hiddens,
                                                        s.num_heads, s.dropout, s.use_bias);
  attention->positions = s.positions;
  attention->restriction = s.attend;
  attention->recompute_weights_above = s.recompute_weights_above;
  return attention;
}

Registry<AttentionFactory> builtin_attentions() {
  return Registry<AttentionFactory>("attention", "mechanism", {
      {"dense", dense},
      {"performer", [](const AttentionSetup& s) { return std::make_shared<Performer>(s); }},
      {"linformer", [](const AttentionSetup& s) { return std::make_shared<Linformer>(s); }},
      {"talking_heads", [](const AttentionSetup& s) { return std::make_shared<TalkingHeadsAttention>(s); }},
  });
}

}  // namespace

Registry<AttentionFactory>& attentions() {
  static Registry<AttentionFactory> mechanisms = builtin_attentions();
  return mechanisms;
}

bool register_attention(const std::string& name, AttentionFactory factory) {
  return attentions().add(name, std::move(factory));
}

AttentionFactory attention_mechanism(const std::string& name) { return attentions().at(name); }

std::vector<std::string> attention_mechanism_names() { return attentions().names(); }

}  // namespace qkv::nn
