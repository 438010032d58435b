// What the language model is measured against: models of the text that need no training loop,
// each scored like the network in bits per character (bpc) on the same text.
//
//   bpc = −Σ log2 p(c_i | what came before) / (number of characters)
//
// over every character of every piece (chapter). Text is ids in [0, V), id 0 the unknown symbol
// (a character that training never saw; it may occur in validation and test). No model reads
// across pieces: at the start of a piece the context is empty, and it grows from there.
//
// - unigram_bits: each character on its own, add-one (Laplace) smoothed: p(w) = (c(w) + 1) / (N + V).
// - KneserNey: the character n-gram model with interpolated Kneser–Ney smoothing, the strongest
//   classic n-gram smoothing (Chen & Goodman 1999, "An empirical study of smoothing techniques for
//   language modeling", section 3). Its formulas are in baselines.cpp. best_kneser_ney_order picks
//   the order on validation text.
// - compressor_bits: a general-purpose compressor (xz, bzip2) as a language model: what compressing
//   the test text costs once the compressor has seen the training text.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lm {

using Ids = std::vector<std::vector<int32_t>>;  // pieces of ids

// The unigram model with add-one smoothing over all V ids, counted on `train`: bpc on `text`.
// ValueError for V < 1, an id outside [0, V), or a text without characters.
double unigram_bits(const Ids& train, const Ids& text, int64_t V);

struct NgramTables;  // the counts, in baselines.cpp

// The interpolated Kneser–Ney character n-gram model of `order` (n-grams of up to `order` ids:
// contexts of order − 1), counted on `train`. One discount per order and kind of count,
// D = n1 / (n1 + 2 n2) from the count-of-counts (baselines.cpp says more).
class KneserNey {
 public:
  // ValueError for V < 1, order < 1, an order whose n-grams do not fit a 64-bit key (order ×
  // ceil(log2 V) bits), an id of train outside [0, V), or a train without characters.
  KneserNey(const Ids& train, int64_t V, int order);

  // bpc on `text`; ValueError for an id outside [0, V) or a text without characters.
  double bits(const Ids& text) const;
  // p(next | context): context is the preceding ids of the piece, of which the last order − 1 are
  // used (fewer at the start of a piece). Over all `next` in [0, V) these sum to 1. ValueError for
  // an id outside [0, V).
  double probability(const std::vector<int32_t>& context, int32_t next) const;
  int order() const { return order_; }

 private:
  std::shared_ptr<const NgramTables> tables_;
  int order_;
};

struct NgramChoice {
  int order;                     // the best, fewest ids of context on a tie
  double validation_bits;        // its bpc on validation
  std::vector<double> by_order;  // by_order[n − 1]: the validation bpc of order n
};

// Fits orders 1 .. max_order on train (counting once, for max_order) and returns the order with the
// lowest bpc on validation. ValueError as KneserNey's for max_order, and as bits' for validation.
NgramChoice best_kneser_ney_order(const Ids& train, const Ids& validation, int64_t V, int max_order);

// A compressor as a language model: the bytes that compressing train + test costs over compressing
// train alone, in bits per test character: the compressor's conditional bpc, as compressors are
// compared with language models (e.g. for the Hutter Prize). `argv` is the command that compresses
// its standard input to its standard output: {"xz", "-9e", "-c"}, {"bzip2", "-9", "-c"}.
// train_utf8 and test_utf8 are the texts as UTF-8 (test right after train), test_chars the number
// of characters (code points) of the test text. The program runs twice, on files in a fresh
// temporary directory that is removed however this ends. ValueError, naming the command and its
// exit code, when it fails, and for an empty argv or test_chars < 1.
//
// There is no rate, and `none` says why, when the program is not installed, and when train + test
// compresses to no more bytes than train alone: a block compressor (bzip2) can pack the longer
// text tighter when its blocks fall otherwise, and a cost of zero or less bits is no rate of
// anything.
struct CompressorBits {
  std::optional<double> bits;  // bits per test character
  std::string none;            // why there is no rate: "not installed", "no rate: ..."
};
CompressorBits compressor_bits(const std::vector<std::string>& argv, const std::string& train_utf8,
                               const std::string& test_utf8, int64_t test_chars);

}  // namespace lm
