"""Golden values for tests/nn/test_efficient_attention_golden.cpp: three attention mechanisms written
out in PyTorch (float64) from their papers' equations, independently of qkv's code:

  Performer    Choromanski et al. 2021, "Rethinking Attention with Performers". Lemma 1 (FAVOR+
               positive random features): exp(x·y) = E_ω[exp(ω·x − |x|²/2)·exp(ω·y − |y|²/2)], so
               φ(x) = exp(−|x|²/2)/√m · (exp(ω_1·x), .., exp(ω_m·x)), with x = q/d^¼ or k/d^¼ so
               that φ(q')·φ(k') estimates exp(q·k/√d). Attention is D⁻¹·A·V with A = φ(Q')·φ(K')ᵀ
               and D = diag(A·1) (section 2.2); the script forms A, which the linear-time form
               reassociates away, so the two orders are compared.
  Linformer    Wang et al. 2020, "Linformer: Self-Attention with Linear Complexity", eq. 7:
               head_i = softmax(Q·W_i^Q·(E·K·W_i^K)ᵀ/√d)·F·V·W_i^V, one E and one F (k, n) shared
               by the heads (section 4, "Parameter sharing"); E·K is taken on the layer's input,
               before the projection W^K, as the equation writes it.
  Talking-heads Shazeer et al. 2020, "Talking-Heads Attention", section 4: the logits J of every
               head are mixed by P_l (L = J·P_l over the heads), softmax over the keys, the weights
               mixed by P_w (U = W·P_w), then U·V and the output projection.

What the papers leave open is written as qkv's headers document it, so that the numbers pin
those choices too. Performer: the features of keys past valid_lens are zero. The header scales a
query's features by exp(−its largest ω·x) and leaves out its |x|²/2, and scales the keys' of a head
by exp(−their largest ω·x − |x|²/2): constants per query row and per head, which cancel exactly in
D⁻¹·A, as nothing is added to the features. The script therefore writes Lemma 1's φ bare,
and the golden checks that they cancel: adding 1e-4 to every feature (the paper's code's
numerical stabilizer), or dropping a key's |x|²/2, moves the output well past the tolerance.
Linformer: a sequence of T <= n keys uses the first T columns of E and F, and padded keys and
values are zero rows before E and F. Talking-heads: logits scaled by 1/√d, the mask (valid lengths,
causal) applied to the mixed logits. Every mechanism: W_q, W_k, W_v, W_o are Linear(D, D) without
bias (y = x·Wᵀ); head h reads features [h·d, (h+1)·d).

Run from the repository root:

    /usr/bin/python3 tests/nn/efficient_attention_golden.py > tests/nn/efficient_attention_golden_values.h

Every parameter, in qkv's named_parameters() order (a module's own parameters, then its children's),
is filled with value(i, j) = 0.5·sin(1 + 0.37·i + 0.91·j) for its flat index i and its ordinal j, as
the test fills them. The input X (B, T, D) is sin(0.8 + 0.47·i) and the Performer's features ω
(m, d) are 0.8·sin(0.5 + 1.3·i), for flat index i. The loss is Σ out[n]·cos(0.3·n) over the
output's flat index n; each parameter's gradient, and the input's (last, named "input"), is
reported as the checksum Σ grad[i]·sin(0.7·i + 0.1).
"""
import math

import torch

torch.set_default_dtype(torch.float64)
B, T, D, H, MAX_LEN = 2, 5, 8, 2, 6
d = D // H
valid_lens = torch.tensor([5, 3])
key_valid = torch.arange(T)[None, :] < valid_lens[:, None]  # (B, K)
PROJECTIONS = [w + ".weight" for w in ("W_q", "W_k", "W_v", "W_o")]


def flat_formula(shape, f):
    i = torch.arange(math.prod(shape), dtype=torch.float64)
    return f(i).reshape(shape)


def fill(shape_list):
    P = {}
    for j, (name, shape) in enumerate(shape_list):
        P[name] = flat_formula(shape, lambda i: 0.5 * torch.sin(1 + 0.37 * i + 0.91 * j)).requires_grad_()
    return P


def split(y):  # (B, T', D) -> (B, H, T', d)
    return y.reshape(y.shape[0], y.shape[1], H, d).transpose(1, 2)


def merge(y):  # (B, H, T, d) -> (B, T, D)
    return y.transpose(1, 2).reshape(B, T, D)


def performer_phi(x, omega):
    """Lemma 1's positive features of x (B, H, T, d) for the rows ω of omega (m, d): (B, H, T, m)."""
    xs = x / d ** 0.25  # so that φ(q')·φ(k') estimates exp(q·k/√d)
    half_norm = 0.5 * (xs * xs).sum(-1, keepdim=True)
    return torch.exp(xs @ omega.T - half_norm) / math.sqrt(omega.shape[0])


def performer(X, P, m):
    omega = flat_formula((m, d), lambda i: 0.8 * torch.sin(0.5 + 1.3 * i))
    q, k, v = (split(X @ P[w].T) for w in PROJECTIONS[:3])
    phi_q = performer_phi(q, omega)
    phi_k = performer_phi(k, omega) * key_valid[:, None, :, None]
    A = phi_q @ phi_k.transpose(-1, -2)  # (B, H, Q, K): the kernel estimates of exp(q·k/√d)
    heads = (A @ v) / A.sum(-1, keepdim=True)  # D⁻¹·A·V
    return merge(heads) @ P["W_o.weight"].T


def linformer(X, P, k):
    E, F = P["E"][:, :T], P["F"][:, :T]  # (k, T): the first T of the n columns
    X_kv = X * key_valid[..., None]  # padded keys and values are zero rows
    EK, FV = E @ X_kv, F @ X_kv  # (B, k, D): the sequence projected to k rows
    q = split(X @ P["W_q.weight"].T)
    keys, values = split(EK @ P["W_k.weight"].T), split(FV @ P["W_v.weight"].T)
    weights = torch.softmax(q @ keys.transpose(-1, -2) / math.sqrt(d), -1)  # (B, H, T, k)
    return merge(weights @ values) @ P["W_o.weight"].T


def talking_heads(X, P, causal):
    q, k, v = (split(X @ P[w].T) for w in PROJECTIONS[:3])
    J = torch.einsum("bhnd,bhmd->bnmh", q, k) / math.sqrt(d)  # each head's logits
    L = torch.einsum("bnmh,hg->bnmg", J, P["P_l"])  # the talking-heads projection of the logits
    visible = key_valid[:, None, :, None]  # (B, 1, K, 1) against (B, Q, K, H)
    if causal:
        visible = visible & (torch.arange(T)[None, :] <= torch.arange(T)[:, None])[None, :, :, None]
    W = torch.softmax(L.masked_fill(~visible, -math.inf), dim=2)  # over the keys m
    U = torch.einsum("bnmh,hg->bnmg", W, P["P_w"])  # the talking-heads projection of the weights
    O = torch.einsum("bnmh,bhmd->bnhd", U, v)
    return O.reshape(B, T, D) @ P["W_o.weight"].T


def shapes(mechanism, features):
    own = {"linformer": [("E", (features, MAX_LEN)), ("F", (features, MAX_LEN))],
           "talking_heads": [("P_l", (H, H)), ("P_w", (H, H))]}.get(mechanism, [])
    return own + [(name, (D, D)) for name in PROJECTIONS]


def layer(mechanism, attend, features, X, P):
    if mechanism == "performer":
        return performer(X, P, features)
    if mechanism == "linformer":
        return linformer(X, P, features)
    return talking_heads(X, P, attend == "causal")


# (case name, mechanism, restriction, setup.features)
CASES = [("performer m=6", "performer", "full", 6),
         ("linformer k=3", "linformer", "full", 3),
         ("linformer k=max_len", "linformer", "full", MAX_LEN),
         ("talking_heads full", "talking_heads", "full", 0),
         ("talking_heads causal", "talking_heads", "causal", 0)]


def checksum(grad):
    i = torch.arange(grad.numel(), dtype=torch.float64)
    return float((grad.flatten() * torch.sin(0.7 * i + 0.1)).sum())


def fmt(values):
    return ", ".join(f"{v:.9g}" for v in values)


print("// Generated by tests/nn/efficient_attention_golden.py: do not edit.")
print("#pragma once\n\n#include <string>\n#include <utility>\n#include <vector>\n")
print("namespace qkv::testing {\n")
print("struct EfficientAttentionGolden {\n  std::string name, mechanism, attend;\n  int features;")
print("  std::vector<double> output;")
print("  // Every parameter in named_parameters() order, then {\"input\", ...}.")
print("  std::vector<std::pair<std::string, double>> grad_checksums;\n};\n")
print("inline const std::vector<EfficientAttentionGolden> kEfficientAttentionGoldens = {")
for name, mechanism, attend, features in CASES:
    P = fill(shapes(mechanism, features))
    X = flat_formula((B, T, D), lambda i: torch.sin(0.8 + 0.47 * i)).requires_grad_()
    out = layer(mechanism, attend, features, X, P)
    n = torch.arange(out.numel(), dtype=torch.float64)
    (out.flatten() * torch.cos(0.3 * n)).sum().backward()
    checks = [f'{{"{p}", {checksum(t.grad):.9g}}}' for p, t in P.items()] + [f'{{"input", {checksum(X.grad):.9g}}}']
    print(f'    {{"{name}", "{mechanism}", "{attend}", {features},\n     {{{fmt(out.detach().flatten().tolist())}}},')
    print("     {" + ", ".join(checks) + "}},")
print("};\n\n}  // namespace qkv::testing")
