// The ablation of the patches' positions (docs/vit.md): one ViT trained per scheme, everything else
// equal, and the table of their accuracies, with the similarity figure of each scheme that has
// position vectors. Each scheme's run is OUT/SCHEME, a whole run directory (vit eval reads it).
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

struct AblationRow {
  std::string scheme;
  double validation_accuracy = 0, test_accuracy = 0, seconds = 0;
  int64_t parameters = 0;
};

// "a,b,c" → {"a", "b", "c"}; ValueError for an empty name or one not in position_names().
std::vector<std::string> split_names(const std::string& list);

// Trains config once per scheme (the baselines with the first), writes OUT/ablation.md (the table)
// and OUT/positions-SCHEME.png, and returns the rows.
std::vector<AblationRow> run_ablation(const Config& config, const AblationOptions& options);

}  // namespace vit
