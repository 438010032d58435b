"""PyTorch modules and the qkv layers that load their state_dicts (nn/pytorch.h, docs/pytorch.md).

    /usr/bin/python3 tests/nn/pytorch_weights.py write
        Builds each PyTorch module below with a fixed seed and writes, in tests/nn/pytorch/,
        CASE.safetensors, its state_dict (the file safetensors.torch.save_file(module.state_dict())
        writes), and CASE.golden.safetensors, an input and PyTorch's output. tests/nn/test_pytorch.cpp
        loads each into the qkv layer and compares. PyTorch 1.13 (Debian's python3-torch) wrote the
        committed files.

    /usr/bin/python3 tests/nn/pytorch_weights.py check QKV_TESTS
        The reverse: runs the test binary QKV_TESTS, whose "exports" test case writes the same files
        from qkv layers (nn::to_torch_state_dict) into a directory named by QKV_TORCH_EXPORT_DIR, and
        loads each into the PyTorch module with load_state_dict(strict=True), then compares outputs.
        Exits with 77 (CTest's "skipped") when PyTorch is not installed.

The Python `safetensors` package is not a dependency: write_safetensors and read_safetensors below
read and write the format by hand (8-byte little-endian header length, JSON header, raw data;
https://github.com/huggingface/safetensors), which is what safetensors.torch.save_file and load_file
do with these float32 and int64 tensors.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:
    print("pytorch_weights.py: PyTorch is not installed; skipped", file=sys.stderr)
    sys.exit(77)

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch")
DTYPES = {torch.float32: "F32", torch.int64: "I64"}


def write_safetensors(path, tensors):
    """The reference layout: tensors sorted by name (all here are 4- or 8-byte aligned by doing the
    8-byte ones first), compact JSON padded with spaces to a multiple of 8."""
    names = sorted(tensors, key=lambda n: (-tensors[n].element_size(), n))
    header, blobs, offset = {}, [], 0
    for name in names:
        t = tensors[name].detach().contiguous()
        data = t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    data = raw[8 + n:]
    kinds = {"F32": torch.float32, "I64": torch.int64}
    out = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        buf = bytearray(data[begin:end])
        out[name] = torch.frombuffer(buf, dtype=kinds[e["dtype"]]).reshape(e["shape"]).clone() if buf else \
            torch.zeros(e["shape"], dtype=kinds[e["dtype"]])
    return out


def padding_mask(valid_lens, T):  # True where a key is past its sequence's valid length
    return torch.arange(T)[None, :] >= valid_lens[:, None]


# Each case: the PyTorch module, and a function from (module, inputs) to outputs. Inputs are
# named as in the golden files; PyTorch layouts (Conv1d's x is (N, C, L)).
def linear():
    return torch.nn.Linear(5, 3), {"x": torch.randn(2, 4, 5)}, lambda m, i: {"y": m(i["x"])}


def embedding():
    return torch.nn.Embedding(10, 4), {"ids": torch.tensor([[1, 9, 0], [4, 4, 7]])}, lambda m, i: {"y": m(i["ids"])}


def layer_norm():
    m = torch.nn.LayerNorm(6)
    with torch.no_grad():  # not ones and zeros, so that a swap of weight and bias would show
        m.weight.copy_(torch.randn(6))
        m.bias.copy_(torch.randn(6))
    return m, {"x": torch.randn(3, 6)}, lambda m, i: {"y": m(i["x"])}


def gru():
    def run(m, i):
        output, h_n = m(i["x"], i["h0"])
        return {"output": output, "h_n": h_n}
    return (torch.nn.GRU(4, 5, num_layers=2, bidirectional=True),
            {"x": torch.randn(3, 2, 4), "h0": torch.randn(4, 2, 5)}, run)


def conv1d():
    return (torch.nn.Conv1d(3, 4, kernel_size=3, padding=2, dilation=2), {"x": torch.randn(2, 3, 5)},
            lambda m, i: {"y": m(i["x"])})


def attention(kdim=None, vdim=None):
    def make():
        m = torch.nn.MultiheadAttention(8, 2, kdim=kdim, vdim=vdim, batch_first=True)
        with torch.no_grad():  # PyTorch zeroes the biases at first; random ones test their split
            m.in_proj_bias.copy_(torch.randn(24))
            m.out_proj.bias.copy_(torch.randn(8))
        inputs = {"queries": torch.randn(2, 3, 8), "keys": torch.randn(2, 4, kdim or 8),
                  "values": torch.randn(2, 4, vdim or 8), "valid_lens": torch.tensor([4, 2])}

        def run(m, i):
            mask = padding_mask(i["valid_lens"], 4)
            return {"y": m(i["queries"], i["keys"], i["values"], key_padding_mask=mask, need_weights=False)[0]}
        return m, inputs, run
    return make


def encoder_layer(norm_first):
    def make():
        m = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                             norm_first=norm_first)
        # In training mode (dropout is 0, so the result is the same): in eval mode with a padding mask
        # PyTorch takes a fused path that returns zeros at the padded queries, which qkv computes.
        m.train()
        inputs = {"x": torch.randn(2, 5, 8), "valid_lens": torch.tensor([5, 3])}
        return m, inputs, lambda m, i: {"y": m(i["x"], src_key_padding_mask=padding_mask(i["valid_lens"], 5))}
    return make


def encoder():
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True)
    m = torch.nn.TransformerEncoder(layer, num_layers=2, norm=torch.nn.LayerNorm(8), enable_nested_tensor=False)
    m.train()  # as for encoder_layer
    inputs = {"x": torch.randn(2, 5, 8), "valid_lens": torch.tensor([5, 3])}
    return m, inputs, lambda m, i: {"y": m(i["x"], src_key_padding_mask=padding_mask(i["valid_lens"], 5))}


def causal_mask(T):  # -inf above the diagonal: position t sees 0 .. t
    return torch.triu(torch.full((T, T), float("-inf")), diagonal=1)


def decoder_layer(norm_first):
    def make():
        m = torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                             norm_first=norm_first)
        m.train()  # as for encoder_layer
        inputs = {"x": torch.randn(2, 4, 8), "memory": torch.randn(2, 5, 8), "memory_valid_lens": torch.tensor([5, 3])}

        def run(m, i):
            return {"y": m(i["x"], i["memory"], tgt_mask=causal_mask(4),
                           memory_key_padding_mask=padding_mask(i["memory_valid_lens"], 5))}
        return m, inputs, run
    return make


def transformer():
    # norm_first: nn.Transformer ends both stacks with a LayerNorm, as qkv's pre-norm stacks do.
    m = torch.nn.Transformer(8, 2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
                             batch_first=True, norm_first=True)
    m.train()  # as for encoder_layer
    inputs = {"src": torch.randn(2, 5, 8), "tgt": torch.randn(2, 4, 8), "src_valid_lens": torch.tensor([5, 3])}

    def run(m, i):
        mask = padding_mask(i["src_valid_lens"], 5)
        return {"y": m(i["src"], i["tgt"], tgt_mask=causal_mask(4), src_key_padding_mask=mask,
                       memory_key_padding_mask=mask)}
    return m, inputs, run


CASES = {
    "linear": linear, "embedding": embedding, "layer_norm": layer_norm, "gru": gru, "conv1d": conv1d,
    "attention": attention(), "cross_attention": attention(kdim=6, vdim=5),
    "encoder_layer": encoder_layer(False), "encoder_layer_norm_first": encoder_layer(True), "encoder": encoder,
    "decoder_layer": decoder_layer(False), "decoder_layer_norm_first": decoder_layer(True), "transformer": transformer,
}


def write():
    for seed, (name, make) in enumerate(CASES.items()):
        torch.manual_seed(seed)
        module, inputs, run = make()
        write_safetensors(os.path.join(HERE, name + ".safetensors"), module.state_dict())
        write_safetensors(os.path.join(HERE, name + ".golden.safetensors"), {**inputs, **run(module, inputs)})


def check(qkv_tests):
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run([qkv_tests, "-tc=*qkv layers export*"], env={**os.environ, "QKV_TORCH_EXPORT_DIR": tmp},
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
        for name, make in CASES.items():
            module, _, forward = make()
            state = read_safetensors(os.path.join(tmp, name + ".safetensors"))
            module.load_state_dict(state, strict=True)
            golden = read_safetensors(os.path.join(tmp, name + ".golden.safetensors"))
            outputs = forward(module, golden)
            for key, value in outputs.items():
                err = (value - golden[key]).abs().max().item()
                assert err < 1e-5, f"{name}: {key} differs from qkv's by {err}"
            print(f"{name}: PyTorch loads qkv's weights and computes qkv's outputs ({', '.join(outputs)})")


if __name__ == "__main__":
    if sys.argv[1:] == ["write"]:
        write()
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        sys.exit(__doc__)
