// nn::Embedding: lookup, shapes, PyTorch's initialization, padding_idx and bad ids.
#include <doctest/doctest.h>

#include <cmath>

#include "nn/embedding.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "thread_testing.h"

using namespace qkv;
using namespace qkv::testing;
using V = std::vector<float>;

namespace {

V row(const Tensor& t, int64_t i) { return t.select(0, i).to_vector(); }

}  // namespace

TEST_CASE("Embedding maps ids of any shape to rows of its weight") {
  nn::Embedding emb(5, 3);
  CHECK(emb.weight.shape() == Shape{5, 3});
  const IndexTensor ids({4, 0, 4, 2, 1, 3}, {2, 3});
  const Tensor out = emb.forward(ids);
  CHECK(out.shape() == Shape{2, 3, 3});
  CHECK(out.select(0, 0).select(0, 0).to_vector() == row(emb.weight, 4));
  CHECK(out.select(0, 1).select(0, 2).to_vector() == row(emb.weight, 3));
  CHECK(emb.forward(IndexTensor{2}).shape() == Shape{1, 3});
  CHECK(emb.forward(IndexTensor({1}, {})).shape() == Shape{3});  // a 0-d id gives one vector
}

TEST_CASE("Embedding initializes its weight from N(0 1) like PyTorch") {
  manual_seed(3);
  nn::Embedding emb(400, 50);
  const Tensor w = emb.weight;
  CHECK(std::fabs(w.mean().item()) < 0.02f);            // 20000 draws: std of the mean is 0.007
  CHECK(w.var().item() == doctest::Approx(1.0f).epsilon(0.05));
}

TEST_CASE("Embedding gradient adds up rows used several times") {
  nn::Embedding emb(4, 2);
  const Tensor out = emb.forward(IndexTensor{1, 3, 1});
  (out * tensor({{1, 2}, {3, 4}, {5, 6}})).sum().backward();
  CHECK(emb.weight.grad().to_vector() == V{0, 0, 6, 8, 0, 0, 3, 4});
}

TEST_CASE("Embedding padding row starts at zero and receives no gradient") {
  nn::Embedding emb(6, 4, /*padding_idx=*/2);
  CHECK(row(emb.weight, 2) == V(4, 0.0f));
  CHECK(row(emb.weight, 1) != V(4, 0.0f));
  const IndexTensor ids({2, 5, 2, 0, 2, 5}, {2, 3});
  emb.forward(ids).pow(2.0f).sum().backward();  // d/dw Σ w² = 2w for every use
  const Tensor g = emb.weight.grad();
  CHECK(row(g, 2) == V(4, 0.0f));
  CHECK(row(g, 5) == (emb.weight.select(0, 5) * 4.0f).to_vector());  // used twice
  CHECK(row(g, 0) == (emb.weight.select(0, 0) * 2.0f).to_vector());
  CHECK(row(g, 1) == V(4, 0.0f));  // not used
  // A padding row loaded with values is looked up as it is, but still receives no gradient.
  nn::Embedding last(3, 2, /*padding_idx=*/-1);
  CHECK(*last.padding_idx == 2);
  last.load_state_dict({{"weight", tensor({{1, 2}, {3, 4}, {5, 6}})}});
  const Tensor out = last.forward(IndexTensor{2, 0});
  CHECK(out.to_vector() == V{5, 6, 1, 2});
  out.sum().backward();
  CHECK(last.weight.grad().to_vector() == V{1, 1, 0, 0, 0, 0});
}

TEST_CASE("Embedding names the bad id and the vocabulary size") {
  nn::Embedding emb(10, 3);
  CHECK_THROWS_WITH_AS(emb.forward(IndexTensor{3, 10}),
                       "embedding: id 10 is out of range for a vocabulary of 10 (ids must be in [0, 10))", IndexError);
  CHECK_THROWS_WITH_AS(emb.forward(IndexTensor{-1}),
                       "embedding: id -1 is out of range for a vocabulary of 10 (ids must be in [0, 10))", IndexError);
  CHECK_THROWS_AS(nn::Embedding(10, 3, 10), IndexError);
  CHECK_THROWS_AS(nn::Embedding(0, 3), ValueError);
}

TEST_CASE("Embedding gradient is bitwise identical with 1 and 2 threads") {
  auto once = [] {
    manual_seed(8);
    nn::Embedding emb(50, 77, 0);
    const IndexTensor ids = randint(0, 50, {40, 30});
    Generator g(1);
    (emb.forward(ids) * randn({40, 30, 77}, false, &g)).sum().backward();
    return emb.weight.grad().to_vector();
  };
  check_bitwise_identical_with_1_and_2_threads(once);
}
