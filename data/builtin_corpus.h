// The tagger's built-in corpus: English-like sentences tagged with Universal POS tags, generated
// from a small grammar so that a word's tag depends on its context and position.
//
// "i saw a saw": the first saw is a VERB, the second a NOUN. A model that looks at one word at a
// time must give both the same tag; a model that looks at the sentence can tell them apart. The
// grammar is full of such words (saw watch book light can that like to have well back fast ...),
// often twice in one sentence with different tags ("they can can the can"), and it is built so
// that the context always decides: a human reading the sentence can tag every word. So a model
// with context can approach 100% while the majority-tag baseline stays far below on these words.
// builtin_corpus.cpp holds the grammar and says which cue settles each ambiguous word; its words
// are in builtin_lexicon.h. The tagger (examples/tagger) trains on it and measures ambiguity.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/conll.h"
#include "data/splits.h"

namespace qkv::data {

// `n` sentences of 3 to 40 tokens, lower-case except names; the same seed gives the same text.
std::vector<TaggedSentence> generate_sentences(int64_t n, uint64_t seed);

using Corpus = Splits<TaggedSentence>;

// train + dev + test sentences from one stream of the grammar, split in that order.
Corpus generate_corpus(uint64_t seed, const SplitSizes& sizes = {8000, 1000, 1000});

// Writes dir/train.conllu, dir/dev.conllu and dir/test.conllu, creating dir if needed.
void write_corpus(const Corpus& corpus, const std::string& dir);

}  // namespace qkv::data
