#!/usr/bin/python3
"""Small real torch.save checkpoints, with their expected contents, for test_torch_checkpoint.

Run with Debian's Python and its python3-torch package (torch >= 1.6 writes the zip format):

    /usr/bin/python3 tests/reference/torch_checkpoints.py

It (re)writes, in tests/reference/torch/, one checkpoint per case and its expectations:

    <case>.pt    written by torch.save (a zip archive: <case>/data.pkl, <case>/data/<key>, ...)
    <case>.json  {"file": "<case>.pt", "torch_version": "...",
                  "tensors": [{"name", "dtype", "shape", "stride", "storage_offset", "contiguous",
                               "values"}, ...],   # in the order the state dict holds them
                  "ties": [[name, name], ...]}     # tensors that share one storage

and legacy_format.pt, the same kind of state dict saved with _use_new_zipfile_serialization=False
(the pre-1.6 bare-pickle format, which readers must refuse with a clear message; no .json).

Names are the state dict keys, nested dicts and lists joined with '.'. dtype uses oxinfer's names
("f32", "bf16", "i64", "bool", ...). values are the tensor's elements in row-major order as
numbers (bools as 0/1; every value is exactly representable as float32 except f64/i64 ones,
which the reader rounds to nearest); non-finite values are the strings "inf", "-inf", "nan".
Non-tensor values in the checkpoints (ints, strings, floats) are not listed: readers skip them.

Every file is a few KB. The values are fixed (seeded), so re-running rewrites identical files,
except legacy_format.pt, whose storage keys are Python object ids.
"""

import json
import math
import os
from collections import OrderedDict

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "torch")

DTYPE_NAMES = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8",
    torch.bool: "bool",
}


def number(value):
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def values_of(tensor):
    flat = tensor.detach().contiguous().reshape(-1)
    if tensor.dtype == torch.bool:
        return [1 if v else 0 for v in flat.tolist()]
    if tensor.dtype in (torch.float16, torch.bfloat16):
        flat = flat.float()  # exact
    return [number(v) for v in flat.tolist()]


def collect(value, prefix, out):
    """Tensors of a (nested) checkpoint object, named like the C++ reader names them."""
    def child(key):
        return key if not prefix else prefix + "." + key
    if isinstance(value, torch.Tensor):
        out.append((prefix or "tensor", value))
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, (str, int)) and not isinstance(key, bool):
                collect(item, child(str(key)), out)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            collect(item, child(str(i)), out)


def save(case, obj, ties=()):
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, case + ".pt")
    torch.save(obj, path)
    tensors = []
    found = []
    collect(obj, "", found)
    for name, tensor in found:
        tensors.append({
            "name": name,
            "dtype": DTYPE_NAMES[tensor.dtype],
            "shape": list(tensor.shape),
            "stride": list(tensor.stride()),
            "storage_offset": tensor.storage_offset(),
            "contiguous": tensor.is_contiguous(),
            "values": values_of(tensor),
        })
    expected = {"file": case + ".pt", "torch_version": torch.__version__, "tensors": tensors,
                "ties": [list(pair) for pair in ties]}
    with open(os.path.join(OUT, case + ".json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print(f"{path}: {len(tensors)} tensors, {os.path.getsize(path)} bytes")


def main():
    torch.manual_seed(1234)

    # Every storage type oxinfer reads, in a plain dict.
    save("dtypes", {
        "f32": torch.randn(2, 3),
        "f16": torch.randn(5).half(),
        "bf16": torch.randn(2, 2).bfloat16(),
        "f64": torch.tensor([1.0 / 3.0, -2.5e-300, 1e300], dtype=torch.float64),
        "i64": torch.tensor([0, -1, 2 ** 40, -(2 ** 53)], dtype=torch.int64),
        "i32": torch.tensor([7, -8, 2 ** 31 - 1], dtype=torch.int32),
        "i16": torch.tensor([-32768, 12345], dtype=torch.int16),
        "i8": torch.tensor([-128, 0, 127], dtype=torch.int8),
        "u8": torch.tensor([0, 200, 255], dtype=torch.uint8),
        "bool": torch.tensor([[True, False], [False, True]]),
        "special": torch.tensor([float("inf"), float("-inf"), float("nan"), -0.0, 1e-45]),
    })

    # A tied weight: two names, one storage (torch.save writes the storage once).
    embedding = torch.randn(4, 3)
    save("tied", OrderedDict([("embed.weight", embedding), ("lm_head.weight", embedding),
                              ("norm.weight", torch.ones(3))]),
         ties=[("embed.weight", "lm_head.weight")])

    # Views: torch.save keeps the view's storage, offset and strides (the whole base storage).
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    save("views", OrderedDict([
        ("base", base),
        ("transposed", base.t()),               # strides (1, 4)
        ("rows", base[1:]),                     # storage offset 4, contiguous
        ("column", base[:, 2]),                 # storage offset 2, stride 4
        ("block", base[1:, 1:3]),               # storage offset 5, strides (4, 1)
        ("expanded", torch.tensor([1.5, -2.0, 3.25]).expand(2, 3)),  # stride 0
        ("half_view", torch.arange(8, dtype=torch.float16)[2::3]),   # offset 2, stride 3
    ]), ties=[("base", "transposed"), ("base", "rows"), ("base", "column"), ("base", "block")])

    # A training checkpoint: the state dict nested under a key, beside non-tensor values.
    save("nested", {
        "epoch": 7,
        "state_dict": OrderedDict([("layer.weight", torch.randn(2, 2)), ("layer.bias", torch.randn(2))]),
        "config": {"lr": 0.125, "name": "tiny", "sizes": [1, 2, 3]},
        "optimizer": {"state": {0: {"step": torch.tensor(3.0)}}, "param_groups": [{"lr": 0.125, "params": [0]}]},
        "history": [torch.tensor([0.5, 0.25]), "note"],
    })

    # 0-d tensors.
    save("scalars", OrderedDict([
        ("f32", torch.tensor(-1.75)),
        ("i64", torch.tensor(42)),
        ("bf16", torch.tensor(3.5, dtype=torch.bfloat16)),
        ("bool", torch.tensor(True)),
    ]))

    # Empty tensors, one of them an empty view at the end of a non-empty storage.
    full = torch.tensor([1.0, 2.0, 3.0])
    save("empty", OrderedDict([
        ("empty", torch.empty(0)),
        ("empty_2d", torch.zeros(2, 0, 3, dtype=torch.float16)),
        ("full", full),
        ("tail", full[3:]),
    ]))

    # A module's state_dict (an OrderedDict carrying _metadata, pickled with BUILD) plus an
    # nn.Parameter (pickled through torch._utils._rebuild_parameter).
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p))
    state = model.state_dict()
    state["extra"] = torch.nn.Parameter(torch.randn(2, 2))
    save("module", state)

    # torch.save(tensor): a bare tensor, no dict; readers name it "tensor".
    save("bare", torch.arange(4, dtype=torch.float32) * 0.5)

    # The legacy format (a bare pickle stream followed by the storages).
    legacy = os.path.join(OUT, "legacy_format.pt")
    torch.save(OrderedDict([("w", torch.ones(2))]), legacy, _use_new_zipfile_serialization=False)
    print(f"{legacy}: legacy format, {os.path.getsize(legacy)} bytes")


if __name__ == "__main__":
    main()
