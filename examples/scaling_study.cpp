// scaling_study: how the cost of a layer grows with the sequence length n, measured.
//
// d2l 11.6 compares layers by their complexity for a sequence of n tokens of width d:
//
//   layer                          complexity     sequential ops   max path length
//   self-attention                 O(n²·d)        O(1)             O(1)
//   RNN (here a GRU)               O(n·d²)        O(n)             O(n)
//   position-wise FFN              O(n·d²)        O(1)             -
//   truncated self-attention (±w)  O(n·w·d)       O(1)             O(n/w)
//
// This program times the forward and backward of each, at a fixed width, for n = 16 ... 4096, and
// plots time against n on log scales, where O(n^k) is a straight line of slope k. It also times
// windowed attention as a window mask over the full n×n scores: the mask changes what is attended
// to, not what is computed, so that line has slope 2 as well. Computing the band only
// (nn::functional::banded_attention, what a Transformer encoder with a window does) makes truncated
// attention linear in n, and with it a whole windowed encoder block.
//
// The same holds on a graph: attention restricted to the edges of a graph of N nodes, each with 8
// incoming edges, costs O(E·d) computed on the edges (graph_attention) and O(N²·d) as dense
// attention under the adjacency mask (graph_attention_reference); the second table times both
// against the number of edges E = 8N, for N = 16 ... max-len.
//
// The third table is the attention mechanisms a Transformer block can be built with
// (nn/attention_interface.h), each a whole multi-head layer with its projections, 4 heads: dense
// softmax attention, O(n²); talking heads, O(n²) and more; Performer with m = 64 random features and
// Linformer projecting to k = 64 rows, both O(n); and the window ±w on the band, O(n·w). It runs
// n = 256 ... --attention-len, each O(n²) mechanism only while its (H, n, n) tensors fit in memory,
// and prints the n at which each linear one overtakes dense attention.
//
//   usage: scaling_study [--out DIR] [--width 64] [--window 8] [--max-len 4096] [--repeats 5]
//                        [--threads 1] [--attention-len 16384]
// writes DIR/scaling.png, DIR/graph_scaling.png and DIR/attention_scaling.png and prints the
// tables, the slopes and the FLOPs the profiler counted.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "autograd/debug/profiler.h"
#include "autograd/ops/graph_attention.h"
#include "examples/common/memory.h"
#include "examples/common/program.h"
#include "nn/functional/banded_attention.h"
#include "plot/plot.h"
#include "qkv.h"

using namespace qkv;

namespace {

struct Model {
  std::string name;
  std::string claim;                             // the complexity (d2l 11.6's table) and its slope
  std::function<Tensor(const Tensor&)> forward;  // x (B, n, d) → (B, n, d)
};

// The layers the study times, at width d. Built in this order after manual_seed(0), so that every
// run initializes them alike.
struct Layers {
  nn::DotProductAttention attention{0.0f};
  nn::GRU gru;
  nn::PositionWiseFFN ffn;
  nn::TransformerEncoderBlock block;  // 4 heads, a window of ±w computed on the band
  Layers(int64_t d, int64_t w)
      : gru(d, d, {.batch_first = true}),
        ffn(d, 4 * d, d),
        block({.num_hiddens = d,
               .ffn_num_hiddens = 4 * d,
               .num_heads = 4,
               .dropout = 0.0f,
               .attend = nn::AttentionRestriction::window(w)}) {}
};

// The five lines of the study; the windowed ones keep w keys on each side of a query.
std::vector<Model> make_models(Layers& layers, int64_t w) {
  return {
      {"self-attention", "O(n^2 d): slope 2",
       [&layers](const Tensor& x) { return layers.attention.forward(x, x, x); }},
      {"window mask (+-w)", "O(n^2 d), the mask saves nothing: slope 2",
       [&layers, w](const Tensor& x) {
         const int64_t n = x.size(1);
         return layers.attention.forward(x, x, x, IndexTensor(), nn::functional::window_mask(n, n, w));
       }},
      {"banded (+-w)", "O(n w d), truncated attention: slope 1",
       [w](const Tensor& x) {
         const Tensor h = x.unsqueeze(1);  // one head: (B, 1, n, d)
         return nn::functional::banded_attention(h, h, h, w).output.squeeze(1);
       }},
      {"encoder block (+-w)", "O(n w d + n d^2): slope 1",
       [&layers](const Tensor& x) { return layers.block.forward(x); }},
      {"GRU", "O(n d^2): slope 1", [&layers](const Tensor& x) { return layers.gru.forward(x).output; }},
      {"position-wise FFN", "O(n d^2): slope 1",
       [&layers](const Tensor& x) { return layers.ffn.forward(x); }},
  };
}

// What the command line sets: width d, window half-width w, the longest n, timed runs per point,
// the directory of the plot.
struct Options {
  int64_t d = 0, w = 0, max_len = 0, attention_len = 0;
  int repeats = 0;
  std::string out;
};

constexpr int64_t kBatch = 1;  // one sequence: the study varies n alone

double best_ms(int repeats, const std::function<void()>& fn) {
  fn();  // warm-up: first-touch of buffers, thread start
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(
        best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// What one model costs at one length: the best time of a forward + backward, and the GFLOP of its
// matrix products in one more run, as the profiler counts them.
struct Cost {
  double ms = 0, gflop = 0;
};

Cost measure(const Model& model, Tensor& x, int repeats) {
  auto step = [&] {
    x.zero_grad();
    model.forward(x).sum().backward();
  };
  Cost cost;
  cost.ms = best_ms(repeats, step);
  Profiler profiler;
  step();
  profiler.stop();
  int64_t flops = 0;
  for (const OpProfile& r : profiler.ops()) flops += r.flops;
  cost.gflop = static_cast<double>(flops) * 1e-9;
  return cost;
}

// The costs of every model at n = 16, 32, ... max_len, printed as a table while they are measured.
struct Timings {
  std::vector<int64_t> lengths;
  std::vector<std::vector<double>> ms, gflop;  // [model][length]
};

Timings time_models(const std::vector<Model>& models, const Options& o) {
  Timings t;
  for (int64_t n = 16; n <= o.max_len; n *= 2) t.lengths.push_back(n);
  t.ms.resize(models.size());
  t.gflop.resize(models.size());
  std::printf("forward + backward, width d = %lld, window w = %lld, batch %lld, %d thread(s); best of %d\n\n",
              static_cast<long long>(o.d), static_cast<long long>(o.w), static_cast<long long>(kBatch),
              get_num_threads(), o.repeats);
  std::printf("%6s", "n");
  for (const Model& m : models) std::printf(" %18s", m.name.c_str());
  std::printf("   (ms)\n");
  for (int64_t n : t.lengths) {
    Tensor x = randn({kBatch, n, o.d}, /*requires_grad=*/true);
    std::printf("%6lld", static_cast<long long>(n));
    for (size_t i = 0; i < models.size(); ++i) {
      const Cost c = measure(models[i], x, o.repeats);
      t.ms[i].push_back(c.ms);
      t.gflop[i].push_back(c.gflop);
      std::printf(" %18.3f", c.ms);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return t;
}

// The least-squares slope of log(y) against log(x) over the points from `first` on.
double loglog_slope(const std::vector<int64_t>& x, const std::vector<double>& y, size_t first) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double k = static_cast<double>(x.size() - first);
  for (size_t j = first; j < x.size(); ++j) {
    const double lx = std::log(static_cast<double>(x[j])), ly = std::log(y[j]);
    sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
  }
  return (k * sxy - sx * sy) / (k * sxx - sx * sx);
}

// The slope over the longer half of the lengths: the exponent k of O(n^k) once the largest term
// dominates.
void print_slopes(const std::vector<Model>& models, const Timings& t) {
  const size_t first = t.lengths.size() / 2;
  std::printf(
      "\nslope of log time vs log n for n = %lld ... %lld (the k of O(n^k)); FLOPs of the matrix\n"
      "products at n = %lld, as the profiler counts them (elementwise work is not counted):\n",
      static_cast<long long>(t.lengths[first]), static_cast<long long>(t.lengths.back()),
      static_cast<long long>(t.lengths.back()));
  for (size_t i = 0; i < models.size(); ++i)
    std::printf("  %-20s %5.2f   %8.4f GFLOP   expected: %s\n", models[i].name.c_str(),
                loglog_slope(t.lengths, t.ms[i], first), t.gflop[i].back(), models[i].claim.c_str());
}

// Time against x on log scales, where O(x^k) is a straight line of slope k: one line per name,
// series i at x[0 .. ms[i].size()), written to OUT/file.
void write_time_plot(const std::string& title, const std::string& x_label, const std::vector<std::string>& names,
                     const std::vector<int64_t>& x, const std::vector<std::vector<double>>& ms, const Options& o,
                     const std::string& file) {
  plot::LinePlotSpec spec;
  spec.title = title;
  spec.x_label = x_label;
  spec.y_label = "time (ms)";
  spec.log_x = spec.log_y = spec.markers = true;
  for (size_t i = 0; i < names.size(); ++i) {
    plot::Series s{names[i], {}, ms[i]};
    for (size_t j = 0; j < ms[i].size(); ++j) s.x.push_back(static_cast<double>(x[j]));
    spec.series.push_back(s);
  }
  std::filesystem::create_directories(o.out);
  const std::string path = o.out + "/" + file;
  plot::draw_line_plot(spec).write_png(path);
  std::printf("\nwrote %s\n", path.c_str());
}

// Time against n on log scales, where O(n^k) is a straight line of slope k: OUT/scaling.png.
void write_plot(const std::vector<Model>& models, const Timings& t, const Options& o) {
  std::vector<std::string> names;
  for (const Model& m : models) names.push_back(m.name);
  write_time_plot("forward + backward time vs sequence length (d = " + std::to_string(o.d) + ")",
                  "sequence length n", names, t.lengths, t.ms, o, "scaling.png");
}

constexpr int64_t kGraphDegree = 8;

// N nodes, each with kGraphDegree incoming edges from distinct random sources.
GraphEdges random_regular_graph(int64_t N, Generator& gen) {
  std::vector<int64_t> src, dst;
  for (int64_t t = 0; t < N; ++t) {
    std::vector<int64_t> picked;
    while (static_cast<int64_t>(picked.size()) < std::min(kGraphDegree, N)) {
      const auto s = static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(N)));
      if (std::find(picked.begin(), picked.end(), s) == picked.end()) picked.push_back(s);
    }
    for (int64_t s : picked) src.push_back(s), dst.push_back(t);
  }
  return GraphEdges::from_pairs(N, src, dst);
}

// Attention on random graphs of degree 8, on the edges and dense under the adjacency mask, against
// the number of edges: the table, the slopes and OUT/graph_scaling.png.
void graph_study(const Options& o) {
  const std::vector<std::string> names = {"graph_attention", "dense masked"};
  Timings t;
  t.ms.resize(2);
  std::vector<int64_t> edges;
  std::printf("\ngraph attention, forward + backward, degree %lld, width d = %lld, one head; best of %d\n\n",
              static_cast<long long>(kGraphDegree), static_cast<long long>(o.d), o.repeats);
  std::printf("%6s %8s %18s %18s   (ms)\n", "N", "E", names[0].c_str(), names[1].c_str());
  Generator gen(0);
  for (int64_t N = 16; N <= o.max_len; N *= 2) {
    const GraphEdges g = random_regular_graph(N, gen);
    Tensor q = randn({N, 1, o.d}, true), k = randn({N, 1, o.d}, true), v = randn({N, 1, o.d}, true);
    const auto timed = [&](auto attend) {
      return best_ms(o.repeats, [&] {
        q.zero_grad(), k.zero_grad(), v.zero_grad();
        attend(q, k, v, g).output.sum().backward();
      });
    };
    edges.push_back(g.edges());
    t.ms[0].push_back(timed(graph_attention));
    t.ms[1].push_back(timed(graph_attention_reference));
    std::printf("%6lld %8lld %18.3f %18.3f\n", static_cast<long long>(N), static_cast<long long>(g.edges()),
                t.ms[0].back(), t.ms[1].back());
    std::fflush(stdout);
  }
  const size_t first = edges.size() / 2;
  std::printf("\nslope of log time vs log E for E = %lld ... %lld:\n", static_cast<long long>(edges[first]),
              static_cast<long long>(edges.back()));
  std::printf("  %-20s %5.2f   expected: O(E d), slope 1\n", names[0].c_str(), loglog_slope(edges, t.ms[0], first));
  std::printf("  %-20s %5.2f   expected: O(N^2 d) = O(E^2 d / 64), slope 2\n", names[1].c_str(),
              loglog_slope(edges, t.ms[1], first));
  write_time_plot("graph attention: forward + backward time vs edges (degree 8, d = " + std::to_string(o.d) + ")",
                  "edges E", names, edges, t.ms, o, "graph_scaling.png");
}

// One attention mechanism of the third table: its factory's setup, and the longest n it runs at.
struct Mechanism {
  std::string name, claim;
  nn::AttentionSetup setup;
  std::string registered;  // its registry name
  int64_t max_n;
};

// (B, H, n, n) floats of one tensor, and how many of them an O(n²) mechanism keeps at once.
int64_t largest_quadratic_n(int64_t heads, int64_t tensors, int64_t budget_bytes) {
  int64_t n = 256;
  while (kBatch * heads * (2 * n) * (2 * n) * 4 * tensors <= budget_bytes) n *= 2;
  return n;
}

// The first n at which `fast` takes less time than `dense`, interpolated on log scales between the
// two lengths where the order changes; 0 if it never does over the lengths both ran.
double crossover(const std::vector<int64_t>& n, const std::vector<double>& fast, const std::vector<double>& dense) {
  for (size_t j = 0; j < std::min(fast.size(), dense.size()); ++j) {
    if (fast[j] >= dense[j]) continue;
    if (j == 0) return static_cast<double>(n[0]);
    const double before = std::log(fast[j - 1] / dense[j - 1]), after = std::log(fast[j] / dense[j]);
    const double t = before / (before - after);  // where log(fast/dense) crosses 0
    return std::exp(std::log(static_cast<double>(n[j - 1])) + t * std::log(2.0));
  }
  return 0;
}

// The slopes of the third table over n >= 1024 (each over the lengths it ran), the n at which each
// mechanism overtakes dense attention, and OUT/attention_scaling.png.
void report_attention_study(const std::vector<Mechanism>& mechanisms, const Timings& t, const Options& o) {
  std::printf("\nslope of log time vs log n from n = 1024 on, and where each overtakes dense attention:\n");
  const size_t first = std::min<size_t>(2, t.lengths.size() - 1);  // n = 1024: past the fixed costs
  for (size_t i = 0; i < mechanisms.size(); ++i) {
    const std::vector<int64_t> n(t.lengths.begin(), t.lengths.begin() + static_cast<long>(t.ms[i].size()));
    if (t.ms[i].size() > first + 1)
      std::printf("  %-16s slope %5.2f", mechanisms[i].name.c_str(), loglog_slope(n, t.ms[i], first));
    else
      std::printf("  %-16s slope     -", mechanisms[i].name.c_str());  // too few lengths from 1024 on
    std::printf("   expected: %-26s", mechanisms[i].claim.c_str());
    if (i > 0) {
      const double at = crossover(t.lengths, t.ms[i], t.ms[0]);
      if (at > 0)
        std::printf("  faster than dense from n ~ %.0f", at);
      else
        std::printf("  not faster than dense up to n = %lld", static_cast<long long>(n.back()));
    }
    std::printf("\n");
  }
  std::vector<std::string> names;
  for (const Mechanism& m : mechanisms) names.push_back(m.name);
  write_time_plot("attention mechanisms: forward + backward time vs n (4 heads, d = " + std::to_string(o.d) + ")",
                  "sequence length n", names, t.lengths, t.ms, o, "attention_scaling.png");
}

// The mechanisms of nn/attention_interface.h, forward + backward of the whole layer, against n.
void attention_study(const Options& o) {
  const int64_t H = 4, budget = int64_t{1} << 30;  // 1 GiB for the (H, n, n) tensors
  // As in a Transformer encoder's blocks: above 8 MiB of weights, backward recomputes them.
  nn::AttentionSetup base{.num_hiddens = o.d, .num_heads = H, .max_len = o.attention_len, .dropout = 0.0f,
                          .recompute_weights_above = nn::TransformerEncoderOptions{}.recompute_weights_above};
  nn::AttentionSetup window = base, approximate = base, causal = base;
  window.attend = nn::AttentionRestriction::window(o.w);
  causal.attend = nn::AttentionRestriction::causal();
  approximate.features = 64;
  // Dense attention keeps no (H, n, n) tensor: the tiled kernel (tensor/kernels/attention.h) holds
  // O(n·d) per thread, so it runs to the longest n.
  const std::vector<Mechanism> mechanisms = {
      {"dense", "O(n^2 d): slope 2", base, "dense", o.attention_len},
      {"dense causal", "O(n^2 d / 2): slope 2", causal, "dense", o.attention_len},
      {"talking heads", "O(n^2 (d + H)): slope 2", base, "talking_heads", largest_quadratic_n(H, 8, budget)},
      {"performer m=64", "O(n m d): slope 1", approximate, "performer", o.attention_len},
      {"linformer k=64", "O(n k d): slope 1", approximate, "linformer", o.attention_len},
      {"window +-w", "O(n w d): slope 1", window, "dense", o.attention_len}};
  Timings t;
  for (int64_t n = 256; n <= o.attention_len; n *= 2) t.lengths.push_back(n);
  t.ms.resize(mechanisms.size());
  std::printf("\nattention mechanisms, forward + backward of the layer, %lld heads, width d = %lld; best of %d\n\n",
              static_cast<long long>(H), static_cast<long long>(o.d), o.repeats);
  std::printf("%6s", "n");
  for (const Mechanism& m : mechanisms) std::printf(" %15s", m.name.c_str());
  std::printf("   (ms)\n");
  manual_seed(0);
  std::vector<std::shared_ptr<nn::Attention>> layers;
  for (const Mechanism& m : mechanisms) layers.push_back(nn::attention_mechanism(m.registered)(m.setup));
  for (int64_t n : t.lengths) {
    Tensor x = randn({kBatch, n, o.d}, /*requires_grad=*/true);
    std::printf("%6lld", static_cast<long long>(n));
    for (size_t i = 0; i < mechanisms.size(); ++i) {
      if (n > mechanisms[i].max_n) {
        std::printf(" %15s", "-");
        continue;
      }
      const Model model{mechanisms[i].name, mechanisms[i].claim,
                        [layer = layers[i]](const Tensor& v) { return layer->forward(v, v, v); }};
      t.ms[i].push_back(measure(model, x, o.repeats).ms);
      std::printf(" %15.3f", t.ms[i].back());
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  report_attention_study(mechanisms, t, o);
}

const std::vector<examples::Args::Option> kOptions = {
    {"out", ".", "directory for scaling.png"},
    {"width", "64", "model width d (a multiple of 4)"},
    {"window", "8", "half-width w of the truncated attention"},
    {"max-len", "4096", "longest sequence (powers of two from 16)"},
    {"repeats", "5", "timed runs per point; the best is kept"},
    {"threads", "1", "threads for the kernels"},
    {"attention-len", "16384", "longest sequence of the attention mechanisms' table (256 .. 65536; slopes from 2048)"}};

// Refuses a width the 4 heads do not divide, and a --max-len whose n × n tensors (the first two
// tables' self-attention, mask and graph attention keep about six of them, with their gradients)
// would not fit in the memory available, before anything is timed or written.
void check_sizes(const Options& o) {
  if (o.d % 4 != 0)
    throw ValueError("option --width " + std::to_string(o.d) +
                     ": expected a multiple of 4 (the encoder block's and the mechanisms' 4 heads each take d / 4)");
  const auto bytes_at = [](int64_t n) { return 6.0 * 4.0 * static_cast<double>(n) * static_cast<double>(n); };
  const int64_t available = examples::available_memory_bytes();
  if (available == 0 || bytes_at(o.max_len) <= static_cast<double>(available)) return;
  int64_t fits = 16;
  while (fits * 2 <= o.max_len && bytes_at(fits * 2) <= static_cast<double>(available)) fits *= 2;
  throw ValueError("option --max-len " + std::to_string(o.max_len) + ": the n × n tensors of the first tables take about " +
                   examples::format_bytes(bytes_at(o.max_len)) + " there, more than the " +
                   examples::format_bytes(static_cast<double>(available)) + " this machine has available; at most " +
                   std::to_string(fits) + " here");
}

int run(const examples::Args& args) {
  const Options options{.d = args.integer_in("width", 4, 4096),
                        .w = args.integer_in("window", 0, 4096),
                        .max_len = args.integer_in("max-len", 16, 65536),
                        .attention_len = args.integer_in("attention-len", 256, 65536),
                        .repeats = static_cast<int>(args.integer_in("repeats", 1, 1000)),
                        .out = args.str("out")};
  // One thread by default: the study measures how the work grows, and on a shared machine a
  // parallel region waits for its slowest thread, which adds noise that has nothing to do with n.
  set_num_threads(static_cast<int>(args.integer_in("threads", 1, kMaxThreads)));
  check_sizes(options);
  examples::prepare_out(args, "out", {"scaling.png", "graph_scaling.png", "attention_scaling.png"});
  manual_seed(0);
  Layers layers(options.d, options.w);
  const std::vector<Model> models = make_models(layers, options.w);
  const Timings timings = time_models(models, options);
  print_slopes(models, timings);
  write_plot(models, timings, options);
  graph_study(options);
  attention_study(options);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return qkv::examples::run_tool(
      argc, argv, {"scaling_study", "the cost of attention, a GRU, an FFN and the attention mechanisms against sequence length", kOptions, run});
}
