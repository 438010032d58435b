// Tagged sentences as text: CoNLL-U (Universal Dependencies) and two-column CoNLL.
//
// CoNLL-U (https://universaldependencies.org/format.html) has one word per line in ten
// tab-separated columns
//   ID  FORM  LEMMA  UPOS  XPOS  FEATS  HEAD  DEPREL  DEPS  MISC
// of which the reader keeps FORM (the word), UPOS (its universal part-of-speech tag) and XPOS (a
// language-specific tag, such as the Brown Corpus's, or "_" when there is none). Lines
// starting with '#' are comments. Multiword-token ranges ("1-2", the surface "don't" above its
// words "do" "n't") and empty nodes ("8.1") are skipped: neither is a word of the tag sequence.
// Word IDs must count 1, 2, 3, ... within a sentence. A blank line ends a sentence.
//
// Two-column CoNLL has "word TAG" on each line, separated by spaces or tabs, and a blank line
// between sentences.
//
// Both readers accept CRLF line ends, a missing final blank line and a UTF-8 byte-order mark at
// the start of the file (which some editors write; it means nothing in UTF-8). A sentence break is
// an empty line: a line of only spaces or tabs is refused at its own line number. A line that does not fit
// rejects the whole input with a FormatError naming the source, the 1-based line and the fault:
//   read_conllu: train.conllu:17: expected 10 tab-separated columns, found 9
// A path that is missing, or is not a regular file once links are followed (a directory, a FIFO, a
// device), throws ValueError naming it and what it is; the file is streamed, of any size.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace qkv::data {

// One sentence: words[i] is tagged tags[i]. xpos is empty, or holds words[i]'s language-specific
// tag at xpos[i] (CoNLL-U's XPOS column; a sentence read without any is left empty).
struct TaggedSentence {
  std::vector<std::string> words;
  std::vector<std::string> tags;
  std::vector<std::string> xpos = {};

  bool operator==(const TaggedSentence&) const = default;
};

std::vector<TaggedSentence> read_conllu(const std::string& path);
// `source` names the stream in error messages.
std::vector<TaggedSentence> read_conllu(std::istream& in, const std::string& source);

std::vector<TaggedSentence> read_conll(const std::string& path);
std::vector<TaggedSentence> read_conll(std::istream& in, const std::string& source);

// The writers reject what their reader could not read back (ValueError): an empty sentence,
// words and tags of different counts, an empty word or tag, a tab or line break inside one, and
// for two-column CoNLL any whitespace inside one. CoNLL-U output gives each sentence a
// "# sent_id" (1-based) and a "# text" comment, writes XPOS when the sentence has it (checked like
// the tags) and fills the unused columns with "_". Two-column CoNLL leaves XPOS out.
void write_conllu(const std::string& path, const std::vector<TaggedSentence>& sentences);
void write_conllu(std::ostream& out, const std::vector<TaggedSentence>& sentences);

void write_conll(const std::string& path, const std::vector<TaggedSentence>& sentences);
void write_conll(std::ostream& out, const std::vector<TaggedSentence>& sentences);

}  // namespace qkv::data
