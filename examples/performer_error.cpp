// performer_error: how close Performer's attention (nn/performer.h, FAVOR+) comes to exact softmax
// attention as its number of random features m grows.
//
// FAVOR+ estimates every softmax kernel value exp(q·k/√d) by an average over m random features, so
// the variance of each estimate is O(1/m) (Choromanski et al. 2021, Lemma 2) and the error of the
// attention output should fall like 1/√m once m is large. This program builds one Performer head
// with identity projections, so that its output is FAVOR+ applied to the input itself, and
// compares it with exact softmax attention on the same input (MultiHeadAttention with the same
// identity projections): the relative error ‖Performer − exact‖ / ‖exact‖ of the (B, T, d)
// output, averaged over --draws independent draws of the features, for m = d/2, d, 2d, ... --max-m.
// It does so for inputs of two scales: a larger scale makes the softmax sharper and the kernel
// values spread over more orders of magnitude, which the estimator finds harder.
//
//   usage: performer_error [--out DIR] [--width 16] [--length 64] [--max-m 4096] [--draws 4]
// prints the table and writes DIR/performer_error.png (log scales, with a 1/√m line for slope).
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "examples/common/program.h"
#include "nn/attention.h"
#include "nn/performer.h"
#include "plot/plot.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"

using namespace qkv;

namespace {

void set_identity(const std::vector<std::shared_ptr<nn::Linear>>& projections, int64_t d) {
  NoGradGuard no_grad;
  for (const auto& W : projections) W->weight.copy_(eye(d));
}

// The mean relative error of Performer's output against exact attention for each m.
std::vector<double> errors_for(const Tensor& X, const std::vector<int64_t>& ms, int draws) {
  const int64_t d = X.size(2);
  nn::MultiHeadAttention exact_layer(d, d, d, d, 1, 0.0f);
  set_identity({exact_layer.W_q, exact_layer.W_k, exact_layer.W_v, exact_layer.W_o}, d);
  exact_layer.eval();
  const Tensor exact = exact_layer.forward(X, X, X);
  std::vector<double> errors;
  for (const int64_t m : ms) {
    double sum = 0;
    for (int draw = 0; draw < draws; ++draw) {
      manual_seed(static_cast<uint64_t>(1000 + draw));
      nn::Performer performer({.num_hiddens = d, .num_heads = 1, .max_len = X.size(1), .features = m});
      set_identity({performer.W_q, performer.W_k, performer.W_v, performer.W_o}, d);
      performer.eval();
      sum += (performer.forward(X, X, X) - exact).norm().item() / exact.norm().item();
    }
    errors.push_back(sum / draws);
  }
  return errors;
}

const std::vector<examples::Args::Option> kOptions = {
    {"out", ".", "directory for performer_error.png"},
    {"width", "16", "head width d"},
    {"length", "64", "tokens T"},
    {"max-m", "4096", "the most random features (doubling from width / 2)"},
    {"draws", "4", "independent draws of the features per point"}};

int run(const examples::Args& args) {
  const int64_t d = args.integer_in("width", 2, 256), T = args.integer_in("length", 2, 4096);
  const int64_t max_m = args.integer_in("max-m", 1, 65536);
  const int draws = static_cast<int>(args.integer_in("draws", 1, 100));
  if (max_m < std::max<int64_t>(1, d / 2))
    throw ValueError("option --max-m is " + std::to_string(max_m) + "; expected at least width / 2 = " +
                     std::to_string(std::max<int64_t>(1, d / 2)) + ", where the table starts");
  const std::string out = examples::prepare_out(args, "out", {"performer_error.png"});
  std::vector<int64_t> ms;
  for (int64_t m = std::max<int64_t>(1, d / 2); m <= max_m; m *= 2) ms.push_back(m);
  Generator gen(7);
  const Tensor noise = randn({2, T, d}, false, &gen);
  const std::vector<float> scales = {0.5f, 1.0f};
  plot::LinePlotSpec spec;
  spec.title = "Performer vs exact softmax attention (d = " + std::to_string(d) + ", T = " + std::to_string(T) + ")";
  spec.x_label = "random features m";
  spec.y_label = "relative error of the output";
  spec.log_x = spec.log_y = spec.markers = true;
  std::printf("relative error of the output, mean of %d draws; d = %lld, T = %lld\n%8s", draws,
              static_cast<long long>(d), static_cast<long long>(T), "m");
  for (const float s : scales) std::printf("   inputs x%.1f", s);
  std::printf("\n");
  std::vector<std::vector<double>> table;
  for (const float s : scales) {
    table.push_back(errors_for(noise * s, ms, draws));
    plot::Series series{"inputs N(0, 1) x " + std::to_string(s).substr(0, 3), {}, table.back()};
    for (const int64_t m : ms) series.x.push_back(static_cast<double>(m));
    spec.series.push_back(series);
  }
  for (size_t j = 0; j < ms.size(); ++j) {
    std::printf("%8lld", static_cast<long long>(ms[j]));
    for (const auto& column : table) std::printf(" %14.4f", column[j]);
    std::printf("\n");
  }
  plot::Series guide{"1/sqrt(m)", {}, {}};
  for (const int64_t m : ms) {
    guide.x.push_back(static_cast<double>(m));
    guide.y.push_back(table[0].back() * std::sqrt(static_cast<double>(ms.back()) / static_cast<double>(m)));
  }
  spec.series.push_back(guide);
  const std::string path = out + "/performer_error.png";
  plot::draw_line_plot(spec).write_png(path);
  std::printf("wrote %s\n", path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return qkv::examples::run_tool(
      argc, argv, {"performer_error", "the error of Performer's attention against its number of random features, with a figure", kOptions, run});
}
