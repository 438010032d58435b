#include "autograd/profiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "tensor/error.h"
#include "tensor/storage.h"

namespace qkv {

namespace autograd::detail {
std::atomic<int> profilers_running{0};
}

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* pass_name(Pass p) { return p == Pass::Forward ? "forward" : "backward"; }

}  // namespace

// Only the outermost op in progress is measured; ops it calls just deepen the nesting.
struct Profiler::State {
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
};

namespace {
thread_local Profiler::State* t_state = nullptr;
}

Profiler::Profiler() : state_(new State), previous_(t_state) {
  const MemoryStats m = memory_stats();
  start_bytes_ = m.live_bytes;
  state_->peak_bytes = m.live_bytes;
  reset_peak_memory();
  state_->start_ns = now_ns();
  t_state = state_;
  autograd::detail::profilers_running.fetch_add(1);
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
  autograd::detail::profilers_running.fetch_sub(1);
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
  std::snprintf(line, sizeof line, "%-34s %-8s %7s %10s %10s %6s %9s %8s %10s %9s\n", "op", "pass",
                "calls", "total ms", "mean us", "%ops", "GFLOP", "GFLOP/s", "alloc MB", "peak MB");
  out += line;
  for (const OpProfile& r : rows) {
    const std::string flops = r.flops ? std::to_string(r.flops * 1e-9).substr(0, 7) : "-";
    char rate[32] = "-";
    if (r.flops) std::snprintf(rate, sizeof rate, "%.1f", r.gflops_per_s());
    std::snprintf(line, sizeof line, "%-34s %-8s %7lld %10.3f %10.1f %5.1f%% %9s %8s %10.2f %9.2f\n",
                  r.op.c_str(), pass_name(r.pass), static_cast<long long>(r.calls), r.total_ms(),
                  r.mean_us(), ops_total > 0 ? 100.0 * r.total_ms() / ops_total : 0.0, flops.c_str(),
                  rate, static_cast<double>(r.bytes_allocated) / 1e6,
                  static_cast<double>(r.peak_bytes) / 1e6);
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
    out << r.op << ',' << pass_name(r.pass) << ',' << r.calls << ',' << r.total_ms() << ','
        << r.mean_us() << ',' << r.flops << ',' << r.gflops_per_s() << ',' << r.bytes_allocated
        << ',' << r.peak_bytes << '\n';
  return out.str();
}

std::string Profiler::json() const {
  std::ostringstream out;
  out << "{\"wall_ms\": " << wall_ms() << ", \"ops_ms\": " << ops_ms()
      << ", \"start_bytes\": " << start_bytes_ << ", \"peak_bytes\": " << peak_bytes()
      << ", \"ops\": [";
  const std::vector<OpProfile> rows = ops();
  for (size_t i = 0; i < rows.size(); ++i) {
    const OpProfile& r = rows[i];
    // Op names are identifiers (letters, digits, '_'): nothing to escape.
    out << (i ? ", " : "") << "{\"op\": \"" << r.op << "\", \"pass\": \"" << pass_name(r.pass)
        << "\", \"calls\": " << r.calls << ", \"total_ns\": " << r.total_ns
        << ", \"flops\": " << r.flops << ", \"bytes_allocated\": " << r.bytes_allocated
        << ", \"peak_bytes\": " << r.peak_bytes << "}";
  }
  out << "]}\n";
  return out.str();
}

namespace {
void write_text(const std::string& path, const std::string& text, const char* what) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw Error(std::string(what) + ": cannot write '" + path + "'");
}
}  // namespace

void Profiler::write_csv(const std::string& path) const { write_text(path, csv(), "Profiler::write_csv"); }
void Profiler::write_json(const std::string& path) const { write_text(path, json(), "Profiler::write_json"); }

namespace autograd {

// Each op's peak is measured by restarting the global peak at the op's start and reading it at its
// end; the region's peak keeps the largest value read before each restart.
void OpScope::open(const char* op, Pass pass) {
  Profiler::State* s = t_state;
  if (!s) return;  // a profiler runs on another thread, not this one
  state_ = s;
  ++s->scopes_opened;
  if (s->depth++ > 0) return;
  const MemoryStats m = memory_stats();
  s->peak_bytes = std::max(s->peak_bytes, m.peak_bytes);
  reset_peak_memory();
  s->op = op;
  s->pass = pass;
  s->op_flops = 0;
  s->op_start_allocated = m.allocated_bytes;
  s->op_start_ns = now_ns();
}

void OpScope::close() {
  Profiler::State* s = state_;
  if (--s->depth > 0) return;
  const int64_t elapsed = now_ns() - s->op_start_ns;
  const MemoryStats m = memory_stats();
  s->peak_bytes = std::max(s->peak_bytes, m.peak_bytes);
  OpProfile& row = s->rows[{s->op, s->pass}];
  if (row.calls == 0) row.op = s->op, row.pass = s->pass;
  row.calls += 1;
  row.total_ns += elapsed;
  row.flops += s->op_flops;
  row.bytes_allocated += m.allocated_bytes - s->op_start_allocated;
  row.peak_bytes = std::max(row.peak_bytes, m.peak_bytes);
}

namespace detail {

void add_flops(int64_t flops) {
  if (Profiler::State* s = t_state; s && s->depth > 0) s->op_flops += flops;
}

void note_recorded(const char* op) {
  if (Profiler::State* s = t_state; s && s->depth == 0) s->unscoped.insert(op);
}

}  // namespace detail
}  // namespace autograd
}  // namespace qkv
