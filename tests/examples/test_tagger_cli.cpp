// The tagger program as a user runs it: what it refuses before it trains. Each case runs the built
// program (tests/child_process.h) and checks the exit code, the message and that no run directory
// was made.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "child_process.h"
#include "io/scratch_dir.h"

namespace fs = std::filesystem;
using qkv::testing::kTagger;
using qkv::testing::run_program;

namespace {

// A sentence of `n` words "w0 w1 ...".
std::string words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " w" : "w") + std::to_string(i);
  return s;
}

}  // namespace

TEST_CASE("tagger train refuses an example sentence its figures cannot show before it trains") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string();
  for (const std::string& example : {std::string(), std::string("   "), words(1025)}) {
    const auto r = run_program(kTagger, {"train", "--run", run, "--epochs", "1", "--example", example});
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("--example") != std::string::npos);
    CHECK(r.output.find("epoch") == std::string::npos);  // no training step ran
    CHECK_FALSE(fs::exists(run));
  }
}

TEST_CASE("tagger train refuses thousands of tags when it is to draw their confusion matrix") {
  qkv::testing::ScratchDir dir;
  std::string conllu;
  for (int s = 0; s < 300; ++s) {
    for (int i = 0; i < 10; ++i) {
      conllu += std::to_string(i + 1) + "\tw" + std::to_string(i) + "\t_\tT" + std::to_string(s * 10 + i) +
                "\t_\t_\t_\t_\t_\t_\n";
    }
    conllu += "\n";
  }
  const std::string file = (dir / "tags.conllu").string();
  qkv::testing::write_file(file, conllu);
  const std::string run = (dir / "run").string();
  const auto r =
      run_program(kTagger, {"train", "--run", run, "--train", file, "--dev", file, "--test", file});
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("confusion matrix of 3000 tags") != std::string::npos);
  CHECK(r.output.find("--no-figures") != std::string::npos);
  CHECK_FALSE(fs::exists(run));
}

TEST_CASE("tagger train names the option and the range of a value out of range once") {
  const auto r = run_program(kTagger, {"train", "--run", "/nonexistent/run", "--epochs", "0"});
  CHECK(r.exit_code == 1);
  CHECK(r.output == "tagger config: epochs (--epochs) is 0; expected 1 to 100000\n");
  const auto lr = run_program(kTagger, {"train", "--run", "/nonexistent/run", "--lr", "nan"});
  CHECK(lr.output == "tagger config: lr (--lr) is nan; expected a finite number above 0\n");
  const auto heads =
      run_program(kTagger, {"train", "--run", "/nonexistent/run", "--d-model", "30", "--heads", "4"});
  CHECK(heads.output == "tagger config: d_model 30 is not divisible by heads (--heads) 4\n");
}
