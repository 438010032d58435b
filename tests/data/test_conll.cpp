// CoNLL-U and two-column CoNLL: what the readers keep, what they skip, how they fail.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "data/conll.h"
#include "tensor/error.h"

using qkv::data::TaggedSentence;

namespace {

std::vector<TaggedSentence> conllu(const std::string& text) {
  std::istringstream in(text);
  return qkv::data::read_conllu(in, "train.conllu");
}

std::vector<TaggedSentence> conll(const std::string& text) {
  std::istringstream in(text);
  return qkv::data::read_conll(in, "train.txt");
}

// A CoNLL-U word line with the given ID, FORM and UPOS and "_" elsewhere.
std::string word_line(const std::string& id, const std::string& form, const std::string& upos) {
  return id + "\t" + form + "\t_\t" + upos + "\t_\t_\t_\t_\t_\t_\n";
}

// A file name no other test process uses.
std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("qkv_test_" + std::to_string(getpid()) + "_" + name))
      .string();
}

const std::vector<TaggedSentence> kSentences = {
    {{"i", "saw", "a", "saw", "."}, {"PRON", "VERB", "DET", "NOUN", "PUNCT"}},
    {{"book", "a", "flight"}, {"VERB", "DET", "NOUN"}},
};

}  // namespace

TEST_CASE("read_conllu keeps FORM and UPOS and skips comments ranges and empty nodes") {
  // Shaped like UD English-EWT: "don't" is the range 2-3 above its words "do" and "n't", and
  // 4.1 is an empty node (enhanced dependencies); neither is a word of the tag sequence.
  const std::string text = "# sent_id = 1\n# text = I don't know.\n" + word_line("1", "I", "PRON") +
                           word_line("2-3", "don't", "_") + word_line("2", "do", "AUX") +
                           word_line("3", "n't", "PART") + word_line("4", "know", "VERB") +
                           word_line("4.1", "knew", "VERB") + word_line("5", ".", "PUNCT") +
                           "\n# sent_id = 2\n" + word_line("1", "Hi", "INTJ") + "\n";
  const std::vector<TaggedSentence> s = conllu(text);
  REQUIRE(s.size() == 2);
  CHECK(s[0].words == std::vector<std::string>{"I", "do", "n't", "know", "."});
  CHECK(s[0].tags == std::vector<std::string>{"PRON", "AUX", "PART", "VERB", "PUNCT"});
  CHECK(s[1].words == std::vector<std::string>{"Hi"});
  CHECK(s[1].tags == std::vector<std::string>{"INTJ"});
}

TEST_CASE("read_conllu accepts CRLF line ends and a missing final blank line") {
  std::string text =
      word_line("1", "dogs", "NOUN") + word_line("2", "bark", "VERB") + "\n" + word_line("1", "run", "VERB");
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  for (const std::string& input : {text, crlf}) {
    const std::vector<TaggedSentence> s = conllu(input);
    REQUIRE(s.size() == 2);
    CHECK(s[0].words == std::vector<std::string>{"dogs", "bark"});
    CHECK(s[0].tags == std::vector<std::string>{"NOUN", "VERB"});
    CHECK(s[1].words == std::vector<std::string>{"run"});  // no "\r" left on the last tag
    CHECK(s[1].tags == std::vector<std::string>{"VERB"});
  }
}

TEST_CASE("read_conllu treats several blank lines as one sentence break") {
  const std::string text = "\n\n" + word_line("1", "a", "DET") + "\n\n\n" + word_line("1", "b", "X");
  CHECK(conllu(text).size() == 2);
  CHECK(conllu("").empty());
  CHECK(conllu("# only a comment\n\n").empty());
}

TEST_CASE("read_conll reads word and tag columns separated by spaces or tabs") {
  const std::vector<TaggedSentence> s = conll("the DET\ncan\tNOUN\r\n\n\nfish   VERB\n");
  REQUIRE(s.size() == 2);
  CHECK(s[0].words == std::vector<std::string>{"the", "can"});
  CHECK(s[0].tags == std::vector<std::string>{"DET", "NOUN"});
  CHECK(s[1].words == std::vector<std::string>{"fish"});
  CHECK(s[1].tags == std::vector<std::string>{"VERB"});
}

TEST_CASE("write_conllu writes ten columns with sent_id and text comments") {
  std::ostringstream out;
  qkv::data::write_conllu(out, {kSentences[1]});
  CHECK(out.str() ==
        "# sent_id = 1\n# text = book a flight\n"
        "1\tbook\t_\tVERB\t_\t_\t_\t_\t_\t_\n"
        "2\ta\t_\tDET\t_\t_\t_\t_\t_\t_\n"
        "3\tflight\t_\tNOUN\t_\t_\t_\t_\t_\t_\n\n");
}

TEST_CASE("conll writers and readers round trip") {
  std::ostringstream u, c;
  qkv::data::write_conllu(u, kSentences);
  qkv::data::write_conll(c, kSentences);
  CHECK(conllu(u.str()) == kSentences);
  CHECK(conll(c.str()) == kSentences);
  CHECK(c.str().substr(0, 8) == "i PRON\ns");
}

TEST_CASE("conll writers and readers round trip through files") {
  const std::string u = temp_path("round_trip.conllu"), c = temp_path("round_trip.txt");
  qkv::data::write_conllu(u, kSentences);
  qkv::data::write_conll(c, kSentences);
  CHECK(qkv::data::read_conllu(u) == kSentences);
  CHECK(qkv::data::read_conll(c) == kSentences);
  std::filesystem::remove(u);
  std::filesystem::remove(c);
}

TEST_CASE("read_conllu names file and line of a malformed line") {
  const std::string ok = word_line("1", "dogs", "NOUN");
  auto fails_with = [&](const std::string& bad_line, const std::string& message) {
    CHECK_THROWS_WITH_AS(conllu("# c\n" + ok + bad_line), message.c_str(), qkv::FormatError);
  };
  fails_with("2\tbark\t_\tVERB\t_\t_\t_\t_\t_\n",
             "read_conllu: train.conllu:3: expected 10 tab-separated columns (ID FORM LEMMA UPOS "
             "XPOS FEATS HEAD DEPREL DEPS MISC), found 9");
  fails_with("2 bark _ VERB _ _ _ _ _ _\n",
             "read_conllu: train.conllu:3: expected 10 tab-separated columns (ID FORM LEMMA UPOS "
             "XPOS FEATS HEAD DEPREL DEPS MISC), found 1");
  fails_with(word_line("2", "", "VERB"), "read_conllu: train.conllu:3: empty FORM in word 2");
  fails_with(word_line("2", "bark", ""), "read_conllu: train.conllu:3: no UPOS tag ('') for word 'bark'");
  fails_with(word_line("2", "bark", "_"), "read_conllu: train.conllu:3: no UPOS tag ('_') for word 'bark'");
  fails_with(word_line("two", "bark", "VERB"),
             "read_conllu: train.conllu:3: bad ID 'two': expected a word number like 3, a range like "
             "3-4 or an empty node like 3.1");
  fails_with(word_line("0", "bark", "VERB"),
             "read_conllu: train.conllu:3: bad ID '0': expected a word number like 3, a range like "
             "3-4 or an empty node like 3.1");
  fails_with(word_line("1-", "bark", "VERB"),
             "read_conllu: train.conllu:3: bad ID '1-': expected a word number like 3, a range like "
             "3-4 or an empty node like 3.1");
  // A missing blank line between sentences shows as an ID that starts again at 1.
  fails_with(word_line("1", "bark", "VERB"),
             "read_conllu: train.conllu:3: word ID 1 where 2 was expected (is a blank line missing "
             "between sentences?)");
}

TEST_CASE("read_conll names file and line of a line without two columns") {
  CHECK_THROWS_WITH_AS(conll("the DET\n\ncan NOUN VERB\n"),
                       "read_conll: train.txt:3: expected 2 whitespace-separated columns (word "
                       "TAG), found 3",
                       qkv::FormatError);
  CHECK_THROWS_WITH_AS(conll("the DET\nfish\n"),
                       "read_conll: train.txt:2: expected 2 whitespace-separated columns (word "
                       "TAG), found 1",
                       qkv::FormatError);
}

TEST_CASE("conll readers report a missing file by its path") {
  const std::string path = temp_path("does_not_exist.conllu");
  CHECK_THROWS_WITH_AS(qkv::data::read_conllu(path), ("read_conllu: no such file '" + path + "'").c_str(),
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(qkv::data::read_conll(path), ("read_conll: no such file '" + path + "'").c_str(),
                       qkv::ValueError);
}

TEST_CASE("conll writers reject sentences their readers could not read back") {
  std::ostringstream out;
  auto rejects = [&](const TaggedSentence& s, const std::string& conllu_message,
                     const std::string& conll_message) {
    if (!conllu_message.empty())
      CHECK_THROWS_WITH_AS(qkv::data::write_conllu(out, {kSentences[0], s}), conllu_message.c_str(),
                           qkv::ValueError);
    else
      CHECK_NOTHROW(qkv::data::write_conllu(out, {s}));
    CHECK_THROWS_WITH_AS(qkv::data::write_conll(out, {kSentences[0], s}), conll_message.c_str(),
                         qkv::ValueError);
  };
  rejects({}, "write_conllu: sentence 1 is empty", "write_conll: sentence 1 is empty");
  rejects({{"a", "b"}, {"DET"}}, "write_conllu: sentence 1 has 2 words but 1 tags",
          "write_conll: sentence 1 has 2 words but 1 tags");
  rejects({{"a", ""}, {"DET", "X"}}, "write_conllu: sentence 1: word 1 is empty",
          "write_conll: sentence 1: word 1 is empty");
  rejects({{"a"}, {"DET\t"}},
          "write_conllu: sentence 1: tag 0 'DET\t' contains whitespace the format cannot hold",
          "write_conll: sentence 1: tag 0 'DET\t' contains whitespace the format cannot hold");
  // CoNLL-U FORMs may hold spaces (UD allows them); two-column CoNLL cannot.
  rejects({{"New York"}, {"PROPN"}}, "",
          "write_conll: sentence 1: word 0 'New York' contains whitespace the format cannot hold");
}

TEST_CASE("write_conllu to a file writes nothing when a sentence is bad") {
  const std::string path = temp_path("bad.conllu");
  CHECK_THROWS_AS(qkv::data::write_conllu(path, {kSentences[0], TaggedSentence{}}), qkv::ValueError);
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("conll readers skip a UTF-8 byte-order mark at the start of the file") {
  const std::string bom = "\xEF\xBB\xBF";
  const std::vector<TaggedSentence> u = conllu(bom + word_line("1", "dogs", "NOUN"));
  REQUIRE(u.size() == 1);
  CHECK(u[0].words == std::vector<std::string>{"dogs"});
  const std::vector<TaggedSentence> c = conll(bom + "dogs NOUN\n");
  REQUIRE(c.size() == 1);
  CHECK(c[0].words == std::vector<std::string>{"dogs"});
  // Only at the start: elsewhere the bytes are part of a field, as any other bytes.
  CHECK_THROWS_WITH_AS(conllu(word_line("1", "a", "DET") + "\n" + bom + word_line("1", "b", "X")),
                       doctest::Contains("train.conllu:3: bad ID '\xEF\xBB\xBF"
                                         "1'"),
                       qkv::FormatError);
}

TEST_CASE("conll readers refuse a line of only spaces or tabs at its own line number") {
  const std::string message =
      ": the line is blank but not empty (only spaces or tabs): a sentence break is an empty line, "
      "and a word line needs its fields";
  CHECK_THROWS_WITH_AS(conllu(word_line("1", "a", "DET") + "\t\t\n" + word_line("1", "b", "X")),
                       ("read_conllu: train.conllu:2" + message).c_str(), qkv::FormatError);
  CHECK_THROWS_WITH_AS(conllu(word_line("1", "a", "DET") + "\t\t\t\t\t\t\t\t\t\r\n"),
                       ("read_conllu: train.conllu:2" + message).c_str(), qkv::FormatError);
  CHECK_THROWS_WITH_AS(conll("the DET\n\ncan NOUN\n   \nfish VERB\n"),
                       ("read_conll: train.txt:4" + message).c_str(), qkv::FormatError);
}

TEST_CASE("conll readers say a directory is a directory") {
  const std::string dir = temp_path("corpus_dir");
  std::filesystem::create_directories(dir);
  CHECK_THROWS_WITH_AS(qkv::data::read_conllu(dir),
                       ("read_conllu: '" + dir + "': is a directory, not a regular file").c_str(),
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(qkv::data::read_conll(dir),
                       ("read_conll: '" + dir + "': is a directory, not a regular file").c_str(),
                       qkv::ValueError);
  std::filesystem::remove(dir);
}
