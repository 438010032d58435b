"""PyTorch's time for the character encoder that bench/char_encoder.cpp times in qkv, on this machine.

The same model and shapes: nn.Embedding(80, E, padding_idx=0) -> nn.Conv1d(E, F, 3, padding=1) ->
relu -> max over each word's valid positions (masked_fill with -inf, then max), N words of 1 to L
random characters, forward and forward+backward of the loss sum(r * out); the median of REPEATS
calls after one warm-up, in the line format of bench_char_encoder. PyTorch's Conv1d takes (N, E, L),
so the embeddings are transposed before it, as a PyTorch model does.

    /usr/bin/python3 bench/char_encoder_torch.py [N L E F] [--threads 1,2] [--repeats 30]
"""
import argparse
import statistics
import time

import torch

NUM_CHARS = 80


def median_ms(repeats, fn):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[640, 12, 32, 64], help="N L E F")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    N, L, E, F = args.sizes
    torch.manual_seed(42)
    embedding = torch.nn.Embedding(NUM_CHARS, E, padding_idx=0)
    conv = torch.nn.Conv1d(E, F, 3, padding=1)
    lengths = torch.randint(1, L + 1, (N,))
    pad = torch.arange(L)[None, :] >= lengths[:, None]  # (N, L)
    chars = torch.randint(1, NUM_CHARS, (N, L)).masked_fill(pad, 0)
    r = torch.randn(N, F)

    def forward():
        h = torch.relu(conv(embedding(chars).transpose(1, 2)))  # (N, F, L)
        return h.masked_fill(pad[:, None, :], float("-inf")).max(dim=2).values

    def step():
        embedding.zero_grad(), conv.zero_grad()
        (forward() * r).sum().backward()

    for threads in map(int, args.threads.split(",")):
        torch.set_num_threads(threads)
        with torch.no_grad():
            fwd = median_ms(args.repeats, forward)
        both = median_ms(args.repeats, step)
        print(f"torch CharEncoder N={N} L={L} E={E} F={F} threads={threads}: forward {fwd:.3f} ms, "
              f"forward+backward {both:.3f} ms (median of {args.repeats}) torch {torch.__version__}")


main()
