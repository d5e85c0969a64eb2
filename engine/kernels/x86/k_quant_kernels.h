#pragma once
// The Q4_K and Q6_K row dots and GEMM tiles on 256-bit integer vectors, for two levels:
// AVX2 (kVnni false) and AVX-512 VNNI (kVnni true, where vpdpwssd weights and adds a group's byte
// products in one instruction instead of madd and add). Everything has internal linkage, so each
// including file keeps its own copy in its own instruction set (see matmul_avx512.cpp on shared
// inline functions). Include it after <immintrin.h> (or the tests' AVX-512 emulation header).
//
// They are bound by vector instructions per block (from L2 the AVX2 Q4_K row dot with about 80
// per 144-byte block ran near a core's share of the memory bandwidth, Q6_K below it), so each
// block's scales and factors are unpacked once and broadcast from memory: a broadcast load takes
// no arithmetic port, where a shuffle that broadcasts in a register competes with the products.

#include "kernels/block_layouts.h"
#include "kernels/matmul_table.h"
#include "kernels/x86/vec256.h"
#include "kernels/x86/weight_prefetch.h"

#include <utility>

// Keeps the compiler from assuming it knows what `array` holds after this point, so that its
// elements are loaded from memory (as broadcasts) rather than rebuilt from registers by shuffles.
// GCC and Clang only; elsewhere the compiler's own choice stands.
#if defined(__GNUC__)
#define OXINFER_RELOAD_FROM_MEMORY(array) asm("" : "+m"(array))
#else
#define OXINFER_RELOAD_FROM_MEMORY(array) ((void)0)
#endif

namespace oxinfer::kernels {
namespace {

// The eight 6-bit sub-block scales (bytes 0-7) and mins (bytes 8-15) as blocks::k4_scale_min gives
// them, unpacked from the 12 packed bytes with 32-bit masks in a register: about half the
// instructions of doing it in scalar code. Reads 16 bytes from `packed` (codes follow the scales).
inline __m128i k4_scales_mins(const uint8_t* packed) {
    const __m128i words = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));  // w0, w1, w2 (and codes)
    const __m128i low6 = _mm_set1_epi32(0x3f3f3f3f), low4 = _mm_set1_epi32(0x0f0f0f0f), low2 = _mm_set1_epi32(0x03030303);
    const __m128i first = _mm_and_si128(words, low6);  // scales 0-3, mins 0-3
    const __m128i top = _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(words, 6), low2), 4);
    // w2 & low4 (scales 4-7's low bits) and (w2 >> 4) & low4 (mins 4-7's).
    const __m128i nibbles = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(words, 0xaa), _mm_set_epi32(0, 0, 4, 0)), low4);
    return _mm_unpacklo_epi32(first, _mm_or_si128(nibbles, top));
}

// The mins' term of a block for one token: each sub-block's min times its 32 activations' sum
// (ActBlock256::sums32), summed in pairs into the low four int32 lanes, zeros above.
inline __m128i k4_mins16(__m128i scales_mins) { return _mm_cvtepu8_epi16(_mm_unpackhi_epi64(scales_mins, scales_mins)); }
inline __m256 k4_mins_term(__m128i mins16, const ActBlock256& a) {
    const __m128i sums = _mm_madd_epi16(mins16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.sums32)));
    return _mm256_cvtepi32_ps(_mm256_zextsi128_si256(sums));
}

// Sub-block j's scale in both int16 halves of pairs[j]: madd's second operand, broadcast from
// memory.
inline void k4_store_scale_pairs(__m128i scales_mins, int32_t (&pairs)[8]) {
    const __m128i scales16 = _mm_cvtepu8_epi16(scales_mins);
    _mm_store_si128(reinterpret_cast<__m128i*>(pairs), _mm_unpacklo_epi16(scales16, scales16));
    _mm_store_si128(reinterpret_cast<__m128i*>(pairs + 4), _mm_unpackhi_epi16(scales16, scales16));
    OXINFER_RELOAD_FROM_MEMORY(pairs);
}

// The block's d and dmin (f16) as floats, converted together.
inline __m128 k4_factors(const uint8_t* block) {
    int32_t d_dmin;
    __builtin_memcpy(&d_dmin, block, 4);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(d_dmin));
}
// Those times the activations' d, stored for broadcasts from memory.
inline void k4_store_scaled_factors(__m128 factors, float activation_d, float (&scaled)[2]) {
    _mm_storel_pi(reinterpret_cast<__m64*>(scaled), _mm_mul_ps(factors, _mm_set1_ps(activation_d)));
    OXINFER_RELOAD_FROM_MEMORY(scaled);
}

// acc + the int16 products weighted by the int16 scale, summed in pairs.
template <bool kVnni>
inline __m256i k4_add_scaled(__m256i acc, __m256i products, __m256i scale) {
    if constexpr (kVnni) return _mm256_dpwssd_epi32(acc, products, scale);
    else return _mm256_add_epi32(acc, _mm256_madd_epi16(products, scale));
}

// A compile-time int: a call's number of tokens (1 to kKQuantTileTokens) or a block's part.
template <int N>
struct Constant {
    static constexpr int value = N;
};
template <class Call>
void with_tokens(int valid_tokens, Call&& call) {
    static_assert(kKQuantTileTokens == 4, "one case per token count");
    switch (valid_tokens) {
        case 1: call(Constant<1>{}); break;
        case 2: call(Constant<2>{}); break;
        case 3: call(Constant<3>{}); break;
        default: call(Constant<4>{}); break;
    }
}

// One Q4_K row times T tokens' int8 activations, each block's scales, mins and codes unpacked once.
// Per token: the 32-value sub-blocks' integer sums weighted by their scales, and the mins times the
// activations' 32-value sums, each turned to float once per block into its own accumulator. The
// one-token row dot is T = 1, so several tokens give each token its one-token bits (a verified
// draft's logits are the plain decode's). With vpdpwssd (latency 5) the low and high halves of
// the codes accumulate separately.
// Not inlined: inlined into over_rows' loop it measured slower (GEMV 68-74% of the read rate
// against 86-98%).
template <int T, bool kVnni>
[[gnu::noinline]] void q4_k_row_tokens(int64_t n, const std::byte* w, const void* const* a, float* out) {
    constexpr int kChains = kVnni ? 2 : 1;
    const ActBlock256* act[T];
    for (int t = 0; t < T; ++t) act[t] = static_cast<const ActBlock256*>(a[t]);
    auto* p = reinterpret_cast<const uint8_t*>(w);
    const __m256i low4 = _mm256_set1_epi8(0xF);
    __m256 acc[T], acc_min[T];
    for (int t = 0; t < T; ++t) acc[t] = acc_min[t] = _mm256_setzero_ps();
    alignas(16) int32_t scale_pairs[8];
    alignas(8) float scaled[2];
    for (int64_t b = 0; b < n / 256; ++b, p += blocks::kQ4_KBytes) {
        prefetch_blocks(p);
        prefetch_blocks(p + 64);
        prefetch_blocks_page_ahead(p, blocks::kQ4_KBytes);
        const __m128i scales_mins = k4_scales_mins(p + 4);
        k4_store_scale_pairs(scales_mins, scale_pairs);
        __m256i sumi[T][kChains];
        for (int t = 0; t < T; ++t)
            for (__m256i& v : sumi[t]) v = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
            const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16 + 32 * c));
            const __m256i lo = _mm256_and_si256(bytes, low4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4);
            const __m256i scale_lo = _mm256_set1_epi32(scale_pairs[2 * c]), scale_hi = _mm256_set1_epi32(scale_pairs[2 * c + 1]);
            for (int t = 0; t < T; ++t) {
                const __m256i a_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[t][b].q + 64 * c));
                const __m256i a_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[t][b].q + 64 * c + 32));
                sumi[t][0] = k4_add_scaled<kVnni>(sumi[t][0], _mm256_maddubs_epi16(lo, a_lo), scale_lo);
                sumi[t][kChains - 1] = k4_add_scaled<kVnni>(sumi[t][kChains - 1], _mm256_maddubs_epi16(hi, a_hi), scale_hi);
            }
        }
        const __m128i mins16 = k4_mins16(scales_mins);
        const __m128 factors = k4_factors(p);
        for (int t = 0; t < T; ++t) {
            const __m256i sum = kChains == 1 ? sumi[t][0] : _mm256_add_epi32(sumi[t][0], sumi[t][kChains - 1]);
            k4_store_scaled_factors(factors, act[t][b].d, scaled);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(scaled[0]), _mm256_cvtepi32_ps(sum), acc[t]);
            acc_min[t] = _mm256_fmadd_ps(_mm256_set1_ps(scaled[1]), k4_mins_term(mins16, act[t][b]), acc_min[t]);
        }
    }
    for (int t = 0; t < T; ++t) out[t] = hsum(_mm256_sub_ps(acc[t], acc_min[t]));
}

template <bool kVnni>
float dot_q4_k(int64_t n, const std::byte* w, const void* a) {
    float out;
    q4_k_row_tokens<1, kVnni>(n, w, &a, &out);
    return out;
}

template <bool kVnni>
void dot_q4_k_tokens(int64_t n, const std::byte* w, const void* const* a, int tokens, float* out) {
    with_tokens(tokens, [&](auto count) { q4_k_row_tokens<decltype(count)::value, kVnni>(n, w, a, out); });
}

// A tile row's result: the horizontal sums of the four token accumulators at once, the first T
// stored T rows of y apart (ldy).
template <int T>
inline void k_tile_store_sums(const __m256 (&facc)[kKQuantTileTokens], float* y, int64_t ldy) {
    const __m256 pairs = _mm256_hadd_ps(_mm256_hadd_ps(facc[0], facc[1]), _mm256_hadd_ps(facc[2], facc[3]));
    alignas(16) float sums[4];
    _mm_store_ps(sums, _mm_add_ps(_mm256_castps256_ps128(pairs), _mm256_extractf128_ps(pairs, 1)));
    for (int t = 0; t < T; ++t) y[t * ldy] = sums[t];
}

// Q4_K rows times T (1 to 4) tokens' int8 activations: a prefill's last group pays only for the
// tokens it has. Per 32-value sub-block the codes (0..15, the unsigned operand maddubs wants)
// meet each token's activations, weighted by the sub-block's scale; the integer sums of a (row,
// token) pair go to float once per super-block, with the mins' term (min x the activations'
// 32-value sums) taken off there. One row at a time keeps the token accumulators and the row's
// operands in registers; the activations are read from L1 by each row.
template <int T, bool kVnni>
void q4_k_tile(int64_t blocks, const std::byte* w, int64_t row_bytes, int64_t rows, const ActBlock256* const* acts, float* y,
               int64_t ldy) {
    static_assert(kKQuantTileTokens == 4 && T >= 1 && T <= 4, "up to four token accumulators");
    const __m256i low4 = _mm256_set1_epi8(0xF);
    alignas(16) int32_t scale_pairs[8];
    alignas(8) float scaled[2];
    for (int64_t r = 0; r < rows; ++r) {
        auto* p = reinterpret_cast<const uint8_t*>(w) + r * row_bytes;
        __m256 facc[kKQuantTileTokens];
        for (__m256& v : facc) v = _mm256_setzero_ps();
        for (int64_t b = 0; b < blocks; ++b, p += blocks::kQ4_KBytes) {
            prefetch_weights(p);  // streamed from memory when decoding
            prefetch_weights(p + 64);
            const __m128i scales_mins = k4_scales_mins(p + 4);
            k4_store_scale_pairs(scales_mins, scale_pairs);
            // One accumulator per token: the tokens' independent chains cover vpdpwssd's latency.
            __m256i acc[T];
            for (__m256i& v : acc) v = _mm256_setzero_si256();
            const auto sub_block_pair = [&](int c) {
                const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16 + 32 * c));
                const __m256i lo = _mm256_and_si256(bytes, low4);
                const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4);
                const __m256i scale_lo = _mm256_set1_epi32(scale_pairs[2 * c]), scale_hi = _mm256_set1_epi32(scale_pairs[2 * c + 1]);
                for (int t = 0; t < T; ++t) {
                    const int8_t* q = acts[t][b].q + 64 * c;
                    const __m256i a_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
                    const __m256i a_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32));
                    acc[t] = k4_add_scaled<kVnni>(acc[t], _mm256_maddubs_epi16(lo, a_lo), scale_lo);
                    acc[t] = k4_add_scaled<kVnni>(acc[t], _mm256_maddubs_epi16(hi, a_hi), scale_hi);
                }
            };
            if constexpr (kVnni) {
                // Unrolled, with 32 vector registers: 31-35% faster than the loop below (which
                // kept moving its accumulators between registers and the stack), medians of 9
                // alternating 512-token GEMMs.
                sub_block_pair(0), sub_block_pair(1), sub_block_pair(2), sub_block_pair(3);
            } else {
                // Not unrolled: with 16 registers GCC would schedule all the products first and spill them.
#pragma GCC unroll 1
                for (int c = 0; c < 4; ++c) sub_block_pair(c);
            }
            const __m128i mins16 = k4_mins16(scales_mins);
            const __m128 factors = k4_factors(p);
            for (int t = 0; t < T; ++t) {
                const ActBlock256& a = acts[t][b];
                const __m256 mins = k4_mins_term(mins16, a);
                k4_store_scaled_factors(factors, a.d, scaled);
                facc[t] = _mm256_fmadd_ps(_mm256_set1_ps(scaled[0]), _mm256_cvtepi32_ps(acc[t]), facc[t]);
                facc[t] = _mm256_fnmadd_ps(_mm256_set1_ps(scaled[1]), mins, facc[t]);
            }
        }
        k_tile_store_sums<T>(facc, y + r, ldy);
    }
}

template <bool kVnni>
void gemm_q4_k_tile(int64_t blocks, const std::byte* w, int64_t row_bytes, int64_t rows, const ActBlock256* const* acts,
                    int valid_tokens, float* y, int64_t ldy) {
    with_tokens(valid_tokens, [&](auto tokens) { q4_k_tile<decltype(tokens)::value, kVnni>(blocks, w, row_bytes, rows, acts, y, ldy); });
}

// Where unpacking the 16 scales (int16, 0-7 in the low 128-bit lane, 8-15 in the high one) with
// themselves puts group i's pair: the low unpack takes words 0-3 of each lane, the high one 4-7.
constexpr int k6_pair_slot(int group) { return (group % 8 < 4 ? 0 : 8) + 4 * (group / 8) + group % 4; }

// A Q6_K block's 16 scales (int8 at byte 192) as int16, and each one paired with itself in a
// 32-bit word for broadcasts from memory (k6_scale). Words 0-3 and 8-11 of the scales pair up in
// the low store, 4-7 and 12-15 in the high one.
inline __m256i k6_scales16(const uint8_t* block) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192)));
}
inline void k6_store_scale_pairs(__m256i scales16, int32_t (&pairs)[16]) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(pairs), _mm256_unpacklo_epi16(scales16, scales16));
    _mm256_store_si256(reinterpret_cast<__m256i*>(pairs + 8), _mm256_unpackhi_epi16(scales16, scales16));
    OXINFER_RELOAD_FROM_MEMORY(pairs);
}

// The 32 codes (0..63) of part `part` (values 32 * part ..): low 4 bits from ql, bits 4 and 5 from
// qh (bits 2g, 2g+1 of its bytes for g = part % 4).
inline __m256i k6_codes(const uint8_t* block, int part) {
    const int half_index = part / 4, g = part % 4;
    const __m256i lbytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 64 * half_index + 32 * (g % 2)));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 128 + 32 * half_index));
    const __m256i low = _mm256_and_si256(g < 2 ? lbytes : _mm256_srli_epi16(lbytes, 4), _mm256_set1_epi8(0xF));
    const __m256i shifted = g < 2 ? _mm256_slli_epi16(qh, 4 - 2 * g) : g == 2 ? qh : _mm256_srli_epi16(qh, 2);
    return _mm256_or_si256(low, _mm256_and_si256(shifted, _mm256_set1_epi8(0x30)));
}

// madd's scale operand for part `part`: words 0..7 of its products hold values of 16-value group
// 2 * part, words 8..15 of the next.
inline __m256i k6_scale(const int32_t (&pairs)[16], int part) {
    return _mm256_blend_epi32(_mm256_set1_epi32(pairs[k6_pair_slot(2 * part)]), _mm256_set1_epi32(pairs[k6_pair_slot(2 * part + 1)]), 0xF0);
}

// call(Constant<part>{}) for the eight 32-value parts of a block, unrolled.
template <class Call>
inline void for_parts(Call&& call) {
    [&]<int... kParts>(std::integer_sequence<int, kParts...>) { (call(Constant<kParts>{}), ...); }(std::make_integer_sequence<int, 8>{});
}

// Minus 32 x each scale times its 16 activations' sum, per int32 lane: the codes are stored +32.
inline __m256i k6_offset_term(__m256i scales16, const ActBlock256& a) {
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums));
    return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(scales16, bsums), 5));
}

// One Q6_K row times int8 activations (ActBlock256): the products of the unsigned codes, with the
// offset's term folded into the integer sum. Exact integers and the scalar kernel's float
// operations per block (which the compiler may fuse into a multiply-add here): within a rounding
// per block of the scalar kernel.
template <bool kVnni>
float dot_q6_k(int64_t n, const std::byte* w, const void* a) {
    const auto* act = static_cast<const ActBlock256*>(a);
    auto* p = reinterpret_cast<const uint8_t*>(w);
    alignas(32) int32_t scale_pairs[16];
    float sum = 0;
    for (int64_t b = 0; b < n / 256; ++b, p += blocks::kQ6_KBytes) {
        prefetch_blocks(p);
        prefetch_blocks(p + 64);
        prefetch_blocks(p + 128);
        prefetch_blocks_page_ahead(p, blocks::kQ6_KBytes);
        const __m256i scales16 = k6_scales16(p);
        k6_store_scale_pairs(scales16, scale_pairs);
        __m256i sumi[2] = {k6_offset_term(scales16, act[b]), _mm256_setzero_si256()};
        for_parts([&](auto part) {
            constexpr int kPart = decltype(part)::value;
            const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[b].q + 32 * kPart));
            sumi[kPart % 2] = k4_add_scaled<kVnni>(sumi[kPart % 2], _mm256_maddubs_epi16(k6_codes(p, kPart), aq), k6_scale(scale_pairs, kPart));
        });
        const int total = hsum_i32(_mm256_add_epi32(sumi[0], sumi[1]));
        sum += half(p + 208) * act[b].d * static_cast<float>(total);
    }
    return sum;
}

// Q6_K rows times T (1 to 4) tokens' int8 activations, as q4_k_tile: each part's codes and scales
// unpacked once per row and block for all tokens; a (row, token) pair's integer sum goes to
// float once per block.
template <int T, bool kVnni>
void q6_k_tile(int64_t blocks, const std::byte* w, int64_t row_bytes, int64_t rows, const ActBlock256* const* acts, float* y,
               int64_t ldy) {
    static_assert(kKQuantTileTokens == 4 && T >= 1 && T <= 4, "up to four token accumulators");
    alignas(32) int32_t scale_pairs[16];
    for (int64_t r = 0; r < rows; ++r) {
        auto* p = reinterpret_cast<const uint8_t*>(w) + r * row_bytes;
        __m256 facc[kKQuantTileTokens];
        for (__m256& v : facc) v = _mm256_setzero_ps();
        for (int64_t b = 0; b < blocks; ++b, p += blocks::kQ6_KBytes) {
            const __m256i scales16 = k6_scales16(p);
            k6_store_scale_pairs(scales16, scale_pairs);
            __m256i acc[T];
            for (int t = 0; t < T; ++t) acc[t] = k6_offset_term(scales16, acts[t][b]);
            // Each part's shifts and scale slots are constants: the parts are unrolled.
            for_parts([&](auto part) {
                const __m256i q = k6_codes(p, part.value), scale = k6_scale(scale_pairs, part.value);
                for (int t = 0; t < T; ++t) {
                    const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acts[t][b].q + 32 * part.value));
                    acc[t] = k4_add_scaled<kVnni>(acc[t], _mm256_maddubs_epi16(q, aq), scale);
                }
            });
            const float d = half(p + 208);
            for (int t = 0; t < T; ++t) facc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * acts[t][b].d), _mm256_cvtepi32_ps(acc[t]), facc[t]);
        }
        k_tile_store_sums<T>(facc, y + r, ldy);
    }
}

template <bool kVnni>
void gemm_q6_k_tile(int64_t blocks, const std::byte* w, int64_t row_bytes, int64_t rows, const ActBlock256* const* acts,
                    int valid_tokens, float* y, int64_t ldy) {
    with_tokens(valid_tokens, [&](auto tokens) { q6_k_tile<decltype(tokens)::value, kVnni>(blocks, w, row_bytes, rows, acts, y, ldy); });
}

}  // namespace
}  // namespace oxinfer::kernels
