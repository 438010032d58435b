// `tagger bench`: its configs, its FLOP count against the count derived by hand from the model's
// products, and its line.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "bench/tagger_bench.h"
#include "tensor/error.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"

using namespace tagger;

namespace {

// The FLOPs of one training step of a Transformer tagger over N = B·T positions (padding included:
// the products run over whole padded batches), a multiply-add counted 2, from what the ops announce:
//   per layer   the projections W_q, W_k, W_v, W_o   4 · 2·N·d·d
//               attention's scores Q·Kᵀ and sum P·V  2 · 2·H·T·L·(d/H), L = Σ_b valid_len_b: the
//                                                    fused kernel leaves out keys past a sentence's
//                                                    end, whose weights are 0
//               the FFN's two linear layers          2 · 2·N·d·f
//   the tag head                                     2·N·d·C
// The embedding is a lookup, and norms, softmax, dropout, the loss and Adam are not products.
// Backward computes two products of each forward one's size, since both inputs need a gradient
// (the weight, and the activation that leads back to the embedding): dX = dY·Wᵀ and dW = Xᵀ·dY;
// for attention dP = dO·Vᵀ, dV, dQ and dK. So a step is 3 forwards.
int64_t transformer_step_flops(const BenchConfig& c) {
  qkv::manual_seed(0);  // the batch the bench's step trains on
  const BenchBatch batch = make_bench_batch(c);
  int64_t L = 0;
  for (int64_t b = 0; b < c.B; ++b) L += batch.input.valid_lens[b];
  const int64_t N = c.B * c.T, d = c.model.d_model, f = c.model.ffn_width;
  const int64_t layer = 4 * 2 * N * d * d + 2 * 2 * c.T * L * d + 2 * 2 * N * d * f;
  return 3 * (c.model.layers * layer + 2 * N * d * c.C);
}

BenchConfig small_transformer() {
  BenchConfig c = bench_config("tiny");
  c.model.d_model = 8, c.model.heads = 2, c.model.ffn_width = 12, c.model.layers = 2;
  c.V = 20, c.C = 3, c.B = 2, c.T = 5, c.min_len = 2;
  return c;
}

}  // namespace

TEST_CASE("tagger bench knows its configs") {
  CHECK(bench_config("small").model.d_model == 128);
  CHECK(bench_config("base").T == 128);
  const BenchConfig brown = bench_config("brown");
  CHECK(brown.model.char_filters == real_text_defaults().char_filters);
  CHECK(brown.model.positions == "relative");
  CHECK(brown.V == 44147);
  CHECK(brown.C == 12);
  CHECK_THROWS_AS(bench_config("huge"), qkv::ValueError);
}

TEST_CASE("tagger bench counts a step's FLOPs as the model's products add up") {
  const BenchConfig c = small_transformer();
  // seed 0's valid lengths add up to L = 7: 3 · (2 · (5120 + 4·5·7·8 + 3840) + 480)
  CHECK(transformer_step_flops(c) == 61920);
  CHECK(count_step_flops(c) == transformer_step_flops(c));
  BenchConfig longer = c;
  longer.T = 9;  // attention grows with T·L, the rest with T
  CHECK(count_step_flops(longer) == transformer_step_flops(longer));
}

TEST_CASE("tagger bench counts the character convolution of the Brown model") {
  BenchConfig c = bench_config("brown");
  c.model.d_model = 16, c.model.heads = 2, c.model.ffn_width = 24, c.model.layers = 1;
  c.model.char_dim = 4, c.model.char_filters = 6;
  c.V = 30, c.C = 5, c.B = 3, c.T = 6, c.min_len = 3;
  qkv::manual_seed(0);
  const BenchBatch batch = make_bench_batch(c);
  // The convolution is one product at each of the R characters of the batch's distinct forms
  // (nn/char_encoder.h): (R, K·char_dim) windows by (K·char_dim, filters), and backward twice that
  // (the windows lead back to the character embedding).
  int64_t R = 0;
  for (int64_t u = 0; u < batch.input.char_lens.numel(); ++u) R += batch.input.char_lens[u];
  CHECK(R >= 3 * batch.input.char_lens.numel());  // every form: two markers and a byte at least
  const int64_t conv = 3 * 2 * R * (c.model.char_kernel * c.model.char_dim) * c.model.char_filters;
  CHECK(count_step_flops(c) == transformer_step_flops(c) + conv);
}

TEST_CASE("the Brown bench model has the parameters bench/torch_anchor.py builds") {
  const BenchConfig c = bench_config("brown");
  const Config& m = c.model;
  const int64_t d = m.d_model, f = m.ffn_width, F = m.char_filters;
  const int64_t words = c.V * (d - F);                                                  // 44147 · 32
  const int64_t chars = kNumCharIds * m.char_dim + F * m.char_dim * m.char_kernel + F;  // embedding, conv
  const int64_t relative = 32 * m.heads;  // T5's 32 buckets, one table for all layers
  const int64_t layer = 4 * d * d + (d * f + f) + (f * d + d) + 2 * 2 * d;  // attention, FFN, 2 LayerNorms
  const int64_t head = d * c.C + c.C;
  const int64_t total = words + chars + relative + m.layers * layer + head;
  CHECK(total == 1704668);  // the count bench/torch_anchor.py prints for brown
  CHECK(make_model(m, c.V, c.C)->num_parameters() == total);
}

namespace {

// tiny with a small vocabulary and short sentences: a step in milliseconds.
BenchConfig small_tiny() {
  BenchConfig c = bench_config("tiny");
  c.V = 50;
  c.T = 8;
  c.min_len = 4;
  return c;
}

}  // namespace

TEST_CASE("tagger bench times a step and measures the peak beside it") {
  const BenchConfig c = small_tiny();
  const BenchResult r = run_bench(c, 2, 1);
  CHECK(r.ms_per_step > 0);
  CHECK(r.peak_rss_mib > 0);
  CHECK(r.flops_per_step == count_step_flops(c));
  CHECK(r.gflops == doctest::Approx(static_cast<double>(r.flops_per_step) / (r.ms_per_step * 1e6)));
  CHECK(r.peak_gflops > 1.0);
  CHECK(format_bench(c, r).rfind("config=tiny threads=", 0) == 0);
}

TEST_CASE(
    "tagger bench's line keeps bench/torch_anchor.py's fields first, then FLOPs, the peak and the pool") {
  BenchResult r;
  r.threads = 2, r.ms_per_step = 1000, r.tokens_per_s = 4096, r.peak_rss_mib = 64, r.cpu_ms_per_step = 1900;
  r.flops_per_step = 84'100'000'000, r.gflops = 84.1, r.peak_gflops = 200, r.parameters = 1234;
  r.threaded_jobs = 0.75;
  CHECK(format_bench(bench_config("base"), r) ==
        "config=base threads=2 ms_per_step=1000.00 tokens_per_s=4096 peak_rss_mib=64 cpu_ms_per_step=1900.00 "
        "gflop_per_step=84.100 gflops=84.1 peak_gflops=200.0 of_peak=42% parameters=1234 threaded_jobs=75% "
        "matmul=highest mode=fast");
  r.reference = true;
  CHECK(format_bench(bench_config("base"), r).ends_with(" matmul=highest mode=reference"));
}

TEST_CASE("tagger bench in the reference mode times the same model's step and prints the same fields") {
  const BenchConfig c = small_tiny();
  const BenchResult fast = run_bench(c, 1, 0);
  BenchResult plain;
  {
    const qkv::ReferenceModeGuard reference;
    plain = run_bench(c, 1, 0);
  }
  CHECK(plain.reference);
  CHECK_FALSE(fast.reference);
  CHECK(plain.ms_per_step > 0);
  CHECK(plain.parameters == fast.parameters);
  // The composed attention multiplies over every key, the fused one only the visible ones.
  CHECK(plain.flops_per_step >= fast.flops_per_step);
  const auto fields = [&](const BenchResult& r) {
    std::vector<std::string> names;
    std::istringstream line(format_bench(c, r));
    for (std::string item; line >> item;) names.push_back(item.substr(0, item.find('=')));
    return names;
  };
  CHECK(fields(plain) == fields(fast));
}
