#include "formats/ggml_blocks.h"

#include "kernels/block_layouts.h"

#include <oxinfer/error.h>

#include <cstring>
#include <string>

// Every value must come out bit-identical to ggml's dequantize_row_*, so each function does the
// same float32 operations in ggml's order. Where a product is followed by an add or subtract
// (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) the product is exact in float32 (an 11-bit half scale times a
// sub-scale of at most 6 bits times a code of at most 5 bits), so a compiler that contracts it
// into a fused multiply-add produces the same bits.

namespace oxinfer {
namespace {

// Blocks are packed byte records with no alignment: bytes are read one by one, wider fields with
// memcpy. Like ggml, this assumes a little-endian host (ggml writes the fields in host order).
using Bytes = const unsigned char*;

float half_at(Bytes p) {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return f16_to_f32(bits);
}

int8_t signed_at(Bytes p) { return static_cast<int8_t>(*p); }

// The non-linear 4-bit codebook of IQ4_NL and IQ4_XS (ggml-common.h kvalues_iq4nl).
constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};

// The fp4 e2m1 values of MXFP4 doubled to integers (ggml's kvalues_mxfp4); the scale below is
// halved to compensate.
constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128): half the e8m0 scale 2^(e - 127), made from bits as ggml does (e < 2 gives a
// subnormal; e = 255 is 2^127, not NaN, since ggml does not treat it specially).
float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
}

// The 6-bit scale k (0..15) of Q3_K from its 12 bytes: low 4 bits are the low nibbles of bytes
// 0..7 then their high nibbles; the top 2 bits come from bytes 8..11, two bits per scale.
int q3k_scale(Bytes s, int k) {
    const int low = k < 8 ? s[k] & 0xF : s[k - 8] >> 4;
    const int high = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
    return low | (high << 4);
}

// Q4_0: half d, 16 bytes of nibbles (low nibbles are elements 0..15, high 16..31); y = (q-8)*d.
void q4_0(Bytes b, float* y) {
    const float d = half_at(b);
    for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<float>((b[2 + j] & 0xF) - 8) * d;
        y[j + 16] = static_cast<float>((b[2 + j] >> 4) - 8) * d;
    }
}

// Q4_1: half d, half m, nibbles as Q4_0; y = q*d + m.
void q4_1(Bytes b, float* y) {
    const float d = half_at(b);
    const float m = half_at(b + 2);
    for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<float>(b[4 + j] & 0xF) * d + m;
        y[j + 16] = static_cast<float>(b[4 + j] >> 4) * d + m;
    }
}

// Q5_0: half d, 32 fifth bits (bit i of a little-endian uint32 for element i), nibbles as Q4_0;
// y = (q-16)*d.
void q5_0(Bytes b, float* y) {
    const float d = half_at(b);
    uint32_t qh;
    std::memcpy(&qh, b + 2, 4);
    for (int j = 0; j < 16; ++j) {
        const int q0 = (b[6 + j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
        const int q1 = (b[6 + j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
        y[j] = static_cast<float>(q0 - 16) * d;
        y[j + 16] = static_cast<float>(q1 - 16) * d;
    }
}

// Q5_1: half d, half m, fifth bits and nibbles as Q5_0; y = q*d + m.
void q5_1(Bytes b, float* y) {
    const float d = half_at(b);
    const float m = half_at(b + 2);
    uint32_t qh;
    std::memcpy(&qh, b + 4, 4);
    for (int j = 0; j < 16; ++j) {
        const int q0 = (b[8 + j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
        const int q1 = (b[8 + j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
        y[j] = static_cast<float>(q0) * d + m;
        y[j + 16] = static_cast<float>(q1) * d + m;
    }
}

// Q8_0: half d, 32 int8; y = q*d.
void q8_0(Bytes b, float* y) {
    const float d = half_at(b);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(signed_at(b + 2 + j)) * d;
}

// Q8_1: half d, half s (d times the sum of the quants, kept for dot products), 32 int8;
// y = q*d. ggml has no dequantize_row_q8_1; this is the meaning of its fields.
void q8_1(Bytes b, float* y) {
    const float d = half_at(b);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(signed_at(b + 4 + j)) * d;
}

// Q2_K: 16 scale bytes (low nibble scale, high nibble min), 64 bytes of 2-bit quants, half d,
// half dmin. Element o belongs to sub-block o/16; in each 128-element half, sub-blocks come in
// pairs that read bytes 0..15 and 16..31 of the half's 32 quant bytes at bit shift 2*pair.
void q2_k(Bytes b, float* y) {
    const Bytes scales = b;
    const Bytes qs = b + 16;
    const float d = half_at(b + 80);
    const float dmin = half_at(b + 82);
    for (int o = 0; o < 256; ++o) {
        const int sub = o / 16;
        const int shift = 2 * ((o / 32) % 4);
        const int byte = 32 * (o / 128) + 16 * (sub % 2) + o % 16;
        const float dl = d * static_cast<float>(scales[sub] & 0xF);
        const float ml = dmin * static_cast<float>(scales[sub] >> 4);
        y[o] = dl * static_cast<float>((qs[byte] >> shift) & 3) - ml;
    }
}

// Q3_K: 32 bytes of high bits, 64 bytes of low 2 bits, 12 bytes of 6-bit scales, half d. The
// 2-bit quants are laid out as in Q2_K; the high bit of element o is bit o/32 of hmask[o % 32],
// and a clear high bit subtracts 4. y = (d*(scale-32)) * q.
void q3_k(Bytes b, float* y) {
    const Bytes hmask = b;
    const Bytes qs = b + 32;
    const Bytes scales = b + 96;
    const float d = half_at(b + 108);
    for (int o = 0; o < 256; ++o) {
        const int sub = o / 16;
        const int shift = 2 * ((o / 32) % 4);
        const int byte = 32 * (o / 128) + 16 * (sub % 2) + o % 16;
        const int high = (hmask[o % 32] >> (o / 32)) & 1;
        const int q = ((qs[byte] >> shift) & 3) - (high ? 0 : 4);
        const float dl = d * static_cast<float>(q3k_scale(scales, sub) - 32);
        y[o] = dl * static_cast<float>(q);
    }
}

// Q4_K: half d, half dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles. Each 64
// elements use 32 bytes: low nibbles are sub-block 2c, high nibbles 2c+1. y = (d*sc)*q - dmin*m.
void q4_k(Bytes b, float* y) {
    const float d = half_at(b);
    const float dmin = half_at(b + 2);
    const Bytes scales = b + 4;
    const Bytes qs = b + 16;
    for (int sub = 0; sub < 8; ++sub) {
        int sc, m;
        blocks::k4_scale_min(scales, sub, sc, m);
        const float d1 = d * static_cast<float>(sc);
        const float m1 = dmin * static_cast<float>(m);
        const Bytes q = qs + 32 * (sub / 2);
        const int shift = 4 * (sub % 2);
        for (int l = 0; l < 32; ++l) y[32 * sub + l] = d1 * static_cast<float>((q[l] >> shift) & 0xF) - m1;
    }
}

// Q5_K: as Q4_K with 32 bytes of fifth bits after the scales: bit `sub` of qh[l] adds 16.
void q5_k(Bytes b, float* y) {
    const float d = half_at(b);
    const float dmin = half_at(b + 2);
    const Bytes scales = b + 4;
    const Bytes qh = b + 16;
    const Bytes qs = b + 48;
    for (int sub = 0; sub < 8; ++sub) {
        int sc, m;
        blocks::k4_scale_min(scales, sub, sc, m);
        const float d1 = d * static_cast<float>(sc);
        const float m1 = dmin * static_cast<float>(m);
        const Bytes q = qs + 32 * (sub / 2);
        const int shift = 4 * (sub % 2);
        for (int l = 0; l < 32; ++l) {
            const int value = ((q[l] >> shift) & 0xF) + (((qh[l] >> sub) & 1) ? 16 : 0);
            y[32 * sub + l] = d1 * static_cast<float>(value) - m1;
        }
    }
}

// Q6_K: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 int8 scales, half d. In each
// 128-element half, group g (0..3) of 32 reads nibble g/2 of ql[64*half + 32*(g%2) + l] and bits
// 2g..2g+1 of qh[32*half + l]. y = (d*scale)*(q-32), scale index o/16.
void q6_k(Bytes b, float* y) {
    const Bytes ql = b;
    const Bytes qh = b + 128;
    const Bytes scales = b + 192;
    const float d = half_at(b + 208);
    for (int o = 0; o < 256; ++o) {
        const int half = o / 128;
        const int g = (o / 32) % 4;
        const int l = o % 32;
        const int low = (ql[64 * half + 32 * (g % 2) + l] >> (4 * (g / 2))) & 0xF;
        const int high = (qh[32 * half + l] >> (2 * g)) & 3;
        const int q = (low | (high << 4)) - 32;
        y[o] = d * static_cast<float>(signed_at(scales + o / 16)) * static_cast<float>(q);
    }
}

// Q8_K: float32 d, 256 int8, 16 int16 group sums (only for dot products); y = d*q.
void q8_k(Bytes b, float* y) {
    float d;
    std::memcpy(&d, b, 4);
    for (int j = 0; j < 256; ++j) y[j] = d * static_cast<float>(signed_at(b + 4 + j));
}

// IQ4_NL: half d, nibbles as Q4_0 indexing the non-linear codebook; y = d*value.
void iq4_nl(Bytes b, float* y) {
    const float d = half_at(b);
    for (int j = 0; j < 16; ++j) {
        y[j] = d * static_cast<float>(kIq4nlValues[b[2 + j] & 0xF]);
        y[j + 16] = d * static_cast<float>(kIq4nlValues[b[2 + j] >> 4]);
    }
}

// IQ4_XS: half d, uint16 of high scale bits (2 per sub-block), 4 bytes of low scale nibbles,
// then 8 sub-blocks of 32 laid out as IQ4_NL blocks. y = (d*(scale-32))*value.
void iq4_xs(Bytes b, float* y) {
    const float d = half_at(b);
    uint16_t scales_h;
    std::memcpy(&scales_h, b + 2, 2);
    const Bytes scales_l = b + 4;
    const Bytes qs = b + 8;
    for (int sub = 0; sub < 8; ++sub) {
        const int low = (scales_l[sub / 2] >> (4 * (sub % 2))) & 0xF;
        const int high = (scales_h >> (2 * sub)) & 3;
        const float dl = d * static_cast<float>((low | (high << 4)) - 32);
        for (int j = 0; j < 16; ++j) {
            const unsigned char q = qs[16 * sub + j];
            y[32 * sub + j] = dl * static_cast<float>(kIq4nlValues[q & 0xF]);
            y[32 * sub + j + 16] = dl * static_cast<float>(kIq4nlValues[q >> 4]);
        }
    }
}

// Ternary digit n (0 = most significant) of a byte that stores its digits as a fixed-point
// fraction of 3^5: multiplying by 3^n modulo 256 shifts the digit to the top, and (q*3) >> 8
// reads it (0..2). The digit is stored offset by 1.
int ternary_digit(unsigned char byte, int n) {
    static constexpr unsigned char kPow3[5] = {1, 3, 9, 27, 81};
    const auto q = static_cast<unsigned char>(byte * kPow3[n]);
    return ((q * 3) >> 8) - 1;
}

// TQ1_0: 48 bytes of five ternary digits, 4 bytes of four digits, half d. Elements 0..159 are
// digit o/32 of qs[o%32]; 160..239 digit r/16 of qs[32 + r%16]; 240..255 digit r/4 of qh[r%4].
void tq1_0(Bytes b, float* y) {
    const Bytes qs = b;
    const Bytes qh = b + 48;
    const float d = half_at(b + 52);
    for (int o = 0; o < 160; ++o) y[o] = static_cast<float>(ternary_digit(qs[o % 32], o / 32)) * d;
    for (int r = 0; r < 80; ++r) y[160 + r] = static_cast<float>(ternary_digit(qs[32 + r % 16], r / 16)) * d;
    for (int r = 0; r < 16; ++r) y[240 + r] = static_cast<float>(ternary_digit(qh[r % 4], r / 4)) * d;
}

// TQ2_0: 64 bytes of 2-bit codes, half d. Element o reads bits 2*((o/32)%4) of
// qs[32*(o/128) + o%32]; y = (code-1)*d.
void tq2_0(Bytes b, float* y) {
    const float d = half_at(b + 64);
    for (int o = 0; o < 256; ++o) {
        const int code = (b[32 * (o / 128) + o % 32] >> (2 * ((o / 32) % 4))) & 3;
        y[o] = static_cast<float>(code - 1) * d;
    }
}

// MXFP4: e8m0 exponent byte, nibbles as Q4_0 indexing the doubled e2m1 values; y = value*d.
void mxfp4(Bytes b, float* y) {
    const float d = e8m0_half(b[0]);
    for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<float>(kMxfp4Values[b[1 + j] & 0xF]) * d;
        y[j + 16] = static_cast<float>(kMxfp4Values[b[1 + j] >> 4]) * d;
    }
}

using BlockFn = void (*)(Bytes, float*);

// The IQ2_*, IQ3_* and IQ1_* types index large codebooks (ggml's iq2xxs_grid and friends) that
// we do not carry, so they have no entry here.
BlockFn block_function(DType type) {
    switch (type) {
        case DType::Q4_0: return q4_0;
        case DType::Q4_1: return q4_1;
        case DType::Q5_0: return q5_0;
        case DType::Q5_1: return q5_1;
        case DType::Q8_0: return q8_0;
        case DType::Q8_1: return q8_1;
        case DType::Q2_K: return q2_k;
        case DType::Q3_K: return q3_k;
        case DType::Q4_K: return q4_k;
        case DType::Q5_K: return q5_k;
        case DType::Q6_K: return q6_k;
        case DType::Q8_K: return q8_k;
        case DType::IQ4_NL: return iq4_nl;
        case DType::IQ4_XS: return iq4_xs;
        case DType::TQ1_0: return tq1_0;
        case DType::TQ2_0: return tq2_0;
        case DType::MXFP4: return mxfp4;
        default: return nullptr;
    }
}

}  // namespace

bool ggml_blocks_supported(DType type) { return block_function(type) != nullptr; }

void dequantize_ggml_blocks(DType type, const std::byte* src, float* dst, int64_t count) {
    const BlockFn fn = block_function(type);
    if (!fn) throw Error(std::string(dtype_name(type)), "unsupported tensor type: no dequantisation for it is implemented");
    const DTypeTraits& traits = dtype_traits(type);
    if (count < 0 || count % traits.block_elements != 0)
        throw Error(std::string(dtype_name(type)),
                    std::to_string(count) + " values are not a whole number of " +
                        std::to_string(traits.block_elements) + "-value blocks");
    const auto* bytes = reinterpret_cast<Bytes>(src);
    const int64_t blocks = count / traits.block_elements;
    for (int64_t i = 0; i < blocks; ++i)
        fn(bytes + i * traits.block_bytes, dst + i * traits.block_elements);
}

}  // namespace oxinfer
