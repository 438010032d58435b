"""Runs `tagger bench` (or any command printing its kind of line) and reads the line's fields.
Shared by bench/contention.py and bench/versus_torch.py."""

import argparse
import re
import subprocess
import sys

# Timed steps per config: enough for a steady median, few enough that a round stays short.
STEPS = {"tiny": 60, "small": 20, "base": 8, "brown": 30}


def positive_int(text):
    """An argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return value


def bench_fields(command, env=None):
    """The fields name=value of the last `config=` line the command prints; exits with the command's
    own error message if it fails, and passes its warnings on to stderr."""
    try:
        done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        sys.exit(f"{' '.join(command)} failed:\n{e.stderr.strip()}")
    out = done.stdout
    for line in done.stderr.splitlines():  # e.g. torch_anchor.py's warning of a reference BLAS
        if "warning" in line:
            print(line, file=sys.stderr)
    lines = [line for line in out.splitlines() if line.startswith("config=")]
    if not lines:
        sys.exit(f"no result line from {' '.join(command)}:\n{out}")
    return dict(re.findall(r"(\w+)=([0-9.]+)%?", lines[-1]))


def tagger_bench(tagger, config, threads=None, steps=None, env=None, extra=()):
    """One `tagger bench` run's fields (threads None: the default count; extra: more options)."""
    command = [tagger, "bench", "--config", config, "--steps", str(steps or STEPS.get(config, 20)),
               "--warmup", "3", *extra]
    if threads is not None:
        command += ["--threads", str(threads)]
    return bench_fields(command, env)
