#include "io/tensor_npy.h"

#include <cstring>
#include <span>
#include <string>

#include "io/npy.h"
#include "tensor/error.h"

namespace qkv::io {
namespace {

NpyArray load_as(const std::filesystem::path& path, DType dtype, const char* op) {
  NpyArray a = load_npy(path);
  if (a.dtype != dtype)
    throw FormatError(std::string(op) + ": '" + path.string() + "': the array has dtype " +
                      (a.dtype == DType::F32 ? "'<f4' (float32)" : "'<i8' (int64)") + ", expected " +
                      (dtype == DType::F32 ? "'<f4' (float32)" : "'<i8' (int64)"));
  return a;
}

}  // namespace

void save_npy(const std::filesystem::path& path, const Tensor& t) {
  const Tensor c = t.detach().contiguous();  // detached: nothing is recorded
  save_npy(path, DType::F32, c.shape(), std::as_bytes(std::span(c.data(), static_cast<size_t>(c.numel()))));
}

void save_npy(const std::filesystem::path& path, const IndexTensor& t) {
  save_npy(path, DType::I64, t.shape(), std::as_bytes(std::span(t.data(), static_cast<size_t>(t.numel()))));
}

Tensor load_npy_tensor(const std::filesystem::path& path) {
  const NpyArray a = load_as(path, DType::F32, "load_npy_tensor");
  Tensor t = Tensor::empty(a.shape);
  if (!a.data.empty()) std::memcpy(t.data(), a.data.data(), a.data.size());
  return t;
}

IndexTensor load_npy_index(const std::filesystem::path& path) {
  const NpyArray a = load_as(path, DType::I64, "load_npy_index");
  std::vector<int64_t> values(a.data.size() / sizeof(int64_t));
  if (!a.data.empty()) std::memcpy(values.data(), a.data.data(), a.data.size());
  return IndexTensor(std::move(values), a.shape);
}

}  // namespace qkv::io
