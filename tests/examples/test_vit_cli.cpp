// The vit program as a user runs it, on generated images (--data generated): it trains with figures
// in both modes, evaluates, predicts, ablates; bad input is refused in one line naming the option or
// file, and nothing of an existing run is lost.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "child_process.h"
#include "data/idx.h"
#include "io/scratch_dir.h"
#include "io/file.h"
#include "tensor/precision.h"

using qkv::testing::kVitProgram;
using qkv::testing::run_program;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kTiny = {"--data", "generated", "--generated", "400", "--d-model", "16",
                                        "--heads", "2", "--layers", "1", "--ffn-hidden", "32", "--epochs", "2",
                                        "--batch", "50", "--warmup", "4"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// kTiny with the options of `changes` (pairs of option and value) set to their values.
std::vector<std::string> tiny_with(const std::vector<std::string>& changes) {
  std::vector<std::string> a = kTiny;
  for (size_t i = 0; i + 1 < changes.size(); i += 2) {
    const auto at = std::find(a.begin(), a.end(), changes[i]);
    if (at == a.end()) a.insert(a.end(), {changes[i], changes[i + 1]});
    else *(at + 1) = changes[i + 1];
  }
  return a;
}

// The last line of a program's errors: the one-line message.
std::string last_line(const std::string& text) {
  const std::string trimmed = text.substr(0, text.find_last_not_of('\n') + 1);
  return trimmed.substr(trimmed.find_last_of('\n') + 1);
}

}  // namespace

TEST_CASE("vit trains on generated images with its figures in both modes, then evaluates and predicts") {
  qkv::testing::ScratchDir dir;
  for (const std::string mode : {"fast", "reference"}) {
    const std::string run = (dir / mode).string();
    std::vector<std::string> argv = with({"train", "--run", run}, kTiny);
    if (mode == "reference") argv.push_back("--reference");
    const auto r = run_program(kVitProgram, argv);
    REQUIRE_MESSAGE(r.exit_code == 0, r.errors);
    CHECK(r.output.find("test accuracy (best validation checkpoint)") != std::string::npos);
    CHECK(r.output.find("(each image with its mirror image; ") != std::string::npos);
    CHECK(qkv::io::read_text_file(fs::path(run) / "results.json", "test").find("\"test_accuracy_one_view\":") !=
          std::string::npos);
    for (const char* f : {"curves.png", "confusion.png", "mistakes.png", "rollout.png", "positions.png"})
      CHECK_MESSAGE(fs::exists(fs::path(run) / "figures" / f), f);
    CHECK(fs::exists(fs::path(run) / "results.json"));
  }
  fs::remove_all(dir / "fast" / "figures");
  const auto figures = run_program(kVitProgram, {"figures", "--run", (dir / "fast").string()});
  REQUIRE_MESSAGE(figures.exit_code == 0, figures.errors);
  CHECK(fs::exists(dir / "fast" / "figures" / "rollout.png"));
  const auto eval = run_program(kVitProgram, {"eval", "--run", (dir / "fast").string()});
  REQUIRE_MESSAGE(eval.exit_code == 0, eval.errors);
  CHECK(eval.output.find("h-bar top") != std::string::npos);
  CHECK(eval.output.find("logistic regression") != std::string::npos);
  // By default each test image is classified with its mirror image; --no-test-flip trains a run that
  // classifies it alone, and eval --test-flip shows that run both.
  CHECK(eval.output.find("images, each with its mirror image): ") != std::string::npos);
  const std::string alone = (dir / "alone").string();
  const auto trained = run_program(kVitProgram, with({"train", "--run", alone, "--no-figures", "--no-baselines", "--no-test-flip"}, kTiny));
  REQUIRE_MESSAGE(trained.exit_code == 0, trained.errors);
  CHECK(trained.output.find("from the image alone") == std::string::npos);
  CHECK(run_program(kVitProgram, {"eval", "--run", alone}).output.find("mirror image") == std::string::npos);
  const auto flipped = run_program(kVitProgram, {"eval", "--run", alone, "--test-flip"});
  REQUIRE_MESSAGE(flipped.exit_code == 0, flipped.errors);
  CHECK(flipped.output.find("images, each with its mirror image): ") != std::string::npos);
  qkv::data::write_idx(dir / "three", {3, 16, 16}, std::vector<std::uint8_t>(3 * 256, 0));
  const auto predict = run_program(kVitProgram, {"predict", "--run", (dir / "fast").string(), "--images", (dir / "three").string()});
  REQUIRE_MESSAGE(predict.exit_code == 0, predict.errors);
  // One line per image: its index and one of the generated classes.
  CHECK(std::count(predict.output.begin(), predict.output.end(), '\n') == 3);
  for (const std::string line : {"0\t", "\n1\t", "\n2\t"}) CHECK(predict.output.find(line) != std::string::npos);
  CHECK((predict.output.find(" top\n") != std::string::npos || predict.output.find(" bottom\n") != std::string::npos));
  qkv::data::write_idx(dir / "big", {1, 28, 28}, std::vector<std::uint8_t>(784, 0));
  const auto wrong = run_program(kVitProgram, {"predict", "--run", (dir / "fast").string(), "--images", (dir / "big").string()});
  CHECK(wrong.exit_code == 1);
  CHECK(last_line(wrong.errors).find("holds images of shape (1,28,28); the run was trained on (N, 16, 16)") != std::string::npos);
}

TEST_CASE("vit refuses bad options and bad data in one line, and leaves an existing run as it was") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string();
  REQUIRE(run_program(kVitProgram, with({"train", "--run", run, "--no-figures"}, kTiny)).exit_code == 0);
  const std::string before = qkv::testing::read_file(fs::path(run) / "last.safetensors");
  const auto again = run_program(kVitProgram, with({"train", "--run", run}, kTiny));
  CHECK(again.exit_code == 1);
  CHECK(last_line(again.errors).find("holds a vit run") != std::string::npos);
  const auto change = run_program(kVitProgram, {"train", "--run", run, "--resume", "--patch", "8"});
  CHECK(change.exit_code == 1);
  CHECK(last_line(change.errors).find("--patch cannot change it") != std::string::npos);
  const auto done = run_program(kVitProgram, {"train", "--run", run, "--resume"});
  CHECK(done.exit_code == 1);
  CHECK(last_line(done.errors).find("the run is complete (2 epochs)") != std::string::npos);
  CHECK(qkv::testing::read_file(fs::path(run) / "last.safetensors") == before);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--patch", "3"}, "patch (--patch) 3 does not tile images of 16×16"},
      {{"--positions", "polar"}, "positions (--positions) is 'polar'; expected one of sin2d"},
      {{"--heads", "3"}, "d_model (--d-model) 16 is not a multiple of heads (--heads) 3"},
      {{"--warmup", "100"}, "warmup (--warmup) 100 steps; expected fewer than the 16 steps of 2 epochs"},
      {{"--pool", "max"}, "pool (--pool) is 'max'; expected one of cls, mean"},
      {{"--lr", "0"}, "lr (--lr) is 0"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_program(kVitProgram, with({"train", "--run", (dir / "new").string()}, tiny_with(args)));
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(last_line(r.errors).find(message) != std::string::npos, last_line(r.errors));
    CHECK_FALSE(fs::exists(dir / "new"));
  }
  fs::create_directories(dir / "idx");
  qkv::data::write_idx(dir / "idx" / "train-images-idx3-ubyte", {10, 8, 8}, std::vector<std::uint8_t>(640, 1));
  const auto missing = run_program(kVitProgram, {"train", "--run", (dir / "other").string(), "--data", (dir / "idx").string()});
  CHECK(missing.exit_code == 1);
  CHECK(last_line(missing.errors).find("train-labels-idx1-ubyte") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "other"));
}

TEST_CASE("vit ablate trains one run per scheme and writes the table") {
  qkv::testing::ScratchDir dir;
  const std::string out = (dir / "ablation").string();
  const auto r = run_program(kVitProgram, with({"ablate", "--out", out, "--schemes", "sin2d,none"}, kTiny));
  REQUIRE_MESSAGE(r.exit_code == 0, r.errors);
  const std::string table = qkv::testing::read_file(fs::path(out) / "ablation.md");
  CHECK(table.find("| sin2d |") != std::string::npos);
  CHECK(table.find("| none |") != std::string::npos);
  CHECK(fs::exists(fs::path(out) / "positions-sin2d.png"));
  CHECK_FALSE(fs::exists(fs::path(out) / "positions-none.png"));
  // Then each model at other sizes: kTiny's 16×16 images, 2× upsampled and padded by two patches.
  const std::string resolution = qkv::testing::read_file(fs::path(out) / "resolution.md");
  CHECK(resolution.starts_with("| positions | 16×16, as trained | 32×32, 2× upsampled | 24×24, padded, item at (8, 8) |"));
  CHECK(resolution.find("| sin2d | ") != std::string::npos);
  CHECK(r.output.find("test accuracy at other sizes:") != std::string::npos);
  CHECK(fs::file_size(fs::path(out) / "resolution.png") > 1000);
  const auto twice = run_program(kVitProgram, with({"ablate", "--out", (dir / "b").string(), "--schemes", "sin2d,sin2d"}, kTiny));
  CHECK(last_line(twice.errors).find("option --schemes lists 'sin2d' twice") != std::string::npos);
  const auto again = run_program(kVitProgram, with({"ablate", "--out", out, "--schemes", "learned1d"}, kTiny));
  CHECK(again.exit_code == 1);
  CHECK(last_line(again.errors).find("ablation.md exists") != std::string::npos);
  CHECK(qkv::testing::read_file(fs::path(out) / "ablation.md") == table);
}

TEST_CASE("vit refuses what a command would not read, empty paths, too few images and a damaged best checkpoint") {
  qkv::testing::ScratchDir dir;
  // Options a command would ignore are not its options.
  const auto positions = run_program(kVitProgram, with({"ablate", "--out", (dir / "a").string(), "--positions", "none"}, kTiny));
  CHECK(positions.exit_code == 1);
  CHECK(positions.errors.find("unknown option --positions") != std::string::npos);
  const auto data = run_program(kVitProgram, {"bench", "--data", (dir / "idx").string(), "--bench-steps", "1"});
  CHECK(data.exit_code == 1);
  CHECK(data.errors.find("unknown option --data") != std::string::npos);
  // Empty paths name their option.
  for (const std::string option : {"--data=", "--cache="}) {
    const auto r = run_program(kVitProgram, {"train", "--run", (dir / "new").string(), option});
    CHECK(r.exit_code == 1);
    CHECK(r.errors == "vit: " + option.substr(0, option.size() - 1) + " is empty; expected " +
                          (option == "--data=" ? "fashion-mnist, generated or a directory" : "a directory") + "\n");
  }
  // One training image: none left to hold out.
  fs::create_directories(dir / "one");
  qkv::data::write_idx(dir / "one" / "train-images-idx3-ubyte", {1, 8, 8}, std::vector<std::uint8_t>(64, 1));
  qkv::data::write_idx(dir / "one" / "train-labels-idx1-ubyte", {1}, std::vector<std::uint8_t>(1, 0));
  qkv::data::write_idx(dir / "one" / "t10k-images-idx3-ubyte", {2, 8, 8}, std::vector<std::uint8_t>(128, 1));
  qkv::data::write_idx(dir / "one" / "t10k-labels-idx1-ubyte", {2}, std::vector<std::uint8_t>(2, 0));
  const auto one = run_program(kVitProgram, {"train", "--run", (dir / "new").string(), "--data",
                                             (dir / "one").string(), "--validation", "1", "--patch", "4"});
  CHECK(one.exit_code == 1);
  CHECK(last_line(one.errors).find("holds 1 training image(s); it needs at least 2") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "new"));
  // A damaged .gz in the cache: the advice names it, and following it does not meet the same error.
  fs::create_directories(dir / "cache");
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                           "t10k-labels-idx1-ubyte"})
    qkv::testing::write_file(dir / "cache" / (std::string(name) + ".gz"), "not gzip");
  const auto gz = run_program(kVitProgram, {"train", "--run", (dir / "new").string(), "--cache", (dir / "cache").string()});
  CHECK(gz.exit_code == 1);
  CHECK(last_line(gz.errors).find("(gzip -dc failed): remove " + (dir / "cache").string() + "/") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "new"));
  // A damaged best checkpoint is found before the resumed epochs are trained, not after them.
  const std::string run = (dir / "run").string();
  REQUIRE(run_program(kVitProgram, with({"train", "--run", run, "--no-figures"}, kTiny)).exit_code == 0);
  const std::string metrics = qkv::testing::read_file(fs::path(run) / "metrics.csv");
  const std::string best = qkv::testing::read_file(fs::path(run) / "best.safetensors");
  qkv::testing::write_file(fs::path(run) / "best.safetensors", best.substr(0, best.size() - 100));
  const auto resumed = run_program(kVitProgram, {"train", "--run", run, "--resume", "--epochs", "3", "--no-figures"});
  CHECK(resumed.exit_code == 1);
  CHECK(last_line(resumed.errors).find((fs::path(run) / "best.safetensors").string()) != std::string::npos);
  CHECK(resumed.output.find("epoch 3") == std::string::npos);
  CHECK(qkv::testing::read_file(fs::path(run) / "metrics.csv") == metrics);
}

TEST_CASE("vit --matmul medium is part of the run: kept in config.json and refused by name where it cannot run") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string();
  const auto low = run_program(kVitProgram, with({"train", "--run", run, "--no-figures", "--no-baselines"}, tiny_with({"--matmul", "low"})));
  CHECK(last_line(low.errors) == "vit: matmul (--matmul) is 'low'; expected one of auto, highest, medium");
  CHECK_FALSE(std::filesystem::exists(dir / "run"));
  // The default, auto, is resolved before the run begins: config.json says what the products were.
  for (const bool reference : {false, true}) {
    const std::string auto_run = (dir / (reference ? "auto-reference" : "auto")).string();
    std::vector<std::string> argv = with({"train", "--run", auto_run, "--no-figures", "--no-baselines"}, tiny_with({"--epochs", "1"}));
    if (reference) argv.push_back("--reference");
    const auto r = run_program(kVitProgram, argv);
    REQUIRE_MESSAGE(r.exit_code == 0, r.errors);
    const std::string resolved = qkv::bf16_matmul_available() && !reference ? "medium" : "highest";
    CHECK(qkv::io::read_text_file(fs::path(auto_run) / "config.json", "test").find("\"matmul\":\"" + resolved + "\"") !=
          std::string::npos);
  }
  const auto medium = [&](std::vector<std::string> more) {
    return run_program(kVitProgram, with(with({"train", "--run", run, "--no-figures", "--no-baselines"},
                                              tiny_with({"--matmul", "medium", "--epochs", "1"})),
                                         more));
  };
  if (!qkv::bf16_matmul_available()) {
    CHECK(last_line(medium({}).errors).starts_with("vit: --matmul medium: "));
    CHECK_FALSE(std::filesystem::exists(dir / "run"));
    return;
  }
  CHECK(last_line(medium({"--reference"}).errors) ==
        "vit: --matmul medium: the reference mode (--reference or QKV_REFERENCE=1) computes every product in float32; "
        "drop one of the two");
  CHECK_FALSE(std::filesystem::exists(dir / "run"));
  const auto r = medium({});
  REQUIRE_MESSAGE(r.exit_code == 0, r.errors);
  CHECK(qkv::io::read_text_file(dir / "run" / "config.json", "test").find("\"matmul\":\"medium\"") != std::string::npos);
  CHECK(last_line(run_program(kVitProgram, {"eval", "--run", run, "--reference"}).errors) ==
        "vit: the run was trained with --matmul medium (its config.json), and the reference mode (--reference or "
        "QKV_REFERENCE=1) computes every product in float32; drop one of the two");
  const auto bench = run_program(kVitProgram, {"bench", "--matmul", "medium", "--bench-steps", "1", "--warmup-steps", "0",
                                               "--d-model", "16", "--heads", "2", "--layers", "1", "--ffn-hidden", "32",
                                               "--batch", "8"});
  REQUIRE_MESSAGE(bench.exit_code == 0, bench.errors);
  CHECK(bench.output.find(" matmul=medium recompute=false\n") != std::string::npos);
}
