#include "io/npy.h"

#include <array>
#include <bit>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/file.h"
#include "tensor/error.h"

namespace qkv::io {

static_assert(std::endian::native == std::endian::little,
              "'<f4' and '<i8' data is little-endian; qkv copies it without swapping bytes");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr uint64_t kAlign = 64;  // numpy.lib.format.ARRAY_ALIGN
// NumPy leaves room for the first dimension to grow to this many digits, so that a file can be
// appended to in place (numpy.lib.format.GROWTH_AXIS_MAX_DIGITS); qkv pads the same way to write
// the same bytes.
constexpr std::size_t kGrowthAxisMaxDigits = 21;
// Real headers are under 200 bytes; numpy.load itself refuses more than 10000 by default.
constexpr uint64_t kMaxHeaderBytes = 1 << 20;

std::string_view descr(DType dtype) { return dtype == DType::F32 ? "<f4" : "<i8"; }

// The dict as numpy writes it: keys sorted, Python reprs, shape as a tuple: (), (3,), (2, 3).
std::string header_dict(DType dtype, std::span<const int64_t> shape) {
  std::string tuple = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) tuple += ", ";
    tuple += std::to_string(shape[i]);
  }
  tuple += shape.size() == 1 ? ",)" : ")";
  std::string dict =
      "{'descr': '" + std::string(descr(dtype)) + "', 'fortran_order': False, 'shape': " + tuple + ", }";
  if (!shape.empty()) dict.append(kGrowthAxisMaxDigits - std::to_string(shape[0]).size(), ' ');
  return dict;
}

// A file truncated or padded wrong must not parse by luck, so the grammar is exactly the subset
// of Python literals numpy writes: a dict of the three keys, strings in quotes without escapes,
// True/False, and a tuple of non-negative integers.
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, uint64_t file_offset, std::string context)
      : text_(text), file_offset_(file_offset), context_(std::move(context)) {}

  Header parse() {
    Header h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    skip_spaces();
    expect('{', "expected '{' to start the header dict");
    while (true) {
      skip_spaces();
      if (peek() == '}') break;
      const std::size_t key_at = pos_;
      const std::string key = parse_string();
      skip_spaces();
      expect(':', "expected ':' after a key");
      skip_spaces();
      bool* seen;
      if (key == "descr") {
        if (peek() == '[') fail("expected a string descr: structured dtypes are not supported");
        h.descr = parse_string();
        seen = &seen_descr;
      } else if (key == "fortran_order") {
        h.fortran_order = parse_bool();
        seen = &seen_order;
      } else if (key == "shape") {
        h.shape = parse_shape();
        seen = &seen_shape;
      } else {
        pos_ = key_at;
        fail("expected one of the keys 'descr', 'fortran_order', 'shape'");
      }
      if (*seen) {
        pos_ = key_at;
        fail("expected each key once");
      }
      *seen = true;
      skip_spaces();
      if (peek() == '}') break;
      expect(',', "expected ',' or '}' after a value");
    }
    ++pos_;  // '}'
    skip_spaces();
    if (pos_ != text_.size()) fail("expected only spaces and '\\n' after the header dict");
    if (!seen_descr || !seen_order || !seen_shape)
      throw FormatError(context_ + "header dict lacks " +
                        (!seen_descr   ? "'descr'"
                         : !seen_order ? "'fortran_order'"
                                       : "'shape'"));
    return h;
  }

 private:
  [[noreturn]] void fail(std::string_view expected) const {
    std::string found = "end of header";
    if (pos_ < text_.size()) {
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      found = c >= 0x20 && c < 0x7F ? "'" + std::string(1, char(c)) + "'" : "byte " + std::to_string(c);
    }
    throw FormatError(context_ + "header at byte " + std::to_string(file_offset_ + pos_) + ": " +
                      std::string(expected) + ", found " + found);
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_spaces() {
    while (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r') ++pos_;
  }

  void expect(char c, std::string_view expected) {
    if (peek() != c) fail(expected);
    ++pos_;
  }

  std::string parse_string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    ++pos_;
    const std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' || text_[pos_] == '\n') fail("expected a plain string");
      ++pos_;
    }
    if (pos_ == text_.size()) fail("expected the string to be closed");
    return std::string(text_.substr(start, pos_++ - start));
  }

  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }

  int64_t parse_dimension() {
    if (peek() == '-') fail("expected a non-negative dimension");
    if (!(peek() >= '0' && peek() <= '9')) fail("expected an integer dimension");
    int64_t d = 0;
    const std::size_t start = pos_;
    while (peek() >= '0' && peek() <= '9') {
      if (__builtin_mul_overflow(d, 10, &d) || __builtin_add_overflow(d, peek() - '0', &d)) {
        pos_ = start;
        fail("expected a dimension that fits in int64");
      }
      ++pos_;
    }
    return d;
  }

  // (), (3,), (2, 3) and (2, 3,). "(3)" is the integer 3 in Python, not a tuple.
  std::vector<int64_t> parse_shape() {
    expect('(', "expected a tuple for the shape");
    std::vector<int64_t> shape;
    bool comma_after_last = false;
    skip_spaces();
    while (peek() != ')') {
      shape.push_back(parse_dimension());
      skip_spaces();
      comma_after_last = peek() == ',';
      if (comma_after_last) {
        ++pos_;
        skip_spaces();
      } else if (peek() != ')') {
        fail("expected ',' or ')' in the shape tuple");
      }
    }
    if (shape.size() == 1 && !comma_after_last)
      fail("expected a tuple: a one-dimensional shape is written (n,)");
    ++pos_;  // ')'
    return shape;
  }

  std::string_view text_;
  uint64_t file_offset_;
  std::string context_;
  std::size_t pos_ = 0;
};

DType dtype_of(const std::string& descr, const std::string& context) {
  if (descr == "<f4") return DType::F32;
  if (descr == "<i8") return DType::I64;
  const std::string supported = " (supported: '<f4' float32, '<i8' int64)";
  if (!descr.empty() && descr[0] == '>')
    throw FormatError(context + "big-endian dtype " + in_quotes(descr) + " is not supported" + supported +
                      "; save arr.astype('<" + descr.substr(1) + "') instead");
  throw FormatError(context + "dtype " + in_quotes(descr) + " is not supported" + supported);
}

// Fortran order stores the first index fastest: element (i0, ..., i[n-1]) sits at item
// i0 + d0·(i1 + d1·(i2 + ...)). np.save(W.T) writes a C-order W's bytes so, with the shape of W.T.
// Walks the C-order positions with an odometer over the indices, moving the Fortran offset along.
std::shared_ptr<std::byte[]> to_c_order(const std::shared_ptr<std::byte[]>& fortran,
                                        const std::vector<int64_t>& shape, std::size_t item) {
  const int64_t n = *checked_numel(shape);
  auto c = allocate_storage(static_cast<std::size_t>(n) * item);
  const std::size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0), stride(rank);  // stride: Fortran strides, in items
  int64_t s = 1;
  for (std::size_t k = 0; k < rank; ++k) {
    stride[k] = s;
    s *= shape[k];
  }
  int64_t from = 0;
  for (int64_t to = 0; to < n; ++to) {
    std::memcpy(c.get() + to * item, fortran.get() + from * item, item);
    for (std::size_t k = rank; k-- > 0;) {  // the last index moves fastest in C order
      from += stride[k];
      if (++index[k] < shape[k]) break;
      from -= stride[k] * shape[k];
      index[k] = 0;
    }
  }
  return c;
}

}  // namespace

void save_npy(const std::filesystem::path& path, DType dtype, std::span<const int64_t> shape,
              std::span<const std::byte> data) {
  const std::string context = "save_npy: '" + path.string() + "': ";
  const std::optional<int64_t> nbytes = checked_nbytes(dtype, shape);
  if (!nbytes)
    throw ValueError(context + "shape " + shape_string(shape) +
                     " has a negative dimension or more elements than int64 can count");
  if (data.size() != static_cast<uint64_t>(*nbytes))
    throw ValueError(context + "dtype " + std::string(dtype_name(dtype)) + " and shape " +
                     shape_string(shape) + " need " + std::to_string(*nbytes) + " bytes of data, got " +
                     std::to_string(data.size()));

  // numpy.lib.format._wrap_header: version 1.0 unless the header needs more than a u16 can
  // count; pad = 64 - (prefix + len + 1) % 64 spaces, then '\n'. Note that the pad is 64, not 0,
  // when the length is already aligned: we write what numpy writes.
  const std::string dict = header_dict(dtype, shape);
  uint8_t major = 1;
  uint64_t prefix = kMagic.size() + 2 + 2;
  uint64_t header_len = dict.size() + 1 + (kAlign - (prefix + dict.size() + 1) % kAlign);
  if (header_len > 0xFFFF) {
    major = 2;
    prefix = kMagic.size() + 2 + 4;
    header_len = dict.size() + 1 + (kAlign - (prefix + dict.size() + 1) % kAlign);
  }
  std::string head(kMagic);
  head += static_cast<char>(major);
  head += '\0';
  for (uint64_t i = 0; i < prefix - kMagic.size() - 2; ++i)
    head += static_cast<char>((header_len >> (8 * i)) & 0xFF);
  head += dict;
  head.append(header_len - dict.size() - 1, ' ');
  head += '\n';

  AtomicFileWriter out("save_npy", path);
  out.write(std::as_bytes(std::span(head)));
  out.write(data);
  out.commit();
}

NpyArray load_npy(const std::filesystem::path& path) {
  const FileReader file("load_npy", path);
  const std::string& context = file.context();
  auto reject = [&](const std::string& problem) { throw FormatError(context + problem); };

  if (file.size() < kMagic.size() + 4)
    reject("file is " + std::to_string(file.size()) + " bytes, too short for a .npy header");
  std::array<std::byte, 12> start{};
  file.read_at(0, std::span(start).first(std::min<uint64_t>(file.size(), start.size())));
  auto byte = [&](std::size_t i) { return std::to_integer<uint8_t>(start[i]); };
  for (std::size_t i = 0; i < kMagic.size(); ++i)
    if (byte(i) != static_cast<uint8_t>(kMagic[i]))
      reject("not a .npy file: it does not start with the magic string \\x93NUMPY");
  const uint8_t major = byte(6), minor = byte(7);
  if (!((major == 1 || major == 2 || major == 3) && minor == 0))
    reject("format version " + std::to_string(major) + "." + std::to_string(minor) +
           " is not supported (supported: 1.0, 2.0, 3.0)");
  const uint64_t length_bytes = major == 1 ? 2 : 4;
  const uint64_t prefix = kMagic.size() + 2 + length_bytes;
  if (file.size() < prefix) reject("file ends inside the header length");
  uint64_t header_len = 0;
  for (uint64_t i = length_bytes; i-- > 0;) header_len = (header_len << 8) | byte(8 + i);
  if (header_len > kMaxHeaderBytes)
    reject("header length " + std::to_string(header_len) + " is over the " + std::to_string(kMaxHeaderBytes) +
           "-byte limit");
  if (header_len > file.size() - prefix)
    reject("header length " + std::to_string(header_len) + " runs past the end of the file (" +
           std::to_string(file.size()) + " bytes; is it truncated?)");

  std::string text(header_len, '\0');
  file.read_at(prefix, std::as_writable_bytes(std::span(text)));
  const Header h = HeaderParser(text, prefix, context).parse();
  const DType dtype = dtype_of(h.descr, context);
  const std::optional<int64_t> nbytes = checked_nbytes(dtype, h.shape);
  if (!nbytes) reject("shape " + shape_string(h.shape) + " has more elements than int64 can count");
  const uint64_t data_start = prefix + header_len;
  const uint64_t available = file.size() - data_start;
  const uint64_t needed = static_cast<uint64_t>(*nbytes);
  if (needed > available)
    reject("dtype " + h.descr + " and shape " + shape_string(h.shape) + " need " + std::to_string(needed) +
           " bytes of data but the file has " + std::to_string(available) + " (is it truncated?)");
  if (needed < available)
    reject(std::to_string(available - needed) + " trailing bytes after the " + std::to_string(needed) +
           " bytes of data");

  NpyArray array{dtype, h.shape, allocate_storage(needed), {}};
  file.read_at(data_start, std::span(array.storage.get(), needed));
  if (h.fortran_order) array.storage = to_c_order(array.storage, h.shape, itemsize(dtype));
  array.data = std::span<const std::byte>(array.storage.get(), needed);
  return array;
}

}  // namespace qkv::io
