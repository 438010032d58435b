// Resampling a grid of vectors to another size: how a table learned for one grid of patches serves
// another (the ViT paper, section 3.2: "we perform 2D interpolation of the pre-trained position
// embeddings, according to their location in the original image").
#pragma once

#include "tensor/tensor.h"

namespace qkv::nn::functional {

// Bilinear resampling of a channels-last grid, x (H, W, C) → (height, width, C): PyTorch's
// F.interpolate(x.permute(2, 0, 1)[None], size=(height, width), mode="bilinear",
// align_corners=False), permuted back. Output row i reads the input at
//   s = (i + ½)·H/height − ½,  clamped below at 0,
// between rows ⌊s⌋ and min(⌊s⌋ + 1, H − 1) with weights 1 − (s − ⌊s⌋) and s − ⌊s⌋; columns the
// same. Composed of index_select, products and sums, so its gradient needs no rule of its own.
// ShapeError for x of another rank; ValueError for a size below 1.
Tensor resize_bilinear(const Tensor& x, int64_t height, int64_t width);

}  // namespace qkv::nn::functional
