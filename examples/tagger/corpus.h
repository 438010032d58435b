// What the tagger measures of its data: the built-in corpus (data/builtin_corpus.h, English-like
// sentences whose tags only context decides) or real text.
//
// Ambiguity is measured against training data, once, here: a word is *ambiguous* when the
// training sentences show it with two or more different tags, and an ambiguous token is an
// occurrence of such a word (TagLexicon::ambiguous). The tagger's evaluation uses the same rule.
//
// The code is in corpus/, a file per job: baselines.cpp (TagLexicon, the majority-tag and
// word-window taggers) and statistics.cpp (tag-changing repeats, scoring, corpus statistics).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "data/builtin_corpus.h"
#include "data/conll.h"

namespace tagger {

using qkv::data::Corpus;
using qkv::data::generate_corpus;
using qkv::data::TaggedSentence;
using qkv::data::write_corpus;

// The tags each word carries in the training data, and how often.
class TagLexicon {
 public:
  explicit TagLexicon(const std::vector<TaggedSentence>& train);

  bool seen(const std::string& word) const { return counts_.count(word) != 0; }
  // Seen with two or more tags: the one definition of an ambiguous word.
  bool ambiguous(const std::string& word) const;
  // The word's most frequent tag (ties in byte order); for an unseen word, the most frequent
  // tag of the whole training data.
  const std::string& majority_tag(const std::string& word) const;

  int64_t word_types() const { return static_cast<int64_t>(counts_.size()); }
  int64_t ambiguous_types() const;

 private:
  std::map<std::string, std::map<std::string, int64_t>> counts_;  // word -> tag -> count
  std::map<std::string, std::string> majority_;
  std::string overall_majority_;
};

// Does some word occur twice in the sentence with different tags ("i saw a saw")?
bool repeats_with_different_tags(const TaggedSentence& sentence);

// Per token: does its word occur elsewhere in the sentence with a different tag?
std::vector<bool> tag_changing_repeats(const TaggedSentence& sentence);

struct Accuracy {
  int64_t correct = 0;
  int64_t total = 0;
  double value() const { return total == 0 ? 0.0 : static_cast<double>(correct) / total; }
};

struct TaggingScore {
  Accuracy overall;
  Accuracy ambiguous;  // tokens of ambiguous words (TagLexicon::ambiguous)
  Accuracy repeated;   // tokens marked by tag_changing_repeats, e.g. both saws of "i saw a saw"
  Accuracy unseen;     // tokens of words the training data never shows (TagLexicon::seen)
};

// Scores predicted tags against the gold tags of `gold`. Throws qkv::ValueError when the counts
// of sentences or tokens differ.
TaggingScore score_tags(const TagLexicon& lexicon, const std::vector<TaggedSentence>& gold,
                        const std::vector<std::vector<std::string>>& predicted);

// The unigram baseline: every word gets its majority training tag, whatever its context.
std::vector<std::vector<std::string>> majority_tags(const TagLexicon& lexicon,
                                                    const std::vector<TaggedSentence>& sentences);

// A rule-free context baseline: the majority training tag of (previous word, word, next word),
// backing off to (previous word, word), then (word, next word), then the word alone. It knows
// no grammar, so whatever it gains over majority_tags is ambiguity that context resolves.
std::vector<std::vector<std::string>> context_window_tags(const std::vector<TaggedSentence>& train,
                                                          const std::vector<TaggedSentence>& sentences);

struct CorpusStats {
  int64_t sentences = 0;
  int64_t tokens = 0;
  int64_t word_types = 0;
  int64_t ambiguous_types = 0;   // within these sentences
  int64_t ambiguous_tokens = 0;  // tokens of those types
  int64_t min_length = 0, max_length = 0;
  int64_t sentences_with_repeats = 0;           // repeats_with_different_tags
  std::map<int64_t, int64_t> length_histogram;  // lengths 3-5 under 5, 6-10 under 10, ...
  std::map<std::string, int64_t> tag_counts;
  double ambiguous_token_fraction() const;
};

// Statistics of `sentences`, whose own tags decide which words are ambiguous.
CorpusStats corpus_stats(const std::vector<TaggedSentence>& sentences);
void print_stats(std::ostream& out, const CorpusStats& stats);

}  // namespace tagger
