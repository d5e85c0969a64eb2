// models::KvCache: what store() writes is what attention reads back through keys() / values()
// (each row found by the view's strides, as kernels/attention.cpp finds it), for every cache type,
// across the growth of its buffers (each head's rows move to their place in the larger buffer)
// and around a sliding-window ring; and the bytes it reports.

#include "models/kv_cache.h"

#include <oxinfer/dtype.h>
#include <oxinfer/error.h>

#include "test_support.h"

#include <QObject>
#include <QTest>

#include <cstring>
#include <random>
#include <vector>

using namespace oxinfer;
using oxinfer::models::KvCache;

namespace {

constexpr int64_t kLayers = 3, kKvHeads = 3, kHeadDim = 5;

// Deterministic keys and values of every position, [position][kv head][dim] as the models pass
// them to store().
struct Rows {
    std::vector<float> k, v;
    explicit Rows(int64_t positions, uint32_t seed = 7) {
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
        k.resize(static_cast<size_t>(positions * kKvHeads * kHeadDim));
        v.resize(k.size());
        for (float& x : k) x = dist(rng);
        for (float& x : v) x = dist(rng);
    }
    const float* keys(int64_t position) const { return k.data() + position * kKvHeads * kHeadDim; }
    const float* values(int64_t position) const { return v.data() + position * kKvHeads * kHeadDim; }
};

float rounded(DType dtype, float x) {
    if (dtype == DType::F16) return f16_to_f32(f32_to_f16(x));
    if (dtype == DType::BF16) return bf16_to_f32(f32_to_bf16(x));
    return x;
}

float read(const kernels::KvCacheView& view, int64_t head, int64_t position, int64_t d) {
    const int64_t slot = view.ring_size > 0 ? position % view.ring_size : position;
    const std::byte* at = view.data + head * view.head_stride + slot * view.position_stride;
    if (view.dtype == DType::F32) {
        float x;
        std::memcpy(&x, at + 4 * d, 4);
        return x;
    }
    uint16_t bits;
    std::memcpy(&bits, at + 2 * d, 2);
    return view.dtype == DType::F16 ? f16_to_f32(bits) : bf16_to_f32(bits);
}

// Every layer's rows of positions [begin, end) read back as stored (layer l holds the rows
// shifted by l positions, so that a layer mix-up shows).
void expect_rows(const KvCache& cache, const Rows& rows, int64_t begin, int64_t end) {
    for (int64_t layer = 0; layer < kLayers; ++layer) {
        const kernels::KvCacheView k = cache.keys(layer), v = cache.values(layer);
        for (int64_t p = begin; p < end; ++p)
            for (int64_t h = 0; h < kKvHeads; ++h)
                for (int64_t d = 0; d < kHeadDim; ++d) {
                    const int64_t i = (h * kHeadDim) + d;
                    const float want_k = rounded(cache.dtype(), rows.keys(p + layer)[i]);
                    const float want_v = rounded(cache.dtype(), rows.values(p + layer)[i]);
                    if (read(k, h, p, d) != want_k || read(v, h, p, d) != want_v)
                        QFAIL(qPrintable(QStringLiteral("layer %1 position %2 head %3 dim %4 reads %5 / %6, stored %7 / %8")
                                             .arg(layer).arg(p).arg(h).arg(d).arg(read(k, h, p, d)).arg(read(v, h, p, d))
                                             .arg(want_k).arg(want_v)));
                }
    }
}

void store(KvCache& cache, const Rows& rows, int64_t first, int64_t count) {
    cache.reserve(first + count);
    for (int64_t layer = 0; layer < kLayers; ++layer) cache.store(layer, first, count, rows.keys(first + layer), rows.values(first + layer));
    cache.set_size(first + count);
}

}  // namespace

class KvCacheTest : public QObject {
    Q_OBJECT

private slots:
    void rows_survive_growth_data() {
        QTest::addColumn<int>("dtype");
        QTest::newRow("f32") << static_cast<int>(DType::F32);
        QTest::newRow("f16") << static_cast<int>(DType::F16);
        QTest::newRow("bf16") << static_cast<int>(DType::BF16);
    }
    void rows_survive_growth() {
        QFETCH(int, dtype);
        const Rows rows(1200 + kLayers);
        KvCache cache(kLayers, kKvHeads, kHeadDim, static_cast<DType>(dtype), 1200);
        store(cache, rows, 0, 1);  // the first 256 slots
        store(cache, rows, 1, 200);
        expect_rows(cache, rows, 0, 201);
        QCOMPARE(cache.allocated_bytes(), cache.bytes_per_position() * 256);
        store(cache, rows, 201, 150);  // grows to 512 slots
        expect_rows(cache, rows, 0, 351);
        QCOMPARE(cache.allocated_bytes(), cache.bytes_per_position() * 512);
        store(cache, rows, 351, 600);  // to 1024
        store(cache, rows, 951, 249);  // to the 1200 of the context
        expect_rows(cache, rows, 0, 1200);
        QCOMPARE(cache.allocated_bytes(), cache.bytes_per_position() * 1200);
        QCOMPARE(cache.bytes_per_position(), static_cast<uint64_t>(2 * kLayers * kKvHeads * kHeadDim * (dtype == static_cast<int>(DType::F32) ? 4 : 2)));
        // Going back and storing other rows overwrites in place.
        QCOMPARE(cache.truncate(100), int64_t{100});
        const Rows other(1200 + kLayers, 8);
        store(cache, other, 100, 200);
        expect_rows(cache, rows, 0, 100);
        expect_rows(cache, other, 100, 300);
        expect_rows(cache, rows, 300, 1200);
        OXINFER_EXPECT_ERROR(cache.reserve(1201), std::string("do not fit in the context length of 1200"));
    }

    // Decoding stores each thread's kv heads on its own (kernels::attention's prepare): a store of
    // some heads writes those heads' rows and leaves the others' as they were.
    void store_of_some_heads() {
        const Rows rows(20 + kLayers), other(20 + kLayers, 9);
        KvCache cache(kLayers, kKvHeads, kHeadDim, DType::F32, 64);
        store(cache, rows, 0, 20);
        for (int64_t layer = 0; layer < kLayers; ++layer) {
            cache.store(layer, 10, 1, other.keys(10 + layer), other.values(10 + layer), 1, 2);  // heads 1 and 2
            cache.store(layer, 11, 1, other.keys(11 + layer), other.values(11 + layer), 0, 1);  // head 0
        }
        for (int64_t layer = 0; layer < kLayers; ++layer) {
            const kernels::KvCacheView k = cache.keys(layer), v = cache.values(layer);
            for (int64_t p : {10, 11})
                for (int64_t h = 0; h < kKvHeads; ++h) {
                    const bool stored = p == 10 ? h == 1 || h == 2 : h == 0;
                    const Rows& want = stored ? other : rows;
                    for (int64_t d = 0; d < kHeadDim; ++d) {
                        QCOMPARE(read(k, h, p, d), want.keys(p + layer)[h * kHeadDim + d]);
                        QCOMPARE(read(v, h, p, d), want.values(p + layer)[h * kHeadDim + d]);
                    }
                }
        }
        expect_rows(cache, rows, 0, 10);
        expect_rows(cache, rows, 12, 20);
    }

    // A layer's keys and values are one allocation from a huge-page boundary, so that where they
    // fill whole huge pages (Qwen3-0.6B's f32 cache at 256 positions: 1 MB each) the system can
    // back them with huge pages rather than fault in each 4 KB page at its first store.
    void layer_keys_and_values_share_huge_pages() {
        constexpr int64_t kv_heads = 8, head_dim = 128, positions = 256;
        KvCache cache(2, kv_heads, head_dim, DType::F32, 4096);
        cache.reserve(1);
        const uintptr_t bytes = kv_heads * positions * head_dim * 4;
        for (int64_t layer = 0; layer < 2; ++layer) {
            const auto keys = reinterpret_cast<uintptr_t>(cache.keys(layer).data);
#ifndef _WIN32  // Windows aligns to its allocation granularity and gives no huge pages to applications
            QCOMPARE(keys % kernels::HugePageBuffer::kHugePageBytes, uintptr_t{0});
#endif
            QCOMPARE(reinterpret_cast<uintptr_t>(cache.values(layer).data), keys + bytes);
            QCOMPARE(cache.values(layer).head_stride, int64_t{positions * head_dim * 4});
        }
    }

    void ring_keeps_the_window() {
        // A window of 8 in a 2000-position context: a ring of 8 + kMaxStoreTokens slots.
        const int64_t window = 8, ring = window + models::kMaxStoreTokens;
        const Rows rows(2000 + kLayers);
        KvCache cache(kLayers, kKvHeads, kHeadDim, DType::F32, 2000, window);
        store(cache, rows, 0, 300);
        store(cache, rows, 300, 400);  // wraps: positions 520-699 take slots 0-179
        QCOMPARE(cache.keys(0).ring_size, ring);
        QCOMPARE(cache.allocated_bytes(), cache.bytes_per_position() * static_cast<uint64_t>(ring));
        expect_rows(cache, rows, 700 - ring, 700);
        for (int64_t step = 0; step < 5; ++step) store(cache, rows, 700 + 97 * step, 97);
        expect_rows(cache, rows, 1185 - ring, 1185);
    }
};

QTEST_APPLESS_MAIN(KvCacheTest)
#include "test_kv_cache.moc"
