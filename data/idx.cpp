#include "data/idx.h"

#include <algorithm>
#include <cstddef>
#include <span>

#include "io/file.h"
#include "tensor/error.h"

namespace qkv::data {
namespace {

std::string type_name(std::uint8_t code) {
  switch (code) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "short";
    case 0x0C: return "int";
    case 0x0D: return "float";
    case 0x0E: return "double";
    default: return "no IDX type";
  }
}

std::string hex(std::uint8_t b) {
  const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

}  // namespace

IdxBytes read_idx(const std::filesystem::path& path) {
  const io::FileReader file("read_idx", path);
  const auto fail = [&](const std::string& what) { throw FormatError(file.context() + what); };
  std::uint8_t magic[4] = {};
  if (file.size() < 4)
    fail("not an IDX file: " + std::to_string(file.size()) + " bytes, fewer than the 4 of the magic number");
  file.read_at(0, std::as_writable_bytes(std::span(magic)));
  if (magic[0] != 0 || magic[1] != 0)
    fail("not an IDX file: bytes 0-1 are " + hex(magic[0]) + " " + hex(magic[1]) + "; expected 0x00 0x00");
  if (magic[2] != 0x08)
    fail("byte 2: element type " + hex(magic[2]) + " (" + type_name(magic[2]) +
         "); only 0x08 (unsigned byte) is read");
  const int dims = magic[3];
  if (dims == 0) fail("byte 3: 0 dimensions; expected at least 1");
  const std::uint64_t header = 4 + 4 * static_cast<std::uint64_t>(dims);
  if (file.size() < header)
    fail("truncated: byte 3 says " + std::to_string(dims) + " dimensions, whose sizes need bytes 4-" +
         std::to_string(header - 1) + "; the file ends at byte " + std::to_string(file.size()));
  std::vector<std::uint8_t> sizes(4 * dims);
  file.read_at(4, std::as_writable_bytes(std::span(sizes)));
  IdxBytes idx;
  std::uint64_t count = 1;
  std::string shape_text;
  for (int d = 0; d < dims; ++d) {
    const std::uint8_t* b = &sizes[4 * d];
    const std::uint64_t n = (std::uint64_t{b[0]} << 24) | (std::uint64_t{b[1]} << 16) | (std::uint64_t{b[2]} << 8) | b[3];
    if (n == 0) fail("bytes " + std::to_string(4 + 4 * d) + "-" + std::to_string(7 + 4 * d) + ": size of dimension " +
                     std::to_string(d) + " is 0");
    // Past the file's length the exact product no longer matters (and could overflow): it is too many.
    count = n > (file.size() + 1) / count ? file.size() + 1 : count * n;
    idx.shape.push_back(static_cast<int64_t>(n));
    shape_text += (d ? "×" : "") + std::to_string(n);
  }
  const std::uint64_t promised = count;
  if (file.size() - header != promised) {
    const bool shorter = file.size() - header < promised;
    fail(std::string(shorter ? "truncated" : "trailing bytes") + ": the header (bytes 0-" + std::to_string(header - 1) +
         ") promises " + shape_text + " bytes of data from byte " + std::to_string(header) + "; the file ends at byte " +
         std::to_string(file.size()) + (shorter ? "" : ", " + std::to_string(file.size() - header - promised) + " bytes later"));
  }
  idx.values.resize(promised);
  file.read_at(header, std::as_writable_bytes(std::span(idx.values)));
  return idx;
}

void write_idx(const std::filesystem::path& path, const std::vector<int64_t>& shape,
               const std::vector<std::uint8_t>& values) {
  if (shape.empty() || shape.size() > 255) throw ValueError("write_idx: " + std::to_string(shape.size()) + " dimensions; expected 1 to 255");
  std::vector<std::uint8_t> bytes = {0, 0, 0x08, static_cast<std::uint8_t>(shape.size())};
  uint64_t count = 1;
  for (int64_t n : shape) {
    if (n <= 0 || n > 0xffffffffLL) throw ValueError("write_idx: size " + std::to_string(n) + "; expected 1 to 2^32 - 1");
    for (int s = 24; s >= 0; s -= 8) bytes.push_back(static_cast<std::uint8_t>(n >> s));
    if (static_cast<uint64_t>(n) > values.size() / std::max<uint64_t>(count, 1) + 1)
      throw ShapeError("write_idx: " + std::to_string(values.size()) + " values for a larger shape");
    count *= static_cast<uint64_t>(n);
  }
  if (count != values.size())
    throw ShapeError("write_idx: " + std::to_string(values.size()) + " values for a shape of " + std::to_string(count));
  bytes.insert(bytes.end(), values.begin(), values.end());
  io::AtomicFileWriter out("write_idx", path);
  out.write(std::as_bytes(std::span(bytes)));
  out.commit();
}

}  // namespace qkv::data
