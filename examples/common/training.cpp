#include "examples/common/training.h"

#include <cmath>
#include <limits>

#include "dist/data_parallel.h"
#include "dist/same_start.h"
#include "dist/sampler.h"
#include "examples/common/ranks.h"
#include "optim/clip.h"
#include "tensor/error.h"
#include "tensor/random.h"

namespace qkv::examples {

bool Ranks::many() const { return group != nullptr && group->size() > 1; }
bool Ranks::root() const { return group == nullptr || group->rank() == 0; }

const Args::Option kReduceOption = {
    "reduce", "library",
    "under mpirun: add the ranks' gradients in the MPI library's order (library) or in rank order (fixed)"};

Ranks ranks_from(const Args& args) {
  const std::string reduce = args.str("reduce");
  if (reduce != "library" && reduce != "fixed")
    throw ValueError("option --reduce is '" + reduce + "'; expected library or fixed");
  return {world_started() ? &world().group() : nullptr, reduce == "fixed"};
}

void check_same_state(const nn::Module& model, const Ranks& ranks, const std::string& when) {
  if (ranks.many()) dist::check_same_state(model, *ranks.group, when);
}

bool StepResult::finite() const { return std::isfinite(loss) && std::isfinite(grad_norm); }

TrainStep::TrainStep(nn::Module& model, optim::Optimizer& optimizer, StepOptions options)
    : model_(model), optimizer_(optimizer), options_(options) {
  if (options_.ranks.many())
    parallel_ = std::make_unique<dist::DataParallel>(
        model, *options_.ranks.group, dist::ReducerOptions{.fixed_order = options_.ranks.fixed_order});
}

TrainStep::~TrainStep() = default;

StepResult TrainStep::operator()(int64_t rows, int64_t step,
                                 const std::function<Share(const Rows&)>& forward) {
  StepResult r;
  const double clip = options_.clip > 0 ? options_.clip : std::numeric_limits<double>::infinity();
  if (!parallel_) {
    Rows all{std::vector<int64_t>(static_cast<size_t>(rows)), true};
    for (int64_t i = 0; i < rows; ++i) all.rows[static_cast<size_t>(i)] = i;
    const Share s = forward(all);
    optimizer_.zero_grad();
    s.loss.backward();
    r.loss = s.loss.item();
  } else {
    dist::ProcessGroup& group = *options_.ranks.group;
    const Rows mine{dist::shard(rows, group.rank(), group.size()), false};
    default_generator().set_state(keyed_stream(options_.seed, 1 + static_cast<uint64_t>(group.rank()), step));
    parallel_->zero_grad();
    Share s;
    if (!mine.rows.empty()) s = forward(mine);
    double sums[2] = {static_cast<double>(s.tokens), 0};  // the batch's tokens, then its mean loss
    group.all_reduce_sum(std::span<double>(sums, 1));
    const double weight = static_cast<double>(s.tokens) / sums[0];  // this rank's share of the batch
    if (!mine.rows.empty()) {
      sums[1] = s.loss.item() * weight;
      (s.loss * static_cast<float>(weight)).backward();
    }
    parallel_->sum_gradients(!mine.rows.empty());
    group.all_reduce_sum(std::span<double>(sums + 1, 1));
    r.loss = sums[1];
  }
  r.grad_norm = optim::clip_grad_norm_(model_.parameters(), clip);
  if (r.finite()) optimizer_.step();
  return r;
}

void TrainStep::sum(std::span<double> values) const {
  if (parallel_) options_.ranks.group->all_reduce_sum(values);
}

const dist::Reducer* TrainStep::reducer() const { return parallel_ ? parallel_->reducer() : nullptr; }

}  // namespace qkv::examples
