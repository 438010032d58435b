// The module system: registration, dotted names, modes, state dicts, summaries, containers.
#include <doctest/doctest.h>

#include <cmath>

#include "qkv.h"

using namespace qkv;

namespace {

class Block : public nn::Module {
 public:
  Block() {
    fc = register_module("fc", std::make_shared<nn::Linear>(4, 3));
    drop = register_module("drop", std::make_shared<nn::Dropout>(0.5f));
    scale = register_parameter("scale", ones({3}));
    register_buffer("steps", zeros({1}));
    register_buffer("cache", zeros({2}), /*persistent=*/false);
  }
  Tensor forward(const Tensor& x) const { return drop->forward(fc->forward(x)) * scale; }
  std::shared_ptr<nn::Linear> fc;
  std::shared_ptr<nn::Dropout> drop;
  Tensor scale;
};

class Net : public nn::Module {
 public:
  Net() {
    blocks = register_module("blocks", std::make_shared<nn::ModuleList>());
    blocks->push_back(std::make_shared<Block>()).push_back(std::make_shared<Block>());
  }
  std::shared_ptr<nn::ModuleList> blocks;
};

std::vector<std::string> names(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> out;
  for (const auto& [n, t] : named) out.push_back(n);
  return out;
}

}  // namespace

TEST_CASE("named_parameters gives dotted paths in registration order") {
  Net net;
  CHECK(names(net.named_parameters()) ==
        std::vector<std::string>{"blocks.0.scale", "blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.1.scale",
                                 "blocks.1.fc.weight", "blocks.1.fc.bias"});
  CHECK(net.parameters().size() == 6);
  CHECK(net.num_parameters() == 2 * (3 + 12 + 3));
  CHECK(names(net.named_buffers()) ==
        std::vector<std::string>{"blocks.0.steps", "blocks.0.cache", "blocks.1.steps", "blocks.1.cache"});
  for (const Tensor& p : net.parameters()) CHECK(p.requires_grad());
  CHECK(net.blocks->at<Block>(1)->fc->weight.is_same(net.named_parameters()[4].second));
}

TEST_CASE("parameters are named with their dotted paths even when the tree is built top-down") {
  Net net;  // registers its empty ModuleList first, then fills it
  for (const auto& [path, p] : net.named_parameters()) CHECK(p.name() == path);
  CHECK(net.blocks->at<Block>(1)->fc->weight.name() == "blocks.1.fc.weight");
  nn::Linear alone(2, 2);
  CHECK(alone.weight.name() == "weight");
}

TEST_CASE("type names come from the class without its namespace") {
  struct Local : nn::Module {};
  CHECK(Local().type_name() == "Local");
  CHECK(nn::Linear(2, 2).type_name() == "Linear");
  CHECK(nn::T5RelativePositionBias(2).type_name() == "T5RelativePositionBias");
  CHECK_THROWS_WITH_AS(nn::ClippedRelativePositionBias(0, 2),
                       "ClippedRelativePositionBias: num_heads must be positive, got 0", ValueError);
}

TEST_CASE("train and eval propagate to every descendant") {
  Net net;
  net.eval();
  CHECK_FALSE(net.blocks->at<Block>(0)->drop->is_training());
  const Tensor x = randn({2, 4});
  auto b = net.blocks->at<Block>(0);
  CHECK(b->forward(x).to_vector() == b->forward(x).to_vector());  // no dropout in eval
  net.train();
  CHECK(net.blocks->at<Block>(1)->drop->is_training());
}

TEST_CASE("state_dict holds parameters and persistent buffers and load_state_dict copies values") {
  Net a, b;
  const nn::StateDict sa = a.state_dict();
  CHECK(sa.size() == 8);  // 6 parameters + 2 persistent buffers
  CHECK(sa.count("blocks.1.steps") == 1);
  CHECK(sa.count("blocks.1.cache") == 0);
  b.load_state_dict(sa);
  CHECK(b.blocks->at<Block>(0)->fc->weight.to_vector() == a.blocks->at<Block>(0)->fc->weight.to_vector());
  CHECK_FALSE(b.blocks->at<Block>(0)->fc->weight.is_same(a.blocks->at<Block>(0)->fc->weight));
}

TEST_CASE("load_state_dict reports every problem at once and changes nothing") {
  Net net;
  const std::vector<float> before = net.blocks->at<Block>(0)->fc->weight.to_vector();
  nn::StateDict bad = net.state_dict();
  for (auto& [name, t] : bad) t = t.detach().clone() + 1.0f;  // different values, same shapes
  bad.erase("blocks.0.scale");
  bad["blocks.0.fc.bias"] = zeros({5});
  bad["blocks.9.extra"] = zeros({1});
  try {
    net.load_state_dict(bad);
    FAIL("expected an error");
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("missing keys: blocks.0.scale;") != std::string::npos);
    CHECK(msg.find("unexpected keys: blocks.9.extra;") != std::string::npos);
    CHECK(msg.find("blocks.0.fc.bias (expected (3), got (5))") != std::string::npos);
    CHECK(msg.find("nothing was changed") != std::string::npos);
  }
  CHECK(net.blocks->at<Block>(0)->fc->weight.to_vector() == before);
  // Non-strict loading ignores missing and unexpected keys but not shape mismatches.
  bad["blocks.0.fc.bias"] = zeros({3});
  net.load_state_dict(bad, /*strict=*/false);
  CHECK(net.blocks->at<Block>(0)->fc->bias.to_vector() == std::vector<float>{0, 0, 0});
  CHECK(net.blocks->at<Block>(0)->scale.to_vector() == std::vector<float>{1, 1, 1});  // missing: untouched
}

TEST_CASE("zero_grad clears the gradients of the whole tree") {
  Net net;
  auto b = net.blocks->at<Block>(1);
  b->forward(randn({2, 4})).sum().backward();
  CHECK(b->fc->weight.grad().defined());
  net.zero_grad();
  CHECK_FALSE(b->fc->weight.grad().defined());
}

TEST_CASE("summary lists modules with parameter counts") {
  Net net;
  const std::string s = net.summary();
  CHECK(s.find("Net()  36 parameters") == 0);
  CHECK(s.find("    fc: Linear(in_features=4, out_features=3, bias=true)  15 parameters") != std::string::npos);
  CHECK(s.find("drop: Dropout(p=0.500000)") != std::string::npos);
}

TEST_CASE("registration rejects duplicate and dotted names") {
  struct Bad : nn::Module {
    Bad() {
      register_parameter("w", ones({1}));
      CHECK_THROWS_AS(register_parameter("w", ones({1})), ValueError);
      CHECK_THROWS_AS(register_buffer("a.b", ones({1})), ValueError);
    }
  };
  Bad bad;
  CHECK(bad.parameters().size() == 1);
}

TEST_CASE("Linear follows PyTorch's layout and default initialization bounds") {
  manual_seed(0);
  nn::Linear fc(256, 8);
  CHECK(fc.weight.shape() == Shape{8, 256});
  CHECK(fc.bias.shape() == Shape{8});
  const float bound = 1.0f / std::sqrt(256.0f);  // kaiming_uniform(a=√5) on fan_in 256
  for (float w : fc.weight.to_vector()) CHECK(std::fabs(w) <= bound);
  CHECK(fc.weight.abs().max().item() > 0.9f * bound);  // and it uses the whole range
  const Tensor x = randn({2, 5, 256});
  const Tensor y = fc.forward(x);
  CHECK(y.shape() == Shape{2, 5, 8});
  CHECK(y.at({1, 2, 3}) == doctest::Approx((x.select(0, 1).select(0, 2) * fc.weight.select(0, 3)).sum().item() +
                                           fc.bias.at({3})).epsilon(1e-4));
  CHECK_THROWS_WITH_AS(fc.forward(randn({2, 7})), doctest::Contains("does not fit weight of shape (8,256)"), ShapeError);
  nn::Linear nobias(3, 2, false);
  CHECK(nobias.parameters().size() == 1);
}

TEST_CASE("a layer too large for memory is a qkv Error naming the layer and the shape and bytes") {
  // Before, the message began "empty:", the name of no layer and no op of the user's.
  CHECK_THROWS_WITH_AS(nn::Linear(1 << 20, 1 << 20),
                       "Linear: cannot allocate a tensor of shape (1048576,1048576): 4398046511104 bytes", Error);
  CHECK_THROWS_WITH_AS(nn::Embedding(int64_t{1} << 40, 2),
                       "Embedding: cannot allocate a tensor of shape (1099511627776,2): 8796093022208 bytes", Error);
  CHECK_THROWS_WITH_AS(nn::Linear(int64_t{1} << 40, int64_t{1} << 40),
                       "Linear: a tensor of shape (1099511627776,1099511627776) is too large to address with 64-bit "
                       "strides",
                       ShapeError);
  CHECK_THROWS_WITH_AS(nn::GRUCell(1 << 20, 1 << 20),
                       "GRUCell: cannot allocate a tensor of shape (3145728,1048576): 13194139533312 bytes", Error);
  // 3 · 2^62 rows would overflow int64 (undefined behaviour) before any allocation was asked.
  CHECK_THROWS_WITH_AS(nn::GRU(4, int64_t{1} << 62),
                       "GRU: hidden_size 4611686018427387904 is too large: its three gates' 3 * hidden_size rows "
                       "overflow 64 bits",
                       ValueError);
}

TEST_CASE("Dropout zeroes about p of the elements and rescales the rest") {
  nn::Dropout drop(0.25f);
  const Tensor y = drop.forward(ones({10000}));
  int zeros_seen = 0, others = 0;
  for (float v : y.to_vector()) {
    if (v == 0.0f) ++zeros_seen;
    else if (v != 1.0f / 0.75f) ++others;
  }
  CHECK(others == 0);
  CHECK(zeros_seen > 2300);
  CHECK(zeros_seen < 2700);
  drop.eval();
  CHECK(drop.forward(ones({5})).to_vector() == std::vector<float>(5, 1.0f));
  CHECK_THROWS_AS(nn::Dropout(1.0f), ValueError);
}

TEST_CASE("LayerNorm normalizes the last dim") {
  nn::LayerNorm ln(4);
  const Tensor y = ln.forward(tensor({{1, 2, 3, 4}, {-1, -1, 1, 1}}));
  // Row 1: mean 2.5, biased var 1.25: (x - 2.5)/sqrt(1.25 + 1e-5)
  const float s = 1.0f / std::sqrt(1.25f + 1e-5f);
  CHECK(y.at({0, 0}) == doctest::Approx(-1.5f * s));
  CHECK(y.at({0, 3}) == doctest::Approx(1.5f * s));
  CHECK(y.at({1, 2}) == doctest::Approx(1.0f / std::sqrt(1.0f + 1e-5f)));
  CHECK_THROWS_AS(ln.forward(zeros({2, 3})), ShapeError);
}

TEST_CASE("Sequential chains modules") {
  auto seq = std::make_shared<nn::Sequential>();
  seq->push_back(std::make_shared<nn::Linear>(3, 5)).push_back(std::make_shared<nn::ReLU>())
      .push_back(std::make_shared<nn::Linear>(5, 2));
  CHECK(seq->forward(randn({4, 3})).shape() == Shape{4, 2});
  CHECK(names(seq->named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
}
