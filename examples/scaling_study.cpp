// scaling_study: how the cost of a layer grows with the sequence length n, measured.
//
// The seeds compare layers by their complexity for a sequence of n tokens of width d (d2l 11.6):
//
//   layer                          complexity     sequential ops   max path length
//   self-attention                 O(n²·d)        O(1)             O(1)
//   RNN (here a GRU)               O(n·d²)        O(n)             O(n)
//   position-wise FFN              O(n·d²)        O(1)             -
//   truncated self-attention (±w)  O(n·w·d)       O(1)             O(n/w)
//
// This program times the forward and backward of each, at a fixed width, for n = 16 ... 2048, and
// plots time against n on log scales, where O(n^k) is a straight line of slope k. It also times
// windowed attention the way nn::TransformerEncoder does it, as a window mask over the full n×n
// scores: the mask changes what is attended to, not what is computed, so that line has slope 2 as
// well; only computing the band (banded_attention below) makes truncated attention linear in n.
//
//   usage: scaling_study [--out DIR] [--width 64] [--window 8] [--max-len 2048] [--repeats 5]
//                        [--threads 1]
// writes DIR/scaling.png and prints the table, the slopes and the FLOPs the profiler counted.
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
#include "examples/common/args.h"
#include "plot/plot.h"
#include "qkv.h"

using namespace qkv;

namespace {

// Truncated self-attention computed on the band only: query i scores keys i-w ... i+w, one
// shifted product per offset, so the work is (2w+1)·n·d instead of n·n·d.
//   q, k, v (B, n, d) → (B, n, d)
Tensor banded_attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t w) {
  const int64_t B = q.size(0), n = q.size(1), d = q.size(2);
  const Tensor pad = zeros({B, w, d});
  const Tensor kp = cat({pad, k, pad}, 1), vp = cat({pad, v, pad}, 1);  // (B, n + 2w, d)
  std::vector<Tensor> scores;
  for (int64_t o = 0; o <= 2 * w; ++o) scores.push_back((q * kp.slice(1, o, o + n)).sum({-1}));
  Tensor s = stack(scores, -1) / std::sqrt(static_cast<float>(d));  // (B, n, 2w+1)
  // Offset o of query i is key i + o - w; outside [0, n) it is padding, hidden from the softmax.
  std::vector<float> inside(static_cast<size_t>(n * (2 * w + 1)));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o <= 2 * w; ++o) inside[i * (2 * w + 1) + o] = i + o - w >= 0 && i + o - w < n;
  s = where(tensor(inside, {n, 2 * w + 1}), s, scalar_tensor(-INFINITY));
  const Tensor a = s.softmax(-1);
  Tensor out = zeros({B, n, d});
  for (int64_t o = 0; o <= 2 * w; ++o) out = out + a.select(-1, o).unsqueeze(-1) * vp.slice(1, o, o + n);
  return out;
}

struct Model {
  std::string name;
  std::string claim;                             // the complexity (the seeds' table) and its slope
  std::function<Tensor(const Tensor&)> forward;  // x (B, n, d) → (B, n, d)
};

double best_ms(int repeats, const std::function<void()>& fn) {
  fn();  // warm-up: first-touch of buffers, thread start
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

int run(int argc, char** argv) {
  const examples::Args args(argc, argv,
                            {{"out", ".", "directory for scaling.png"},
                             {"width", "64", "model width d"},
                             {"window", "8", "half-width w of the truncated attention"},
                             {"max-len", "2048", "longest sequence (powers of two from 16)"},
                             {"repeats", "5", "timed runs per point; the best is kept"},
                             {"threads", "1", "threads for the kernels"}},
                            "scaling_study [options]");
  if (args.help_requested()) {
    std::printf("%s", args.help().c_str());
    return 0;
  }
  const int64_t d = args.integer("width"), w = args.integer("window"), max_len = args.integer("max-len");
  const int repeats = static_cast<int>(args.integer("repeats"));
  // One thread by default: the study measures how the work grows, and on a shared machine a
  // parallel region waits for its slowest thread, which adds noise that has nothing to do with n.
  set_num_threads(static_cast<int>(args.integer("threads")));
  const int64_t B = 1;
  manual_seed(0);

  nn::DotProductAttention attention(0.0f);
  nn::GRU gru(d, d, {.batch_first = true});
  nn::PositionWiseFFN ffn(d, 4 * d, d);
  const std::vector<Model> models = {
      {"self-attention", "O(n^2 d): slope 2", [&](const Tensor& x) { return attention.forward(x, x, x); }},
      {"window mask (+-w)", "O(n^2 d), the mask saves nothing: slope 2",
       [&](const Tensor& x) {
         const int64_t n = x.size(1);
         return attention.forward(x, x, x, IndexTensor(), nn::functional::window_mask(n, n, w));
       }},
      {"banded (+-w)", "O(n w d), truncated attention: slope 1", [&](const Tensor& x) { return banded_attention(x, x, x, w); }},
      {"GRU", "O(n d^2): slope 1", [&](const Tensor& x) { return gru.forward(x).output; }},
      {"position-wise FFN", "O(n d^2): slope 1", [&](const Tensor& x) { return ffn.forward(x); }},
  };

  std::vector<int64_t> lengths;
  for (int64_t n = 16; n <= max_len; n *= 2) lengths.push_back(n);
  std::vector<std::vector<double>> ms(models.size()), gflop(models.size());

  std::printf("forward + backward, width d = %lld, window w = %lld, batch %lld, %d thread(s); best of %d\n\n",
              static_cast<long long>(d), static_cast<long long>(w), static_cast<long long>(B),
              get_num_threads(), repeats);
  std::printf("%6s", "n");
  for (const Model& m : models) std::printf(" %18s", m.name.c_str());
  std::printf("   (ms)\n");
  for (int64_t n : lengths) {
    Tensor x = randn({B, n, d}, /*requires_grad=*/true);
    std::printf("%6lld", static_cast<long long>(n));
    for (size_t i = 0; i < models.size(); ++i) {
      auto step = [&] {
        x.zero_grad();
        models[i].forward(x).sum().backward();
      };
      ms[i].push_back(best_ms(repeats, step));
      Profiler profiler;  // one more run, for the FLOPs of its matrix products
      step();
      profiler.stop();
      int64_t flops = 0;
      for (const OpProfile& r : profiler.ops()) flops += r.flops;
      gflop[i].push_back(static_cast<double>(flops) * 1e-9);
      std::printf(" %18.3f", ms[i].back());
    }
    std::printf("\n");
    std::fflush(stdout);
  }

  // The least-squares slope of log(time) against log(n) over the longer half of the lengths: the
  // exponent k of O(n^k) once the largest term dominates.
  const size_t first = lengths.size() / 2;
  std::printf("\nslope of log time vs log n for n = %lld ... %lld (the k of O(n^k)); FLOPs of the matrix\n"
              "products at n = %lld, as the profiler counts them (elementwise work is not counted):\n",
              static_cast<long long>(lengths[first]), static_cast<long long>(lengths.back()),
              static_cast<long long>(lengths.back()));
  for (size_t i = 0; i < models.size(); ++i) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    const double k = static_cast<double>(lengths.size() - first);
    for (size_t j = first; j < lengths.size(); ++j) {
      const double lx = std::log(static_cast<double>(lengths[j])), ly = std::log(ms[i][j]);
      sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
    }
    const double slope = (k * sxy - sx * sy) / (k * sxx - sx * sx);
    std::printf("  %-18s %5.2f   %8.4f GFLOP   expected: %s\n", models[i].name.c_str(), slope, gflop[i].back(),
                models[i].claim.c_str());
  }

  plot::LinePlotSpec spec;
  spec.title = "forward + backward time vs sequence length (d = " + std::to_string(d) + ")";
  spec.x_label = "sequence length n";
  spec.y_label = "time (ms)";
  spec.log_x = spec.log_y = true;
  spec.markers = true;
  for (size_t i = 0; i < models.size(); ++i) {
    plot::Series s{models[i].name, {}, ms[i]};
    for (int64_t n : lengths) s.x.push_back(static_cast<double>(n));
    spec.series.push_back(s);
  }
  std::filesystem::create_directories(args.str("out"));
  const std::string path = args.str("out") + "/scaling.png";
  plot::draw_line_plot(spec).write_png(path);
  std::printf("\nwrote %s\n", path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scaling_study: %s\n", e.what());
    return 1;
  }
}
