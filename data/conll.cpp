#include "data/conll.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <istream>
#include <ostream>
#include <sstream>
#include <string_view>

#include "io/file.h"
#include "tensor/error.h"

namespace qkv::data {
namespace {

// What the ID column of a CoNLL-U line holds.
enum class IdKind { word, range, empty_node, bad };

bool is_number(std::string_view s) {
  if (s.empty() || s.size() > 9) return false;  // nine digits keep every ID inside int64_t
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "3" is a word, "3-4" a multiword-token range, "3.1" an empty node.
IdKind classify_id(std::string_view id, int64_t& word_id) {
  if (is_number(id)) {
    std::from_chars(id.data(), id.data() + id.size(), word_id);
    return word_id >= 1 ? IdKind::word : IdKind::bad;
  }
  for (char sep : {'-', '.'}) {
    const size_t at = id.find(sep);
    if (at != std::string_view::npos && is_number(id.substr(0, at)) && is_number(id.substr(at + 1)))
      return sep == '-' ? IdKind::range : IdKind::empty_node;
  }
  return IdKind::bad;
}

std::vector<std::string_view> split(std::string_view line, bool on_tabs_only) {
  std::vector<std::string_view> fields;
  if (on_tabs_only) {
    size_t start = 0;
    for (;;) {
      const size_t tab = line.find('\t', start);
      fields.push_back(line.substr(start, tab - start));
      if (tab == std::string_view::npos) break;
      start = tab + 1;
    }
  } else {
    size_t start = line.find_first_not_of(" \t");
    while (start != std::string_view::npos) {
      const size_t end = line.find_first_of(" \t", start);
      fields.push_back(line.substr(start, end - start));
      start = line.find_first_not_of(" \t", end);
    }
  }
  return fields;
}

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t") == std::string::npos; }

// The UTF-8 encoding of U+FEFF, which some editors (Windows Notepad) write at the start of a file.
// In UTF-8 it marks nothing (the Unicode Standard, section 2.6, neither requires nor recommends
// it); read as part of the first field it would make "1" a bad ID, so the readers drop it there.
constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

// Reads lines, strips a byte-order mark at the start and a CR left by CRLF line ends, and collects
// sentences between empty lines. `parse_line` adds one other line to the current sentence, or
// throws through `fail`. A line of only spaces or tabs is neither: refused at its own line, not
// taken for a sentence break that would blame the next line for whatever went wrong.
template <class ParseLine>
std::vector<TaggedSentence> read_sentences(std::istream& in, const std::string& op, const std::string& source,
                                           ParseLine parse_line) {
  std::vector<TaggedSentence> sentences;
  TaggedSentence current;
  std::string line;
  int64_t line_no = 0;
  auto fail = [&](const std::string& what) {
    throw FormatError(op + ": " + source + ":" + std::to_string(line_no) + ": " + what);
  };
  auto finish_sentence = [&] {
    if (!current.words.empty()) sentences.push_back(std::move(current));
    current = {};
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1 && line.starts_with(kUtf8ByteOrderMark)) line.erase(0, kUtf8ByteOrderMark.size());
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty())
      finish_sentence();
    else if (is_blank(line))
      fail(
          "the line is blank but not empty (only spaces or tabs): a sentence break is an empty line, and a "
          "word line needs its fields");
    else
      parse_line(line, current, fail);
  }
  if (in.bad()) throw FormatError(op + ": " + source + ": read error after line " + std::to_string(line_no));
  finish_sentence();
  return sentences;
}

std::ifstream open_for_reading(const std::string& op, const std::string& path) {
  if (!std::filesystem::exists(path)) throw ValueError(op + ": no such file '" + path + "'");
  io::require_regular_file(path, op);  // a directory, a FIFO or a device is refused, not read
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ValueError(op + ": cannot open '" + path + "' for reading");
  return in;
}

std::string in_quotes(std::string_view s) {
  // Built by appending: GCC 12 warns falsely (-Wrestrict) on "'" + s + "'".
  std::string q(1, '\'');
  q += s;
  q += '\'';
  return q;
}

// The writers' check, run over every sentence before the first byte is written, so that a bad
// sentence never leaves half a file behind.
void check_writable(const std::string& op, const std::vector<TaggedSentence>& sentences,
                    const char* forbidden) {
  for (size_t s = 0; s < sentences.size(); ++s) {
    const TaggedSentence& sentence = sentences[s];
    const std::string where = op + ": sentence " + std::to_string(s);
    if (sentence.words.empty()) throw ValueError(where + " is empty");
    auto count_mismatch = [&](size_t count, const char* what) {
      return ValueError(where + " has " + std::to_string(sentence.words.size()) + " words but " +
                        std::to_string(count) + what);
    };
    if (sentence.tags.size() != sentence.words.size()) throw count_mismatch(sentence.tags.size(), " tags");
    if (!sentence.xpos.empty() && sentence.xpos.size() != sentence.words.size())
      throw count_mismatch(sentence.xpos.size(), " XPOS tags");
    auto check_field = [&](const char* what, size_t i, const std::string& field) {
      if (field.empty()) throw ValueError(where + ": " + what + std::to_string(i) + " is empty");
      if (field.find_first_of(forbidden) != std::string::npos)
        throw ValueError(where + ": " + what + std::to_string(i) + " " + in_quotes(field) +
                         " contains whitespace the format cannot hold");
    };
    for (size_t i = 0; i < sentence.words.size(); ++i) {
      check_field("word ", i, sentence.words[i]);
      check_field("tag ", i, sentence.tags[i]);
      if (!sentence.xpos.empty()) check_field("XPOS tag ", i, sentence.xpos[i]);
    }
  }
}

// The text `write` puts on a stream, written to `path` atomically (io/file.h).
template <class Write>
void write_file(const std::string& op, const std::string& path, Write write) {
  std::ostringstream out;
  write(out);
  io::write_text_file(path, out.str(), op);
}

}  // namespace

std::vector<TaggedSentence> read_conllu(std::istream& in, const std::string& source) {
  std::vector<TaggedSentence> sentences = read_sentences(
      in, "read_conllu", source, [](std::string_view line, TaggedSentence& sentence, auto fail) {
        if (line[0] == '#') return;
        const std::vector<std::string_view> f = split(line, /*on_tabs_only=*/true);
        if (f.size() != 10)
          fail(
              "expected 10 tab-separated columns (ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS "
              "MISC), found " +
              std::to_string(f.size()));
        int64_t id = 0;
        const IdKind kind = classify_id(f[0], id);
        if (kind == IdKind::range || kind == IdKind::empty_node) return;
        if (kind == IdKind::bad)
          fail("bad ID " + in_quotes(f[0]) +
               ": expected a word number like 3, a range like 3-4 or an empty node like 3.1");
        const int64_t expected = static_cast<int64_t>(sentence.words.size()) + 1;
        if (id != expected)
          fail("word ID " + std::to_string(id) + " where " + std::to_string(expected) +
               " was expected (is a blank line missing between sentences?)");
        if (f[1].empty()) fail("empty FORM in word " + std::to_string(id));
        if (f[3].empty() || f[3] == "_")
          fail("no UPOS tag (" + in_quotes(f[3]) + ") for word " + in_quotes(f[1]));
        sentence.words.emplace_back(f[1]);
        sentence.tags.emplace_back(f[3]);
        sentence.xpos.emplace_back(f[4]);
      });
  for (TaggedSentence& s : sentences) {  // "_" in every word: the sentence has no XPOS
    if (std::all_of(s.xpos.begin(), s.xpos.end(), [](const std::string& x) { return x == "_"; }))
      s.xpos.clear();
  }
  return sentences;
}

std::vector<TaggedSentence> read_conll(std::istream& in, const std::string& source) {
  return read_sentences(
      in, "read_conll", source, [](std::string_view line, TaggedSentence& sentence, auto fail) {
        const std::vector<std::string_view> f = split(line, /*on_tabs_only=*/false);
        if (f.size() != 2)
          fail("expected 2 whitespace-separated columns (word TAG), found " + std::to_string(f.size()));
        sentence.words.emplace_back(f[0]);
        sentence.tags.emplace_back(f[1]);
      });
}

std::vector<TaggedSentence> read_conllu(const std::string& path) {
  std::ifstream in = open_for_reading("read_conllu", path);
  return read_conllu(in, path);
}

std::vector<TaggedSentence> read_conll(const std::string& path) {
  std::ifstream in = open_for_reading("read_conll", path);
  return read_conll(in, path);
}

void write_conllu(std::ostream& out, const std::vector<TaggedSentence>& sentences) {
  check_writable("write_conllu", sentences, "\t\r\n");
  for (size_t s = 0; s < sentences.size(); ++s) {
    const TaggedSentence& sentence = sentences[s];
    out << "# sent_id = " << s + 1 << "\n# text =";
    for (const std::string& word : sentence.words) out << ' ' << word;
    out << '\n';
    for (size_t i = 0; i < sentence.words.size(); ++i)
      out << i + 1 << '\t' << sentence.words[i] << "\t_\t" << sentence.tags[i] << '\t'
          << (sentence.xpos.empty() ? "_" : sentence.xpos[i]) << "\t_\t_\t_\t_\t_\n";
    out << '\n';
  }
}

void write_conll(std::ostream& out, const std::vector<TaggedSentence>& sentences) {
  check_writable("write_conll", sentences, " \t\r\n");
  for (const TaggedSentence& sentence : sentences) {
    for (size_t i = 0; i < sentence.words.size(); ++i)
      out << sentence.words[i] << ' ' << sentence.tags[i] << '\n';
    out << '\n';
  }
}

void write_conllu(const std::string& path, const std::vector<TaggedSentence>& sentences) {
  check_writable("write_conllu", sentences, "\t\r\n");
  write_file("write_conllu", path, [&](std::ostream& out) { write_conllu(out, sentences); });
}

void write_conll(const std::string& path, const std::vector<TaggedSentence>& sentences) {
  check_writable("write_conll", sentences, " \t\r\n");
  write_file("write_conll", path, [&](std::ostream& out) { write_conll(out, sentences); });
}

}  // namespace qkv::data
