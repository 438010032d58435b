// The machine's peak FP32 throughput, measured: the yardstick that `bench_gemm` and `tagger bench`
// hold their figures against (their of_peak fields).
//
// Each thread runs as many independent chains of fused multiply-adds as the GEMM micro-kernel has
// accumulators (tensor/kernels/gemm_microkernel.h: 24 vectors of 16 floats with AVX-512, 12 of 8
// with AVX2), in the micro-kernel's own SIMD type, so that the FMA units never wait for a result
// and the figure is the one the micro-kernel could reach with its data in registers. A
// multiply-add counts 2 FLOPs, as everywhere in qkv.
#pragma once

namespace qkv::bench {

// GFLOP/s of `threads` threads (at least 1, at most the machine's hardware threads) running FMA
// chains at once: the sum of each thread's rate over the CPU time it was given, the best of a few
// short repetitions. Timed by CPU time and not the wall clock, the figure is what the cores can do,
// whether or not the host lends one of them elsewhere during the probe (with the wall clock, on a
// machine busy with other builds, one run in three of the wall clock read a two-thread peak well
// below the others). The probe is short enough to run before every benchmark.
double peak_gflops(int threads);

}  // namespace qkv::bench
