#include "bench/tagger_bench.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "examples/common/timing.h"
#include "examples/tagger/dataset.h"
#include "nn/functional/loss.h"
#include "optim/adam.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/kernels/parallel.h"
#include "bench/peak.h"
#include "tensor/precision.h"
#include "tensor/reference_mode.h"
#include "tensor/random.h"
#include "tensor/threads.h"

namespace tagger {

namespace {

double cpu_time_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Config transformer(int64_t d, int64_t h, int64_t f, int64_t L) {
  Config c;
  c.d_model = d, c.heads = h, c.ffn_width = f, c.layers = L, c.dropout = 0.1;
  return c;
}

// The Brown Corpus as `tagger train --corpus brown` reads it (`tagger data --corpus brown`, the
// split of data/brown.h): 929,446 training tokens; 44,147 words in the vocabulary (its 44,145
// lowercased training word types, <pad> and <unk>); the 12 universal tags.
constexpr int64_t kBrownTrainingTokens = 929'446, kBrownVocabulary = 44'147, kBrownTags = 12;

// Of the distinct word forms in a Brown training batch, the share (‰) of each length in bytes, 1 to
// 16 (the last: 16 or more), measured over the batches of one epoch.
constexpr int kFormLengthPermille[16] = {26, 71, 106, 174, 144, 125, 114, 85, 61, 42, 24, 14, 7, 4, 1, 2};

// A lowercase word of a length drawn from kFormLengthPermille.
std::string synthetic_form(qkv::Generator& gen) {
  int64_t draw = static_cast<int64_t>(gen.next_below(1000)), length = 1;
  while (length < 16 && draw >= kFormLengthPermille[length - 1])
    draw -= kFormLengthPermille[length - 1], ++length;
  std::string form;
  for (int64_t i = 0; i < length; ++i) form += static_cast<char>('a' + gen.next_below(26));
  return form;
}

// The characters of a batch as dataset.h's make_input lays them out: form_share of the real tokens
// are distinct forms (a new one each, in order), the others repeat a form drawn at random.
void add_synthetic_chars(ModelInput& input, double form_share, qkv::Generator& gen) {
  const int64_t B = input.ids.size(0), T = input.ids.size(1);
  int64_t real = 0;
  for (int64_t b = 0; b < B; ++b) real += input.valid_lens[b];
  const int64_t U = std::max<int64_t>(1, std::llround(form_share * static_cast<double>(real)));
  std::vector<std::vector<int64_t>> forms;
  int64_t L = 1;
  for (int64_t u = 0; u < U; ++u) {
    forms.push_back(char_ids(synthetic_form(gen)));
    L = std::max(L, static_cast<int64_t>(forms.back().size()));
  }
  std::vector<int64_t> chars(static_cast<size_t>(U * L), 0), lens, rows(static_cast<size_t>(B * T), U);
  for (int64_t u = 0; u < U; ++u) {
    std::copy(forms[u].begin(), forms[u].end(), chars.begin() + u * L);
    lens.push_back(static_cast<int64_t>(forms[u].size()));
  }
  int64_t token = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < input.valid_lens[b]; ++t, ++token)
      rows[b * T + t] = token < U ? token : static_cast<int64_t>(gen.next_below(U));
  input.chars = IndexTensor(std::move(chars), {U, L});
  input.char_lens = IndexTensor(std::move(lens));
  input.form_rows = IndexTensor(std::move(rows));
}

// Word counts for word dropout by Zipf's law: the word of id r (ids from 2, after <pad> and <unk>)
// seen about N / ((r − 1)·H) times, H the harmonic number of the vocabulary, N the training tokens.
std::vector<int64_t> zipf_counts(int64_t V, int64_t N) {
  double H = 0;
  for (int64_t r = 1; r < V - 1; ++r) H += 1.0 / static_cast<double>(r);
  std::vector<int64_t> counts(static_cast<size_t>(V), 0);
  for (int64_t id = 2; id < V; ++id)
    counts[id] =
        std::max<int64_t>(1, std::llround(static_cast<double>(N) / (static_cast<double>(id - 1) * H)));
  return counts;
}

// A model, its optimizer and a fixed batch: one training step is step().
struct BenchStep {
  BenchBatch batch;
  std::shared_ptr<TaggerModel> model;
  std::unique_ptr<qkv::optim::Adam> optimizer;

  explicit BenchStep(const BenchConfig& c) {
    qkv::manual_seed(0);
    batch = make_bench_batch(c);
    model = make_model(c.model, c.V, c.C);
    model->train();
    if (c.model.word_dropout > 0)  // the Brown model's; <pad> is id 0, <unk> id 1 (data/vocab.h)
      model->tokens->set_word_counts(zipf_counts(c.V, kBrownTrainingTokens), 0, 1);
    optimizer = std::make_unique<qkv::optim::Adam>(model->parameters(), qkv::optim::AdamOptions{.lr = 1e-3});
  }

  void step() {
    const Tensor loss = qkv::nn::functional::sequence_cross_entropy(model->forward(batch.input),
                                                                    batch.targets, batch.input.valid_lens);
    optimizer->zero_grad();
    loss.backward();
    optimizer->step();
  }
};

int64_t counted_step(BenchStep& s) {
  const qkv::examples::FlopCounter counter;
  s.step();
  return counter.total.load();
}

}  // namespace

BenchConfig bench_config(const std::string& name) {
  if (name == "tiny") return {name, transformer(64, 4, 128, 2), 1000, 12, 32, 32, 16};
  if (name == "small") return {name, transformer(128, 8, 512, 4), 5000, 17, 32, 64, 32};
  if (name == "base") return {name, transformer(256, 8, 1024, 4), 10000, 17, 32, 128, 64};
  if (name == "brown") {
    // Brown's training sentences bucketed as data/batching.h does (pools of 50 batches of 32, each
    // pool sorted by length) make 1435 batches an epoch, padded to 21.8 tokens on average (median
    // 18, 90 % within 39), their real tokens filling 93 % of the padded ones, with 0.55 distinct
    // forms per real token. The step's cost grows about linearly with T (attention is 3 % of its
    // FLOPs), so T is that mean, and lengths drawn in [19, 22] fill 93 % of it.
    return {name, real_text_defaults(), kBrownVocabulary, kBrownTags, 32, 22, 19, 0.55};
  }
  throw qkv::ValueError("tagger bench: unknown config \"" + name + "\" (tiny, small, base or brown)");
}

BenchBatch make_bench_batch(const BenchConfig& c) {
  BenchBatch b;
  b.input.ids = qkv::randint(0, c.V, {c.B, c.T});
  b.targets = qkv::randint(0, c.C, {c.B, c.T});
  b.input.valid_lens = qkv::randint(c.min_len, c.T + 1, {c.B});
  if (c.model.char_filters > 0) add_synthetic_chars(b.input, c.form_share, qkv::default_generator());
  return b;
}

int64_t count_step_flops(const BenchConfig& config) {
  BenchStep s(config);
  return counted_step(s);
}

BenchResult run_bench(const BenchConfig& c, int64_t steps, int64_t warmup) {
  if (steps < 1 || warmup < 0) throw qkv::ValueError("tagger bench: steps must be >= 1 and warmup >= 0");
  BenchResult r;
  r.threads = qkv::get_num_threads();
  r.bf16_products = qkv::get_matmul_precision() == qkv::MatmulPrecision::medium && !qkv::reference_mode();
  r.reference = qkv::reference_mode();
  r.peak_gflops = qkv::bench::peak_gflops(r.threads);
  BenchStep s(c);
  r.parameters = s.model->num_parameters();
  r.flops_per_step = counted_step(s);  // untimed: the timed steps run with no observer
  std::vector<double> times, cpu_times;
  qkv::kernels::PoolStats before;
  for (int64_t i = 0; i < warmup + steps; ++i) {
    if (i == warmup) before = qkv::kernels::pool_stats();
    const double cpu0 = cpu_time_ms();
    const auto t0 = std::chrono::steady_clock::now();
    s.step();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= warmup) {
      times.push_back(ms);
      cpu_times.push_back(cpu_time_ms() - cpu0);
    }
  }
  const qkv::kernels::PoolStats after = qkv::kernels::pool_stats();
  const auto threaded = after.parallel_jobs - before.parallel_jobs,
             alone = after.serial_jobs - before.serial_jobs;
  r.threaded_jobs =
      threaded + alone > 0 ? static_cast<double>(threaded) / static_cast<double>(threaded + alone) : 0.0;
  r.ms_per_step = median(times);
  r.cpu_ms_per_step = median(cpu_times);
  r.tokens_per_s = static_cast<double>(c.B * c.T) / (r.ms_per_step / 1000.0);
  r.gflops = static_cast<double>(r.flops_per_step) / (r.ms_per_step * 1e6);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  r.peak_rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
  return r;
}

std::string format_bench(const BenchConfig& c, const BenchResult& r) {
  char line[420];
  std::snprintf(
      line, sizeof line,
      "config=%s threads=%d ms_per_step=%.2f tokens_per_s=%.0f peak_rss_mib=%.0f cpu_ms_per_step=%.2f "
      "gflop_per_step=%.3f gflops=%.1f peak_gflops=%.1f of_peak=%.0f%% parameters=%lld threaded_jobs=%.0f%% "
      "matmul=%s mode=%s",
      c.name.c_str(), r.threads, r.ms_per_step, r.tokens_per_s, r.peak_rss_mib, r.cpu_ms_per_step,
      static_cast<double>(r.flops_per_step) * 1e-9, r.gflops, r.peak_gflops,
      r.peak_gflops > 0 ? 100.0 * r.gflops / r.peak_gflops : 0.0, static_cast<long long>(r.parameters),
      100.0 * r.threaded_jobs, r.bf16_products ? "medium" : "highest", r.reference ? "reference" : "fast");
  return line;
}

}  // namespace tagger
