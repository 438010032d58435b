#include "examples/seq2seq/task.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

#include "examples/seq2seq/bleu.h"
#include "examples/seq2seq/cmudict.h"
#include "examples/seq2seq/dates.h"
#include "tensor/error.h"

namespace seq2seq {

using qkv::ValueError;
using qkv::data::Vocab;

std::string Task::alphabet_text(const std::vector<std::string>& symbols) const {
  std::string text;
  const bool characters = std::all_of(symbols.begin(), symbols.end(), [](const std::string& s) { return s.size() == 1; });
  for (const std::string& s : symbols) text += (text.empty() || characters ? "" : " ") + s;
  return text;
}

namespace {

// d2l's reserved tokens, then the symbols in the given order (equal counts keep it).
Vocab symbol_vocab(const std::vector<std::string>& symbols) {
  std::map<std::string, int64_t> counts;
  for (const std::string& s : symbols) counts[s] = 1;
  return Vocab(counts, 1, {Vocab::kPad, Vocab::kUnk, kBos, kEos});
}

}  // namespace

Vocab Task::source_vocab() const { return symbol_vocab(source_alphabet()); }
Vocab Task::target_vocab() const { return symbol_vocab(target_alphabet()); }

std::vector<int64_t> Task::encode_source(const std::string& text) const {
  const Vocab vocab = source_vocab();
  std::vector<int64_t> ids;
  for (const std::string& s : source_symbols(text)) ids.push_back(vocab.id(s));
  ids.push_back(vocab.id(kEos));
  return ids;
}

std::vector<int64_t> Task::encode_target(const std::string& text) const {
  const Vocab vocab = target_vocab();
  std::vector<int64_t> ids;
  for (const std::string& s : target_symbols(text)) {
    if (!vocab.contains(s)) throw ValueError(name() + ": target symbol '" + s + "' of \"" + text + "\" is not in the target vocabulary");
    ids.push_back(vocab.id(s));
  }
  ids.push_back(vocab.id(kEos));
  return ids;
}

std::string Task::decode_target(const std::vector<int64_t>& ids) const {
  const Vocab vocab = target_vocab();
  std::vector<std::string> symbols;
  for (const int64_t id : ids) {
    const std::string& token = vocab.token(id);
    if (token == kEos) break;
    if (id >= 4) symbols.push_back(token);  // past the reserved tokens
  }
  return join_target(symbols);
}

Metrics Task::score(const std::vector<std::string>& outputs, const std::vector<Pair>& pairs) const {
  if (outputs.size() != pairs.size())
    throw ValueError(name() + ": " + std::to_string(outputs.size()) + " outputs for " + std::to_string(pairs.size()) +
                     " pairs");
  Metrics m;
  m.count = static_cast<int64_t>(pairs.size());
  int64_t exact = 0, errors = 0, length = 0;
  double bleu_sum = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const std::vector<std::string> out = target_symbols(outputs[i]);
    // The nearest target: the fewest edits, the first of equals.
    std::vector<std::vector<std::string>> targets;
    for (const std::string& t : pairs[i].targets) targets.push_back(target_symbols(t));
    int64_t best = -1;
    size_t nearest = 0;
    for (size_t j = 0; j < targets.size(); ++j) {
      const int64_t d = cmudict::edit_distance(out, targets[j]);
      if (best < 0 || d < best) best = d, nearest = j;
    }
    exact += best == 0;
    errors += best;
    length += static_cast<int64_t>(targets[nearest].size());
    bleu_sum += bleu(out, targets[0], 2);
  }
  if (m.count > 0) {
    m.exact = static_cast<double>(exact) / static_cast<double>(m.count);
    m.bleu = bleu_sum / static_cast<double>(m.count);
  }
  m.error_rate = length > 0 ? static_cast<double>(errors) / static_cast<double>(length) : 0.0;
  return m;
}

namespace {

// ---- dates ---------------------------------------------------------------------------------------

std::vector<std::string> characters(const char* alphabet) {
  std::vector<std::string> out;
  for (const char* c = alphabet; *c; ++c) out.emplace_back(1, *c);
  return out;
}

class Dates : public Task {
 public:
  std::string name() const override { return "dates"; }
  std::vector<std::string> source_alphabet() const override { return characters(kSourceAlphabet); }
  std::vector<std::string> target_alphabet() const override { return characters(kTargetAlphabet); }
  std::vector<std::string> source_symbols(const std::string& text) const override {
    const std::vector<int64_t> ids = seq2seq::encode_source(seq2seq::source_vocab(), text);  // its checks
    std::vector<std::string> out;
    for (size_t i = 0; i + 1 < ids.size(); ++i) out.emplace_back(1, static_cast<char>(std::tolower(static_cast<unsigned char>(text[i]))));
    return out;
  }
  std::vector<std::string> target_symbols(const std::string& text) const override {
    std::vector<std::string> out;
    for (const char c : text) out.emplace_back(1, c);
    return out;
  }
  std::string join_target(const std::vector<std::string>& symbols) const override {
    std::string text;
    for (const std::string& s : symbols) text += s;
    return text;
  }
  // "yyyy-mm-dd" and <eos>, with room.
  int64_t max_output_len(int64_t) const override { return 16; }
  TaskData load(uint64_t seed, int64_t train, int64_t dev, int64_t test, const std::filesystem::path&) const override {
    const DateData d = qkv::data::generate_data(seed, {train, dev, test});
    const auto pairs = [](const std::vector<DatePair>& dates) {
      std::vector<Pair> out;
      for (const DatePair& p : dates) out.push_back({p.source, {p.target}});
      return out;
    };
    return {pairs(d.train), pairs(d.dev), pairs(d.test), "generated dates"};
  }
  std::string describe(const std::vector<std::string>& outputs, const std::vector<Pair>& pairs) const override {
    const Metrics m = score(outputs, pairs);
    char line[96];
    std::snprintf(line, sizeof line, "exact match %.4f  BLEU %.4f", m.exact, m.bleu);
    return line;
  }
};

// ---- cmudict -------------------------------------------------------------------------------------

// The longest word a user may ask for, in letters (the dictionary's longest headword is 34).
constexpr int64_t kMaxWordLetters = 60;

class Cmudict : public Task {
 public:
  std::string name() const override { return "cmudict"; }
  std::vector<std::string> source_alphabet() const override { return characters(cmudict::kSpellingAlphabet); }
  std::vector<std::string> target_alphabet() const override { return cmudict::phoneme_symbols(true); }
  std::vector<std::string> source_symbols(const std::string& text) const override {
    if (text.empty()) throw ValueError("cmudict: the word is empty");
    if (static_cast<int64_t>(text.size()) > kMaxWordLetters)
      throw ValueError("cmudict: the word has " + std::to_string(text.size()) + " characters, more than " +
                       std::to_string(kMaxWordLetters));
    const std::string alphabet = cmudict::kSpellingAlphabet;
    std::vector<std::string> out;
    for (size_t i = 0; i < text.size(); ++i) {
      const auto byte = static_cast<unsigned char>(text[i]);
      const char c = static_cast<char>(std::tolower(byte));
      if (alphabet.find(c) == std::string::npos)
        throw ValueError("cmudict: character " +
                         (std::isprint(byte) ? "'" + std::string(1, text[i]) + "'" : "byte " + std::to_string(byte)) +
                         " at position " + std::to_string(i) + " of \"" + text.substr(0, 80) +
                         "\" is not a letter or an apostrophe");
      out.emplace_back(1, c);
    }
    return out;
  }
  std::vector<std::string> target_symbols(const std::string& text) const override {
    std::vector<std::string> out;
    for (size_t at = 0; at < text.size();) {
      const size_t end = std::min(text.find(' ', at), text.size());
      if (end > at) out.push_back(text.substr(at, end - at));
      at = end + 1;
    }
    return out;
  }
  std::string join_target(const std::vector<std::string>& symbols) const override { return alphabet_text(symbols); }
  // A word's pronunciation has at most a few phonemes more than it has letters (the dictionary's
  // largest excess is measured in examples/seq2seq/cmudict.h); the room keeps a wrong one finite.
  int64_t max_output_len(int64_t letters) const override { return letters + 8; }
  TaskData load(uint64_t, int64_t, int64_t, int64_t, const std::filesystem::path& cache) const override {
    const cmudict::Dictionary d = cmudict::load_dictionary(cache);
    const auto pairs = [&](const std::vector<cmudict::Word>& words) {
      std::vector<Pair> out;
      for (const cmudict::Word& w : words) {
        Pair p{w.spelling, {}};
        for (const auto& pron : w.pronunciations) p.targets.push_back(join_target(pron));
        out.push_back(std::move(p));
      }
      return out;
    };
    return {pairs(d.train), pairs(d.dev), pairs(d.test), "the CMU Pronouncing Dictionary"};
  }
  // Headline: stress stripped (the papers' 39 phonemes); with stress beside it.
  Metrics score(const std::vector<std::string>& outputs, const std::vector<Pair>& pairs) const override {
    return stripped(outputs, pairs);
  }
  std::string describe(const std::vector<std::string>& outputs, const std::vector<Pair>& pairs) const override {
    const Metrics bare = stripped(outputs, pairs), stressed = Task::score(outputs, pairs);
    char line[160];
    std::snprintf(line, sizeof line, "WER %.2f %%  PER %.2f %%  (stress stripped; with stress: WER %.2f %%, PER %.2f %%)",
                  100 * (1 - bare.exact), 100 * bare.error_rate, 100 * (1 - stressed.exact), 100 * stressed.error_rate);
    return line;
  }

 private:
  Metrics stripped(const std::vector<std::string>& outputs, const std::vector<Pair>& pairs) const {
    const auto strip = [&](const std::string& text) { return join_target(cmudict::strip_stress(target_symbols(text))); };
    std::vector<std::string> bare_outputs;
    for (const std::string& o : outputs) bare_outputs.push_back(strip(o));
    std::vector<Pair> bare_pairs;
    for (const Pair& p : pairs) {
      Pair b{p.source, {}};
      for (const std::string& t : p.targets) b.targets.push_back(strip(t));
      bare_pairs.push_back(std::move(b));
    }
    return Task::score(bare_outputs, bare_pairs);
  }
};

}  // namespace

std::unique_ptr<Task> make_task(const std::string& name) {
  if (name == "dates") return std::make_unique<Dates>();
  if (name == "cmudict") return std::make_unique<Cmudict>();
  throw ValueError("task '" + name + "' is not one of dates, cmudict");
}

}  // namespace seq2seq
