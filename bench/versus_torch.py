"""qkv against PyTorch per training step, interleaved in one sitting.

For each config, each round runs in turn: qkv's bench at 1 and 2 threads (`tagger bench`, or for lm
`lm bench --what step`), and bench/torch_anchor.py at 1/1, 2/1 and 2/2 (torch threads / BLAS
threads). It prints the medians over the rounds, in ms per step and MiB of peak resident memory,
and the ratios the project tracks:

    config=base qkv_1=... qkv_2=... torch_1_1=... torch_2_1=... torch_2_2=... \\
        vs_torch_1thread=... vs_torch_best=... rss_qkv=... rss_torch=... of_peak_1=... of_peak_2=...

vs_torch_1thread is PyTorch 1/1 over qkv at 1 thread; vs_torch_best is PyTorch's best setting over
qkv at 2 threads; of_peak_N is the share of the FMA peak qkv's step reached at N threads (the median
of the of_peak its bench prints: `tagger bench`, `lm bench`, `vit bench`).

Usage: python3 bench/versus_torch.py [--tagger build/examples/tagger] [--configs tiny,small,base,brown]
                                     [--rounds 3] [--matmul highest|medium]
       python3 bench/versus_torch.py --configs lm [--lm build/examples/lm] [--rounds 3] [--lm-steps 20]
                                     [--lm-options="--context 128 --positions rotary"]
--matmul medium runs qkv's products with bfloat16 operands (`--matmul medium` of each bench); PyTorch
stays in float32, so those ratios compare qkv's fastest step with PyTorch's float32 one. qkv's
benches are always given --matmul (highest by default), whatever their own default. The lm config times the character-level GPT of examples/lm on both sides, each run 3
untimed warm-up steps and then --lm-steps timed ones; --lm-options (model options both `lm bench`
and torch_anchor.py's lm accept: --context, --d-model, --heads, --layers, --ffn-hidden, --batch,
--positions learned|rotary, --ffn gelu|relu|swiglu) go to both, so they time the same model.
The vit config times the tiny ViT of examples/vit (`vit bench`) against bench/vit_torch.py, the same
model and step in PyTorch, each run 3 untimed warm-up steps and then --lm-steps timed ones;
--vit-options (--patch, --d-model, --heads, --layers, --ffn-hidden, --batch) go to both:
       python3 bench/versus_torch.py --configs vit [--vit build/examples/vit] [--rounds 5]
                                     [--vit-options="--layers 4"]
PyTorch runs through /usr/bin/python3 (Debian's python3-torch).
"""

import argparse
import os
import shlex
import statistics
import sys

from tagger_bench_line import bench_fields, positive_int, tagger_bench

HERE = os.path.dirname(os.path.abspath(__file__))
LM_WARMUP_STEPS = 3  # `lm bench`'s default, on both sides


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tagger", default="build/examples/tagger")
    parser.add_argument("--lm", default="build/examples/lm", help="the lm program, for config lm")
    parser.add_argument("--vit", default="build/examples/vit", help="the vit program, for config vit")
    parser.add_argument("--configs", default="tiny,small,base,brown", help="any of tiny, small, base, brown, lm, vit")
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--matmul", choices=["highest", "medium"], default="highest")
    parser.add_argument("--lm-steps", type=positive_int, default=20, help="timed steps of each lm run, both sides")
    parser.add_argument("--lm-options", default="", help='model options for both lm sides, e.g. "--context 128"')
    parser.add_argument("--vit-options", default="", help='model options for both vit sides, e.g. "--layers 4"')
    args = parser.parse_args()
    args.configs = args.configs.split(",")
    args.lm_options = shlex.split(args.lm_options)
    args.vit_options = shlex.split(args.vit_options)
    if "lm" in args.configs:
        if not os.path.exists(args.lm):
            sys.exit(f"{args.lm} not found: build it with ./qkv build lm (or give --lm PATH)")
    elif args.lm_options:
        parser.error("--lm-options is for config lm, which --configs does not name")
    if args.vit_options and "vit" not in args.configs:
        parser.error("--vit-options is for config vit, which --configs does not name")
    return args


def lm_steps(args):
    return ["--warmup-steps", str(LM_WARMUP_STEPS), "--bench-steps", str(args.lm_steps), *args.lm_options]


def qkv(args, config, threads):
    # qkv's products as --matmul says, always given: lm's default is auto (bfloat16 where it can).
    precision = ["--matmul", args.matmul]
    if config == "vit":
        return bench_fields([args.vit, "bench", "--threads", str(threads), *lm_steps(args)[:4], *args.vit_options,
                             *precision])
    if config == "lm":
        return bench_fields([args.lm, "bench", "--what", "step", "--threads", str(threads), *lm_steps(args), *precision])
    return tagger_bench(args.tagger, config, threads, extra=["--matmul", args.matmul])


def torch(args, config, threads, blas):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(blas))
    if config == "vit":
        return bench_fields(["/usr/bin/python3", os.path.join(HERE, "vit_torch.py"), str(threads),
                             "--blas-threads", str(blas), *lm_steps(args)[:4], *args.vit_options], env)
    extra = lm_steps(args) if config == "lm" else []
    return bench_fields(["/usr/bin/python3", os.path.join(HERE, "torch_anchor.py"), config, str(threads),
                   "--blas-threads", str(blas), *extra], env)


def main():
    args = parse_args()
    for config in args.configs:
        runs = {k: [] for k in ["qkv_1", "qkv_2", "torch_1_1", "torch_2_1", "torch_2_2"]}
        for _ in range(args.rounds):
            runs["qkv_1"].append(qkv(args, config, 1))
            runs["torch_1_1"].append(torch(args, config, 1, 1))
            runs["qkv_2"].append(qkv(args, config, 2))
            runs["torch_2_1"].append(torch(args, config, 2, 1))
            runs["torch_2_2"].append(torch(args, config, 2, 2))

        def med(name, field="ms_per_step"):
            return statistics.median(float(r[field]) for r in runs[name])

        ms = {name: med(name) for name in runs}
        torch_best = min(ms["torch_1_1"], ms["torch_2_1"], ms["torch_2_2"])
        rss_torch = min(med(n, "peak_rss_mib") for n in ["torch_1_1", "torch_2_1", "torch_2_2"])
        peak = f" of_peak_1={med('qkv_1', 'of_peak'):.0f}% of_peak_2={med('qkv_2', 'of_peak'):.0f}%"
        print(f"config={config} " + " ".join(f"{k}={v:.2f}" for k, v in ms.items()) +
              f" vs_torch_1thread={ms['torch_1_1'] / ms['qkv_1']:.2f} vs_torch_best={torch_best / ms['qkv_2']:.2f}"
              f" rss_qkv={med('qkv_2', 'peak_rss_mib'):.0f} rss_torch={rss_torch:.0f}" + peak, flush=True)


if __name__ == "__main__":
    main()
