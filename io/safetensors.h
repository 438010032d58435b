// The safetensors format (https://github.com/huggingface/safetensors), readable by the Python
// `safetensors` package and so by PyTorch, at the level of bytes: records in, records out. Weight
// files of Tensors and modules (model_io/weights.h) and checkpoints (model_io/checkpoint.h) are built on it.
//
//   8 bytes     N, the header length, unsigned little-endian
//   N bytes     a UTF-8 JSON object: for each tensor
//                 "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
//               and optionally "__metadata__": {"key": "value", ...} (strings only)
//   the rest    the data buffer: each tensor's bytes, little-endian, C order, at
//               [begin, end) counted from the start of the buffer
//
// qkv writes the header as the reference implementation does: "__metadata__" first (its keys
// sorted), then the tensors by decreasing item size and then by name, so that each tensor's data
// is aligned to its item size; compact JSON padded with spaces to a multiple of 8 bytes.
//
// Reading trusts nothing in the file. It rejects, with a FormatError naming the file and the
// problem: a file under 8 bytes; a header longer than the file or than 100 MB; a header that is
// not valid UTF-8 JSON, has duplicate names or is not an object of objects; entries with missing
// or extra fields; a dtype other than F32 and I64; negative dimensions or element counts that
// overflow; data_offsets that are reversed, out of range or disagree with dtype and shape; tensors
// that overlap or leave holes; bytes after the last tensor; metadata values that are not strings.
// Nothing is allocated before the number that sizes it has been checked against the file size.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/tensor_record.h"

namespace qkv::io {

// Writes `tensors` and `metadata` to `path` atomically (io/file.h): on any error the file at
// `path` is left as it was. Throws ValueError, before touching the disk, for duplicate names, the
// reserved name "__metadata__", a negative dimension, data whose size is not numel · itemsize, or
// names and metadata that are not valid UTF-8; qkv::Error if the file system fails.
void save_safetensors(const std::filesystem::path& path, std::span<const TensorRecord> tensors,
                      const std::map<std::string, std::string>& metadata = {});

// A loaded checkpoint: records whose data views one shared, 64-byte-aligned buffer holding the
// file's data buffer, so a tensor's bytes start at storage + begin. They are aligned to the item
// size whenever begin is a multiple of it, as in every file qkv or the reference writes.
struct LoadedTensors {
  std::vector<TensorRecord> tensors;            // in file order (increasing data offset)
  std::map<std::string, std::string> metadata;  // empty if the file has no "__metadata__"
  std::shared_ptr<std::byte[]> storage;         // owns the bytes every record's data points at

  // The record named `name`, or nullptr.
  const TensorRecord* find(std::string_view name) const;
};

LoadedTensors load_safetensors(const std::filesystem::path& path);

}  // namespace qkv::io
