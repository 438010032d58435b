#include "examples/long_range/model.h"

#include <algorithm>

#include "tensor/error.h"

namespace long_range {

const std::vector<std::string>& mechanisms() {
  static const std::vector<std::string> names = {"dense", "window", "performer", "linformer"};
  return names;
}

std::string mechanism_list() { return "dense, window, performer or linformer"; }

void check_model(const ModelOptions& m, const TaskOptions& task) {
  const auto& known = mechanisms();
  if (std::find(known.begin(), known.end(), m.attention) == known.end())
    throw qkv::ValueError("--attention '" + m.attention + "' is unknown; expected " + mechanism_list());
  if (m.d_model < 2 || m.d_model > 1024)
    throw qkv::ValueError("--d-model " + std::to_string(m.d_model) + " is outside 2 .. 1024");
  if (m.heads < 1 || m.heads > 64 || m.d_model % m.heads != 0)
    throw qkv::ValueError("--heads " + std::to_string(m.heads) + " must be 1 .. 64 and divide --d-model " +
                          std::to_string(m.d_model));
  if (m.layers < 1 || m.layers > 16)
    throw qkv::ValueError("--layers " + std::to_string(m.layers) + " is outside 1 .. 16");
  if (m.attention == "window" && (m.window < 1 || m.window >= task.length))
    throw qkv::ValueError("--window " + std::to_string(m.window) + " is outside 1 .. " +
                          std::to_string(task.length - 1) + " (below --length " + std::to_string(task.length) + ")");
  const int64_t most = m.attention == "linformer" ? task.length : kMaxFeatures;
  if ((m.attention == "performer" || m.attention == "linformer") && (m.features < 0 || m.features > most))
    throw qkv::ValueError("--features " + std::to_string(m.features) + " is outside 1 .. " + std::to_string(most) +
                          " for " + m.attention + (m.attention == "linformer" ? " (k <= --length)" : " (m)") +
                          ", or 0 for its default");
}

TaggerModel::TaggerModel(const ModelOptions& m, const TaskOptions& task) {
  check_model(m, task);
  check_task(task);
  qkv::nn::TransformerEncoderOptions o{
      .vocab_size = vocab_size(task), .num_hiddens = m.d_model, .ffn_num_hiddens = 2 * m.d_model,
      .num_heads = m.heads, .num_layers = m.layers, .dropout = 0.0f, .max_len = task.length,
      .positions = qkv::nn::position_scheme("sinusoidal"), .norm = qkv::nn::NormPlacement::Pre};
  if (m.attention == "window") o.attend = qkv::nn::AttentionRestriction::window(m.window);
  if (m.attention == "performer" || m.attention == "linformer") {
    o.attention = qkv::nn::attention_mechanism(m.attention);
    o.attention_features = m.features;
  }
  encoder = register_module("encoder", std::make_shared<qkv::nn::TransformerEncoder>(o));
  head = register_module("head", std::make_shared<qkv::nn::Linear>(m.d_model, task.values));
}

Tensor TaggerModel::forward(const IndexTensor& ids, const IndexTensor& valid_lens) {
  return head->forward(encoder->forward(ids, valid_lens));
}

}  // namespace long_range
