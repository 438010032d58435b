// 2-D sinusoidal positional encoding for an H×W grid (image patches, feature maps): the 1-D encoding
// of d2l.ai §11.6.3 for the column x and for the row y, each D/2 wide, concatenated, as in Parmar et
// al. 2018, "Image Transformer" (half the channels for each axis) and DETR (Carion et al. 2020).
// Here H and W are the grid's height and width (not heads).
//
//   P[y, x] = concat(PE_x, PE_y),   0 <= x < W, 0 <= y < H,   with i in [0, D/4):
//   P[y, x, 2i]         = sin(x / 10000^(2i/(D/2)))      P[y, x, D/2 + 2i]     = sin(y / 10000^(2i/(D/2)))
//   P[y, x, 2i+1]       = cos(x / 10000^(2i/(D/2)))      P[y, x, D/2 + 2i + 1] = cos(y / 10000^(2i/(D/2)))
//
// Channel layout: [0, D/2) encode x, [D/2, D) encode y, each half laid out like sinusoidal_table(·, D/2)
// (sin and cos interleaved, frequencies falling along the half). So P[y, x, :D/2] is row x of
// sinusoidal_table(W, D/2) and P[y, x, D/2:] row y of sinusoidal_table(H, D/2). Each half needs an even
// width: D must be divisible by 4. Each axis keeps the 1-D property: moving δ along x rotates every
// pair of the x half by a fixed angle and leaves the y half alone (tests/nn/test_positional_encoding_2d.cpp).
//
// PositionalEncoding2D(num_hiddens, dropout, max_height = 64, max_width = 64):
//   X: (B, H, W, D) with D = num_hiddens, H <= max_height, W <= max_width  →  dropout(X + P[:H, :W])
// The grid is channels-last; X.flatten(1, 2) then gives the (B, H·W, D) sequence of a Transformer,
// token y·W + x (row-major, the order of ViT's patches). P does not depend on the grid's size, so one
// (max_height, max_width, D) non-persistent buffer serves every H×W within it.
#pragma once

#include <memory>

#include "nn/dropout.h"
#include "nn/module.h"

namespace qkv::nn {

// The table P above, (height, width, d).
Tensor sinusoidal_table_2d(int64_t height, int64_t width, int64_t d);

class PositionalEncoding2D : public Module {
 public:
  PositionalEncoding2D(int64_t num_hiddens, float dropout, int64_t max_height = 64, int64_t max_width = 64);
  Tensor forward(const Tensor& X) const;
  std::string extra_repr() const override;

  int64_t num_hiddens, max_height, max_width;
  Tensor P;  // (max_height, max_width, num_hiddens)
  std::shared_ptr<Dropout> dropout;
};

}  // namespace qkv::nn
