// The baselines of baselines.h. Most of the file is the Kneser–Ney model.
//
// Interpolated Kneser–Ney (Chen & Goodman 1999, section 3), for the next id w after the context h
// (the last n − 1 ids), with h' the context without its oldest id:
//
//   P_KN(w | h) = max(c(hw) − D, 0) / c(h•)  +  D · N1+(h•) / c(h•) · P_KN(w | h')
//
//   c(h•) = Σ_w c(hw)              how often h is followed by anything
//   N1+(h•) = |{w : c(hw) > 0}|    how many different ids follow h
//
// Every seen n-gram gives up D of its count, and what they give up (D · N1+(h•) in all) goes to the
// lower order, so the probabilities still sum to 1. Below order 1 is the uniform 1/V: every id,
// the unknown 0 included, gets some probability. A context never seen followed by anything in
// train (c(h•) = 0) has nothing to say and leaves w to the next lower order: P_KN(w | h') alone.
//
// What c counts is what makes it Kneser–Ney. At the highest order it is the raw count c(hw), how
// often hw occurs in train. At the lower orders, which matter only when the higher order knows
// little, it is the continuation count N1+(•hw): how many different ids come right before hw.
// A lower order then says how likely w is after a context it has not seen before, not how
// frequent w is. The classic example is in words: "Francisco" is frequent but follows little
// else than "San", so after an unseen context it should get little of the mass left over. The
// start of a piece counts as one more left neighbour, as the sentence-start symbol <s> does in
// SRILM and KenLM, so that every n-gram of train has a continuation count of at least 1.
//
// The discount: one per order and kind of count, D = n1 / (n1 + 2 n2), where n1 and n2 are how
// many n-grams of that order have a count (raw, or continuation) of exactly 1 and exactly 2: the
// estimate of Ney, Essen & Kneser (1994) that Chen & Goodman use. Their modified Kneser–Ney has
// three discounts per order (for counts 1, 2 and 3+); one is the original model, enough for a
// baseline.
// On a text where no n-gram occurs once (n1 = 0) the estimate would be 0 and the order would give
// the lower ones nothing, so n1 is taken as at least 1 there.
//
// At the start of a piece there are fewer ids before w than order − 1: at position i the model is
// the one of order i + 1, whose highest order (i + 1) uses raw counts.
#include "examples/lm/baselines.h"

#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <unordered_map>

#include "examples/common/npm_package.h"
#include "tensor/error.h"

namespace lm {
namespace fs = std::filesystem;

// The counts of one n-gram u of train: as an n-gram, and as the context of the n-grams one id
// longer that start with it.
struct NgramEntry {
  uint32_t raw = 0;                 // c(u)
  uint32_t continuation = 0;        // N1+(•u), piece starts included; 0 at the highest order
  uint32_t raw_total = 0;           // c(u•) = Σ_w c(uw)
  uint32_t continuation_total = 0;  // Σ_w N1+(•uw)
  uint32_t followers = 0;           // N1+(u•)
  bool starts_piece = false;        // some piece starts with u
};

// The n-grams of train of 1 .. max_order ids, each packed into a 64-bit key of bits_per_id bits per
// id, the oldest id highest. So the last ids of a piece, shifted in one at a time, hold the key of
// every n-gram that ends at the current id: key & mask(n). Dropping an n-gram's last id is
// key >> bits_per_id, dropping its first is key & mask(n − 1). A model of lower order uses the same
// tables (both kinds of count are kept for every order).
struct NgramTables {
  int64_t vocabulary = 0;
  int bits_per_id = 0;
  int max_order = 0;
  NgramEntry root;  // the empty context: its totals are over the 1-grams
  std::vector<std::unordered_map<uint64_t, NgramEntry>> tables;  // tables[n − 1]: the n-grams
  std::vector<double> raw_discount, continuation_discount;       // [n − 1]: the D of order n

  uint64_t mask(int n) const {
    return n * bits_per_id >= 64 ? ~uint64_t{0} : (uint64_t{1} << (n * bits_per_id)) - 1;
  }
  const NgramEntry* find(int n, uint64_t key) const {
    const auto it = tables[n - 1].find(key);
    return it == tables[n - 1].end() ? nullptr : &it->second;
  }
};

namespace {

int64_t characters(const Ids& pieces) {
  int64_t n = 0;
  for (const std::vector<int32_t>& piece : pieces) n += static_cast<int64_t>(piece.size());
  return n;
}

void check_vocabulary(int64_t V, const std::string& where) {
  if (V < 1 || V > std::numeric_limits<int32_t>::max())
    throw qkv::ValueError(where + ": vocabulary size " + std::to_string(V) +
                          "; expected 1 to 2147483647 ids");
}

// ValueError unless every id is in [0, V) and (when `nonempty`) there is at least one.
void check_ids(const Ids& pieces, int64_t V, const std::string& where, bool nonempty) {
  for (size_t p = 0; p < pieces.size(); ++p) {
    for (size_t i = 0; i < pieces[p].size(); ++i) {
      if (pieces[p][i] < 0 || pieces[p][i] >= V)
        throw qkv::ValueError(where + " has id " + std::to_string(pieces[p][i]) + " (piece " +
                              std::to_string(p) + ", position " + std::to_string(i) +
                              "); expected ids in [0, " + std::to_string(V) + ")");
    }
  }
  if (nonempty && characters(pieces) == 0)
    throw qkv::ValueError(where + " has no characters; expected at least one");
}

// ceil(log2 V) bits, at least 1: enough for the ids 0 .. V − 1.
int bits_per_id(int64_t V) {
  return std::max(1, static_cast<int>(std::bit_width(static_cast<uint64_t>(V - 1))));
}

void check_order(int64_t V, int order, const std::string& where) {
  if (order < 1) throw qkv::ValueError(where + ": order " + std::to_string(order) + "; expected at least 1");
  const int bits = bits_per_id(V);
  if (order * bits > 64)
    throw qkv::ValueError(where + ": order " + std::to_string(order) + " does not fit a 64-bit n-gram key (" +
                          std::to_string(bits) + " bits per id for " + std::to_string(V) + " ids, " +
                          std::to_string(order * bits) + " bits); expected order at most " +
                          std::to_string(64 / bits));
}

// c(u) for every n-gram u of train of up to max_order ids, and which ones start a piece.
void count_ngrams(NgramTables& t, const Ids& train) {
  const int64_t n_chars = characters(train);
  for (int n = 1; n <= t.max_order; ++n) {
    // At most one new n-gram per character, and at most V^n of them.
    const double possible = std::pow(static_cast<double>(t.vocabulary), n);
    t.tables[n - 1].reserve(static_cast<size_t>(std::min(static_cast<double>(n_chars), possible)));
  }
  for (const std::vector<int32_t>& piece : train) {
    uint64_t window = 0;  // the last ids of the piece, the newest lowest
    for (size_t i = 0; i < piece.size(); ++i) {
      window = (window << t.bits_per_id) | static_cast<uint64_t>(piece[i]);
      const int longest = static_cast<int>(std::min<size_t>(i + 1, t.max_order));
      for (int n = 1; n <= longest; ++n) {
        NgramEntry& entry = t.tables[n - 1][window & t.mask(n)];
        ++entry.raw;
        if (static_cast<size_t>(n) == i + 1) entry.starts_piece = true;
      }
    }
  }
}

// N1+(•u) for every n-gram u below the highest order: one for each distinct n-gram one id longer
// that ends with u (each is a different id before u), and one if some piece starts with u.
void count_continuations(NgramTables& t) {
  for (int n = 1; n < t.max_order; ++n) {
    for (auto& [key, entry] : t.tables[n - 1]) entry.continuation = entry.starts_piece ? 1 : 0;
    for (const auto& [key, longer] : t.tables[n]) ++t.tables[n - 1].at(key & t.mask(n)).continuation;
  }
}

// c(h•), Σ_w N1+(•hw) and N1+(h•) of every context h, from the n-grams hw that extend it.
void add_context_totals(NgramTables& t) {
  for (int n = 1; n <= t.max_order; ++n) {
    for (const auto& [key, entry] : t.tables[n - 1]) {
      NgramEntry& context = n == 1 ? t.root : t.tables[n - 2].at(key >> t.bits_per_id);
      context.raw_total += entry.raw;
      context.continuation_total += entry.continuation;
      ++context.followers;
    }
  }
}

// D = n1 / (n1 + 2 n2), n1 taken as at least 1 (see the top of the file).
double discount(int64_t n1, int64_t n2) {
  n1 = std::max<int64_t>(n1, 1);
  return static_cast<double>(n1) / static_cast<double>(n1 + 2 * n2);
}

void estimate_discounts(NgramTables& t) {
  for (int n = 1; n <= t.max_order; ++n) {
    int64_t raw1 = 0, raw2 = 0, continuation1 = 0, continuation2 = 0;  // the count-of-counts
    for (const auto& [key, entry] : t.tables[n - 1]) {
      raw1 += entry.raw == 1;
      raw2 += entry.raw == 2;
      continuation1 += entry.continuation == 1;
      continuation2 += entry.continuation == 2;
    }
    t.raw_discount.push_back(discount(raw1, raw2));
    t.continuation_discount.push_back(discount(continuation1, continuation2));
  }
}

std::shared_ptr<const NgramTables> build_tables(const Ids& train, int64_t V, int max_order,
                                                const std::string& where) {
  check_vocabulary(V, where);
  check_order(V, max_order, where);
  check_ids(train, V, where + ": train", true);
  if (characters(train) > std::numeric_limits<uint32_t>::max())
    throw qkv::ValueError(where + ": train has " + std::to_string(characters(train)) +
                          " characters; the counts are 32-bit, expected at most 4294967295");
  auto t = std::make_shared<NgramTables>();
  t->vocabulary = V;
  t->bits_per_id = bits_per_id(V);
  t->max_order = max_order;
  t->tables.resize(max_order);
  count_ngrams(*t, train);
  count_continuations(*t);
  add_context_totals(*t);
  estimate_discounts(*t);
  return t;
}

// P_KN(w | h) for the model of `order`, where `window` holds w in its lowest bits and before it h,
// of which `length` − 1 ids are real (the rest, from before the piece, are ignored). Builds the
// formula up from order 1: p is P_KN(w | h') when order n is reached.
double kn_probability(const NgramTables& t, uint64_t window, int length, int order) {
  const int highest = std::min(length, order);
  double p = 1.0 / static_cast<double>(t.vocabulary);
  for (int n = 1; n <= highest; ++n) {
    const NgramEntry* context = n == 1 ? &t.root : t.find(n - 1, (window >> t.bits_per_id) & t.mask(n - 1));
    const bool raw = n == highest;
    const uint32_t total = context == nullptr ? 0 : raw ? context->raw_total : context->continuation_total;
    // Unseen: P_KN(w | h) = P_KN(w | h'); every longer context ends with this one, so is unseen too.
    if (total == 0) break;
    const NgramEntry* ngram = t.find(n, window & t.mask(n));
    const double count = ngram == nullptr ? 0.0 : raw ? ngram->raw : ngram->continuation;
    const double D = raw ? t.raw_discount[n - 1] : t.continuation_discount[n - 1];
    p = (std::max(count - D, 0.0) + D * context->followers * p) / total;
  }
  return p;
}

// bpc of the model of `order` (at most t.max_order) on text.
double kn_bits(const NgramTables& t, const Ids& text, int order, const std::string& where) {
  check_ids(text, t.vocabulary, where, true);
  double bits = 0;
  for (const std::vector<int32_t>& piece : text) {
    uint64_t window = 0;
    for (size_t i = 0; i < piece.size(); ++i) {
      window = (window << t.bits_per_id) | static_cast<uint64_t>(piece[i]);
      const int length = static_cast<int>(std::min<size_t>(i + 1, order));
      bits -= std::log2(kn_probability(t, window, length, order));
    }
  }
  return bits / static_cast<double>(characters(text));
}

}  // namespace

double unigram_bits(const Ids& train, const Ids& text, int64_t V) {
  check_vocabulary(V, "unigram_bits");
  check_ids(train, V, "unigram_bits: train", false);
  check_ids(text, V, "unigram_bits: text", true);
  std::vector<int64_t> counts(V, 0);
  for (const std::vector<int32_t>& piece : train)
    for (int32_t id : piece) ++counts[id];
  // Add-one: every id counted once more than it was, so N + V counts in all.
  const double total = static_cast<double>(characters(train) + V);
  double bits = 0;
  for (const std::vector<int32_t>& piece : text)
    for (int32_t id : piece) bits -= std::log2(static_cast<double>(counts[id] + 1) / total);
  return bits / static_cast<double>(characters(text));
}

KneserNey::KneserNey(const Ids& train, int64_t V, int order)
    : tables_(build_tables(train, V, order, "KneserNey")), order_(order) {}

double KneserNey::bits(const Ids& text) const {
  return kn_bits(*tables_, text, order_, "KneserNey::bits: text");
}

double KneserNey::probability(const std::vector<int32_t>& context, int32_t next) const {
  check_ids({context}, tables_->vocabulary, "KneserNey::probability: context", false);
  if (next < 0 || next >= tables_->vocabulary)
    throw qkv::ValueError("KneserNey::probability: next id " + std::to_string(next) +
                          "; expected an id in [0, " + std::to_string(tables_->vocabulary) + ")");
  // The last order − 1 ids of the context, then next, packed as a window of the piece.
  const size_t used = std::min(context.size(), static_cast<size_t>(order_ - 1));
  uint64_t window = 0;
  for (size_t i = context.size() - used; i < context.size(); ++i)
    window = (window << tables_->bits_per_id) | static_cast<uint64_t>(context[i]);
  window = (window << tables_->bits_per_id) | static_cast<uint64_t>(next);
  return kn_probability(*tables_, window, static_cast<int>(used) + 1, order_);
}

NgramChoice best_kneser_ney_order(const Ids& train, const Ids& validation, int64_t V, int max_order) {
  const std::shared_ptr<const NgramTables> tables =
      build_tables(train, V, max_order, "best_kneser_ney_order");
  NgramChoice choice{1, 0.0, {}};
  for (int order = 1; order <= max_order; ++order) {
    choice.by_order.push_back(kn_bits(*tables, validation, order, "best_kneser_ney_order: validation"));
    if (choice.by_order.back() < choice.by_order[choice.order - 1]) choice.order = order;
  }
  choice.validation_bits = choice.by_order[choice.order - 1];
  return choice;
}

namespace {

void write_file(const fs::path& path, const std::string& first, const std::string& second = {}) {
  std::ofstream out(path, std::ios::binary);
  out << first << second;
  if (!out.flush()) throw qkv::ValueError("compressor_bits: cannot write " + path.string());
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& arg : argv) line += (line.empty() ? "" : " ") + arg;
  return line;
}

// The size in bytes of dir/input compressed by argv, or std::nullopt when argv[0] is not installed.
std::optional<uintmax_t> compressed_size(const std::vector<std::string>& argv, const fs::path& dir,
                                         const std::string& input) {
  const std::string output = input + ".compressed";
  const std::optional<int> code = qkv::examples::run_program(argv, dir, input, output);
  if (!code) return std::nullopt;
  if (*code != 0)
    throw qkv::ValueError("compressor_bits: `" + command_line(argv) + "` failed (exit code " +
                          std::to_string(*code) + ") compressing " + input);
  return fs::file_size(dir / output);
}

}  // namespace

CompressorBits compressor_bits(const std::vector<std::string>& argv, const std::string& train_utf8,
                               const std::string& test_utf8, int64_t test_chars) {
  if (argv.empty())
    throw qkv::ValueError("compressor_bits: the command is empty; expected e.g. {\"xz\", \"-9e\", \"-c\"}");
  if (test_chars < 1)
    throw qkv::ValueError("compressor_bits: test has " + std::to_string(test_chars) +
                          " characters; expected at least one");
  const qkv::examples::ScratchDirectory dir = qkv::examples::ScratchDirectory::temporary("qkv-compressor");
  write_file(dir.dir() / "train.txt", train_utf8);
  write_file(dir.dir() / "train_test.txt", train_utf8, test_utf8);
  const std::optional<uintmax_t> train = compressed_size(argv, dir.dir(), "train.txt");
  if (!train) return {std::nullopt, "not installed"};
  const std::optional<uintmax_t> both = compressed_size(argv, dir.dir(), "train_test.txt");
  if (!both) return {std::nullopt, "not installed"};
  if (*both <= *train)
    return {std::nullopt, "no rate: train and test compress to " + std::to_string(*both) + " bytes, train alone to " +
                              std::to_string(*train)};
  // The bytes that test adds once train is known.
  return {static_cast<double>(*both - *train) * 8.0 / static_cast<double>(test_chars), ""};
}

}  // namespace lm
