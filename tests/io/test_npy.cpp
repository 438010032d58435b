// io/npy: .npy files byte for byte as numpy.save writes them, and a reader that rejects every
// malformed file with a message naming the file and the problem. The golden files were produced
// once with NumPy 1.24.2 (io.BytesIO + numpy.save, or numpy.lib.format.write_array for versions
// 2.0 and 3.0) and are written out here literally; the runs of padding spaces are given by count.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/npy.h"
#include "scratch_dir.h"
#include "tensor/error.h"

using namespace std::string_literals;
using qkv::io::DType;
using qkv::io::load_npy;
using qkv::io::save_npy;
using qkv::testing::byte_span;
using qkv::testing::bytes_of;
using qkv::testing::read_file;
using qkv::testing::ScratchDir;
using qkv::testing::values_of;
using qkv::testing::write_file;

namespace {

std::string spaces(std::size_t n) { return std::string(n, ' '); }

// A version 1.0 file around `header` (taken as is: no padding is added) and `data`.
std::string npy_v1(std::string_view header, std::string_view data) {
  std::string s = "\x93NUMPY\x01\x00"s;
  s += static_cast<char>(header.size() & 0xFF);
  s += static_cast<char>(header.size() >> 8);
  return s + std::string(header) + std::string(data);
}

std::string dict(std::string_view descr, std::string_view order, std::string_view shape) {
  return "{'descr': '" + std::string(descr) + "', 'fortran_order': " + std::string(order) +
         ", 'shape': " + std::string(shape) + ", }\n";
}

void check_rejected(std::string_view contents, std::string_view problem) {
  ScratchDir dir;
  const auto path = dir / "bad.npy";
  write_file(path, contents);
  try {
    load_npy(path);
    FAIL("no FormatError for: " << problem);
  } catch (const qkv::FormatError& e) {
    const std::string message = e.what();
    CHECK_MESSAGE(message.find("load_npy: '" + path.string() + "': ") == 0, message);
    CHECK_MESSAGE(message.find(problem) != std::string::npos, message);
  }
}

// numpy.save(f, np.arange(6, dtype='<f4').reshape(2, 3)): header length 0x76 = 118, so that
// 10 + 118 = 128 is a multiple of 64. The dict is 59 characters; 58 spaces follow (20 to let the
// first dimension grow to 21 digits, 38 to align), then '\n'.
const std::string kArange2x3 = "\x93NUMPY\x01\x00\x76\x00"s +
                               "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" + spaces(58) +
                               "\n" +
                               "\0\0\0\0"s
                               "\0\0\x80\x3F"s
                               "\0\0\0\x40"s
                               "\0\0\x40\x40"s
                               "\0\0\x80\x40"s
                               "\0\0\xA0\x40"s;

}  // namespace

TEST_CASE("npy writes the bytes numpy.save writes for a 2x3 float32 array") {
  ScratchDir dir;
  const std::string data = bytes_of(std::vector<float>{0, 1, 2, 3, 4, 5});
  const std::vector<int64_t> shape{2, 3};
  save_npy(dir / "a.npy", DType::F32, shape, byte_span(data));
  CHECK(read_file(dir / "a.npy") == kArange2x3);
}

TEST_CASE("npy writes the bytes numpy.save writes for an int64 scalar and vector") {
  ScratchDir dir;
  // numpy.save(f, np.array(7, dtype='<i8')): a () shape gets no growth padding: 62 spaces.
  const std::string seven = bytes_of(std::vector<int64_t>{7});
  save_npy(dir / "s.npy", DType::I64, {}, byte_span(seven));
  CHECK(read_file(dir / "s.npy") == "\x93NUMPY\x01\x00\x76\x00"s +
                                        "{'descr': '<i8', 'fortran_order': False, 'shape': (), }" +
                                        spaces(62) + "\n" + "\x07\0\0\0\0\0\0\0"s);
  // numpy.save(f, np.array([1, -2, 3], dtype='<i8')): one dimension is written (3,).
  const std::string v = bytes_of(std::vector<int64_t>{1, -2, 3});
  const std::vector<int64_t> shape{3};
  save_npy(dir / "v.npy", DType::I64, shape, byte_span(v));
  CHECK(read_file(dir / "v.npy") == "\x93NUMPY\x01\x00\x76\x00"s +
                                        "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }" +
                                        spaces(60) + "\n" +
                                        "\x01\0\0\0\0\0\0\0"s
                                        "\xFE\xFF\xFF\xFF\xFF\xFF\xFF\xFF"s +
                                        "\x03\0\0\0\0\0\0\0"s);
}

TEST_CASE("npy writes an empty array as numpy.save does") {
  ScratchDir dir;
  const std::vector<int64_t> shape{0};
  save_npy(dir / "e.npy", DType::F32, shape, {});
  CHECK(read_file(dir / "e.npy") == "\x93NUMPY\x01\x00\x76\x00"s +
                                        "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }" +
                                        spaces(60) + "\n");
}

TEST_CASE("npy pads a whole 64 bytes when the header is already aligned as numpy does") {
  // numpy.save(f, np.zeros((0, 0, 0, 100, 100, 100, 100, 100, 100, 100), '<f4')): the dict and
  // its growth padding are 117 bytes, 10 + 117 + 1 = 128 is aligned already, and numpy's
  // pad = 64 - 128 % 64 still adds 64 spaces: header length 182 = 0xB6, file 192 bytes.
  ScratchDir dir;
  const std::vector<int64_t> shape{0, 0, 0, 100, 100, 100, 100, 100, 100, 100};
  save_npy(dir / "z.npy", DType::F32, shape, {});
  CHECK(read_file(dir / "z.npy") ==
        "\x93NUMPY\x01\x00\xB6\x00"s +
            "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 0, 0, 100, 100, 100, 100, "
            "100, 100, 100), }" +
            spaces(20 + 64) + "\n");
}

TEST_CASE("npy reads what numpy writes in versions 1.0 2.0 and 3.0") {
  ScratchDir dir;
  write_file(dir / "a.npy", kArange2x3);
  const qkv::io::NpyArray a = load_npy(dir / "a.npy");
  CHECK(a.dtype == DType::F32);
  CHECK(a.shape == std::vector<int64_t>{2, 3});
  CHECK(values_of<float>(a.data) == std::vector<float>{0, 1, 2, 3, 4, 5});
  // numpy.lib.format.write_array(f, np.array([[1.5, -2.0]], '<f4'), version=(2, 0)) and (3, 0):
  // a 4-byte header length, 0x74 = 116, so that 12 + 116 = 128.
  for (char major : {'\x02', '\x03'}) {
    const std::string file = "\x93NUMPY"s + major + "\x00\x74\x00\x00\x00"s +
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }" + spaces(56) +
                             "\n" +
                             "\0\0\xC0\x3F"s
                             "\0\0\0\xC0"s;
    write_file(dir / "v.npy", file);
    const qkv::io::NpyArray v = load_npy(dir / "v.npy");
    CHECK(v.shape == std::vector<int64_t>{1, 2});
    CHECK(values_of<float>(v.data) == std::vector<float>{1.5f, -2.0f});
  }
}

TEST_CASE("npy round trips F32 and I64 arrays into 64-byte aligned storage") {
  ScratchDir dir;
  const std::string f = bytes_of(std::vector<float>{-1.25f, 3e38f, 0.0f, 1e-40f});
  const std::vector<int64_t> f_shape{2, 1, 2};
  save_npy(dir / "f.npy", DType::F32, f_shape, byte_span(f));
  const auto fa = load_npy(dir / "f.npy");
  CHECK(fa.dtype == DType::F32);
  CHECK(fa.shape == f_shape);
  CHECK(values_of<float>(fa.data) == std::vector<float>{-1.25f, 3e38f, 0.0f, 1e-40f});
  CHECK(fa.data.data() == fa.storage.get());
  CHECK(reinterpret_cast<uintptr_t>(fa.storage.get()) % 64 == 0);

  const std::string i = bytes_of(std::vector<int64_t>{INT64_MIN, INT64_MAX});
  const std::vector<int64_t> i_shape{2};
  save_npy(dir / "i.npy", DType::I64, i_shape, byte_span(i));
  const auto ia = load_npy(dir / "i.npy");
  CHECK(ia.dtype == DType::I64);
  CHECK(values_of<int64_t>(ia.data) == std::vector<int64_t>{INT64_MIN, INT64_MAX});
}

TEST_CASE("npy accepts headers written by hand without padding or trailing comma") {
  ScratchDir dir;
  write_file(dir / "h.npy", npy_v1("{\"shape\": (2,3,), 'fortran_order':False,'descr':'<i8'}",
                                   bytes_of(std::vector<int64_t>{1, 2, 3, 4, 5, 6})));
  const auto a = load_npy(dir / "h.npy");
  CHECK(a.shape == std::vector<int64_t>{2, 3});
  CHECK(values_of<int64_t>(a.data) == std::vector<int64_t>{1, 2, 3, 4, 5, 6});
}

// --- hostile files -------------------------------------------------------------------------------

TEST_CASE("npy rejects a file too short for the header") {
  check_rejected("", "file is 0 bytes, too short for a .npy header");
  check_rejected("\x93NUMPY\x01", "file is 7 bytes, too short");
  check_rejected("\x93NUMPY\x02\x00\x10\x00"s, "file ends inside the header length");
}

TEST_CASE("npy rejects a file without the magic string") {
  check_rejected("PK\x03\x04 this is a zip file"s, "not a .npy file");
}

TEST_CASE("npy rejects unknown format versions") {
  check_rejected("\x93NUMPY\x04\x00\x00\x00\x00\x00"s,
                 "format version 4.0 is not supported (supported: 1.0, 2.0, 3.0)");
  check_rejected("\x93NUMPY\x01\x01\x00\x00"s, "format version 1.1 is not supported");
}

TEST_CASE("npy rejects a header length past the end of the file") {
  check_rejected("\x93NUMPY\x01\x00\xFF\x00{}"s, "header length 255 runs past the end of the file");
}

TEST_CASE("npy rejects an absurd header length without allocating it") {
  check_rejected("\x93NUMPY\x02\x00\xFF\xFF\xFF\xFF{}"s,
                 "header length 4294967295 is over the 1048576-byte limit");
}

TEST_CASE("npy rejects a header that is not a dict") {
  check_rejected(npy_v1("[1, 2]\n", ""),
                 "header at byte 10: expected '{' to start the header dict, found '['");
  check_rejected(npy_v1("{'descr': '<f4'", ""), "expected ',' or '}' after a value, found end of header");
  check_rejected(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (), } x", "\0\0\0\0"s),
                 "expected only spaces and '\\n' after the header dict, found 'x'");
}

TEST_CASE("npy rejects missing unknown and repeated keys") {
  check_rejected(npy_v1("{'descr': '<f4', 'fortran_order': False}\n", ""), "header dict lacks 'shape'");
  check_rejected(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}\n", ""),
                 "expected one of the keys 'descr', 'fortran_order', 'shape'");
  check_rejected(npy_v1("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}\n", ""),
                 "expected each key once");
}

TEST_CASE("npy rejects dtypes other than little-endian float32 and int64") {
  check_rejected(npy_v1(dict("<f8", "False", "(1,)"), std::string(8, '\0')),
                 "dtype '<f8' is not supported (supported: '<f4' float32, '<i8' int64)");
  check_rejected(npy_v1(dict(">f4", "False", "(1,)"), std::string(4, '\0')),
                 "big-endian dtype '>f4' is not supported (supported: '<f4' float32, '<i8' "
                 "int64); save arr.astype('<f4') instead");
  check_rejected(
      npy_v1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }\n", std::string(4, '\0')),
      "structured dtypes are not supported");
}

TEST_CASE("npy reads a transposed matrix that numpy saved in Fortran order as C order") {
  // np.save(W.T) for W = arange(6).reshape(2, 3): shape (3, 2), fortran_order True.
  const qkv::io::NpyArray a =
      load_npy(std::string(QKV_SOURCE_DIR) + "/tests/io/fixtures/fortran_transposed_2x3.npy");
  CHECK(a.dtype == DType::F32);
  CHECK(a.shape == std::vector<int64_t>{3, 2});
  CHECK(values_of<float>(a.data) == std::vector<float>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("npy reads 3-D and 4-D Fortran-order arrays as C order") {
  const std::string fixtures = std::string(QKV_SOURCE_DIR) + "/tests/io/fixtures/";
  // np.asfortranarray(arange(24).reshape(2, 3, 4)): the same values, stored first index fastest.
  const qkv::io::NpyArray a = load_npy(fixtures + "fortran_3d.npy");
  CHECK(a.shape == std::vector<int64_t>{2, 3, 4});
  std::vector<float> arange(24);
  for (int i = 0; i < 24; ++i) arange[i] = static_cast<float>(i);
  CHECK(values_of<float>(a.data) == arange);
  // np.save(arange(120).reshape(2, 3, 4, 5).T): element (i, j, k, l) is l·60 + k·20 + j·5 + i.
  const qkv::io::NpyArray b = load_npy(fixtures + "fortran_transposed_4d_i8.npy");
  CHECK(b.dtype == DType::I64);
  REQUIRE(b.shape == std::vector<int64_t>{5, 4, 3, 2});
  std::vector<int64_t> expected;
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 3; ++k)
        for (int64_t l = 0; l < 2; ++l) expected.push_back(l * 60 + k * 20 + j * 5 + i);
  CHECK(values_of<int64_t>(b.data) == expected);
}

TEST_CASE("npy reads Fortran-order scalars and empty arrays and checks their data size") {
  ScratchDir dir;
  write_file(dir / "s.npy", npy_v1(dict("<f4", "True", "()"), "\0\0\x80\x3F"s));
  CHECK(values_of<float>(load_npy(dir / "s.npy").data) == std::vector<float>{1});
  write_file(dir / "e.npy", npy_v1(dict("<f4", "True", "(0, 3)"), ""));
  CHECK(load_npy(dir / "e.npy").shape == std::vector<int64_t>{0, 3});
  check_rejected(npy_v1(dict("<f4", "True", "(2, 2)"), std::string(12, '\0')), "is it truncated?");
  check_rejected(npy_v1(dict("<f4", "1", "(2, 2)"), std::string(16, '\0')), "expected True or False");
}

TEST_CASE("npy rejects shapes that are not tuples of non-negative integers") {
  check_rejected(npy_v1(dict("<f4", "False", "(3)"), std::string(12, '\0')),
                 "a one-dimensional shape is written (n,)");
  check_rejected(npy_v1(dict("<f4", "False", "[3]"), std::string(12, '\0')),
                 "expected a tuple for the shape, found '['");
  check_rejected(npy_v1(dict("<f4", "False", "(2, -3)"), ""), "expected a non-negative dimension");
  check_rejected(npy_v1(dict("<f4", "False", "(2, 3.0)"), ""),
                 "expected ',' or ')' in the shape tuple, found '.'");
  check_rejected(npy_v1(dict("<f4", "False", "(,)"), ""), "expected an integer dimension");
}

TEST_CASE("npy rejects dimensions and element counts beyond int64") {
  check_rejected(npy_v1(dict("<f4", "False", "(99999999999999999999,)"), ""),
                 "expected a dimension that fits in int64");
  check_rejected(npy_v1(dict("<f4", "False", "(4294967296, 4294967296)"), ""),
                 "shape (4294967296,4294967296) has more elements than int64 can count");
  // Empty, yet with strides of 2^80: no tensor of this shape can be made.
  check_rejected(npy_v1(dict("<f4", "False", "(0, 1099511627776, 1099511627776)"), ""),
                 "shape (0,1099511627776,1099511627776) has more elements than int64 can count");
}

TEST_CASE("npy rejects truncated data") {
  check_rejected(npy_v1(dict("<f4", "False", "(2, 3)"), std::string(20, '\0')),
                 "dtype <f4 and shape (2,3) need 24 bytes of data but the file has 20 (is it "
                 "truncated?)");
  check_rejected(kArange2x3.substr(0, kArange2x3.size() - 1), "need 24 bytes of data but the file has 23");
}

TEST_CASE("npy rejects trailing bytes after the data") {
  check_rejected(kArange2x3 + "junk", "4 trailing bytes after the 24 bytes of data");
}

TEST_CASE("npy save rejects bad arrays and leaves the existing file untouched") {
  ScratchDir dir;
  const auto path = dir / "x.npy";
  write_file(path, "previous");
  const std::string four = bytes_of(std::vector<float>{1, 2, 3, 4});
  const std::vector<int64_t> wrong{2, 3}, negative{-4};
  CHECK_THROWS_WITH_AS(save_npy(path, DType::F32, wrong, byte_span(four)),
                       doctest::Contains("dtype F32 and shape (2,3) need 24 bytes of data, got 16"),
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(save_npy(path, DType::F32, negative, byte_span(four)),
                       doctest::Contains("shape (-4,) has a negative dimension"), qkv::ValueError);
  CHECK(read_file(path) == "previous");
  CHECK(dir.entries() == std::vector<std::string>{"x.npy"});
}

// --- fuzz-ish: damaged copies of a valid file ---------------------------------------------------

TEST_CASE("npy load rejects every truncation of a valid file") {
  ScratchDir dir;
  int accepted = 0;
  for (std::size_t n = 0; n < kArange2x3.size(); ++n) {
    const auto path = dir.new_file(kArange2x3.substr(0, n));
    try {
      load_npy(path);
      ++accepted;
    } catch (const qkv::FormatError&) {
    }
    std::filesystem::remove(path);
  }
  CHECK(accepted == 0);
}

TEST_CASE("npy load survives corrupted header bytes") {
  ScratchDir dir;
  const std::size_t header_end = 128;
  const std::string replacements = "\x00\xFF\x80'\"{}(),:-09 TF\n"s;
  std::vector<std::string> problems;
  for (std::size_t pos = 0; pos < header_end; ++pos) {
    for (char r : replacements) {
      std::string damaged = kArange2x3;
      if (damaged[pos] == r) continue;
      damaged[pos] = r;
      const auto path = dir.new_file(damaged);
      try {
        const auto a = load_npy(path);
        const auto nbytes = qkv::io::checked_nbytes(a.dtype, a.shape);
        if (!nbytes || a.data.size() != static_cast<std::size_t>(*nbytes))
          problems.push_back("byte " + std::to_string(pos) + ": inconsistent array loaded");
      } catch (const qkv::Error&) {
      } catch (const std::exception& e) {
        problems.push_back("byte " + std::to_string(pos) + ": " + e.what());
      }
      std::filesystem::remove(path);
    }
  }
  CHECK_MESSAGE(problems.empty(), (problems.empty() ? "" : problems.front()));
}
