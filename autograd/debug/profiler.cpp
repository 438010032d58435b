#include "autograd/debug/profiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <utility>

#include "io/file.h"
#include "io/json.h"
#include "tensor/storage.h"

namespace qkv {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* pass_name(Pass p) { return p == Pass::Forward ? "forward" : "backward"; }

}  // namespace

// The recording. Only the outermost op in progress is measured; ops it calls just deepen the
// nesting. It hears every thread's ops, and keeps those of its own thread while it is the profiler
// running there.
struct Profiler::State : autograd::Observer {
  std::map<std::pair<std::string, Pass>, OpProfile> rows;
  std::set<std::string> unscoped;
  int depth = 0;
  int64_t scopes_opened = 0;
  // The outermost op in progress.
  const char* op = nullptr;
  Pass pass = Pass::Forward;
  int64_t op_start_ns = 0, op_start_allocated = 0, op_flops = 0;
  // The region.
  int64_t start_ns = 0, stop_ns = 0;
  int64_t peak_bytes = 0;  // over the region, up to the last op boundary

  bool running_here() const;
  void op_started(const char* op, Pass pass) override;
  void op_finished(const char* op, Pass pass) override;
  void op_recorded(const char* op, const Tensor&, const std::vector<Tensor>&, autograd::Node* node) override {
    if (node && depth == 0 && running_here()) unscoped.insert(op);
  }
  void flops_counted(int64_t flops) override {
    if (depth > 0 && running_here()) op_flops += flops;
  }
};

namespace {
thread_local Profiler::State* t_state = nullptr;
}

bool Profiler::State::running_here() const { return t_state == this; }

// Each op's peak is measured by restarting the global peak at the op's start and reading it at its
// end; the region's peak keeps the largest value read before each restart.
void Profiler::State::op_started(const char* name, Pass p) {
  if (!running_here()) return;
  ++scopes_opened;
  if (depth++ > 0) return;
  const MemoryStats m = memory_stats();
  peak_bytes = std::max(peak_bytes, m.peak_bytes);
  reset_peak_memory();
  op = name;
  pass = p;
  op_flops = 0;
  op_start_allocated = m.allocated_bytes;
  op_start_ns = now_ns();
}

void Profiler::State::op_finished(const char*, Pass) {
  if (!running_here() || depth == 0 || --depth > 0) return;
  const int64_t elapsed = now_ns() - op_start_ns;
  const MemoryStats m = memory_stats();
  peak_bytes = std::max(peak_bytes, m.peak_bytes);
  OpProfile& row = rows[{op, pass}];
  if (row.calls == 0) row.op = op, row.pass = pass;
  row.calls += 1;
  row.total_ns += elapsed;
  row.flops += op_flops;
  row.bytes_allocated += m.allocated_bytes - op_start_allocated;
  row.peak_bytes = std::max(row.peak_bytes, m.peak_bytes);
}

Profiler::Profiler() : state_(new State), previous_(t_state) {
  const MemoryStats m = memory_stats();
  start_bytes_ = m.live_bytes;
  state_->peak_bytes = m.live_bytes;
  reset_peak_memory();
  state_->start_ns = now_ns();
  t_state = state_;
  autograd::add_observer(state_);
}

Profiler::~Profiler() {
  stop();
  delete state_;
}

void Profiler::stop() {
  if (stopped_) return;
  stopped_ = true;
  state_->stop_ns = now_ns();
  state_->peak_bytes = std::max(state_->peak_bytes, memory_stats().peak_bytes);
  // Profilers stop in the reverse order of starting on a thread; the one taken over resumes.
  if (t_state == state_) t_state = previous_;
  autograd::remove_observer(state_);
}

std::vector<OpProfile> Profiler::ops() const {
  std::vector<OpProfile> out;
  for (const auto& [key, row] : state_->rows) out.push_back(row);
  std::stable_sort(out.begin(), out.end(),
                   [](const OpProfile& a, const OpProfile& b) { return a.total_ns > b.total_ns; });
  return out;
}

double Profiler::wall_ms() const {
  return static_cast<double>((stopped_ ? state_->stop_ns : now_ns()) - state_->start_ns) * 1e-6;
}

double Profiler::ops_ms() const {
  int64_t ns = 0;
  for (const auto& [key, row] : state_->rows) ns += row.total_ns;
  return static_cast<double>(ns) * 1e-6;
}

int64_t Profiler::peak_bytes() const {
  return stopped_ ? state_->peak_bytes : std::max(state_->peak_bytes, memory_stats().peak_bytes);
}

int64_t Profiler::scopes_opened() const { return state_->scopes_opened; }

const std::set<std::string>& Profiler::unscoped_ops() const { return state_->unscoped; }

std::string Profiler::report() const {
  const std::vector<OpProfile> rows = ops();
  const double ops_total = ops_ms();
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-34s %-8s %7s %10s %10s %6s %9s %8s %10s %9s\n", "op", "pass", "calls",
                "total ms", "mean us", "%ops", "GFLOP", "GFLOP/s", "alloc MB", "peak MB");
  out += line;
  for (const OpProfile& r : rows) {
    const std::string flops = r.flops ? std::to_string(r.flops * 1e-9).substr(0, 7) : "-";
    char rate[32] = "-";
    if (r.flops) std::snprintf(rate, sizeof rate, "%.1f", r.gflops_per_s());
    std::snprintf(line, sizeof line, "%-34s %-8s %7lld %10.3f %10.1f %5.1f%% %9s %8s %10.2f %9.2f\n",
                  r.op.c_str(), pass_name(r.pass), static_cast<long long>(r.calls), r.total_ms(), r.mean_us(),
                  ops_total > 0 ? 100.0 * r.total_ms() / ops_total : 0.0, flops.c_str(), rate,
                  static_cast<double>(r.bytes_allocated) / 1e6, static_cast<double>(r.peak_bytes) / 1e6);
    out += line;
  }
  std::snprintf(line, sizeof line,
                "ops took %.3f ms of %.3f ms (%.0f%%; the rest ran outside ops). Live tensor memory: "
                "%.2f MB at the start, %.2f MB at the peak\n",
                ops_total, wall_ms(), wall_ms() > 0 ? 100.0 * ops_total / wall_ms() : 0.0,
                static_cast<double>(start_bytes_) / 1e6, static_cast<double>(peak_bytes()) / 1e6);
  out += line;
  return out;
}

std::string Profiler::csv() const {
  std::ostringstream out;
  out << "op,pass,calls,total_ms,mean_us,flops,gflop_per_s,bytes_allocated,peak_bytes\n";
  for (const OpProfile& r : ops())
    out << r.op << ',' << pass_name(r.pass) << ',' << r.calls << ',' << r.total_ms() << ',' << r.mean_us()
        << ',' << r.flops << ',' << r.gflops_per_s() << ',' << r.bytes_allocated << ',' << r.peak_bytes
        << '\n';
  return out.str();
}

std::string Profiler::json() const {
  io::Json::Array rows;
  for (const OpProfile& r : ops())
    rows.push_back(io::Json::Object{{"op", r.op},
                                    {"pass", pass_name(r.pass)},
                                    {"calls", r.calls},
                                    {"total_ns", r.total_ns},
                                    {"flops", r.flops},
                                    {"bytes_allocated", r.bytes_allocated},
                                    {"peak_bytes", r.peak_bytes}});
  const io::Json profile = io::Json::Object{{"wall_ms", wall_ms()},
                                            {"ops_ms", ops_ms()},
                                            {"start_bytes", start_bytes_},
                                            {"peak_bytes", peak_bytes()},
                                            {"ops", std::move(rows)}};
  return io::to_json(profile) + "\n";
}

void Profiler::write_csv(const std::string& path) const {
  io::write_text_file(path, csv(), "Profiler::write_csv");
}
void Profiler::write_json(const std::string& path) const {
  io::write_text_file(path, json(), "Profiler::write_json");
}

}  // namespace qkv
