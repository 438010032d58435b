#include "examples/seq2seq/figures.h"

#include <map>

#include "examples/common/timing.h"
#include "examples/seq2seq/training.h"
#include "plot/plot.h"

namespace seq2seq {

std::vector<BeamPoint> beam_sweep(Translator& model, const Task& task, const std::vector<Pair>& pairs,
                                  const std::vector<int64_t>& beams, double length_penalty) {
  std::vector<BeamPoint> points;
  for (const int64_t beam : beams) {
    const auto start = qkv::examples::Clock::now();
    const Evaluation ev = evaluate(model, task, pairs, beam, length_penalty);
    points.push_back({beam, ev.score, qkv::examples::seconds_since(start), ev.predictions});
  }
  return points;
}

std::vector<LengthPoint> error_by_length(const Task& task, const std::vector<std::string>& outputs,
                                         const std::vector<Pair>& pairs, int64_t min_count) {
  std::map<int64_t, std::pair<std::vector<std::string>, std::vector<Pair>>> groups;
  for (size_t i = 0; i < pairs.size(); ++i) {
    auto& [outs, ps] = groups[static_cast<int64_t>(task.source_symbols(pairs[i].source).size())];
    outs.push_back(outputs[i]);
    ps.push_back(pairs[i]);
  }
  std::vector<LengthPoint> points;
  for (const auto& [length, group] : groups) {
    const auto count = static_cast<int64_t>(group.second.size());
    if (count >= min_count) points.push_back({length, 1.0 - task.score(group.first, group.second).exact, count});
  }
  return points;
}

std::vector<std::filesystem::path> write_figures(const std::vector<LengthPoint>& by_length,
                                                 const std::vector<BeamPoint>& sweep, const std::string& task_name,
                                                 const std::filesystem::path& dir) {
  const bool g2p = task_name == "cmudict";
  const std::string error = g2p ? "WER (%, stress stripped)" : "error (%, 1 - exact match)";
  std::vector<std::filesystem::path> paths;
  const auto spec = [&](const std::string& title, const std::string& x, const std::string& y, bool log_x) {
    qkv::plot::LinePlotSpec p;
    p.title = title, p.x_label = x, p.y_label = y, p.log_x = log_x, p.markers = true;
    return p;
  };
  qkv::plot::LinePlotSpec length = spec("test error by source length", g2p ? "letters" : "characters", error, false);
  qkv::plot::Series s{"", {}, {}};
  for (const LengthPoint& p : by_length) s.x.push_back(static_cast<double>(p.length)), s.y.push_back(100 * p.error);
  length.series.push_back(s);
  paths.push_back(dir / "error_by_length.png");
  qkv::plot::draw_line_plot(length).write_png(paths.back().string());

  qkv::plot::LinePlotSpec err = spec("beam width: error", "beam width", error, true);
  qkv::plot::LinePlotSpec time = spec("beam width: decoding time", "beam width", "seconds for the test set", true);
  qkv::plot::Series e{"", {}, {}}, t{"", {}, {}};
  for (const BeamPoint& p : sweep) {
    e.x.push_back(static_cast<double>(p.beam)), e.y.push_back(100 * (1 - p.score.exact));
    t.x.push_back(static_cast<double>(p.beam)), t.y.push_back(p.seconds);
  }
  err.series.push_back(e);
  time.series.push_back(t);
  paths.push_back(dir / "beam_width.png");
  qkv::plot::tile({qkv::plot::draw_line_plot(err), qkv::plot::draw_line_plot(time)}, 2).write_png(paths.back().string());
  return paths;
}

}  // namespace seq2seq
