// IndexTensor: integer data — token ids, class targets, valid lengths, argmax results.
//
// Kept apart from the float Tensor on purpose: integers stored in floats lose exactness past 2^24
// and invite silent bugs (a float "id" of 3.9999). An IndexTensor is an N-d array of int64 in
// row-major order. It never carries gradients. Copies share the data, like Tensor.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <vector>

#include "tensor/shape.h"

namespace qkv {

class IndexTensor {
 public:
  IndexTensor() = default;  // undefined (no data)
  // 1-d from values: IndexTensor{3, 2}.
  IndexTensor(std::initializer_list<int64_t> values);
  // Values with a shape; values.size() must equal numel(shape).
  IndexTensor(std::vector<int64_t> values, Shape shape);
  // 1-d from a vector.
  explicit IndexTensor(std::vector<int64_t> values);

  static IndexTensor full(Shape shape, int64_t value);
  static IndexTensor arange(int64_t n);

  bool defined() const { return data_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t d) const;
  int64_t numel() const { return qkv::numel(shape_); }

  const int64_t* data() const;
  int64_t* data();  // mutable access; shared with every copy of this IndexTensor
  int64_t operator[](int64_t i) const;  // flat, row-major, bounds-checked
  int64_t at(std::initializer_list<int64_t> index) const;
  const std::vector<int64_t>& values() const;

  // The same data seen with another shape of equal numel (-1 infers one dim).
  IndexTensor reshape(Shape shape) const;
  // Each element repeated `repeats` times in place: {2, 3}.repeat_interleave(2) = {2, 2, 3, 3}.
  IndexTensor repeat_interleave(int64_t repeats) const;
  // Element i repeated repeats[i] times: {2, 3}.repeat_interleave({0, 2}) = {3, 3}. repeats is 1-d
  // with one count >= 0 per element (ShapeError, ValueError otherwise).
  IndexTensor repeat_interleave(const IndexTensor& repeats) const;
  IndexTensor clone() const;

  int64_t min() const;
  int64_t max() const;

 private:
  std::shared_ptr<std::vector<int64_t>> data_;
  Shape shape_;
};

bool operator==(const IndexTensor& a, const IndexTensor& b);
std::ostream& operator<<(std::ostream& os, const IndexTensor& t);

}  // namespace qkv
