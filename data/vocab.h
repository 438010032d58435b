// A vocabulary: tokens ↔ consecutive integer ids, the lookup an embedding layer needs.
//
// Reserved tokens come first, in the order given; by default <pad> = 0 and <unk> = 1 (d2l's
// `reserved_tokens`, torchtext's `specials`). Then every counted token with count >= min_freq,
// most frequent first, ties in byte order, so the same counts always give the same ids.
//
//   <pad>  fills a batch past each sentence's end; the model masks those positions out.
//   <unk>  stands for any token the vocabulary does not hold (unseen, or rarer than min_freq).
//
// Words want both. Tags want neither: an unknown tag in the data is an error, not a class to
// predict, and padded positions are marked in the targets by an ignore index (data/batching.h), so
// the classifier has exactly one output per tag. Build a tag vocabulary with `reserved = {}`.
//
// The file format is one token per line, line k holding id k. A counted token spelled like a
// reserved one is the reserved one; loading recognises <pad> and <unk> by their spelling.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace qkv::data {

class Vocab {
 public:
  static constexpr const char* kPad = "<pad>";
  static constexpr const char* kUnk = "<unk>";

  // Throws ValueError for min_freq < 1, a repeated or empty reserved token, a token holding a line
  // break (it could not be saved), or a vocabulary left with no token at all.
  explicit Vocab(const std::map<std::string, int64_t>& counts, int64_t min_freq = 1,
                 std::vector<std::string> reserved = {kPad, kUnk});

  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  bool contains(const std::string& token) const;

  // The id of `token`; an unknown token gets <unk>'s id, or throws ValueError without <unk>.
  int64_t id(const std::string& token) const;
  // The token of `id`; throws IndexError outside [0, size()).
  const std::string& token(int64_t id) const;

  std::vector<int64_t> encode(const std::vector<std::string>& tokens) const;
  std::vector<std::string> decode(const std::vector<int64_t>& ids) const;

  // <pad>'s and <unk>'s ids; throw StateError when the vocabulary has none.
  bool has_pad() const { return contains(kPad); }
  bool has_unk() const { return contains(kUnk); }
  int64_t pad_id() const;
  int64_t unk_id() const;

  // Every token, in id order.
  const std::vector<std::string>& tokens() const { return tokens_; }

  void save(const std::string& path) const;
  void save(std::ostream& out) const;
  // Throws FormatError naming the source and line of an empty or repeated token, or for an empty
  // file; ValueError when the path is missing or is not a regular file, or the file is over
  // io::kMaxTextFileBytes (io/file.h).
  static Vocab load(const std::string& path);
  static Vocab load(std::istream& in, const std::string& source);

 private:
  Vocab() = default;
  void index_tokens();  // fills ids_ from tokens_

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_;
};

}  // namespace qkv::data
