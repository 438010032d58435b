#include "nn/decoding.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "tensor/error.h"

namespace qkv::nn {
namespace {

void check_options(const SearchOptions& o, int64_t sources, const char* op) {
  const auto refuse = [&](const std::string& what) { throw ValueError(std::string(op) + ": " + what); };
  if (sources < 1) refuse("expected at least one source, got " + std::to_string(sources));
  if (o.max_len < 1) refuse("max_len must be >= 1, got " + std::to_string(o.max_len));
  if (o.beam_size < 1) refuse("beam_size must be >= 1, got " + std::to_string(o.beam_size));
  if (o.n_best < 1 || o.n_best > o.beam_size)
    refuse("n_best must be in 1 .. beam_size (" + std::to_string(o.beam_size) + "), got " + std::to_string(o.n_best));
  if (!std::isfinite(o.length_penalty) || o.length_penalty < 0)
    refuse("length_penalty must be finite and >= 0, got " + std::to_string(o.length_penalty));
  if (o.bos < 0 || o.eos < 0) refuse("bos and eos must be ids >= 0, got " + std::to_string(o.bos) + " and " +
                                  std::to_string(o.eos));
}

// log_softmax of each row of logits (N, V), in double: rows × V values. A row with a NaN or no
// finite logit has no distribution to search.
std::vector<double> log_probs(const Tensor& logits, int64_t N, int64_t eos, int64_t& V, const char* op) {
  if (logits.dim() != 2 || logits.size(0) != N || logits.size(1) <= eos)
    throw ShapeError(std::string(op) + ": the model's step gave logits of shape " + shape_str(logits.shape()) +
                     " for " + std::to_string(N) + " sequences; expected (" + std::to_string(N) +
                     ", V) with V > eos (" + std::to_string(eos) + ")");
  V = logits.size(1);
  const Tensor x = logits.contiguous();
  std::vector<double> out(static_cast<size_t>(N * V));
  for (int64_t r = 0; r < N; ++r) {
    const float* row = x.data() + r * V;
    double max = -INFINITY;
    for (int64_t v = 0; v < V; ++v) {
      if (std::isnan(row[v])) throw ValueError(std::string(op) + ": the model's logits hold a NaN");
      max = std::max(max, static_cast<double>(row[v]));
    }
    if (!std::isfinite(max))
      throw ValueError(std::string(op) + ": a row of the model's logits has no finite value (max " +
                       std::to_string(max) + ")");
    double sum = 0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(row[v] - max);
    const double lse = max + std::log(sum);
    for (int64_t v = 0; v < V; ++v) out[r * V + v] = row[v] - lse;
  }
  return out;
}

// An open prefix: its source, its tokens so far and their log-probability.
struct Prefix {
  int64_t source;
  std::vector<int64_t> ids;
  double log_prob;
};

Hypothesis finish(std::vector<int64_t> ids, double log_prob, double alpha) {
  const double score = log_prob / length_penalty(static_cast<int64_t>(ids.size()), alpha);
  return {std::move(ids), log_prob, score};
}

}  // namespace

double length_penalty(int64_t length, double alpha) {
  return alpha == 0 ? 1.0 : std::pow((5.0 + static_cast<double>(length)) / 6.0, alpha);
}

std::vector<Hypothesis> greedy_search(const StepModel& model, int64_t sources, const SearchOptions& o) {
  check_options(o, sources, "greedy_search");
  std::vector<Hypothesis> out(static_cast<size_t>(sources));
  std::vector<int64_t> open(static_cast<size_t>(sources));  // the source of each row still decoding
  std::iota(open.begin(), open.end(), 0);
  std::vector<int64_t> last(open.size(), o.bos);
  for (int64_t t = 0; t < o.max_len && !open.empty(); ++t) {
    int64_t V = 0;
    const std::vector<double> lp = log_probs(model.step(last), static_cast<int64_t>(open.size()), o.eos, V,
                                             "greedy_search");
    std::vector<int64_t> rows, still;
    last.clear();
    for (size_t r = 0; r < open.size(); ++r) {
      const double* p = lp.data() + r * V;
      const int64_t token = std::max_element(p, p + V) - p;  // the first of equal maxima
      Hypothesis& h = out[static_cast<size_t>(open[r])];
      h.ids.push_back(token);
      h.log_prob += p[token];
      if (token == o.eos) continue;
      rows.push_back(static_cast<int64_t>(r));
      still.push_back(open[r]);
      last.push_back(token);
    }
    // The rows that ended are dropped from the model's state; none left, nothing more to run.
    if (!rows.empty() && rows.size() != open.size() && t + 1 < o.max_len) model.select_rows(rows);
    open = std::move(still);
  }
  for (Hypothesis& h : out) h = finish(std::move(h.ids), h.log_prob, o.length_penalty);
  return out;
}

std::vector<std::vector<Hypothesis>> beam_search(const StepModel& model, int64_t sources, const SearchOptions& o) {
  check_options(o, sources, "beam_search");
  const auto W = static_cast<size_t>(o.beam_size);
  std::vector<std::vector<Hypothesis>> finished(static_cast<size_t>(sources));
  std::vector<Prefix> open;  // one row of the model's state each, grouped by source
  for (int64_t s = 0; s < sources; ++s) open.push_back({s, {}, 0.0});
  for (int64_t t = 0; !open.empty(); ++t) {
    const bool last_step = t + 1 == o.max_len;
    std::vector<int64_t> last;
    for (const Prefix& p : open) last.push_back(p.ids.empty() ? o.bos : p.ids.back());
    int64_t V = 0;
    const std::vector<double> lp = log_probs(model.step(last), static_cast<int64_t>(open.size()), o.eos, V,
                                             "beam_search");
    std::vector<Prefix> next;
    std::vector<int64_t> rows;  // the state row each prefix of `next` extends
    for (size_t first = 0, end = 0; first < open.size(); first = end) {
      const int64_t s = open[first].source;
      while (end < open.size() && open[end].source == s) ++end;
      // Every extension of this source's prefixes, the best 2·W first (W of them may end in <eos>):
      // by score, then by the step's own log-probability (so that one prefix's extensions rank as
      // greedy search ranks them, even where adding its log-probability rounds two to one sum),
      // then by row and token, so that equal scores are taken in a fixed order.
      const auto step_lp = [&](size_t c) { return lp[first * V + c]; };
      const auto score = [&](size_t c) { return open[first + c / V].log_prob + step_lp(c); };
      std::vector<size_t> order((end - first) * static_cast<size_t>(V));
      std::iota(order.begin(), order.end(), 0);
      const size_t keep = std::min(order.size(), 2 * W);
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                        [&](size_t a, size_t b) {
                          if (score(a) != score(b)) return score(a) > score(b);
                          return step_lp(a) != step_lp(b) ? step_lp(a) > step_lp(b) : a < b;
                        });
      std::vector<Prefix> going;
      for (size_t k = 0; k < keep && going.size() < W; ++k) {
        const Prefix& parent = open[first + order[k] / V];
        const int64_t token = static_cast<int64_t>(order[k] % V);
        std::vector<int64_t> ids = parent.ids;
        ids.push_back(token);
        if (token == o.eos || last_step) {
          if (k < W) finished[s].push_back(finish(std::move(ids), score(order[k]), o.length_penalty));
          continue;
        }
        going.push_back({s, std::move(ids), score(order[k])});
        rows.push_back(static_cast<int64_t>(first + order[k] / V));
      }
      // Done: beam_size finished, or none of the prefixes going on can outscore the n_best-th.
      std::vector<Hypothesis>& done = finished[s];
      std::stable_sort(done.begin(), done.end(), [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
      double best_open = -INFINITY;
      for (const Prefix& p : going) best_open = std::max(best_open, p.log_prob / length_penalty(o.max_len, o.length_penalty));
      const bool full = done.size() >= W;
      const bool hopeless = done.size() >= static_cast<size_t>(o.n_best) && best_open <= done[o.n_best - 1].score;
      if (full || hopeless) {
        rows.resize(rows.size() - going.size());
        continue;
      }
      for (Prefix& p : going) next.push_back(std::move(p));
    }
    if (!next.empty()) model.select_rows(rows);
    open = std::move(next);
  }
  for (std::vector<Hypothesis>& done : finished) done.resize(std::min(done.size(), static_cast<size_t>(o.n_best)));
  return finished;
}

}  // namespace qkv::nn
