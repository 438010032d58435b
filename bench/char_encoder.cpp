// Time of nn::CharEncoder, forward and backward, on a batch of words shaped like the tagger's: N
// words of 1 to L characters (lengths drawn uniformly, seeded), char_dim E, filters F, kernel 3.
// Usage: bench_char_encoder [N L E F] (defaults 640 12 32 64) [--threads 1,2] [--repeats 30]
// [--profile] (then also the op profile of 10 steps on the last thread count).
// bench/char_encoder_torch.py times PyTorch's nn.Embedding + nn.Conv1d + relu + masked max on the
// same shapes and prints the same line.
#include "nn/char_encoder.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/debug/profiler.h"
#include "autograd/grad_mode.h"
#include "bench/timing.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/threads.h"

using namespace qkv;

namespace {

constexpr int64_t kNumChars = 80;

// N words of 1 to L random characters, padded with 0 to L: chars (N, L) and lengths (N).
std::pair<IndexTensor, IndexTensor> random_words(int64_t N, int64_t L, Generator& gen) {
  std::vector<int64_t> ids(static_cast<size_t>(N * L), 0), lengths;
  for (int64_t n = 0; n < N; ++n) {
    const int64_t len = 1 + static_cast<int64_t>(gen.next_below(L));
    for (int64_t l = 0; l < len; ++l)
      ids[n * L + l] = 1 + static_cast<int64_t>(gen.next_below(kNumChars - 1));
    lengths.push_back(len);
  }
  return {IndexTensor(ids, {N, L}), IndexTensor(lengths)};
}

std::vector<int> parse_threads(const char* list) {
  std::vector<int> out;
  for (const char* p = list; *p;) {
    out.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes = {640, 12, 32, 64};
  std::vector<int> threads = {1, 2};
  int repeats = 30;
  bool profile = false;
  for (int i = 1, k = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = parse_threads(argv[++i]);
    else if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc)
      repeats = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--profile") == 0)
      profile = true;
    else if (k < 4)
      sizes[k++] = std::atoll(argv[i]);
  }
  const int64_t N = sizes[0], L = sizes[1], E = sizes[2], F = sizes[3];
  Generator gen(42);
  manual_seed(42);
  nn::CharEncoder enc(kNumChars, E, F);
  const auto [chars, lengths] = random_words(N, L, gen);
  const Tensor r = randn({N, F});  // the loss Σ r ⊙ out gives every output a gradient
  const auto step = [&] {
    enc.zero_grad();
    (enc.forward(chars, lengths) * r).sum().backward();
  };
  for (int t : threads) {
    set_num_threads(t);
    const double forward = bench::median_ms(repeats, [&] {
      NoGradGuard no_grad;
      enc.forward(chars, lengths);
    });
    const double both = bench::median_ms(repeats, step);
    std::printf(
        "qkv CharEncoder N=%lld L=%lld E=%lld F=%lld threads=%d: forward %.3f ms, forward+backward %.3f ms "
        "(median of %d)\n",
        static_cast<long long>(N), static_cast<long long>(L), static_cast<long long>(E),
        static_cast<long long>(F), t, forward, both, repeats);
  }
  if (profile) {
    Profiler profiler;
    for (int i = 0; i < 10; ++i) step();
    profiler.stop();
    std::printf("%s", profiler.report().c_str());
  }
  return 0;
}
