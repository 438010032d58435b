// Time of the tiled attention kernel (tensor/kernels/attention.h) alone, forward and backward, at
// the shapes the programs give it: the lm step (batch 4, 4 heads of d = 32, 256 characters, causal),
// the tagger's base config (32 sentences of 64, 8 heads of 32), the vit step (128 images of 49
// patches and a class token, 4 heads of 16), and one long sequence (4 heads of
// d = 16 at n = 4,096, as scaling_study's dense row). GFLOP counts the products the kernel
// computes (attention_product_madds: the key tiles each query tile visits), so a causal block
// counts about half of a full one.
// Usage: bench_attention [--threads LIST] [--weights] [SHAPE...] (threads default 1,2; a SHAPE is a
// word of the shapes' names, lm, tagger, vit or long, all by default). --weights has forward write
// the (B, H, Q, K) weights and backward read them instead of making them again (need_weights); its
// GFLOP still count the recomputed product, so the two runs' figures compare as times. Each figure
// is the median of 9 rounds of the best of 5 calls.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/peak.h"
#include "tensor/kernels/attention.h"
#include "tensor/random.h"
#include "tensor/threads.h"

using namespace qkv::kernels;

namespace {

double median_us(const std::function<void()>& fn) {
  fn();
  std::vector<double> rounds;
  for (int r = 0; r < 9; ++r) {
    double best = 1e30;
    for (int i = 0; i < 5; ++i) {
      const auto start = std::chrono::steady_clock::now();
      fn();
      best = std::min(best,
                      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
    rounds.push_back(best);
  }
  std::nth_element(rounds.begin(), rounds.begin() + 4, rounds.end());
  return rounds[4];
}

std::vector<float> random_values(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  qkv::Generator(seed).fill_uniform(v.data(), n, -1.0f, 1.0f);
  return v;
}

struct Shape {
  const char* name;
  AttentionSizes n;
  bool causal;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> thread_counts = {1, 2};
  std::vector<std::string> wanted;
  bool keep_weights = false;
  for (int a = 1; a < argc; ++a) {
    if (std::string(argv[a]) == "--weights") {
      keep_weights = true;
      continue;
    }
    if (std::string(argv[a]) != "--threads" || a + 1 == argc) {
      wanted.emplace_back(argv[a]);
      continue;
    }
    thread_counts.clear();
    for (const char* p = argv[++a]; *p;) {
      char* end = nullptr;
      thread_counts.push_back(static_cast<int>(std::strtol(p, &end, 10)));
      if (end == p) break;
      p = *end == ',' ? end + 1 : end;
    }
  }
  const std::vector<Shape> shapes = {{"lm step (4, 4 heads, 256, d 32) causal", {4, 4, 256, 256, 32}, true},
                                     {"tagger base (32, 8 heads, 64, d 32)", {32, 8, 64, 64, 32}, false},
                                     {"vit step (128, 4 heads, 50, d 16)", {128, 4, 50, 50, 16}, false},
                                     {"long (1, 4 heads, 4096, d 16)", {1, 4, 4096, 4096, 16}, false}};
  std::vector<double> peak;
  for (int t : thread_counts) peak.push_back(qkv::bench::peak_gflops(t));
  for (size_t t = 0; t < thread_counts.size(); ++t)
    std::printf("# peak FMA throughput: threads=%d %.1f GFLOP/s\n", thread_counts[t], peak[t]);
  for (const Shape& s : shapes) {
    if (!wanted.empty() && std::none_of(wanted.begin(), wanted.end(),
                                        [&](const std::string& w) { return std::string(s.name).rfind(w, 0) == 0; }))
      continue;
    const AttentionSizes& n = s.n;
    const int64_t D = n.H * n.d;
    const std::vector<float> q = random_values(n.B * n.Tq * D, 1), k = random_values(n.B * n.Tk * D, 2),
                             v = random_values(n.B * n.Tk * D, 3), dout = random_values(n.B * n.Tq * D, 4);
    std::vector<float> out(q.size()), lse(static_cast<size_t>(n.B * n.H * n.Tq)), dq(q.size()), dk(k.size()),
        dv(v.size());
    std::vector<float> weights(keep_weights ? static_cast<size_t>(n.B * n.H * n.Tq * n.Tk) : 0);
    float* w = keep_weights ? weights.data() : nullptr;
    std::vector<int64_t> lens;
    if (s.causal)
      for (int64_t block = 0; block < n.B * n.H; ++block)
        for (int64_t i = 0; i < n.Tq; ++i) lens.push_back(i + 1);
    const int64_t* l = s.causal ? lens.data() : nullptr;
    const HeadsView qv{q.data(), n.Tq * D, n.d, D}, kv{k.data(), n.Tk * D, n.d, D}, vv{v.data(), n.Tk * D, n.d, D};
    const double madds = static_cast<double>(attention_product_madds(n, l));
    const auto forward = [&] { attention_forward(n, qv, kv, vv, l, {}, {}, {}, out.data(), lse.data(), w); };
    const auto backward = [&] {
      attention_backward(n, qv, kv, vv, l, {}, {}, {}, out.data(), lse.data(), w, dout.data(),
                         AttentionGrads{dq.data(), dk.data(), dv.data()});
    };
    if (keep_weights) forward();  // backward reads the weights forward wrote
    for (int pass = 0; pass < 2; ++pass) {
      std::string line = std::string(s.name) + (pass == 0 ? " forward:" : " backward:");
      const double flops = madds * 2 * (pass == 0 ? 2 : 5);  // backward: P again, dP, dV, dQ, dK
      for (size_t t = 0; t < thread_counts.size(); ++t) {
        qkv::set_num_threads(thread_counts[t]);
        const double us = median_us(pass == 0 ? std::function<void()>(forward) : std::function<void()>(backward));
        char buf[128];
        std::snprintf(buf, sizeof buf, " threads=%d %.0f us %.1f GFLOP/s %.0f%%", thread_counts[t], us,
                      flops / us * 1e-3, 100.0 * flops / us * 1e-3 / peak[t]);
        line += buf;
      }
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
