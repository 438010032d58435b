// The baselines the tagger is measured against, both counted on the training data: the majority
// tag of each word (TagLexicon, which also defines which words are ambiguous), and the majority tag
// of each word in its window of neighbours.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "examples/tagger/corpus.h"
#include "tensor/error.h"

namespace tagger {
namespace {

// The most frequent key; ties go to the first in byte order.
const std::string& most_frequent(const std::map<std::string, int64_t>& counts) {
  auto best = counts.begin();
  for (auto it = counts.begin(); it != counts.end(); ++it)
    if (it->second > best->second) best = it;
  return best->first;
}

}  // namespace

TagLexicon::TagLexicon(const std::vector<TaggedSentence>& train) {
  std::map<std::string, int64_t> all_tags;
  for (const TaggedSentence& s : train) {
    for (size_t i = 0; i < s.words.size(); ++i) {
      ++counts_[s.words[i]][s.tags[i]];
      ++all_tags[s.tags[i]];
    }
  }
  if (all_tags.empty()) throw qkv::ValueError("TagLexicon: the training data has no tokens");
  overall_majority_ = most_frequent(all_tags);
  for (const auto& [word, tags] : counts_) majority_[word] = most_frequent(tags);
}

bool TagLexicon::ambiguous(const std::string& word) const {
  const auto it = counts_.find(word);
  return it != counts_.end() && it->second.size() >= 2;
}

const std::string& TagLexicon::majority_tag(const std::string& word) const {
  const auto it = majority_.find(word);
  return it == majority_.end() ? overall_majority_ : it->second;
}

int64_t TagLexicon::ambiguous_types() const {
  return std::count_if(counts_.begin(), counts_.end(),
                       [](const auto& entry) { return entry.second.size() >= 2; });
}

std::vector<std::vector<std::string>> majority_tags(const TagLexicon& lexicon,
                                                    const std::vector<TaggedSentence>& sentences) {
  std::vector<std::vector<std::string>> tags;
  for (const TaggedSentence& s : sentences) {
    std::vector<std::string>& row = tags.emplace_back();
    for (const std::string& word : s.words) row.push_back(lexicon.majority_tag(word));
  }
  return tags;
}

std::vector<std::vector<std::string>> context_window_tags(const std::vector<TaggedSentence>& train,
                                                          const std::vector<TaggedSentence>& sentences) {
  using Counts = std::map<std::string, int64_t>;
  // Keys join words with a separator no word holds.
  auto key = [](const std::string& a, const std::string& b, const std::string& c = "") {
    return a + '\x1f' + b + '\x1f' + c;
  };
  auto around = [](const TaggedSentence& s, size_t i) {
    return std::pair<std::string, std::string>{i == 0 ? "<s>" : s.words[i - 1],
                                               i + 1 == s.words.size() ? "</s>" : s.words[i + 1]};
  };
  std::map<std::string, Counts> both, left, right;
  for (const TaggedSentence& s : train) {
    for (size_t i = 0; i < s.words.size(); ++i) {
      const auto [prev, next] = around(s, i);
      ++both[key(prev, s.words[i], next)][s.tags[i]];
      ++left[key(prev, s.words[i])][s.tags[i]];
      ++right[key(s.words[i], next)][s.tags[i]];
    }
  }
  const TagLexicon lexicon(train);
  std::vector<std::vector<std::string>> tags;
  for (const TaggedSentence& s : sentences) {
    std::vector<std::string>& row = tags.emplace_back();
    for (size_t i = 0; i < s.words.size(); ++i) {
      const auto [prev, next] = around(s, i);
      if (auto it = both.find(key(prev, s.words[i], next)); it != both.end())
        row.push_back(most_frequent(it->second));
      else if (auto it = left.find(key(prev, s.words[i])); it != left.end())
        row.push_back(most_frequent(it->second));
      else if (auto it = right.find(key(s.words[i], next)); it != right.end())
        row.push_back(most_frequent(it->second));
      else
        row.push_back(lexicon.majority_tag(s.words[i]));
    }
  }
  return tags;
}

}  // namespace tagger
