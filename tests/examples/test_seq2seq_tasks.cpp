// The seq2seq example's tasks (examples/seq2seq/task.h): their vocabularies keep the reserved ids
// where decoding expects them, a user's source is refused by name when it cannot be read, and the
// cmudict task scores as the papers do (stress stripped, the nearest pronunciation) with the
// stressed figures beside.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "examples/seq2seq/figures.h"
#include "examples/seq2seq/task.h"
#include "examples/seq2seq/training.h"
#include "tensor/error.h"

using namespace seq2seq;

TEST_CASE("seq2seq tasks put <pad>, <bos> and <eos> at the ids decoding uses, and their symbols after them") {
  for (const std::string& name : kTasks) {
    CAPTURE(name);
    const std::unique_ptr<Task> task = make_task(name);
    for (const qkv::data::Vocab& v : {task->source_vocab(), task->target_vocab()}) {
      CHECK(v.pad_id() == kPadId);
      CHECK(v.id(kBos) == kBosId);
      CHECK(v.id(kEos) == kEosId);
    }
    CHECK(task->target_vocab().size() == 4 + static_cast<int64_t>(task->target_alphabet().size()));
  }
  const std::unique_ptr<Task> cmudict = make_task("cmudict");
  CHECK(cmudict->source_alphabet().size() == 27);  // the letters and the apostrophe
  CHECK(cmudict->encode_source("Aaron's").size() == 8);
  CHECK(cmudict->decode_target(cmudict->encode_target("EH1 R AH0 N Z")) == "EH1 R AH0 N Z");
  CHECK_THROWS_WITH_AS(make_task("french"), "task 'french' is not one of dates, cmudict", qkv::ValueError);
}

TEST_CASE("seq2seq cmudict refuses an empty word, a character outside its alphabet and a word of 10,000 letters") {
  const std::unique_ptr<Task> task = make_task("cmudict");
  CHECK_THROWS_WITH_AS(task->encode_source(""), "cmudict: the word is empty", qkv::ValueError);
  CHECK_THROWS_WITH_AS(task->encode_source("ro-bot"),
                       "cmudict: character '-' at position 2 of \"ro-bot\" is not a letter or an apostrophe",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(task->encode_source("caf\xc3\xa9"),
                       doctest::Contains("byte 195 at position 3"), qkv::ValueError);
  CHECK_THROWS_WITH_AS(task->encode_source(std::string(10'000, 'a')),
                       "cmudict: the word has 10000 characters, more than 60", qkv::ValueError);
}

TEST_CASE("seq2seq cmudict scores against the nearest pronunciation, stress stripped, and says the stressed figures") {
  const std::unique_ptr<Task> task = make_task("cmudict");
  const std::vector<Pair> pairs = {{"either", {"IY1 DH ER0", "AY1 DH ER0"}},  // right under both protocols
                                   {"data", {"D EY1 T AH0", "D AE1 T AH0"}},  // stress wrong: right stripped
                                   {"cat", {"K AE1 T"}}};                     // one phoneme wrong
  const std::vector<std::string> outputs = {"AY1 DH ER0", "D EY2 T AH0", "K AH1 T"};
  const Metrics m = task->score(outputs, pairs);
  CHECK(m.count == 3);
  CHECK(m.exact == doctest::Approx(2.0 / 3));
  CHECK(m.error_rate == doctest::Approx(1.0 / 10));  // 1 edit over 3 + 4 + 3 phonemes
  CHECK(task->describe(outputs, pairs) ==
        "WER 33.33 %  PER 10.00 %  (stress stripped; with stress: WER 66.67 %, PER 20.00 %)");
}

TEST_CASE("seq2seq dates score exact match, character error rate and BLEU") {
  const std::unique_ptr<Task> task = make_task("dates");
  const std::vector<Pair> pairs = {{"may 1, 2020", {"2020-05-01"}}, {"11/23/2026", {"2026-11-23"}}};
  const Metrics m = task->score({"2020-05-01", "2026-11-32"}, pairs);
  CHECK(m.exact == 0.5);
  CHECK(m.error_rate == doctest::Approx(2.0 / 20));
  CHECK(task->describe({"2020-05-01", "2026-11-23"}, pairs) == "exact match 1.0000  BLEU 1.0000");
}

TEST_CASE("seq2seq presets give each task and model its shipped sizes, and every option given wins") {
  const Config c = Config::preset("cmudict", "transformer");
  CHECK(c.task == "cmudict");
  CHECK(c.model.kind == "transformer");
  CHECK(c.model.target_vocab == make_task("cmudict")->target_vocab().size());
  CHECK_NOTHROW(c.validate());
  CHECK(c.model.num_hiddens == 128);
  CHECK(c.label_smoothing == 0.1);
  CHECK(c.epochs == 10);
  const Config gru = Config::preset("cmudict", "gru");
  CHECK(gru.model.num_hiddens == 256);
  CHECK(gru.label_smoothing == 0);
  CHECK(gru.epochs == 8);  // its longer epochs: 8 fit in the 15 minutes
  CHECK(Config::preset("dates", "gru").model.num_hiddens == Config{}.model.num_hiddens);
  CHECK_THROWS_WITH_AS(Config::preset("cmudict", "lstm"), doctest::Contains("model (--model) is 'lstm'"),
                       qkv::ValueError);
  Config mixed = Config::preset("dates", "gru");
  mixed.task = "cmudict";  // the dates' alphabets under the cmudict task
  CHECK_THROWS_WITH_AS(mixed.validate(), doctest::Contains("must be those of the task cmudict"), qkv::ValueError);
}

TEST_CASE("seq2seq train --resume refuses a run saved before --task and --model, whose history it would misread") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "qkv-test-seq2seq-older-run";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << "{\"seed\": 0, \"epochs\": 40}\n";
  TrainOptions o;
  o.run_dir = dir.string();
  o.resume = true;
  CHECK_THROWS_WITH_AS(train(Config{}, o), doctest::Contains("holds a seq2seq run of an earlier qkv, saved before --task"),
                       qkv::ValueError);
  CHECK(std::filesystem::exists(dir / "config.json"));  // nothing was changed
  std::filesystem::remove_all(dir);
}

TEST_CASE("seq2seq error_by_length groups the pairs by source length and keeps lengths with enough of them") {
  const std::unique_ptr<Task> task = make_task("cmudict");
  const std::vector<Pair> pairs = {{"cat", {"K AE1 T"}}, {"dog", {"D AO1 G"}}, {"ox", {"AA1 K S"}},
                                   {"bee", {"B IY1"}}, {"aardvark", {"AA1 R D V AA2 R K"}}};
  const std::vector<std::string> outputs = {"K AE1 T", "D AA1 G", "AA1 K S", "B IY1", "AA1 R D V AA2 R K"};
  const std::vector<LengthPoint> points = error_by_length(*task, outputs, pairs, 2);
  REQUIRE(points.size() == 1);  // only length 3 has two pairs or more
  CHECK(points[0].length == 3);
  CHECK(points[0].count == 3);
  CHECK(points[0].error == doctest::Approx(1.0 / 3));  // dog's vowel is wrong
}
