// The tagger's data: the three splits (the built-in corpus, the Brown Corpus or CoNLL files), the
// vocabularies, and sentences encoded as ids and batched as tensors for the model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/batching.h"
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
};
Vocabs build_vocabs(const Data& data, int64_t min_freq);

// A line's whitespace-separated words.
std::vector<std::string> split_words(const std::string& line);

// Sentences as word and tag ids. ValueError naming the first sentence with a tag the vocabulary
// lacks: the label set is closed.
struct Encoded {
  std::vector<std::vector<int64_t>> words, tags;
};
Encoded encode(const Vocabs& vocabs, const std::vector<TaggedSentence>& sentences);

// Every sentence must fit the positional encoding: ValueError naming the first that does not
// ("dev sentence 3 has 1025 tokens"), before any work starts.
void check_lengths(const char* split, const std::vector<TaggedSentence>& sentences);

// A batch as the model takes it: ids and targets (B, T), valid lengths (B).
struct BatchTensors {
  IndexTensor ids, targets, valid_lens;
  int64_t tokens = 0;  // real tokens
};
BatchTensors to_tensors(const qkv::data::Batch& batch);

}  // namespace tagger
