// nn::RMSNorm, the worked example of docs/new_layer.md.
#include <doctest/doctest.h>

#include <cmath>

#include "nn/dropout.h"
#include "nn/ffn.h"
#include "nn/rms_norm.h"
#include "tensor/error.h"
#include "tensor/factories.h"

using namespace qkv;

TEST_CASE("RMSNorm divides each row by its root mean square and scales by weight") {
  nn::RMSNorm norm(4, /*eps=*/0.0f);
  CHECK(norm.named_parameters().size() == 1);
  CHECK(norm.named_parameters()[0].first == "weight");
  norm.load_state_dict({{"weight", tensor({1, 1, 2, -1})}});
  const Tensor y = norm.forward(tensor({{1, 2, 3, 4}, {-2, 2, -2, 2}}));
  // Row 0: mean of squares (1 + 4 + 9 + 16)/4 = 7.5. Row 1: mean of squares 4, rms 2.
  const float s = 1.0f / std::sqrt(7.5f);
  const std::vector<float> want = {s, 2 * s, 6 * s, -4 * s, -1, 1, -2, -1};
  const std::vector<float> got = y.to_vector();
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]));
  // The default eps is PyTorch's for float32, and it keeps a zero row finite.
  CHECK(nn::RMSNorm(3).eps == std::numeric_limits<float>::epsilon());
  CHECK(nn::RMSNorm(3).forward(zeros({1, 3})).to_vector() == std::vector<float>{0, 0, 0});
  CHECK_THROWS_AS(norm.forward(zeros({2, 3})), ShapeError);
}

namespace {

// The composite example of docs/new_layer.md: a pre-norm residual feed-forward block.
class PreNormFFN : public nn::Module {
 public:
  PreNormFFN(int64_t d, int64_t hidden, float p) {
    norm = register_module("norm", std::make_shared<nn::RMSNorm>(d));
    ffn = register_module("ffn", std::make_shared<nn::PositionWiseFFN>(d, hidden, d));
    drop = register_module("drop", std::make_shared<nn::Dropout>(p));
  }
  // x: (..., d) → (..., d)
  Tensor forward(const Tensor& x) const { return x + drop->forward(ffn->forward(norm->forward(x))); }

  std::shared_ptr<nn::RMSNorm> norm;
  std::shared_ptr<nn::PositionWiseFFN> ffn;
  std::shared_ptr<nn::Dropout> drop;
};

}  // namespace

TEST_CASE("a block built from RMSNorm as in docs/new_layer.md has dotted names and follows eval") {
  PreNormFFN block(8, 32, 0.1f);
  std::vector<std::string> names;
  for (const auto& [name, p] : block.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"norm.weight", "ffn.dense1.weight", "ffn.dense1.bias", "ffn.dense2.weight",
                                          "ffn.dense2.bias"});
  CHECK(block.num_parameters() == 8 + (8 * 32 + 32) + (32 * 8 + 8));
  CHECK(block.summary() ==
        "PreNormFFN()  560 parameters\n"
        "  norm: RMSNorm(8, eps=1.19209e-07)  8 parameters\n"
        "  ffn: PositionWiseFFN(relu)  552 parameters\n"
        "    dense1: Linear(in_features=8, out_features=32, bias=true)  288 parameters\n"
        "    dense2: Linear(in_features=32, out_features=8, bias=true)  264 parameters\n"
        "  drop: Dropout(p=0.100000)\n");
  block.eval();
  CHECK_FALSE(block.drop->is_training());
  const Tensor x = randn({2, 5, 8});
  CHECK(block.forward(x).to_vector() == block.forward(x).to_vector());
  PreNormFFN copy(8, 32, 0.1f);
  copy.load_state_dict(block.state_dict());
  copy.eval();
  CHECK(copy.forward(x).to_vector() == block.forward(x).to_vector());
}
