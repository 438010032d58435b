// The seq2seq example's data: dates written out in English, to be translated into ISO 8601.
//
//   "the twenty-third of november, twenty twenty-six"  →  "2026-11-23"
//   "11/23/2026"                                       →  "2026-11-23"
//   "monday, november 23, 2026"                        →  "2026-11-23"
//
// A toy translation task in the spirit of d2l's English-French one, generated here so that the
// example needs no download. Both sides are read one character at a time. The output is shorter
// than most inputs, and the alignment is not monotone: the year comes first in the output but
// last in every input, the month moves before or after the day, and a weekday or an "of" maps to
// nothing. So a decoder step must look at a different part of the source each time — the case
// for attention (Bahdanau et al. 2015; d2l 10.4).
//
// Dates are uniform over 1900-01-01 .. 2099-12-31; each is written in one of kNumFormats surface
// formats (format_date documents them), spelled-out years in several ways. The same seed always
// gives the same pairs, on every platform (qkv::Generator, tensor/random.h).
#pragma once

#include "data/splits.h"

#include <cstdint>
#include <string>
#include <vector>

#include "data/vocab.h"

namespace seq2seq {

struct Date {
  int year = 2000, month = 1, day = 1;
  bool operator==(const Date&) const = default;
};

// Whether the date exists in the Gregorian calendar.
bool valid_date(const Date& date);
// 0 = monday ... 6 = sunday.
int weekday(const Date& date);

inline constexpr int kNumFormats = 8;

// The date written in surface format `format` (0 .. kNumFormats-1); `variant` picks among the ways
// of spelling a year in words, and is ignored by formats without one:
//   0  twenty-third of november 2026
//   1  the twenty-third of november, twenty twenty-six
//   2  november twenty-third, 2026
//   3  november 23, 2026
//   4  23 nov 2026
//   5  monday, november 23, 2026
//   6  11/23/2026
//   7  november twenty-third two thousand and twenty-six
// Years in words: 1905 "nineteen oh five", 1900 "nineteen hundred", 2000 "two thousand", 2006
// "two thousand and six" or "two thousand six", 2026 "twenty twenty-six" or "two thousand and
// twenty-six" or "two thousand twenty-six".
// Throws qkv::ValueError for an invalid date or format.
std::string format_date(const Date& date, int format, int variant = 0);

// "2026-11-23".
std::string iso_date(const Date& date);

struct DatePair {
  std::string source;  // the date in words
  std::string target;  // ISO 8601
  bool operator==(const DatePair&) const = default;
};

// `n` pairs with distinct sources, from one stream of random dates, formats and year spellings;
// each pair depends only on those before it, so a longer run starts with a shorter one.
std::vector<DatePair> generate_pairs(int64_t n, uint64_t seed);

using DateData = qkv::data::Splits<DatePair>;

// train + dev + test from one call of generate_pairs, split in that order: no source occurs in
// two splits.
DateData generate_data(uint64_t seed, const qkv::data::SplitSizes& sizes = {8000, 500, 1000});

// ---- tokens --------------------------------------------------------------------------------------

inline constexpr const char* kBos = "<bos>";
inline constexpr const char* kEos = "<eos>";

// The characters of the sources and of the targets, for the vocabularies.
inline constexpr const char* kSourceAlphabet = " ,-/0123456789abcdefghijklmnopqrstuvwxyz";
inline constexpr const char* kTargetAlphabet = "-0123456789";

// Vocabularies of one character per token after d2l's reserved tokens <pad> <unk> <bos> <eos>
// (ids 0..3), then the alphabet in byte order. Fixed, so a checkpoint needs no vocabulary file.
qkv::data::Vocab source_vocab();
qkv::data::Vocab target_vocab();

// The longest source the model accepts, in characters (format_date's longest is 63: "the
// twenty-seventh of september, two thousand and seventy-three").
inline constexpr int64_t kMaxSourceChars = 100;

// A user's date as source ids: lower-cased, one id per character, then <eos>. Throws
// qkv::ValueError for an empty text, one longer than kMaxSourceChars, or a character outside
// kSourceAlphabet (naming it and its position).
std::vector<int64_t> encode_source(const qkv::data::Vocab& vocab, const std::string& text);

// Target ids followed by <eos>. Throws qkv::ValueError for a character outside the vocabulary.
std::vector<int64_t> encode_target(const qkv::data::Vocab& vocab, const std::string& text);

// The characters of ids up to the first <eos> (excluded); reserved tokens other than <eos> are
// dropped.
std::string decode_ids(const qkv::data::Vocab& vocab, const std::vector<int64_t>& ids);

}  // namespace seq2seq
