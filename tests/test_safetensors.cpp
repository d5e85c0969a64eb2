// The safetensors reader on files written by the test writer: every dtype, shapes, metadata, and
// each kind of malformed file with the error it must give.

#include "checkpoint_writers.h"
#include "formats/parsed_tensors.h"
#include "test_support.h"

#include <oxinfer/checkpoint.h>

#include <QTemporaryDir>
#include <QTest>

#include <cstring>

using namespace oxinfer;
using namespace oxinfer::test;

namespace {

std::span<const std::byte> span_of(const std::vector<std::byte>& bytes) { return {bytes.data(), bytes.size()}; }

// A file whose header is exactly `header` (no padding), followed by `data_bytes` zero bytes.
std::vector<std::byte> with_header(const std::string& header, size_t data_bytes = 0) {
    std::vector<std::byte> out(8);
    const uint64_t length = header.size();
    std::memcpy(out.data(), &length, 8);
    for (char c : header) out.push_back(static_cast<std::byte>(c));
    out.resize(out.size() + data_bytes);
    return out;
}

}  // namespace

class SafetensorsTest : public QObject {
    Q_OBJECT

private slots:
    void readsEveryDtype() {
        std::vector<TestTensor> tensors;
        const std::pair<DType, int> types[] = {{DType::F64, 8}, {DType::F32, 4}, {DType::F16, 2}, {DType::BF16, 2},
                                               {DType::I64, 8}, {DType::I32, 4}, {DType::I16, 2}, {DType::I8, 1},
                                               {DType::U8, 1},  {DType::Bool, 1}, {DType::F8_E4M3, 1}, {DType::F8_E5M2, 1}};
        for (const auto& [type, size] : types)
            tensors.push_back(raw_tensor("t." + std::string(dtype_name(type)), type, {2, 3}, std::vector<std::byte>(6 * size, std::byte{1})));
        const auto bytes = safetensors_bytes(tensors, {{"format", "pt"}});
        const ParsedTensors parsed = parse_safetensors(span_of(bytes), "x.safetensors");
        QCOMPARE(parsed.tensors.size(), tensors.size());
        QCOMPARE(parsed.metadata["format"].get<std::string>(), std::string("pt"));
        for (size_t i = 0; i < tensors.size(); ++i) {
            // Tensors come back in file order, which is the order written.
            QCOMPARE(parsed.tensors[i].name, tensors[i].name);
            QCOMPARE(parsed.tensors[i].dtype, tensors[i].dtype);
            QCOMPARE(parsed.tensors[i].shape, (std::vector<int64_t>{2, 3}));
            QCOMPARE(parsed.tensors[i].nbytes, tensors[i].bytes.size());
        }
    }

    void valuesAndZeroCopy() {
        const auto values = random_floats(12, 7);
        const auto bytes = safetensors_bytes({f32_tensor("w", {3, 4}, values), f32_tensor("scalar", {}, {2.5f}),
                                              f32_tensor("empty", {0, 4}, {})});
        QTemporaryDir dir;
        const auto path = std::filesystem::path(dir.path().toStdString()) / "m.safetensors";
        write_bytes(path, bytes);
        const auto checkpoint = Checkpoint::open(path);
        QCOMPARE(checkpoint->format(), CheckpointFormat::Safetensors);
        const TensorInfo& w = checkpoint->get("w");
        QCOMPARE(checkpoint->read_f32(w), values);
        // The data pointer is inside the mapping, at the offset the writer put it: no copy.
        QCOMPARE(std::memcmp(w.data, values.data(), 48), 0);
        QCOMPARE(checkpoint->read_f32(checkpoint->get("scalar")), std::vector<float>{2.5f});
        QVERIFY(checkpoint->get("scalar").shape.empty());
        QCOMPARE(checkpoint->get("empty").elements(), int64_t{0});
        OXINFER_EXPECT_ERROR(checkpoint->get("missing"), "has no tensor named 'missing'");
    }

    void rejectsMalformedFiles_data() {
        QTest::addColumn<QByteArray>("header");
        QTest::addColumn<int>("dataBytes");
        QTest::addColumn<QString>("expected");
        QTest::newRow("not json") << QByteArray("{not json") << 0 << "header is not valid JSON";
        QTest::newRow("array header") << QByteArray("[1,2]") << 0 << "header is not a JSON object";
        QTest::newRow("entry not object") << QByteArray(R"({"a": 3})") << 0 << "tensor 'a' entry is not a JSON object";
        QTest::newRow("unknown dtype") << QByteArray(R"({"a":{"dtype":"F7","shape":[1],"data_offsets":[0,1]}})") << 1 << "unknown dtype 'F7'";
        QTest::newRow("no shape") << QByteArray(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})") << 4 << "has no shape array";
        QTest::newRow("negative dim") << QByteArray(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})") << 4 << "is not a non-negative integer";
        QTest::newRow("offsets reversed") << QByteArray(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})") << 4 << "end before they begin";
        QTest::newRow("data past end") << QByteArray(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})") << 8 << "ends past the end of the file";
        QTest::newRow("size mismatch") << QByteArray(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})") << 8 << "holds 8 bytes but its shape and f32 type need 12";
        QTest::newRow("shape overflow") << QByteArray(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})") << 4 << "element count overflows";
        QTest::newRow("metadata not object") << QByteArray(R"({"__metadata__": 1})") << 0 << "__metadata__ is not a JSON object";
    }

    void rejectsMalformedFiles() {
        QFETCH(QByteArray, header);
        QFETCH(int, dataBytes);
        QFETCH(QString, expected);
        const auto bytes = with_header(header.toStdString(), static_cast<size_t>(dataBytes));
        OXINFER_EXPECT_ERROR(parse_safetensors(span_of(bytes), "bad.safetensors"), expected.toStdString());
        OXINFER_EXPECT_ERROR(parse_safetensors(span_of(bytes), "bad.safetensors"), std::string("bad.safetensors: "));
    }

    void rejectsBadHeaderLengths() {
        auto bytes = safetensors_bytes({f32_tensor("w", {4}, {1, 2, 3, 4})});
        auto truncated = bytes;
        truncated.resize(6);
        OXINFER_EXPECT_ERROR(parse_safetensors(span_of(truncated), "t.safetensors"), "not a safetensors file: only 6 bytes");
        auto too_long = bytes;
        const uint64_t huge = bytes.size() + 100;
        std::memcpy(too_long.data(), &huge, 8);
        OXINFER_EXPECT_ERROR(parse_safetensors(span_of(too_long), "t.safetensors"), "is larger than the file");
        const uint64_t absurd = uint64_t{1} << 62;
        std::memcpy(too_long.data(), &absurd, 8);
        OXINFER_EXPECT_ERROR(parse_safetensors(span_of(too_long), "t.safetensors"), "exceeds the 100 MB limit");
        // Data cut short: the tensor no longer fits.
        auto cut = bytes;
        cut.resize(bytes.size() - 3);
        OXINFER_EXPECT_ERROR(parse_safetensors(span_of(cut), "t.safetensors"), "ends past the end of the file: truncated?");
    }
};

QTEST_APPLESS_MAIN(SafetensorsTest)
#include "test_safetensors.moc"
