// Dates written out in English, the seq2seq example's data: dates written out in English, to be translated into ISO 8601.
//
//   "the twenty-third of november, twenty twenty-six"  →  "2026-11-23"
//   "11/23/2026"                                       →  "2026-11-23"
//   "monday, november 23, 2026"                        →  "2026-11-23"
//
// A toy translation task in the spirit of d2l's English-French one, generated here so that the
// example needs no download (examples/seq2seq reads them one character at a time). Both sides are read one character at a time. The output is shorter
// than most inputs, and the alignment is not monotone: the year comes first in the output but
// last in every input, the month moves before or after the day, and a weekday or an "of" maps to
// nothing. So a decoder step must look at a different part of the source each time — the case
// for attention (Bahdanau et al. 2015; d2l 10.4).
//
// Dates are uniform over 1900-01-01 .. 2099-12-31; each is written in one of kNumFormats surface
// formats (format_date documents them), spelled-out years in several ways. The same seed always
// gives the same pairs, on every platform (qkv::Generator, tensor/random.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/splits.h"

namespace qkv::data {


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

using DateData = Splits<DatePair>;

// train + dev + test from one call of generate_pairs, split in that order: no source occurs in
// two splits.
DateData generate_data(uint64_t seed, const SplitSizes& sizes = {8000, 500, 1000});

}  // namespace qkv::data
