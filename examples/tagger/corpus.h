// The tagger's built-in data: English-like sentences tagged with Universal POS tags, generated
// from a small grammar so that a word's tag depends on its context and position.
//
// "i saw a saw": the first saw is a VERB, the second a NOUN. A model that looks at one word at a
// time must give both the same tag; a model that looks at the sentence can tell them apart. The
// grammar is full of such words (saw watch book light can that like to have well back fast ...),
// often twice in one sentence with different tags ("they can can the can"), and it is built so
// that the context always decides: a human reading the sentence can tag every word. So a model
// with context can approach 100% while the majority-tag baseline stays far below on these words.
//
// Ambiguity is measured against training data, once, here: a word is *ambiguous* when the
// training sentences show it with two or more different tags, and an ambiguous token is an
// occurrence of such a word (TagLexicon::ambiguous). The tagger's evaluation uses the same rule.
//
// The code is in corpus/, a file per job: grammar.cpp (the sentence generator; its words are in
// lexicon.h), baselines.cpp (TagLexicon, the majority-tag and word-window taggers) and
// statistics.cpp (tag-changing repeats, scoring, corpus statistics).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "data/conll.h"
#include "examples/common/splits.h"

namespace tagger {

using qkv::data::TaggedSentence;

// `n` sentences of 3 to 40 tokens, lower-case except names; the same seed gives the same text.
std::vector<TaggedSentence> generate_sentences(int64_t n, uint64_t seed);

using Corpus = qkv::examples::Splits<TaggedSentence>;

// train + dev + test sentences from one stream of the grammar, split in that order.
Corpus generate_corpus(uint64_t seed, const qkv::examples::SplitSizes& sizes = {8000, 1000, 1000});

// Writes dir/train.conllu, dir/dev.conllu and dir/test.conllu, creating dir if needed.
void write_corpus(const Corpus& corpus, const std::string& dir);

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
