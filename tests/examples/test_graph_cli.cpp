// The graph program as a user runs it, on tiny graphs and both modes: generate writes a graph that
// train reads back; sweep and karate write their tables and figures; bad input is refused in one
// line, before anything is written. Each case runs the built program (tests/child_process.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "io/scratch_dir.h"

using qkv::testing::kGraphProgram;
using qkv::testing::run_program;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kTiny = {"--nodes", "120", "--classes", "2", "--degree", "4", "--labelled", "5",
                                        "--val", "20"};
const std::vector<std::string> kQuick = {"--epochs", "5", "--hidden", "8", "--heads", "2"};

std::vector<std::string> with(std::vector<std::string> argv, const std::vector<std::string>& extra) {
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

}  // namespace

TEST_CASE("graph generate writes a graph that graph train reads, in both modes") {
  qkv::testing::ScratchDir dir;
  const std::string data = (dir / "data").string();
  const auto g = run_program(kGraphProgram, with({"generate", "--out", data, "--homophily", "0.8"}, kTiny));
  REQUIRE_MESSAGE(g.exit_code == 0, g.errors);
  CHECK(g.output.find("120 nodes, 240 edges") != std::string::npos);
  for (const std::string mode : {"--reference=false", "--reference"}) {
    CAPTURE(mode);
    const auto t = run_program(kGraphProgram, with({"train", "--edges", data + "/edges.txt", "--labels",
                                                    data + "/labels.txt", "--labelled", "5", mode}, kQuick));
    REQUIRE_MESSAGE(t.exit_code == 0, t.errors);
    CHECK(t.output.find("120 nodes, 240 edges, 2 classes; 10 labelled") != std::string::npos);
    CHECK(t.output.find("label propagation  test accuracy") != std::string::npos);
  }
}

TEST_CASE("graph sweep and graph karate write their tables and figures in both modes") {
  qkv::testing::ScratchDir dir;
  for (const std::string mode : {"--reference=false", "--reference"}) {
    CAPTURE(mode);
    const std::string out = (dir / ("run" + std::to_string(mode.size()))).string();
    const auto s = run_program(kGraphProgram,
                               with(with({"sweep", "--out", out, "--homophily", "0.2,0.9", "--seeds", "1", mode}, kTiny),
                                    kQuick));
    REQUIRE_MESSAGE(s.exit_code == 0, s.errors);
    CHECK(fs::exists(out + "/sweep.png"));
    const std::string tsv = qkv::testing::read_file(out + "/sweep.tsv");
    CHECK(tsv.rfind("homophily\tmlp\tattention\tgraph\tlabel propagation\n0.2\t", 0) == 0);
    CHECK(std::count(tsv.begin(), tsv.end(), '\n') == 3);  // the header and one row per homophily
    const auto again = run_program(kGraphProgram, with(with({"sweep", "--out", out, mode}, kTiny), kQuick));
    CHECK(again.exit_code == 1);
    CHECK(again.errors.find("holds sweep.tsv already") != std::string::npos);
    CHECK(qkv::testing::read_file(out + "/sweep.tsv") == tsv);
    const auto k = run_program(kGraphProgram, with({"karate", "--out", out, mode}, kQuick));
    REQUIRE_MESSAGE(k.exit_code == 0, k.errors);
    CHECK(k.output.find("34 members, 78 friendships") != std::string::npos);
    CHECK(fs::exists(out + "/karate_attention.png"));
  }
}

TEST_CASE("graph refuses bad input in one line and writes nothing") {
  qkv::testing::ScratchDir dir;
  const std::string out = (dir / "never").string();
  const auto h = run_program(kGraphProgram, {"sweep", "--out", out, "--homophily", "0.5,1.5"});
  CHECK(h.exit_code == 1);
  CHECK(h.errors == "graph: --homophily: 1.5 is outside [0, 1]\n");
  const auto n = run_program(kGraphProgram, {"sweep", "--out", out, "--nodes", "10"});
  CHECK(n.exit_code == 1);
  CHECK(n.errors.find("leave no test nodes") != std::string::npos);
  CHECK(!fs::exists(out));
  std::ofstream(dir / "labels.txt") << "0 a\n1 b\n";
  std::ofstream(dir / "edges.txt") << "0 1\n1 7\n";
  const auto e = run_program(kGraphProgram, {"train", "--edges", (dir / "edges.txt").string(), "--labels",
                                             (dir / "labels.txt").string()});
  CHECK(e.exit_code == 1);
  CHECK(e.errors == "graph: " + (dir / "edges.txt").string() +
                        ":2: node 7 is outside [0, N) for N = 2 (the nodes the labels file names)\n");
  CHECK(run_program(kGraphProgram, {"fly"}).exit_code == 2);
}

TEST_CASE("graph refuses labels of one class, and quotes a huge word of a file cut short") {
  qkv::testing::ScratchDir dir;
  std::ofstream(dir / "edges.txt") << "0 1\n1 2\n";
  std::ofstream(dir / "one.txt") << "0 a\n1 a\n2 a\n";
  const auto one = run_program(kGraphProgram, {"train", "--edges", (dir / "edges.txt").string(), "--labels",
                                               (dir / "one.txt").string()});
  CHECK(one.exit_code == 1);
  CHECK(one.errors == "graph: " + (dir / "one.txt").string() +
                          ": every node is of class 'a'; classifying needs at least two classes\n");
  CHECK(one.output.find("1.000") == std::string::npos);
  std::ofstream(dir / "labels.txt") << "0 a\n1 b\n2 a\n";
  std::ofstream(dir / "huge.txt") << "0 " << std::string(5'000'000, 'x') << "\n";
  const auto huge = run_program(kGraphProgram, {"train", "--edges", (dir / "huge.txt").string(), "--labels",
                                                (dir / "labels.txt").string()});
  CHECK(huge.exit_code == 1);
  CHECK(huge.errors.size() < 300);
  CHECK(huge.errors.find("(5000000 characters) is not a node number") != std::string::npos);
}
