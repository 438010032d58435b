// Tensor and IndexTensor in .npy files (io/tensor_npy.h). The byte-level format is tested in
// test_npy.cpp; here, that values, shapes and dtypes survive the round trip.
#include <doctest/doctest.h>

#include "io/npy.h"
#include "io/tensor_npy.h"
#include "qkv.h"
#include "scratch_dir.h"

using namespace qkv;
using qkv::testing::ScratchDir;

TEST_CASE("Tensor and IndexTensor round-trip through npy files") {
  ScratchDir dir;
  // A transposed view is written in C order of its own shape (3,2).
  const Tensor t = arange(6.0f).reshape({2, 3}).t();
  io::save_npy(dir / "t.npy", t);
  const io::NpyArray raw = io::load_npy(dir / "t.npy");
  CHECK(raw.dtype == io::DType::F32);
  CHECK(raw.shape == std::vector<int64_t>{3, 2});
  const Tensor back = io::load_npy_tensor(dir / "t.npy");
  CHECK(back.shape() == Shape{3, 2});
  CHECK(back.to_vector() == std::vector<float>{0, 3, 1, 4, 2, 5});

  const IndexTensor ids({7, -2, 3000000000LL, 0}, {2, 2});
  io::save_npy(dir / "ids.npy", ids);
  CHECK(io::load_npy(dir / "ids.npy").dtype == io::DType::I64);
  CHECK(io::load_npy_index(dir / "ids.npy") == ids);

  io::save_npy(dir / "s.npy", scalar_tensor(2.5f));
  const Tensor s = io::load_npy_tensor(dir / "s.npy");
  CHECK(s.dim() == 0);
  CHECK(s.item() == 2.5f);
}

TEST_CASE("load_npy_tensor names the file and both dtypes when the array holds integers") {
  ScratchDir dir;
  io::save_npy(dir / "ids.npy", IndexTensor{1, 2});
  const std::string expected =
      "load_npy_tensor: '" + (dir / "ids.npy").string() + "': the array has dtype '<i8' (int64), expected '<f4' (float32)";
  CHECK_THROWS_WITH_AS(io::load_npy_tensor(dir / "ids.npy"), expected.c_str(), FormatError);
  io::save_npy(dir / "x.npy", ones({2}));
  CHECK_THROWS_AS(io::load_npy_index(dir / "x.npy"), FormatError);
}
