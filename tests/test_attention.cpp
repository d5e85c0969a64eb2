// Attention over a KV cache (kernels::attention, kernels/attention.cpp) at every ISA level
// (helpers/kernel_levels.h: this CPU's, and AVX-512 emulated where it lacks them), against a naive double-precision reference written here: the full score matrix,
// the mask, softmax and the weighted sum, reading the very values the cache holds (f16/bf16
// caches are rounded once when written, and the reference reads those rounded values). Covers
// causal prefill, decoding, grouped-query heads, odd head sizes, sliding windows over linear and
// ring caches, softcapping, both scales, non-causal attention, and thread-count independence;
// calls of 32 tokens and more take the prefill tiles (kv_dot_rows / kv_axpy_rows), shorter ones
// the group kernels (kv_dot_group / kv_axpy_group) where a level has them (the scalar level has
// not: it runs kv_dot and kv_axpy query by query).

#include "kernel_levels.h"
#include "kernels/isa.h"
#include "kernels/ops.h"
#include "kernels/ops_table.h"
#include "kernels/thread_pool.h"

#include <oxinfer/dtype.h>
#include <oxinfer/error.h>

#include "test_support.h"

#include <QObject>
#include <QTest>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace oxinfer;
using namespace oxinfer::kernels;
using oxinfer::test::KernelLevel;
using oxinfer::test::kernel_levels;

namespace {

// Tolerance on each output value (|v| <= 1), per query head. Float errors enter mostly through
// the scores. With S = max over visible keys of scale·Σ|q_i k_i|, a float dot product of d terms
// is within d·2^-24·S of the exact one in the worst case and, its roundings being random, within
// about √d·2^-24·S in practice, which is what we allow: δ = √d·2^-24·S. A score error δ moves a
// softmax-weighted mean by at most 2δ·max|v|. exp (1.4 ulp), the float running sums over <= 1500
// keys and the final division add a few 1e-7: 2e-6 covers them. For q and k of unit size and
// scale 1/√d this comes to ~1e-5; the softcap case (|scores| ~ 50, S ~ 130) gets ~2.5e-4. The same
// bound holds for f16 and bf16 caches, since the reference reads the values the cache stores. Any
// indexing, masking or merging mistake shows up as errors of 1e-2 to 1.
double tolerance(int64_t head_dim, double max_magnitude) {
    return 2e-6 + 2 * std::sqrt(double(head_dim)) * 0x1p-24 * max_magnitude;
}

// The worst error per test function (absolute, and as a fraction of its tolerance).
struct Worst {
    double error = 0, of_tolerance = 0;
};
std::map<std::string, Worst>& worst_errors() {
    static std::map<std::string, Worst> worst;
    return worst;
}

// A KV cache of positions [begin, end) for kv_heads heads, stored as `dtype`, either
// position-major ([slot][head][dim]) or head-major ([head][slot][dim]), linear or ring.
struct Cache {
    DType dtype = DType::F32;
    int64_t kv_heads = 0, head_dim = 0, slot_count = 0, ring = 0;
    bool head_major = false;
    std::vector<std::byte> k_bytes, v_bytes;

    int64_t element() const { return dtype == DType::F32 ? 4 : 2; }
    int64_t position_stride() const { return (head_major ? head_dim : kv_heads * head_dim) * element(); }
    int64_t head_stride() const { return (head_major ? slot_count * head_dim : head_dim) * element(); }
    int64_t offset(int64_t position, int64_t head) const {
        const int64_t slot = ring ? position % ring : position;
        return slot * position_stride() + head * head_stride();
    }
    KvCacheView view(const std::vector<std::byte>& bytes) const {
        return {dtype, bytes.data(), position_stride(), head_stride(), ring};
    }
};

// Deterministic K and V values for every absolute position (before rounding to the cache type).
struct Sequence {
    int64_t kv_heads, head_dim;
    std::vector<float> k, v;  // [position][head][dim]
    Sequence(int64_t positions, int64_t kv_heads_, int64_t head_dim_, uint32_t seed, float k_scale = 1.0f)
        : kv_heads(kv_heads_), head_dim(head_dim_) {
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        k.resize(static_cast<size_t>(positions * kv_heads * head_dim));
        v.resize(k.size());
        for (float& x : k) x = dist(rng) * k_scale;
        for (float& x : v) x = dist(rng);
    }
};

float round_to(DType dtype, float value) {
    if (dtype == DType::F16) return f16_to_f32(f32_to_f16(value));
    if (dtype == DType::BF16) return bf16_to_f32(f32_to_bf16(value));
    return value;
}

void store(DType dtype, std::byte* at, float value) {
    if (dtype == DType::F32) {
        std::memcpy(at, &value, 4);
    } else {
        const uint16_t bits = dtype == DType::F16 ? f32_to_f16(value) : f32_to_bf16(value);
        std::memcpy(at, &bits, 2);
    }
}

// Writes positions [begin, end) of `seq` into a cache (slots = end for a linear cache). The
// bytes of other slots stay garbage (NaN patterns), so reading one shows up.
Cache make_cache(const Sequence& seq, DType dtype, int64_t begin, int64_t end, int64_t ring, bool head_major) {
    Cache cache;
    cache.dtype = dtype;
    cache.kv_heads = seq.kv_heads;
    cache.head_dim = seq.head_dim;
    cache.ring = ring;
    cache.slot_count = ring ? ring : end;
    cache.head_major = head_major;
    const size_t bytes = static_cast<size_t>(cache.slot_count * seq.kv_heads * seq.head_dim * cache.element());
    cache.k_bytes.assign(bytes, std::byte{0xff});
    cache.v_bytes.assign(bytes, std::byte{0xff});
    for (int64_t p = begin; p < end; ++p)
        for (int64_t h = 0; h < seq.kv_heads; ++h)
            for (int64_t d = 0; d < seq.head_dim; ++d) {
                const size_t index = static_cast<size_t>((p * seq.kv_heads + h) * seq.head_dim + d);
                const int64_t at = cache.offset(p, h) + d * cache.element();
                store(dtype, cache.k_bytes.data() + at, seq.k[index]);
                store(dtype, cache.v_bytes.data() + at, seq.v[index]);
            }
    return cache;
}

// The naive reference: out[t][h] in double, and the tolerance of each value.
struct Reference {
    std::vector<double> out, tolerance;
};
Reference reference(const AttentionParams& p, const std::vector<float>& q, const std::vector<int64_t>& positions,
                    const Sequence& seq, DType dtype, int64_t begin, int64_t end) {
    const int64_t tokens = static_cast<int64_t>(positions.size());
    Reference ref;
    ref.out.assign(static_cast<size_t>(tokens * p.heads * p.head_dim), 0.0);
    ref.tolerance.assign(ref.out.size(), tolerance(p.head_dim, 0));
    std::vector<float> keys_rounded(seq.k.size()), values_rounded(seq.v.size());  // what the cache holds
    for (size_t i = 0; i < seq.k.size(); ++i) {
        keys_rounded[i] = round_to(dtype, seq.k[i]);
        values_rounded[i] = round_to(dtype, seq.v[i]);
    }
    for (int64_t t = 0; t < tokens; ++t)
        for (int64_t h = 0; h < p.heads; ++h) {
            const int64_t kvh = h / (p.heads / p.kv_heads);
            std::vector<double> scores;
            std::vector<int64_t> keys;
            double max_magnitude = 0;
            for (int64_t k = begin; k < end; ++k) {
                const int64_t qpos = positions[static_cast<size_t>(t)];
                const bool visible = !p.causal || (k <= qpos && (p.window == 0 || k > qpos - p.window));
                if (!visible) continue;
                double s = 0, magnitude = 0;
                for (int64_t d = 0; d < p.head_dim; ++d) {
                    const double product = double(q[static_cast<size_t>((t * p.heads + h) * p.head_dim + d)]) *
                                           keys_rounded[static_cast<size_t>((k * p.kv_heads + kvh) * p.head_dim + d)];
                    s += product;
                    magnitude += std::abs(product);
                }
                s *= p.scale;
                max_magnitude = std::max(max_magnitude, magnitude * p.scale);
                if (p.softcap > 0) s = std::tanh(s / p.softcap) * p.softcap;
                scores.push_back(s);
                keys.push_back(k);
            }
            if (scores.empty()) continue;  // nothing visible: zeros
            const double max = *std::max_element(scores.begin(), scores.end());
            double sum = 0;
            for (double& s : scores) sum += (s = std::exp(s - max));
            double* o = ref.out.data() + (t * p.heads + h) * p.head_dim;
            for (size_t j = 0; j < keys.size(); ++j)
                for (int64_t d = 0; d < p.head_dim; ++d)
                    o[d] += scores[j] / sum * values_rounded[static_cast<size_t>((keys[j] * p.kv_heads + kvh) * p.head_dim + d)];
            std::fill_n(ref.tolerance.begin() + (t * p.heads + h) * p.head_dim, p.head_dim, tolerance(p.head_dim, max_magnitude));
        }
    return ref;
}

std::vector<float> random_q(int64_t tokens, const AttentionParams& p, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> q(static_cast<size_t>(tokens * p.heads * p.head_dim));
    for (float& x : q) x = dist(rng) * scale;
    return q;
}

// Empty when every output is within its tolerance of the reference.
QString compare(const std::vector<float>& got, const Reference& want) {
    for (size_t i = 0; i < got.size(); ++i) {
        const double error = std::abs(got[i] - want.out[i]);
        if (!(error <= want.tolerance[i]))
            return QStringLiteral("value %1: got %2, expected %3 (allowed error %4)")
                .arg(i)
                .arg(got[i], 0, 'g', 9)
                .arg(want.out[i], 0, 'g', 9)
                .arg(want.tolerance[i], 0, 'g', 3);
        Worst& worst = worst_errors()[QTest::currentTestFunction()];
        worst.error = std::max(worst.error, error);
        worst.of_tolerance = std::max(worst.of_tolerance, error / want.tolerance[i]);
    }
    return {};
}

// Runs attention at every supported level and checks each against the reference.
QString check_levels(const Reference& want, const AttentionParams& p, const std::vector<float>& q,
                     const std::vector<int64_t>& positions, const Cache& cache, int64_t begin, int64_t end, ThreadPool& pool) {
    for (const KernelLevel& level : kernel_levels()) {
        std::vector<float> got(q.size(), NAN);
        attention_with(*level.ops, p, q.data(), static_cast<int64_t>(positions.size()), positions.data(),
                       cache.view(cache.k_bytes), cache.view(cache.v_bytes), begin, end, got.data(), pool);
        const QString failure = compare(got, want);
        if (!failure.isEmpty()) return QString::fromStdString(level.name) + ": " + failure;
    }
    return {};
}
QString check_all_levels(const AttentionParams& p, const std::vector<float>& q, const std::vector<int64_t>& positions,
                         const Sequence& seq, const Cache& cache, int64_t begin, int64_t end, ThreadPool& pool) {
    return check_levels(reference(p, q, positions, seq, cache.dtype, begin, end), p, q, positions, cache, begin, end, pool);
}

#define EXPECT_OK(call, context)                                                        \
    do {                                                                                \
        const QString failure_ = (call);                                                \
        if (!failure_.isEmpty()) QFAIL(qPrintable(QString(context) + ": " + failure_)); \
    } while (false)

const char* type_name(DType t) { return t == DType::F32 ? "f32" : t == DType::F16 ? "f16" : "bf16"; }

std::vector<int64_t> range(int64_t begin, int64_t end) {
    std::vector<int64_t> out;
    for (int64_t p = begin; p < end; ++p) out.push_back(p);
    return out;
}

}  // namespace

class AttentionTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        qInfo("instruction-set levels covered: %s", oxinfer::test::kernel_level_names().c_str());
    }
    void cleanupTestCase() {
        for (const auto& [name, worst] : worst_errors())
            qInfo("worst error against the double reference in %-30s %.2g (%.0f%% of its tolerance)", name.c_str(), worst.error,
                  100 * worst.of_tolerance);
    }

    void causal_prefill_data() {
        QTest::addColumn<int>("tokens");
        QTest::addColumn<int>("head_dim");
        QTest::addColumn<int>("dtype");
        QTest::addColumn<bool>("unit_scale");
        for (int tokens : {1, 5, 64, 130})
            for (int head_dim : {64, 128, 80})
                for (DType dtype : {DType::F32, DType::F16, DType::BF16})
                    for (bool unit_scale : {false, true})
                        QTest::addRow("t%d_d%d_%s_%s", tokens, head_dim, type_name(dtype), unit_scale ? "scale1" : "rsqrt")
                            << tokens << head_dim << int(dtype) << unit_scale;
    }
    void causal_prefill() {
        // A prompt of `tokens` tokens from position 0, GQA 8 query heads over 2 kv heads.
        QFETCH(int, tokens);
        QFETCH(int, head_dim);
        QFETCH(int, dtype);
        QFETCH(bool, unit_scale);
        AttentionParams p;
        p.heads = 8;
        p.kv_heads = 2;
        p.head_dim = head_dim;
        p.scale = unit_scale ? 1.0f : 1.0f / std::sqrt(float(head_dim));
        const Sequence seq(tokens, p.kv_heads, head_dim, 1);
        const Cache cache = make_cache(seq, DType(dtype), 0, tokens, 0, tokens % 2 == 1);
        // With scale 1 the scores of random unit vectors reach ~±10; keep q smaller there so the
        // softmax is not a one-hot (which would test little).
        const auto q = random_q(tokens, p, 2, unit_scale ? 0.3f : 1.0f);
        ThreadPool pool(2);
        EXPECT_OK(check_all_levels(p, q, range(0, tokens), seq, cache, 0, tokens, pool), "prefill");
    }

    void decode_data() {
        QTest::addColumn<int>("position");
        QTest::addColumn<int>("dtype");
        for (int position : {0, 1, 100, 511, 512, 700, 1500})
            for (DType dtype : {DType::F32, DType::F16, DType::BF16})
                QTest::addRow("p%d_%s", position, type_name(dtype)) << position << int(dtype);
    }
    void decode() {
        // One new token at `position` with position + 1 keys cached (its own included); 512 and
        // more keys cross the partition size, so several partitions are merged.
        QFETCH(int, position);
        QFETCH(int, dtype);
        AttentionParams p;
        p.heads = 8;
        p.kv_heads = 2;
        p.head_dim = 128;
        p.scale = 1.0f / std::sqrt(128.0f);
        const Sequence seq(position + 1, p.kv_heads, p.head_dim, 3);
        const Cache cache = make_cache(seq, DType(dtype), 0, position + 1, 0, false);
        const auto q = random_q(1, p, 4);
        const std::vector<int64_t> positions = {position};
        const Reference want = reference(p, q, positions, seq, DType(dtype), 0, position + 1);
        for (int threads : {1, 2, 3}) {  // 1 thread: partitions in turn; 2 and 3: 2 items < 2·threads, in parallel
            ThreadPool pool(threads);
            EXPECT_OK(check_levels(want, p, q, positions, cache, 0, position + 1, pool),
                      QStringLiteral("decode with %1 threads").arg(threads));
        }
    }

    void head_layouts() {
        // Multi-head (kv = heads), multi-query (one kv head), odd head sizes, a continuation chunk
        // (queries at 100..104 over cache [0, 105)), an odd number of kv heads (decoding takes
        // them two side by side, and one alone) over two partitions of keys. The cases of 32 tokens and more take the
        // prefill tiles: rows (tokens x group) that are not a multiple of the kernels' 4, odd key
        // counts, head sizes that are not a multiple of 8 or 16.
        struct Case {
            int heads, kv_heads, head_dim, first, tokens;
        };
        for (const Case& c : {Case{4, 4, 64, 0, 9}, Case{6, 1, 80, 0, 7}, Case{8, 2, 72, 100, 5}, Case{2, 2, 17, 0, 3}, Case{3, 1, 1, 0, 4},
                              Case{3, 1, 72, 0, 37}, Case{6, 1, 80, 0, 33}, Case{2, 2, 17, 0, 35}, Case{4, 4, 64, 100, 34}, Case{2, 1, 36, 7, 50},
                              Case{2, 2, 64, 0, 33}, Case{3, 1, 64, 0, 37}, Case{6, 3, 64, 600, 3}}) {
            AttentionParams p;
            p.heads = c.heads;
            p.kv_heads = c.kv_heads;
            p.head_dim = c.head_dim;
            p.scale = 1.0f / std::sqrt(float(c.head_dim));
            const int64_t end = c.first + c.tokens;
            const Sequence seq(end, p.kv_heads, p.head_dim, 5);
            for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
                const Cache cache = make_cache(seq, dtype, 0, end, 0, true);
                const auto q = random_q(c.tokens, p, 6);
                ThreadPool pool(2);
                EXPECT_OK(check_all_levels(p, q, range(c.first, end), seq, cache, 0, end, pool),
                          QStringLiteral("heads %1/%2 dim %3 %4").arg(c.heads).arg(c.kv_heads).arg(c.head_dim).arg(type_name(dtype)));
            }
        }
    }

    void sliding_window_linear() {
        // Window W: query q sees keys q-W < k <= q. A 40-token prompt, then a cache that starts
        // later (positions [10, 50)) with queries at 45..49.
        for (int window : {4, 16})
            for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
                AttentionParams p;
                p.heads = 8;
                p.kv_heads = 2;
                p.head_dim = 64;
                p.scale = 0.125f;
                p.window = window;
                const Sequence seq(50, p.kv_heads, p.head_dim, 7);
                ThreadPool pool(2);
                const Cache full = make_cache(seq, dtype, 0, 40, 0, false);
                EXPECT_OK(check_all_levels(p, random_q(40, p, 8), range(0, 40), seq, full, 0, 40, pool),
                          QStringLiteral("window %1 prefill %2").arg(window).arg(type_name(dtype)));
                const Cache later = make_cache(seq, dtype, 10, 50, 0, false);
                EXPECT_OK(check_all_levels(p, random_q(5, p, 9), range(45, 50), seq, later, 10, 50, pool),
                          QStringLiteral("window %1 late cache %2").arg(window).arg(type_name(dtype)));
            }
    }

    void sliding_window_ring() {
        // Ring caches: position p lives in slot p % ring. Decoding one token at a time through 3
        // turns of a ring of exactly W slots, and 4-token chunks with a ring of W + 3 slots (the
        // first query of a chunk still needs W - 1 keys before it).
        for (int window : {4, 16})
            for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
                AttentionParams p;
                p.heads = 4;
                p.kv_heads = 2;
                p.head_dim = 64;
                p.scale = 0.125f;
                p.window = window;
                const int64_t length = 3 * window + 5;
                const Sequence seq(length, p.kv_heads, p.head_dim, 10);
                ThreadPool pool(2);
                for (int64_t pos = 0; pos < length; ++pos) {
                    const int64_t begin = std::max<int64_t>(0, pos - window + 1);
                    const Cache ring = make_cache(seq, dtype, begin, pos + 1, window, pos % 2 == 0);
                    EXPECT_OK(check_all_levels(p, random_q(1, p, 11 + uint32_t(pos)), {pos}, seq, ring, begin, pos + 1, pool),
                              QStringLiteral("ring W=%1 %2 at %3").arg(window).arg(type_name(dtype)).arg(pos));
                }
                const int64_t chunk = 4, ring_slots = window + chunk - 1;
                for (int64_t first = 0; first + chunk <= length; first += chunk) {
                    const int64_t end = first + chunk, begin = std::max<int64_t>(0, end - ring_slots);
                    const Cache ring = make_cache(seq, dtype, begin, end, ring_slots, false);
                    EXPECT_OK(check_all_levels(p, random_q(chunk, p, 100 + uint32_t(first)), range(first, end), seq, ring, begin, end, pool),
                              QStringLiteral("ring chunk W=%1 %2 at %3").arg(window).arg(type_name(dtype)).arg(first));
                }
                // Prompt chunks of 40 tokens (the prefill tiles), the ring wrapping inside them.
                const int64_t long_chunk = 40, long_slots = window + long_chunk - 1;
                const Sequence long_seq(3 * long_chunk, p.kv_heads, p.head_dim, 12);
                for (int64_t first = 0; first < 3 * long_chunk; first += long_chunk) {
                    const int64_t end = first + long_chunk, begin = std::max<int64_t>(0, end - long_slots);
                    const Cache ring = make_cache(long_seq, dtype, begin, end, long_slots, first == long_chunk);
                    EXPECT_OK(check_all_levels(p, random_q(long_chunk, p, 200 + uint32_t(first)), range(first, end), long_seq, ring, begin, end, pool),
                              QStringLiteral("ring prompt chunk W=%1 %2 at %3").arg(window).arg(type_name(dtype)).arg(first));
                }
            }
    }

    void softcap_and_scale() {
        // Gemma 2 style: scores·scale, then 50·tanh(s/50); large q so capping really bites.
        for (DType dtype : {DType::F32, DType::F16, DType::BF16})
            for (float scale : {1.0f, 0.0625f}) {
                AttentionParams p;
                p.heads = 8;
                p.kv_heads = 4;
                p.head_dim = 256;
                p.scale = scale;
                p.softcap = 50.0f;
                const Sequence seq(33, p.kv_heads, p.head_dim, 12, 2.0f);
                const Cache cache = make_cache(seq, dtype, 0, 33, 0, false);
                ThreadPool pool(2);
                EXPECT_OK(check_all_levels(p, random_q(33, p, 13, scale == 1.0f ? 1.0f : 8.0f), range(0, 33), seq, cache, 0, 33, pool),
                          QStringLiteral("softcap %1 scale %2").arg(type_name(dtype)).arg(scale));
            }
    }

    void nothing_visible_and_non_causal() {
        AttentionParams p;
        p.heads = 2;
        p.kv_heads = 1;
        p.head_dim = 16;
        p.scale = 0.25f;
        const Sequence seq(9, p.kv_heads, p.head_dim, 14);
        const Cache cache = make_cache(seq, DType::F32, 0, 5, 0, false);
        ThreadPool pool(2);
        // window 4 at position 10 over cache [0, 5): no key is visible, the output is zeros.
        p.window = 4;
        for (const KernelLevel& level : kernel_levels()) {
            std::vector<float> out(32, NAN);
            const int64_t position = 10;
            attention_with(*level.ops, p, random_q(1, p, 15).data(), 1, &position, cache.view(cache.k_bytes),
                           cache.view(cache.v_bytes), 0, 5, out.data(), pool);
            QVERIFY(std::all_of(out.begin(), out.end(), [](float x) { return x == 0.0f; }));
        }
        // Encoder attention: every cached key is visible, whatever the query's position.
        p.window = 0;
        p.causal = false;
        const Cache all = make_cache(seq, DType::BF16, 0, 9, 0, true);
        EXPECT_OK(check_all_levels(p, random_q(7, p, 16), {0, 3, 1, 8, 2, 2, 5}, seq, all, 0, 9, pool), "non-causal");

        // The same through the prompt tiles (40 queries): non-causal at scattered positions, and
        // causal with a window where the first 13 queries see nothing of the cache [20, 40).
        const Sequence long_seq(40, p.kv_heads, p.head_dim, 19);
        const Cache long_all = make_cache(long_seq, DType::F16, 0, 40, 0, false);
        std::vector<int64_t> scattered;
        for (int64_t i = 0; i < 40; ++i) scattered.push_back((i * 17) % 40);
        EXPECT_OK(check_all_levels(p, random_q(40, p, 20), scattered, long_seq, long_all, 0, 40, pool), "non-causal tiles");
        p.causal = true;
        p.window = 8;
        const Cache late = make_cache(long_seq, DType::F32, 20, 40, 0, false);
        EXPECT_OK(check_all_levels(p, random_q(40, p, 21), range(0, 40), long_seq, late, 20, 40, pool), "nothing visible in tiles");
    }

    void thread_count_does_not_change_bits() {
        // Below 32 tokens, each (token, kv head) item merges its partitions in turn when there are
        // at least two items per thread, else the partitions run in parallel; from 32 tokens the
        // tiles shrink until every thread has about four (40 tokens over one kv head: tiles of 8,
        // 4 and 2 tokens for 1, 2 and 3 threads; with a window, each tile starts at another key).
        // All must give the same bits, so 1, 2 and 3 threads (which pick differently in these
        // cases) must agree at every level.
        struct Case {
            int tokens, first, heads, kv_heads, window = 0;
        };
        for (const Case& c : {Case{1, 1300, 2, 1}, Case{2, 1100, 2, 2}, Case{70, 0, 4, 2}, Case{3, 600, 8, 1}, Case{40, 500, 2, 1},
                              Case{40, 500, 2, 1, 45}, Case{1, 700, 16, 8}, Case{3, 600, 6, 3}}) {
            AttentionParams p;
            p.heads = c.heads;
            p.kv_heads = c.kv_heads;
            p.head_dim = 64;
            p.scale = 0.125f;
            p.window = c.window;
            const int64_t end = c.first + c.tokens;
            const Sequence seq(end, p.kv_heads, p.head_dim, 17);
            const Cache cache = make_cache(seq, DType::F16, 0, end, 0, false);
            const auto q = random_q(c.tokens, p, 18);
            const auto positions = range(c.first, end);
            for (const KernelLevel& level : kernel_levels()) {
                std::vector<std::vector<float>> outputs;
                for (int threads : {1, 2, 3}) {
                    ThreadPool pool(threads);
                    std::vector<float> out(q.size());
                    attention_with(*level.ops, p, q.data(), c.tokens, positions.data(), cache.view(cache.k_bytes),
                                   cache.view(cache.v_bytes), 0, end, out.data(), pool);
                    outputs.push_back(out);
                }
                for (size_t i = 1; i < outputs.size(); ++i)
                    QVERIFY2(std::memcmp(outputs[0].data(), outputs[i].data(), outputs[0].size() * 4) == 0,
                             qPrintable(QStringLiteral("%1: %2 tokens from %3, %4 threads differ from 1")
                                            .arg(QString::fromStdString(level.name)).arg(c.tokens).arg(c.first).arg(i + 1)));
            }
        }
    }

    void prepare_before_reading() {
        // The new tokens' keys, values and query heads exist only once `prepare` has written them
        // (their cache rows and queries start as NaN), so a head read before its preparation
        // shows in the output. Each kv head is prepared exactly once: for one token in the static
        // split by the threads that attend them (two threads for 8 kv heads), otherwise once for
        // all heads by the caller (one token whose few kv heads run as parallel partitions; short
        // and prompt-sized calls).
        struct Case {
            int tokens, first, heads, kv_heads, threads;
            bool per_thread;  // prepared in pieces on the attending threads
        };
        for (const Case& c : {Case{1, 300, 16, 8, 2, true}, Case{1, 0, 16, 8, 2, true}, Case{1, 300, 16, 8, 1, true},
                              Case{1, 400, 6, 3, 3, true}, Case{1, 700, 6, 3, 3, false}, Case{1, 1300, 2, 1, 2, false}, Case{3, 600, 8, 4, 2, false},
                              Case{40, 100, 4, 2, 2, false}}) {
            AttentionParams p;
            p.heads = c.heads;
            p.kv_heads = c.kv_heads;
            p.head_dim = 64;
            p.scale = 0.125f;
            const int64_t end = c.first + c.tokens, group = p.heads / p.kv_heads;
            const Sequence seq(end, p.kv_heads, p.head_dim, 23);
            Cache cache;
            const auto q = random_q(c.tokens, p, 24);
            const auto positions = range(c.first, end);
            const Reference want = reference(p, q, positions, seq, DType::F32, 0, end);
            for (const KernelLevel& level : kernel_levels()) {
                std::vector<float> q_in(q.size(), NAN);
                cache = make_cache(seq, DType::F32, 0, end, 0, true);
                for (int64_t position = c.first; position < end; ++position)
                    for (int64_t h = 0; h < p.kv_heads; ++h) {
                        std::fill_n(cache.k_bytes.begin() + cache.offset(position, h), p.head_dim * 4, std::byte{0xff});
                        std::fill_n(cache.v_bytes.begin() + cache.offset(position, h), p.head_dim * 4, std::byte{0xff});
                    }
                std::vector<std::atomic<int>> prepared(static_cast<size_t>(p.kv_heads));
                std::mutex mutex;
                std::set<std::thread::id> threads;
                int calls = 0;
                const auto prepare_heads = [&](int64_t kv_head, int64_t kv_end) {
                    {
                        std::lock_guard lock(mutex);
                        threads.insert(std::this_thread::get_id());
                        ++calls;
                    }
                    for (int64_t h = kv_head; h < kv_end; ++h) {
                        prepared[static_cast<size_t>(h)] += 1;
                        for (int64_t t = 0; t < c.tokens; ++t) {
                            const int64_t position = c.first + t;
                            for (int64_t d = 0; d < p.head_dim; ++d) {
                                const size_t index = static_cast<size_t>((position * p.kv_heads + h) * p.head_dim + d);
                                const int64_t at = cache.offset(position, h) + d * 4;
                                std::memcpy(cache.k_bytes.data() + at, &seq.k[index], 4);
                                std::memcpy(cache.v_bytes.data() + at, &seq.v[index], 4);
                            }
                            const size_t first_q = static_cast<size_t>((t * p.heads + h * group) * p.head_dim);
                            std::copy_n(q.begin() + first_q, group * p.head_dim, q_in.begin() + first_q);
                        }
                    }
                };
                const RangeCallback prepare = prepare_heads;
                ThreadPool pool(c.threads);
                std::vector<float> got(q.size(), NAN);
                attention_with(*level.ops, p, q_in.data(), c.tokens, positions.data(), cache.view(cache.k_bytes), cache.view(cache.v_bytes),
                               0, end, got.data(), pool, &prepare);
                const QString context = QStringLiteral("%1: %2 tokens from %3, %4 kv heads, %5 threads")
                                            .arg(QString::fromStdString(level.name)).arg(c.tokens).arg(c.first).arg(c.kv_heads).arg(c.threads);
                EXPECT_OK(compare(got, want), context);
                for (const std::atomic<int>& count : prepared) QVERIFY2(count == 1, qPrintable(context + ": a kv head prepared other than once"));
                if (c.per_thread) {
                    QVERIFY2(static_cast<int>(threads.size()) == std::min<int>(c.threads, (c.kv_heads + 1) / 2),
                             qPrintable(context + ": not prepared on each attending thread"));
                } else {
                    QVERIFY2(calls == 1 && threads.count(std::this_thread::get_id()) == 1, qPrintable(context + ": not prepared once by the caller"));
                }
            }
        }
    }

    void dispatching_entry() {
        // kernels::attention runs the active level's table.
        AttentionParams p;
        p.heads = 4;
        p.kv_heads = 2;
        p.head_dim = 32;
        p.scale = 0.2f;
        const Sequence seq(20, p.kv_heads, p.head_dim, 19);
        const Cache cache = make_cache(seq, DType::F32, 0, 20, 0, false);
        const auto q = random_q(3, p, 20);
        const auto positions = range(17, 20);
        ThreadPool pool(2);
        const Isa saved = active_isa();
        for (Isa isa : supported_isas()) {
            set_active_isa(isa);
            std::vector<float> via_entry(q.size()), via_table(q.size());
            kernels::attention(p, q.data(), 3, positions.data(), cache.view(cache.k_bytes), cache.view(cache.v_bytes), 0, 20,
                               via_entry.data(), pool);
            attention_with(ops_table(isa), p, q.data(), 3, positions.data(), cache.view(cache.k_bytes), cache.view(cache.v_bytes),
                           0, 20, via_table.data(), pool);
            QVERIFY(std::memcmp(via_entry.data(), via_table.data(), via_entry.size() * 4) == 0);
        }
        set_active_isa(saved);
    }

    void bad_parameters() {
        AttentionParams p;
        p.heads = 6;
        p.kv_heads = 4;
        p.head_dim = 8;
        const Sequence seq(4, 4, 8, 21);
        const Cache cache = make_cache(seq, DType::F32, 0, 4, 0, false);
        std::vector<float> q(48), out(48);
        const int64_t position = 3;
        ThreadPool pool(1);
        const auto run = [&](const AttentionParams& params, KvCacheView k, KvCacheView v, int64_t begin, int64_t end) {
            kernels::attention(params, q.data(), 1, &position, k, v, begin, end, out.data(), pool);
        };
        const KvCacheView k = cache.view(cache.k_bytes), v = cache.view(cache.v_bytes);
        OXINFER_EXPECT_ERROR(run(p, k, v, 0, 4), std::string("multiple of kv_heads"));
        p.heads = 8;
        KvCacheView q8 = k;
        q8.dtype = DType::Q8_0;
        OXINFER_EXPECT_ERROR(run(p, q8, q8, 0, 4), std::string("must be f32, f16 or bf16"));
        KvCacheView ring = k;
        ring.ring_size = 2;
        OXINFER_EXPECT_ERROR(run(p, ring, ring, 0, 4), std::string("does not fit a ring of 2"));
        KvCacheView half = v;
        half.dtype = DType::F16;
        OXINFER_EXPECT_ERROR(run(p, k, half, 0, 4), std::string("same type"));
        p.causal = false;
        p.window = 4;
        OXINFER_EXPECT_ERROR(run(p, k, v, 0, 4), std::string("needs causal"));
    }
};

QTEST_APPLESS_MAIN(AttentionTest)
#include "test_attention.moc"
