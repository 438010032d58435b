#include "examples/vit/model.h"

#include "examples/common/args.h"

#include <algorithm>
#include <numbers>

#include "autograd/grad_mode.h"
#include "nn/fourier_features.h"
#include "nn/functional/interpolate.h"
#include "nn/init.h"
#include "nn/positional_encoding.h"
#include "nn/positional_encoding_2d.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace vit {

using qkv::Tensor;


const std::vector<std::string>& position_names() {
  static const std::vector<std::string> names = {"sin2d",     "learned2d",         "sin1d",           "learned1d",
                                                 "none",      "learned-fourier2d", "random-fourier2d"};
  return names;
}

namespace {

// A fixed table, (N, D): a non-persistent buffer, so checkpoints do not carry it.
class FixedPositions : public PatchPositions {
 public:
  explicit FixedPositions(Tensor p) { P = register_buffer("P", std::move(p), /*persistent=*/false); }
  Tensor table() const override { return P; }
  Tensor P;
};

// ViT's 2-D embedding: column x and row y each learn D/2 channels; patch (y, x) is [col_x; row_y],
// the layout of sinusoidal_table_2d, so the two tables can be compared channel for channel.
class Learned2DPositions : public PatchPositions {
 public:
  Learned2DPositions(int64_t grid_rows, int64_t grid_cols, int64_t d) {
    col = register_parameter("col", qkv::normal({grid_cols, d / 2}, 0.0f, 0.02f, true));
    row = register_parameter("row", qkv::normal({grid_rows, d / 2}, 0.0f, 0.02f, true));
  }
  Tensor table() const override {
    const int64_t H = row.size(0), W = col.size(0), half = col.size(1);
    const Tensor x = col.unsqueeze(0).expand({H, W, half});  // [y, x] ← col[x]
    const Tensor y = row.unsqueeze(1).expand({H, W, half});  // [y, x] ← row[y]
    return qkv::cat({x, y}, 2).reshape({H * W, 2 * half});
  }
  // Each table along its own axis: the bilinear resampling of the whole (H, W, D) table, whose
  // column half depends on x alone and row half on y alone.
  void resample_from(const PatchPositions& trained) override {
    const auto& t = dynamic_cast<const Learned2DPositions&>(trained);
    qkv::NoGradGuard no_grad;
    col.copy_(qkv::nn::functional::resize_bilinear(t.col.unsqueeze(0), 1, col.size(0)).squeeze(0));
    row.copy_(qkv::nn::functional::resize_bilinear(t.row.unsqueeze(1), row.size(0), 1).squeeze(1));
  }
  Tensor col, row;
};

class Learned1DPositions : public PatchPositions {
 public:
  Learned1DPositions(int64_t grid_rows, int64_t grid_cols, int64_t d) : rows(grid_rows), cols(grid_cols) {
    P = register_parameter("P", qkv::normal({rows * cols, d}, 0.0f, 0.02f, true));
  }
  Tensor table() const override { return P; }
  // The table as the (rows, cols, D) grid it is, resampled: what ViT fine-tuning at a new size does.
  void resample_from(const PatchPositions& trained) override {
    const auto& t = dynamic_cast<const Learned1DPositions&>(trained);
    qkv::NoGradGuard no_grad;
    const int64_t d = P.size(1);
    P.copy_(qkv::nn::functional::resize_bilinear(t.P.view({t.rows, t.cols, d}), rows, cols).reshape({rows * cols, d}));
  }
  int64_t rows, cols;
  Tensor P;
};

// Fourier features of each patch's centre in the unit square (nn/fourier_features.h).
class FourierPatchPositions : public PatchPositions {
 public:
  FourierPatchPositions(int64_t grid_rows, int64_t grid_cols, int64_t d, bool learned) {
    features = register_module("features", std::make_shared<qkv::nn::FourierFeatures>(qkv::nn::FourierFeaturesOptions{
                                               .coordinates = 2, .frequencies = d / 2, .hidden = d, .out = d,
                                               .learned = learned, .scale = 2.0f * std::numbers::pi_v<float>}));
    std::vector<float> centres;
    for (int64_t y = 0; y < grid_rows; ++y)
      for (int64_t x = 0; x < grid_cols; ++x)
        centres.insert(centres.end(), {(static_cast<float>(y) + 0.5f) / static_cast<float>(grid_rows),
                                       (static_cast<float>(x) + 0.5f) / static_cast<float>(grid_cols)});
    coordinates = register_buffer("coordinates", qkv::tensor(centres, {grid_rows * grid_cols, 2}), /*persistent=*/false);
  }
  Tensor table() const override { return features->forward(coordinates); }
  std::shared_ptr<qkv::nn::FourierFeatures> features;
  Tensor coordinates;  // (N, 2): (y, x) of each patch's centre, rows and columns of the image in [0, 1]
};

class NoPatchPositions : public PatchPositions {
 public:
  Tensor table() const override { return Tensor(); }
};

}  // namespace

void check_position_width(const std::string& name, int64_t d) {
  const auto& known = position_names();
  if (std::find(known.begin(), known.end(), name) == known.end())
    throw qkv::ValueError("positions (--positions) is '" + name + "'; expected one of " + qkv::examples::join(known));
  const int64_t multiple =
      name == "sin2d" ? 4 : name == "learned2d" || name == "sin1d" || name.find("fourier") != std::string::npos ? 2 : 1;
  if (d % multiple != 0)
    throw qkv::ValueError("positions (--positions) " + name + " needs a width (--d-model) divisible by " +
                          std::to_string(multiple) + "; it is " + std::to_string(d));
}

std::shared_ptr<PatchPositions> make_patch_positions(const std::string& name, int64_t grid_rows, int64_t grid_cols,
                                                     int64_t d) {
  check_position_width(name, d);
  const int64_t n = grid_rows * grid_cols;
  if (name == "sin2d")
    return std::make_shared<FixedPositions>(qkv::nn::sinusoidal_table_2d(grid_rows, grid_cols, d).reshape({n, d}));
  if (name == "learned2d") return std::make_shared<Learned2DPositions>(grid_rows, grid_cols, d);
  if (name == "sin1d") return std::make_shared<FixedPositions>(qkv::nn::sinusoidal_table(n, d));
  if (name == "learned1d") return std::make_shared<Learned1DPositions>(grid_rows, grid_cols, d);
  if (name == "learned-fourier2d" || name == "random-fourier2d")
    return std::make_shared<FourierPatchPositions>(grid_rows, grid_cols, d, name == "learned-fourier2d");
  return std::make_shared<NoPatchPositions>();
}

ViT::ViT(const ModelConfig& c) : config(c) {
  if (c.patch < 1 || c.rows % c.patch != 0 || c.cols % c.patch != 0)
    throw qkv::ValueError("patch (--patch) " + std::to_string(c.patch) + " does not tile images of " +
                          std::to_string(c.rows) + "×" + std::to_string(c.cols));
  if (c.pool != "cls" && c.pool != "mean")
    throw qkv::ValueError("pool (--pool) is '" + c.pool + "'; expected cls or mean");
  patch_embedding = register_module("patch_embedding", std::make_shared<qkv::nn::Linear>(c.patch * c.patch, c.d_model));
  positions = register_module("positions", make_patch_positions(c.positions, c.grid_rows(), c.grid_cols(), c.d_model));
  if (c.pool == "cls") cls_token = register_parameter("cls_token", qkv::zeros({1, 1, c.d_model}, true));
  encoder = register_module(
      "encoder", std::make_shared<qkv::nn::TransformerEncoder>(qkv::nn::TransformerEncoderOptions{
                     .vocab_size = 0, .num_hiddens = c.d_model, .ffn_num_hiddens = c.ffn_hidden,
                     .num_heads = c.heads, .num_layers = c.layers, .dropout = c.dropout,
                     .max_len = c.num_patches() + 1, .positions = qkv::nn::position_scheme("none"),
                     .ffn = qkv::nn::feed_forward("gelu"), .norm = qkv::nn::NormPlacement::Pre,
                     .recompute = c.recompute}));
  head = register_module("head", std::make_shared<qkv::nn::Linear>(c.d_model, c.classes));
}

Tensor ViT::forward(const Tensor& patches) {
  const int64_t N = config.num_patches(), p2 = config.patch * config.patch;
  if (patches.dim() != 3 || patches.size(1) != N || patches.size(2) != p2)
    throw qkv::ShapeError("ViT: patches of shape " + qkv::shape_str(patches.shape()) + "; expected (B, " +
                          std::to_string(N) + ", " + std::to_string(p2) + ") for " + std::to_string(config.rows) + "×" +
                          std::to_string(config.cols) + " images in " + std::to_string(config.patch) + "×" +
                          std::to_string(config.patch) + " patches");
  const int64_t B = patches.size(0), D = config.d_model;
  Tensor x = patch_embedding->forward(patches);
  if (const Tensor P = positions->table(); P.defined()) x = x + P;
  if (cls_token.defined()) x = qkv::cat({cls_token.expand({B, 1, D}), x}, 1);
  const Tensor h = encoder->forward(x);
  return head->forward(cls_token.defined() ? h.select(1, 0) : h.mean({1}));
}

std::shared_ptr<ViT> resized(const ViT& model, int64_t rows, int64_t cols) {
  ModelConfig c = model.config;
  c.rows = rows, c.cols = cols;
  auto out = std::make_shared<ViT>(c);  // checks that the patches tile the new size
  qkv::nn::StateDict rest;
  for (const auto& [name, tensor] : model.state_dict())
    if (name.rfind("positions.", 0) != 0) rest.emplace(name, tensor);
  for (const auto& [name, tensor] : out->positions->state_dict()) rest.emplace("positions." + name, tensor);
  out->load_state_dict(rest);
  out->positions->resample_from(*model.positions);
  out->train(model.is_training());
  return out;
}

Tensor ViT::rollout() const {
  qkv::NoGradGuard no_grad;
  const std::vector<Tensor> weights = encoder->attention_weights();
  Tensor R;
  for (const Tensor& w : weights) {
    if (!w.defined()) throw qkv::StateError("ViT::rollout: no attention weights; run a forward in eval mode first");
    const int64_t T = w.size(2);
    Tensor A = w.mean({1}) * 0.5f + qkv::eye(T) * 0.5f;  // (B, T, T)
    A = A / A.sum({2}, true);
    R = R.defined() ? qkv::bmm(A, R) : A;
  }
  const int64_t first = cls_token.defined() ? 1 : 0;
  const Tensor rows = cls_token.defined() ? R.select(1, 0) : R.mean({1});  // (B, T)
  return rows.slice(1, first, rows.size(1)).contiguous();
}

}  // namespace vit
