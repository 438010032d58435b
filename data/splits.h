// A data set cut once into its three parts, and their sizes: what the generated corpora return
// (data/builtin_corpus.h, the dates of the seq2seq example), each part following the one before
// in one stream of examples.
#pragma once

#include <cstdint>
#include <vector>

namespace qkv::data {

struct SplitSizes {
  int64_t train = 0, dev = 0, test = 0;
};

template <class T>
struct Splits {
  std::vector<T> train, dev, test;
};

}  // namespace qkv::data
