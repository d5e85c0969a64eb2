// The GGUF reader on files written by the test writer: every metadata type, nested arrays,
// alignment, tensor shapes and types, and each kind of malformed file with its error.

#include "checkpoint_writers.h"
#include "formats/parsed_tensors.h"
#include "test_support.h"

#include <oxinfer/checkpoint.h>

#include <QTemporaryDir>
#include <QTest>

#include <cstring>

using namespace oxinfer;
using namespace oxinfer::test;
using json = nlohmann::json;

namespace {

std::span<const std::byte> span_of(const std::vector<std::byte>& bytes) { return {bytes.data(), bytes.size()}; }

template <class T>
std::vector<std::byte> encoded(T value) {
    std::vector<std::byte> out(sizeof(T));
    std::memcpy(out.data(), &value, sizeof(T));
    return out;
}

GgufWriter small_model() {
    GgufWriter writer;
    writer.add_string("general.architecture", "llama");
    writer.add_u32("llama.block_count", 1);
    writer.add_tensor(f32_tensor("token_embd.weight", {4, 8}, random_floats(32, 1)));
    writer.add_tensor(f32_tensor("output_norm.weight", {8}, random_floats(8, 2)));
    return writer;
}

}  // namespace

class GgufTest : public QObject {
    Q_OBJECT

private slots:
    void readsEveryMetadataType() {
        GgufWriter writer;
        writer.add_u8("k.u8", 200);
        writer.add_i8("k.i8", -100);
        writer.add_u16("k.u16", 60000);
        writer.add_i16("k.i16", -30000);
        writer.add_u32("k.u32", 4000000000u);
        writer.add_i32("k.i32", -2000000000);
        writer.add_u64("k.u64", 18000000000000000000ull);
        writer.add_i64("k.i64", -9000000000000000000ll);
        writer.add_f32("k.f32", 0.25f);
        writer.add_f64("k.f64", -1.0e300);
        writer.add_bool("k.bool", true);
        writer.add_string("k.string", "héllo ✓");
        writer.add_strings("k.strings", {"a", "", "c"});
        writer.add_i32s("k.i32s", {1, -2, 3});
        writer.add_f32s("k.f32s", {0.5f, -0.5f});
        writer.add_nested_strings("k.nested", {{"x", "y"}, {}, {"z"}});
        const auto bytes = writer.bytes();
        const ParsedTensors parsed = parse_gguf(span_of(bytes), "m.gguf");
        const json& m = parsed.metadata;
        QCOMPARE(m["k.u8"].get<int>(), 200);
        QCOMPARE(m["k.i8"].get<int>(), -100);
        QCOMPARE(m["k.u16"].get<int>(), 60000);
        QCOMPARE(m["k.i16"].get<int>(), -30000);
        QCOMPARE(m["k.u32"].get<uint32_t>(), 4000000000u);
        QCOMPARE(m["k.i32"].get<int32_t>(), -2000000000);
        QCOMPARE(m["k.u64"].get<uint64_t>(), 18000000000000000000ull);
        QCOMPARE(m["k.i64"].get<int64_t>(), -9000000000000000000ll);
        QCOMPARE(m["k.f32"].get<double>(), 0.25);
        QCOMPARE(m["k.f64"].get<double>(), -1.0e300);
        QCOMPARE(m["k.bool"].get<bool>(), true);
        QCOMPARE(m["k.string"].get<std::string>(), std::string("héllo ✓"));
        QVERIFY(m["k.strings"] == json({"a", "", "c"}));
        QVERIFY(m["k.i32s"] == json({1, -2, 3}));
        QVERIFY(m["k.f32s"] == json({0.5, -0.5}));
        QVERIFY(m["k.nested"] == json::parse(R"([["x","y"],[],["z"]])"));
        QCOMPARE(m["GGUF.version"].get<int>(), 3);
        const json& t = parsed.metadata_types;
        QCOMPARE(t["k.u8"].get<std::string>(), std::string("u8"));
        QCOMPARE(t["k.f64"].get<std::string>(), std::string("f64"));
        QCOMPARE(t["k.strings"].get<std::string>(), std::string("array[string]"));
        QCOMPARE(t["k.nested"].get<std::string>(), std::string("array[array[string]]"));
    }

    void readsTensorsWithAlignment_data() {
        QTest::addColumn<int>("alignment");
        QTest::addColumn<int>("version");
        QTest::newRow("default 32, v3") << 0 << 3;
        QTest::newRow("64, v3") << 64 << 3;
        QTest::newRow("4096, v2") << 4096 << 2;
    }

    void readsTensorsWithAlignment() {
        QFETCH(int, alignment);
        QFETCH(int, version);
        GgufWriter writer = small_model();
        if (alignment) writer.set_alignment(static_cast<uint32_t>(alignment));
        writer.set_version(static_cast<uint32_t>(version));
        // A Q8_0 tensor of 2 rows x 64 values: 4 blocks of 34 bytes.
        std::vector<std::byte> q8(4 * 34, std::byte{0});
        writer.add_tensor(raw_tensor("blk.0.attn_q.weight", DType::Q8_0, {2, 64}, q8));
        writer.add_tensor(f32_tensor("blk.0.three_d", {2, 3, 4}, random_floats(24, 3)));
        QTemporaryDir dir;
        const auto path = std::filesystem::path(dir.path().toStdString()) / "m.gguf";
        writer.write(path);
        const auto checkpoint = Checkpoint::open(path);
        QCOMPARE(checkpoint->format(), CheckpointFormat::Gguf);
        QCOMPARE(checkpoint->architecture(), std::string("llama"));
        QCOMPARE(checkpoint->tensors().size(), size_t{4});
        const size_t effective = alignment ? static_cast<size_t>(alignment) : 32;
        for (const TensorInfo& tensor : checkpoint->tensors()) {
            QCOMPARE((reinterpret_cast<uintptr_t>(tensor.data) - reinterpret_cast<uintptr_t>(checkpoint->tensors()[0].data)) % effective, uintptr_t{0});
        }
        QCOMPARE(checkpoint->get("token_embd.weight").shape, (std::vector<int64_t>{4, 8}));
        QCOMPARE(checkpoint->read_f32(checkpoint->get("token_embd.weight")), random_floats(32, 1));
        QCOMPARE(checkpoint->get("blk.0.attn_q.weight").dtype, DType::Q8_0);
        QCOMPARE(checkpoint->get("blk.0.attn_q.weight").nbytes, uint64_t{136});
        QCOMPARE(checkpoint->get("blk.0.three_d").shape, (std::vector<int64_t>{2, 3, 4}));
        QCOMPARE(checkpoint->read_f32(checkpoint->get("blk.0.three_d")), random_floats(24, 3));
    }

    void rejectsBadHeaders() {
        auto bytes = small_model().bytes();
        auto bad_magic = bytes;
        bad_magic[0] = std::byte{'X'};
        OXINFER_EXPECT_ERROR(parse_gguf(span_of(bad_magic), "m.gguf"), "m.gguf: not a GGUF file (bad magic)");
        auto v1 = bytes;
        v1[4] = std::byte{1};
        OXINFER_EXPECT_ERROR(parse_gguf(span_of(v1), "m.gguf"), "GGUF version 1 is not supported");
        auto v9 = bytes;
        v9[4] = std::byte{9};
        OXINFER_EXPECT_ERROR(parse_gguf(span_of(v9), "m.gguf"), "unsupported GGUF version 9");
        auto many_tensors = bytes;
        const uint64_t huge = uint64_t{1} << 60;
        std::memcpy(many_tensors.data() + 8, &huge, 8);
        OXINFER_EXPECT_ERROR(parse_gguf(span_of(many_tensors), "m.gguf"), "tensor count 1152921504606846976 cannot fit in the file");
        auto many_keys = bytes;
        std::memcpy(many_keys.data() + 16, &huge, 8);
        OXINFER_EXPECT_ERROR(parse_gguf(span_of(many_keys), "m.gguf"), "metadata count 1152921504606846976 cannot fit in the file");
        for (size_t cut : {size_t{3}, size_t{10}, size_t{30}, size_t{60}}) {
            auto truncated = bytes;
            truncated.resize(cut);
            const std::string message = error_message([&] { parse_gguf(span_of(truncated), "m.gguf"); });
            QVERIFY2(message.find("m.gguf: ") == 0 && (message.find("truncated") != std::string::npos || message.find("bad magic") != std::string::npos ||
                                                       message.find("past the end") != std::string::npos),
                     message.c_str());
        }
        auto data_cut = bytes;
        data_cut.resize(bytes.size() - 4);
        OXINFER_EXPECT_ERROR(parse_gguf(span_of(data_cut), "m.gguf"), "tensor 'output_norm.weight' data (32 bytes at offset");
    }

    void rejectsBadMetadata() {
        auto check = [](GgufWriter writer, const std::string& expected) {
            const auto bytes = writer.bytes();
            OXINFER_EXPECT_ERROR(parse_gguf(span_of(bytes), "m.gguf"), expected);
        };
        {
            GgufWriter w;
            w.add_raw("k", 13, encoded<uint32_t>(0));
            check(w, "unknown metadata value type 13");
        }
        {
            GgufWriter w;
            w.add_raw("k", GgufWriter::Bool, encoded<uint8_t>(7));
            check(w, "bool metadata value 7 is neither 0 nor 1");
        }
        {
            GgufWriter w;
            auto value = encoded<uint64_t>(1'000'000);  // a string longer than the file
            w.add_raw("k", GgufWriter::String, value);
            check(w, "string of 1000000 bytes at offset");
        }
        {
            GgufWriter w;
            auto value = encoded<uint32_t>(GgufWriter::U32);
            auto count = encoded<uint64_t>(uint64_t{1} << 40);
            value.insert(value.end(), count.begin(), count.end());
            w.add_raw("k", GgufWriter::Array, value);
            check(w, "metadata array of 1099511627776 u32 values cannot fit in the file");
        }
        {
            GgufWriter w;  // arrays nested 9 deep
            std::vector<std::byte> value;
            for (int i = 0; i < 9; ++i) {
                auto type = encoded<uint32_t>(GgufWriter::Array);
                auto count = encoded<uint64_t>(1);
                value.insert(value.end(), type.begin(), type.end());
                value.insert(value.end(), count.begin(), count.end());
            }
            auto type = encoded<uint32_t>(GgufWriter::U8);
            auto count = encoded<uint64_t>(0);
            value.insert(value.end(), type.begin(), type.end());
            value.insert(value.end(), count.begin(), count.end());
            w.add_raw("k", GgufWriter::Array, value);
            check(w, "metadata arrays nested deeper than 8");
        }
        {
            GgufWriter w;
            w.add_u32("k", 1);
            w.add_u32("k", 2);
            check(w, "duplicate metadata key 'k'");
        }
        {
            GgufWriter w;
            w.add_u32("general.alignment", 48);
            check(w, "general.alignment 48 is not a power of two");
        }
        {
            GgufWriter w;
            w.add_u64("general.alignment", 32);
            check(w, "general.alignment is not a u32");
        }
    }

    void rejectsBadTensorInfos() {
        auto check = [](const TestTensor& tensor, const std::string& expected) {
            GgufWriter w;
            w.add_tensor(tensor);
            const auto bytes = w.bytes();
            OXINFER_EXPECT_ERROR(parse_gguf(span_of(bytes), "m.gguf"), expected);
        };
        check(raw_tensor("five_d", DType::F32, {1, 1, 1, 1, 1}, std::vector<std::byte>(4)), "tensor 'five_d' has 5 dimensions (at most 4)");
        check(raw_tensor("ragged", DType::Q4_0, {40}, std::vector<std::byte>(64)), "tensor 'ragged' has 40 values, not a whole number of q4_0 blocks");
        check(raw_tensor("rows", DType::Q4_0, {2, 48}, std::vector<std::byte>(54)), "tensor 'rows' has rows of 48 values, not a multiple of the q4_0 block size 32");
        check(raw_tensor("overflow", DType::F32, {int64_t{1} << 40, int64_t{1} << 40}, std::vector<std::byte>(4)), "tensor 'overflow' has a shape whose element count overflows");
        check(raw_tensor("too_big", DType::F32, {1024, 1024}, std::vector<std::byte>(64)), "tensor 'too_big' data (4194304 bytes at offset");

        // An unknown ggml type id, and an offset that is not aligned: patch the tensor info.
        GgufWriter w;
        w.add_tensor(raw_tensor("t", DType::F32, {8}, std::vector<std::byte>(32)));
        auto bytes = w.bytes();
        // Header: 24 bytes; name: 8 + 1; dims: 4 + 8; type at 45; offset at 49.
        auto bad_type = bytes;
        const uint32_t unknown = 77;
        std::memcpy(bad_type.data() + 45, &unknown, 4);
        OXINFER_EXPECT_ERROR(parse_gguf(span_of(bad_type), "m.gguf"), "tensor 't' has unsupported tensor type 77");
        auto misaligned = bytes;
        const uint64_t offset = 4;
        std::memcpy(misaligned.data() + 49, &offset, 8);
        OXINFER_EXPECT_ERROR(parse_gguf(span_of(misaligned), "m.gguf"), "tensor 't' data offset 4 is not a multiple of the alignment 32");
        auto far = bytes;
        const uint64_t far_offset = uint64_t{1} << 62;
        std::memcpy(far.data() + 49, &far_offset, 8);
        OXINFER_EXPECT_ERROR(parse_gguf(span_of(far), "m.gguf"), "ends past the end of the file");
    }
};

QTEST_APPLESS_MAIN(GgufTest)
#include "test_gguf.moc"
