// Helpers for the file-format tests: a private directory per test, and whole-file bytes in and out.
#pragma once

#include <stdlib.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::testing {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A fresh directory under the system temp directory, removed with its contents at scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "qkv-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

  // Writes `contents` to a file of a new name and returns its path. The fuzz tests write
  // thousands of files this way: rewriting one file in place would make ext4 flush it to disk at
  // every close (its auto_da_alloc heuristic), which is slow on a busy disk.
  std::filesystem::path new_file(std::string_view contents) {
    const auto path = path_ / ("file" + std::to_string(files_++));
    write_file(path, contents);
    return path;
  }

  // The names in the directory, to check that no temporary file was left behind.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_))
      names.push_back(e.path().filename().string());
    return names;
  }

 private:
  std::filesystem::path path_;
  int files_ = 0;
};

// The bytes of `values` as they sit in memory (little-endian on every machine qkv supports).
template <typename T>
std::string bytes_of(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  if (!s.empty()) std::memcpy(s.data(), values.data(), s.size());
  return s;
}

template <typename T>
std::vector<T> values_of(std::span<const std::byte> bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

inline std::span<const std::byte> byte_span(std::string_view s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

}  // namespace qkv::testing
