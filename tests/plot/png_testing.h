// Helpers for the io tests that write PNG files: a scratch directory and a reader for the header.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace qkv::testing {

// A fresh directory under the system temp dir, removed with its contents at scope exit. The name
// holds the process id: CTest runs each test case as its own process, in parallel.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("qkv_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What the first chunk of a PNG says (PNG spec, section 11.2.2): the 8-byte signature, then the
// IHDR chunk: length 13, type "IHDR", width and height as big-endian 32-bit integers, bit depth
// and colour type. valid is false if the bytes do not start that way.
struct PngHeader {
  bool valid = false;
  std::uint32_t width = 0, height = 0;
  int bit_depth = 0, color_type = 0;
};

inline PngHeader read_png_header(const std::vector<std::uint8_t>& png) {
  static const std::uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  PngHeader header;
  if (png.size() < 8 + 8 + 13) return header;
  for (int i = 0; i < 8; ++i) {
    if (png[i] != kSignature[i]) return header;
  }
  const auto be32 = [&](std::size_t at) {
    return std::uint32_t{png[at]} << 24 | std::uint32_t{png[at + 1]} << 16 |
           std::uint32_t{png[at + 2]} << 8 | std::uint32_t{png[at + 3]};
  };
  if (be32(8) != 13 || std::string(png.begin() + 12, png.begin() + 16) != "IHDR") return header;
  header.valid = true;
  header.width = be32(16);
  header.height = be32(20);
  header.bit_depth = png[24];
  header.color_type = png[25];
  return header;
}

}  // namespace qkv::testing
