// tokenize: raw text cut the way the Brown Corpus and the UD English treebanks cut it.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "data/tokenize.h"

using qkv::data::tokenize;
using qkv::data::TokenizerStyle;

namespace {

// The tokens as one string, separated by single spaces, as the corpus files write them.
std::string joined(const std::vector<std::string>& tokens) {
  std::string out;
  for (const std::string& t : tokens) out += (out.empty() ? "" : " ") + t;
  return out;
}

std::string brown(const std::string& text) { return joined(tokenize(text, TokenizerStyle::Brown)); }
std::string ud(const std::string& text) { return joined(tokenize(text, TokenizerStyle::UD)); }

struct CorpusLine {
  const char* file;    // the Brown file the line comes from
  const char* text;    // its words written back as people write them
  const char* tokens;  // the line's tokens, tags removed
};

// Ten sentences of the Brown Corpus: quotes, a closing quote before its comma, possessives,
// contractions, abbreviations (one ending the sentence), numbers, a dash, parentheses.
const CorpusLine kBrownLines[] = {
    {"ca01",
     "The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election "
     "produced \"no evidence\" that any irregularities took place.",
     "The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election "
     "produced `` no evidence '' that any irregularities took place ."},
    {"ca01",
     "\"Only a relative handful of such reports was received,\" the jury said, \"considering the "
     "widespread interest in the election, the number of voters and the size of this city.\"",
     "`` Only a relative handful of such reports was received '' , the jury said , `` considering the "
     "widespread interest in the election , the number of voters and the size of this city '' ."},
    {"ca01",
     "The September-October term jury had been charged by Fulton Superior Court Judge Durwood Pye to "
     "investigate reports of possible \"irregularities\" in the hard-fought primary which was won by "
     "Mayor-nominate Ivan Allen Jr.",
     "The September-October term jury had been charged by Fulton Superior Court Judge Durwood Pye to "
     "investigate reports of possible `` irregularities '' in the hard-fought primary which was won by "
     "Mayor-nominate Ivan Allen Jr. ."},
    {"ca01", "On other matters, the jury recommended that: (1)",
     "On other matters , the jury recommended that : ( 1 )"},
    {"ca02",
     "Dallas may get to hear a debate on horse race parimutuels soon between Reps. V. E. (Red) Berry "
     "and Joe Ratcliff.",
     "Dallas may get to hear a debate on horse race parimutuels soon between Reps. V. E. ( Red ) Berry "
     "and Joe Ratcliff ."},
    {"ca02", "He has served as a border patrolman and was in the Signal Corps of the U.S. Army.",
     "He has served as a border patrolman and was in the Signal Corps of the U.S. Army ."},
    {"ca10", "The election will be Dec. 4 from 8 a.m. to 8 p.m.",
     "The election will be Dec. 4 from 8 a.m. to 8 p.m. ."},
    {"ca40",
     "He threw out some of Hutchins' more wildly experimental courses, raised sagging undergraduate "
     "enrollment to 2,100, nearly doubled endowment to $139.3 million.",
     "He threw out some of Hutchins' more wildly experimental courses , raised sagging undergraduate "
     "enrollment to 2,100 , nearly doubled endowment to $139.3 million ."},
    {"ca44",
     "The Kennedy plan alone would boost the base to $5,000 a year and the payroll tax to 6.5 per "
     "cent--3.25 per cent each.",
     "The Kennedy plan alone would boost the base to $5,000 a year and the payroll tax to 6.5 per "
     "cent -- 3.25 per cent each ."},
    {"ca02",
     "To them especially the librarians, with the help of co-ops, hope they will never have to say, "
     "\"I'm sorry, we don't have that book.\"",
     "To them especially the librarians , with the help of co-ops , hope they will never have to say , "
     "`` I'm sorry , we don't have that book '' ."},
};

}  // namespace

TEST_CASE("tokenize in Brown style reproduces the tokens of ten Brown Corpus sentences") {
  for (const CorpusLine& line : kBrownLines) {
    CAPTURE(line.file);
    CHECK(brown(line.text) == line.tokens);
  }
}

TEST_CASE("tokenize in Brown style keeps contractions and possessives whole") {
  CHECK(brown("I don't think they'll say it's John's.") == "I don't think they'll say it's John's .");
  CHECK(brown("The players' union can't wait.") == "The players' union can't wait .");
  // Elisions keep their apostrophe; a single quote around words does not.
  CHECK(brown("Get 'em goin' in '61, he said 'now'.") == "Get 'em goin' in '61 , he said ' now ' .");
}

TEST_CASE("tokenize closes an open single quote at a word ending in s or in") {
  CHECK(brown("he said 'yes'.") == "he said ' yes ' .");
  CHECK(brown("'come in' she said") == "' come in ' she said");
  CHECK(ud("'come in' she said") == "' come in ' she said");
  CHECK(ud("he said 'yes'.") == "he said ' yes ' .");
  // With no quote open the apostrophe belongs to the word, and a closed quote does not linger.
  CHECK(brown("'yes' and the parents' goin' home") == "' yes ' and the parents' goin' home");
  // A quote standing alone opens, then closes.
  CHECK(brown("' come in '") == "' come in '");
}

TEST_CASE("tokenize in Brown style writes single quotes as ' on both sides, as the corpus does") {
  // Brown Corpus ca06: the corpus has no ` token; opening and closing single quotes are both '.
  CHECK(brown("His reference to 'discredited carcass' or 'tattered remains' of the president's "
              "leadership is an insult.") ==
        "His reference to ' discredited carcass ' or ' tattered remains ' of the president's "
        "leadership is an insult .");
}

TEST_CASE("tokenize in Brown style turns double quotes into opening and closing quotes") {
  CHECK(brown("He said \"no\" twice.") == "He said `` no '' twice .");
  // The closing quote moves in front of the punctuation it follows, as the corpus writes it.
  CHECK(brown("\"Why?\" she asked.") == "`` Why '' ? she asked .");
  // A quote standing alone opens, then closes.
  CHECK(brown("\" hello \"") == "`` hello ''");
}

TEST_CASE("tokenize keeps abbreviations and adds the sentence end after a final one in Brown style") {
  CHECK(brown("Dr. Smith met Mrs. Jones in Washington, D.C.") ==
        "Dr. Smith met Mrs. Jones in Washington , D.C. .");
  CHECK(ud("Dr. Smith met Mrs. Jones in Washington, D.C.") ==
        "Dr. Smith met Mrs. Jones in Washington , D.C.");
  CHECK(brown("J. R. Smith, i.e. the ex-Mrs. Brown's son, came.") ==
        "J. R. Smith , i.e. the ex-Mrs. Brown's son , came .");
  // Not an abbreviation: the period ends the sentence.
  CHECK(brown("I saw a saw.") == "I saw a saw .");
}

TEST_CASE("tokenize keeps numbers and hyphenated words whole and splits dashes and ellipses") {
  CHECK(brown("It cost $1,000.50, or 3.5% more (so-called).") ==
        "It cost $1,000.50 , or 3.5% more ( so-called ) .");
  CHECK(brown("Wait... no--yes; fine: done!") == "Wait ... no -- yes ; fine : done !");
}

TEST_CASE("tokenize in UD style splits clitics as the Penn Treebank does") {
  CHECK(ud("I don't think they'll say it's John's.") == "I do n't think they 'll say it 's John 's .");
  CHECK(ud("We can't, they won't, you cannot.") == "We ca n't , they wo n't , you can not .");
  CHECK(ud("I'm sure we've said you're right and he'd agree.") ==
        "I 'm sure we 've said you 're right and he 'd agree .");
  CHECK(ud("DON'T touch the players' ball.") == "DO N'T touch the players ' ball .");
  CHECK(ud("She said \"yes.\"") == "She said \" yes . \"");
}

TEST_CASE("tokenize in Whitespace style splits at whitespace only") {
  CHECK(tokenize("the dog saw a saw.\tdon't  ", TokenizerStyle::Whitespace) ==
        std::vector<std::string>{"the", "dog", "saw", "a", "saw.", "don't"});
}

TEST_CASE("tokenize of empty or blank text gives no tokens in every style") {
  for (TokenizerStyle style : {TokenizerStyle::Whitespace, TokenizerStyle::Brown, TokenizerStyle::UD}) {
    CHECK(tokenize("", style).empty());
    CHECK(tokenize(" \t\r\n ", style).empty());
  }
}

TEST_CASE("tokenize of punctuation alone makes each mark a token and keeps symbols together") {
  CHECK(brown("?!") == "? !");
  CHECK(brown("-- ... ( )") == "-- ... ( )");
  CHECK(brown("\"") == "``");
  CHECK(ud("\"") == "\"");
  CHECK(brown("& ** ,") == "& ** ,");
}

TEST_CASE("tokenize writes typographic quotes, dashes and ellipses as ASCII and splits them off") {
  CHECK(brown("“Hello,” she said—twice… ‘Don’t.’") == "`` Hello '' , she said -- twice ... ' Don't . '");
  CHECK(ud("“Hello,” she said—twice… ‘Don’t.’") == "\" Hello , \" she said -- twice ... ' Do n't . '");
  CHECK(brown("pages 10–12") == "pages 10 -- 12");
  // Whitespace style leaves the text as it is.
  CHECK(tokenize("“Hello,” don’t", TokenizerStyle::Whitespace) ==
        std::vector<std::string>{"“Hello,”", "don’t"});
}

TEST_CASE("tokenize passes UTF-8 through as letters") {
  CHECK(brown("Müller's café, naïve.") == "Müller's café , naïve .");
  CHECK(ud("Müller's café, naïve.") == "Müller 's café , naïve .");
}

TEST_CASE("tokenize of a long text cuts every repetition the same way") {
  const std::string sentence = "He paid $1,000 (in cash) to Mr. Brown's son. ";
  const std::vector<std::string> once = {"He", "paid", "$1,000", "(",       "in",  "cash",
                                         ")",  "to",   "Mr.",    "Brown's", "son", "."};
  std::string text;
  const int repeats = 20000;
  for (int i = 0; i < repeats; ++i) text += sentence;
  const std::vector<std::string> tokens = tokenize(text, TokenizerStyle::Brown);
  REQUIRE(tokens.size() == once.size() * repeats);
  for (size_t i = 0; i < tokens.size(); i += 997) CHECK(tokens[i] == once[i % once.size()]);
}

TEST_CASE("tokenize takes linear time on a long run of periods, commas and closing quotes") {
  // A word followed by half a million ".," pairs: each period used to rescan the whole word for an
  // abbreviation, and in Brown style each '' bubbled back past every comma, over a minute in all.
  // Both are one pass now, a second or two even under the sanitizers: the bound below is a wall
  // against quadratic work, far above the linear time on any machine.
  std::string periods = "a";
  for (int i = 0; i < 524287; ++i) periods += ".,";
  const auto start = std::chrono::steady_clock::now();
  for (const TokenizerStyle style : {TokenizerStyle::Brown, TokenizerStyle::UD}) {
    const std::vector<std::string> tokens = tokenize(periods, style);
    CHECK(tokens.size() == 1 + 2 * 524287);
    CHECK(tokens.front() == "a");
    CHECK(tokens.back() == ",");
  }
  std::string quotes = "said";
  for (int i = 0; i < 200000; ++i) quotes += ",\"";
  const std::vector<std::string> brown = tokenize(quotes, TokenizerStyle::Brown);
  REQUIRE(brown.size() == 1 + 2 * 200000);
  // The closing quotes come first, then the commas, as with one: said , " → said '' ,
  CHECK(brown[1] == "''");
  CHECK(brown[200000] == "''");
  CHECK(brown[200001] == ",");
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 20.0);
}
