#include "examples/seq2seq/dates.h"

#include <cctype>
#include <map>

#include "tensor/error.h"

namespace seq2seq {
namespace {

using qkv::ValueError;
using qkv::data::Vocab;

Vocab alphabet_vocab(const char* alphabet) {
  std::map<std::string, int64_t> counts;
  for (const char* c = alphabet; *c; ++c) counts[std::string(1, *c)] = 1;  // equal counts: byte order
  return Vocab(counts, 1, {Vocab::kPad, Vocab::kUnk, kBos, kEos});
}

}  // namespace

Vocab source_vocab() { return alphabet_vocab(kSourceAlphabet); }
Vocab target_vocab() { return alphabet_vocab(kTargetAlphabet); }

std::vector<int64_t> encode_source(const Vocab& vocab, const std::string& text) {
  if (text.empty()) throw ValueError("encode_source: the text is empty");
  if (static_cast<int64_t>(text.size()) > kMaxSourceChars)
    throw ValueError("encode_source: the text has " + std::to_string(text.size()) +
                     " characters, more than " + std::to_string(kMaxSourceChars));
  std::vector<int64_t> ids;
  for (size_t i = 0; i < text.size(); ++i) {
    const std::string c(1, static_cast<char>(std::tolower(static_cast<unsigned char>(text[i]))));
    if (!vocab.contains(c)) {
      const unsigned char byte = static_cast<unsigned char>(text[i]);
      throw ValueError("encode_source: character " +
                       (std::isprint(byte) ? "'" + c + "'" : "byte " + std::to_string(byte)) +
                       " at position " + std::to_string(i) + " of \"" + text + "\" is not one of \"" +
                       kSourceAlphabet + "\" (letters, digits, space and , - /)");
    }
    ids.push_back(vocab.id(c));
  }
  ids.push_back(vocab.id(kEos));
  return ids;
}

std::vector<int64_t> encode_target(const Vocab& vocab, const std::string& text) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < text.size(); ++i) {
    const std::string c(1, text[i]);
    if (!vocab.contains(c))
      throw ValueError("encode_target: character '" + c + "' at position " + std::to_string(i) + " of \"" +
                       text + "\" is not in the target vocabulary");
    ids.push_back(vocab.id(c));
  }
  ids.push_back(vocab.id(kEos));
  return ids;
}

std::string decode_ids(const Vocab& vocab, const std::vector<int64_t>& ids) {
  std::string text;
  for (const int64_t id : ids) {
    const std::string& token = vocab.token(id);
    if (token == kEos) break;
    if (token.size() == 1) text += token;
  }
  return text;
}

}  // namespace seq2seq
