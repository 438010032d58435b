// Making tensors: constants, ranges, data from C++ containers and random values.
// Every factory returns a contiguous leaf; pass requires_grad = true to make it a parameter-like leaf.
// A shape with a negative size, or whose element count overflows int64, throws ShapeError; a tensor
// the system has not the memory for throws qkv::Error naming the factory, the shape and its bytes
// (Tensor::empty, where all tensor storage is allocated), never std::bad_alloc.
#pragma once

#include <initializer_list>
#include <vector>

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace qkv {

Tensor zeros(const Shape& shape, bool requires_grad = false);
Tensor ones(const Shape& shape, bool requires_grad = false);
Tensor full(const Shape& shape, float value, bool requires_grad = false);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, float value);

// start, start+step, ... below end (1-d). ValueError naming start, end and step for a value that
// is not finite, a zero step, or more than 2^62 elements (the count is checked as a double, before
// it is converted to an integer).
Tensor arange(float end);
Tensor arange(float start, float end, float step = 1.0f);
// `steps` values evenly spaced from start to end inclusive (1-d).
Tensor linspace(float start, float end, int64_t steps);
// The n×n identity (or n×m with ones on the main diagonal).
Tensor eye(int64_t n, int64_t m = -1);

// From values in row-major order; values.size() must equal numel(shape).
Tensor tensor(std::vector<float> values, const Shape& shape, bool requires_grad = false);
// Nested literals: tensor({1, 2, 3}), tensor({{1, 2}, {3, 4}}), tensor({{{...}}}).
Tensor tensor(std::initializer_list<float> values, bool requires_grad = false);
Tensor tensor(std::initializer_list<std::initializer_list<float>> rows, bool requires_grad = false);
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<float>>> blocks,
              bool requires_grad = false);
// A 0-d tensor holding one value.
Tensor scalar_tensor(float value, bool requires_grad = false);
// The float values of an index tensor (token ids, lengths), e.g. for arithmetic with masks.
Tensor to_float(const IndexTensor& index);
// The 0/1 mask of lengths (d2l's sequence_mask): lengths (...) → (..., K), 1 at k < lengths[...].
Tensor sequence_mask(const IndexTensor& lengths, int64_t K);

// Uniform in [0, 1), and standard normal, from `gen` (the default generator if omitted).
Tensor rand(const Shape& shape, bool requires_grad = false, Generator* gen = nullptr);
Tensor randn(const Shape& shape, bool requires_grad = false, Generator* gen = nullptr);
Tensor uniform(const Shape& shape, float lo, float hi, bool requires_grad = false,
               Generator* gen = nullptr);
Tensor normal(const Shape& shape, float mean, float std, bool requires_grad = false,
              Generator* gen = nullptr);
// Integers uniform in [lo, hi).
IndexTensor randint(int64_t lo, int64_t hi, const Shape& shape, Generator* gen = nullptr);
// A random permutation of 0..n-1 (Fisher-Yates).
IndexTensor randperm(int64_t n, Generator* gen = nullptr);

}  // namespace qkv
