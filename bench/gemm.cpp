// GEMM throughput of qkv's fast kernel (tensor/kernels/gemm.cpp), side by side with Eigen and
// OpenBLAS when this benchmark was built with them (bench/CMakeLists.txt), in one process so that
// the ratios hold even on a busy machine. One line per shape:
//   gemm NN 1024x1024x1024 threads=2 qkv=... eigen=... openblas=... vs_eigen=... vs_openblas=... of_peak=...
// GFLOP/s = 2·M·N·K / time. Each library runs in turn, rounds of a few calls each, three rounds;
// the time quoted is the best call over all rounds (as ../shared/anchors/gemm_anchor.cpp does).
// of_peak compares qkv with the machine's FMA peak, measured first with the micro-kernel's own
// instruction set. The last lines time gemm_batched on attention-sized products (the tagger's
// per-head Q·Kᵀ and weights·V) against a loop of single products in Eigen and OpenBLAS.
//
// Usage: bench_gemm [--threads LIST] [--rounds N] [VARIANT...]
//   LIST like 1,2 (default); VARIANT among NN NT TN batched (default all).
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

#include "tensor/kernels/gemm_microkernel.h"
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

// The peak FP32 throughput of fused multiply-adds in GFLOP/s on `threads` threads: each thread runs
// as many independent FMA chains as the micro-kernel has accumulators, so that the FMA units
// never wait for a result.
double peak_gflops(int threads) {
  using S = qkv::kernels::gemm_detail::Simd;
  constexpr int chains = qkv::kernels::gemm_detail::MR * qkv::kernels::gemm_detail::NR / S::width;
  constexpr long iters = 20000000;
  double best = 0.0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto start = Clock::now();
    float sink = 0.0f;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    {
      const S::V b = S::broadcast(1.0000001f), c = S::broadcast(1e-7f);
      S::V acc[chains];
      for (int i = 0; i < chains; ++i) acc[i] = S::broadcast(static_cast<float>(i));
      for (long it = 0; it < iters; ++it) {
        // Fully unrolled, so that the accumulators live in registers (a loop over the array
        // spilled them with the 24 chains of the AVX-512 tile, and the probe read 70 % of peak).
#pragma GCC unroll 64
        for (int i = 0; i < chains; ++i) acc[i] = S::fma(acc[i], b, c);
      }
      alignas(64) float out[S::width];
      for (int i = 1; i < chains; ++i) acc[0] = S::fma(acc[i], b, acc[0]);
      S::store(out, acc[0]);
      sink += out[0];
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, 2.0 * S::width * chains * iters * threads / seconds / 1e9);
    if (sink == 0.5f) std::printf(" ");  // keeps the chains alive
  }
  return best;
}

struct Shape {
  int64_t M, N, K;
};

// One library's way to compute C = op(A)·op(B) for the current shape.
struct Contender {
  const char* name;
  std::function<void()> run;
  double best = 1e30;  // seconds
};

// Runs the contenders in turn: `rounds` rounds, each calling every contender `calls` times after a
// warm-up call, and keeps each one's best time. OpenBLAS's worker threads keep spinning for a
// while after a call, so the next contender starts after a pause.
void time_contenders(std::vector<Contender>& cs, double flop, int rounds) {
  const int calls = static_cast<int>(std::clamp(1e10 / flop, 2.0, 100.0));
  for (int r = 0; r < rounds; ++r) {
    for (Contender& c : cs) {
      c.run();
      for (int i = 0; i < calls; ++i) {
        const auto start = Clock::now();
        c.run();
        c.best = std::min(c.best, std::chrono::duration<double>(Clock::now() - start).count());
      }
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

// Prints one line: the GFLOP/s of each contender and qkv's ratio to each of the others.
void report(const std::string& label, int threads, double flop, const std::vector<Contender>& cs,
            double peak) {
  std::string line = label + " threads=" + std::to_string(threads);
  char buf[64];
  for (const Contender& c : cs) {
    std::snprintf(buf, sizeof buf, " %s=%.1f", c.name, flop / c.best / 1e9);
    line += buf;
  }
  for (size_t i = 1; i < cs.size(); ++i) {
    std::snprintf(buf, sizeof buf, " vs_%s=%.2f", cs[i].name, cs[i].best / cs[0].best);
    line += buf;
  }
  if (peak > 0) {
    std::snprintf(buf, sizeof buf, " of_peak=%.0f%%", 100.0 * flop / cs[0].best / 1e9 / peak);
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

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> thread_counts = {1, 2};
  std::vector<std::string> variants;
  int rounds = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) {
      thread_counts.clear();
      for (const char* p = argv[++i]; *p;) {
        char* end = nullptr;
        thread_counts.push_back(static_cast<int>(std::strtol(p, &end, 10)));
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) break;
      }
    } else if (arg == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      variants.push_back(arg);
    }
  }
  if (variants.empty()) variants = {"NN", "NT", "TN", "batched"};

  const qkv::kernels::GemmConfig cfg = qkv::kernels::gemm_config();
  std::printf("# qkv gemm: micro-kernel %s, MR=%lld NR=%lld MC=%lld KC=%lld NC=%lld\n", cfg.isa,
              static_cast<long long>(cfg.mr), static_cast<long long>(cfg.nr), static_cast<long long>(cfg.mc),
              static_cast<long long>(cfg.kc), static_cast<long long>(cfg.nc));
  std::printf("# GFLOP/s = 2*M*N*K / best time of %d rounds; libraries run in turn\n", rounds);
  std::vector<double> peaks;
  for (int t : thread_counts) {
    peaks.push_back(peak_gflops(t));
    std::printf("# peak FMA throughput (%s): threads=%d %.1f GFLOP/s\n", cfg.isa, t, peaks.back());
  }
  std::fflush(stdout);

  const std::vector<Shape> shapes = {{64, 64, 64},       {128, 128, 128},    {256, 256, 256}, {512, 512, 512},
                                     {1024, 1024, 1024}, {2048, 2048, 2048}, {2048, 64, 64},  {2048, 256, 64},
                                     {2048, 64, 256},    {4096, 128, 128}};
  // The tagger's attention products per head (tiny: B·H = 32·4, T = 32, d = 16; small: 32·8, 64, 16):
  // scores Q·Kᵀ (NT), weights·V (NN), and the backward's transposed products (TN).
  struct Batched {
    const char* trans;
    int64_t batch;
    Shape shape;
  };
  const std::vector<Batched> batched = {{"NT", 128, {32, 32, 16}},
                                        {"NN", 128, {32, 16, 32}},
                                        {"TN", 128, {32, 16, 32}},
                                        {"NT", 256, {64, 64, 16}},
                                        {"NN", 256, {64, 16, 64}}};

  for (const std::string& variant : variants) {
    std::vector<std::pair<std::string, std::pair<int64_t, Shape>>> jobs;
    if (variant == "batched") {
      for (const Batched& b : batched) jobs.push_back({b.trans, {b.batch, b.shape}});
    } else {
      for (const Shape& s : shapes) jobs.push_back({variant, {1, s}});
    }
    for (const auto& [trans, job] : jobs) {
      const auto [batch, s] = job;
      const bool ta = trans[0] == 'T', tb = trans[1] == 'T';
      const std::vector<float> A = random_values(batch * s.M * s.K, 1),
                               B = random_values(batch * s.K * s.N, 2);
      std::vector<std::vector<float>> C(3, std::vector<float>(static_cast<size_t>(batch * s.M * s.N)));
      const double flop = 2.0 * batch * s.M * s.N * s.K;
      for (size_t t = 0; t < thread_counts.size(); ++t) {
        set_threads(thread_counts[t]);
        std::vector<Contender> cs = contenders(ta, tb, batch, s, A, B, C);
        time_contenders(cs, flop, rounds);
        for (size_t i = 1; i < cs.size(); ++i)
          if (relative_difference(C[0], C[i]) > 1e-4)
            std::printf("# warning: %s and qkv disagree on this shape\n", cs[i].name);
        const std::string dims = std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K);
        const std::string label =
            batch == 1 ? "gemm " + trans + " " + dims
                       : "gemm_batched " + trans + " " + std::to_string(batch) + "x(" + dims + ")";
        report(label, thread_counts[t], flop, cs, peaks[t]);
      }
    }
  }
  return 0;
}
