"""Golden data for tests/test_ggml_blocks.cpp: ggml block-quantised types decoded with numpy.

Run from anywhere with Debian's Python and numpy, nothing else:

    /usr/bin/python3 tests/reference/ggml_blocks_reference.py

It writes, next to this script, into ggml_blocks/:

    <type>.blocks   raw blocks (16 blocks of the 32-value types, 8 of the 256-value ones)
    <type>.f32      the values they decode to, little-endian float32
    f16_all.f32     all 65536 half-float bit patterns 0x0000..0xffff converted to float32

for q4_0 q4_1 q5_0 q5_1 q8_0 q8_1 q2_k q3_k q4_k q5_k q6_k q8_k iq4_nl iq4_xs tq1_0 tq2_0 mxfp4.

The decoders below are written from the block layouts (ggml-common.h structs, gguf-py's
quants.py), vectorised over blocks and independent of the C++ code under test. Every operation
is a float32 operation in the order ggml's dequantize_row_* uses (e.g. Q4_K is (d*sc)*q -
(dmin*m), Q6_K is (d*sc)*q), so each result is correctly rounded exactly as ggml rounds it and
the goldens must match bit for bit. The output is deterministic (fixed seed).

The first blocks of each type are edge cases: all-zero bytes, all-ones codes, min/max codes,
negative, signed-zero, largest and subnormal scales; the rest are random bytes with finite
random scales. MXFP4 includes the exponent bytes 0, 1 (subnormal scales) and 255, which ggml
decodes as 2^127 (it has no NaN case), so some MXFP4 goldens are infinite.
"""

from pathlib import Path

import numpy as np

F32 = np.float32
OUT_DIR = Path(__file__).resolve().parent / "ggml_blocks"
SEED = 20240611

KVALUES_IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=np.int8)
# e2m1 values doubled (0, ±0.5, ±1, ±1.5, ±2, ±3, ±4, ±6 times 2); the scale is halved to match.
KVALUES_MXFP4 = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.int8)


# ---- field helpers: `b` is an (n_blocks, block_bytes) uint8 array ----

def half(b, offset):
    """(n, 1) float32 from the little-endian half at `offset` (numpy's conversion is exact)."""
    return np.ascontiguousarray(b[:, offset:offset + 2]).view("<f2").astype(F32)


def nibbles(qs):
    """(n, k) bytes -> (n, 2k): low nibbles first, then high nibbles (the ggml 32-value order)."""
    n, k = qs.shape
    return ((qs.reshape(n, 1, k) >> np.array([0, 4], dtype=np.uint8).reshape(1, 2, 1)) & 0xF).reshape(n, 2 * k)


def crumbs(qs, groups):
    """(n, groups*32) bytes -> (n, groups, 4, 32): 2-bit fields at shifts 0,2,4,6 of each 32-byte run."""
    n = qs.shape[0]
    shifts = np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)
    return (qs.reshape(n, groups, 1, 32) >> shifts) & 3


def k4_scales_mins(s):
    """Q4_K/Q5_K: 12 bytes -> (n, 8) 6-bit scales and (n, 8) 6-bit mins."""
    sc = np.empty((s.shape[0], 8), dtype=np.uint8)
    mn = np.empty_like(sc)
    sc[:, :4] = s[:, 0:4] & 63
    mn[:, :4] = s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, mn


# ---- decoders: (n, block_bytes) uint8 -> (n, block_elements) float32 ----

def q4_0(b):
    d = half(b, 0)
    q = nibbles(b[:, 2:18]).astype(np.int8) - np.int8(8)
    return q.astype(F32) * d


def q4_1(b):
    d, m = half(b, 0), half(b, 2)
    return nibbles(b[:, 4:20]).astype(F32) * d + m


def fifth_bits(b, offset):
    qh = np.ascontiguousarray(b[:, offset:offset + 4]).view("<u4")
    return ((qh >> np.arange(32, dtype=np.uint32)) & 1).astype(np.uint8)


def q5_0(b):
    d = half(b, 0)
    q = (nibbles(b[:, 6:22]) | (fifth_bits(b, 2) << 4)).astype(np.int8) - np.int8(16)
    return q.astype(F32) * d


def q5_1(b):
    d, m = half(b, 0), half(b, 2)
    q = nibbles(b[:, 8:24]) | (fifth_bits(b, 4) << 4)
    return q.astype(F32) * d + m


def q8_0(b):
    return b[:, 2:34].view(np.int8).astype(F32) * half(b, 0)


def q8_1(b):
    # The second half (s = d * sum of quants) only serves dot products.
    return b[:, 4:36].view(np.int8).astype(F32) * half(b, 0)


def q2_k(b):
    n = b.shape[0]
    scales, d, dmin = b[:, 0:16], half(b, 80), half(b, 82)
    q = crumbs(b[:, 16:80], 2).reshape(n, 16, 16)  # (half, shift, 32 bytes as 2 x 16) = sub-block
    dl = (d * (scales & 0xF).astype(F32)).reshape(n, 16, 1)
    ml = (dmin * (scales >> 4).astype(F32)).reshape(n, 16, 1)
    return (dl * q.astype(F32) - ml).reshape(n, 256)


def q3_k(b):
    n = b.shape[0]
    hmask, d = b[:, 0:32], half(b, 108)
    # ggml unpacks the 12 scale bytes as three little-endian uint32 with masks.
    aux = np.ascontiguousarray(b[:, 96:108]).view("<u4")
    a0, a1, tmp = aux[:, 0], aux[:, 1], aux[:, 2]
    k1, k2 = np.uint32(0x03030303), np.uint32(0x0F0F0F0F)
    unpacked = np.stack([
        (a0 & k2) | (((tmp >> 0) & k1) << 4),
        (a1 & k2) | (((tmp >> 2) & k1) << 4),
        ((a0 >> 4) & k2) | (((tmp >> 4) & k1) << 4),
        ((a1 >> 4) & k2) | (((tmp >> 6) & k1) << 4),
    ], axis=1).astype("<u4")
    scales = unpacked.view(np.uint8).astype(np.int32) - 32  # (n, 16)
    low = crumbs(b[:, 32:96], 2).astype(np.int32)  # (n, 2, 4, 32)
    high = (hmask.reshape(n, 1, 1, 32) >> np.arange(8, dtype=np.uint8).reshape(1, 2, 4, 1)) & 1
    q = (low - 4 * (1 - high.astype(np.int32))).reshape(n, 16, 16)
    dl = (d * scales.astype(F32)).reshape(n, 16, 1)
    return (dl * q.astype(F32)).reshape(n, 256)


def q4_k(b):
    n = b.shape[0]
    d, dmin = half(b, 0), half(b, 2)
    sc, mn = k4_scales_mins(b[:, 4:16])
    q = (b[:, 16:144].reshape(n, 4, 1, 32) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)) & 0xF
    d1 = (d * sc.astype(F32)).reshape(n, 8, 1)
    m1 = (dmin * mn.astype(F32)).reshape(n, 8, 1)
    return (d1 * q.reshape(n, 8, 32).astype(F32) - m1).reshape(n, 256)


def q5_k(b):
    n = b.shape[0]
    d, dmin = half(b, 0), half(b, 2)
    sc, mn = k4_scales_mins(b[:, 4:16])
    qh = (b[:, 16:48].reshape(n, 1, 32) >> np.arange(8, dtype=np.uint8).reshape(1, 8, 1)) & 1
    ql = (b[:, 48:176].reshape(n, 4, 1, 32) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)) & 0xF
    q = ql.reshape(n, 8, 32) + 16 * qh
    d1 = (d * sc.astype(F32)).reshape(n, 8, 1)
    m1 = (dmin * mn.astype(F32)).reshape(n, 8, 1)
    return (d1 * q.astype(F32) - m1).reshape(n, 256)


def q6_k(b):
    n = b.shape[0]
    scales, d = b[:, 192:208].view(np.int8), half(b, 208)
    # ql: per 128-value half, 64 bytes; groups 0,1 are the low nibbles of bytes 0..31, 32..63,
    # groups 2,3 their high nibbles. qh: per half, 32 bytes, group g in bits 2g..2g+1.
    ql = (b[:, 0:128].reshape(n, 2, 1, 64) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)) & 0xF
    qh = crumbs(b[:, 128:192], 2)
    q = (ql.reshape(n, 2, 4, 32) | (qh << 4)).astype(np.int8) - np.int8(32)
    ds = (d * scales.astype(F32)).reshape(n, 16, 1)
    return (ds * q.reshape(n, 16, 16).astype(F32)).reshape(n, 256)


def q8_k(b):
    d = np.ascontiguousarray(b[:, 0:4]).view("<f4").astype(F32)
    return d * b[:, 4:260].view(np.int8).astype(F32)


def iq4_nl(b):
    return half(b, 0) * KVALUES_IQ4NL[nibbles(b[:, 2:18])].astype(F32)


def iq4_xs(b):
    n = b.shape[0]
    d = half(b, 0)
    scales_h = np.ascontiguousarray(b[:, 2:4]).view("<u2").astype(np.int32)  # (n, 1)
    low = ((b[:, 4:8].reshape(n, 4, 1) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2)) & 0xF).reshape(n, 8)
    high = (scales_h >> (2 * np.arange(8))) & 3
    dl = (d * ((low.astype(np.int32) | (high << 4)) - 32).astype(F32)).reshape(n, 8, 1)
    codes = np.stack([nibbles(b[:, 8 + 16 * i:24 + 16 * i]) for i in range(8)], axis=1)  # (n, 8, 32)
    return (dl * KVALUES_IQ4NL[codes].astype(F32)).reshape(n, 256)


def tq1_0(b):
    n = b.shape[0]
    d = half(b, 52)
    # Each byte holds base-3 digits as a fraction of 243: multiplying by 3^k (mod 256) brings
    # digit k to the top, where (x * 3) >> 8 reads it.
    pow3 = np.array([1, 3, 9, 27, 81], dtype=np.uint8)
    parts = [
        (b[:, 0:32].reshape(n, 1, 32) * pow3.reshape(1, 5, 1)).reshape(n, 160),
        (b[:, 32:48].reshape(n, 1, 16) * pow3.reshape(1, 5, 1)).reshape(n, 80),
        (b[:, 48:52].reshape(n, 1, 4) * pow3[:4].reshape(1, 4, 1)).reshape(n, 16),
    ]
    q = np.concatenate(parts, axis=1)
    digit = (q.astype(np.uint16) * 3) >> 8
    return (digit.astype(np.int16) - 1).astype(F32) * d


def tq2_0(b):
    n = b.shape[0]
    q = crumbs(b[:, 0:64], 2).reshape(n, 256)
    return (q.astype(np.int8) - np.int8(1)).astype(F32) * half(b, 64)


def mxfp4(b):
    # Half the e8m0 scale 2^(e-127), i.e. 2^(e-128); exact in float32 (subnormal for e < 2).
    d = np.ldexp(np.ones((b.shape[0], 1), dtype=F32), b[:, 0:1].astype(np.int32) - 128)
    assert d.dtype == F32
    return KVALUES_MXFP4[nibbles(b[:, 1:17])].astype(F32) * d


# name -> (block values, block bytes, decoder, scale fields (offset, kind))
TYPES = {
    "q4_0": (32, 18, q4_0, [(0, "f16")]),
    "q4_1": (32, 20, q4_1, [(0, "f16"), (2, "f16")]),
    "q5_0": (32, 22, q5_0, [(0, "f16")]),
    "q5_1": (32, 24, q5_1, [(0, "f16"), (2, "f16")]),
    "q8_0": (32, 34, q8_0, [(0, "f16")]),
    "q8_1": (32, 36, q8_1, [(0, "f16"), (2, "f16")]),
    "q2_k": (256, 84, q2_k, [(80, "f16"), (82, "f16")]),
    "q3_k": (256, 110, q3_k, [(108, "f16")]),
    "q4_k": (256, 144, q4_k, [(0, "f16"), (2, "f16")]),
    "q5_k": (256, 176, q5_k, [(0, "f16"), (2, "f16")]),
    "q6_k": (256, 210, q6_k, [(208, "f16")]),
    "q8_k": (256, 292, q8_k, [(0, "f32")]),
    "iq4_nl": (32, 18, iq4_nl, [(0, "f16")]),
    "iq4_xs": (256, 136, iq4_xs, [(0, "f16")]),
    "tq1_0": (256, 54, tq1_0, [(52, "f16")]),
    "tq2_0": (256, 66, tq2_0, [(64, "f16")]),
    "mxfp4": (32, 17, mxfp4, [(0, "e8m0")]),
}

# The leading blocks of every type are edge cases: (code bytes, scale mode). Code bytes are a
# byte or a repeated pattern (None: random); the scale fields are then written over them.
EDGE_BLOCKS = [
    (0x00, "zero"),                      # all-zero block
    (0xFF, "one"),                       # all codes at their maximum (or -1 for int8)
    (0x00, "negative"),                  # all codes at their minimum nibble/crumb
    ([0x80, 0x7F, 0x0F, 0xF0], "signed_zero"),  # int8 -128 and 127, mixed nibbles
    (None, "largest"),
    (None, "smallest"),
]
# MXFP4's e8m0 exponent per edge block: 2^-128 and 2^-127 (subnormal halves), 2^-126, 1,
# 2^126 and 255, which ggml reads as 2^127 (it has no NaN case), so large codes give inf.
EDGE_E8M0 = [0, 1, 2, 128, 254, 255]


def random_half(rng):
    if rng.random() < 0.5:  # a typical weight scale
        return np.float16(rng.standard_normal() * 10.0 ** rng.uniform(-4, 1))
    while True:  # any finite half, subnormals included
        bits = int(rng.integers(0, 0x10000))
        if (bits >> 10) & 0x1F != 0x1F:
            return np.array([bits], dtype="<u2").view("<f2")[0]


def half_scale(mode, field, rng):
    """A half scale field; `field` is its index in the block (d, then m/dmin/s)."""
    if mode == "zero":
        return np.float16(0.0)
    if mode == "one":
        return np.float16(1.0)
    if mode == "negative":
        return -abs(random_half(rng))
    if mode == "signed_zero" and field == 0:
        return np.float16(-0.0)
    if mode == "largest":
        return np.float16(-65504.0 if field % 2 else 65504.0)
    if mode == "smallest":  # the smallest subnormal, +d and -m
        return np.array([0x8001 if field % 2 else 0x0001], dtype="<u2").view("<f2")[0]
    return random_half(rng)


def float_scale(mode, rng):
    """Q8_K's float32 d; |d| * 128 stays finite."""
    if mode == "zero":
        return 0.0
    if mode == "one":
        return 1.0
    if mode == "negative":
        return -abs(rng.standard_normal())
    if mode == "signed_zero":
        return -0.0
    if mode == "largest":
        return 1e36
    if mode == "smallest":
        return float(np.array([1], dtype="<u4").view("<f4")[0])  # 2^-149
    return rng.standard_normal() * 10.0 ** rng.uniform(-6, 6)


def scale_bytes(kind, block, mode, field, rng):
    if kind == "e8m0":
        return bytes([EDGE_E8M0[block] if block < len(EDGE_E8M0) else int(rng.integers(0, 256))])
    if kind == "f16":
        return np.array([half_scale(mode, field, rng)], dtype="<f2").tobytes()
    return np.array([float_scale(mode, rng)], dtype="<f4").tobytes()


def make_blocks(name, rng):
    block_values, block_bytes, _, fields = TYPES[name]
    n_blocks = 16 if block_values == 32 else 8
    blocks = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
    for i in range(n_blocks):
        codes, mode = EDGE_BLOCKS[i] if i < len(EDGE_BLOCKS) else (None, "random")
        if isinstance(codes, int):
            blocks[i, :] = codes
        elif isinstance(codes, list):
            blocks[i, :] = np.resize(np.array(codes, dtype=np.uint8), block_bytes)
        for f, (offset, kind) in enumerate(fields):
            raw = scale_bytes(kind, i, mode, f, rng)
            blocks[i, offset:offset + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    return blocks


def main():
    OUT_DIR.mkdir(exist_ok=True)
    rng = np.random.default_rng(SEED)
    for name, (block_values, block_bytes, decode, _) in TYPES.items():
        blocks = make_blocks(name, rng)
        with np.errstate(over="ignore"):  # MXFP4 with e = 255 overflows, as in ggml
            values = decode(blocks)
        assert values.dtype == F32 and values.shape == (blocks.shape[0], block_values), name
        if name != "mxfp4":
            assert np.isfinite(values).all(), name
        (OUT_DIR / f"{name}.blocks").write_bytes(blocks.tobytes())
        (OUT_DIR / f"{name}.f32").write_bytes(values.astype("<f4").tobytes())
        print(f"{name}: {blocks.shape[0]} blocks, {values.size} values")
    halves = np.arange(0x10000, dtype=np.uint32).astype("<u2").view("<f2").astype("<f4")
    (OUT_DIR / "f16_all.f32").write_bytes(halves.tobytes())
    print("f16_all: 65536 values")


if __name__ == "__main__":
    main()
