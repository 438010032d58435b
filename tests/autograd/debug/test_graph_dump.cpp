// The graph dump: DOT and JSON of a small MLP's graph, read back and checked node by node.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "autograd/debug/graph_dump.h"
#include "io/json.h"
#include "qkv.h"

using namespace qkv;
using autograd::GraphDumpOptions;

namespace {

class Mlp : public nn::Module {
 public:
  Mlp() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 4));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(4, 2));
  }
  Tensor forward(const Tensor& x) const { return fc2->forward(fc1->forward(x).relu()); }
  std::shared_ptr<nn::Linear> fc1, fc2;
};

// A DOT file as written by graph_to_dot: statements `id [attrs];` and `a -> b [attrs];`.
struct Dot {
  struct Vertex {
    std::string shape, label;
    bool root = false;
  };
  struct Arrow {
    std::string from, to, label;
  };
  std::map<std::string, Vertex> vertices;
  std::vector<Arrow> arrows;

  // The label with DOT's escapes undone ("\n" separates lines).
  static std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\\' && i + 1 < s.size()) {
        ++i;
        out += s[i] == 'n' ? '\n' : s[i];
      } else {
        out += s[i];
      }
    }
    return out;
  }

  explicit Dot(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    REQUIRE(line == "digraph autograd {");
    const std::regex vertex(
        R"re(^  (\w+) \[shape=(\w+),.*label="((?:[^"\\]|\\.)*)"(, peripheries=2)?\];$)re");
    const std::regex arrow(R"re(^  (\w+) -> (\w+) \[label="((?:[^"\\]|\\.)*)"\];$)re");
    bool closed = false;
    while (std::getline(in, line)) {
      std::smatch m;
      if (line == "}") {
        closed = true;
      } else if (std::regex_match(line, m, arrow)) {
        arrows.push_back({m[1], m[2], unescape(m[3])});
      } else if (std::regex_match(line, m, vertex)) {
        vertices[m[1]] = {m[2], unescape(m[3]), m[4].matched};
      } else {
        REQUIRE_MESSAGE(line.find(" [") != std::string::npos, "unexpected DOT line: " << line);
      }
    }
    REQUIRE(closed);
  }

  int count_op(const std::string& op) const {
    int k = 0;
    for (const auto& [id, v] : vertices) k += v.shape == "box" && v.label.rfind(op + "\n", 0) == 0;
    return k;
  }
  std::string id_of_leaf(const std::string& name) const {
    for (const auto& [id, v] : vertices)
      if (v.shape == "ellipse" && v.label.rfind(name + "\n", 0) == 0) return id;
    return "";
  }
  // The ops met going from `id` along arrows until the root.
  std::vector<std::string> path_to_root(std::string id) const {
    std::vector<std::string> ops;
    for (;;) {
      std::string next;
      for (const Arrow& a : arrows)
        if (a.from == id) next = a.to;
      if (next.empty()) return ops;
      const Vertex& v = vertices.at(next);
      ops.push_back(v.label.substr(0, v.label.find('\n')));
      id = next;
    }
  }
};

}  // namespace

TEST_CASE("graph_to_dot of an MLP has one box per op and the parameters as named leaves") {
  manual_seed(1);
  Mlp mlp;
  const Tensor x = randn({5, 3});
  const Tensor loss = mlp.forward(x).sum();
  GraphDumpOptions opts;
  opts.names = mlp.named_parameters();
  const Dot dot(autograd::graph_to_dot(loss, opts));

  // loss = sum(linear(relu(linear(x, W1, b1)), W2, b2)): each Linear with a bias is one op, x·Wᵀ + b.
  CHECK(dot.count_op("linear") == 2);
  CHECK(dot.count_op("matmul") == 0);
  CHECK(dot.count_op("add") == 0);
  CHECK(dot.count_op("relu") == 1);
  CHECK(dot.count_op("sum") == 1);
  int boxes = 0, roots = 0;
  for (const auto& [id, v] : dot.vertices) {
    boxes += v.shape == "box";
    if (v.root) {
      ++roots;
      CHECK(v.label == "sum\n()\nsaved 0 B");
    }
  }
  CHECK(boxes == 4);
  CHECK(roots == 1);

  // The leaves are exactly the four parameters, with their shapes; x needs no grad and is absent.
  CHECK(dot.vertices.at(dot.id_of_leaf("fc1.weight")).label == "fc1.weight\n(4,3)");
  CHECK(dot.vertices.at(dot.id_of_leaf("fc1.bias")).label == "fc1.bias\n(4)");
  CHECK(dot.vertices.at(dot.id_of_leaf("fc2.weight")).label == "fc2.weight\n(2,4)");
  CHECK(dot.vertices.at(dot.id_of_leaf("fc2.bias")).label == "fc2.bias\n(2)");
  CHECK(dot.vertices.size() == 8);

  // Every arrow joins declared vertices, and each parameter flows to the loss through its layer.
  for (const auto& a : dot.arrows) {
    CHECK(dot.vertices.count(a.from) == 1);
    CHECK(dot.vertices.count(a.to) == 1);
  }
  CHECK(dot.arrows.size() == 7);  // every vertex but the root feeds exactly one consumer here
  CHECK(dot.path_to_root(dot.id_of_leaf("fc1.weight")) ==
        std::vector<std::string>{"linear", "relu", "linear", "sum"});
  CHECK(dot.path_to_root(dot.id_of_leaf("fc2.bias")) == std::vector<std::string>{"linear", "sum"});

  // The first linear saved x (5,3) and W1 (4,3): 27 floats.
  bool found = false;
  for (const auto& [id, v] : dot.vertices)
    if (v.label == "linear\n(5,4)\nsaved 108 B") found = true;
  CHECK(found);
}

TEST_CASE("graph_to_dot labels edges with gradient norms after a backward that keeps the graph") {
  manual_seed(2);
  Mlp mlp;
  const Tensor loss = mlp.forward(randn({5, 3})).pow(2.0f).sum();
  const autograd::RecordGradNorms record;
  loss.backward({}, /*retain_graph=*/true);
  GraphDumpOptions opts;
  opts.names = mlp.named_parameters();
  const Dot dot(autograd::graph_to_dot(loss, opts));
  for (const std::string name : {"fc1.bias", "fc2.bias"}) {
    CAPTURE(name);
    const std::string id = dot.id_of_leaf(name);
    const Tensor param = name == "fc1.bias" ? mlp.fc1->bias : mlp.fc2->bias;
    int arrows = 0;
    for (const auto& a : dot.arrows) {
      if (a.from != id) continue;
      ++arrows;
      const size_t at = a.label.find("|grad| ");
      REQUIRE(at != std::string::npos);
      CHECK(std::stod(a.label.substr(at + 7)) == doctest::Approx(param.grad().norm().item()).epsilon(1e-3));
    }
    CHECK(arrows == 1);
  }
}

TEST_CASE("graph_to_dot with only_path_to keeps the path from the loss to one parameter") {
  manual_seed(3);
  Mlp mlp;
  const Tensor loss = mlp.forward(randn({5, 3})).sum();
  GraphDumpOptions opts;
  opts.names = mlp.named_parameters();
  opts.only_path_to = "fc2.weight";
  const Dot dot(autograd::graph_to_dot(loss, opts));
  // sum ← linear ← fc2.weight; relu feeds the linear but leads to fc1 only.
  CHECK(dot.vertices.size() == 3);
  CHECK(dot.count_op("relu") == 0);
  CHECK(dot.id_of_leaf("fc1.weight").empty());
  CHECK(dot.arrows.size() == 2);
  CHECK(dot.path_to_root(dot.id_of_leaf("fc2.weight")) == std::vector<std::string>{"linear", "sum"});

  opts.only_path_to = "no.such.parameter";
  CHECK_THROWS_AS(autograd::graph_to_dot(loss, opts), ValueError);
}

TEST_CASE("graph_to_json lists nodes from the root with inputs, shapes, saved bytes and leaves") {
  // y = Σ (w·x), x a constant: mul saves both operands (2·3 floats), sum saves nothing.
  Tensor w = tensor({1.0f, 2.0f, 3.0f}, true);
  w.set_name("w");
  const Tensor x = tensor({4.0f, 5.0f, 6.0f});
  const Tensor y = (w * x).sum();
  const autograd::RecordGradNorms record;
  y.backward({}, /*retain_graph=*/true);
  const io::Json j = io::parse_json(autograd::graph_to_json(y));

  CHECK(j.find("root")->as_string() == "n0");
  const auto& nodes = j.find("nodes")->as_array();
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].find("id")->as_string() == "n0");
  CHECK(nodes[0].find("op")->as_string() == "sum");
  CHECK(nodes[0].find("shape")->as_array().empty());
  CHECK(nodes[0].find("saved_bytes")->as_int() == 0);
  const auto& sum_in = nodes[0].find("inputs")->as_array();
  REQUIRE(sum_in.size() == 1);
  CHECK(sum_in[0].find("from")->as_string() == "n1");
  CHECK(sum_in[0].find("grad_norm")->as_double() == doctest::Approx(std::sqrt(3.0)));

  CHECK(nodes[1].find("op")->as_string() == "mul");
  CHECK(nodes[1].find("saved_bytes")->as_int() == 24);
  const auto& mul_in = nodes[1].find("inputs")->as_array();
  REQUIRE(mul_in.size() == 2);
  CHECK(mul_in[0].find("from")->as_string() == "l0");
  CHECK(mul_in[0].find("grad_norm")->as_double() == doctest::Approx(std::sqrt(16.0 + 25.0 + 36.0)));
  CHECK(mul_in[1].find("from")->is_null());  // x is a constant
  CHECK(mul_in[1].find("grad_norm")->is_null());

  const auto& leaves = j.find("leaves")->as_array();
  REQUIRE(leaves.size() == 1);
  CHECK(leaves[0].find("name")->as_string() == "w");
  CHECK(leaves[0].find("shape")->as_array().size() == 1);
}

TEST_CASE("graph_to_json escapes control characters in names so that the JSON reads back") {
  Tensor w = tensor({1.0f, 2.0f}, true);
  const Tensor y = (w * 2.0f).sum();
  GraphDumpOptions opts;
  opts.names = {{"a\x01b\n\"c\\", w}};
  const io::Json j = io::parse_json(autograd::graph_to_json(y, opts));
  const auto& leaves = j.find("leaves")->as_array();
  REQUIRE(leaves.size() == 1);
  CHECK(leaves[0].find("name")->as_string() == "a\x01b\n\"c\\");
}

TEST_CASE("graph_to_dot after a backward that freed the graph shows the root alone") {
  Tensor w = tensor({1.0f, 2.0f}, true);
  const Tensor y = (w * w).sum();
  y.backward();
  const Dot dot(autograd::graph_to_dot(y));
  REQUIRE(dot.vertices.size() == 1);
  CHECK(dot.vertices.begin()->second.label == "sum\n()\nsaved 0 B\n(freed by backward)");
  CHECK(dot.arrows.empty());
}
