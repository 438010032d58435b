#include "autograd/grad_mode.h"

namespace qkv {
namespace {
thread_local bool g_grad_enabled = true;
}

bool is_grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool enabled) { g_grad_enabled = enabled; }

NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

GradModeGuard::GradModeGuard(bool enabled) : previous_(g_grad_enabled) { g_grad_enabled = enabled; }
GradModeGuard::~GradModeGuard() { g_grad_enabled = previous_; }

}  // namespace qkv
