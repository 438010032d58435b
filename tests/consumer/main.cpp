// A program outside qkv's tree, built against the installed package: a forward and a backward, and
// a figure's layout from the plot library.
#include <qkv/plot/plot.h>
#include <qkv/qkv.h>

#include <cstdio>

int main() {
  qkv::Tensor w = qkv::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}}, /*requires_grad=*/true);
  qkv::Tensor x = qkv::tensor({1.0f, -1.0f});
  qkv::Tensor loss = w.matmul(x).pow(2.0f).sum();  // (1-2)² + (3-4)² = 2
  loss.backward();
  // d/dw Σ (w·x)² = 2 (w·x) xᵀ = [[-2, 2], [-2, 2]]
  const bool ok = loss.item() == 2.0f && w.grad().to_vector() == std::vector<float>{-2, 2, -2, 2};
  qkv::plot::HeatmapSpec spec;
  spec.rows = spec.cols = 2;
  spec.values = w.grad().to_vector();
  const qkv::plot::ImageSize size = qkv::plot::heatmap_size(spec);
  const bool drawn = size.width > 0 && size.height > 0;
  std::printf("consumer: loss %.1f, heatmap %dx%d %s\n", loss.item(), size.width, size.height,
              ok && drawn ? "ok" : "WRONG");
  return ok && drawn ? 0 : 1;
}
