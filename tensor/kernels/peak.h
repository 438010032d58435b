// The machine's peak FP32 throughput, measured: the yardstick that `bench_gemm` and `tagger bench`
// hold their figures against (their of_peak fields).
//
// Each thread runs as many independent chains of fused multiply-adds as the GEMM micro-kernel has
// accumulators (tensor/kernels/gemm_microkernel.h: 24 vectors of 16 floats with AVX-512, 12 of 8
// with AVX2), in the micro-kernel's own SIMD type, so that the FMA units never wait for a result
// and the figure is the one the micro-kernel could reach with its data in registers. A
// multiply-add counts 2 FLOPs, as everywhere in qkv.
#pragma once

namespace qkv::kernels {

// GFLOP/s of `threads` threads (at least 1) running FMA chains at once, from a common start to the
// last thread's end: the best of a few short repetitions, so that a moment in which the host lent
// a core elsewhere does not count. The probe takes about 45 ms on the project's host.
double peak_gflops(int threads);

}  // namespace qkv::kernels
