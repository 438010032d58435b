// Weights alone (model_io/weights.h): a module's state_dict in a plain safetensors file, named as the
// module names it, and loaded back with every name and shape checked; checkpoints without an
// optimizer (model_io/checkpoint.h). Files PyTorch writes are in tests/nn/test_pytorch.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "model_io/checkpoint.h"
#include "io/safetensors.h"
#include "model_io/weights.h"
#include "nn/pytorch.h"
#include "optim/adam.h"
#include "qkv.h"
#include "io/scratch_dir.h"

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

TEST_CASE("a state_dict with an integer buffer is read: its I64 tensors apart, never as weights") {
  // PyTorch's BatchNorm keeps num_batches_tracked as an int64 buffer; before, any I64 tensor made
  // the whole file unreadable, even for a non-strict load.
  ScratchDir dir;
  manual_seed(3);
  auto model = mlp(3, 4, 2);
  io::TensorRecords records;
  for (const auto& [name, t] : model->state_dict()) records.add(name, t);
  std::vector<io::TensorRecord> all = records.records();
  const std::vector<int64_t> count = {7};
  all.push_back({"bn.num_batches_tracked", io::DType::I64, {}, std::as_bytes(std::span(count))});
  io::save_safetensors(dir / "torch.safetensors", all);

  const nn::StateDict weights = io::read_safetensors(dir / "torch.safetensors");
  CHECK(weights.size() == 4);
  CHECK_FALSE(weights.count("bn.num_batches_tracked"));
  const std::map<std::string, IndexTensor> integers = io::read_index_tensors(dir / "torch.safetensors");
  REQUIRE(integers.size() == 1);
  CHECK(integers.at("bn.num_batches_tracked").numel() == 1);
  CHECK(integers.at("bn.num_batches_tracked").data()[0] == 7);

  auto loaded = mlp(3, 4, 2);
  const nn::LoadResult result = io::load_safetensors(dir / "torch.safetensors", *loaded, /*strict=*/false);
  CHECK(result.loaded == std::vector<std::string>{"0.bias", "0.weight", "2.bias", "2.weight"});
  CHECK(result.missing.empty());
  CHECK(result.unexpected == std::vector<std::string>{"bn.num_batches_tracked"});
  CHECK(values(loaded->state_dict().at("2.weight")) == values(model->state_dict().at("2.weight")));
  CHECK(error_of([&] { io::load_safetensors(dir / "torch.safetensors", *loaded); }) ==
        "load_safetensors: '" + (dir / "torch.safetensors").string() +
            "' does not fit Sequential (nothing was changed):\n"
            "  unexpected integer (I64) keys, which no parameter is: bn.num_batches_tracked;");
  // An integer tensor under a parameter's name is a dtype mismatch, refused even when not strict.
  const std::vector<int64_t> ones(12, 1);
  const io::TensorRecord as_integers{"0.weight", io::DType::I64, {4, 3}, std::as_bytes(std::span(ones))};
  io::save_safetensors(dir / "int.safetensors", std::span(&as_integers, 1));
  CHECK(error_of([&] { io::load_safetensors(dir / "int.safetensors", *loaded, false); }) ==
        "load_safetensors: '" + (dir / "int.safetensors").string() +
            "': tensor '0.weight' is I64 (integers) where Sequential's tensor of that name is F32 (nothing was "
            "changed)");
}

TEST_CASE("a non-strict load says what it loaded, what was missing and what was unexpected") {
  // Before, a non-strict load that matched no key at all reported success and returned nothing.
  ScratchDir dir;
  io::save_safetensors(dir / "w.safetensors", nn::StateDict{{"encoder.weight", zeros({4, 3})}});
  auto model = mlp(3, 4, 2);
  const nn::LoadResult none = io::load_safetensors(dir / "w.safetensors", *model, /*strict=*/false);
  CHECK(none.loaded.empty());
  CHECK(none.missing == std::vector<std::string>{"0.bias", "0.weight", "2.bias", "2.weight"});
  CHECK(none.unexpected == std::vector<std::string>{"encoder.weight"});
  // The same from the module itself, and a strict load that succeeds loads everything.
  const nn::LoadResult some = model->load_state_dict({{"0.weight", zeros({4, 3})}, {"x", zeros({1})}}, false);
  CHECK(some.loaded == std::vector<std::string>{"0.weight"});
  CHECK(some.missing == std::vector<std::string>{"0.bias", "2.bias", "2.weight"});
  CHECK(some.unexpected == std::vector<std::string>{"x"});
  io::save_safetensors(dir / "all.safetensors", *model);
  const nn::LoadResult all = io::load_safetensors(dir / "all.safetensors", *model);
  CHECK(all.loaded.size() == 4);
  CHECK(all.missing.empty());
  CHECK(all.unexpected.empty());
}

TEST_CASE("weights that are not finite are neither written nor read, as a checkpoint's are not") {
  ScratchDir dir;
  auto model = mlp(3, 4, 2);
  {
    NoGradGuard no_grad;
    model->state_dict().at("2.weight").data()[5] = std::numeric_limits<float>::quiet_NaN();
  }
  const std::string path = (dir / "nan.safetensors").string();
  CHECK(error_of([&] { io::save_safetensors(path, *model); }) ==
        "save_safetensors: '" + path +
            "': tensor '2.weight' holds nan at element 5: weights that are not finite are not written (the file "
            "is left as it was)");
  CHECK_FALSE(std::filesystem::exists(path));
  // A file another program wrote with an infinity: refused by every reader, naming the tensor.
  std::vector<float> w(12, 0.5f);
  w[2] = std::numeric_limits<float>::infinity();
  const io::TensorRecord record{"0.weight", io::DType::F32, {4, 3}, std::as_bytes(std::span(w))};
  io::save_safetensors(path, std::span(&record, 1));
  CHECK(error_of([&] { io::read_safetensors(path); }) ==
        "read_safetensors: '" + path +
            "': tensor '0.weight' holds inf at element 2: weights that are not finite are refused "
            "(allow_non_finite reads them anyway)");
  const V before = values(model->state_dict().at("0.weight"));
  CHECK(error_of([&] { io::load_safetensors(path, *model, false); }).starts_with(
      "load_safetensors: '" + path + "': tensor '0.weight' holds inf at element 2"));
  CHECK(values(model->state_dict().at("0.weight")) == before);
  // from_torch_state_dict takes what read_safetensors gives, so a PyTorch file is refused there.
  CHECK_THROWS_AS(nn::from_torch_state_dict(*model, io::read_safetensors(path)), ValueError);
  // Asked for, they are read.
  CHECK(std::isinf(io::read_safetensors(path, /*allow_non_finite=*/true).at("0.weight").data()[2]));
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
