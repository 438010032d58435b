// Checkpoints (model_io/checkpoint.h): resuming from a file continues training bit for bit, and a file
// that is damaged, foreign or does not fit is rejected whole, leaving the model, the optimizer and
// the generator exactly as they were.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <span>

#include "child_process.h"
#include "model_io/checkpoint.h"
#include "io/safetensors.h"
#include "nn/functional/loss.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/scheduler.h"
#include "optim/sgd.h"
#include "qkv.h"
#include "io/scratch_dir.h"

using namespace qkv;
using qkv::testing::read_file;
using qkv::testing::ScratchDir;
using V = std::vector<float>;

namespace {

// A classifier with dropout, so that resuming also needs the generator's state, trained with
// AdamW, a schedule and clipping.
struct Run {
  std::shared_ptr<nn::Sequential> model = std::make_shared<nn::Sequential>();
  std::unique_ptr<optim::AdamW> optimizer;
  std::unique_ptr<optim::WarmupLR> schedule;
  Tensor x;
  IndexTensor y;

  Run() {
    model->push_back(std::make_shared<nn::Linear>(6, 16)).push_back(std::make_shared<nn::Dropout>(0.3f));
    model->push_back(std::make_shared<nn::Tanh>()).push_back(std::make_shared<nn::Linear>(16, 4));
    optimizer = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions{.lr = 0.02});
    schedule = std::make_unique<optim::WarmupLR>(*optimizer, 3, 20);
    Generator data(77);
    x = randn({32, 6}, false, &data);
    y = randint(0, 4, {32}, &data);
  }

  void step() {
    optimizer->zero_grad();
    nn::functional::cross_entropy(model->forward(x), y).backward();
    optim::clip_grad_norm_(model->parameters(), 1.0);
    optimizer->step();
    schedule->step();
  }
};

V flat(const std::vector<Tensor>& tensors) {
  V out;
  for (const Tensor& t : tensors) {
    const V v = t.to_vector();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

bool bitwise_equal(const V& a, const V& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Everything a failed load must leave alone.
struct Snapshot {
  V params, optimizer_tensors;
  std::map<std::string, double> optimizer_scalars;
  GeneratorState rng;

  Snapshot(const nn::Module& model, const optim::Optimizer& optimizer)
      : params(flat(model.parameters())), rng(default_generator().state()) {
    const optim::OptimizerState s = optimizer.state_dict();
    for (const auto& [key, t] : s.tensors) {
      const V v = t.to_vector();
      optimizer_tensors.insert(optimizer_tensors.end(), v.begin(), v.end());
    }
    optimizer_scalars = s.scalars;
  }
  bool operator==(const Snapshot& o) const {
    return bitwise_equal(params, o.params) && bitwise_equal(optimizer_tensors, o.optimizer_tensors) &&
           optimizer_scalars == o.optimizer_scalars && rng.seed == o.rng.seed && rng.offset == o.rng.offset;
  }
};

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// The second half of a resumed run, in a new process: nothing of the first half survives in memory.
// args: the checkpoint to resume from, the step to train to, where to save the result.
QKV_CHILD("resume checkpoint", [](const std::vector<std::string>& args) {
  manual_seed(12345);  // another seed, hence other initial weights: the checkpoint must overwrite them
  Run run;
  const io::Checkpoint c = io::load_checkpoint(args.at(0), *run.model, *run.optimizer);
  run.schedule->set_last_step(c.step);
  const int N = std::stoi(args.at(1));
  for (int64_t t = c.step; t < N; ++t) run.step();
  io::save_checkpoint(args.at(2), *run.model, *run.optimizer, N, c.config);
  return 0;
});

TEST_CASE("training k steps then resuming from the checkpoint in a new process continues bit for bit") {
  ScratchDir dir;
  const int N = 10, k = 4;
  manual_seed(1);
  Run full;
  for (int t = 0; t < N; ++t) full.step();
  const GeneratorState full_rng = default_generator().state();

  manual_seed(1);
  Run first;
  for (int t = 0; t < k; ++t) first.step();
  io::save_checkpoint(dir / "k.safetensors", *first.model, *first.optimizer, first.schedule->last_step(),
                      "{\"lr\": 0.02}");
  const testing::ChildResult child = testing::run_child(
      "resume checkpoint",
      {(dir / "k.safetensors").string(), std::to_string(N), (dir / "n.safetensors").string()});
  REQUIRE(child.exit_code == 0);

  const io::Checkpoint resumed = io::read_checkpoint(dir / "n.safetensors");
  CHECK(resumed.step == N);
  CHECK(resumed.config == "{\"lr\": 0.02}");
  for (const auto& [name, t] : full.model->state_dict())
    CHECK_MESSAGE(bitwise_equal(resumed.model.at(name).to_vector(), t.to_vector()), name);
  for (const auto& [key, t] : full.optimizer->state_dict().tensors)
    CHECK_MESSAGE(bitwise_equal(resumed.optimizer.tensors.at(key).to_vector(), t.to_vector()), key);
  CHECK(resumed.optimizer.scalars ==
        full.optimizer->state_dict().scalars);   // lr of the schedule, step counts
  CHECK(resumed.rng.offset == full_rng.offset);  // dropout drew the same numbers
}

TEST_CASE("a checkpoint is a safetensors file with the documented names and metadata") {
  ScratchDir dir;
  manual_seed(3);
  Run run;
  run.step();
  io::save_checkpoint(dir / "c.safetensors", *run.model, *run.optimizer, 1, "cfg");
  const io::LoadedTensors file = io::load_safetensors(dir / "c.safetensors");
  REQUIRE(file.find("model.0.weight") != nullptr);
  CHECK(file.find("model.0.weight")->shape == std::vector<int64_t>{16, 6});
  CHECK(file.find("optim.state.0.exp_avg_sq") != nullptr);
  CHECK(file.metadata.at("format") == "qkv.checkpoint");
  CHECK(file.metadata.at("version") == "1");
  CHECK(file.metadata.at("step") == "1");
  CHECK(file.metadata.at("optimizer") == "AdamW");
  CHECK(file.metadata.at("config") == "cfg");
  CHECK(file.metadata.at("optim.state.0.step") == "1");
  CHECK(file.metadata.at("optim.param_groups.0.weight_decay") == "0.01");
  CHECK(std::stod(file.metadata.at("optim.param_groups.0.lr")) == run.optimizer->lr());
  CHECK(file.metadata.at("checksum").size() == 16);
}

TEST_CASE("a truncated corrupted or foreign checkpoint is rejected and changes nothing") {
  ScratchDir dir;
  manual_seed(2);
  Run run;
  for (int t = 0; t < 2; ++t) run.step();
  const auto good = dir / "good.safetensors";
  io::save_checkpoint(good, *run.model, *run.optimizer, 2);
  for (int t = 0; t < 2; ++t) run.step();  // the objects move on from what the file holds
  const Snapshot before(*run.model, *run.optimizer);
  const std::string bytes = read_file(good);

  std::string flipped_data = bytes, flipped_step = bytes;
  flipped_data[bytes.size() - 3] ^= 0x10;  // a bit of the last tensor's last float
  const size_t step_at = bytes.find("\"step\":\"2\"");
  REQUIRE(step_at != std::string::npos);
  flipped_step[step_at + 8] = '9';
  const io::TensorRecord foreign{"w", io::DType::F32, {1}, std::as_bytes(std::span(bytes.data(), 4))};
  io::save_safetensors(dir / "foreign.safetensors", std::span(&foreign, 1));

  const struct {
    std::filesystem::path path;
    std::string problem;
  } cases[] = {
      {dir.new_file(bytes.substr(0, bytes.size() / 2)), "load_safetensors: "},
      {dir.new_file(bytes.substr(0, bytes.size() - 1)), "load_safetensors: "},
      {dir.new_file(""), "load_safetensors: "},
      {dir.new_file("not a checkpoint at all"), "load_safetensors: "},
      {dir.new_file(flipped_data), "checksum mismatch"},
      {dir.new_file(flipped_step), "checksum mismatch"},
      {dir / "foreign.safetensors", "no metadata 'format': not a qkv checkpoint"},
      {dir / "missing.safetensors", "missing.safetensors"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.path);
    const std::string message = error_of([&] { io::load_checkpoint(c.path, *run.model, *run.optimizer); });
    CHECK_MESSAGE(message.find(c.problem) != std::string::npos, message);
    CHECK_MESSAGE(message.find(c.path.filename().string()) != std::string::npos, message);
    CHECK(Snapshot(*run.model, *run.optimizer) == before);
  }
  CHECK_THROWS_AS(io::load_checkpoint(dir.new_file(flipped_data), *run.model, *run.optimizer), FormatError);
  // The intact file still loads.
  io::load_checkpoint(good, *run.model, *run.optimizer);
  CHECK_FALSE(Snapshot(*run.model, *run.optimizer) == before);
}

namespace {

// FNV-1a (64 bits) over a checkpoint as model_io/checkpoint.h documents it, written again here so that a
// test can forge files that pass the checksum and reach the checks behind it: each tensor's name,
// dtype, shape ("(16,6)") and bytes in name order, then each metadata key and value but
// "checksum"; every string is followed by one 0 byte.
std::string documented_checksum(std::vector<io::TensorRecord> tensors,
                                const std::map<std::string, std::string>& meta) {
  uint64_t h = 14695981039346656037ULL;
  auto bytes = [&h](std::span<const std::byte> b) {
    for (std::byte x : b) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ULL;
  };
  auto text = [&bytes](std::string_view s) {
    bytes(std::as_bytes(std::span(s.data(), s.size())));
    bytes(std::as_bytes(std::span("", 1)));
  };
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const io::TensorRecord& t : tensors) {
    text(t.name);
    text(io::dtype_name(t.dtype));
    text(io::shape_string(t.shape));
    bytes(t.data);
  }
  for (const auto& [key, value] : meta)
    if (key != "checksum") text(key), text(value);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace

TEST_CASE("a forged checkpoint with a valid checksum is still checked whole and changes nothing") {
  ScratchDir dir;
  manual_seed(4);
  Run run;
  run.step();
  const auto good = dir / "good.safetensors";
  io::save_checkpoint(good, *run.model, *run.optimizer, 1);
  run.step();
  const Snapshot before(*run.model, *run.optimizer);
  const io::LoadedTensors file = io::load_safetensors(good);
  // The checksum we compute is the one the writer stored: the forgeries below are faithful.
  REQUIRE(documented_checksum(file.tensors, file.metadata) == file.metadata.at("checksum"));

  // A copy of the good file changed by `edit`, with the checksum recomputed.
  const int64_t one = 1;
  int forged = 0;
  auto forge = [&](const std::function<void(std::vector<io::TensorRecord>&,
                                            std::map<std::string, std::string>&)>& edit) {
    std::vector<io::TensorRecord> tensors = file.tensors;
    std::map<std::string, std::string> meta = file.metadata;
    edit(tensors, meta);
    meta["checksum"] = documented_checksum(tensors, meta);
    const auto path = dir / ("forged" + std::to_string(forged++) + ".safetensors");
    io::save_safetensors(path, tensors, meta);
    return path;
  };
  auto with_length = [](const std::string& header) {  // the 8-byte little-endian length, then the header
    std::string out(8, '\0');
    for (size_t i = 0, n = header.size(); i < 8; ++i, n >>= 8) out[i] = static_cast<char>(n & 0xff);
    return out + header;
  };
  const struct {
    std::filesystem::path path;
    std::string problem;
  } cases[] = {
      {forge([&](auto& t, auto&) {
         t.push_back({"model.extra", io::DType::I64, {1}, std::as_bytes(std::span(&one, 1))});
       }),
       "tensor 'model.extra' has dtype I64, expected F32"},
      {forge([](auto& t, auto&) { t[0].name = "weights.0"; }),
       "tensor 'weights.0' is neither 'model.*' nor 'optim.*'"},
      {forge([](auto&, auto& m) { m["step"] = "-3"; }), "metadata 'step' is not a step number: '-3'"},
      {forge([](auto&, auto& m) { m["rng.offset"] = "lots"; }),
       "metadata 'rng.offset' is not a number: 'lots'"},
      {forge([](auto&, auto& m) { m["owner"] = "me"; }), "unexpected metadata 'owner'"},
      {forge([](auto&, auto& m) { m["optim.param_groups.0.lr"] = "fast"; }),
       "metadata 'optim.param_groups.0.lr' is not a number: 'fast'"},
      {forge([](auto&, auto& m) { m["version"] = "2"; }), "checkpoint version '2' is not supported"},
      // A structure no writer makes: an empty tensor whose other dims multiply past int64, and a header
      // length of 2^62. The safetensors reader rejects both before anything is allocated.
      {dir.new_file(with_length(R"({"model.w":{"dtype":"F32","shape":[0,1099511627776,1099511627776],)"
                                R"("data_offsets":[0,0]}})")),
       "more elements than int64 can count"},
      {dir.new_file(std::string("\0\0\0\0\0\0\0\x40", 8) + "{}"), "load_safetensors: "},
  };
  for (const auto& c : cases) {
    CAPTURE(c.path);
    const std::string message = error_of([&] { io::load_checkpoint(c.path, *run.model, *run.optimizer); });
    CHECK_MESSAGE(message.find(c.problem) != std::string::npos, message);
    CHECK(Snapshot(*run.model, *run.optimizer) == before);
  }
}

TEST_CASE("a checkpoint holding nan or inf is neither written nor read unless allowed") {
  ScratchDir dir;
  manual_seed(4);
  Run run;
  run.step();
  const auto good = dir / "good.safetensors";
  io::save_checkpoint(good, *run.model, *run.optimizer, 1);
  const std::string good_bytes = read_file(good);

  // A diverged weight is not written over a good checkpoint.
  float* weight = run.model->parameters()[0].data();
  const float kept = weight[5];
  weight[5] = NAN;
  CHECK_THROWS_WITH_AS(io::save_checkpoint(good, *run.model, *run.optimizer, 2),
                       doctest::Contains("'model.0.weight' holds nan at element 5"), ValueError);
  CHECK(read_file(good) == good_bytes);
  CHECK(dir.entries() == std::vector<std::string>{"good.safetensors"});
  weight[5] = -INFINITY;
  CHECK_THROWS_WITH_AS(io::save_checkpoint(good, *run.model, *run.optimizer, 2),
                       doctest::Contains("'model.0.weight' holds -inf at element 5"), ValueError);
  weight[5] = kept;

  // A file holding one, with a valid checksum (another writer's, or an older qkv's), is refused
  // naming the file and the tensor, and changes nothing; allow_non_finite reads it.
  const io::LoadedTensors file = io::load_safetensors(good);
  std::vector<io::TensorRecord> tensors = file.tensors;
  auto moment = std::find_if(tensors.begin(), tensors.end(),
                             [](const auto& t) { return t.name.rfind("optim.", 0) == 0; });
  REQUIRE(moment != tensors.end());
  std::vector<float> values(moment->data.size() / sizeof(float));
  std::memcpy(values.data(), moment->data.data(), moment->data.size());
  values.at(2) = INFINITY;
  moment->data = std::as_bytes(std::span(values));
  std::map<std::string, std::string> meta = file.metadata;
  meta["checksum"] = documented_checksum(tensors, meta);
  const auto diverged = dir / "diverged.safetensors";
  io::save_safetensors(diverged, tensors, meta);
  run.step();
  const Snapshot before(*run.model, *run.optimizer);
  const std::string message = error_of([&] { io::load_checkpoint(diverged, *run.model, *run.optimizer); });
  CHECK_MESSAGE(message.find("diverged.safetensors") != std::string::npos, message);
  CHECK_MESSAGE(message.find("tensor '" + moment->name + "' holds inf at element 2") != std::string::npos,
                message);
  CHECK_THROWS_AS(io::read_checkpoint(diverged), ValueError);
  CHECK(Snapshot(*run.model, *run.optimizer) == before);
  const io::Checkpoint wreck = io::read_checkpoint(diverged, /*allow_non_finite=*/true);
  CHECK(std::isinf(wreck.optimizer.tensors.at(moment->name.substr(6)).data()[2]));
  io::load_checkpoint(diverged, *run.model, *run.optimizer, /*strict=*/true, /*allow_non_finite=*/true);
  CHECK_FALSE(Snapshot(*run.model, *run.optimizer) == before);
}

TEST_CASE(
    "a checkpoint that does not fit lists every missing unexpected and mis-shaped key and changes nothing") {
  ScratchDir dir;
  manual_seed(4);
  auto saved = std::make_shared<nn::Sequential>();  // keys 0.*, 2.*, 4.*
  saved->push_back(std::make_shared<nn::Linear>(6, 16)).push_back(std::make_shared<nn::Tanh>());
  saved->push_back(std::make_shared<nn::Linear>(16, 4)).push_back(std::make_shared<nn::Tanh>());
  saved->push_back(std::make_shared<nn::Linear>(4, 2));
  optim::Adam saved_opt(saved->parameters());
  saved->forward(ones({1, 6})).sum().backward();
  saved_opt.step();
  io::save_checkpoint(dir / "c.safetensors", *saved, saved_opt, 1);

  auto other = std::make_shared<nn::Sequential>();  // keys 0.*, 1.*, 2.*
  other->push_back(std::make_shared<nn::Linear>(6, 16)).push_back(std::make_shared<nn::Linear>(16, 16));
  other->push_back(std::make_shared<nn::Linear>(16, 3));
  optim::Adam other_opt(other->parameters());
  const Snapshot before(*other, other_opt);
  const std::string message =
      error_of([&] { io::load_checkpoint(dir / "c.safetensors", *other, other_opt); });
  CHECK_MESSAGE(message.find("' does not fit (nothing was changed):") != std::string::npos, message);
  CHECK_MESSAGE(message.find("\n  model missing keys: 1.bias; 1.weight;") != std::string::npos, message);
  CHECK_MESSAGE(message.find("\n  model unexpected keys: 4.bias; 4.weight;") != std::string::npos, message);
  CHECK_MESSAGE(
      message.find("\n  model shape mismatches: 2.bias (expected (3), got (4)); 2.weight (expected (3,16), "
                   "got (4,16));") != std::string::npos,
      message);
  CHECK_MESSAGE(message.find("\n  optimizer invalid values: ") != std::string::npos, message);
  CHECK_MESSAGE(message.find("state.2.exp_avg (expected shape (16,16), got (4,16))") != std::string::npos,
                message);
  CHECK(Snapshot(*other, other_opt) == before);

  // Another optimizer type.
  optim::SGD sgd(saved->parameters(), {.lr = 0.1, .momentum = 0.9});
  const std::string wrong_type =
      "load_checkpoint: '" + (dir / "c.safetensors").string() +
      "' does not fit (nothing was changed):\n  optimizer: the checkpoint holds the state "
      "of 'Adam', not of SGD";
  CHECK_THROWS_WITH_AS(io::load_checkpoint(dir / "c.safetensors", *saved, sgd), wrong_type.c_str(),
                       ValueError);

  // Not strict: a model with an extra layer takes the weights it shares; the extra parameters
  // come after the saved ones, so the optimizer state still fits them.
  auto bigger = std::make_shared<nn::Sequential>();
  bigger->push_back(std::make_shared<nn::Linear>(6, 16)).push_back(std::make_shared<nn::Tanh>());
  bigger->push_back(std::make_shared<nn::Linear>(16, 4)).push_back(std::make_shared<nn::Tanh>());
  bigger->push_back(std::make_shared<nn::Linear>(4, 2)).push_back(std::make_shared<nn::Linear>(2, 2));
  optim::Adam bigger_opt(bigger->parameters());
  CHECK_THROWS_AS(io::load_checkpoint(dir / "c.safetensors", *bigger, bigger_opt), ValueError);
  io::load_checkpoint(dir / "c.safetensors", *bigger, bigger_opt, /*strict=*/false);
  CHECK(bigger->state_dict().at("4.weight").to_vector() == saved->state_dict().at("4.weight").to_vector());
}
