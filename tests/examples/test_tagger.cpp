// The tagger program's library: a short training run learns, runs are deterministic across thread
// counts and across an interruption, checkpoints predict what the model in memory predicted, and
// bad input is refused with a clear error.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "child_process.h"
#include "data/conll.h"
#include "examples/tagger/options.h"
#include "examples/tagger/train.h"
#include "io/json.h"
#include "io/scratch_dir.h"
#include "examples/tagger/figures.h"
#include "plot/png_testing.h"
#include "tagger_testing.h"
#include "nn/ffn.h"
#include "nn/position_scheme.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/threads.h"

namespace fs = std::filesystem;
using namespace tagger;

namespace {

using testing::quiet;
using testing::small_config;

}  // namespace

TEST_CASE("tagger short training run drives the loss below 0.6") {
  // 3 epochs of 38 steps on 300 sentences. The loss starts near ln(17) = 2.83 (17 tags, near
  // uniform logits); measured: 1.80, 0.65, 0.42 per epoch, and 84% dev accuracy (`tagger train
  // --d-model 32 --heads 2 --ffn-width 64 --layers 1 --epochs 3 --batch-size 8 --lr 0.01 --warmup 10
  // --sentences 300`). Tagging every token NOUN, the most frequent tag, scores about 18%.
  qkv::testing::ScratchDir dir;
  const Config c = small_config();
  const TrainResult r = train(c, load_data(c), quiet(dir.path()));
  REQUIRE(r.history.size() == 3);
  CHECK(r.step_losses.front() > 2.0);
  CHECK(r.history.back().train_loss < 0.6);
  CHECK(r.history.back().train_loss < r.history.front().train_loss);
  CHECK(r.test.score.overall.total > 0);
  CHECK(r.test.score.overall.value() > 0.7);
}

TEST_CASE("tagger training gives identical losses with 1 and 2 threads") {
  Config c = small_config();
  c.epochs = 1;
  std::vector<double> losses[2];
  const int saved = qkv::get_num_threads();
  for (int threads : {1, 2}) {
    qkv::set_num_threads(threads);
    qkv::testing::ScratchDir dir;
    losses[threads - 1] = train(c, load_data(c), quiet(dir.path())).step_losses;
  }
  qkv::set_num_threads(saved);
  REQUIRE(losses[0].size() == 38);
  CHECK(losses[0] == losses[1]);  // bitwise: doubles compared with ==
}

TEST_CASE("tagger resume after an interruption continues bit for bit") {
  Config c = small_config();
  c.epochs = 2;
  // The words only, and then with characters and word dropout (which draws from the generator
  // that the checkpoint saves).
  SUBCASE("words") {}
  SUBCASE("words and characters") { c.char_filters = 8, c.word_dropout = 1; }
  const Data data = load_data(c);
  qkv::testing::ScratchDir straight, interrupted;
  const TrainResult whole = train(c, data, quiet(straight.path()));

  TrainOptions first = quiet(interrupted.path());
  first.stop_after = 1;
  const TrainResult part1 = train(c, data, first);
  CHECK(part1.history.size() == 1);
  CHECK_FALSE(fs::exists(interrupted.path() / "figures"));
  const TrainResult part2 = resume(load_saved_run(interrupted.path().string(), "last.safetensors"), data,
                                   quiet(interrupted.path()));

  std::vector<double> joined = part1.step_losses;
  joined.insert(joined.end(), part2.step_losses.begin(), part2.step_losses.end());
  CHECK(joined == whole.step_losses);
  REQUIRE(part2.history.size() == 2);
  CHECK(part2.history[1].train_loss == whole.history[1].train_loss);
  CHECK(part2.history[1].dev_acc == whole.history[1].dev_acc);
  CHECK(part2.test.predicted == whole.test.predicted);
}

TEST_CASE("tagger predict from a saved checkpoint reproduces the trained model's tags") {
  qkv::testing::ScratchDir dir;
  Config c = small_config();
  SUBCASE("words") {}
  SUBCASE("words and characters") { c.char_filters = 8, c.word_dropout = 1; }
  const Data data = load_data(c);
  const TrainResult r = train(c, data, quiet(dir.path()));
  Run run = load_run(dir.path().string());
  std::vector<std::vector<std::string>> words;
  for (const TaggedSentence& s : data.test) words.push_back(s.words);
  CHECK(predict(run, words) == r.test.predicted);
  // A word never seen in training is read as <unk> and still gets a tag.
  const auto tags = predict(run, {{"qwertyuiop", "saw", "the", "saw"}});
  REQUIRE(tags.size() == 1);
  CHECK(tags[0].size() == 4);
  CHECK_THROWS_AS(predict(run, {{}}), qkv::ValueError);
}

TEST_CASE("tagger run directory holds config vocabularies metrics checkpoints and figures") {
  qkv::testing::ScratchDir dir;
  Config c = small_config();
  c.epochs = 2;
  TrainOptions o = quiet(dir.path());
  o.figures = true;
  o.example = "i saw a saw";
  const TrainResult r = train(c, load_data(c), o);
  for (const char* f :
       {"config.json", "words.txt", "tags.txt", "best.safetensors", "last.safetensors", "metrics.csv",
        "figures/loss_accuracy.png", "figures/positional_encoding.png", "figures/confusion.png",
        "figures/attention_layer1.png"}) {
    INFO(f);
    CHECK(fs::file_size(dir.path() / f) > 0);
  }
  // One layer of two heads: one figure, the two heads side by side, as d2l's show_heatmaps.
  CHECK_FALSE(fs::exists(dir.path() / "figures/attention_layer2.png"));
  CHECK_FALSE(fs::exists(dir.path() / "figures/attention_layer1_head1.png"));
  CHECK_FALSE(fs::exists(dir.path() / "figures/position_bias.png"));  // sinusoidal adds no bias
  {
    qkv::plot::HeatmapSpec one;
    one.rows = one.cols = 4;
    one.values.assign(16, 0.0f);
    one.row_labels = one.col_labels = {"i", "saw", "a", "saw"};
    one.title = "Attention, layer 1 head 1";
    one.x_label = "key (attended token)";
    one.y_label = "query token";
    one.value_min = 0.0f;
    one.value_max = 1.0f;
    const auto header = qkv::testing::read_png_header(
        qkv::testing::read_bytes((dir.path() / "figures/attention_layer1.png").string()));
    REQUIRE(header.valid);
    CHECK(header.width == 2 * static_cast<uint32_t>(qkv::plot::heatmap_size(one).width));
    CHECK(header.height == static_cast<uint32_t>(qkv::plot::heatmap_size(one).height));
  }
  std::ifstream csv(dir.path() / "metrics.csv");
  std::string header, row1, row2, extra;
  std::getline(csv, header);
  std::getline(csv, row1);
  std::getline(csv, row2);
  CHECK(header == "epoch,train_loss,train_acc,dev_loss,dev_acc,lr,tokens_per_s,seconds");
  CHECK(row1.rfind("1,", 0) == 0);
  CHECK(row2.rfind("2,", 0) == 0);
  CHECK_FALSE(std::getline(csv, extra));
  // The confusion matrix counts every test token once.
  int64_t total = 0;
  for (const auto& row : r.test.confusion) {
    for (int64_t n : row) total += n;
  }
  CHECK(total == r.test.score.overall.total);
}

TEST_CASE("tagger train with profile writes the op profile of the first epoch") {
  // 1 epoch of 38 steps: the fused cross-entropy runs once per step each way, and every matmul of
  // a forward is a graph node whose backward runs once.
  qkv::testing::ScratchDir dir;
  Config c = small_config();
  c.epochs = 1;
  TrainOptions o = quiet(dir.path());
  o.profile = true;
  train(c, load_data(c), o);
  std::ifstream in(dir.path() / "profile.csv");
  REQUIRE(in);
  std::string line;
  std::getline(in, line);
  CHECK(line == "op,pass,calls,total_ms,mean_us,flops,gflop_per_s,bytes_allocated,peak_bytes");
  std::map<std::string, int64_t> calls;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string op, pass, n;
    std::getline(fields, op, ',');
    std::getline(fields, pass, ',');
    std::getline(fields, n, ',');
    calls[op + " " + pass] = std::stoll(n);
  }
  const int64_t steps = (c.train_sentences + c.batch_size - 1) / c.batch_size;
  CHECK(calls["cross_entropy forward"] == steps);
  CHECK(calls["cross_entropy backward"] == steps);
  CHECK(calls["matmul forward"] > 0);
  CHECK(calls["matmul forward"] % steps == 0);
  CHECK(calls["matmul backward"] == calls["matmul forward"]);
}

TEST_CASE("tagger config round trips through JSON and rejects bad values") {
  Config c = small_config();
  c.model = "gru";
  c.window = 1;
  c.lr = 0.00123;
  c.train_file = "a.conllu";
  const Config back = Config::from_json(c.to_json());
  CHECK(qkv::io::to_json(back.to_json()) == qkv::io::to_json(c.to_json()));
  CHECK(back.lr == 0.00123);
  CHECK(back.model == "gru");
  CHECK_THROWS_AS(Config::from_json(qkv::io::parse_json(R"({"d_modle": 64})")), qkv::ValueError);
  CHECK_THROWS_AS(Config::from_json(qkv::io::parse_json(R"({"d_model": "wide"})")), qkv::ValueError);
  Config bad = small_config();
  bad.heads = 3;  // 32 is not divisible by 3
  CHECK_THROWS_AS(bad.validate(), qkv::ValueError);
  bad = small_config();
  bad.model = "lstm";
  CHECK_THROWS_AS(bad.validate(), qkv::ValueError);
  // The products' precision is part of the run (--resume keeps it); a run saved before it existed
  // trained in float32.
  c.matmul = "medium";
  CHECK(Config::from_json(c.to_json()).matmul == "medium");
  CHECK(Config::from_json(qkv::io::parse_json(R"({"d_model": 64})")).matmul == "highest");
  bad = small_config();
  bad.matmul = "low";
  CHECK_THROWS_WITH_AS(bad.validate(),
                       doctest::Contains("matmul (--matmul) is 'low'; expected one of highest, medium"),
                       qkv::ValueError);
}

TEST_CASE("tagger train options default to Config's values, and --help shows them") {
  const qkv::examples::Args none(0, nullptr, train_options(), "usage: tagger train [OPTIONS]");
  CHECK(qkv::io::to_json(config_from(none).to_json()) == qkv::io::to_json(Config{}.to_json()));
  const TrainOptions options = train_options_from(none);
  CHECK(options.run_dir == TrainOptions{}.run_dir);
  CHECK(options.figures == TrainOptions{}.figures);
  CHECK(options.profile == TrainOptions{}.profile);
  CHECK(options.example == TrainOptions{}.example);
  const std::string help = none.help();
  CHECK(help.find("--lr VALUE") != std::string::npos);
  CHECK(help.find("(default: 0.003)") != std::string::npos);
  CHECK(help.find("(default: 0.01)") != std::string::npos);
  CHECK(help.find("(default: runs/tagger)") != std::string::npos);
}

TEST_CASE("tagger models give one logit per tag per token") {
  Config c = small_config();
  const IndexTensor ids({1, 2, 3, 0, 4, 5, 0, 0}, {2, 4});
  const IndexTensor lens{3, 2};
  for (const char* kind : {"transformer", "gru"}) {
    INFO(kind);
    c.model = kind;
    const auto model = make_model(c, 10, 7);
    const Tensor logits = model->forward(ids, lens);
    CHECK(logits.shape() == qkv::Shape{2, 4, 7});
  }
  c.model = "transformer";
  const auto model = make_model(c, 10, 7);
  model->forward(ids, lens);
  const auto weights = model->attention_weights();
  REQUIRE(weights.size() == 1);
  CHECK(weights[0].shape() == qkv::Shape{2, 2, 4, 4});
  // Keys past a sentence's valid length get no attention.
  CHECK(weights[0].at({1, 0, 0, 2}) == 0.0f);
  CHECK(weights[0].at({1, 1, 1, 3}) == 0.0f);
  CHECK_THROWS_AS(model->forward(IndexTensor({1, 99}, {1, 2}), IndexTensor{2}), qkv::IndexError);
}

TEST_CASE("tagger load errors name the problem and leave nothing half loaded") {
  qkv::testing::ScratchDir dir;
  CHECK_THROWS_WITH_AS(load_run(dir.path().string()), doctest::Contains("config.json"), qkv::ValueError);
  const Config c = small_config();
  TrainOptions o = quiet(dir.path());
  train(c, load_data(c), o);
  // A truncated checkpoint is refused with a FormatError naming the file.
  const std::string bytes = qkv::testing::read_file(dir.path() / "best.safetensors");
  qkv::testing::write_file(dir.path() / "best.safetensors", bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_WITH_AS(load_run(dir.path().string()), doctest::Contains("best.safetensors"),
                       qkv::FormatError);
  // Resuming a directory without a run is an error, not a fresh start.
  qkv::testing::ScratchDir empty;
  CHECK_THROWS_AS(load_saved_run(empty.path().string(), "last.safetensors"), qkv::ValueError);
  // Data files: all three or none.
  Config files = c;
  files.train_file = (dir.path() / "train.conllu").string();
  CHECK_THROWS_AS(load_data(files), qkv::ValueError);
}

TEST_CASE("tagger reads CoNLL-U and two-column files and names a malformed line") {
  qkv::testing::ScratchDir dir;
  qkv::testing::write_file(
      dir.path() / "a.conllu",
      "# text = i saw\n1\ti\t_\tPRON\t_\t_\t_\t_\t_\t_\n2\tsaw\t_\tVERB\t_\t_\t_\t_\t_\t_\n\n");
  qkv::testing::write_file(dir.path() / "b.txt", "i PRON\nsaw VERB\n\n");
  qkv::testing::write_file(dir.path() / "bad.txt", "i PRON\nsaw\n\n");
  CHECK(read_tagged((dir.path() / "a.conllu").string()) == read_tagged((dir.path() / "b.txt").string()));
  CHECK_THROWS_WITH_AS(read_tagged((dir.path() / "bad.txt").string()), doctest::Contains("bad.txt:2"),
                       qkv::FormatError);
}

TEST_CASE(
    "tagger predict cuts text at whitespace for the built-in corpus, as UD for CoNLL files, as Brown for "
    "Brown") {
  Config builtin;
  Config files;
  files.train_file = "train.conllu";
  const std::string text = "they don't saw.";
  CHECK(qkv::data::tokenize(text, tokenizer_style_for(builtin)) ==
        std::vector<std::string>{"they", "don't", "saw."});
  CHECK(qkv::data::tokenize(text, tokenizer_style_for(files)) ==
        std::vector<std::string>{"they", "do", "n't", "saw", "."});
  Config brown;
  brown.corpus = "brown";
  CHECK(qkv::data::tokenize(text, tokenizer_style_for(brown)) ==
        std::vector<std::string>{"they", "don't", "saw", "."});
}

TEST_CASE("tagger gives a sentence the same logits whatever it is batched with") {
  // Padding must not leak into real tokens: not through attention (masked by valid lengths) and not
  // through the GRU's backward direction (which reads each sentence reversed within its length).
  for (const char* kind : {"transformer", "gru"}) {
    INFO(kind);
    Config c = small_config();
    c.model = kind;
    const auto model = make_model(c, 10, 7);
    model->eval();
    const Tensor alone = model->forward(IndexTensor({1, 2, 3}, {1, 3}), IndexTensor{3});
    const Tensor batched =
        model->forward(IndexTensor({4, 5, 6, 7, 8, 9, 1, 2, 3, 0, 0, 0}, {2, 6}), IndexTensor{6, 3});
    const std::vector<float> a = alone.contiguous().to_vector();
    const std::vector<float> b = batched.select(0, 1).narrow(0, 0, 3).contiguous().to_vector();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-5));
  }
}

TEST_CASE("tagger warms up for a tenth of a budget shorter than the warmup") {
  // 300 sentences in batches of 32 make 10 steps per epoch, 20 in all: below the default 200
  // warmup steps, which WarmupLR alone would refuse.
  qkv::testing::ScratchDir dir;
  Config c = small_config();
  c.batch_size = 32;
  c.epochs = 2;
  c.warmup_steps = Config{}.warmup_steps;
  const TrainResult r = train(c, load_data(c), quiet(dir.path()));
  CHECK(r.step_losses.size() == 20);
  // Warmup 2 steps, then cosine over 18: the last step (19) runs at
  // lr · (1 + cos(π · 17/18)) / 2 = 0.01 · 0.0075961.
  CHECK(r.history.back().lr == doctest::Approx(0.01 * (1 + std::cos(M_PI * 17.0 / 18.0)) / 2).epsilon(1e-6));
}

TEST_CASE("tagger refuses too long sentences and unknown tags naming them") {
  qkv::testing::ScratchDir dir;
  const Config c = small_config();
  Data data = load_data(c);
  Data long_data = data;
  long_data.dev[2].words.assign(kMaxSentenceLength + 1, "the");
  long_data.dev[2].tags.assign(kMaxSentenceLength + 1, "DET");
  CHECK_THROWS_WITH_AS(train(c, long_data, quiet(dir.path())),
                       doctest::Contains("dev sentence 3 has 1025 tokens"), qkv::ValueError);
  CHECK_FALSE(fs::exists(dir.path() / "config.json"));  // refused before the run directory was touched

  train(c, data, quiet(dir.path()));
  Run run = load_run(dir.path().string());
  std::vector<TaggedSentence> odd = {data.test[0]};
  odd[0].tags[0] = "NOTATAG";
  const TagLexicon lexicon(data.train);
  CHECK_THROWS_WITH_AS(evaluate(*run.model, run.vocabs, lexicon, odd, 8),
                       doctest::Contains("tag \"NOTATAG\""), qkv::ValueError);
  CHECK_THROWS_AS(predict(run, {std::vector<std::string>(kMaxSentenceLength + 1, "the")}), qkv::ValueError);
}

TEST_CASE("tagger fresh run clears an old run's files and load_run checks the checkpoint's config") {
  qkv::testing::ScratchDir dir;
  Config c = small_config();
  c.epochs = 1;
  TrainOptions with_figures = quiet(dir.path());
  with_figures.figures = true;
  train(c, load_data(c), with_figures);
  REQUIRE(fs::exists(dir.path() / "figures"));

  // A new run in the same directory, interrupted after its first of two epochs: the old figures are
  // gone and metrics.csv has the new run's one row.
  c.epochs = 2;
  c.seed = 5;
  TrainOptions interrupted = quiet(dir.path());
  interrupted.stop_after = 1;
  train(c, load_data(c), interrupted);
  CHECK_FALSE(fs::exists(dir.path() / "figures"));
  std::ifstream csv(dir.path() / "metrics.csv");
  int lines = 0;
  for (std::string line; std::getline(csv, line);) ++lines;
  CHECK(lines == 2);

  // config.json edited by hand no longer matches the checkpoint: refused, not silently misread.
  const std::string json = qkv::testing::read_file(dir.path() / "config.json");
  const size_t at = json.find("\"seed\":5");
  REQUIRE(at != std::string::npos);
  std::string edited = json;
  edited.replace(at, 8, "\"seed\":6");
  qkv::testing::write_file(dir.path() / "config.json", edited);
  CHECK_THROWS_WITH_AS(load_run(dir.path().string()), doctest::Contains("another config"), qkv::ValueError);
}

TEST_CASE("tagger trains with every position scheme and FFN the library registers") {
  // One short epoch each: the model builds, trains and evaluates, and learns something (tagging
  // every token NOUN scores about 18%).
  Config base = small_config();
  base.epochs = 2;
  std::vector<Config> configs;
  for (const std::string& positions : qkv::nn::position_scheme_names()) {
    Config c = base;
    c.positions = positions;
    c.window = positions == "rotary" || positions == "alibi" ? 2 : -1;  // the band path too
    configs.push_back(c);
  }
  for (const std::string& ffn : qkv::nn::feed_forward_names()) {
    Config c = base;
    c.ffn = ffn;
    c.norm = "pre";
    configs.push_back(c);
  }
  for (const Config& c : configs) {
    CAPTURE(c.positions);
    CAPTURE(c.ffn);
    qkv::testing::ScratchDir dir;
    const TrainResult r = train(c, load_data(c), quiet(dir.path()));
    CHECK(r.history.back().train_loss < r.history.front().train_loss);
    CHECK(r.test.score.overall.value() > 0.4);
  }
}

TEST_CASE("tagger refuses a checkpoint made with another position scheme naming the difference") {
  qkv::testing::ScratchDir dir;
  Config c = small_config();
  c.epochs = 1;
  c.positions = "rotary";
  train(c, load_data(c), quiet(dir.path()));
  const std::string json = qkv::testing::read_file(dir.path() / "config.json");
  const size_t at = json.find("\"positions\":\"rotary\"");
  REQUIRE(at != std::string::npos);
  std::string edited = json;
  edited.replace(at, 20, "\"positions\":\"alibi\"");
  qkv::testing::write_file(dir.path() / "config.json", edited);
  CHECK_THROWS_WITH_AS(load_run(dir.path().string()),
                       doctest::Contains("positions: \"rotary\" in the checkpoint, \"alibi\" in config.json"),
                       qkv::ValueError);
  Config bad = small_config();
  bad.positions = "fourier";
  CHECK_THROWS_WITH_AS(
      bad.validate(),
      doctest::Contains("positions (--positions) is 'fourier'; expected one of alibi, clipped"),
      qkv::ValueError);
}

TEST_CASE("tagger config names the key of a value of the wrong kind and bounds the window") {
  // A run made before "ffn" named the FFN kind stored its width there.
  CHECK_THROWS_WITH_AS(Config::from_json(qkv::io::parse_json("{\"ffn\": 128}")),
                       "tagger config: key 'ffn': expected a string, found an integer", qkv::ValueError);
  Config c;
  c.window = 1000000000;
  CHECK_THROWS_WITH_AS(c.validate(), "tagger config: window (--window) is 1000000000; expected -1 to 1023",
                       qkv::ValueError);
  c = Config();
  c.positions = "rotary";
  c.d_model = 6;
  c.heads = 2;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("d_model / heads must be even"), qkv::ValueError);
}

TEST_CASE("tagger reads a word's characters as bytes between two markers, and long words by their ends") {
  CHECK(char_ids("Ab") == std::vector<int64_t>{kCharBegin, 'A' + 1, 'b' + 1, kCharEnd});
  CHECK(char_ids("é") == std::vector<int64_t>{kCharBegin, 0xC3 + 1, 0xA9 + 1, kCharEnd});  // UTF-8 bytes
  const std::string long_word = "abcdefghijklmnopqrstuvwxyz0123";                          // 30 bytes
  const std::vector<int64_t> ids = char_ids(long_word);
  REQUIRE(ids.size() == static_cast<size_t>(kMaxWordBytes + 2));
  CHECK(ids[1] == 'a' + 1);
  CHECK(ids[kMaxWordBytes / 2] == 'l' + 1);      // the first 12 bytes: a..l
  CHECK(ids[kMaxWordBytes / 2 + 1] == 's' + 1);  // then the last 12: s..3
  CHECK(ids[kMaxWordBytes] == '3' + 1);
}

TEST_CASE("tagger input lists each distinct word form once, and padding tokens point past them") {
  Data data;
  data.train = {{{"The", "dog", "barks"}, {"DET", "NOUN", "VERB"}}};
  Config c = small_config();
  c.char_filters = 8;
  const Vocabs vocabs = build_vocabs(data, c);
  CHECK(vocabs.lowercase);
  const std::vector<std::string> a{"the", "dog", "the"}, b{"The", "Dog"};
  const ModelInput in = make_input(vocabs, {&a, &b}, true);
  CHECK(in.ids.values() == std::vector<int64_t>{vocabs.word_id("the"), vocabs.word_id("dog"),
                                                vocabs.word_id("the"), vocabs.word_id("the"),
                                                vocabs.word_id("dog"), 0});
  CHECK(vocabs.word_id("The") == vocabs.word_id("the"));  // the embedding reads lowercase...
  CHECK(in.chars.shape() == qkv::Shape{4, 5});            // ...the characters keep the case: 4 forms
  CHECK(in.form_rows.values() == std::vector<int64_t>{0, 1, 0, 2, 3, 4});  // 4: the padding token
  CHECK(in.char_lens.values() == std::vector<int64_t>{5, 5, 5, 5});
}

TEST_CASE("tagger with characters tells unseen words apart by their form; without, they are all <unk>") {
  Data data;
  data.train = {{{"a", "b"}, {"X", "Y"}}};
  Config c = small_config();
  const std::vector<std::string> s1{"a", "running"}, s2{"a", "Paris"};  // two words never seen
  const std::vector<std::pair<const char*, int64_t>> models{
      {"transformer", 0}, {"transformer", 8}, {"gru", 8}};
  for (const auto& [kind, filters] : models) {
    INFO(kind << ", char_filters " << filters);
    c.char_filters = filters;
    c.model = kind;  // both models read characters
    const Vocabs vocabs = build_vocabs(data, c);
    qkv::manual_seed(0);
    const auto model = make_model(c, vocabs.words.size(), 2);
    model->eval();
    const bool chars = model->reads_chars();
    CHECK(chars == (filters > 0));
    const Tensor x = model->forward(make_input(vocabs, {&s1}, chars));
    const Tensor y = model->forward(make_input(vocabs, {&s2}, chars));
    const float gap = (x - y).abs().max().item();
    if (filters == 0) CHECK(gap == 0.0f);
    if (filters > 0) CHECK(gap > 1e-3f);
  }
  // A character model needs the characters.
  c.char_filters = 8;
  const auto model = make_model(c, 10, 2);
  CHECK_THROWS_AS(model->forward(IndexTensor({1, 2}, {1, 2}), IndexTensor{2}), qkv::ValueError);
}

TEST_CASE("tagger with characters gives a sentence the same logits whatever it is batched with") {
  Data data;
  data.train = {{{"a", "b"}, {"X", "Y"}}};
  Config c = small_config();
  c.char_filters = 8;
  const Vocabs vocabs = build_vocabs(data, c);
  const auto model = make_model(c, vocabs.words.size(), 2);
  model->eval();
  const std::vector<std::string> s{"a", "b", "Paris"},
      other{"extraordinarily", "long", "words", "b", "a", "x"};
  const Tensor alone = model->forward(make_input(vocabs, {&s}, true));
  const Tensor batched = model->forward(make_input(vocabs, {&other, &s}, true));
  const Tensor diff = alone.select(0, 0) - batched.select(0, 1).narrow(0, 0, 3);
  CHECK(diff.abs().max().item() < 1e-5f);
}

TEST_CASE("tagger word dropout reads rare training words as <unk> often, frequent ones almost never") {
  Config c = small_config();
  c.word_dropout = 1;  // α: a word seen n times is dropped with chance 1 / (1 + n)
  auto tokens = make_model(c, 10, 2)->tokens;
  std::vector<int64_t> counts(10, 0);
  counts[7] = 1, counts[8] = 999;
  CHECK_THROWS_AS(tokens->drop_words(IndexTensor{7}), qkv::StateError);  // counts first
  tokens->set_word_counts(counts, 0, 1);
  std::vector<int64_t> ids;
  for (int i = 0; i < 1000; ++i) ids.insert(ids.end(), {7, 8, 0});  // rare, frequent, padding
  qkv::manual_seed(3);
  const std::vector<int64_t> dropped = tokens->drop_words(IndexTensor(ids)).values();
  int64_t rare = 0, frequent = 0;
  for (size_t i = 0; i < dropped.size(); i += 3) {
    CHECK((dropped[i] == 7 || dropped[i] == tokens->unk_id));
    CHECK((dropped[i + 1] == 8 || dropped[i + 1] == tokens->unk_id));
    CHECK(dropped[i + 2] == 0);
    rare += dropped[i] == tokens->unk_id;
    frequent += dropped[i + 1] == tokens->unk_id;
  }
  CHECK(rare > 430);  // chance 1/2
  CHECK(rare < 570);
  CHECK(frequent < 8);  // chance 1/1000
}

TEST_CASE("tagger train refuses a bad config before it touches an existing run") {
  qkv::testing::ScratchDir dir;
  const Config c = small_config();
  const Data data = load_data(c);
  train(c, data, quiet(dir.path()));
  const std::string best = qkv::testing::read_file(dir.path() / "best.safetensors");
  const std::string metrics = qkv::testing::read_file(dir.path() / "metrics.csv");
  Config infinite = c, huge = c, not_utf8 = c;
  infinite.lr = INFINITY;
  huge.d_model = 1'000'000'000;
  not_utf8.train_file = "/tmp/\xff.conllu";  // cannot be written to config.json
  for (const Config* bad : {&infinite, &huge, &not_utf8}) {
    CHECK_THROWS_AS(train(*bad, data, quiet(dir.path())), qkv::ValueError);
    CHECK(qkv::testing::read_file(dir.path() / "best.safetensors") == best);
    CHECK(qkv::testing::read_file(dir.path() / "metrics.csv") == metrics);
  }
}

TEST_CASE("tagger config errors name the file and the key and say what was expected") {
  const auto from = [](const std::string& text) {
    return Config::from_json(qkv::io::parse_json(text), "run/config.json");
  };
  CHECK_THROWS_WITH_AS(from(R"({"d_model": "64"})"),
                       "run/config.json: key 'd_model': expected an integer, found a string",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(from(R"({"lr": "fast"})"),
                       "run/config.json: key 'lr': expected a number, found a string", qkv::ValueError);
  CHECK_THROWS_WITH_AS(from(R"({"model": null})"),
                       "run/config.json: key 'model': expected a string, found null", qkv::ValueError);
  CHECK_THROWS_WITH_AS(from(R"({"seed": -1})"),
                       "run/config.json: key 'seed': expected an integer of at least 0, found -1",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(from(R"({"d_modle": 64})"), "run/config.json: unknown key 'd_modle' (is this a tagger run?)", qkv::ValueError);
  CHECK_THROWS_WITH_AS(from("[1]"), "run/config.json: expected an object of settings, found array",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(from(R"({"layers": 1000})"),
                       "run/config.json: tagger config: layers (--layers) is 1000; expected 1 to 64",
                       qkv::ValueError);
}

TEST_CASE(
    "tagger eval refuses a config.json that is a link to /dev/zero and names a bad key, from the command "
    "line") {
  qkv::testing::ScratchDir dir;
  fs::create_symlink("/dev/zero", dir / "config.json");
  qkv::testing::ChildResult r =
      qkv::testing::run_program(qkv::testing::kTaggerProgram, {"eval", "--run", dir.path().string()});
  CHECK(r.exit_code == 1);
  CHECK(r.errors == "tagger: '" + (dir / "config.json").string() +
                        "': is a character device, not a regular file\n");
  fs::remove(dir / "config.json");
  qkv::testing::write_file(dir / "config.json", R"({"d_model": "wide"})");
  r = qkv::testing::run_program(qkv::testing::kTaggerProgram,
                                {"predict", "--run", dir.path().string(), "a b"});
  CHECK(r.exit_code == 1);
  CHECK(r.errors == "tagger: " + (dir / "config.json").string() +
                        ": key 'd_model': expected an integer, found a string\n");
  qkv::testing::write_file(dir / "config.json", "{\"d_model\": 64,}");
  r = qkv::testing::run_program(qkv::testing::kTaggerProgram, {"eval", "--run", dir.path().string()});
  CHECK(r.errors.starts_with("tagger: " + (dir / "config.json").string() + ": JSON: at byte 15: "));
}

TEST_CASE("tagger refuses a checkpoint whose config's sizes are not those of its tensors") {
  Config c = small_config();
  const std::shared_ptr<TaggerModel> model = make_model(c, 20, 5);
  const qkv::nn::StateDict state = model->state_dict();
  CHECK_NOTHROW(check_config_fits_tensors(c, state, "best.safetensors"));
  c.layers = 64;
  CHECK_THROWS_WITH_AS(
      check_config_fits_tensors(c, state, "best.safetensors"),
      "best.safetensors: its config says layers=64 but its tensors hold 1 Transformer blocks "
      "(encoder.blocks.0, encoder.blocks.1, ...)",
      qkv::FormatError);
  c = small_config();
  c.d_model = 8192;
  CHECK_THROWS_WITH_AS(check_config_fits_tensors(c, state, "best.safetensors"),
                       "best.safetensors: its config says d_model=8192 but 'head.weight' has 32 columns",
                       qkv::FormatError);
}

namespace {

// One epoch on 60 built-in sentences.
Config files_config() {
  Config c = small_config();
  c.epochs = 1;
  c.train_sentences = 60;
  return c;
}

// A run in dir/run trained from dir/{train,dev,test}.conllu, written from `builtin`'s splits.
Config train_on_files(const fs::path& dir, const Data& builtin) {
  Config c = files_config();
  for (const auto& [name, split] : {std::pair{"train.conllu", &builtin.train},
                                    {"dev.conllu", &builtin.dev},
                                    {"test.conllu", &builtin.test}})
    qkv::data::write_conllu((dir / name).string(), *split);
  c.train_file = (dir / "train.conllu").string();
  c.dev_file = (dir / "dev.conllu").string();
  c.test_file = (dir / "test.conllu").string();
  train(c, load_data(c), quiet(dir / "run"));
  return c;
}

}  // namespace

TEST_CASE("tagger eval with --test needs only the run directory, not the training files") {
  qkv::testing::ScratchDir dir;
  const Data builtin = load_data(files_config());
  const Config c = train_on_files(dir.path(), builtin);
  fs::rename(dir / "test.conllu", dir / "other.conllu");
  fs::remove(dir / "train.conllu");
  fs::remove(dir / "dev.conllu");

  qkv::testing::ChildResult r = qkv::testing::run_program(
      qkv::testing::kTaggerProgram,
      {"eval", "--run", (dir / "run").string(), "--test", (dir / "other.conllu").string()});
  INFO(r.errors);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("accuracy ") == 0);
  CHECK(
      r.output.find("(ambiguous and unseen words not measured: they are defined by the run's training file " +
                    c.train_file + " (its --train), which is gone)") != std::string::npos);
  // Without --test, eval scores the run's own test split, which is gone: it says so and what to do.
  r = qkv::testing::run_program(qkv::testing::kTaggerProgram, {"eval", "--run", (dir / "run").string()});
  CHECK(r.exit_code == 1);
  CHECK(
      r.errors.find(
          "eval reads the run's data for its test split and its training words (read_conllu: no such file '" +
          c.train_file + "'); --test FILE scores a file with the run directory alone") != std::string::npos);
}

TEST_CASE("tagger eval with --test leaves out what a changed or unreadable training file would decide") {
  qkv::testing::ScratchDir dir;
  const Data builtin = load_data(files_config());
  const Config c = train_on_files(dir.path(), builtin);
  const std::vector<std::string> eval = {"eval", "--run", (dir / "run").string(), "--test", c.test_file};
  auto r = qkv::testing::run_program(qkv::testing::kTaggerProgram, eval);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("not measured") == std::string::npos);  // the training file is as it was
  // Another corpus in its place would give other ambiguous and unseen words, silently.
  qkv::data::write_conllu(c.train_file, builtin.dev);
  r = qkv::testing::run_program(qkv::testing::kTaggerProgram, eval);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("which has changed since the run was trained") != std::string::npos);
  fs::remove(c.train_file);
  fs::create_directories(c.train_file);
  r = qkv::testing::run_program(qkv::testing::kTaggerProgram, eval);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("which no longer reads (read_conllu: ") != std::string::npos);
}

TEST_CASE("tagger train given a directory as its training file says it is a directory") {
  qkv::testing::ScratchDir dir;
  fs::create_directories(dir / "corpus");
  const std::string corpus = (dir / "corpus").string();
  const qkv::testing::ChildResult r = qkv::testing::run_program(
      qkv::testing::kTaggerProgram,
      {"train", "--train", corpus, "--dev", corpus, "--test", corpus, "--run", (dir / "run").string()});
  CHECK(r.exit_code == 1);
  CHECK(r.errors == "tagger: read_conll: '" + corpus + "': is a directory, not a regular file\n");
  CHECK_FALSE(fs::exists(dir / "run"));
}

TEST_CASE("tagger draws the bias a relative or ALiBi scheme adds, one row per head") {
  for (const char* scheme : {"alibi", "relative", "clipped"}) {
    CAPTURE(scheme);
    qkv::testing::ScratchDir dir;
    Config c = small_config();
    c.epochs = 1;
    c.train_sentences = 40;
    c.positions = scheme;
    TrainOptions o = quiet(dir.path());
    o.figures = true;
    train(c, load_data(c), o);
    const auto header = qkv::testing::read_png_header(
        qkv::testing::read_bytes((dir.path() / "figures/position_bias.png").string()));
    CHECK(header.valid);
    CHECK_FALSE(fs::exists(dir.path() / "figures/positional_encoding.png"));
  }
}

TEST_CASE("tagger's confusion figure is coloured by each gold row's share and labelled with counts") {
  // Before, cells were coloured by count: a frequent tag's few errors were as pale as zeros.
  const qkv::data::Vocab tags({{"NOUN", 3}, {"VERB", 2}, {"DET", 1}}, 1, {});
  REQUIRE(tags.tokens().size() == 3);
  const std::vector<std::vector<int64_t>> confusion = {{990, 10, 0}, {1, 3, 0}, {0, 0, 0}};
  const qkv::plot::HeatmapSpec spec = confusion_figure(tags, confusion);
  REQUIRE(spec.values.size() == 9);
  CHECK(spec.values[0] == doctest::Approx(0.99));
  CHECK(spec.values[1] == doctest::Approx(0.01));
  CHECK(spec.values[3] == doctest::Approx(0.25));  // 1 of VERB's 4 is read as NOUN
  CHECK(spec.values[8] == 0.0f);                   // a row with no token
  CHECK(spec.cell_text == std::vector<std::string>{"990", "10", "", "1", "3", "", "", "", ""});
  CHECK(*spec.value_max == 1.0f);
}
