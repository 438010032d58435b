#include "dist/reducer.h"

#include <chrono>
#include <unordered_set>

#include "autograd/grad_mode.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/shape.h"

namespace qkv::dist {
namespace {

constexpr int64_t kAlignFloats = 16;  // each gradient starts on a 64-byte boundary, as tensors do

int64_t aligned(int64_t floats) { return (floats + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

std::string joined(const std::vector<std::string>& names, size_t at_most) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < at_most; ++i) s += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > at_most) s += " and " + std::to_string(names.size() - at_most) + " more";
  return s;
}

[[noreturn]] void throw_missed(double total, const std::vector<std::string>& mine) {
  throw Error("dist: backward reached no gradient for " + std::to_string(static_cast<int64_t>(total)) +
              " parameter(s), counted over all ranks (" +
              (mine.empty() ? std::string("none on this rank") : "on this rank: " + joined(mine, 5)) +
              "). Every rank's loss must depend on every parameter that trains: leave unused parameters out "
              "of the reducer, or use them (a rank with no data calls contribute_nothing())");
}

}  // namespace

Reducer::Reducer(std::vector<std::pair<std::string, Tensor>> params, ProcessGroup& group, ReducerOptions options)
    : group_(group), options_(options) {
  if (options_.first_bucket_bytes < 1 || options_.bucket_bytes < 1)
    throw ValueError("dist::Reducer: bucket sizes must be at least 1 byte, got " +
                     std::to_string(options_.first_bucket_bytes) + " and " + std::to_string(options_.bucket_bytes));
  std::unordered_set<const TensorImpl*> seen;
  for (auto& [name, p] : params) {
    if (!p.defined() || !p.requires_grad()) continue;  // frozen: nothing to reduce
    if (!p.is_leaf()) throw StateError("dist::Reducer: '" + name + "' is not a leaf tensor (a parameter)");
    if (!seen.insert(p.impl()).second) throw ValueError("dist::Reducer: '" + name + "' is listed twice");
    slots_.push_back(Slot{.param = p, .name = name});
  }
  if (slots_.empty()) throw ValueError("dist::Reducer: no parameter requires grad");
  plan_buckets();
  for (size_t i = 0; i < slots_.size(); ++i)
    hooks_.push_back(autograd::register_post_accumulate_grad_hook(slots_[i].param,
                                                                  [this, i](const Tensor&) { on_gradient_ready(i); }));
  zero_grad();
}

// Reverse registration order; a bucket closes once it holds its cap (the first a small one).
void Reducer::plan_buckets() {
  int64_t floats = 0;
  std::vector<size_t> current;
  std::vector<std::pair<std::vector<size_t>, int64_t>> plan;
  for (size_t k = slots_.size(); k-- > 0;) {
    Slot& s = slots_[k];
    s.bucket = plan.size();
    s.offset = floats;
    floats += aligned(s.param.numel());
    current.push_back(k);
    const int64_t cap = plan.empty() ? options_.first_bucket_bytes : options_.bucket_bytes;
    if (floats * static_cast<int64_t>(sizeof(float)) >= cap || k == 0) {
      plan.emplace_back(std::move(current), floats);
      current.clear();
      floats = 0;
    }
  }
  for (size_t b = 0; b < plan.size(); ++b) {
    const bool last = b + 1 == plan.size();
    Bucket bucket;
    bucket.slots = std::move(plan[b].first);
    bucket.buffer = Tensor::empty({plan[b].second + (last ? 1 : 0)});  // the last holds the missed count
    bucket.pending = bucket.slots.size();
    buckets_.push_back(std::move(bucket));
  }
  Tensor& last = buckets_.back().buffer;
  unused_count_ = last.data() + last.numel() - 1;
}

std::vector<Reducer::BucketInfo> Reducer::buckets() const {
  std::vector<BucketInfo> out;
  for (const Bucket& b : buckets_) {
    BucketInfo info;
    for (size_t k : b.slots) info.params.push_back(slots_[k].name);
    info.floats = b.buffer.numel();
    out.push_back(std::move(info));
  }
  return out;
}

Tensor Reducer::view_of_slot(const Slot& s) const {
  const Tensor& buffer = buckets_[s.bucket].buffer;
  return Tensor::view_of(buffer.storage(), s.param.shape(), contiguous_strides(s.param.shape()), s.offset);
}

// The parameter's .grad() becomes its view in the bucket, keeping the values it has (a gradient
// that backward made anew, after a zero_grad that set gradients to none, is copied in).
void Reducer::point_grad_into_bucket(Slot& s) {
  const Tensor g = s.param.grad();
  const Tensor& buffer = buckets_[s.bucket].buffer;
  if (g.defined() && g.storage() == buffer.storage() && g.offset() == s.offset) return;
  NoGradGuard no_grad;
  Tensor view = view_of_slot(s);
  if (g.defined())
    view.copy_(g);
  else
    view.zero_();
  s.param.set_grad(view);
}

// A step interrupted by an exception (a backward that threw, a hook's error) may have left
// reductions in flight: they are waited for before their buffers are written, and the step's
// state starts afresh.
void Reducer::zero_grad() {
  NoGradGuard no_grad;
  for (Bucket& b : buckets_)
    if (b.work) b.work->wait();
  reset_step();
  for (Bucket& b : buckets_) b.buffer.zero_();
  for (Slot& s : slots_) s.param.set_grad(view_of_slot(s));
}

void Reducer::on_gradient_ready(size_t i) {
  Slot& s = slots_[i];
  point_grad_into_bucket(s);
  if (!syncing_) return;  // no_sync(): accumulate only
  if (s.ready)
    throw StateError("dist::Reducer: the gradient of '" + s.name +
                     "' was completed twice before finish(): accumulate over several backward passes inside "
                     "no_sync(), and call finish() after each backward outside it");
  s.ready = true;
  --buckets_[s.bucket].pending;
  start_ready_buckets();
}

void Reducer::start_ready_buckets() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) start(buckets_[next_bucket_++]);
  // Let the library move the started ones along: without a call into MPI, a nonblocking collective
  // may progress only when it is waited for.
  for (size_t b = 0; b < next_bucket_; ++b) buckets_[b].work->test();
}

void Reducer::start(Bucket& b) {
  std::span<float> data(b.buffer.data(), static_cast<size_t>(b.buffer.numel()));
  b.work = options_.fixed_order ? group_.all_reduce_sum_fixed_order_async(data) : group_.all_reduce_sum_async(data);
}

void Reducer::contribute_nothing() {
  zero_grad();
  for (Slot& s : slots_) s.ready = true;
  for (Bucket& b : buckets_) b.pending = 0;
  start_ready_buckets();
}

void Reducer::finish() {
  if (!syncing_) throw StateError("dist::Reducer: finish() inside no_sync(): the reduction comes after it");
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> missed;
  for (Slot& s : slots_) {
    if (s.ready) continue;
    missed.push_back(s.name);
    point_grad_into_bucket(s);
    s.ready = true;
    --buckets_[s.bucket].pending;
  }
  if (next_bucket_ < buckets_.size()) *unused_count_ = static_cast<float>(missed.size());  // else 0, set at start
  start_ready_buckets();
  for (Bucket& b : buckets_) b.work->wait();
  const double total_missed = *unused_count_;
  exposed_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++finished_steps_;
  reset_step();
  if (total_missed > 0) throw_missed(total_missed, missed);
}

void Reducer::reset_step() {
  for (Slot& s : slots_) s.ready = false;
  for (Bucket& b : buckets_) {
    b.pending = b.slots.size();
    b.work.reset();
  }
  next_bucket_ = 0;
  *unused_count_ = 0;
}

void all_reduce_gradients(const std::vector<Tensor>& params, ProcessGroup& group, bool fixed_order) {
  NoGradGuard no_grad;
  std::vector<std::string> missed;
  for (const Tensor& p : params) {
    if (!p.requires_grad()) continue;
    Tensor g = p.grad();
    if (!g.defined()) {
      missed.push_back(p.name());
      Tensor(p).set_grad(zeros(p.shape()));
      g = p.grad();
    } else if (!g.is_contiguous()) {
      Tensor(p).set_grad(g.contiguous());
      g = p.grad();
    }
    std::span<float> data(g.data(), static_cast<size_t>(g.numel()));
    if (fixed_order)
      group.all_reduce_sum_fixed_order(data);
    else
      group.all_reduce_sum(data);
  }
  int64_t total[1] = {static_cast<int64_t>(missed.size())};
  group.all_reduce_sum(std::span<int64_t>(total));
  if (total[0] > 0) throw_missed(static_cast<double>(total[0]), missed);
}

int64_t global_count(ProcessGroup& group, int64_t local) {
  int64_t n[1] = {local};
  group.all_reduce_sum(std::span<int64_t>(n));
  return n[0];
}

}  // namespace qkv::dist
