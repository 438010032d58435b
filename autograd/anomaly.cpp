#include "autograd/anomaly.h"

#include <cxxabi.h>
#include <execinfo.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <unordered_set>

#include "autograd/anomaly_checks.h"

namespace qkv {
namespace {

std::atomic<bool> g_anomaly{false};

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

bool is_anomaly_enabled() { return g_anomaly.load(std::memory_order_relaxed); }
void set_anomaly_enabled(bool enabled) { g_anomaly.store(enabled); }

DetectAnomaly::DetectAnomaly() : previous_(is_anomaly_enabled()) { set_anomaly_enabled(true); }
DetectAnomaly::~DetectAnomaly() { set_anomaly_enabled(previous_); }

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

// The stack below the library's own recording machinery, innermost call first, up to main.
std::string format_stack(const std::vector<void*>& frames) {
  if (frames.empty()) return "  (not captured: the op was recorded with anomaly mode off)\n";
  char** symbols = ::backtrace_symbols(frames.data(), static_cast<int>(frames.size()));
  if (!symbols) return "  (the stack could not be symbolized)\n";
  std::string out;
  for (size_t i = 0; i < frames.size(); ++i) {
    const std::string frame = describe_frame(symbols[i]);
    if (frame.rfind("qkv::autograd::", 0) == 0) continue;  // record(), the checks themselves
    out += "  " + frame + "\n";
    if (frame == "main") break;
  }
  std::free(symbols);
  return out;
}

std::mutex g_nodes_mutex;
std::unordered_set<const Node*> g_nodes;  // tracked nodes alive
std::atomic<uint64_t> g_step{1};         // backward passes started under anomaly mode, plus one
thread_local bool t_in_backward = false;

}  // namespace

InBackward::InBackward() : previous_(t_in_backward) { t_in_backward = true; }
InBackward::~InBackward() { t_in_backward = previous_; }

void check_forward(const char* op, const Tensor& out, const std::vector<Tensor>& inputs) {
  if (t_in_backward) return;
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
                     " in its forward result (shape " + shape_str(out.shape()) +
                     ") from inputs of shapes " + shapes_of(shapes) + " that held none. Created at:\n" +
                     format_stack(capture_stack()));
}

void track(Node& node) {
  node.creation_trace = capture_stack();
  node.anomaly_step = g_step.load();
  std::lock_guard<std::mutex> lock(g_nodes_mutex);
  g_nodes.insert(&node);
}

void forget(const Node& node) {
  std::lock_guard<std::mutex> lock(g_nodes_mutex);
  g_nodes.erase(&node);
}

void check_backward(const Node& node, const Tensor& grad, const std::vector<Tensor>& grads) {
  const NonFinite in = scan(grad);
  for (size_t i = 0; i < grads.size(); ++i) {
    const std::string what = produced(in, scan(grads[i]));
    if (what.empty()) continue;
    std::vector<Shape> shapes;
    for (const Edge& e : node.inputs) shapes.push_back(e.shape);
    throw AnomalyError("anomaly mode: the backward of '" + node.op + "' produced " + what +
                       " in the gradient of its input " + std::to_string(i) + " (shape " +
                       shape_str(grads[i].shape()) + ") from an incoming gradient (shape " +
                       shape_str(grad.shape()) + ") that held none. Its inputs had shapes " +
                       shapes_of(shapes) + ". '" + node.op + "' was created at:\n" +
                       format_stack(node.creation_trace));
  }
}

void check_stale_graphs(const std::vector<std::shared_ptr<Node>>& order) {
  const uint64_t step = g_step.fetch_add(1);
  std::unordered_set<const Node*> current;
  for (const auto& n : order) current.insert(n.get());
  std::map<std::string, int64_t> ops;
  int64_t count = 0, bytes = 0;
  {
    std::lock_guard<std::mutex> lock(g_nodes_mutex);
    for (const Node* n : g_nodes) {
      // A released node has run its backward and holds nothing: it is the graph's live ones that leak.
      if (n->released || n->anomaly_step >= step || current.count(n)) continue;
      ++count;
      bytes += n->saved_bytes();
      ++ops[n->op];
    }
  }
  if (count == 0) return;
  std::string list;
  for (const auto& [op, k] : ops) list += (list.empty() ? "" : ", ") + op + " x" + std::to_string(k);
  warn("qkv anomaly mode: " + std::to_string(count) + " graph node(s) recorded before the previous "
       "backward are still alive and are not part of this backward (" + list + "; " +
       std::to_string(bytes) + " bytes saved for backward). A tensor of an earlier step still holds "
       "its graph: was a loss accumulated for logging (total = total + loss)? Accumulate "
       "loss.item() or loss.detach() instead.");
}

}  // namespace autograd::anomaly
}  // namespace qkv
