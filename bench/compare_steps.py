"""Training steps of `tagger bench` under several contenders, interleaved in one sitting.

A contender is NAME=COMMAND: a tagger program and options of its bench command, so that the same
script compares two builds (old=../old/build/examples/tagger new=build/examples/tagger) or the two
modes of one build (fast=build/examples/tagger "reference=build/examples/tagger --reference").
Each round runs every contender on every config at every thread count, in turn, so that a busy
moment of a shared machine falls on all of them alike; each round starts with the next contender,
since on this host whichever runs first after a pause reads a few per cent faster. It prints, per
config and thread count, the medians over the rounds of ms per step and CPU ms per step, and each
contender's ratio to the first:

    config=tiny threads=1 fast_ms=6.75 fast_cpu_ms=6.75 reference_ms=16.47 reference_cpu_ms=16.46 reference_vs_fast=2.442

Usage: python3 bench/compare_steps.py [--configs tiny,small,base,brown] [--threads 1,2] [--rounds 3]
                                      NAME=COMMAND NAME=COMMAND ...
"""

import argparse
import shlex
import statistics

from tagger_bench_line import positive_int, tagger_bench


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="tiny,small,base,brown")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("contenders", nargs="+", metavar="NAME=COMMAND")
    args = parser.parse_args()
    contenders = []
    for item in args.contenders:
        name, sep, command = item.partition("=")
        if not sep or not name or not command.strip():
            parser.error(f"expected NAME=COMMAND, got '{item}'")
        if name in (n for n, _ in contenders):
            parser.error(f"contender '{name}' is named twice")
        contenders.append((name, shlex.split(command)))
    args.contenders = contenders
    args.threads = [positive_int(t) for t in args.threads.split(",")]
    return args


def main():
    args = parse_args()
    for config in args.configs.split(","):
        for threads in args.threads:
            runs = {name: [] for name, _ in args.contenders}
            for r in range(args.rounds):
                order = args.contenders[r % len(args.contenders):] + args.contenders[:r % len(args.contenders)]
                for name, command in order:
                    runs[name].append(tagger_bench(command[0], config, threads, extra=command[1:]))
            first = args.contenders[0][0]
            fields = []
            for name, _ in args.contenders:
                ms = statistics.median(float(r["ms_per_step"]) for r in runs[name])
                cpu = statistics.median(float(r["cpu_ms_per_step"]) for r in runs[name])
                fields += [f"{name}_ms={ms:.2f}", f"{name}_cpu_ms={cpu:.2f}"]
                if name != first:
                    base = statistics.median(float(r["ms_per_step"]) for r in runs[first])
                    fields.append(f"{name}_vs_{first}={ms / base:.3f}")
            print(f"config={config} threads={threads} " + " ".join(fields), flush=True)


if __name__ == "__main__":
    main()
