// The seq2seq program as a user runs it: options out of range and an output directory it cannot
// write are refused before it generates data or trains. Each case runs the built program
// (tests/child_process.h).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "child_process.h"
#include "io/scratch_dir.h"

using qkv::testing::kSeq2SeqProgram;
using qkv::testing::run_program;

TEST_CASE("seq2seq train refuses sizes and rates out of range before it trains naming the option") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--hidden", "1000000000"}, "option --hidden expects an integer from 1 to 4096, got 1000000000"},
      {{"--layers", "100000000"}, "option --layers expects an integer from 1 to 16, got 100000000"},
      {{"--lr", "inf"}, "option --lr expects a number from 1e-12 to 1000, got inf"},
      {{"--dropout", "nan"}, "option --dropout expects a number from 0 to 0.99, got nan"},
      {{"--train-size", "0"}, "option --train-size expects an integer from 1 to 1000000, got 0"},
      {{"--out", "/dev/null"}, "option --out: cannot write into '/dev/null': Not a directory"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> argv = {"train", "--epochs", "1", "--train-size", "8"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = run_program(kSeq2SeqProgram, argv);
    CHECK(r.exit_code == 1);
    CHECK(r.errors == "seq2seq train: " + message + "\n");  // nothing else: no data, no epoch
  }
}

TEST_CASE("seq2seq train refuses an --out directory where a file it writes is a directory before it trains") {
  qkv::testing::ScratchDir dir;
  std::filesystem::create_directories(dir / "out" / "attention_1.png");
  const auto r = run_program(kSeq2SeqProgram, {"train", "--epochs", "1", "--train-size", "8", "--heatmaps",
                                               "2", "--out", (dir / "out").string()});
  CHECK(r.exit_code == 1);
  CHECK(r.errors == "seq2seq train: option --out: " + (dir / "out" / "attention_1.png").string() +
                        " is not a file, and training writes one there\n");
  CHECK(r.output.empty());  // no data generated, no epoch
}
