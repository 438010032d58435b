// Multi-head scaled dot-product attention in one kernel forward and one backward (Vaswani et al.
// 2017, eq. 1 and section 3.2.2). Nothing here knows about Tensor or autograd.
//
// For every batch b and head h (one "block"), with d the head width:
//   S = Q_bh K_bhᵀ / √d + bias_bh            (Tq, Tk) scores
//   P = masked softmax(S)                     keys j >= lens[row] and keys whose mask is 0 hidden;
//                                             a row with nothing visible is all zeros
//   P' = P ∘ keep                             keep: the dropout multipliers (0 or 1/(1-p)), or none
//   O_bh = P' V_bh                            (Tq, d), written into columns [h·d, (h+1)·d) of O
//
// Keys past the longest of a block's valid lengths have weight 0 in every row: the products leave
// them out (S and dP are computed for the visible keys only, their rows of dK and dV are zeros).
//
// What is fused, and why. Composed of tensor ops, the same computation copies each head out of the
// (B, T, H·d) projections into (B, H, T, d), runs batched products, a masked softmax pass, a
// dropout pass, and copies the heads back together; backward runs each of those again in reverse.
// At the tagger's sizes (T up to 128, d = 16 or 32) the products are small, and the copies and
// passes around them are a large share of the work (permute's backward alone weighed as much as
// some of the products). Here each block reads its head of Q, K and V in place through strides (a head of a (B, T,
// H·d) projection is rows of stride H·d starting at column h·d), keeps S and P' in a small
// per-thread scratch, and writes its output straight into the merged (B, Tq, H·d) layout. This is
// the idea of FlashAttention (Dao et al. 2022, "FlashAttention: Fast and Memory-Efficient Exact
// Attention with IO-Awareness"): no per-head copies, softmax fused with the two products. The
// weights P are written out when the caller asks for them (to plot, or to save backward the work
// of making them again), and backward takes them if it gets them. Otherwise backward recomputes
// each block's P from Q and K, as FlashAttention does: a third product per block, Q·Kᵀ, and the
// softmax again (the same code, so the same bits), for a (B, H, Tq, Tk) tensor less between
// forward and backward. Unlike FlashAttention the whole (Tq, Tk) block is made at once, not in
// tiles with a running maximum: at the tagger's sizes it fits the per-thread scratch.
//
// Backward, for the same block, given dO (the gradient of O):
//   dP' = dO_bh V_bhᵀ                         from O = P' V
//   dV_bh = P'ᵀ dO_bh
//   dP = dP' ∘ keep                           from P' = P ∘ keep
//   dS = P ∘ (dP − rowsum(dP ∘ P))            the softmax backward; 0 wherever P is 0
//   dQ_bh = dS K_bh / √d,   dK_bh = dSᵀ Q_bh / √d
//   dScores = dS                              the gradient of the bias, before any broadcast sum
//
// Determinism: the B·H blocks are handed out dynamically to the threads of one parallel region (a
// thread that the machine stalls does not hold up blocks the others can take), but each block is
// computed by one thread alone, with the single-threaded GEMM, in a fixed order, and writes only its
// own outputs: the columns of its head in O, dQ, dK, dV, and its (b, h) slice of the scores'
// gradient. So the results are bitwise identical for any number of threads.
//
// The reference these kernels are tested against is the composed computation itself,
// qkv::composed_attention on the heads (autograd/ops/attention.h; the reference mode runs it),
// which readers should start from.
#pragma once

#include <cstdint>
#include <functional>

namespace qkv::kernels {

struct AttentionSizes {
  int64_t B, H, Tq, Tk, d;
};

// Q, K or V read per head: element (b, h, t, c) is at data[b·batch + h·head + t·row + c].
// A (B, T, H·d) tensor has batch = T·H·d, head = d, row = H·d; a (B, H, T, d) one has
// batch = H·T·d, head = T·d, row = d.
struct HeadsView {
  const float* data;
  int64_t batch, head, row;
};

// A mask or bias broadcast to the (B, H, Tq, Tk) scores: element (b, h, i, j) is at
// data[b·batch + h·head + i·row + j·col] (a stride of 0 repeats along that dim). data == nullptr
// when there is none.
struct ScoresView {
  const float* data = nullptr;
  int64_t batch = 0, head = 0, row = 0, col = 0;
};

// The dropout multipliers of the (B, H, Tq, Tk) weights (0 or 1/(1-p)), drawn block by block when
// the kernels need them instead of stored from forward to backward (a float per weight, as much
// memory as the weights themselves): draw(block, out) writes the Tq·Tk multipliers of block
// b·H + h to out, the same ones every time. Empty without dropout.
using DropoutDraw = std::function<void(int64_t block, float* out)>;

// The forward.
//   q (B, H, Tq, d), k and v (B, H, Tk, d) as HeadsView
//   lens: (B, H, Tq) keys visible to each row, or nullptr for all
//   mask: nonzero where the query may see the key; bias: added to the scores (either may be absent)
//   keep: the dropout multipliers, or empty without dropout
//   → weights P (B, H, Tq, Tk) contiguous, before dropout, unless weights is null; out (B, Tq, H·d)
//     contiguous
void attention_forward(const AttentionSizes& n, HeadsView q, HeadsView k, HeadsView v, const int64_t* lens,
                       ScoresView mask, ScoresView bias, const DropoutDraw& keep, float* weights, float* out);

// Where backward writes: dq (B, Tq, H·d), dk and dv (B, Tk, H·d), rows `row` floats apart (H·d
// when 0, contiguous; 3·H·d for the column blocks of one (B, T, 3·H·d) gradient), and dscores
// (B, H, Tq, Tk) contiguous; a null pointer skips that gradient.
// over_inputs: dq, dk and dv are where q, k and v are read (a projection nothing reads after
// backward takes its own gradient): each block then reads its heads before writing over them.
struct AttentionGrads {
  float* dq = nullptr;
  float* dk = nullptr;
  float* dv = nullptr;
  float* dscores = nullptr;
  int64_t row = 0;
  bool over_inputs = false;
};

// The backward, given the forward's inputs (lens, mask, bias and keep as given to the forward), its
// weights P or null to recompute them from q and k, and dout (B, Tq, H·d) contiguous.
void attention_backward(const AttentionSizes& n, HeadsView q, HeadsView k, HeadsView v, const int64_t* lens,
                        ScoresView mask, ScoresView bias, const float* weights, const DropoutDraw& keep,
                        const float* dout, const AttentionGrads& grads);

// The multiply-adds of one of the block products (Q·Kᵀ, P'·V, or one of the four in backward)
// over all B·H blocks, as the kernels compute them: keys past a block's longest valid length are
// left out (their weights are 0). For counting FLOPs.
int64_t attention_product_madds(const AttentionSizes& n, const int64_t* lens);

}  // namespace qkv::kernels
