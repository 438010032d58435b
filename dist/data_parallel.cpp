#include "dist/data_parallel.h"

#include "dist/same_start.h"
#include "tensor/factories.h"
#include "tensor/reference_mode.h"

namespace qkv::dist {

DataParallel::DataParallel(nn::Module& model, ProcessGroup& group, ReducerOptions options)
    : model_(model), group_(group), fixed_order_(options.fixed_order) {
  broadcast_parameters(model, group);
  if (!reference_mode()) reducer_ = std::make_unique<Reducer>(model.named_parameters(), group, options);
}

void DataParallel::zero_grad() {
  if (reducer_)
    reducer_->zero_grad();
  else
    model_.zero_grad();
}

void DataParallel::sum_gradients(bool has_data) {
  if (reducer_) {
    if (!has_data) reducer_->contribute_nothing();
    reducer_->finish();
    return;
  }
  if (!has_data)
    for (Tensor p : model_.parameters()) p.set_grad(zeros(p.shape()));
  all_reduce_gradients(model_.parameters(), group_, fixed_order_);
}

}  // namespace qkv::dist
