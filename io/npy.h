// Single arrays in NumPy's .npy format, so that numpy.load reads what qkv saves and back
// (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
//
//   6 bytes   the magic string "\x93NUMPY"
//   2 bytes   the format version, major then minor: 1.0 (2.0 and 3.0 widen the next field)
//   2 bytes   H, the header length, little-endian (4 bytes in versions 2.0 and 3.0)
//   H bytes   a Python dict literal, padded with spaces and ended by '\n' so that the data starts
//             at a multiple of 64 bytes:  {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3),
//             }
//   the rest  the data, C order
//
// qkv supports the dtypes '<f4' (F32) and '<i8' (I64). It writes version 1.0 (2.0 if the header
// needs more than 65535 bytes) byte for byte as numpy.save does, and reads 1.0, 2.0 and 3.0.
// It reads 'fortran_order': True too (np.save(W.T) writes a transposed view so, with W's bytes):
// such data is reordered on load, so a loaded array is always in C order.
// Reading throws FormatError naming the file and the problem for a truncated file, a bad magic
// string or version, a header that is not such a dict, another dtype (big-endian included),
// a shape that is not a tuple of non-negative integers, and a data size that
// differs from numel · itemsize.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "io/tensor_record.h"

namespace qkv::io {

// Writes the array atomically (io/file.h). Throws ValueError, before touching the disk, for a
// negative dimension or data whose size is not numel · itemsize; qkv::Error if the file system
// fails.
void save_npy(const std::filesystem::path& path, DType dtype, std::span<const int64_t> shape,
              std::span<const std::byte> data);

// A loaded array: its data views a 64-byte-aligned buffer that `storage` owns.
struct NpyArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::shared_ptr<std::byte[]> storage;
  std::span<const std::byte> data;
};

NpyArray load_npy(const std::filesystem::path& path);

}  // namespace qkv::io
