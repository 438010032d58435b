// The process group the dist tests run in: a group of one alone, MPI's world under mpirun.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "dist/process_group.h"

namespace dist_testing {

qkv::dist::ProcessGroup& group();

// Whether every rank holds exactly these floats (bit for bit).
inline bool same_on_every_rank(std::span<const float> values) {
  qkv::dist::ProcessGroup& g = group();
  std::vector<float> all(values.size() * static_cast<size_t>(g.size()));
  g.all_gather(values, std::span<float>(all));
  for (int r = 1; r < g.size(); ++r)
    if (std::memcmp(all.data(), all.data() + r * values.size(), values.size() * sizeof(float)) != 0) return false;
  return true;
}

}  // namespace dist_testing
