// The observer interface: what the engine and record() announce, and that nothing is announced to
// an observer once it is removed.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "autograd/observer.h"
#include "qkv.h"

using namespace qkv;

namespace {

// The announcements, leaving out those of the ops a backward function runs.
struct Log : autograd::Observer {
  std::vector<std::string> events;
  int backward_depth = 0;
  void op_started(const char* op, Pass pass) override {
    if (pass == Pass::Backward) {
      events.push_back(std::string("start backward ") + op);
      ++backward_depth;
    } else if (backward_depth == 0) {
      events.push_back(std::string("start ") + op);
    }
  }
  void op_finished(const char*, Pass pass) override {
    if (pass == Pass::Backward) --backward_depth;
  }
  void op_recorded(const char* op, const Tensor&, const std::vector<Tensor>&, autograd::Node* node) override {
    if (backward_depth == 0) events.push_back(std::string(node ? "recorded " : "computed ") + op);
  }
  void backward_started(const std::vector<std::shared_ptr<autograd::Node>>& order) override {
    events.push_back("backward over " + std::to_string(order.size()) + " nodes");
  }
  void node_finished(autograd::Node& node, const Tensor&, const std::vector<Tensor>& grads) override {
    events.push_back("finished " + node.op + " with " + std::to_string(grads.size()) + " gradients");
  }
};

}  // namespace

TEST_CASE("observers hear each op and each node of backward in order and nothing once removed") {
  Tensor w = tensor({1.0f, 2.0f}, true);
  const Tensor x = tensor({3.0f, 4.0f});
  Log log;
  autograd::add_observer(&log);
  const Tensor y = (w * x).sum();
  const Tensor unrecorded = x.exp();  // no input requires grad: computed, not recorded
  y.backward();
  autograd::remove_observer(&log);
  CHECK(log.events == std::vector<std::string>{"start mul", "recorded mul", "start sum", "recorded sum",
                                               "start exp", "computed exp", "backward over 2 nodes",
                                               "start backward sum", "finished sum with 1 gradients",
                                               "start backward mul", "finished mul with 2 gradients"});
  log.events.clear();
  (w * x).sum().backward();
  CHECK(log.events.empty());
  CHECK_FALSE(autograd::observed());
}
