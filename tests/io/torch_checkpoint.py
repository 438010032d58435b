"""A qkv checkpoint written from a PyTorch state_dict, by another program than qkv: the layout and
the checksum exactly as model_io/checkpoint.h documents them. Run from the repository root (PyTorch
1.13.1 wrote the committed files):

    /usr/bin/python3 tests/io/torch_checkpoint.py

writes tests/io/fixtures/torch_checkpoint.safetensors, the weights of
torch.nn.Sequential(Linear(6, 16), Tanh(), Linear(16, 4)) (qkv's nn::Sequential names them the same:
"0.weight", ...) saved at step 42 without optimizer state, and torch_checkpoint.golden.safetensors,
an input and PyTorch's output. tests/model_io/test_weights.cpp loads the checkpoint, compares the output,
and checks that qkv's save_checkpoint writes the very same bytes.
"""
import json
import os
import struct

import torch

FNV_OFFSET_BASIS = 14695981039346656037
FNV_PRIME = 1099511628211


def fnv1a(h, data):
    for b in data:
        h = ((h ^ b) * FNV_PRIME) % 2**64
    return h


def terminated(s):  # the UTF-8 bytes of s, then one 0 byte
    return s.encode() + b"\0"


def shape_string(shape):  # "(2,3)", "(5,)", "()"
    return "(" + ",".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def checksum(tensors, metadata):
    h = FNV_OFFSET_BASIS
    for name in sorted(tensors, key=str.encode):
        data = tensors[name].contiguous().numpy().astype("<f4").tobytes()
        h = fnv1a(h, terminated(name) + terminated("F32") + terminated(shape_string(tensors[name].shape)) + data)
    for key in sorted(metadata, key=str.encode):
        if key != "checksum":
            h = fnv1a(h, terminated(key) + terminated(metadata[key]))
    return f"{h:016x}"


def write_safetensors(path, tensors, metadata):
    """As qkv and the reference implementation write it: "__metadata__" first with its keys sorted,
    then the tensors by name (all F32 here), compact JSON padded with spaces to a multiple of 8."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = dict(sorted(metadata.items()))
    for name in sorted(tensors, key=str.encode):
        data = tensors[name].detach().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    tensors = {"model." + name: t.detach() for name, t in model.state_dict().items()}
    metadata = {
        "format": "qkv.checkpoint", "version": "1", "step": "42",
        "rng.seed": "7", "rng.offset": "0",  # the generator qkv resumes with: manual_seed(7)
        "optimizer": "",                      # weights alone: no "optim.*" entries
        "config": "written by tests/io/torch_checkpoint.py",
    }
    metadata["checksum"] = checksum(tensors, metadata)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
    write_safetensors(os.path.join(out, "torch_checkpoint.safetensors"), tensors, metadata)
    x = torch.randn(3, 6)
    write_safetensors(os.path.join(out, "torch_checkpoint.golden.safetensors"), {"x": x, "y": model(x)}, {})


if __name__ == "__main__":
    main()
