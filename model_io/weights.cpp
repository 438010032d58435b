#include "model_io/weights.h"

#include <algorithm>
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
  const std::string context = "save_safetensors: '" + path.string() + "': ";
  TensorRecords records;
  for (const auto& [name, t] : tensors) {
    if (!t.defined()) throw ValueError(context + "tensor " + in_quotes(name) + " is undefined");
    records.add(name, t);
  }
  for (const TensorRecord& r : records.records()) {
    if (const std::string bad = non_finite_value(r); !bad.empty())
      throw ValueError(context + "tensor " + in_quotes(r.name) + " " + bad +
                       ": weights that are not finite are not written (the file is left as it was)");
  }
  save_safetensors(path, records.records(), metadata);
}

namespace {

// The file's F32 tensors, checked to be finite unless allow_non_finite; the names of its I64 ones
// in `integers`.
nn::StateDict read_weights(const LoadedTensors& file, const std::string& context, bool allow_non_finite,
                           std::vector<std::string>& integers) {
  nn::StateDict state;
  for (const TensorRecord& r : file.tensors) {
    if (r.dtype == DType::I64) {
      integers.push_back(r.name);
      continue;
    }
    Tensor t = to_tensor(r, context);
    if (const std::string bad = allow_non_finite ? "" : non_finite_value(r); !bad.empty())
      throw ValueError(context + "tensor " + in_quotes(r.name) + " " + bad +
                       ": weights that are not finite are refused (allow_non_finite reads them anyway)");
    state.emplace(r.name, std::move(t));
  }
  return state;
}

}  // namespace

nn::StateDict read_safetensors(const std::filesystem::path& path, bool allow_non_finite) {
  std::vector<std::string> integers;
  return read_weights(load_safetensors(path), "read_safetensors: '" + path.string() + "': ", allow_non_finite,
                      integers);
}

std::map<std::string, IndexTensor> read_index_tensors(const std::filesystem::path& path) {
  std::map<std::string, IndexTensor> out;
  for (const TensorRecord& r : load_safetensors(path).tensors) {
    if (r.dtype != DType::I64) continue;
    std::vector<int64_t> values(r.data.size() / sizeof(int64_t));
    if (!values.empty()) std::memcpy(values.data(), r.data.data(), r.data.size());
    out.emplace(r.name, IndexTensor(std::move(values), r.shape));
  }
  return out;
}

nn::LoadResult load_safetensors(const std::filesystem::path& path, nn::Module& module, bool strict,
                                bool allow_non_finite) {
  const std::string context = "load_safetensors: '" + path.string() + "': ";
  std::vector<std::string> integers;
  const nn::StateDict state = read_weights(load_safetensors(path), context, allow_non_finite, integers);
  const nn::StateDict own = module.state_dict();
  for (const std::string& name : integers)
    if (own.count(name))
      throw ValueError(context + "tensor " + in_quotes(name) + " is I64 (integers) where " + module.type_name() +
                       "'s tensor of that name is F32 (nothing was changed)");
  std::string problems;
  for (const std::string& line : module.check_state_dict(state, strict)) problems += "\n  " + line;
  if (strict && !integers.empty()) {
    problems += "\n  unexpected integer (I64) keys, which no parameter is:";
    for (const std::string& name : integers) problems += " " + name + ";";
  }
  if (!problems.empty())
    throw ValueError("load_safetensors: '" + path.string() + "' does not fit " + module.type_name() +
                     " (nothing was changed):" + problems);
  nn::LoadResult result = module.load_state_dict(state, strict);
  result.unexpected.insert(result.unexpected.end(), integers.begin(), integers.end());
  std::sort(result.unexpected.begin(), result.unexpected.end());
  return result;
}

}  // namespace qkv::io
