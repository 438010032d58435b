// The tagger program's run directory, through the program itself: what it refuses before it writes
// anything, what it refuses at load, what a diverged or killed run leaves behind, and checkpoints
// that are the same bytes whatever the thread count.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "examples/tagger/evaluate.h"
#include "examples/tagger/run_dir.h"
#include "model_io/checkpoint.h"
#include "io/file.h"
#include "io/json.h"
#include "io/scratch_dir.h"
#include "optim/adam.h"

namespace fs = std::filesystem;
using qkv::testing::ChildResult;
using qkv::testing::read_file;
using qkv::testing::ScratchDir;

namespace {

// A tiny run: 40 sentences of the built-in corpus, one block of width 16, 10 steps an epoch.
std::vector<std::string> tiny_run(const fs::path& dir, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"train", "--run",        dir.string(), "--d-model", "16", "--heads",
                                   "2",     "--ffn-width",  "32",         "--layers",  "1",  "--sentences",
                                   "40",    "--batch-size", "4",          "--warmup",  "19", "--no-figures"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

ChildResult run_tagger(const std::vector<std::string>& args, int threads = 1) {
  return qkv::testing::run_program(QKV_TAGGER_PROGRAM, args, {"QKV_NUM_THREADS=" + std::to_string(threads)});
}

// Every file of a run directory, name → bytes.
std::map<std::string, std::string> files_of(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = read_file(e.path());
  return files;
}

}  // namespace

TEST_CASE("tagger train stops at the first non-finite loss and keeps the last good epoch") {
  ScratchDir dir;
  // --lr 1e30: the second step's loss is already NaN. Nothing was saved, and the message says
  // where it happened and what to change.
  const ChildResult fresh = run_tagger(tiny_run(dir.path(), {"--epochs", "2", "--lr", "1e30"}));
  CHECK(fresh.exit_code == 1);
  CHECK_MESSAGE(
      fresh.errors.find("training diverged in epoch 1 at step 3 of 10 (step 3 of the run): the loss "
                        "is nan. Lower --lr (now 1e+30) or --clip (now 1)") != std::string::npos,
      fresh.errors);
  CHECK_FALSE(fs::exists(dir.path() / "last.safetensors"));
  CHECK_FALSE(fs::exists(dir.path() / "metrics.csv"));

  // --lr 1000 (measured) survives the first epoch and diverges in the second: the checkpoints and
  // metrics of epoch 1 stay as they were, and they load.
  const ChildResult later = run_tagger(tiny_run(dir.path(), {"--epochs", "2", "--lr", "1000"}));
  CHECK(later.exit_code == 1);
  CHECK_MESSAGE(later.errors.find("training diverged in epoch 2") != std::string::npos, later.errors);
  CHECK_MESSAGE(later.errors.find("holds the run as of epoch 1") != std::string::npos, later.errors);
  const tagger::SavedRun last = tagger::load_saved_run(dir.path().string(), "last.safetensors");
  CHECK(last.history.size() == 1);
  CHECK(qkv::io::read_checkpoint(dir.path() / "best.safetensors").step == 10);
  const std::string metrics = read_file(dir.path() / "metrics.csv");
  CHECK(std::count(metrics.begin(), metrics.end(), '\n') == 2);  // the header and epoch 1
  CHECK(metrics.find("nan") == std::string::npos);
}

TEST_CASE("tagger checkpoints are the same bytes with 1 and 2 threads and resume keeps the timings") {
  ScratchDir one, two;
  REQUIRE(run_tagger(tiny_run(one.path(), {"--epochs", "2", "--lr", "0.01", "--threads", "1"})).exit_code ==
          0);
  REQUIRE(run_tagger(tiny_run(two.path(), {"--epochs", "2", "--lr", "0.01", "--threads", "2"})).exit_code ==
          0);
  for (const char* name : {"best.safetensors", "last.safetensors"}) {
    CAPTURE(name);
    const std::string bytes = read_file(one.path() / name);
    CHECK(bytes.size() > 10000);
    CHECK(bytes == read_file(two.path() / name));
  }

  // Resuming takes the finished epochs' timings from metrics.csv, so its rows stay as they were.
  ScratchDir resumed;
  REQUIRE(run_tagger(tiny_run(resumed.path(), {"--epochs", "1"})).exit_code == 0);
  const std::string first = read_file(resumed.path() / "metrics.csv");
  const ChildResult r = run_tagger({"train", "--run", resumed.path().string(), "--resume", "--epochs", "2"});
  CHECK_MESSAGE(r.exit_code == 0, r.errors);
  const std::string both = read_file(resumed.path() / "metrics.csv");
  CHECK(both.substr(0, first.size()) == first);
  CHECK(both.size() > first.size());
}

namespace {

// Swaps lines `a` and `b` (0-based) of a text file.
void swap_lines(const fs::path& path, size_t a, size_t b) {
  std::vector<std::string> lines;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(std::max(a, b) < lines.size());
  std::swap(lines[a], lines[b]);
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  qkv::testing::write_file(path, text);
}

}  // namespace

TEST_CASE("tagger eval predict and resume refuse a vocabulary the checkpoint was not trained with") {
  ScratchDir dir;
  REQUIRE(run_tagger(tiny_run(dir.path(), {"--epochs", "1"})).exit_code == 0);
  const std::vector<std::vector<std::string>> commands = {
      {"eval", "--run", dir.path().string()},
      {"predict", "--run", dir.path().string(), "the saw"},
      {"train", "--run", dir.path().string(), "--resume", "--epochs", "2"}};
  for (const char* file : {"tags.txt", "words.txt"}) {
    CAPTURE(file);
    const std::string original = read_file(dir.path() / file);
    swap_lines(dir.path() / file, 2, 3);  // two tags, or two words, after <pad> and <unk>
    const auto before = files_of(dir.path());
    for (const auto& command : commands) {
      CAPTURE(command[0]);
      const ChildResult r = run_tagger(command);
      CHECK(r.exit_code == 1);
      CHECK_MESSAGE(r.errors.find((dir.path() / file).string() + " is not the vocabulary " +
                                  (dir.path() / "").string()) != std::string::npos,
                    r.errors);
      CHECK(files_of(dir.path()) == before);
    }
    qkv::testing::write_file(dir.path() / file, original);
  }
  CHECK(run_tagger(commands[0]).exit_code == 0);
}

TEST_CASE("tagger still loads a checkpoint saved before vocabulary digests and without timings") {
  ScratchDir dir;
  REQUIRE(run_tagger(tiny_run(dir.path(), {"--epochs", "1"})).exit_code == 0);
  tagger::Run run = tagger::load_run(dir.path().string());
  const std::vector<std::vector<std::string>> sentences = {{"they", "saw", "the", "saw"}};
  const auto tags = tagger::predict(run, sentences);

  // best.safetensors written again as an older qkv wrote it: no "vocabularies", and history rows
  // of 8 values, the last two the timings.
  const fs::path best = dir.path() / "best.safetensors";
  const qkv::io::Checkpoint ckpt = qkv::io::read_checkpoint(best);
  const qkv::io::Json state = qkv::io::parse_json(ckpt.config);
  qkv::io::Json::Object old;
  for (const auto& [key, value] : state.as_object()) {
    if (key == "vocabularies") continue;
    if (key != "history") {
      old.emplace_back(key, value);
      continue;
    }
    qkv::io::Json::Array rows;
    for (const qkv::io::Json& row : value.as_array()) {
      qkv::io::Json::Array r = row.as_array();
      r.push_back(qkv::io::Json(1234.5));
      r.push_back(qkv::io::Json(6.5));
      rows.push_back(qkv::io::Json(std::move(r)));
    }
    old.emplace_back(key, qkv::io::Json(std::move(rows)));
  }
  REQUIRE(old.size() == state.as_object().size() - 1);
  qkv::optim::AdamW optimizer(run.model->parameters(), {});
  qkv::io::save_checkpoint(best, *run.model, optimizer, ckpt.step, qkv::io::to_json(qkv::io::Json(old)));

  tagger::Run reloaded = tagger::load_run(dir.path().string());
  CHECK(tagger::predict(reloaded, sentences) == tags);
  const tagger::SavedRun saved = tagger::load_saved_run(dir.path().string(), "best.safetensors");
  REQUIRE(saved.history.size() == 1);
  CHECK(saved.history[0].seconds > 0);  // from metrics.csv, not the 6.5 of the checkpoint
  CHECK(saved.history[0].seconds != 6.5);
}

TEST_CASE("tagger train and resume remove the temporary files a killed run left and nothing else") {
  ScratchDir dir;
  REQUIRE(run_tagger(tiny_run(dir.path(), {"--epochs", "1"})).exit_code == 0);
  // What a run killed while writing last.safetensors and metrics.csv leaves, and look-alikes.
  const std::vector<std::string> leftovers = {".last.safetensors.tmp-4242-0", ".metrics.csv.tmp-17-3"};
  const std::vector<std::string> kept = {".last.safetensors.tmp-notes", "notes.tmp-1-2", ".tmp-1-2"};
  for (const auto& names : {leftovers, kept})
    for (const std::string& name : names) qkv::testing::write_file(dir.path() / name, "partial");
  const ChildResult r = run_tagger({"train", "--run", dir.path().string(), "--resume", "--epochs", "2"});
  CHECK_MESSAGE(r.exit_code == 0, r.errors);
  for (const std::string& name : leftovers) CHECK_FALSE(fs::exists(dir.path() / name));
  for (const std::string& name : kept) CHECK(fs::exists(dir.path() / name));
  CHECK(tagger::load_saved_run(dir.path().string(), "last.safetensors").history.size() == 2);

  qkv::testing::write_file(dir.path() / leftovers[0], "partial");
  REQUIRE(run_tagger(tiny_run(dir.path(), {"--epochs", "1"})).exit_code == 0);
  CHECK_FALSE(fs::exists(dir.path() / leftovers[0]));
}

TEST_CASE("tagger refuses a run directory it cannot write to before it trains") {
  // chmod does not stop root: as root the program runs as nobody (setpriv, from util-linux).
  const bool root = ::geteuid() == 0;
  if (root && !fs::exists("/usr/bin/setpriv")) {
    MESSAGE("skipped: running as root without /usr/bin/setpriv");
    return;
  }
  ScratchDir scratch;
  const fs::path dir = scratch.path() / "run";
  REQUIRE(run_tagger(tiny_run(dir, {"--epochs", "1"})).exit_code == 0);
  const auto read_only = fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                         fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(scratch.path(), read_only);
  fs::permissions(dir, read_only);
  const auto before = files_of(dir);
  auto run_read_only = [&](std::vector<std::string> args) {
    if (!root) return run_tagger(args);
    args.insert(args.begin(), {"--reuid=65534", "--regid=65534", "--clear-groups", QKV_TAGGER_PROGRAM});
    return qkv::testing::run_program("/usr/bin/setpriv", args, {"QKV_NUM_THREADS=1"});
  };
  for (const auto& args :
       {std::vector<std::string>{"train", "--run", dir.string(), "--resume", "--epochs", "2"},
        tiny_run(dir, {"--epochs", "1"})}) {
    const ChildResult r = run_read_only(args);
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(r.errors.find("cannot write in the directory '" + dir.string() + "'") != std::string::npos,
                  r.errors);
    CHECK_MESSAGE(r.errors.find("epoch") == std::string::npos, r.errors);  // refused before training
    CHECK(files_of(dir) == before);
  }
  fs::permissions(dir, fs::perms::owner_all);
  fs::permissions(scratch.path(), fs::perms::owner_all);
}

TEST_CASE("tagger resume refuses another run's checkpoint naming both files and the key before writing") {
  ScratchDir run, other_seed, fewer_epochs;
  REQUIRE(run_tagger(tiny_run(run.path(), {"--epochs", "2"})).exit_code == 0);
  REQUIRE(run_tagger(tiny_run(other_seed.path(), {"--epochs", "2", "--seed", "7"})).exit_code == 0);
  REQUIRE(run_tagger(tiny_run(fewer_epochs.path(), {"--epochs", "1"})).exit_code == 0);
  const std::string last = (run.path() / "last.safetensors").string();
  const std::string config = (run.path() / "config.json").string();
  const struct {
    const ScratchDir& from;
    std::string difference;
  } cases[] = {{other_seed, "seed: 7 in the checkpoint, 0 in config.json"},
               {fewer_epochs, "epochs: 1 in the checkpoint, 2 in config.json"}};
  for (const auto& c : cases) {
    CAPTURE(c.difference);
    fs::copy_file(c.from.path() / "last.safetensors", last, fs::copy_options::overwrite_existing);
    const auto before = files_of(run.path());
    const ChildResult r = run_tagger({"train", "--run", run.path().string(), "--resume", "--epochs", "3"});
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(r.errors.find("tagger: " + last + " was trained with another config than " + config + ": " +
                                c.difference) != std::string::npos,
                  r.errors);
    CHECK(r.errors.find("tagger: tagger:") == std::string::npos);
    CHECK(files_of(run.path()) == before);
  }
}

TEST_CASE("tagger train refuses a directory that is neither empty nor a tagger run and touches nothing in it") {
  ScratchDir dir;
  fs::create_directories(dir.path() / "figures");
  qkv::testing::write_file(dir.path() / "figures" / "f.pdf", "a user's figure");
  qkv::testing::write_file(dir.path() / ".thesis.tex.tmp-12-3", "an editor's backup, named like ours");
  const auto before = files_of(dir.path());
  const ChildResult r = run_tagger(tiny_run(dir.path(), {"--epochs", "1"}));
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(r.errors.find(dir.path().string() + " (--run) is not empty and not a tagger run") != std::string::npos,
                r.errors);
  CHECK(files_of(dir.path()) == before);
  // Nor a directory whose config.json is another program's.
  ScratchDir other;
  qkv::testing::write_file(other.path() / "config.json", "{\"learning_rate\": 0.1}");
  qkv::testing::write_file(other.path() / "best.safetensors", "another program's weights");
  const auto other_before = files_of(other.path());
  const ChildResult s = run_tagger(tiny_run(other.path(), {"--epochs", "1"}));
  CHECK(s.exit_code == 1);
  CHECK_MESSAGE(s.errors.find("holds a config.json that is not a tagger run's") != std::string::npos, s.errors);
  CHECK(files_of(other.path()) == other_before);
}

TEST_CASE("a second training into a run directory is refused while the first holds it") {
  ScratchDir dir;
  REQUIRE(run_tagger(tiny_run(dir.path(), {"--epochs", "1"})).exit_code == 0);
  const auto before = files_of(dir.path());
  {
    const qkv::io::DirectoryLock first = qkv::io::DirectoryLock::try_lock(dir.path());  // a training at work
    REQUIRE(first.locked());
    for (const auto& args : {tiny_run(dir.path(), {"--epochs", "1"}),
                             std::vector<std::string>{"train", "--run", dir.path().string(), "--resume", "--epochs", "2"}}) {
      const ChildResult r = run_tagger(args);
      CHECK(r.exit_code == 1);
      CHECK_MESSAGE(r.errors.find(dir.path().string() + " is in use by another training") != std::string::npos,
                    r.errors);
      CHECK(files_of(dir.path()) == before);
    }
  }
  // Once the first has ended (however it ended: the kernel drops the lock), training goes on.
  CHECK(run_tagger({"train", "--run", dir.path().string(), "--resume", "--epochs", "2"}).exit_code == 0);
}

namespace {

// The seed of the run in `dir`, as load_saved_run reads it from its last checkpoint.
uint64_t seed_of(const fs::path& dir) { return tagger::load_saved_run(dir.string(), "last.safetensors").config.seed; }

}  // namespace

TEST_CASE("a fresh run replaces an old one only once its first epoch is saved whole, whatever stops it") {
  // The fresh run's first epoch goes to DIR/.new-run, marked complete, then moved in
  // (examples/common/run_directory.h).
  // Each test below stops it at one point, with the files a stopped run would leave.
  ScratchDir old_run, new_run;
  REQUIRE(run_tagger(tiny_run(old_run.path(), {"--epochs", "1", "--seed", "1"})).exit_code == 0);
  REQUIRE(run_tagger(tiny_run(new_run.path(), {"--epochs", "1", "--seed", "2"})).exit_code == 0);
  const auto old_files = files_of(old_run.path());
  const std::vector<std::string> run_files = {"config.json", "words.txt", "tags.txt", "best.safetensors",
                                              "last.safetensors", "metrics.csv"};
  auto stage_new_run = [&](const fs::path& dir) {
    const fs::path staging = dir / ".new-run";
    fs::create_directories(staging);
    for (const std::string& f : run_files) fs::copy_file(new_run.path() / f, staging / f);
    return staging;
  };
  SUBCASE("stopped before the mark: the old run is whole, and the next start removes the staged files") {
    const fs::path staging = stage_new_run(old_run.path());
    fs::remove(staging / "last.safetensors");  // stopped in the middle of its writes
    CHECK(seed_of(old_run.path()) == 1);
    CHECK(tagger::load_run(old_run.path().string()).config.seed == 1);
    CHECK_FALSE(fs::exists(staging));  // the loads found no run at work, and undid the start
    CHECK(files_of(old_run.path()) == old_files);
  }
  SUBCASE("stopped after the mark, before any move: the next load finishes the start") {
    stage_new_run(old_run.path());
    std::string names;
    for (const std::string& f : run_files) names += f + "\n";
    qkv::testing::write_file(old_run.path() / ".new-run" / "complete", names);
    CHECK(seed_of(old_run.path()) == 2);
    CHECK(files_of(old_run.path()) == files_of(new_run.path()));
  }
  SUBCASE("stopped halfway through the moves, the new run without a best checkpoint") {
    const fs::path staging = stage_new_run(old_run.path());
    fs::remove(staging / "best.safetensors");
    qkv::testing::write_file(staging / "complete", "config.json\nwords.txt\ntags.txt\nlast.safetensors\nmetrics.csv\n");
    fs::rename(staging / "config.json", old_run.path() / "config.json");  // moved before the stop
    qkv::examples::RunDirectory resume(old_run.path(), tagger::kRunLayout, /*resume=*/true);  // a resume's start
    resume.open();
    CHECK_FALSE(fs::exists(staging));
    CHECK(seed_of(old_run.path()) == 2);
    CHECK_FALSE(fs::exists(old_run.path() / "best.safetensors"));  // the old run's: it is not this one's
    CHECK(read_file(old_run.path() / "last.safetensors") == read_file(new_run.path() / "last.safetensors"));
  }
  SUBCASE("the program itself: a fresh run over an old one leaves one whole run") {
    REQUIRE(run_tagger(tiny_run(old_run.path(), {"--epochs", "1", "--seed", "2"})).exit_code == 0);
    CHECK_FALSE(fs::exists(old_run.path() / ".new-run"));
    for (const std::string& f : run_files) {  // metrics.csv's timings aside, the same run
      CAPTURE(f);
      if (f != "metrics.csv") CHECK(read_file(old_run.path() / f) == read_file(new_run.path() / f));
    }
    CHECK(files_of(old_run.path()).size() == files_of(new_run.path()).size());
  }
}
