// The tiled attention kernels: attention.h has the equations, the online softmax and how the work
// is split.
#include "tensor/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/kernels/gemm_microkernel.h"
#include "tensor/kernels/parallel.h"
#include "tensor/kernels/row_ops.h"
#include "tensor/kernels/vecmath.h"
#include "tensor/storage.h"

namespace qkv::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Calls task(i, scratch) for every task i in [0, tasks), handed out to the threads of parallel.h's
// pool (a free thread takes the next task not started). Each thread gets its own `per_thread`
// floats of scratch, allocated once per call from the tensors' caching allocator (Scratch,
// tensor/storage.h), uninitialized: every buffer in it is written before it is read. Inside a
// task, gemm sees that it runs in one and stays on the calling thread.
template <class F>
void for_each_task(int64_t tasks, int64_t work, int64_t per_thread, F&& task) {
  const bool parallel = tasks > 1 && get_num_threads() > 1 && work >= kMinParallelWork && !in_parallel_task();
  const int threads = parallel ? get_num_threads() : 1;
  Scratch scratch(threads * per_thread);
  parallel_tasks(tasks, threads, work, [&](int64_t i, int worker) { task(i, scratch.data() + worker * per_thread); });
}

// The first element of head h of batch b.
const float* head_of(const HeadsView& x, int64_t b, int64_t h) { return x.data + b * x.batch + h * x.head; }

int64_t tiles(int64_t n, int64_t tile) { return (n + tile - 1) / tile; }

// Where the rows of one block and one query tile are: block b·H + h, rows [i0, i0 + rows).
struct Tile {
  int64_t block, b, h, i0, rows;
};

// The keys row i of a block sees: [0, visible). (With no keys there are no lengths to read.)
int64_t row_visible(const AttentionSizes& n, const int64_t* lens, int64_t block, int64_t i) {
  return lens && n.Tk > 0 ? std::clamp<int64_t>(lens[block * n.Tq + i], 0, n.Tk) : n.Tk;
}

// The keys any row of tile t sees: past this, no key tile is visited.
int64_t tile_visible(const AttentionSizes& n, const int64_t* lens, const Tile& t) {
  int64_t most = 0;
  for (int64_t r = 0; r < t.rows; ++r) most = std::max(most, row_visible(n, lens, t.block, t.i0 + r));
  return most;
}

// The tile products. A tile is at most 64 × 64 with a depth of d (16 to 128): through gemm()
// each such product would pay for the whole product's dispatch, its packing and its thread pool
// (at d = 16 half the time of the product itself). Here gemm's micro-kernel (gemm_microkernel.h)
// is called directly, on this thread: operand B is packed once where it is reused (a key tile for
// every query tile of its row in backward, each key tile once per query tile in forward), operand
// A is read in place, as rows (RowSliver) or, for the transposed products of backward (Pᵀ dO,
// dSᵀ Q), as columns of the tile (ColumnSliver). Every element is one chain of fused multiply-adds
// in k order, as in gemm, so a row's result does not depend on the rows computed beside it.
using gemm_detail::ColumnSliver, gemm_detail::MR, gemm_detail::NR, gemm_detail::RowSliver, gemm_detail::Simd;

int64_t round_up(int64_t n, int64_t unit) { return (n + unit - 1) / unit * unit; }

// dst[0, n) = src[0, n) as a loop the compiler vectorizes in place: the rows copied here are d
// floats (64 to 512 bytes), where std::copy's call to memmove cost more than the copy.
void copy_row(const float* src, int64_t n, float* dst) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

// The floats a packed B of n columns and depth k takes: whole slivers of NR columns.
int64_t packed_floats(int64_t n, int64_t k) { return round_up(n, NR) * k; }

// Packs B (k rows of n floats, `ld` apart) as the micro-kernel reads it: for each sliver of NR
// columns its k rows of NR floats in turn, zeros past n to the sliver's last vector.
void pack_rows(const float* x, int64_t ld, int64_t k, int64_t n, float* out) {
  for (int64_t j = 0; j < n; j += NR) {
    const int64_t w = std::min(NR, n - j), vectors = round_up(w, Simd::width);
    float* sliver = out + j * k;
    for (int64_t p = 0; p < k; ++p) {
      copy_row(x + p * ld + j, w, sliver + p * NR);
      std::fill(sliver + p * NR + w, sliver + p * NR + vectors, 0.0f);
    }
  }
}

// Packs B given as its transpose, n rows of k floats `ld` apart (a key tile, for Q Kᵀ), into the
// same order: a transpose, in 8 × 8 blocks (gemm's transpose8x8), the rest one by one.
void pack_transposed(const float* x, int64_t ld, int64_t n, int64_t k, float* out) {
  for (int64_t j = 0; j < n; j += NR) {
    const int64_t w = std::min(NR, n - j), vectors = round_up(w, Simd::width);
    const float* rows = x + j * ld;
    float* sliver = out + j * k;
    int64_t i0 = 0;
    for (; i0 + 8 <= w; i0 += 8) {
      int64_t p0 = 0;
      for (; p0 + 8 <= k; p0 += 8) gemm_detail::transpose8x8(rows + i0 * ld + p0, ld, sliver + p0 * NR + i0, NR);
      for (int64_t i = i0; i < i0 + 8; ++i)
        for (int64_t p = p0; p < k; ++p) sliver[p * NR + i] = rows[i * ld + p];
    }
    for (int64_t i = i0; i < w; ++i)
      for (int64_t p = 0; p < k; ++p) sliver[p * NR + i] = rows[i * ld + p];
    for (int64_t p = 0; p < k; ++p) std::fill(sliver + p * NR + w, sliver + p * NR + vectors, 0.0f);
  }
}

// A B packed above with a depth of `depth` rows: its first k ≤ depth rows are the B of a product of
// depth k (sliver j starts at data + j·depth).
struct PackedB {
  const float* data;
  int64_t depth;
};

// C (m × n, rows ldc apart) = alpha · A·B + beta · C (beta = 0: C not read), A read in place: with
// `rows` its rows, lda apart (A row-major); without, its columns (A is Xᵀ for a row-major X of k
// rows, lda apart, each readable to m rounded up to a multiple of 4, as the 64-float rows of a
// tile are). The micro-kernel reads a whole instance's rows (a multiple of 4); a last strip of
// fewer than MR rows of a row-major A is copied into `aside` (MR × k) first, so that nothing is
// read past A's last row.
void tile_product(int64_t m, int64_t n, int64_t k, bool rows, const float* a, int64_t lda, PackedB packed,
                  float alpha, float beta, float* c, int64_t ldc, float* aside) {
  for (int64_t j = 0; j < n; j += NR) {
    const int64_t cols = std::min(NR, n - j);
    for (int64_t i = 0; i < m; i += MR) {
      const int64_t strip = std::min(MR, m - i);
      float* c_tile = c + i * ldc + j;
      const float* b = packed.data + j * packed.depth;
      if (!rows) {
        gemm_detail::tile_kernel(k, ColumnSliver{a + i, lda}, b, alpha, beta, c_tile, ldc, strip, cols);
      } else if (strip == MR) {
        gemm_detail::tile_kernel(k, RowSliver{a + i * lda, lda}, b, alpha, beta, c_tile, ldc, strip, cols);
      } else {
        for (int64_t r = 0; r < MR; ++r)
          if (r < strip) copy_row(a + (i + r) * lda, k, aside + r * k);
          else std::fill(aside + r * k, aside + (r + 1) * k, 0.0f);
        gemm_detail::tile_kernel(k, RowSliver{aside, k}, b, alpha, beta, c_tile, ldc, strip, cols);
      }
    }
  }
}

// A row is reduced in lanes (row_ops.h): each value in lane j % kLanes, the lanes combined in a
// tree. It is read `width` wide, cols rounded up to a multiple of kLanes, the columns past cols
// -inf: a row's values sit in the same lanes whatever the tile's width, and a group of -inf adds
// exactly 0, so a row's sums do not depend on how many keys the other rows of its tile see
// (Determinism).
static_assert(kKeyTile % kLanes == 0);

int64_t lane_width(int64_t cols) { return (cols + kLanes - 1) / kLanes * kLanes; }

// The scores of query tile t against keys [j0, j0 + cols), s (rows, kKeyTile), from the key tile
// packed by pack_transposed: S = Q Kᵀ · (1/√d), the bias added, and -inf where the mask hides a
// key, where a row's valid length ends, and in the columns from cols to lane_width(cols). The
// scale is the products' alpha (exact for d = 16 or 64; within an ulp of the composed path's
// division otherwise), then the bias and the mask in the composed path's order.
void tile_scores(const AttentionSizes& n, const Tile& t, int64_t j0, int64_t cols, HeadsView q,
                 const float* k_packed, const int64_t* lens, ScoresView mask, ScoresView bias, float* s,
                 float* aside) {
  tile_product(t.rows, cols, n.d, true, head_of(q, t.b, t.h) + t.i0 * q.row, q.row, {k_packed, n.d},
               1.0f / std::sqrt(static_cast<float>(n.d)), 0.0f, s, kKeyTile, aside);
  for (int64_t r = 0; r < t.rows; ++r) {
    float* row = s + r * kKeyTile;
    const int64_t i = t.i0 + r;
    if (bias.data) {
      const float* b = bias.data + t.b * bias.batch + t.h * bias.head + i * bias.row + j0 * bias.col;
      for (int64_t j = 0; j < cols; ++j) row[j] += b[j * bias.col];
    }
    if (mask.data) {
      const float* m = mask.data + t.b * mask.batch + t.h * mask.head + i * mask.row + j0 * mask.col;
      for (int64_t j = 0; j < cols; ++j)
        if (m[j * mask.col] == 0.0f) row[j] = kNegInf;
    }
    const int64_t seen = std::clamp<int64_t>(row_visible(n, lens, t.block, i) - j0, 0, cols);
    std::fill(row + seen, row + lane_width(cols), kNegInf);
  }
}

// The maximum of a row `width` wide.
float row_max(const float* x, int64_t width) {
  float lanes[kLanes];
  for (int64_t i = 0; i < kLanes; ++i) lanes[i] = kNegInf;
  for (int64_t k = 0; k < width; k += kLanes) {
#pragma omp simd
    for (int64_t i = 0; i < kLanes; ++i) lanes[i] = x[k + i] > lanes[i] ? x[k + i] : lanes[i];
  }
  return max_of_lanes(lanes);
}

// x ← e^(x − m) in place over a row `width` wide, -inf to exactly 0 (vexp alone never returns 0); returns the sum. With
// m = -inf (nothing visible so far) every visible x is NaN or +inf, and so is the result: NaN in,
// NaN out, as the composed masked softmax gives.
float exp_row(float* x, float m, int64_t width) {
  float lanes[kLanes] = {};
  for (int64_t k = 0; k < width; k += kLanes) {
#pragma omp simd
    for (int64_t i = 0; i < kLanes; ++i) {
      const float e = x[k + i] == kNegInf ? 0.0f : vexp(x[k + i] - m);
      x[k + i] = e;
      lanes[i] += e;
    }
  }
  return sum_of_lanes(lanes);
}

// p ← p ∘ keep for the tile's rows and first cols keys, the multipliers drawn for them.
void apply_dropout(const DropoutDraw& keep, const Tile& t, int64_t j0, int64_t cols, float* p, float* buffer) {
  for (int64_t r = 0; r < t.rows; ++r) {
    keep(t.block, t.i0 + r, j0, cols, buffer);
    float* row = p + r * kKeyTile;
    for (int64_t j = 0; j < cols; ++j) row[j] *= buffer[j];
  }
}

// A row's weights from its finished scores, in place: P = e^(S − L) over `count` keys, 0 where S
// is -inf or the row sees nothing (L = -inf), NaN throughout when L is NaN. The forward's weights
// and backward's recomputed ones both come from here, so they are the same bits.
void weights_row(float* row, int64_t count, float L) {
  for (int64_t j = 0; j < count; ++j)
    row[j] = L == kNegInf || row[j] == kNegInf ? (std::isnan(L) ? L : 0.0f) : vexp_nonpositive(row[j] - L);
}

// A forward task's buffers in its thread's scratch.
struct ForwardScratch {
  float *s, *o, *m, *l, *buffer;  // (kQueryTile, kKeyTile) scores, then e^(s − m'); (kQueryTile, d)
                                  // the unnormalized output; (kQueryTile) running max and sum;
                                  // (kKeyTile) a row's dropout multipliers
  float *k_packed, *v_packed, *aside;  // a key tile packed for Q Kᵀ, its values for P V; tile_product's
  int64_t floats;
};

// Carves `take(count)` buffers out of base in turn (base null: only counts).
struct Carver {
  float* base;
  int64_t at = 0;
  float* take(int64_t count) {
    float* p = base ? base + at : nullptr;
    at += count;
    return p;
  }
};

int64_t aside_floats(const AttentionSizes& n) { return MR * std::max(n.d, kKeyTile); }

ForwardScratch forward_scratch(float* base, const AttentionSizes& n) {
  Carver c{base};
  ForwardScratch s{};
  s.s = c.take(kQueryTile * kKeyTile), s.o = c.take(kQueryTile * n.d);
  s.m = c.take(kQueryTile), s.l = c.take(kQueryTile), s.buffer = c.take(kKeyTile);
  s.k_packed = c.take(packed_floats(kKeyTile, n.d)), s.v_packed = c.take(packed_floats(n.d, kKeyTile));
  s.aside = c.take(aside_floats(n));
  s.floats = c.at;
  return s;
}

// One query tile's forward: the online softmax of attention.h over the key tiles it sees; writes
// its rows of out and lse, and of weights when given.
void forward_tile(const AttentionSizes& n, const Tile& t, HeadsView q, HeadsView k, HeadsView v,
                  const int64_t* lens, ScoresView mask, ScoresView bias, const DropoutDraw& keep, float* out,
                  float* lse, float* weights, const ForwardScratch& sc) {
  float *s = sc.s, *o = sc.o, *m = sc.m, *l = sc.l;
  std::fill(o, o + t.rows * n.d, 0.0f);
  std::fill(m, m + t.rows, kNegInf);
  std::fill(l, l + t.rows, 0.0f);
  const int64_t visible = tile_visible(n, lens, t), D = n.H * n.d;
  const float *k_bh = head_of(k, t.b, t.h), *v_bh = head_of(v, t.b, t.h);
  float* w = weights ? weights + (t.block * n.Tq + t.i0) * n.Tk : nullptr;
  for (int64_t j0 = 0; j0 < visible; j0 += kKeyTile) {
    const int64_t cols = std::min(kKeyTile, visible - j0), width = lane_width(cols);
    pack_transposed(k_bh + j0 * k.row, k.row, cols, n.d, sc.k_packed);
    tile_scores(n, t, j0, cols, q, sc.k_packed, lens, mask, bias, s, sc.aside);
    for (int64_t r = 0; w && r < t.rows; ++r)  // the finished scores, made weights at the end
      std::copy(s + r * kKeyTile, s + r * kKeyTile + cols, w + r * n.Tk + j0);
    for (int64_t r = 0; r < t.rows; ++r) {
      const float m_new = std::max(m[r], row_max(s + r * kKeyTile, width));
      // α = e^(m − m'): 1 while nothing changes (also while both are -inf), 0 from an empty start.
      const float alpha = m_new == m[r] ? 1.0f : vexp_nonpositive(m[r] - m_new);
      l[r] = alpha * l[r] + exp_row(s + r * kKeyTile, m_new, width);
      m[r] = m_new;
      if (alpha != 1.0f)
        for (int64_t c = 0; c < n.d; ++c) o[r * n.d + c] *= alpha;
    }
    if (keep) apply_dropout(keep, t, j0, cols, s, sc.buffer);
    // o += P V_j: (rows, cols)·(cols, d)
    pack_rows(v_bh + j0 * v.row, v.row, cols, n.d, sc.v_packed);
    tile_product(t.rows, n.d, cols, true, s, kKeyTile, {sc.v_packed, cols}, 1.0f, 1.0f, o, n.d, sc.aside);
  }
  for (int64_t r = 0; r < t.rows; ++r) {
    const int64_t i = t.i0 + r;
    // l = 0: the row saw nothing, its output is 0 (masked_softmax's empty row); l NaN stays NaN.
    const float inv = l[r] == 0.0f ? 0.0f : 1.0f / l[r];
    float* out_row = out + (t.b * n.Tq + i) * D + t.h * n.d;
    for (int64_t c = 0; c < n.d; ++c) out_row[c] = o[r * n.d + c] * inv;
    lse[t.block * n.Tq + i] = l[r] == 0.0f ? kNegInf : m[r] + std::log(l[r]);
  }
  for (int64_t r = 0; w && r < t.rows; ++r) {  // 0 past the keys the tile visited (a NaN row: NaN)
    const float L = lse[t.block * n.Tq + t.i0 + r];
    weights_row(w + r * n.Tk, visible, L);
    std::fill(w + r * n.Tk + visible, w + (r + 1) * n.Tk, std::isnan(L) ? L : 0.0f);
  }
}

// A backward block's buffers in its thread's scratch.
struct BackwardScratch {
  float *p, *dp, *buffer;  // (kQueryTile, kKeyTile) P then P ∘ keep; dP then dS; a row's multipliers
  float *dk, *dv;          // (kKeyTile, d) one key tile's accumulated gradients
  float *dq, *D;           // (Tq, d) the block's dQ; (Tq) rowsum(dO ∘ O)
  float *k_t, *v_t, *k_rows;  // the key tile packed for Q Kᵀ and dO Vᵀ, and as it is for dS K
  float *q_rows, *dout_rows, *aside;  // the query tile's Q and dO packed for dSᵀ Q and Pᵀ dO
  int64_t floats;
};

BackwardScratch backward_scratch(float* base, const AttentionSizes& n) {
  Carver c{base};
  BackwardScratch s{};
  s.p = c.take(kQueryTile * kKeyTile), s.dp = c.take(kQueryTile * kKeyTile), s.buffer = c.take(kKeyTile);
  s.dk = c.take(kKeyTile * n.d), s.dv = c.take(kKeyTile * n.d);
  s.dq = c.take(n.Tq * n.d), s.D = c.take(n.Tq);
  s.k_t = c.take(packed_floats(kKeyTile, n.d)), s.v_t = c.take(packed_floats(kKeyTile, n.d));
  s.k_rows = c.take(packed_floats(n.d, kKeyTile));
  s.q_rows = c.take(packed_floats(n.d, kQueryTile)), s.dout_rows = c.take(packed_floats(n.d, kQueryTile));
  s.aside = c.take(aside_floats(n));
  s.floats = c.at;
  return s;
}

// Copies a tile's rows [0, rows) of d floats from src (rows d apart) into dst (rows `row` apart).
void store_rows(const float* src, int64_t rows, int64_t d, float* dst, int64_t row) {
  for (int64_t r = 0; r < rows; ++r) copy_row(src + r * d, d, dst + r * row);
}

// One block's backward (attention.h): for each key tile, the query tiles that see it.
void backward_block(const AttentionSizes& n, int64_t block, HeadsView q, HeadsView k, HeadsView v,
                    const int64_t* lens, ScoresView mask, ScoresView bias, const DropoutDraw& keep,
                    const float* out, const float* lse, const float* weights, const float* dout,
                    const AttentionGrads& grads, const BackwardScratch& s) {
  const int64_t b = block / n.H, h = block % n.H, D = n.H * n.d, G = grads.row ? grads.row : D;
  const float inv_root_d = 1.0f / std::sqrt(static_cast<float>(n.d));
  const float* dout_bh = dout + b * n.Tq * D + h * n.d;
  const float* L = lse + block * n.Tq;
  int64_t visible = 0;  // the keys any row sees
  for (int64_t i = 0; i < n.Tq; ++i) {
    // A vector dot product (row_ops.h): summed in order, the row's d products were a chain of
    // scalar additions, as long as the rest of the row's backward at d = 16.
    s.D[i] = dot(dout_bh + i * D, out + (b * n.Tq + i) * D + h * n.d, n.d);
    visible = std::max(visible, row_visible(n, lens, block, i));
  }
  std::fill(s.dq, s.dq + n.Tq * n.d, 0.0f);
  if (grads.dscores) std::fill(grads.dscores + block * n.Tq * n.Tk, grads.dscores + (block + 1) * n.Tq * n.Tk, 0.0f);
  const float *q_bh = head_of(q, b, h), *k_bh = head_of(k, b, h), *v_bh = head_of(v, b, h);
  for (int64_t j0 = 0; j0 < n.Tk; j0 += kKeyTile) {
    const int64_t cols = std::min(kKeyTile, n.Tk - j0);
    std::fill(s.dk, s.dk + cols * n.d, 0.0f);
    std::fill(s.dv, s.dv + cols * n.d, 0.0f);
    if (j0 < visible) {  // the key tile's operands, once for all the query tiles
      if (!weights) pack_transposed(k_bh + j0 * k.row, k.row, cols, n.d, s.k_t);
      pack_transposed(v_bh + j0 * v.row, v.row, cols, n.d, s.v_t);
      if (grads.dq) pack_rows(k_bh + j0 * k.row, k.row, cols, n.d, s.k_rows);
    }
    for (int64_t i0 = 0; j0 < visible && i0 < n.Tq; i0 += kQueryTile) {
      const Tile t{block, b, h, i0, std::min(kQueryTile, n.Tq - i0)};
      const int64_t seen = std::min(cols, tile_visible(n, lens, t) - j0);  // keys of the tile this one sees
      if (seen <= 0) continue;
      if (weights) {  // the forward's P, made by the same formula from the same scores: the same bits
        for (int64_t r = 0; r < t.rows; ++r) {
          const float* w = weights + (block * n.Tq + i0 + r) * n.Tk + j0;
          std::copy(w, w + seen, s.p + r * kKeyTile);
        }
      } else {
        tile_scores(n, t, j0, seen, q, s.k_t, lens, mask, bias, s.p, s.aside);
        for (int64_t r = 0; r < t.rows; ++r) weights_row(s.p + r * kKeyTile, seen, L[i0 + r]);
      }
      const float* dout_i = dout_bh + i0 * D;
      // dP' = dO Vᵀ: (rows, d)·(d, seen)
      tile_product(t.rows, seen, n.d, true, dout_i, D, {s.v_t, n.d}, 1.0f, 0.0f, s.dp, kKeyTile, s.aside);
      // dS = P ∘ (dP' ∘ keep − D); then P ← P ∘ keep for dV. (The multipliers are drawn once per row.)
      for (int64_t r = 0; r < t.rows; ++r) {
        float *p = s.p + r * kKeyTile, *dp = s.dp + r * kKeyTile;
        const float Di = s.D[i0 + r];
        if (keep) {
          keep(block, i0 + r, j0, seen, s.buffer);
          for (int64_t j = 0; j < seen; ++j) dp[j] = p[j] * (dp[j] * s.buffer[j] - Di), p[j] *= s.buffer[j];
        } else {
          for (int64_t j = 0; j < seen; ++j) dp[j] = p[j] * (dp[j] - Di);
        }
        if (grads.dscores) std::copy(dp, dp + seen, grads.dscores + (block * n.Tq + i0 + r) * n.Tk + j0);
      }
      // dV_j += (P ∘ keep)ᵀ dO: (seen, rows)·(rows, d), Pᵀ read down the columns of P
      if (grads.dv) {
        pack_rows(dout_i, D, t.rows, n.d, s.dout_rows);
        tile_product(seen, n.d, t.rows, false, s.p, kKeyTile, {s.dout_rows, t.rows}, 1.0f, 1.0f, s.dv, n.d,
                     s.aside);
      }
      // dQ_i += dS K_j / √d: (rows, seen)·(seen, d);   dK_j += dSᵀ Q_i / √d: (seen, rows)·(rows, d)
      if (grads.dq)
        tile_product(t.rows, n.d, seen, true, s.dp, kKeyTile, {s.k_rows, cols}, inv_root_d, 1.0f, s.dq + i0 * n.d,
                     n.d, s.aside);
      if (grads.dk) {
        pack_rows(q_bh + i0 * q.row, q.row, t.rows, n.d, s.q_rows);
        tile_product(seen, n.d, t.rows, false, s.dp, kKeyTile, {s.q_rows, t.rows}, inv_root_d, 1.0f, s.dk, n.d,
                     s.aside);
      }
    }
    // No product reads K_j or V_j again: their gradients may be written (over them, too).
    if (grads.dk) store_rows(s.dk, cols, n.d, grads.dk + b * n.Tk * G + h * n.d + j0 * G, G);
    if (grads.dv) store_rows(s.dv, cols, n.d, grads.dv + b * n.Tk * G + h * n.d + j0 * G, G);
  }
  if (grads.dq) store_rows(s.dq, n.Tq, n.d, grads.dq + b * n.Tq * G + h * n.d, G);
}

}  // namespace

void attention_forward(const AttentionSizes& n, HeadsView q, HeadsView k, HeadsView v, const int64_t* lens,
                       ScoresView mask, ScoresView bias, const DropoutDraw& keep, float* out, float* lse,
                       float* weights) {
  const int64_t query_tiles = tiles(n.Tq, kQueryTile), tasks = n.B * n.H * query_tiles;
  const int64_t per_thread = forward_scratch(nullptr, n).floats;
  const int64_t work = attention_product_madds(n, lens) * 2 + n.B * n.H * n.Tq * n.Tk * 8;
  for_each_task(tasks, work, per_thread, [&](int64_t task, float* scratch) {
    const int64_t block = task / query_tiles, i0 = task % query_tiles * kQueryTile;
    const Tile t{block, block / n.H, block % n.H, i0, std::min(kQueryTile, n.Tq - i0)};
    forward_tile(n, t, q, k, v, lens, mask, bias, keep, out, lse, weights, forward_scratch(scratch, n));
  });
}

void attention_backward(const AttentionSizes& n, HeadsView q, HeadsView k, HeadsView v, const int64_t* lens,
                        ScoresView mask, ScoresView bias, const DropoutDraw& keep, const float* out,
                        const float* lse, const float* weights, const float* dout, const AttentionGrads& grads) {
  const int64_t blocks = n.B * n.H;
  const int64_t work = attention_product_madds(n, lens) * (weights ? 4 : 5) + blocks * n.Tq * n.Tk * 10;
  for_each_task(blocks, work, backward_scratch(nullptr, n).floats, [&](int64_t block, float* scratch) {
    backward_block(n, block, q, k, v, lens, mask, bias, keep, out, lse, weights, dout, grads,
                   backward_scratch(scratch, n));
  });
}

int64_t attention_product_madds(const AttentionSizes& n, const int64_t* lens) {
  int64_t keys = 0;  // the (query, key) pairs of the visited key tiles, as wide as the keys seen
  for (int64_t block = 0; block < n.B * n.H; ++block)
    for (int64_t i0 = 0; i0 < n.Tq; i0 += kQueryTile) {
      const Tile t{block, block / n.H, block % n.H, i0, std::min(kQueryTile, n.Tq - i0)};
      keys += t.rows * tile_visible(n, lens, t);
    }
  return keys * n.d;
}

}  // namespace qkv::kernels
