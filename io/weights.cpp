#include "io/weights.h"

#include <cstring>
#include <span>

#include "autograd/grad_mode.h"
#include "io/safetensors.h"
#include "tensor/error.h"

namespace qkv::io {

void TensorRecords::add(const std::string& name, const Tensor& t) {
  NoGradGuard no_grad;
  const Tensor& c = tensors_.emplace_back(t.detach().contiguous());
  // A Tensor is a handle: moving it inside the vector leaves its data where it is.
  records_.push_back(
      {name, DType::F32, c.shape(), std::as_bytes(std::span(c.data(), static_cast<size_t>(c.numel())))});
}

Tensor to_tensor(const TensorRecord& record, const std::string& context) {
  if (record.dtype != DType::F32)
    throw FormatError(context + "tensor " + in_quotes(record.name) + " has dtype " +
                      std::string(dtype_name(record.dtype)) + ", expected F32");
  Tensor t = Tensor::empty(record.shape);
  if (!record.data.empty()) std::memcpy(t.data(), record.data.data(), record.data.size());
  return t;
}

void save_safetensors(const std::filesystem::path& path, const nn::Module& module,
                      const std::map<std::string, std::string>& metadata) {
  save_safetensors(path, module.state_dict(), metadata);
}

void save_safetensors(const std::filesystem::path& path, const nn::StateDict& tensors,
                      const std::map<std::string, std::string>& metadata) {
  TensorRecords records;
  for (const auto& [name, t] : tensors) {
    if (!t.defined())
      throw ValueError("save_safetensors: '" + path.string() + "': tensor " + in_quotes(name) +
                       " is undefined");
    records.add(name, t);
  }
  save_safetensors(path, records.records(), metadata);
}

nn::StateDict read_safetensors(const std::filesystem::path& path) {
  const LoadedTensors file = load_safetensors(path);
  const std::string context = "read_safetensors: '" + path.string() + "': ";
  nn::StateDict state;
  for (const TensorRecord& r : file.tensors) state.emplace(r.name, to_tensor(r, context));
  return state;
}

void load_safetensors(const std::filesystem::path& path, nn::Module& module, bool strict) {
  const nn::StateDict state = read_safetensors(path);
  std::string problems;
  for (const std::string& line : module.check_state_dict(state, strict)) problems += "\n  " + line;
  if (!problems.empty())
    throw ValueError("load_safetensors: '" + path.string() + "' does not fit " + module.type_name() +
                     " (nothing was changed):" + problems);
  module.load_state_dict(state, strict);
}

}  // namespace qkv::io
