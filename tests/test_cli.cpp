// The oxinfer binary as users and scripts call it: `inspect` and `tensor` on real files, the
// error line format of ../shared/specs/cli.md, and --help.

#include "checkpoint_writers.h"
#include "test_support.h"

#include <oxinfer/npy.h>

#include <QTemporaryDir>
#include <QTest>

using namespace oxinfer;
using namespace oxinfer::test;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {
std::string read_bytes_text(const char* path) {
    const auto bytes = read_bytes(path);
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}
}  // namespace

class CliTest : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    fs::path root() const { return dir_.path().toStdString(); }
    QString at(const std::string& name) const { return QString::fromStdString((root() / name).string()); }

private slots:
    void initTestCase() {
        write_bytes(root() / "m.safetensors",
                    safetensors_bytes({f32_tensor("a.weight", {2, 3}, random_floats(6, 1)),
                                       raw_tensor("b.bias", DType::BF16, {4}, std::vector<std::byte>(8, std::byte{0x3f}))},
                                      {{"format", "pt"}}));
        GgufWriter gguf;
        gguf.add_string("general.architecture", "llama");
        gguf.add_u32("llama.block_count", 2);
        gguf.add_strings("tokenizer.ggml.tokens", {"<s>", "</s>", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"});
        gguf.add_tensor(f32_tensor("token_embd.weight", {3, 4}, random_floats(12, 2)));
        gguf.add_tensor(f32_tensor("blk.0.three", {2, 2, 2}, random_floats(8, 3)));
        gguf.write(root() / "m.gguf");
        write_hf_folder(root() / "folder",
                        {{"architectures", {"Qwen3ForCausalLM"}}, {"hidden_size", 4}},
                        {f32_tensor("x", {4}, random_floats(4, 4)), f32_tensor("y", {1, 4}, random_floats(4, 5))}, 2);
    }

    void inspectJson_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("format");
        QTest::addColumn<QString>("architecture");
        QTest::addColumn<QStringList>("names");
        QTest::newRow("safetensors") << "m.safetensors" << "safetensors" << "" << QStringList{"a.weight", "b.bias"};
        QTest::newRow("gguf") << "m.gguf" << "gguf" << "llama" << QStringList{"token_embd.weight", "blk.0.three"};
        QTest::newRow("folder") << "folder" << "safetensors" << "Qwen3ForCausalLM" << QStringList{"x", "y"};
        QTest::newRow("torch") << "@" OXINFER_REFERENCE_DIR "/torch/tied.pt" << "torch" << "" << QStringList{"embed.weight", "lm_head.weight", "norm.weight"};
    }

    void inspectJson() {
        QFETCH(QString, file);
        QFETCH(QString, format);
        QFETCH(QString, architecture);
        QFETCH(QStringList, names);
        const QString path = file.startsWith('@') ? file.mid(1) : at(file.toStdString());
        const ProcessResult result = run_cli({"inspect", path, "--json"});
        QCOMPARE(result.exit_code, 0);
        const json out = json::parse(result.out.toStdString());
        QCOMPARE(QString::fromStdString(out["format"]), format);
        QCOMPARE(QString::fromStdString(out["architecture"]), architecture);
        QStringList listed;
        for (const json& tensor : out["tensors"]) listed << QString::fromStdString(tensor["name"]);
        listed.sort();
        names.sort();
        QCOMPARE(listed, names);
        QVERIFY(out["metadata"].is_object());
    }

    void inspectJsonShapesAndMetadata() {
        const json gguf = json::parse(run_cli({"inspect", at("m.gguf"), "--json"}).out.toStdString());
        QVERIFY(gguf["metadata"]["llama.block_count"] == 2);
        QCOMPARE(gguf["metadata"]["tokenizer.ggml.tokens"].size(), size_t{12});
        for (const json& tensor : gguf["tensors"]) {
            if (tensor["name"] == "token_embd.weight") {
                QVERIFY(tensor["shape"] == json({3, 4}));
                QVERIFY(tensor["dtype"] == "f32");
            }
        }
        const json st = json::parse(run_cli({"inspect", at("m.safetensors"), "--json"}).out.toStdString());
        QVERIFY(st["metadata"]["safetensors"]["m.safetensors"]["format"] == "pt");
        QVERIFY(st["tensors"][1]["dtype"] == "bf16");
        QVERIFY(st["tensors"][1]["shape"] == json({4}));
    }

    void inspectText() {
        const ProcessResult result = run_cli({"inspect", at("m.gguf")});
        QCOMPARE(result.exit_code, 0);
        const QString text = QString::fromUtf8(result.out);
        QVERIFY(text.contains("format:       gguf"));
        QVERIFY(text.contains("architecture: llama"));
        QVERIFY(text.contains("tokenizer.ggml.tokens"));
        QVERIFY(text.contains("4 more]"));  // long arrays are abbreviated in text
        QVERIFY(text.contains("blk.0.three"));
        QVERIFY(text.contains("[2, 2, 2]"));
    }

    void tensorWritesNpy() {
        const fs::path out = root() / "t.npy";
        ProcessResult result = run_cli({"tensor", at("m.gguf"), "blk.0.three", "--out", QString::fromStdString(out.string())});
        QCOMPARE(result.exit_code, 0);
        NpyArray array = read_npy_f32(out);
        QCOMPARE(array.shape, (std::vector<int64_t>{2, 2, 2}));
        QCOMPARE(array.values, random_floats(8, 3));

        result = run_cli({"tensor", at("folder"), "y", "-o", QString::fromStdString(out.string()), "--profile"});
        QCOMPARE(result.exit_code, 0);
        QVERIFY(result.err.contains("profile:"));
        QVERIFY(result.err.contains("dequantize"));
        array = read_npy_f32(out);
        QCOMPARE(array.shape, (std::vector<int64_t>{1, 4}));
        QCOMPARE(array.values, random_floats(4, 5));

        // A transposed view in a torch.save file comes out in row-major order of its own shape.
        result = run_cli({"tensor", OXINFER_REFERENCE_DIR "/torch/views.pt", "transposed", "--out", QString::fromStdString(out.string())});
        QCOMPARE(result.exit_code, 0);
        array = read_npy_f32(out);
        const json expected = json::parse(read_bytes_text(OXINFER_REFERENCE_DIR "/torch/views.json"));
        for (const json& tensor : expected["tensors"]) {
            if (tensor["name"] != "transposed") continue;
            QVERIFY(json(array.shape) == tensor["shape"]);
            QCOMPARE(array.values.size(), tensor["values"].size());
            for (size_t i = 0; i < array.values.size(); ++i) QCOMPARE(array.values[i], tensor["values"][i].get<float>());
        }
    }

    void errorsAreOneLine_data() {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("message");
        QTest::newRow("missing file") << QStringList{"inspect", "/nonexistent/x.gguf"} << "oxinfer: error: /nonexistent/x.gguf: no such file or folder\n";
        QTest::newRow("missing tensor") << QStringList{"tensor", "@m.gguf", "nope", "--out", "@never.npy"} << "has no tensor named 'nope'\n";
        QTest::newRow("missing --out") << QStringList{"tensor", "@m.gguf", "blk.0.three"} << "oxinfer: error: tensor: missing --out";
        QTest::newRow("unknown option") << QStringList{"inspect", "--frobnicate"} << "oxinfer: error: inspect: unknown option '--frobnicate'";
        QTest::newRow("no file") << QStringList{"inspect"} << "oxinfer: error: inspect: missing FILE_OR_FOLDER";
    }

    void errorsAreOneLine() {
        QFETCH(QStringList, arguments);
        QFETCH(QString, message);
        for (QString& argument : arguments)
            if (argument.startsWith('@')) argument = at(argument.mid(1).toStdString());
        const ProcessResult result = run_cli(arguments);
        QVERIFY(result.exit_code != 0);
        const QString err = QString::fromUtf8(result.err);
        QVERIFY2(err.contains(message), qPrintable(err));
        QCOMPARE(err.count('\n'), 1);
        QVERIFY(!fs::exists(root() / "never.npy"));
    }

    void help() {
        for (const char* command : {"inspect", "tensor"}) {
            const ProcessResult result = run_cli({command, "--help"});
            QCOMPARE(result.exit_code, 0);
            QVERIFY(result.out.startsWith(QByteArray("usage: oxinfer ") + command));
        }
        const ProcessResult top = run_cli({"--help"});
        QCOMPARE(top.exit_code, 0);
        QVERIFY(top.out.contains("inspect"));
        QVERIFY(run_cli({"frobnicate"}).exit_code != 0);
        QVERIFY(run_cli({"--version"}).out.startsWith("oxinfer "));
    }
};

QTEST_GUILESS_MAIN(CliTest)
#include "test_cli.moc"
