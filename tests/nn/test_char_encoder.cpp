// nn::CharEncoder: shapes, PyTorch's golden values (tests/nn/char_golden.py), a word's encoding
// independent of its batch, padding kept out of the result and the gradient, empty slots of a
// sentence batch, and the errors. Gradient checks: tests/nn/gradcheck_layers.cpp.
#include <doctest/doctest.h>

#include "nn/char_encoder.h"
#include "nn/char_golden_testing.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "thread_testing.h"

using namespace qkv;
using namespace qkv::testing;
using V = std::vector<float>;

namespace {

// Each word of `words` written out as ids padded with 0 to length L: ((N, L), (N)).
std::pair<IndexTensor, IndexTensor> pad_words(const std::vector<std::vector<int64_t>>& words, int64_t L) {
  std::vector<int64_t> ids, lengths;
  for (const auto& w : words) {
    ids.insert(ids.end(), w.begin(), w.end());
    ids.insert(ids.end(), static_cast<size_t>(L) - w.size(), 0);
    lengths.push_back(static_cast<int64_t>(w.size()));
  }
  return {IndexTensor(ids, {static_cast<int64_t>(words.size()), L}), IndexTensor(lengths)};
}

}  // namespace

TEST_CASE("CharEncoder maps the characters of N words to N vectors of its filters") {
  manual_seed(1);
  nn::CharEncoder enc(10, 4, 6);
  const auto [chars, lengths] = pad_words({{1, 2, 3}, {4}, {5, 6, 7, 8, 9}}, 5);
  CHECK(enc.forward(chars, lengths).shape() == Shape{3, 6});
  CHECK(enc.conv->weight.shape() == Shape{6, 4, 3});
  CHECK(enc.conv->padding == 1);
  CHECK(enc.forward(chars, lengths).min().item() >= 0.0f);  // relu
}

TEST_CASE("CharEncoder matches the PyTorch golden values forward and backward") {
  const IndexTensor chars(kCharGoldenChars, {4, 6}), lengths(kCharGoldenLengths);
  for (const CharEncoderGolden& g : kCharEncoderGoldens) {
    CAPTURE(g.kernel);
    CAPTURE(g.nonlinearity);
    nn::CharEncoder enc(
        7, 4, 5, g.kernel,
        g.nonlinearity == "relu" ? nn::CharEncoder::Nonlinearity::ReLU : nn::CharEncoder::Nonlinearity::Tanh);
    int j = 0;
    for (auto& [name, p] : enc.named_parameters()) fill_parameter(p, j++);
    {
      NoGradGuard no_grad;
      enc.embedding->weight.select(0, 0).zero_();  // the padding vector
    }
    const Tensor out = enc.forward(chars, lengths);
    check_close(out, g.output);
    (out * probe(out.shape())).sum().backward();
    check_close(enc.embedding->weight.grad(), g.embedding_grad);
    check_close(enc.conv->weight.grad(), g.conv_weight_grad);
    check_close(enc.conv->bias.grad(), g.conv_bias_grad);
  }
}

TEST_CASE("CharEncoder encodes a word the same whatever the longest word of its batch") {
  manual_seed(4);
  for (int64_t kernel : {3, 5}) {
    nn::CharEncoder enc(12, 5, 8, kernel);
    const auto [short_chars, short_lengths] = pad_words({{3, 1, 4}, {1, 5}}, 3);
    const auto [long_chars, long_lengths] =
        pad_words({{3, 1, 4}, {1, 5}, {9, 2, 6, 5, 3, 5, 8, 9, 7, 9}}, 10);
    const Tensor alone = enc.forward(short_chars, short_lengths);
    const Tensor in_batch = enc.forward(long_chars, long_lengths).slice(0, 0, 2);
    CHECK(alone.to_vector() == in_batch.to_vector());
  }
}

TEST_CASE("CharEncoder gives the padding no gradient") {
  manual_seed(6);
  nn::CharEncoder enc(8, 3, 4, 3, nn::CharEncoder::Nonlinearity::Tanh);
  const auto [chars, lengths] = pad_words({{1, 2}, {3, 4, 5, 6, 7}}, 5);
  enc.forward(chars, lengths).sum().backward();
  const Tensor g = enc.embedding->weight.grad();
  CHECK(g.select(0, 0).to_vector() == V(3, 0.0f));                                  // the padding id's row
  for (int64_t c = 1; c < 8; ++c) CHECK(g.select(0, c).abs().sum().item() > 0.0f);  // every used character
}

TEST_CASE("CharEncoder encodes an empty slot of a sentence batch as zeros without gradient") {
  manual_seed(7);
  nn::CharEncoder enc(9, 4, 5);
  // Two sentences of T = 3 tokens, the second with one token of padding (length 0).
  const IndexTensor chars({1, 2, 0, 3, 0, 0, 4, 5, 6, 7, 8, 0, 2, 1, 0, 0, 0, 0}, {2, 3, 3});
  const IndexTensor lengths({2, 1, 3, 2, 2, 0}, {2, 3});
  const Tensor out = enc.forward(chars, lengths);
  CHECK(out.shape() == Shape{2, 3, 5});
  CHECK(out.select(0, 1).select(0, 2).to_vector() == V(5, 0.0f));
  // The other tokens are encoded as they are alone.
  const auto [words, word_lengths] = pad_words({{1, 2}, {3}, {4, 5, 6}, {7, 8}, {2, 1}}, 3);
  CHECK(out.reshape({6, 5}).slice(0, 0, 5).to_vector() == enc.forward(words, word_lengths).to_vector());
  (out * probe(out.shape())).sum().backward();
  CHECK(enc.conv->bias.grad().abs().sum().item() > 0.0f);
  const Tensor zero = enc.forward(IndexTensor({0, 0, 0, 0}, {2, 2}), IndexTensor{0, 0});
  CHECK(zero.to_vector() == V(10, 0.0f));
}

TEST_CASE("CharEncoder refuses a character past a word's length and lengths past L") {
  nn::CharEncoder enc(9, 4, 5);
  CHECK_THROWS_WITH_AS(
      enc.forward(IndexTensor({1, 2, 3, 4, 0, 0}, {2, 3}), IndexTensor{2, 1}),
      "CharEncoder: word 0 has length 2 but char id 3 at position 2; positions at and past a "
      "word's length must hold the padding id 0",
      ValueError);
  CHECK_THROWS_AS(enc.forward(IndexTensor({1, 2, 3, 4, 0, 0}, {2, 3}), IndexTensor{3, 4}), ValueError);
  CHECK_THROWS_AS(enc.forward(IndexTensor({1, 2, 3}, {1, 3}), IndexTensor{3, 1}), ShapeError);
  CHECK_THROWS_AS(enc.forward(IndexTensor({1, 9, 0}, {1, 3}), IndexTensor{2}), IndexError);
  CHECK_THROWS_AS(nn::CharEncoder(9, 4, 5, 4), ValueError);
}

TEST_CASE("CharEncoder forward and backward are bitwise identical with 1 and 2 threads") {
  check_bitwise_identical_with_1_and_2_threads([] {
    manual_seed(8);
    nn::CharEncoder enc(40, 16, 32);
    std::vector<std::vector<int64_t>> words;
    for (int64_t w = 0; w < 300; ++w) words.push_back(std::vector<int64_t>(1 + w % 9, 1 + w % 39));
    const auto [chars, lengths] = pad_words(words, 9);
    const Tensor out = enc.forward(chars, lengths);
    (out * probe(out.shape())).sum().backward();
    V all = out.to_vector();
    for (const Tensor& p : enc.parameters()) {
      const V v = p.grad().to_vector();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  });
}
