// Tensor: an N-d array of float32 with reverse-mode autodiff.
//
// A Tensor is a handle: copying it shares the same data (like a PyTorch tensor or a Python
// reference). The data lives in a Storage; shape, strides and offset say how to read it, so views
// (reshape, permute, transpose, slice, expand, ...) share the storage and cost nothing.
//
// This header declares the whole method API, as PyTorch's TensorBody.h does. The data side (storage,
// shapes, element access, in-place writes, printing, factories) is implemented in tensor/. Every
// method that computes a new tensor is differentiable and is implemented in autograd/ops/, next to
// its backward; the graph side (requires_grad, grad, backward) in autograd/tensor.cpp. The Tensor
// only carries an opaque pointer to the graph node that produced it.
//
// Glossary used in shape comments: B batch, T (or Q/K) sequence lengths, D model width, H heads.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "tensor/index_tensor.h"
#include "tensor/shape.h"
#include "tensor/storage.h"

namespace qkv {

namespace autograd {
struct Node;  // the graph node that produced a tensor (autograd/node.h)
}

class Tensor;
class Generator;  // tensor/random.h

// The state behind a Tensor handle.
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;
  int64_t offset = 0;
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;              // accumulated gradient (leaves only)
  std::shared_ptr<autograd::Node> grad_fn;       // null for leaves
  std::string name;                              // set by nn::Module for parameters
};

class Tensor {
 public:
  Tensor() = default;  // undefined: no data, like a null pointer
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A new contiguous tensor of `shape` with uninitialized values (kernels fill it).
  static Tensor empty(const Shape& shape);
  // A tensor viewing `storage` through shape, strides and offset.
  static Tensor view_of(std::shared_ptr<Storage> storage, Shape shape, Shape strides,
                        int64_t offset);

  // ---- metadata ---------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& strides() const;
  int64_t offset() const;
  int64_t dim() const;
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t numel() const;
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const;
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& shared_impl() const { return impl_; }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // ---- element access ---------------------------------------------------------------------
  // Pointer to the first element; with strides() it addresses every element.
  float* data();
  const float* data() const;
  float item() const;                                      // the value of a 1-element tensor
  float at(std::initializer_list<int64_t> index) const;    // bounds-checked element read
  std::vector<float> to_vector() const;                    // all values in row-major order

  // ---- autograd ---------------------------------------------------------------------------
  bool requires_grad() const;
  Tensor& requires_grad_(bool on = true);  // only on leaves
  bool is_leaf() const;
  Tensor grad() const;                           // undefined until a backward reaches this leaf
  void set_grad(const Tensor& grad);
  // Drops the gradient (set_to_none, PyTorch's default) or fills it with zeros.
  void zero_grad(bool set_to_none = true);
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  std::string grad_fn_name() const;  // the op that produced this tensor ("mul"); "" for a leaf
  // Backpropagates from this tensor: a scalar needs no `gradient`; otherwise pass d(loss)/d(this).
  // The graph is freed afterwards unless retain_graph.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  // The same data, cut off from the graph.
  Tensor detach() const;
  const std::string& name() const;
  Tensor& set_name(std::string name);

  // ---- views (share storage; gradients flow back through them) -----------------------------
  Tensor view(Shape shape) const;          // needs compatible strides; -1 infers one dim
  Tensor reshape(Shape shape) const;       // a view when possible, a copy otherwise
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor permute(std::vector<int64_t> dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;                        // transpose of a 2-d tensor
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;       // only if that dim has size 1
  Tensor squeeze() const;                  // every dim of size 1
  // Elements start, start+step, ... below end along dim (PyTorch's x[..., start:end:step, ...]).
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;  // removes dim
  Tensor expand(Shape shape) const;        // -1 keeps a dim; size-1 dims stretch with stride 0
  Tensor expand_as(const Tensor& other) const;
  Tensor contiguous() const;               // this tensor if already contiguous, else a copy
  Tensor clone() const;                    // always a copy

  // ---- elementwise, with broadcasting -------------------------------------------------------
  Tensor add(const Tensor& other) const;
  Tensor sub(const Tensor& other) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor add(float s) const;
  Tensor sub(float s) const;
  Tensor mul(float s) const;
  Tensor div(float s) const;
  Tensor rsub(float s) const;              // s - this
  Tensor rdiv(float s) const;              // s / this
  Tensor neg() const;
  Tensor pow(float exponent) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  // Exact GELU x·Φ(x) (PyTorch's default), or the tanh approximation.
  Tensor gelu(bool tanh_approximation = false) const;
  Tensor abs() const;
  Tensor clamp(float min, float max) const;
  Tensor clamp_min(float min) const;
  Tensor clamp_max(float max) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  // Elements where mask is nonzero become `value`; mask broadcasts to this tensor's shape.
  Tensor masked_fill(const Tensor& mask, float value) const;

  // Comparisons give 0/1 masks (no gradient), broadcasting like arithmetic.
  Tensor eq(const Tensor& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor le(const Tensor& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor eq(float s) const;
  Tensor ne(float s) const;
  Tensor lt(float s) const;
  Tensor le(float s) const;
  Tensor gt(float s) const;
  Tensor ge(float s) const;

  // ---- reductions: over the given dims (all when empty), keeping them as size 1 if keepdim -----
  Tensor sum(std::vector<int64_t> dims = {}, bool keepdim = false) const;
  Tensor mean(std::vector<int64_t> dims = {}, bool keepdim = false) const;
  // Variance with Bessel's correction by default (correction = 1), like torch.var.
  Tensor var(std::vector<int64_t> dims = {}, int64_t correction = 1, bool keepdim = false) const;
  // p-norm (p = 1, 2, ... or INFINITY) over dims.
  Tensor norm(float p = 2.0f, std::vector<int64_t> dims = {}, bool keepdim = false) const;
  // The largest (smallest) element, a scalar. Ties share the gradient evenly, as in torch.max():
  // the gradient of max over [1, 3, 3] is [0, .5, .5].
  Tensor max() const;
  Tensor min() const;
  std::pair<Tensor, IndexTensor> max(int64_t dim, bool keepdim = false) const;  // values, indices
  std::pair<Tensor, IndexTensor> min(int64_t dim, bool keepdim = false) const;
  IndexTensor argmax(int64_t dim, bool keepdim = false) const;
  IndexTensor argmin(int64_t dim, bool keepdim = false) const;
  // Sums this tensor down to `shape` (which it broadcasts to): the gradient of broadcasting.
  Tensor sum_to(const Shape& shape) const;

  // ---- linear algebra and normalization ------------------------------------------------------
  // torch.matmul: 1-d·1-d is a dot product; 2-d·2-d a matrix product; n-d operands are batches of
  // matrices in the last two dims, with broadcast batch dims; a 1-d operand gains a dim of size 1
  // that is removed from the result.
  Tensor matmul(const Tensor& other) const;
  Tensor softmax(int64_t dim) const;       // fused and numerically stable (max subtracted)
  Tensor log_softmax(int64_t dim) const;

  // ---- indexing ---------------------------------------------------------------------------
  // Rows (or slices along dim) picked by a 1-d index: out.shape[dim] = index.numel().
  Tensor index_select(int64_t dim, const IndexTensor& index) const;
  // out[i][j][k] = this[i][index[i][j][k]][k] for dim = 1 (and likewise for other dims).
  Tensor gather(int64_t dim, const IndexTensor& index) const;

  // ---- in-place (no gradient: for optimizers, initialization and the engine itself) ----------
  // Refused while grad mode is on for a tensor that requires grad. Bump the storage version.
  Tensor& fill_(float value);
  Tensor& zero_();
  Tensor& copy_(const Tensor& src);        // src broadcasts to this tensor's shape
  Tensor& add_(const Tensor& other, float alpha = 1.0f);  // this += alpha·other
  Tensor& mul_(float s);
  Tensor& mul_(const Tensor& other);
  // Throws StateError naming `op` if this tensor may not be written in place (the rule above).
  void check_inplace(const char* op) const;

 private:
  TensorImpl& checked() const;
  std::shared_ptr<TensorImpl> impl_;
};

// ---- free functions ------------------------------------------------------------------------
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// cond ? a : b elementwise, all three broadcast together; cond is a 0/1 (nonzero) mask.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Pieces of `split_size` along dim (the last may be shorter); views of the input.
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
// `chunks` pieces of (nearly) equal size, like torch.chunk.
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
// Softmax over the last dim of the first valid_lens keys, fused (one kernel forward, one backward):
// the op behind nn::functional::masked_softmax (nn/functional/attention.h documents its semantics;
// use that). x is (B, Q, K), or (B, H, Q, K) with the lengths shared by the H heads; valid_lens is
// (B) or (B, Q) with values in [0, K], or undefined for every key. -inf logits are hidden too, and
// a row with nothing visible is all zeros.
Tensor masked_softmax(const Tensor& x, const IndexTensor& valid_lens);
// Max over the first valid_lens positions of each sequence, the op behind nn::functional::masked_max
// (nn/functional/pooling.h documents its semantics; use that): x (N, L, F), valid_lens (N) with
// values in [1, L] → (N, F). The gradient goes to the position picked, the first on ties.
Tensor masked_max(const Tensor& x, const IndexTensor& valid_lens);
// im2col for a one-dimensional convolution of channels-last sequences, the op behind
// nn::functional::conv1d (nn/functional/conv.h; tensor/kernels/unfold.h has the equation):
// x (N, L, C) → (N, L_out, K·C), row t holding the K taps x[t − padding + j·dilation] (zero outside
// the sequence) one after the other, L_out = L + 2·padding − dilation·(K − 1).
Tensor unfold1d(const Tensor& x, int64_t kernel_size, int64_t padding = 0, int64_t dilation = 1);
// The two products of windowed attention on the band, W = 2·window + 1 offsets per query, the
// ops behind nn::functional::banded_attention (use that; tensor/kernels/band.h has the equations):
//   band_scores: q (B, H, T, d), k (B, H, T, d) → (B, H, T, W), scale · q_i·k_{i+o−window}
//   band_sum:    p (B, H, T, W), v (B, H, T, dv) → (B, H, T, dv), Σ_o p[i, o] · v_{i+o−window}
// Keys outside [0, T) contribute 0.
Tensor band_scores(const Tensor& q, const Tensor& k, int64_t window, float scale);
Tensor band_sum(const Tensor& p, const Tensor& v, int64_t window);
// A linear layer's y = x·Wᵀ + b as one op, the bias added by the GEMM to each output tile while it
// is in cache: the op behind nn::functional::linear (use that). x (..., in), weight (out, in),
// bias (out) → (..., out).
Tensor linear_with_bias(const Tensor& x, const Tensor& weight, const Tensor& bias);
// Inverted dropout, fused: each element is zeroed with probability p, drawn from `gen`, and the
// others scaled by 1/(1-p); the mask is drawn in the same pass and never stored (backward draws
// it again from the generator's state at the call). x: any shape → same shape. The op behind
// nn::functional::dropout, which adds the training flag (use that); p == 0 returns x.
Tensor dropout(const Tensor& x, float p, Generator& gen);
// Multi-head scaled dot-product attention as one op, forward and backward each one kernel
// (tensor/kernels/attention.h has the equations): the op behind nn::functional::fused_attention,
// which documents its semantics (use that).
//   q (B, H, Q, d), k and v (B, H, K, d), any strides: the heads of a (B, T, H·d) projection seen
//   through view and permute are read in place. valid_lens (B) or (B, Q); mask (0/1) and bias
//   broadcast to (B, H, Q, K); each may be undefined. Dropout with probability dropout_p from gen,
//   drawn as dropout() would draw it on the (B, H, Q, K) weights.
//   → output (B, Q, H·d), the heads side by side; weights (B, H, Q, K) before dropout, detached,
//     or undefined unless need_weights (then backward recomputes them).
struct FusedAttention {
  Tensor output;
  Tensor weights;
};
FusedAttention fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, const IndexTensor& valid_lens,
                               const Tensor& mask, const Tensor& bias, float dropout_p, Generator& gen,
                               bool need_weights = true);
// The same for self-attention on one packed projection qkv (B, T, 3·H·d), the queries, keys and
// values its three column blocks (x·[W_q; W_k; W_v]ᵀ): the heads are read in place, and backward
// writes one (B, T, 3·H·d) gradient, so the projection's backward is one product, not three and
// a sum. The op behind nn::functional::fused_attention_packed (use that).
FusedAttention fused_attention_packed(const Tensor& qkv, int64_t heads, const IndexTensor& valid_lens,
                                      const Tensor& mask, const Tensor& bias, float dropout_p, Generator& gen,
                                      bool need_weights = true);
// Layer normalization over the last dim, fused (one kernel forward, one backward):
//   y = (x - mean) / sqrt(var + eps) · weight + bias,   mean and biased var over the last D values
// x: (..., D) → y: (..., D); weight and bias are (D), or undefined to leave them out.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);
// Rows of weight (V, D) picked by token ids of any shape, like torch.nn.functional.embedding:
// ids (...) → (..., D). An id outside [0, V) throws IndexError. Row padding_idx (negative counts
// from the end) receives no gradient.
Tensor embedding(const IndexTensor& ids, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt);
// GRU recurrences, fused (nn/gru.h has the equations; tensor/kernels/gru.h the gate math and its
// derivatives). Gates are stacked r, z, n along the 3H dim, as in PyTorch.
// One step: gi = x·W_ihᵀ + b_ih (B, 3H), gh = h·W_hhᵀ + b_hh (B, 3H), h (B, H) → h' (B, H).
Tensor gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h);
// A whole sequence in one direction: gi (T, B, 3H) holds x_t·W_ihᵀ + b_ih for every step, h0 is
// (B, H), w_hh (3H, H), b_hh (3H) or undefined. Returns every hidden state (T, B, H): h_t at t.
// With reverse, steps run from t = T-1 down to 0 (the backward direction of a bidirectional GRU).
Tensor gru_sequence(const Tensor& gi, const Tensor& h0, const Tensor& w_hh, const Tensor& b_hh, bool reverse = false);

// The fused losses behind nn::functional::cross_entropy and binary_cross_entropy_with_logits
// (nn/functional/loss.h documents their semantics; use those). Both are unreduced.
//
// Per-row cross-entropy of logits (N, C) against targets (N), log-softmax and NLL in one node:
//   loss_n = (1-ε)·w[y_n]·(-log p_n[y_n]) + (ε/C)·Σ_c w[c]·(-log p_n[c]),  p_n = softmax(logits_n)
// and 0 where y_n == ignore_index; w = 1 when `weight` (C) is undefined; ε is label_smoothing.
// The weight is a constant: it receives no gradient (as in PyTorch).
Tensor softmax_cross_entropy(const Tensor& logits, const IndexTensor& target, const Tensor& weight,
                             int64_t ignore_index, float label_smoothing);
// Elementwise -[pw·y·log σ(x) + (1-y)·log(1-σ(x))] for x and y of one shape; pw (pos_weight)
// broadcasts to it, or is undefined (1).
Tensor sigmoid_cross_entropy(const Tensor& x, const Tensor& y, const Tensor& pos_weight);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, float s);
Tensor operator-(const Tensor& a, float s);
Tensor operator*(const Tensor& a, float s);
Tensor operator/(const Tensor& a, float s);
Tensor operator+(float s, const Tensor& a);
Tensor operator-(float s, const Tensor& a);
Tensor operator*(float s, const Tensor& a);
Tensor operator/(float s, const Tensor& a);
Tensor operator-(const Tensor& a);

// Prints like PyTorch: tensor([[1.0000, 2.5000], ...], shape=(2,2), grad_fn=<mul>).
std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string to_string(const Tensor& t);

}  // namespace qkv
