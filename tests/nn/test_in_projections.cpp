// Attention's input projections (nn/functional/attention.h, in_projections): self-attention's three
// run as one product of the stacked weights, its composed reference as three linear calls, with the
// same values and gradients to float32 rounding; inputs that differ take the three calls.
#include <doctest/doctest.h>

#include "nn/attention_testing.h"
#include "nn/functional/attention.h"
#include "nn/functional/basic.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"

using qkv::Tensor;
namespace F = qkv::nn::functional;

namespace {

struct Weights {
  Tensor wq = qkv::randn({6, 5}, true), bq = qkv::randn({6}, true), wk = qkv::randn({6, 5}, true),
         bk = qkv::randn({6}, true), wv = qkv::randn({6, 5}, true), bv = qkv::randn({6}, true);
  std::vector<Tensor> all() const { return {wq, bq, wk, bk, wv, bv}; }
};

// The projections of x (self-attention) and the gradients of a loss on them: x's, then each weight's.
std::vector<Tensor> run(const Tensor& x, const Weights& w) {
  for (Tensor p : w.all()) p.zero_grad();
  const F::Projections p = F::in_projections(x, x, x, w.wq, w.bq, w.wk, w.bk, w.wv, w.bv);
  ((p.q * p.q).sum() + (p.k * p.v).sum()).backward();
  std::vector<Tensor> out = {p.q.detach(), p.k.detach(), p.v.detach(), x.grad()};
  for (const Tensor& t : w.all()) out.push_back(t.grad());
  return out;
}

}  // namespace

TEST_CASE("in_projections packs self-attention into one product and agrees with three linear calls") {
  qkv::manual_seed(5);
  const Weights w;
  Tensor x = qkv::randn({2, 4, 5}, true);
  const F::Projections packed = F::in_projections(x, x, x, w.wq, w.bq, w.wk, w.bk, w.wv, w.bv);
  // One product: the three are column blocks of one (B, T, 3D) tensor.
  CHECK(packed.q.storage() == packed.k.storage());
  CHECK(packed.k.storage() == packed.v.storage());
  x.zero_grad();
  const std::vector<Tensor> fast = run(x, w);
  x.zero_grad();
  std::vector<Tensor> plain;
  {
    const qkv::ReferenceModeGuard reference(true);
    const F::Projections three = F::in_projections(x, x, x, w.wq, w.bq, w.wk, w.bk, w.wv, w.bv);
    CHECK(three.q.storage() != three.k.storage());  // the composed reference: three products
    plain = run(x, w);
  }
  REQUIRE(fast.size() == plain.size());
  for (size_t i = 0; i < fast.size(); ++i) {
    CAPTURE(i);
    qkv::testing::check_close(fast[i], plain[i], 1e-5f);
  }
  CHECK(fast[0].to_vector() == F::linear(x, w.wq, w.bq).to_vector());  // the same bits as one linear call
  // Cross-attention (another tensor for the keys and values) takes the three calls in both modes.
  const Tensor source = qkv::randn({2, 3, 5});
  const F::Projections cross = F::in_projections(x, source, source, w.wq, w.bq, w.wk, w.bk, w.wv, w.bv);
  CHECK(cross.k.shape() == qkv::Shape{2, 3, 6});
  CHECK(cross.k.storage() != cross.v.storage());
  CHECK(cross.v.to_vector() == F::linear(source, w.wv, w.bv).to_vector());
}
