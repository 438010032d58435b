// Tensor: an N-d array of float32 with reverse-mode autodiff.
//
// A Tensor is a handle: copying it shares the same data (like a PyTorch tensor or a Python
// reference). The data lives in a Storage; shape, strides and offset say how to read it, so views
// (reshape, permute, transpose, slice, expand, ...) share the storage and cost nothing.
//
// This header declares the primitive API, as PyTorch's TensorBody.h does: views, elementwise math,
// reductions, matmul, softmax, indexing. The data side (storage, shapes, element access, in-place
// writes, printing, factories) is implemented in tensor/. Every method that computes a new tensor
// is differentiable and is implemented in autograd/ops/, next to its backward; the graph side
// (requires_grad, grad, backward) in autograd/tensor.cpp. The Tensor only carries an opaque pointer
// to the graph node that produced it. The fused ops of the model layers (attention, layer norm,
// the GRU, the losses...) are declared by their own families, autograd/ops/<family>.h.
//
// Glossary used in shape comments: B batch, T (or Q/K) sequence lengths, D model width, H heads.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensor/index_tensor.h"
#include "tensor/shape.h"
#include "tensor/storage.h"

namespace qkv {

namespace autograd {
struct Node;  // the graph node that produced a tensor (autograd/node.h)
struct LeafHooks;  // functions called when a backward pass has completed a leaf's gradient (autograd/hooks.h)
}

class Tensor;

// The state behind a Tensor handle.
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;
  int64_t offset = 0;
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;              // accumulated gradient (leaves only)
  std::shared_ptr<autograd::Node> grad_fn;       // null for leaves
  std::shared_ptr<autograd::LeafHooks> hooks;    // leaves only: what runs when a backward completes .grad
  std::string name;                              // set by nn::Module for parameters
};

// How a backward pass runs (Tensor::backward, qkv::grad in autograd/engine.h), as PyTorch's
// arguments of the same names.
struct BackwardOptions {
  // Record the backward pass itself as a graph: every backward rule runs with differentiable ops,
  // so the gradients it returns can be differentiated again (Hessian-vector products, a loss on
  // forces that are gradients of an energy).
  bool create_graph = false;
  // Keep the graph's saved tensors after the pass, for another backward through it; by default
  // kept exactly when create_graph (the new graph reads them).
  std::optional<bool> retain_graph;
  // qkv::grad only: an input that the outputs do not depend on gets an undefined gradient instead
  // of an error.
  bool allow_unused = false;
  bool retains() const { return retain_graph.value_or(create_graph); }
};

class Tensor {
 public:
  Tensor() = default;  // undefined: no data, like a null pointer
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A new contiguous tensor of `shape` with uninitialized values (kernels fill it). A negative or
  // unaddressable shape is a ShapeError, and memory the system has not a qkv::Error naming the shape
  // and its bytes, each led by `op`, what asked for the tensor, when given ("zeros", "Linear").
  static Tensor empty(const Shape& shape, std::string_view op = {});
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
  // The same with create_graph (BackwardOptions): the gradients that reach .grad() are then
  // tensors of a graph of their own, which a second backward can differentiate.
  void backward(const Tensor& gradient, const BackwardOptions& options) const;
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
  // torch.repeat_interleave: each slice along dim repeated in place, `repeats` times or repeats[i]
  // times for slice i: [a, b].repeat_interleave(2, 0) = [a, a, b, b]. (d2l repeats valid_lens once
  // per head this way.) index_select with the repeated indices.
  Tensor repeat_interleave(int64_t repeats, int64_t dim) const;
  Tensor repeat_interleave(const IndexTensor& repeats, int64_t dim) const;
  // torch.sort: the values along dim in order, and where each came from, so that
  // values = gather(dim, indices). Stable (equal values keep their order); NaN sorts above every
  // number, last ascending and first descending, as in PyTorch. The gradient flows through gather.
  std::pair<Tensor, IndexTensor> sort(int64_t dim = -1, bool descending = false) const;
  IndexTensor argsort(int64_t dim = -1, bool descending = false) const;

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
// torch.bmm: (B, n, m) · (B, m, p) → (B, n, p), and nothing else: no broadcasting, no 1-d operand.
Tensor bmm(const Tensor& a, const Tensor& b);
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
