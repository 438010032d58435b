// Weights alone, in a plain safetensors file (io/safetensors.h): one F32 tensor per state_dict
// entry, named as the module names it ("blocks.0.attention.W_q.weight"), with no prefix, no
// optimizer state and no required metadata. It is the file that, in Python,
//   safetensors.torch.save_file(model.state_dict(), path)   writes and
//   safetensors.torch.load_file(path)                        reads,
// so weights move between qkv and PyTorch through it. Names and shapes match PyTorch's for the
// layers PyTorch also has, except where docs/pytorch.md says otherwise (nn/pytorch.h converts).
//
//   io::save_safetensors("encoder.safetensors", encoder);
//   io::load_safetensors("encoder.safetensors", encoder);      // checks every name and shape
//   nn::StateDict w = io::read_safetensors("encoder.safetensors");
//
// To resume training, use a checkpoint instead (model_io/checkpoint.h): it adds the optimizer, the step
// and the generator, and a checksum.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/tensor_record.h"
#include "nn/module.h"
#include "tensor/index_tensor.h"

namespace qkv::io {

// Writes the module's state_dict, or the named tensors, atomically (io/file.h): on any error the
// file at `path` is left as it was. Tensors of any layout are written in C order. A tensor that
// holds NaN or an infinity is refused (ValueError naming it and the element) before the disk is
// touched, as a checkpoint refuses a diverged state.
void save_safetensors(const std::filesystem::path& path, const nn::Module& module,
                      const std::map<std::string, std::string>& metadata = {});
void save_safetensors(const std::filesystem::path& path, const nn::StateDict& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Every F32 tensor of a safetensors file, as new leaf tensors by name. Throws FormatError naming
// the file for a malformed file (io/safetensors.h lists what is checked) and for a dtype qkv does
// not read, and ValueError for a value that is not finite (a diverged run's weights), unless
// allow_non_finite. I64 tensors are integers, never weights (PyTorch's BatchNorm counts its
// batches in one, num_batches_tracked): they are left out here; read_index_tensors reads them.
nn::StateDict read_safetensors(const std::filesystem::path& path, bool allow_non_finite = false);

// The I64 tensors of a safetensors file (token ids, lengths, PyTorch's integer buffers) by name.
std::map<std::string, IndexTensor> read_index_tensors(const std::filesystem::path& path);

// Reads the file and copies it into the module, checked as read_safetensors checks. A file that
// does not fit throws ValueError listing every missing, unexpected (with strict) and mis-shaped
// key; the module is left as it was. With strict = false, keys on one side only are skipped (an I64
// tensor is always one: no parameter is an integer); shapes must always match. Returns what was
// loaded, missing and unexpected, as PyTorch's load_state_dict does: a non-strict load that matched
// nothing says so by an empty `loaded`.
nn::LoadResult load_safetensors(const std::filesystem::path& path, nn::Module& module, bool strict = true,
                                bool allow_non_finite = false);

// Tensors and the byte-level records the formats read and write.
//
// Records borrow their bytes; TensorRecords keeps a contiguous copy of each tensor alive (the
// tensor itself when it is contiguous already) for as long as its records are used.
class TensorRecords {
 public:
  void add(const std::string& name, const Tensor& t);
  const std::vector<TensorRecord>& records() const { return records_; }

 private:
  std::vector<Tensor> tensors_;
  std::vector<TensorRecord> records_;
};

// A new leaf tensor holding a copy of an F32 record. Throws FormatError, prefixed with `context`,
// for another dtype.
Tensor to_tensor(const TensorRecord& record, const std::string& context);

}  // namespace qkv::io
