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

namespace {

// A model of one epoch on 8 dates, in a fraction of a second, in `out`; whether it trained.
bool train_tiny(const std::string& out) {
  return run_program(kSeq2SeqProgram, {"train", "--epochs", "1", "--train-size", "8", "--dev-size", "1",
                                       "--test-size", "1", "--heatmaps", "0", "--hidden", "8", "--embed", "8",
                                       "--layers", "1", "--run", out})
             .exit_code == 0;
}

}  // namespace

TEST_CASE("seq2seq train refuses sizes and rates out of range before it trains naming the option") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--hidden", "1000000000"}, "seq2seq: hidden (--hidden) is 1000000000; expected 1 .. 4096"},
      {{"--layers", "100000000"}, "seq2seq: layers (--layers) is 100000000; expected 1 .. 16"},
      {{"--lr", "inf"}, "seq2seq: lr (--lr) is inf; expected a number in [1e-12, 1000]"},
      {{"--dropout", "nan"}, "seq2seq: dropout (--dropout) is nan; expected a number in [0, 0.99]"},
      {{"--train-size", "0"}, "seq2seq: train_size (--train-size) is 0; expected 1 .. 1000000"},
      {{"--run", "/dev/null"}, "seq2seq train: /dev/null (--run) is not a directory"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> argv = {"train", "--epochs", "1"};
    if (args[0] != "--train-size") argv.insert(argv.end(), {"--train-size", "8"});  // an option is given once
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = run_program(kSeq2SeqProgram, argv);
    CHECK(r.exit_code == 1);
    CHECK(r.errors == message + "\n");  // nothing else: no data, no epoch
  }
}

TEST_CASE("seq2seq train refuses a run directory where a figure it draws is a directory before it trains") {
  qkv::testing::ScratchDir dir;
  const std::string out = (dir / "out").string();
  REQUIRE(train_tiny(out));
  std::filesystem::create_directories(dir / "out" / "figures" / "attention_1.png");
  const auto r = run_program(kSeq2SeqProgram, {"train", "--epochs", "1", "--train-size", "8", "--heatmaps",
                                               "2", "--out", out});
  CHECK(r.exit_code == 1);
  CHECK(r.errors == "seq2seq train: " + (dir / "out" / "figures" / "attention_1.png").string() +
                        " is not a file, and the run draws its figures there: move it away\n");
  CHECK(r.output.find("epoch") == std::string::npos);  // no epoch trained
}

TEST_CASE("seq2seq predict bounds a line of stdin and says when no text is given") {
  qkv::testing::ScratchDir dir;
  const std::string out = (dir / "out").string();
  REQUIRE(train_tiny(out));
  const std::string checkpoint = out + "/best.safetensors";
  // /dev/zero is one endless line: before the bound, predict read it until memory ran out. 2 MB of
  // it make the same point and end whatever the program does.
  const auto endless = run_program(
      "/bin/sh",
      {"-c", "head -c 2000000 /dev/zero | \"$0\" predict --checkpoint \"$1\"", kSeq2SeqProgram, checkpoint});
  CHECK(endless.exit_code == 1);
  CHECK(endless.errors == "seq2seq: stdin: line 1 is longer than 1048576 bytes\n");
  const auto empty =
      run_program(kSeq2SeqProgram, {"predict", "--checkpoint", checkpoint});  // stdin: /dev/null
  CHECK(empty.exit_code == 1);
  CHECK(empty.errors == "seq2seq: no text given (arguments or stdin)\n");
  const auto heatmap =
      run_program(kSeq2SeqProgram, {"predict", "--checkpoint", checkpoint, "--heatmap", "", "may 1, 2000"});
  CHECK(heatmap.exit_code == 1);
  CHECK(heatmap.errors == "seq2seq: option --heatmap is empty; expected a .png file\n");
}

TEST_CASE("seq2seq refuses stray words and counts it cannot finish, naming the option") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"train", "--epochs", "1", "extra"}, "seq2seq: unexpected argument 'extra'\n"},
      {{"data", "extra"}, "seq2seq: unexpected argument 'extra'\n"},
      {{"bench", "extra"}, "seq2seq: unexpected argument 'extra'\n"},
      {{"data", "--count", "1000001"},
       "seq2seq: option --count expects an integer from 1 to 1000000, got 1000001\n"},
      {{"data", "--seed", "-1"},
       "seq2seq: option --seed expects an integer from 0 to 9223372036854775807, got -1\n"},
      {{"bench", "--warmup", "10001"},
       "seq2seq: option --warmup expects an integer from 0 to 10000, got 10001\n"},
      {{"bench", "--steps", "0"},
       "seq2seq: option --steps expects an integer from 1 to 100000, got 0\n"},
      {{"data", "--count", "1", "--count", "2"}, "seq2seq: option --count is given twice\n"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_program(kSeq2SeqProgram, args);
    CAPTURE(args[1]);
    CHECK(r.exit_code == 1);
    CHECK(r.errors.starts_with(message));
    CHECK(r.output.empty());  // nothing generated, nothing timed
  }
}

TEST_CASE("seq2seq predict answers each line of stdin as it comes, a blank line with a blank line") {
  qkv::testing::ScratchDir dir;
  const std::string out = (dir / "out").string();
  REQUIRE(train_tiny(out));
  // Before, predict read all of stdin before it translated a line, so an endless stdin grew until
  // the OOM killer came. Now the answer to a line comes while stdin is still open.
  qkv::testing::InteractiveProgram p(kSeq2SeqProgram, {"predict", "--run", out});
  p.write("may 1, 2000\n");
  const std::string first = p.read_line(60);
  CHECK_MESSAGE(first.starts_with("may 1, 2000 => "), first);
  p.write("\n");
  CHECK(p.read_line(60) == "");
  p.write("june 2, 1999\n");
  CHECK(p.read_line(60).starts_with("june 2, 1999 => "));
  const auto r = p.finish();
  CHECK(r.exit_code == 0);
  CHECK(r.output.empty());
}
