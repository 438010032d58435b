// Tensor and IndexTensor in .npy files (the format is in io/npy.h), one array per file:
//   io::save_npy("logits.npy", logits);          // numpy.load gives a float32 array
//   Tensor back = io::load_npy_tensor("logits.npy");
// A Tensor is stored as '<f4', an IndexTensor as '<i8'. Loading checks the dtype: a file of the
// other type, like any malformed file, throws FormatError naming the file.
#pragma once

#include <filesystem>

#include "tensor/index_tensor.h"
#include "tensor/tensor.h"

namespace qkv::io {

void save_npy(const std::filesystem::path& path, const Tensor& t);  // any layout: written in C order
void save_npy(const std::filesystem::path& path, const IndexTensor& t);

Tensor load_npy_tensor(const std::filesystem::path& path);       // a new contiguous leaf
IndexTensor load_npy_index(const std::filesystem::path& path);

}  // namespace qkv::io
