#include "io/safetensors.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <numeric>
#include <set>

#include "io/file.h"
#include "io/json.h"
#include "tensor/error.h"

namespace qkv::io {

// Records hold tensor bytes as they sit in memory, which is the file's byte order only here.
static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; qkv copies it without swapping bytes");

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit
constexpr std::string_view kMetadataKey = "__metadata__";

// ---------------------------------------------------------------------------------------------
// Writing

void check_for_writing(const std::string& context, std::span<const TensorRecord> tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::set<std::string_view> names;
  for (const TensorRecord& t : tensors) {
    const std::string name = "tensor " + in_quotes(t.name);
    if (t.name == kMetadataKey)
      throw ValueError(context + "the name '__metadata__' is reserved for the header's metadata");
    if (!is_valid_utf8(t.name)) throw ValueError(context + name + ": name is not valid UTF-8");
    if (!names.insert(t.name).second)
      throw ValueError(context + "two tensors are named " + in_quotes(t.name));
    const std::optional<int64_t> nbytes = checked_nbytes(t.dtype, t.shape);
    if (!nbytes)
      throw ValueError(context + name + ": shape " + shape_string(t.shape) +
                       " has a negative dimension or more elements than int64 can count");
    if (t.data.size() != static_cast<uint64_t>(*nbytes))
      throw ValueError(context + name + ": dtype " + std::string(dtype_name(t.dtype)) +
                       " and shape " + shape_string(t.shape) + " need " + std::to_string(*nbytes) +
                       " bytes of data, got " + std::to_string(t.data.size()));
  }
  for (const auto& [key, value] : metadata)
    if (!is_valid_utf8(key) || !is_valid_utf8(value))
      throw ValueError(context + "metadata " + in_quotes(key) + " is not valid UTF-8");
}

// Decreasing item size, then name: the order of the reference implementation, which puts every
// tensor at an offset that is a multiple of its item size.
std::vector<std::size_t> write_order(std::span<const TensorRecord> tensors) {
  std::vector<std::size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const std::size_t sa = itemsize(tensors[a].dtype), sb = itemsize(tensors[b].dtype);
    return sa != sb ? sa > sb : tensors[a].name < tensors[b].name;
  });
  return order;
}

std::string header_text(std::span<const TensorRecord> tensors,
                        const std::vector<std::size_t>& order,
                        const std::map<std::string, std::string>& metadata) {
  Json::Object header;
  if (!metadata.empty()) {
    Json::Object strings;
    for (const auto& [key, value] : metadata) strings.emplace_back(key, value);
    header.emplace_back(kMetadataKey, std::move(strings));
  }
  int64_t offset = 0;
  for (std::size_t i : order) {
    const TensorRecord& t = tensors[i];
    const int64_t end = offset + static_cast<int64_t>(t.data.size());
    header.emplace_back(t.name, Json::Object{
                                    {"dtype", std::string(dtype_name(t.dtype))},
                                    {"shape", Json::Array(t.shape.begin(), t.shape.end())},
                                    {"data_offsets", Json::Array{offset, end}},
                                });
    offset = end;
  }
  std::string text = to_json(std::move(header));
  // Pad with spaces (JSON whitespace) so that the data buffer starts at a multiple of 8.
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

// ---------------------------------------------------------------------------------------------
// Reading

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  int64_t begin, end;  // within the data buffer
};

class HeaderReader {
 public:
  explicit HeaderReader(std::string context) : context_(std::move(context)) {}

  [[noreturn]] void reject(const std::string& problem) const {
    throw FormatError(context_ + problem);
  }

  // Checks everything that does not depend on the data buffer's size.
  void read(const Json& header, std::vector<Entry>& entries,
            std::map<std::string, std::string>& metadata) const {
    if (!header.is_object())
      reject("header must be a JSON object, found " + std::string(header.kind_name()));
    for (const auto& [key, value] : header.as_object()) {
      if (key == kMetadataKey)
        metadata = read_metadata(value);
      else
        entries.push_back(read_entry(key, value));
    }
  }

  // The data buffer must be tiled exactly: sorted by offset, each tensor starts where the
  // previous one ends, the first at 0 and the last ending at the buffer's end.
  void check_layout(std::vector<Entry>& entries, int64_t data_size) const {
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    int64_t covered = 0;
    const Entry* previous = nullptr;
    for (const Entry& e : entries) {
      if (e.end > data_size)
        reject("tensor " + in_quotes(e.name) + ": data_offsets " + range(e) +
               " run past the end of the data buffer, which holds " + std::to_string(data_size) +
               " bytes (is the file truncated?)");
      if (e.begin > covered)
        reject("no tensor covers bytes [" + std::to_string(covered) + ", " +
               std::to_string(e.begin) + ") of the data buffer" +
               (previous ? " between tensors " + in_quotes(previous->name) + " and "
                         : " before tensor ") +
               in_quotes(e.name) + ": data must be contiguous");
      if (e.begin < covered)
        reject("tensors " + in_quotes(previous->name) + " " + range(*previous) + " and " +
               in_quotes(e.name) + " " + range(e) + " overlap");
      covered = e.end;
      previous = &e;
    }
    if (covered < data_size)
      reject(std::to_string(data_size - covered) + " trailing bytes: the data buffer holds " +
             std::to_string(data_size) + " bytes but the tensors cover " + std::to_string(covered));
  }

 private:
  static std::string range(const Entry& e) {
    return std::string("[") + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
  }

  std::map<std::string, std::string> read_metadata(const Json& value) const {
    if (!value.is_object())
      reject("__metadata__ must be an object of strings, found " + std::string(value.kind_name()));
    std::map<std::string, std::string> metadata;
    for (const auto& [key, v] : value.as_object()) {
      if (!v.is_string())
        reject("__metadata__ value of " + in_quotes(key) + " must be a string, found " +
               std::string(v.kind_name()));
      metadata.emplace(key, v.as_string());
    }
    return metadata;
  }

  Entry read_entry(const std::string& name, const Json& value) const {
    const std::string tensor = "tensor " + in_quotes(name);
    if (!value.is_object())
      reject(tensor + " must be an object with dtype, shape and data_offsets, found " +
             std::string(value.kind_name()));
    for (const auto& [field, v] : value.as_object())
      if (field != "dtype" && field != "shape" && field != "data_offsets")
        reject(tensor + " has an unexpected field " + in_quotes(field) +
               " (expected dtype, shape, data_offsets)");
    auto required = [&](std::string_view key) -> const Json& {
      const Json* v = value.find(key);
      if (!v) reject(tensor + " has no " + std::string(key) + " field");
      return *v;
    };
    const DType dtype = read_dtype(tensor, required("dtype"));
    Entry e{name, dtype, read_shape(tensor, required("shape")), 0, 0};
    read_offsets(tensor, required("data_offsets"), e);
    const std::optional<int64_t> nbytes = checked_nbytes(e.dtype, e.shape);
    if (!nbytes)
      reject(tensor + ": shape " + shape_string(e.shape) +
             " has more elements than int64 can count");
    if (e.end - e.begin != *nbytes)
      reject(tensor + ": data_offsets " + range(e) + " hold " + std::to_string(e.end - e.begin) +
             " bytes but dtype " + std::string(dtype_name(e.dtype)) + " and shape " +
             shape_string(e.shape) + " need " + std::to_string(*nbytes));
    return e;
  }

  DType read_dtype(const std::string& tensor, const Json& v) const {
    if (!v.is_string())
      reject(tensor + ": dtype must be a string, found " + std::string(v.kind_name()));
    const std::string& s = v.as_string();
    if (s == "F32") return DType::F32;
    if (s == "I64") return DType::I64;
    static constexpr std::string_view kOtherDtypes[] = {"BOOL", "U8",  "I8",  "F8_E5M2", "F8_E4M3",
                                                        "I16",  "U16", "F16", "BF16",    "I32",
                                                        "U32",  "F64", "U64"};
    const bool known =
        std::find(std::begin(kOtherDtypes), std::end(kOtherDtypes), s) != std::end(kOtherDtypes);
    reject(tensor + ": dtype " + in_quotes(s) +
           (known ? " is not supported by qkv" : " is not a safetensors dtype") +
           " (supported: F32, I64)");
  }

  std::vector<int64_t> read_shape(const std::string& tensor, const Json& v) const {
    if (!v.is_array())
      reject(tensor + ": shape must be an array of integers, found " + std::string(v.kind_name()));
    std::vector<int64_t> shape;
    for (const Json& d : v.as_array()) {
      if (!d.is_int())
        reject(tensor + ": shape must be an array of integers, found an element of kind " +
               std::string(d.kind_name()));
      shape.push_back(d.as_int());
    }
    for (int64_t d : shape)
      if (d < 0) reject(tensor + ": shape " + shape_string(shape) + " has a negative dimension");
    return shape;
  }

  void read_offsets(const std::string& tensor, const Json& v, Entry& e) const {
    const bool pair = v.is_array() && v.as_array().size() == 2 && v.as_array()[0].is_int() &&
                      v.as_array()[1].is_int() && v.as_array()[0].as_int() >= 0 &&
                      v.as_array()[1].as_int() >= 0;
    if (!pair) reject(tensor + ": data_offsets must be [begin, end], two non-negative integers");
    e.begin = v.as_array()[0].as_int();
    e.end = v.as_array()[1].as_int();
    if (e.end < e.begin) reject(tensor + ": data_offsets " + range(e) + " end before they begin");
  }

  std::string context_;
};

}  // namespace

void save_safetensors(const std::filesystem::path& path, std::span<const TensorRecord> tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::string context = "save_safetensors: '" + path.string() + "': ";
  check_for_writing(context, tensors, metadata);
  const std::vector<std::size_t> order = write_order(tensors);
  const std::string header = header_text(tensors, order, metadata);

  std::array<std::byte, 8> length;
  for (int i = 0; i < 8; ++i) length[i] = std::byte((header.size() >> (8 * i)) & 0xFF);

  AtomicFileWriter out("save_safetensors", path);
  out.write(length);
  out.write(std::as_bytes(std::span(header)));
  for (std::size_t i : order) out.write(tensors[i].data);
  out.commit();
}

LoadedTensors load_safetensors(const std::filesystem::path& path) {
  const FileReader file("load_safetensors", path);
  const HeaderReader reader(file.context());
  if (file.size() < 8)
    reader.reject("file is " + std::to_string(file.size()) +
                  " bytes, too short for the 8-byte header length of a safetensors file");
  std::array<std::byte, 8> length;
  file.read_at(0, length);
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i)
    header_size = (header_size << 8) | std::to_integer<uint64_t>(length[i]);
  if (header_size > kMaxHeaderBytes)
    reader.reject("header length " + std::to_string(header_size) + " is over the " +
                  std::to_string(kMaxHeaderBytes) + "-byte limit (is this a safetensors file?)");
  if (header_size > file.size() - 8)
    reader.reject("header length " + std::to_string(header_size) +
                  " runs past the end of the file, which has " + std::to_string(file.size() - 8) +
                  " bytes after the length (is the file truncated?)");

  std::string text(header_size, '\0');
  file.read_at(8, std::as_writable_bytes(std::span(text)));
  Json header;
  try {
    header = parse_json(text, JsonLimits{.max_bytes = kMaxHeaderBytes});
  } catch (const FormatError& e) {
    reader.reject("invalid header: " + std::string(e.what()));
  }

  LoadedTensors loaded;
  std::vector<Entry> entries;
  reader.read(header, entries, loaded.metadata);
  const uint64_t data_start = 8 + header_size;
  const int64_t data_size = static_cast<int64_t>(file.size() - data_start);
  reader.check_layout(entries, data_size);

  // Every number is checked; data_size is the file's own size, so this cannot over-allocate.
  loaded.storage = allocate_storage(static_cast<std::size_t>(data_size));
  file.read_at(data_start, std::span(loaded.storage.get(), static_cast<std::size_t>(data_size)));
  for (Entry& e : entries)
    loaded.tensors.push_back(
        TensorRecord{std::move(e.name), e.dtype, std::move(e.shape),
                     std::span<const std::byte>(loaded.storage.get() + e.begin,
                                                static_cast<std::size_t>(e.end - e.begin))});
  return loaded;
}

const TensorRecord* LoadedTensors::find(std::string_view name) const {
  for (const TensorRecord& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace qkv::io
