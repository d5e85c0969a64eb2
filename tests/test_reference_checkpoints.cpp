// The safetensors and GGUF readers checked against files written independently of the C++ code:
// tests/reference/reference_checkpoints.py writes them from the published format descriptions
// with numpy, and lists in expected.json every metadata value (with its stored GGUF type), every
// tensor's dtype and shape, and every value as the float32 numpy decodes it to. Values must match
// bit for bit (NaN matches any NaN).

#include <oxinfer/checkpoint.h>
#include <oxinfer/dtype.h>
#include <oxinfer/error.h>

#include <nlohmann/json.hpp>

#include <QObject>
#include <QTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kDir = fs::path(OXINFER_REFERENCE_DIR) / "checkpoints";

json load_expected() {
    std::ifstream in(kDir / "expected.json", std::ios::binary);
    if (!in) return nullptr;
    return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// A golden value: a JSON number (a float32 value, exact as a double) or "nan", "inf", "-inf".
float expected_float(const json& value) {
    if (value.is_string()) {
        const auto text = value.get<std::string>();
        if (text == "nan") return std::numeric_limits<float>::quiet_NaN();
        if (text == "inf") return std::numeric_limits<float>::infinity();
        if (text == "-inf") return -std::numeric_limits<float>::infinity();
        return 0.0f;  // not a golden value; the comparison below reports it
    }
    return static_cast<float>(value.get<double>());
}

bool same_float(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

std::string float_text(float value) {
    char text[64];
    std::snprintf(text, sizeof text, "%.9g (0x%08x)", static_cast<double>(value), std::bit_cast<uint32_t>(value));
    return text;
}

// "" when `actual` is the metadata value `expected` of stored type `type`, else what differs.
std::string compare_metadata(const json& actual, const json& expected, const std::string& type) {
    const std::string mismatch = "expected " + expected.dump() + " (" + type + "), got " + actual.dump();
    if (type.rfind("array[", 0) == 0) {
        const std::string element = type.substr(6, type.size() - 7);
        if (!actual.is_array() || actual.size() != expected.size()) return mismatch;
        for (size_t i = 0; i < expected.size(); ++i) {
            const std::string inner = compare_metadata(actual[i], expected[i], element);
            if (!inner.empty()) return "element " + std::to_string(i) + ": " + inner;
        }
        return {};
    }
    if (type == "string") return actual.is_string() && actual == expected ? std::string() : mismatch;
    if (type == "bool") return actual.is_boolean() && actual == expected ? std::string() : mismatch;
    if (type == "f32" || type == "f64") {
        if (!actual.is_number_float()) return mismatch;
        const auto a = std::bit_cast<uint64_t>(actual.get<double>());
        const auto e = std::bit_cast<uint64_t>(expected.get<double>());
        return a == e ? std::string() : mismatch;
    }
    if (type == "u8" || type == "u16" || type == "u32" || type == "u64") {
        if (!actual.is_number_integer() || (actual.is_number_integer() && !actual.is_number_unsigned() && actual.get<int64_t>() < 0))
            return mismatch;
        return actual.get<uint64_t>() == expected.get<uint64_t>() ? std::string() : mismatch;
    }
    if (type == "i8" || type == "i16" || type == "i32" || type == "i64") {
        if (!actual.is_number_integer()) return mismatch;
        if (actual.is_number_unsigned() && actual.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            return mismatch;
        return actual.get<int64_t>() == expected.get<int64_t>() ? std::string() : mismatch;
    }
    return "unknown golden type " + type;
}

}  // namespace

class TestReferenceCheckpoints : public QObject {
    Q_OBJECT

private:
    json expected_;

    std::unique_ptr<oxinfer::Checkpoint> open(const std::string& file) {
        try {
            return oxinfer::Checkpoint::open(kDir / file);
        } catch (const oxinfer::Error& e) {
            qWarning("%s", e.what());
            return nullptr;
        }
    }

    // dtype, shape and every value of each tensor the golden lists, and no other tensors.
    void check_tensors(const oxinfer::Checkpoint& checkpoint, const json& golden) {
        const json& tensors = golden["tensors"];
        QCOMPARE(checkpoint.tensors().size(), tensors.size());
        for (const json& entry : tensors) {
            const auto name = entry["name"].get<std::string>();
            const oxinfer::TensorInfo* tensor = checkpoint.find(name);
            QVERIFY2(tensor, qPrintable(QString::fromStdString("no tensor '" + name + "'")));
            QCOMPARE(std::string(oxinfer::dtype_name(tensor->dtype)), entry["dtype"].get<std::string>());
            QCOMPARE(tensor->shape, entry["shape"].get<std::vector<int64_t>>());
            std::vector<float> values;
            try {
                values = checkpoint.read_f32(*tensor);
            } catch (const oxinfer::Error& e) {
                QFAIL(qPrintable(QString::fromStdString("read_f32 of '" + name + "' threw: " + e.what())));
            }
            const json& golden_values = entry["values"];
            QCOMPARE(values.size(), golden_values.size());
            std::string mismatches;
            int count = 0;
            for (size_t i = 0; i < values.size(); ++i) {
                const float want = expected_float(golden_values[i]);
                if (same_float(values[i], want)) continue;
                if (++count <= 8)
                    mismatches += "\n  " + name + "[" + std::to_string(i) + "]: expected " + float_text(want) + ", got " + float_text(values[i]);
            }
            QVERIFY2(count == 0, qPrintable(QString::fromStdString(std::to_string(count) + " values differ:" + mismatches)));
        }
    }

private slots:
    void initTestCase() {
        expected_ = load_expected();
        QVERIFY2(expected_.is_object(), "cannot read tests/reference/checkpoints/expected.json: run tests/reference/reference_checkpoints.py");
        QVERIFY(expected_.contains("reference.safetensors"));
        QVERIFY(expected_.contains("reference.gguf"));
    }

    void safetensors() {
        const json& golden = expected_["reference.safetensors"];
        const auto checkpoint = open("reference.safetensors");
        QVERIFY(checkpoint);
        QCOMPARE(std::string(oxinfer::format_name(checkpoint->format())), golden["format"].get<std::string>());
        QCOMPARE(checkpoint->architecture(), golden["architecture"].get<std::string>());
        // A single file's __metadata__ sits under metadata()["safetensors"][file name].
        const json expected_metadata = {{"safetensors", {{"reference.safetensors", golden["metadata"]}}}};
        QVERIFY2(checkpoint->metadata() == expected_metadata,
                 qPrintable(QString::fromStdString("metadata: " + checkpoint->metadata().dump())));
        QVERIFY(checkpoint->metadata_types().empty());
        QCOMPARE(checkpoint->files().size(), size_t{1});
        check_tensors(*checkpoint, golden);
    }

    void gguf() {
        const json& golden = expected_["reference.gguf"];
        const auto checkpoint = open("reference.gguf");
        QVERIFY(checkpoint);
        QCOMPARE(std::string(oxinfer::format_name(checkpoint->format())), golden["format"].get<std::string>());
        QCOMPARE(checkpoint->architecture(), golden["architecture"].get<std::string>());

        const json& metadata = checkpoint->metadata();
        const json& types = checkpoint->metadata_types();
        std::set<std::string> keys;
        for (const json& entry : golden["metadata"]) {
            const auto key = entry["key"].get<std::string>();
            const auto type = entry["type"].get<std::string>();
            keys.insert(key);
            QVERIFY2(metadata.contains(key), qPrintable(QString::fromStdString("no metadata key '" + key + "'")));
            QVERIFY2(types.contains(key) && types[key] == type,
                     qPrintable(QString::fromStdString(key + ": stored type expected " + type + ", got " +
                                                       (types.contains(key) ? types[key].dump() : std::string("none")))));
            const std::string mismatch = compare_metadata(metadata[key], entry["value"], type);
            QVERIFY2(mismatch.empty(), qPrintable(QString::fromStdString(key + ": " + mismatch)));
        }
        // Besides the file's keys the reader adds only the version it read.
        QCOMPARE(compare_metadata(metadata["GGUF.version"], 3, "u32"), std::string());
        QCOMPARE(types["GGUF.version"].get<std::string>(), std::string("u32"));
        keys.insert("GGUF.version");
        for (const auto& [key, value] : metadata.items())
            QVERIFY2(keys.count(key), qPrintable(QString::fromStdString("unexpected metadata key '" + key + "'")));
        for (const auto& [key, value] : types.items())
            QVERIFY2(keys.count(key), qPrintable(QString::fromStdString("unexpected metadata type key '" + key + "'")));
        QCOMPARE(metadata.size(), keys.size());

        check_tensors(*checkpoint, golden);
        if (QTest::currentTestFailed()) return;
        // Tensor data starts at multiples of general.alignment (64) from the start of the file.
        const auto alignment = metadata["general.alignment"].get<uint64_t>();
        const auto* first = checkpoint->tensors().front().data;
        for (const auto& tensor : checkpoint->tensors()) {
            QVERIFY(tensor.data >= first);
            QCOMPARE(static_cast<uint64_t>(tensor.data - first) % alignment, uint64_t{0});
        }
    }
};

QTEST_APPLESS_MAIN(TestReferenceCheckpoints)
#include "test_reference_checkpoints.moc"
