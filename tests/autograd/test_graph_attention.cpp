// graph_attention (autograd/ops/graph_attention.h): attention on a graph's edges against dense
// attention under the adjacency mask, against PyTorch, at 1 and 2 threads, in the reference mode,
// its rule for a node without incoming edges, and the edge structure's errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/ops/attention.h"
#include "autograd/ops/graph_attention.h"
#include "autograd/ops/softmax.h"
#include "graph_attention_golden_values.h"
#include "gradcheck_registry.h"
#include "nn/attention_testing.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"
#include "thread_testing.h"

using namespace qkv;
using qkv::testing::check_close;
using qkv::testing::In;
using qkv::testing::Inputs;

namespace {

// A random directed graph: each ordered pair (self-loops included) an edge with probability p, and
// no edge at all into the last node, which must come out as a zero row.
GraphEdges random_graph(int64_t N, double p, uint64_t seed) {
  Generator gen(seed);
  std::vector<int64_t> src, dst;
  for (int64_t t = 0; t + 1 < N; ++t)
    for (int64_t s = 0; s < N; ++s)
      if (gen.next_chance(p)) src.push_back(s), dst.push_back(t);
  return GraphEdges::from_pairs(N, src, dst);
}

Tensor normal(const Shape& shape, uint64_t seed) {
  Generator g(seed);
  return randn(shape, /*requires_grad=*/true, &g);
}

// Dense attention written out with masked_softmax over the adjacency, the heads as the batch.
Tensor dense_masked_attention(const Tensor& q, const Tensor& k, const Tensor& v, const GraphEdges& g) {
  const auto heads = [](const Tensor& x) { return x.permute({1, 0, 2}); };
  const Tensor scores = heads(q).matmul(heads(k).transpose(1, 2)) / std::sqrt(static_cast<float>(q.size(2)));
  const Tensor weights = masked_softmax(scores, IndexTensor(), adjacency_mask(g), Tensor());
  return weights.matmul(heads(v)).permute({1, 0, 2});
}

struct Run {
  Tensor out, weights, dq, dk, dv;
};

// The op's output and the gradients of Σ out·probe.
template <class F>
Run run(F attend, uint64_t seed, int64_t N, int64_t H, int64_t D) {
  Tensor q = normal({N, H, D}, seed), k = normal({N, H, D}, seed + 1), v = normal({N, H, D}, seed + 2);
  const GraphAttention a = attend(q, k, v);
  (a.output * normal({N, H, D}, seed + 3).detach()).sum().backward();
  return {a.output.detach(), a.weights, q.grad(), k.grad(), v.grad()};
}

}  // namespace

QKV_GRADCHECK("graph_attention with two heads, self-loops and a node without edges",
              {In::normal({5, 2, 3}), In::normal({5, 2, 3}), In::normal({5, 2, 3})}, [](const Inputs& x) {
                const GraphEdges g = GraphEdges::from_pairs(5, {0, 1, 2, 0, 3, 1, 4, 2, 4}, {1, 0, 0, 0, 2, 2, 2, 3, 1});
                return graph_attention(x[0], x[1], x[2], g).output;
              });

TEST_CASE("graph_attention equals dense attention under the adjacency mask on random graphs") {
  for (const auto& [N, H, p, seed] : {std::tuple{6, 1, 0.5, 1}, std::tuple{9, 2, 0.3, 2}, std::tuple{12, 3, 0.2, 3},
                                      std::tuple{7, 2, 0.9, 4}}) {
    CAPTURE(N);
    const GraphEdges g = random_graph(N, p, seed);
    const Run sparse = run([&](auto& q, auto& k, auto& v) { return graph_attention(q, k, v, g); }, seed, N, H, 4);
    const Run dense = run(
        [&](auto& q, auto& k, auto& v) { return GraphAttention{dense_masked_attention(q, k, v, g), Tensor()}; },
        seed, N, H, 4);
    check_close(sparse.out, dense.out, 1e-5f);
    check_close(sparse.dq, dense.dq, 1e-4f);
    check_close(sparse.dk, dense.dk, 1e-4f);
    check_close(sparse.dv, dense.dv, 1e-4f);
    // The weights of each destination's edges add up to 1.
    Tensor per_node = zeros({N, H});
    for (int64_t e = 0; e < g.edges(); ++e)
      for (int64_t h = 0; h < H; ++h) per_node.data()[g.targets()[e] * H + h] += sparse.weights.at({e, h});
    for (int64_t t = 0; t < N; ++t)
      for (int64_t h = 0; h < H; ++h) CHECK(per_node.at({t, h}) == doctest::Approx(g.in_degree(t) > 0 ? 1.0 : 0.0));
  }
}

TEST_CASE("graph_attention gives a node without incoming edges a zero row and its query no gradient") {
  const GraphEdges g = random_graph(6, 0.5, 9);
  REQUIRE(g.in_degree(5) == 0);
  for (const bool reference : {false, true}) {
    CAPTURE(reference);
    const ReferenceModeGuard mode(reference);
    const Run r = run([&](auto& q, auto& k, auto& v) { return graph_attention(q, k, v, g); }, 5, 6, 2, 3);
    CHECK(r.out.select(0, 5).abs().sum().item() == 0.0f);
    CHECK(r.dq.select(0, 5).abs().sum().item() == 0.0f);
  }
}

TEST_CASE("graph_attention runs its dense reference in the reference mode with the same values and gradients") {
  const GraphEdges g = random_graph(10, 0.4, 11);
  const auto attend = [&](auto& q, auto& k, auto& v) { return graph_attention(q, k, v, g); };
  const Run fast = run(attend, 12, 10, 2, 5);
  Run plain;
  {
    const ReferenceModeGuard reference;
    plain = run(attend, 12, 10, 2, 5);
  }
  for (const auto& [a, b] : {std::pair{fast.out, plain.out}, std::pair{fast.weights, plain.weights},
                             std::pair{fast.dq, plain.dq}, std::pair{fast.dk, plain.dk}, std::pair{fast.dv, plain.dv}})
    check_close(a, b, 1e-4f);
}

TEST_CASE("graph_attention gives the same bytes at 1 and 2 threads") {
  const GraphEdges g = random_graph(300, 0.05, 13);  // enough work to run in parallel
  qkv::testing::check_bitwise_identical_with_1_and_2_threads([&] {
    const Run r = run([&](auto& q, auto& k, auto& v) { return graph_attention(q, k, v, g); }, 14, 300, 2, 16);
    std::vector<float> all;
    for (const Tensor& t : {r.out, r.weights, r.dq, r.dk, r.dv}) {
      const std::vector<float> x = t.to_vector();
      all.insert(all.end(), x.begin(), x.end());
    }
    return all;
  });
}

TEST_CASE("graph_attention matches PyTorch computed edge by edge") {
  const auto filled = [](int64_t j) {
    std::vector<float> x(30);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(0.5 * std::sin(1 + 0.37 * i + 0.91 * j));
    return tensor(x, {5, 2, 3}).requires_grad_();
  };
  Tensor q = filled(0), k = filled(1), v = filled(2);
  const GraphEdges g = GraphEdges::from_pairs(5, {0, 1, 2, 0, 3, 1, 4, 2, 4}, {1, 0, 0, 0, 2, 2, 2, 3, 1});
  const Tensor out = graph_attention(q, k, v, g).output;
  (out.reshape({-1}) * arange(30.0f).mul(0.3f).cos()).sum().backward();
  qkv::testing::check_values(out, graph_attention_golden::out, 1e-5f);
  qkv::testing::check_values(q.grad(), graph_attention_golden::dq, 1e-5f);
  qkv::testing::check_values(k.grad(), graph_attention_golden::dk, 1e-5f);
  qkv::testing::check_values(v.grad(), graph_attention_golden::dv, 1e-5f);
}

TEST_CASE("GraphEdges groups edges by destination and by source") {
  const GraphEdges g = GraphEdges::from_pairs(4, {2, 0, 1, 3, 0}, {1, 1, 3, 1, 0});
  CHECK(g.offsets().values() == std::vector<int64_t>{0, 1, 4, 4, 5});
  CHECK(g.sources().values() == std::vector<int64_t>{0, 0, 2, 3, 1});
  CHECK(g.out_offsets().values() == std::vector<int64_t>{0, 2, 3, 4, 5});
  CHECK(g.out_edges().values() == std::vector<int64_t>{0, 1, 4, 2, 3});
  CHECK(g.in_degree(2) == 0);
}

TEST_CASE("GraphEdges refuses a node count it cannot hold with a qkv Error naming the count") {
  // Before, INT64_MAX nodes threw std::length_error and 2^40 std::bad_alloc, which name nothing.
  CHECK_THROWS_WITH_AS(GraphEdges::from_pairs(std::numeric_limits<int64_t>::max(), {0}, {1}),
                       "GraphEdges: 9223372036854775807 nodes are more than 64-bit memory can index (their "
                       "offsets take 8 bytes a node; at most 576460752303423488 nodes)",
                       ValueError);
#ifndef __SANITIZE_ADDRESS__
  // The offsets are std::vector, which AddressSanitizer ends the process on rather than throw
  // std::bad_alloc, whatever its options: this runs only without it.
  CHECK_THROWS_WITH_AS(GraphEdges::from_pairs(int64_t{1} << 40, {0}, {1}),
                       "GraphEdges: cannot allocate the offsets of 1099511627776 nodes: 8796093022216 bytes", Error);
#endif
}

TEST_CASE("GraphEdges refuses an edge out of range or given twice and graph_attention a mismatched shape") {
  const auto message = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message([] { GraphEdges::from_pairs(3, {0, 1, 2}, {1, 3, 0}); }) ==
        "GraphEdges: edge 1 (1 -> 3) names node 3, outside [0, N) for N = 3");
  CHECK(message([] { GraphEdges::from_pairs(3, {0, -1}, {1, 0}); }).find("edge 1 (-1 -> 0) names node -1") !=
        std::string::npos);
  CHECK(message([] { GraphEdges::from_pairs(3, {0, 2, 0}, {1, 1, 1}); }) ==
        "GraphEdges: the edge 0 -> 1 is given twice (edges 0 and 2); each edge may appear once");
  CHECK_THROWS_AS(GraphEdges::from_pairs(3, {0, 1}, {1}), ValueError);
  const GraphEdges g = GraphEdges::from_pairs(3, {0}, {1});
  CHECK_THROWS_AS(graph_attention(randn({4, 1, 2}), randn({4, 1, 2}), randn({4, 1, 2}), g), ShapeError);
  CHECK_THROWS_AS(graph_attention(randn({3, 1, 2}), randn({3, 1, 2}), randn({3, 2, 2}), g), ShapeError);
}
