#include "examples/common/run_directory.h"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "dist/process_group.h"
#include "examples/common/ranks.h"
#include "io/file.h"
#include "tensor/error.h"
#include "tensor/precision.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"

namespace qkv::examples {
namespace fs = std::filesystem;

namespace {

constexpr const char* kStaging = ".new-run";
constexpr const char* kComplete = "complete";  // in the staging folder: the files it holds, one a line

// The JSON file `path`, read whole and parsed, its errors naming the file.
io::Json read_json_file(const fs::path& path, const std::string& program) {
  return parse_json_of(io::read_text_file(path, program), path.string());
}

bool staged_complete(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kStaging / kComplete, ec);
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
void settle(const fs::path& dir, const RunLayout& layout) {
  const fs::path staging = dir / kStaging;
  std::error_code ec;
  if (!fs::exists(staging, ec)) return;
  if (!staged_complete(dir)) {
    fs::remove_all(staging);
    return;
  }
  std::istringstream staged(io::read_text_file(staging / kComplete, layout.program));
  std::vector<std::string> names;
  for (std::string name; std::getline(staged, name);) names.push_back(name);
  // Every file the start staged goes in, whichever program settles it; of this program's files, the
  // old run's that the new run has none of go out.
  for (const std::string& name : names)
    if (fs::exists(staging / name, ec)) fs::rename(staging / name, dir / name);
  for (const std::string& name : layout.run_files())
    if (std::find(names.begin(), names.end(), name) == names.end()) fs::remove(dir / name);
  remove_figures(dir);
  fs::remove_all(staging);
}

}  // namespace

std::string RunLayout::a_program() const {
  // The article as the name is spoken: a short name by its letters ("an lm"), a word as a word.
  const std::string vowels = program.size() <= 2 ? "aefhilmnorsx" : "aeiou";
  const bool vowel = !program.empty() && vowels.find(program[0]) != std::string::npos;
  return (vowel ? "an " : "a ") + program;
}

std::vector<std::string> RunLayout::run_files() const {
  std::vector<std::string> all = {"config.json", "best.safetensors", "last.safetensors", "metrics.csv"};
  all.insert(all.end(), files.begin(), files.end());
  return all;
}

std::string RunState::text() const {
  io::Json::Object o{{"config", config}, {"history", history}, {"best", io::Json(best)}};
  o.insert(o.end(), extras.begin(), extras.end());
  return io::to_json(io::Json(std::move(o)));
}

RunState RunState::parse(const std::string& text, const fs::path& file, const RunLayout& layout) {
  const std::string not_ours =
      layout.program + ": " + file.string() + " is not " + layout.a_program() + " checkpoint";
  io::Json json;
  try {
    json = io::parse_json(text);
  } catch (const Error& e) {
    throw ValueError(not_ours + ": its config text is not JSON (" + e.what() + ")");
  }
  const io::Json* config = json.is_object() ? json.find("config") : nullptr;
  const io::Json* history = json.is_object() ? json.find("history") : nullptr;
  // "best_dev_acc": the tagger's name for it, in the checkpoints it wrote before this layout.
  const io::Json* best =
      json.is_object() ? json.find("best") ? json.find("best") : json.find("best_dev_acc") : nullptr;
  if (!config || !config->is_object() || !history || !best || (!best->is_int() && !best->is_double()))
    throw ValueError(not_ours + " (its config text has no config, history and best)");
  RunState state{*config, *history, best->as_double(), {}};
  for (const auto& [key, value] : json.as_object())
    if (key != "config" && key != "history" && key != "best" && key != "best_dev_acc")
      state.extras.emplace_back(key, value);
  return state;
}

const io::Json* RunState::extra(const std::string& key) const {
  for (const auto& [k, value] : extras)
    if (k == key) return &value;
  return nullptr;
}

RunDirectory::RunDirectory(fs::path dir, RunLayout layout, bool resume, dist::ProcessGroup* group)
    : dir_(std::move(dir)),
      layout_(std::move(layout)),
      resume_(resume),
      writer_(group == nullptr || group->rank() == 0),
      group_(group != nullptr && group->size() > 1 ? group : nullptr),
      committed_(resume) {
  if (dir_.empty()) refuse("--run is empty; expected a directory");
  if (!writer_) return;
  std::error_code ec;
  if (resume_ && !fs::is_directory(dir_, ec))
    refuse(dir_.string() + " (--run) is not a directory holding " + layout_.a_program() + " run");
  if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec))
    refuse(dir_.string() + " (--run) is not a directory");
  if (fs::exists(dir_, ec)) check_contents(), check_files();
}

void RunDirectory::wait_for_writer() const {
  if (group_) group_->barrier();
}

std::string RunDirectory::command() const {
  return layout_.program + " train" + (resume_ ? " --resume" : "");
}

void RunDirectory::refuse(const std::string& what) const { throw ValueError(command() + ": " + what); }

void RunDirectory::refuse_in_use() const {
  refuse(dir_.string() + " is in use by another training (it holds " + (dir_ / ".lock").string() +
         "): wait for it to end, or choose another --run");
}

RunDirectory::~RunDirectory() {
  std::error_code ignored;
  if (lock_ && !committed_) fs::remove_all(dir_ / kStaging, ignored);
}

// Every file the run writes must be a file or absent, so that no write fails after training.
void RunDirectory::check_files() const {
  for (const std::string& name : layout_.run_files())
    if (fs::exists(dir_ / name) && !fs::is_regular_file(dir_ / name))
      refuse((dir_ / name).string() + " is not a file, and the run writes one there: move it away");
  if (fs::exists(dir_ / "figures") && !fs::is_directory(dir_ / "figures"))
    refuse((dir_ / "figures").string() +
           " is not a directory, and the run draws its figures there: move it away");
  if (fs::is_directory(dir_ / "figures"))
    for (const auto& entry : fs::directory_iterator(dir_ / "figures"))
      if (entry.path().extension() == ".png" && !entry.is_regular_file())
        refuse(entry.path().string() + " is not a file, and the run draws its figures there: move it away");
}

// Refuses what this training may not take: for --resume, a directory without a run or without its
// last checkpoint; for a fresh one, a directory of anything but a run it may replace. Checked before
// the lock's file is made, so that nothing is left in a directory refused, and again under the lock,
// for a training that started in between.
void RunDirectory::check_contents(bool holding_lock) const {
  // A training at work first: what its directory holds midway (figures, a staged start) is no
  // reason to give for refusing.
  if (!holding_lock && fs::exists(dir_ / ".lock") && !io::DirectoryLock::try_lock(dir_).locked()) refuse_in_use();
  const bool has_run = fs::exists(dir_ / "config.json") || staged_complete(dir_);
  if (resume_) {
    if (!has_run) refuse(dir_.string() + " (--run) holds no " + layout_.program + " run (no config.json)");
    if (!fs::exists(dir_ / "last.safetensors") && !staged_complete(dir_))
      refuse((dir_ / "last.safetensors").string() +
             " is missing, so the run has no checkpoint to continue from; train afresh in another --run "
             "(nothing was changed)");
    return;
  }
  if (fs::exists(dir_ / "config.json")) {  // another program's run is refused as such, first
    const fs::path config = dir_ / "config.json";
    try {
      layout_.read_config(read_json_file(config, layout_.program), config.string(), layout_.a_program());
    } catch (const Error& e) {
      refuse("--run " + dir_.string() + " holds a config.json that is not " + layout_.a_program() +
             " run's (" + e.what() + "): choose another --run (nothing was changed)");
    }
  }
  if (has_run && !layout_.fresh_replaces_run)
    refuse(dir_.string() + " (--run) holds " + layout_.a_program() + " run (its config.json); --resume continues it, " +
           "or choose another --run (nothing was changed)");
  if (fs::exists(dir_ / "config.json")) return;
  if (has_run) return;
  const std::vector<std::string> files = layout_.run_files();
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    const std::string target = io::temp_file_target(name);
    if (name == ".lock" || name == kStaging || std::find(files.begin(), files.end(), target) != files.end())
      continue;
    refuse(dir_.string() + " (--run) is not empty and not " + layout_.a_program() + " run (it holds '" +
           name + "'); choose an empty or new directory (nothing was changed)");
  }
}

void RunDirectory::open() {
  if (!writer_) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    refuse("cannot make the run directory " + dir_.string() +
           " (--run): " + (ec ? ec.message() : "it is not a directory"));
  io::check_writable(dir_, command());
  check_contents();
  io::DirectoryLock lock = io::DirectoryLock::try_lock(dir_);
  if (!lock.locked()) refuse_in_use();
  check_contents(/*holding_lock=*/true);
  settle(dir_, layout_);
  check_files();
  io::remove_temp_files(dir_, layout_.run_files());
  if (!resume_) {
    fs::remove_all(dir_ / kStaging);
    fs::create_directory(dir_ / kStaging);
  }
  lock_.emplace(std::move(lock));
}

fs::path RunDirectory::path(const std::string& name) const {
  return committed_ || !writer_ ? dir_ / name : dir_ / kStaging / name;
}

void RunDirectory::write_text(const std::string& name, const std::string& text) const {
  if (!writer_) return;
  if (!lock_) throw StateError("RunDirectory::write_text: open() was not called");
  io::write_text_file(path(name), text, layout_.program + " train");
}

void RunDirectory::save(const nn::Module& model, const optim::Optimizer& optimizer, int64_t step,
                        const RunState& state, bool improved, const std::string& metrics_csv) {
  if (writer_) {
    if (!committed_) write_text("config.json", io::to_json(state.config) + "\n");
    const std::string text = state.text();
    // Best first: a crash between the two leaves a last checkpoint from before this evaluation,
    // and resuming does it again.
    if (improved) io::save_checkpoint(path("best.safetensors"), model, optimizer, step, text);
    io::save_checkpoint(path("last.safetensors"), model, optimizer, step, text);
    write_text("metrics.csv", metrics_csv);
    if (!committed_) commit();
  }
  if (group_) group_->barrier();  // the files are written: every rank goes on
}

void RunDirectory::commit() {
  const fs::path staging = dir_ / kStaging;
  std::string names;
  for (const std::string& name : layout_.run_files())
    if (fs::exists(staging / name)) names += name + "\n";
  io::write_text_file(staging / kComplete, names,
                      layout_.program + " train");  // from here on the new run is the run
  settle(dir_, layout_);
  committed_ = true;
}

SavedRun load_saved_run(const fs::path& dir, const RunLayout& layout, const std::string& which) {
  const std::string& program = layout.program;
  if (dir.empty()) throw ValueError(program + ": --run is empty; expected a run directory");
  {  // A fresh start stopped halfway is finished (or undone) first, unless a training is writing
     // here now; a directory that cannot be written to is read as it is, and one with no start in it
     // is not touched. Under mpirun rank 0 alone does it, so that no other rank holds the lock when
     // rank 0 opens the directory to train.
    std::error_code ec;
    if (fs::exists(dir / kStaging, ec) && (!world_started() || world().rank() == 0))
      if (const io::DirectoryLock lock = io::DirectoryLock::try_lock(dir); lock.locked()) settle(dir, layout);
  }
  const fs::path config_path = dir / "config.json", file = dir / (which + ".safetensors");
  if (!fs::exists(config_path))
    throw ValueError(program + ": " + dir.string() + " (--run) holds no " + program +
                     " run (no config.json)");
  io::Json expected =
      layout.read_config(read_json_file(config_path, program), config_path.string(), layout.a_program());
  if (!fs::exists(file))
    throw ValueError(program + ": " + file.string() + " not found: the run has saved no checkpoint yet");
  SavedRun saved{file, io::read_checkpoint(file), {}};
  saved.state = RunState::parse(saved.checkpoint.config, file, layout);
  saved.state.config =
      layout.read_config(saved.state.config, file.string() + ": \"config\"", layout.a_program());
  // --resume may have raised the budget since config.json was written, never lowered it, and nothing
  // else may differ: a checkpoint of another run is refused here, before anything is written.
  const io::Json* budget = saved.state.config.find(layout.budget_key);
  for (auto& [key, value] : expected.as_object())
    if (key == layout.budget_key && budget && budget->is_int() && value.is_int() &&
        budget->as_int() > value.as_int())
      value = *budget;
  if (const std::string diff = differences(saved.state.config, expected, "the checkpoint", "config.json");
      !diff.empty())
    throw ValueError(program + ": " + file.string() + " was trained with another config than " +
                     config_path.string() + ": " + diff);
  return saved;
}

io::Json parse_json_of(const std::string& text, const std::string& source) {
  try {
    return io::parse_json(text);
  } catch (const Error& e) {
    throw ValueError(source + ": " + e.what());
  }
}

std::vector<Args::Option> run_options(const std::string& run_dir) {
  return {
      {"run", run_dir, "run directory (config, checkpoints, metrics, figures)"},
      {"resume", "false", "continue the run in --run from its last checkpoint (a larger budget extends it)"},
      {"no-figures", "false", "draw no figures"},
      kReduceOption};
}

RunOptions run_options_from(const Args& args) {
  RunOptions o;
  o.run_dir = args.str("run");
  o.resume = args.flag("resume");
  o.figures = !args.flag("no-figures");
  if (args.has("reduce")) o.ranks = ranks_from(args);
  if (!o.ranks.root()) o.verbose = o.progress = o.figures = false;  // rank 0 speaks for the run
  return o;
}

void refuse_existing_comparison(const std::string& program, const std::string& out,
                                const std::vector<std::string>& names, const std::vector<std::string>& files) {
  std::vector<std::string> taken = files;
  taken.insert(taken.end(), names.begin(), names.end());
  for (const std::string& name : taken)
    if (const fs::path path = fs::path(out) / name; fs::exists(path))
      throw ValueError(program + ": " + path.string() + " exists; choose another --out (nothing was changed)");
}

RunOptions comparison_run(const std::string& out, const std::string& name, bool verbose) {
  RunOptions o;
  o.run_dir = (fs::path(out) / name).string();
  o.verbose = o.progress = verbose;
  return o;
}

void announce_training(const std::string& program, const RunOptions& o) {
  if (!o.ranks.root()) return;
  const dist::ProcessGroup* group = o.ranks.group;
  std::cout << program << ": training on "
            << (o.ranks.many() ? std::to_string(group->size()) + " ranks (" + group->backend() + ") of " : "")
            << get_num_threads() << " thread(s)"
            << (reference_mode() ? std::string(", ") + kReferenceModeNote : "")
            << (get_matmul_precision() == MatmulPrecision::medium ? ", bfloat16 products" : "")
            << ", run directory " << o.run_dir << std::endl;
}

void check_resume_options(const Args& args, const std::vector<std::string>& honoured) {
  std::vector<std::string> kept = honoured;
  kept.insert(kept.end(), {"threads", "reference", "run", "resume", "no-figures", "reduce"});
  for (const std::string& name : args.given_names())
    if (std::find(kept.begin(), kept.end(), name) == kept.end())
      throw ValueError("--resume continues the run with its saved config; --" + name + " cannot change it");
}

}  // namespace qkv::examples
