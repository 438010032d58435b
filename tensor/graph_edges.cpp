#include "tensor/graph_edges.h"

#include <algorithm>
#include <new>
#include <numeric>
#include <string>
#include <utility>

#include "tensor/error.h"

namespace qkv {
namespace {

// Past 2^59 nodes the offsets, 8 bytes a node, come near what 64-bit memory can index (a
// std::vector holds fewer than 2^60 integers): no sensible graph, so a ValueError before any
// allocation.
constexpr int64_t kMaxNodes = int64_t{1} << 59;

// Offsets (n + 1) of the groups of `keys`, each in [0, n) and sorted ascending.
std::vector<int64_t> group_offsets(int64_t n, const std::vector<int64_t>& keys) {
  std::vector<int64_t> offsets;
  try {
    offsets.assign(static_cast<size_t>(n) + 1, 0);
  } catch (const std::bad_alloc&) {  // a count in range that memory cannot hold: say what was asked
    throw Error("GraphEdges: cannot allocate the offsets of " + std::to_string(n) + " nodes: " +
                std::to_string((n + 1) * static_cast<int64_t>(sizeof(int64_t))) + " bytes");
  }
  for (int64_t key : keys) ++offsets[static_cast<size_t>(key) + 1];
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  return offsets;
}

void check_pairs(int64_t nodes, const std::vector<int64_t>& sources, const std::vector<int64_t>& targets) {
  if (nodes < 0) throw ValueError("GraphEdges: the number of nodes must be >= 0, got " + std::to_string(nodes));
  if (nodes > kMaxNodes)
    throw ValueError("GraphEdges: " + std::to_string(nodes) + " nodes are more than 64-bit memory can index (their "
                     "offsets take 8 bytes a node; at most " + std::to_string(kMaxNodes) + " nodes)");
  if (sources.size() != targets.size())
    throw ValueError("GraphEdges: " + std::to_string(sources.size()) + " sources and " +
                     std::to_string(targets.size()) + " targets: every edge needs one of each");
  for (size_t e = 0; e < sources.size(); ++e)
    for (int64_t node : {sources[e], targets[e]})
      if (node < 0 || node >= nodes)
        throw ValueError("GraphEdges: edge " + std::to_string(e) + " (" + std::to_string(sources[e]) + " -> " +
                         std::to_string(targets[e]) + ") names node " + std::to_string(node) +
                         ", outside [0, N) for N = " + std::to_string(nodes));
}

}  // namespace

GraphEdges GraphEdges::from_pairs(int64_t nodes, const std::vector<int64_t>& sources,
                                  const std::vector<int64_t>& targets) {
  check_pairs(nodes, sources, targets);
  const int64_t E = static_cast<int64_t>(sources.size());
  std::vector<int64_t> order(static_cast<size_t>(E));
  std::iota(order.begin(), order.end(), int64_t{0});
  const auto key = [&](int64_t e) { return std::pair{targets[e], sources[e]}; };
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return key(a) < key(b); });
  std::vector<int64_t> src(static_cast<size_t>(E)), dst(static_cast<size_t>(E));
  for (int64_t i = 0; i < E; ++i) {
    src[i] = sources[order[i]], dst[i] = targets[order[i]];
    if (i > 0 && src[i] == src[i - 1] && dst[i] == dst[i - 1])
      throw ValueError("GraphEdges: the edge " + std::to_string(src[i]) + " -> " + std::to_string(dst[i]) +
                       " is given twice (edges " + std::to_string(std::min(order[i - 1], order[i])) + " and " +
                       std::to_string(std::max(order[i - 1], order[i])) + "); each edge may appear once");
  }
  // The transpose: CSR edge ids ordered by (source, target). A stable sort by source keeps the
  // targets ascending, since the CSR order is by target first.
  std::vector<int64_t> by_source(static_cast<size_t>(E));
  std::iota(by_source.begin(), by_source.end(), int64_t{0});
  std::stable_sort(by_source.begin(), by_source.end(), [&](int64_t a, int64_t b) { return src[a] < src[b]; });
  GraphEdges g;
  g.nodes_ = nodes;
  g.offsets_ = IndexTensor(group_offsets(nodes, dst));
  g.out_offsets_ = IndexTensor(group_offsets(nodes, src));
  g.sources_ = IndexTensor(std::move(src));
  g.targets_ = IndexTensor(std::move(dst));
  g.out_edges_ = IndexTensor(std::move(by_source));
  return g;
}

int64_t GraphEdges::in_degree(int64_t t) const {
  if (t < 0 || t >= nodes_)
    throw IndexError("GraphEdges::in_degree: node " + std::to_string(t) + " is outside [0, N) for N = " +
                     std::to_string(nodes_));
  return offsets_[t + 1] - offsets_[t];
}

}  // namespace qkv
