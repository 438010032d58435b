// The tagger's built-in corpus: determinism, the requirements it promises, and the baselines.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "examples/tagger/corpus.h"
#include "data/conll.h"
#include "tensor/error.h"

using tagger::TaggedSentence;

namespace {

TaggedSentence tagged(const std::string& words, const std::string& tags) {
  TaggedSentence s;
  std::istringstream w(words), t(tags);
  for (std::string x; w >> x;) s.words.push_back(x);
  for (std::string x; t >> x;) s.tags.push_back(x);
  return s;
}

// A corpus small enough to count by hand. In it "saw" is VERB 3 times and NOUN twice, "cut" is
// NOUN once and VERB once; PRON, VERB and PUNCT are the most frequent tags (4 each).
const std::vector<TaggedSentence> kTrain = {
    tagged("i saw a saw .", "PRON VERB DET NOUN PUNCT"),
    tagged("the saw cut .", "DET NOUN VERB PUNCT"),
    tagged("they saw it .", "PRON VERB PRON PUNCT"),
    tagged("i saw the cut .", "PRON VERB DET NOUN PUNCT"),
};

const tagger::Corpus& default_corpus() {
  static const tagger::Corpus corpus = tagger::generate_corpus(1);
  return corpus;
}

}  // namespace

TEST_CASE("generate_sentences is a function of the seed") {
  const auto a = qkv::data::generate_sentences(200, 5);
  const auto b = qkv::data::generate_sentences(200, 5);
  const auto c = qkv::data::generate_sentences(200, 6);
  CHECK(a == b);
  CHECK(a != c);
  // A longer run starts with the shorter one: each sentence depends only on those before it.
  const auto longer = qkv::data::generate_sentences(300, 5);
  CHECK(std::vector<TaggedSentence>(longer.begin(), longer.begin() + 200) == a);
  const tagger::Corpus corpus = tagger::generate_corpus(5, {.train = 120, .dev = 40, .test = 40});
  CHECK(corpus.train == std::vector<TaggedSentence>(a.begin(), a.begin() + 120));
  CHECK(corpus.test == std::vector<TaggedSentence>(a.begin() + 160, a.end()));
}

TEST_CASE("generated sentences tag the same words the same way") {
  // Necessary for the tags to be decidable: a word sequence never comes with two tag sequences.
  std::map<std::vector<std::string>, std::vector<std::string>> seen;
  int64_t repeats = 0;
  for (const TaggedSentence& s : qkv::data::generate_sentences(20000, 11)) {
    const auto [it, inserted] = seen.emplace(s.words, s.tags);
    repeats += !inserted;
    if (!inserted) CHECK(it->second == s.tags);
  }
  CHECK(repeats > 100);  // short sentences do recur, so the check above has something to check
}

TEST_CASE("default corpus meets the stated size and ambiguity requirements") {
  const tagger::Corpus& corpus = default_corpus();
  CHECK(corpus.train.size() == 8000);
  CHECK(corpus.dev.size() == 1000);
  CHECK(corpus.test.size() == 1000);
  const tagger::CorpusStats stats = tagger::corpus_stats(corpus.train);
  CHECK(stats.word_types >= 300);
  CHECK(stats.ambiguous_types >= 20);
  CHECK(stats.ambiguous_token_fraction() >= 0.15);
  CHECK(stats.min_length >= 3);
  CHECK(stats.max_length <= 40);
  CHECK(stats.length_histogram.at(40) > 0);  // a few long sentences, 36 to 40 tokens
  CHECK(stats.sentences_with_repeats >= 400);
  CHECK(stats.tag_counts.size() == 17);  // all Universal POS tags occur
}

TEST_CASE("default corpus holds the showcase patterns") {
  int64_t saw_a_saw = 0, can_can = 0, imperatives = 0, questions = 0;
  for (const TaggedSentence& s : default_corpus().train) {
    for (size_t i = 0; i + 2 < s.words.size(); ++i) {
      saw_a_saw += s.words[i] == "saw" && s.tags[i] == "VERB" && s.words[i + 2] == "saw" &&
                   s.tags[i + 2] == "NOUN";
      can_can += s.words[i] == "can" && s.words[i + 1] == "can" && s.tags[i] == "AUX" &&
                 s.tags[i + 1] == "VERB";
    }
    imperatives += s.tags[0] == "VERB";  // "book a flight ."
    questions += s.words.back() == "?";
  }
  CHECK(saw_a_saw >= 50);
  CHECK(can_can >= 50);
  CHECK(imperatives >= 400);
  CHECK(questions >= 800);
}

TEST_CASE("tag lexicon finds majority tags and ambiguous words by hand count") {
  const tagger::TagLexicon lexicon(kTrain);
  CHECK(lexicon.word_types() == 8);  // i saw a . the cut they it
  CHECK(lexicon.ambiguous_types() == 2);
  CHECK(lexicon.ambiguous("saw"));
  CHECK(lexicon.ambiguous("cut"));
  CHECK_FALSE(lexicon.ambiguous("the"));
  CHECK_FALSE(lexicon.ambiguous("dog"));
  CHECK(lexicon.majority_tag("saw") == "VERB");  // 3 against 2
  CHECK(lexicon.majority_tag("cut") == "NOUN");  // 1 against 1: byte order decides
  CHECK(lexicon.majority_tag("dog") == "PRON");  // unseen: PRON, PUNCT, VERB tie at 4
}

TEST_CASE("majority baseline scores a small corpus as counted by hand") {
  const tagger::TagLexicon lexicon(kTrain);
  const std::vector<TaggedSentence> test = {
      tagged("a saw saw the cut .", "DET NOUN VERB DET NOUN PUNCT"),
      tagged("the dog saw .", "DET NOUN VERB PUNCT"),
  };
  const auto predicted = tagger::majority_tags(lexicon, test);
  CHECK(predicted[0] == std::vector<std::string>{"DET", "VERB", "VERB", "DET", "NOUN", "PUNCT"});
  CHECK(predicted[1] == std::vector<std::string>{"DET", "PRON", "VERB", "PUNCT"});
  const tagger::TaggingScore score = tagger::score_tags(lexicon, test, predicted);
  // Wrong: the first "saw" and "dog". Ambiguous tokens: saw saw cut saw. Repeated: the two saws.
  CHECK(score.overall.correct == 8);
  CHECK(score.overall.total == 10);
  CHECK(score.ambiguous.correct == 3);
  CHECK(score.ambiguous.total == 4);
  CHECK(score.repeated.correct == 1);
  CHECK(score.repeated.total == 2);
  CHECK(score.overall.value() == doctest::Approx(0.8));
}

TEST_CASE("context window tagger tells the two saws apart where majority cannot") {
  const std::vector<TaggedSentence> test = {tagged("they saw a saw .", "PRON VERB DET NOUN PUNCT")};
  // "they saw a" is unseen, so the first saw backs off to (they, saw): VERB in "they saw it".
  // (a, saw, .) was seen in "i saw a saw .": NOUN.
  CHECK(tagger::context_window_tags(kTrain, test)[0] == test[0].tags);
  CHECK(tagger::majority_tags(tagger::TagLexicon(kTrain), test)[0][3] == "VERB");
}

TEST_CASE("context resolves most ambiguity in the default corpus") {
  // The rule-free sanity check: knowing only the neighbouring words lifts accuracy far above the
  // majority tag, so the ambiguity is there in the words, not in random labels.
  const tagger::Corpus& corpus = default_corpus();
  const tagger::TagLexicon lexicon(corpus.train);
  const auto majority =
      tagger::score_tags(lexicon, corpus.test, tagger::majority_tags(lexicon, corpus.test));
  const auto window = tagger::score_tags(lexicon, corpus.test,
                                         tagger::context_window_tags(corpus.train, corpus.test));
  CHECK(majority.overall.value() > 0.85);
  CHECK(majority.overall.value() < 0.93);
  CHECK(majority.ambiguous.value() < 0.8);
  CHECK(majority.repeated.value() < 0.6);
  CHECK(window.overall.value() > majority.overall.value() + 0.05);
  CHECK(window.ambiguous.value() > majority.ambiguous.value() + 0.15);
  CHECK(window.repeated.value() > 0.85);
}

TEST_CASE("repeats_with_different_tags marks i saw a saw but not a repeated determiner") {
  const TaggedSentence saw = tagged("i saw a saw .", "PRON VERB DET NOUN PUNCT");
  CHECK(tagger::tag_changing_repeats(saw) == std::vector<bool>{false, true, false, true, false});
  CHECK(tagger::repeats_with_different_tags(saw));
  CHECK_FALSE(
      tagger::repeats_with_different_tags(tagged("a dog saw a cat", "DET NOUN VERB DET NOUN")));
}

TEST_CASE("corpus_stats counts a small corpus by hand") {
  const tagger::CorpusStats stats = tagger::corpus_stats(kTrain);
  CHECK(stats.sentences == 4);
  CHECK(stats.tokens == 18);
  CHECK(stats.word_types == 8);
  CHECK(stats.ambiguous_types == 2);
  CHECK(stats.ambiguous_tokens == 7);  // five saws and two cuts
  CHECK(stats.min_length == 4);
  CHECK(stats.max_length == 5);
  CHECK(stats.length_histogram == std::map<int64_t, int64_t>{{5, 4}});
  CHECK(stats.sentences_with_repeats == 1);
  CHECK(stats.tag_counts.at("PRON") == 4);
  std::ostringstream out;
  tagger::print_stats(out, stats);
  CHECK(out.str().find("4 sentences, 18 tokens, 8 word types") == 0);
}

TEST_CASE("score_tags rejects predictions of the wrong shape") {
  const tagger::TagLexicon lexicon(kTrain);
  CHECK_THROWS_WITH_AS(tagger::score_tags(lexicon, kTrain, {}),
                       "score_tags: 4 gold sentences but 0 predicted", qkv::ValueError);
  CHECK_THROWS_WITH_AS(tagger::score_tags(lexicon, {kTrain[0]}, {{"PRON"}}),
                       "score_tags: sentence 0 has 5 gold tags but 1 predicted", qkv::ValueError);
}

TEST_CASE("write_corpus writes train dev and test as CoNLL-U that reads back") {
  const tagger::Corpus corpus = tagger::generate_corpus(3, {.train = 30, .dev = 10, .test = 10});
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("qkv_test_" + std::to_string(getpid()) + "_corpus");
  tagger::write_corpus(corpus, dir.string());
  CHECK(qkv::data::read_conllu((dir / "train.conllu").string()) == corpus.train);
  CHECK(qkv::data::read_conllu((dir / "dev.conllu").string()) == corpus.dev);
  CHECK(qkv::data::read_conllu((dir / "test.conllu").string()) == corpus.test);
  std::filesystem::remove_all(dir);
}
