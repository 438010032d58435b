"""Golden gradients for qkv's data-parallel reducer, from PyTorch's DistributedDataParallel itself.

    /usr/bin/python3 tests/dist/ddp_golden.py tests/dist/fixtures/ddp

Writes, as float32 .npy files in the given directory, a small network Net (fc1: Linear(6, 8), tanh,
fc2: Linear(8, 3); fc1.weight.npy, fc1.bias.npy, fc2.weight.npy, fc2.bias.npy in PyTorch's layouts),
a batch x.npy (7, 6), targets t.npy (7, 3) and per-row token counts tokens.npy (7,), all from
np.random.default_rng(0). Two Gloo processes then wrap Net in DistributedDataParallel; rank r takes
rows r, r+2, r+4, ... and its loss is Σ tokens[row]·‖net(x_row) − t_row‖² over its rows, divided by
the global token count (13) and multiplied by the world size (2). DDP averages gradients over ranks,
so the factor 2 makes its result the sum of the ranks' shares, which is what the qkv reducer computes.
Rank 0 writes each gradient as grad_<name>.npy (grad_fc1.weight.npy, ...) after checking that it
equals the gradient of the same loss over all 7 rows in one process, up to float32 rounding (the
absolute tolerance is for entries that are sums of nearly cancelling terms).
Exits with 77 (CTest's "skipped") when PyTorch or its Gloo backend is not available.
"""
import os
import socket
import sys

import numpy as np

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch import nn
    if not (dist.is_available() and dist.is_gloo_available()):
        raise ImportError("torch.distributed with Gloo is not available")
except ImportError as e:
    print(f"ddp_golden.py: {e}; skipped", file=sys.stderr)
    sys.exit(77)

WORLD = 2


class Net(nn.Module):
    def __init__(self, params):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 8), nn.Linear(8, 3)
        with torch.no_grad():
            for name, p in self.named_parameters():
                p.copy_(torch.from_numpy(params[name]))

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def loss_of(net, x, t, tokens, scale):
    err = ((net(torch.from_numpy(x)) - torch.from_numpy(t)) ** 2).sum(dim=1)
    return (torch.from_numpy(tokens) * err).sum() / scale


def worker(rank, port, params, x, t, tokens, out_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    net = nn.parallel.DistributedDataParallel(Net(params))
    rows = slice(rank, None, WORLD)
    loss_of(net, x[rows], t[rows], tokens[rows], tokens.sum() / WORLD).backward()
    if rank == 0:
        single, diff = Net(params), 0.0
        loss_of(single, x, t, tokens, tokens.sum()).backward()
        expected = dict(single.named_parameters())
        for name, p in net.module.named_parameters():
            got, want = p.grad.numpy(), expected[name].grad.numpy()
            assert np.allclose(got, want, rtol=1e-5, atol=1e-6), name
            diff = max(diff, float(np.abs(got - want).max()))
            np.save(os.path.join(out_dir, f"grad_{name}.npy"), got.astype("<f4"))
        print(f"ddp_golden.py: DDP gradients match one process over all rows (max difference {diff:.3g})")
    dist.destroy_process_group()


def main():
    out_dir, rng = sys.argv[1], np.random.default_rng(0)
    os.makedirs(out_dir, exist_ok=True)
    f32 = lambda a: np.ascontiguousarray(a, dtype="<f4")
    params = {name: f32(rng.normal(size=shape) * 0.5) for name, shape in
              (("fc1.weight", (8, 6)), ("fc1.bias", (8,)), ("fc2.weight", (3, 8)), ("fc2.bias", (3,)))}
    x, t = f32(rng.normal(size=(7, 6))), f32(rng.normal(size=(7, 3)))
    tokens = f32([1, 2, 3, 1, 2, 3, 1])
    for name, a in {**params, "x": x, "t": t, "tokens": tokens}.items():
        np.save(os.path.join(out_dir, f"{name}.npy"), a)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(port, params, x, t, tokens, out_dir), nprocs=WORLD)


if __name__ == "__main__":
    main()
