#include "examples/lm/extrapolation.h"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "io/file.h"
#include "plot/plot.h"
#include "tensor/error.h"

namespace lm {

namespace fs = std::filesystem;
using qkv::io::Json;

Config extrapolation_defaults() {
  Config c;
  c.model.context = 64;
  c.model.layers = 4;
  c.batch = 32;
  c.steps = 1500;
  c.warmup = 100;
  c.eval_every = 500;
  c.matmul = "highest";
  return c;
}

std::vector<std::string> split_schemes(const std::string& list) {
  std::vector<std::string> names = qkv::examples::split_list("schemes", list);
  for (const std::string& name : names)
    if (!qkv::nn::position_schemes().contains(name))
      throw qkv::ValueError("--schemes: '" + name + "' is not a position scheme; expected some of " +
                            qkv::examples::join(qkv::nn::position_scheme_names()));
  return names;
}

std::vector<int64_t> split_factors(const std::string& list) {
  std::vector<int64_t> factors;
  for (const std::string& item : qkv::examples::split_list("factors", list)) {
    const int64_t f = qkv::examples::parse_integer("factors", item);
    if (f < 1 || f > 64) throw qkv::ValueError("option --factors: " + item + " is outside 1 .. 64");
    if (!factors.empty() && f <= factors.back())
      throw qkv::ValueError("option --factors: expected increasing multiples of the context, got '" + list + "'");
    factors.push_back(f);
  }
  return factors;
}

namespace {

const std::vector<std::string> kFiles = {"extrapolation.md", "extrapolation.json", "extrapolation.png"};

// The longest window evaluation reads: that of lm train's longest context, whose attention weights
// evaluate_bits keeps within a few MiB per head.
constexpr int64_t kLongestWindow = 2048;

// Refuses, before anything is trained or written, a scheme the config cannot build, an evaluation
// window longer than kLongestWindow, and an OUT that holds a result of ours already.
void check_before(const Config& config, const ExtrapolationOptions& o) {
  if (o.schemes.empty()) throw qkv::ValueError("option --schemes: no scheme to train");
  if (o.factors.empty()) throw qkv::ValueError("option --factors: no length to evaluate at");
  if (const int64_t longest = o.factors.back() * config.model.context; longest > kLongestWindow)
    throw qkv::ValueError("option --factors: " + std::to_string(o.factors.back()) + " × --context " +
                          std::to_string(config.model.context) + " is a window of " + std::to_string(longest) +
                          " characters; at most " + std::to_string(kLongestWindow) + " are read at once");
  for (const std::string& scheme : o.schemes) {
    Config c = config;
    c.model.positions = scheme;
    c.validate();
  }
  qkv::examples::refuse_existing_comparison("lm extrapolate", o.out, o.schemes, kFiles);
}

// Test bits per character of the run in `dir` at each factor's window; none where it refuses.
ExtrapolationRow evaluate_run(const std::string& scheme, const fs::path& dir, const Data& data,
                              const ExtrapolationOptions& o) {
  const Run run = load_run(dir, "best");
  ExtrapolationRow row;
  row.scheme = scheme;
  row.parameters = run.model->num_parameters();
  for (const auto& piece : data.test) row.longest_piece = std::max(row.longest_piece, static_cast<int64_t>(piece.size()));
  for (const int64_t f : o.factors) {
    std::shared_ptr<CharGPT> model;
    try {
      model = f == 1 ? run.model : with_context(*run.model, f * run.config.model.context);
    } catch (const qkv::ValueError& e) {  // a weight of one row per position: refused past them
      row.bits.emplace_back();
      if (row.refusal.empty()) row.refusal = e.what();
      continue;
    }
    row.bits.emplace_back(evaluate_bits(*model, data.test, data.start_id, Scoring::NonOverlapping));
  }
  return row;
}

std::string table(const std::vector<ExtrapolationRow>& rows, const ExtrapolationOptions& o, int64_t L) {
  std::ostringstream md;
  md << "| positions |";
  for (const int64_t f : o.factors) md << " " << f * L << (f == 1 ? " (L)" : "") << " |";
  md << " parameters | training seconds |\n|---|";
  for (size_t i = 0; i < o.factors.size(); ++i) md << "---|";
  md << "---|---|\n" << std::fixed;
  for (const ExtrapolationRow& r : rows) {
    md << "| " << r.scheme << " |";
    for (const auto& bits : r.bits) {
      md << " ";
      if (bits) md << std::setprecision(3) << *bits;
      else md << "refused";
      md << " |";
    }
    md << " " << r.parameters << " | " << std::setprecision(0) << r.seconds << " |\n";
  }
  for (const ExtrapolationRow& r : rows)
    if (!r.refusal.empty()) md << "\n" << r.scheme << " refuses a longer window: " << r.refusal << "\n";
  // windows() reads a piece shorter than the window whole: such a column reads shorter windows than it says.
  if (const int64_t piece = rows.empty() ? 0 : rows.front().longest_piece; piece < o.factors.back() * L)
    md << "\nThe longest test piece has " << piece << " characters: a window longer than a piece reads the piece whole.\n";
  return md.str();
}

Json to_json(const std::vector<ExtrapolationRow>& rows, const ExtrapolationOptions& o, const Config& config,
             const BaselineBits& baselines) {
  Json::Array lengths, out;
  for (const int64_t f : o.factors) lengths.push_back(Json(f * config.model.context));
  for (const ExtrapolationRow& r : rows) {
    Json::Array bits;
    for (const auto& b : r.bits) {
      if (b) bits.emplace_back(*b);
      else bits.emplace_back(nullptr);  // refused
    }
    out.push_back(Json(Json::Object{{"positions", Json(r.scheme)}, {"test_bits_per_char", Json(bits)},
                                    {"refusal", Json(r.refusal)}, {"parameters", Json(r.parameters)},
                                    {"training_seconds", Json(r.seconds)}}));
  }
  return Json(Json::Object{{"context", Json(config.model.context)}, {"lengths", Json(lengths)},
                           {"steps", Json(config.steps)}, {"seed", Json(config.seed)},
                           {"ngram_order", Json(int64_t{baselines.ngram_order})}, {"ngram_bits", Json(baselines.ngram)},
                           {"schemes", Json(out)}});
}

void draw(const std::vector<ExtrapolationRow>& rows, const ExtrapolationOptions& o, int64_t L,
          const BaselineBits& baselines, const fs::path& path) {
  qkv::plot::LinePlotSpec spec;
  spec.title = "Test bits per character, trained at L = " + std::to_string(L);
  spec.x_label = "evaluation window (characters)";
  spec.y_label = "bits per character";
  spec.log_x = true;
  spec.markers = true;
  double low = baselines.ngram, top = baselines.ngram, best = 1e9;  // best: the lowest of the schemes
  for (const ExtrapolationRow& r : rows) {
    qkv::plot::Series s{r.scheme, {}, {}};
    for (size_t i = 0; i < r.bits.size(); ++i)
      if (r.bits[i]) {
        s.x.push_back(static_cast<double>(o.factors[i] * L));
        s.y.push_back(*r.bits[i]);
        low = std::min(low, *r.bits[i]), top = std::max(top, *r.bits[i]), best = std::min(best, *r.bits[i]);
      }
    if (!s.x.empty()) spec.series.push_back(s);  // a scheme refused at every length has no curve
  }
  const double x0 = static_cast<double>(o.factors.front() * L), x1 = static_cast<double>(o.factors.back() * L);
  spec.series.push_back({"Kneser-Ney " + std::to_string(baselines.ngram_order) + "-gram", {x0, x1},
                         {baselines.ngram, baselines.ngram}});
  // Past 4 bits a curve has left the page: the axis keeps the schemes that read well readable
  // (unless every value is above 4, as on a text much harder than English).
  spec.y_range =
      qkv::plot::AxisRange{std::max(0.0, low - 0.1), std::min(std::max(4.0, best + 1.0), std::max(top, low)) + 0.1};
  if (x1 > x0) spec.x_range = qkv::plot::AxisRange{x0 / 1.2, x1 * 1.2};
  qkv::plot::draw_line_plot(spec).write_png(path.string());
}

}  // namespace

std::vector<ExtrapolationRow> run_extrapolation(const Config& config, const ExtrapolationOptions& o) {
  check_before(config, o);
  const Data data = load_data(config);  // a text that cannot be read or is too short is refused before OUT is made
  qkv::examples::make_output_directory("out", o.out);
  std::vector<ExtrapolationRow> rows;
  BaselineBits baselines;
  for (size_t i = 0; i < o.schemes.size(); ++i) {
    Config c = config;
    c.model.positions = o.schemes[i];
    TrainOptions t = qkv::examples::comparison_run<TrainOptions>(o.out, o.schemes[i], i == 0, o.verbose);
    t.figures = false;
    if (o.verbose) std::cout << "\nlm extrapolate: " << o.schemes[i] << " positions\n";
    const TrainResult r = train(c, t);
    if (i == 0) baselines = r.baselines;
    ExtrapolationRow row = evaluate_run(o.schemes[i], t.run_dir, data, o);
    row.seconds = r.training_seconds;
    rows.push_back(std::move(row));
  }
  const int64_t L = config.model.context;
  const std::string md = table(rows, o, L);
  draw(rows, o, L, baselines, fs::path(o.out) / "extrapolation.png");  // first: of the three, the one that can throw
  qkv::io::write_text_file(fs::path(o.out) / "extrapolation.md", md, "lm extrapolate");
  qkv::io::write_text_file(fs::path(o.out) / "extrapolation.json", qkv::io::to_json(to_json(rows, o, config, baselines)) + "\n",
                           "lm extrapolate");
  if (o.verbose)
    std::cout << "\ntest bits per character by evaluation window, trained at " << L << " characters:\n\n"
              << md << "\nKneser-Ney " << baselines.ngram_order << "-gram on test: " << std::fixed
              << std::setprecision(3) << baselines.ngram << " bits per character\n";
  return rows;
}

}  // namespace lm
