#include "tensor/index_tensor.h"

#include <algorithm>
#include <string>

#include "tensor/error.h"

namespace qkv {

IndexTensor::IndexTensor(std::initializer_list<int64_t> values) : IndexTensor(std::vector<int64_t>(values)) {}

IndexTensor::IndexTensor(std::vector<int64_t> values)
    : data_(std::make_shared<std::vector<int64_t>>(std::move(values))),
      shape_{static_cast<int64_t>(data_->size())} {}

IndexTensor::IndexTensor(std::vector<int64_t> values, Shape shape) {
  shape_ = infer_shape(std::move(shape), static_cast<int64_t>(values.size()), "IndexTensor");
  data_ = std::make_shared<std::vector<int64_t>>(std::move(values));
}

namespace {

// numel(shape) copies of `value`; a qkv::Error naming `op` and the shape when memory runs out.
std::vector<int64_t> integers(const char* op, const Shape& shape, int64_t value) {
  const int64_t n = qkv::numel(shape);
  try {
    return std::vector<int64_t>(static_cast<size_t>(n), value);
  } catch (const std::exception&) {  // std::bad_alloc, or std::length_error past max_size()
    throw Error(std::string(op) + ": cannot allocate " + std::to_string(n) +
                " integers of 8 bytes for shape " + shape_str(shape));
  }
}

}  // namespace

IndexTensor IndexTensor::full(Shape shape, int64_t value) {
  const int64_t n = qkv::numel(shape);
  if (n < 0) throw ShapeError("IndexTensor::full: negative size in shape " + shape_str(shape));
  std::vector<int64_t> values = integers("IndexTensor::full", shape, value);  // before shape is moved
  return IndexTensor(std::move(values), std::move(shape));
}

IndexTensor IndexTensor::arange(int64_t n) {
  if (n < 0) throw ValueError("IndexTensor::arange: n must be >= 0, got " + std::to_string(n));
  std::vector<int64_t> v = integers("IndexTensor::arange", {n}, 0);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return IndexTensor(std::move(v));
}

int64_t IndexTensor::size(int64_t d) const { return shape_[normalize_dim(d, dim(), "IndexTensor::size")]; }

const int64_t* IndexTensor::data() const { return values().data(); }

int64_t* IndexTensor::data() {
  if (!data_) throw StateError("IndexTensor: the tensor is undefined");
  return data_->data();
}

const std::vector<int64_t>& IndexTensor::values() const {
  if (!data_) throw StateError("IndexTensor: the tensor is undefined");
  return *data_;
}

int64_t IndexTensor::operator[](int64_t i) const {
  if (i < 0 || i >= numel())
    throw IndexError("IndexTensor: flat index " + std::to_string(i) + " is out of range for " +
                     std::to_string(numel()) + " elements");
  return (*data_)[i];
}

int64_t IndexTensor::at(std::initializer_list<int64_t> index) const {
  if (static_cast<int64_t>(index.size()) != dim())
    throw IndexError("IndexTensor::at: " + std::to_string(index.size()) + " indices for a tensor of shape " +
                     shape_str(shape_));
  int64_t flat = 0, k = 0;
  for (int64_t i : index) {
    if (i < 0 || i >= shape_[k])
      throw IndexError("IndexTensor::at: index " + std::to_string(i) + " is out of range for dim " +
                       std::to_string(k) + " of shape " + shape_str(shape_));
    flat = flat * shape_[k++] + i;
  }
  return (*data_)[flat];
}

IndexTensor IndexTensor::reshape(Shape shape) const {
  IndexTensor out = *this;
  out.shape_ = infer_shape(std::move(shape), numel(), "IndexTensor::reshape");
  return out;
}

IndexTensor IndexTensor::repeat_interleave(int64_t repeats) const {
  if (repeats < 0) throw ValueError("repeat_interleave: repeats must be >= 0, got " + std::to_string(repeats));
  int64_t total = 0;
  if (__builtin_mul_overflow(numel(), repeats, &total))
    throw ValueError("repeat_interleave: " + std::to_string(numel()) + " elements repeated " +
                     std::to_string(repeats) + " times overflow 64 bits");
  std::vector<int64_t> out = integers("repeat_interleave", {total}, 0);
  int64_t* o = out.data();
  for (int64_t v : values()) o = std::fill_n(o, repeats, v);
  return IndexTensor(std::move(out));
}

IndexTensor IndexTensor::repeat_interleave(const IndexTensor& repeats) const {
  if (repeats.dim() != 1 || repeats.numel() != numel())
    throw ShapeError("repeat_interleave: repeats of shape " + shape_str(repeats.shape()) + " must be (" +
                     std::to_string(numel()) + "), one count per element");
  int64_t total = 0;
  for (int64_t i = 0; i < repeats.numel(); ++i) {
    const int64_t r = repeats.data()[i];
    if (r < 0)
      throw ValueError("repeat_interleave: repeats element " + std::to_string(i) + " is " + std::to_string(r) +
                       "; expected a count >= 0");
    if (__builtin_add_overflow(total, r, &total)) throw ValueError("repeat_interleave: the repeats overflow 64 bits");
  }
  std::vector<int64_t> out = integers("repeat_interleave", {total}, 0);
  int64_t* o = out.data();
  for (int64_t i = 0; i < numel(); ++i) o = std::fill_n(o, repeats.data()[i], data()[i]);
  return IndexTensor(std::move(out));
}

IndexTensor IndexTensor::clone() const { return IndexTensor(values(), shape_); }

int64_t IndexTensor::min() const {
  if (numel() == 0) throw ValueError("IndexTensor::min: empty tensor");
  return *std::min_element(values().begin(), values().end());
}

int64_t IndexTensor::max() const {
  if (numel() == 0) throw ValueError("IndexTensor::max: empty tensor");
  return *std::max_element(values().begin(), values().end());
}

bool operator==(const IndexTensor& a, const IndexTensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  return a.shape() == b.shape() && a.values() == b.values();
}

std::ostream& operator<<(std::ostream& os, const IndexTensor& t) {
  if (!t.defined()) return os << "IndexTensor(undefined)";
  os << "IndexTensor([";
  for (int64_t i = 0; i < t.numel(); ++i) os << (i ? ", " : "") << t.values()[i];
  return os << "], shape=" << shape_str(t.shape()) << ")";
}

}  // namespace qkv
