// `tagger bench`: the training step of four reference configs on synthetic data, timed the way
// bench/torch_anchor.py times the same models in PyTorch, so the two lines compare one to one; and
// how close the step comes to the machine's FMA peak.
//
//   tiny, small, base   the Transformer tagger of Config's defaults (sinusoidal positions, words
//                       only) at three sizes, on random word ids
//   brown               the model `tagger train --corpus brown` trains (real_text_defaults():
//                       characters, relative positions, word dropout), with the Brown Corpus's
//                       vocabulary and tag set and a batch shaped like its training batches; the
//                       words' characters are synthetic forms with the corpus's length distribution
//
// FLOPs are counted, not estimated: one untimed step runs with an autograd::Observer that adds up
// what the ops announce (autograd::add_flops: matrix products, attention's products, the GRU's;
// a multiply-add is 2). Elementwise passes, softmax, norms and the optimizer announce nothing, so
// the count is the step's matrix arithmetic, the work the FMA peak (bench/peak.h) bounds.
#pragma once

#include <cstdint>
#include <string>

#include "examples/tagger/model.h"

namespace tagger {

// The model `model`, vocabulary V, tags C, batch B, sentence length T; valid lengths drawn in
// [min_len, T]. With characters (model.char_filters > 0), the batch's real tokens are spelled with
// form_share·(real tokens) distinct synthetic word forms.
struct BenchConfig {
  std::string name;
  Config model;
  int64_t V, C, B, T, min_len;
  double form_share = 0;
};

// tiny, small, base or brown; ValueError for another name.
BenchConfig bench_config(const std::string& name);

struct BenchResult {
  double ms_per_step = 0;   // median of the timed steps
  double tokens_per_s = 0;  // B·T / median, as bench/torch_anchor.py counts (padding included)
  double peak_rss_mib = 0;  // the process's peak resident set (getrusage)
  // The median CPU time of the process per step, all threads together: other work on a shared
  // machine disturbs it less than the wall clock, so it is the steadier figure for comparing builds.
  double cpu_ms_per_step = 0;
  int threads = 0;
  int64_t flops_per_step = 0;  // counted in an untimed step
  double gflops = 0;           // flops_per_step / median step
  double peak_gflops = 0;      // the FMA peak at `threads` threads, measured in the same run
  int64_t parameters = 0;      // the model's parameter count (bench/torch_anchor.py prints its own)
  // The share of the thread pool's jobs in the timed steps that ran with threads, the others on
  // the calling thread alone because threads did not pay (tensor/kernels/job_record.h). 0 on
  // one thread.
  double threaded_jobs = 0;
  // Whether the products ran with bfloat16 operands (qkv::MatmulPrecision::medium, set by --matmul).
  // of_peak still compares with the float32 FMA peak, which bfloat16 products can pass.
  bool bf16_products = false;
  // Whether the step ran in the reference mode (tensor/reference_mode.h, set by --reference): its
  // parallel loops are then OpenMP's, which the pool's threaded_jobs does not count (it reads 0),
  // and its attention counts the FLOPs of the dense products, padding included.
  bool reference = false;
};

// The batch a step trains on: word ids and tags drawn at random, valid lengths in [min_len, T],
// and for a model that reads characters, the synthetic forms. From the default generator.
struct BenchBatch {
  ModelInput input;
  IndexTensor targets;
};
BenchBatch make_bench_batch(const BenchConfig& config);

// `warmup` untimed steps, then `steps` timed ones: forward, masked cross-entropy, backward, Adam.
// Before them, the FMA peak and one more untimed step with the FLOP counter on.
constexpr int64_t kBenchSteps = 30, kBenchWarmup = 5;
BenchResult run_bench(const BenchConfig& config, int64_t steps = kBenchSteps, int64_t warmup = kBenchWarmup);

// The FLOPs of one training step of `config`'s model on its batch, as the ops announce them. The
// batch is make_bench_batch's right after qkv::manual_seed(0).
int64_t count_step_flops(const BenchConfig& config);

// config=tiny threads=2 ms_per_step=... tokens_per_s=... peak_rss_mib=... cpu_ms_per_step=...
//   gflop_per_step=... gflops=... peak_gflops=... of_peak=...% parameters=... threaded_jobs=...%
//   matmul=highest|medium mode=fast|reference
// (bench/torch_anchor.py's line up to peak_rss_mib, then what only qkv measures)
std::string format_bench(const BenchConfig& config, const BenchResult& result);

}  // namespace tagger
