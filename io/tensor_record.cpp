#include "io/tensor_record.h"

#include <cmath>
#include <cstring>
#include <new>

namespace qkv::io {

std::size_t itemsize(DType dtype) {
  switch (dtype) {
    case DType::F32: return 4;
    case DType::I64: return 8;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::I64: return "I64";
  }
  return "?";
}

std::optional<int64_t> checked_numel(std::span<const int64_t> shape) {
  // The product of the dims, with a zero dim counted as 1, bounds every stride of the tensor: it
  // must fit too, or (0, 2^40, 2^40) would pass as an empty tensor whose strides overflow.
  int64_t n = 1, span = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(span, d > 0 ? d : 1, &span)) return std::nullopt;
    n *= d;  // |n| <= span: cannot overflow
  }
  return n;
}

std::optional<int64_t> checked_nbytes(DType dtype, std::span<const int64_t> shape) {
  const std::optional<int64_t> n = checked_numel(shape);
  int64_t bytes;
  if (!n || __builtin_mul_overflow(*n, static_cast<int64_t>(itemsize(dtype)), &bytes))
    return std::nullopt;
  return bytes;
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ',';
  return s + ")";
}

std::string in_quotes(std::string_view text) {
  constexpr std::size_t kMax = 80;
  std::string s = "'";
  s += text.substr(0, kMax);
  s += text.size() <= kMax ? "'" : "...'";
  return s;
}

std::shared_ptr<std::byte[]> allocate_storage(std::size_t nbytes) {
  constexpr std::align_val_t alignment{64};
  auto* p = static_cast<std::byte*>(::operator new[](nbytes, alignment));
  return std::shared_ptr<std::byte[]>(p, [](std::byte* q) { ::operator delete[](q, alignment); });
}

std::string non_finite_value(const TensorRecord& r) {
  if (r.dtype != DType::F32) return "";
  const size_t n = r.data.size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, r.data.data() + i * sizeof(float), sizeof v);
    if (!std::isfinite(v))
      return "holds " + (std::isnan(v) ? std::string("nan") : std::to_string(v)) + " at element " + std::to_string(i);
  }
  return "";
}

}  // namespace qkv::io
