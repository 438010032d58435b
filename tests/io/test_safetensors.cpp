// io/safetensors: checkpoints byte for byte as the reference implementation (huggingface/
// safetensors, safetensors/src/tensor.rs) writes them, and a reader that rejects every malformed
// file with a message naming the file and the problem. Golden files are written out literally:
// an 8-byte little-endian header length, the JSON header text, the little-endian data.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "scratch_dir.h"
#include "tensor/error.h"

using namespace std::string_literals;
using qkv::io::DType;
using qkv::io::load_safetensors;
using qkv::io::save_safetensors;
using qkv::io::TensorRecord;
using qkv::testing::byte_span;
using qkv::testing::bytes_of;
using qkv::testing::read_file;
using qkv::testing::ScratchDir;
using qkv::testing::values_of;
using qkv::testing::write_file;

namespace {

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

// A safetensors file from its header text and data bytes; the length prefix is the header's size.
std::string safetensors_file(std::string_view header, std::string_view data) {
  return le64(header.size()) + std::string(header) + std::string(data);
}

// The message of the FormatError that loading `path` throws; fails the test if none is thrown.
std::string load_error(const std::filesystem::path& path) {
  try {
    load_safetensors(path);
  } catch (const qkv::FormatError& e) {
    return e.what();
  }
  FAIL("no FormatError loading " << path);
  return "";
}

// Writes `contents` to a file, loads it, and checks the error names the file and the problem.
void check_rejected(std::string_view contents, std::string_view problem) {
  ScratchDir dir;
  const auto path = dir / "bad.safetensors";
  write_file(path, contents);
  const std::string message = load_error(path);
  CHECK_MESSAGE(message.find("load_safetensors: '" + path.string() + "': ") == 0, message);
  CHECK_MESSAGE(message.find(problem) != std::string::npos, message);
}

// Three tensors given in no particular order, with metadata, as a test checkpoint.
struct MixedCheckpoint {
  std::string w = bytes_of(std::vector<float>{1.5f, -2.0f});
  std::string b = bytes_of(std::vector<float>{0.25f});
  std::string ids = bytes_of(std::vector<int64_t>{1, -1, 256});
  std::vector<TensorRecord> records{
      {"w", DType::F32, {2}, byte_span(w)},
      {"b", DType::F32, {}, byte_span(b)},
      {"ids", DType::I64, {3}, byte_span(ids)},
  };
  std::map<std::string, std::string> metadata{{"format", "pt"}};
};

// MixedCheckpoint as save_safetensors must write it. The I64 tensor comes first (largest item
// size), then the F32 ones by name; offsets follow: ids 3·8 = 24 bytes, b 4, w 2·4 = 8. The
// header below is 197 bytes, padded with 3 spaces to 200 = 0xC8.
const std::string kMixedFile =
    "\xC8\0\0\0\0\0\0\0"s
    R"({"__metadata__":{"format":"pt"},)"
    R"("ids":{"dtype":"I64","shape":[3],"data_offsets":[0,24]},)"
    R"("b":{"dtype":"F32","shape":[],"data_offsets":[24,28]},)"
    R"("w":{"dtype":"F32","shape":[2],"data_offsets":[28,36]}}   )"
    // ids = 1, -1, 256 as int64 little-endian
    "\x01\0\0\0\0\0\0\0"s
    "\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF"s
    "\0\x01\0\0\0\0\0\0"s
    // b = 0.25f = 0x3E800000, w = 1.5f = 0x3FC00000, -2.0f = 0xC0000000
    "\0\0\x80\x3E"s
    "\0\0\xC0\x3F"s
    "\0\0\0\xC0"s;

}  // namespace

// --- writing: exact bytes ---------------------------------------------------------------------

TEST_CASE("safetensors writes the same bytes as the reference implementation for one tensor") {
  // The expected bytes are those of test_serialization in the reference implementation's
  // safetensors/src/tensor.rs: "attn.0", F32, shape (1,2,3), values 0..5. The header happens to
  // be exactly 64 = 0x40 bytes, so it needs no padding.
  const std::string data = bytes_of(std::vector<float>{0, 1, 2, 3, 4, 5});
  const std::vector<TensorRecord> records{{"attn.0", DType::F32, {1, 2, 3}, byte_span(data)}};
  ScratchDir dir;
  save_safetensors(dir / "a.safetensors", records);
  const std::string expected =
      "\x40\0\0\0\0\0\0\0"s
      R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})"
      "\0\0\0\0"s
      "\0\0\x80\x3F"s
      "\0\0\0\x40"s
      "\0\0\x40\x40"s
      "\0\0\x80\x40"s
      "\0\0\xA0\x40"s;
  CHECK(read_file(dir / "a.safetensors") == expected);
}

TEST_CASE("safetensors writes tensors by item size then name with an 8-byte aligned header") {
  MixedCheckpoint c;
  ScratchDir dir;
  save_safetensors(dir / "m.safetensors", c.records, c.metadata);
  CHECK(read_file(dir / "m.safetensors") == kMixedFile);
}

TEST_CASE("safetensors writes an empty checkpoint as the reference implementation does") {
  // test_empty in the reference's tensor.rs: "{}" padded to 8, and with {"framework": "pt"}.
  ScratchDir dir;
  save_safetensors(dir / "e.safetensors", {});
  CHECK(read_file(dir / "e.safetensors") == "\x08\0\0\0\0\0\0\0{}      "s);
  save_safetensors(dir / "m.safetensors", {}, {{"framework", "pt"}});
  CHECK(read_file(dir / "m.safetensors") ==
        "\x28\0\0\0\0\0\0\0"s
        R"({"__metadata__":{"framework":"pt"}}     )");
}

// --- reading -------------------------------------------------------------------------------------

TEST_CASE("safetensors round trips F32 and I64 tensors with metadata") {
  MixedCheckpoint c;
  ScratchDir dir;
  save_safetensors(dir / "m.safetensors", c.records, c.metadata);
  const qkv::io::LoadedTensors loaded = load_safetensors(dir / "m.safetensors");
  CHECK(loaded.metadata == c.metadata);
  REQUIRE(loaded.tensors.size() == 3);
  CHECK(loaded.tensors[0].name == "ids");  // file order
  CHECK(loaded.tensors[1].name == "b");
  CHECK(loaded.tensors[2].name == "w");
  const TensorRecord* ids = loaded.find("ids");
  REQUIRE(ids != nullptr);
  CHECK(ids->dtype == DType::I64);
  CHECK(ids->shape == std::vector<int64_t>{3});
  CHECK(values_of<int64_t>(ids->data) == std::vector<int64_t>{1, -1, 256});
  const TensorRecord* w = loaded.find("w");
  REQUIRE(w != nullptr);
  CHECK(w->dtype == DType::F32);
  CHECK(w->shape == std::vector<int64_t>{2});
  CHECK(values_of<float>(w->data) == std::vector<float>{1.5f, -2.0f});
  const TensorRecord* b = loaded.find("b");
  REQUIRE(b != nullptr);
  CHECK(b->shape.empty());
  CHECK(values_of<float>(b->data) == std::vector<float>{0.25f});
  CHECK(loaded.find("missing") == nullptr);
}

TEST_CASE("safetensors round trips empty tensors and names with any characters") {
  const std::string one = bytes_of(std::vector<float>{7});
  const std::vector<TensorRecord> records{
      {"encoder.blocks.0.attn.W_q.weight", DType::F32, {0, 3}, {}},
      {"\xC3\xA9t\xC3\xA9 \"quoted\"\n", DType::F32, {1, 1}, byte_span(one)},
      {"", DType::I64, {0}, {}},
  };
  ScratchDir dir;
  save_safetensors(dir / "x.safetensors", records, {{"note", "line\nbreak \xE2\x82\xAC"}});
  const auto loaded = load_safetensors(dir / "x.safetensors");
  REQUIRE(loaded.tensors.size() == 3);
  CHECK(loaded.metadata.at("note") == "line\nbreak \xE2\x82\xAC");
  for (const TensorRecord& r : records) {
    const TensorRecord* t = loaded.find(r.name);
    REQUIRE(t != nullptr);
    CHECK(t->dtype == r.dtype);
    CHECK(t->shape == r.shape);
    CHECK(t->data.size() == r.data.size());
  }
  CHECK(values_of<float>(loaded.find("\xC3\xA9t\xC3\xA9 \"quoted\"\n")->data) ==
        std::vector<float>{7});
}

TEST_CASE("safetensors loaded data views one 64-byte aligned buffer") {
  MixedCheckpoint c;
  ScratchDir dir;
  save_safetensors(dir / "m.safetensors", c.records, c.metadata);
  const auto loaded = load_safetensors(dir / "m.safetensors");
  const std::byte* base = loaded.storage.get();
  CHECK(reinterpret_cast<uintptr_t>(base) % 64 == 0);
  // Each tensor sits at storage + its data offset: ids at 0, b at 24, w at 28.
  CHECK(loaded.find("ids")->data.data() == base);
  CHECK(loaded.find("b")->data.data() == base + 24);
  CHECK(loaded.find("w")->data.data() == base + 28);
}

TEST_CASE("safetensors reads headers in any order with whitespace and without padding") {
  // Entries need not be sorted by name or offset, and the header need not be padded.
  const std::string header =
      "{\n  \"b\": {\"data_offsets\": [4, 8], \"shape\": [1], \"dtype\": \"F32\"},\n"
      "  \"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}\n}";
  const std::string data = bytes_of(std::vector<float>{10, 20});
  ScratchDir dir;
  write_file(dir / "h.safetensors", safetensors_file(header, data));
  const auto loaded = load_safetensors(dir / "h.safetensors");
  REQUIRE(loaded.tensors.size() == 2);
  CHECK(loaded.tensors[0].name == "a");
  CHECK(values_of<float>(loaded.tensors[0].data) == std::vector<float>{10});
  CHECK(loaded.tensors[1].name == "b");
  CHECK(values_of<float>(loaded.tensors[1].data) == std::vector<float>{20});
  CHECK(loaded.metadata.empty());
}

// --- reading: hostile files, one test per problem ---------------------------------------------

TEST_CASE("safetensors rejects a file shorter than the 8-byte header length") {
  check_rejected("", "file is 0 bytes, too short for the 8-byte header length");
  check_rejected("\x02\0\0\0\0"s, "file is 5 bytes, too short");
}

TEST_CASE("safetensors rejects a header length past the end of the file") {
  check_rejected(le64(100) + "{}", "header length 100 runs past the end of the file");
}

TEST_CASE("safetensors rejects an absurd header length without allocating it") {
  check_rejected(le64(100'000'001) + "{}",
                 "header length 100000001 is over the 100000000-byte limit");
  check_rejected(le64(UINT64_MAX) + "{}", "is over the 100000000-byte limit");
}

TEST_CASE("safetensors rejects a header that is not UTF-8") {
  check_rejected(safetensors_file("{\"w\xFF\":{}}", ""), "expected valid UTF-8");
}

TEST_CASE("safetensors rejects a header that is not valid JSON") {
  check_rejected(
      safetensors_file(R"({"w":{"dtype":"F32",)", ""),
      "invalid header: JSON: at byte 20: expected '\"' to start an object key, found end of input");
  check_rejected(safetensors_file("\0\0\0\0\0\0\0\0"s, ""),
                 "invalid header: JSON: at byte 0: expected a value, found byte 0x00");
}

TEST_CASE("safetensors rejects a header that is not an object") {
  check_rejected(safetensors_file("[1, 2]", ""), "header must be a JSON object, found array");
}

TEST_CASE("safetensors rejects an entry that is not an object") {
  check_rejected(safetensors_file(R"({"w": 3})", ""),
                 "tensor 'w' must be an object with dtype, shape and data_offsets, found integer");
}

TEST_CASE("safetensors rejects an entry with a missing field") {
  check_rejected(safetensors_file(R"({"w":{"dtype":"F32","data_offsets":[0,0]}})", ""),
                 "tensor 'w' has no shape field");
}

TEST_CASE("safetensors rejects an entry with an extra field") {
  check_rejected(safetensors_file(R"({"w":{"dtype":"F32","shape":[],"data_offsets":[0,4],"x":1}})",
                                  "\0\0\0\0"s),
                 "tensor 'w' has an unexpected field 'x' (expected dtype, shape, data_offsets)");
}

TEST_CASE("safetensors rejects dtypes other than F32 and I64 listing the supported ones") {
  check_rejected(
      safetensors_file(R"({"w":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", "\0\0"s),
      "tensor 'w': dtype 'F16' is not supported by qkv (supported: F32, I64)");
  check_rejected(
      safetensors_file(R"({"w":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}})", "\0"s),
      "dtype 'Q7' is not a safetensors dtype (supported: F32, I64)");
  check_rejected(
      safetensors_file(R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", "\0\0\0\0"s),
      "tensor 'w': dtype must be a string, found integer");
}

TEST_CASE("safetensors rejects a negative dimension") {
  check_rejected(
      safetensors_file(R"({"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,0]}})", ""),
      "tensor 'w': shape (2,-1) has a negative dimension");
}

TEST_CASE("safetensors rejects a shape that is not a list of integers") {
  check_rejected(safetensors_file(R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})",
                                  std::string(8, '\0')),
                 "tensor 'w': shape must be an array of integers, found an element of kind number");
  check_rejected(safetensors_file(R"({"w":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})",
                                  std::string(8, '\0')),
                 "shape must be an array of integers, found string");
}

TEST_CASE("safetensors rejects shapes whose element or byte count overflows int64") {
  // 2^32 · 2^32 = 2^64 elements overflow even though the final 0 would make the product 0.
  check_rejected(
      safetensors_file(
          R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}})", ""),
      "tensor 'w': shape (4294967296,4294967296,0) has more elements than int64 can count");
  // No element at all, but strides of 2^80: an empty tensor of this shape cannot be made either.
  check_rejected(
      safetensors_file(
          R"({"w":{"dtype":"F32","shape":[0,1099511627776,1099511627776],"data_offsets":[0,0]}})", ""),
      "has more elements than int64 can count");
  // 2^62 elements fit, but 2^62 · 4 bytes do not.
  check_rejected(
      safetensors_file(
          R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", ""),
      "has more elements than int64 can count");
}

TEST_CASE("safetensors rejects an absurd dimension that disagrees with the offsets") {
  check_rejected(
      safetensors_file(R"({"w":{"dtype":"F32","shape":[1000000000000],"data_offsets":[0,4]}})",
                       "\0\0\0\0"s),
      "hold 4 bytes but dtype F32 and shape (1000000000000,) need 4000000000000");
}

TEST_CASE("safetensors rejects data_offsets that are not a pair of non-negative integers") {
  const std::string problem =
      "tensor 'w': data_offsets must be [begin, end], two non-negative integers";
  check_rejected(
      safetensors_file(R"({"w":{"dtype":"F32","shape":[],"data_offsets":[4]}})", "\0\0\0\0"s),
      problem);
  check_rejected(
      safetensors_file(R"({"w":{"dtype":"F32","shape":[],"data_offsets":[-4,0]}})", "\0\0\0\0"s),
      problem);
  check_rejected(
      safetensors_file(R"({"w":{"dtype":"F32","shape":[],"data_offsets":"0,4"}})", "\0\0\0\0"s),
      problem);
}

TEST_CASE("safetensors rejects offsets beyond int64") {
  check_rejected(safetensors_file(
                     R"({"w":{"dtype":"F32","shape":[],"data_offsets":[0,99999999999999999999]}})",
                     "\0\0\0\0"s),
                 "expected an integer in int64 range");
}

TEST_CASE("safetensors rejects data_offsets that end before they begin") {
  check_rejected(
      safetensors_file(R"({"w":{"dtype":"F32","shape":[],"data_offsets":[4,0]}})", "\0\0\0\0"s),
      "tensor 'w': data_offsets [4, 0] end before they begin");
}

TEST_CASE("safetensors rejects a size that differs from numel times itemsize") {
  check_rejected(
      safetensors_file(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})",
                       std::string(20, '\0')),
      "tensor 'w': data_offsets [0, 20] hold 20 bytes but dtype F32 and shape (2,3) need 24");
}

TEST_CASE("safetensors rejects data_offsets past the end of the data") {
  check_rejected(safetensors_file(R"({"w":{"dtype":"I64","shape":[4],"data_offsets":[0,32]}})",
                                  std::string(16, '\0')),
                 "tensor 'w': data_offsets [0, 32] run past the end of the data buffer, which "
                 "holds 16 bytes (is the file truncated?)");
}

TEST_CASE("safetensors rejects overlapping tensors") {
  check_rejected(safetensors_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                  std::string(12, '\0')),
                 "tensors 'a' [0, 8] and 'b' [4, 12] overlap");
  // Two tensors sharing the same bytes are an overlap too.
  check_rejected(safetensors_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                  std::string(8, '\0')),
                 "overlap");
}

TEST_CASE("safetensors rejects holes between tensors") {
  check_rejected(safetensors_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                  R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                  std::string(12, '\0')),
                 "no tensor covers bytes [4, 8) of the data buffer between tensors 'a' and 'b'");
  check_rejected(safetensors_file(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                  std::string(8, '\0')),
                 "no tensor covers bytes [0, 4) of the data buffer before tensor 'b'");
}

TEST_CASE("safetensors rejects trailing bytes after the last tensor") {
  check_rejected(safetensors_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                  std::string(7, '\0')),
                 "3 trailing bytes: the data buffer holds 7 bytes but the tensors cover 4");
  check_rejected(safetensors_file("{}", "x"), "1 trailing bytes");
}

TEST_CASE("safetensors rejects metadata that is not an object of strings") {
  check_rejected(safetensors_file(R"({"__metadata__":{"epoch":3}})", ""),
                 "__metadata__ value of 'epoch' must be a string, found integer");
  check_rejected(safetensors_file(R"({"__metadata__":["a"]})", ""),
                 "__metadata__ must be an object of strings, found array");
}

TEST_CASE("safetensors rejects duplicate tensor names") {
  check_rejected(safetensors_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                  R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                  std::string(8, '\0')),
                 "duplicate key 'w'");
}

TEST_CASE("safetensors rejects deeply nested headers without overflowing the stack") {
  const std::string header = R"({"__metadata__":{"x":)" + std::string(100'000, '[') + "}}";
  check_rejected(safetensors_file(header, ""), "nested more than 128 deep");
}

TEST_CASE("safetensors reports a missing file or a directory as qkv::Error") {
  ScratchDir dir;
  try {
    load_safetensors(dir / "none.safetensors");
    FAIL("no throw");
  } catch (const qkv::Error& e) {
    CHECK(std::string(e.what()).find("none.safetensors': cannot open: No such file") !=
          std::string::npos);
  }
  CHECK_THROWS_WITH_AS(load_safetensors(dir.path()), doctest::Contains("not a regular file"),
                       qkv::Error);
}

// --- writing: bad input, failures -------------------------------------------------------------

TEST_CASE("safetensors save rejects bad records before touching the disk") {
  ScratchDir dir;
  const auto path = dir / "out.safetensors";
  const std::string four = bytes_of(std::vector<float>{1, 2, 3, 4});
  auto save_error = [&](std::vector<TensorRecord> records) -> std::string {
    try {
      save_safetensors(path, records);
    } catch (const qkv::ValueError& e) {
      return e.what();
    }
    return "no ValueError";
  };
  CHECK(save_error({{"w", DType::F32, {2, 3}, byte_span(four)}}) ==
        "save_safetensors: '" + path.string() +
            "': tensor 'w': dtype F32 and shape (2,3) need 24 bytes of data, got 16");
  CHECK(
      save_error({{"w", DType::F32, {4}, byte_span(four)}, {"w", DType::I64, {2}, byte_span(four)}})
          .find("two tensors are named 'w'") != std::string::npos);
  CHECK(save_error({{"__metadata__", DType::F32, {4}, byte_span(four)}})
            .find("'__metadata__' is reserved") != std::string::npos);
  CHECK(save_error({{"w", DType::F32, {-4}, byte_span(four)}})
            .find("shape (-4,) has a negative dimension") != std::string::npos);
  CHECK(save_error({{"w\xFF", DType::F32, {4}, byte_span(four)}}).find("name is not valid UTF-8") !=
        std::string::npos);
  CHECK_THROWS_AS(save_safetensors(path, {}, {{"k", "\xC0"}}), qkv::ValueError);
  CHECK(dir.entries().empty());
}

TEST_CASE("safetensors save replaces an existing file and leaves no temporary file") {
  MixedCheckpoint c;
  ScratchDir dir;
  write_file(dir / "m.safetensors", "old contents");
  save_safetensors(dir / "m.safetensors", c.records, c.metadata);
  CHECK(read_file(dir / "m.safetensors") == kMixedFile);
  CHECK(dir.entries() == std::vector<std::string>{"m.safetensors"});
}

namespace {
// Caps the size of files this process may write (RLIMIT_FSIZE), so that write() fails with EFBIG
// partway through a checkpoint: the closest a test gets to a full disk. SIGXFSZ, which would kill
// the process, is ignored meanwhile.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_;
  sighandler_t old_handler_;
};
}  // namespace

TEST_CASE("safetensors save that fails midway leaves the existing file untouched") {
  ScratchDir dir;
  const auto path = dir / "model.safetensors";
  write_file(path, "the previous checkpoint");
  const std::string big(1 << 16, '\x7F');
  const std::vector<TensorRecord> records{{"w", DType::F32, {1 << 14}, byte_span(big)}};
  {
    FileSizeLimit limit(4096);
    const std::string expected = "cannot write '" + path.string() + "': File too large";
    CHECK_THROWS_WITH_AS(save_safetensors(path, records), doctest::Contains(expected.c_str()),
                         qkv::Error);
  }
  CHECK(read_file(path) == "the previous checkpoint");
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});
}

TEST_CASE("safetensors save into a missing directory names the path") {
  ScratchDir dir;
  CHECK_THROWS_WITH_AS(save_safetensors(dir / "no" / "m.safetensors", {}),
                       doctest::Contains("No such file or directory"), qkv::Error);
}

// --- fuzz-ish: damaged copies of a valid file ---------------------------------------------------

namespace {
// Loads `contents`. A rejection must be a qkv::Error, and a file that loads must be consistent;
// `problem` says what went wrong otherwise (a crash fails the whole run).
struct Outcome {
  bool rejected = false;
  std::string problem;
};

Outcome try_load(const std::filesystem::path& path, std::size_t file_size) {
  try {
    const auto loaded = load_safetensors(path);
    std::size_t covered = 0;
    for (const TensorRecord& t : loaded.tensors) {
      if (t.data.size() != static_cast<std::size_t>(*qkv::io::checked_nbytes(t.dtype, t.shape)))
        return {false, "loaded a record whose size disagrees with its shape"};
      covered += t.data.size();
    }
    if (8 + covered > file_size) return {false, "loaded more bytes than the file holds"};
  } catch (const qkv::Error&) {
    return {true, ""};
  } catch (const std::exception& e) {
    return {true, std::string("threw a non-qkv exception: ") + e.what()};
  }
  return {};
}

Outcome load_outcome(ScratchDir& dir, const std::string& contents) {
  const auto path = dir.new_file(contents);
  const Outcome outcome = try_load(path, contents.size());
  std::filesystem::remove(path);
  return outcome;
}
}  // namespace

TEST_CASE("safetensors load rejects every truncation of a valid file") {
  ScratchDir dir;
  int accepted = 0;
  for (std::size_t n = 0; n < kMixedFile.size(); ++n) {
    const auto path = dir.new_file(kMixedFile.substr(0, n));
    try {
      load_safetensors(path);
      ++accepted;
    } catch (const qkv::FormatError&) {
    }
    std::filesystem::remove(path);
  }
  CHECK(accepted == 0);
  CHECK(load_safetensors(dir.new_file(kMixedFile)).tensors.size() == 3);
}

TEST_CASE("safetensors load survives corrupted header bytes") {
  ScratchDir dir;
  const std::size_t header_end = 8 + 200;
  std::vector<std::string> problems;
  int rejected = 0;
  const std::string replacements = "\x00\xFF\x80\"{}[],:-09e. \\"s;
  for (std::size_t pos = 0; pos < header_end; ++pos) {
    for (char r : replacements) {
      std::string damaged = kMixedFile;
      if (damaged[pos] == r) continue;
      damaged[pos] = r;
      const Outcome outcome = load_outcome(dir, damaged);
      if (!outcome.problem.empty())
        problems.push_back("byte " + std::to_string(pos) + ": " + outcome.problem);
      rejected += outcome.rejected;
    }
  }
  // Flipping single bits of the length prefix must be rejected too (a too long or too short
  // header never parses as this file).
  for (std::size_t bit = 0; bit < 64; ++bit) {
    std::string damaged = kMixedFile;
    damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
    const Outcome outcome = load_outcome(dir, damaged);
    if (!outcome.problem.empty())
      problems.push_back("length bit " + std::to_string(bit) + ": " + outcome.problem);
    CHECK(outcome.rejected);
  }
  CHECK_MESSAGE(problems.empty(), (problems.empty() ? "" : problems.front()));
  CHECK(rejected > 0);
}
