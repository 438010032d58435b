"""Golden values for tests/nn/test_transformer.cpp, computed independently of qkv with numpy in
float64: d2l's TransformerEncoder (d2l 11.7.4; post-norm blocks, d2l 11.7.2) written out from its
equations. Run with `python3 tests/nn/transformer_golden.py`; it prints the expected output.

Every parameter, in named_parameters() order, is filled with value(i, j) = sin(1 + 0.37·i +
0.91·j) for its flat index i and its ordinal j, as the test fills them.
"""
import numpy as np

V, D, H, F, L = 6, 4, 2, 8, 2
ids = np.array([[1, 5, 0], [3, 2, 4]])
valid_lens = np.array([2, 3])
B, T = ids.shape

shapes = [("embedding.weight", (V, D))]
for l in range(L):
    p = f"blocks.{l}."
    shapes += [(p + "attention.W_q.weight", (D, D)), (p + "attention.W_k.weight", (D, D)),
               (p + "attention.W_v.weight", (D, D)), (p + "attention.W_o.weight", (D, D)),
               (p + "addnorm1.ln.weight", (D,)), (p + "addnorm1.ln.bias", (D,)),
               (p + "ffn.dense1.weight", (F, D)), (p + "ffn.dense1.bias", (F,)),
               (p + "ffn.dense2.weight", (D, F)), (p + "ffn.dense2.bias", (D,)),
               (p + "addnorm2.ln.weight", (D,)), (p + "addnorm2.ln.bias", (D,))]
P = {}
for j, (name, shape) in enumerate(shapes):
    i = np.arange(np.prod(shape))
    P[name] = (np.sin(1 + 0.37 * i + 0.91 * j)).reshape(shape)


def linear(x, name, bias=True):  # y = x·Wᵀ + b, PyTorch's layout
    y = x @ P[name + ".weight"].T
    return y + P[name + ".bias"] if bias and name + ".bias" in P else y


def layer_norm(x, name):
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * P[name + ".weight"] + P[name + ".bias"]


def masked_softmax(s, lens):  # lens per batch element, shared by heads and queries
    keep = np.arange(s.shape[-1])[None, :] < lens[:, None]          # (B, K)
    s = np.where(keep[:, None, None, :], s, -np.inf)                # (B, H, Q, K)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def mha(x, p):
    d = D // H
    split = lambda y: y.reshape(B, T, H, d).transpose(0, 2, 1, 3)  # (B, H, T, d)
    q, k, v = (split(linear(x, p + w, bias=False)) for w in ("W_q", "W_k", "W_v"))
    w = masked_softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d), valid_lens)
    return linear((w @ v).transpose(0, 2, 1, 3).reshape(B, T, D), p + "W_o", bias=False), w


pos = np.arange(T)[:, None] / np.power(10000, np.arange(0, D, 2) / D)
PE = np.zeros((T, D))
PE[:, 0::2], PE[:, 1::2] = np.sin(pos), np.cos(pos)

X = P["embedding.weight"][ids] * np.sqrt(D) + PE
weights = []
for l in range(L):
    p = f"blocks.{l}."
    a, w = mha(X, p + "attention.")
    weights.append(w)
    Y = layer_norm(X + a, p + "addnorm1.ln")
    f = linear(np.maximum(linear(Y, p + "ffn.dense1"), 0), p + "ffn.dense2")
    X = layer_norm(Y + f, p + "addnorm2.ln")

np.set_printoptions(precision=7, suppress=True, floatmode="fixed")
print("output (B, T, D):", ", ".join(f"{v:.7f}f" for v in X.ravel()))
print("block 0 weights, batch 1 (H, T, T):", ", ".join(f"{v:.7f}f" for v in weights[0][1].ravel()))
print("block 1 weights, batch 0 (H, T, T):", ", ".join(f"{v:.7f}f" for v in weights[1][0].ravel()))
