// The example programs' command-line parser.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <sstream>
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
  // A misspelled option gets a suggestion and a pointer to --help, not the whole usage.
  CHECK_THROWS_WITH_AS(parse({"--epoch", "3"}),
                       "unknown option --epoch\ndid you mean --epochs? (--help lists the options)", qkv::ValueError);
  CHECK_THROWS_WITH_AS(parse({"--lrr", "3"}), "unknown option --lrr\ndid you mean --lr? (--help lists the options)",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(parse({"--colour"}), "unknown option --colour\n(--help lists the options)", qkv::ValueError);
  // Two letters swapped are one slip, not two.
  CHECK_THROWS_WITH_AS(parse({"--otu", "x"}), "unknown option --otu\ndid you mean --out? (--help lists the options)",
                       qkv::ValueError);
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

TEST_CASE("args takes decimal integers and numbers only: no '+', whitespace or hexadecimal") {
  CHECK(parse({"--epochs", "-5"}).integer("epochs") == -5);
  for (const char* bad : {"+5", " 5", "5 ", "0x10", "1e3", ""}) {
    CHECK_THROWS_WITH_AS(parse({"--epochs", bad}).integer("epochs"),
                         ("option --epochs expects an integer, got '" + std::string(bad) + "'").c_str(),
                         qkv::ValueError);
  }
  CHECK(parse({"--lr", "1.5e-3"}).number("lr") == 1.5e-3);
  CHECK(parse({"--lr", "-.25"}).number("lr") == -0.25);
  CHECK(parse({"--lr", "1e999"}).number("lr") == INFINITY);  // read, for range checks to refuse
  for (const char* bad : {"0x1p-3", "+0.5", " 0.5", "0.5 ", "1e", ""}) {
    CHECK_THROWS_WITH_AS(
        parse({"--lr", bad}).number("lr"),
        ("option --lr expects a number in decimal notation, got '" + std::string(bad) + "'").c_str(),
        qkv::ValueError);
  }
}

TEST_CASE("args refuses an option given twice and positional words where none are taken") {
  CHECK_THROWS_WITH_AS(parse({"--epochs", "1", "--epochs", "2"}), "option --epochs is given twice",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(parse({"--quiet", "--quiet"}), "option --quiet is given twice", qkv::ValueError);
  CHECK_NOTHROW(parse({"--epochs", "1"}).refuse_positional());
  CHECK_THROWS_WITH_AS(parse({"--epochs", "1", "extra"}).refuse_positional(),
                       doctest::Contains("unexpected argument 'extra'"), qkv::ValueError);
}

TEST_CASE("read_line reads lines and refuses one longer than its bound") {
  std::istringstream in("ab\n\ncd");
  std::string line;
  int64_t n = 0;
  REQUIRE(qkv::examples::read_line(in, line, n, 4));
  CHECK(line == "ab");
  REQUIRE(qkv::examples::read_line(in, line, n, 4));
  CHECK(line.empty());
  REQUIRE(qkv::examples::read_line(in, line, n, 4));
  CHECK(line == "cd");  // the last line needs no newline
  CHECK(n == 3);
  CHECK_FALSE(qkv::examples::read_line(in, line, n, 4));
  std::istringstream exact("abcd\nabcde\n");
  n = 0;
  CHECK(qkv::examples::read_line(exact, line, n, 4));
  CHECK(line == "abcd");
  CHECK_THROWS_WITH_AS(qkv::examples::read_line(exact, line, n, 4), "stdin: line 2 is longer than 4 bytes",
                       qkv::ValueError);
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

TEST_CASE("args takes --name= as an empty value, never the next word") {
  // --out= --quiet used to make "--quiet" the output directory; --lr= 0.5 set the rate to 0.5.
  const Args a = parse({"--out=", "--quiet"});
  CHECK(a.str("out").empty());
  CHECK(a.given("out"));
  CHECK(a.flag("quiet"));
  const Args b = parse({"--lr=", "0.5"});
  CHECK(b.positional() == std::vector<std::string>{"0.5"});
  CHECK_THROWS_WITH_AS(b.number("lr"), doctest::Contains("option --lr"), qkv::ValueError);
  // A flag with an empty value is neither true nor false.
  CHECK_THROWS_WITH_AS(parse({"--quiet="}).flag("quiet"), "option --quiet expects true or false, got ''",
                       qkv::ValueError);
  CHECK(parse({"--quiet=false"}).flag("quiet") == false);
}

TEST_CASE("args reads every word after -- as text") {
  const Args a = parse({"--epochs", "2", "--", "-h", "--epochs", "--lr=1"});
  CHECK(a.integer("epochs") == 2);
  CHECK_FALSE(a.help_requested());
  CHECK(a.positional() == std::vector<std::string>{"-h", "--epochs", "--lr=1"});
}
