// Guards against compiler bugs that once gave wrong results on these machines.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace {

// Each list is a 32- or 64-byte constant whose elements are not all equal.
template <class T>
std::vector<T> make(std::initializer_list<T> values) {
  return std::vector<T>(values);
}

}  // namespace

TEST_CASE("constant lists of 32 and 64 bytes keep every element") {
  // GCC 12 with AVX-512 stored these as a broadcast of the first element (see CMakeLists.txt).
  const std::vector<float> a{1, 1, 1, 1, 1, 1, 0, 0};
  CHECK(a[6] == 0.0f);
  CHECK(a[7] == 0.0f);
  const std::vector<float> b{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  CHECK(b[15] == 0.0f);
  const std::vector<int64_t> c{7, 7, 7, 9};
  CHECK(c[3] == 9);
  CHECK(make<int>({4, 4, 4, 4, 4, 4, 4, 5})[7] == 5);
}
