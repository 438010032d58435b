// The data side of Tensor: construction, metadata and element access. In-place writes are in
// tensor/inplace.cpp, printing in tensor/print.cpp; the graph side (requires_grad, backward) is in
// autograd/tensor.cpp and the differentiable methods in autograd/ops/.
#include "tensor/tensor.h"

#include "tensor/error.h"
#include "tensor/kernels/elementwise.h"

namespace qkv {

Tensor Tensor::empty(const Shape& shape, std::string_view op) {
  // The op that asked leads the message; Tensor::empty itself is no op of the user's.
  const std::string who = op.empty() ? "" : std::string(op) + ": ";
  // Every stride must fit in int64 even when a zero-sized dim makes the tensor empty: (0, 2^40,
  // 2^40) holds no element, yet its first stride would be 2^80.
  int64_t span = 1;
  for (int64_t d : shape) {
    if (d < 0) throw ShapeError(who + "a tensor of shape " + shape_str(shape) + " cannot have a negative size");
    if (__builtin_mul_overflow(span, d > 0 ? d : 1, &span))
      throw ShapeError(who + "a tensor of shape " + shape_str(shape) +
                       " is too large to address with 64-bit strides");
  }
  auto impl = std::make_shared<TensorImpl>();
  const int64_t n = qkv::numel(shape);
  try {
    impl->storage = std::make_shared<Storage>(n);
  } catch (const std::bad_alloc&) {  // the one place tensor storage is allocated: say what was asked
    int64_t bytes = 0;
    const std::string size =
        __builtin_mul_overflow(n, int64_t{sizeof(float)}, &bytes)
            ? std::to_string(n) + " floats of " + std::to_string(sizeof(float)) + " bytes"
            : std::to_string(bytes) + " bytes";
    throw Error(who + "cannot allocate a tensor of shape " + shape_str(shape) + ": " + size);
  }
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  return Tensor(std::move(impl));
}

Tensor Tensor::view_of(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  return Tensor(std::move(impl));
}

TensorImpl& Tensor::checked() const {
  if (!impl_) throw StateError("Tensor: use of an undefined tensor");
  return *impl_;
}

const Shape& Tensor::shape() const { return checked().shape; }
const Shape& Tensor::strides() const { return checked().strides; }
int64_t Tensor::offset() const { return checked().offset; }
int64_t Tensor::dim() const { return static_cast<int64_t>(checked().shape.size()); }
int64_t Tensor::size(int64_t d) const { return shape()[normalize_dim(d, dim(), "size")]; }
int64_t Tensor::numel() const { return qkv::numel(shape()); }
const std::shared_ptr<Storage>& Tensor::storage() const { return checked().storage; }

bool Tensor::is_contiguous() const {
  const TensorImpl& t = checked();
  int64_t expected = 1;
  for (size_t k = t.shape.size(); k-- > 0;) {
    if (t.shape[k] != 1 && t.strides[k] != expected) return false;
    expected *= t.shape[k];
  }
  return true;
}

float* Tensor::data() {
  TensorImpl& t = checked();
  return t.storage->data() + t.offset;
}

const float* Tensor::data() const {
  const TensorImpl& t = checked();
  return t.storage->data() + t.offset;
}

float Tensor::item() const {
  if (numel() != 1)
    throw ShapeError("item: expected a tensor with one element, got shape " + shape_str(shape()));
  return data()[0];
}

float Tensor::at(std::initializer_list<int64_t> index) const {
  if (static_cast<int64_t>(index.size()) != dim())
    throw IndexError("at: " + std::to_string(index.size()) + " indices for a tensor of shape " +
                     shape_str(shape()));
  int64_t off = 0, k = 0;
  for (int64_t i : index) {
    if (i < 0 || i >= shape()[k])
      throw IndexError("at: index " + std::to_string(i) + " is out of range for dim " + std::to_string(k) +
                       " of shape " + shape_str(shape()));
    off += i * strides()[k++];
  }
  return data()[off];
}

std::vector<float> Tensor::to_vector() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  kernels::copy_strided(shape(), data(), strides(), out.data(), contiguous_strides(shape()));
  return out;
}

}  // namespace qkv
