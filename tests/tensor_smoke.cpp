#include <doctest/doctest.h>
#include "tensor/kernels/gemm.h"
TEST_CASE("gemm_reference multiplies 2x2") {
  float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8}, c[4];
  qkv::kernels::gemm_reference(false, false, 2, 2, 2, 1.f, a, 2, b, 2, 0.f, c, 2);
  CHECK(c[0] == 19); CHECK(c[3] == 50);
}
