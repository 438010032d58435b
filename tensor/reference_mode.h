// The reference mode: one process-wide switch from qkv's fast paths to the plain ones a reader
// reads first.
//
// By default qkv runs fused ops (one kernel forward and one backward for attention, layer norm,
// the masked softmax, cross-entropy, a GRU sequence...), an engine that reuses gradient buffers,
// and kernels that share work through qkv's own thread pool (tensor/kernels/parallel.h). Each of
// these keeps a plain counterpart in the library, and the reference mode runs every model on them:
//   - every fused op runs its composed reference, written beside it and named in its opening
//     comment (autograd/ops/attention.h: fused_attention_reference, and so on): a few primitive
//     ops, each with its own backward;
//   - the backward engine allocates plainly: no gradient is written over another or over a saved
//     tensor, and a leaf's gradient is always its own copy;
//   - kernels that run in parallel do it with a plain `#pragma omp parallel for` and a static
//     split, and the matrix product is the blocked GEMM of tensor/kernels/gemm_blocked.cpp under
//     OpenMP; products stay in float32 whatever set_matmul_precision says;
//   - softmax and log-softmax run their plain loops with libm's exp
//     (tensor/kernels/softmax_reference.cpp), not the vectorized rows.
// The two modes compute the same functions; they agree to float32 rounding (the tests hold every
// shipped model to the same loss and gradients in both), and each is deterministic whatever the
// thread count.
//
// Turn it on with set_reference_mode(true), for a scope with ReferenceModeGuard, for a whole
// process with the environment variable QKV_REFERENCE=1, or with --reference on the programs.
// The switch is one for the process, read by every thread, as the thread count and the matmul
// precision are: guards on two threads at once do not nest, and may restore each other's mode.
#pragma once

namespace qkv {

// Whether the reference mode is on. The first call reads QKV_REFERENCE ("1" on; "0" or empty off;
// another value is ignored with a warning on stderr).
bool reference_mode();
void set_reference_mode(bool on);

// Sets the mode for a scope and restores the previous one when it ends:
//   { ReferenceModeGuard plain; loss = model.forward(x); loss.backward(); }
class ReferenceModeGuard {
 public:
  explicit ReferenceModeGuard(bool on = true);
  ~ReferenceModeGuard();
  ReferenceModeGuard(const ReferenceModeGuard&) = delete;
  ReferenceModeGuard& operator=(const ReferenceModeGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace qkv
