#include "examples/tagger/run_dir.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "io/file.h"
#include "io/json.h"
#include "tensor/error.h"

namespace tagger {

namespace fs = std::filesystem;
using qkv::data::Vocab;
using qkv::io::Json;

namespace {

// A tagger checkpoint's own metadata: the config it was trained with, the epoch history and the
// best dev accuracy. FormatError for a checkpoint that lacks them (another program's).
Json checkpoint_state(const fs::path& path, const qkv::io::Checkpoint& ckpt) {
  Json state;
  try {
    state = qkv::io::parse_json(ckpt.config);
  } catch (const std::exception& e) {
    throw qkv::FormatError("tagger: " + path.string() +
                           " is not a tagger checkpoint: its config is not JSON (" + e.what() + ")");
  }
  for (const char* key : {"config", "history", "best_dev_acc"}) {
    if (!state.is_object() || state.find(key) == nullptr) {
      throw qkv::FormatError("tagger: " + path.string() + " is not a tagger checkpoint: no \"" + key +
                             "\" in its config");
    }
  }
  return state;
}

Json history_json(const std::vector<EpochMetrics>& history) {
  Json::Array rows;
  for (const EpochMetrics& m : history) {
    rows.push_back(Json(Json::Array{Json(m.epoch), Json(m.train_loss), Json(m.train_acc), Json(m.dev_loss),
                                    Json(m.dev_acc), Json(m.lr), Json(m.tokens_per_s), Json(m.seconds)}));
  }
  return Json(std::move(rows));
}

std::vector<EpochMetrics> history_from_json(const Json& json) {
  std::vector<EpochMetrics> history;
  for (const Json& row : json.as_array()) {
    const Json::Array& r = row.as_array();
    if (r.size() != 8)
      throw qkv::FormatError("tagger: a checkpoint's epoch history row has " + std::to_string(r.size()) +
                             " values, expected 8");
    history.push_back({r[0].as_int(), r[1].as_double(), r[2].as_double(), r[3].as_double(), r[4].as_double(),
                       r[5].as_double(), r[6].as_double(), r[7].as_double()});
  }
  return history;
}

// A JSON file of the run: read whole (a regular file of bounded size, io/file.h) and parsed, its
// errors prefixed with the path.
Json parse_json_file(const fs::path& path) {
  const std::string text = qkv::io::read_text_file(path, "run directory");
  try {
    return qkv::io::parse_json(text);
  } catch (const qkv::FormatError& e) {
    throw qkv::FormatError(path.string() + ": " + e.what());
  }
}

Vocabs load_vocabs(const fs::path& dir, const Config& config) {
  return Vocabs{Vocab::load((dir / "words.txt").string()), Vocab::load((dir / "tags.txt").string()),
                lowercases_words(config)};
}

}  // namespace

void start_run_directory(const fs::path& dir, const Config& config, const Vocabs& vocabs) {
  fs::create_directories(dir);
  for (const char* stale : {"best.safetensors", "last.safetensors", "metrics.csv", "profile.csv"})
    fs::remove(dir / stale);
  fs::remove_all(dir / "figures");
  qkv::io::write_text_file(dir / "config.json", qkv::io::to_json(config.to_json()) + "\n", "tagger");
  vocabs.words.save((dir / "words.txt").string());
  vocabs.tags.save((dir / "tags.txt").string());
}

void save_run_checkpoint(const fs::path& path, const TaggerModel& model,
                         const qkv::optim::Optimizer& optimizer, int64_t step, const Config& config,
                         const std::vector<EpochMetrics>& history, double best_dev_acc) {
  Json::Object state{
      {"config", config.to_json()}, {"history", history_json(history)}, {"best_dev_acc", Json(best_dev_acc)}};
  qkv::io::save_checkpoint(path, model, optimizer, step, qkv::io::to_json(Json(std::move(state))));
}

void write_metrics_csv(const fs::path& path, const std::vector<EpochMetrics>& history) {
  std::ostringstream out;
  out << "epoch,train_loss,train_acc,dev_loss,dev_acc,lr,tokens_per_s,seconds\n" << std::setprecision(6);
  for (const EpochMetrics& m : history) {
    out << m.epoch << ',' << m.train_loss << ',' << m.train_acc << ',' << m.dev_loss << ',' << m.dev_acc
        << ',' << m.lr << ',' << m.tokens_per_s << ',' << m.seconds << '\n';
  }
  qkv::io::write_text_file(path, out.str(), "tagger");
}

namespace {

// "positions: rotary in the checkpoint, alibi in config.json; ..." for every key whose values differ.
std::string config_differences(const Config& checkpoint, const Config& file) {
  const Json a = checkpoint.to_json(), b = file.to_json();
  std::string diff;
  for (const auto& [key, value] : a.as_object()) {
    const Json* other = b.find(key);
    if (other && *other == value) continue;
    diff += (diff.empty() ? "" : "; ") + key + ": " + qkv::io::to_json(value) + " in the checkpoint, " +
            (other ? qkv::io::to_json(*other) : std::string("nothing")) + " in config.json";
  }
  return diff;
}

}  // namespace

SavedRun load_saved_run(const std::string& run_dir, const std::string& checkpoint) {
  const fs::path dir = run_dir, config_path = dir / "config.json", checkpoint_path = dir / checkpoint;
  if (!fs::exists(config_path)) {
    throw qkv::ValueError("tagger: " + config_path.string() + " not found: is " + dir.string() +
                          " a run directory?");
  }
  const Config first = Config::from_json(parse_json_file(config_path), config_path.string());
  if (!fs::exists(checkpoint_path)) {
    throw qkv::ValueError("tagger: " + checkpoint_path.string() +
                          " not found: the run has not finished an epoch");
  }
  qkv::io::Checkpoint ckpt = qkv::io::read_checkpoint(checkpoint_path);
  const Json state = checkpoint_state(checkpoint_path, ckpt);
  Config config = Config::from_json(*state.find("config"), checkpoint_path.string() + ": \"config\"");
  check_config_fits_tensors(config, ckpt.model, checkpoint_path.string());
  // config.json holds the run's first config; --epochs may have extended the run since, nothing else.
  Config expected = first;
  expected.epochs = config.epochs;
  if (const std::string diff = config_differences(config, expected); !diff.empty()) {
    throw qkv::ValueError("tagger: " + checkpoint_path.string() + " was trained with another config than " +
                          config_path.string() + ": " + diff);
  }
  Vocabs vocabs = load_vocabs(dir, config);
  return SavedRun{checkpoint_path.string(),
                  std::move(ckpt),
                  std::move(config),
                  std::move(vocabs),
                  history_from_json(*state.find("history")),
                  state.find("best_dev_acc")->as_double()};
}

namespace {

// Runs saved before the models took their input from TokenVectors kept the word embedding under
// another name: the Transformer's in its encoder (scaled by √d there, as TokenVectors scales it),
// the GRU's at the top, unscaled — so it is divided by √d here to give the same vectors.
void rename_old_embedding(qkv::nn::StateDict& state) {
  if (state.count("tokens.embedding.weight")) return;
  if (auto it = state.find("encoder.embedding.weight"); it != state.end()) {
    state.emplace("tokens.embedding.weight", it->second);
    state.erase(it);
  } else if (it = state.find("embedding.weight"); it != state.end()) {
    const float d = static_cast<float>(it->second.size(1));
    state.emplace("tokens.embedding.weight", it->second * (1.0f / std::sqrt(d)));
    state.erase(it);
  }
}

}  // namespace

Run load_run(const std::string& run_dir) {
  SavedRun saved = load_saved_run(run_dir, "best.safetensors");
  std::shared_ptr<TaggerModel> model =
      make_model(saved.config, saved.vocabs.words.size(), saved.vocabs.tags.size());
  rename_old_embedding(saved.checkpoint.model);
  model->load_state_dict(saved.checkpoint.model);
  model->eval();
  return Run{std::move(saved.config), std::move(saved.vocabs), std::move(model)};
}

}  // namespace tagger
