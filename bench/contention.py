"""qkv's training step on a busy machine: the default thread count against one thread.

For 0, 1 and 2 busy-loop processes running beside it (each a shell spinning `while :; do :; done`,
as another tenant's job would), it runs `tagger bench --config C` at --threads 1 and at the default
thread count (all cores), alternating the two within each round so that both meet the same
conditions, and prints per configuration and load the median step time of each and their ratio:

    busy=1 config=tiny one_thread_ms=... default_ms=... default_threads=2 ratio=0.93

A ratio at or below 1 means the default never loses to one thread; the goal is <= 1.1 under load and
<= 1 on a quiet machine.

Usage: python3 bench/contention.py [--tagger build/examples/tagger] [--configs tiny,small,base]
                                   [--busy 0,1,2] [--rounds 5] [--steps N]
Run it on an otherwise quiet machine: the busy loops are the only load it means to measure.
"""

import argparse
import os
import statistics
import subprocess

from tagger_bench_line import positive_int, tagger_bench


def busy_counts(text):
    """--busy: a comma-separated list of integers >= 0."""
    try:
        counts = [int(b) for b in text.split(",")]
    except ValueError:
        counts = [-1]
    if any(c < 0 for c in counts):
        raise argparse.ArgumentTypeError(f"expected numbers of busy loops >= 0 like 0,1,2, got {text}")
    return counts


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tagger", default="build/examples/tagger")
    parser.add_argument("--configs", default="tiny,small,base")
    parser.add_argument("--busy", type=busy_counts, default=[0, 1, 2], help="numbers of busy-loop processes")
    parser.add_argument("--rounds", type=positive_int, default=5)
    parser.add_argument("--steps", type=positive_int, help="timed steps per run (default: by config)")
    return parser.parse_args()


def step_ms(tagger, config, threads, steps):
    """One `tagger bench` run's median step time in ms and its thread count (threads None: the
    default count, with QKV_NUM_THREADS and OMP_NUM_THREADS unset)."""
    env = dict(os.environ)
    env.pop("QKV_NUM_THREADS", None)
    env.pop("OMP_NUM_THREADS", None)
    fields = tagger_bench(tagger, config, threads, steps, env)
    return float(fields["ms_per_step"]), int(fields["threads"])


def measure(args, busy, config):
    steps = args.steps
    loops = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(busy)]
    try:
        one, default, default_threads = [], [], 0
        for r in range(args.rounds):
            # Alternate which goes first, so that neither always meets the machine just after a change.
            order = [1, None] if r % 2 == 0 else [None, 1]
            for threads in order:
                ms, used = step_ms(args.tagger, config, threads, steps)
                if threads == 1:
                    one.append(ms)
                else:
                    default.append(ms)
                    default_threads = used
    finally:
        for p in loops:
            p.kill()
            p.wait()
    a, b = statistics.median(one), statistics.median(default)
    print(f"busy={busy} config={config} one_thread_ms={a:.2f} default_ms={b:.2f} "
          f"default_threads={default_threads} ratio={b / a:.2f}", flush=True)


def main():
    args = parse_args()
    for busy in args.busy:
        for config in args.configs.split(","):
            measure(args, busy, config)


if __name__ == "__main__":
    main()
