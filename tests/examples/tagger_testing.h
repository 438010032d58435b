// What the tagger's tests share: a small configuration that trains in a fraction of a second and
// still learns, and the options of a run that prints and draws nothing.
#pragma once

#include <filesystem>

#include "examples/tagger/model.h"
#include "examples/tagger/train.h"

namespace tagger::testing {

// 300 built-in sentences, one narrow block, 3 epochs.
inline Config small_config() {
  Config c;
  c.d_model = 32;
  c.heads = 2;
  c.ffn_width = 64;
  c.layers = 1;
  c.epochs = 3;
  c.batch_size = 8;
  c.lr = 1e-2;
  c.warmup_steps = 10;
  c.train_sentences = 300;
  c.dev_sentences = 50;
  c.test_sentences = 50;
  return c;
}

inline TrainOptions quiet(const std::filesystem::path& dir) {
  TrainOptions o;
  o.run_dir = dir.string();
  o.verbose = false;
  o.progress = false;
  o.figures = false;
  return o;
}

}  // namespace tagger::testing
