// tagger_step: one training step of the tagger, seen through the introspection tools
// (docs/introspection.md walks through its output).
//
//   usage: tagger_step [--out DIR] [--model transformer|gru] [--threads 1] [--reference]
//
// With --reference (or QKV_REFERENCE=1) the step runs on the composed references of every fused op
// (tensor/reference_mode.h): the profile and the graph then show the plain computation, op by op.
// Builds the tagger's default model on its built-in corpus (2000 training sentences), takes a batch
// of median length, runs a few warm-up steps, then
//   1. profiles 20 steps (forward, backward, Adam) and prints the table, writing DIR/profile.csv;
//   2. runs one more step keeping the graph, and writes it: DIR/graph.dot and DIR/graph.json (every
//      node, with gradient norms on the edges), DIR/path.dot (the path from the loss to the first
//      attention's query weight); prints what kinds of nodes there are and what they keep alive;
//   3. runs one step in anomaly mode, which finds nothing here, and times what that costs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autograd/debug/anomaly.h"
#include "autograd/debug/graph_dump.h"
#include "autograd/debug/profiler.h"
#include "autograd/node.h"
#include "data/batching.h"
#include "examples/common/program.h"
#include "examples/tagger/train.h"
#include "io/file.h"
#include "nn/functional/loss.h"
#include "optim/adam.h"
#include "qkv.h"

using namespace qkv;

namespace {

// Writes `text` to `path` atomically (io/file.h), and says so.
void write(const std::filesystem::path& path, const std::string& text) {
  io::write_text_file(path, text, "tagger_step");
  std::printf("wrote %s\n", path.c_str());
}

// Every node reachable from t's graph, each once.
std::vector<const autograd::Node*> nodes_of(const Tensor& t) {
  std::vector<const autograd::Node*> out, stack;
  std::map<const autograd::Node*, bool> seen;
  if (t.grad_fn()) stack.push_back(t.grad_fn().get());
  while (!stack.empty()) {
    const autograd::Node* n = stack.back();
    stack.pop_back();
    if (seen[n]) continue;
    seen[n] = true;
    out.push_back(n);
    for (const auto& e : n->inputs)
      if (e.node) stack.push_back(e.node.get());
  }
  return out;
}

// A batch of the first epoch as the tagger's training loop makes them (sentences of similar
// length together): the one of median length.
data::Batch median_batch(const tagger::Data& data, const tagger::Vocabs& vocabs,
                         const tagger::Config& config) {
  std::vector<std::vector<int64_t>> words, tags;
  for (const auto& s : data.train) {
    words.push_back(vocabs.words.encode(s.words));
    tags.push_back(vocabs.tags.encode(s.tags));
  }
  std::vector<data::Batch> batches = data::make_batches(
      words, tags, {.batch_size = config.batch_size, .seed = config.seed, .pad_id = vocabs.words.pad_id()});
  std::sort(batches.begin(), batches.end(),
            [](const data::Batch& x, const data::Batch& y) { return x.max_len < y.max_len; });
  return batches[batches.size() / 2];
}

// 1. Where the time goes: 20 steps on the same batch, so that one preemption by another process
//    on a shared machine does not decide the table.
void profile_steps(const std::function<void()>& step, const std::filesystem::path& out) {
  constexpr int kSteps = 20;
  Profiler profiler;
  for (int i = 0; i < kSteps; ++i) step();
  profiler.stop();
  std::printf("== profile of %d steps (forward, backward, Adam)\n%s", kSteps, profiler.report().c_str());
  io::write_text_file(out / "profile.csv", profiler.csv(), "tagger_step");
}

// 2a. The graph of `loss`, kept through backward so that the dump shows each gradient's norm: the
//     whole graph as DOT and JSON, and the path from the loss to the first attention's query weight.
void write_graph_files(const Tensor& loss, const nn::Module& model, const std::filesystem::path& out) {
  autograd::GraphDumpOptions opts;
  opts.names = model.named_parameters();
  write(out / "graph.dot", autograd::graph_to_dot(loss, opts));
  write(out / "graph.json", autograd::graph_to_json(loss, opts));
  opts.only_path_to = opts.names.front().first;
  for (const auto& [name, p] : opts.names)
    if (name.find("W_q.weight") != std::string::npos) {
      opts.only_path_to = name;
      break;
    }
  write(out / "path.dot", autograd::graph_to_dot(loss, opts));
  std::printf("(path.dot: the path from the loss to %s)\n", opts.only_path_to.c_str());
}

// 2b. What kinds of nodes the graph of `loss` has, and the memory they keep alive for backward,
//     the largest first.
void print_graph_memory(const Tensor& loss) {
  struct Kind {
    int64_t count = 0, saved = 0;
  };
  std::map<std::string, Kind> kinds;
  int64_t nodes = 0, saved = 0;
  for (const autograd::Node* n : nodes_of(loss)) {
    ++nodes;
    kinds[n->op].count += 1;
    kinds[n->op].saved += n->saved_bytes();
    saved += n->saved_bytes();
  }
  std::vector<std::pair<std::string, Kind>> sorted(kinds.begin(), kinds.end());
  std::stable_sort(sorted.begin(), sorted.end(),  // ties in the map's order: by name
                   [](const auto& x, const auto& y) { return x.second.saved > y.second.saved; });
  std::printf(
      "\n== the graph: %lld nodes keeping %.2f MB alive for backward (storages shared by nodes "
      "are counted once per node)\n%-24s %6s %12s\n",
      static_cast<long long>(nodes), saved / 1e6, "op", "nodes", "saved KB");
  for (const auto& [op, k] : sorted)
    std::printf("%-24s %6lld %12.1f\n", op.c_str(), static_cast<long long>(k.count), k.saved / 1e3);
}

// 3. Anomaly mode: every result checked, every node's creation stack captured. The best of three
//    steps with it off and on.
void time_anomaly_mode(const std::function<void()>& step) {
  auto time_ms = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  double off = 1e300, on = 1e300;
  for (int i = 0; i < 3; ++i) off = std::min(off, time_ms());
  {
    DetectAnomaly anomaly;
    for (int i = 0; i < 3; ++i) on = std::min(on, time_ms());
  }
  std::printf(
      "\n== anomaly mode: no NaN or Inf in this step; a step takes %.2f ms with it on, %.2f ms "
      "off (x%.1f)\n",
      on, off, on / off);
}

const std::vector<examples::Args::Option> kOptions = {
    {"out", "tagger_step", "directory for the graph and profile files"},
    {"model", "transformer", "transformer or gru"},
    {"threads", "1", "threads for the kernels"},
    examples::kReferenceOption};

int run(const examples::Args& args) {
  args.refuse_positional();
  set_num_threads(static_cast<int>(args.integer_in("threads", 1, kMaxThreads)));
  const bool reference = examples::use_reference_mode(args);
  const std::filesystem::path out = args.str("out");
  examples::prepare_out(args, "out", {"profile.csv", "graph.dot", "graph.json", "path.dot"});

  tagger::Config config;  // the tagger's defaults: d = 64, 4 heads, FFN 128, 2 layers
  config.model = args.str("model");
  config.train_sentences = 2000;
  const tagger::Data data = tagger::load_data(config);
  const tagger::Vocabs vocabs = tagger::build_vocabs(data, config);
  manual_seed(config.seed);
  const auto model = tagger::make_model(config, vocabs.words.size(), vocabs.tags.size());
  model->train();
  optim::Adam optimizer(model->parameters(), {.lr = 1e-3});

  const data::Batch b = median_batch(data, vocabs, config);
  const IndexTensor ids(b.inputs, {b.batch_size, b.max_len}), targets(b.targets, {b.batch_size, b.max_len});
  const IndexTensor valid_lens(b.valid_lens);
  std::printf("one batch: B = %lld sentences, T = %lld (padded), %lld parameters, %d thread(s), %s\n\n",
              static_cast<long long>(b.batch_size), static_cast<long long>(b.max_len),
              static_cast<long long>(model->num_parameters()), get_num_threads(),
              reference ? examples::kReferenceModeNote : "the fused ops");

  auto loss_of = [&] {
    return nn::functional::sequence_cross_entropy(model->forward(ids, valid_lens), targets, valid_lens);
  };
  auto step = [&] {
    const Tensor loss = loss_of();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up: first-touch of buffers, Adam's state

  profile_steps(step, out);
  {
    const Tensor loss = loss_of();
    optimizer.zero_grad();
    {
      const autograd::RecordGradNorms record;  // the dump shows each edge's gradient norm
      loss.backward({}, /*retain_graph=*/true);
    }
    write_graph_files(loss, *model, out);
    print_graph_memory(loss);
    optimizer.step();
  }
  time_anomaly_mode(step);
  const MemoryStats m = memory_stats();
  std::printf("live tensors at exit: %lld storages, %.2f MB\n", static_cast<long long>(m.live_storages),
              m.live_bytes / 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return qkv::examples::run_tool(
      argc, argv, {"tagger_step", "one training step of the tagger seen through the graph dump and the profiler", kOptions, run});
}
