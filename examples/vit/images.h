// The ViT's images: Fashion-MNIST (Xiao, Rasul & Vollgraf 2017, https://arxiv.org/abs/1708.07747),
// 60,000 training and 10,000 test images of clothing, 28×28 grey levels, 10 classes, read from the
// IDX files of Debian's dataset-fashion-mnist (data/idx.h); a user's own IDX files of the same kind;
// and a small generated set for the tests.
//
// Fashion-MNIST comes from the cache directory (default cache/fashion-mnist, --cache DIR): the four
// files, uncompressed, whose sizes and FNV-1a digests are pinned to the package's. A cache without
// them is filled by decompressing (gzip -dc) the package's files from /usr/share/datasets/fashion-mnist,
// or the .gz files a user copied into the cache on a machine without the package. `./qkv setup --vit`
// installs the package.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace vit {

inline constexpr const char* kDefaultCache = "cache/fashion-mnist";

// Images of one size with their labels.
struct ImageSet {
  int64_t rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  // (size(), rows, cols), 0 = black
  std::vector<int32_t> labels;       // each in [0, classes)
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  const std::uint8_t* image(int64_t i) const { return pixels.data() + i * rows * cols; }
  // The images at `indices`, in that order.
  ImageSet subset(const std::vector<int64_t>& indices) const;
};

// The images of `set` at another size, for a model trained at one to be read at another:
//   upsampled  each pixel repeated as a factor × factor block (nearest neighbour): the same item at
//              `factor` times the resolution
//   padded     each image placed in a black rows × cols canvas with its top left corner at (top,
//              left): the same item at the same resolution, moved
// ValueError for a factor below 1, or an image that does not fit the canvas.
ImageSet upsampled(const ImageSet& set, int64_t factor);
ImageSet padded(const ImageSet& set, int64_t rows, int64_t cols, int64_t top, int64_t left);

// An images file (count, rows, cols) and a labels file (count), IDX; FormatError naming the file:
// a label file of another count than the image file, a label outside [0, classes), a file of
// another rank.
ImageSet read_image_set(const std::filesystem::path& images, const std::filesystem::path& labels, int classes);

// A training part, a validation part (held out from the end of the training file, as Keras and
// most papers on Fashion-MNIST do), and the test part.
struct ImageData {
  ImageSet train, validation, test;
  std::vector<std::string> class_names;
  std::string source;  // how a report names the data
};

// The ten classes of Fashion-MNIST, in label order; those of the generated set; "0" .. "C−1".
const std::vector<std::string>& fashion_mnist_classes();
const std::vector<std::string>& generated_classes();
std::vector<std::string> numbered_classes(int classes);

// Fashion-MNIST from `cache` (filled as above), the last `validation` training images held out.
// ValueError saying how to get the data when neither the cache nor the package has it; FormatError
// naming a file of the wrong size or digest.
ImageData load_fashion_mnist(const std::filesystem::path& cache, int64_t validation);

// The four IDX files of a user's set in `dir`, under Fashion-MNIST's names
// (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte),
// labels in [0, classes).
ImageData load_idx_directory(const std::filesystem::path& dir, int64_t validation, int classes);

// A generated set, seeded: 10 classes, each one of five shapes (horizontal bar, vertical bar, square
// outline, cross, diagonal) in the top or the bottom half of a `side`×`side` image (class = 2·shape +
// half), at a random place within that half, with noise. Telling the classes apart takes both what a
// patch holds and where it is: a model without positions cannot tell the halves apart.
ImageData generated_images(int64_t train, int64_t validation, int64_t test, int64_t side, uint64_t seed);

// How one training image is changed before it is cut into patches (data augmentation): mirrored
// left-right, then moved: pixel (y, x) of the result is pixel (y + dy, x + dx) of the mirrored
// image, black (0) where that is outside it. A move by dy, dx in [−c, c] is a random crop of the
// image padded with c black pixels on every side (torchvision's RandomCrop(size, padding=c)).
struct Augmentation {
  bool mirror = false;
  int dy = 0, dx = 0;
};

// The images at `indices` as patches, the input of the ViT: (B, N, p·p) with N = (rows/p)·(cols/p)
// in raster order (patch row by patch row), each patch's pixels in raster order, scaled to
// (pixel/255 − mean) / std. rows and cols must be multiples of p. Image b is changed as augment[b]
// says first (augment empty: none is).
qkv::Tensor patches(const ImageSet& set, const std::vector<int64_t>& indices, int64_t p, float mean, float std,
                    const std::vector<Augmentation>& augment = {});

// The mean and standard deviation of the pixels of `set` on [0, 1].
std::pair<float, float> pixel_statistics(const ImageSet& set);

}  // namespace vit
