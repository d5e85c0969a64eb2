// PyTorch zip checkpoints: real torch.save files (tests/reference/torch_checkpoints.py wrote them
// and their expected values) read through parse_torch_zip and Checkpoint::open, files written by
// tests/helpers/torch_zip_writer for the forms torch 1.13 does not write, and bad inputs, each
// checked for the message it gives. Every byte of a real file is also truncated and flipped to
// check that damage only ever gives an oxinfer::Error.

#include <oxinfer/checkpoint.h>
#include <oxinfer/dtype.h>
#include <oxinfer/error.h>
#include <oxinfer/mapped_file.h>

#include "formats/parsed_tensors.h"
#include "formats/zip_archive.h"
#include "test_support.h"
#include "torch_zip_writer.h"

#include <QDir>
#include <QFile>
#include <QObject>
#include <QTemporaryDir>
#include <QTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

using oxinfer::DType;
using oxinfer::ParsedTensors;
using oxinfer::TensorInfo;
using oxinfer::test::PickleWriter;
using oxinfer::test::TorchCheckpointWriter;
using oxinfer::test::ZipFile;
using oxinfer::test::ZipOptions;

Q_DECLARE_METATYPE(std::function<std::string()>)

namespace {

const std::string kReferenceDir = OXINFER_REFERENCE_DIR "/torch/";

std::span<const std::byte> as_bytes(const std::string& text) { return {reinterpret_cast<const std::byte*>(text.data()), text.size()}; }

ParsedTensors parse(const std::string& bytes, const std::string& subject = "test.pt") {
    // An exact-size heap copy, so that the sanitizers see any read past the end.
    std::vector<std::byte> copy(as_bytes(bytes).begin(), as_bytes(bytes).end());
    ParsedTensors parsed = oxinfer::parse_torch_zip(copy, subject);
    for (TensorInfo& tensor : parsed.tensors) tensor.data = nullptr;  // the copy dies here
    return parsed;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

// Row-major gather of any plain-typed view, independent of Checkpoint::read_f32.
std::vector<float> gather(const TensorInfo& tensor) {
    const auto element_bytes = static_cast<uint64_t>(oxinfer::dtype_traits(tensor.dtype).block_bytes);
    const auto count = static_cast<size_t>(tensor.elements());
    const size_t rank = tensor.shape.size();
    std::vector<int64_t> strides(rank, 1);
    for (size_t i = rank; i-- > 0;)
        strides[i] = tensor.strides.empty() ? (i + 1 < rank ? strides[i + 1] * tensor.shape[i + 1] : 1) : tensor.strides[i];
    std::vector<float> out(count);
    std::vector<int64_t> position(rank, 0);
    for (size_t i = 0; i < count; ++i) {
        uint64_t offset = 0;
        for (size_t d = 0; d < rank; ++d) offset += static_cast<uint64_t>(position[d] * strides[d]);
        if ((offset + 1) * element_bytes > tensor.nbytes) {
            qWarning("element %zu of '%s' lies outside its nbytes", i, tensor.name.c_str());
            return {};
        }
        oxinfer::convert_to_f32(tensor.dtype, tensor.data + offset * element_bytes, &out[i], 1);
        for (size_t d = rank; d-- > 0;) {
            if (++position[d] < tensor.shape[d]) break;
            position[d] = 0;
        }
    }
    return out;
}

float expected_value(const nlohmann::json& value) {
    if (value.is_string()) {
        const std::string text = value.get<std::string>();
        if (text == "nan") return std::nanf("");
        return text == "inf" ? INFINITY : -INFINITY;
    }
    return static_cast<float>(value.get<double>());  // the reader rounds f64/i64 to nearest too
}

bool same_float(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);  // -0.0 and 0.0 differ
}

// Compares a parsed tensor and its values with one JSON expectation; returns "" when equal.
std::string compare(const TensorInfo& tensor, const std::vector<float>& values, const nlohmann::json& expected) {
    const std::string name = expected["name"];
    if (std::string(oxinfer::dtype_name(tensor.dtype)) != expected["dtype"].get<std::string>())
        return name + ": dtype " + std::string(oxinfer::dtype_name(tensor.dtype)) + ", expected " + expected["dtype"].get<std::string>();
    if (tensor.shape != expected["shape"].get<std::vector<int64_t>>()) return name + ": shape differs";
    if (tensor.contiguous() != expected["contiguous"].get<bool>()) return name + ": contiguity differs";
    if (!tensor.contiguous() && tensor.strides != expected["stride"].get<std::vector<int64_t>>()) return name + ": strides differ";
    const auto& want = expected["values"];
    if (values.size() != want.size()) return name + ": " + std::to_string(values.size()) + " values, expected " + std::to_string(want.size());
    for (size_t i = 0; i < values.size(); ++i)
        if (!same_float(values[i], expected_value(want[i])))
            return name + ": value " + std::to_string(i) + " is " + std::to_string(values[i]) + ", expected " + want[i].dump();
    return {};
}

const TensorInfo* find(const std::vector<TensorInfo>& tensors, const std::string& name) {
    for (const TensorInfo& tensor : tensors)
        if (tensor.name == name) return &tensor;
    return nullptr;
}

// The first byte of the storage a tensor views.
const std::byte* storage_start(const TensorInfo& tensor, const nlohmann::json& expected) {
    return tensor.data - expected["storage_offset"].get<int64_t>() * oxinfer::dtype_traits(tensor.dtype).block_bytes;
}

std::vector<float> f32_values(const TensorInfo& tensor) { return gather(tensor); }

void patch_u32(std::string& bytes, size_t pos, uint32_t value) { std::memcpy(bytes.data() + pos, &value, 4); }

// A simple valid checkpoint for the bad-input cases to bend.
TorchCheckpointWriter small_checkpoint() {
    TorchCheckpointWriter writer;
    writer.add_f32("weight", {2, 2}, {1.0f, 2.0f, 3.0f, 4.0f});
    writer.add_f32("bias", {2}, {0.5f, -0.5f});
    return writer;
}

std::string with_pickle(const std::string& pickle) {
    auto entries = small_checkpoint().entries();
    entries[0].data = pickle;
    return oxinfer::test::write_zip(entries);
}

}  // namespace

class TestTorchCheckpoint : public QObject {
    Q_OBJECT

private slots:
    void reference_files_data();
    void reference_files();
    void checkpoint_open_data() { reference_files_data(); }
    void checkpoint_open();
    void writer_round_trip_data();
    void writer_round_trip();
    void pickle_opcodes();
    void rebuild_tensor_v3();
    void opaque_globals_are_skipped();
    void bad_inputs_data();
    void bad_inputs();
    void legacy_through_checkpoint_open();
    void damaged_files_only_throw_errors();
};

void TestTorchCheckpoint::reference_files_data() {
    QTest::addColumn<QString>("name");
    const QDir dir(QString::fromStdString(kReferenceDir));
    const QStringList files = dir.entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
    QVERIFY2(files.size() >= 8, "tests/reference/torch/*.json missing: run tests/reference/torch_checkpoints.py");
    for (const QString& file : files) {
        const QString name = file.chopped(5);
        QTest::newRow(qPrintable(name)) << name;
    }
}

void TestTorchCheckpoint::reference_files() {
    QFETCH(QString, name);
    const nlohmann::json expected = read_json(kReferenceDir + name.toStdString() + ".json");
    const oxinfer::MappedFile file(kReferenceDir + expected["file"].get<std::string>());
    const ParsedTensors parsed = oxinfer::parse_torch_zip(file.bytes(), file.path().string());

    const auto& want = expected["tensors"];
    QCOMPARE(parsed.tensors.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        const TensorInfo& tensor = parsed.tensors[i];
        QCOMPARE(tensor.name, want[i]["name"].get<std::string>());  // state dict order is kept
        // Every view lies inside the file.
        QVERIFY(tensor.data >= file.data() && tensor.data + tensor.nbytes <= file.data() + file.size());
        const std::string problem = compare(tensor, f32_values(tensor), want[i]);
        QVERIFY2(problem.empty(), problem.c_str());
    }
    for (const auto& tie : expected["ties"]) {
        const std::string a = tie[0], b = tie[1];
        const TensorInfo* first = find(parsed.tensors, a);
        const TensorInfo* second = find(parsed.tensors, b);
        QVERIFY(first && second);
        const nlohmann::json* want_a = nullptr;
        const nlohmann::json* want_b = nullptr;
        for (const auto& t : want) {
            if (t["name"] == a) want_a = &t;
            if (t["name"] == b) want_b = &t;
        }
        QVERIFY2(storage_start(*first, *want_a) == storage_start(*second, *want_b), (a + " and " + b + " should share a storage").c_str());
    }
    QCOMPARE(parsed.metadata["archive"].get<std::string>(), name.toStdString());
    QCOMPARE(parsed.metadata["version"].get<std::string>(), std::string("3"));
}

void TestTorchCheckpoint::checkpoint_open() {
    QFETCH(QString, name);
    const nlohmann::json expected = read_json(kReferenceDir + name.toStdString() + ".json");
    const std::string path = kReferenceDir + expected["file"].get<std::string>();
    const auto checkpoint = oxinfer::Checkpoint::open(path);
    QCOMPARE(checkpoint->format(), oxinfer::CheckpointFormat::Torch);
    QCOMPARE(checkpoint->tensors().size(), expected["tensors"].size());
    for (const auto& want : expected["tensors"]) {
        const TensorInfo& tensor = checkpoint->get(want["name"].get<std::string>());
        const std::vector<float> values = checkpoint->read_f32(tensor);
        const std::string problem = compare(tensor, values, want);
        QVERIFY2(problem.empty(), problem.c_str());
    }
}

void TestTorchCheckpoint::writer_round_trip_data() {
    QTest::addColumn<bool>("zip64");
    QTest::addColumn<bool>("zip64_extra");
    QTest::addColumn<uint32_t>("alignment");
    QTest::addColumn<QString>("nest_under");
    QTest::addColumn<bool>("parameter");
    QTest::newRow("zip64 records, aligned") << true << false << 64u << QString() << false;
    QTest::newRow("plain zip, unaligned") << false << false << 0u << QString() << false;
    QTest::newRow("zip64 extra fields") << true << true << 64u << QString() << false;
    QTest::newRow("nested under state_dict") << true << false << 64u << QStringLiteral("state_dict") << false;
    QTest::newRow("nn.Parameter") << true << false << 64u << QString() << true;
}

void TestTorchCheckpoint::writer_round_trip() {
    QFETCH(bool, zip64);
    QFETCH(bool, zip64_extra);
    QFETCH(uint32_t, alignment);
    QFETCH(QString, nest_under);
    QFETCH(bool, parameter);

    TorchCheckpointWriter writer;
    writer.nest_under = nest_under.toStdString();
    writer.add_f32("w", {2, 3}, {1, 2, 3, 4, 5, 6}).parameter = parameter;
    writer.add_tensor("w_t", "0", {3, 2}, {1, 3});           // a transposed view of the same storage
    writer.add_tensor("w_row", "0", {3}, {}, 3);              // the second row, storage offset 3
    writer.add_storage("ids", "LongStorage", std::string("\x05\0\0\0\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff", 16));
    writer.add_tensor("ids", "ids", {2});
    writer.add_storage("half", "HalfStorage", std::string("\x00\x3c\x00\xc0", 4));  // 1.0, -2.0
    writer.add_tensor("half", "half", {2, 1});
    const std::string bytes = writer.build({zip64, zip64_extra, alignment});

    std::vector<std::byte> copy(as_bytes(bytes).begin(), as_bytes(bytes).end());
    const ParsedTensors result = oxinfer::parse_torch_zip(copy, "writer.pt");
    const std::string prefix = nest_under.isEmpty() ? "" : nest_under.toStdString() + ".";
    QCOMPARE(result.tensors.size(), size_t{5});
    const std::vector<std::pair<std::string, std::vector<float>>> expected = {
        {prefix + "w", {1, 2, 3, 4, 5, 6}}, {prefix + "w_t", {1, 4, 2, 5, 3, 6}}, {prefix + "w_row", {4, 5, 6}},
        {prefix + "ids", {5, -1}},           {prefix + "half", {1, -2}},
    };
    for (size_t i = 0; i < expected.size(); ++i) {
        QCOMPARE(result.tensors[i].name, expected[i].first);
        QCOMPARE(gather(result.tensors[i]), expected[i].second);
    }
    QVERIFY(result.tensors[0].contiguous());
    QCOMPARE(result.tensors[1].strides, (std::vector<int64_t>{1, 3}));
    QVERIFY(result.tensors[2].contiguous());
    QVERIFY(result.tensors[4].contiguous());  // [2, 1] with stride [1, 1]: size-1 strides do not matter
    QCOMPARE(result.tensors[3].dtype, DType::I64);
    QCOMPARE(result.tensors[4].dtype, DType::F16);
    QCOMPARE(result.metadata["zip64"].get<bool>(), zip64);
    QCOMPARE(result.metadata["storages"].get<int>(), 3);
    if (alignment == 64)  // storages start 64-byte aligned, as torch writes them
        for (size_t i : {0, 3, 4}) QCOMPARE((result.tensors[i].data - copy.data()) % 64, std::ptrdiff_t{0});
}

// Protocol 4 opcodes (FRAME, SHORT_BINUNICODE, MEMOIZE, STACK_GLOBAL, LONG1, BINFLOAT, lists,
// tuples, EMPTY_SET...) around one tensor.
void TestTorchCheckpoint::pickle_opcodes() {
    PickleWriter p;
    p.proto(4);
    p.op(0x95).raw(std::string("\x10\0\0\0\0\0\0\0", 8));  // FRAME (a hint only)
    p.op('}').op(0x94);                                      // EMPTY_DICT, MEMOIZE -> 0
    p.mark();
    // "count": LONG1 2**40, "ratio": BINFLOAT, "flags": a set, "names": list of short strings
    p.op(0x8c).raw(std::string("\x05", 1) + "count").integer(int64_t{1} << 40);
    p.op(0x8c).raw(std::string("\x05", 1) + "ratio").real(0.25);
    p.op(0x8c).raw(std::string("\x05", 1) + "flags").op(0x8f).op(0x94).mark().integer(1).integer(2).op(0x90);
    p.op(0x8c).raw(std::string("\x05", 1) + "names").empty_list().mark().str("a").str("b").appends();
    p.op(0x8c).raw(std::string("\x04", 1) + "blob").op('C').raw(std::string("\x03", 1) + "xyz");
    p.op(0x8c).raw(std::string("\x01", 1) + "t");
    // STACK_GLOBAL torch._utils._rebuild_tensor_v2
    p.op(0x8c).raw(std::string("\x0c", 1) + "torch._utils").op(0x8c).raw(std::string("\x12", 1) + "_rebuild_tensor_v2").op(0x93);
    p.mark();
    p.mark().str("storage").op(0x8c).raw(std::string("\x05", 1) + "torch").op(0x8c).raw(std::string("\x0c", 1) + "FloatStorage").op(0x93);
    p.str("0").str("cuda:0").integer(4).tuple().op(0x94).binpersid();
    p.integer(1).ints({3}).ints({1}).boolean(false);
    p.op(0x8c).raw(std::string("\x0b", 1) + "collections").op(0x8c).raw(std::string("\x0b", 1) + "OrderedDict").op(0x93).empty_tuple().reduce();
    p.none();  // metadata argument
    p.tuple().reduce();
    p.op(0x8c).raw(std::string("\x06", 1) + "nested").empty_list().mark();
    p.empty_dict().str("x").get(0).op('0');  // POP: a value pushed and dropped
    p.get(2).setitem();                       // {"x": memo 2, the tensor's persistent id}: not a tensor, skipped
    p.appends();
    p.setitems().stop();

    TorchCheckpointWriter writer;
    writer.add_f32("unused", {4}, {10, 20, 30, 40});
    auto entries = writer.entries();
    entries[0].data = p.bytes();
    const std::string bytes = oxinfer::test::write_zip(entries);
    std::vector<std::byte> copy(as_bytes(bytes).begin(), as_bytes(bytes).end());
    const ParsedTensors parsed = oxinfer::parse_torch_zip(copy, "opcodes.pt");
    QCOMPARE(parsed.tensors.size(), size_t{1});
    QCOMPARE(parsed.tensors[0].name, std::string("t"));
    QCOMPARE(gather(parsed.tensors[0]), (std::vector<float>{20, 30, 40}));
    QCOMPARE(parsed.metadata["pickle_protocol"].get<int>(), 4);
}

// torch 2 writes dtypes without a legacy storage class as an UntypedStorage plus a dtype global.
void TestTorchCheckpoint::rebuild_tensor_v3() {
    PickleWriter p;
    p.proto(2).empty_dict().mark();
    p.str("f8").global("torch._utils", "_rebuild_tensor_v3").mark();
    p.mark().str("storage").global("torch.storage", "UntypedStorage").str("0").str("cpu").integer(4).tuple().binpersid();
    p.integer(1).ints({3}).ints({1}).boolean(false).global("collections", "OrderedDict").empty_tuple().reduce();
    p.global("torch", "float8_e4m3fn").tuple().reduce();
    p.str("u16").global("torch._utils", "_rebuild_tensor_v3").mark();
    p.mark().str("storage").global("torch", "UntypedStorage").str("0").str("cpu").integer(4).tuple().binpersid();
    p.integer(0).ints({2}).ints({1}).boolean(false).global("collections", "OrderedDict").empty_tuple().reduce();
    p.global("torch", "uint16").tuple().reduce();
    p.str("c32").global("torch._utils", "_rebuild_tensor_v3").mark();
    p.mark().str("storage").global("torch", "UntypedStorage").str("0").str("cpu").integer(4).tuple().binpersid();
    p.integer(0).ints({1}).ints({1}).boolean(false).global("collections", "OrderedDict").empty_tuple().reduce();
    p.global("torch", "complex32").tuple().reduce();
    p.setitems().stop();

    TorchCheckpointWriter writer;
    writer.add_storage("0", "ByteStorage", std::string("\x38\x40\xc0\x00", 4));  // as e4m3: 1.0, 2.0, -2.0, 0.0
    auto entries = writer.entries();
    entries[0].data = p.bytes();
    const std::string bytes = oxinfer::test::write_zip(entries);
    // The complex32 tensor is refused, naming it.
    OXINFER_EXPECT_ERROR(parse(bytes), std::string("tensor 'c32' is built by torch._utils._rebuild_tensor_v3 with dtype torch.complex32"));

    // Without it, the others read.
    PickleWriter q;
    const std::string full = p.bytes();
    const size_t cut = full.find(std::string("X\x03\0\0\0c32", 8));
    QVERIFY(cut != std::string::npos);
    q.raw(full.substr(0, cut)).setitems().stop();
    entries[0].data = q.bytes();
    const std::string good = oxinfer::test::write_zip(entries);
    std::vector<std::byte> copy(as_bytes(good).begin(), as_bytes(good).end());
    const ParsedTensors parsed = oxinfer::parse_torch_zip(copy, "v3.pt");
    QCOMPARE(parsed.tensors.size(), size_t{2});
    QCOMPARE(parsed.tensors[0].dtype, DType::F8_E4M3);
    QCOMPARE(gather(parsed.tensors[0]), (std::vector<float>{2.0f, -2.0f, 0.0f}));
    QCOMPARE(parsed.tensors[1].dtype, DType::U16);
    QCOMPARE(gather(parsed.tensors[1]), (std::vector<float>{float(0x4038), float(0x00c0)}));
}

// Unknown globals are names, never code: a pickled custom object (REDUCE, NEWOBJ, BUILD) next to
// the tensors is kept opaque and skipped.
void TestTorchCheckpoint::opaque_globals_are_skipped() {
    PickleWriter p;
    p.proto(2).empty_dict().mark();
    p.str("model").global("__main__", "Net").empty_tuple().op(0x81).empty_dict().str("x").integer(1).setitem().build();
    p.str("danger").global("os", "system").mark().str("rm -rf /").tuple().reduce();
    p.str("codecs").global("_codecs", "encode").mark().str("abc").str("latin1").tuple().reduce();
    p.str("weight").global("torch._utils", "_rebuild_tensor_v2").mark();
    p.mark().str("storage").global("torch", "FloatStorage").str("0").str("cpu").integer(4).tuple().binpersid();
    p.integer(0).ints({4}).ints({1}).boolean(false).global("collections", "OrderedDict").empty_tuple().reduce();
    p.tuple().reduce();
    p.setitems().stop();
    const std::string bytes = with_pickle(p.bytes());
    std::vector<std::byte> copy(as_bytes(bytes).begin(), as_bytes(bytes).end());
    const ParsedTensors parsed = oxinfer::parse_torch_zip(copy, "opaque.pt");
    QCOMPARE(parsed.tensors.size(), size_t{1});
    QCOMPARE(parsed.tensors[0].name, std::string("weight"));
    QCOMPARE(gather(parsed.tensors[0]), (std::vector<float>{1, 2, 3, 4}));
}

void TestTorchCheckpoint::bad_inputs_data() {
    QTest::addColumn<std::function<std::string()>>("make");
    QTest::addColumn<QString>("message");

    QTest::newRow("not a zip") << std::function<std::string()>([] { return std::string("this is not a checkpoint at all, just some text"); })
                               << "not a zip archive";
    QTest::newRow("empty file") << std::function<std::string()>([] { return std::string(); }) << "not a zip archive";
    QTest::newRow("truncated archive") << std::function<std::string()>([] {
        const std::string bytes = read_file(kReferenceDir + "tied.pt");
        return bytes.substr(0, bytes.size() / 2);
    }) << "truncated zip archive";
    QTest::newRow("central directory past the end") << std::function<std::string()>([] {
        std::string bytes = small_checkpoint().build({false, false, 64});
        patch_u32(bytes, bytes.size() - 22 + 16, 0x7fff0000);
        return bytes;
    }) << "central directory (offset 2147418112";
    QTest::newRow("zip64 central directory past the end") << std::function<std::string()>([] {
        std::string bytes = small_checkpoint().build();
        // The ZIP64 end record's central directory offset: 22 (end) + 20 (locator) + 56 bytes from the end.
        const uint64_t huge = uint64_t{1} << 60;
        std::memcpy(bytes.data() + bytes.size() - 22 - 20 - 56 + 48, &huge, 8);
        return bytes;
    }) << "lies past the end of the file";
    QTest::newRow("entry count too large") << std::function<std::string()>([] {
        std::string bytes = small_checkpoint().build({false, false, 64});
        const uint16_t count = 0xfffe;
        std::memcpy(bytes.data() + bytes.size() - 22 + 10, &count, 2);
        std::memcpy(bytes.data() + bytes.size() - 22 + 8, &count, 2);
        return bytes;
    }) << "claims 65534 entries";
    QTest::newRow("compressed entry") << std::function<std::string()>([] {
        auto entries = small_checkpoint().entries();
        entries[2].method = 8;
        return oxinfer::test::write_zip(entries);
    }) << "zip entry 'archive/data/0' is compressed (deflate)";
    QTest::newRow("encrypted entry") << std::function<std::string()>([] {
        auto entries = small_checkpoint().entries();
        entries[0].flags |= 1;
        return oxinfer::test::write_zip(entries);
    }) << "is encrypted";
    QTest::newRow("data.pkl crc mismatch") << std::function<std::string()>([] {
        std::string bytes = small_checkpoint().build();
        const size_t pos = bytes.find("_rebuild_tensor_v2");
        bytes[pos] = 'X';
        return bytes;
    }) << "fails its CRC-32 check";
    QTest::newRow("no data.pkl") << std::function<std::string()>([] {
        auto entries = small_checkpoint().entries();
        entries.erase(entries.begin());
        return oxinfer::test::write_zip(entries);
    }) << "no <folder>/data.pkl";
    QTest::newRow("big-endian byteorder") << std::function<std::string()>([] {
        TorchCheckpointWriter writer = small_checkpoint();
        writer.byteorder = "big";
        return writer.build();
    }) << "byte order is 'big'";
    QTest::newRow("unexpected opcode") << std::function<std::string()>([] {
        PickleWriter p;
        p.proto(2).empty_dict().raw("i__main__\nNet\n").stop();  // INST: protocol 0, runs code in Python
        return with_pickle(p.bytes());
    }) << "unsupported pickle opcode 0x69 at offset 3 of archive/data.pkl";
    QTest::newRow("pickle protocol 6") << std::function<std::string()>([] {
        PickleWriter p;
        p.proto(6).empty_dict().stop();
        return with_pickle(p.bytes());
    }) << "pickle protocol 6 is not supported";
    QTest::newRow("stack underflow") << std::function<std::string()>([] {
        PickleWriter p;
        p.proto(2).empty_tuple().reduce().stop();
        return with_pickle(p.bytes());
    }) << "pickle stack underflow";
    QTest::newRow("memo miss") << std::function<std::string()>([] {
        PickleWriter p;
        p.proto(2).get(7).stop();
        return with_pickle(p.bytes());
    }) << "pickle memo has no entry 7";
    QTest::newRow("huge string length") << std::function<std::string()>([] {
        PickleWriter p;
        p.proto(2).op('X').raw(std::string("\xff\xff\xff\xff", 4)).stop();
        return with_pickle(p.bytes());
    }) << "truncated pickle: 4294967295 bytes needed";
    QTest::newRow("huge BINUNICODE8 length") << std::function<std::string()>([] {
        PickleWriter p;
        p.proto(4).op(0x8d).raw(std::string(8, '\xff')).stop();
        return with_pickle(p.bytes());
    }) << "truncated pickle: 18446744073709551615 bytes needed";
    QTest::newRow("no STOP") << std::function<std::string()>([] {
        PickleWriter p;
        p.proto(2).empty_dict();
        return with_pickle(p.bytes());
    }) << "ends without a STOP";
    QTest::newRow("deeply nested marks") << std::function<std::string()>([] {
        PickleWriter p;
        p.proto(2);
        for (int i = 0; i < 5000; ++i) p.mark();
        return with_pickle(p.bytes());
    }) << "nests MARKs deeper than 4096";
    QTest::newRow("deeply nested dicts") << std::function<std::string()>([] {
        PickleWriter p;
        p.proto(2);
        for (int i = 0; i < 100; ++i) p.empty_dict().str("k");
        p.empty_dict();
        for (int i = 0; i < 100; ++i) p.setitem();
        p.stop();
        return with_pickle(p.bytes());
    }) << "nested more than 64 levels deep";
    QTest::newRow("self-containing list") << std::function<std::string()>([] {
        PickleWriter p;
        p.proto(2).empty_list().put(0).get(0).append().stop();
        return with_pickle(p.bytes());
    }) << "nested more than 64 levels deep";
    QTest::newRow("storage entry smaller than declared") << std::function<std::string()>([] {
        TorchCheckpointWriter writer;
        writer.add_storage("0", "FloatStorage", oxinfer::test::f32_bytes({1, 2, 3, 4}), 100);
        writer.add_tensor("weight", "0", {4});
        return writer.build();
    }) << "storage 'archive/data/0' declares 100 elements of torch.FloatStorage but its zip entry holds only 16 bytes";
    QTest::newRow("storage too small for the tensor") << std::function<std::string()>([] {
        TorchCheckpointWriter writer;
        writer.add_storage("0", "FloatStorage", oxinfer::test::f32_bytes({1, 2, 3, 4}));
        writer.add_tensor("weight", "0", {2, 5});
        return writer.build();
    }) << "tensor 'weight' (size [2, 5], stride [5, 1], storage offset 0) needs 10 elements of f32 but its storage 'archive/data/0' holds 4";
    QTest::newRow("storage offset past the storage") << std::function<std::string()>([] {
        TorchCheckpointWriter writer;
        writer.add_storage("0", "FloatStorage", oxinfer::test::f32_bytes({1, 2, 3, 4}));
        writer.add_tensor("weight", "0", {2}, {}, 3);
        return writer.build();
    }) << "needs 5 elements of f32";
    QTest::newRow("strided view past the storage") << std::function<std::string()>([] {
        TorchCheckpointWriter writer;
        writer.add_storage("0", "FloatStorage", oxinfer::test::f32_bytes({1, 2, 3, 4}));
        writer.add_tensor("weight", "0", {2, 2}, {3, 1});
        return writer.build();
    }) << "needs 5 elements of f32";
    QTest::newRow("shape product overflow") << std::function<std::string()>([] {
        TorchCheckpointWriter writer;
        writer.add_storage("0", "FloatStorage", oxinfer::test::f32_bytes({1, 2, 3, 4}));
        writer.add_tensor("weight", "0", {int64_t{1} << 40, int64_t{1} << 40}, {1, 1});
        return writer.build();
    }) << "tensor 'weight' has a shape whose element count overflows";
    QTest::newRow("stride overflow") << std::function<std::string()>([] {
        TorchCheckpointWriter writer;
        writer.add_storage("0", "FloatStorage", oxinfer::test::f32_bytes({1, 2, 3, 4}));
        writer.add_tensor("weight", "0", {3}, {int64_t{1} << 62});
        return writer.build();
    }) << "reaches past any storage";
    QTest::newRow("negative dimension") << std::function<std::string()>([] {
        TorchCheckpointWriter writer;
        writer.add_storage("0", "FloatStorage", oxinfer::test::f32_bytes({1, 2, 3, 4}));
        writer.add_tensor("weight", "0", {-2}, {1});
        return writer.build();
    }) << "tensor 'weight' has a negative dimension";
    QTest::newRow("missing data entry") << std::function<std::string()>([] {
        auto entries = small_checkpoint().entries();
        entries.erase(entries.begin() + 3);  // archive/data/1
        return oxinfer::test::write_zip(entries);
    }) << "tensor storage 'archive/data/1' is missing from the archive";
    QTest::newRow("unsupported storage type") << std::function<std::string()>([] {
        TorchCheckpointWriter writer;
        writer.add_storage("0", "ComplexFloatStorage", std::string(16, '\0'));
        writer.add_tensor("z", "0", {2});
        return writer.build();
    }) << "tensor 'z' is stored as torch.ComplexFloatStorage, an element type oxinfer does not support";
    QTest::newRow("unknown storage class") << std::function<std::string()>([] {
        TorchCheckpointWriter writer;
        writer.add_storage("0", "MadeUpStorage", std::string(16, '\0'));
        writer.add_tensor("z", "0", {2});
        return writer.build();
    }) << "persistent id names unknown storage type torch.MadeUpStorage";
    QTest::newRow("quantized tensor") << std::function<std::string()>([] {
        PickleWriter p;
        p.proto(2).empty_dict().str("q").global("torch._utils", "_rebuild_qtensor").empty_tuple().reduce().setitem().stop();
        return with_pickle(p.bytes());
    }) << "tensor 'q' is built by torch._utils._rebuild_qtensor";
    QTest::newRow("bad rebuild arguments") << std::function<std::string()>([] {
        PickleWriter p;
        p.proto(2).empty_dict().str("t").global("torch._utils", "_rebuild_tensor_v2").mark().integer(1).integer(2).tuple().reduce();
        p.setitem().stop();
        return with_pickle(p.bytes());
    }) << "torch._utils._rebuild_tensor_v2 called with 2 arguments";
    QTest::newRow("persistent id not a tuple") << std::function<std::string()>([] {
        PickleWriter p;
        p.proto(2).str("storage").binpersid().stop();
        return with_pickle(p.bytes());
    }) << "persistent id is a str, not a ('storage', ...) tuple";
    QTest::newRow("TorchScript archive") << std::function<std::string()>([] {
        auto entries = small_checkpoint().entries();
        entries.push_back({"archive/constants.pkl", std::string("\x80\x02)\x2e", 4)});
        return oxinfer::test::write_zip(entries);
    }) << "TorchScript archive";
    QTest::newRow("legacy format") << std::function<std::string()>([] {
        // torch.save(..., _use_new_zipfile_serialization=False): PROTO 2, the LONG1 magic number, ...
        return read_file(kReferenceDir + "legacy_format.pt");
    }) << "legacy (non-zip) torch format is not supported; re-save with torch>=1.6";
}

void TestTorchCheckpoint::bad_inputs() {
    QFETCH(std::function<std::string()>, make);
    QFETCH(QString, message);
    const std::string bytes = make();
    OXINFER_EXPECT_ERROR(parse(bytes, "bad.pt"), message.toStdString());
    OXINFER_EXPECT_ERROR(parse(bytes, "bad.pt"), std::string("bad.pt: "));
}

void TestTorchCheckpoint::legacy_through_checkpoint_open() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string legacy = kReferenceDir + "legacy_format.pt";
    OXINFER_EXPECT_ERROR(oxinfer::Checkpoint::open(legacy), std::string("legacy (non-zip) torch format is not supported; re-save with torch>=1.6"));
    // As pytorch_model.bin in a Hugging Face folder.
    QVERIFY(QFile::copy(QString::fromStdString(legacy), dir.filePath(QStringLiteral("pytorch_model.bin"))));
    OXINFER_EXPECT_ERROR(oxinfer::Checkpoint::open(dir.path().toStdString()),
                         std::string("pytorch_model.bin: legacy (non-zip) torch format is not supported"));

    const std::string truncated = dir.filePath(QStringLiteral("model.pt")).toStdString();
    const std::string bytes = read_file(kReferenceDir + "dtypes.pt");
    oxinfer::test::write_string_file(truncated, bytes.substr(0, bytes.size() - 30));
    OXINFER_EXPECT_ERROR(oxinfer::Checkpoint::open(truncated), std::string("truncated zip archive"));
}

// Damage anywhere in a real checkpoint gives an oxinfer::Error or a parse whose tensors lie in
// the file; never a crash, an out-of-bounds read (the sanitizer build checks) or another exception.
void TestTorchCheckpoint::damaged_files_only_throw_errors() {
    for (const char* name : {"views.pt", "module.pt"}) {
        const std::string original = read_file(kReferenceDir + name);
        QVERIFY(!original.empty());
        auto check = [&](const std::string& bytes, const std::string& what) {
            std::vector<std::byte> copy(as_bytes(bytes).begin(), as_bytes(bytes).end());
            try {
                const ParsedTensors parsed = oxinfer::parse_torch_zip(copy, "damaged.pt");
                for (const TensorInfo& tensor : parsed.tensors) {
                    if (tensor.nbytes == 0) continue;
                    if (tensor.data < copy.data() || tensor.data + tensor.nbytes > copy.data() + copy.size())
                        QFAIL(qPrintable(QString::fromStdString(what + ": tensor '" + tensor.name + "' lies outside the file")));
                    if (oxinfer::can_convert_to_f32(tensor.dtype)) gather(tensor);
                }
                (void)parsed.metadata.dump();
            } catch (const oxinfer::Error&) {
            } catch (const std::exception& e) {
                QFAIL(qPrintable(QString::fromStdString(what + ": threw a non-oxinfer exception: " + e.what())));
            }
        };
        // The pickle alone, repacked with a valid CRC so that the pickle machine sees the damage.
        std::vector<ZipFile> entries;
        {
            std::vector<std::byte> copy(as_bytes(original).begin(), as_bytes(original).end());
            const oxinfer::ZipArchive zip(copy, name);
            for (const oxinfer::ZipEntry& entry : zip.entries())
                entries.push_back({std::string(entry.name), std::string(reinterpret_cast<const char*>(entry.data.data()), entry.data.size())});
        }
        QVERIFY(!entries.empty() && entries[0].name.ends_with("/data.pkl"));
        const std::string pickle = entries[0].data;
        for (size_t pos = 0; pos < pickle.size(); ++pos) {
            for (uint8_t mask : {uint8_t{0xff}, uint8_t{0x01}, uint8_t{0x80}, uint8_t{0x00}}) {
                auto damaged = entries;
                if (mask == 0) {
                    damaged[0].data = pickle.substr(0, pos);
                } else {
                    damaged[0].data[pos] = static_cast<char>(damaged[0].data[pos] ^ mask);
                }
                check(oxinfer::test::write_zip(damaged), std::string(name) + " pickle byte " + std::to_string(pos) + " ^ " + std::to_string(mask));
                if (QTest::currentTestFailed()) return;
            }
        }
        for (size_t length = 0; length < original.size(); ++length) {
            check(original.substr(0, length), std::string(name) + " cut to " + std::to_string(length));
            if (QTest::currentTestFailed()) return;
        }
        for (size_t pos = 0; pos < original.size(); ++pos) {
            for (uint8_t mask : {uint8_t{0xff}, uint8_t{0x01}, uint8_t{0x80}}) {
                std::string damaged = original;
                damaged[pos] = static_cast<char>(damaged[pos] ^ mask);
                check(damaged, std::string(name) + " byte " + std::to_string(pos) + " ^ " + std::to_string(mask));
                if (QTest::currentTestFailed()) return;
            }
        }
    }
}

QTEST_APPLESS_MAIN(TestTorchCheckpoint)
#include "test_torch_checkpoint.moc"
