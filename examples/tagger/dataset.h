// The tagger's data: the three splits (the built-in corpus, the Brown Corpus or CoNLL files), the
// vocabularies, and sentences encoded as ids and batched as tensors for the model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/batching.h"
#include "data/tokenize.h"
#include "data/vocab.h"
#include "examples/tagger/corpus.h"
#include "examples/tagger/model.h"

namespace tagger {

struct Data {
  std::vector<TaggedSentence> train, dev, test;
  std::string description;  // "built-in corpus, seed 0", the Brown Corpus or the file names
};

// The Brown Corpus for config.corpus "brown" (fetched into config.corpus_cache if missing);
// otherwise the built-in corpus when config's three file names are empty, else all three files.
Data load_data(const Config& config);
// A tagged file: CoNLL-U when the name ends in .conllu, two-column CoNLL otherwise.
std::vector<TaggedSentence> read_tagged(const std::string& path);

struct Vocabs {
  qkv::data::Vocab words;  // <pad> <unk> and training words seen min_freq times
  qkv::data::Vocab tags;   // every tag of all three splits: the label set is closed, not learned
  bool lowercase = false;  // words are looked up lowercased (a model that reads characters)
  // A word's id: <unk>'s for words the vocabulary lacks.
  int64_t word_id(const std::string& word) const;
};
// The vocabularies of config's model: lowercased words when it reads characters.
Vocabs build_vocabs(const Data& data, const Config& config);
bool lowercases_words(const Config& config);

// A line's whitespace-separated words.
std::vector<std::string> split_words(const std::string& line);

// How `predict` cuts raw text into words: as the run's training corpus was cut. The built-in
// corpus is split at whitespace; CoNLL files are read as UD English, whose clitics are split.
qkv::data::TokenizerStyle tokenizer_style_for(const Config& config);

// Sentences as word and tag ids. ValueError naming the first sentence with a tag the vocabulary
// lacks: the label set is closed.
struct Encoded {
  std::vector<std::vector<int64_t>> words, tags;
};
Encoded encode(const Vocabs& vocabs, const std::vector<TaggedSentence>& sentences);

// Every sentence must fit the positional encoding: ValueError naming the first that does not
// ("dev sentence 3 has 1025 tokens"), before any work starts.
void check_lengths(const char* split, const std::vector<TaggedSentence>& sentences);

// A word's characters as ids (model.h): begin marker, byte + 1 each, end marker. A word of more
// than kMaxWordBytes bytes keeps its first and last kMaxWordBytes / 2: prefixes and suffixes are
// what tell a word's class.
constexpr int64_t kMaxWordBytes = 24;
std::vector<int64_t> char_ids(const std::string& word);

// The model's input for sentences given as words: ids through the vocabulary, and the characters
// of each distinct word form when `chars`.
ModelInput make_input(const Vocabs& vocabs, const std::vector<const std::vector<std::string>*>& sentences,
                      bool chars);

// A batch as the model takes it: its input, targets (B, T).
struct BatchTensors {
  ModelInput input;
  IndexTensor targets;
  int64_t tokens = 0;  // real tokens
};
// `sentences` is the split the batch was cut from (its indices point there).
BatchTensors to_tensors(const qkv::data::Batch& batch, const std::vector<TaggedSentence>& sentences,
                        bool chars);

}  // namespace tagger
