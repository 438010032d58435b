// Tensor data: factories, metadata, views sharing storage, element access, printing.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "qkv.h"

using namespace qkv;

using V = std::vector<float>;

TEST_CASE("factories make contiguous tensors with the right values") {
  CHECK(zeros({2, 3}).to_vector() == V(6, 0.0f));
  CHECK(ones({2}).to_vector() == V{1, 1});
  CHECK(full({2, 2}, 7.5f).to_vector() == V(4, 7.5f));
  CHECK(arange(4.0f).to_vector() == V{0, 1, 2, 3});
  CHECK(arange(1.0f, 2.0f, 0.25f).to_vector() == V{1, 1.25f, 1.5f, 1.75f});
  CHECK(arange(3.0f, 0.0f, -1.0f).to_vector() == V{3, 2, 1});
  CHECK(linspace(0.0f, 1.0f, 5).to_vector() == V{0, 0.25f, 0.5f, 0.75f, 1});
  CHECK(eye(3).to_vector() == V{1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(eye(2, 3).to_vector() == V{1, 0, 0, 0, 1, 0});
  const Tensor t = tensor({{1, 2, 3}, {4, 5, 6}});
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.strides() == Shape{3, 1});
  CHECK(t.is_contiguous());
  CHECK(tensor({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}).shape() == Shape{2, 2, 2});
  CHECK(scalar_tensor(3.0f).dim() == 0);
  CHECK(scalar_tensor(3.0f).item() == 3.0f);
  CHECK(to_float(IndexTensor{3, 1}).to_vector() == V{3, 1});
}

TEST_CASE("factories reject bad arguments with clear errors") {
  CHECK_THROWS_WITH_AS(tensor({1, 2, 3}, Shape{2, 2}),
                       "tensor: 3 values do not fill shape (2,2) (4 elements)", ShapeError);
  CHECK_THROWS_AS(tensor({{1, 2}, {3}}), ShapeError);
  CHECK_THROWS_AS(zeros({2, -1}), ShapeError);
  CHECK_THROWS_AS(arange(0.0f, 1.0f, 0.0f), ValueError);
  CHECK_THROWS_AS(linspace(0, 1, -2), ValueError);
}

TEST_CASE("a tensor too large for memory is a qkv Error naming the op that asked and the shape and bytes") {
  // 2^40 floats: 4 TiB, which no test machine has (the kernel refuses such a request outright).
  // The message starts with the factory the user called, never with Tensor::empty, which is no op
  // of theirs; a tensor asked for by no named op says only what it is.
  CHECK_THROWS_WITH_AS(zeros({1 << 20, 1 << 20}),
                       "zeros: cannot allocate a tensor of shape (1048576,1048576): 4398046511104 bytes", Error);
  CHECK_THROWS_WITH_AS(randn({int64_t{1} << 40}),
                       "randn: cannot allocate a tensor of shape (1099511627776): 4398046511104 bytes", Error);
  CHECK_THROWS_WITH_AS(Tensor::empty({int64_t{1} << 61}),
                       "cannot allocate a tensor of shape (2305843009213693952): 2305843009213693952 floats of 4 "
                       "bytes",
                       Error);
  CHECK_THROWS_WITH_AS(zeros({2, -1}), "zeros: a tensor of shape (2,-1) cannot have a negative size", ShapeError);
#ifndef __SANITIZE_ADDRESS__
  // IndexTensor allocates with operator new, which AddressSanitizer ends the process on rather than
  // throw std::bad_alloc, whatever its options: these two run only without it.
  CHECK_THROWS_WITH_AS(
      IndexTensor::full({int64_t{1} << 40}, 0),
      "IndexTensor::full: cannot allocate 1099511627776 integers of 8 bytes for shape (1099511627776)",
      Error);
  CHECK_THROWS_WITH_AS(IndexTensor::arange(int64_t{1} << 62),
                       doctest::Contains("IndexTensor::arange: cannot allocate"), Error);
#endif
}

TEST_CASE("a shape whose element count overflows 64 bits is refused") {
  const int64_t big = int64_t{1} << 32;
  CHECK_THROWS_WITH_AS(
      numel({big, big, big}),
      "shape (4294967296,4294967296,4294967296) has more elements than a 64-bit integer counts", ShapeError);
  CHECK_THROWS_AS(zeros({big, big, big}), ShapeError);
  CHECK_THROWS_AS(IndexTensor::full({big, big, big}, 1), ShapeError);
  CHECK_THROWS_AS(eye(big, big), Error);
}

TEST_CASE("arange checks its count in double before converting it and names start end and step") {
  CHECK_THROWS_WITH_AS(arange(0.0f, 1e30f),
                       "arange: start 0, end 1e+30, step 1: expected at most 2^62 elements (1e+30)",
                       ValueError);
  CHECK_THROWS_WITH_AS(arange(0.0f, 1.0f, 1e-30f),
                       "arange: start 0, end 1, step 1e-30: expected at most 2^62 elements (1e+30)",
                       ValueError);
  CHECK_THROWS_WITH_AS(arange(0.0f, INFINITY),
                       "arange: start 0, end inf, step 1: expected finite start, end and a nonzero step",
                       ValueError);
  CHECK(arange(5.0f, 0.0f).numel() == 0);  // a range that ends before it starts is empty
  CHECK(randint(INT64_MIN, INT64_MAX, {4}, nullptr).numel() ==
        4);  // a range wider than 2^63 does not overflow
}

TEST_CASE("the aligned storage starts on a 64-byte boundary") {
  for (int n : {1, 3, 17, 1000}) {
    Tensor t = zeros({n});
    CHECK(reinterpret_cast<uintptr_t>(t.data()) % 64 == 0);
  }
}

TEST_CASE("views share storage with their base and have the expected strides") {
  Tensor x = arange(24.0f).reshape({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.strides() == Shape{1, 12, 4});
  CHECK(p.storage() == x.storage());
  CHECK_FALSE(p.is_contiguous());
  CHECK(p.at({3, 1, 2}) == x.at({1, 2, 3}));

  Tensor s = x.slice(2, 1, 4, 2);  // columns 1 and 3
  CHECK(s.shape() == Shape{2, 3, 2});
  CHECK(s.offset() == 1);
  CHECK(s.to_vector() == V{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23});
  CHECK(x.slice(0, -1, 100).shape() == Shape{1, 3, 4});  // Python-style clamping

  Tensor e = tensor({1, 2, 3}).unsqueeze(0).expand({2, 3});
  CHECK(e.strides() == Shape{0, 1});
  CHECK(e.to_vector() == V{1, 2, 3, 1, 2, 3});
  CHECK(tensor({1, 2}, Shape{2, 1}).expand({-1, 3}).to_vector() == V{1, 1, 1, 2, 2, 2});

  CHECK(x.select(1, 2).to_vector() == V{8, 9, 10, 11, 20, 21, 22, 23});
  CHECK(x.narrow(0, 1, 1).squeeze(0).shape() == Shape{3, 4});
  CHECK(x.flatten(1).shape() == Shape{2, 12});
  CHECK(x.unsqueeze(-1).shape() == Shape{2, 3, 4, 1});
  CHECK(x.unsqueeze(-1).squeeze().shape() == Shape{2, 3, 4});
  CHECK(x.view({6, -1}).shape() == Shape{6, 4});
}

TEST_CASE("view refuses incompatible strides while reshape copies") {
  Tensor x = arange(6.0f).reshape({2, 3});
  Tensor t = x.t();
  CHECK_THROWS_WITH_AS(t.view({6}), doctest::Contains("use reshape()"), ShapeError);
  Tensor r = t.reshape({6});
  CHECK(r.to_vector() == V{0, 3, 1, 4, 2, 5});
  CHECK(r.storage() != x.storage());
  // A view that merges only contiguous dims is allowed even on a non-contiguous tensor.
  Tensor y = arange(24.0f).reshape({2, 3, 4}).permute({1, 0, 2});  // (3,2,4) strides (4,12,1)
  CHECK(y.view({3, 2, 2, 2}).storage() == y.storage());
}

TEST_CASE("contiguous copies only when needed and clone always copies") {
  Tensor x = arange(6.0f).reshape({2, 3});
  CHECK(x.contiguous().is_same(x));
  Tensor c = x.t().contiguous();
  CHECK(c.is_contiguous());
  CHECK(c.to_vector() == V{0, 3, 1, 4, 2, 5});
  Tensor k = x.clone();
  CHECK(k.storage() != x.storage());
  CHECK(k.to_vector() == x.to_vector());
}

TEST_CASE("element access is bounds-checked") {
  Tensor x = arange(6.0f).reshape({2, 3});
  CHECK(x.at({1, 2}) == 5.0f);
  CHECK_THROWS_AS(x.at({2, 0}), IndexError);
  CHECK_THROWS_AS(x.at({0}), IndexError);
  CHECK_THROWS_WITH_AS(x.item(), "item: expected a tensor with one element, got shape (2,3)", ShapeError);
  CHECK_THROWS_AS(Tensor().shape(), StateError);
}

TEST_CASE("in-place writes go through views into the base") {
  Tensor x = zeros({2, 3});
  x.select(1, 1).fill_(5.0f);
  x.slice(0, 1, 2).add_(tensor({1, 2, 3}));
  CHECK(x.to_vector() == V{0, 5, 0, 1, 7, 3});
  x.t().copy_(arange(6.0f).reshape({3, 2}));
  CHECK(x.to_vector() == V{0, 2, 4, 1, 3, 5});
  x.mul_(2.0f);
  CHECK(x.to_vector() == V{0, 4, 8, 2, 6, 10});
  // Copying a tensor onto an overlapping view of itself reads the source first.
  Tensor y = arange(4.0f);
  y.slice(0, 1, 4).copy_(y.slice(0, 0, 3));
  CHECK(y.to_vector() == V{0, 0, 1, 2});
  CHECK_THROWS_AS(zeros({2}).copy_(zeros({3})), ShapeError);
}

TEST_CASE("printing looks like PyTorch's") {
  CHECK(to_string(tensor({{1, 2}, {3, 4}})) == "tensor([[1., 2.],\n        [3., 4.]], shape=(2,2))");
  CHECK(to_string(tensor({0.5f, -1.25f})) == "tensor([ 0.5000, -1.2500], shape=(2))");
  CHECK(to_string(tensor({1e-5f, 1e3f})) == "tensor([1.0000e-05, 1.0000e+03], shape=(2))");
  CHECK(to_string(tensor({1.0f}, true)) == "tensor([1.], shape=(1), requires_grad=True)");
  CHECK(to_string(tensor({1.0f}, true) * 2.0f) == "tensor([2.], shape=(1), grad_fn=<mul_scalar>)");
  CHECK(to_string(zeros({0, 3})) == "tensor([], shape=(0,3))");
  CHECK(to_string(scalar_tensor(2.5f)) == "tensor(2.5000, shape=())");
  // Large tensors are summarized with 3 items at each edge.
  CHECK(to_string(arange(2000.0f)) ==
        "tensor([   0.,    1.,    2., ..., 1997., 1998., 1999.], shape=(2000))");
}

TEST_CASE("IndexTensor holds integer data with shape") {
  IndexTensor t({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.at({1, 0}) == 4);
  CHECK(t.reshape({3, -1}).shape() == Shape{3, 2});
  CHECK(IndexTensor{2, 3}.repeat_interleave(2).values() == std::vector<int64_t>{2, 2, 3, 3});
  CHECK(t.max() == 6);
  CHECK(IndexTensor::arange(3).values() == std::vector<int64_t>{0, 1, 2});
  CHECK_THROWS_AS(IndexTensor({1, 2, 3}, {2, 2}), ShapeError);
  CHECK_THROWS_AS(t[6], IndexError);
  CHECK_THROWS_AS(t.at({2, 0}), IndexError);
}

TEST_CASE("IndexTensor::repeat_interleave refuses a count that overflows or cannot be allocated") {
  // Before, numel · repeats overflowed a signed product (undefined behaviour) and a huge count threw
  // std::bad_alloc, which names nothing.
  const IndexTensor t{1, 2, 3};
  CHECK(t.repeat_interleave(0).numel() == 0);
  CHECK_THROWS_WITH_AS(t.repeat_interleave(-1), "repeat_interleave: repeats must be >= 0, got -1", ValueError);
  CHECK_THROWS_WITH_AS(t.repeat_interleave(std::numeric_limits<int64_t>::max() / 2),
                       "repeat_interleave: 3 elements repeated 4611686018427387903 times overflow 64 bits",
                       ValueError);
  CHECK_THROWS_WITH_AS(t.repeat_interleave(int64_t{1} << 60), doctest::Contains("repeat_interleave: cannot allocate"),
                       Error);
}
