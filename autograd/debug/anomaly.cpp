#include "autograd/debug/anomaly.h"

#include <cxxabi.h>
#include <execinfo.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <unordered_set>

#include "autograd/observer.h"

namespace qkv {
namespace {

std::mutex g_handler_mutex;
WarningHandler g_handler = [](const std::string& message) { std::cerr << message << std::endl; };

void warn(const std::string& message) {
  WarningHandler handler;
  {
    std::lock_guard<std::mutex> lock(g_handler_mutex);
    handler = g_handler;
  }
  if (handler) handler(message);
}

}  // namespace

WarningHandler set_anomaly_warning_handler(WarningHandler handler) {
  std::lock_guard<std::mutex> lock(g_handler_mutex);
  std::swap(g_handler, handler);
  return handler;
}

namespace autograd::anomaly {
namespace {

struct NonFinite {
  bool nan = false, inf = false;
};

NonFinite scan(const Tensor& t) {
  NonFinite r;
  if (!t.defined()) return r;
  for (float v : t.to_vector()) {
    r.nan |= std::isnan(v);
    r.inf |= std::isinf(v);
  }
  return r;
}

// What `out` holds that `in` did not: "NaN", "Inf", or "" for nothing new. An Inf is new only
// when the input was all finite (Inf - Inf is a NaN, but an Inf in, Inf out is not news).
std::string produced(const NonFinite& in, const NonFinite& out) {
  if (out.nan && !in.nan) return "NaN";
  if (out.inf && !in.nan && !in.inf) return "Inf";
  return "";
}

std::string shapes_of(const std::vector<Shape>& shapes) {
  std::string s;
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shape_str(shapes[i]);
  return s.empty() ? "none" : s;
}

constexpr int kMaxFrames = 48;

std::vector<void*> capture_stack() {
  std::vector<void*> frames(kMaxFrames);
  frames.resize(static_cast<size_t>(::backtrace(frames.data(), kMaxFrames)));
  return frames;
}

// "binary(_ZN3qkv6Tensor3logEv+0x1c) [0x...]" → "qkv::Tensor::log() const"; addresses stay as they
// are when the symbol is unknown.
std::string describe_frame(const char* symbol) {
  std::string s = symbol;
  const size_t open = s.find('('), plus = s.find('+', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || plus == std::string::npos || plus == open + 1) return s;
  const std::string mangled = s.substr(open + 1, plus - open - 1);
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  return name;
}

// The stack below the library's own recording machinery, innermost call first, up to main. When
// some frames have names (the program exports its symbols), the nameless ones (functions private
// to a file) are left out; otherwise every frame is shown as an address for addr2line.
std::string format_stack(const std::vector<void*>& frames) {
  if (frames.empty()) return "  (not captured: the op was recorded with anomaly mode off)\n";
  char** symbols = ::backtrace_symbols(frames.data(), static_cast<int>(frames.size()));
  if (!symbols) return "  (the stack could not be symbolized)\n";
  std::vector<std::string> names;
  bool any_named = false;
  for (size_t i = 0; i < frames.size(); ++i) {
    names.push_back(describe_frame(symbols[i]));
    any_named |= names.back() != symbols[i];
  }
  std::free(symbols);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& frame = names[i];
    if (frame.rfind("qkv::autograd::", 0) == 0) continue;  // record(), the checks themselves
    if (any_named && frame.find("(+0x") != std::string::npos) continue;
    out += "  " + frame + "\n";
    if (frame == "main") break;
  }
  return out;
}

// What anomaly mode keeps about a node recorded while it was on: where and in which step. The
// notes alive are the tracked nodes alive; a note leaves the set when its node dies.
struct Tracked : NodeNote {
  Tracked(const Node& node, uint64_t step, std::vector<void*> creation_trace);
  ~Tracked() override;
  const Node& node;
  std::vector<void*> creation_trace;
  uint64_t step;
};

std::mutex g_tracked_mutex;
std::unordered_set<const Tracked*> g_tracked;
std::atomic<uint64_t> g_step{1};  // backward passes started under anomaly mode, plus one

Tracked::Tracked(const Node& n, uint64_t s, std::vector<void*> trace)
    : node(n), creation_trace(std::move(trace)), step(s) {
  std::lock_guard<std::mutex> lock(g_tracked_mutex);
  g_tracked.insert(this);
}

Tracked::~Tracked() {
  std::lock_guard<std::mutex> lock(g_tracked_mutex);
  g_tracked.erase(this);
}

// Throws AnomalyError if `out` holds a NaN (an Inf) that none of the inputs held.
void check_forward(const char* op, const Tensor& out, const std::vector<Tensor>& inputs) {
  NonFinite in;
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) {
    if (!t.defined()) continue;
    const NonFinite s = scan(t);
    in.nan |= s.nan;
    in.inf |= s.inf;
    shapes.push_back(t.shape());
  }
  const std::string what = produced(in, scan(out));
  if (what.empty()) return;
  throw AnomalyError("anomaly mode: '" + std::string(op) + "' produced " + what +
                     " in its forward result (shape " + shape_str(out.shape()) + ") from inputs of shapes " +
                     shapes_of(shapes) + " that held none. Created at:\n" + format_stack(capture_stack()));
}

// Throws AnomalyError if a gradient the node's backward returned holds a NaN (an Inf) that the
// incoming gradient did not.
void check_backward(const Node& node, const Tensor& grad, const std::vector<Tensor>& grads) {
  const NonFinite in = scan(grad);
  for (size_t i = 0; i < grads.size(); ++i) {
    const std::string what = produced(in, scan(grads[i]));
    if (what.empty()) continue;
    std::vector<Shape> shapes;
    for (const Edge& e : node.inputs) shapes.push_back(e.shape);
    const Tracked* tracked = node.note<Tracked>();
    throw AnomalyError("anomaly mode: the backward of '" + node.op + "' produced " + what +
                       " in the gradient of its input " + std::to_string(i) + " (shape " +
                       shape_str(grads[i].shape()) + ") from an incoming gradient (shape " +
                       shape_str(grad.shape()) + ") that held none. Its inputs had shapes " +
                       shapes_of(shapes) + ". '" + node.op + "' was created at:\n" +
                       format_stack(tracked ? tracked->creation_trace : std::vector<void*>{}));
  }
}

// At the start of a backward over `order`: warns about tracked nodes of earlier steps that are
// still alive outside this graph, then starts a new step.
void check_stale_graphs(const std::vector<std::shared_ptr<Node>>& order) {
  const uint64_t step = g_step.fetch_add(1);
  std::unordered_set<const Node*> current;
  for (const auto& n : order) current.insert(n.get());
  std::map<std::string, int64_t> ops;
  int64_t count = 0, bytes = 0;
  {
    std::lock_guard<std::mutex> lock(g_tracked_mutex);
    for (const Tracked* t : g_tracked) {
      const Node& n = t->node;
      // A released node has run its backward and holds nothing: it is the graph's live ones that leak.
      if (n.released || t->step >= step || current.count(&n)) continue;
      ++count;
      bytes += n.saved_bytes();
      ++ops[n.op];
    }
  }
  if (count == 0) return;
  std::string list;
  for (const auto& [op, k] : ops) list += (list.empty() ? "" : ", ") + op + " x" + std::to_string(k);
  warn("qkv anomaly mode: " + std::to_string(count) +
       " graph node(s) recorded before the previous "
       "backward are still alive and are not part of this backward (" +
       list + "; " + std::to_string(bytes) +
       " bytes saved for backward). A tensor of an earlier step still holds "
       "its graph: was a loss accumulated for logging (total = total + loss)? Accumulate "
       "loss.item() or loss.detach() instead.");
}

// The checks, told by the engine and record() what happens. Ops run by a node's backward are
// checked as part of that backward, not each on its own.
class AnomalyObserver : public Observer {
 public:
  void op_started(const char*, Pass pass) override {
    if (pass == Pass::Backward) ++t_backward_depth;
  }
  void op_finished(const char*, Pass pass) override {
    if (pass == Pass::Backward && t_backward_depth > 0) --t_backward_depth;
  }
  void op_recorded(const char* op, const Tensor& out, const std::vector<Tensor>& inputs,
                   Node* node) override {
    if (t_backward_depth > 0) return;
    check_forward(op, out, inputs);
    if (node) node->notes.push_back(std::make_unique<Tracked>(*node, g_step.load(), capture_stack()));
  }
  void backward_started(const std::vector<std::shared_ptr<Node>>& order) override {
    check_stale_graphs(order);
  }
  void node_finished(Node& node, const Tensor& grad, const std::vector<Tensor>& grads) override {
    check_backward(node, grad, grads);
  }
  bool reads_node_gradient() const override { return true; }

 private:
  static thread_local int t_backward_depth;
};

thread_local int AnomalyObserver::t_backward_depth = 0;

std::mutex g_enabled_mutex;
AnomalyObserver g_observer;
bool g_enabled = false;

}  // namespace
}  // namespace autograd::anomaly

bool is_anomaly_enabled() {
  std::lock_guard<std::mutex> lock(autograd::anomaly::g_enabled_mutex);
  return autograd::anomaly::g_enabled;
}

void set_anomaly_enabled(bool enabled) {
  using namespace autograd::anomaly;
  std::lock_guard<std::mutex> lock(g_enabled_mutex);
  if (enabled == g_enabled) return;
  g_enabled = enabled;
  if (enabled)
    autograd::add_observer(&g_observer);
  else
    autograd::remove_observer(&g_observer);
}

DetectAnomaly::DetectAnomaly() : previous_(is_anomaly_enabled()) { set_anomaly_enabled(true); }
DetectAnomaly::~DetectAnomaly() { set_anomaly_enabled(previous_); }

}  // namespace qkv
