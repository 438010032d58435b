#include "data/dates.h"

#include <array>
#include <cstdio>
#include <unordered_set>

#include "tensor/error.h"
#include "tensor/random.h"

namespace qkv::data {

namespace {


constexpr std::array<const char*, 12> kMonths = {"january",   "february", "march",    "april",
                                                 "may",       "june",     "july",     "august",
                                                 "september", "october",  "november", "december"};
constexpr std::array<const char*, 12> kMonthAbbrevs = {"jan", "feb", "mar", "apr", "may", "jun",
                                                       "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<const char*, 7> kWeekdays = {"monday", "tuesday",  "wednesday", "thursday",
                                                  "friday", "saturday", "sunday"};
constexpr std::array<const char*, 20> kOnes = {"zero",    "one",     "two",       "three",    "four",
                                               "five",    "six",     "seven",     "eight",    "nine",
                                               "ten",     "eleven",  "twelve",    "thirteen", "fourteen",
                                               "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
constexpr std::array<const char*, 20> kOnesOrdinal = {
    "zeroth",     "first",     "second",    "third",       "fourth",     "fifth",     "sixth",
    "seventh",    "eighth",    "ninth",     "tenth",       "eleventh",   "twelfth",   "thirteenth",
    "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth", "nineteenth"};
constexpr std::array<const char*, 10> kTens = {"",      "",      "twenty",  "thirty", "forty",
                                               "fifty", "sixty", "seventy", "eighty", "ninety"};
constexpr std::array<const char*, 10> kTensOrdinal = {"",          "",         "twentieth", "thirtieth",
                                                      "fortieth",  "fiftieth", "sixtieth",  "seventieth",
                                                      "eightieth", "ninetieth"};

// 0..99 in words: "seven", "forty-two".
std::string cardinal(int n) {
  if (n < 20) return kOnes[n];
  return n % 10 == 0 ? std::string(kTens[n / 10]) : std::string(kTens[n / 10]) + "-" + kOnes[n % 10];
}

// 1..31 as an ordinal: "first", "twenty-third", "thirtieth".
std::string ordinal(int n) {
  if (n < 20) return kOnesOrdinal[n];
  return n % 10 == 0 ? std::string(kTensOrdinal[n / 10])
                     : std::string(kTens[n / 10]) + "-" + kOnesOrdinal[n % 10];
}

// How many ways year_words can spell `year`.
int year_variants(int year) {
  if (year < 2000) return 1;
  if (year == 2000) return 1;
  if (year < 2010) return 2;
  return 3;
}

std::string year_words(int year, int variant) {
  const int hi = year / 100, lo = year % 100;
  if (year < 2000) {  // "nineteen hundred", "nineteen oh five", "nineteen ninety-nine"
    if (lo == 0) return cardinal(hi) + " hundred";
    return cardinal(hi) + (lo < 10 ? " oh " : " ") + cardinal(lo);
  }
  if (lo == 0) return "two thousand";
  switch (variant % year_variants(year)) {
    case 0:
      return lo < 10 ? "two thousand and " + cardinal(lo) : "twenty " + cardinal(lo);
    case 1:
      return lo < 10 ? "two thousand " + cardinal(lo) : "two thousand and " + cardinal(lo);
    default:
      return "two thousand " + cardinal(lo);
  }
}

std::string two_digits(int n) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02d", n);
  return buf;
}


}  // namespace

bool valid_date(const Date& d) {
  if (d.month < 1 || d.month > 12 || d.day < 1) return false;
  static constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (d.year % 4 == 0 && d.year % 100 != 0) || d.year % 400 == 0;
  return d.day <= kDays[d.month - 1] + (d.month == 2 && leap);
}

int weekday(const Date& d) {
  // Sakamoto's method (comp.lang.c, 1993) gives 0 = sunday; shifted so that 0 = monday.
  static constexpr int kOffsets[12] = {0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4};
  const int y = d.month < 3 ? d.year - 1 : d.year;
  const int sunday_based = (y + y / 4 - y / 100 + y / 400 + kOffsets[d.month - 1] + d.day) % 7;
  return (sunday_based + 6) % 7;
}

std::string format_date(const Date& d, int format, int variant) {
  if (!valid_date(d))
    throw ValueError("format_date: " + std::to_string(d.year) + "-" + std::to_string(d.month) + "-" +
                     std::to_string(d.day) + " is not a date");
  const std::string month = kMonths[d.month - 1], day = ordinal(d.day), year = std::to_string(d.year);
  switch (format) {
    case 0:
      return day + " of " + month + " " + year;
    case 1:
      return "the " + day + " of " + month + ", " + year_words(d.year, variant);
    case 2:
      return month + " " + day + ", " + year;
    case 3:
      return month + " " + std::to_string(d.day) + ", " + year;
    case 4:
      return std::to_string(d.day) + " " + kMonthAbbrevs[d.month - 1] + " " + year;
    case 5:
      return std::string(kWeekdays[weekday(d)]) + ", " + month + " " + std::to_string(d.day) + ", " + year;
    case 6:
      return two_digits(d.month) + "/" + two_digits(d.day) + "/" + year;
    case 7:
      return month + " " + day + " " + year_words(d.year, variant);
    default:
      throw ValueError("format_date: format " + std::to_string(format) + " is not in [0, " +
                       std::to_string(kNumFormats) + ")");
  }
}

std::string iso_date(const Date& d) {
  return std::to_string(d.year) + "-" + two_digits(d.month) + "-" + two_digits(d.day);
}

std::vector<DatePair> generate_pairs(int64_t n, uint64_t seed) {
  if (n < 0) throw ValueError("generate_pairs: n must be >= 0, got " + std::to_string(n));
  qkv::Generator rng(seed);
  std::vector<DatePair> pairs;
  std::unordered_set<std::string> seen;
  while (static_cast<int64_t>(pairs.size()) < n) {
    Date d;
    d.year = 1900 + static_cast<int>(rng.next_below(200));
    d.month = 1 + static_cast<int>(rng.next_below(12));
    d.day = 1 + static_cast<int>(rng.next_below(31));
    const int format = static_cast<int>(rng.next_below(kNumFormats)), variant = static_cast<int>(rng.next_below(3));
    if (!valid_date(d)) continue;  // rejection keeps every valid date equally likely
    DatePair pair{format_date(d, format, variant), iso_date(d)};
    if (seen.insert(pair.source).second) pairs.push_back(std::move(pair));
  }
  return pairs;
}

DateData generate_data(uint64_t seed, const qkv::data::SplitSizes& sizes) {
  if (sizes.train < 0 || sizes.dev < 0 || sizes.test < 0)
    throw ValueError("generate_data: split sizes must be >= 0");
  std::vector<DatePair> all = generate_pairs(sizes.train + sizes.dev + sizes.test, seed);
  DateData data;
  data.train.assign(all.begin(), all.begin() + sizes.train);
  data.dev.assign(all.begin() + sizes.train, all.begin() + sizes.train + sizes.dev);
  data.test.assign(all.begin() + sizes.train + sizes.dev, all.end());
  return data;
}

}  // namespace qkv::data
