// The gradient reducer: the sum over ranks, as the plain per-parameter reduction and as one
// process on the whole batch computes it; buckets, no_sync, a rank with no data, unused parameters.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "dist/reducer.h"
#include "dist/same_start.h"
#include "dist/sampler.h"
#include "nn/linear.h"
#include "qkv.h"
#include "tests/dist/dist_testing.h"

using namespace qkv;
using dist_testing::group;
using dist_testing::same_on_every_rank;

namespace {

// A two-layer network and a third layer that only the `use_extra` forward reaches.
struct Net : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2, extra;
  Net() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(6, 40));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(40, 3));
    extra = register_module("extra", std::make_shared<nn::Linear>(3, 3));
  }
  Tensor forward(const Tensor& x, bool use_extra = true) const {
    Tensor y = fc2->forward(fc1->forward(x).tanh());
    return use_extra ? extra->forward(y) : y;
  }
};

// A global batch of 7 rows, each "sentence" with 1 to 3 tokens: inputs (7, 6), targets (7, 3), counts.
struct Batch {
  Tensor x, t;
  std::vector<int64_t> tokens;
};

Batch global_batch(int step) {
  Generator g(100 + static_cast<uint64_t>(step));
  Batch b{Tensor::empty({7, 6}), Tensor::empty({7, 3}), {}};
  g.fill_normal(b.x.data(), b.x.numel(), 0, 1);
  g.fill_normal(b.t.data(), b.t.numel(), 0, 1);
  for (int i = 0; i < 7; ++i) b.tokens.push_back(1 + (i * 5 + step) % 3);
  return b;
}

// Σ_rows tokens·error over the rows given, divided by `total_tokens`: this rank's share of the mean.
Tensor share_of_loss(const Net& net, const Batch& b, const std::vector<int64_t>& rows, int64_t total_tokens,
                     bool use_extra = true) {
  Tensor loss = zeros({});
  for (int64_t r : rows) {
    const Tensor err = (net.forward(b.x.slice(0, r, r + 1), use_extra) - b.t.slice(0, r, r + 1)).pow(2.0f).sum();
    loss = loss + err * static_cast<float>(b.tokens[static_cast<size_t>(r)]);
  }
  return loss / static_cast<float>(total_tokens);
}

std::shared_ptr<Net> same_net() {
  manual_seed(7 + static_cast<uint64_t>(group().rank()));  // different on purpose: the broadcast fixes it
  auto net = std::make_shared<Net>();
  dist::broadcast_parameters(*net, group());
  return net;
}

std::vector<float> all_grads(const Net& net) {
  std::vector<float> out;
  for (const Tensor& p : net.parameters()) {
    const std::vector<float> g = p.grad().to_vector();
    out.insert(out.end(), g.begin(), g.end());
  }
  return out;
}

// A copy of the net with the same weights, whose parameters no reducer hooks.
std::shared_ptr<Net> copy_of(const Net& net) {
  auto copy = std::make_shared<Net>();
  copy->load_state_dict(net.state_dict());
  return copy;
}

// The gradient one process computes on the whole batch (on a copy: the reducer hears every
// backward through its parameters).
std::vector<float> whole_batch_grads(const Net& net, const Batch& b) {
  const auto copy = copy_of(net);
  std::vector<int64_t> rows(7);
  for (int i = 0; i < 7; ++i) rows[static_cast<size_t>(i)] = i;
  int64_t total = 0;
  for (int64_t t : b.tokens) total += t;
  share_of_loss(*copy, b, rows, total).backward();
  return all_grads(*copy);
}

}  // namespace

TEST_CASE("broadcast_parameters gives every rank rank 0's weights and check_same_state names a rank that differs") {
  auto net = same_net();
  const std::vector<float> w = net->fc1->weight.to_vector();
  CHECK(same_on_every_rank(w));
  CHECK_NOTHROW(dist::check_same_state(*net, group(), "in the test"));
  if (group().size() > 1) {
    if (group().rank() == 1) {
      NoGradGuard no_grad;
      net->fc2->bias.data()[0] += 1e-6f;
    }
    CHECK_THROWS_WITH_AS(dist::check_same_state(*net, group(), "in the test"),
                         doctest::Contains("the ranks' models differ in the test"), Error);
  }
}

TEST_CASE("the reducer's gradients are the whole batch's, and bitwise the plain reduction's") {
  for (const bool fixed_order : {false, true}) {
    auto net = same_net();
    // Tiny buckets (fc1's bias and weight each close one), so that several collectives overlap.
    dist::Reducer reducer(net->named_parameters(), group(),
                          {.first_bucket_bytes = 100, .bucket_bytes = 100, .fixed_order = fixed_order});
    CHECK(reducer.buckets().size() >= 3);
    CHECK(reducer.buckets().front().params.front() == "extra.bias");  // reverse registration order
    for (int step = 0; step < 3; ++step) {
      const Batch b = global_batch(step);
      const std::vector<int64_t> rows = dist::shard(7, group().rank(), group().size());
      int64_t mine = 0;
      for (int64_t r : rows) mine += b.tokens[static_cast<size_t>(r)];
      const int64_t total = dist::global_count(group(), mine);
      reducer.zero_grad();
      share_of_loss(*net, b, rows, total).backward();
      reducer.finish();
      const std::vector<float> reduced = all_grads(*net);
      CHECK(same_on_every_rank(reduced));

      const auto plain_net = copy_of(*net);
      share_of_loss(*plain_net, b, rows, total).backward();
      dist::all_reduce_gradients(plain_net->parameters(), group(), fixed_order);
      const std::vector<float> plain = all_grads(*plain_net);
      if (fixed_order || group().size() <= 2) CHECK(reduced == plain);  // 2 floats add the same either way round

      const std::vector<float> whole = whole_batch_grads(*net, b);
      REQUIRE(whole.size() == reduced.size());
      for (size_t i = 0; i < whole.size(); ++i) CHECK(reduced[i] == doctest::Approx(whole[i]).epsilon(1e-5));
    }
  }
}

TEST_CASE("no_sync accumulates two micro-batches, and the next backward reduces their sum") {
  auto net = same_net();
  dist::Reducer reducer(net->named_parameters(), group(), {.first_bucket_bytes = 300, .bucket_bytes = 300});
  const Batch b = global_batch(5);
  const std::vector<int64_t> rows = dist::shard(7, group().rank(), group().size());
  std::vector<int64_t> first, second;  // the rank's rows, split in two micro-batches
  for (size_t i = 0; i < rows.size(); ++i) (i % 2 ? second : first).push_back(rows[i]);
  int64_t total = 0;
  for (int64_t t : b.tokens) total += t;
  reducer.zero_grad();
  {
    const auto guard = reducer.no_sync();
    share_of_loss(*net, b, first, total).backward();
  }
  share_of_loss(*net, b, second, total).backward();
  reducer.finish();
  const std::vector<float> reduced = all_grads(*net);
  const std::vector<float> whole = whole_batch_grads(*net, b);
  for (size_t i = 0; i < whole.size(); ++i) CHECK(reduced[i] == doctest::Approx(whole[i]).epsilon(1e-5));
  // Two synced backward passes without finish() between them are refused.
  reducer.zero_grad();
  share_of_loss(*net, b, rows, total).backward();
  CHECK_THROWS_WITH_AS(share_of_loss(*net, b, rows, total).backward(), doctest::Contains("completed twice"),
                       StateError);
  reducer.finish();
}

TEST_CASE("a rank without rows contributes zeros and the sum is still the whole batch's") {
  auto net = same_net();
  dist::Reducer reducer(net->named_parameters(), group());
  const Batch b = global_batch(2);
  // Only the last rank has data: every other rank sends nothing.
  const bool has_rows = group().rank() == group().size() - 1;
  std::vector<int64_t> rows;
  if (has_rows)
    for (int i = 0; i < 7; ++i) rows.push_back(i);
  int64_t total = 0;
  for (int64_t t : b.tokens) total += t;
  reducer.zero_grad();
  if (has_rows)
    share_of_loss(*net, b, rows, total).backward();
  else
    reducer.contribute_nothing();
  reducer.finish();
  const std::vector<float> reduced = all_grads(*net);
  const std::vector<float> whole = whole_batch_grads(*net, b);
  for (size_t i = 0; i < whole.size(); ++i) CHECK(reduced[i] == doctest::Approx(whole[i]).epsilon(1e-5));
}

TEST_CASE("a parameter one rank never uses is an error on every rank, not a hang") {
  auto net = same_net();
  dist::Reducer reducer(net->named_parameters(), group(), {.first_bucket_bytes = 100, .bucket_bytes = 100});
  const Batch b = global_batch(1);
  const std::vector<int64_t> rows = dist::shard(7, group().rank(), group().size());
  const bool skip_extra = group().rank() == group().size() - 1;  // the last rank leaves `extra` out
  reducer.zero_grad();
  share_of_loss(*net, b, rows, 28, !skip_extra).backward();
  CHECK_THROWS_WITH_AS(reducer.finish(), doctest::Contains("backward reached no gradient for 2 parameter(s)"), Error);
  // The reducer can go on: the next step, with every parameter used, reduces.
  reducer.zero_grad();
  share_of_loss(*net, b, rows, 28).backward();
  CHECK_NOTHROW(reducer.finish());
  // The plain reduction refuses the same.
  const auto plain_net = copy_of(*net);
  share_of_loss(*plain_net, b, rows, 28, !skip_extra).backward();
  CHECK_THROWS_WITH_AS(dist::all_reduce_gradients(plain_net->parameters(), group()),
                       doctest::Contains("no gradient for 2 parameter(s)"), Error);
}
