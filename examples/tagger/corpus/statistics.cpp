// What is counted on tagged sentences: tag-changing repeats ("i saw a saw"), the accuracy of
// predicted tags overall, on ambiguous words and on those repeats, and the corpus statistics that
// `tagger train` and `tagger data` print.
#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>

#include "examples/tagger/corpus.h"
#include "tensor/error.h"

namespace tagger {

std::vector<bool> tag_changing_repeats(const TaggedSentence& sentence) {
  const size_t n = sentence.words.size();
  std::vector<bool> marks(n, false);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (sentence.words[i] == sentence.words[j] && sentence.tags[i] != sentence.tags[j]) marks[i] = true;
  return marks;
}

bool repeats_with_different_tags(const TaggedSentence& sentence) {
  const std::vector<bool> marks = tag_changing_repeats(sentence);
  return std::find(marks.begin(), marks.end(), true) != marks.end();
}

TaggingScore score_tags(const TagLexicon& lexicon, const std::vector<TaggedSentence>& gold,
                        const std::vector<std::vector<std::string>>& predicted) {
  if (gold.size() != predicted.size())
    throw qkv::ValueError("score_tags: " + std::to_string(gold.size()) + " gold sentences but " +
                          std::to_string(predicted.size()) + " predicted");
  TaggingScore score;
  for (size_t s = 0; s < gold.size(); ++s) {
    const TaggedSentence& g = gold[s];
    if (g.tags.size() != predicted[s].size())
      throw qkv::ValueError("score_tags: sentence " + std::to_string(s) + " has " +
                            std::to_string(g.tags.size()) + " gold tags but " +
                            std::to_string(predicted[s].size()) + " predicted");
    const std::vector<bool> repeated = tag_changing_repeats(g);
    for (size_t i = 0; i < g.tags.size(); ++i) {
      const bool correct = predicted[s][i] == g.tags[i];
      for (Accuracy* a : {&score.overall, lexicon.ambiguous(g.words[i]) ? &score.ambiguous : nullptr,
                          repeated[i] ? &score.repeated : nullptr,
                          lexicon.seen(g.words[i]) ? nullptr : &score.unseen}) {
        if (a == nullptr) continue;
        ++a->total;
        a->correct += correct;
      }
    }
  }
  return score;
}

double CorpusStats::ambiguous_token_fraction() const {
  return tokens == 0 ? 0.0 : static_cast<double>(ambiguous_tokens) / tokens;
}

CorpusStats corpus_stats(const std::vector<TaggedSentence>& sentences) {
  CorpusStats stats;
  if (sentences.empty()) return stats;
  const TagLexicon lexicon(sentences);
  stats.sentences = static_cast<int64_t>(sentences.size());
  stats.word_types = lexicon.word_types();
  stats.ambiguous_types = lexicon.ambiguous_types();
  stats.min_length = INT64_MAX;
  for (const TaggedSentence& s : sentences) {
    const int64_t length = static_cast<int64_t>(s.words.size());
    stats.tokens += length;
    stats.min_length = std::min(stats.min_length, length);
    stats.max_length = std::max(stats.max_length, length);
    ++stats.length_histogram[(length + 4) / 5 * 5];
    stats.sentences_with_repeats += repeats_with_different_tags(s);
    for (size_t i = 0; i < s.words.size(); ++i) {
      stats.ambiguous_tokens += lexicon.ambiguous(s.words[i]);
      ++stats.tag_counts[s.tags[i]];
    }
  }
  return stats;
}

void print_stats(std::ostream& out, const CorpusStats& stats) {
  out << stats.sentences << " sentences, " << stats.tokens << " tokens, " << stats.word_types
      << " word types\n"
      << stats.ambiguous_types << " ambiguous word types; " << stats.ambiguous_tokens << " ambiguous tokens ("
      << 100.0 * stats.ambiguous_token_fraction() << "%)\n"
      << stats.sentences_with_repeats << " sentences repeat a word with a different tag (\"i saw a saw\")\n"
      << "lengths " << stats.min_length << ".." << stats.max_length << ":";
  for (const auto& [upper, count] : stats.length_histogram)
    out << "  " << std::max<int64_t>(upper - 4, 0) << "-" << upper << ": " << count;
  out << "\ntags:";
  for (const auto& [tag, count] : stats.tag_counts) out << " " << tag << " " << count;
  out << "\n";
}

}  // namespace tagger
