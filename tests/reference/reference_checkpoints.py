#!/usr/bin/python3
"""Reference safetensors and GGUF files, with their expected contents, for test_reference_checkpoints.

Run from anywhere with Debian's Python and numpy, nothing else:

    /usr/bin/python3 tests/reference/reference_checkpoints.py

It (re)writes, in tests/reference/checkpoints/:

    reference.safetensors  one tensor of every safetensors dtype numpy can make (F64 F32 F16 I64
                           I32 I16 I8 U8 BOOL), BF16 rounded by hand from float32 bit patterns
                           (round to nearest even), F8_E4M3 and F8_E5M2 from raw bytes, a 0-d
                           scalar, an empty tensor (a zero dimension) and a __metadata__ map
    reference.gguf         GGUF version 3, general.alignment 64, one metadata key of every value
                           type (u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool string, arrays of
                           u8/i32/f32/string, an empty array, an array of arrays of strings, a
                           non-ASCII string), llama.* keys of a plausible small llama, and
                           F32/F16/BF16/Q8_0 tensors of 1, 2 and 3 dimensions
    expected.json          {"reference.safetensors": {...}, "reference.gguf": {...}}, each with
                           "format", "architecture", the metadata (safetensors: the __metadata__
                           object; GGUF: [{"key", "type", "value"}] in file order, type as
                           "u8", "string", "array[string]", "array[array[string]]", ...) and
                           "tensors": [{"name", "dtype", "shape", "values"}] with dtype lower-case
                           ("f32", "bf16", "q8_0", "f8_e4m3", "bool"), shape in numpy row-major
                           order, and every value as the float32 numpy decodes it to, written as a
                           JSON number (bit-exact through a double), or "nan", "inf", "-inf".

The files are written from the published format descriptions, independently of the C++ code:
  safetensors (huggingface/safetensors README): u64 little-endian header size N, N bytes of JSON
    {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}
    padded with spaces, then the data, offsets relative to its start, with no holes.
  GGUF (ggml docs/gguf.md): "GGUF", u32 version, u64 tensor count, u64 key/value count; each
    key/value: string key, u32 value type, value (strings are u64 length + UTF-8 bytes; arrays
    are u32 element type, u64 count, elements); each tensor info: string name, u32 n_dims, u64
    dims innermost first, u32 ggml type, u64 offset (relative to the data section, a multiple of
    the alignment); padding to the alignment, then the tensor data.
Everything is fixed (no randomness), so re-running rewrites identical files. Each is under 8 KB.
"""

import json
import math
import struct
from pathlib import Path

import numpy as np

OUT_DIR = Path(__file__).resolve().parent / "checkpoints"
F32 = np.float32


# ---- decoding helpers (expected values) ----

def json_number(value):
    """A float32 value as JSON: a number (exact through a double) or "nan"/"inf"/"-inf"."""
    v = float(np.float32(value))
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def bf16_from_f32(values):
    """float32 -> bfloat16 bit patterns, rounding to nearest even; NaN stays a quiet NaN."""
    bits = np.asarray(values, dtype="<f4").view("<u4").astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(values, dtype=F32))
    rounded[nan] = ((bits[nan] >> 16).astype(np.uint16) | 0x0040)
    return rounded


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).astype("<u4").view("<f4")


def f8_e4m3_value(byte):
    """OCP FP8 E4M3 ("fn"): bias 7, no infinities, S.1111.111 is NaN."""
    sign = -1.0 if byte & 0x80 else 1.0
    exponent = (byte >> 3) & 0xF
    mantissa = byte & 0x7
    if exponent == 0xF and mantissa == 0x7:
        return math.nan
    if exponent == 0:
        return sign * mantissa / 8.0 * 2.0 ** -6
    return sign * (1.0 + mantissa / 8.0) * 2.0 ** (exponent - 7)


def f8_e5m2_value(byte):
    """FP8 E5M2: IEEE-like, bias 15, exponent 31 is infinity (mantissa 0) or NaN."""
    sign = -1.0 if byte & 0x80 else 1.0
    exponent = (byte >> 2) & 0x1F
    mantissa = byte & 0x3
    if exponent == 0x1F:
        return sign * math.inf if mantissa == 0 else math.nan
    if exponent == 0:
        return sign * mantissa / 4.0 * 2.0 ** -14
    return sign * (1.0 + mantissa / 4.0) * 2.0 ** (exponent - 15)


# ---- safetensors ----

def safetensors_cases():
    """(name, dtype, shape, raw bytes, float32 values) for every tensor of reference.safetensors."""
    cases = []

    def numpy_case(name, dtype_name, array):
        with np.errstate(over="ignore"):
            values = array.astype(F32).reshape(-1)  # numpy's own conversion (round to nearest)
        cases.append((name, dtype_name, list(array.shape), array.tobytes(), list(values)))

    numpy_case("f64", "F64", np.array([[0.1, -2.5, 1e300], [1e-50, 1.0 + 2.0 ** -24, 1.0 + 3 * 2.0 ** -24],
                                        [-0.0, math.inf, math.nan], [2.0 ** -149, 3.4028235677973366e38, -1e-320]],
                                       dtype="<f8"))
    numpy_case("f32", "F32", np.array([[1.0, -0.0, math.inf], [-math.inf, math.nan, 1.401298464324817e-45],
                                        [3.4028234663852886e38, -1.1754943508222875e-38, 0.333333343267]],
                                       dtype="<f4"))
    numpy_case("f16", "F16", np.array([0.0, -0.0, 1.0, 65504.0, 2.0 ** -24, 2.0 ** -14, math.inf, -math.inf,
                                        math.nan, -2.5, 0.0999755859375, 1000.0], dtype="<f2").reshape(3, 4))
    numpy_case("i64", "I64", np.array([0, -1, 2 ** 53 + 1, 2 ** 60 + 2 ** 36 + 1, -(2 ** 63), 2 ** 63 - 1], dtype="<i8"))
    numpy_case("i32", "I32", np.array([[2 ** 31 - 1, -(2 ** 31)], [16777217, -7]], dtype="<i4"))
    numpy_case("i16", "I16", np.array([-32768, 32767, 0, -1, 1234], dtype="<i2"))
    numpy_case("i8", "I8", np.array([[-128, 127], [0, -1], [42, -42]], dtype="i1"))
    numpy_case("u8", "U8", np.array([0, 1, 127, 128, 255], dtype="u1"))
    numpy_case("bool", "BOOL", np.array([[True, False, True], [False, False, True]], dtype=np.bool_))
    numpy_case("scalar", "F32", np.array(42.5, dtype="<f4"))
    numpy_case("empty", "F32", np.zeros((2, 0), dtype="<f4"))

    bf16_sources = np.array([1.0, 3.14159265, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, -0.0, math.inf,
                             -math.inf, math.nan, 1e-40, 3.4028234663852886e38, -65504.0, 0.1], dtype="<f4")
    bf16_bits = bf16_from_f32(bf16_sources)
    cases.append(("bf16", "BF16", [2, 2, 3], bf16_bits.astype("<u2").tobytes(), list(bf16_to_f32(bf16_bits))))

    e4m3 = [0x00, 0x80, 0x01, 0x07, 0x08, 0x38, 0x3C, 0xB8, 0x7E, 0xFE, 0x7F, 0xFF, 0x77, 0x55, 0x0F, 0xC3]
    cases.append(("f8_e4m3", "F8_E4M3", [4, 4], bytes(e4m3), [F32(f8_e4m3_value(b)) for b in e4m3]))
    e5m2 = [0x00, 0x80, 0x01, 0x03, 0x04, 0x3C, 0xBC, 0x7B, 0xFB, 0x7C, 0xFC, 0x7D, 0x7F, 0xFE, 0x3E, 0x46]
    cases.append(("f8_e5m2", "F8_E5M2", [16], bytes(e5m2), [F32(f8_e5m2_value(b)) for b in e5m2]))
    return cases


SAFETENSORS_METADATA = {"format": "pt", "producer": "tests/reference/reference_checkpoints.py",
                        "note": "Grüße — reference tensors"}


def write_safetensors(path):
    cases = safetensors_cases()
    header = {"__metadata__": SAFETENSORS_METADATA}
    data = bytearray()
    for name, dtype_name, shape, raw, _ in cases:
        header[name] = {"dtype": dtype_name, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the format allows trailing spaces; aligns the data to 8 bytes
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(data))
    return {
        "format": "safetensors",
        "architecture": "",
        "metadata": SAFETENSORS_METADATA,
        "tensors": [{"name": name, "dtype": dtype_name.lower(), "shape": shape, "values": [json_number(v) for v in values]}
                    for name, dtype_name, shape, _, values in cases],
    }


# ---- GGUF ----

GGUF_TYPES = {"u8": 0, "i8": 1, "u16": 2, "i16": 3, "u32": 4, "i32": 5, "f32": 6, "bool": 7,
              "string": 8, "array": 9, "u64": 10, "i64": 11, "f64": 12}
SCALAR_FORMATS = {"u8": "<B", "i8": "<b", "u16": "<H", "i16": "<h", "u32": "<I", "i32": "<i",
                  "f32": "<f", "bool": "<?", "u64": "<Q", "i64": "<q", "f64": "<d"}
GGML_TYPES = {"f32": 0, "f16": 1, "q8_0": 8, "bf16": 30}  # ggml.h enum ggml_type
ALIGNMENT = 64


def gguf_string(text):
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def gguf_value(type_name, value):
    """Encodes a value of `type_name` ("u32", "string", "array[array[string]]", ...), no type tag."""
    if type_name.startswith("array["):
        element = type_name[len("array["):-1]
        element_tag = GGUF_TYPES["array" if element.startswith("array[") else element]
        return struct.pack("<IQ", element_tag, len(value)) + b"".join(gguf_value(element, v) for v in value)
    if type_name == "string":
        return gguf_string(value)
    return struct.pack(SCALAR_FORMATS[type_name], value)


def f32_exact(value):
    return float(np.float32(value))


GGUF_METADATA = [
    ("general.architecture", "string", "llama"),
    ("general.name", "string", "reference-llama"),
    ("general.alignment", "u32", ALIGNMENT),
    ("general.file_type", "u32", 7),
    ("llama.context_length", "u32", 128),
    ("llama.embedding_length", "u32", 64),
    ("llama.block_count", "u32", 1),
    ("llama.feed_forward_length", "u32", 96),
    ("llama.attention.head_count", "u32", 4),
    ("llama.attention.head_count_kv", "u32", 2),
    ("llama.rope.dimension_count", "u32", 16),
    ("llama.rope.freq_base", "f32", f32_exact(10000.0)),
    ("llama.attention.layer_norm_rms_epsilon", "f32", f32_exact(1e-5)),
    ("tokenizer.ggml.model", "string", "llama"),
    ("tokenizer.ggml.tokens", "array[string]", ["<unk>", "<s>", "</s>", "▁the", "é", ""]),
    ("tokenizer.ggml.scores", "array[f32]", [f32_exact(v) for v in (0.0, 0.0, 0.0, -1.5, -2.25, -1e9)]),
    ("tokenizer.ggml.token_type", "array[i32]", [2, 3, 3, 1, 1, 6]),
    ("tokenizer.ggml.bos_token_id", "u32", 1),
    ("tokenizer.ggml.eos_token_id", "u32", 2),
    ("reference.u8", "u8", 255),
    ("reference.i8", "i8", -128),
    ("reference.u16", "u16", 65535),
    ("reference.i16", "i16", -32768),
    ("reference.u32", "u32", 4294967295),
    ("reference.i32", "i32", -2147483648),
    ("reference.u64", "u64", 18446744073709551615),
    ("reference.i64", "i64", -9223372036854775808),
    ("reference.f32", "f32", f32_exact(-3.14159265)),
    ("reference.f64", "f64", 2.718281828459045),
    ("reference.bool_true", "bool", True),
    ("reference.bool_false", "bool", False),
    ("reference.string", "string", "hello gguf"),
    ("reference.unicode", "string", "Grüße, 世界 🦙"),
    ("reference.empty_string", "string", ""),
    ("reference.array_u8", "array[u8]", [0, 1, 254, 255]),
    ("reference.array_i32", "array[i32]", [-2147483648, -1, 0, 2147483647]),
    ("reference.array_f32", "array[f32]", [f32_exact(v) for v in (0.5, -0.0, 1e-45, 3.4028234663852886e38)]),
    ("reference.array_string", "array[string]", ["a", "bc", "", "ü"]),
    ("reference.array_empty", "array[i32]", []),
    ("reference.array_array_string", "array[array[string]]", [["x", "y"], [], ["zz"]]),
]


def q8_0_blocks(rows):
    """Q8_0 blocks by hand: per 32 values an f16 scale d then 32 int8 q; value = d * q."""
    scales = np.array([0.5, -0.0078125, 2.0 ** -20, 3.0], dtype="<f2")  # one per block
    q = (np.arange(rows * 64, dtype=np.int64) * 37 % 256 - 128).astype(np.int8).reshape(-1, 32)
    q[0, :4] = [-128, 127, 0, -1]
    raw = b"".join(scales[i:i + 1].tobytes() + q[i].tobytes() for i in range(q.shape[0]))
    values = (scales.astype(F32).reshape(-1, 1) * q.astype(F32)).reshape(-1)
    return raw, values


def gguf_tensors():
    """(name, dtype, numpy shape, raw bytes, float32 values)."""
    out = []
    f32 = np.array([1.0, -2.0, 0.5, math.inf, -0.0, 1e-45, 65536.25, math.nan], dtype="<f4")
    out.append(("token_norm.weight", "f32", [8], f32.tobytes(), list(f32)))
    f16 = (np.arange(24, dtype=np.float64) * 0.37 - 4.0).astype("<f2").reshape(4, 6)
    f16.flat[0], f16.flat[1], f16.flat[2] = 65504.0, 2.0 ** -24, -0.0
    out.append(("blk.0.attn_q.weight", "f16", list(f16.shape), f16.tobytes(), list(f16.astype(F32).reshape(-1))))
    bf16_src = (np.arange(24, dtype=np.float32) * F32(-0.731) + F32(3.0)).astype("<f4")
    bf16 = bf16_from_f32(bf16_src)
    out.append(("blk.0.ffn_up.weight", "bf16", [2, 3, 4], bf16.astype("<u2").tobytes(), list(bf16_to_f32(bf16))))
    raw, values = q8_0_blocks(2)
    out.append(("blk.0.ffn_down.weight", "q8_0", [2, 64], raw, list(values)))
    f32_3d = (np.arange(12, dtype=np.float32) / F32(8.0) - F32(0.5)).astype("<f4").reshape(1, 3, 4)
    out.append(("output.weight", "f32", [1, 3, 4], f32_3d.tobytes(), list(f32_3d.reshape(-1))))
    return out


def write_gguf(path):
    tensors = gguf_tensors()
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(GGUF_METADATA))
    for key, type_name, value in GGUF_METADATA:
        tag = GGUF_TYPES["array" if type_name.startswith("array[") else type_name]
        head += gguf_string(key) + struct.pack("<I", tag) + gguf_value(type_name, value)
    data = bytearray()
    for name, dtype, shape, raw, _ in tensors:
        dims = list(reversed(shape))  # ggml: innermost first
        head += gguf_string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        head += struct.pack("<IQ", GGML_TYPES[dtype], len(data))
        data += raw
        data += b"\0" * (-len(data) % ALIGNMENT)
    head += b"\0" * (-len(head) % ALIGNMENT)
    path.write_bytes(head + bytes(data))
    return {
        "format": "gguf",
        "architecture": "llama",
        "metadata": [{"key": key, "type": type_name, "value": value} for key, type_name, value in GGUF_METADATA],
        "tensors": [{"name": name, "dtype": dtype, "shape": shape, "values": [json_number(v) for v in values]}
                    for name, dtype, shape, _, values in tensors],
    }


def main():
    OUT_DIR.mkdir(exist_ok=True)
    expected = {
        "reference.safetensors": write_safetensors(OUT_DIR / "reference.safetensors"),
        "reference.gguf": write_gguf(OUT_DIR / "reference.gguf"),
    }
    text = json.dumps(expected, ensure_ascii=False, indent=None, separators=(",", ":"))
    (OUT_DIR / "expected.json").write_text(text + "\n", encoding="utf-8")
    for name in ("reference.safetensors", "reference.gguf", "expected.json"):
        size = (OUT_DIR / name).stat().st_size
        assert size < 8192, f"{name} is {size} bytes"
        print(f"{name}: {size} bytes")


if __name__ == "__main__":
    main()
