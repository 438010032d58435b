// The tagger trained on the ranks of the suite against the tagger trained in one process: the same
// global batches, each rank on its stride of the rows, must give the same model (within float
// rounding: the ranks' sums are added in another order than one process adds them). Dropout is off,
// so the only difference is that order.
#include <doctest/doctest.h>

#ifdef QKV_WITH_TAGGER

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <unistd.h>

#include "dist/process_group.h"
#include "examples/tagger/train.h"
#include "model_io/checkpoint.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"
#include "tests/dist/dist_testing.h"

namespace fs = std::filesystem;
using dist_testing::group;

namespace {

tagger::Config small_config() {
  tagger::Config c;
  c.train_sentences = 300;
  c.dev_sentences = 50;
  c.test_sentences = 50;
  c.epochs = 2;
  c.batch_size = 13;  // not a multiple of 2 or 3: ranks hold different numbers of rows and tokens
  c.dropout = 0.0;
  c.d_model = 32;
  c.ffn_width = 64;
  return c;
}

tagger::TrainOptions quiet(const fs::path& dir, qkv::dist::ProcessGroup* g) {
  tagger::TrainOptions o;
  o.run_dir = dir.string();
  o.figures = false;
  o.verbose = false;
  o.progress = false;
  o.ranks.group = g;
  return o;
}

// A directory name every rank agrees on (rank 0's pid), so that rank 0 finds what they all named.
fs::path shared_scratch(qkv::dist::ProcessGroup& g, const std::string& what) {
  int64_t pid[1] = {g.rank() == 0 ? static_cast<int64_t>(::getpid()) : 0};
  g.all_reduce_sum(std::span<int64_t>(pid));
  return fs::temp_directory_path() / ("qkv_dist_" + what + "_" + std::to_string(pid[0]));
}

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void train_together_and_alone(qkv::dist::ProcessGroup& g) {
  const tagger::Config config = small_config();
  const tagger::Data data = tagger::load_data(config);
  const fs::path base = shared_scratch(g, "tagger");
  const fs::path together = base / "together", alone = base / "alone";
  if (g.rank() == 0) fs::create_directories(base);
  g.barrier();
  const tagger::TrainResult ddp = tagger::train(config, data, quiet(together, &g));
  if (g.rank() == 0) {
    const tagger::TrainResult one = tagger::train(config, data, quiet(alone, nullptr));
    const auto a = qkv::io::read_checkpoint(together / "last.safetensors");
    const auto b = qkv::io::read_checkpoint(alone / "last.safetensors");
    CHECK(a.step == b.step);
    double worst = 0;
    for (const auto& [name, t] : b.model) {
      const std::vector<float> x = a.model.at(name).to_vector(), y = t.to_vector();
      for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(x[i] - y[i])));
    }
    MESSAGE("largest weight difference after " << b.step << " steps on " << g.size() << " rank(s): " << worst);
    CHECK(worst < 5e-5);
    // The epoch metrics are sums over every rank's tokens: the same tokens as one process's.
    CHECK(ddp.history.back().train_loss == doctest::Approx(one.history.back().train_loss).epsilon(1e-4));
    CHECK(ddp.history.back().train_acc == doctest::Approx(one.history.back().train_acc).epsilon(1e-4));
    fs::remove_all(base);
  }
  g.barrier();
}

}  // namespace

TEST_CASE("the tagger on N ranks, each on its rows of every batch, trains the model one process trains on whole batches") {
  auto& g = group();
  // The fast path (the reducer, overlapped with backward) and the reference mode's plain reduction.
  for (const bool reference : {false, true}) {
    CAPTURE(reference);
    const qkv::ReferenceModeGuard mode(reference);
    train_together_and_alone(g);
  }
}

TEST_CASE("two runs on the same ranks write the same checkpoint bytes at any thread count and resume exactly, dropout on") {
  auto& g = group();
  tagger::Config config = small_config();
  config.dropout = 0.2;  // each rank draws its own stream, keyed by seed, rank and step
  const tagger::Data data = tagger::load_data(config);
  const fs::path base = shared_scratch(g, "repeat");
  if (g.rank() == 0) fs::create_directories(base);
  g.barrier();
  const int threads = qkv::get_num_threads();
  qkv::set_num_threads(1);
  tagger::train(config, data, quiet(base / "one_thread", &g));
  qkv::set_num_threads(2);
  tagger::train(config, data, quiet(base / "two_threads", &g));
  // Stopped after the first epoch, then resumed from its checkpoint.
  tagger::TrainOptions first = quiet(base / "resumed", &g);
  first.stop_after = 1;
  tagger::train(config, data, first);
  tagger::resume(tagger::load_saved_run((base / "resumed").string(), "last.safetensors"), data,
                 quiet(base / "resumed", &g));
  qkv::set_num_threads(threads);
  if (g.rank() == 0) {
    const std::string a = bytes_of(base / "one_thread" / "last.safetensors");
    CHECK(!a.empty());
    CHECK(a == bytes_of(base / "two_threads" / "last.safetensors"));
    CHECK(a == bytes_of(base / "resumed" / "last.safetensors"));
    const auto saved = tagger::load_saved_run((base / "one_thread").string(), "last.safetensors");
    CHECK(saved.world_size == g.size());
    fs::remove_all(base);
  }
  g.barrier();
}

#endif
