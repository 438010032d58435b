#include "examples/vit/images.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "data/idx.h"
#include "examples/common/npm_package.h"
#include "io/digest.h"
#include "io/file.h"
#include "tensor/error.h"
#include "tensor/random.h"

namespace vit {
namespace fs = std::filesystem;
using qkv::FormatError;
using qkv::ValueError;

namespace {

// The four files of dataset-fashion-mnist 0.0~git20200523.55506a9-1, uncompressed: their sizes and
// FNV-1a digests (io/digest.h), which tell a different or damaged file apart.
struct PinnedFile {
  const char* name;
  uint64_t bytes;
  const char* digest;
};
constexpr PinnedFile kFiles[] = {{"train-images-idx3-ubyte", 47'040'016, "8831d1c9b1bcf3ff"},
                                 {"train-labels-idx1-ubyte", 60'008, "c57b481e807c6a9a"},
                                 {"t10k-images-idx3-ubyte", 7'840'016, "587881e72fbc5d2b"},
                                 {"t10k-labels-idx1-ubyte", 10'008, "f87419dba64360a3"}};
constexpr const char* kPackageDir = "/usr/share/datasets/fashion-mnist";
constexpr const char* kHowToGet =
    "run ./qkv setup --vit (it installs Debian's dataset-fashion-mnist), or, on a machine without it, copy "
    "the four files train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
    "t10k-labels-idx1-ubyte (gzipped or not) into ";

std::string digest_of(const fs::path& file, uint64_t& size) {
  const qkv::io::FileReader reader("vit", file);
  size = reader.size();
  qkv::io::Fnv1a digest;
  std::vector<std::byte> chunk(1 << 20);
  for (uint64_t at = 0; at < size; at += chunk.size()) {
    const std::span<std::byte> part(chunk.data(), std::min<uint64_t>(chunk.size(), size - at));
    reader.read_at(at, part);
    digest.add(part);
  }
  return digest.hex();
}

// CACHE/name, decompressed there from CACHE/name.gz or the package's copy when missing; checked
// against its pinned size and digest.
fs::path cached_file(const fs::path& cache, const PinnedFile& f) {
  const fs::path target = cache / f.name;
  if (!fs::exists(target)) {
    fs::path gz = cache / (std::string(f.name) + ".gz");
    if (!fs::exists(gz)) gz = fs::path(kPackageDir) / (std::string(f.name) + ".gz");
    if (!fs::exists(gz))
      throw ValueError("vit: Fashion-MNIST is neither in " + cache.string() + " (--cache DIR) nor in " + kPackageDir +
                       ": " + kHowToGet + cache.string());
    fs::create_directories(cache);
    const fs::path partial = cache / std::string(".").append(f.name).append(".partial");
    const std::optional<int> code =
        qkv::examples::run_program({"gzip", "-dc"}, cache, fs::absolute(gz), fs::absolute(partial));
    if (!code || *code != 0) {
      std::error_code ignored;
      fs::remove(partial, ignored);
      const bool ours = gz.parent_path() == cache;  // a copy in the cache, not the package's
      throw ValueError("vit: cannot decompress " + gz.string() + (code ? " (gzip -dc failed)" : " (gzip is not installed)") +
                       (ours && code ? ": remove " + gz.string() + " and run again to decompress the package's copy in " +
                                           kPackageDir + "; or " + kHowToGet
                                     : std::string("; ") + kHowToGet) +
                       cache.string());
    }
    fs::rename(partial, target);
  }
  uint64_t size = 0;
  const std::string digest = digest_of(target, size);
  if (size != f.bytes || digest != f.digest) {
    // What to remove: the file, and the cache's .gz it would be decompressed from again.
    const fs::path gz = cache / (std::string(f.name) + ".gz");
    const std::string remove = fs::exists(gz) ? target.string() + " and " + gz.string() : target.string();
    throw FormatError("vit: " + target.string() + " is not Fashion-MNIST's " + f.name + " (" + std::to_string(size) +
                      " bytes, digest " + digest + "; expected " + std::to_string(f.bytes) + " bytes, digest " +
                      f.digest + "). Remove " + remove + " and run again to decompress it anew from " + kPackageDir);
  }
  return target;
}

ImageData split_off_validation(ImageSet train, ImageSet test, int64_t validation, std::string source) {
  if (train.size() < 2)
    throw ValueError("vit: " + source + " holds " + std::to_string(train.size()) +
                     " training image(s); it needs at least 2, one to train on and one to hold out for validation");
  if (validation < 1 || validation >= train.size())
    throw ValueError("--validation " + std::to_string(validation) + ": expected 1 to " +
                     std::to_string(train.size() - 1) + " (the " + std::to_string(train.size()) +
                     " training images of " + source + " less one)");
  if (test.rows != train.rows || test.cols != train.cols)
    throw FormatError(source + ": test images of " + std::to_string(test.rows) + "×" + std::to_string(test.cols) +
                      ", training images of " + std::to_string(train.rows) + "×" + std::to_string(train.cols));
  std::vector<int64_t> keep, held;
  for (int64_t i = 0; i < train.size(); ++i) (i < train.size() - validation ? keep : held).push_back(i);
  ImageData d;
  d.validation = train.subset(held);
  d.train = train.subset(keep);
  d.test = std::move(test);
  d.source = std::move(source);
  return d;
}

}  // namespace

ImageSet ImageSet::subset(const std::vector<int64_t>& indices) const {
  ImageSet s;
  s.rows = rows, s.cols = cols;
  const int64_t n = rows * cols;
  s.pixels.reserve(indices.size() * n);
  for (int64_t i : indices) {
    s.pixels.insert(s.pixels.end(), image(i), image(i) + n);
    s.labels.push_back(labels[i]);
  }
  return s;
}

ImageSet upsampled(const ImageSet& set, int64_t factor) {
  if (factor < 1) throw qkv::ValueError("upsampled: factor " + std::to_string(factor) + " is below 1");
  ImageSet s;
  s.rows = set.rows * factor, s.cols = set.cols * factor;
  s.labels = set.labels;
  s.pixels.resize(static_cast<size_t>(set.size() * s.rows * s.cols));
  for (int64_t i = 0; i < set.size(); ++i)
    for (int64_t y = 0; y < s.rows; ++y)
      for (int64_t x = 0; x < s.cols; ++x)
        s.pixels[static_cast<size_t>((i * s.rows + y) * s.cols + x)] = set.image(i)[(y / factor) * set.cols + x / factor];
  return s;
}

ImageSet padded(const ImageSet& set, int64_t rows, int64_t cols, int64_t top, int64_t left) {
  if (top < 0 || left < 0 || top + set.rows > rows || left + set.cols > cols)
    throw qkv::ValueError("padded: images of " + std::to_string(set.rows) + "×" + std::to_string(set.cols) + " at (" +
                          std::to_string(top) + ", " + std::to_string(left) + ") do not fit a canvas of " +
                          std::to_string(rows) + "×" + std::to_string(cols));
  ImageSet s;
  s.rows = rows, s.cols = cols;
  s.labels = set.labels;
  s.pixels.assign(static_cast<size_t>(set.size() * rows * cols), 0);
  for (int64_t i = 0; i < set.size(); ++i)
    for (int64_t y = 0; y < set.rows; ++y)
      std::copy_n(set.image(i) + y * set.cols, set.cols, s.pixels.begin() + ((i * rows + top + y) * cols + left));
  return s;
}

ImageSet read_image_set(const fs::path& images, const fs::path& labels, int classes) {
  qkv::data::IdxBytes im = qkv::data::read_idx(images);
  const qkv::data::IdxBytes lb = qkv::data::read_idx(labels);
  const std::string prefix = "vit: ";
  if (im.shape.size() != 3)
    throw FormatError(prefix + images.string() + ": " + std::to_string(im.shape.size()) +
                      " dimensions; expected 3 (count, rows, cols) for images");
  if (lb.shape.size() != 1)
    throw FormatError(prefix + labels.string() + ": " + std::to_string(lb.shape.size()) +
                      " dimensions; expected 1 (count) for labels");
  if (lb.shape[0] != im.shape[0])
    throw FormatError(prefix + labels.string() + " holds " + std::to_string(lb.shape[0]) + " labels for the " +
                      std::to_string(im.shape[0]) + " images of " + images.string());
  ImageSet s;
  s.rows = im.shape[1], s.cols = im.shape[2];
  s.pixels = std::move(im.values);
  s.labels.reserve(lb.values.size());
  for (size_t i = 0; i < lb.values.size(); ++i) {
    if (lb.values[i] >= classes)
      throw FormatError(prefix + labels.string() + ": byte " + std::to_string(8 + i) + " (image " + std::to_string(i) +
                        ") is label " + std::to_string(lb.values[i]) + "; expected 0 to " + std::to_string(classes - 1));
    s.labels.push_back(lb.values[i]);
  }
  return s;
}

const std::vector<std::string>& fashion_mnist_classes() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

const std::vector<std::string>& generated_classes() {
  static const std::vector<std::string> names = {"h-bar top",  "h-bar bottom", "v-bar top",    "v-bar bottom",
                                                 "square top", "square bottom", "cross top",   "cross bottom",
                                                 "diagonal top", "diagonal bottom"};
  return names;
}

std::vector<std::string> numbered_classes(int classes) {
  std::vector<std::string> names;
  for (int c = 0; c < classes; ++c) names.push_back(std::to_string(c));
  return names;
}

ImageData load_fashion_mnist(const fs::path& cache, int64_t validation) {
  fs::path files[4];
  try {
    for (int i = 0; i < 4; ++i) files[i] = cached_file(cache, kFiles[i]);
  } catch (const fs::filesystem_error& e) {
    throw ValueError("vit: Fashion-MNIST cache " + cache.string() + " (--cache DIR): " + e.code().message());
  }
  ImageSet train = read_image_set(files[0], files[1], 10);
  ImageSet test = read_image_set(files[2], files[3], 10);
  ImageData d = split_off_validation(std::move(train), std::move(test), validation, "Fashion-MNIST");
  d.class_names = fashion_mnist_classes();
  return d;
}

ImageData load_idx_directory(const fs::path& dir, int64_t validation, int classes) {
  ImageSet train = read_image_set(dir / kFiles[0].name, dir / kFiles[1].name, classes);
  ImageSet test = read_image_set(dir / kFiles[2].name, dir / kFiles[3].name, classes);
  ImageData d = split_off_validation(std::move(train), std::move(test), validation, dir.string());
  d.class_names = numbered_classes(classes);
  return d;
}

namespace {

// Draws shape `shape` (0 horizontal bar, 1 vertical bar, 2 square outline, 3 cross, 4 diagonal) of
// size s with its top-left corner at (y, x).
void draw_shape(std::vector<float>& img, int64_t side, int shape, int64_t y, int64_t x, int64_t s, float level) {
  const auto put = [&](int64_t r, int64_t c) {
    if (r >= 0 && r < side && c >= 0 && c < side) img[r * side + c] = level;
  };
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = 0; j < s; ++j) {
      const bool on = shape == 0   ? (i == s / 2 || i == s / 2 - 1)
                      : shape == 1 ? (j == s / 2 || j == s / 2 - 1)
                      : shape == 2 ? (i == 0 || j == 0 || i == s - 1 || j == s - 1)
                      : shape == 3 ? (i == s / 2 || j == s / 2)
                                   : (i == j || i == j + 1);
      if (on) put(y + i, x + j);
    }
}

ImageSet generated_set(int64_t count, int64_t side, qkv::Generator& gen) {
  ImageSet s;
  s.rows = s.cols = side;
  const int64_t shape_size = side / 2 - 1;
  std::vector<float> img(side * side), noise(side * side);
  for (int64_t n = 0; n < count; ++n) {
    const int label = static_cast<int>(gen.next_below(10));
    const int64_t half = label % 2;
    const int64_t y = half * (side / 2) + static_cast<int64_t>(gen.next_below(side / 2 - shape_size + 1));
    const int64_t x = static_cast<int64_t>(gen.next_below(side - shape_size + 1));
    gen.fill_normal(noise.data(), side * side, 0.0f, 0.15f);
    std::fill(img.begin(), img.end(), 0.0f);
    draw_shape(img, side, label / 2, y, x, shape_size, 0.6f + 0.4f * static_cast<float>(gen.next_uniform()));
    for (int64_t i = 0; i < side * side; ++i)
      s.pixels.push_back(static_cast<std::uint8_t>(std::lround(255.0f * std::clamp(img[i] + noise[i], 0.0f, 1.0f))));
    s.labels.push_back(label);
  }
  return s;
}

}  // namespace

ImageData generated_images(int64_t train, int64_t validation, int64_t test, int64_t side, uint64_t seed) {
  if (side < 8 || side > 256) throw ValueError("generated images: side " + std::to_string(side) + "; expected 8 to 256");
  qkv::Generator gen(seed);
  ImageSet all = generated_set(train + validation, side, gen);
  ImageData d = split_off_validation(std::move(all), generated_set(test, side, gen), validation, "generated shapes");
  d.class_names = generated_classes();
  return d;
}

qkv::Tensor patches(const ImageSet& set, const std::vector<int64_t>& indices, int64_t p, float mean, float std,
                    const std::vector<Augmentation>& augment) {
  if (p < 1 || set.rows % p != 0 || set.cols % p != 0)
    throw ValueError("vit: patches of " + std::to_string(p) + "×" + std::to_string(p) + " do not tile images of " +
                     std::to_string(set.rows) + "×" + std::to_string(set.cols));
  const int64_t B = static_cast<int64_t>(indices.size()), gh = set.rows / p, gw = set.cols / p;
  qkv::Tensor out = qkv::Tensor::empty({B, gh * gw, p * p});
  float* o = out.data();
  const float scale = 1.0f / (255.0f * std), shift = mean / std;
  for (int64_t b = 0; b < B; ++b) {
    const std::uint8_t* img = set.image(indices[b]);
    const Augmentation a = augment.empty() ? Augmentation{} : augment[b];
    for (int64_t py = 0; py < gh; ++py)
      for (int64_t px = 0; px < gw; ++px)
        for (int64_t i = 0; i < p; ++i)
          for (int64_t j = 0; j < p; ++j) {
            const int64_t y = py * p + i + a.dy, x = px * p + j + a.dx;  // in the mirrored image
            const bool inside = y >= 0 && y < set.rows && x >= 0 && x < set.cols;
            const std::uint8_t v = inside ? img[y * set.cols + (a.mirror ? set.cols - 1 - x : x)] : 0;
            *o++ = v * scale - shift;
          }
  }
  return out;
}

std::pair<float, float> pixel_statistics(const ImageSet& set) {
  double sum = 0, sq = 0;
  for (std::uint8_t v : set.pixels) {
    const double x = v / 255.0;
    sum += x, sq += x * x;
  }
  const double n = static_cast<double>(set.pixels.size());
  const double mean = sum / n;
  return {static_cast<float>(mean), static_cast<float>(std::sqrt(std::max(sq / n - mean * mean, 1e-12)))};
}

}  // namespace vit
