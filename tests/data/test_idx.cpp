// data/idx.h: IDX files are read exactly as their header says, and any file that is not is
// refused whole with the file and the byte named.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "data/idx.h"
#include "io/scratch_dir.h"
#include "tensor/error.h"

using qkv::testing::ScratchDir;
using qkv::testing::read_file;
using qkv::testing::write_file;

namespace {

std::string error_of(const std::filesystem::path& path) {
  try {
    qkv::data::read_idx(path);
  } catch (const qkv::FormatError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("read_idx reads back what write_idx wrote: shape and bytes") {
  ScratchDir dir;
  const std::vector<std::uint8_t> values = {0, 1, 2, 253, 254, 255};
  qkv::data::write_idx(dir.path() / "x", {3, 1, 2}, values);
  const std::string bytes = read_file(dir.path() / "x");
  // The header of MNIST's format: two zero bytes, type 0x08, 3 dimensions, then big-endian sizes.
  CHECK(bytes.substr(0, 4) == std::string("\0\0\x08\x03", 4));
  CHECK(bytes.substr(4, 12) == std::string("\0\0\0\x03\0\0\0\x01\0\0\0\x02", 12));
  const qkv::data::IdxBytes idx = qkv::data::read_idx(dir.path() / "x");
  CHECK(idx.shape == std::vector<int64_t>{3, 1, 2});
  CHECK(idx.values == values);
}

TEST_CASE("read_idx refuses truncated files and trailing bytes naming the file and the bytes") {
  ScratchDir dir;
  qkv::data::write_idx(dir.path() / "images", {10, 4, 4}, std::vector<std::uint8_t>(160, 7));
  const std::string whole = read_file(dir.path() / "images");
  write_file(dir.path() / "short", whole.substr(0, whole.size() - 1));
  const std::string truncated = error_of(dir.path() / "short");
  CHECK(truncated.find("short") != std::string::npos);
  CHECK(truncated.find("truncated") != std::string::npos);
  CHECK(truncated.find("10×4×4 bytes of data from byte 16") != std::string::npos);
  CHECK(truncated.find("ends at byte 175") != std::string::npos);
  write_file(dir.path() / "long", whole + "xyz");
  CHECK(error_of(dir.path() / "long").find("trailing bytes") != std::string::npos);
  write_file(dir.path() / "header", whole.substr(0, 9));
  CHECK(error_of(dir.path() / "header").find("byte 3 says 3 dimensions, whose sizes need bytes 4-15") != std::string::npos);
}

TEST_CASE("read_idx refuses a file that is not unsigned-byte IDX: magic, element type, zero sizes") {
  ScratchDir dir;
  write_file(dir.path() / "png", std::string("\x89PNG\r\n\x1a\n", 8));
  CHECK(error_of(dir.path() / "png").find("not an IDX file: bytes 0-1 are 0x89 0x50") != std::string::npos);
  write_file(dir.path() / "floats", std::string("\0\0\x0d\x01\0\0\0\x01\0\0\0\0", 12));
  CHECK(error_of(dir.path() / "floats").find("byte 2: element type 0x0d (float)") != std::string::npos);
  write_file(dir.path() / "empty", std::string("\0\0\x08\x02\0\0\0\x00\0\0\0\x05", 12));
  CHECK(error_of(dir.path() / "empty").find("size of dimension 0 is 0") != std::string::npos);
  write_file(dir.path() / "tiny", std::string("\0\0", 2));
  CHECK(error_of(dir.path() / "tiny").find("fewer than the 4 of the magic number") != std::string::npos);
  // Sizes whose product overflows 64 bits are too many for any file, not a wrapped small number.
  write_file(dir.path() / "huge", std::string("\0\0\x08\x03\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 16));
  CHECK(error_of(dir.path() / "huge").find("truncated") != std::string::npos);
}
