// The classic baselines on the ViT's images, trained with qkv on the raw pixels (the image as one
// vector of rows·cols values, scaled as the ViT's patches are):
//   logistic   multinomial logistic regression, softmax(W x + b)
//   mlp        one hidden layer of 256 ReLU units
// Each trains with AdamW (lr 1e-3, batches of 128) for a fixed number of epochs; the epoch of the
// best validation accuracy gives the test accuracy, as the ViT's best checkpoint does.
#pragma once

#include <cstdint>
#include <string>

#include "examples/common/config.h"
#include "examples/vit/images.h"
#include "io/json.h"

namespace vit {

struct BaselineResult {
  double validation_accuracy = 0, test_accuracy = 0, seconds = 0;
  int64_t best_epoch = 0;
  template <class F>
  void fields(F&& f) {  // as baselines.json holds them (examples/common/config.h)
    f({"validation_accuracy"}, validation_accuracy);
    f({"test_accuracy"}, test_accuracy);
    f({"best_epoch"}, best_epoch);
    f({"seconds"}, seconds);
  }
  void validate() const {}
};

struct Baselines {
  BaselineResult logistic, mlp;
  qkv::io::Json to_json() const;
  static Baselines from_json(const qkv::io::Json& json, const std::string& source);
};

// Both, on `data`, seeded; `epochs` each.
Baselines compute_baselines(const ImageData& data, float mean, float std, uint64_t seed, int64_t epochs = 10);

}  // namespace vit
