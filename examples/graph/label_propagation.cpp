#include "examples/graph/label_propagation.h"

#include "tensor/factories.h"

namespace graph {

qkv::Tensor label_propagation(const Graph& g, int64_t iterations) {
  const int64_t N = g.nodes, K = g.classes;
  std::vector<std::vector<int64_t>> neighbours(static_cast<size_t>(N));
  for (const auto& [u, v] : g.edges) neighbours[u].push_back(v), neighbours[v].push_back(u);
  std::vector<bool> labelled(static_cast<size_t>(N), false);
  for (int64_t i : g.train) labelled[i] = true;
  qkv::Tensor f = qkv::full({N, K}, 1.0f / static_cast<float>(K));
  const auto clamp = [&](qkv::Tensor& x) {
    for (int64_t i : g.train)
      for (int64_t c = 0; c < K; ++c) x.data()[i * K + c] = c == g.labels[i] ? 1.0f : 0.0f;
  };
  clamp(f);
  for (int64_t step = 0; step < iterations; ++step) {
    qkv::Tensor next = f.clone();
    for (int64_t i = 0; i < N; ++i) {
      if (labelled[i] || neighbours[i].empty()) continue;
      float* row = next.data() + i * K;
      for (int64_t c = 0; c < K; ++c) row[c] = 0.0f;
      for (int64_t j : neighbours[i])
        for (int64_t c = 0; c < K; ++c) row[c] += f.data()[j * K + c];
      for (int64_t c = 0; c < K; ++c) row[c] /= static_cast<float>(neighbours[i].size());
    }
    f = next;
  }
  return f;
}

}  // namespace graph
