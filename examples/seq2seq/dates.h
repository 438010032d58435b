// The seq2seq example's data: dates written out in English (data/dates.h), to be translated into
// ISO 8601, and the tokens the model reads and writes.
//
//   "the twenty-third of november, twenty twenty-six"  →  "2026-11-23"
//   "11/23/2026"                                       →  "2026-11-23"
//   "monday, november 23, 2026"                        →  "2026-11-23"
//
// A toy translation task in the spirit of d2l's English-French one, generated here so that the
// example needs no download. Both sides are read one character at a time. The output is shorter
// than most inputs, and the alignment is not monotone: the year comes first in the output but
// last in every input, the month moves before or after the day, and a weekday or an "of" maps to
// nothing. So a decoder step must look at a different part of the source each time — the case
// for attention (Bahdanau et al. 2015; d2l 10.4).
//
// Dates are uniform over 1900-01-01 .. 2099-12-31; each is written in one of kNumFormats surface
// formats (format_date documents them), spelled-out years in several ways. The same seed always
// gives the same pairs, on every platform (qkv::Generator, tensor/random.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dates.h"
#include "data/vocab.h"
#include "examples/seq2seq/task.h"

namespace seq2seq {

using qkv::data::DateData;
using qkv::data::DatePair;

// ---- tokens --------------------------------------------------------------------------------------

// The characters of the sources and of the targets, for the vocabularies.
inline constexpr const char* kSourceAlphabet = " ,-/0123456789abcdefghijklmnopqrstuvwxyz";
inline constexpr const char* kTargetAlphabet = "-0123456789";

// Vocabularies of one character per token after d2l's reserved tokens <pad> <unk> <bos> <eos>
// (ids 0..3), then the alphabet in byte order. Fixed, so a checkpoint needs no vocabulary file.
qkv::data::Vocab source_vocab();
qkv::data::Vocab target_vocab();

// The longest source the model accepts, in characters (format_date's longest is 63: "the
// twenty-seventh of september, two thousand and seventy-three").
inline constexpr int64_t kMaxSourceChars = 100;

// A user's date as source ids: lower-cased, one id per character, then <eos>. Throws
// qkv::ValueError for an empty text, one longer than kMaxSourceChars, or a character outside
// kSourceAlphabet (naming it and its position).
std::vector<int64_t> encode_source(const qkv::data::Vocab& vocab, const std::string& text);

// Target ids followed by <eos>. Throws qkv::ValueError for a character outside the vocabulary.
std::vector<int64_t> encode_target(const qkv::data::Vocab& vocab, const std::string& text);

// The characters of ids up to the first <eos> (excluded); reserved tokens other than <eos> are
// dropped.
std::string decode_ids(const qkv::data::Vocab& vocab, const std::vector<int64_t>& ids);

}  // namespace seq2seq
