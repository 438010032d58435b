// Grad mode: whether ops record the graph. On by default; NoGradGuard turns it off in a scope
// (evaluation, optimizer steps, and the backward pass itself, unless it is asked to record a graph
// of its own: BackwardOptions::create_graph). GradModeGuard sets it either way.
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

class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace qkv
