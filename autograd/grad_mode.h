// Grad mode: whether ops record the graph. On by default; NoGradGuard turns it off in a scope
// (evaluation, optimizer steps, and the backward pass itself).
#pragma once

namespace qkv {

bool is_grad_enabled();
void set_grad_enabled(bool enabled);

class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace qkv
