// Vocab: id order, reserved tokens, unknown tokens, save and load.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "data/conll.h"
#include "data/vocab.h"
#include "io/scratch_dir.h"
#include "tensor/error.h"

using qkv::data::Vocab;

namespace {

const std::map<std::string, int64_t> kCounts = {{"the", 5}, {"saw", 3}, {"a", 3},
                                                {"i", 2},   {"dog", 1}, {"cat", 1}};

std::vector<std::string> tokens_of(const std::string& text) {
  std::vector<std::string> tokens;
  std::istringstream in(text);
  for (std::string t; in >> t;) tokens.push_back(t);
  return tokens;
}

}  // namespace

TEST_CASE("vocab puts pad and unk first then tokens by count then byte order") {
  const Vocab v(kCounts);
  // Counts 5, 3, 3, 2, 1, 1: "a" before "saw" and "cat" before "dog" break the ties.
  CHECK(v.tokens() ==
        std::vector<std::string>{"<pad>", "<unk>", "the", "a", "saw", "i", "cat", "dog"});
  CHECK(v.size() == 8);
  CHECK(v.pad_id() == 0);
  CHECK(v.unk_id() == 1);
  CHECK(v.id("the") == 2);
  CHECK(v.token(4) == "saw");
}

TEST_CASE("vocab drops tokens rarer than min_freq and maps them to unk") {
  const Vocab v(kCounts, /*min_freq=*/2);
  CHECK(v.tokens() == std::vector<std::string>{"<pad>", "<unk>", "the", "a", "saw", "i"});
  CHECK_FALSE(v.contains("dog"));
  CHECK(v.id("dog") == 1);
  CHECK(v.id("never seen") == 1);
  CHECK(v.encode(tokens_of("i saw a cat")) == std::vector<int64_t>{5, 4, 3, 1});
  CHECK(v.decode({5, 4, 3, 1}) == tokens_of("i saw a <unk>"));
}

TEST_CASE("tag vocab without reserved tokens rejects unknown tags") {
  const Vocab tags({{"NOUN", 4}, {"VERB", 4}, {"DET", 2}}, 1, {});
  CHECK(tags.tokens() == std::vector<std::string>{"NOUN", "VERB", "DET"});
  CHECK_FALSE(tags.has_pad());
  CHECK_FALSE(tags.has_unk());
  CHECK_THROWS_WITH_AS(tags.id("ADJ"),
                       "Vocab::id: unknown token 'ADJ' and the vocabulary has no <unk>",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(tags.pad_id(), "Vocab::pad_id: the vocabulary has no <pad>",
                       qkv::StateError);
  CHECK_THROWS_AS(tags.unk_id(), qkv::StateError);
}

TEST_CASE("vocab with pad only pads but rejects unknown tokens") {
  const Vocab tags({{"NOUN", 4}, {"VERB", 1}}, 1, {Vocab::kPad});
  CHECK(tags.tokens() == std::vector<std::string>{"<pad>", "NOUN", "VERB"});
  CHECK(tags.pad_id() == 0);
  CHECK_THROWS_AS(tags.id("ADJ"), qkv::ValueError);
}

TEST_CASE("vocab counts a token spelled like a reserved one as that reserved token") {
  const Vocab v({{"<unk>", 9}, {"dog", 1}});
  CHECK(v.tokens() == std::vector<std::string>{"<pad>", "<unk>", "dog"});
}

TEST_CASE("vocab token lookup checks the id range") {
  const Vocab v(kCounts);
  CHECK_THROWS_WITH_AS(v.token(8), "Vocab::token: id 8 is out of range [0, 8)", qkv::IndexError);
  CHECK_THROWS_WITH_AS(v.token(-1), "Vocab::token: id -1 is out of range [0, 8)", qkv::IndexError);
  CHECK_THROWS_AS(v.decode({0, 99}), qkv::IndexError);
}

TEST_CASE("vocab rejects bad construction arguments") {
  CHECK_THROWS_WITH_AS(Vocab(kCounts, 0), "Vocab: min_freq must be at least 1, got 0",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(Vocab(kCounts, 1, {"<pad>", "<pad>"}),
                       "Vocab: reserved token '<pad>' is given twice", qkv::ValueError);
  CHECK_THROWS_AS(Vocab(kCounts, 1, {""}), qkv::ValueError);
  CHECK_THROWS_WITH_AS(Vocab({{"two\nlines", 3}}),
                       "Vocab: counted token 'two\nlines' is empty or holds a line break",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(Vocab(kCounts, 6, {}),
                       "Vocab: no reserved tokens and no token counted at least min_freq = 6 times",
                       qkv::ValueError);
}

TEST_CASE("vocab saves one token per line and loads back the same ids") {
  const Vocab v(kCounts, 2);
  std::ostringstream out;
  v.save(out);
  CHECK(out.str() == "<pad>\n<unk>\nthe\na\nsaw\ni\n");
  std::istringstream in(out.str());
  const Vocab back = Vocab::load(in, "vocab.txt");
  CHECK(back.tokens() == v.tokens());
  CHECK(back.unk_id() == 1);
  CHECK(back.id("dog") == 1);

  const std::string path = (std::filesystem::temp_directory_path() /
                            ("qkv_test_" + std::to_string(getpid()) + "_vocab.txt"))
                               .string();
  const Vocab tags({{"NOUN", 2}, {"VERB", 1}}, 1, {});
  tags.save(path);
  const Vocab tags_back = Vocab::load(path);
  CHECK(tags_back.tokens() == tags.tokens());
  CHECK_FALSE(tags_back.has_unk());
  std::filesystem::remove(path);
}

TEST_CASE("vocab load names the line of an empty or repeated token") {
  auto load = [](const std::string& text) {
    std::istringstream in(text);
    return Vocab::load(in, "vocab.txt");
  };
  CHECK(load("<pad>\r\n<unk>\r\nthe\r\n").tokens() ==
        std::vector<std::string>{"<pad>", "<unk>", "the"});
  CHECK_THROWS_WITH_AS(load("<pad>\n\nthe\n"),
                       "Vocab::load: vocab.txt:2: empty token (every line holds one token)",
                       qkv::FormatError);
  CHECK_THROWS_WITH_AS(load("<pad>\nthe\na\nthe\n"),
                       "Vocab::load: vocab.txt:4: token 'the' repeats line 2", qkv::FormatError);
  CHECK_THROWS_WITH_AS(load(""), "Vocab::load: vocab.txt: no tokens", qkv::FormatError);
  CHECK_THROWS_AS(Vocab::load("/nonexistent/qkv/vocab.txt"), qkv::ValueError);
}

TEST_CASE("Vocab::save and write_conllu replace a file whole and name a path they cannot write") {
  qkv::testing::ScratchDir dir;
  const std::string path = (dir.path() / "words.txt").string();
  qkv::data::Vocab({{"a", 1}, {"b", 2}}).save(path);
  qkv::data::Vocab({{"c", 1}}).save(path);  // over the old file, through a temporary one
  const qkv::data::Vocab back = qkv::data::Vocab::load(path);
  CHECK(back.contains("c"));
  CHECK_FALSE(back.contains("a"));
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()) == 1);
  const std::string missing = (dir.path() / "no" / "such" / "dir" / "t.conllu").string();
  CHECK_THROWS_WITH_AS(qkv::data::write_conllu(missing, {}), doctest::Contains(missing.c_str()), qkv::Error);
}
