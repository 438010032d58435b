#include "data/tokenize.h"

#include <algorithm>
#include <cctype>
#include <span>
#include <utility>

namespace qkv::data {
namespace {

// Abbreviations the Brown Corpus keeps whole with their period, its most frequent ones. Initials
// ("J.") and letters between periods ("U.S.") need no list: is_abbreviation knows their shape.
constexpr std::string_view kAbbreviations[] = {
    // titles
    "Mr.", "Mrs.", "Ms.", "Messrs.", "Dr.", "Drs.", "St.", "Jr.", "Sr.", "Prof.", "Gen.", "Gov.", "Sen.",
    "Sens.", "Rep.", "Reps.", "Rev.", "Lt.", "Col.", "Capt.", "Sgt.", "Brig.", "Cmdr.", "Atty.", "Hon.",
    "Supt.", "Dist.",
    // months
    "Jan.", "Feb.", "Mar.", "Apr.", "Aug.", "Sept.", "Oct.", "Nov.", "Dec.",
    // states
    "Ala.", "Ariz.", "Ark.", "Cal.", "Calif.", "Colo.", "Conn.", "Fla.", "Ga.", "Ill.", "Ind.", "Kan.", "Ky.",
    "La.", "Mass.", "Md.", "Mich.", "Minn.", "Mo.", "Mont.", "Nev.", "Okla.", "Ore.", "Pa.", "Tenn.", "Tex.",
    "Va.", "Wash.", "Wis.",
    // firms, addresses, references, units
    "Co.", "Corp.", "Inc.", "Ltd.", "Bros.", "Ave.", "Av.", "Blvd.", "Bldg.", "Rd.", "Mt.", "No.", "Fig.",
    "Figs.", "Vol.", "pp.", "sp.", "cf.", "etc.", "vs.", "ft.", "lbs.", "oz.", "cm.", "mm.", "mg.", "gm.",
    "hr.", "yrs."};

// Words that begin with an apostrophe standing for dropped letters, not for an opening quote.
constexpr std::string_view kElisions[] = {"'em", "'im", "'round", "'til", "'tis", "'twas", "'n",
                                          "'s",  "'m",  "'d",     "'ll",  "'re",  "'ve"};

// The Penn Treebank's clitics, cut off the end of a word in UD style. "n't" takes the n with it,
// so "can't" becomes "ca n't" and "won't" "wo n't", as the treebanks write them.
constexpr std::string_view kClitics[] = {"n't", "'ll", "'re", "'ve", "'s", "'m", "'d"};

constexpr std::string_view kOpeningBrackets = "([{";
constexpr std::string_view kClosingBrackets = ")]}";
constexpr std::string_view kClosingPunctuation = ")]},;:?!";
// The characters that are tokens by themselves; other symbols ("&", "$", "%") stick together.
constexpr std::string_view kSplitting = "()[]{},;:?!.\"'`";

// Typographic punctuation in UTF-8 and the ASCII the corpora write for it. Its bytes are >= 0x80,
// which would otherwise count as letters and keep “Hello,” or don’t in one piece.
constexpr std::pair<std::string_view, std::string_view> kTypographic[] = {
    {"“", "\""}, {"”", "\""}, {"‘", "'"}, {"’", "'"}, {"—", "--"}, {"–", "--"}, {"…", "..."}};

std::string to_ascii_punctuation(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto mark = std::ranges::find_if(
        kTypographic, [&](const auto& m) { return text.substr(i).starts_with(m.first); });
    if (mark == std::end(kTypographic)) {
      out += text[i++];
    } else {
      out += mark->second;
      i += mark->first.size();
    }
  }
  return out;
}

bool is_word_byte(char c) {
  const auto b = static_cast<unsigned char>(c);
  return b >= 0x80 || std::isalnum(b);
}

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Two or more runs of one to three letters, each closed by a period: "U.S.", "p.m.", "Ph.D.".
bool is_dotted(std::string_view word) {
  int runs = 0;
  size_t i = 0;
  while (i < word.size()) {
    size_t j = i;
    while (j < word.size() && std::isalpha(static_cast<unsigned char>(word[j]))) ++j;
    if (j == i || j - i > 3 || j == word.size() || word[j] != '.') return false;
    ++runs;
    i = j + 1;
  }
  return runs >= 2;
}

// `word` ends with a period: is the period part of it?
bool is_abbreviation(std::string_view word) {
  // Every abbreviation ends in a letter and its period. Checked first, in constant time: the
  // trailing punctuation of "a.,.,.,." is cut one mark at a time, and a scan of the whole word at
  // each of its periods would make a long run of them quadratic.
  if (word.size() < 2 || !std::isalpha(static_cast<unsigned char>(word[word.size() - 2]))) return false;
  // "ex-Mrs.", "Presbyterian-St.": the part after the last hyphen decides.
  if (const size_t hyphen = word.rfind('-'); hyphen != std::string_view::npos) word.remove_prefix(hyphen + 1);
  const bool initial = word.size() == 2 && std::isupper(static_cast<unsigned char>(word[0]));
  return initial || is_dotted(word) || std::ranges::find(kAbbreviations, word) != std::end(kAbbreviations);
}

// `word` starts with an apostrophe: is it part of the word ("'em", "'61")?
bool keeps_leading_apostrophe(std::string_view word) {
  if (word.size() > 1 && std::isdigit(static_cast<unsigned char>(word[1]))) return true;
  size_t end = 1;
  while (end < word.size() && std::isalpha(static_cast<unsigned char>(word[end]))) ++end;
  return std::ranges::find(kElisions, to_lower(word.substr(0, end))) != std::end(kElisions);
}

// The length of the punctuation token `s` starts with: 2 or 3 for `` '' -- ..., else 1.
size_t punctuation_length(std::string_view s) {
  if (s.starts_with("...")) return 3;
  if (s.starts_with("``") || s.starts_with("''") || s.starts_with("--")) return 2;
  return 1;
}

// The marks a closing quote moves in front of in Brown style.
bool ends_clause(const std::string& token) {
  return token.size() == 1 && std::string_view(",.?!;:").find(token[0]) != std::string_view::npos;
}

// The text's whitespace-separated chunks. With `at_dashes`, a dash "--" or an ellipsis "..." also
// ends a chunk and is one of its own: "workers--\"but" → workers, --, "but.
std::vector<std::string_view> split_chunks(std::string_view text, bool at_dashes) {
  std::vector<std::string_view> chunks;
  size_t start = 0;
  const auto close = [&](size_t end) {
    if (end > start) chunks.push_back(text.substr(start, end - start));
  };
  for (size_t i = 0; i < text.size();) {
    const std::string_view rest = text.substr(i);
    const size_t dash = !at_dashes ? 0 : rest.starts_with("...") ? 3 : rest.starts_with("--") ? 2 : 0;
    if (dash == 0 && !is_space(text[i])) {
      ++i;
      continue;
    }
    close(i);
    if (dash > 0) chunks.push_back(rest.substr(0, dash));
    i += std::max<size_t>(dash, 1);
    start = i;
  }
  close(text.size());
  return chunks;
}

// Brown's quotes close before the punctuation they follow in the text: , '' → '' , and within
// each run of such marks and closing quotes, every quote comes before every mark (, . '' ; '' →
// '' '' , . ;), the marks in their order. One pass over the run, not a swap per quote and mark.
void move_quotes_before_punctuation(std::span<std::string> tokens) {
  for (size_t begin = 0; begin < tokens.size();) {
    size_t end = begin;
    while (end < tokens.size() && (tokens[end] == "''" || ends_clause(tokens[end]))) ++end;
    if (end == begin) {
      ++begin;
      continue;
    }
    std::stable_partition(tokens.begin() + static_cast<std::ptrdiff_t>(begin),
                          tokens.begin() + static_cast<std::ptrdiff_t>(end),
                          [](const std::string& t) { return t == "''"; });
    begin = end;
  }
}

class Tokenizer {
 public:
  explicit Tokenizer(TokenizerStyle style) : style_(style) {}

  std::vector<std::string> run(std::string_view text) {
    const bool whitespace = style_ == TokenizerStyle::Whitespace;
    const std::string ascii = whitespace ? std::string(text) : to_ascii_punctuation(text);
    const std::vector<std::string_view> chunks = split_chunks(ascii, !whitespace);
    for (size_t k = 0; k < chunks.size(); ++k) {
      if (whitespace) {
        tokens_.emplace_back(chunks[k]);
      } else if (std::ranges::any_of(chunks[k], is_word_byte)) {
        split_chunk(chunks[k], k + 1 == chunks.size());
      } else {
        split_punctuation(chunks[k]);
      }
    }
    return std::move(tokens_);
  }

 private:
  // A chunk holding at least one letter or digit: rules 2 to 5 of the header.
  void split_chunk(std::string_view chunk, bool ends_text) {
    std::string_view word = take_leading(chunk);
    std::vector<std::string> trailing = take_trailing(word);
    add_word(word);
    if (style_ == TokenizerStyle::Brown) {
      move_quotes_before_punctuation(trailing);
      const bool nothing_but_closers = std::ranges::all_of(trailing, [](const std::string& t) {
        return t == "''" || t == "'" ||
               (t.size() == 1 && kClosingBrackets.find(t[0]) != std::string_view::npos);
      });
      if (ends_text && word.ends_with('.') && nothing_but_closers) trailing.emplace_back(".");
    }
    tokens_.insert(tokens_.end(), trailing.begin(), trailing.end());
  }

  // Emits the opening punctuation of `word` and returns the rest, which starts with a word byte
  // or with an apostrophe of an elision.
  std::string_view take_leading(std::string_view word) {
    while (!is_word_byte(word.front())) {
      const char c = word.front();
      if (c == '"') {
        tokens_.push_back(double_quote(true));
        word.remove_prefix(1);
        continue;
      }
      const size_t n = punctuation_length(word);
      if (c == '\'' && n == 1 && keeps_leading_apostrophe(word)) break;
      // A sign or a currency stays on its number: "-5", "$1".
      if (n == 1 && kOpeningBrackets.find(c) == std::string_view::npos && c != '\'' && c != '`') break;
      if (c == '\'' && n == 1) single_quote_open_ = true;
      tokens_.emplace_back(word.substr(0, n));
      word.remove_prefix(n);
    }
    return word;
  }

  // Cuts the closing punctuation off `word` and returns it in text order.
  std::vector<std::string> take_trailing(std::string_view& word) {
    std::vector<std::string> reversed;
    while (!is_word_byte(word.back())) {
      const char c = word.back();
      const bool single = c == '\'' && !word.ends_with("''");
      if (single && !single_quote_open_ && keeps_trailing_apostrophe(word)) break;
      if (c == '.' && is_abbreviation(word)) break;
      if (c != '"' && c != '\'' && c != '.' && kClosingPunctuation.find(c) == std::string_view::npos)
        break;  // a symbol that is part of the word: "50%", "1/4"
      if (single) single_quote_open_ = false;
      const size_t n = word.ends_with("''") ? 2 : 1;
      reversed.push_back(c == '"' ? double_quote(false) : std::string(word.substr(word.size() - n)));
      word.remove_suffix(n);
    }
    return {reversed.rbegin(), reversed.rend()};
  }

  // Outside a single quote, "goin'" keeps its apostrophe; so does "parents'" in Brown, while UD
  // makes it a token. Inside one, a final apostrophe closes it: 'come in' → ' come in '.
  bool keeps_trailing_apostrophe(std::string_view word) const {
    if (word.ends_with("in'")) return true;
    return style_ == TokenizerStyle::Brown && word.ends_with("s'");
  }

  // A word with no punctuation left at its ends; UD style cuts its clitic off.
  void add_word(std::string_view word) {
    if (style_ == TokenizerStyle::UD) {
      const std::string lower = to_lower(word);
      size_t cut = lower == "cannot" ? 3 : 0;
      for (std::string_view clitic : kClitics) {
        if (cut == 0 && lower.size() > clitic.size() && lower.ends_with(clitic))
          cut = word.size() - clitic.size();
      }
      if (cut > 0) {
        tokens_.emplace_back(word.substr(0, cut));
        word.remove_prefix(cut);
      }
    }
    tokens_.emplace_back(word);
  }

  // A chunk without letters or digits ("--", "?!", a lone quote, "&"): each punctuation mark is a
  // token, and a run of other symbols is one.
  void split_punctuation(std::string_view chunk) {
    const size_t first = tokens_.size();
    while (!chunk.empty()) {
      size_t n = punctuation_length(chunk);
      if (chunk.front() == '"') {
        tokens_.push_back(double_quote(!quote_open_));
      } else {
        if (n == 1 && chunk.front() == '\'') single_quote_open_ = !single_quote_open_;
        if (n == 1 && kSplitting.find(chunk.front()) == std::string_view::npos) {
          while (n < chunk.size() && kSplitting.find(chunk[n]) == std::string_view::npos) ++n;
        }
        tokens_.emplace_back(chunk.substr(0, n));
      }
      chunk.remove_prefix(n);
    }
    if (style_ == TokenizerStyle::Brown) move_quotes_before_punctuation(std::span(tokens_).subspan(first));
  }

  std::string double_quote(bool opening) {
    quote_open_ = opening;
    if (style_ != TokenizerStyle::Brown) return "\"";
    return opening ? "``" : "''";
  }

  TokenizerStyle style_;
  bool quote_open_ = false;
  bool single_quote_open_ = false;
  std::vector<std::string> tokens_;
};

}  // namespace

std::vector<std::string> tokenize(std::string_view text, TokenizerStyle style) {
  return Tokenizer(style).run(text);
}

}  // namespace qkv::data
