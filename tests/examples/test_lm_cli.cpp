// The lm program as a user runs it, on a small text of its own (--text): a tiny model trains,
// evaluates and samples; bad input is refused in one line naming the option or file, and nothing
// of an existing run is lost. Each case runs the built program (tests/child_process.h).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "io/file.h"
#include "io/json.h"
#include "io/scratch_dir.h"
#include "tensor/precision.h"

using qkv::testing::kLmProgram;
using qkv::testing::run_program;
namespace fs = std::filesystem;

namespace {

// A text of 80 lines, 40 sections: short sentences over a small alphabet.
std::string small_text() {
  const std::vector<std::string> words = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "it"};
  std::string text;
  for (int line = 0; line < 80; ++line) {
    for (int w = 0; w < 8; ++w) text += words[(line * 7 + w * 3 + w * w) % words.size()] + (w < 7 ? " " : ".\n");
  }
  return text;
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

const std::vector<std::string> kTiny = {"--context", "16", "--d-model", "16", "--heads", "2", "--layers", "1",
                                        "--ffn-hidden", "32", "--batch", "4", "--warmup", "2",
                                        "--eval-every", "10", "--no-figures"};

qkv::testing::ChildResult train(const std::string& run, const std::string& text, const std::string& steps,
                                std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {"train", "--run", run, "--text", text, "--steps", steps};
  argv.insert(argv.end(), kTiny.begin(), kTiny.end());
  argv.insert(argv.end(), extra.begin(), extra.end());
  return run_program(kLmProgram, argv);
}

std::string read(const fs::path& path) { return qkv::io::read_text_file(path, "test"); }

}  // namespace

TEST_CASE("lm trains on a text of its own, beats the unigram, evaluates, samples and resumes") {
  qkv::testing::ScratchDir dir;
  write(dir / "text.txt", small_text());
  const std::string run = (dir / "run").string();
  const auto r = train(run, (dir / "text.txt").string(), "120", {"--lr", "0.01"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.errors);
  // The test table's first two rows: this model, then the unigram, in bits per character.
  const auto bits_after = [&](const std::string& label) {
    const size_t at = r.output.rfind(label);
    return at == std::string::npos ? -1.0 : std::stod(r.output.substr(at + label.size()));
  };
  CHECK(r.output.find("Kneser-Ney") != std::string::npos);
  const double model = bits_after("this model, non-overlapping windows"),
               sliding = bits_after("this model, sliding window"), unigram = bits_after("unigram");
  CHECK(model > 0);
  CHECK(model < unigram);
  CHECK(sliding > 0);
  CHECK(sliding < unigram);
  CHECK(sliding != model);
  for (const char* f : {"config.json", "baselines.json", "metrics.csv", "last.safetensors", "best.safetensors"})
    CHECK_MESSAGE(fs::exists(dir / "run" / f), f);
  CHECK(read(dir / "run" / "metrics.csv").starts_with("step,train_bits_per_char,validation_bits_per_char,lr,seconds\n10,"));

  const auto e = run_program(kLmProgram, {"eval", "--run", run});
  REQUIRE_MESSAGE(e.exit_code == 0, e.errors);
  for (const char* line : {"validation, non-overlapping windows ", "validation, sliding window ",
                           "test, non-overlapping windows ", "test, sliding window "})
    CHECK_MESSAGE(e.output.find(line) != std::string::npos, line);

  // Greedy sampling repeats itself exactly, with the cache and without it.
  const std::vector<std::string> greedy = {"sample", "--run", run, "--prompt", "the cat", "--tokens", "40",
                                           "--temperature", "0"};
  const auto s1 = run_program(kLmProgram, greedy);
  std::vector<std::string> no_cache = greedy;
  no_cache.push_back("--no-cache");
  const auto s2 = run_program(kLmProgram, no_cache);
  REQUIRE_MESSAGE(s1.exit_code == 0, s1.errors);
  CHECK(s1.output.starts_with("the cat"));
  CHECK(s1.output.size() == std::string("the cat").size() + 40 + 1);
  CHECK(s1.output == s2.output);
  // A prompt longer than the context (16) slides: the model reads its last characters.
  const auto s3 = run_program(kLmProgram, {"sample", "--run", run, "--prompt", "the cat sat on a mat and the dog ran",
                                           "--tokens", "5", "--top-k", "3", "--seed", "4"});
  CHECK_MESSAGE(s3.exit_code == 0, s3.errors);

  // --resume extends the run to 130 steps: one more evaluation row, and the figures.
  const auto resumed = run_program(kLmProgram, {"train", "--run", run, "--resume", "--steps", "130"});
  REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.errors);
  CHECK(read(dir / "run" / "metrics.csv").find("\n130,") != std::string::npos);
  for (const char* f : {"loss.png", "attention.png", "bits_by_position.png"})
    CHECK_MESSAGE(fs::file_size(dir / "run" / "figures" / f) > 1000, f);
  const auto heatmap = run_program(kLmProgram, {"sample", "--run", run, "--prompt", "the", "--tokens", "20", "--heatmap",
                                                (dir / "heat.png").string()});
  CHECK_MESSAGE(heatmap.exit_code == 0, heatmap.errors);
  CHECK(fs::exists(dir / "heat.png"));
}

TEST_CASE("lm sample refuses bad options in one line naming the option") {
  qkv::testing::ScratchDir dir;
  write(dir / "text.txt", small_text());
  const std::string run = (dir / "run").string();
  REQUIRE(train(run, (dir / "text.txt").string(), "3").exit_code == 0);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--temperature", "-1"}, "lm: option --temperature expects a number from 0 to 100, got -1\n"},
      {{"--temperature", "nan"}, "lm: option --temperature expects a number from 0 to 100, got nan\n"},
      // 16 characters: the unknown symbol, never written, is no candidate.
      {{"--top-k", "0"}, "lm: option --top-k expects an integer from 1 to 16, got 0\n"},
      {{"--top-k", "17"}, "lm: option --top-k expects an integer from 1 to 16, got 17\n"},
      {{"--prompt", ""}, "lm: --prompt is empty; the model needs at least one character to go on from\n"},
      {{"--prompt", "the Cat"},
       "lm: --prompt: character 5 ('C') is not among the 16 characters the run was trained on\n"},
      {{"--prompt", "the \xE9"}, "lm: --prompt: not UTF-8 at line 1, byte 5; the text must be UTF-8\n"},
      {{"--checkpoint", "first"}, "lm: --checkpoint is 'first'; expected best or last\n"},
  };
  for (const auto& [options, message] : cases) {
    std::vector<std::string> argv = {"sample", "--run", run, "--tokens", "3"};
    argv.insert(argv.end(), options.begin(), options.end());
    const auto r = run_program(kLmProgram, argv);
    CHECK(r.exit_code == 1);
    CHECK(r.errors == message);
    CHECK(r.output.empty());
  }
}

TEST_CASE("lm train refuses a bad text, and never writes over a run or a directory of other files") {
  qkv::testing::ScratchDir dir;
  write(dir / "empty.txt", "");
  write(dir / "latin1.txt", "caf\xE9\n");
  write(dir / "short.txt", "a b c\nd e f\n");
  write(dir / "text.txt", small_text());
  const std::string run = (dir / "run").string();
  const auto empty = train(run, (dir / "empty.txt").string(), "3");
  CHECK(empty.errors == "lm --text " + (dir / "empty.txt").string() + ": the file is empty; expected UTF-8 text\n");
  const auto latin1 = train(run, (dir / "latin1.txt").string(), "3");
  CHECK(latin1.errors == "lm --text " + (dir / "latin1.txt").string() +
                             ": not UTF-8 at line 1, byte 4; the text must be UTF-8\n");
  const auto short_text = train(run, (dir / "short.txt").string(), "3");
  CHECK(short_text.exit_code == 1);
  CHECK(short_text.errors.find("shorter than one context window (--context 16)") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "run" / "config.json"));

  REQUIRE(train(run, (dir / "text.txt").string(), "3").exit_code == 0);
  const std::string before = read(dir / "run" / "config.json");
  const auto again = train(run, (dir / "text.txt").string(), "3", {"--seed", "2"});
  CHECK(again.exit_code == 1);
  CHECK(again.errors == "lm train: " + run + " (--run) holds an lm run (its config.json); --resume continues it, "
                                             "or choose another --run (nothing was changed)\n");
  CHECK(read(dir / "run" / "config.json") == before);

  fs::create_directories(dir / "other");
  write(dir / "other" / "notes.txt", "mine");
  const auto other = train((dir / "other").string(), (dir / "text.txt").string(), "3");
  CHECK(other.errors == "lm train: " + (dir / "other").string() +
                            " (--run) is not empty and not an lm run (it holds 'notes.txt'); choose an empty or new "
                            "directory (nothing was changed)\n");
  CHECK(read(dir / "other" / "notes.txt") == "mine");
}

TEST_CASE("lm refuses a run directory of another program, naming its file") {
  qkv::testing::ScratchDir dir;
  fs::create_directories(dir / "tagger");
  write(dir / "tagger" / "config.json", "{\"model\": \"transformer\", \"epochs\": 3}\n");
  const auto r = run_program(kLmProgram, {"sample", "--run", (dir / "tagger").string()});
  CHECK(r.exit_code == 1);
  CHECK(r.errors == "lm: " + (dir / "tagger" / "config.json").string() +
                        ": unknown key 'model' (is this an lm run?)\n");
  // A fresh training into it says whose run it is, not that --resume would continue it.
  write(dir / "text.txt", small_text());
  const auto t = train((dir / "tagger").string(), (dir / "text.txt").string(), "3");
  CHECK(t.exit_code == 1);
  CHECK(t.errors.find("holds a config.json that is not an lm run's") != std::string::npos);
  CHECK(t.errors.find("--resume") == std::string::npos);
}

TEST_CASE("lm keeps --cache as an absolute path, so that a run is read the same from any directory") {
  qkv::testing::ScratchDir dir;
  write(dir / "text.txt", small_text());
  const std::string run = (dir / "run").string();
  REQUIRE(train(run, (dir / "text.txt").string(), "3").exit_code == 0);
  const qkv::io::Json config = qkv::io::parse_json(read(dir / "run" / "config.json"));
  const std::string cache = config.find("cache")->as_string();
  CHECK(fs::path(cache).is_absolute());
  CHECK(cache.ends_with("cache/moby-dick"));
}

TEST_CASE("lm train starts again where a run was killed before its first checkpoint, and --resume refuses what is no run") {
  qkv::testing::ScratchDir dir;
  write(dir / "text.txt", small_text());
  const std::string run = (dir / "run").string(), killed = (dir / "killed").string();
  REQUIRE(train(run, (dir / "text.txt").string(), "3").exit_code == 0);
  const std::string metrics = read(dir / "run" / "metrics.csv");
  // As a kill before the first checkpoint leaves it: the staged start, config.json and
  // baselines.json in .new-run, and nothing of a run in the directory itself.
  fs::create_directories(dir / "killed" / ".new-run");
  for (const char* f : {"config.json", "baselines.json"}) fs::copy_file(dir / "run" / f, dir / "killed" / ".new-run" / f);
  const auto no_run = run_program(kLmProgram, {"train", "--run", killed, "--resume"});
  CHECK(no_run.errors == "lm train --resume: " + killed + " (--run) holds no lm run (no config.json)\n");
  REQUIRE(train(killed, (dir / "text.txt").string(), "3").exit_code == 0);
  CHECK_FALSE(fs::exists(dir / "killed" / ".new-run"));
  // The same run again, from its seed: the same metrics but for the seconds.
  const auto without_seconds = [](const std::string& csv) {
    std::string out;
    for (size_t at = 0; at < csv.size();) {
      const size_t end = csv.find('\n', at);
      const std::string line = csv.substr(at, end - at);
      out += line.substr(0, line.rfind(',')) + "\n";
      at = end + 1;
    }
    return out;
  };
  CHECK(without_seconds(read(dir / "killed" / "metrics.csv")) == without_seconds(metrics));
  // A run whose last checkpoint is gone is refused by its name, and nothing of it is changed.
  fs::remove(dir / "run" / "last.safetensors");
  const auto lost = run_program(kLmProgram, {"train", "--run", run, "--resume", "--steps", "6"});
  CHECK(lost.errors == "lm train --resume: " + (dir / "run" / "last.safetensors").string() +
                           " is missing, so the run has no checkpoint to continue from; train afresh in another --run "
                           "(nothing was changed)\n");
  CHECK(read(dir / "run" / "metrics.csv") == metrics);

  const auto missing = run_program(kLmProgram, {"train", "--run", (dir / "nowhere").string(), "--resume"});
  CHECK(missing.errors == "lm train --resume: " + (dir / "nowhere").string() +
                              " (--run) is not a directory holding an lm run\n");
  CHECK_FALSE(fs::exists(dir / "nowhere"));
  const auto odd = run_program(kLmProgram, {"train", "--run", (dir / "odd").string(), "--text",
                                            (dir / "text.txt").string(), "--positions", "sinusoidal", "--d-model",
                                            "15", "--heads", "3"});
  CHECK(odd.errors == "lm: positions (--positions) sinusoidal needs an even d_model (--d-model); it is 15\n");
  CHECK_FALSE(fs::exists(dir / "odd"));
}

TEST_CASE("two lm trainings of one seed write checkpoints of the same bytes at 1 and 2 threads") {
  // A checkpoint holds the config, the evaluations and the best score, and no wall-clock time
  // (metrics.csv has the seconds), so that its bytes depend on the seed alone.
  qkv::testing::ScratchDir dir;
  write(dir / "text.txt", small_text());
  const std::string text = (dir / "text.txt").string();
  REQUIRE(train((dir / "one").string(), text, "20", {"--threads", "1"}).exit_code == 0);
  REQUIRE(train((dir / "two").string(), text, "20", {"--threads", "2"}).exit_code == 0);
  for (const char* f : {"last.safetensors", "best.safetensors", "config.json"}) {
    CAPTURE(f);
    CHECK(read(dir / "one" / f) == read(dir / "two" / f));
  }
  CHECK(read(dir / "one" / "metrics.csv").starts_with("step,train_bits_per_char,validation_bits_per_char,lr,seconds\n10,"));
}

TEST_CASE("lm refuses a run's text that has changed since, and names the run's text when it is gone") {
  qkv::testing::ScratchDir dir;
  write(dir / "text.txt", small_text());
  write(dir / "other.txt", small_text());
  const std::string run = (dir / "run").string(), other = (dir / "other").string();
  REQUIRE(train(run, (dir / "text.txt").string(), "10").exit_code == 0);
  REQUIRE(train(other, (dir / "other.txt").string(), "10").exit_code == 0);
  const std::string baselines = read(dir / "run" / "baselines.json"), metrics = read(dir / "run" / "metrics.csv");
  write(dir / "text.txt", small_text() + "the dog sat.\n");
  const std::string changed = "the run's text (config.json \"text\") " + (dir / "text.txt").string() +
                              " has changed since the run was trained on it";
  const auto eval = run_program(kLmProgram, {"eval", "--run", run});
  CHECK(eval.exit_code == 1);
  CHECK(eval.errors.find(changed) != std::string::npos);
  CHECK(eval.output.empty());
  const auto resume = run_program(kLmProgram, {"train", "--run", run, "--resume", "--steps", "20"});
  CHECK(resume.exit_code == 1);
  CHECK(resume.errors.find(changed) != std::string::npos);
  CHECK(read(dir / "run" / "baselines.json") == baselines);
  CHECK(read(dir / "run" / "metrics.csv") == metrics);
  // The text put back as it was: the run evaluates again.
  write(dir / "text.txt", small_text());
  CHECK(run_program(kLmProgram, {"eval", "--run", run}).exit_code == 0);
  // A text gone is the run's, not an option never given.
  fs::remove(dir / "other.txt");
  const auto gone = run_program(kLmProgram, {"eval", "--run", other});
  CHECK(gone.exit_code == 1);
  CHECK(gone.errors.find("the run's text (config.json \"text\")") != std::string::npos);
  CHECK(gone.errors.find("--text") == std::string::npos);
  // A damaged baselines.json is named.
  write(dir / "run" / "baselines.json", "{bad");
  const auto damaged = run_program(kLmProgram, {"eval", "--run", run});
  CHECK(damaged.exit_code == 1);
  CHECK(damaged.errors.find((dir / "run" / "baselines.json").string()) != std::string::npos);
}

TEST_CASE("lm data and lm sample --heatmap never write over a file, and data refuses an empty --text") {
  qkv::testing::ScratchDir dir;
  write(dir / "text.txt", small_text());
  const std::string out = (dir / "splits").string();
  const auto empty = run_program(kLmProgram, {"data", "--text", "", "--out", out});
  CHECK(empty.exit_code == 1);
  CHECK(empty.errors == "lm: --text is empty; expected a UTF-8 file\n");
  CHECK_FALSE(fs::exists(dir / "splits"));
  REQUIRE(run_program(kLmProgram, {"data", "--text", (dir / "text.txt").string(), "--out", out}).exit_code == 0);
  const std::string train_split = read(dir / "splits" / "train.txt");
  // Its own training split as --text, into the same --out: the input is never replaced.
  const auto again = run_program(kLmProgram, {"data", "--text", (dir / "splits" / "train.txt").string(), "--out", out});
  CHECK(again.exit_code == 1);
  CHECK(again.errors == "lm: --out " + out + " holds train.txt already; choose another directory (nothing was changed)\n");
  CHECK(read(dir / "splits" / "train.txt") == train_split);

  const std::string run = (dir / "run").string();
  REQUIRE(train(run, (dir / "text.txt").string(), "10").exit_code == 0);
  write(dir / "notes.txt", "mine");
  const auto heatmap = run_program(kLmProgram, {"sample", "--run", run, "--tokens", "5", "--heatmap",
                                                (dir / "notes.txt").string()});
  CHECK(heatmap.exit_code == 1);
  CHECK(heatmap.errors == "lm: --heatmap " + (dir / "notes.txt").string() +
                              " exists already; choose another file (nothing was changed)\n");
  CHECK(read(dir / "notes.txt") == "mine");
}

TEST_CASE("lm train refuses a step that cannot fit in memory at once, writing nothing") {
  qkv::testing::ScratchDir dir;
  write(dir / "text.txt", small_text() + small_text() + small_text());
  const std::string run = (dir / "run").string();
  // 4,096 windows of 16 characters through 64 blocks of width 4,096: about 4 TiB of activations.
  const auto r = run_program(kLmProgram, {"train", "--run", run, "--text", (dir / "text.txt").string(), "--context",
                                          "16", "--batch", "4096", "--d-model", "4096", "--heads", "16", "--layers",
                                          "64", "--ffn-hidden", "65536", "--steps", "10", "--warmup", "0", "--no-figures"});
  CHECK(r.exit_code == 1);
  CHECK(r.errors.find("lm train: training this model would take about ") != std::string::npos);
  CHECK(r.errors.find("lower --batch, --context, --d-model, --layers or --ffn-hidden") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "run"));
}

TEST_CASE("lm --matmul medium is part of the run: kept in config.json, resumed in it, and refused by name where it cannot run") {
  qkv::testing::ScratchDir dir;
  write(dir / "text.txt", small_text());
  const std::string text = (dir / "text.txt").string(), run = (dir / "run").string();
  CHECK(train(run, text, "3", {"--matmul", "low"}).errors ==
        "lm: matmul (--matmul) is 'low'; expected one of auto, highest, medium\n");
  CHECK_FALSE(fs::exists(dir / "run"));
  // The default, auto, is resolved before the run begins: config.json says what the products were.
  const std::string by_default = (dir / "auto").string(), plain = (dir / "auto-reference").string();
  REQUIRE(train(by_default, text, "3").exit_code == 0);
  REQUIRE(train(plain, text, "3", {"--reference"}).exit_code == 0);
  const std::string resolved = qkv::bf16_matmul_available() ? "medium" : "highest";
  CHECK(read(dir / "auto" / "config.json").find("\"matmul\":\"" + resolved + "\"") != std::string::npos);
  CHECK(read(dir / "auto-reference" / "config.json").find("\"matmul\":\"highest\"") != std::string::npos);
  // A run saved before the key existed computed in float32, and resumes so, in the reference mode too.
  std::string config = read(dir / "auto-reference" / "config.json");
  const size_t key = config.find(",\"matmul\":\"highest\"");
  REQUIRE(key != std::string::npos);
  write(dir / "auto-reference" / "config.json", config.erase(key, std::string(",\"matmul\":\"highest\"").size()));
  const auto older = run_program(kLmProgram, {"train", "--run", plain, "--resume", "--steps", "4", "--reference"});
  CHECK_MESSAGE(older.exit_code == 0, older.errors);
  if (!qkv::bf16_matmul_available()) {  // refused by its option, and nothing written
    CHECK(train(run, text, "3", {"--matmul", "medium"}).errors.starts_with("lm: --matmul medium: "));
    CHECK_FALSE(fs::exists(dir / "run"));
    return;
  }
  CHECK(train(run, text, "3", {"--matmul", "medium", "--reference"}).errors ==
        "lm: --matmul medium: the reference mode (--reference or QKV_REFERENCE=1) computes every product in float32; "
        "drop one of the two\n");
  CHECK_FALSE(fs::exists(dir / "run"));
  REQUIRE(train(run, text, "3", {"--matmul", "medium"}).exit_code == 0);
  CHECK(read(dir / "run" / "config.json").find("\"matmul\":\"medium\"") != std::string::npos);
  const std::string refused =
      "lm: the run was trained with --matmul medium (its config.json), and the reference mode (--reference or "
      "QKV_REFERENCE=1) computes every product in float32; drop one of the two\n";
  const std::string metrics = read(dir / "run" / "metrics.csv");
  CHECK(run_program(kLmProgram, {"train", "--run", run, "--resume", "--steps", "6", "--reference"}).errors == refused);
  CHECK(read(dir / "run" / "metrics.csv") == metrics);
  CHECK(run_program(kLmProgram, {"eval", "--run", run, "--reference"}).errors == refused);
  CHECK(run_program(kLmProgram, {"train", "--run", run, "--resume", "--steps", "6"}).exit_code == 0);
  const auto bench = run_program(kLmProgram, {"bench", "--matmul", "medium", "--what", "step", "--bench-steps", "1",
                                              "--warmup-steps", "0", "--context", "16", "--d-model", "16", "--heads",
                                              "2", "--layers", "1", "--ffn-hidden", "32"});
  REQUIRE_MESSAGE(bench.exit_code == 0, bench.errors);
  CHECK(bench.output.find(" of_peak=") != std::string::npos);
  CHECK(bench.output.find(" matmul=medium recompute=false\n") != std::string::npos);
}

TEST_CASE("lm bench times recomputed steps, says so, and reads every option before any work") {
  const std::vector<std::string> tiny = {"--context", "16", "--d-model", "16", "--heads", "2", "--layers", "2",
                                         "--ffn-hidden", "32", "--bench-steps", "1", "--warmup-steps", "0"};
  std::vector<std::string> step = {"bench", "--what", "step", "--recompute"};
  step.insert(step.end(), tiny.begin(), tiny.end());
  const auto r = run_program(kLmProgram, step);
  REQUIRE_MESSAGE(r.exit_code == 0, r.errors);
  CHECK(r.output.find(" recompute=true\n") != std::string::npos);
  std::vector<std::string> sample = {"bench", "--what", "sample", "--recompute", "--tokens", "2"};
  sample.insert(sample.end(), tiny.begin(), tiny.end());
  const auto s = run_program(kLmProgram, sample);
  CHECK(s.exit_code == 1);
  CHECK(s.errors == "lm: --recompute acts on training steps; --what sample times sampling alone\n");
  std::vector<std::string> both = {"bench", "--what", "both", "--tokens", "-1"};
  both.insert(both.end(), tiny.begin(), tiny.end());
  const auto b = run_program(kLmProgram, both);
  CHECK(b.exit_code == 1);
  CHECK(b.output.empty());  // refused before the steps were timed
  CHECK(b.errors.find("--tokens") != std::string::npos);
}

namespace {

// extrapolation.json's test bits of each scheme, in its order: a value per factor, −1 where refused.
std::vector<std::vector<double>> extrapolation_bits(const fs::path& out) {
  const qkv::io::Json json = qkv::io::parse_json(read(out / "extrapolation.json"));
  std::vector<std::vector<double>> bits;
  for (const qkv::io::Json& scheme : json.find("schemes")->as_array()) {
    bits.emplace_back();
    for (const qkv::io::Json& b : scheme.find("test_bits_per_char")->as_array())
      bits.back().push_back(b.is_null() ? -1.0 : b.as_double());
  }
  return bits;
}

}  // namespace

TEST_CASE("lm extrapolate reads each scheme's model at longer windows, the same in both modes; a learned table refuses") {
  qkv::testing::ScratchDir dir;
  write(dir / "text.txt", small_text());
  std::vector<std::string> argv = {"extrapolate", "--text", (dir / "text.txt").string(), "--schemes",
                                   "learned,alibi,random-fourier", "--factors", "1,2,4", "--steps", "20",
                                   "--matmul", "highest"};
  argv.insert(argv.end(), kTiny.begin(), kTiny.end() - 1);  // all but --no-figures: extrapolate draws one figure
  const auto run = [&](const fs::path& out, std::vector<std::string> extra) {
    std::vector<std::string> a = argv;
    a.insert(a.end(), {"--out", out.string()});
    a.insert(a.end(), extra.begin(), extra.end());
    return run_program(kLmProgram, a);
  };
  const auto fast = run(dir / "fast", {});
  REQUIRE_MESSAGE(fast.exit_code == 0, fast.errors);
  const std::string table = read(dir / "fast" / "extrapolation.md");
  CHECK(table.starts_with("| positions | 16 (L) | 32 | 64 | parameters | training seconds |\n"));
  CHECK(table.find("| learned | ") != std::string::npos);
  CHECK(table.find(" | refused | refused | ") != std::string::npos);
  CHECK(table.find("learned refuses a longer window: a context of 32 needs encoder.positions.encoding.weight of "
                   "shape (32,16); the model's is (16,16)") != std::string::npos);
  CHECK(fast.output.find(table) != std::string::npos);
  CHECK(fs::file_size(dir / "fast" / "extrapolation.png") > 1000);
  // The first scheme's run computed the baselines; each run is one lm eval reads.
  CHECK(fs::exists(dir / "fast" / "learned" / "baselines.json"));
  CHECK_FALSE(fs::exists(dir / "fast" / "alibi" / "baselines.json"));
  const auto e = run_program(kLmProgram, {"eval", "--run", (dir / "fast" / "alibi").string()});
  CHECK_MESSAGE(e.exit_code == 0, e.errors);

  const std::vector<std::vector<double>> bits = extrapolation_bits(dir / "fast");
  REQUIRE(bits.size() == 3);
  CHECK(bits[0][0] > 0);
  CHECK(bits[0][1] == -1.0);
  CHECK(bits[0][2] == -1.0);
  for (size_t s = 1; s < 3; ++s)
    for (const double b : bits[s]) CHECK((b > 0 && b < 8));
  // The plain ops give the same numbers.
  const auto plain = run(dir / "plain", {"--reference"});
  REQUIRE_MESSAGE(plain.exit_code == 0, plain.errors);
  const std::vector<std::vector<double>> plain_bits = extrapolation_bits(dir / "plain");
  REQUIRE(plain_bits.size() == 3);
  for (size_t s = 0; s < 3; ++s)
    for (size_t f = 0; f < 3; ++f) CHECK(plain_bits[s][f] == doctest::Approx(bits[s][f]).epsilon(1e-3));

  // Bad input is refused in one line, before anything is written over.
  const auto again = run(dir / "fast", {});
  CHECK(again.exit_code == 1);
  CHECK(again.errors.find("extrapolation.md") != std::string::npos);
  CHECK(read(dir / "fast" / "extrapolation.md") == table);
  const auto factors = run_program(kLmProgram, {"extrapolate", "--out", (dir / "c").string(), "--factors", "2,1"});
  CHECK(factors.errors.find("--factors: expected increasing multiples of the context") != std::string::npos);
  const auto scheme = run_program(kLmProgram, {"extrapolate", "--out", (dir / "c").string(), "--schemes", "alibi,polar"});
  CHECK(scheme.errors.find("--schemes: 'polar' is not a position scheme") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "c"));

  // Only the listed schemes are checked (rotary, lm train's default, would need an even head width),
  // and one refused at every window still has its row.
  const auto refused = run_program(
      kLmProgram, {"extrapolate", "--text", (dir / "text.txt").string(), "--out", (dir / "r").string(), "--schemes",
                   "learned", "--factors", "2", "--steps", "10", "--eval-every", "10", "--warmup", "2", "--context",
                   "16", "--d-model", "18", "--heads", "2", "--layers", "1", "--ffn-hidden", "32", "--batch", "4"});
  REQUIRE_MESSAGE(refused.exit_code == 0, refused.errors);
  CHECK(read(dir / "r" / "extrapolation.md").find("| learned | refused | ") != std::string::npos);
}
