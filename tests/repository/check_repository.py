#!/usr/bin/env python3
"""Checks of the repository's shape that anyone can run (CTest runs each as its own test).

usage: check_repository.py SOURCE_DIR CHECK [ARG]

checks:
  function-length       no function of the library, the examples or bench is over 80 lines
  self-contained        no file outside tests/ cites material a user who clones qkv does not
                        have: the maintainers' shared folder, their study notes, issue numbers
  engine-alone          the backward engine and record() mention no profiler, anomaly mode or
                        graph dump: those observe the engine from autograd/debug/
  core-without-figures  the core library (ARG: the path of libqkv) holds no image-library code,
                        and no core source includes plot/ or stb
  include-direction     every project include is one its folder may make: LIBRARY_DEPENDENCIES
                        states each folder's allowed dependencies, with no exception
"""
import os
import re
import subprocess
import sys

from function_lengths import functions

LIBRARY = ["tensor", "autograd", "nn", "optim", "io", "model_io", "data", "plot", "dist"]
CORE = ["tensor", "autograd", "nn", "optim", "io", "model_io", "data"]
SKIP_DIRS = {".git", "tests", "runs", "data_cache", "cache"}


def sources(root, folders, exts=(".h", ".cpp")):
    for folder in folders:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for name in sorted(names):
                if name.endswith(exts):
                    yield os.path.join(dirpath, name)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def matching_lines(root, path, pattern):
    """ "file:line: text" for each line of `path` that `pattern` finds something in."""
    return [f"{os.path.relpath(path, root)}:{number}: {text.strip()}"
            for number, text in enumerate(read(path).splitlines(), 1) if pattern.search(text)]


MAX_FUNCTION_LINES = 80


def function_length(root, _):
    bad = []
    for path in sources(root, LIBRARY + ["examples", "bench"]):
        for name, line, length in functions(read(path)):
            if length > MAX_FUNCTION_LINES:
                bad.append(f"{os.path.relpath(path, root)}:{line}: {name} is {length} lines")
    return bad


def self_contained(root, _):
    pattern = re.compile(r"\.\./shared|shared/anchors|[Tt]he seeds|seeds'|seed [0-9]{3}|[Ii]ssue #?[0-9]+")
    bad = []
    for dirpath, dirs, names in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")
                   and not (rel == "." and d == "tests")]
        for name in names:
            path = os.path.join(dirpath, name)
            if name.endswith((".png", ".safetensors", ".npy")):
                continue
            bad += matching_lines(root, path, pattern)
    return bad


def engine_alone(root, _):
    words = re.compile(r"profil|anomal|dump", re.IGNORECASE)
    bad = []
    for name in ["engine.h", "engine.cpp", "function.h", "function.cpp", "node.h", "node.cpp"]:
        path = os.path.join(root, "autograd", name)
        if os.path.exists(path):
            bad += matching_lines(root, path, words)
    return bad


def core_without_figures(root, library):
    include = re.compile(r'^\s*#\s*include\s*[<"](plot/|dist/|stb|mpi)')
    bad = []
    for path in sources(root, CORE):
        bad += matching_lines(root, path, include)
    symbols = subprocess.run(["nm", "-A", library], capture_output=True, text=True, check=True).stdout
    bad += [line for line in symbols.splitlines() if "stbi" in line][:10]
    return bad


# What each folder may include besides itself: a graph, not one order. io/ holds byte formats that
# need tensors alone, so the debuggers (which write JSON and files) and data/ use it without
# reaching nn/; model_io/ holds the files of models and optimizers, so it sits above optim/. The
# examples and bench share everything: `tagger bench` runs bench/tagger_bench.cpp, which builds the
# tagger's model.
LIBRARY_DEPENDENCIES = {
    "tensor": [],
    "io": ["tensor"],
    "autograd": ["tensor"],
    "autograd/debug": ["autograd", "io", "tensor"],
    "nn": ["autograd", "tensor"],
    "optim": ["nn", "autograd", "tensor"],
    "model_io": ["optim", "nn", "autograd", "io", "tensor"],
    "data": ["io", "tensor"],
    "plot": ["tensor"],
    "dist": ["model_io", "optim", "nn", "autograd", "io", "tensor"],
}
ALLOWED = dict(LIBRARY_DEPENDENCIES)
ALLOWED["examples"] = ALLOWED["bench"] = list(LIBRARY_DEPENDENCIES) + ["examples", "bench"]


def folder_of(path):
    """The folder of ALLOWED that holds `path` most closely, or None."""
    best = None
    for name in ALLOWED:
        if (path == name or path.startswith(name + "/")) and (best is None or len(name) > len(best)):
            best = name
    return best


def include_direction(root, _):
    include = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
    bad = []
    for path in sources(root, list(ALLOWED)):
        rel = os.path.relpath(path, root)
        mine = folder_of(rel)
        for number, text in enumerate(read(path).splitlines(), 1):
            match = include.match(text)
            target = folder_of(match.group(1)) if match else None
            if target is not None and target != mine and target not in ALLOWED[mine]:
                bad.append(f"{rel}:{number}: includes {match.group(1)}, from {target}/, which {mine}/ may not "
                           f"include (it may include {', '.join(ALLOWED[mine]) or 'nothing of the project'})")
    return bad


CHECKS = {"function-length": function_length, "self-contained": self_contained,
          "engine-alone": engine_alone, "core-without-figures": core_without_figures,
          "include-direction": include_direction}


def main():
    root, check = sys.argv[1], sys.argv[2]
    bad = CHECKS[check](root, sys.argv[3] if len(sys.argv) > 3 else None)
    for line in bad:
        print(line)
    print(f"{check}: {len(bad)} problem(s)" if bad else f"{check}: ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
