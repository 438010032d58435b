// PyTorch's state_dicts in qkv's layers and back (nn/pytorch.h, model_io/weights.h). The files in
// tests/nn/pytorch/ were written by PyTorch (tests/nn/pytorch_weights.py): each layer's state_dict,
// an input and PyTorch's output. qkv loads each into its own layer and must give the same output to
// float32 precision; the reverse direction, PyTorch loading what qkv writes, is run by the same
// script (the CTest test "pytorch: ...").
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "io/safetensors.h"
#include "io/scratch_dir.h"
#include "model_io/weights.h"
#include "nn/pytorch.h"
#include "qkv.h"

using namespace qkv;

namespace {

const std::string kDir = std::string(QKV_SOURCE_DIR) + "/tests/nn/pytorch/";

// A golden file: inputs by name, F32 or I64.
struct Golden {
  io::LoadedTensors file;
  explicit Golden(const std::filesystem::path& path) : file(io::load_safetensors(path)) {}
  Tensor f32(const std::string& name) const { return io::to_tensor(record(name), "golden: "); }
  IndexTensor i64(const std::string& name) const {
    const io::TensorRecord& r = record(name);
    std::vector<int64_t> v(r.data.size() / sizeof(int64_t));
    std::memcpy(v.data(), r.data.data(), r.data.size());
    return IndexTensor(std::move(v), r.shape);
  }
  const io::TensorRecord& record(const std::string& name) const {
    const io::TensorRecord* r = file.find(name);
    REQUIRE_MESSAGE(r, "no tensor " << name);
    return *r;
  }
};

using Outputs = std::map<std::string, Tensor>;

// Each case: the qkv layer PyTorch's module corresponds to, and its forward on the golden inputs,
// with outputs in PyTorch's layout.
struct Case {
  std::string name;
  std::function<std::shared_ptr<nn::Module>()> make;
  std::function<Outputs(nn::Module&, const Golden&)> run;
};

template <class M>
M& as(nn::Module& m) {
  return dynamic_cast<M&>(m);
}

Outputs run_attention(nn::Module& m, const Golden& g) {
  return {{"y", as<nn::MultiHeadAttention>(m).forward(g.f32("queries"), g.f32("keys"), g.f32("values"),
                                                      g.i64("valid_lens"))}};
}

std::shared_ptr<nn::Module> encoder_block(nn::NormPlacement norm) {
  return std::make_shared<nn::TransformerEncoderBlock>(nn::TransformerBlockOptions{.num_hiddens = 8,
                                                                                   .ffn_num_hiddens = 16,
                                                                                   .num_heads = 2,
                                                                                   .dropout = 0.0f,
                                                                                   .use_bias = true,
                                                                                   .norm = norm});
}

Outputs run_block(nn::Module& m, const Golden& g) {
  return {{"y", as<nn::TransformerEncoderBlock>(m).forward(g.f32("x"), g.i64("valid_lens"))}};
}

std::shared_ptr<nn::Module> decoder_block(nn::NormPlacement norm) {
  return std::make_shared<nn::TransformerDecoderBlock>(
      nn::TransformerBlockOptions{
          .num_hiddens = 8, .ffn_num_hiddens = 16, .num_heads = 2, .dropout = 0.0f, .use_bias = true, .norm = norm},
      nn::attention_mechanism("dense"));
}

// PyTorch's masks: the causal one on the target, the source's padding in the cross-attention.
Outputs run_decoder_block(nn::Module& m, const Golden& g) {
  return {{"y", as<nn::TransformerDecoderBlock>(m).forward(g.f32("x"), g.f32("memory"), g.i64("memory_valid_lens"))}};
}

// nn.Transformer with norm_first: two pre-norm stacks of two layers, each ending in a LayerNorm,
// on token vectors (qkv's vocabulary sizes 0) without positions, which PyTorch leaves to the caller.
std::shared_ptr<nn::Module> transformer() {
  const auto sizes = [](auto o) {
    o.num_hiddens = 8, o.ffn_num_hiddens = 16, o.num_heads = 2, o.num_layers = 2, o.dropout = 0.0f;
    o.use_bias = true, o.positions = nn::position_scheme("none"), o.norm = nn::NormPlacement::Pre;
    return o;
  };
  return std::make_shared<nn::Transformer>(sizes(nn::TransformerEncoderOptions{}), sizes(nn::TransformerDecoderOptions{}));
}

Outputs run_transformer(nn::Module& m, const Golden& g) {
  auto& model = as<nn::Transformer>(m);
  const IndexTensor lens = g.i64("src_valid_lens");
  return {{"y", model.decoder->forward(g.f32("tgt"), model.encoder->forward(g.f32("src"), lens), lens)}};
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"linear", [] { return std::make_shared<nn::Linear>(5, 3); },
       [](nn::Module& m, const Golden& g) {
         return Outputs{{"y", as<nn::Linear>(m).forward(g.f32("x"))}};
       }},
      {"embedding", [] { return std::make_shared<nn::Embedding>(10, 4); },
       [](nn::Module& m, const Golden& g) {
         return Outputs{{"y", as<nn::Embedding>(m).forward(g.i64("ids"))}};
       }},
      {"layer_norm", [] { return std::make_shared<nn::LayerNorm>(6); },
       [](nn::Module& m, const Golden& g) {
         return Outputs{{"y", as<nn::LayerNorm>(m).forward(g.f32("x"))}};
       }},
      {"gru",
       [] { return std::make_shared<nn::GRU>(4, 5, nn::GRUOptions{.num_layers = 2, .bidirectional = true}); },
       [](nn::Module& m, const Golden& g) {
         const nn::GRUOutput out = as<nn::GRU>(m).forward(g.f32("x"), g.f32("h0"));
         return Outputs{{"output", out.output}, {"h_n", out.h_n}};
       }},
      // PyTorch's Conv1d reads (N, C, L), qkv's (N, L, C): the one difference is the layout.
      {"conv1d", [] { return std::make_shared<nn::Conv1d>(3, 4, 3, /*padding=*/2, true, /*dilation=*/2); },
       [](nn::Module& m, const Golden& g) {
         return Outputs{{"y", as<nn::Conv1d>(m).forward(g.f32("x").transpose(1, 2)).transpose(1, 2)}};
       }},
      {"attention", [] { return std::make_shared<nn::MultiHeadAttention>(8, 8, 8, 8, 2, 0.0f, true); },
       run_attention},
      {"cross_attention", [] { return std::make_shared<nn::MultiHeadAttention>(6, 8, 5, 8, 2, 0.0f, true); },
       run_attention},
      {"encoder_layer", [] { return encoder_block(nn::NormPlacement::Post); }, run_block},
      {"encoder_layer_norm_first", [] { return encoder_block(nn::NormPlacement::Pre); }, run_block},
      // nn.TransformerEncoder of two norm_first layers and a final LayerNorm, on token vectors.
      {"encoder",
       [] {
         return std::make_shared<nn::TransformerEncoder>(
             nn::TransformerEncoderOptions{.num_hiddens = 8,
                                           .ffn_num_hiddens = 16,
                                           .num_heads = 2,
                                           .num_layers = 2,
                                           .dropout = 0.0f,
                                           .use_bias = true,
                                           .positions = nn::position_scheme("none"),
                                           .norm = nn::NormPlacement::Pre});
       },
       [](nn::Module& m, const Golden& g) {
         return Outputs{{"y", as<nn::TransformerEncoder>(m).forward(g.f32("x"), g.i64("valid_lens"))}};
       }},
      {"decoder_layer", [] { return decoder_block(nn::NormPlacement::Post); }, run_decoder_block},
      {"decoder_layer_norm_first", [] { return decoder_block(nn::NormPlacement::Pre); }, run_decoder_block},
      {"transformer", transformer, run_transformer},
  };
  return all;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const Tensor x = a.contiguous(), y = b.contiguous();
  float m = 0;
  for (int64_t i = 0; i < x.numel(); ++i) m = std::max(m, std::abs(x.data()[i] - y.data()[i]));
  return m;
}

}  // namespace

TEST_CASE("PyTorch state_dicts load into the qkv layers by name and give PyTorch's outputs") {
  for (const Case& c : cases()) {
    CAPTURE(c.name);
    const nn::StateDict torch_state = io::read_safetensors(kDir + c.name + ".safetensors");
    auto model = c.make();
    model->eval();
    model->load_state_dict(nn::from_torch_state_dict(*model, torch_state));
    const Golden golden(kDir + c.name + ".golden.safetensors");
    for (const auto& [key, value] : c.run(*model, golden)) {
      CAPTURE(key);
      CHECK(max_abs_diff(value, golden.f32(key)) < 1e-5f);
    }
    // And back: PyTorch's names and values exactly.
    const nn::StateDict back = nn::to_torch_state_dict(*model);
    REQUIRE(back.size() == torch_state.size());
    for (const auto& [key, value] : torch_state) {
      CAPTURE(key);
      REQUIRE(back.count(key));
      CHECK(max_abs_diff(back.at(key), value) == 0.0f);
    }
  }
}

TEST_CASE(
    "from_torch_state_dict renames the packed attention of an encoder layer and leaves other keys alone") {
  auto block = encoder_block(nn::NormPlacement::Post);
  const nn::StateDict converted =
      nn::from_torch_state_dict(*block, io::read_safetensors(kDir + "encoder_layer.safetensors"));
  std::vector<std::string> names;
  for (const auto& [name, t] : converted) names.push_back(name);
  CHECK(names == std::vector<std::string>{"addnorm1.ln.bias", "addnorm1.ln.weight", "addnorm2.ln.bias",
                                          "addnorm2.ln.weight", "attention.W_k.bias", "attention.W_k.weight",
                                          "attention.W_o.bias", "attention.W_o.weight", "attention.W_q.bias",
                                          "attention.W_q.weight", "attention.W_v.bias",
                                          "attention.W_v.weight", "ffn.dense1.bias", "ffn.dense1.weight",
                                          "ffn.dense2.bias", "ffn.dense2.weight"});
  // W_k is rows 8..15 of in_proj_weight.
  const nn::StateDict torch_state = io::read_safetensors(kDir + "encoder_layer.safetensors");
  CHECK(max_abs_diff(converted.at("attention.W_k.weight"),
                     torch_state.at("self_attn.in_proj_weight").narrow(0, 8, 8)) == 0.0f);
  // An entry of no known layer passes through; a packed tensor that is not 3·D rows is refused.
  nn::Linear linear(2, 2);
  CHECK(
      nn::from_torch_state_dict(linear, {{"weight", zeros({2, 2})}, {"extra", zeros({1})}}).count("extra") ==
      1);
  nn::MultiHeadAttention mha(8, 8, 8, 8, 2, 0.0f, true);
  CHECK_THROWS_WITH_AS(
      nn::from_torch_state_dict(mha, {{"in_proj_weight", zeros({10, 8})}}),
      "from_torch_state_dict: in_proj_weight has shape (10,8), expected a first dimension of 3·D "
      "(query, key and value rows)",
      ValueError);
}

// Writes each qkv layer, with random weights, as PyTorch's state_dict, with the golden inputs and
// qkv's outputs, into $QKV_TORCH_EXPORT_DIR if set (tests/nn/pytorch_weights.py check reads them
// into PyTorch) or a scratch directory; either way it reads them back into a new layer.
TEST_CASE("qkv layers export to PyTorch's names and load back") {
  testing::ScratchDir scratch;
  const char* env = std::getenv("QKV_TORCH_EXPORT_DIR");
  const std::filesystem::path dir = env ? std::filesystem::path(env) : scratch.path();
  manual_seed(11);
  for (const Case& c : cases()) {
    CAPTURE(c.name);
    auto model = c.make();
    model->eval();
    {
      NoGradGuard no_grad;
      for (auto& [name, t] : model->state_dict()) Tensor(t).copy_(randn(t.shape()) * 0.5f);
    }
    const Golden inputs(kDir + c.name + ".golden.safetensors");
    const Outputs outputs = c.run(*model, inputs);
    io::save_safetensors(dir / (c.name + ".safetensors"), nn::to_torch_state_dict(*model));
    io::TensorRecords records;
    for (const auto& [key, value] : outputs) records.add(key, value);
    std::vector<io::TensorRecord> golden = records.records();
    for (const io::TensorRecord& r : inputs.file.tensors)
      if (!outputs.count(r.name)) golden.push_back(r);
    io::save_safetensors(dir / (c.name + ".golden.safetensors"), golden);

    auto back = c.make();
    back->eval();
    back->load_state_dict(
        nn::from_torch_state_dict(*back, io::read_safetensors(dir / (c.name + ".safetensors"))));
    for (const auto& [key, value] : c.run(*back, inputs)) CHECK(max_abs_diff(value, outputs.at(key)) == 0.0f);
  }
}

TEST_CASE("from_torch_state_dict refuses two entries that would become one, naming both") {
  // Before, the one that came last won, silently: a state dict that mixes PyTorch's names with
  // qkv's is two models' weights, and nothing says which the user meant.
  nn::MultiHeadAttention mha(8, 8, 8, 8, 2, 0.0f, true);
  CHECK_THROWS_WITH_AS(
      nn::from_torch_state_dict(mha, {{"in_proj_weight", zeros({24, 8})}, {"q_proj_weight", zeros({8, 8})}}),
      "from_torch_state_dict: in_proj_weight and q_proj_weight are both W_q.weight (one under PyTorch's name, "
      "one under qkv's, or packed and apart): keep one of them",
      ValueError);
  CHECK_THROWS_WITH_AS(
      nn::from_torch_state_dict(mha, {{"out_proj.weight", zeros({8, 8})}, {"W_o.weight", zeros({8, 8})}}),
      "from_torch_state_dict: W_o.weight and out_proj.weight are both W_o.weight (one under PyTorch's name, "
      "one under qkv's, or packed and apart): keep one of them",
      ValueError);
  CHECK_THROWS_WITH_AS(
      nn::from_torch_state_dict(mha, {{"in_proj_bias", zeros({24})}, {"W_k.bias", zeros({8})}}),
      doctest::Contains("in_proj_bias are both W_k.bias"), ValueError);
  // layers.0 beside blocks.0, even when the two reach the same name by different renames.
  nn::TransformerEncoder encoder({.vocab_size = 20, .num_hiddens = 8, .ffn_num_hiddens = 16, .num_heads = 2,
                                  .num_layers = 1, .dropout = 0.0f});
  const Tensor w = zeros({16, 8});
  CHECK_THROWS_WITH_AS(nn::from_torch_state_dict(encoder, {{"layers.0.linear1.weight", w},
                                                           {"blocks.0.ffn.dense1.weight", w}}),
                       "from_torch_state_dict: blocks.0.ffn.dense1.weight and layers.0.linear1.weight are both "
                       "blocks.0.ffn.dense1.weight (one under PyTorch's name, one under qkv's, or packed and "
                       "apart): keep one of them",
                       ValueError);
  // Either alone converts.
  CHECK(nn::from_torch_state_dict(encoder, {{"layers.0.linear1.weight", w}}).count("blocks.0.ffn.dense1.weight"));
}
