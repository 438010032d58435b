#include "examples/graph/figures.h"

#include "plot/plot.h"

namespace graph {

void draw_attention(const Graph& g, const EdgeWeights& a, const std::string& title, const std::string& path) {
  const int64_t N = g.nodes, H = a.weights.size(1);
  qkv::plot::HeatmapSpec spec;
  spec.rows = spec.cols = static_cast<int>(N);
  spec.values.assign(static_cast<size_t>(N * N), 0.0f);  // Blues from 0: a cell without an edge is white
  for (int64_t e = 0; e < a.edges.edges(); ++e) {
    float mean = 0.0f;
    for (int64_t h = 0; h < H; ++h) mean += a.weights.at({e, h}) / static_cast<float>(H);
    spec.values[a.edges.targets()[e] * N + a.edges.sources()[e]] = mean;
  }
  spec.colormap = qkv::plot::Colormap::Blues;
  spec.value_min = 0.0f;
  spec.title = title;
  spec.x_label = "source s (attended to)";
  spec.y_label = "node t (attending)";
  qkv::plot::draw_heatmap(spec).write_png(path);
}

void draw_sweep(const std::vector<double>& homophily, const std::vector<std::string>& models,
                const std::vector<std::vector<double>>& accuracy, const std::string& path) {
  qkv::plot::LinePlotSpec spec;
  spec.title = "test accuracy against homophily";
  spec.x_label = "homophily h (fraction of edges inside a class)";
  spec.y_label = "test accuracy";
  spec.markers = true;
  spec.y_range = qkv::plot::AxisRange{0.0, 1.0};
  for (size_t m = 0; m < models.size(); ++m) spec.series.push_back({models[m], homophily, accuracy[m]});
  qkv::plot::draw_line_plot(spec).write_png(path);
}

}  // namespace graph
