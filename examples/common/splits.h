// A data set cut once into its three parts, and their sizes: what the generated corpora of the
// tagger and of seq2seq return, each part following the one before in one stream of examples.
#pragma once

#include <cstdint>
#include <vector>

namespace qkv::examples {

struct SplitSizes {
  int64_t train = 0, dev = 0, test = 0;
};

template <class T>
struct Splits {
  std::vector<T> train, dev, test;
};

}  // namespace qkv::examples
