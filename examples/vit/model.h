// A tiny Vision Transformer (Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words";
// d2l.ai §11.8): an image cut into p×p patches is a sequence of N = (rows/p)·(cols/p) tokens.
//
//   X = patches · W_e + b_e                  (B, N, p²) → (B, N, D): one linear layer embeds each patch
//   X = X + P                                P (N, D), the patches' positions (below); none: X alone
//   X = [cls; X]                             with a class token: a learned vector first, (B, 1 + N, D)
//   H = encoder(X)                           qkv's Transformer encoder, pre-norm, GELU FFN, final LayerNorm
//   logits = head(H[:, 0])                   the class token's output; with mean pooling, head(mean_t H[:, t])
//
// Positions of the patches, the ablation of docs/vit.md (the class token gets none: it has no place):
//   sin2d      the 2-D sinusoidal table of nn/positional_encoding_2d.h: D/2 channels encode the
//              patch's column, D/2 its row, each as d2l §11.6.3's 1-D sinusoid
//   learned2d  a learned vector per column and one per row, D/2 wide each, concatenated (the ViT
//              paper's "2-dimensional embedding", appendix D.4)
//   sin1d      the 1-D sinusoidal table over the raster order 0 .. N−1 (d2l §11.6.3)
//   learned1d  a learned vector per patch, N(0, 0.02²) (the ViT paper's default)
//   learned-fourier2d, random-fourier2d
//              Fourier features of the patch's centre through an MLP (nn/fourier_features.h), with
//              learned (Li et al. 2021) or random, fixed (Tancik et al. 2020) frequencies: D/2 of
//              them, an MLP hidden width of D, σ = 2π (a cycle per image). The centre of patch (y, x)
//              is ((y + ½)/rows, (x + ½)/cols) in patches of the grid: the image is the unit square
//              whatever its size, so the scheme is a function of where in the image a patch lies.
//   none       no positions: the encoder sees a bag of patches
//
// Another image size (resized): sin2d and sin1d by their formulas on the new grid, the Fourier
// schemes at the new grid's centres, learned2d and learned1d by bilinear interpolation of their
// tables to the new grid (the ViT paper, section 3.2; nn/functional/interpolate.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/linear.h"
#include "nn/transformer.h"

namespace vit {

struct ModelConfig {
  int64_t rows = 28, cols = 28, patch = 4, classes = 10;
  int64_t d_model = 64, heads = 4, layers = 4, ffn_hidden = 128;
  std::string positions = "sin2d";  // any of position_names()
  std::string pool = "cls";         // cls or mean
  float dropout = 0.0f;
  bool recompute = false;  // each block recomputed in backward (nn::TransformerEncoderOptions::recompute)
  int64_t grid_rows() const { return rows / patch; }
  int64_t grid_cols() const { return cols / patch; }
  int64_t num_patches() const { return grid_rows() * grid_cols(); }
};

const std::vector<std::string>& position_names();

// The position of each patch as a vector: table() is P above, (N, D), or undefined for none.
class PatchPositions : public qkv::nn::Module {
 public:
  virtual qkv::Tensor table() const = 0;
  // Takes the weights of the same scheme trained on another grid, resampled to this one's where
  // their shapes follow the grid (learned tables); the default copies them as they are.
  virtual void resample_from(const PatchPositions& trained) { load_state_dict(trained.state_dict()); }
};
// ValueError unless `name` is one of position_names() and width d suits it (sin2d: d divisible by
// 4; learned2d, sin1d and the Fourier schemes: d even), naming the scheme and what it needs.
void check_position_width(const std::string& name, int64_t d);
// The scheme of `name` for a grid_rows × grid_cols grid of width d, checked as above.
std::shared_ptr<PatchPositions> make_patch_positions(const std::string& name, int64_t grid_rows, int64_t grid_cols,
                                                     int64_t d);

class ViT : public qkv::nn::Module {
 public:
  explicit ViT(const ModelConfig& config);
  // patches (B, N, p²) as vit::patches makes them → logits (B, classes)
  qkv::Tensor forward(const qkv::Tensor& patches);
  // Attention rollout (Abnar & Zuidema 2020) of the last forward, which must have been in eval
  // mode: per layer the weights averaged over heads, with the identity added for the residual
  // (0.5·A + 0.5·I) and rows renormalized, multiplied from the first layer to the last. The row of
  // the class token (with mean pooling, the mean of all rows) over the patches: (B, N).
  qkv::Tensor rollout() const;

  ModelConfig config;
  std::shared_ptr<qkv::nn::Linear> patch_embedding, head;
  std::shared_ptr<PatchPositions> positions;
  qkv::Tensor cls_token;  // (1, 1, D); undefined with mean pooling
  std::shared_ptr<qkv::nn::TransformerEncoder> encoder;
};

// The model reading images of rows × cols (multiples of its patch) with the weights of `model`: the
// same patches, encoder and head, and the positions carried to the new grid as above.
std::shared_ptr<ViT> resized(const ViT& model, int64_t rows, int64_t cols);

}  // namespace vit
