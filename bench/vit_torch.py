"""The PyTorch anchor of `vit bench`: the same tiny ViT and training step, timed the same way.

The model is examples/vit/model.h's with its defaults (or the options given, as `vit bench` takes
them): 28×28 images cut into --patch × --patch patches, one linear layer embedding each patch, the
2-D sinusoidal positions of nn/positional_encoding_2d.h added, a class token first, --layers pre-norm
blocks (multi-head attention without biases in its projections, as qkv's; a GELU FFN with biases),
a final LayerNorm and a linear head on the class token. A step is what `vit bench` times: forward,
label-smoothed cross-entropy, backward, gradient clipping at norm 1, AdamW with weight decay on the
matrices. Random images, random labels; untimed warm-up steps, then the median of the timed ones.
It prints one line in `vit bench`'s format:

    config=vit threads=N ms_per_step=... images_per_s=... peak_rss_mib=... parameters=...

Usage: /usr/bin/python3 bench/vit_torch.py [THREADS] [--blas-threads N] [--patch 4] [--d-model 64]
           [--heads 4] [--layers 4] [--ffn-hidden 128] [--batch 128] [--warmup-steps 3] [--bench-steps 20]
"""

import argparse
import math
import os
import resource
import statistics
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("threads", nargs="?", type=int, default=1)
    p.add_argument("--blas-threads", type=int)
    for name, default in [("patch", 4), ("d-model", 64), ("heads", 4), ("layers", 4), ("ffn-hidden", 128),
                          ("batch", 128), ("warmup-steps", 3), ("bench-steps", 20)]:
        p.add_argument(f"--{name}", type=int, default=default)
    args = p.parse_args()
    if 28 % args.patch or args.d_model % 4 or args.d_model % args.heads:
        p.error("--patch must divide 28, --d-model be divisible by 4 and by --heads")
    return args


ARGS = parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.blas_threads or ARGS.threads)
import torch  # noqa: E402  (after OPENBLAS_NUM_THREADS, which OpenBLAS reads when it loads)
from torch import nn  # noqa: E402


def sinusoidal_2d(height, width, d):
    """nn/positional_encoding_2d.h: [PE_x, PE_y], each d/2 wide with sin and cos interleaved."""
    half = d // 2
    freq = torch.pow(10000.0, -torch.arange(0, half, 2, dtype=torch.float32) / half)

    def table(n):
        angles = torch.arange(n, dtype=torch.float32)[:, None] * freq[None, :]
        t = torch.zeros(n, half)
        t[:, 0::2], t[:, 1::2] = torch.sin(angles), torch.cos(angles)
        return t

    x, y = table(width), table(height)
    return torch.cat([x[None, :, :].expand(height, width, half), y[:, None, :].expand(height, width, half)], 2)


class Block(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attention = nn.MultiheadAttention(d, heads, bias=False, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(d, ffn), nn.GELU(), nn.Linear(ffn, d))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attention(h, h, h, need_weights=False)[0]
        return x + self.ffn(self.norm2(x))


class ViT(nn.Module):
    def __init__(self, a):
        super().__init__()
        g = 28 // a.patch
        self.patch_embedding = nn.Linear(a.patch * a.patch, a.d_model)
        self.register_buffer("P", sinusoidal_2d(g, g, a.d_model).reshape(g * g, a.d_model))
        self.cls_token = nn.Parameter(torch.zeros(1, 1, a.d_model))
        self.blocks = nn.ModuleList(Block(a.d_model, a.heads, a.ffn_hidden) for _ in range(a.layers))
        self.norm = nn.LayerNorm(a.d_model)
        self.head = nn.Linear(a.d_model, 10)

    def forward(self, patches):  # (B, N, p²) -> (B, 10)
        x = self.patch_embedding(patches) + self.P
        x = torch.cat([self.cls_token.expand(x.shape[0], 1, -1), x], 1)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


def main():
    torch.set_num_threads(ARGS.threads)
    torch.manual_seed(1)
    model = ViT(ARGS)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and n != "cls_token"]
    no_decay = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and n != "cls_token")]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=1e-3)
    n = (28 // ARGS.patch) ** 2
    x = torch.randn(ARGS.batch, n, ARGS.patch * ARGS.patch)
    y = torch.randint(0, 10, (ARGS.batch,))
    times = []
    for step in range(ARGS.warmup_steps + ARGS.bench_steps):
        start = time.perf_counter()
        loss = nn.functional.cross_entropy(model(x), y, label_smoothing=0.1)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step >= ARGS.warmup_steps:
            times.append(time.perf_counter() - start)
    ms = 1e3 * statistics.median(times)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    params = sum(p.numel() for p in model.parameters())
    print(f"config=vit threads={ARGS.threads} ms_per_step={ms:.2f} images_per_s={ARGS.batch / ms * 1e3:.0f} "
          f"peak_rss_mib={rss:.0f} parameters={params}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
