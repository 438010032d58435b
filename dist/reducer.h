// The gradient reducer of data-parallel training: PyTorch's DistributedDataParallel, after Li et
// al., "PyTorch Distributed: Experiences on Accelerating Data Parallel Training" (VLDB 2020).
//
// Every rank holds the same model and computes gradients on its own share of the batch; before the
// optimizer steps, each gradient must become the sum over ranks. The plain way (all_reduce_gradients
// below, which the reference mode uses) waits for backward to finish, then all-reduces the
// gradients one by one. The reducer does the same sum with two changes:
//
//   Buckets. Gradients live in a few flat buffers, each parameter's .grad() a view into one, so a
//   bucket is reduced by one collective instead of one per tensor (a collective has a fixed cost,
//   latency α, besides its bytes). Parameters are assigned in reverse registration order (backward
//   computes the last layers' gradients first), the first bucket small (1 MiB) so that the first
//   reduction starts early, the rest about 25 MiB each: PyTorch's defaults.
//
//   Overlap. A hook on every parameter (autograd/hooks.h) hears when backward has completed its
//   gradient; when a bucket's last gradient is complete, its all-reduce starts while backward goes
//   on with earlier layers. Buckets are started in bucket order, never in the order they happen to
//   become ready: every rank must issue the same collectives in the same order, or they pair up the
//   wrong buffers (or wait forever). A bucket ready before its predecessor waits for it.
//
// A step, on every rank:
//
//   reducer.zero_grad();                      // the buckets to 0, each .grad() a view into its bucket
//   (loss * my_share).backward();             // hooks start the buckets' all-reduces
//   reducer.finish();                         // waits for them: every .grad() is now the sum
//   clip_grad_norm_(params, max_norm);        // the same summed gradients, so the same norm everywhere
//   optimizer.step();
//
// The reducer sums; it does not divide by the number of ranks. qkv's sequence losses average over
// real tokens, and ranks hold different numbers of them, so dividing a sum by the rank count is the
// wrong mean: scale each rank's loss by its share of the step's tokens (global_count, below) and the
// sum is exactly the gradient of the mean over all tokens.
//
// Gradient accumulation: backward passes inside no_sync() only add into the buckets; the first
// backward after it reduces the total. A parameter that backward does not reach on some rank gets
// no hook call: finish() then sends zeros for it, so that the collectives still match, and every
// rank throws the same error naming what was missed (PyTorch: find_unused_parameters).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/hooks.h"
#include "dist/process_group.h"
#include "tensor/tensor.h"

namespace qkv::dist {

struct ReducerOptions {
  int64_t first_bucket_bytes = int64_t{1} << 20;  // PyTorch's first bucket: 1 MiB
  int64_t bucket_bytes = int64_t{25} << 20;       // then bucket_cap_mb = 25
  // Add the ranks' gradients in rank order (ProcessGroup::all_reduce_sum_fixed_order), the same
  // order on every library and every number of ranks, instead of the library's all-reduce.
  bool fixed_order = false;
};

class Reducer {
 public:
  // The parameters to reduce, in registration order (module.named_parameters()).
  Reducer(std::vector<std::pair<std::string, Tensor>> params, ProcessGroup& group, ReducerOptions options = {});
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Every bucket to zero and every parameter's .grad() a view into its bucket: the start of a step.
  // (optimizer.zero_grad(), which drops the gradients, works too, at the price of a copy of each
  // new gradient into its bucket.)
  void zero_grad();
  // This rank has no data this step (fewer rows than ranks in the last batch): it sends zeros.
  void contribute_nothing();
  // Waits for every bucket's reduction (starting those not started yet, in order), so that every
  // .grad() holds the sum over ranks. Throws the same error on every rank if some rank's backward
  // did not reach a parameter.
  void finish();

  // Within its scope, backward only accumulates into the buckets; covers forward and backward.
  class NoSync {
   public:
    explicit NoSync(Reducer& r) : reducer_(&r), previous_(r.syncing_) { r.syncing_ = false; }
    NoSync(NoSync&& other) noexcept
        : reducer_(std::exchange(other.reducer_, nullptr)), previous_(other.previous_) {}
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    NoSync& operator=(NoSync&&) = delete;
    ~NoSync() {
      if (reducer_) reducer_->syncing_ = previous_;  // nested scopes restore what they found
    }

   private:
    Reducer* reducer_;
    bool previous_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  // The buckets, in the order they are reduced: the names of their parameters and their sizes.
  struct BucketInfo {
    std::vector<std::string> params;
    int64_t floats = 0;
  };
  std::vector<BucketInfo> buckets() const;
  // Seconds finish() spent waiting, summed over the steps since the last reset: the part of the
  // reduction that backward did not hide.
  double exposed_seconds() const { return exposed_seconds_; }
  int64_t finished_steps() const { return finished_steps_; }  // finish() calls since the last reset
  void reset_timing() {
    exposed_seconds_ = 0;
    finished_steps_ = 0;
  }

 private:
  struct Slot {  // one parameter's place
    Tensor param;
    std::string name;
    size_t bucket = 0;
    int64_t offset = 0;  // in floats, within the bucket
    bool ready = false;
  };
  struct Bucket {
    Tensor buffer;                // 1-D, the gradients of its slots (plus, in the last, one count)
    std::vector<size_t> slots;    // indices into slots_
    size_t pending = 0;           // slots not ready yet this step
    std::unique_ptr<Work> work;   // the all-reduce in flight
  };

  void plan_buckets();
  Tensor view_of_slot(const Slot& s) const;
  void point_grad_into_bucket(Slot& s);
  void on_gradient_ready(size_t slot);
  void start_ready_buckets();
  void start(Bucket& b);
  void reset_step();

  ProcessGroup& group_;
  ReducerOptions options_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  std::vector<autograd::HookHandle> hooks_;
  size_t next_bucket_ = 0;  // the next bucket to start: they start in order
  bool syncing_ = true;
  float* unused_count_ = nullptr;  // the last bucket's extra float: parameters some rank missed
  double exposed_seconds_ = 0;
  int64_t finished_steps_ = 0;
};

// The plain reduction beside the reducer: after backward, each parameter's gradient summed over the
// ranks, one collective per parameter in registration order, nothing overlapped. A parameter
// without a gradient sends zeros and gets a zero gradient.
void all_reduce_gradients(const std::vector<Tensor>& params, ProcessGroup& group, bool fixed_order = false);

// The sum of `local` over the ranks: a step's global token count, for the loss's share.
int64_t global_count(ProcessGroup& group, int64_t local);

}  // namespace qkv::dist
