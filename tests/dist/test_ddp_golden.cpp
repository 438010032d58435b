// A golden check against PyTorch's DistributedDataParallel itself: ddp_golden.py ran a two-layer
// network on 2 Gloo processes, each on its rows of a batch with its loss scaled by its share of the
// batch's tokens, and wrote DDP's gradients. The reducer, on whatever ranks this suite runs, each
// taking its stride of the same rows, must give them.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>

#include "dist/reducer.h"
#include "dist/same_start.h"
#include "dist/sampler.h"
#include "io/tensor_npy.h"
#include "nn/linear.h"
#include "qkv.h"
#include "tests/dist/dist_testing.h"

using namespace qkv;
using dist_testing::group;

namespace {

const std::string kDir = std::string(QKV_SOURCE_DIR) + "/tests/dist/fixtures/ddp/";

Tensor fixture(const std::string& name) { return io::load_npy_tensor(kDir + name + ".npy"); }

struct Mlp : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  Mlp() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(6, 8));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 3));
  }
};

}  // namespace

TEST_CASE("the reducer's gradients are PyTorch DDP's on the same rows and token shares") {
  Mlp net;
  {
    NoGradGuard no_grad;
    for (auto& [name, p] : net.named_parameters()) Tensor(p).copy_(fixture(name));
  }
  dist::broadcast_parameters(net, group());
  dist::Reducer reducer(net.named_parameters(), group(), {.first_bucket_bytes = 64, .bucket_bytes = 64});
  const Tensor x = fixture("x"), t = fixture("t");
  const std::vector<float> tokens = fixture("tokens").to_vector();
  float total = 0;
  for (float n : tokens) total += n;
  Tensor loss = zeros({});
  for (int64_t r : dist::shard(7, group().rank(), group().size())) {
    const Tensor out = net.fc2->forward(net.fc1->forward(x.slice(0, r, r + 1)).tanh());
    loss = loss + (out - t.slice(0, r, r + 1)).pow(2.0f).sum() * tokens[static_cast<size_t>(r)];
  }
  reducer.zero_grad();
  (loss / total).backward();
  reducer.finish();
  for (const auto& [name, p] : net.named_parameters()) {
    const std::vector<float> got = p.grad().to_vector(), want = fixture("grad_" + name).to_vector();
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CAPTURE(name);
      CHECK(std::fabs(got[i] - want[i]) <= 1e-6 + 1e-5 * std::fabs(want[i]));
    }
  }
}
