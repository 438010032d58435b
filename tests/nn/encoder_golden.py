"""Golden values for tests/nn/test_encoder_parts.cpp: the Transformer encoder with every position
scheme, FFN, norm placement and window, written out from the equations in PyTorch (float64),
independently of qkv. Run from the repository root:

    /usr/bin/python3 tests/nn/encoder_golden.py > tests/nn/encoder_golden_values.h

Every parameter, in qkv's named_parameters() order, is filled with value(i, j) = 0.5·sin(1 + 0.37·i
+ 0.91·j) for its flat index i and its ordinal j, as the test fills them. The loss is
Σ out[b, t, c]·cos(0.3·n) over the output's flat index n; each parameter's gradient is reported as
the checksum Σ grad[i]·sin(0.7·i + 0.1).
"""
import math

import torch

torch.set_default_dtype(torch.float64)
V, D, H, F, L, MAX_LEN = 7, 8, 2, 12, 2, 8
ids = torch.tensor([[1, 5, 0, 6, 2], [3, 2, 4, 4, 1]])
valid_lens = torch.tensor([5, 3])
B, T = ids.shape
d = D // H


def t5_bucket(rel, num_buckets=32, max_distance=128):  # bidirectional, Mesh TensorFlow's function
    n = num_buckets // 2
    bucket = n if rel > 0 else 0
    rel = abs(rel)
    exact = n // 2
    if rel < exact:
        return bucket + rel
    large = exact + int(math.log(rel / exact) / math.log(max_distance / exact) * (n - exact))
    return bucket + min(large, n - 1)


def clipped_bucket(rel, k=16):
    return max(-k, min(k, rel)) + k


def shapes(positions, ffn, norm):
    out = [("embedding.weight", (V, D))]
    out += {"learned": [("positions.encoding.weight", (MAX_LEN, D))],
            "relative": [("positions.bias.weight", (32, H))],
            "clipped": [("positions.bias.weight", (33, H))]}.get(positions, [])
    for l in range(L):
        p = f"blocks.{l}."
        out += [(p + "attention." + w + ".weight", (D, D)) for w in ("W_q", "W_k", "W_v", "W_o")]
        out += [(p + ("norm1" if norm == "pre" else "addnorm1.ln") + s, (D,)) for s in (".weight", ".bias")]
        if ffn == "swiglu":
            out += [(p + "ffn.gate.weight", (F, D)), (p + "ffn.up.weight", (F, D)), (p + "ffn.down.weight", (D, F))]
        else:
            out += [(p + "ffn.dense1.weight", (F, D)), (p + "ffn.dense1.bias", (F,)),
                    (p + "ffn.dense2.weight", (D, F)), (p + "ffn.dense2.bias", (D,))]
        out += [(p + ("norm2" if norm == "pre" else "addnorm2.ln") + s, (D,)) for s in (".weight", ".bias")]
    if norm == "pre":
        out += [("norm.weight", (D,)), ("norm.bias", (D,))]
    return out


def fill(shape_list):
    P = {}
    for j, (name, shape) in enumerate(shape_list):
        i = torch.arange(math.prod(shape), dtype=torch.float64)
        P[name] = (0.5 * torch.sin(1 + 0.37 * i + 0.91 * j)).reshape(shape).requires_grad_()
    return P


def sinusoidal(n, dim, base=10000.0):
    angle = torch.arange(n)[:, None] / torch.pow(torch.tensor(base), torch.arange(0, dim, 2) / dim)
    table = torch.zeros(n, dim)
    table[:, 0::2], table[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return table


def rotate(x):  # RoPE with adjacent pairs (2i, 2i+1), position = index along dim -2
    angle = torch.arange(T)[:, None] / torch.pow(torch.tensor(10000.0), torch.arange(0, d, 2) / d)
    c, s = torch.cos(angle), torch.sin(angle)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], -1).flatten(-2)


def offset_bias(positions, P):  # (H, T, T) bias of offset j - i, or 0
    rel = [[j - i for j in range(T)] for i in range(T)]
    if positions == "alibi":
        slopes = torch.tensor([2.0 ** (-8.0 * h / H) for h in range(1, H + 1)])
        return -slopes[:, None, None] * torch.tensor(rel).abs()
    if positions in ("relative", "clipped"):
        bucket = t5_bucket if positions == "relative" else clipped_bucket
        idx = torch.tensor([[bucket(r) for r in row] for row in rel])
        return P["positions.bias.weight"][idx].permute(2, 0, 1)
    return torch.zeros(H, T, T)


def layer_norm(x, P, name):
    return torch.nn.functional.layer_norm(x, (D,), P[name + ".weight"], P[name + ".bias"], 1e-5)


def attention(x, P, p, positions, window):
    split = lambda y: y.reshape(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
    q, k, v = (split(x @ P[p + "attention." + w + ".weight"].T) for w in ("W_q", "W_k", "W_v"))
    if positions == "rotary":
        q, k = rotate(q), rotate(k)
    scores = q @ k.transpose(-1, -2) / math.sqrt(d) + offset_bias(positions, P)
    pos = torch.arange(T)
    keep = (pos[None, :] < valid_lens[:, None])[:, None, None, :]  # (B, 1, 1, K)
    if window >= 0:
        keep = keep & ((pos[None, :] - pos[:, None]).abs() <= window)
    scores = scores.masked_fill(~keep, -math.inf)
    weights = torch.softmax(scores, -1).nan_to_num(0.0)  # a row with no visible key: all zeros
    heads = (weights @ v).transpose(1, 2).reshape(B, T, D)
    return heads @ P[p + "attention.W_o.weight"].T


def ffn(x, P, p, kind):
    if kind == "swiglu":
        a = x @ P[p + "ffn.gate.weight"].T
        return (torch.nn.functional.silu(a) * (x @ P[p + "ffn.up.weight"].T)) @ P[p + "ffn.down.weight"].T
    h = x @ P[p + "ffn.dense1.weight"].T + P[p + "ffn.dense1.bias"]
    h = torch.nn.functional.gelu(h) if kind == "gelu" else torch.relu(h)
    return h @ P[p + "ffn.dense2.weight"].T + P[p + "ffn.dense2.bias"]


def encoder(P, positions, kind, norm, window):
    X = P["embedding.weight"][ids] * math.sqrt(D)
    if positions == "sinusoidal":
        X = X + sinusoidal(T, D)
    if positions == "learned":
        X = X + P["positions.encoding.weight"][:T]
    for l in range(L):
        p = f"blocks.{l}."
        if norm == "pre":
            Y = X + attention(layer_norm(X, P, p + "norm1"), P, p, positions, window)
            X = Y + ffn(layer_norm(Y, P, p + "norm2"), P, p, kind)
        else:
            Y = layer_norm(X + attention(X, P, p, positions, window), P, p + "addnorm1.ln")
            X = layer_norm(Y + ffn(Y, P, p, kind), P, p + "addnorm2.ln")
    return layer_norm(X, P, "norm") if norm == "pre" else X


CASES = [(pos, "relu", "post", -1) for pos in
         ("none", "sinusoidal", "learned", "rotary", "relative", "clipped", "alibi")]
CASES += [(pos, "relu", "post", 1) for pos in ("sinusoidal", "rotary", "relative", "alibi")]
CASES += [("sinusoidal", "gelu", "post", -1), ("sinusoidal", "swiglu", "post", -1), ("rotary", "swiglu", "pre", 1)]


def fmt(values):
    return ", ".join(f"{v:.9g}" for v in values)


def main():
    print("// Generated by tests/nn/encoder_golden.py: do not edit.")
    print("#pragma once\n\n#include <string>\n#include <utility>\n#include <vector>\n")
    print("namespace qkv::testing {\n")
    print("struct EncoderGolden {\n  std::string positions, ffn, norm;\n  int window;")
    print("  std::vector<double> output;\n  std::vector<std::pair<std::string, double>> grad_checksums;\n};\n")
    print("inline const std::vector<EncoderGolden> kEncoderGoldens = {")
    for positions, kind, norm, window in CASES:
        P = fill(shapes(positions, kind, norm))
        out = encoder(P, positions, kind, norm, window)
        n = torch.arange(out.numel(), dtype=torch.float64)
        (out.flatten() * torch.cos(0.3 * n)).sum().backward()
        checks = []
        for name, t in P.items():
            i = torch.arange(t.numel(), dtype=torch.float64)
            checks.append(f'{{"{name}", {float((t.grad.flatten() * torch.sin(0.7 * i + 0.1)).sum()):.9g}}}')
        print(f'    {{"{positions}", "{kind}", "{norm}", {window},\n     {{{fmt(out.detach().flatten().tolist())}}},')
        print("     {" + ", ".join(checks) + "}},")
    print("};\n\n}  // namespace qkv::testing")


if __name__ == "__main__":
    main()
