#include "dist/same_start.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "autograd/grad_mode.h"
#include "dist/agree.h"
#include "model_io/checkpoint.h"
#include "io/digest.h"
#include "tensor/error.h"

namespace qkv::dist {
namespace {

uint64_t parse_hex(const std::string& hex) { return std::strtoull(hex.c_str(), nullptr, 16); }

// The digest of names and shapes only, by name.
uint64_t structure_digest(const nn::Module& module) {
  io::Fnv1a h;
  for (const auto& [name, t] : module.state_dict()) {
    h.add(name);
    h.add(shape_str(t.shape()));
  }
  return parse_hex(h.hex());
}

// Every rank's digest, in rank order; throws on every rank when they are not all equal.
void compare(ProcessGroup& group, uint64_t mine, const std::string& what, const std::string& when) {
  std::vector<uint64_t> all(static_cast<size_t>(group.size()));
  const uint64_t one[1] = {mine};
  group.all_gather(std::span<const uint64_t>(one), std::span<uint64_t>(all));
  bool same = true;
  for (uint64_t d : all) same = same && d == all[0];
  if (same) return;
  std::string ranks;
  for (size_t r = 0; r < all.size(); ++r) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%srank %zu %016llx", r ? ", " : "", r, static_cast<unsigned long long>(all[r]));
    ranks += buf;
  }
  throw Disagreement("dist: the ranks' models differ " + when + ": the digests of their " + what + " are " + ranks +
              ". Every rank must build the same model from the same configuration and data");
}

}  // namespace

void broadcast_parameters(nn::Module& module, ProcessGroup& group) {
  compare(group, structure_digest(module), "parameter names and shapes", "before the first step");
  NoGradGuard no_grad;
  for (auto& [name, t] : module.state_dict()) {
    if (!t.is_contiguous())
      throw StateError("dist::broadcast_parameters: '" + name + "' is not contiguous, so it cannot be sent in place");
    Tensor view = t;
    group.broadcast(std::span<float>(view.data(), static_cast<size_t>(t.numel())), 0);
  }
  check_same_state(module, group, "after rank 0's weights were broadcast");
}

void check_same_state(const nn::Module& module, ProcessGroup& group, const std::string& when) {
  compare(group, parse_hex(io::state_checksum(module)), "names, shapes and values", when);
}

}  // namespace qkv::dist
