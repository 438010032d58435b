#include "examples/seq2seq/bleu.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tensor/error.h"

namespace seq2seq {

double bleu(const std::vector<std::string>& pred, const std::vector<std::string>& label, int k) {
  if (k < 1) throw qkv::ValueError("bleu: k must be >= 1, got " + std::to_string(k));
  const auto len_pred = static_cast<int64_t>(pred.size()), len_label = static_cast<int64_t>(label.size());
  if (len_pred < k) return 0.0;
  double score = std::exp(std::min(0.0, 1.0 - static_cast<double>(len_label) / static_cast<double>(len_pred)));
  for (int n = 1; n <= k; ++n) {
    // The reference's n-grams with their counts; a match uses one copy up.
    std::map<std::vector<std::string>, int64_t> label_subs;
    for (int64_t i = 0; i + n <= len_label; ++i) ++label_subs[{label.begin() + i, label.begin() + i + n}];
    int64_t matches = 0;
    for (int64_t i = 0; i + n <= len_pred; ++i) {
      auto it = label_subs.find({pred.begin() + i, pred.begin() + i + n});
      if (it != label_subs.end() && it->second > 0) {
        ++matches;
        --it->second;
      }
    }
    score *= std::pow(static_cast<double>(matches) / static_cast<double>(len_pred - n + 1), std::pow(0.5, n));
  }
  return score;
}

double bleu_chars(const std::string& pred, const std::string& label, int k) {
  auto chars = [](const std::string& s) {
    std::vector<std::string> tokens;
    for (const char c : s) tokens.emplace_back(1, c);
    return tokens;
  };
  return bleu(chars(pred), chars(label), k);
}

}  // namespace seq2seq
