// The long_range program as a user runs it, in both modes: train prints its losses, the test
// accuracy, the references and the time; compare writes its table and JSON and never overwrites
// them; bad input is refused in one line naming the option, with nothing written. Each case runs
// the built program (tests/child_process.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "child_process.h"
#include "io/json.h"
#include "io/scratch_dir.h"

using qkv::testing::run_program;
namespace fs = std::filesystem;

namespace {

const std::string kProgram = QKV_LONG_RANGE_PROGRAM;
// One thread: the model is too small for a second to pay, and ctest runs tests side by side.
const std::vector<std::string> kOneThread = {"QKV_NUM_THREADS=1"};

}  // namespace

TEST_CASE("long_range train learns at length 64 and reports accuracy and time in both modes") {
  qkv::testing::ScratchDir dir;
  for (const std::string mode : {"--reference=false", "--reference"}) {
    CAPTURE(mode);
    const auto r = run_program(kProgram, {"train", "--length", "64", "--steps", "200", "--test", "16", mode, "--run",
                                          (dir / "run").string()},
                               kOneThread);
    REQUIRE_MESSAGE(r.exit_code == 0, r.errors);
    CHECK(r.output.find("dense attention, length 64 (sequences of 48 .. 64 tokens), 2 keys, 8 values") !=
          std::string::npos);
    CHECK(r.output.find("step    200/200  loss ") != std::string::npos);
    CHECK(r.output.find("(chance 1/8 = 12.5%)") != std::string::npos);
    const size_t at = r.output.find("test accuracy ");
    REQUIRE(at != std::string::npos);
    CHECK(std::stod(r.output.substr(at + 14)) > 80.0);  // percent; chance is 12.5
    CHECK(r.output.find(" ms/step") != std::string::npos);
  }
}

TEST_CASE("long_range compare writes its table and JSON and refuses to overwrite them") {
  qkv::testing::ScratchDir dir;
  const std::string out = (dir / "cmp").string();
  const std::vector<std::string> argv = {"compare", "--lengths", "32,48", "--mechanisms", "dense,window,linformer",
                                         "--steps", "3", "--window", "4", "--test", "4", "--out", out};
  const auto r = run_program(kProgram, argv, kOneThread);
  REQUIRE_MESSAGE(r.exit_code == 0, r.errors);
  const std::string md = qkv::testing::read_file(out + "/compare.md");
  CHECK(md.find("| mechanism | length | steps | test accuracy | train seconds | ms/step |") != std::string::npos);
  for (const std::string row : {"| dense | 32 | 3 | ", "| window | 32 | 3 | ", "| linformer | 48 | 3 | "})
    CHECK(md.find(row) != std::string::npos);
  const qkv::io::Json json = qkv::io::parse_json(qkv::testing::read_file(out + "/compare.json"));
  CHECK(json.find("runs")->as_array().size() == 6);
  CHECK(json.find("model")->find("window")->as_int() == 4);
  const auto again = run_program(kProgram, argv, kOneThread);
  CHECK(again.exit_code == 1);
  CHECK(again.errors == "long_range: --out " + out + " holds compare.md already; choose another directory (nothing was changed)\n");
  CHECK(qkv::testing::read_file(out + "/compare.md") == md);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"compare.json", "compare.md", "runs"});  // no temporary file left
  CHECK(fs::exists(fs::path(out) / "runs" / "linformer-48" / "last.safetensors"));  // each run's own directory
}

TEST_CASE("long_range refuses bad input in one line naming the option and writes nothing") {
  qkv::testing::ScratchDir dir;
  const std::string out = (dir / "never").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"train", "--attention", "reformer"}, "--attention 'reformer' is unknown; expected dense, window, performer or linformer"},
      {{"train", "--length", "8"}, "option --length expects an integer from 16 to 4096, got 8"},
      {{"train", "--length", "8192"}, "option --length expects an integer from 16 to 4096, got 8192"},
      {{"train", "--attention", "performer", "--window", "16"},
       "--window applies to window attention only, and --attention performer has no window"},
      {{"train", "--attention", "linformer", "--window", "16"},
       "--window applies to window attention only, and --attention linformer has no window"},
      {{"train", "--attention", "linformer", "--length", "64", "--features", "100"},
       "--features 100 is outside 1 .. 64 for linformer (k <= --length), or 0 for its default"},
      {{"train", "--attention", "dense", "--features", "16"},
       "--features applies to performer and linformer only, and --attention dense has neither"},
      {{"compare", "--out", out, "--mechanisms", "dense,performer", "--window", "8"},
       "--window applies to window attention only, and --mechanisms dense,performer has no window"},
      {{"train", "--heads", "3"}, "--heads 3 must be 1 .. 64 and divide --d-model 32"},
      {{"compare", "--out", out, "--mechanisms", "dense,sparse"},
       "--mechanisms: 'sparse' is unknown; expected some of dense, window, performer or linformer"},
      {{"compare", "--out", out, "--lengths", "512,9000"}, "--lengths: 9000 is outside 16 .. 4096"},
      {{"compare", "--out", out, "--lengths", "512,2048", "--steps", "1,2,3"},
       "--steps gives 3 counts for 2 lengths; expected one count, or one per length"},
      {{"compare", "--mechanisms", "dense"}, "compare needs --out DIR, the directory for compare.md and compare.json"},
      {{"train", "--matmul", "low"}, "matmul (--matmul) is 'low'; expected one of highest, medium"},
  };
  for (const auto& [argv, message] : cases) {
    CAPTURE(argv);
    const auto r = run_program(kProgram, argv, kOneThread);
    CHECK(r.exit_code == 1);
    CHECK(r.errors == "long_range: " + message + "\n");
    CHECK(r.output.empty());
  }
  // After the reference mode's note: bfloat16 products are refused there, before --out is made.
  const auto medium = run_program(kProgram, {"compare", "--out", out, "--matmul", "medium", "--reference"}, kOneThread);
  CHECK(medium.exit_code == 1);
  CHECK(medium.errors.ends_with("long_range: --matmul medium: the reference mode (--reference or QKV_REFERENCE=1) "
                                "computes every product in float32; drop one of the two\n"));
  const auto unknown = run_program(kProgram, {"train", "--lenght", "64"}, kOneThread);
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.errors.starts_with("long_range: unknown option --lenght\ndid you mean --length?"));
  CHECK(!fs::exists(out));
  CHECK(run_program(kProgram, {"fly"}).exit_code == 2);
}
