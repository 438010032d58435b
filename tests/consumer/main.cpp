// A program outside qkv's tree, built against the installed package: a forward and a backward.
#include <qkv/qkv.h>

#include <cstdio>

int main() {
  qkv::Tensor w = qkv::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}}, /*requires_grad=*/true);
  qkv::Tensor x = qkv::tensor({1.0f, -1.0f});
  qkv::Tensor loss = w.matmul(x).pow(2.0f).sum();  // (1-2)² + (3-4)² = 2
  loss.backward();
  // d/dw Σ (w·x)² = 2 (w·x) xᵀ = [[-2, 2], [-2, 2]]
  const bool ok = loss.item() == 2.0f && w.grad().to_vector() == std::vector<float>{-2, 2, -2, 2};
  std::printf("consumer: loss %.1f %s\n", loss.item(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
