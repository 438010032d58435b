#include "examples/tagger/run_dir.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "examples/common/args.h"
#include "io/digest.h"
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

// The history without its timings (tokens_per_s, seconds), which differ from one run to the next:
// two runs with the same seed write the same checkpoint bytes. metrics.csv keeps the timings.
Json history_json(const std::vector<EpochMetrics>& history) {
  Json::Array rows;
  for (const EpochMetrics& m : history) {
    rows.push_back(Json(Json::Array{Json(m.epoch), Json(m.train_loss), Json(m.train_acc), Json(m.dev_loss),
                                    Json(m.dev_acc), Json(m.lr)}));
  }
  return Json(std::move(rows));
}

// Rows of 6 values; checkpoints written before timings were left out have 8, the last two timings.
std::vector<EpochMetrics> history_from_json(const Json& json) {
  std::vector<EpochMetrics> history;
  for (const Json& row : json.as_array()) {
    const Json::Array& r = row.as_array();
    if (r.size() != 6 && r.size() != 8)
      throw qkv::FormatError("tagger: a checkpoint's epoch history row has " + std::to_string(r.size()) +
                             " values, expected 6");
    history.push_back({r[0].as_int(), r[1].as_double(), r[2].as_double(), r[3].as_double(), r[4].as_double(),
                       r[5].as_double()});
  }
  return history;
}

// The timings of the epochs in `history` from the run's metrics.csv, whose rows start "epoch,"
// and end ",tokens_per_s,seconds". A row that is missing or does not read stays at 0: timings are
// for people, nothing is computed from them.
void restore_timings(const fs::path& metrics_csv, std::vector<EpochMetrics>& history) {
  std::error_code ec;
  if (!fs::is_regular_file(metrics_csv, ec)) return;
  std::istringstream in(qkv::io::read_text_file(metrics_csv, "run directory"));
  for (std::string line; std::getline(in, line);) {
    std::istringstream row(line);
    std::vector<std::string> cells;
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    if (cells.size() != 8) continue;
    try {
      const int64_t epoch = std::stoll(cells[0]);
      if (epoch < 1 || epoch > static_cast<int64_t>(history.size())) continue;
      EpochMetrics& m = history[static_cast<size_t>(epoch - 1)];
      if (m.epoch != epoch) continue;
      m.tokens_per_s = std::stod(cells[6]);
      m.seconds = std::stod(cells[7]);
    } catch (const std::exception&) {  // the header, or a row edited by hand
    }
  }
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

// The digest of a vocabulary: its tokens in id order. Two vocabularies of the same words in another
// order differ, as the meaning of the model's ids does.
std::string vocab_digest(const Vocab& vocab) {
  qkv::io::Fnv1a h;
  for (const std::string& token : vocab.tokens()) h.add(token);
  return h.hex();
}

Json vocab_digests(const Vocabs& vocabs) {
  return Json(Json::Object{{"words.txt", Json(vocab_digest(vocabs.words))},
                           {"tags.txt", Json(vocab_digest(vocabs.tags))}});
}

// The vocabularies in `dir` must be those the checkpoint was trained with: a reordered or edited
// line would silently change what the model's ids mean. Checkpoints saved before the digests were
// recorded have none; for them only the sizes are checked, by the shapes of the word embedding and
// of the output layer when the weights are loaded.
void check_vocab_digests(const Json& state, const fs::path& checkpoint_path, const fs::path& dir,
                         const Vocabs& vocabs) {
  const Json* recorded = state.find("vocabularies");
  if (recorded == nullptr) return;
  for (const auto& [file, vocab] : {std::pair{"words.txt", &vocabs.words}, {"tags.txt", &vocabs.tags}}) {
    const Json* digest = recorded->find(file);
    if (digest == nullptr || !digest->is_string() || digest->as_string() != vocab_digest(*vocab)) {
      throw qkv::ValueError("tagger: " + (dir / file).string() + " is not the vocabulary " +
                            checkpoint_path.string() +
                            " was trained with (its digest differs): an edited or reordered line changes "
                            "what the model's ids mean");
    }
  }
}

Vocabs load_vocabs(const fs::path& dir, const Config& config) {
  return Vocabs{Vocab::load((dir / "words.txt").string()), Vocab::load((dir / "tags.txt").string()),
                lowercases_words(config)};
}

}  // namespace

namespace {

// The files a run writes in its directory, and where a fresh run stages its first ones.
const std::vector<std::string> kRunFiles = {"config.json",      "words.txt",   "tags.txt",   "best.safetensors",
                                            "last.safetensors", "metrics.csv", "profile.csv"};
constexpr const char* kStaging = ".new-run";
constexpr const char* kComplete = "complete";  // in the staging folder: the files it holds, one a line

bool is_run_file(const std::string& name) {
  return std::find(kRunFiles.begin(), kRunFiles.end(), name) != kRunFiles.end();
}

// Removes the PNGs of figures/ (the folder too, once empty): what a run draws there, and nothing a
// user put beside them.
void remove_figures(const fs::path& dir) {
  const fs::path figures = dir / "figures";
  std::error_code ec;
  if (!fs::is_directory(figures, ec)) return;
  for (const auto& entry : fs::directory_iterator(figures))
    if (entry.is_regular_file() && entry.path().extension() == ".png") fs::remove(entry.path());
  if (fs::is_empty(figures, ec)) fs::remove(figures, ec);
}

// Finishes a fresh run's start that was stopped after its files were marked complete (each step can
// be taken again), or removes one stopped before, which never touched the old run.
void settle_new_run(const fs::path& dir) {
  const fs::path staging = dir / kStaging;
  std::error_code ec;
  if (!fs::exists(staging, ec)) return;
  if (!fs::is_regular_file(staging / kComplete, ec)) {
    fs::remove_all(staging);
    return;
  }
  std::istringstream staged(qkv::io::read_text_file(staging / kComplete, "run directory"));
  std::vector<std::string> names;
  for (std::string name; std::getline(staged, name);) names.push_back(name);
  for (const std::string& name : kRunFiles) {
    if (std::find(names.begin(), names.end(), name) == names.end())
      fs::remove(dir / name);  // the old run's, which the new run has none of
    else if (fs::exists(staging / name, ec))
      fs::rename(staging / name, dir / name);
  }
  remove_figures(dir);
  fs::remove_all(staging);
}

// Refuses a directory that holds something and is not a tagger run: the run would mix its files
// with another program's, and remove what it took for an old run's.
void check_run_or_empty(const fs::path& dir) {
  const fs::path config = dir / "config.json";
  if (fs::exists(config)) {
    try {
      Config::from_json(parse_json_file(config), config.string());
    } catch (const qkv::Error& e) {
      throw qkv::ValueError("tagger: --run " + dir.string() + " holds a config.json that is not a tagger run's (" +
                            e.what() + "): choose another --run");
    }
    return;
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name == ".lock" || name == kStaging || is_run_file(qkv::io::temp_file_target(name))) continue;
    throw qkv::ValueError("tagger: --run " + dir.string() + " is neither empty nor a tagger run (it holds '" + name +
                          "', and no config.json): choose a new or empty directory");
  }
}

}  // namespace

qkv::io::DirectoryLock prepare_run_directory(const fs::path& dir) {
  qkv::examples::make_output_directory("run", dir.string());  // made, and proved writable
  check_run_or_empty(dir);  // before the lock's file is made: nothing is left in a directory refused
  qkv::io::DirectoryLock lock = qkv::io::DirectoryLock::try_lock(dir);
  if (!lock.locked())
    throw qkv::ValueError("tagger: " + dir.string() + " is in use by another training (it holds " +
                          (dir / ".lock").string() + "): wait for it to end, or choose another --run");
  settle_new_run(dir);
  // Every file the run writes must be a file or absent, so that no write fails after training.
  for (const std::string& name : kRunFiles) {
    const fs::path path = dir / name;
    if (fs::exists(path) && !fs::is_regular_file(path))
      throw qkv::ValueError("tagger: " + path.string() +
                            " is not a file, and the run writes one there: move it away");
  }
  if (fs::exists(dir / "figures") && !fs::is_directory(dir / "figures"))
    throw qkv::ValueError("tagger: " + (dir / "figures").string() +
                          " is not a directory, and the run writes its figures there: move it away");
  qkv::io::remove_temp_files(dir, kRunFiles);
  return lock;
}

fs::path new_run_staging(const fs::path& dir) {
  const fs::path staging = dir / kStaging;
  fs::remove_all(staging);
  fs::create_directory(staging);
  return staging;
}

void write_run_start(const fs::path& staging, const Config& config, const Vocabs& vocabs) {
  qkv::io::write_text_file(staging / "config.json", qkv::io::to_json(config.to_json()) + "\n", "tagger");
  vocabs.words.save((staging / "words.txt").string());
  vocabs.tags.save((staging / "tags.txt").string());
}

void commit_new_run(const fs::path& dir) {
  const fs::path staging = dir / kStaging;
  std::string names;
  for (const std::string& name : kRunFiles)
    if (fs::exists(staging / name)) names += name + "\n";
  qkv::io::write_text_file(staging / kComplete, names, "tagger");  // from here on the new run is the run
  settle_new_run(dir);
}

void save_run_checkpoint(const fs::path& path, const TaggerModel& model,
                         const qkv::optim::Optimizer& optimizer, int64_t step, const Config& config,
                         const Vocabs& vocabs, const std::vector<EpochMetrics>& history,
                         double best_dev_acc, int64_t world_size) {
  Json::Object state{{"config", config.to_json()},
                     {"vocabularies", vocab_digests(vocabs)},
                     {"history", history_json(history)},
                     {"best_dev_acc", Json(best_dev_acc)}};
  // Only when above 1, so that a run in one process writes the bytes it always wrote.
  if (world_size > 1) state.emplace_back("world_size", Json(world_size));
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

namespace {

// The ranks a run was trained on: 1 unless the checkpoint says more.
int64_t saved_world_size(const Json& state, const fs::path& path) {
  const Json* n = state.find("world_size");
  if (n == nullptr) return 1;
  if (!n->is_int() || n->as_int() < 2)
    throw qkv::FormatError("tagger: " + path.string() + ": \"world_size\" must be a whole number of ranks above 1");
  return n->as_int();
}

}  // namespace

SavedRun load_saved_run(const std::string& run_dir, const std::string& checkpoint) {
  if (run_dir.empty()) throw qkv::ValueError("tagger: the run directory is empty; expected a run directory");
  const fs::path dir = run_dir, config_path = dir / "config.json", checkpoint_path = dir / checkpoint;
  {  // A fresh run's start that was stopped halfway is finished (or undone) first, unless a run is
     // writing here now; a directory that cannot be written to is read as it is.
    std::error_code ec;
    if (fs::is_directory(dir, ec))
      if (const qkv::io::DirectoryLock lock = qkv::io::DirectoryLock::try_lock(dir); lock.locked())
        settle_new_run(dir);
  }
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
  // config.json holds the run's first config; --epochs may have extended the run since, never
  // shortened it, and nothing else may differ: a checkpoint of another run is refused here, before
  // --resume writes anything.
  Config expected = first;
  expected.epochs = std::max(first.epochs, config.epochs);
  if (const std::string diff = config_differences(config, expected); !diff.empty()) {
    throw qkv::ValueError("tagger: " + checkpoint_path.string() + " was trained with another config than " +
                          config_path.string() + ": " + diff);
  }
  Vocabs vocabs = load_vocabs(dir, config);
  check_vocab_digests(state, checkpoint_path, dir, vocabs);
  std::vector<EpochMetrics> history = history_from_json(*state.find("history"));
  restore_timings(dir / "metrics.csv", history);
  return SavedRun{.checkpoint_path = checkpoint_path.string(),
                  .checkpoint = std::move(ckpt),
                  .config = std::move(config),
                  .vocabs = std::move(vocabs),
                  .history = std::move(history),
                  .best_dev_acc = state.find("best_dev_acc")->as_double(),
                  .world_size = saved_world_size(state, checkpoint_path)};
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
