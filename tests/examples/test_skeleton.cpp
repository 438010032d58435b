// The frame every example program stands on (examples/common): a config's one list of fields for
// JSON, options and differences; the history of a training with its timings kept out of
// checkpoints; the run directory's refusals, staging and takeover; the command table.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "child_process.h"
#include "examples/common/config.h"
#include "examples/common/history.h"
#include "examples/common/run_directory.h"
#include "io/file.h"
#include "io/json.h"
#include "io/scratch_dir.h"
#include "nn/linear.h"
#include "optim/sgd.h"
#include "tensor/error.h"

namespace fs = std::filesystem;
using qkv::examples::Args;

namespace {

struct Settings {
  int64_t width = 8;
  double rate = 0.5;
  std::string name = "plain";
  bool fast = false;
  uint64_t seed = 3;
  int64_t steps = 10;
  template <class F>
  void fields(F&& f) {
    f({"width", "the width"}, width);
    f({"rate", "the rate", "learning-rate"}, rate);
    f({"name", "a name"}, name);
    f({"fast", "go fast"}, fast);
    f({"seed", "the seed"}, seed);
    f({"steps", "the budget"}, steps);
  }
  void validate() const { qkv::examples::check_int("width", width, 1, 100); }
};

// Settings with a key added after runs were saved.
struct Later : Settings {
  std::string extra = "old";
  template <class F>
  void fields(F&& f) {
    Settings::fields(f);
    f({"extra", "added later", "", /*later=*/true}, extra);
  }
};

// A key added later whose default has changed since: runs saved before it did what `before` says.
struct Changed : Settings {
  int64_t crop = 2;
  template <class F>
  void fields(F&& f) {
    Settings::fields(f);
    f({"crop", "added later, then made 2", "", /*later=*/true, qkv::io::Json(int64_t{0})}, crop);
  }
};

Args parse(const std::vector<Args::Option>& spec, std::vector<std::string> argv) {
  std::vector<char*> ptrs;
  for (auto& a : argv) ptrs.push_back(a.data());
  return Args(static_cast<int>(ptrs.size()), ptrs.data(), spec, "usage: test");
}

inline constexpr const char* kColumns[] = {"step", "train_loss", "validation_loss", "lr", "seconds"};
using Row = qkv::examples::MetricsRow<kColumns>;

const qkv::examples::RunLayout kLayout{.program = "toy",
                                       .files = {"notes.txt"},
                                       .fresh_replaces_run = false,
                                       .budget_key = "steps",
                                       .read_config = qkv::examples::config_reader<Settings>()};

// One save of a model into `run`, with `steps` in its config and one row of history.
void save_once(qkv::examples::RunDirectory& run, int64_t steps, double best) {
  qkv::nn::Linear model(2, 2);
  qkv::optim::SGD optimizer(model.parameters(), {.lr = 0.1});
  Settings s;
  s.steps = steps;
  qkv::examples::History<Row> h;
  h.rows.push_back({steps, 1.5, best, 0.1, 12.5});
  run.save(model, optimizer, steps, {qkv::examples::to_json(s), h.to_json(), best, {}}, true, h.csv());
}

}  // namespace

TEST_CASE("a config's fields give its JSON and its options and read both back strictly") {
  Settings s;
  s.width = 16, s.rate = 0.25, s.name = "wide", s.fast = true;
  const qkv::io::Json json = qkv::examples::to_json(s);
  CHECK(qkv::io::to_json(json) ==
        R"({"width":16,"rate":0.25,"name":"wide","fast":true,"seed":3,"steps":10})");
  const Settings back = qkv::examples::from_json<Settings>(json, "c.json", "a toy");
  CHECK(back.width == 16);
  CHECK(back.name == "wide");
  CHECK(back.fast);

  // Options: each field with a help, under its option name, its value the default.
  const std::vector<Args::Option> options = qkv::examples::options_of(Settings{});
  REQUIRE(options.size() == 6);
  CHECK(options[1].name == "learning-rate");
  CHECK(options[1].fallback == "0.5");
  CHECK(options[3].fallback == "false");  // a flag
  Settings read;
  qkv::examples::read_options(parse(options, {"--width", "4", "--learning-rate", "0.125", "--fast"}), read);
  CHECK(read.width == 4);
  CHECK(read.rate == 0.125);
  CHECK(read.fast);
  CHECK(read.name == "plain");  // not given: the default
  CHECK_THROWS_WITH_AS(qkv::examples::read_options(parse(options, {"--seed", "-1"}), read),
                       "option --seed expects an integer from 0 to 9223372036854775807, got -1", qkv::ValueError);
  CHECK(qkv::examples::key_and_option<Settings>("rate") == "rate (--learning-rate)");

  // Strict: unknown keys, keys twice, wrong kinds, missing keys and bad values are refused by name.
  const auto refusal = [](const std::string& text, qkv::examples::MissingKeys missing) {
    try {
      qkv::examples::from_json<Settings>(qkv::io::parse_json(text), "c.json", "a toy", missing);
    } catch (const qkv::ValueError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const auto refuse = qkv::examples::MissingKeys::refuse, keep = qkv::examples::MissingKeys::keep_defaults;
  CHECK(refusal(R"({"colour": 1})", keep) == "c.json: unknown key 'colour' (is this a toy run?)");
  CHECK(refusal(R"({"width": "8"})", keep) == "c.json: key 'width': expected an integer, found a string");
  CHECK(refusal(R"({"width": 8})", refuse) == "c.json: it lacks keys; expected all 6 of a toy config");
  CHECK(refusal(R"({"width": 8})", keep).empty());  // the others keep their defaults
  CHECK(refusal(R"({"width": 0})", keep) == "c.json: width (--width) is 0; expected 1 .. 100");
  // A key added later may be missing from an older config.json, even where missing keys are refused;
  // every other key may not.
  const std::string older = R"({"width":8,"rate":0.5,"name":"plain","fast":false,"seed":3,"steps":10})";
  CHECK(qkv::examples::from_json<Later>(qkv::io::parse_json(older), "c.json", "a toy").extra == "old");
  CHECK_THROWS_WITH_AS(qkv::examples::from_json<Later>(qkv::io::parse_json(R"({"width":8,"extra":"new"})"), "c.json", "a toy"),
                       "c.json: it lacks keys; expected all 7 of a toy config", qkv::ValueError);
  // Where the default changed after the key came: an older config.json means the value before it.
  CHECK(qkv::examples::from_json<Changed>(qkv::io::parse_json(older), "c.json", "a toy").crop == 0);
  CHECK(Changed{}.crop == 2);
  const std::string newer = older.substr(0, older.size() - 1) + R"(,"crop":3})";
  CHECK(qkv::examples::from_json<Changed>(qkv::io::parse_json(newer), "c.json", "a toy").crop == 3);

  Settings other = s;
  other.seed = 7;
  CHECK(qkv::examples::differences(qkv::examples::to_json(other), json, "A", "B") == "seed: 7 in A, 3 in B");
}

TEST_CASE("a history keeps its timings out of checkpoints and takes them back from metrics.csv") {
  qkv::examples::History<Row> h;
  h.rows.push_back({10, 2.5, 2.25, 0.001, 3.5});
  h.rows.push_back({20, 2.0, 1.875, 0.0005, 7.25});
  CHECK(qkv::io::to_json(h.to_json()) == "[[10,2.5,2.25,0.001],[20,2.0,1.875,5e-04]]");
  CHECK(h.csv() == "step,train_loss,validation_loss,lr,seconds\n10,2.5,2.25,0.001,3.5\n20,2,1.875,0.0005,7.25\n");

  auto back = qkv::examples::History<Row>::from_json(h.to_json(), "ckpt");
  REQUIRE(back.rows.size() == 2);
  CHECK(back.rows[1].score == 1.875);
  CHECK(back.rows[1].seconds == 0);
  back.take_timings(h.csv());
  CHECK(back.rows[0].seconds == 3.5);
  CHECK(back.rows[1].seconds == 7.25);
  // Rows an older checkpoint wrote with their timings are read, the timings left for metrics.csv.
  const auto old = qkv::examples::History<Row>::from_json(qkv::io::parse_json("[[10,2.5,2.25,0.001,99]]"), "old");
  CHECK(old.rows[0].seconds == 0);
  CHECK_THROWS_WITH_AS(qkv::examples::History<Row>::from_json(qkv::io::parse_json("[[10,2.5]]"), "bad"),
                       "bad: history row 1 is not [step, train_loss, validation_loss, lr]", qkv::ValueError);
}

TEST_CASE("a run directory refuses before writing, stages a fresh run and resumes from its last checkpoint") {
  qkv::testing::ScratchDir scratch;
  const fs::path dir = scratch / "run";
  {  // A fresh run is staged until its first save, which writes config.json and moves it all in.
    qkv::examples::RunDirectory run(dir, kLayout, false);
    CHECK_FALSE(fs::exists(dir));  // checked, nothing written yet
    run.open();
    run.write_text("notes.txt", "mine\n");
    CHECK(fs::exists(dir / ".new-run" / "notes.txt"));
    CHECK_FALSE(fs::exists(dir / "config.json"));
    save_once(run, 10, 2.0);
    CHECK_FALSE(fs::exists(dir / ".new-run"));
    for (const char* f : {"config.json", "notes.txt", "best.safetensors", "last.safetensors", "metrics.csv"})
      CHECK_MESSAGE(fs::exists(dir / f), f);
  }
  const auto refusal = [&](const fs::path& where, bool resume) {
    try {
      qkv::examples::RunDirectory run(where, kLayout, resume);
      run.open();
    } catch (const qkv::ValueError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(refusal(dir, false) == "toy train: " + dir.string() +
                                   " (--run) holds a toy run (its config.json); --resume continues it, or "
                                   "choose another --run (nothing was changed)");
  fs::create_directories(scratch / "other");
  qkv::testing::write_file(scratch / "other" / "thesis.tex", "x");
  CHECK(refusal(scratch / "other", false) ==
        "toy train: " + (scratch / "other").string() +
            " (--run) is not empty and not a toy run (it holds 'thesis.tex'); choose an empty or new directory "
            "(nothing was changed)");
  CHECK(refusal(scratch / "nowhere", true) ==
        "toy train --resume: " + (scratch / "nowhere").string() + " (--run) is not a directory holding a toy run");
  CHECK_FALSE(fs::exists(scratch / "nowhere"));
  {  // While one training holds the directory, a second is refused.
    qkv::examples::RunDirectory first(dir, kLayout, true);
    first.open();
    CHECK(refusal(dir, true).find(dir.string() + " is in use by another training") != std::string::npos);
  }
  // The saved run reads back; a budget may grow on resume, never shrink.
  qkv::examples::RunDirectory run(dir, kLayout, true);
  Settings wanted;
  wanted.steps = 30;
  const auto start = qkv::examples::start_or_resume<Settings, Row>(run, wanted, 9.0);
  REQUIRE(start.last);
  CHECK(start.config.steps == 30);
  CHECK(start.best == 2.0);
  REQUIRE(start.history.rows.size() == 1);
  CHECK(start.history.rows[0].seconds == 12.5);  // from metrics.csv
  wanted.steps = 5;
  CHECK_THROWS_WITH_AS((qkv::examples::start_or_resume<Settings, Row>(run, wanted, 9.0)),
                       "toy train --resume: --steps 5 is below the run's 10: a run can be extended, not shortened",
                       qkv::ValueError);
  // A damaged best checkpoint is refused before any training, not when the training ends and reads it.
  const std::string best = qkv::io::read_text_file(dir / "best.safetensors", "test");
  qkv::testing::write_file(dir / "best.safetensors", best.substr(0, best.size() / 2));
  wanted.steps = 30;
  try {
    (void)qkv::examples::start_or_resume<Settings, Row>(run, wanted, 9.0);
    FAIL("a damaged best.safetensors was not refused");
  } catch (const qkv::Error& e) {
    CHECK(std::string(e.what()).find((dir / "best.safetensors").string()) != std::string::npos);
  }
  qkv::testing::write_file(dir / "best.safetensors", best);
  // Without its last checkpoint a run cannot be resumed: the file is named, nothing is changed.
  fs::remove(dir / "last.safetensors");
  CHECK(refusal(dir, true) == "toy train --resume: " + (dir / "last.safetensors").string() +
                                  " is missing, so the run has no checkpoint to continue from; train afresh in "
                                  "another --run (nothing was changed)");
}

TEST_CASE("a second training into a new directory another has just started is told it is in use") {
  qkv::testing::ScratchDir scratch;
  qkv::examples::RunDirectory first(scratch / "run", kLayout, false);
  first.open();
  // What the first holds midway is no reason to give: figures drawn, a file of its own staged.
  fs::create_directories(scratch / "run" / "figures");
  first.write_text("notes.txt", "staged\n");
  const std::string in_use = (scratch / "run").string() + " is in use by another training";
  for (const bool resume : {false, true}) {
    try {
      qkv::examples::RunDirectory second(scratch / "run", kLayout, resume);
      second.open();
      FAIL("the second training was not refused");
    } catch (const qkv::ValueError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(in_use) != std::string::npos, e.what());
    }
  }
}

TEST_CASE("a fresh start that fails before its first checkpoint leaves the directory as it found it") {
  qkv::testing::ScratchDir scratch;
  {
    qkv::examples::RunDirectory run(scratch / "run", kLayout, false);
    run.open();
    run.write_text("notes.txt", "staged\n");
  }  // stopped by an error: no save
  CHECK_FALSE(fs::exists(scratch / "run" / ".new-run"));
  CHECK_FALSE(fs::exists(scratch / "run" / "notes.txt"));
  qkv::examples::RunDirectory again(scratch / "run", kLayout, false);  // the directory is free for a run
  again.open();
}

TEST_CASE("every program answers --help with its commands and refuses an unknown one with exit code 2") {
  for (const std::string& program : {qkv::testing::kTaggerProgram, qkv::testing::kLmProgram,
                                     qkv::testing::kSeq2SeqProgram, std::string(QKV_VIT_PROGRAM),
                                     std::string(QKV_GRAPH_PROGRAM), std::string(QKV_LONG_RANGE_PROGRAM)}) {
    CAPTURE(program);
    const auto help = qkv::testing::run_program(program, {"--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.output.find("commands:\n") != std::string::npos);
    CHECK(help.output.find("COMMAND --help` for its options") != std::string::npos);
    const auto unknown = qkv::testing::run_program(program, {"fly"});
    CHECK(unknown.exit_code == 2);
    CHECK(unknown.errors.find("unknown command 'fly'") != std::string::npos);
    CHECK(qkv::testing::run_program(program, {}).exit_code == 2);
  }
}
