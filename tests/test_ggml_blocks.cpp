// Dequantisation of ggml block types, checked bit for bit against goldens that
// tests/reference/ggml_blocks_reference.py computes with numpy (float32 operations in ggml's
// order), and the half/bfloat16 scalar conversions checked over every 16-bit pattern.

#include <oxinfer/dtype.h>
#include <oxinfer/error.h>

#include "formats/ggml_blocks.h"

#include <QDir>
#include <QFile>
#include <QObject>
#include <QSet>
#include <QTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

using oxinfer::DType;

namespace {

const QString kGoldenDir = QStringLiteral(OXINFER_REFERENCE_DIR "/ggml_blocks/");

struct BlockType {
    DType type;
    const char* name;
    int64_t block_elements;
    int64_t block_bytes;
};

// Block sizes from ggml-common.h's block structs, written out here independently of dtype.cpp.
constexpr BlockType kSupported[] = {
    {DType::Q4_0, "q4_0", 32, 18},     {DType::Q4_1, "q4_1", 32, 20},
    {DType::Q5_0, "q5_0", 32, 22},     {DType::Q5_1, "q5_1", 32, 24},
    {DType::Q8_0, "q8_0", 32, 34},     {DType::Q8_1, "q8_1", 32, 36},
    {DType::Q2_K, "q2_k", 256, 84},    {DType::Q3_K, "q3_k", 256, 110},
    {DType::Q4_K, "q4_k", 256, 144},   {DType::Q5_K, "q5_k", 256, 176},
    {DType::Q6_K, "q6_k", 256, 210},   {DType::Q8_K, "q8_k", 256, 292},
    {DType::IQ4_NL, "iq4_nl", 32, 18}, {DType::IQ4_XS, "iq4_xs", 256, 136},
    {DType::TQ1_0, "tq1_0", 256, 54},  {DType::TQ2_0, "tq2_0", 256, 66},
    {DType::MXFP4, "mxfp4", 32, 17},
};

// The codebook types we do not implement.
constexpr BlockType kUnsupported[] = {
    {DType::IQ2_XXS, "iq2_xxs", 256, 66}, {DType::IQ2_XS, "iq2_xs", 256, 74},
    {DType::IQ2_S, "iq2_s", 256, 82},     {DType::IQ3_XXS, "iq3_xxs", 256, 98},
    {DType::IQ3_S, "iq3_s", 256, 110},    {DType::IQ1_S, "iq1_s", 256, 50},
    {DType::IQ1_M, "iq1_m", 256, 56},
};

// The whole file, or nullopt when it cannot be read (the caller fails the test).
std::optional<QByteArray> read_golden(const QString& file_name) {
    QFile file(kGoldenDir + file_name);
    if (!file.open(QIODevice::ReadOnly)) return std::nullopt;
    return file.readAll();
}

std::vector<float> floats_of(const QByteArray& bytes) {
    std::vector<float> values(static_cast<size_t>(bytes.size()) / 4);
    std::memcpy(values.data(), bytes.constData(), values.size() * 4);
    return values;
}

// Empty when `got` equals `expected` bit for bit, else a description of the first difference.
QString first_mismatch(const std::vector<float>& got, const std::vector<float>& expected, int64_t block_elements) {
    if (got.size() != expected.size())
        return QStringLiteral("%1 values, expected %2").arg(got.size()).arg(expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
        const auto g = std::bit_cast<uint32_t>(got[i]);
        const auto e = std::bit_cast<uint32_t>(expected[i]);
        if (g != e)
            return QStringLiteral("value %1 (block %2, element %3): got %4 (0x%5), expected %6 (0x%7)")
                .arg(i)
                .arg(static_cast<int64_t>(i) / block_elements)
                .arg(static_cast<int64_t>(i) % block_elements)
                .arg(static_cast<double>(got[i]), 0, 'g', 9)
                .arg(g, 8, 16, QLatin1Char('0'))
                .arg(static_cast<double>(expected[i]), 0, 'g', 9)
                .arg(e, 8, 16, QLatin1Char('0'));
    }
    return {};
}

bool is_half_nan(uint16_t bits) { return (bits & 0x7c00u) == 0x7c00u && (bits & 0x03ffu) != 0; }
bool is_bf16_nan(uint16_t bits) { return (bits & 0x7f80u) == 0x7f80u && (bits & 0x007fu) != 0; }

}  // namespace

class TestGgmlBlocks : public QObject {
    Q_OBJECT

private slots:
    void dequantizesLikeGgml_data();
    void dequantizesLikeGgml();
    void goldensCoverExactlyTheSupportedTypes();
    void missingGoldenIsReported();
    void codebookTypesAreUnsupported_data();
    void codebookTypesAreUnsupported();
    void partialBlocksAreRejected();
    void blockSizes_data();
    void blockSizes();
    void halfToFloatMatchesNumpy();
    void halfRoundTrips();
    void floatToHalfRoundsToNearestEven();
    void bfloat16RoundTrips();
};

void TestGgmlBlocks::dequantizesLikeGgml_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<QString>("name");
    QTest::addColumn<qlonglong>("blockElements");
    QTest::addColumn<qlonglong>("blockBytes");
    for (const BlockType& t : kSupported)
        QTest::newRow(t.name) << static_cast<int>(t.type) << QString::fromLatin1(t.name)
                              << static_cast<qlonglong>(t.block_elements) << static_cast<qlonglong>(t.block_bytes);
}

void TestGgmlBlocks::dequantizesLikeGgml() {
    QFETCH(int, type);
    QFETCH(QString, name);
    QFETCH(qlonglong, blockElements);
    QFETCH(qlonglong, blockBytes);
    const auto dtype = static_cast<DType>(type);

    QVERIFY(oxinfer::ggml_blocks_supported(dtype));
    QVERIFY(oxinfer::can_convert_to_f32(dtype));

    const std::optional<QByteArray> blocks = read_golden(name + ".blocks");
    const std::optional<QByteArray> expected_bytes = read_golden(name + ".f32");
    QVERIFY2(blocks && expected_bytes,
             qPrintable("missing golden " + kGoldenDir + name + ".blocks/.f32; run tests/reference/ggml_blocks_reference.py"));
    QVERIFY(!blocks->isEmpty());
    QCOMPARE(blocks->size() % blockBytes, 0);
    const qlonglong count = blocks->size() / blockBytes * blockElements;
    QCOMPARE(static_cast<qlonglong>(expected_bytes->size()), count * 4);
    const std::vector<float> expected = floats_of(*expected_bytes);

    std::vector<float> got(static_cast<size_t>(count));
    oxinfer::convert_to_f32(dtype, blocks->constData(), got.data(), count);
    QString mismatch = first_mismatch(got, expected, blockElements);
    QVERIFY2(mismatch.isEmpty(), qPrintable(name + ": " + mismatch));

    // Tensor data in a file has no alignment: decode from an odd address too.
    QByteArray shifted(1, '\0');
    shifted.append(*blocks);
    std::vector<float> got_shifted(static_cast<size_t>(count));
    oxinfer::convert_to_f32(dtype, shifted.constData() + 1, got_shifted.data(), count);
    mismatch = first_mismatch(got_shifted, expected, blockElements);
    QVERIFY2(mismatch.isEmpty(), qPrintable(name + " (unaligned): " + mismatch));
}

void TestGgmlBlocks::goldensCoverExactlyTheSupportedTypes() {
    QSet<QString> expected;
    for (const BlockType& t : kSupported) expected.insert(QString::fromLatin1(t.name));
    QSet<QString> found;
    const QStringList files = QDir(kGoldenDir).entryList({QStringLiteral("*.blocks")}, QDir::Files);
    for (const QString& file : files) found.insert(file.chopped(static_cast<int>(qstrlen(".blocks"))));
    QCOMPARE(found, expected);

    for (int i = 0; i <= static_cast<int>(DType::MXFP4); ++i) {
        const auto type = static_cast<DType>(i);
        if (!oxinfer::dtype_traits(type).quantized) continue;
        const bool listed = expected.contains(QString::fromLatin1(oxinfer::dtype_name(type).data(),
                                                                  static_cast<qsizetype>(oxinfer::dtype_name(type).size())));
        QVERIFY2(oxinfer::ggml_blocks_supported(type) == listed, oxinfer::dtype_name(type).data());
    }
}

void TestGgmlBlocks::missingGoldenIsReported() {
    // The data-driven test fails on this (QVERIFY2 on the optional), it never skips.
    QVERIFY(!read_golden(QStringLiteral("no_such_type.blocks")).has_value());
}

void TestGgmlBlocks::codebookTypesAreUnsupported_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<qlonglong>("blockBytes");
    for (const BlockType& t : kUnsupported)
        QTest::newRow(t.name) << static_cast<int>(t.type) << static_cast<qlonglong>(t.block_bytes);
}

void TestGgmlBlocks::codebookTypesAreUnsupported() {
    QFETCH(int, type);
    QFETCH(qlonglong, blockBytes);
    const auto dtype = static_cast<DType>(type);
    QVERIFY(!oxinfer::ggml_blocks_supported(dtype));
    QVERIFY(!oxinfer::can_convert_to_f32(dtype));

    const std::vector<unsigned char> block(static_cast<size_t>(blockBytes), 0);
    std::vector<float> out(256);
    try {
        oxinfer::convert_to_f32(dtype, block.data(), out.data(), 256);
        QFAIL("convert_to_f32 did not throw");
    } catch (const oxinfer::Error& e) {
        QVERIFY2(std::string(e.what()).find("unsupported tensor type") != std::string::npos, e.what());
    }
}

void TestGgmlBlocks::partialBlocksAreRejected() {
    const std::vector<unsigned char> block(18, 0);
    std::vector<float> out(32);
    QVERIFY_THROWS_EXCEPTION(oxinfer::Error, oxinfer::convert_to_f32(DType::Q4_0, block.data(), out.data(), 31));
}

void TestGgmlBlocks::blockSizes_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<qlonglong>("blockElements");
    QTest::addColumn<qlonglong>("blockBytes");
    for (const BlockType& t : kSupported)
        QTest::newRow(t.name) << static_cast<int>(t.type) << static_cast<qlonglong>(t.block_elements)
                              << static_cast<qlonglong>(t.block_bytes);
    for (const BlockType& t : kUnsupported)
        QTest::newRow(t.name) << static_cast<int>(t.type) << static_cast<qlonglong>(t.block_elements)
                              << static_cast<qlonglong>(t.block_bytes);
}

void TestGgmlBlocks::blockSizes() {
    QFETCH(int, type);
    QFETCH(qlonglong, blockElements);
    QFETCH(qlonglong, blockBytes);
    const auto dtype = static_cast<DType>(type);
    const auto elements = static_cast<uint64_t>(blockElements);
    const auto bytes = static_cast<uint64_t>(blockBytes);

    const oxinfer::DTypeTraits& traits = oxinfer::dtype_traits(dtype);
    QVERIFY(traits.quantized);
    QCOMPARE(traits.block_elements, blockElements);
    QCOMPARE(traits.block_bytes, blockBytes);

    QCOMPARE(oxinfer::dtype_bytes(dtype, 0), std::optional<uint64_t>(0));
    QCOMPARE(oxinfer::dtype_bytes(dtype, elements), std::optional<uint64_t>(bytes));
    QCOMPARE(oxinfer::dtype_bytes(dtype, 7 * elements), std::optional<uint64_t>(7 * bytes));
    QVERIFY(!oxinfer::dtype_bytes(dtype, 1).has_value());
    QVERIFY(!oxinfer::dtype_bytes(dtype, elements - 1).has_value());
    QVERIFY(!oxinfer::dtype_bytes(dtype, elements + 1).has_value());
    QVERIFY(!oxinfer::dtype_bytes(dtype, 7 * elements + elements / 2).has_value());
    // The most whole blocks a uint64 element count holds: their bytes overflow 64 bits only for
    // the types that take more than a byte per value (Q8_0, Q8_1, Q8_K).
    const uint64_t max_blocks = std::numeric_limits<uint64_t>::max() / elements;
    if (bytes > elements)
        QVERIFY(!oxinfer::dtype_bytes(dtype, max_blocks * elements).has_value());
    else
        QCOMPARE(oxinfer::dtype_bytes(dtype, max_blocks * elements), std::optional<uint64_t>(max_blocks * bytes));
}

void TestGgmlBlocks::halfToFloatMatchesNumpy() {
    const std::optional<QByteArray> golden = read_golden(QStringLiteral("f16_all.f32"));
    QVERIFY2(golden, qPrintable("missing golden " + kGoldenDir + "f16_all.f32; run tests/reference/ggml_blocks_reference.py"));
    QCOMPARE(golden->size(), qsizetype{65536 * 4});
    const std::vector<float> expected = floats_of(*golden);
    for (uint32_t i = 0; i < 65536; ++i) {
        const auto bits = static_cast<uint16_t>(i);
        const float got = oxinfer::f16_to_f32(bits);
        if (is_half_nan(bits)) {  // payload quieting differs between converters; only NaN-ness counts
            QVERIFY2(std::isnan(got) && std::isnan(expected[i]), qPrintable(QString::number(i, 16)));
            QCOMPARE(std::signbit(got), std::signbit(expected[i]));
            continue;
        }
        if (std::bit_cast<uint32_t>(got) != std::bit_cast<uint32_t>(expected[i]))
            QFAIL(qPrintable(QStringLiteral("half 0x%1: got 0x%2, numpy 0x%3")
                                 .arg(i, 4, 16, QLatin1Char('0'))
                                 .arg(std::bit_cast<uint32_t>(got), 8, 16, QLatin1Char('0'))
                                 .arg(std::bit_cast<uint32_t>(expected[i]), 8, 16, QLatin1Char('0'))));
    }
}

void TestGgmlBlocks::halfRoundTrips() {
    for (uint32_t i = 0; i < 65536; ++i) {
        const auto bits = static_cast<uint16_t>(i);
        const uint16_t back = oxinfer::f32_to_f16(oxinfer::f16_to_f32(bits));
        if (is_half_nan(bits)) {
            QVERIFY2(is_half_nan(back), qPrintable(QString::number(i, 16)));
            QCOMPARE(back & 0x8000, bits & 0x8000);
        } else if (back != bits) {
            QFAIL(qPrintable(QStringLiteral("half 0x%1 came back as 0x%2").arg(i, 4, 16, QLatin1Char('0')).arg(back, 4, 16, QLatin1Char('0'))));
        }
    }
}

void TestGgmlBlocks::floatToHalfRoundsToNearestEven() {
    // Between every two adjacent finite halves: the midpoint goes to the even one, a float32 ulp
    // either side goes to the nearer one. Halves are exact in float32, so midpoints are too.
    for (uint32_t i = 0; i < 0x7bff; ++i) {
        for (const uint32_t sign : {0u, 0x8000u}) {
            const auto low = static_cast<uint16_t>(i | sign);
            const auto high = static_cast<uint16_t>((i + 1) | sign);
            const float mid = (oxinfer::f16_to_f32(low) + oxinfer::f16_to_f32(high)) / 2;
            const uint16_t even = (i & 1) ? high : low;
            const float toward_zero = std::nextafter(mid, 0.0f);
            const float away = std::nextafter(mid, sign ? -INFINITY : INFINITY);
            if (oxinfer::f32_to_f16(mid) != even || oxinfer::f32_to_f16(toward_zero) != low ||
                oxinfer::f32_to_f16(away) != high)
                QFAIL(qPrintable(QStringLiteral("rounding between halves 0x%1 and 0x%2").arg(low, 4, 16).arg(high, 4, 16)));
        }
    }
    // Past the largest half: the midpoint to 65536 and beyond round to infinity.
    QCOMPARE(oxinfer::f32_to_f16(65519.99f), uint16_t{0x7bff});
    QCOMPARE(oxinfer::f32_to_f16(65520.0f), uint16_t{0x7c00});
    QCOMPARE(oxinfer::f32_to_f16(-1e30f), uint16_t{0xfc00});
    QCOMPARE(oxinfer::f32_to_f16(INFINITY), uint16_t{0x7c00});
    // Below the smallest subnormal 2^-24: half of it ties to zero, just above goes up.
    QCOMPARE(oxinfer::f32_to_f16(std::ldexp(1.0f, -25)), uint16_t{0x0000});
    QCOMPARE(oxinfer::f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), uint16_t{0x0001});
    QCOMPARE(oxinfer::f32_to_f16(-std::ldexp(1.0f, -30)), uint16_t{0x8000});
    QVERIFY(is_half_nan(oxinfer::f32_to_f16(std::numeric_limits<float>::quiet_NaN())));
}

void TestGgmlBlocks::bfloat16RoundTrips() {
    for (uint32_t i = 0; i < 65536; ++i) {
        const auto bits = static_cast<uint16_t>(i);
        const float value = oxinfer::bf16_to_f32(bits);
        QCOMPARE(std::bit_cast<uint32_t>(value), i << 16);
        const uint16_t back = oxinfer::f32_to_bf16(value);
        if (is_bf16_nan(bits)) {
            QVERIFY2(is_bf16_nan(back), qPrintable(QString::number(i, 16)));
            QCOMPARE(back & 0x8000, bits & 0x8000);
        } else if (back != bits) {
            QFAIL(qPrintable(QStringLiteral("bf16 0x%1 came back as 0x%2").arg(i, 4, 16, QLatin1Char('0')).arg(back, 4, 16, QLatin1Char('0'))));
        }
        // Ties to even between this pattern and the next (finite, same sign, not at the top).
        if ((i & 0x7fffu) < 0x7f7fu) {
            const uint32_t mid = (i << 16) | 0x8000u;
            const uint16_t even = (i & 1) ? static_cast<uint16_t>(i + 1) : bits;
            QCOMPARE(oxinfer::f32_to_bf16(std::bit_cast<float>(mid)), even);
            QCOMPARE(oxinfer::f32_to_bf16(std::bit_cast<float>(mid - 1)), bits);
            QCOMPARE(oxinfer::f32_to_bf16(std::bit_cast<float>(mid + 1)), static_cast<uint16_t>(i + 1));
        }
    }
}

QTEST_APPLESS_MAIN(TestGgmlBlocks)
#include "test_ggml_blocks.moc"
