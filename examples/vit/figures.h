// The ViT's figures (docs/vit.md shows each with its command):
//   curves.png        training loss and validation accuracy per epoch
//   confusion.png     the confusion matrix on test
//   mistakes.png      test images the model got wrong, with their true and predicted classes
//   rollout.png       the class token's attention rollout over a few test images, drawn on them
//   positions.png     the cosine similarity of each patch's position vector to every other patch's
//                     (the ViT paper's Figure 7, centre), for a scheme that has position vectors
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "examples/vit/images.h"
#include "examples/vit/model.h"
#include "examples/vit/train.h"
#include "plot/image.h"

namespace vit {

// Every figure of the run in RUN/figures; returns the files written.
std::vector<std::string> draw_run_figures(const std::string& run_dir);

// The grid of similarity maps: for patch (y, x) at row y, column x of the grid, a small map of
// cos(P[y, x], P[y', x']) over all (y', x'). An undefined table (no positions) is refused.
qkv::plot::Image draw_position_similarity(const qkv::Tensor& table, int64_t grid_rows, int64_t grid_cols,
                                          const std::string& title);

// The class names of a run's data.
std::vector<std::string> class_names_of(const Config& config);

// Accuracy per class: one line each.
void print_per_class(std::ostream& out, const ImageSet& set, const std::vector<int32_t>& predicted,
                     const std::vector<std::string>& class_names);

}  // namespace vit
