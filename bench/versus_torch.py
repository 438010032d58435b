"""qkv against PyTorch per training step, interleaved in one sitting.

For each config, each round runs in turn: `tagger bench` at 1 and 2 threads, and
bench/torch_anchor.py at 1/1, 2/1 and 2/2 (torch threads / BLAS threads). It prints the medians over
the rounds, in ms per step and MiB of peak resident memory, and the ratios the project tracks:

    config=base qkv_1=... qkv_2=... torch_1_1=... torch_2_1=... torch_2_2=... \\
        vs_torch_1thread=... vs_torch_best=... rss_qkv=... rss_torch=... of_peak_1=... of_peak_2=...

vs_torch_1thread is PyTorch 1/1 over qkv at 1 thread; vs_torch_best is PyTorch's best setting over
qkv at 2 threads; of_peak_N is the share of the FMA peak qkv's step reached at N threads (the median
of `tagger bench`'s own of_peak).

Usage: python3 bench/versus_torch.py [--tagger build/examples/tagger] [--configs tiny,small,base,brown]
                                     [--rounds 3] [--matmul highest|medium]
--matmul medium runs qkv's products with bfloat16 operands (`tagger bench --matmul medium`); PyTorch
stays in float32, so those ratios compare qkv's fastest step with PyTorch's float32 one.
PyTorch runs through /usr/bin/python3 (Debian's python3-torch).
"""

import argparse
import os
import statistics

from tagger_bench_line import bench_fields, positive_int, tagger_bench

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tagger", default="build/examples/tagger")
    parser.add_argument("--configs", default="tiny,small,base,brown")
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--matmul", choices=["highest", "medium"], default="highest")
    return parser.parse_args()


def qkv(args, config, threads):
    return tagger_bench(args.tagger, config, threads, extra=["--matmul", args.matmul])


def torch(config, threads, blas):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(blas))
    return bench_fields(["/usr/bin/python3", os.path.join(HERE, "torch_anchor.py"), config, str(threads),
                   "--blas-threads", str(blas)], env)


def main():
    args = parse_args()
    for config in args.configs.split(","):
        runs = {k: [] for k in ["qkv_1", "qkv_2", "torch_1_1", "torch_2_1", "torch_2_2"]}
        for _ in range(args.rounds):
            runs["qkv_1"].append(qkv(args, config, 1))
            runs["torch_1_1"].append(torch(config, 1, 1))
            runs["qkv_2"].append(qkv(args, config, 2))
            runs["torch_2_1"].append(torch(config, 2, 1))
            runs["torch_2_2"].append(torch(config, 2, 2))

        def med(name, field="ms_per_step"):
            return statistics.median(float(r[field]) for r in runs[name])

        ms = {name: med(name) for name in runs}
        torch_best = min(ms["torch_1_1"], ms["torch_2_1"], ms["torch_2_2"])
        rss_torch = min(med(n, "peak_rss_mib") for n in ["torch_1_1", "torch_2_1", "torch_2_2"])
        print(f"config={config} " + " ".join(f"{k}={v:.2f}" for k, v in ms.items()) +
              f" vs_torch_1thread={ms['torch_1_1'] / ms['qkv_1']:.2f} vs_torch_best={torch_best / ms['qkv_2']:.2f}"
              f" rss_qkv={med('qkv_2', 'peak_rss_mib'):.0f} rss_torch={rss_torch:.0f}"
              f" of_peak_1={med('qkv_1', 'of_peak'):.0f}% of_peak_2={med('qkv_2', 'of_peak'):.0f}%", flush=True)


if __name__ == "__main__":
    main()
