// The ablation of the patches' positions (docs/vit.md): one ViT trained per scheme, everything else
// equal, and the table of their accuracies, with the similarity figure of each scheme that has
// position vectors. Each scheme's run is OUT/SCHEME, a whole run directory (vit eval reads it).
//
// Then each trained model reads the test images at other sizes (resized, examples/vit/model.h): 2×
// upsampled (four times the patches, the item at twice the resolution), and padded by two patches
// above and to the left, so that the item sits at the bottom right (the same patches, moved): the
// resolution table (docs/positional_encodings.md), OUT/resolution.md and OUT/resolution.png.
#pragma once

#include <string>
#include <vector>

#include "examples/vit/train.h"

namespace vit {

struct AblationOptions {
  std::string out = "runs/vit-ablation";
  std::vector<std::string> schemes;  // each of position_names()
  bool verbose = true;
};

// The test images as the resolution table reads them: as trained, upsampled, padded.
struct TestView {
  std::string name;  // "56×56, 2× upsampled"
  ImageSet images;
};
std::vector<TestView> resolution_views(const ImageSet& test, int64_t patch);

struct AblationRow {
  std::string scheme;
  double validation_accuracy = 0, test_accuracy = 0, seconds = 0;
  int64_t parameters = 0;
  std::vector<double> resolution;  // test accuracy on each of resolution_views, in order
};

// "a,b,c" → {"a", "b", "c"}; ValueError for an empty name or one not in position_names().
std::vector<std::string> split_names(const std::string& list);

// Trains config once per scheme (the baselines with the first), writes OUT/ablation.md (the table)
// and OUT/positions-SCHEME.png, and returns the rows.
std::vector<AblationRow> run_ablation(const Config& config, const AblationOptions& options);

}  // namespace vit
