// GEMM throughput of qkv's fast kernel (tensor/kernels/gemm.cpp), side by side with Eigen and
// OpenBLAS when this benchmark was built with them (bench/CMakeLists.txt; Debian's libeigen3-dev
// and libopenblas-dev), in one process so that the ratios hold even on a busy machine. This is the
// project's one comparison with other GEMMs. One line per shape:
//   gemm NN 1024x1024x1024 threads=2 qkv=... eigen=... openblas=... vs_eigen=... vs_openblas=... of_peak=...
// GFLOP/s = 2·M·N·K / time. The libraries take turns: in each round each makes a warm-up call and
// then as many calls as fit in about 0.1 s (2 to 100), and keeps its best call; the figure quoted
// is the median of those round bests, and vs_X is X's median time over qkv's (above 1: qkv is
// faster). of_peak compares qkv with the machine's FMA peak, measured first with the
// micro-kernel's own instruction set (bench/peak.h, which `tagger bench` uses too). The
// `batched` lines time gemm_batched on attention-sized products (the tagger's per-head Q·Kᵀ and
// weights·V) against a loop of single products in Eigen and OpenBLAS; the `training` lines the
// products of one training step of `tagger bench --config base`; the `steps` lines time, on one
// thread, the three GEMMs a reader meets in turn: the reference triple loop, the plainly blocked
// gemm_blocked and the fast gemm.

#include "tensor/kernels/gemm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench/peak.h"
#include "tensor/random.h"
#include "tensor/threads.h"

#ifdef QKV_BENCH_EIGEN
#include <Eigen/Dense>
#endif
#ifdef QKV_BENCH_OPENBLAS
#include <cblas.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    "usage: bench_gemm [--threads LIST] [--rounds N] [--peak] [VARIANT...]\n"
    "  --threads LIST  thread counts to run, like 1,2 (the default)\n"
    "  --rounds N      rounds of calls per library and shape (3)\n"
    "  --peak          measure the FMA peak only, and stop\n"
    "  VARIANT         among NN NT TN batched steps training (default: NN NT TN batched)\n";

struct Shape {
  int64_t M, N, K;
};

// One library's way to compute C = op(A)·op(B) for the current shape, and its best call of
// each round.
struct Contender {
  const char* name;
  std::function<void()> run;
  std::vector<double> round_best = {};  // seconds

  double median() const {
    std::vector<double> t = round_best;
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

double seconds_of(const std::function<void()>& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs the contenders in turn, `rounds` rounds: each makes a warm-up call, then as many calls as
// fit in about 0.1 s (2 to 100), and records its best. OpenBLAS's worker threads keep spinning
// for a while after a call, so the next contender starts after a pause.
void time_contenders(std::vector<Contender>& cs, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    for (Contender& c : cs) {
      const int calls = static_cast<int>(std::clamp(0.1 / seconds_of(c.run), 2.0, 100.0));
      double best = 1e30;
      for (int i = 0; i < calls; ++i) best = std::min(best, seconds_of(c.run));
      c.round_best.push_back(best);
      if (std::string(c.name) == "openblas") std::this_thread::sleep_for(std::chrono::milliseconds(150));
    }
  }
}

std::vector<float> random_values(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  qkv::Generator(seed).fill_uniform(v.data(), n, -1.0f, 1.0f);
  return v;
}

// The largest difference between two results relative to the largest magnitude: a contender that
// computed something else would make the comparison meaningless.
double relative_difference(const std::vector<float>& x, const std::vector<float>& y) {
  double diff = 0.0, scale = 1e-30;
  for (size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(x[i] - y[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(y[i])));
  }
  return diff / scale;
}

// Prints one line: the median GFLOP/s of each contender and qkv's speed relative to each other one.
void report(const std::string& label, int threads, double flop, const std::vector<Contender>& cs,
            double peak) {
  std::string line = label + " threads=" + std::to_string(threads);
  char buf[64];
  for (const Contender& c : cs) {
    std::snprintf(buf, sizeof buf, " %s=%.1f", c.name, flop / c.median() / 1e9);
    line += buf;
  }
  for (size_t i = 1; i < cs.size(); ++i) {
    std::snprintf(buf, sizeof buf, " vs_%s=%.2f", cs[i].name, cs[i].median() / cs[0].median());
    line += buf;
  }
  if (peak > 0) {
    std::snprintf(buf, sizeof buf, " of_peak=%.0f%%", 100.0 * flop / cs[0].median() / 1e9 / peak);
    line += buf;
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void set_threads(int threads) {
  qkv::set_num_threads(threads);
#ifdef QKV_BENCH_EIGEN
  Eigen::setNbThreads(threads);
#endif
#ifdef QKV_BENCH_OPENBLAS
  openblas_set_num_threads(threads);
#endif
}

#ifdef QKV_BENCH_EIGEN
using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Map = Eigen::Map<RowMajor>;
using ConstMap = Eigen::Map<const RowMajor>;

// C = op(A)·op(B) with Eigen, operands stored as qkv's are (row-major, transposed when flagged).
void eigen_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C) {
  const ConstMap a(A, ta ? K : M, ta ? M : K), b(B, tb ? N : K, tb ? K : N);
  Map c(C, M, N);
  if (!ta && !tb) c.noalias() = a * b;
  if (!ta && tb) c.noalias() = a * b.transpose();
  if (ta && !tb) c.noalias() = a.transpose() * b;
  if (ta && tb) c.noalias() = a.transpose() * b.transpose();
}
#endif

#ifdef QKV_BENCH_OPENBLAS
void openblas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
                   float* C) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.0f, A,
              static_cast<int>(ta ? M : K), B, static_cast<int>(tb ? K : N), 0.0f, C, static_cast<int>(N));
}
#endif

// The contenders for `batch` products C_i = op(A_i)·op(B_i) of one shape (batch 1: one product);
// contender i writes C[i]. qkv calls gemm or gemm_batched; the others, which have no batched call,
// loop over the batch.
std::vector<Contender> contenders(bool ta, bool tb, int64_t batch, Shape s, const std::vector<float>& A,
                                  const std::vector<float>& B, std::vector<std::vector<float>>& C) {
  const int64_t M = s.M, N = s.N, K = s.K, lda = ta ? M : K, ldb = tb ? K : N;
  const float *a = A.data(), *b = B.data();
  std::vector<Contender> cs;
  float* c = C[cs.size()].data();
  cs.push_back({"qkv", [=] {
                  if (batch == 1)
                    qkv::kernels::gemm(ta, tb, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, N);
                  else
                    qkv::kernels::gemm_batched(batch, ta, tb, M, N, K, 1.0f, a, lda, M * K, b, ldb, K * N,
                                               0.0f, c, N, M * N);
                }});
#ifdef QKV_BENCH_EIGEN
  c = C[cs.size()].data();
  cs.push_back({"eigen", [=] {
                  for (int64_t i = 0; i < batch; ++i)
                    eigen_gemm(ta, tb, M, N, K, a + i * M * K, b + i * K * N, c + i * M * N);
                }});
#endif
#ifdef QKV_BENCH_OPENBLAS
  c = C[cs.size()].data();
  cs.push_back({"openblas", [=] {
                  for (int64_t i = 0; i < batch; ++i)
                    openblas_gemm(ta, tb, M, N, K, a + i * M * K, b + i * K * N, c + i * M * N);
                }});
#endif
  return cs;
}

// The three GEMMs of tensor/kernels/ on one product, one thread: the fast one first, so that the
// ratios say how much faster it is than each earlier step.
std::vector<Contender> steps(bool ta, bool tb, Shape s, const std::vector<float>& A,
                             const std::vector<float>& B, std::vector<std::vector<float>>& C) {
  const int64_t M = s.M, N = s.N, K = s.K, lda = ta ? M : K, ldb = tb ? K : N;
  const float *a = A.data(), *b = B.data();
  const auto call = [=](auto kernel, float* c) {
    return [=] { kernel(ta, tb, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, N); };
  };
  return {{"qkv", call(qkv::kernels::gemm, C[0].data())},
          {"blocked", call(qkv::kernels::gemm_blocked, C[1].data())},
          {"reference", call(qkv::kernels::gemm_reference, C[2].data())}};
}

struct Options {
  std::vector<int> thread_counts = {1, 2};
  int rounds = 3;
  bool peak_only = false;
  std::vector<std::string> variants;
};

// Parses the command line (kUsage); exits on --help or a word it does not know.
Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) {
      o.thread_counts.clear();
      for (const char* p = argv[++i]; *p;) {
        char* end = nullptr;
        o.thread_counts.push_back(static_cast<int>(std::strtol(p, &end, 10)));
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) break;
      }
    } else if (arg == "--rounds" && i + 1 < argc) {
      o.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--peak") {
      o.peak_only = true;
    } else if (arg == "NN" || arg == "NT" || arg == "TN" || arg == "batched" || arg == "steps" ||
               arg == "training") {
      o.variants.push_back(arg);
    } else {
      std::fputs(kUsage, arg == "--help" || arg == "-h" ? stdout : stderr);
      std::exit(arg == "--help" || arg == "-h" ? 0 : 2);
    }
  }
  if (o.variants.empty()) o.variants = {"NN", "NT", "TN", "batched"};
  return o;
}

// The first lines: how the kernel is shaped, what it is compared with (and, for a library that was
// not built in, the Debian package that would bring it), and the measured FMA peak per thread count.
std::vector<double> print_header(const Options& o) {
  const qkv::kernels::GemmConfig cfg = qkv::kernels::gemm_config();
  std::printf("# qkv gemm: micro-kernel %s, MR=%lld NR=%lld MC=%lld KC=%lld NC=%lld\n", cfg.isa,
              static_cast<long long>(cfg.mr), static_cast<long long>(cfg.nr), static_cast<long long>(cfg.mc),
              static_cast<long long>(cfg.kc), static_cast<long long>(cfg.nc));
#ifndef QKV_BENCH_EIGEN
  std::printf("# Eigen not built in: sudo apt-get install libeigen3-dev, then ./qkv bench gemm\n");
#endif
#ifndef QKV_BENCH_OPENBLAS
  std::printf("# OpenBLAS not built in: sudo apt-get install libopenblas-dev, then ./qkv bench gemm\n");
#endif
  if (!o.peak_only)
    std::printf("# GFLOP/s = 2*M*N*K / time, the median of %d rounds' best calls; libraries take turns\n",
                o.rounds);
  std::vector<double> peaks;
  for (int t : o.thread_counts) {
    peaks.push_back(qkv::bench::peak_gflops(t));
    std::printf("# peak FMA throughput (%s): threads=%d %.1f GFLOP/s\n", cfg.isa, t, peaks.back());
  }
  std::fflush(stdout);
  return peaks;
}

struct Job {
  std::string trans;
  int64_t batch;
  Shape shape;
};

// The products a variant times: the square and training-shaped products for NN, NT and TN; the
// products of one `base` training step for `training` (forward x·Wᵀ, NT; dX = dY·W, NN; dW =
// dYᵀ·X, TN; for the packed Q, K, V projection, the output projection and the FFN's two layers); the
// tagger's attention products per head for `batched` (tiny: B·H = 32·4, T = 32, d = 16; small:
// 32·8, 64, 16): scores Q·Kᵀ (NT), weights·V (NN), and the backward's transposed products (TN);
// squares small enough for the reference loop for `steps`.
std::vector<Job> jobs_of(const std::string& variant) {
  if (variant == "batched")
    return {{"NT", 128, {32, 32, 16}},
            {"NN", 128, {32, 16, 32}},
            {"TN", 128, {32, 16, 32}},
            {"NT", 256, {64, 64, 16}},
            {"NN", 256, {64, 16, 64}}};
  if (variant == "steps")
    return {{"NN", 1, {128, 128, 128}}, {"NN", 1, {256, 256, 256}}, {"NN", 1, {512, 512, 512}}};
  if (variant == "training")  // `tagger bench --config base`: d 256, FFN 1024, B·T = 4096 positions
    return {{"NT", 1, {4096, 768, 256}},  {"NT", 1, {4096, 256, 256}}, {"NT", 1, {4096, 1024, 256}},
            {"NT", 1, {4096, 256, 1024}}, {"NN", 1, {4096, 256, 768}}, {"NN", 1, {4096, 256, 1024}},
            {"NN", 1, {4096, 1024, 256}}, {"TN", 1, {768, 256, 4096}}, {"TN", 1, {256, 256, 4096}},
            {"TN", 1, {1024, 256, 4096}}, {"TN", 1, {256, 1024, 4096}}};
  std::vector<Job> jobs;
  for (Shape s : std::vector<Shape>{{64, 64, 64},
                                    {128, 128, 128},
                                    {256, 256, 256},
                                    {512, 512, 512},
                                    {1024, 1024, 1024},
                                    {2048, 2048, 2048},
                                    {2048, 64, 64},
                                    {2048, 256, 64},
                                    {2048, 64, 256},
                                    {4096, 128, 128}})
    jobs.push_back({variant, 1, s});
  return jobs;
}

// Times one job at each thread count (`steps`: at one thread) and prints its lines.
void run_job(const std::string& variant, const Job& job, const Options& o, const std::vector<double>& peaks) {
  const auto [trans, batch, s] = job;
  const bool ta = trans[0] == 'T', tb = trans[1] == 'T';
  const std::vector<float> A = random_values(batch * s.M * s.K, 1), B = random_values(batch * s.K * s.N, 2);
  std::vector<std::vector<float>> C(3, std::vector<float>(static_cast<size_t>(batch * s.M * s.N)));
  const double flop = 2.0 * batch * s.M * s.N * s.K;
  const std::string dims = std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K);
  for (size_t t = 0; t < o.thread_counts.size(); ++t) {
    const bool stepwise = variant == "steps";
    set_threads(stepwise ? 1 : o.thread_counts[t]);
    std::vector<Contender> cs = stepwise ? steps(ta, tb, s, A, B, C) : contenders(ta, tb, batch, s, A, B, C);
    time_contenders(cs, o.rounds);
    for (size_t i = 1; i < cs.size(); ++i)
      if (relative_difference(C[0], C[i]) > 1e-4)
        std::printf("# warning: %s and qkv disagree on this shape\n", cs[i].name);
    const std::string label = stepwise ? "gemm_steps " + trans + " " + dims
                              : batch == 1
                                  ? "gemm " + trans + " " + dims
                                  : "gemm_batched " + trans + " " + std::to_string(batch) + "x(" + dims + ")";
    report(label, stepwise ? 1 : o.thread_counts[t], flop, cs, stepwise ? 0.0 : peaks[t]);
    if (stepwise) break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  const std::vector<double> peaks = print_header(options);
  if (options.peak_only) return 0;
  for (const std::string& variant : options.variants)
    for (const Job& job : jobs_of(variant)) run_job(variant, job, options, peaks);
  return 0;
}
