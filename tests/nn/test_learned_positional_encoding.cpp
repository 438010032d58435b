// Learned absolute positional encoding (BERT/GPT): a trained table added to the tokens, its
// initialization, the gradient it receives, and the limit max_len puts on sequences.
#include <doctest/doctest.h>

#include <cmath>

#include "gradcheck_registry.h"
#include "nn/learned_positional_encoding.h"
#include "tensor/error.h"
#include "tensor/factories.h"

using namespace qkv;
using namespace qkv::testing;

TEST_CASE("LearnedPositionalEncoding adds row t of its weight to the token at t") {
  nn::LearnedPositionalEncoding pe(2, 0.5f, 4);
  pe.eval();
  CHECK(pe.num_parameters() == 4 * 2);  // the seeds' cost: max_len·D parameters
  pe.load_state_dict({{"weight", tensor({{1, 2}, {3, 4}, {5, 6}, {7, 8}})}});
  const Tensor Y = pe.forward(tensor({{{0, 0}, {0, 0}, {0, 0}}, {{10, 20}, {30, 40}, {50, 60}}}));
  CHECK(Y.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6, 11, 22, 33, 44, 55, 66});
  pe.train();
  int64_t zeros_seen = 0;
  for (float v : pe.forward(ones({4, 4, 2})).to_vector()) zeros_seen += v == 0.0f;
  CHECK(zeros_seen > 0);  // dropout after the addition, in training only
  CHECK(pe.summary() ==
        "LearnedPositionalEncoding(num_hiddens=2, max_len=4)  8 parameters\n"
        "  dropout: Dropout(p=0.500000)\n");
}

TEST_CASE("LearnedPositionalEncoding gradient reaches the rows of the positions used") {
  // d/dweight[t] of Σ Y = the batch size for t < T, zero for the positions past T.
  nn::LearnedPositionalEncoding pe(3, 0.0f, 5);
  pe.forward(randn({2, 3, 3})).sum().backward();
  CHECK(pe.weight.grad().to_vector() == std::vector<float>{2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0});
}

TEST_CASE("LearnedPositionalEncoding initializes its table from N(0 0.02 squared)") {
  manual_seed(11);
  nn::LearnedPositionalEncoding pe(64, 0.0f, 500);     // 32000 draws: std of the variance estimate is 0.8%
  CHECK(std::fabs(pe.weight.mean().item()) < 0.001f);  // std of the mean is 0.02/√32000 = 1.1e-4
  CHECK(pe.weight.var().item() == doctest::Approx(0.02f * 0.02f).epsilon(0.04));
}

TEST_CASE("LearnedPositionalEncoding rejects a wrong width a sequence past max_len and empty sizes") {
  nn::LearnedPositionalEncoding pe(4, 0.0f, 5);
  CHECK_THROWS_WITH_AS(pe.forward(zeros({1, 3, 6})),
                       "LearnedPositionalEncoding: input of shape (1,3,6) must be (B, T, 4)", ShapeError);
  CHECK_THROWS_WITH_AS(pe.forward(zeros({3, 4})),
                       "LearnedPositionalEncoding: input of shape (3,4) must be (B, T, 4)", ShapeError);
  CHECK_THROWS_WITH_AS(pe.forward(zeros({1, 6, 4})),
                       "LearnedPositionalEncoding: sequence length 6 exceeds max_len 5", ShapeError);
  CHECK_THROWS_WITH_AS(nn::LearnedPositionalEncoding(4, 0.0f, 0),
                       "LearnedPositionalEncoding: num_hiddens and max_len must be positive, got 4 and 0",
                       ValueError);
}

QKV_GRADCHECK_MODULE(
    "LearnedPositionalEncoding", {In::normal({2, 3, 5})},
    [] { return std::make_shared<nn::LearnedPositionalEncoding>(5, 0.0f, 4); },
    [](nn::LearnedPositionalEncoding& m, const Inputs& x) { return m.forward(x[0]); });
