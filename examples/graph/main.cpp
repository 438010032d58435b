// graph: attention on graphs. Self-attention restricted to a graph's edges is a graph neural
// network; this program measures when the edges help. Its commands are the table in main()
// (`graph --help`); the models are examples/graph/models.h, the file formats
// examples/graph/read_graph.h, and docs/graph.md has the results. A command refuses an --out that
// already holds the files it writes, before any work.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "examples/common/program.h"
#include "io/file.h"
#include "examples/graph/figures.h"
#include "examples/graph/karate.h"
#include "examples/graph/label_propagation.h"
#include "examples/graph/read_graph.h"
#include "examples/graph/sbm.h"
#include "examples/graph/train.h"
#include "tensor/error.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"

namespace {

using namespace graph;
using qkv::examples::Args;

const std::vector<std::string> kColumns = {"mlp", "attention", "graph", "label propagation"};

std::vector<Args::Option> common_options(const std::string& out) {
  const TrainOptions d;
  using qkv::examples::option_text;
  return {{"out", out, "output directory"},
          {"seed", "0", "seed of the graphs, the initialization and the dropout"},
          {"epochs", std::to_string(d.epochs), "full-batch training epochs"},
          {"hidden", std::to_string(d.model.hidden), "model width"},
          {"heads", std::to_string(d.model.heads), "attention heads"},
          {"layers", std::to_string(d.model.layers), "attention layers"},
          {"dropout", option_text(d.model.dropout), "dropout on the features and the hidden layer"},
          {"lr", option_text(d.lr), "learning rate (Adam)"},
          qkv::examples::kThreadsOption,
          qkv::examples::kReferenceOption};
}

std::vector<Args::Option> sbm_options(std::vector<Args::Option> spec) {
  const SbmOptions d;
  using qkv::examples::option_text;
  spec.insert(spec.end(), {{"nodes", std::to_string(d.nodes), "nodes of each generated graph"},
                           {"classes", std::to_string(d.classes), "classes"},
                           {"degree", option_text(d.degree), "mean degree"},
                           {"signal", option_text(d.signal), "fraction of a node's words drawn from its class's words"},
                           {"labelled", std::to_string(d.labelled_per_class), "labelled training nodes per class"},
                           {"val", std::to_string(d.val), "validation nodes"}});
  return spec;
}

TrainOptions train_options(const Args& a) {
  TrainOptions o;
  o.epochs = a.integer_in("epochs", 1, 100000);
  o.model.hidden = a.integer_in("hidden", 1, 4096);
  o.model.heads = a.integer_in("heads", 1, 64);
  o.model.layers = a.integer_in("layers", 1, 16);
  o.model.dropout = static_cast<float>(a.number_in("dropout", 0.0, 0.95));
  o.lr = a.number_in("lr", 1e-6, 10.0);
  o.seed = static_cast<uint64_t>(a.integer_in("seed", 0, INT64_MAX));
  if (o.model.hidden % o.model.heads != 0)
    throw qkv::ValueError("--hidden " + std::to_string(o.model.hidden) + " must be a multiple of --heads " +
                          std::to_string(o.model.heads));
  return o;
}

SbmOptions sbm_from(const Args& a, double homophily, uint64_t seed) {
  SbmOptions o;
  o.nodes = a.integer_in("nodes", 4, kMaxNodes);
  o.classes = a.integer_in("classes", 2, 1000);
  o.degree = a.number_in("degree", 0.0, 1000.0);
  o.signal = a.number_in("signal", 0.0, 1.0);
  o.labelled_per_class = a.integer_in("labelled", 1, 1000000);
  o.val = a.integer_in("val", 0, 1000000);
  o.homophily = homophily;
  o.seed = seed;
  return o;
}

// Test accuracy of the three trained models and of label propagation on g.
std::vector<double> evaluate_all(const Graph& g, const TrainOptions& o) {
  std::vector<double> acc;
  for (const std::string& name : model_names()) acc.push_back(train_model(name, g, o).test);
  acc.push_back(accuracy(label_propagation(g), g, g.test));
  return acc;
}

std::vector<double> homophily_list(const std::string& text) {
  std::vector<double> hs;
  for (const std::string& item : qkv::examples::split_list("homophily", text)) {
    const double h = qkv::examples::parse_number("homophily", item);
    if (!(h >= 0.0 && h <= 1.0)) throw qkv::ValueError("--homophily: " + item + " is outside [0, 1]");
    hs.push_back(h);
  }
  if (hs.empty()) throw qkv::ValueError("--homophily is empty; expected values such as 0.1,0.5,0.9");
  return hs;
}

int cmd_sweep(const Args& a) {
  qkv::examples::start_command(a, "graph", /*announce=*/true);
  const std::vector<double> hs = homophily_list(a.str("homophily"));
  const int64_t seeds = a.integer_in("seeds", 1, 100);
  const TrainOptions o = train_options(a);
  for (const double h : hs) check_options(sbm_from(a, h, 0));  // before the output directory is made
  const std::string out = qkv::examples::prepare_out(a, "out", {"sweep.tsv", "sweep.png"});
  std::vector<std::vector<double>> mean(kColumns.size(), std::vector<double>(hs.size(), 0.0));
  std::printf("test accuracy, mean of %lld seed(s)\n%-6s %-8s", static_cast<long long>(seeds), "h", "measured");
  for (const std::string& c : kColumns) std::printf(" %18s", c.c_str());
  std::printf("\n");
  for (size_t i = 0; i < hs.size(); ++i) {
    double measured = 0.0;
    for (int64_t s = 0; s < seeds; ++s) {
      const Graph g = stochastic_block_model(sbm_from(a, hs[i], o.seed + static_cast<uint64_t>(s)));
      measured += edge_homophily(g) / static_cast<double>(seeds);
      TrainOptions run = o;
      run.seed = o.seed + static_cast<uint64_t>(s);
      const std::vector<double> acc = evaluate_all(g, run);
      for (size_t m = 0; m < acc.size(); ++m) mean[m][i] += acc[m] / static_cast<double>(seeds);
    }
    std::printf("%-6.2f %-8.3f", hs[i], measured);
    for (size_t m = 0; m < kColumns.size(); ++m) std::printf(" %18.3f", mean[m][i]);
    std::printf("\n");
    std::fflush(stdout);
  }
  std::ostringstream tsv;
  tsv << "homophily";
  for (const std::string& c : kColumns) tsv << '\t' << c;
  tsv << '\n';
  for (size_t i = 0; i < hs.size(); ++i) {
    tsv << hs[i];
    for (size_t m = 0; m < kColumns.size(); ++m) tsv << '\t' << mean[m][i];
    tsv << '\n';
  }
  qkv::io::write_text_file(out + "/sweep.tsv", tsv.str(), "graph sweep");
  draw_sweep(hs, kColumns, mean, out + "/sweep.png");
  std::printf("wrote %s/sweep.tsv and %s/sweep.png\n", out.c_str(), out.c_str());
  return 0;
}

int cmd_karate(const Args& a) {
  qkv::examples::start_command(a, "graph", /*announce=*/true);
  const TrainOptions o = train_options(a);
  const std::string out = qkv::examples::prepare_out(a, "out", {"karate_attention.png"});
  const Graph g = karate_club();
  std::printf("Zachary's karate club: %lld members, %zu friendships; labelled: 0 (Mr. Hi) and 33 (John A.)\n",
              static_cast<long long>(g.nodes), g.edges.size());
  std::printf("accuracy on the other 32 members:\n");
  std::shared_ptr<NodeModel> graph_model;
  for (const std::string& name : model_names()) {
    const TrainResult r = train_model(name, g, o);
    std::printf("  %-18s %.3f\n", name.c_str(), r.test);
    if (name == "graph") graph_model = r.model;
  }
  std::printf("  %-18s %.3f\n", "label propagation", accuracy(label_propagation(g), g, g.test));
  const std::string path = out + "/karate_attention.png";
  draw_attention(g, last_attention(*graph_model), "karate club: graph attention weights (mean of heads)", path);
  std::printf("wrote %s\n", path.c_str());
  return 0;
}

// Writes g as the two files read_graph reads.
void write_graph(const Graph& g, const std::string& dir) {
  std::ostringstream edges, labels;
  edges << "# undirected edges 'U V'\n";
  for (const auto& [u, v] : g.edges) edges << u << ' ' << v << '\n';
  labels << "# 'NODE CLASS'\n";
  for (int64_t i = 0; i < g.nodes; ++i) labels << i << " c" << g.labels[i] << '\n';
  qkv::io::write_text_file(dir + "/edges.txt", edges.str(), "graph generate");
  qkv::io::write_text_file(dir + "/labels.txt", labels.str(), "graph generate");
}

int cmd_generate(const Args& a) {
  qkv::examples::start_command(a, "graph");
  const double h = a.number_in("homophily", 0.0, 1.0);
  const Graph g = stochastic_block_model(sbm_from(a, h, static_cast<uint64_t>(a.integer_in("seed", 0, INT64_MAX))));
  const std::string out = qkv::examples::prepare_out(a, "out", {"edges.txt", "labels.txt"});
  write_graph(g, out);
  std::printf("%lld nodes, %zu edges, homophily %.3f, mean degree %.2f: wrote %s/edges.txt and %s/labels.txt\n",
              static_cast<long long>(g.nodes), g.edges.size(), edge_homophily(g), mean_degree(g), out.c_str(),
              out.c_str());
  return 0;
}

int cmd_train(const Args& a) {
  qkv::examples::start_command(a, "graph", /*announce=*/true);
  if (!a.given("edges") || !a.given("labels")) throw qkv::ValueError("train needs --edges FILE and --labels FILE");
  const TrainOptions o = train_options(a);
  const GraphFile f = read_graph(a.str("edges"), a.str("labels"), a.integer_in("labelled", 1, 1000000), o.seed);
  for (const std::string& note : f.notes) std::printf("note: %s\n", note.c_str());
  const Graph& g = f.graph;
  std::printf("%lld nodes, %zu edges, %lld classes; %zu labelled, %zu validation, %zu test nodes\n",
              static_cast<long long>(g.nodes), g.edges.size(), static_cast<long long>(g.classes), g.train.size(),
              g.val.size(), g.test.size());
  const std::vector<double> acc = evaluate_all(g, o);
  for (size_t m = 0; m < kColumns.size(); ++m) std::printf("  %-18s test accuracy %.3f\n", kColumns[m].c_str(), acc[m]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Args::Option> sweep = sbm_options(common_options("runs/graph")), train = common_options("");
  sweep.push_back({"homophily", "0.1,0.3,0.5,0.7,0.9", "homophily values, comma-separated"});
  sweep.push_back({"seeds", "3", "graphs (and trainings) per homophily value; the table shows the mean"});
  train.erase(train.begin());  // train writes nothing: no --out
  train.insert(train.end(), {{"edges", "", "the edge list, one 'U V' per line"},
                             {"labels", "", "the labels, one 'NODE CLASS' per line"},
                             {"labelled", "20", "labelled training nodes per class"}});
  return qkv::examples::run_program(
      argc, argv,
      {"graph", "attention on graphs: when do the edges help?",
       {{"sweep", "test accuracy of mlp, full attention, graph attention and label propagation over homophily", sweep,
         cmd_sweep},
        {"karate", "Zachary's karate club from the two leaders' labels; the attention figure",
         common_options("runs/graph"), cmd_karate},
        {"generate", "write a generated graph as edges.txt and labels.txt (--out DIR)",
         sbm_options({{"out", "data/graph", "directory for edges.txt and labels.txt"},
                      {"seed", "0", "seed of the graph"},
                      {"homophily", "0.7", "fraction of edges inside a class"}}),
         cmd_generate},
        {"train", "the four models on a graph of your own (--edges FILE --labels FILE)", train, cmd_train}}});
}
