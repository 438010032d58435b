// The fast GEMM (tensor/kernels/gemm.cpp) against the reference triple loop, on the shapes where a
// blocked kernel goes wrong: tails of the micro-tile, block edges, transposes, strides, empty
// matrices, alpha and beta; and its determinism across thread counts. The plainly blocked GEMM
// (gemm_blocked.cpp), the step between the two, against both.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "random_floats.h"
#include "tensor/kernels/gemm.h"
#include "tensor/threads.h"

using namespace qkv::kernels;

namespace {

// One product C = alpha · op(A)·op(B) + beta · C with its operands stored as the flags say, each
// with `pad` unused floats at the end of every row (lda, ldb, ldc larger than the row).
struct Problem {
  bool ta, tb;
  int64_t M, N, K, pad = 0;
  float alpha = 1.0f, beta = 0.0f;

  int64_t lda() const { return (ta ? M : K) + pad; }
  int64_t ldb() const { return (tb ? K : N) + pad; }
  int64_t ldc() const { return N + pad; }
  std::vector<float> a() const { return random_floats((ta ? K : M) * lda(), 1); }
  std::vector<float> b() const { return random_floats((tb ? N : K) * ldb(), 2); }
  std::vector<float> c() const { return random_floats(M * ldc(), 3); }

  using Kernel = decltype(&gemm);
  std::vector<float> run(Kernel kernel) const {
    const std::vector<float> A = a(), B = b();
    std::vector<float> C = c();
    kernel(ta, tb, M, N, K, alpha, A.data(), lda(), B.data(), ldb(), beta, C.data(), ldc());
    return C;
  }
};

// Checks a kernel (the fast one unless told) against the reference, element by element. Both sum K products
// in float, in different orders and with or without fused multiply-adds, so each is within K·eps·S of the
// exact value, where S = |alpha|·Σ_k |a_ik·b_kj| + |beta·c_ij|; they differ by at most twice that.
// A wrong, missing or repeated term is off by about S/K, far outside. The padding of C (past
// column N) must be left as it was.
void check_against_reference(const Problem& p, Problem::Kernel kernel = gemm) {
  CAPTURE(p.ta);
  CAPTURE(p.tb);
  CAPTURE(p.M);
  CAPTURE(p.N);
  CAPTURE(p.K);
  CAPTURE(p.pad);
  const std::vector<float> got = p.run(kernel), ref = p.run(gemm_reference), A = p.a(), B = p.b(), C0 = p.c();
  const double eps = std::numeric_limits<float>::epsilon();
  int64_t bad = 0;
  for (int64_t i = 0; i < p.M; ++i) {
    for (int64_t j = 0; j < p.ldc(); ++j) {
      const size_t at = static_cast<size_t>(i * p.ldc() + j);
      if (j >= p.N) {
        bad += got[at] != C0[at];
        continue;
      }
      double S = p.beta == 0.0f ? 0.0 : std::fabs(p.beta * C0[at]);
      for (int64_t k = 0; k < p.K; ++k) {
        const float a = p.ta ? A[k * p.lda() + i] : A[i * p.lda() + k];
        const float b = p.tb ? B[j * p.ldb() + k] : B[k * p.ldb() + j];
        S += std::fabs(p.alpha * a * b);
      }
      bad += !(std::fabs(got[at] - ref[at]) <= 2.0 * (p.K + 2) * eps * S + 1e-30);
    }
  }
  CHECK(bad == 0);
}

constexpr bool kTrans[][2] = {{false, false}, {false, true}, {true, false}, {true, true}};

// Products that reach every edge of the blocked loops: tails of the micro-tile in both
// directions, more rows than one MC block, several KC blocks, more columns than one NC block,
// products narrower than a tile (which gemm computes as their transpose), with alpha, beta and
// padded rows, and an empty depth.
std::vector<Problem> blocking_edges(bool ta, bool tb) {
  const GemmConfig cfg = gemm_config();
  std::vector<Problem> problems;
  for (int64_t M : {int64_t{1}, cfg.mr - 1, cfg.mr + 1, cfg.mc + cfg.mr + 1})
    for (int64_t N : {int64_t{1}, cfg.nr - 1, cfg.nr + 1, 2 * cfg.nr + 3})
      for (int64_t K : {int64_t{1}, int64_t{7}, 2 * cfg.kc + 5}) problems.push_back({ta, tb, M, N, K});
  problems.push_back({ta, tb, 3, cfg.nc + cfg.nr + 1, 4});
  Problem scaled{ta, tb, 19, 35, cfg.kc + 3, /*pad=*/5};
  scaled.alpha = -0.5f, scaled.beta = 0.5f;
  problems.push_back(scaled);
  scaled.K = 0;  // no k block at all: C = beta · C
  problems.push_back(scaled);
  return problems;
}

}  // namespace

TEST_CASE("gemm matches the reference on every tail of the micro-tile in all transpose variants") {
  // An edge tile runs the smallest instance of the micro-kernel that covers it and writes only
  // its own part of C (the last vector of a row through a mask): with beta it reads C the same
  // way, and the padding past column N stays as it was.
  const GemmConfig cfg = gemm_config();
  for (auto [ta, tb] : kTrans)
    for (int64_t M = 1; M <= 2 * cfg.mr + 1; ++M)
      for (int64_t N = 1; N <= 2 * cfg.nr + 1; ++N) {
        for (int64_t K : {1, 7}) check_against_reference({ta, tb, M, N, K});
        Problem p{ta, tb, M, N, 5, /*pad=*/3};
        p.beta = 0.5f;
        check_against_reference(p);
      }
}

TEST_CASE("gemm matches the reference on wide products whose rows of A are packed") {
  // A task over many columns packs its rows of A; over few it reads them in place. Both paths
  // meet every row tail here.
  const GemmConfig cfg = gemm_config();
  for (auto [ta, tb] : kTrans)
    for (int64_t M : {int64_t{1}, cfg.mr - 1, cfg.mr + 1, 2 * cfg.mr + 5})
      for (int64_t N : {int64_t{601}, 2 * cfg.nr + 1})
        check_against_reference({ta, tb, std::max<int64_t>(M, 1), N, 19});
}

TEST_CASE("gemm matches the reference on products narrower than a micro-tile computed as their transpose") {
  // N < NR with many rows: where a vector of columns would stay mostly empty (N = 1, or 17 on
  // AVX-512), the kernel computes Cᵀ = op(B)ᵀ·op(A)ᵀ and writes its tiles transposed (narrow
  // attention heads: (64 × 64)·(64 × 8)); otherwise it computes C directly. Both paths are here
  // (N = 1, NR/2, NR − 1 and NR/2 + 1). With beta, C is read back through the same path; with
  // padding, the columns past N must stay untouched; beyond MC rows, several row blocks.
  const GemmConfig cfg = gemm_config();
  for (auto [ta, tb] : kTrans)
    for (int64_t N : {int64_t{1}, cfg.nr / 2, cfg.nr - 1, cfg.nr / 2 + 1})
      for (int64_t M : {int64_t{64}, 4 * cfg.nr + 3, cfg.mc + 7}) {
        Problem p{ta, tb, M, N, 64, 3};
        p.beta = 0.5f;
        check_against_reference(p);
        check_against_reference({ta, tb, M, N, cfg.kc + 5});
      }
}

TEST_CASE("gemm matches the reference on a 1x1 product and on prime shapes") {
  for (auto [ta, tb] : kTrans) {
    check_against_reference({ta, tb, 1, 1, 1});
    check_against_reference({ta, tb, 1, 1, 97});
    check_against_reference({ta, tb, 13, 31, 37});
    check_against_reference({ta, tb, 97, 89, 101});
    check_against_reference({ta, tb, 1, 211, 3});
    check_against_reference({ta, tb, 211, 1, 5});
  }
}

TEST_CASE("gemm matches the reference across the cache blocks MC KC and NC") {
  const GemmConfig cfg = gemm_config();
  for (auto [ta, tb] : kTrans) {
    // More rows than one MC block and a depth of two and a bit KC blocks, so that later k blocks
    // accumulate into C; then more columns than one NC block.
    check_against_reference({ta, tb, cfg.mc + cfg.mr + 1, 2 * cfg.nr + 3, 2 * cfg.kc + 5});
    check_against_reference({ta, tb, 3, cfg.nc + cfg.nr + 1, 4});
  }
}

TEST_CASE("gemm_blocked matches the reference on edge tiles, cache blocks and transposed operands") {
  for (auto [ta, tb] : kTrans)
    for (const Problem& p : blocking_edges(ta, tb)) check_against_reference(p, gemm_blocked);
}

TEST_CASE("gemm_blocked gives gemm's result to the bit on a SIMD build") {
  // Both compute each element as the same chain of fused multiply-adds in k order, one KC block
  // after the other. The portable micro-kernel's a·b + c may be rounded twice, so on a portable
  // build the two are only close (the test above).
  if (std::string_view(gemm_config().isa) == "portable") return;
  for (auto [ta, tb] : kTrans)
    for (const Problem& p : blocking_edges(ta, tb)) {
      CAPTURE(ta);
      CAPTURE(tb);
      CAPTURE(p.M);
      CAPTURE(p.N);
      CAPTURE(p.K);
      const std::vector<float> blocked = p.run(gemm_blocked), fast = p.run(gemm);
      CHECK(std::memcmp(blocked.data(), fast.data(), blocked.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("gemm_bias gives gemm followed by adding the bias to every row, to the bit") {
  // Full tiles, edge tiles, products computed as their transpose (N < NR), several k blocks, K = 0
  // (C is the bias alone), and a padded C whose padding must stay as it was.
  const GemmConfig cfg = gemm_config();
  std::vector<Problem> problems;
  for (auto [ta, tb] : kTrans) {
    for (const Problem& p : blocking_edges(ta, tb))
      if (p.alpha == 1.0f && p.beta == 0.0f) problems.push_back(p);
    problems.push_back({ta, tb, 2 * cfg.mr, 2 * cfg.nr, 2 * cfg.kc + 5, /*pad=*/3});
    problems.push_back({ta, tb, 5, 3, 0, /*pad=*/2});
  }
  for (const Problem& p : problems) {
    CAPTURE(p.ta);
    CAPTURE(p.tb);
    CAPTURE(p.M);
    CAPTURE(p.N);
    CAPTURE(p.K);
    const std::vector<float> A = p.a(), B = p.b(), bias = random_floats(p.N, 4);
    std::vector<float> expected = p.c(), got = p.c();
    gemm(p.ta, p.tb, p.M, p.N, p.K, 1.0f, A.data(), p.lda(), B.data(), p.ldb(), 0.0f, expected.data(),
         p.ldc());
    for (int64_t i = 0; i < p.M; ++i)
      for (int64_t j = 0; j < p.N; ++j) expected[i * p.ldc() + j] += bias[j];
    gemm_bias(p.ta, p.tb, p.M, p.N, p.K, A.data(), p.lda(), B.data(), p.ldb(), bias.data(), got.data(),
              p.ldc());
    CHECK(std::memcmp(expected.data(), got.data(), got.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("gemm reads and writes strided matrices and leaves the padding of C alone") {
  for (auto [ta, tb] : kTrans) {
    Problem p{ta, tb, 19, 35, 23, /*pad=*/5};
    check_against_reference(p);
    p.beta = 0.5f;
    check_against_reference(p);
  }
}

TEST_CASE("gemm applies alpha and beta") {
  for (auto [ta, tb] : kTrans)
    for (float alpha : {1.0f, -0.5f, 0.0f})
      for (float beta : {0.0f, 1.0f, 2.5f}) {
        Problem p{ta, tb, 29, 37, 300};
        p.alpha = alpha, p.beta = beta;
        check_against_reference(p);
      }
  // The exact values of a small case: C = 2·A·B + 3·C, A = [1 2], B = [3 4]ᵀ, C = [10].
  const float A[] = {1, 2}, B[] = {3, 4};
  float C[] = {10};
  gemm(false, false, 1, 1, 2, 2.0f, A, 2, B, 1, 3.0f, C, 1);
  CHECK(C[0] == 2.0f * 11.0f + 30.0f);
}

TEST_CASE("gemm with beta 0 never reads C so NaN there does not leak into the result") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (auto [ta, tb] : kTrans)
    for (int64_t M : {1, 7, 50})
      for (int64_t N : {1, 17, 40}) {
        const int64_t K = 9;
        const std::vector<float> A = random_floats(M * K, 4), B = random_floats(K * N, 5);
        std::vector<float> C(static_cast<size_t>(M * N), nan), R(C.size());
        gemm(ta, tb, M, N, K, 1.0f, A.data(), ta ? M : K, B.data(), tb ? K : N, 0.0f, C.data(), N);
        gemm_reference(ta, tb, M, N, K, 1.0f, A.data(), ta ? M : K, B.data(), tb ? K : N, 0.0f, R.data(), N);
        int64_t nans = 0;
        for (float c : C) nans += std::isnan(c);
        CHECK(nans == 0);
        for (size_t i = 0; i < C.size(); ++i) REQUIRE(std::fabs(C[i] - R[i]) < 1e-5f);
      }
}

TEST_CASE("gemm propagates a NaN of A to its row of C only") {
  const int64_t M = 9, N = 20, K = 11;
  std::vector<float> A = random_floats(M * K, 6), C(static_cast<size_t>(M * N));
  const std::vector<float> B = random_floats(K * N, 7);
  A[4 * K + 3] = std::numeric_limits<float>::quiet_NaN();
  gemm(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) CHECK(std::isnan(C[i * N + j]) == (i == 4));
}

TEST_CASE("gemm on empty matrices writes nothing and with K 0 sets C to beta times C") {
  const float A[] = {1.0f}, B[] = {1.0f};
  float C[] = {7.0f, 8.0f};
  gemm(false, false, 0, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2);
  gemm(false, false, 1, 0, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2);
  CHECK(C[0] == 7.0f);
  CHECK(C[1] == 8.0f);
  gemm(false, false, 1, 2, 0, 1.0f, A, 1, B, 2, 0.5f, C, 2);
  CHECK(C[0] == 3.5f);
  CHECK(C[1] == 4.0f);
  C[0] = std::numeric_limits<float>::quiet_NaN();
  gemm(true, true, 1, 2, 0, 1.0f, A, 1, B, 1, 0.0f, C, 2);
  CHECK(C[0] == 0.0f);
  CHECK(C[1] == 0.0f);
}

TEST_CASE("gemm results are bitwise identical for 1 and 2 threads") {
  const int saved = qkv::get_num_threads();
  const GemmConfig cfg = gemm_config();
  for (auto [ta, tb] : kTrans)
    for (Problem p :
         {Problem{ta, tb, 2 * cfg.mc + 5, 3 * cfg.nr + 1, cfg.kc + 3}, Problem{ta, tb, 40, 300, 70},
          Problem{ta, tb, 300, 40, 70}, Problem{ta, tb, 2 * cfg.mc + 5, cfg.nr / 2, 300}}) {
      p.beta = 0.75f;
      qkv::set_num_threads(1);
      const std::vector<float> one = p.run(gemm);
      qkv::set_num_threads(2);
      const std::vector<float> two = p.run(gemm);
      CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
    }
  qkv::set_num_threads(saved);
}

TEST_CASE("gemm over many k steps with few rows and columns, each thread a part of C for all of k, gives one thread's bits") {
  // One row block and several KC blocks: at 2 threads each thread takes a chunk of the columns
  // (n >= M), a block of the rows (M > n), or, for a product narrower than a tile, a part of its
  // transpose; with beta, a padded C, and a bias added after the last k block.
  const int saved = qkv::get_num_threads();
  const GemmConfig cfg = gemm_config();
  for (auto [ta, tb] : kTrans)
    for (Problem p : {Problem{ta, tb, 64, 128, 2 * cfg.kc + 7, 3}, Problem{ta, tb, cfg.mc, 40, cfg.kc + 1, 1},
                      Problem{ta, tb, 2 * cfg.mr + 1, 2 * cfg.nr + 5, 3 * cfg.kc, 2},
                      Problem{ta, tb, 150, 5, 2 * cfg.kc + 1, 0}}) {
      CAPTURE(ta);
      CAPTURE(tb);
      CAPTURE(p.M);
      CAPTURE(p.N);
      p.beta = 0.5f;
      qkv::set_num_threads(2);
      check_against_reference(p);
      const std::vector<float> two = p.run(gemm), A = p.a(), B = p.b(), bias = random_floats(p.N, 4);
      std::vector<float> two_bias = p.c(), one_bias = p.c();
      gemm_bias(p.ta, p.tb, p.M, p.N, p.K, A.data(), p.lda(), B.data(), p.ldb(), bias.data(), two_bias.data(),
                p.ldc());
      qkv::set_num_threads(1);
      const std::vector<float> one = p.run(gemm);
      gemm_bias(p.ta, p.tb, p.M, p.N, p.K, A.data(), p.lda(), B.data(), p.ldb(), bias.data(), one_bias.data(),
                p.ldc());
      CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(one_bias.data(), two_bias.data(), one_bias.size() * sizeof(float)) == 0);
    }
  qkv::set_num_threads(saved);
}

TEST_CASE("gemm_batched equals one gemm per matrix and broadcasts a matrix with stride 0") {
  const int saved = qkv::get_num_threads();
  qkv::set_num_threads(2);
  for (auto [ta, tb] : kTrans)
    for (auto [M, N, K] : {std::array<int64_t, 3>{32, 32, 16}, {7, 5, 3}, {200, 150, 90}}) {
      const int64_t batch = 6, lda = ta ? M : K, ldb = tb ? K : N;
      const std::vector<float> A = random_floats(batch * M * K, 8), B = random_floats(K * N, 9);
      std::vector<float> C(static_cast<size_t>(batch * M * N)), R(C.size());
      // B is shared by every product (stride 0), as when a weight multiplies a batch.
      gemm_batched(batch, ta, tb, M, N, K, 1.0f, A.data(), lda, M * K, B.data(), ldb, 0, 0.0f, C.data(), N,
                   M * N);
      for (int64_t i = 0; i < batch; ++i)
        gemm(ta, tb, M, N, K, 1.0f, A.data() + i * M * K, lda, B.data(), ldb, 0.0f, R.data() + i * M * N, N);
      CHECK(std::memcmp(C.data(), R.data(), C.size() * sizeof(float)) == 0);
    }
  qkv::set_num_threads(saved);
}

TEST_CASE("gemm_batched_offsets on per-head views equals one gemm per matrix") {
  // The heads of a (B, T, H·d) projection seen as (B, H, T, d): matrix (b, h) starts at
  // b·T·H·d + h·d with leading dimension H·d, offsets that do not step evenly.
  const int saved = qkv::get_num_threads();
  const int64_t Bn = 3, H = 4, T = 19, d = 8, D = H * d;
  // With both operands transposed, op(B) is T×T read with row stride D from the head's start: it
  // runs past the last head's (T, D) block, so the buffers hold one block more than the heads use.
  const std::vector<float> Q = random_floats((Bn + 1) * T * D, 10), Kt = random_floats((Bn + 1) * T * D, 11);
  std::vector<int64_t> heads, out;
  for (int64_t b = 0; b < Bn; ++b)
    for (int64_t h = 0; h < H; ++h) heads.push_back(b * T * D + h * d), out.push_back((b * H + h) * T * T);
  for (int threads : {1, 2}) {
    qkv::set_num_threads(threads);
    for (auto [ta, tb] : kTrans) {
      // Each operand is the T×d head or its first rows, read as the flags say: the scores Q·Kᵀ are
      // (false, true), T×d by (T×d)ᵀ; (true, false) is Qᵀ·K, d×T by T×d, as backward's dW-like
      // products; the other two read a d×d block of one head.
      const int64_t M = ta ? d : T, N = tb ? T : d, K = ta && !tb ? T : d;
      const int64_t ldc = N;
      std::vector<float> C(static_cast<size_t>(Bn * H * T * T), -1.0f), R = C;
      gemm_batched_offsets(Bn * H, ta, tb, M, N, K, 1.0f, Q.data(), D, heads.data(), Kt.data(), D,
                           heads.data(), 0.0f, C.data(), ldc, out.data());
      for (size_t i = 0; i < heads.size(); ++i)
        gemm(ta, tb, M, N, K, 1.0f, Q.data() + heads[i], D, Kt.data() + heads[i], D, 0.0f, R.data() + out[i],
             ldc);
      CHECK(std::memcmp(C.data(), R.data(), C.size() * sizeof(float)) == 0);
    }
  }
  qkv::set_num_threads(saved);
}
