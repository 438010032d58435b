// Raw text → the tokens a tagged corpus would have: a tagger trained on a corpus only knows words
// cut the way that corpus cuts them, so "I saw a saw." must reach it as "I saw a saw ." and never
// as "saw." (a word it has not seen). Case is kept. Except in Whitespace style, typographic
// punctuation is first written as the ASCII the corpora use: “ and ” as ", ‘ and ’ as ', — and – as
// --, … as ...; every other byte >= 0x80 counts as a letter, so other UTF-8 text passes through
// intact.
//
// The rules, applied to each whitespace-separated chunk of the text:
//   1. Punctuation comes off the ends of a word as tokens of its own: ( ) [ ] { } , ; : ? ! and
//      quotes at either end; "--" (a dash) and "..." (an ellipsis) also split a word in two.
//   2. Everything inside a word stays: "1,000", "3.5", "$1.1", "50%", "long-range", "and/or",
//      "o'clock".
//   3. A final period is a token of its own unless the word is an abbreviation: a listed one
//      ("Mr.", "Dr.", "Jr.", "etc.", "Calif."), an initial ("J."), or letters between periods
//      ("U.S.", "p.m.", "i.e.").
//   4. A " is an opening quote at the start of a word and a closing quote at its end; a " standing
//      alone opens when no quote is open and closes otherwise.
//   5. An apostrophe at the start of a word opens a single quote (') unless it begins an elision
//      ('em, 'round, '61); one at the end closes the open single quote, and with none open it
//      stays on a plural possessive ("parents'") or a dropped g ("goin'"); a ' standing alone
//      opens when no single quote is open and closes otherwise.
//
// The styles differ where their corpora differ:
//   Whitespace  split at whitespace only, nothing else (the tagger's built-in corpus).
//   Brown       the Brown Corpus as distributed (Francis & Kucera 1964/1979): contractions and
//               possessives stay whole ("don't", "I'm", "Atlanta's"); double quotes become ``
//               and ''; a closing quote moves in front of the , . ? ! ; : it follows
//               ("received," he said → received '' , he said); and an abbreviation that ends
//               the text is followed by a "." token for the sentence end ("Allen Jr. .").
//   UD          Universal Dependencies English, which splits clitics as the Penn Treebank does
//               (Marcus et al. 1993): "don't" → do n't, "can't" → ca n't, "won't" → wo n't,
//               "cannot" → can not, "I'm" → I 'm, "John's" → John 's, and 'll 're 've 'd, and
//               "parents'" → parents '; quotes stay ".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace qkv::data {

enum class TokenizerStyle { Whitespace, Brown, UD };

std::vector<std::string> tokenize(std::string_view text, TokenizerStyle style);

}  // namespace qkv::data
