// A tensor as the file formats see it: a name, an element type, a C-order shape and raw
// little-endian bytes. The formats (io/safetensors.h, io/npy.h) read and write these records and
// know nothing of Tensor; binding a Tensor or a module's state_dict to records is a thin layer on
// top (model_io/weights.h), so the byte-level code can be read (and tested) on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::io {

// The element types qkv stores: float32 for tensors, int64 for token ids, targets and lengths.
enum class DType { F32, I64 };

std::size_t itemsize(DType dtype);         // 4, 8
std::string_view dtype_name(DType dtype);  // "F32", "I64": the safetensors spelling

struct TensorRecord {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;       // () is a scalar; a 0 anywhere makes an empty tensor
  std::span<const std::byte> data;  // numel · itemsize bytes; borrowed, never owned
};

// The number of elements of `shape`, or nullopt when a dimension is negative or the product
// overflows int64 — counting a zero dim as 1 for that check, since the strides of an empty tensor
// must fit too. checked_nbytes multiplies by the item size, with the same checks.
std::optional<int64_t> checked_numel(std::span<const int64_t> shape);
std::optional<int64_t> checked_nbytes(DType dtype, std::span<const int64_t> shape);

// "(2,3)", "(5,)", "()": shapes in error messages, as in the rest of qkv.
std::string shape_string(std::span<const int64_t> shape);

// 'text' in single quotes for an error message, cut to 80 bytes and "...", so that a hostile file
// cannot make a message megabytes long.
std::string in_quotes(std::string_view text);

// "holds nan at element 3" (or "holds inf ...") for the first value of an F32 record that is not
// finite, or "" when all are and for an I64 record.
std::string non_finite_value(const TensorRecord& r);

// One 64-byte-aligned allocation (the alignment of Tensor storage), shared so that loaded tensors
// can keep it alive and view it instead of copying out of it. The bytes are uninitialised.
std::shared_ptr<std::byte[]> allocate_storage(std::size_t nbytes);

}  // namespace qkv::io
