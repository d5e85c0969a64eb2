#pragma once
// Small helpers over ggml block layouts, shared by the scalar and SIMD kernels. Everything here
// has internal linkage (static), so a file compiled with -mavx2 gets its own copy and never
// hands an AVX2-compiled inline function to code that runs on older CPUs.

#include <cstdint>
#include <cstring>

namespace oxinfer::blocks {

// The 6-bit scale and min of sub-block j (0..7) of Q4_K and Q5_K, packed into 12 bytes: the
// first four sub-blocks use the low 6 bits of bytes 0..7, the last four take their low 4 bits
// from bytes 8..11 and their top 2 bits from the spare top bits of bytes 0..7.
static inline void k4_scale_min(const uint8_t* s, int j, int& scale, int& min) {
    if (j < 4) {
        scale = s[j] & 63;
        min = s[j + 4] & 63;
    } else {
        scale = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

static inline uint16_t load_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

// Byte offsets inside the blocks (ggml-common.h layouts).
constexpr int kQ8_0Bytes = 34;   // half d, int8 q[32]
constexpr int kQ4_0Bytes = 18;   // half d, 16 bytes: low nibbles are q[0..15], high q[16..31]
constexpr int kQ4_KBytes = 144;  // half d, half dmin, scales[12], qs[128]
constexpr int kQ6_KBytes = 210;  // ql[128], qh[64], int8 scales[16], half d

}  // namespace oxinfer::blocks
