// The GEMM with bfloat16 operands and float32 sums (qkv::MatmulPrecision::medium, tensor/precision.h):
// gemm.cpp's blocked loops with a micro-kernel built on AVX512_BF16's VDPBF16PS, which multiplies
// 16 pairs of bfloat16 values and adds each pair's two products to a float32 lane:
//
//   acc[j] += a[2j]·b[2j] + a[2j+1]·b[2j+1]        j = 0..15, a and b 32 bfloat16 values
//
// So the micro-kernel walks k two steps at a time. Packing rounds each float to bfloat16 and puts
// the values of k = 2p and 2p + 1 side by side in one 32-bit word: a packed A sliver holds, for
// each pair p, MR words (row i: A(i, 2p) in the low half, A(i, 2p + 1) in the high half), a
// packed B sliver NR words (column j: B(2p, j), B(2p + 1, j)). The kernel broadcasts row i's word
// to all 16 lanes and multiplies it with the 16 column words of one vector of B: 32 multiply-adds
// in one instruction, twice a float32 FMA's 16. An odd k is padded with a zero. The packed data is
// half the size of float32's, so KC doubles for the same cache footprint.
//
// Like gemm.cpp, threads share output blocks and never split k, so the result does not depend on
// the thread count. It differs from the float32 product by the rounding of the operands (relative
// error up to 2⁻⁸ each) and from gemm's float32 sums by the order of additions within a pair.
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstdint>

#include "tensor/kernels/gemm.h"
#include "tensor/kernels/gemm_blocking.h"
#include "tensor/kernels/parallel.h"
#include "tensor/precision.h"

#if defined(__AVX512BF16__)
#include <immintrin.h>
#endif

// tensor/precision.h's question, answered where the kernel is (or is not) compiled.
bool qkv::bf16_matmul_available() {
#if defined(__AVX512BF16__)
  return true;
#else
  return false;
#endif
}

namespace qkv::kernels {

#if !defined(__AVX512BF16__)

namespace gemm_detail {
void gemm_bf16(int, int64_t, int64_t, int64_t, float, Strided, Strided, float, float*, int64_t, const float*) {
  // set_matmul_precision refuses medium in this build, so gemm never comes here.
  std::fputs("qkv: gemm_bf16 called in a build without AVX512_BF16\n", stderr);
  std::abort();
}
}  // namespace gemm_detail

#else

namespace gemm_detail {
namespace {

// Depth of a k block: twice float32's KC, so that a packed B sliver (KC2·NR·2 bytes) and a packed
// A block take the same cache as float32's.
constexpr int64_t KC2 = 2 * KC;

thread_local PackBuffer<uint32_t> t_a_pairs, t_b_pairs;

// x rounded to the nearest bfloat16 (ties to even), as its 16 bits, as VCVTNE2PS2BF16 rounds it:
// a NaN stays a (quiet) NaN, a denormal becomes a zero of its sign.
uint32_t bf16_bits(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7f800000u) == 0) return (u >> 16) & 0x8000u;
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

uint32_t pair(float lo, float hi) { return bf16_bits(lo) | bf16_bits(hi) << 16; }

// 16 pair words from 32 floats: word q = pair(lo[q], hi[q]) when interleaved (lo and hi from two
// lines), or pair(v[2q], v[2q + 1]) when not (v = lo then hi, 32 consecutive values of one line).
__m512i pairs16(__m512 lo, __m512 hi, bool interleave) {
  const __m512i words = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);  // bf16 of lo[0..15], then of hi[0..15]
  if (!interleave) return words;
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                         22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(order, words);
}

// Packs `lines` lines of a k-long panel, element p of line i at s[i·ls + p·ks], into slivers of W
// lines: sliver j holds, for each pair p < ceil(k / 2), the W words out[(j·pairs + p)·W + i] =
// pair(line j·W + i at 2p, at 2p + 1), zero past the last line and past k. For A the lines are rows
// of op(A) (W = MR), for B columns of op(B) (W = NR); one of the strides is 1, and the loops follow
// the memory, converting 32 floats at a time where they can.
template <int64_t W>
void pack_pairs(const float* s, int64_t ls, int64_t ks, int64_t lines, int64_t k, uint32_t* out) {
  const int64_t pairs = (k + 1) / 2;
  const auto at = [&](int64_t line, int64_t p) {
    return line < lines && p < k ? s[line * ls + p * ks] : 0.0f;
  };
  for (int64_t j = 0; j * W < lines; ++j) {
    uint32_t* sliver = out + j * pairs * W;
    int64_t done = 0;                       // pairs packed with SIMD, for every line of the sliver
    if (ks == 1 && (j + 1) * W <= lines) {  // each line contiguous along k: 16 pairs of a line at a time
      alignas(64) uint32_t words[16];
      for (; 2 * done + 32 <= k; done += 16)
        for (int64_t i = 0; i < W; ++i) {
          const float* v = s + (j * W + i) * ls + 2 * done;
          _mm512_store_si512(words, pairs16(_mm512_loadu_ps(v), _mm512_loadu_ps(v + 16), false));
          for (int q = 0; q < 16; ++q) sliver[(done + q) * W + i] = words[q];
        }
    } else if (ls == 1 && (j + 1) * W <= lines) {  // one k contiguous across lines: 16 lines at a time
      for (; 2 * done + 2 <= k; ++done)
        for (int64_t i = 0; i < W; i += 16) {
          const __mmask16 m = static_cast<__mmask16>((1u << std::min<int64_t>(16, W - i)) - 1);
          const float* v = s + j * W + i + 2 * done * ks;
          _mm512_mask_storeu_epi32(
              sliver + done * W + i, m,
              pairs16(_mm512_maskz_loadu_ps(m, v), _mm512_maskz_loadu_ps(m, v + ks), true));
        }
    }
    for (int64_t p = done; p < pairs; ++p)
      for (int64_t i = 0; i < W; ++i)
        sliver[p * W + i] = pair(at(j * W + i, 2 * p), at(j * W + i, 2 * p + 1));
  }
}

// The MR×NR tile C = alpha · A·B + beta · C (C not read when beta == 0) from a packed A sliver and
// a packed B sliver of `pairs` pairs of k.
void micro_kernel_bf16(int64_t pairs, const uint32_t* a, const uint32_t* b, float alpha, float beta, float* C,
                       int64_t ldc) {
  static_assert(NR == 32 && MR == 12, "written for the AVX-512 tile of gemm_microkernel.h");
  __m512 acc[MR][2];
  for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p, a += MR, b += NR) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 16);
    for (int i = 0; i < MR; ++i) {
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[i]));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < 2; ++v) {
      float* c = C + i * ldc + 16 * v;
      _mm512_storeu_ps(c, beta == 0.0f
                              ? _mm512_mul_ps(va, acc[i][v])
                              : _mm512_fmadd_ps(va, acc[i][v], _mm512_mul_ps(vb, _mm512_loadu_ps(c))));
    }
}

// C[0:m, 0:n] = alpha · (packed A block)·(packed B columns) + beta · C, then + bias[j] when bias is
// set (the last k block). A partial tile is computed whole in a side buffer, its valid part
// copied out.
void macro_kernel_bf16(int64_t m, int64_t n, int64_t pairs, const uint32_t* a, const uint32_t* b, float alpha,
                       float beta, float* C, int64_t ldc, const float* bias) {
  alignas(64) float edge[MR * NR] = {};  // the kernel reads all of it when beta != 0
  for (int64_t j = 0; j < n; j += NR) {
    const int64_t cols = std::min(NR, n - j);
    for (int64_t i = 0; i < m; i += MR) {
      const int64_t rows = std::min(MR, m - i);
      const uint32_t *a_sliver = a + i * pairs, *b_sliver = b + j * pairs;
      float* c = C + i * ldc + j;
      const bool whole = rows == MR && cols == NR;
      if (!whole && beta != 0.0f)
        for (int64_t r = 0; r < rows; ++r) std::copy(c + r * ldc, c + r * ldc + cols, edge + r * NR);
      micro_kernel_bf16(pairs, a_sliver, b_sliver, alpha, beta, whole ? c : edge, whole ? ldc : NR);
      if (whole && !bias) continue;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t q = 0; q < cols; ++q) {
          float& out = c[r * ldc + q];
          if (!whole) out = edge[r * NR + q];
          if (bias) out += bias[j + q];
        }
    }
  }
}

}  // namespace

// gemm.cpp's blocked_loops with pairs of bfloat16: the B block packed by all threads, then
// (row block, column chunk) tasks that pack their rows of A and run the macro-kernel.
void gemm_bf16(int threads, int64_t M, int64_t N, int64_t K, float alpha, Strided a, Strided b, float beta,
               float* C, int64_t ldc, const float* bias) {
  uint32_t* b_packed = t_b_pairs.get((std::min(KC2, K) + 1) / 2 * ceil_div(std::min(NC, N), NR) * NR);
  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t n = std::min(NC, N - jc);
    const TaskGrid grid = task_grid(M, n, threads);
    for (int64_t pc = 0; pc < K; pc += KC2) {
      const int64_t k = std::min(KC2, K - pc), pairs = (k + 1) / 2;
      parallel_tasks(threads, threads, k * n, [&](int64_t t, int) {
        const int64_t j0 = split_point(n, threads, NR, t), j1 = split_point(n, threads, NR, t + 1);
        pack_pairs<NR>(b.at(pc, jc + j0), b.cs, b.rs, j1 - j0, k, b_packed + j0 * pairs);
      });
      parallel_tasks(grid.row_blocks * grid.col_chunks, threads, M * n * k, [&](int64_t task, int) {
        const auto [i0, i1, j0, j1] = task_bounds(grid, M, n, task);
        if (i0 == i1 || j0 == j1) return;
        uint32_t* a_packed = t_a_pairs.get(ceil_div(i1 - i0, MR) * MR * pairs);
        pack_pairs<MR>(a.at(i0, pc), a.rs, a.cs, i1 - i0, k, a_packed);
        const float* tile_bias = bias && pc + k >= K ? bias + jc + j0 : nullptr;
        macro_kernel_bf16(i1 - i0, j1 - j0, pairs, a_packed, b_packed + j0 * pairs, alpha,
                          pc == 0 ? beta : 1.0f, C + i0 * ldc + jc + j0, ldc, tile_bias);
      });
    }
  }
}

}  // namespace gemm_detail

#endif

}  // namespace qkv::kernels
