// Weights alone (io/weights.h): a module's state_dict in a plain safetensors file, named as the
// module names it, and loaded back with every name and shape checked; checkpoints without an
// optimizer (io/checkpoint.h). Files PyTorch writes are in tests/nn/test_pytorch.cpp.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <span>
#include <string>

#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "io/weights.h"
#include "optim/adam.h"
#include "qkv.h"
#include "scratch_dir.h"

using namespace qkv;
using qkv::testing::ScratchDir;
using V = std::vector<float>;

namespace {

std::shared_ptr<nn::Sequential> mlp(int64_t in, int64_t hidden, int64_t out) {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Linear>(in, hidden)).push_back(std::make_shared<nn::Tanh>());
  m->push_back(std::make_shared<nn::Linear>(hidden, out));
  return m;
}

V values(const Tensor& t) {
  const Tensor c = t.contiguous();
  return V(c.data(), c.data() + c.numel());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("no error");
  return "";
}

}  // namespace

TEST_CASE(
    "save_safetensors writes a module's state_dict under its own names and load_safetensors restores it") {
  ScratchDir dir;
  manual_seed(1);
  auto saved = mlp(3, 4, 2);
  io::save_safetensors(dir / "w.safetensors", *saved, {{"source", "test"}});

  // The plain layout: no prefix, no checkpoint metadata, F32 tensors of the state_dict's shapes.
  const io::LoadedTensors file = io::load_safetensors(dir / "w.safetensors");
  CHECK(file.metadata == std::map<std::string, std::string>{{"source", "test"}});
  REQUIRE(file.tensors.size() == 4);
  CHECK(file.find("0.weight")->shape == std::vector<int64_t>{4, 3});
  CHECK(file.find("2.bias")->shape == std::vector<int64_t>{2});

  auto loaded = mlp(3, 4, 2);
  io::load_safetensors(dir / "w.safetensors", *loaded);
  const Tensor x = randn({5, 3});
  CHECK(values(loaded->forward(x)) == values(saved->forward(x)));
  const nn::StateDict read = io::read_safetensors(dir / "w.safetensors");
  CHECK(values(read.at("0.weight")) == values(saved->state_dict().at("0.weight")));
  CHECK_FALSE(read.at("0.weight").requires_grad());
}

TEST_CASE("save_safetensors of named tensors writes any layout in C order") {
  ScratchDir dir;
  const Tensor w = arange(0, 6).reshape({2, 3});
  io::save_safetensors(dir / "t.safetensors", nn::StateDict{{"w_t", w.transpose(0, 1)}, {"w", w}});
  const nn::StateDict read = io::read_safetensors(dir / "t.safetensors");
  CHECK(read.at("w_t").shape() == std::vector<int64_t>{3, 2});
  CHECK(values(read.at("w_t")) == V{0, 3, 1, 4, 2, 5});
  CHECK(values(read.at("w")) == V{0, 1, 2, 3, 4, 5});
  CHECK_THROWS_WITH_AS(
      io::save_safetensors(dir / "u.safetensors", nn::StateDict{{"u", Tensor()}}),
      ("save_safetensors: '" + (dir / "u.safetensors").string() + "': tensor 'u' is undefined").c_str(),
      ValueError);
  CHECK_FALSE(std::filesystem::exists(dir / "u.safetensors"));
}

TEST_CASE("load_safetensors lists every missing unexpected and mis-shaped key and changes nothing") {
  ScratchDir dir;
  io::save_safetensors(dir / "w.safetensors", *mlp(3, 4, 2));
  auto other = std::make_shared<nn::Sequential>();  // 0.* fits, 1.* is missing, 2.* is mis-shaped
  other->push_back(std::make_shared<nn::Linear>(3, 4)).push_back(std::make_shared<nn::Linear>(4, 4));
  other->push_back(std::make_shared<nn::Linear>(4, 5));
  const V before = values(other->state_dict().at("0.weight"));
  const std::string message = error_of([&] { io::load_safetensors(dir / "w.safetensors", *other); });
  CHECK(message ==
        "load_safetensors: '" + (dir / "w.safetensors").string() +
            "' does not fit Sequential (nothing was changed):\n  missing keys: 1.bias; 1.weight;"
            "\n  shape mismatches: 2.bias (expected (5), got (2)); 2.weight (expected (5,4), got (2,4));");
  CHECK(values(other->state_dict().at("0.weight")) == before);

  // Not strict: keys on one side are skipped, shapes must still match.
  auto bigger = mlp(3, 4, 2);
  bigger->push_back(std::make_shared<nn::Linear>(2, 2));
  io::load_safetensors(dir / "w.safetensors", *bigger, /*strict=*/false);
  CHECK(values(bigger->state_dict().at("2.bias")) ==
        values(io::read_safetensors(dir / "w.safetensors").at("2.bias")));
  CHECK_THROWS_WITH_AS(io::load_safetensors(dir / "w.safetensors", *bigger),
                       doctest::Contains("missing keys: 3.bias; 3.weight;"), ValueError);
}

TEST_CASE("read_safetensors refuses a tensor that is not float32 naming it") {
  ScratchDir dir;
  const std::vector<int64_t> ids = {1, 2};
  const io::TensorRecord record{"ids", io::DType::I64, {2}, std::as_bytes(std::span(ids))};
  io::save_safetensors(dir / "i.safetensors", std::span(&record, 1));
  CHECK_THROWS_WITH_AS(io::read_safetensors(dir / "i.safetensors"),
                       ("read_safetensors: '" + (dir / "i.safetensors").string() +
                        "': tensor 'ids' has dtype I64, expected F32")
                           .c_str(),
                       FormatError);
}

TEST_CASE("a checkpoint saved without an optimizer holds the weights and the step and refuses an optimizer") {
  ScratchDir dir;
  manual_seed(2);
  auto model = mlp(3, 4, 2);
  io::save_checkpoint(dir / "c.safetensors", *model, 7, "config text");
  const io::Checkpoint ckpt = io::read_checkpoint(dir / "c.safetensors");
  CHECK(ckpt.step == 7);
  CHECK(ckpt.config == "config text");
  CHECK(ckpt.optimizer_name.empty());
  CHECK(ckpt.optimizer.tensors.empty());
  CHECK(ckpt.optimizer.scalars.empty());
  CHECK(values(ckpt.model.at("2.weight")) == values(model->state_dict().at("2.weight")));

  optim::Adam adam(model->parameters());
  const std::string message = error_of([&] { io::load_checkpoint(dir / "c.safetensors", *model, adam); });
  CHECK_MESSAGE(
      message.find("\n  optimizer: the checkpoint holds no optimizer state (it was saved with the weights "
                   "alone)") != std::string::npos,
      message);
}

TEST_CASE(
    "a checkpoint another program writes by the documented layout and checksum loads and qkv writes its "
    "bytes") {
  // tests/io/torch_checkpoint.py wrote it from a PyTorch Sequential(Linear(6, 16), Tanh, Linear(16, 4)).
  const std::string fixtures = std::string(QKV_SOURCE_DIR) + "/tests/io/fixtures/";
  const io::Checkpoint ckpt = io::read_checkpoint(fixtures + "torch_checkpoint.safetensors");
  CHECK(ckpt.step == 42);
  CHECK(ckpt.rng.seed == 7);
  CHECK(ckpt.rng.offset == 0);
  CHECK(ckpt.optimizer_name.empty());
  CHECK(ckpt.config == "written by tests/io/torch_checkpoint.py");

  auto model = mlp(6, 16, 4);
  model->load_state_dict(ckpt.model);
  const nn::StateDict golden = io::read_safetensors(fixtures + "torch_checkpoint.golden.safetensors");
  const V y = values(model->forward(golden.at("x"))), expected = values(golden.at("y"));
  REQUIRE(y.size() == expected.size());
  for (std::size_t i = 0; i < y.size(); ++i) CHECK(y[i] == doctest::Approx(expected[i]).epsilon(1e-6));

  // The same weights, step, generator and config, saved by qkv: the same bytes.
  ScratchDir dir;
  manual_seed(7);
  io::save_checkpoint(dir / "c.safetensors", *model, 42, ckpt.config);
  CHECK(testing::read_file(dir / "c.safetensors") ==
        testing::read_file(fixtures + "torch_checkpoint.safetensors"));
}
