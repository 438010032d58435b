// The graph example's library (examples/graph): the generated graphs come out as asked, the karate
// club is Zachary's, label propagation gives known values, the file reader's rules, and a short
// training run learns.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "examples/graph/karate.h"
#include "examples/graph/label_propagation.h"
#include "examples/graph/read_graph.h"
#include "examples/graph/sbm.h"
#include "examples/graph/train.h"
#include "io/scratch_dir.h"
#include "tensor/error.h"

using namespace graph;
namespace fs = std::filesystem;

TEST_CASE("the stochastic block model gives the homophily and the degree asked for") {
  for (const double h : {0.1, 0.5, 0.9}) {
    CAPTURE(h);
    const Graph g = stochastic_block_model({.nodes = 1200, .homophily = h, .degree = 8.0, .seed = 3});
    CHECK(g.edges.size() == 4800);
    CHECK(mean_degree(g) == doctest::Approx(8.0));
    CHECK(std::fabs(edge_homophily(g) - h) < 0.025);  // 4800 edges: the binomial's sd is under 0.008
    CHECK(g.train.size() == 80);
    CHECK(g.val.size() == 200);
    CHECK(g.test.size() == 920);
    for (int64_t c = 0; c < 4; ++c) {
      int64_t labelled = 0;
      for (int64_t i : g.train) labelled += g.labels[i] == c ? 1 : 0;
      CHECK(labelled == 20);
    }
  }
}

TEST_CASE("the stochastic block model is reproducible from its seed") {
  const SbmOptions o{.nodes = 300, .degree = 4.0, .seed = 7};
  const Graph a = stochastic_block_model(o), b = stochastic_block_model(o);
  CHECK(a.edges == b.edges);
  CHECK(a.features.to_vector() == b.features.to_vector());
  CHECK(a.train == b.train);
  CHECK(stochastic_block_model({.nodes = 300, .degree = 4.0, .seed = 8}).edges != a.edges);
  CHECK_THROWS_AS(stochastic_block_model({.nodes = 300, .homophily = 1.5}), qkv::ValueError);
  CHECK_THROWS_AS(stochastic_block_model({.nodes = 50}), qkv::ValueError);  // no room for a test set
}

TEST_CASE("the karate club has Zachary's 34 members, 78 friendships and two factions of 17") {
  const Graph g = karate_club();
  CHECK(g.nodes == 34);
  CHECK(g.edges.size() == 78);
  std::vector<int64_t> degree(34, 0);
  for (const auto& [u, v] : g.edges) {
    CHECK(u < v);
    ++degree[u], ++degree[v];
  }
  CHECK(degree[0] == 16);   // Mr. Hi
  CHECK(degree[33] == 17);  // John A.
  CHECK(degree[32] == 12);
  // Every member's degree, as Zachary's network has them (networkx's karate_club_graph).
  CHECK(degree == std::vector<int64_t>{16, 9, 10, 6, 3, 4, 4, 4, 5, 2, 3, 1, 2, 5, 2, 2, 2,
                                       2, 2, 3, 2, 2, 2, 5, 3, 3, 2, 4, 3, 4, 4, 6, 12, 17});
  // Mr. Hi's faction, the "club" attribute of the same data set.
  std::vector<int64_t> mr_hi;
  for (int64_t i = 0; i < 34; ++i)
    if (g.labels[i] == 0) mr_hi.push_back(i);
  CHECK(mr_hi == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 16, 17, 19, 21});
  CHECK(g.labels[0] == 0);
  CHECK(g.labels[33] == 1);
  CHECK(g.train == std::vector<int64_t>{0, 33});
}

TEST_CASE("label propagation on a path gives the harmonic values between the labelled ends") {
  // 0 - 1 - 2 - 3, node 0 labelled class 0 and node 3 class 1: the harmonic solution is linear,
  // node 1 at (2/3, 1/3) and node 2 at (1/3, 2/3). Node 4 has no edge and stays uniform.
  Graph g;
  g.nodes = 5, g.classes = 2;
  g.edges = {{0, 1}, {1, 2}, {2, 3}};
  g.labels = qkv::IndexTensor{0, 0, 1, 1, 0};
  g.train = {0, 3};
  const qkv::Tensor f = label_propagation(g, 200);
  CHECK(f.at({1, 0}) == doctest::Approx(2.0 / 3).epsilon(1e-4));
  CHECK(f.at({2, 1}) == doctest::Approx(2.0 / 3).epsilon(1e-4));
  CHECK(f.at({0, 0}) == 1.0f);
  CHECK(f.at({4, 0}) == 0.5f);
}

namespace {

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string error_of(const fs::path& edges, const fs::path& labels) {
  try {
    read_graph(edges.string(), labels.string(), 1, 0);
  } catch (const qkv::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("read_graph reads edges and labels and refuses bad lines naming the file and line") {
  qkv::testing::ScratchDir dir;
  const fs::path labels = dir / "labels.txt", edges = dir / "edges.txt";
  write(labels, "# node class\n0 a\n1 b\n2 a\n3 b\n4 a\n");
  write(edges, "0 2\n\n1 3\n2 2\n");
  const GraphFile f = read_graph(edges.string(), labels.string(), 1, 0);
  CHECK(f.graph.nodes == 5);
  CHECK(f.graph.classes == 2);
  CHECK(f.graph.edges.size() == 2);  // the self-loop skipped, noted
  REQUIRE(f.notes.size() == 1);
  CHECK(f.notes[0].find("skipped 1 self-loop") != std::string::npos);
  CHECK(f.graph.train.size() == 2);

  write(edges, "0 2\n1 5\n");
  CHECK(error_of(edges, labels) ==
        edges.string() + ":2: node 5 is outside [0, N) for N = 5 (the nodes the labels file names)");
  write(edges, "0 2\n1 3\n2 0\n");
  CHECK(error_of(edges, labels) ==
        edges.string() + ":3: the edge 2 0 was already given on line 1 (edges are undirected; give each once)");
  write(edges, "0 x\n");
  CHECK(error_of(edges, labels) == edges.string() + ":1: 'x' is not a node number (0, 1, 2, ...)");
  write(edges, "0 1 2\n");
  CHECK(error_of(edges, labels) == edges.string() + ":1: expected 'U V', got 3 words");
  write(labels, "0 a\n2 b\n");
  CHECK(error_of(edges, labels) ==
        labels.string() + ":2: node 2 is labelled, but only 2 nodes are: number them 0 ... N - 1");
  write(labels, "0 a\n0 b\n");
  CHECK(error_of(edges, labels) == labels.string() + ":2: node 0 was already labelled on line 1");
  write(labels, "0 a\n1 b\n");
  CHECK(error_of(dir / "missing.txt", labels).find("missing.txt': cannot open") != std::string::npos);
  // A directory is not an empty edge list.
  CHECK(error_of(dir.path(), labels).find("is a directory, not a regular file") != std::string::npos);
}

TEST_CASE("graph attention learns a small homophilous graph from 10 labels per class") {
  const Graph g = stochastic_block_model(
      {.nodes = 240, .classes = 3, .homophily = 0.9, .degree = 6.0, .labelled_per_class = 10, .val = 40, .seed = 1});
  TrainOptions o;
  o.epochs = 60;
  const TrainResult r = train_model("graph", g, o);
  CHECK(r.test > 0.6);  // chance is 1/3
}
