// The example programs' command-line parser.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "examples/common/args.h"
#include "examples/common/progress.h"
#include "io/scratch_dir.h"
#include "tensor/error.h"

using qkv::examples::Args;

namespace {

Args parse(std::vector<std::string> argv) {
  std::vector<char*> ptrs;
  for (auto& a : argv) ptrs.push_back(a.data());
  return Args(static_cast<int>(ptrs.size()), ptrs.data(),
              {{"epochs", "10", "training epochs"},
               {"lr", "0.001", "learning rate"},
               {"quiet", "false", "less output"},
               {"out", "runs/x", "run directory"}},
              "usage: prog train [options]");
}

}  // namespace

TEST_CASE("args parses values flags and defaults") {
  const Args a = parse({"--epochs", "3", "--lr=0.5", "--quiet", "file.txt"});
  CHECK(a.integer("epochs") == 3);
  CHECK(a.number("lr") == 0.5);
  CHECK(a.flag("quiet"));
  CHECK(a.str("out") == "runs/x");
  CHECK_FALSE(a.given("out"));
  CHECK(a.given("epochs"));
  CHECK(a.positional() == std::vector<std::string>{"file.txt"});
  CHECK(parse({"--help"}).help_requested());
  CHECK(a.help().find("--epochs VALUE") != std::string::npos);
}

TEST_CASE("args rejects unknown options and malformed values") {
  CHECK_THROWS_WITH_AS(parse({"--epoch", "3"}), doctest::Contains("unknown option --epoch"), qkv::ValueError);
  CHECK_THROWS_WITH_AS(parse({"--epochs", "three"}).integer("epochs"),
                       "option --epochs expects an integer, got 'three'", qkv::ValueError);
  CHECK_THROWS_AS(parse({"--lr"}), qkv::ValueError);
}

TEST_CASE("args refuses integers out of range rather than clamping or wrapping them") {
  // strtoll clamps 20 nines to 2^63 - 1; that is not the number given.
  CHECK_THROWS_WITH_AS(parse({"--epochs", "99999999999999999999"}).integer("epochs"),
                       "option --epochs: 99999999999999999999 is out of the range of a 64-bit integer",
                       qkv::ValueError);
  CHECK(parse({"--epochs", "-9223372036854775808"}).integer("epochs") == INT64_MIN);
  // A range: 2^32 + 1 must not become 1 on its way to an int.
  CHECK(parse({"--epochs", "256"}).integer_in("epochs", 0, 256) == 256);
  CHECK_THROWS_WITH_AS(parse({"--epochs", "4294967297"}).integer_in("epochs", 0, 256),
                       "option --epochs expects an integer from 0 to 256, got 4294967297", qkv::ValueError);
  CHECK_THROWS_WITH_AS(parse({"--epochs", "-1"}).integer_in("epochs", 0, 256),
                       "option --epochs expects an integer from 0 to 256, got -1", qkv::ValueError);
}

TEST_CASE("args number_in refuses NaN infinity and numbers outside its range") {
  CHECK(parse({"--lr", "0.5"}).number_in("lr", 0, 1) == 0.5);
  CHECK(parse({"--lr", "1"}).number_in("lr", 0, 1) == 1);
  for (const char* bad : {"nan", "inf", "-inf", "1.5", "-0.1"}) {
    CHECK_THROWS_WITH_AS(parse({"--lr", bad}).number_in("lr", 0, 1),
                         ("option --lr expects a number from 0 to 1, got " + std::string(bad)).c_str(),
                         qkv::ValueError);
  }
}

TEST_CASE("make_output_directory makes the directory and refuses one it cannot write into") {
  qkv::testing::ScratchDir dir;
  const std::string out = (dir / "a" / "b").string();
  qkv::examples::make_output_directory("out", out);
  CHECK(std::filesystem::is_directory(out));
  CHECK(std::filesystem::is_empty(out));  // the probe file is gone
  qkv::testing::write_file(dir / "file", "x");
  CHECK_THROWS_WITH_AS(qkv::examples::make_output_directory("out", (dir / "file").string()),
                       doctest::Contains("option --out: cannot write into"), qkv::ValueError);
  CHECK_THROWS_WITH_AS(qkv::examples::make_output_directory("out", "/proc/qkv-out"),
                       doctest::Contains("option --out: cannot write into '/proc/qkv-out'"), qkv::ValueError);
  CHECK_THROWS_WITH_AS(qkv::examples::make_output_directory("out", ""),
                       "option --out is empty; expected a directory", qkv::ValueError);
}

TEST_CASE("durations format as minutes and hours") {
  CHECK(qkv::examples::format_duration(65) == "1:05");
  CHECK(qkv::examples::format_duration(3725) == "1:02:05");
}

TEST_CASE("option_text writes a number as the shortest decimal that reads back the same") {
  CHECK(qkv::examples::option_text(3e-3) == "0.003");
  CHECK(qkv::examples::option_text(1.0) == "1");
  CHECK(qkv::examples::option_text(0.1) == "0.1");
  CHECK(std::stod(qkv::examples::option_text(1.0 / 3)) == 1.0 / 3);
}
