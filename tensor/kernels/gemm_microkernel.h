// The innermost piece of the fast GEMM (tensor/kernels/gemm.cpp): one register-blocked
// micro-kernel, written once over a small SIMD interface, and that interface for the instruction
// set this build targets (chosen at build time from the compiler's target macros):
//
//   AVX-512 (__AVX512F__)          16 floats a vector, 32 registers, tile MR×NR = 12×32
//   AVX2 + FMA (__AVX2__, __FMA__)  8 floats a vector, 16 registers, tile MR×NR =  6×16
//   portable C++                    1 float "a vector",                tile MR×NR =  4×4
//
// The micro-kernel computes an MR×NR tile of C (or, at the edges of C, a smaller instance of it
// for a smaller tile: tile_kernel) from an MR×kc sliver of A (packed, or read in place: rows of a
// row-major A, or columns of a transposed one) and a packed kc×NR sliver of B (Van Zee & van de Geijn, "BLIS: A framework for
// rapidly instantiating BLAS functionality", ACM TOMS 2015): for each k it loads the NR values of
// row k of B (NR/width vectors), broadcasts each of the MR values of column k of A, and adds their
// outer product into MR·NR/width vector accumulators that stay in registers for the whole k loop.
// The accumulators, the B vectors and one broadcast must fit in the register file (AVX2:
// 12 + 2 + 1 = 15 of 16; AVX-512: 24 + 2 + 1 = 27 of 32), and there must be more independent
// accumulators than FMAs in flight (2 FMA units × 4 cycles of latency = 8), or the units would
// wait for results.
//
// The block sizes MC, KC, NC say how much of A and B the blocked loops keep in each cache level;
// docs/PERFORMANCE.md explains how they were chosen.
#pragma once

#include <cstdint>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace qkv::kernels::gemm_detail {

#if defined(__AVX512F__)

struct Simd {
  static constexpr const char* name = "avx512";
  static constexpr int width = 16;
  using V = __m512;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V broadcast(float x) { return _mm512_set1_ps(x); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  // The first n < width lanes of p (the others read as zero), and a store of only those lanes.
  static __mmask16 first(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }
  static V load_first(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(first(n), p); }
  static void store_first(float* p, V v, int64_t n) { _mm512_mask_storeu_ps(p, first(n), v); }
};
// Block sizes for the caches of an AVX-512 core such as AMD's Zen 4 (L1d 32 KiB and L2 1 MiB per
// core, L3 shared). The packed A block, MC·KC·4 = 288 KiB, stays in L2; the B block, KC·NC·4 =
// 6 MiB, in L3. The B sliver, KC·NR·4 = 48 KiB, is larger than L1 and streams from L2 (the
// hardware prefetcher follows it): a deeper k block means fewer passes over C, and the training
// step's products of depth 256 take one, those of 1024 three instead of six. On the step's own
// shapes this measured faster than a KC that keeps the sliver in L1 (docs/PERFORMANCE.md, "The
// GEMM, step by step").
constexpr int64_t MR = 12, NR = 32, MC = 192, KC = 384, NC = 4096, MR_STEP = 4;

#elif defined(__AVX2__) && defined(__FMA__)

struct Simd {
  static constexpr const char* name = "avx2";
  static constexpr int width = 8;
  using V = __m256;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V broadcast(float x) { return _mm256_set1_ps(x); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  // The first n < width lanes of p (the others read as zero), and a store of only those lanes.
  static __m256i first(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V load_first(const float* p, int64_t n) { return _mm256_maskload_ps(p, first(n)); }
  static void store_first(float* p, V v, int64_t n) { _mm256_maskstore_ps(p, first(n), v); }
};
// For the caches of an AVX2 core such as Zen 3 (L1d 32 KiB, L2 512 KiB): B sliver 16 KiB in L1,
// A block 144 KiB in L2, B block about 4 MiB in L3.
constexpr int64_t MR = 6, NR = 16, MC = 144, KC = 256, NC = 4080, MR_STEP = 2;

#else

struct Simd {
  static constexpr const char* name = "portable";
  static constexpr int width = 1;
  using V = float;
  static V zero() { return 0.0f; }
  static V load(const float* p) { return *p; }
  static V broadcast(float x) { return x; }
  static V mul(V a, V b) { return a * b; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static void store(float* p, V v) { *p = v; }
  // A vector of one float has no partial lanes: n is 0 here.
  static V load_first(const float*, int64_t) { return 0.0f; }
  static void store_first(float*, V, int64_t) {}
};
constexpr int64_t MR = 4, NR = 4, MC = 128, KC = 256, NC = 4096, MR_STEP = 4;

#endif

static_assert(NR % Simd::width == 0 && MC % MR == 0 && NC % NR == 0 && MR % MR_STEP == 0);

// out[q·ldo + i] = in[i·ldi + q] for i, q < 8: the transpose of an 8×8 block, for packing a
// transposed operand. With AVX2 (also present wherever AVX-512 is): eight row loads, three rounds
// of shuffles that pair up elements from farther and farther apart (neighbours, pairs, halves),
// eight stores; about six times faster than moving the 64 floats one by one.
inline void transpose8x8(const float* in, int64_t ldi, float* out, int64_t ldo) {
#if defined(__AVX2__)
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + i * ldi);
  for (int i = 0; i < 8; i += 2) {  // t[i] = a0 b0 a1 b1 | a4 b4 a5 b5, t[i+1] = a2 b2 a3 b3 | a6 b6 a7 b7
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {  // r[i + c] holds column c (and c + 4) of rows i .. i+3
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int c = 0; c < 4; ++c) {  // join the 128-bit halves of rows 0..3 and 4..7
    _mm256_storeu_ps(out + c * ldo, _mm256_permute2f128_ps(r[c], r[c + 4], 0x20));
    _mm256_storeu_ps(out + (c + 4) * ldo, _mm256_permute2f128_ps(r[c], r[c + 4], 0x31));
  }
#else
  for (int i = 0; i < 8; ++i)
    for (int q = 0; q < 8; ++q) out[q * ldo + i] = in[i * ldi + q];
#endif
}

// Where the micro-kernel reads its MR×kc sliver of A, element (i, k):
//   ColumnSliver  p[k·cs + i]: the MR values of one k side by side. A packed sliver (cs = MR), or
//                 a transposed A read in place (cs = its leading dimension).
//   RowSliver     p[i·rs + k]: MR rows of a row-major A read in place.
// Each type keeps its position in as few registers as it can: the kernel needs 12 row addresses
// per k, and twelve pointers (which it had once) do not fit beside the loop's other registers on
// x86-64, so the compiler kept some on the stack and reloaded them every k, a few per cent of the
// step's products.
struct ColumnSliver {
  const float* p;
  int64_t cs;
  // Column k's values are at col[0 .. MR), advanced one k at a time.
  struct Cursor {
    const float* col;
    int64_t cs;
    float operator[](int i) const { return col[i]; }
    void next() { col += cs; }
  };
  Cursor cursor() const { return {p, cs}; }
};

struct RowSliver {
  const float* p;
  int64_t rs;
  // Row i at base[i / 3][(i % 3)·rs]: one pointer per three rows, each row then one addressing
  // mode away (base + rs·4 or base + rs·8 bytes), as BLIS's hand-written kernels address them.
  struct Cursor {
    static constexpr int kGroups = static_cast<int>((MR + 2) / 3);
    const float* base[kGroups];
    int64_t rs;
    float operator[](int i) const { return base[i / 3][(i % 3) * rs]; }
    void next() {
      for (int g = 0; g < kGroups; ++g) ++base[g];
    }
  };
  Cursor cursor() const {
    Cursor c{{}, rs};
    for (int g = 0; g < Cursor::kGroups; ++g) c.base[g] = p + 3 * g * rs;
    return c;
  }
};

// C (rows×cols, row-major with leading dimension ldc) = alpha · A·b + beta · C, for a tile of at
// most ROWS ≤ MR rows and NV·width ≤ NR columns, where A is the MR×kc sliver `a` (a ColumnSliver
// or a RowSliver, of which the first ROWS rows are read) and b a packed kc×NR sliver of B: row k
// is b[k·NR .. k·NR + NR), of which the first NV vectors are read. The full tile is
// micro_kernel<MR, NR / width>; a tile at the edge of C takes the smallest instance that covers
// it (tile_kernel below), so that it computes little past the edge and writes only its own part
// of C. When beta == 0, C is not read. Every element of the tile is one chain of fused
// multiply-adds in k order, whatever the instance and its position in the tile: that is what
// makes the blocked GEMM's result independent of how the tiles are shared among threads.
template <int ROWS, int NV, class Sliver>
inline void micro_kernel(int64_t kc, Sliver a, const float* b, float alpha, float beta, float* C, int64_t ldc,
                         int64_t rows, int64_t cols) {
  using V = Simd::V;
  constexpr int W = Simd::width;
  // The tile of C is needed only at the end, and for a large C it has left the caches since the
  // previous k block: asking for it now hides the wait behind the k loop, as BLIS's micro-kernels
  // do.
  for (int i = 0; i < ROWS; ++i) {
    __builtin_prefetch(C + i * ldc, 1);
    __builtin_prefetch(C + i * ldc + NV * W - 1, 1);
  }
  V acc[ROWS][NV];
  for (int i = 0; i < ROWS; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = Simd::zero();
  auto at = a.cursor();
  for (int64_t k = 0; k < kc; ++k, b += NR, at.next()) {
    V row[NV];
    for (int v = 0; v < NV; ++v) row[v] = Simd::load(b + v * W);
    for (int i = 0; i < ROWS; ++i) {
      const V ai = Simd::broadcast(at[i]);
      for (int v = 0; v < NV; ++v) acc[i][v] = Simd::fma(ai, row[v], acc[i][v]);
    }
  }
  const V va = Simd::broadcast(alpha), vb = Simd::broadcast(beta);
  for (int i = 0; i < ROWS && i < rows; ++i)
    for (int v = 0; v < NV; ++v) {
      float* c = C + i * ldc + v * W;
      const int64_t lanes = cols - v * W;  // at least 1: NV vectors are the fewest covering cols
      if (lanes >= W)
        Simd::store(c, beta == 0.0f ? Simd::mul(va, acc[i][v])
                                    : Simd::fma(va, acc[i][v], Simd::mul(vb, Simd::load(c))));
      else
        Simd::store_first(c,
                          beta == 0.0f ? Simd::mul(va, acc[i][v])
                                       : Simd::fma(va, acc[i][v], Simd::mul(vb, Simd::load_first(c, lanes))),
                          lanes);
    }
}

// The micro-kernel for a tile of rows ≤ MR and cols ≤ NR: the instance with the fewest rows (a
// multiple of MR_STEP) and the fewest vectors that cover it. A 64 × 45 product of attention
// scores then computes 64 × 48 values instead of 72 × 64 in full tiles.
template <int ROWS = MR_STEP, int NV = 1, class Sliver>
inline void tile_kernel(int64_t kc, Sliver a, const float* b, float alpha, float beta, float* C, int64_t ldc,
                        int64_t rows, int64_t cols) {
  if constexpr (ROWS < MR) {
    if (rows > ROWS) return tile_kernel<ROWS + MR_STEP, NV>(kc, a, b, alpha, beta, C, ldc, rows, cols);
  }
  if constexpr (NV < NR / Simd::width) {
    if (cols > NV * Simd::width) return tile_kernel<ROWS, NV + 1>(kc, a, b, alpha, beta, C, ldc, rows, cols);
  }
  micro_kernel<ROWS, NV>(kc, a, b, alpha, beta, C, ldc, rows, cols);
}

}  // namespace qkv::kernels::gemm_detail
