#include "nn/kv_cache.h"

#include "tensor/error.h"

namespace qkv::nn {

void KVCache::check(int64_t num_layers, const std::string& where) const {
  if (static_cast<int64_t>(keys.size()) != num_layers || values.size() != keys.size())
    throw ValueError(where + ": the cache has " + std::to_string(keys.size()) + " layers; expected " +
                     std::to_string(num_layers) + " (make it with make_cache)");
  const auto capacity_of = [&](const Tensor& t, const char* what, size_t layer) {
    if (!t.defined() || t.dim() != 4)
      throw ShapeError(where + ": the cache's " + what + " of layer " + std::to_string(layer) + " are " +
                       (t.defined() ? "of shape " + shape_str(t.shape()) : std::string("undefined")) +
                       ", not (B, H, capacity, d) (make the cache with make_cache)");
    return t.size(2);
  };
  for (size_t i = 0; i < keys.size(); ++i) {
    const int64_t k = capacity_of(keys[i], "keys", i), v = capacity_of(values[i], "values", i);
    if (k != v)
      throw ValueError(where + ": the cache's keys and values of layer " + std::to_string(i) +
                        " differ in capacity: " + std::to_string(k) + " and " + std::to_string(v) +
                       " positions (make the cache with make_cache)");
    if (k != capacity())
      throw ValueError(where + ": the cache's layers differ in capacity: layer 0 holds " +
                       std::to_string(capacity()) + " positions and layer " + std::to_string(i) + " holds " +
                       std::to_string(k) + " (make the cache with make_cache)");
  }
  if (length < 0 || length > capacity())
    throw ValueError(where + ": the cache's length " + std::to_string(length) +
                     " is invalid: it counts the positions filled, 0 .. " + std::to_string(capacity()) +
                     " (the capacity); clear() resets it");
  if (length == capacity())
    throw ValueError(where + ": the cache is full (" + std::to_string(capacity()) +
                     " positions); clear() it, or make a larger one");
}

void KVCache::select_rows(const IndexTensor& rows) {
  for (Tensor& k : keys) k = k.index_select(0, rows);
  for (Tensor& v : values) v = v.index_select(0, rows);
}

}  // namespace qkv::nn
