#include "model_io/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <vector>

#include "autograd/grad_mode.h"
#include "io/digest.h"
#include "io/safetensors.h"
#include "model_io/weights.h"
#include "tensor/error.h"

namespace qkv::io {
namespace {

constexpr const char* kFormat = "qkv.checkpoint";
constexpr const char* kVersion = "1";
const std::string kModel = "model.", kOptim = "optim.";

// Adds the tensors to h by name: each name, dtype, shape and its bytes.
void add_tensors(Fnv1a& h, const std::vector<TensorRecord>& tensors) {
  std::vector<const TensorRecord*> by_name;
  for (const TensorRecord& t : tensors) by_name.push_back(&t);
  std::sort(by_name.begin(), by_name.end(), [](auto* a, auto* b) { return a->name < b->name; });
  for (const TensorRecord* t : by_name) {
    h.add(t->name);
    h.add(dtype_name(t->dtype));
    h.add(shape_string(t->shape));
    h.add(t->data);
  }
}

// The checksum of a checkpoint's tensors and of its metadata other than "checksum" itself.
std::string checksum(const std::vector<TensorRecord>& tensors,
                     const std::map<std::string, std::string>& metadata) {
  Fnv1a h;
  add_tensors(h, tensors);
  for (const auto& [key, value] : metadata)
    if (key != "checksum") {
      h.add(key);
      h.add(value);
    }
  return h.hex();
}

// 17 significant digits: strtod gives back the same double.
std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Whole-string parses; false for anything else (empty, trailing text, out of range).
template <class T>
bool parse(const std::string& s, T& out) {
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return !s.empty() && ec == std::errc() && ptr == end;
}

// optimizer is null for a checkpoint of the weights alone.
void save(const std::filesystem::path& path, const nn::Module& model, const optim::Optimizer* optimizer,
          int64_t step, const std::string& config) {
  if (step < 0)
    throw ValueError("save_checkpoint: '" + path.string() + "': step must be >= 0, got " + std::to_string(step));
  NoGradGuard no_grad;
  TensorRecords records;
  for (const auto& [name, t] : model.state_dict()) records.add(kModel + name, t);
  const optim::OptimizerState state = optimizer ? optimizer->state_dict() : optim::OptimizerState{};
  for (const auto& [key, t] : state.tensors) records.add(kOptim + key, t);
  for (const TensorRecord& r : records.records()) {
    if (const std::string bad = non_finite_value(r); !bad.empty())
      throw ValueError("save_checkpoint: '" + path.string() + "': tensor " + in_quotes(r.name) + " " + bad +
                       ": a diverged state is not written (the file is left as it was)");
  }

  const GeneratorState rng = default_generator().state();
  std::map<std::string, std::string> metadata = {
      {"format", kFormat},
      {"version", kVersion},
      {"step", std::to_string(step)},
      {"rng.seed", std::to_string(rng.seed)},
      {"rng.offset", std::to_string(rng.offset)},
      {"optimizer", optimizer ? optimizer->name() : ""},
      {"config", config},
  };
  for (const auto& [key, value] : state.scalars) metadata[kOptim + key] = exact(value);
  metadata["checksum"] = checksum(records.records(), metadata);
  save_safetensors(path, records.records(), metadata);
}

}  // namespace

std::string state_checksum(const nn::Module& model) {
  NoGradGuard no_grad;
  TensorRecords records;
  for (const auto& [name, t] : model.state_dict()) records.add(kModel + name, t);
  Fnv1a h;
  add_tensors(h, records.records());
  return h.hex();
}

void save_checkpoint(const std::filesystem::path& path, const nn::Module& model,
                     const optim::Optimizer& optimizer, int64_t step, const std::string& config) {
  save(path, model, &optimizer, step, config);
}

void save_checkpoint(const std::filesystem::path& path, const nn::Module& model, int64_t step,
                     const std::string& config) {
  save(path, model, nullptr, step, config);
}

Checkpoint read_checkpoint(const std::filesystem::path& path, bool allow_non_finite) {
  const std::string context = "load_checkpoint: '" + path.string() + "': ";
  auto reject = [&context](const std::string& problem) { throw FormatError(context + problem); };
  const LoadedTensors file = load_safetensors(path);
  auto meta = [&](const std::string& key) -> const std::string& {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end()) reject("no metadata '" + key + "': not a qkv checkpoint");
    return it->second;
  };
  if (meta("format") != kFormat)
    reject("metadata 'format' is " + in_quotes(meta("format")) + ", not '" + kFormat +
           "': not a qkv checkpoint");
  if (meta("version") != kVersion)
    reject("checkpoint version " + in_quotes(meta("version")) + " is not supported (this build reads " +
           kVersion + ")");
  const std::string computed = checksum(file.tensors, file.metadata);
  if (meta("checksum") != computed)
    reject("checksum mismatch (stored " + in_quotes(meta("checksum")) + ", computed '" + computed +
           "'): the file is corrupted");

  Checkpoint ckpt;
  if (!parse(meta("step"), ckpt.step) || ckpt.step < 0)
    reject("metadata 'step' is not a step number: " + in_quotes(meta("step")));
  if (!parse(meta("rng.seed"), ckpt.rng.seed))
    reject("metadata 'rng.seed' is not a number: " + in_quotes(meta("rng.seed")));
  if (!parse(meta("rng.offset"), ckpt.rng.offset))
    reject("metadata 'rng.offset' is not a number: " + in_quotes(meta("rng.offset")));
  ckpt.optimizer_name = meta("optimizer");
  ckpt.config = meta("config");
  const std::set<std::string> known = {"format",     "version",   "step",   "rng.seed",
                                       "rng.offset", "optimizer", "config", "checksum"};
  for (const auto& [key, value] : file.metadata) {
    if (known.count(key)) continue;
    if (key.rfind(kOptim, 0) != 0) reject("unexpected metadata " + in_quotes(key));
    double v;
    if (!parse(value, v)) reject("metadata " + in_quotes(key) + " is not a number: " + in_quotes(value));
    ckpt.optimizer.scalars[key.substr(kOptim.size())] = v;
  }
  for (const TensorRecord& r : file.tensors) {
    const bool is_model = r.name.rfind(kModel, 0) == 0, is_optim = r.name.rfind(kOptim, 0) == 0;
    if (!is_model && !is_optim) reject("tensor " + in_quotes(r.name) + " is neither 'model.*' nor 'optim.*'");
    const Tensor t = to_tensor(r, context);
    if (const std::string bad = allow_non_finite ? "" : non_finite_value(r); !bad.empty())
      throw ValueError(context + "tensor " + in_quotes(r.name) + " " + bad +
                       ": the run that saved it had diverged (allow_non_finite reads it anyway)");
    if (is_model)
      ckpt.model[r.name.substr(kModel.size())] = t;
    else
      ckpt.optimizer.tensors[r.name.substr(kOptim.size())] = t;
  }
  return ckpt;
}

Checkpoint load_checkpoint(const std::filesystem::path& path, nn::Module& model, optim::Optimizer& optimizer,
                           bool strict, bool allow_non_finite) {
  const Checkpoint ckpt = read_checkpoint(path, allow_non_finite);
  // Every problem, of the model and of the optimizer, before anything is written.
  std::string problems;
  for (const std::string& line : model.check_state_dict(ckpt.model, strict)) problems += "\n  model " + line;
  if (ckpt.optimizer_name.empty())
    problems +=
        "\n  optimizer: the checkpoint holds no optimizer state (it was saved with the weights alone)";
  else if (ckpt.optimizer_name != optimizer.name())
    problems += "\n  optimizer: the checkpoint holds the state of " + in_quotes(ckpt.optimizer_name) + ", not of " +
                optimizer.name();
  else
    for (const std::string& line : optimizer.check_state_dict(ckpt.optimizer))
      problems += "\n  optimizer " + line;
  if (!problems.empty())
    throw ValueError("load_checkpoint: '" + path.string() +
                     "' does not fit (nothing was changed):" + problems);

  model.load_state_dict(ckpt.model, strict);
  optimizer.load_state_dict(ckpt.optimizer);
  default_generator().set_state(ckpt.rng);
  return ckpt;
}

}  // namespace qkv::io
