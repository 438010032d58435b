#include "data/vocab.h"

#include <algorithm>
#include <filesystem>
#include <istream>
#include <ostream>
#include <sstream>

#include "io/file.h"
#include "tensor/error.h"

namespace qkv::data {
namespace {

std::string in_quotes(const std::string& s) {
  // Built by appending: GCC 12 warns falsely (-Wrestrict) on "'" + s + "'".
  std::string q(1, '\'');
  q += s;
  q += '\'';
  return q;
}

bool has_line_break(const std::string& token) { return token.find_first_of("\r\n") != std::string::npos; }

// The reserved tokens, then the counted ones in id order (see vocab.h), after checking them.
std::vector<std::string> ordered_tokens(const std::map<std::string, int64_t>& counts, int64_t min_freq,
                                        std::vector<std::string> reserved) {
  if (min_freq < 1) throw ValueError("Vocab: min_freq must be at least 1, got " + std::to_string(min_freq));
  for (size_t i = 0; i < reserved.size(); ++i) {
    if (reserved[i].empty() || has_line_break(reserved[i]))
      throw ValueError("Vocab: reserved token " + std::to_string(i) + " " + in_quotes(reserved[i]) +
                       " is empty or holds a line break");
    if (std::find(reserved.begin(), reserved.begin() + i, reserved[i]) != reserved.begin() + i)
      throw ValueError("Vocab: reserved token " + in_quotes(reserved[i]) + " is given twice");
  }
  std::vector<std::pair<std::string, int64_t>> kept;
  for (const auto& [token, count] : counts) {
    if (count < min_freq || std::find(reserved.begin(), reserved.end(), token) != reserved.end()) continue;
    if (token.empty() || has_line_break(token))
      throw ValueError("Vocab: counted token " + in_quotes(token) + " is empty or holds a line break");
    kept.emplace_back(token, count);
  }
  // Most frequent first. std::map lists equal counts in byte order and stable_sort keeps that.
  std::stable_sort(kept.begin(), kept.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> tokens = std::move(reserved);
  for (auto& [token, count] : kept) tokens.push_back(std::move(token));
  if (tokens.empty())
    throw ValueError("Vocab: no reserved tokens and no token counted at least min_freq = " +
                     std::to_string(min_freq) + " times");
  return tokens;
}

}  // namespace

Vocab::Vocab(const std::map<std::string, int64_t>& counts, int64_t min_freq,
             std::vector<std::string> reserved)
    : tokens_(ordered_tokens(counts, min_freq, std::move(reserved))) {
  index_tokens();
}

void Vocab::index_tokens() {
  for (size_t i = 0; i < tokens_.size(); ++i) ids_.emplace(tokens_[i], static_cast<int64_t>(i));
}

bool Vocab::contains(const std::string& token) const { return ids_.count(token) != 0; }

int64_t Vocab::id(const std::string& token) const {
  const auto it = ids_.find(token);
  if (it != ids_.end()) return it->second;
  if (!has_unk())
    throw ValueError("Vocab::id: unknown token " + in_quotes(token) + " and the vocabulary has no " + kUnk);
  return unk_id();
}

const std::string& Vocab::token(int64_t id) const {
  if (id < 0 || id >= size())
    throw IndexError("Vocab::token: id " + std::to_string(id) + " is out of range [0, " +
                     std::to_string(size()) + ")");
  return tokens_[static_cast<size_t>(id)];
}

std::vector<int64_t> Vocab::encode(const std::vector<std::string>& tokens) const {
  std::vector<int64_t> ids;
  ids.reserve(tokens.size());
  for (const std::string& t : tokens) ids.push_back(id(t));
  return ids;
}

std::vector<std::string> Vocab::decode(const std::vector<int64_t>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t i : ids) tokens.push_back(token(i));
  return tokens;
}

int64_t Vocab::pad_id() const {
  if (!has_pad()) throw StateError(std::string("Vocab::pad_id: the vocabulary has no ") + kPad);
  return ids_.at(kPad);
}

int64_t Vocab::unk_id() const {
  if (!has_unk()) throw StateError(std::string("Vocab::unk_id: the vocabulary has no ") + kUnk);
  return ids_.at(kUnk);
}

void Vocab::save(std::ostream& out) const {
  for (const std::string& t : tokens_) out << t << '\n';
}

void Vocab::save(const std::string& path) const {
  std::ostringstream out;
  save(out);
  io::write_text_file(path, out.str(), "Vocab::save");  // atomically: a crash leaves the old file
}

Vocab Vocab::load(std::istream& in, const std::string& source) {
  std::vector<std::string> tokens;
  std::unordered_map<std::string, int64_t> first_line;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = "Vocab::load: " + source + ":" + std::to_string(line_no) + ": ";
    if (line.empty()) throw FormatError(where + "empty token (every line holds one token)");
    const auto [it, inserted] = first_line.emplace(line, line_no);
    if (!inserted)
      throw FormatError(where + "token " + in_quotes(line) + " repeats line " + std::to_string(it->second));
    tokens.push_back(line);
  }
  if (in.bad())
    throw FormatError("Vocab::load: " + source + ": read error after line " + std::to_string(line_no));
  if (tokens.empty()) throw FormatError("Vocab::load: " + source + ": no tokens");
  Vocab vocab;
  vocab.tokens_ = std::move(tokens);
  vocab.index_tokens();
  return vocab;
}

Vocab Vocab::load(const std::string& path) {
  if (!std::filesystem::exists(path)) throw ValueError("Vocab::load: no such file '" + path + "'");
  std::istringstream in(io::read_text_file(path, "Vocab::load"));
  return load(in, path);
}

}  // namespace qkv::data
