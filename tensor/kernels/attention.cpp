// The fused attention kernels: attention.h has the equations and how the work is split.
#include "tensor/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tensor/kernels/gemm.h"
#include "tensor/kernels/parallel.h"
#include "tensor/kernels/softmax.h"
#include "tensor/storage.h"

namespace qkv::kernels {
namespace {

// Calls block(i, scratch) for every block i in [0, blocks), the blocks handed out to the threads of
// parallel.h's pool (a free thread takes the next block not started). Each thread gets its own
// `per_thread` floats of scratch, allocated once per call, uninitialized (every buffer in it is
// written before it is read), from the tensors' caching allocator (Scratch, tensor/storage.h): at long
// sequences a call needs several (Tq, Tk) buffers per thread, tens of MiB, and a fresh zeroed vector
// of that size cost a page fault per 4 KiB page and a memset at every call, which grew faster than
// the n² work itself (docs/efficient_attention.md).
// Inside a block, gemm and the softmax kernels see that they run in a task and stay on the
// calling thread.
template <class F>
void for_each_block(int64_t blocks, int64_t work, int64_t per_thread, F&& block) {
  const bool parallel = blocks > 1 && get_num_threads() > 1 && work >= kMinParallelWork && !in_parallel_task();
  const int threads = parallel ? get_num_threads() : 1;
  Scratch scratch(threads * per_thread);
  parallel_tasks(blocks, threads, work, [&](int64_t i, int worker) { block(i, scratch.data() + worker * per_thread); });
}

// The first element of head h of batch b.
const float* head_of(const HeadsView& x, int64_t b, int64_t h) { return x.data + b * x.batch + h * x.head; }

// The scores of block (b, h), s (Tq, Tk) holding Q_bh K_bhᵀ on entry: divided by √d, the bias
// added, and -inf where the mask hides a key. This is the composed path's scores / √d, + bias and
// where(mask, scores, -inf) in that order, so the values agree with it to the bit; masked_softmax
// then treats -inf like a key past the valid length.
// Only the first `visible` columns are touched: the softmax reads no further.
void finish_scores(const AttentionSizes& n, int64_t b, int64_t h, int64_t visible, ScoresView mask,
                   ScoresView bias, float* s) {
  const float root_d = std::sqrt(static_cast<float>(n.d));
  const float* bias_bh = bias.data ? bias.data + b * bias.batch + h * bias.head : nullptr;
  const float* mask_bh = mask.data ? mask.data + b * mask.batch + h * mask.head : nullptr;
  // One simple loop per step, so that each vectorizes.
  for (int64_t i = 0; i < n.Tq; ++i) {
    float* row = s + i * n.Tk;
    for (int64_t j = 0; j < visible; ++j) row[j] /= root_d;
  }
  for (int64_t i = 0; bias_bh && i < n.Tq; ++i) {
    const float* bias_row = bias_bh + i * bias.row;
    float* row = s + i * n.Tk;
    for (int64_t j = 0; j < visible; ++j) row[j] += bias_row[j * bias.col];
  }
  for (int64_t i = 0; mask_bh && i < n.Tq; ++i) {
    const float* mask_row = mask_bh + i * mask.row;
    float* row = s + i * n.Tk;
    for (int64_t j = 0; j < visible; ++j)
      if (mask_row[j * mask.col] == 0.0f) row[j] = -std::numeric_limits<float>::infinity();
  }
}

// The keys block `block` can see: past the longest valid length of its rows every weight is 0, so
// those keys take no part in any product. Padding makes this a large share of a batch of sentences
// of mixed lengths (the tagger's bench: lengths T/2 .. T, a quarter of the keys on average).
int64_t visible_keys(const AttentionSizes& n, const int64_t* lens, int64_t block) {
  if (!lens || n.Tq == 0) return n.Tk;
  const int64_t* row = lens + block * n.Tq;
  return std::clamp<int64_t>(*std::max_element(row, row + n.Tq), 0, n.Tk);
}

// The weights P of block b·H + h, (Tq, Tk) into p: S = Q_bh K_bhᵀ over the tv visible keys into
// the scratch s (Kᵀ is read through the GEMM's packing, not copied), finished as finish_scores
// says, and its masked softmax. The forward and a backward that did not keep P both call this, so
// the weights backward recomputes are the forward's to the bit.
void block_weights(const AttentionSizes& n, int64_t block, int64_t tv, HeadsView q, HeadsView k,
                   const int64_t* lens, ScoresView mask, ScoresView bias, float* s, float* p) {
  const int64_t b = block / n.H, h = block % n.H;
  gemm(false, true, n.Tq, tv, n.d, 1.0f, head_of(q, b, h), q.row, head_of(k, b, h), k.row, 0.0f, s, n.Tk);
  finish_scores(n, b, h, tv, mask, bias, s);
  masked_softmax_forward(n.Tq, n.Tk, s, lens ? lens + block * n.Tq : nullptr, p);
}

// Zeros rows [from, to) of a head's d columns in a gradient whose rows are `row` floats apart,
// starting at `head`.
void zero_rows(float* head, int64_t from, int64_t to, int64_t d, int64_t row) {
  for (int64_t t = from; t < to; ++t) std::fill(head + t * row, head + t * row + d, 0.0f);
}

// Cuts one thread's scratch into consecutive buffers: take(n) is the next n floats, or null when
// n is 0. On a null base it hands out nulls and only counts: used() is then the scratch's size.
class Cutter {
 public:
  explicit Cutter(float* base) : base_(base) {}
  float* take(int64_t n) {
    float* p = base_ && n > 0 ? base_ + used_ : nullptr;
    used_ += n;
    return p;
  }
  int64_t used() const { return used_; }

 private:
  float* base_;
  int64_t used_ = 0;
};

// A forward block's buffers in its thread's scratch at `base`, (Tq, Tk) floats each, or null when
// the call needs none; `floats` is their total (forward_scratch(nullptr, ...) only counts).
struct ForwardScratch {
  float* scores;   // S, then the dropped-out weights P' = P ∘ keep
  float* keep;     // the block's dropout multipliers; without dropout, none
  float* weights;  // P, when the caller keeps no weights to write it to
  int64_t floats;
};

ForwardScratch forward_scratch(float* base, const AttentionSizes& n, bool dropout, bool caller_weights) {
  const int64_t TT = n.Tq * n.Tk;
  Cutter cut(base);
  ForwardScratch s{};
  s.scores = cut.take(TT);
  s.keep = cut.take(dropout ? TT : 0);
  s.weights = cut.take(caller_weights ? 0 : TT);
  s.floats = cut.used();
  return s;
}

// A backward block's buffers, (Tq, Tk) floats each unless said, or null when the call needs none.
struct BackwardScratch {
  float* dp;       // dP' = dO·Vᵀ, then dP = dP' ∘ keep
  float* dropped;  // P' = P ∘ keep; first S, while P is recomputed
  float* ds;       // dS, unless it goes to the caller's gradient of the scores
  float* keep;     // the block's dropout multipliers
  float* weights;  // P, recomputed, when the forward kept none
  float* dq;       // (Tq, d): dQ while Q is still read (gradients written over the inputs)
  int64_t floats;
};

BackwardScratch backward_scratch(float* base, const AttentionSizes& n, bool dropout, bool weights_given,
                                 const AttentionGrads& grads) {
  const int64_t TT = n.Tq * n.Tk;
  Cutter cut(base);
  BackwardScratch s{};
  s.dp = cut.take(TT);
  s.dropped = cut.take(TT);
  s.ds = cut.take(TT);  // taken even when dscores is given, so that the others keep their places
  s.keep = cut.take(dropout ? TT : 0);
  s.weights = cut.take(weights_given ? 0 : TT);
  s.dq = cut.take(grads.over_inputs ? n.Tq * n.d : 0);
  s.floats = cut.used();
  return s;
}

}  // namespace

void attention_forward(const AttentionSizes& n, HeadsView q, HeadsView k, HeadsView v, const int64_t* lens,
                       ScoresView mask, ScoresView bias, const DropoutDraw& keep, float* weights,
                       float* out) {
  const int64_t D = n.H * n.d, TT = n.Tq * n.Tk, blocks = n.B * n.H;
  const auto scratch = [&](float* base) { return forward_scratch(base, n, bool(keep), weights != nullptr); };
  for_each_block(blocks, blocks * TT * (2 * n.d + 8), scratch(nullptr).floats, [&](int64_t block, float* base) {
    const ForwardScratch s = scratch(base);
    const int64_t b = block / n.H, h = block % n.H;
    float* p = weights ? weights + block * TT : s.weights;
    const int64_t tv = visible_keys(n, lens, block);
    block_weights(n, block, tv, q, k, lens, mask, bias, s.scores, p);
    const float* dropped = p;
    if (keep) {  // P' = P ∘ keep, the product the composed dropout forms
      keep(block, s.keep);
      for (int64_t i = 0; i < TT; ++i) s.scores[i] = p[i] * s.keep[i];
      dropped = s.scores;
    }
    // O_bh = P' V_bh: (Tq, tv)·(tv, d), written into head h's columns of the merged (B, Tq, H·d).
    gemm(false, false, n.Tq, n.d, tv, 1.0f, dropped, n.Tk, head_of(v, b, h), v.row, 0.0f,
         out + b * n.Tq * D + h * n.d, D);
  });
}

void attention_backward(const AttentionSizes& n, HeadsView q, HeadsView k, HeadsView v, const int64_t* lens,
                        ScoresView mask, ScoresView bias, const float* weights, const DropoutDraw& keep,
                        const float* dout, const AttentionGrads& grads) {
  const int64_t D = n.H * n.d, TT = n.Tq * n.Tk, blocks = n.B * n.H;
  const int64_t G = grads.row ? grads.row : D;  // from one row of dq, dk, dv to the next
  const float inv_root_d = 1.0f / std::sqrt(static_cast<float>(n.d));
  const auto scratch = [&](float* base) {
    return backward_scratch(base, n, bool(keep), weights != nullptr, grads);
  };
  for_each_block(
      blocks, blocks * TT * ((weights ? 4 : 5) * n.d + 8), scratch(nullptr).floats, [&](int64_t block, float* base) {
        const BackwardScratch s = scratch(base);
        const int64_t b = block / n.H, h = block % n.H;
        float *dp = s.dp, *dropped = s.dropped;
        float* ds = grads.dscores ? grads.dscores + block * TT : s.ds;
        const float* dout_bh = dout + b * n.Tq * D + h * n.d;
        // Keys past tv have weight 0 (visible_keys): their rows of dK and dV are 0, and so is dP there.
        const int64_t tv = visible_keys(n, lens, block);
        const float* p = weights ? weights + block * TT : s.weights;
        // P again, as the forward made it, before anything is written over Q, K or V.
        if (!weights) block_weights(n, block, tv, q, k, lens, mask, bias, dropped, s.weights);
        // in the forward pass this was: O = P' V, so dP' = dO Vᵀ: (Tq, d)·(d, tv)
        gemm(false, true, n.Tq, tv, n.d, 1.0f, dout_bh, D, head_of(v, b, h), v.row, 0.0f, dp, n.Tk);
        for (int64_t i = 0; i < n.Tq; ++i) std::fill(dp + i * n.Tk + tv, dp + (i + 1) * n.Tk, 0.0f);
        const float* p_dropped = p;
        if (keep) {  // P' = P ∘ keep, so dP = dP' ∘ keep
          keep(block, s.keep);
          for (int64_t i = 0; i < TT; ++i) dropped[i] = p[i] * s.keep[i], dp[i] *= s.keep[i];
          p_dropped = dropped;
        }
        // dV = P'ᵀ dO: (tv, Tq)·(Tq, d)
        if (grads.dv) {
          float* dv_bh = grads.dv + b * n.Tk * G + h * n.d;
          gemm(true, false, tv, n.d, n.Tq, 1.0f, p_dropped, n.Tk, dout_bh, D, 0.0f, dv_bh, G);
          zero_rows(dv_bh, tv, n.Tk, n.d, G);
        }
        // P = softmax(S): dS = P ∘ (dP − rowsum(dP ∘ P)), zero at every hidden key
        softmax_backward(n.Tq, n.Tk, 1, p, dp, ds, false);
        // S = Q Kᵀ / √d: dQ = dS K / √d, (Tq, tv)·(tv, d); dK = dSᵀ Q / √d, (tv, Tq)·(Tq, d)
        float* dq_bh = grads.dq ? grads.dq + b * n.Tq * G + h * n.d : nullptr;
        float* dq_out = grads.over_inputs ? s.dq : dq_bh;  // Q is read by dK below
        const int64_t dq_row = grads.over_inputs ? n.d : G;
        if (dq_bh)
          gemm(false, false, n.Tq, n.d, tv, inv_root_d, ds, n.Tk, head_of(k, b, h), k.row, 0.0f, dq_out,
               dq_row);
        if (grads.dk) {
          float* dk_bh = grads.dk + b * n.Tk * G + h * n.d;
          gemm(true, false, tv, n.d, n.Tq, inv_root_d, ds, n.Tk, head_of(q, b, h), q.row, 0.0f, dk_bh, G);
          zero_rows(dk_bh, tv, n.Tk, n.d, G);
        }
        for (int64_t t = 0; dq_bh && dq_out != dq_bh && t < n.Tq; ++t)
          std::copy(dq_out + t * n.d, dq_out + (t + 1) * n.d, dq_bh + t * G);
      });
}

int64_t attention_product_madds(const AttentionSizes& n, const int64_t* lens) {
  int64_t keys = 0;
  for (int64_t block = 0; block < n.B * n.H; ++block) keys += visible_keys(n, lens, block);
  return keys * n.Tq * n.d;
}

}  // namespace qkv::kernels
