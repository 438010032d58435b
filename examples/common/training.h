// One training step, the same code in one process and on the ranks of mpirun (docs/distributed.md):
//
//   TrainStep step(model, optimizer, {.ranks = o.ranks, .seed = c.seed, .clip = c.clip});
//   const StepResult r = step(B, k, [&](const Rows& rows) {   // the rows of the batch this rank reads
//     const Tensor loss = ...;                                  // the mean over their tokens
//     return Share{loss, tokens};
//   });
//
// In one process the forward reads the whole batch, then backward, the gradient clipped to its
// norm, and the optimizer's step. On several ranks every rank builds the same global batch of B
// rows and reads its stride of them (dist::shard); its loss is scaled by its share of the batch's
// tokens, so that the gradients the reducer sums are those of the mean over the whole batch, and
// every rank clips the same norm and takes the same step. Each rank draws its dropout from a stream
// of its own, keyed by the seed, its rank and the step (examples::keyed_stream), so that a resumed
// run draws what an uninterrupted one would have. A loss or gradient norm that is not finite skips
// the optimizer's step, so that nothing writes NaN into the weights: the program stops there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "examples/common/args.h"
#include "nn/module.h"
#include "optim/optimizer.h"

namespace qkv::dist {
class DataParallel;
class ProcessGroup;
class Reducer;
}  // namespace qkv::dist

namespace qkv::examples {

// The ranks that train together: null, or a group of one, is this process alone.
struct Ranks {
  dist::ProcessGroup* group = nullptr;
  bool fixed_order = false;  // add the ranks' gradients in rank order (--reduce fixed)
  bool many() const;
  bool root() const;  // rank 0, or the one process: it prints, evaluates and writes
};

// Under mpirun, refuses (naming `when`) ranks whose weights differ: dist::check_same_state.
void check_same_state(const nn::Module& model, const Ranks& ranks, const std::string& when);

// --reduce, for the train commands that run under mpirun, and the Ranks of this process's world
// that it asks for.
extern const Args::Option kReduceOption;
Ranks ranks_from(const Args& args);

struct Rows {
  std::vector<int64_t> rows;  // the rows of the global batch this rank reads
  bool whole = true;          // all of them, in order (one process)
};

struct Share {
  Tensor loss;         // the mean loss over the tokens of the rows read
  int64_t tokens = 0;  // how many those are
};

struct StepResult {
  double loss = 0;       // the batch's mean loss, over every rank's rows
  double grad_norm = 0;  // before clipping
  bool finite() const;
};

struct StepOptions {
  Ranks ranks = {};
  uint64_t seed = 0;  // keys each rank's dropout stream
  double clip = 0;    // the largest gradient norm; 0: not clipped
};

class TrainStep {
 public:
  // On several ranks every rank starts from rank 0's weights (dist::DataParallel).
  TrainStep(nn::Module& model, optim::Optimizer& optimizer, StepOptions options);
  ~TrainStep();
  // Step number `step` (0-based, of the whole run) on a global batch of `rows` rows.
  StepResult operator()(int64_t rows, int64_t step, const std::function<Share(const Rows&)>& forward);
  // Each value summed over the ranks, for the totals of an epoch; nothing in one process.
  void sum(std::span<double> values) const;
  const Ranks& ranks() const { return options_.ranks; }
  // The reducer that sums the gradients (null in one process and in the reference mode).
  const dist::Reducer* reducer() const;

 private:
  nn::Module& model_;
  optim::Optimizer& optimizer_;
  StepOptions options_;
  std::unique_ptr<dist::DataParallel> parallel_;
};

}  // namespace qkv::examples
