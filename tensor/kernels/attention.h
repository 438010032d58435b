// Multi-head scaled dot-product attention in one kernel forward and one backward, tiled as
// FlashAttention computes it (Dao et al. 2022, "FlashAttention: Fast and Memory-Efficient Exact
// Attention with IO-Awareness"; Dao 2023, "FlashAttention-2"). Nothing here knows about Tensor or
// autograd.
//
// What is computed. For every batch b and head h (one "block"), with d the head width:
//   S = Q_bh K_bhᵀ / √d + bias_bh            (Tq, Tk) scores
//   P = masked softmax(S)                     keys j >= lens[row] and keys whose mask is 0 hidden;
//                                             a row with nothing visible is all zeros
//   O_bh = (P ∘ keep) V_bh                    keep: the dropout multipliers (0 or 1/(1-p)), or none;
//                                             written into columns [h·d, (h+1)·d) of O
// The reference, which readers should start from, is this computation composed of tensor ops:
// qkv::composed_attention on the heads (autograd/ops/attention.h; the reference mode runs it).
//
// Tiles and the online softmax. The (Tq, Tk) scores are never formed whole: at Tq = Tk = 4096
// they would be 64 MiB a head, out of every cache. The queries are cut into tiles of kQueryTile
// rows, the keys into tiles of kKeyTile, and a query tile walks the key tiles left to right,
// keeping per row only a running maximum m, a running sum l and an unnormalized output o (d
// floats). For a new key tile with scores s_j:
//   m' = max(m, max_j s_j),   α = e^(m − m')
//   l' = α·l + Σ_j e^(s_j − m')
//   o' = α·o + Σ_j e^(s_j − m')·keep_j·v_j
// Each step keeps o = Σ e^(s_j − m)·keep_j·v_j and l = Σ e^(s_j − m) over the keys seen, so after the
// last tile O = o / l is the softmax-weighted sum, and L = m + log l (the log-sum-exp of the row)
// is all the forward keeps for backward: one float per row, where the whole-block kernel kept or
// recomputed a (Tq, Tk) block. Memory is O(T·d) per thread, whatever T.
//
// Backward, for one block, with dO given and D = rowsum(dO ∘ O) per row: each key tile walks the
// query tiles that see it and makes P again from Q, K and L, P = e^(S − L) (or reads it, when the
// caller kept the weights the forward wrote out), then
//   dV_j += (P ∘ keep)ᵀ dO_i            from O = (P ∘ keep) V
//   dP    = (dO_i V_jᵀ) ∘ keep
//   dS    = P ∘ (dP − D)               the softmax backward: rowsum(dP ∘ P) = rowsum(dO ∘ O)
//   dQ_i += dS K_j / √d,   dK_j += dSᵀ Q_i / √d
//   dScores = dS                        the gradient of the bias, before any broadcast sum
// (D replaces the row sums of dP ∘ P, which would need the whole row: Σ_j dP_j P_j =
// Σ_j (dO·v_j) keep_j P_j = dO · O.)
//
// What is skipped. A query tile stops at the last key any of its rows sees (its longest valid
// length): under a causal restriction (lens[i] = i + 1) every tile above the diagonal is never
// computed, half the products; padding past a sequence's length likewise. Hidden keys inside a
// visited tile are -inf in S and weigh exactly 0. A window (each query sees the keys within ±w)
// does not come here: its layer computes it on the band (nn/functional/banded_attention.h), with
// its position scheme's bias per offset and its dropout drawn over the band.
//
// Determinism. The forward hands out (block, query tile) tasks, the backward whole blocks (all of
// dK and dV of a head come from one thread, so no two threads add into one row); each task runs
// its tile products on its own thread in a fixed order and writes only its own outputs. The
// results are bitwise identical for any number of threads. The tile sizes are constants and every
// element of a tile product is one chain of fused multiply-adds in k order, so a row's result does
// not depend on how many queries come with it: a decoder's cached step (one query against the
// keys so far) gives the bits of the full causal forward's row. (With finite values: an inf in V
// hidden from a row but inside a visited tile makes that row NaN through 0·inf.)
//
// Products. The tile products call the GEMM's micro-kernel directly (gemm_microkernel.h), in
// float32 whatever the matmul precision: a tile is too small for the GEMM's dispatch and packing
// to pay (attention.cpp, "The tile products"), and the scale 1/√d is the scores product's alpha.
//
// Heads are read in place through strides (a head of a (B, T, H·d) projection is rows of stride
// H·d starting at column h·d), and O is written straight into the merged (B, Tq, H·d) layout: no
// per-head copies.
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

// The dropout multipliers of the (B, H, Tq, Tk) weights (0 or 1/(1-p)), drawn tile by tile when
// the kernels need them instead of stored from forward to backward (a float per weight, as much
// memory as the weights themselves): draw(block, row, key, count, out) writes the multipliers of
// weights (block, row, key .. key + count) of block b·H + h to out, the same ones every time.
// Empty without dropout.
using DropoutDraw = std::function<void(int64_t block, int64_t row, int64_t key, int64_t count, float* out)>;

// The tile sizes: a query tile of kQueryTile rows against a key tile of kKeyTile keys. What a
// backward task works on at once (the key tile packed three ways, the query tile's Q and dO packed,
// dK and dV of the key tile, P and dS) is about 7·64·d + 2·64·64 floats, 256 KiB at d = 128, beside
// the block's dQ (Tq·d), and the forward's less: well inside the 1 MiB L2 of a core of the machines qkv is measured on, and small enough that
// the diagonal tile of a causal block wastes little. Constants, not derived from the sequence
// (see Determinism above).
constexpr int64_t kQueryTile = 64, kKeyTile = 64;

// The forward.
//   q (B, H, Tq, d), k and v (B, H, Tk, d) as HeadsView
//   lens: (B, H, Tq) keys visible to each row, or nullptr for all
//   mask: nonzero where the query may see the key; bias: added to the scores (either may be absent)
//   keep: the dropout multipliers, or empty without dropout
//   → out (B, Tq, H·d) contiguous; lse (B, H, Tq), each row's log-sum-exp L of its visible scores
//     (-inf for a row that sees nothing); weights P (B, H, Tq, Tk) contiguous, before dropout,
//     unless weights is null (they are made from S and L after the row's last tile: to plot)
void attention_forward(const AttentionSizes& n, HeadsView q, HeadsView k, HeadsView v, const int64_t* lens,
                       ScoresView mask, ScoresView bias, const DropoutDraw& keep, float* out, float* lse,
                       float* weights);

// Where backward writes: dq (B, Tq, H·d), dk and dv (B, Tk, H·d), rows `row` floats apart (H·d
// when 0, contiguous; 3·H·d for the column blocks of one (B, T, 3·H·d) gradient), and dscores
// (B, H, Tq, Tk) contiguous; a null pointer skips that gradient.
// over_inputs: dq, dk and dv are where q, k and v are read (a projection nothing reads after
// backward takes its own gradient): a key tile's dK and dV are written once no product reads its K
// and V again, and dQ once the block's last tile is done.
struct AttentionGrads {
  float* dq = nullptr;
  float* dk = nullptr;
  float* dv = nullptr;
  float* dscores = nullptr;
  int64_t row = 0;
  bool over_inputs = false;
};

// The backward, given the forward's inputs (lens, mask, bias and keep as given to the forward), its
// output out (B, Tq, H·d) and log-sum-exps lse (B, H, Tq), its weights P when it wrote them (then
// read instead of made again: the same bits, a product per tile less), or null, and dout
// (B, Tq, H·d) contiguous.
void attention_backward(const AttentionSizes& n, HeadsView q, HeadsView k, HeadsView v, const int64_t* lens,
                        ScoresView mask, ScoresView bias, const DropoutDraw& keep, const float* out,
                        const float* lse, const float* weights, const float* dout, const AttentionGrads& grads);

// The multiply-adds of one of the tile products (Q·Kᵀ, P'·V, or one of the four in backward) over
// all B·H blocks, as the kernels compute them: the key tiles up to each query tile's longest
// valid length. For counting FLOPs.
int64_t attention_product_madds(const AttentionSizes& n, const int64_t* lens);

}  // namespace qkv::kernels
