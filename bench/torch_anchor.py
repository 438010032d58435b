"""PyTorch's time for the training steps that qkv's own benchmarks time, on this machine.

What it measures: one training step (forward, loss, backward, optimizer step) of the same models,
sizes and data shapes as `tagger bench --config CONFIG`, `seq2seq bench` and `lm bench --what step`,
timed the same way: 5 untimed warm-up steps, then the median wall-clock time of 30 steps
(--warmup-steps, --bench-steps). It prints one line in the format qkv's benchmarks print, so the two
compare one to one:

    config=tiny threads=1 ms_per_step=... tokens_per_s=... peak_rss_mib=... blas_threads=2 parameters=...

The lm line also has cpu_ms_per_step, the median of the process's CPU time per step (all threads),
as `lm bench` prints it: over ms_per_step, how many cores the step kept busy.

tokens_per_s is B·T over the median step (padding included); peak_rss_mib is the process's peak
resident set (getrusage), the interpreter and PyTorch included; parameters counts the model's
parameters, which for the tagger configs equals the parameters= of `tagger bench` (for brown,
1704668: tests/examples/test_tagger_bench.cpp derives it) and for lm that of `lm bench` (834816).

The models follow d2l.ai's PyTorch code:
  tiny, small, base   the Transformer-encoder tagger: embedding·sqrt(d) plus the sinusoidal
                      positional encoding (d2l.ai §11.6), post-norm blocks of multi-head attention
                      with bias-free projections (§11.5), add & norm, position-wise FFN (§11.7),
                      a linear layer to the tags; cross-entropy masked by valid length, Adam lr 1e-3.
  brown               the tagger `tagger train --corpus brown` trains (examples/tagger/model.cpp,
                      real_text_defaults()): each token is its lowercased word's embedding (d - F
                      wide)·sqrt(d) beside the encoding of its characters (embedding 48 wide,
                      padding_idx 0, Conv1d to F = 96 filters of width 3, max over the word's
                      characters, relu; as nn/char_encoder.h); word dropout (a word seen c times
                      read as <unk> with chance 1/(1 + c)); no absolute positions but T5's relative
                      bias (32 buckets, max distance 128, one (32, heads) table shared by the
                      layers, added to the scores; as nn/relative_position.h); d 128, 4 heads, FFN
                      256, 2 layers. Brown's vocabulary (44147) and tags (12), batch 32 of T = 22 with
                      valid lengths 19 to 22, 0.55 distinct forms per real token, forms of the
                      corpus's length distribution, word counts by Zipf's law; all as
                      bench/tagger_bench.cpp makes them, which explains the choices. Two
                      differences in how, not what: Conv1d computes all U·L positions of the padded
                      forms where qkv computes only each word's characters, and the bias table is
                      looked up once per step where qkv looks it up in each layer.
  gru                 the GRU encoder-decoder (§10.7) with Bahdanau attention (§11.4): vocabulary
                      200, embedding 32, hidden 32, 2 layers, batch 64, 10 steps; Adam lr 5e-3,
                      gradient clipping at norm 1. The keys W_k·h are computed once per sequence,
                      as qkv's decoder does; d2l's dropout on the attention weights is left out.
  lm                  the character-level GPT of `lm bench --what step` (examples/lm/model.cpp,
                      train.cpp), nanoGPT's architecture: vocabulary 84, context T 256, d 128,
                      4 heads, 6 layers, FFN 512, batch 4, no dropout, rotary positions (below).
                      x = E[ids] (+ P[:T] with learned positions; no √d; E and P N(0, 0.02²));
                      pre-LN blocks x + W_o·attn(LN1(x)), x + FFN(LN2(x)),
                      causal attention with bias-free W_q, W_k, W_v, W_o; FFN Linear(d, F), exact
                      (erf) GELU, Linear(F, d), with biases; a final LayerNorm; logits h·Eᵀ (tied, no
                      bias). Mean cross-entropy over the B·T next ids of one fixed random batch;
                      AdamW lr 2e-3, betas (0.9, 0.99), eps 1e-8, weight decay 0.1 on the tensors of
                      2 or more dimensions (E, P, the matrices) and 0 on the rest; the gradient
                      clipped to norm 1; zero_grad(set_to_none=True). Attention is
                      scaled_dot_product_attention(is_causal=True) where PyTorch has it (2.0 on),
                      else written out (Debian's 1.13): scores / √(d/h), future keys -inf, softmax,
                      times V. Options as `lm bench`'s, only with lm: --context, --d-model, --heads,
                      --layers, --ffn-hidden, --batch, --positions learned|rotary (rotary: no P; each
                      head's q and k turned in adjacent pairs (2i, 2i+1), base 10000, as
                      nn/rotary.h), --ffn gelu|relu|swiglu (swiglu: down(silu(gate x) ⊙ up x), no
                      biases, as nn/swiglu.h). `lm bench` itself defaults to 3 warm-up and 20 timed
                      steps; bench/versus_torch.py gives both sides the same counts. One difference
                      in how, not what: qkv skips the optimizer step when the loss or the norm is not
                      finite, which costs it one check.
Dropout is 0.1 everywhere else. The data are random token ids, tags and valid lengths, seeded.

Run it with Debian's PyTorch (package python3-torch) through the system interpreter:
    ./qkv bench torch CONFIG [THREADS] [--blas-threads N] [--warmup-steps N] [--bench-steps N]
    /usr/bin/python3 bench/torch_anchor.py CONFIG [THREADS] [--blas-threads N] [...]
    ./qkv bench torch lm 2 --blas-threads 1 --positions rotary     # beside: lm bench --what step
                                                                   #   --threads 2 --positions rotary
THREADS sets torch.set_num_threads (default 1); --blas-threads sets OPENBLAS_NUM_THREADS for the
BLAS behind PyTorch's matrix products (default: that variable if set, else THREADS). On a 2-core
machine try 1/1, 1/2 and 2/2 and compare qkv against PyTorch's best. Debian's PyTorch does its
matrix products through whichever libblas.so.3 is installed: on the reference BLAS (libblas3 alone)
they are an order of magnitude slower than on OpenBLAS (libopenblas0-pthread), and this script
warns on stderr.
"""

import argparse
import math
import os
import resource
import sys
import time

# The tagger configs of `tagger bench` (bench/tagger_bench.cpp): vocabulary V, tags C, model
# width d, heads h, FFN width f, layers L, batch B, sequence length T.
TAGGER_CONFIGS = {
    "tiny": dict(V=1000, C=12, d=64, h=4, f=128, L=2, B=32, T=32),
    "small": dict(V=5000, C=17, d=128, h=8, f=512, L=4, B=32, T=64),
    "base": dict(V=10000, C=17, d=256, h=8, f=1024, L=4, B=32, T=128),
}
BROWN = dict(V=44147, C=12, d=128, h=4, f=256, L=2, B=32, T=22, min_len=19, char_dim=48, filters=96, kernel=3,
             form_share=0.55, training_tokens=929446)
# Of the distinct word forms of a Brown training batch, the share (per mille) of each length in
# bytes, 1 to 16 (bench/tagger_bench.cpp's kFormLengthPermille).
FORM_LENGTH_PERMILLE = [26, 71, 106, 174, 144, 125, 114, 85, 61, 42, 24, 14, 7, 4, 1, 2]
CHAR_BEGIN, CHAR_END, NUM_CHAR_IDS = 257, 258, 259  # examples/tagger/model.h
# The lm config: the defaults of `lm bench` (examples/lm/train.h, model.h), which times its model on
# 84 random character ids.
LM = dict(V=84, context=256, d_model=128, heads=4, layers=6, ffn_hidden=512, batch=4, positions="rotary",
          ffn="gelu", lr=2e-3, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1, clip=1.0)
CONFIGS = [*TAGGER_CONFIGS, "brown", "gru", "lm"]
DROPOUT = 0.1
WARMUP_STEPS, TIMED_STEPS = 5, 30


def count(minimum):
    """An argparse type: an integer >= minimum."""
    def parse(text):
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text}")
        return value
    return parse


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", choices=CONFIGS)
    parser.add_argument("threads", nargs="?", type=int, default=1, help="torch.set_num_threads (1)")
    parser.add_argument("--blas-threads", type=int, help="OPENBLAS_NUM_THREADS (default: THREADS)")
    parser.add_argument("--warmup-steps", type=count(0), default=WARMUP_STEPS,
                        help=f"untimed steps first ({WARMUP_STEPS})")
    parser.add_argument("--bench-steps", type=count(1), default=TIMED_STEPS,
                        help=f"timed steps, of which the median ({TIMED_STEPS})")
    lm = parser.add_argument_group("the lm config's model (as `lm bench`'s options; only with config lm)")
    for name in ["context", "d-model", "heads", "layers", "ffn-hidden", "batch"]:
        key = name.replace("-", "_")
        lm.add_argument(f"--{name}", type=count(2 if key == "context" else 1), help=f"({LM[key]})")
    lm.add_argument("--positions", choices=["learned", "rotary"], help=f"({LM['positions']})")
    lm.add_argument("--ffn", choices=["gelu", "relu", "swiglu"], help=f"({LM['ffn']})")
    args = parser.parse_args()
    given = [f"--{k.replace('_', '-')}" for k in LM if getattr(args, k, None) is not None]
    if given and args.config != "lm":
        parser.error(f"{', '.join(given)}: options of the lm config only, not of {args.config}")
    for k in LM:
        if getattr(args, k, None) is None:
            setattr(args, k, LM[k])
    if args.config == "lm":
        if args.d_model % args.heads:
            parser.error(f"--d-model {args.d_model} must be a multiple of --heads {args.heads}")
        if args.positions == "rotary" and (args.d_model // args.heads) % 2:
            parser.error(f"rotary turns features in pairs: the head width {args.d_model // args.heads} must be even")
    return args


args = parse_args()
# OpenBLAS reads its thread count when it is loaded, so this must come before `import torch`.
if args.blas_threads is not None:
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(args.threads))

try:
    import torch
    from torch import nn
except ImportError:
    sys.exit("bench/torch_anchor.py needs PyTorch: sudo apt-get install python3-torch, "
             "then run it with /usr/bin/python3")


def masked_softmax(scores, valid_lens):
    """Softmax over the last axis of scores (N, Q, K), keys past valid_lens[n] weighted 0 (d2l.ai §11.3)."""
    keys = torch.arange(scores.shape[-1])
    mask = keys[None, None, :] < valid_lens[:, None, None]
    return scores.masked_fill(~mask, -1e6).softmax(dim=-1)


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention over h heads of width d/h, bias-free projections (d2l.ai §11.5)."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.dropout = nn.Dropout(DROPOUT)

    def split_heads(self, X):  # (B, T, d) -> (B·h, T, d/h)
        B, T, d = X.shape
        return X.reshape(B, T, self.heads, d // self.heads).permute(0, 2, 1, 3).reshape(-1, T, d // self.heads)

    def forward(self, X, valid_lens, bias=None):
        B, T, d = X.shape
        Q, K, V = self.split_heads(self.W_q(X)), self.split_heads(self.W_k(X)), self.split_heads(self.W_v(X))
        scores = torch.bmm(Q, K.transpose(1, 2)) / math.sqrt(Q.shape[-1])
        if bias is not None:  # (h, T, T), the same for every sentence
            scores = (scores.reshape(B, self.heads, T, T) + bias).reshape(B * self.heads, T, T)
        weights = masked_softmax(scores, valid_lens.repeat_interleave(self.heads))
        heads = torch.bmm(self.dropout(weights), V)  # (B·h, T, d/h)
        return self.W_o(heads.reshape(B, self.heads, T, -1).permute(0, 2, 1, 3).reshape(B, T, d))


class EncoderBlock(nn.Module):
    """Post-norm Transformer encoder block: X + attention, norm; then X + FFN, norm (d2l.ai §11.7)."""

    def __init__(self, d, heads, ffn):
        super().__init__()
        self.attention = MultiHeadAttention(d, heads)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, ffn), nn.ReLU(), nn.Linear(ffn, d))
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, X, valid_lens, bias=None):
        Y = self.norm1(X + self.dropout(self.attention(X, valid_lens, bias)))
        return self.norm2(Y + self.dropout(self.ffn(Y)))


def sinusoidal_encoding(max_len, d):
    """P[t, 2i] = sin(t / 10000^(2i/d)), P[t, 2i+1] = cos(same) (d2l.ai §11.6)."""
    angles = torch.arange(max_len, dtype=torch.float32)[:, None] / torch.pow(
        10000, torch.arange(0, d, 2, dtype=torch.float32) / d)
    P = torch.zeros(max_len, d)
    P[:, 0::2], P[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return P


class Tagger(nn.Module):
    def __init__(self, V, C, d, h, f, L):
        super().__init__()
        self.d = d
        self.embedding = nn.Embedding(V, d)
        self.register_buffer("P", sinusoidal_encoding(1000, d))
        self.dropout = nn.Dropout(DROPOUT)
        self.blocks = nn.ModuleList(EncoderBlock(d, h, f) for _ in range(L))
        self.output = nn.Linear(d, C)

    def forward(self, tokens, valid_lens):  # (B, T) -> (B, T, C)
        X = self.dropout(self.embedding(tokens) * math.sqrt(self.d) + self.P[: tokens.shape[1]])
        for block in self.blocks:
            X = block(X, valid_lens)
        return self.output(X)


def training_step(model, inputs, tags, valid_lens):
    """One step of the tagger `model` on fixed data: masked cross-entropy, backward, Adam lr 1e-3."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    mask = (torch.arange(tags.shape[1])[None, :] < valid_lens[:, None]).float().reshape(-1)

    def step():
        logits = model(*inputs).reshape(-1, model.output.out_features)
        per_token = nn.functional.cross_entropy(logits, tags.reshape(-1), reduction="none")
        loss = (per_token * mask).sum() / mask.sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def tagger_step(config):
    """The model, one training step on fixed random data, and B·T."""
    c = TAGGER_CONFIGS[config]
    model = Tagger(c["V"], c["C"], c["d"], c["h"], c["f"], c["L"])
    B, T = c["B"], c["T"]
    tokens, tags = torch.randint(0, c["V"], (B, T)), torch.randint(0, c["C"], (B, T))
    valid_lens = torch.randint(T // 2, T + 1, (B,))
    return model, training_step(model, (tokens, valid_lens), tags, valid_lens), B * T


class CharEncoder(nn.Module):
    """Characters (U, L) of lengths (U) -> (U, filters): embedding, Conv1d, max over the word, relu."""

    def __init__(self, char_dim, filters, kernel):
        super().__init__()
        self.embedding = nn.Embedding(NUM_CHAR_IDS, char_dim, padding_idx=0)
        self.conv = nn.Conv1d(char_dim, filters, kernel, padding=kernel // 2)

    def forward(self, chars, lengths):
        h = self.conv(self.embedding(chars).transpose(1, 2))  # Conv1d takes (U, char_dim, L)
        pad = torch.arange(chars.shape[1])[None, :] >= lengths[:, None]
        return torch.relu(h.masked_fill(pad[:, None, :], float("-inf")).max(dim=2).values)


class RelativePositionBias(nn.Module):
    """T5's bidirectional bucketed bias: a scalar per head for each bucket of j - i (Raffel et al. 2020)."""

    def __init__(self, heads, num_buckets=32, max_distance=128):
        super().__init__()
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.weight = nn.Parameter(torch.randn(num_buckets, heads) * 0.02)

    def forward(self, T):  # -> (heads, T, T)
        relative = torch.arange(T)[None, :] - torch.arange(T)[:, None]  # key j minus query i
        side = self.num_buckets // 2
        exact = side // 2
        distance = relative.abs()
        log_ratio = torch.log(distance.clamp(min=1).float() / exact) / math.log(self.max_distance / exact)
        far = exact + (log_ratio * (side - exact)).clamp(max=side - 1 - exact).long()
        buckets = (relative > 0).long() * side + torch.where(distance < exact, distance, far)
        return self.weight[buckets].permute(2, 0, 1)


class BrownTagger(nn.Module):
    def __init__(self, c, word_counts):
        super().__init__()
        self.d, self.filters = c["d"], c["filters"]
        self.embedding = nn.Embedding(c["V"], c["d"] - c["filters"])
        self.chars = CharEncoder(c["char_dim"], c["filters"], c["kernel"])
        self.relative = RelativePositionBias(c["h"])
        self.dropout = nn.Dropout(DROPOUT)
        self.blocks = nn.ModuleList(EncoderBlock(c["d"], c["h"], c["f"]) for _ in range(c["L"]))
        self.output = nn.Linear(c["d"], c["C"])
        self.register_buffer("drop_chance", 1 / (1 + word_counts))

    def forward(self, tokens, valid_lens, chars, char_lens, form_rows):  # (B, T) ... -> (B, T, C)
        if self.training:  # word dropout: <unk> is id 1, <pad> id 0; neither is dropped
            dropped = (torch.rand(tokens.shape) < self.drop_chance[tokens]) & (tokens > 1)
            tokens = tokens.masked_fill(dropped, 1)
        B, T = tokens.shape
        forms = torch.cat([self.chars(chars, char_lens), torch.zeros(1, self.filters)])  # row U: padding
        X = torch.cat([self.embedding(tokens) * math.sqrt(self.d), forms[form_rows].reshape(B, T, -1)], dim=-1)
        X, bias = self.dropout(X), self.relative(T)
        for block in self.blocks:
            X = block(X, valid_lens, bias)
        return self.output(X)


def synthetic_chars(valid_lens, T):
    """The batch's distinct forms as character ids (U, L), their lengths (U), each token's form (B·T)."""
    real = int(valid_lens.sum())
    U = max(1, round(BROWN["form_share"] * real))
    lengths = torch.multinomial(torch.tensor(FORM_LENGTH_PERMILLE, dtype=torch.float), U, replacement=True) + 1
    char_lens = lengths + 2  # the begin and end markers
    chars = torch.zeros(U, int(char_lens.max()), dtype=torch.long)
    for u, n in enumerate(lengths.tolist()):
        letters = torch.randint(ord("a") + 1, ord("z") + 2, (n,))  # byte b is id b + 1
        chars[u, : n + 2] = torch.cat([torch.tensor([CHAR_BEGIN]), letters, torch.tensor([CHAR_END])])
    rows = torch.cat([torch.arange(U), torch.randint(0, U, (real - U,))])
    form_rows = torch.full((len(valid_lens), T), U, dtype=torch.long)
    form_rows[torch.arange(T)[None, :] < valid_lens[:, None]] = rows
    return chars, char_lens, form_rows.reshape(-1)


def brown_step():
    """The Brown model, one training step on a synthetic batch shaped like Brown's, and B·T."""
    c = BROWN
    V, B, T = c["V"], c["B"], c["T"]
    H = (1 / torch.arange(1, V - 1, dtype=torch.float64)).sum()
    ranks = torch.arange(2, V, dtype=torch.float64) - 1  # Zipf's law: word id r seen N / ((r - 1)·H) times
    counts = torch.zeros(V)
    counts[2:] = (c["training_tokens"] / (ranks * H)).round().clamp(min=1).float()
    model = BrownTagger(c, counts)
    tokens, tags = torch.randint(0, V, (B, T)), torch.randint(0, c["C"], (B, T))
    valid_lens = torch.randint(c["min_len"], T + 1, (B,))
    inputs = (tokens, valid_lens, *synthetic_chars(valid_lens, T))
    return model, training_step(model, inputs, tags, valid_lens), B * T


class Seq2SeqAttention(nn.Module):
    """GRU encoder, and a GRU decoder that reads [context; embedding] at each step (d2l.ai §11.4)."""

    def __init__(self, vocab, embed, hidden, layers):
        super().__init__()
        self.source_embedding = nn.Embedding(vocab, embed)
        self.encoder = nn.GRU(embed, hidden, layers, dropout=DROPOUT)
        self.target_embedding = nn.Embedding(vocab, embed)
        self.decoder = nn.GRU(embed + hidden, hidden, layers, dropout=DROPOUT)
        self.dense = nn.Linear(hidden, vocab)
        # Additive attention: score(q, k) = w_v · tanh(W_q q + W_k k).
        self.W_k, self.W_q = nn.Linear(hidden, hidden, bias=False), nn.Linear(hidden, hidden, bias=False)
        self.w_v = nn.Linear(hidden, 1, bias=False)

    def forward(self, source, target, valid_lens):  # (B, T), (B, T) -> (B, T, vocab)
        outputs, state = self.encoder(self.source_embedding(source).permute(1, 0, 2))
        encoded = outputs.permute(1, 0, 2)  # (B, T, hidden): the keys and values
        keys = self.W_k(encoded)
        steps = []
        for x in self.target_embedding(target).permute(1, 0, 2):  # x: (B, embed)
            query = self.W_q(state[-1])[:, None, None, :]  # (B, 1, 1, hidden)
            scores = self.w_v(torch.tanh(query + keys[:, None])).squeeze(-1)  # (B, 1, T)
            context = torch.bmm(masked_softmax(scores, valid_lens), encoded)  # (B, 1, hidden)
            output, state = self.decoder(torch.cat((context, x[:, None]), dim=-1).permute(1, 0, 2), state)
            steps.append(output)
        return self.dense(torch.cat(steps, dim=0)).permute(1, 0, 2)


def gru_step():
    vocab, B, T = 200, 64, 10
    model = Seq2SeqAttention(vocab, embed=32, hidden=32, layers=2)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    source, target = torch.randint(0, vocab, (B, T)), torch.randint(0, vocab, (B, T))
    valid_lens = torch.randint(3, T + 1, (B,))

    def step():
        logits = model(source, target, valid_lens)
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), target.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return model, step, B * T


class RotaryEmbedding(nn.Module):
    """RoPE on (..., T, d): pair (x_2i, x_2i+1) at position m turned by m·base^(-2i/d) (nn/rotary.h)."""

    def __init__(self, head_dim, max_len, base=10000.0):
        super().__init__()
        theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        angles = torch.arange(max_len, dtype=torch.float32)[:, None] * theta  # (max_len, d/2)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x):
        T = x.shape[-2]
        c, s = self.cos[:T], self.sin[:T]
        even, odd = x[..., 0::2], x[..., 1::2]
        return torch.stack((even * c - odd * s, even * s + odd * c), dim=-1).flatten(-2)


class CausalSelfAttention(nn.Module):
    """Each position attends to itself and those before it; h heads of width d/h, bias-free projections."""

    def __init__(self, d, heads, context):
        super().__init__()
        self.heads = heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d, d, bias=False) for _ in range(4))
        if not hasattr(nn.functional, "scaled_dot_product_attention"):  # PyTorch before 2.0
            self.register_buffer("future", torch.ones(context, context, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, x, rotary=None):
        B, T, d = x.shape
        q, k, v = (W(x).view(B, T, self.heads, d // self.heads).transpose(1, 2) for W in (self.W_q, self.W_k, self.W_v))
        if rotary is not None:
            q, k = rotary(q), rotary(k)
        if hasattr(nn.functional, "scaled_dot_product_attention"):
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
            y = scores.masked_fill(self.future[:T, :T], float("-inf")).softmax(dim=-1) @ v
        return self.W_o(y.transpose(1, 2).reshape(B, T, d))


class SwiGLU(nn.Module):
    """down(silu(gate(x)) ⊙ up(x)), no biases (nn/swiglu.h)."""

    def __init__(self, d, hidden):
        super().__init__()
        self.gate, self.up = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down(nn.functional.silu(self.gate(x)) * self.up(x))


class GPTBlock(nn.Module):
    """Pre-LN: x + attention(LN1(x)), then x + FFN(LN2(x))."""

    def __init__(self, a):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(a.d_model), nn.LayerNorm(a.d_model)
        self.attention = CausalSelfAttention(a.d_model, a.heads, a.context)
        if a.ffn == "swiglu":
            self.ffn = SwiGLU(a.d_model, a.ffn_hidden)
        else:
            act = nn.GELU() if a.ffn == "gelu" else nn.ReLU()  # GELU: exact, with erf
            self.ffn = nn.Sequential(nn.Linear(a.d_model, a.ffn_hidden), act, nn.Linear(a.ffn_hidden, a.d_model))

    def forward(self, x, rotary=None):
        x = x + self.attention(self.norm1(x), rotary)
        return x + self.ffn(self.norm2(x))


class CharGPT(nn.Module):
    """examples/lm/model.h: E[ids] (+ P[:T]), pre-LN blocks, a final LayerNorm, logits h·Eᵀ."""

    def __init__(self, a):
        super().__init__()
        self.embedding = nn.Embedding(a.V, a.d_model)
        nn.init.normal_(self.embedding.weight, 0.0, 0.02)
        self.positions = nn.Parameter(torch.randn(a.context, a.d_model) * 0.02) if a.positions == "learned" else None
        self.rotary = RotaryEmbedding(a.d_model // a.heads, a.context) if a.positions == "rotary" else None
        self.blocks = nn.ModuleList(GPTBlock(a) for _ in range(a.layers))
        self.norm = nn.LayerNorm(a.d_model)

    def forward(self, ids):  # (B, T) -> (B, T, V)
        x = self.embedding(ids)
        if self.positions is not None:
            x = x + self.positions[: ids.shape[1]]
        for block in self.blocks:
            x = block(x, self.rotary)
        return nn.functional.linear(self.norm(x), self.embedding.weight)


def lm_step(a):
    """The lm model, one training step on one fixed batch of random ids (examples/lm/train.cpp's
    make_optimizer and train_step), and B·T."""
    model = CharGPT(a)
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(
        [{"params": [p for p in params if p.dim() >= 2], "weight_decay": a.weight_decay},
         {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
        lr=a.lr, betas=a.betas, eps=a.eps)
    B, T = a.batch, a.context
    ids = torch.randint(0, a.V, (B, T + 1))
    inputs, targets = ids[:, :-1].contiguous(), ids[:, 1:].reshape(-1)

    def step():
        logits = model(inputs)
        loss = nn.functional.cross_entropy(logits.reshape(-1, a.V), targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(params, a.clip)
        optimizer.step()

    return model, step, B * T


def median_seconds(step):
    """The medians of the timed steps' wall-clock and process CPU seconds, after the warm-up steps."""
    times, cpu = [], []
    for i in range(args.warmup_steps + args.bench_steps):
        start, cpu_start = time.perf_counter(), time.process_time()
        step()
        if i >= args.warmup_steps:
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - cpu_start)
    return sorted(times)[len(times) // 2], sorted(cpu)[len(cpu) // 2]


def warn_if_reference_blas():
    """Debian's python3-torch does its matrix products through whichever libblas.so.3 the alternatives
    system picks; with only the reference implementation installed (libblas3), they run an order of
    magnitude slower than on OpenBLAS, and the comparison says nothing about PyTorch."""
    try:
        with open("/proc/self/maps") as maps:
            libraries = {line.split()[-1] for line in maps if "libblas.so" in line}
    except OSError:  # not Linux
        return
    for path in sorted(libraries):
        if "/blas/libblas.so" in path:  # Debian's directory of the reference BLAS
            print(f"torch_anchor.py: warning: PyTorch's BLAS is the reference implementation ({path}), "
                  "far slower than OpenBLAS: sudo apt-get install libopenblas0-pthread", file=sys.stderr)


def main():
    torch.set_num_threads(args.threads)
    warn_if_reference_blas()
    torch.manual_seed(0)
    if args.config == "gru":
        model, step, tokens = gru_step()
    elif args.config == "brown":
        model, step, tokens = brown_step()
    elif args.config == "lm":
        model, step, tokens = lm_step(args)
    else:
        model, step, tokens = tagger_step(args.config)
    seconds, cpu_seconds = median_seconds(step)
    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    parameters = sum(p.numel() for p in model.parameters())
    cpu = f"cpu_ms_per_step={cpu_seconds * 1e3:.2f} " if args.config == "lm" else ""
    print(f"config={args.config} threads={args.threads} ms_per_step={seconds * 1e3:.2f} "
          f"tokens_per_s={tokens / seconds:.0f} peak_rss_mib={peak_rss_mib:.0f} {cpu}"
          f"blas_threads={os.environ['OPENBLAS_NUM_THREADS']} parameters={parameters}")


if __name__ == "__main__":
    main()
