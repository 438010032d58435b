// A model trained on the ranks of a process group: what a training loop holds, as PyTorch's
// DistributedDataParallel wraps a module. Construction gives every rank rank 0's weights
// (dist/same_start.h); each step is
//
//   dp.zero_grad();                               // before forward
//   (loss * my_share_of_the_batch).backward();    // or nothing, on a rank without rows
//   dp.sum_gradients(/*has_data=*/...);           // every .grad() is now the sum over the ranks
//   clip, optimizer.step()
//
// The fast path sums with the bucketed Reducer, which starts each bucket's all-reduce during
// backward (dist/reducer.h); the reference mode (qkv::set_reference_mode) sums the plain way,
// all_reduce_gradients after backward. Both give the same sums (tests/dist/).
#pragma once

#include <memory>

#include "dist/process_group.h"
#include "dist/reducer.h"
#include "nn/module.h"

namespace qkv::dist {

class DataParallel {
 public:
  DataParallel(nn::Module& model, ProcessGroup& group, ReducerOptions options = {});
  void zero_grad();
  // has_data false: this rank had no rows this step and ran no backward; it sends zeros.
  void sum_gradients(bool has_data = true);
  ProcessGroup& group() { return group_; }
  const Reducer* reducer() const { return reducer_.get(); }  // null in the reference mode

 private:
  nn::Module& model_;
  ProcessGroup& group_;
  bool fixed_order_;
  std::unique_ptr<Reducer> reducer_;
};

}  // namespace qkv::dist
