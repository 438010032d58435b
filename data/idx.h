// IDX files: the format of MNIST (LeCun et al., http://yann.lecun.com/exdb/mnist/, "FILE FORMATS")
// and of Fashion-MNIST (Xiao, Rasul & Vollgraf 2017), which ships in it. A file is
//   bytes 0-1   zero
//   byte 2      the element type: 0x08 unsigned byte (the only one read here), 0x09 signed byte,
//               0x0B short, 0x0C int, 0x0D float, 0x0E double
//   byte 3      N, the number of dimensions
//   4 .. 4+4N   N sizes, big-endian 32-bit
//   then        the elements, row-major, exactly prod(sizes) of them
// So an image file is (count, rows, cols) bytes and a label file (count) bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace qkv::data {

struct IdxBytes {
  std::vector<int64_t> shape;
  std::vector<std::uint8_t> values;  // prod(shape) of them, row-major
};

// The unsigned-byte IDX file at `path`. The sizes are checked against the file's length before
// anything is allocated. A file that is not IDX, of another element type, with a size of zero,
// shorter or longer than its header says, throws FormatError naming the file and the byte:
//   "read_idx: 'train-images-idx3-ubyte': truncated: the header (bytes 0-15) promises 60000×28×28
//    bytes of data from byte 16; the file ends at byte 1016"
IdxBytes read_idx(const std::filesystem::path& path);

// The IDX file of `values` in `shape` (unsigned bytes), written atomically: for tests and for a
// user's own images.
void write_idx(const std::filesystem::path& path, const std::vector<int64_t>& shape,
               const std::vector<std::uint8_t>& values);

}  // namespace qkv::data
