// The seq2seq example's tasks (--task): what a source and a target are made of, where the pairs
// come from, and how outputs are scored. The models and the training loop know nothing else of them.
//
//   dates    dates written in English to ISO 8601, one character at a time (examples/seq2seq/dates.h):
//            generated, so the example needs no download; scored by exact match and d2l's BLEU.
//   cmudict  grapheme-to-phoneme conversion of the CMU Pronouncing Dictionary: a word's letters to
//            its ARPAbet phonemes, "grochowski" → G R AH0 CH AO1 F S K IY0 (examples/seq2seq/cmudict.h);
//            scored as the papers score it: word error rate and phoneme error rate against the
//            nearest of a word's pronunciations, stress stripped (figures with stress beside them).
//
// Both sides are sequences of symbols: characters, or phonemes. A vocabulary is d2l's reserved
// tokens <pad> <unk> <bos> <eos> (ids 0..3) and then the task's symbols, fixed by the task, so that
// a checkpoint needs no vocabulary file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/vocab.h"

namespace seq2seq {

inline constexpr const char* kBos = "<bos>";
inline constexpr const char* kEos = "<eos>";
// The reserved tokens' ids, the same in every task's vocabularies.
inline constexpr int64_t kPadId = 0, kBosId = 2, kEosId = 3;

// A source and every target that is right for it (a word's pronunciations); training reads each.
struct Pair {
  std::string source;
  std::vector<std::string> targets;
};

struct TaskData {
  std::vector<Pair> train, dev, test;
  std::string about;  // where the pairs came from, for the first lines a training prints
};

// The scores of outputs against their pairs, under the task's headline protocol.
struct Metrics {
  int64_t count = 0;
  double exact = 0;       // the fraction of outputs equal to one of their targets (1 − WER)
  double error_rate = 0;  // Σ symbol edit distance to the nearest target / Σ that target's length (PER, CER)
  double bleu = 0;        // mean of d2l's BLEU against the first target, k = 2
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string name() const = 0;
  // The task's symbols, in vocabulary order, and as one text for a config ("-0123456789").
  virtual std::vector<std::string> source_alphabet() const = 0;
  virtual std::vector<std::string> target_alphabet() const = 0;
  std::string alphabet_text(const std::vector<std::string>& symbols) const;
  qkv::data::Vocab source_vocab() const;
  qkv::data::Vocab target_vocab() const;

  // A text as symbols. A source from a user is refused (ValueError naming the character and its
  // position) when it is empty, too long, or holds a character outside the alphabet.
  virtual std::vector<std::string> source_symbols(const std::string& text) const = 0;
  virtual std::vector<std::string> target_symbols(const std::string& text) const = 0;
  // Symbols back to a text: characters side by side, phonemes between spaces.
  virtual std::string join_target(const std::vector<std::string>& symbols) const = 0;
  // The longest output decoding may produce for a source of `source_symbols` symbols, <eos> included.
  virtual int64_t max_output_len(int64_t source_symbols) const = 0;

  // The pairs: generated from the seed and sizes (dates), or read from the dictionary in `cache`.
  virtual TaskData load(uint64_t seed, int64_t train_size, int64_t dev_size, int64_t test_size,
                        const std::filesystem::path& cache) const = 0;

  // The headline scores of `outputs` (texts, as join_target makes them) against `pairs`.
  virtual Metrics score(const std::vector<std::string>& outputs, const std::vector<Pair>& pairs) const;
  // The scores as a line prints them: "exact match 0.9990  BLEU 0.9998", or "WER 28.1 %  PER 6.9 %
  // (stress stripped; with stress: WER 36.0 %, PER 8.3 %)".
  virtual std::string describe(const std::vector<std::string>& outputs, const std::vector<Pair>& pairs) const = 0;

  // ids ↔ texts through the vocabularies: source ids end in <eos>; output ids are read up to the
  // first <eos>, reserved tokens dropped.
  std::vector<int64_t> encode_source(const std::string& text) const;
  std::vector<int64_t> encode_target(const std::string& text) const;
  std::string decode_target(const std::vector<int64_t>& ids) const;
};

// "dates" or "cmudict"; ValueError naming the name otherwise.
std::unique_ptr<Task> make_task(const std::string& name);
inline const std::vector<std::string> kTasks = {"dates", "cmudict"};

}  // namespace seq2seq
