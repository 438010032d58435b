// The vectorized cross-entropy rows (tensor/kernels/cross_entropy.cpp) against the plain loops beside
// them, forward and backward, with and without class weights, label smoothing and ignored rows.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "random_floats.h"
#include "tensor/kernels/cross_entropy.h"

using namespace qkv::kernels;

namespace {

// The largest |fast − plain| / (1 + |plain|) over two arrays.
float worst(const std::vector<float>& fast, const std::vector<float>& plain) {
  float w = 0.0f;
  for (size_t i = 0; i < fast.size(); ++i)
    w = std::fmax(w, std::fabs(fast[i] - plain[i]) / (1.0f + std::fabs(plain[i])));
  return w;
}

}  // namespace

TEST_CASE("fast cross-entropy rows match the plain loops with weights smoothing and ignored rows") {
  // C from 1 through every vector tail, wide logits (e^−40 underflows nowhere near the clamp of
  // vexp), and every third row ignored.
  for (const int64_t C : {1, 2, 7, 16, 17, 33, 200}) {
    for (const bool weighted : {false, true}) {
      for (const float smoothing : {0.0f, 0.1f, 1.0f}) {
        CAPTURE(C);
        CAPTURE(weighted);
        CAPTURE(smoothing);
        const int64_t N = 12;
        const std::vector<float> z = random_floats(N * C, static_cast<uint64_t>(C), -20.0f, 20.0f);
        const std::vector<float> w = random_floats(C, 2, 0.5f, 2.0f), dloss = random_floats(N, 3);
        std::vector<int64_t> target(static_cast<size_t>(N));
        for (int64_t n = 0; n < N; ++n) target[static_cast<size_t>(n)] = n % 3 == 2 ? -100 : (n * 5) % C;
        const CrossEntropyTargets t{target.data(), weighted ? w.data() : nullptr, -100, smoothing};
        std::vector<float> loss(N), lse(N), dz(N * C), plain_loss(N), plain_lse(N), plain_dz(N * C);
        cross_entropy_forward(N, C, z.data(), t, loss.data(), lse.data());
        cross_entropy_forward_reference(N, C, z.data(), t, plain_loss.data(), plain_lse.data());
        CHECK(worst(lse, plain_lse) < 1e-6f);
        CHECK(worst(loss, plain_loss) < 1e-6f * static_cast<float>(C));
        cross_entropy_backward(N, C, z.data(), plain_lse.data(), dloss.data(), t, dz.data());
        cross_entropy_backward_reference(N, C, z.data(), plain_lse.data(), dloss.data(), t, plain_dz.data());
        CHECK(worst(dz, plain_dz) < 1e-6f);
        for (int64_t n = 2; n < N; n += 3) {
          CHECK(loss[static_cast<size_t>(n)] == 0.0f);
          for (int64_t c = 0; c < C; ++c) CHECK(dz[static_cast<size_t>(n * C + c)] == 0.0f);
        }
      }
    }
  }
}

TEST_CASE("cross-entropy rows give minus the log-probability of the target and softmax minus one-hot") {
  // One row z = (0, log 3): p = (1/4, 3/4); target 1, no weights, no smoothing.
  const std::vector<float> z{0.0f, std::log(3.0f)}, dloss{2.0f};
  const std::vector<int64_t> target{1};
  const CrossEntropyTargets t{target.data(), nullptr, -100, 0.0f};
  for (const bool fast : {true, false}) {
    CAPTURE(fast);
    float loss = 0, lse = 0;
    std::vector<float> dz(2);
    (fast ? cross_entropy_forward : cross_entropy_forward_reference)(1, 2, z.data(), t, &loss, &lse);
    (fast ? cross_entropy_backward : cross_entropy_backward_reference)(1, 2, z.data(), &lse, dloss.data(), t,
                                                                       dz.data());
    CHECK(lse == doctest::Approx(std::log(4.0f)));
    CHECK(loss == doctest::Approx(-std::log(0.75f)));
    CHECK(dz[0] == doctest::Approx(2.0f * 0.25f));
    CHECK(dz[1] == doctest::Approx(2.0f * (0.75f - 1.0f)));
  }
}
