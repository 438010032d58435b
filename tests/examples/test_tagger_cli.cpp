// The tagger program as a user runs it: what it refuses before it trains. Each case runs the built
// program (tests/child_process.h) and checks the exit code, the message and that no run directory
// was made.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "child_process.h"
#include "io/scratch_dir.h"

namespace fs = std::filesystem;
using qkv::testing::kTaggerProgram;
using qkv::testing::run_program;

namespace {

// A sentence of `n` words "w0 w1 ...".
std::string words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " w" : "w") + std::to_string(i);
  return s;
}

// A finished run of one epoch on 40 built-in sentences, in well under a second.
const std::vector<std::string> kTinyRun = {"--sentences", "40", "--epochs",    "1",  "--d-model", "16",
                                           "--heads",     "2",  "--ffn-width", "16", "--layers",  "1",
                                           "--threads",   "1",  "--no-figures"};

// `tagger train --run RUN` with kTinyRun's options, those in `extra` taking their place.
std::vector<std::string> train_args(const std::string& run, std::vector<std::string> extra) {
  std::vector<std::string> argv = {"train", "--run", run};
  for (size_t i = 0; i < kTinyRun.size(); ++i) {
    const bool is_option = kTinyRun[i].starts_with("--");
    const bool has_value = is_option && i + 1 < kTinyRun.size() && !kTinyRun[i + 1].starts_with("--");
    if (std::find(extra.begin(), extra.end(), kTinyRun[i]) == extra.end()) {
      argv.push_back(kTinyRun[i]);
      if (has_value) argv.push_back(kTinyRun[i + 1]);
    }
    if (has_value) ++i;
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// Every file of a run directory and its bytes.
std::map<std::string, std::string> files_of(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[e.path().string()] = qkv::testing::read_file(e.path());
  return files;
}

}  // namespace

TEST_CASE("tagger train leaves a finished run byte for byte when it refuses its arguments") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string();
  REQUIRE(run_program(kTaggerProgram, train_args(run, {})).exit_code == 0);
  const auto before = files_of(run);
  REQUIRE(before.size() == 7);  // config, vocabularies, two checkpoints, metrics, the (empty) lock
  // A data file whose name is not UTF-8 cannot be recorded in config.json.
  const std::string not_utf8 = (dir / "\xff.conllu").string();
  qkv::testing::write_file(not_utf8,
                           "1\tThe\t_\tDET\t_\t_\t_\t_\t_\t_\n2\tdog\t_\tNOUN\t_\t_\t_\t_\t_\t_\n\n");
  const std::vector<std::vector<std::string>> bad = {
      {"--lr", "inf"},
      {"--clip", "inf"},
      {"--weight-decay", "inf"},
      {"--d-model", "1000000000"},
      {"--threads", "100000"},
      {"--threads", "-1"},
      {"--threads", "4294967297"},
      {"--batch-size", "9223372036854775807"},
      {"--epochs", "9223372036854775807"},
      {"--seed", "99999999999999999999"},
      {"--train", not_utf8, "--dev", not_utf8, "--test", not_utf8, "--char-filters", "0"}};
  for (const auto& extra : bad) {
    const auto r = run_program(kTaggerProgram, train_args(run, extra));
    CAPTURE(extra[0]);
    CAPTURE(r.errors);
    CHECK(r.exit_code == 1);
    CHECK(r.errors.find(extra[0]) != std::string::npos);  // the message names the option
    CHECK(files_of(run) == before);
  }
}

TEST_CASE("tagger train refuses an example sentence its figures cannot show before it trains") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string();
  for (const std::string& example : {std::string(), std::string("   "), words(1025)}) {
    const auto r =
        run_program(kTaggerProgram, {"train", "--run", run, "--epochs", "1", "--example", example});
    CHECK(r.exit_code == 1);
    CHECK(r.errors.find("--example") != std::string::npos);
    CHECK((r.output + r.errors).find("epoch") == std::string::npos);  // no training step ran
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
      run_program(kTaggerProgram, {"train", "--run", run, "--train", file, "--dev", file, "--test", file});
  CHECK(r.exit_code == 1);
  CHECK(r.errors.find("confusion matrix of 3000 tags") != std::string::npos);
  CHECK(r.errors.find("--no-figures") != std::string::npos);
  CHECK_FALSE(fs::exists(run));
}

TEST_CASE("tagger train names the option and the range of a value out of range once") {
  const auto r = run_program(kTaggerProgram, {"train", "--run", "/nonexistent/run", "--epochs", "0"});
  CHECK(r.exit_code == 1);
  CHECK(r.errors == "tagger config: epochs (--epochs) is 0; expected 1 to 100000\n");
  const auto lr = run_program(kTaggerProgram, {"train", "--run", "/nonexistent/run", "--lr", "nan"});
  CHECK(lr.errors == "tagger config: lr (--lr) is nan; expected a finite number above 0\n");
  const auto heads =
      run_program(kTaggerProgram, {"train", "--run", "/nonexistent/run", "--d-model", "30", "--heads", "4"});
  CHECK(heads.errors == "tagger config: d_model 30 is not divisible by heads (--heads) 4\n");
}

TEST_CASE("a fresh tagger train keeps the old run until its own first epoch is saved") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string();
  REQUIRE(run_program(kTaggerProgram, train_args(run, {})).exit_code == 0);
  const auto before = files_of(run);
  // Diverges in its first epoch: the old run must still load.
  auto r = run_program(kTaggerProgram, train_args(run, {"--lr", "1e300"}));
  CHECK(r.exit_code == 1);
  CHECK(r.errors.find("training diverged in epoch 1") != std::string::npos);
  CHECK(r.errors.find("is left as it was") != std::string::npos);
  CHECK(files_of(run) == before);
  CHECK(run_program(kTaggerProgram, {"eval", "--run", run}).exit_code == 0);
}

TEST_CASE("tagger train refuses a run directory where a file it writes is a directory before it trains") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string();
  REQUIRE(run_program(kTaggerProgram, train_args(run, {})).exit_code == 0);
  fs::remove(fs::path(run) / "metrics.csv");
  fs::create_directories(fs::path(run) / "metrics.csv" / "notes");
  const auto before = files_of(run);
  for (const std::vector<std::string>& argv :
       {train_args(run, {}), std::vector<std::string>{"train", "--run", run, "--resume", "--epochs", "2"}}) {
    const auto r = run_program(kTaggerProgram, argv);
    CHECK(r.exit_code == 1);
    const std::string command = argv.size() == 6 ? "tagger train --resume: " : "tagger train: ";
    CHECK(r.errors == command + run + "/metrics.csv is not a file, and the run writes one there: move it away\n");
    CHECK(files_of(run) == before);
  }
  for (const std::string& bad : {std::string("/dev/null"), std::string("/proc/qkv-run"), std::string("")}) {
    const auto r = run_program(kTaggerProgram, train_args(bad, {}));
    CHECK(r.exit_code == 1);
    CHECK(r.errors.find("--run") != std::string::npos);
  }
}

TEST_CASE("tagger train refuses a model far larger than the machine's memory before it allocates it") {
  qkv::testing::ScratchDir dir;
  const auto r = run_program(
      kTaggerProgram, train_args((dir / "run").string(), {"--d-model", "8192", "--heads", "2", "--layers",
                                                          "64", "--ffn-width", "65536"}));
  CHECK(r.exit_code == 1);
  CHECK(r.errors.find("tagger: training this model would take about") != std::string::npos);
  CHECK(r.errors.find("lower --d-model, --ffn-width, --layers or --batch-size") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "run" / "config.json"));
}

TEST_CASE("tagger data writes its three files, and never over an earlier call's") {
  qkv::testing::ScratchDir dir;
  const std::string out = (dir / "data").string();
  REQUIRE(run_program(kTaggerProgram, {"data", "--out", out, "--sentences", "20"}).exit_code == 0);
  const auto before = files_of(out);
  const auto r = run_program(kTaggerProgram, {"data", "--out", out, "--sentences", "30", "--seed", "1"});
  CHECK(r.exit_code == 1);
  CHECK(r.errors == "tagger: --out " + out + " holds train.conllu already; choose another directory (nothing was changed)\n");
  CHECK(files_of(out) == before);
  // One file of the three is enough to refuse, even a directory in its place.
  fs::remove(fs::path(out) / "train.conllu");
  fs::remove(fs::path(out) / "dev.conllu");
  fs::remove(fs::path(out) / "test.conllu");
  fs::create_directories(fs::path(out) / "test.conllu");
  const auto again = run_program(kTaggerProgram, {"data", "--out", out, "--sentences", "30"});
  CHECK(again.exit_code == 1);
  CHECK(again.errors.find("holds test.conllu already") != std::string::npos);
}

TEST_CASE("tagger predict refuses a line of stdin over 1 MiB rather than reading it forever") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string();
  REQUIRE(run_program(kTaggerProgram, train_args(run, {})).exit_code == 0);
  // /dev/zero is one endless line: before the bound, predict read it until memory ran out. 2 MB of
  // it make the same point and end whatever the program does.
  const auto r = run_program(
      "/bin/sh", {"-c", "head -c 2000000 /dev/zero | \"$0\" predict --run \"$1\"", kTaggerProgram, run});
  CHECK(r.exit_code == 1);
  CHECK(r.errors == "tagger: stdin: line 1 is longer than 1048576 bytes\n");
}

TEST_CASE("tagger refuses options a command would ignore, naming them") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string();
  REQUIRE(run_program(kTaggerProgram, train_args(run, {})).exit_code == 0);
  const auto before = files_of(run);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"train", "--run", run, "--resume", "--lr", "0.1"},
       "tagger: --resume continues the run with its saved config; --lr cannot change it\n"},
      {{"train", "--run", run, "--resume", "--sentences", "5"},
       "tagger: --resume continues the run with its saved config; --sentences cannot change it\n"},
      {{"train", "--run", run, "--resume", "--train", "x.conllu"},
       "tagger: --resume continues the run with its saved config; --train cannot change it\n"},
      {{"train", "--run", run, "--resume", "--matmul", "medium"},
       "tagger: --resume continues the run with its saved config; --matmul cannot change it\n"},
      {{"train", "--run", run, "--matmul", "low"},
       "tagger config: matmul (--matmul) is 'low'; expected one of highest, medium\n"},
      {{"bench", "--matmul", "MEDIUM"},
       "tagger: option --matmul is 'MEDIUM'; expected one of highest, medium\n"},
      {{"train", "--run", run, "--epochs", "1", "--epochs", "2"}, "tagger: option --epochs is given twice\n"},
      {{"train", "--run", run, "--train", ""}, "tagger: option --train is empty; expected a file\n"},
      {{"train", "--run", run, "--corpus", "brown", "--sentences", "5"},
       "tagger: option --sentences is for the built-in corpus, not --corpus brown or --train files\n"},
      {{"train", "--run", run, "--epochs", "+5"}, "tagger: option --epochs expects an integer, got '+5'\n"},
      {{"train", "--run", run, "--epochs", " 5"}, "tagger: option --epochs expects an integer, got ' 5'\n"},
      {{"train", "--run", run, "--lr", "0x1p-3"},
       "tagger: option --lr expects a number in decimal notation, got '0x1p-3'\n"},
      {{"ablate", "--run", run, "--ablate-positions", ""},
       "tagger: option --ablate-positions has an empty item in ''; expected a,b,...\n"},
      {{"ablate", "--run", run, "--ablate-positions", ",,"},
       "tagger: option --ablate-positions has an empty item in ',,'; expected a,b,...\n"},
      {{"ablate", "--run", run, "--ablate-windows", ""},
       "tagger: option --ablate-windows has an empty item in ''; expected a,b,...\n"},
      {{"ablate", "--run", run, "--ablate-positions", "alibi,alibi"},
       "tagger: option --ablate-positions lists 'alibi' twice\n"},
      {{"bench", "--steps", "0"}, "tagger: option --steps expects an integer from 1 to 100000, got 0\n"},
      {{"bench", "--warmup", "-1"}, "tagger: option --warmup expects an integer from 0 to 10000, got -1\n"},
      // A seed below 0 would train, then be refused by every later read of the run's config.
      {{"train", "--run", run, "--seed", "-1"},
       "tagger: option --seed expects an integer from 0 to 9223372036854775807, got -1\n"},
      {{"data", "--out", (dir / "data").string(), "--seed", "-1"},
       "tagger: option --seed expects an integer from 0 to 9223372036854775807, got -1\n"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_program(kTaggerProgram, args);
    CAPTURE(args[1]);
    CHECK(r.exit_code == 1);
    CHECK(r.errors == message);
    CHECK(files_of(run) == before);
  }
  // Options a subcommand does not use are not in its list, and words where none are taken are refused.
  const auto predict_test = run_program(kTaggerProgram, {"predict", "--run", run, "--test", "x", "a dog"});
  CHECK(predict_test.exit_code == 1);
  CHECK(predict_test.errors.starts_with("tagger: unknown option --test\n"));
  CHECK(run_program(kTaggerProgram, {"predict", "--help"}).output.find("--test") == std::string::npos);
  for (const std::vector<std::string>& args : {std::vector<std::string>{"eval", "--run", run, "junk"},
                                               {"train", "--run", run, "--epochs", "1", "junk"},
                                               {"data", "--out", (dir / "data").string(), "junk"}}) {
    const auto r = run_program(kTaggerProgram, args);
    CHECK(r.exit_code == 1);
    CHECK(r.errors.starts_with("tagger: unexpected argument 'junk'\n"));
  }
  // ablate trains every variant afresh and draws no figures: it takes no option of a single run's.
  for (const char* option : {"--resume", "--profile", "--no-figures"}) {
    const auto r = run_program(kTaggerProgram, {"ablate", "--run", run, option});
    CHECK(r.exit_code == 1);
    CHECK(r.errors.starts_with(std::string("tagger: unknown option ") + option + "\n"));
  }
  const auto example = run_program(kTaggerProgram, {"ablate", "--run", run, "--example", "a dog"});
  CHECK(example.errors.starts_with("tagger: unknown option --example\n"));
  CHECK(files_of(run) == before);
  CHECK_FALSE(fs::exists(dir / "data"));
}

TEST_CASE("tagger train --resume refuses to shorten a run, and a damaged best checkpoint before it trains") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string();
  REQUIRE(run_program(kTaggerProgram, train_args(run, {"--epochs", "2"})).exit_code == 0);
  const auto shorter = run_program(kTaggerProgram, {"train", "--run", run, "--resume", "--epochs", "1"});
  CHECK(shorter.exit_code == 1);
  CHECK(shorter.errors ==
        "tagger train --resume: --epochs 1 is below the run's 2: a run can be extended, not shortened\n");
  const fs::path best = fs::path(run) / "best.safetensors";
  const std::string bytes = qkv::testing::read_file(best);
  qkv::testing::write_file(best, bytes.substr(0, bytes.size() / 2));  // cut short, as a full disk leaves it
  const auto before = files_of(run);
  const auto r = run_program(kTaggerProgram, {"train", "--run", run, "--resume", "--epochs", "3"});
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(r.errors.find(best.string()) != std::string::npos, r.errors);
  CHECK(r.output.find("epoch 3") == std::string::npos);  // refused before the remaining epochs
  CHECK(files_of(run) == before);
}

TEST_CASE("tagger predict answers each line of stdin as it comes, a blank line with a blank line") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string();
  REQUIRE(run_program(kTaggerProgram, train_args(run, {})).exit_code == 0);
  // Before, predict read all of stdin before it tagged a word: `yes 'the dog runs' | tagger predict`
  // grew until the OOM killer came. Now the answer to a line comes while stdin is still open.
  qkv::testing::InteractiveProgram p(kTaggerProgram, {"predict", "--run", run});
  p.write("the dog runs\n");
  const std::string first = p.read_line(60);
  CHECK_MESSAGE(first.starts_with("the/"), first);
  CHECK(std::count(first.begin(), first.end(), '/') == 3);
  p.write("\n");
  CHECK(p.read_line(60) == "");  // a blank line answers a blank line: output line N is input line N
  p.write("the dog\n");
  CHECK(p.read_line(60).starts_with("the/"));
  const auto r = p.finish();
  CHECK(r.exit_code == 0);
  CHECK(r.output.empty());
  CHECK_MESSAGE(r.errors.find(" of 5 words are not in the run's vocabulary") != std::string::npos, r.errors);

  const auto piped = run_program("/bin/sh", {"-c", "printf 'the dog\\n\\n\\nthe cat\\n' | \"$0\" predict --run \"$1\"",
                                             kTaggerProgram, run});
  CHECK(piped.exit_code == 0);
  std::vector<std::string> lines;
  for (size_t start = 0, nl; (nl = piped.output.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(piped.output.substr(start, nl - start));
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].starts_with("the/"));
  CHECK(lines[1].empty());
  CHECK(lines[2].empty());
  CHECK(lines[3].starts_with("the/"));
}

TEST_CASE("tagger predict tags words after -- and says how many words it never saw, and why") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string();
  REQUIRE(run_program(kTaggerProgram, train_args(run, {})).exit_code == 0);
  // A sentence that looks like an option: "-h" printed the help, "--x" was an unknown option.
  const auto r = run_program(kTaggerProgram, {"predict", "--run", run, "--", "-h", "--x the"});
  CHECK(r.exit_code == 0);
  CHECK_MESSAGE(r.output.starts_with("-h/"), r.output);
  CHECK(r.output.find("\n--x/") != std::string::npos);
  // The built-in corpus is lowercase with punctuation spaced apart: "The" and "dog." are not words of it.
  const auto unknown = run_program(kTaggerProgram, {"predict", "--run", run, "The dog."});
  CHECK(unknown.exit_code == 0);
  CHECK(unknown.output.find("The/") != std::string::npos);
  CHECK(unknown.output.find("(unk)") != std::string::npos);
  CHECK(unknown.errors ==
        "tagger predict: 2 of 2 words are not in the run's vocabulary, marked (unk): the built-in corpus is "
        "lowercase, with punctuation spaced apart (\"the dog runs .\")\n");
}

TEST_CASE("tagger takes --run= as an empty value and refuses it, not the next word as a directory") {
  qkv::testing::ScratchDir dir;
  // Before, `--run= --no-figures` trained into a directory called "--no-figures".
  const auto r = run_program("/bin/sh", {"-c", "cd \"$1\" && \"$0\" train --run= --no-figures --sentences 10 --epochs 1",
                                         kTaggerProgram, dir.path().string()});
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(r.errors.find("--run") != std::string::npos, r.errors);
  CHECK(fs::is_empty(dir.path()));
}

TEST_CASE(
    "tagger train refuses an attention mechanism with a scheme or window it does not take and names both") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string(), fresh = (dir / "fresh").string();
  REQUIRE(run_program(kTaggerProgram, train_args(run, {})).exit_code == 0);
  const auto before = files_of(run);
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"--attention", "performer", "--positions", "alibi"}, {"--attention", "--positions"}},
      {{"--attention", "linformer", "--window", "3"}, {"--attention", "--window"}},
      {{"--attention", "linformer", "--attention-features", "2000"}, {"--attention", "--attention-features"}},
      {{"--attention-features", "-1"}, {"--attention-features"}},
      {{"--attention", "softmax"}, {"--attention"}}};
  for (const auto& [extra, options] : cases) {
    for (const std::string& where : {run, fresh}) {
      const auto r = run_program(kTaggerProgram, train_args(where, extra));
      CAPTURE(extra[0] + " " + extra[1]);
      CAPTURE(r.errors);
      CHECK(r.exit_code == 1);
      CHECK(r.errors.find('\n') == r.errors.size() - 1);  // one line
      for (const std::string& option : options) CHECK(r.errors.find(option) != std::string::npos);
      CHECK(r.output.find("epoch") == std::string::npos);  // refused before training
    }
    CHECK(files_of(run) == before);
    CHECK_FALSE(fs::exists(fresh));
  }
  const auto performer =
      run_program(kTaggerProgram, train_args(fresh, {"--attention", "performer", "--positions", "alibi"}));
  CHECK(performer.errors ==
        "tagger config: attention (--attention) 'performer' does not take positions (--positions) 'alibi': "
        "TransformerEncoder: attention Performer does not support position scheme ALiBi (a score bias by "
        "offset); "
        "it takes valid lengths, positions on the input, positions on q and k\n");
  const auto unknown = run_program(kTaggerProgram, train_args(fresh, {"--attention", "softmax"}));
  CHECK(unknown.errors ==
        "tagger config: attention (--attention) is 'softmax'; expected one of dense, linformer, performer, "
        "talking_heads\n");
}

TEST_CASE("tagger train and ablate list the attention mechanisms of the registry in their help") {
  const auto train = run_program(kTaggerProgram, {"train", "--help"});
  CHECK(train.exit_code == 0);
  CHECK(train.output.find(
            "attention mechanism: dense | linformer | performer | talking_heads (default: dense)") !=
        std::string::npos);
  CHECK(train.output.find("--attention-features VALUE") != std::string::npos);
  const auto ablate = run_program(kTaggerProgram, {"ablate", "--help"});
  CHECK(ablate.exit_code == 0);
  CHECK(ablate.output.find("--ablate-attention VALUE") != std::string::npos);
  CHECK(ablate.output.find("(of dense, linformer, performer, talking_heads)") != std::string::npos);
  // The default list of position schemes is still the registry's.
  CHECK(ablate.output.find("(default: alibi,clipped,learned,learned-fourier,none,random-fourier,relative,rotary,sinusoidal)") !=
        std::string::npos);
}

TEST_CASE("tagger ablate compares attention mechanisms and leaves out a combination one does not take") {
  qkv::testing::ScratchDir dir;
  const std::string run = (dir / "run").string();
  std::vector<std::string> args =
      train_args(run, {"--ablate-positions", "sinusoidal,alibi", "--ablate-windows", "-1",
                       "--ablate-attention", "dense,performer"});
  args[0] = "ablate";
  std::erase(args, "--no-figures");  // ablate draws none and does not take the option
  const auto r = run_program(kTaggerProgram, args);
  CAPTURE(r.errors);
  REQUIRE(r.exit_code == 0);
  const fs::path ablate = fs::path(run) / "ablate";
  for (const char* row : {"sinusoidal_full", "alibi_full", "sinusoidal_performer_full", "bigru"})
    CHECK(fs::exists(ablate / row / "best.safetensors"));
  CHECK_FALSE(fs::exists(ablate / "alibi_performer_full"));
  CHECK(r.output.find(
            "ablate: leaving out alibi, performer full: attention (--attention) 'performer' does not take "
            "positions (--positions) 'alibi'") != std::string::npos);
  CHECK(r.output.find("\n  sinusoidal, performer full ") != std::string::npos);  // its row of the table
  CHECK(r.output.find("\n  sinusoidal, full ") != std::string::npos);
  CHECK(qkv::testing::read_file(ablate / "sinusoidal_performer_full" / "config.json")
            .find("\"attention\":\"performer\"") != std::string::npos);

  // A mechanism that takes none of the combinations, and a name the registry lacks, are refused
  // before anything is trained or written.
  const std::string other = (dir / "other").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"--ablate-attention", "performer", "--ablate-positions", "alibi"},
       "tagger: option --ablate-attention: performer takes none of the --ablate-positions with the "
       "--ablate-windows (attention (--attention) 'performer' does not take positions (--positions) 'alibi'"},
      {{"--attention", "linformer", "--ablate-attention", "dense,linformer", "--attention-features", "5000"},
       "tagger config: attention (--attention) 'linformer' cannot be built with attention_features "
       "(--attention-features) 5000"},
      {{"--ablate-positions", "sinusoidal,bogus"},
       "tagger: option --ablate-positions lists 'bogus'; expected schemes of "},
      {{"--ablate-attention", "dense,fast"},
       "tagger: option --ablate-attention lists 'fast'; expected mechanisms of dense, linformer, performer, "
       "talking_heads\n"}};
  for (const auto& [extra, message] : refused) {
    std::vector<std::string> argv = {"ablate", "--run", other, "--epochs", "1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const auto bad = run_program(kTaggerProgram, argv);
    CHECK(bad.exit_code == 1);
    CHECK_MESSAGE(bad.errors.starts_with(message), bad.errors);
    CHECK(bad.output.find("training") == std::string::npos);
    CHECK_FALSE(fs::exists(other));
  }
}
