#include "examples/vit/figures.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "autograd/grad_mode.h"
#include "plot/font.h"
#include "plot/plot.h"
#include "tensor/error.h"

namespace vit {

namespace fs = std::filesystem;
using qkv::Tensor;
using qkv::plot::Image;
using qkv::plot::Rgb;

namespace {

constexpr int kMistakes = 24, kRolloutImages = 8;

// An image drawn at `scale` pixels per pixel, with `caption` below it.
Image draw_image(const std::uint8_t* pixels, int64_t rows, int64_t cols, int scale, const std::string& caption,
                 const std::vector<float>& heat = {}, int64_t grid_rows = 0, int64_t grid_cols = 0) {
  const int w = static_cast<int>(cols) * scale, h = static_cast<int>(rows) * scale;
  const int caption_h = caption.empty() ? 0 : qkv::plot::text_height() + 4;
  Image img(std::max(w, qkv::plot::text_width(caption) + 4), h + caption_h);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      // Fashion-MNIST draws the garment bright on black; shown dark on white, as on paper.
      const std::uint8_t v = static_cast<std::uint8_t>(255 - pixels[r * cols + c]);
      Rgb color{v, v, v};
      if (!heat.empty()) {  // the patch's share of the rollout, blended over the image
        const float t = heat[(r * grid_rows / rows) * grid_cols + c * grid_cols / cols];
        const Rgb hot = qkv::plot::colormap_color(qkv::plot::Colormap::Viridis, t);
        color = {static_cast<std::uint8_t>((v * 4 + hot.r * 6) / 10), static_cast<std::uint8_t>((v * 4 + hot.g * 6) / 10),
                 static_cast<std::uint8_t>((v * 4 + hot.b * 6) / 10)};
      }
      img.fill_rect({static_cast<int>(c) * scale, static_cast<int>(r) * scale, scale, scale}, color);
    }
  if (!caption.empty()) img.draw_text(2, h + 2, caption, qkv::plot::kBlack);
  return img;
}

// `body` under a title line.
Image titled(const std::string& title, const Image& body) {
  const int th = 2 * qkv::plot::text_height() + 8;
  Image img(std::max(body.width(), qkv::plot::text_width(title, 2) + 8), body.height() + th);
  img.draw_text(4, 4, title, qkv::plot::kBlack, 2);
  for (int y = 0; y < body.height(); ++y)
    for (int x = 0; x < body.width(); ++x) img.set_pixel(x, y + th, body.pixel(x, y));
  return img;
}

void draw_curves(const std::vector<EpochRecord>& history, const fs::path& file) {
  qkv::plot::Series loss{"training loss", {}, {}}, accuracy{"validation accuracy", {}, {}};
  for (const EpochRecord& e : history) {
    loss.x.push_back(static_cast<double>(e.step));
    loss.y.push_back(e.loss);
    accuracy.x.push_back(static_cast<double>(e.step));
    accuracy.y.push_back(100 * e.score);
  }
  qkv::plot::LinePlotSpec spec;
  spec.x_label = "epoch";
  spec.markers = true;
  spec.series = {loss};
  spec.title = "Training loss (label-smoothed cross-entropy)";
  spec.y_label = "nats";
  const Image left = qkv::plot::draw_line_plot(spec);
  spec.series = {accuracy};
  spec.title = "Validation accuracy";
  spec.y_label = "%";
  qkv::plot::tile({left, qkv::plot::draw_line_plot(spec)}, 2).write_png(file.string());
}

qkv::plot::HeatmapSpec confusion_spec(const ImageSet& set, const std::vector<int32_t>& predicted,
                                      const std::vector<std::string>& names) {
  std::vector<std::vector<int64_t>> counts(names.size(), std::vector<int64_t>(names.size(), 0));
  for (size_t i = 0; i < predicted.size(); ++i) ++counts[static_cast<size_t>(set.labels[i])][static_cast<size_t>(predicted[i])];
  return qkv::plot::confusion_heatmap(counts, names, "true class", "predicted class");
}

Image draw_mistakes(const ImageSet& set, const std::vector<int32_t>& predicted, const std::vector<std::string>& names) {
  std::vector<Image> panels;
  for (size_t i = 0; i < predicted.size() && panels.size() < kMistakes; ++i)
    if (predicted[i] != set.labels[i])
      panels.push_back(draw_image(set.image(static_cast<int64_t>(i)), set.rows, set.cols, 4,
                                  names[set.labels[i]] + " > " + names[predicted[i]]));
  if (panels.empty()) panels.push_back(Image(200, 20));
  return titled("Test images the model got wrong (true > predicted)", qkv::plot::tile(panels, 6));
}

Image draw_rollout(ViT& model, const ImageSet& set, const Config& c, const std::vector<std::string>& names) {
  qkv::NoGradGuard no_grad;
  model.eval();
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < std::min<int64_t>(kRolloutImages, set.size()); ++i) idx.push_back(i);
  const Tensor logits =
      model.forward(patches(set, idx, c.model.patch, static_cast<float>(c.pixel_mean), static_cast<float>(c.pixel_std)));
  const qkv::IndexTensor predicted = logits.argmax(1);
  const Tensor heat = model.rollout();  // (B, N)
  const int64_t N = heat.size(1);
  std::vector<Image> panels;
  for (size_t b = 0; b < idx.size(); ++b) {
    std::vector<float> h(heat.data() + b * N, heat.data() + (b + 1) * N);
    const float lo = *std::min_element(h.begin(), h.end()), hi = *std::max_element(h.begin(), h.end());
    for (float& v : h) v = hi > lo ? (v - lo) / (hi - lo) : 0.5f;
    const std::string caption = names[set.labels[idx[b]]] + " > " + names[predicted.data()[b]];
    panels.push_back(draw_image(set.image(idx[b]), set.rows, set.cols, 6, caption));
    panels.push_back(draw_image(set.image(idx[b]), set.rows, set.cols, 6, "rollout", h, c.model.grid_rows(),
                                c.model.grid_cols()));
  }
  return titled(std::string("Attention rollout of ") + (c.model.pool == "cls" ? "the class token" : "the mean of the tokens") +
                    " (yellow: most attended patches)",
                qkv::plot::tile(panels, 4));
}

}  // namespace

Image draw_position_similarity(const Tensor& table, int64_t grid_rows, int64_t grid_cols, const std::string& title) {
  if (!table.defined()) throw qkv::ValueError("draw_position_similarity: the scheme has no position vectors");
  const int64_t N = grid_rows * grid_cols;
  if (table.dim() != 2 || table.size(0) != N)
    throw qkv::ShapeError("draw_position_similarity: a table of shape " + qkv::shape_str(table.shape()) +
                          " for a grid of " + std::to_string(grid_rows) + "×" + std::to_string(grid_cols));
  qkv::NoGradGuard no_grad;
  const Tensor unit = table / table.norm(2.0f, {1}, true).clamp_min(1e-12f);
  const Tensor cos = unit.matmul(unit.t()).contiguous();  // (N, N)
  // The colours span the cosines' own range: a fixed table such as sin2d at base 10000 spends most
  // channels on frequencies too low to change across 7 patches, so every cosine is near 1.
  const float* c = cos.data();
  const float lo = *std::min_element(c, c + N * N), hi = *std::max_element(c, c + N * N);
  const int cell = std::max(2, static_cast<int>(64 / std::max(grid_rows, grid_cols))), gap = 3;
  const int map_w = static_cast<int>(grid_cols) * cell, map_h = static_cast<int>(grid_rows) * cell;
  Image body(static_cast<int>(grid_cols) * (map_w + gap), static_cast<int>(grid_rows) * (map_h + gap));
  for (int64_t i = 0; i < N; ++i) {
    const int ox = static_cast<int>(i % grid_cols) * (map_w + gap), oy = static_cast<int>(i / grid_cols) * (map_h + gap);
    for (int64_t j = 0; j < N; ++j) {
      const double t = hi > lo ? (c[i * N + j] - lo) / (hi - lo) : 1.0;
      body.fill_rect({ox + static_cast<int>(j % grid_cols) * cell, oy + static_cast<int>(j / grid_cols) * cell, cell, cell},
                     qkv::plot::colormap_color(qkv::plot::Colormap::Viridis, t));
    }
  }
  std::ostringstream range;
  range << std::fixed << std::setprecision(2) << " (cosine " << lo << " dark to " << hi << " yellow)";
  return titled(title + range.str(), body);
}

std::vector<std::string> class_names_of(const Config& c) {
  if (c.data == "fashion-mnist") return fashion_mnist_classes();
  if (c.data == "generated") return generated_classes();
  return numbered_classes(static_cast<int>(c.model.classes));
}

void print_per_class(std::ostream& out, const ImageSet& set, const std::vector<int32_t>& predicted,
                     const std::vector<std::string>& names) {
  std::vector<int64_t> right(names.size(), 0), total(names.size(), 0);
  for (size_t i = 0; i < predicted.size(); ++i) {
    ++total[static_cast<size_t>(set.labels[i])];
    right[static_cast<size_t>(set.labels[i])] += predicted[i] == set.labels[i];
  }
  for (size_t k = 0; k < names.size(); ++k)
    out << "  " << std::left << std::setw(14) << names[k] << std::right << std::fixed << std::setprecision(1)
        << std::setw(6) << (total[k] ? 100.0 * static_cast<double>(right[k]) / static_cast<double>(total[k]) : 0.0)
        << " %  of " << total[k] << "\n";
}

std::vector<std::string> draw_run_figures(const std::string& run_dir) {
  const fs::path dir = fs::path(run_dir) / "figures";
  Run run = load_run(run_dir, "best");
  qkv::examples::use_matmul_precision(run.config.matmul, /*saved_run=*/true);  // the run's products
  fs::create_directories(dir);
  Config config = run.config;
  const ImageData data = load_data(config);
  const Evaluation test = evaluate(*run.model, data.test, run.config);
  std::vector<std::string> written;
  const auto save = [&](const Image& img, const std::string& name) {
    img.write_png((dir / name).string());
    written.push_back((dir / name).string());
  };
  draw_curves(load_run(run_dir, "last").history, dir / "curves.png");
  written.push_back((dir / "curves.png").string());
  save(qkv::plot::draw_heatmap(confusion_spec(data.test, test.predicted, data.class_names)), "confusion.png");
  save(draw_mistakes(data.test, test.predicted, data.class_names), "mistakes.png");
  save(draw_rollout(*run.model, data.test, run.config, data.class_names), "rollout.png");
  if (const Tensor P = run.model->positions->table(); P.defined())
    save(draw_position_similarity(P, run.config.model.grid_rows(), run.config.model.grid_cols(),
                                  "Position similarity, " + run.config.model.positions),
         "positions.png");
  for (const std::string& f : written) std::cout << "vit: figure " << f << "\n";
  return written;
}

}  // namespace vit
