// The long_range example's library (examples/long_range): the generated task is reproducible and
// holds the tags and distances its header promises, the references (majority, window bound) come
// out as defined, bad options are refused by name, and short trainings learn: dense attention far
// above chance in a second, the same in the reference mode, and every mechanism without error.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "examples/long_range/model.h"
#include "examples/long_range/task.h"
#include "examples/long_range/train.h"
#include "io/json.h"
#include "io/scratch_dir.h"
#include "tensor/error.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"

using namespace long_range;

namespace {

// The message of the ValueError `f` throws, or "" when it throws none.
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const qkv::ValueError& e) {
    return e.what();
  }
  return "";
}

// Runs the enclosed training on one thread and restores the count. Results do not depend on it;
// the products of a model this small gain nothing from a second thread, and in the reference mode
// OpenMP's team would wait on cores that the fused kernels' workers, started by an earlier run
// of the same test, still spin on.
struct OneThread {
  int saved = qkv::get_num_threads();
  OneThread() { qkv::set_num_threads(1); }
  ~OneThread() { qkv::set_num_threads(saved); }
};

// Each training's run directory: a new one in a scratch directory the process removes at its end.
std::string new_run_dir() {
  static qkv::testing::ScratchDir scratch;
  static int runs = 0;
  return (scratch.path() / ("run" + std::to_string(runs++))).string();
}

TrainOptions quick(const std::string& attention, int64_t length, int64_t steps) {
  TrainOptions o;
  o.run_dir = new_run_dir();
  o.task.length = length;
  o.model.attention = attention;
  o.steps = steps;
  o.test_sequences = 16;
  o.verbose = false;
  return o;
}

}  // namespace

TEST_CASE("long_range sequences are reproducible from their seed and vary with it") {
  const TaskOptions task{.length = 256};
  const std::vector<Sequence> a = generate(task, 20, 7), b = generate(task, 20, 7), c = generate(task, 20, 8);
  REQUIRE(a.size() == 20);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].tokens == b[i].tokens);
    CHECK(a[i].tags == b[i].tags);
    CHECK(a[i].needles == b[i].needles);
  }
  int64_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i].tokens != c[i].tokens ? 1 : 0;
  CHECK(differ == 20);
  // The test set does not depend on any training seed: a function of the task alone.
  CHECK(test_set(task, 5)[4].tokens == test_set(task, 5)[4].tokens);
  CHECK(test_set(task, 5)[0].tokens != a[0].tokens);
}

TEST_CASE("long_range sequences have three quarters of the length to all of it") {
  for (const int64_t L : {16, 100, 512, 4096}) {
    CAPTURE(L);
    const TaskOptions task{.length = L};
    const std::vector<Sequence> set = generate(task, L == 4096 ? 40 : 400, 1);
    int64_t lo = L, hi = 0;
    for (const Sequence& s : set) {
      lo = std::min<int64_t>(lo, static_cast<int64_t>(s.tokens.size()));
      hi = std::max<int64_t>(hi, static_cast<int64_t>(s.tokens.size()));
    }
    CHECK(lo >= (3 * L + 3) / 4);
    CHECK(hi <= L);
    CHECK(shortest(task) == (3 * L + 3) / 4);
    if (L <= 100) {  // 400 draws from at most 26 lengths reach both ends
      CHECK(lo == shortest(task));
      CHECK(hi == L);
    }
  }
}

TEST_CASE("long_range tags each query with the value of its key's needle") {
  const TaskOptions task{.length = 300, .keys = 3, .values = 5};
  CHECK(vocab_size(task) == 1 + 3 + 15);
  for (const Sequence& s : generate(task, 30, 2)) {
    REQUIRE(s.needles.size() == 3);
    std::vector<int64_t> value(3, -1);
    for (int64_t q = 0; q < 3; ++q) {  // one needle per key, carrying its value as its own tag
      const int64_t token = s.tokens[static_cast<size_t>(s.needles[static_cast<size_t>(q)])];
      CHECK(is_needle(task, token));
      CHECK(key_of(task, token) == q);
      value[static_cast<size_t>(q)] = (token - 1 - 3) % 5;
      CHECK(s.tags[static_cast<size_t>(s.needles[static_cast<size_t>(q)])] == value[static_cast<size_t>(q)]);
    }
    int64_t needles = 0;
    for (size_t i = 0; i < s.tokens.size(); ++i) {
      CHECK(s.tokens[i] >= 1);
      CHECK(s.tokens[i] < vocab_size(task));
      if (is_needle(task, s.tokens[i])) {
        ++needles;
        continue;
      }
      CHECK(s.tags[i] == value[static_cast<size_t>(key_of(task, s.tokens[i]))]);
    }
    CHECK(needles == 3);
  }
}

TEST_CASE("long_range needles are hundreds of tokens from their queries at length 512") {
  const TaskOptions task{.length = 512};
  const TaskStats s = task_stats(task, generate(task, 200, 3), 32);
  // Uniform positions on n in 384 .. 512 tokens: a mean distance of n/3 (about 150), and a share of
  // about 64/n (about 14%) within ±32.
  CHECK(s.mean_distance > 130);
  CHECK(s.mean_distance < 170);
  CHECK(s.within_window > 0.10);
  CHECK(s.within_window < 0.18);
  // The window bound: within the window right, elsewhere 1/8, the two needles right.
  CHECK(s.window_bound == doctest::Approx(s.within_window + (1 - s.within_window) / 8).epsilon(0.02));
  CHECK(s.majority > 0.125);  // the most frequent tag of a finite set is above chance...
  CHECK(s.majority < 0.2);    // ...but not by much over 200 sequences
}

TEST_CASE("long_range task_stats counts a hand-made sequence exactly") {
  const TaskOptions task{.length = 16, .keys = 2, .values = 4};
  Sequence s;
  // needle (0, 3) at 0 (id 1 + 2 + 0·4 + 3), queries of key 0 (id 1) at 1 and 4 and of key 1
  // (id 2) at 2 and 3, needle (1, 2) at 5 (id 1 + 2 + 1·4 + 2)
  s.tokens = {6, 1, 2, 2, 1, 9};
  s.tags = {3, 3, 2, 2, 3, 2};
  s.needles = {0, 5};
  // distances: key 0 queries at 1 and 4 → 1, 4; key 1 queries at 2 and 3 → 3, 2
  const TaskStats st = task_stats(task, {s}, 2);
  CHECK(st.mean_distance == doctest::Approx(10.0 / 4));
  CHECK(st.within_window == doctest::Approx(2.0 / 4));  // distances 1 and 2
  CHECK(st.window_bound == doctest::Approx((2 + 2 + 2 * 0.25) / 6));
  CHECK(st.majority == doctest::Approx(3.0 / 6));
}

TEST_CASE("long_range batches pad with id 0 and carry the lengths") {
  const TaskOptions task{.length = 64};
  const std::vector<Sequence> set = generate(task, 3, 4);
  const Batch b = make_batch(set, 1, 2);
  const auto n1 = static_cast<int64_t>(set[1].tokens.size()), n2 = static_cast<int64_t>(set[2].tokens.size());
  const int64_t T = std::max(n1, n2);
  CHECK(b.ids.shape() == qkv::Shape{2, T});
  CHECK(b.tags.shape() == qkv::Shape{2, T});
  CHECK(b.valid_lens.values() == std::vector<int64_t>{n1, n2});
  CHECK(b.tokens == n1 + n2);
  for (int64_t t = 0; t < T; ++t) {
    CHECK(b.ids[t] == (t < n1 ? set[1].tokens[static_cast<size_t>(t)] : 0));
    CHECK(b.ids[T + t] == (t < n2 ? set[2].tokens[static_cast<size_t>(t)] : 0));
  }
  CHECK_THROWS_AS(make_batch(set, 2, 2), qkv::ValueError);
}

TEST_CASE("long_range refuses options out of range by name") {
  CHECK(refusal([] { check_task({.length = 8}); }) == "--length 8 is outside 16 .. 4096 tokens");
  CHECK(refusal([] { check_task({.length = 5000}); }) == "--length 5000 is outside 16 .. 4096 tokens");
  CHECK(refusal([] { check_task({.length = 16, .keys = 5}); }).starts_with("--keys 5 is outside 1 .. 4"));
  CHECK(refusal([] { check_task({.values = 1}); }) == "--values 1 is outside 2 .. 64");
  const TaskOptions task{.length = 64};
  CHECK(refusal([&] { check_model({.attention = "reformer"}, task); }) ==
        "--attention 'reformer' is unknown; expected dense, window, performer or linformer");
  CHECK(refusal([&] { check_model({.attention = "window", .window = 64}, task); }) ==
        "--window 64 is outside 1 .. 63 (below --length 64)");
  CHECK(refusal([&] { check_model({.attention = "linformer", .features = 65}, task); }) ==
        "--features 65 is outside 1 .. 64 for linformer (k <= --length), or 0 for its default");
  CHECK(refusal([&] { check_model({.d_model = 30, .heads = 4}, task); }) == "--heads 4 must be 1 .. 64 and divide --d-model 30");
  CHECK(refusal([&] { check_model({.attention = "performer", .features = 16}, task); }).empty());
  TrainOptions o = quick("dense", 64, 0);
  CHECK(refusal([&] { check_options(o); }) == "--steps 0 is outside 1 .. 1000000");
  CompareOptions c{.base = quick("dense", 64, 5), .lengths = {64, 64}, .steps = {5, 5}, .mechanisms = {"dense"}};
  CHECK(refusal([&] { check_compare(c); }) == "--lengths names a length twice");
  c.lengths = {64, 8};
  CHECK(refusal([&] { check_compare(c); }) == "--length 8 is outside 16 .. 4096 tokens");
  c.lengths = {64}, c.steps = {5}, c.mechanisms = {"dense", "dense"};
  CHECK(refusal([&] { check_compare(c); }) == "--mechanisms names a mechanism twice");
}

TEST_CASE("long_range dense attention learns the task at length 64 far above chance") {
  const OneThread one;
  const TrainResult r = train(quick("dense", 64, 300));
  CHECK(r.losses.size() == 300);
  CHECK(r.losses.front() > 1.8);  // about ln 8 = 2.08 at the start
  CHECK(r.final_loss < 0.2);
  CHECK(r.test_accuracy > 0.9);  // chance is 1/8
  CHECK(r.ms_per_step > 0);
  CHECK(r.train_seconds == doctest::Approx(r.ms_per_step * 300 / 1e3));
}

TEST_CASE("long_range training gives the same results in the reference mode") {
  const OneThread one;
  const TrainResult fused = train(quick("dense", 64, 200));
  TrainResult plain;
  {
    qkv::ReferenceModeGuard mode(true);
    plain = train(quick("dense", 64, 200));
  }
  // The same batches and initialization: the losses agree to float rounding at first, and the
  // rounding differences stay small over the run.
  for (size_t i = 0; i < 20; ++i) CHECK(plain.losses[i] == doctest::Approx(fused.losses[i]).epsilon(1e-4));
  CHECK(std::fabs(plain.final_loss - fused.final_loss) < 0.05);
  CHECK(std::fabs(plain.test_accuracy - fused.test_accuracy) < 0.03);
  CHECK(fused.test_accuracy > 0.5);
}

TEST_CASE("long_range trains every mechanism without error") {
  const OneThread one;
  for (const std::string& m : mechanisms()) {
    CAPTURE(m);
    TrainOptions o = quick(m, 128, 20);
    o.model.window = 8;
    o.model.features = m == "linformer" ? 32 : 0;
    const TrainResult r = train(o);
    REQUIRE(r.losses.size() == 20);
    for (const double l : r.losses) CHECK(std::isfinite(l));
    // A diverging step would leave ln 8 = 2.08, the loss of a uniform guess, far behind.
    for (const double l : r.losses) CHECK(l < 2.6);
    CHECK(r.test_accuracy >= 0);
    CHECK(r.test_accuracy <= 1);
    CHECK(r.test_loss < 2.6);
    CHECK(r.stats.mean_distance > 20);
    CHECK(r.steps_on_current_draw == -1);  // no Performer drew its features again in 20 steps
  }
}

TEST_CASE("long_range resumes a run stopped after two checkpoints to the same bytes as one never stopped") {
  const OneThread one;
  TrainOptions whole = quick("dense", 32, 20), stopped = quick("dense", 32, 20);
  whole.log_every = stopped.log_every = 5;
  train(whole);
  stopped.stop_after = 2;  // after the checkpoint of step 10
  CHECK(train(stopped).losses.size() == 10);
  TrainOptions rest = stopped;
  rest.stop_after = -1, rest.resume = true, rest.steps = 0;  // the run's own budget
  CHECK(train(rest).losses.size() == 10);
  for (const char* file : {"last.safetensors", "best.safetensors", "config.json"})
    CHECK(qkv::testing::read_file(std::filesystem::path(whole.run_dir) / file) ==
          qkv::testing::read_file(std::filesystem::path(rest.run_dir) / file));
}

TEST_CASE("long_range counts the steps Performer trained on its latest random features") {
  const OneThread one;
  TrainOptions o = quick("performer", 16, 1001);
  o.batch = 1;
  o.test_sequences = 1;
  // Drawn again in the forward of step 1000 (every 1000 training forwards): steps 1000 and 1001.
  CHECK(train(o).steps_on_current_draw == 2);
  o.steps = 999;
  CHECK(train(o).steps_on_current_draw == -1);
}

TEST_CASE("long_range compare runs every mechanism at every length and tabulates them") {
  const OneThread one;
  CompareOptions c{.base = quick("dense", 32, 3), .lengths = {32, 48}, .steps = {3, 4}, .mechanisms = {"dense", "performer"}};
  c.base.model.window = 4;
  const std::vector<CompareRow> rows = compare(c);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].mechanism == "dense");
  CHECK(rows[1].mechanism == "performer");
  CHECK(rows[2].length == 48);
  CHECK(rows[3].steps == 4);
  CHECK(rows[3].result.losses.size() == 4);
  const std::string md = compare_markdown(c, rows);
  CHECK(md.find("| mechanism | length | steps | test accuracy | train seconds | ms/step |") != std::string::npos);
  CHECK(md.find("| performer | 48 | 4 | ") != std::string::npos);
  const qkv::io::Json json = qkv::io::parse_json(qkv::io::to_json(compare_json(c, rows)));
  const auto& runs = json.find("runs")->as_array();
  REQUIRE(runs.size() == 4);
  CHECK(runs[1].find("mechanism")->as_string() == "performer");
  CHECK(runs[2].find("length")->as_int() == 48);
  CHECK(runs[3].find("test_accuracy")->as_double() == doctest::Approx(rows[3].result.test_accuracy));
}
