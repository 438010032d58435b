// A training's run directory, one implementation for every program that trains:
//   config.json        the run's config as it started (examples/common/config.h)
//   last.safetensors   the checkpoint after the last evaluation, for --resume
//   best.safetensors   the checkpoint of the best validation score so far
//   metrics.csv        one row per evaluation, with its timings (examples/common/history.h)
//   ...                the program's own files: RunLayout::files (baselines.json, vocabularies...)
//   figures/           its PNG figures
//   .lock              the lock the training at work holds (io::DirectoryLock)
// A checkpoint's config text is a RunState: the config it was trained with, the evaluations so far
// without their timings, the best score and the program's own entries; no wall-clock time, so that
// two runs of one seed write checkpoints of the same bytes whatever the thread count.
//
// What it guarantees (docs/training.md, "The run directory"):
//   - nothing is written before every refusal: a directory that holds another program's files, or
//     a run (unless RunLayout::fresh_replaces_run), one another training holds, one that cannot be
//     written, a resume of something that is no run;
//   - every file is written atomically (io/file.h), and a killed write leaves no partial file that
//     the next training would take for whole;
//   - a fresh run writes into DIR/.new-run and takes the directory over only once its first
//     checkpoint is saved whole: marked complete, then moved over the old run's files, removing what
//     of the old run the new one has no file for. A start stopped before the mark leaves the old run
//     as it was; one stopped after it is finished by the next command that opens the directory;
//   - under mpirun, rank 0 alone writes it (the others read the checkpoint they resume from); the
//     other ranks wait at each save until the files are written (a barrier), so that no rank runs
//     ahead of a checkpoint.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "examples/common/config.h"
#include "examples/common/history.h"
#include "examples/common/training.h"
#include "io/file.h"
#include "io/json.h"
#include "model_io/checkpoint.h"

namespace qkv::dist {
class ProcessGroup;
}

namespace qkv::examples {

struct RunLayout {
  std::string program = {};             // "lm": names it in messages ("lm train: ...", "an lm run")
  std::vector<std::string> files = {};  // its own files, besides config.json, the checkpoints and metrics.csv
  // A fresh training where the directory holds a run of this program: replace that run once the new
  // one's first checkpoint is whole (the tagger's `./qkv train`, run again), or refuse (lm).
  bool fresh_replaces_run = false;
  std::string budget_key = {};  // the config key --resume may raise: "steps", "epochs"
  // The config `json` (from `source`) as this program reads it, written again (examples::to_json):
  // a ValueError saying why it is not one of `what`'s configs ("an lm"). config_reader<C>() makes it.
  std::function<io::Json(const io::Json& json, const std::string& source, const std::string& what)>
      read_config = {};

  std::string a_program() const;  // "an lm", "a vit": as the name is spoken
  std::vector<std::string> run_files() const;
};

// What a checkpoint of a run holds besides the tensors, as its config text (JSON).
struct RunState {
  io::Json config;          // the config it was trained with
  io::Json history;         // the evaluations so far, untimed (History::to_json)
  double best = 0;          // the best validation score so far
  io::Json::Object extras;  // the program's own entries (the tagger's vocabulary digests)
  std::string text() const;
  // The state a checkpoint's config text holds; ValueError naming `file` when it is not one of
  // `layout`'s program (no config, history and best).
  static RunState parse(const std::string& text, const std::filesystem::path& file, const RunLayout& layout);
  const io::Json* extra(const std::string& key) const;
};

class RunDirectory {
 public:
  // Checks `dir` for a fresh training (resume false) or for --resume, refusing with a ValueError
  // naming --run before anything is written. Under mpirun (`group` of several ranks) the ranks but
  // rank 0 check and write nothing.
  RunDirectory(std::filesystem::path dir, RunLayout layout, bool resume, dist::ProcessGroup* group = nullptr);
  // A fresh start that never saved its first checkpoint (an error stopped it) leaves nothing.
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  // Makes the directory, takes its lock (refused, naming it, while another training holds it),
  // finishes or undoes an interrupted fresh start, and removes what killed writes left. Called once
  // everything that can refuse the training has been checked.
  void open();

  const std::filesystem::path& dir() const { return dir_; }
  const RunLayout& layout() const { return layout_; }
  bool resume() const { return resume_; }
  bool writer() const { return writer_; }  // rank 0, or the one process
  // Under mpirun, a barrier of all the ranks; nothing in one process.
  void wait_for_writer() const;
  // Where file `name` of the run is written now: in DIR/.new-run until a fresh run's first checkpoint
  // is committed, in DIR after.
  std::filesystem::path path(const std::string& name) const;
  // Writes `text` to file `name` atomically; a rank that is not the writer writes nothing.
  void write_text(const std::string& name, const std::string& text) const;

  // The end of an evaluation: best.safetensors (when `improved`), last.safetensors, each with
  // `state` as its config text, and metrics.csv; a fresh run's first save commits it (it takes the
  // directory over). Under mpirun every rank calls it: the writer writes, then all meet.
  void save(const nn::Module& model, const optim::Optimizer& optimizer, int64_t step, const RunState& state,
            bool improved, const std::string& metrics_csv);

 private:
  void check_contents(bool holding_lock = false) const;
  void check_files() const;
  std::string command() const;  // "lm train", "lm train --resume": what the messages name
  [[noreturn]] void refuse(const std::string& what) const;
  [[noreturn]] void refuse_in_use() const;
  void commit();
  std::filesystem::path dir_;
  RunLayout layout_;
  bool resume_, writer_;
  dist::ProcessGroup* group_;
  std::optional<io::DirectoryLock> lock_;
  bool committed_ = false;
};

// A checkpoint of the run in `dir` ("best" or "last"), read and checked, not applied.
struct SavedRun {
  std::filesystem::path file;
  io::Checkpoint checkpoint;
  RunState state;  // its config is the checkpoint's: its budget may be above config.json's
};

// Reads DIR/config.json and DIR/WHICH.safetensors and checks that they are one run of `layout`'s
// program: the checkpoint's config must be config.json's but for the budget, which --resume may
// only have raised. A fresh start stopped halfway is finished (or undone) first, unless a training
// holds the directory. ValueError naming the file: no run, no such checkpoint, another program's,
// another run's ("seed: 7 in the checkpoint, 0 in config.json").
SavedRun load_saved_run(const std::filesystem::path& dir, const RunLayout& layout, const std::string& which);

// The config of a saved run, as its program's type.
template <class C>
C config_of(const SavedRun& saved, const RunLayout& layout, MissingKeys missing = MissingKeys::refuse) {
  return from_json<C>(saved.state.config, saved.file.string(), layout.a_program(), missing);
}

// RunLayout::read_config for a config type C.
template <class C>
auto config_reader(MissingKeys missing = MissingKeys::refuse) {
  return [missing](const io::Json& json, const std::string& source, const std::string& what) {
    return to_json(from_json<C>(json, source, what, missing));
  };
}

// The JSON text `text`, its errors naming `source`.
io::Json parse_json_of(const std::string& text, const std::string& source);

// What every training takes besides its config: where it writes, whether it continues, what it
// prints and draws, and the ranks it trains with.
struct RunOptions {
  std::string run_dir;
  bool resume = false;
  bool figures = true, verbose = true, progress = true;  // rank 0 alone prints and draws
  int64_t stop_after = -1;  // stop after this many evaluations of this call, as if interrupted (tests)
  Ranks ranks;
};

// The options of a train command that make a RunOptions, and the RunOptions they give: --run,
// --resume, --no-figures, --reduce (and the world's ranks, of which all but rank 0 are quiet).
std::vector<Args::Option> run_options(const std::string& run_dir);
RunOptions run_options_from(const Args& args);

// A comparison (lm extrapolate, vit ablate) trains one run per name (a scheme) in a directory of its
// own, OUT/NAME, and writes its tables and figures into OUT. Before anything is trained it refuses,
// naming the path, an OUT that holds any of `files` or any OUT/NAME already: "vit ablate:
// OUT/ablation.md exists; choose another --out (nothing was changed)".
void refuse_existing_comparison(const std::string& program, const std::string& out,
                                const std::vector<std::string>& names, const std::vector<std::string>& files);
// The options of NAME's run in such a comparison: OUT/NAME, a fresh run, quiet unless `verbose`; a
// program's TrainOptions (a RunOptions with `baselines`) computes the baselines in the first run alone.
RunOptions comparison_run(const std::string& out, const std::string& name, bool verbose);
template <class TrainOptions>
TrainOptions comparison_run(const std::string& out, const std::string& name, bool first, bool verbose) {
  TrainOptions o;
  static_cast<RunOptions&>(o) = comparison_run(out, name, verbose);
  o.baselines = first;
  return o;
}

// On rank 0: "lm: training on 2 ranks (mpi) of 1 thread(s), reference mode (...), run directory D".
void announce_training(const std::string& program, const RunOptions& options);

// --resume continues a run with the config it was saved with: an option that would change it is
// refused, naming it ("--resume continues the run with its saved config; --lr cannot change it"),
// unless `honoured` lists it (the budget, threads, what is printed and drawn).
void check_resume_options(const Args& args, const std::vector<std::string>& honoured);

// The value of C's integer field `key` (its budget: "steps", "epochs"), and setting it.
template <class C>
int64_t budget_of(C c, const std::string& key) {
  int64_t value = 0;
  c.fields([&](const Field& f, auto& v) {
    if constexpr (std::is_integral_v<std::decay_t<decltype(v)>>)
      if (f.key == key) value = static_cast<int64_t>(v);
  });
  return value;
}
template <class C>
void set_budget(C& c, const std::string& key, int64_t value) {
  c.fields([&](const Field& f, auto& v) {
    if constexpr (std::is_integral_v<std::decay_t<decltype(v)>>)
      if (f.key == key) v = static_cast<std::decay_t<decltype(v)>>(value);
  });
}

// The config a train command asks for. For --resume, only the budget, option --KEY (0 when not
// given: the run's own), once check_resume_options has refused any option that would change the
// run (`honoured` are the command's own that do not); otherwise the config `fresh` reads.
template <class C, class Fresh>
C train_config(const Args& args, const RunOptions& o, const std::string& key, std::vector<std::string> honoured,
               Fresh&& fresh) {
  if (!o.resume) return fresh();
  honoured.push_back(key);
  check_resume_options(args, honoured);
  const std::string option = Field{key}.option_name();
  C c;
  set_budget(c, key, args.given(option) ? args.integer_in(option, 1, 100'000'000) : 0);
  return c;
}

// What a training keeps of itself: its config, its evaluations, the best score so far, and for
// --resume the checkpoint it continues from.
template <class C, class Row>
struct TrainingState {
  C config;
  History<Row> history;
  double best;
  std::optional<SavedRun> last;

  // Loads the last checkpoint into the model and optimizer (with the generator's state): the step it
  // was saved at, 0 for a fresh run. On several ranks each loads it and they check that they agree.
  int64_t load(nn::Module& model, optim::Optimizer& optimizer, const Ranks& ranks = {}) const {
    if (!last) return 0;
    const int64_t step = io::load_checkpoint(last->file, model, optimizer).step;
    if (ranks.many()) check_same_state(model, ranks, "after loading " + last->file.string());
    return step;
  }
  // The seconds of training the run had when this call began (a timing of its last row).
  double seconds() const { return history.rows.empty() ? 0.0 : history.rows.back().seconds; }
  // The end of an evaluation: `row` kept, `score` the best when `improved`, and the checkpoints
  // (best.safetensors too when improved) and metrics.csv saved, with the program's `extras`.
  void record(RunDirectory& run, const nn::Module& model, const optim::Optimizer& optimizer, int64_t step,
              const Row& row, double score, bool improved, io::Json::Object extras = {}) {
    history.rows.push_back(row);
    if (improved) best = score;
    run.save(model, optimizer, step, {to_json(config), history.to_json(), best, std::move(extras)}, improved,
             history.csv());
  }
};

// For a fresh run, `config` as it is (with `best`, the score no evaluation can be worse than). For
// --resume, the run's own config, history and best from its last checkpoint, with `config`'s budget
// (layout.budget_key) when it is above 0, and the timings of metrics.csv: a budget below the run's
// is refused, naming the option, and so is a best checkpoint that cannot be read. Under mpirun rank 0 reads first (finishing an interrupted start),
// the others after it.
template <class C, class Row>
TrainingState<C, Row> start_or_resume(const RunDirectory& run, const C& config, double best,
                                      MissingKeys missing = MissingKeys::refuse) {
  if (!run.resume()) return {config, {}, best, std::nullopt};
  const RunLayout& layout = run.layout();
  if (!run.writer()) run.wait_for_writer();
  SavedRun last = load_saved_run(run.dir(), layout, "last");
  // The best checkpoint too, which the training reads at its end: a damaged one is refused now,
  // before any training, not after it.
  if (run.writer()) load_saved_run(run.dir(), layout, "best");
  if (run.writer()) run.wait_for_writer();
  TrainingState<C, Row> state{config_of<C>(last, layout, missing),
                              History<Row>::from_json(last.state.history, last.file.string()), last.state.best,
                              std::move(last)};
  const int64_t asked = budget_of(config, layout.budget_key), saved = budget_of(state.config, layout.budget_key);
  if (asked > 0 && asked < saved)
    throw ValueError(layout.program + " train --resume: --" + Field{layout.budget_key}.option_name() + " " +
                     std::to_string(asked) + " is below the run's " + std::to_string(saved) +
                     ": a run can be extended, not shortened");
  if (asked > 0) set_budget(state.config, layout.budget_key, asked);
  try {
    state.config.validate();
  } catch (const ValueError& e) {
    throw ValueError(layout.program + " train --resume: " + e.what());
  }
  const std::filesystem::path metrics = run.dir() / "metrics.csv";
  if (std::filesystem::is_regular_file(metrics))
    state.history.take_timings(io::read_text_file(metrics, layout.program));
  return state;
}

}  // namespace qkv::examples
