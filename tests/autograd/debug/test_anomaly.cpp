// Anomaly mode: the op that first made a NaN or an Inf is named, forward or backward, with its
// input shapes and the stack that created it; graphs left alive from an earlier step are reported.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/debug/anomaly.h"
#include "qkv.h"

using namespace qkv;

// Named functions with external linkage, so that the creation stack in the report can name them
// (qkv_tests is linked with ENABLE_EXPORTS).
[[gnu::noinline]] Tensor anomaly_test_log_of_negative(const Tensor& x) { return (x * 2.0f).log(); }
[[gnu::noinline]] Tensor anomaly_test_sqrt_at_zero(const Tensor& x) { return x.sqrt() * 0.0f; }

namespace {

std::string anomaly_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const AnomalyError& e) {
    return e.what();
  }
  return "";
}

// Collects the warnings of anomaly mode while alive.
struct CapturedWarnings {
  std::vector<std::string> messages;
  WarningHandler previous;
  CapturedWarnings() {
    previous = set_anomaly_warning_handler([this](const std::string& m) { messages.push_back(m); });
  }
  ~CapturedWarnings() { set_anomaly_warning_handler(previous); }
};

}  // namespace

TEST_CASE("anomaly mode names the forward op that made a NaN: log of a negative number") {
  const Tensor x = tensor({1.0f, -2.0f, 3.0f}, true);
  CHECK_NOTHROW(anomaly_test_log_of_negative(x));  // off by default: NaN flows on silently
  CHECK_FALSE(is_anomaly_enabled());

  DetectAnomaly anomaly;
  const std::string report = anomaly_message([&] { anomaly_test_log_of_negative(x); });
  REQUIRE(!report.empty());
  CAPTURE(report);
  CHECK(report.find("'log' produced NaN in its forward result (shape (3)) from inputs of shapes (3)") !=
        std::string::npos);
  // Where it was created: the op's method, then the function that called it.
  const size_t log_at = report.find("qkv::Tensor::log() const");
  const size_t caller_at = report.find("anomaly_test_log_of_negative");
  CHECK(log_at != std::string::npos);
  CHECK(caller_at != std::string::npos);
  CHECK(log_at < caller_at);
  // Frames without a name (functions private to a file) are left out when others have names.
  CHECK(report.find("(+0x") == std::string::npos);
  // mul by 2 ran first and produced nothing new: it is not blamed.
  CHECK(report.find("'mul") == std::string::npos);
}

TEST_CASE("anomaly mode names the op whose backward made a NaN and where that op was created") {
  // y = sqrt(x)·0 at x = 0: the forward is finite (0), but sqrt's backward computes 0·(1/(2·0)) =
  // 0·inf = NaN from the finite gradient 0 that mul sends it.
  const Tensor x = tensor({0.0f, 1.0f}, true);
  DetectAnomaly anomaly;
  const Tensor y = anomaly_test_sqrt_at_zero(x).sum();
  const std::string report = anomaly_message([&] { y.backward(); });
  REQUIRE(!report.empty());
  CAPTURE(report);
  CHECK(report.find("the backward of 'sqrt' produced NaN in the gradient of its input 0 (shape (2))") !=
        std::string::npos);
  CHECK(report.find("Its inputs had shapes (2)") != std::string::npos);
  CHECK(report.find("anomaly_test_sqrt_at_zero") != std::string::npos);
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("anomaly mode reports an Inf made from finite inputs but not one passed through") {
  DetectAnomaly anomaly;
  const Tensor big = tensor({1e30f, 1.0f});
  const std::string report = anomaly_message([&] { big * big; });
  CHECK(report.find("'mul' produced Inf in its forward result (shape (2))") != std::string::npos);
  // An attention-style mask: the -inf comes in as an input of where, which creates nothing.
  const Tensor scores = tensor({0.5f, 1.5f});
  const Tensor masked = where(tensor({1.0f, 0.0f}), scores, scalar_tensor(-INFINITY));
  CHECK(std::isinf(masked.to_vector()[1]));
  CHECK_NOTHROW(masked.softmax(0));
}

TEST_CASE("anomaly mode off changes nothing: NaN flows through forward and backward") {
  const Tensor x = tensor({0.0f}, true);
  anomaly_test_sqrt_at_zero(x).sum().backward();
  CHECK(std::isnan(x.grad().item()));
}

TEST_CASE("anomaly mode warns when the graph of a previous step is still alive") {
  CapturedWarnings warnings;
  DetectAnomaly anomaly;
  const Tensor w = tensor({1.0f, 2.0f}, true);
  // The classic leak: the running total holds every step's loss and its graph.
  Tensor total = scalar_tensor(0.0f);
  for (int step = 0; step < 3; ++step) {
    const Tensor loss = (w * w).sum();
    total = total + loss;
    loss.backward();
  }
  REQUIRE(warnings.messages.size() == 2);  // steps 2 and 3 see the graph of the steps before
  CHECK(warnings.messages[0].find("1 graph node(s)") != std::string::npos);
  CHECK(warnings.messages[0].find("add x1") != std::string::npos);
  CHECK(warnings.messages[1].find("2 graph node(s)") != std::string::npos);

  // Accumulating the value instead keeps no graph: no warning (once the leaking total is gone).
  total = Tensor();
  warnings.messages.clear();
  float value = 0.0f;
  for (int step = 0; step < 3; ++step) {
    const Tensor loss = (w * w).sum();
    value += loss.item();
    loss.backward();
  }
  CHECK(value > 0.0f);
  CHECK(warnings.messages.empty());
}
