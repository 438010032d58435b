// BLEU as d2l defines it for its seq2seq chapter (d2l 10.7.6, after Papineni et al. 2002), for one
// prediction against one reference:
//
//   BLEU = exp(min(0, 1 - len_label / len_pred)) · Π_{n=1..k} p_n^(1/2^n)
//
// where p_n is the clipped precision of the prediction's n-grams: each n-gram of the prediction
// counts as a match as long as the reference has an unmatched copy of it left, and p_n is the
// matches over the prediction's len_pred - n + 1 n-grams. The first factor penalizes predictions
// shorter than the reference; the exponent 1/2^n gives longer n-grams more weight (a p_n below 1
// raised to a smaller power is larger, so a wrong long n-gram costs less), d2l's choice where
// Papineni et al. take a geometric mean. A perfect prediction scores 1.
//
// d2l splits sentences on spaces; here tokens are whatever the caller passes (characters for the
// dates). Where d2l divides by zero — an empty prediction, or one shorter than n for some n <= k —
// this returns 0: there is no n-gram of the prediction to be right.
#pragma once

#include <string>
#include <vector>

namespace seq2seq {

// Throws qkv::ValueError for k < 1.
double bleu(const std::vector<std::string>& pred, const std::vector<std::string>& label, int k);

// BLEU over characters: bleu_chars("2021-03-03", "2021-03-30", 2).
double bleu_chars(const std::string& pred, const std::string& label, int k);

}  // namespace seq2seq
