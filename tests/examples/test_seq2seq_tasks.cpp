// The seq2seq example's tasks (examples/seq2seq/task.h): their vocabularies keep the reserved ids
// where decoding expects them, a user's source is refused by name when it cannot be read, and the
// cmudict task scores as the papers do (stress stripped, the nearest pronunciation) with the
// stressed figures beside.
#include <doctest/doctest.h>

#include <string>
#include <vector>

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
  CHECK(Config::preset("dates", "gru").model.num_hiddens == Config{}.model.num_hiddens);
  CHECK_THROWS_WITH_AS(Config::preset("cmudict", "lstm"), doctest::Contains("model (--model) is 'lstm'"),
                       qkv::ValueError);
  Config mixed = Config::preset("dates", "gru");
  mixed.task = "cmudict";  // the dates' alphabets under the cmudict task
  CHECK_THROWS_WITH_AS(mixed.validate(), doctest::Contains("must be those of the task cmudict"), qkv::ValueError);
}
