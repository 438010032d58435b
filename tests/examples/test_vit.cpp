// The ViT example (examples/vit): its images, patches, positions, model, rollout and training, on
// generated images small enough for the suite.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "data/idx.h"
#include "examples/vit/images.h"
#include "examples/vit/model.h"
#include "examples/vit/train.h"
#include "gradcheck_registry.h"
#include "graph_testing.h"
#include "io/scratch_dir.h"
#include "nn/functional/loss.h"
#include "nn/fourier_features.h"
#include "nn/functional/interpolate.h"
#include "nn/init.h"
#include "nn/positional_encoding.h"
#include "nn/positional_encoding_2d.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"

using qkv::Tensor;
using qkv::testing::ScratchDir;
namespace fs = std::filesystem;

namespace {

vit::ModelConfig tiny_model(const std::string& positions = "sin2d", const std::string& pool = "cls") {
  vit::ModelConfig m;
  m.rows = m.cols = 8, m.patch = 4, m.classes = 3;
  m.d_model = 8, m.heads = 2, m.layers = 1, m.ffn_hidden = 16;
  m.positions = positions, m.pool = pool;
  return m;
}

// A ViT small enough for finite differences, as a module of the registry.
struct TinyViT : qkv::nn::Module {
  // The class token starts at zero in training (as ViT's); here it is drawn, since at zero every
  // channel of it is equal and the first LayerNorm sits at its kink, where differences mislead.
  TinyViT() {
    vit = register_module("vit", std::make_shared<vit::ViT>(tiny_model("learned2d")));
    qkv::nn::init::normal_(vit->cls_token, 0.0f, 1.0f);
  }
  std::shared_ptr<vit::ViT> vit;
};

bool same_values(const Tensor& a, const Tensor& b) { return a.shape() == b.shape() && a.to_vector() == b.to_vector(); }

vit::Config generated_config(const std::string& positions) {
  vit::Config c;
  c.data = "generated";
  c.generated = 1200;
  c.model.positions = positions;
  c.model.d_model = 32, c.model.heads = 2, c.model.layers = 2, c.model.ffn_hidden = 64;
  c.epochs = 6, c.batch = 64, c.warmup = 20, c.lr = 3e-3;
  c.flip = false;
  return c;
}

vit::TrainOptions quiet(const fs::path& dir) {
  vit::TrainOptions o;
  o.run_dir = dir.string();
  o.figures = o.verbose = o.progress = false;
  o.baselines = false;
  return o;
}

}  // namespace

QKV_GRADCHECK_MODULE("ViT (patches, learned 2-D positions, class token, encoder, head)",
                     {qkv::testing::In::normal({2, 4, 16}).no_grad()}, [] { return std::make_shared<TinyViT>(); },
                     [](TinyViT& m, const qkv::testing::Inputs& x) { return m.vit->forward(x[0]); });

TEST_CASE("patches cut images into p×p squares in raster order, scaled, and mirrored on request") {
  vit::ImageSet set;
  set.rows = 4, set.cols = 4;
  for (int i = 0; i < 16; ++i) set.pixels.push_back(static_cast<std::uint8_t>(i));
  set.labels = {0};
  const Tensor p = vit::patches(set, {0}, 2, 0.0f, 1.0f / 255.0f);  // (pixel/255 − 0) / (1/255) = pixel
  REQUIRE(p.shape() == qkv::Shape{1, 4, 4});
  const std::vector<float> want = {0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15};
  for (int i = 0; i < 16; ++i) CHECK(p.data()[i] == doctest::Approx(want[i]));
  const Tensor m = vit::patches(set, {0}, 2, 0.0f, 1.0f / 255.0f, {{.mirror = true}});
  const std::vector<float> mirrored = {3, 2, 7, 6, 1, 0, 5, 4, 11, 10, 15, 14, 9, 8, 13, 12};
  for (int i = 0; i < 16; ++i) CHECK(m.data()[i] == doctest::Approx(mirrored[i]));
  CHECK_THROWS_AS(vit::patches(set, {0}, 3, 0.0f, 1.0f), qkv::ValueError);
}

TEST_CASE("patches moves an image (a random crop of it padded) with black shifted in, after mirroring it") {
  vit::ImageSet set;  // pixels 1 .. 16, so that black (0) is none of them
  set.rows = 4, set.cols = 4;
  for (int i = 0; i < 16; ++i) set.pixels.push_back(static_cast<std::uint8_t>(i + 1));
  set.labels = {0};
  const auto cut = [&](vit::Augmentation a) {
    const Tensor p = vit::patches(set, {0}, 2, 0.0f, 1.0f / 255.0f, {a});
    return std::vector<float>(p.data(), p.data() + 16);
  };
  // Pixel (y, x) is (y + 1, x − 1) of the image: rows 1 .. 3 moved up, columns 0 .. 2 moved right.
  //   0 5 6 7 / 0 9 10 11 / 0 13 14 15 / 0 0 0 0, in 2×2 patches:
  CHECK(cut({.dy = 1, .dx = -1}) == std::vector<float>{0, 5, 0, 9, 6, 7, 10, 11, 0, 13, 0, 0, 14, 15, 0, 0});
  // Mirrored (4 3 2 1 / 8 7 6 5 / ...), then pixel (y, x) is (y, x + 1) of that: 3 2 1 0 / 7 6 5 0 / ...
  CHECK(cut({.mirror = true, .dx = 1}) == std::vector<float>{3, 2, 7, 6, 1, 0, 5, 0, 11, 10, 15, 14, 9, 0, 13, 0});
  CHECK(cut({}) == cut({.dy = 0, .dx = 0}));
  CHECK(cut({.dy = 4}) == std::vector<float>(16, 0.0f));  // moved out entirely
}

TEST_CASE("with test_flip, evaluation of a model trained on mirror images sums the logits of each image and its mirror") {
  qkv::manual_seed(5);
  vit::ViT model(tiny_model("learned2d"));
  qkv::nn::init::normal_(model.cls_token, 0.0f, 1.0f);
  vit::ImageSet set;
  set.rows = set.cols = 8;
  qkv::Generator gen(11);
  for (int i = 0; i < 40 * 64; ++i) set.pixels.push_back(static_cast<std::uint8_t>(gen.next_below(256)));
  for (int i = 0; i < 40; ++i) set.labels.push_back(i % 3);
  std::vector<int64_t> all(40);
  for (int i = 0; i < 40; ++i) all[static_cast<size_t>(i)] = i;
  vit::Config c;
  c.model = tiny_model("learned2d");
  c.pixel_mean = 0.5, c.pixel_std = 0.05;  // inputs of about ±10: logits that differ from image to image
  const std::vector<vit::Augmentation> mirrored(40, {.mirror = true});
  qkv::IndexTensor once, both;
  {
    qkv::NoGradGuard no_grad;
    model.eval();
    const Tensor plain = model.forward(vit::patches(set, all, 4, 0.5f, 0.05f));
    once = plain.argmax(1);
    both = (plain + model.forward(vit::patches(set, all, 4, 0.5f, 0.05f, mirrored))).argmax(1);
  }
  const auto predicted = [&](bool test_flip) {
    c.test_flip = test_flip;
    return vit::evaluate(model, set, c).predicted;
  };
  const std::vector<int32_t> without = predicted(false), with = predicted(true);
  c.flip = false;  // a model that never saw a mirror image is not shown one
  const std::vector<int32_t> unmirrored = predicted(true);
  int differ = 0;
  for (int i = 0; i < 40; ++i) {
    CHECK(without[static_cast<size_t>(i)] == once.data()[i]);
    CHECK(unmirrored[static_cast<size_t>(i)] == once.data()[i]);
    CHECK(with[static_cast<size_t>(i)] == both.data()[i]);
    differ += once.data()[i] != both.data()[i];
  }
  CHECK(differ > 0);  // the mirror image changed some predictions: the test can tell the two apart
}

TEST_CASE("the position schemes: sin2d is the 2-D table, learned2d concatenates column and row vectors") {
  const auto sin2d = vit::make_patch_positions("sin2d", 3, 5, 8);
  const Tensor table = qkv::nn::sinusoidal_table_2d(3, 5, 8);
  for (int64_t i = 0; i < 3 * 5 * 8; ++i) CHECK(sin2d->table().data()[i] == table.data()[i]);
  const auto learned = vit::make_patch_positions("learned2d", 3, 5, 8);
  const Tensor P = learned->table().contiguous();  // (15, 8)
  const auto params = learned->named_parameters();
  REQUIRE(params.size() == 2);
  REQUIRE(params[0].first == "col");
  REQUIRE(params[1].first == "row");
  const Tensor col = params[0].second, row = params[1].second;
  for (int64_t y = 0; y < 3; ++y)
    for (int64_t x = 0; x < 5; ++x)
      for (int64_t k = 0; k < 4; ++k) {
        CHECK(P.data()[(y * 5 + x) * 8 + k] == col.data()[x * 4 + k]);
        CHECK(P.data()[(y * 5 + x) * 8 + 4 + k] == row.data()[y * 4 + k]);
      }
  CHECK_FALSE(vit::make_patch_positions("none", 3, 5, 8)->table().defined());
  CHECK(vit::make_patch_positions("learned1d", 3, 5, 8)->table().shape() == qkv::Shape{15, 8});
  CHECK_THROWS_WITH_AS(vit::make_patch_positions("sin2d", 3, 5, 6), doctest::Contains("divisible by 4"), qkv::ValueError);
  CHECK_THROWS_WITH_AS(vit::make_patch_positions("polar", 3, 5, 8), doctest::Contains("sin2d, learned2d"), qkv::ValueError);
}

TEST_CASE("images at another size: upsampled by pixel blocks, padded onto a black canvas at a corner") {
  vit::ImageSet set;
  set.rows = 2, set.cols = 3;
  set.pixels = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  set.labels = {4, 7};
  const vit::ImageSet up = vit::upsampled(set, 2);
  CHECK(up.rows == 4);
  CHECK(up.cols == 6);
  CHECK(up.labels == set.labels);
  CHECK(std::vector<uint8_t>(up.image(1), up.image(1) + 24) ==
        std::vector<uint8_t>{7, 7, 8, 8, 9, 9, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 10, 10, 11, 11, 12, 12});
  const vit::ImageSet pad = vit::padded(set, 3, 5, 1, 2);
  CHECK(std::vector<uint8_t>(pad.image(0), pad.image(0) + 15) ==
        std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 4, 5, 6});
  CHECK(pad.labels == set.labels);
  CHECK_THROWS_AS(vit::padded(set, 3, 5, 2, 0), qkv::ValueError);
  CHECK_THROWS_AS(vit::upsampled(set, 0), qkv::ValueError);
}

TEST_CASE("a ViT resized to another grid: formulas on the new grid, learned tables interpolated, the rest as trained") {
  qkv::manual_seed(5);
  for (const std::string& positions : vit::position_names()) {
    CAPTURE(positions);
    const vit::ModelConfig c = tiny_model(positions);  // 8×8 images, 4×4 patches: a 2×2 grid
    vit::ViT model(c);
    const std::shared_ptr<vit::ViT> big = vit::resized(model, 16, 12);
    CHECK(big->config.rows == 16);
    CHECK(big->config.cols == 12);
    // Everything but the positions is the trained model's, to the bit.
    const auto trained = model.state_dict();
    for (const auto& [name, t] : big->state_dict()) {
      if (name.rfind("positions.", 0) == 0 && name.find("features") == std::string::npos) continue;
      REQUIRE(trained.count(name) == 1);
      CHECK_MESSAGE(same_values(t, trained.at(name)), name);
    }
    const Tensor P = big->positions->table();
    if (positions == "none") {
      CHECK_FALSE(P.defined());
      continue;
    }
    CHECK(P.shape() == qkv::Shape{4 * 3, c.d_model});
    // The same size again is the model itself.
    const std::shared_ptr<vit::ViT> same = vit::resized(model, 8, 8);
    CHECK(same_values(same->positions->table(), model.positions->table()));
    const Tensor images = qkv::randn({2, 4 * 3, 16});
    CHECK(big->forward(images).shape() == qkv::Shape{2, c.classes});
  }
  // sin2d and sin1d: their formulas on the new grid of 4 × 3 patches.
  CHECK(same_values(vit::resized(vit::ViT(tiny_model("sin2d")), 16, 12)->positions->table(),
                    qkv::nn::sinusoidal_table_2d(4, 3, 8).reshape({12, 8})));
  CHECK(same_values(vit::resized(vit::ViT(tiny_model("sin1d")), 16, 12)->positions->table(),
                    qkv::nn::sinusoidal_table(12, 8)));
  // The Fourier schemes: the trained features at the new grid's patch centres in the unit square.
  vit::ViT fourier(tiny_model("learned-fourier2d"));
  const std::shared_ptr<vit::ViT> fourier_big = vit::resized(fourier, 16, 12);
  std::vector<float> centres;
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 3; ++x) centres.insert(centres.end(), {(y + 0.5f) / 4, (x + 0.5f) / 3});
  const auto* features = dynamic_cast<const qkv::nn::FourierFeatures*>(
      fourier.positions->named_children().front().second.get());
  REQUIRE(features != nullptr);
  CHECK(same_values(fourier_big->positions->table(), features->forward(qkv::tensor(centres, {12, 2}))));
  // learned1d: the (2, 2, D) table resampled bilinearly, as PyTorch's interpolate (tested in
  // tests/nn/test_fourier_features.cpp) on the table viewed as the grid.
  vit::ViT model(tiny_model("learned1d"));
  const Tensor grid = model.positions->table().view({2, 2, -1});
  const Tensor expected = qkv::nn::functional::resize_bilinear(grid, 4, 3).reshape({12, -1});
  CHECK(same_values(vit::resized(model, 16, 12)->positions->table(), expected));
  // learned2d: the column table along x, the row table along y.
  vit::ViT model2(tiny_model("learned2d"));
  const Tensor full = model2.positions->table().view({2, 2, -1});
  const Tensor resampled = vit::resized(model2, 16, 12)->positions->table().view({4, 3, -1});
  CHECK((resampled - qkv::nn::functional::resize_bilinear(full, 4, 3)).abs().max().item() < 1e-6f);
  CHECK_THROWS_AS(vit::resized(model2, 10, 8), qkv::ValueError);  // 4×4 patches do not tile 10 rows
}

TEST_CASE("without positions and with mean pooling the ViT cannot tell a patch order from another") {
  qkv::manual_seed(3);
  vit::ViT model(tiny_model("none", "mean"));
  model.eval();
  const Tensor x = qkv::randn({1, 4, 16});
  const Tensor swapped = qkv::cat({x.slice(1, 2, 4), x.slice(1, 0, 2)}, 1);
  const Tensor a = model.forward(x), b = model.forward(swapped);
  for (int i = 0; i < 3; ++i) CHECK(a.data()[i] == doctest::Approx(b.data()[i]).epsilon(1e-5));
  qkv::manual_seed(3);
  vit::ViT placed(tiny_model("sin2d", "mean"));
  placed.eval();
  const Tensor c = placed.forward(x), d = placed.forward(swapped);
  double diff = 0;
  for (int i = 0; i < 3; ++i) diff += std::abs(c.data()[i] - d.data()[i]);
  CHECK(diff > 1e-4);
}

TEST_CASE("attention rollout of one layer is half the class token's head-averaged weights plus half the identity") {
  qkv::manual_seed(4);
  vit::ViT model(tiny_model());
  model.eval();
  qkv::NoGradGuard no_grad;
  model.forward(qkv::randn({2, 4, 16}));
  const Tensor r = model.rollout();  // (2, 4)
  const Tensor w = model.encoder->attention_weights()[0];  // (2, H, 5, 5)
  REQUIRE(r.shape() == qkv::Shape{2, 4});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t j = 0; j < 4; ++j) {
      const float mean_heads = (w.data()[((b * 2 + 0) * 5 + 0) * 5 + 1 + j] + w.data()[((b * 2 + 1) * 5 + 0) * 5 + 1 + j]) / 2;
      CHECK(r.data()[b * 4 + j] == doctest::Approx(0.5f * mean_heads).epsilon(1e-5));
    }
}

TEST_CASE("attention rollout multiplies the layers' residual-mixed weights from the first layer to the last") {
  qkv::manual_seed(6);
  vit::ModelConfig m = tiny_model();
  m.layers = 2;
  vit::ViT model(m);
  model.eval();
  qkv::NoGradGuard no_grad;
  model.forward(qkv::randn({1, 4, 16}));
  const std::vector<Tensor> w = model.encoder->attention_weights();  // 2 × (1, H, 5, 5)
  // A_l = (mean over heads + I) / 2, each row summing to 1; R = A_2 · A_1; the class token's row.
  const auto mixed = [](const Tensor& weights) {
    return (weights.mean({1}).squeeze(0) + qkv::eye(5)) * 0.5f;
  };
  const Tensor R = mixed(w[1]).matmul(mixed(w[0]));
  const Tensor r = model.rollout();
  for (int64_t j = 0; j < 4; ++j) CHECK(r.data()[j] == doctest::Approx(R.data()[1 + j]).epsilon(1e-5));
  float row = R.data()[0];
  for (int64_t j = 0; j < 4; ++j) row += r.data()[j];
  CHECK(row == doctest::Approx(1.0f).epsilon(1e-5));  // with the class token's own share
}

TEST_CASE("the ViT gives the same loss and gradients in the reference mode as on the fused ops") {
  const auto run = [](bool plain) {
    qkv::ReferenceModeGuard mode(plain);
    qkv::manual_seed(5);
    vit::ViT model(tiny_model("learned2d"));
    qkv::nn::init::normal_(model.cls_token, 0.0f, 1.0f);
    const Tensor loss = qkv::nn::functional::cross_entropy(model.forward(qkv::randn({3, 4, 16})), qkv::IndexTensor{0, 2, 1});
    loss.backward();
    std::vector<float> out = {loss.item()};
    for (const Tensor& p : model.parameters()) out.insert(out.end(), p.grad().data(), p.grad().data() + p.numel());
    return out;
  };
  const std::vector<float> fast = run(false), plain = run(true);
  REQUIRE(fast.size() == plain.size());
  float largest = 0, worst = 0;
  for (size_t i = 0; i < fast.size(); ++i) {
    largest = std::max(largest, std::abs(plain[i]));
    worst = std::max(worst, std::abs(fast[i] - plain[i]));
  }
  CHECK(fast[0] == doctest::Approx(plain[0]).epsilon(1e-6));  // the loss
  CHECK(worst <= 1e-5f * largest);  // float32 rounding, in another order
}

TEST_CASE("IDX image sets are refused with the file named: label counts, label values, ranks, sizes") {
  ScratchDir dir;
  const auto write = [&](const std::string& name, std::vector<int64_t> shape, std::uint8_t fill) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    qkv::data::write_idx(dir / name, shape, std::vector<std::uint8_t>(static_cast<size_t>(n), fill));
  };
  write("train-images-idx3-ubyte", {20, 8, 8}, 9);
  write("train-labels-idx1-ubyte", {19}, 1);
  write("t10k-images-idx3-ubyte", {5, 8, 8}, 9);
  write("t10k-labels-idx1-ubyte", {5}, 1);
  CHECK_THROWS_WITH_AS(vit::load_idx_directory(dir.path(), 4, 10),
                       doctest::Contains("holds 19 labels for the 20 images"), qkv::FormatError);
  write("train-labels-idx1-ubyte", {20}, 12);
  CHECK_THROWS_WITH_AS(vit::load_idx_directory(dir.path(), 4, 10),
                       doctest::Contains("byte 8 (image 0) is label 12; expected 0 to 9"), qkv::FormatError);
  write("train-labels-idx1-ubyte", {20}, 1);
  write("t10k-images-idx3-ubyte", {5, 6, 6}, 9);
  CHECK_THROWS_WITH_AS(vit::load_idx_directory(dir.path(), 4, 10), doctest::Contains("test images of 6×6"),
                       qkv::FormatError);
  write("t10k-images-idx3-ubyte", {5, 64}, 9);
  CHECK_THROWS_WITH_AS(vit::load_idx_directory(dir.path(), 4, 10), doctest::Contains("2 dimensions; expected 3"),
                       qkv::FormatError);
  write("t10k-images-idx3-ubyte", {5, 8, 8}, 9);
  const vit::ImageData d = vit::load_idx_directory(dir.path(), 4, 10);
  CHECK(d.train.size() == 16);
  CHECK(d.validation.size() == 4);
  CHECK(d.test.size() == 5);
}

TEST_CASE("a Fashion-MNIST cache holding another file is refused, naming it and the pinned digest") {
  ScratchDir dir;
  qkv::data::write_idx(dir / "train-images-idx3-ubyte", {2, 28, 28}, std::vector<std::uint8_t>(2 * 784, 0));
  CHECK_THROWS_WITH_AS(vit::load_fashion_mnist(dir.path(), 5000),
                       doctest::Contains("is not Fashion-MNIST's train-images-idx3-ubyte (1584 bytes"), qkv::FormatError);
}

TEST_CASE("the ViT learns the generated shapes only with positions: their half of the image is the class") {
  ScratchDir dir;
  const vit::TrainResult placed = vit::train(generated_config("sin2d"), quiet(dir / "sin2d"));
  const vit::TrainResult bag = vit::train(generated_config("none"), quiet(dir / "none"));
  CHECK(placed.test_accuracy > 0.9);
  // Without positions (and a class token that has none) top and bottom look alike: about half
  // the classes' pairs are a coin toss.
  CHECK(bag.test_accuracy < 0.65);
  CHECK(bag.test_accuracy > 0.35);
}

TEST_CASE("vit training is the same to the byte at 1 and 2 threads, and a resumed run ends where a whole one does") {
  ScratchDir dir;
  vit::Config c = generated_config("learned2d");
  c.generated = 400, c.epochs = 3, c.flip = true;
  c.model.dropout = 0.1f;  // the default generator's draws must come back on resume too
  const int before = qkv::get_num_threads();
  qkv::set_num_threads(1);
  vit::train(c, quiet(dir / "one"));
  qkv::set_num_threads(2);
  vit::train(c, quiet(dir / "two"));
  vit::TrainOptions first = quiet(dir / "resumed");
  first.stop_after = 1;
  vit::train(c, first);
  vit::TrainOptions rest = quiet(dir / "resumed");
  rest.resume = true;
  vit::Config keep;
  keep.epochs = 0;
  vit::train(keep, rest);
  qkv::set_num_threads(before);
  for (const char* file : {"last.safetensors", "best.safetensors"}) {
    const std::string one = qkv::testing::read_file(dir / "one" / file);
    CHECK(one == qkv::testing::read_file(dir / "two" / file));
    CHECK(one == qkv::testing::read_file(dir / "resumed" / file));
  }
  CHECK_THROWS_WITH_AS(vit::train(c, quiet(dir / "one")), doctest::Contains("holds a vit run"), qkv::ValueError);
  CHECK_THROWS_WITH_AS(vit::train(keep, rest), doctest::Contains("the run is complete (3 epochs)"), qkv::ValueError);
}

TEST_CASE("a vit run stopped before its first checkpoint leaves no run and trains again from the start") {
  ScratchDir dir;
  vit::Config c = generated_config("sin2d");
  c.generated = 200, c.epochs = 2, c.warmup = 2;
  vit::TrainOptions nothing = quiet(dir / "run");
  nothing.stop_after = 0;  // the baselines and the config staged, no epoch trained
  vit::train(c, nothing);
  REQUIRE_FALSE(fs::exists(dir / "run" / "config.json"));
  vit::TrainOptions rest = quiet(dir / "run");
  rest.resume = true;
  vit::Config keep;
  keep.epochs = 0;
  CHECK_THROWS_WITH_AS(vit::train(keep, rest), doctest::Contains("holds no vit run (no config.json)"), qkv::ValueError);
  vit::train(c, quiet(dir / "run"));
  vit::train(c, quiet(dir / "whole"));
  CHECK(qkv::testing::read_file(dir / "run" / "last.safetensors") ==
        qkv::testing::read_file(dir / "whole" / "last.safetensors"));
}

TEST_CASE("--recompute: the blocks' activations recomputed in backward give the same gradients to the bit") {
  const auto gradients = [](bool recompute) {
    vit::ModelConfig m = tiny_model("learned2d");
    m.layers = 3, m.dropout = 0.1f, m.recompute = recompute;
    qkv::manual_seed(3);
    vit::ViT model(m);
    qkv::Generator gen(4);
    const qkv::Tensor x = qkv::randn({5, m.num_patches(), m.patch * m.patch}, false, &gen);
    qkv::manual_seed(6);  // the same dropout draws
    return qkv::testing::gradients_after(model.parameters(), [&] {
      qkv::nn::functional::cross_entropy(model.forward(x), qkv::IndexTensor{0, 2, 1, 1, 0}).backward();
    });
  };
  CHECK(gradients(false) == gradients(true));
}
