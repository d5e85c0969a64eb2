// `oxinfer pull` and `oxinfer models` end to end: the real binary against the test hub on
// 127.0.0.1 (HF_ENDPOINT), into a cache under HF_HOME. A safetensors repo gets only what the
// engine needs and `inspect`/`tensor` then take the repo id; a GGUF repo lists its quantizations
// and `REPO:QUANT` picks one (split files as one); errors are one clear line; the process killed
// with SIGKILL mid-download resumes from its partial file when run again; two processes pulling
// the same repo at once do not corrupt each other.

#include "checkpoint_writers.h"
#include "hub_test_support.h"

#include <nlohmann/json.hpp>

#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using namespace oxinfer;
using namespace oxinfer::test;
using json = nlohmann::json;

namespace {

struct CliRun {
    int exit_code = -1;
    QString out;
    QString err;
};

QByteArray to_bytes(const std::vector<std::byte>& bytes) {
    return QByteArray(reinterpret_cast<const char*>(bytes.data()), qsizetype(bytes.size()));
}

QByteArray gguf_bytes(const std::string& arch, uint32_t seed) {
    GgufWriter gguf;
    gguf.add_string("general.architecture", arch);
    gguf.add_u32(arch + ".block_count", 1);
    gguf.add_tensor(f32_tensor("token_embd.weight", {4, 8}, random_floats(32, seed)));
    return to_bytes(gguf.bytes());
}

}  // namespace

class HubCliTest : public QObject {
    Q_OBJECT

    HubTestServer server_;
    QTemporaryDir dir_;
    TestHubRepo llama_, gguf_, big_, twice_, gated_;

    QProcessEnvironment environment(const QString& home) const {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char* name : {"HF_TOKEN", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN_PATH", "HUGGING_FACE_HUB_TOKEN",
                                 "OXINFER_MODEL_PATH", "HF_HUB_DISABLE_SYMLINKS", "OXINFER_TEST_FREE_BYTES", "XDG_CACHE_HOME"})
            env.remove(name);
        env.insert("HF_HOME", home);
        env.insert("HF_ENDPOINT", server_.endpoint());
        env.insert("OXINFER_HUB_STALL_SECONDS", "5");
        env.insert("OXINFER_HUB_RETRY_MS", "50");
        return env;
    }

    void start(QProcess& process, const QStringList& arguments, const QProcessEnvironment& env) const {
        process.setProcessEnvironment(env);
        process.start(QStringLiteral(OXINFER_CLI_PATH), arguments);
        process.closeWriteChannel();
    }

    CliRun finish(QProcess& process) const {
        CliRun run;
        if (!process.waitForFinished(60000)) {
            process.kill();
            process.waitForFinished();
            run.err = "timed out";
            return run;
        }
        run.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
        run.out = QString::fromUtf8(process.readAllStandardOutput());
        run.err = QString::fromUtf8(process.readAllStandardError());
        return run;
    }

    CliRun cli(const QStringList& arguments, const QProcessEnvironment& env) const {
        QProcess process;
        start(process, arguments, env);
        return finish(process);
    }

    QString home(const QString& name) const { return dir_.path() + "/" + name; }
    static QString snapshot(const QString& home, const TestHubRepo& repo) {
        return home + "/hub/models--" + QString(repo.id).replace('/', "--") + "/snapshots/" + repo.commit;
    }
    static QString blobs(const QString& home, const TestHubRepo& repo) {
        return home + "/hub/models--" + QString(repo.id).replace('/', "--") + "/blobs";
    }
    static QStringList files_in(const QString& folder) {
        QStringList out;
        QDirIterator it(folder, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
        while (it.hasNext()) out << QDir(folder).relativeFilePath(it.next());
        out.sort();
        return out;
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        llama_.id = "cli/tiny-llama";
        llama_.commit = commit_of(llama_.id);
        llama_.files = {
            {"config.json", R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16"})", false, {}},
            {"tokenizer.json", R"({"model": {"type": "BPE"}})", false, {}},
            {"model.safetensors",
             to_bytes(safetensors_bytes({f32_tensor("embed.weight", {64, 256}, random_floats(64 * 256, 5)),
                                         f32_tensor("norm.weight", {256}, random_floats(256, 6))})),
             true, {}},
            {"README.md", "# tiny", false, {}},
            {"onnx/model.onnx", random_bytes(4000, 7), true, {}}};
        server_.add_repo(llama_);

        gguf_.id = "cli/tiny-GGUF";
        gguf_.commit = commit_of(gguf_.id);
        gguf_.files = {{"README.md", "# quants", false, {}},
                       {"tiny-Q4_K_M.gguf", gguf_bytes("llama", 1), true, {}},
                       {"tiny-Q8_0-00001-of-00002.gguf", gguf_bytes("llama", 2), true, {}},
                       {"tiny-Q8_0-00002-of-00002.gguf", random_bytes(5000, 8), true, {}}};
        server_.add_repo(gguf_);

        big_.id = "cli/big";
        big_.commit = commit_of(big_.id);
        big_.files = {{"config.json", R"({"model_type": "llama"})", false, {}},
                      {"model.safetensors", random_bytes(4 << 20, 9), true, {}}};
        server_.add_repo(big_);

        twice_.id = "cli/twice";
        twice_.commit = commit_of(twice_.id);
        twice_.files = {{"config.json", R"({"model_type": "qwen3"})", false, {}},
                        {"model-00001-of-00002.safetensors", random_bytes(1500000, 10), true, {}},
                        {"model-00002-of-00002.safetensors", random_bytes(1000000, 11), true, {}},
                        {"model.safetensors.index.json", R"({"weight_map": {}})", false, {}}};
        server_.add_repo(twice_);

        gated_.id = "cli/gated";
        gated_.commit = commit_of(gated_.id);
        gated_.gated = "manual";
        gated_.allowed_tokens = {"hf_secret"};
        gated_.files = {{"config.json", "{}", false, {}}, {"model.safetensors", to_bytes(safetensors_bytes({})), true, {}}};
        server_.add_repo(gated_);
    }

    void cleanup() { server_.clear_faults(); }

    void pullSafetensorsRepoThenUseItsId() {
        const QString h = home("st");
        const auto env = environment(h);
        const CliRun pull = cli({"pull", llama_.id}, env);
        QVERIFY2(pull.exit_code == 0, qPrintable(pull.err));
        QCOMPARE(pull.out.trimmed(), snapshot(h, llama_));
        QCOMPARE(files_in(snapshot(h, llama_)), QStringList({"config.json", "model.safetensors", "tokenizer.json"}));
        QVERIFY2(pull.err.contains("pull: cli/tiny-llama at " + llama_.commit + ": 3 files"), qPrintable(pull.err));
        QVERIFY(pull.err.contains("pull: model.safetensors"));
        QVERIFY(!pull.err.contains('\r'));  // plain lines when stderr is not a terminal

        const CliRun inspect = cli({"inspect", llama_.id, "--json"}, env);
        QVERIFY2(inspect.exit_code == 0, qPrintable(inspect.err));
        const json info = json::parse(inspect.out.toStdString());
        QCOMPARE(QString::fromStdString(info["format"]), QString("safetensors"));
        QCOMPARE(QString::fromStdString(info["architecture"]), QString("LlamaForCausalLM"));
        QCOMPARE(info["tensors"].size(), size_t(2));

        const QString npy = dir_.path() + "/norm.npy";
        const CliRun tensor = cli({"tensor", llama_.id, "norm.weight", "--out", npy}, env);
        QVERIFY2(tensor.exit_code == 0, qPrintable(tensor.err));
        QVERIFY(QFileInfo(npy).size() > 1024);

        // Again: nothing is fetched, and --json tells what is where.
        server_.clear_requests();
        const CliRun again = cli({"pull", llama_.id, "--json"}, env);
        QVERIFY2(again.exit_code == 0, qPrintable(again.err));
        QCOMPARE(server_.requests_for("/storage/").size(), 0);
        const json out = json::parse(again.out.toStdString());
        QCOMPARE(QString::fromStdString(out["snapshot"]), snapshot(h, llama_));
        QCOMPARE(QString::fromStdString(out["commit"]), llama_.commit);
        QCOMPARE(out["files"].size(), size_t(3));
        for (const json& file : out["files"]) QVERIFY(file["downloaded"] == false);
    }

    void ggufRepoListsQuantizationsAndPullsOne() {
        const QString h = home("gguf");
        const auto env = environment(h);
        const CliRun ask = cli({"pull", gguf_.id}, env);
        QCOMPARE(ask.exit_code, 1);
        QVERIFY2(ask.err.contains("cli/tiny-GGUF has 2 GGUF quantizations:"), qPrintable(ask.err));
        QVERIFY(ask.err.contains(QRegularExpression(R"(Q4_K_M\s+\d)")));
        QVERIFY(ask.err.contains(QRegularExpression(R"(Q8_0\s+[\d.]+ KiB\s+\(2 parts\))")));
        QVERIFY(ask.err.contains("oxinfer: error: cli/tiny-GGUF: 2 quantizations: pick one as cli/tiny-GGUF:Q4_K_M"));
        QVERIFY(!QFileInfo::exists(blobs(h, gguf_)));

        const CliRun pull = cli({"pull", gguf_.id + ":q8_0"}, env);
        QVERIFY2(pull.exit_code == 0, qPrintable(pull.err));
        QCOMPARE(files_in(snapshot(h, gguf_)), QStringList({"tiny-Q8_0-00001-of-00002.gguf", "tiny-Q8_0-00002-of-00002.gguf"}));

        // The only cached variant is what the repo id means now.
        const CliRun inspect = cli({"inspect", gguf_.id, "--json"}, env);
        QVERIFY2(inspect.exit_code == 0, qPrintable(inspect.err));
        QCOMPARE(QString::fromStdString(json::parse(inspect.out.toStdString())["architecture"]), QString("llama"));
        const CliRun missing = cli({"inspect", gguf_.id + ":Q4_K_M"}, env);
        QCOMPARE(missing.exit_code, 1);
        QVERIFY2(missing.err.contains("no file or quantization 'Q4_K_M'"), qPrintable(missing.err));

        // models: the cache and the folders of OXINFER_MODEL_PATH.
        const QString folder = dir_.path() + "/models";
        QDir().mkpath(folder + "/my-hf-model");
        QFile loose(folder + "/loose-Q6_K.gguf");
        QVERIFY(loose.open(QIODevice::WriteOnly));
        loose.write(gguf_bytes("qwen3", 3));
        loose.close();
        write_hf_folder((folder + "/my-hf-model").toStdString(), {{"architectures", {"Qwen3ForCausalLM"}}},
                        {f32_tensor("w", {4}, random_floats(4, 1))});
        auto with_path = env;
        with_path.insert("OXINFER_MODEL_PATH", folder + ":" + dir_.path() + "/does-not-exist");
        const CliRun models = cli({"models", "--json"}, with_path);
        QVERIFY2(models.exit_code == 0, qPrintable(models.err));
        const json listed = json::parse(models.out.toStdString());
        QMap<QString, json> by_id;
        for (const json& model : listed["models"]) by_id.insert(QString::fromStdString(model["id"]), model);
        QCOMPARE(by_id.keys(), QStringList({"cli/tiny-GGUF", "loose-Q6_K.gguf", "my-hf-model"}));
        const json& cached = by_id["cli/tiny-GGUF"];
        QCOMPARE(QString::fromStdString(cached["format"]), QString("gguf"));
        QCOMPARE(QString::fromStdString(cached["type"]), QString("Q8_0"));
        QCOMPARE(QString::fromStdString(cached["architecture"]), QString("llama"));
        QCOMPARE(QString::fromStdString(cached["source"]), QString("cache"));
        QCOMPARE(cached["size_bytes"].get<qint64>(), qint64(gguf_.files[2].content.size() + gguf_.files[3].content.size()));
        QCOMPARE(QString::fromStdString(by_id["loose-Q6_K.gguf"]["architecture"]), QString("qwen3"));
        QCOMPARE(QString::fromStdString(by_id["loose-Q6_K.gguf"]["type"]), QString("Q6_K"));
        QCOMPARE(QString::fromStdString(by_id["my-hf-model"]["architecture"]), QString("Qwen3ForCausalLM"));
        QCOMPARE(QString::fromStdString(by_id["my-hf-model"]["format"]), QString("safetensors"));
        const CliRun table = cli({"models"}, with_path);
        QVERIFY(table.out.contains("cli/tiny-GGUF") && table.out.contains("ARCHITECTURE"));
    }

    void includeGlobs() {
        const QString h = home("include");
        const CliRun pull = cli({"pull", llama_.id, "--include", "*.json", "--include", "onnx/"}, environment(h));
        QVERIFY2(pull.exit_code == 0, qPrintable(pull.err));
        QCOMPARE(files_in(snapshot(h, llama_)), QStringList({"config.json", "onnx/model.onnx", "tokenizer.json"}));
        const CliRun none = cli({"pull", llama_.id, "--include", "*.xyz"}, environment(h));
        QCOMPARE(none.exit_code, 1);
        QVERIFY(none.err.contains("oxinfer: error: cli/tiny-llama: no file matches --include"));
    }

    void errorsAreOneClearLine() {
        const QString h = home("errors");
        auto env = environment(h);
        CliRun run = cli({"pull", gated_.id}, env);
        QCOMPARE(run.exit_code, 1);
        QVERIFY2(run.err.contains("oxinfer: error: cli/gated: cli/gated is a gated model (HTTP 401): accept its license at " +
                                  server_.endpoint() + "/cli/gated"),
                 qPrintable(run.err));
        env.insert("HF_TOKEN", "hf_secret");
        run = cli({"pull", gated_.id}, env);
        QVERIFY2(run.exit_code == 0, qPrintable(run.err));
        env.remove("HF_TOKEN");

        run = cli({"pull", "cli/no-such-repo"}, env);
        QCOMPARE(run.exit_code, 1);
        QVERIFY2(run.err.contains("oxinfer: error: cli/no-such-repo: repository not found on " + server_.endpoint()), qPrintable(run.err));
        run = cli({"pull", llama_.id + ":weights/none.bin"}, env);
        QCOMPARE(run.exit_code, 1);
        QVERIFY(run.err.contains("no quantization or file 'weights/none.bin'"));
        run = cli({"pull", "not a repo"}, env);
        QCOMPARE(run.exit_code, 1);
        run = cli({"inspect", "cli/never-pulled"}, env);
        QCOMPARE(run.exit_code, 1);
        QVERIFY2(run.err.contains("'oxinfer pull cli/never-pulled' downloads it"), qPrintable(run.err));

        env.insert("OXINFER_TEST_FREE_BYTES", "1000");
        run = cli({"pull", big_.id}, env);
        QCOMPARE(run.exit_code, 1);
        QVERIFY2(run.err.contains("oxinfer: error: cli/big: not enough disk space in " + h + "/hub: the download needs 4.00 MiB, 1000 B are free"),
                 qPrintable(run.err));
        QVERIFY(!QFileInfo::exists(blobs(h, big_)));
    }

    // SIGKILL in the middle of a file, then the same command again: it resumes from the partial file.
    void killedMidDownloadResumes() {
        const QString h = home("killed");
        const auto env = environment(h);
        TestHubFaults slow;
        slow.bytes_per_second = 1 << 20;
        server_.set_faults("model.safetensors", slow);
        server_.clear_requests();
        const QString sha = HubTestServer::sha256_hex(big_.files[1].content);
        const QString partial = blobs(h, big_) + "/" + sha + ".incomplete";
        const QString lock = h + "/hub/.locks/models--cli--big/" + sha + ".lock";

        QProcess first;
        start(first, {"pull", big_.id}, env);
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(partial).size() >= 400000, 15000);
        first.kill();  // SIGKILL
        QVERIFY(first.waitForFinished(10000));
        QCOMPARE(first.exitStatus(), QProcess::CrashExit);
        const qint64 kept = QFileInfo(partial).size();
        QVERIFY(kept >= 400000 && kept < big_.files[1].content.size());
        QVERIFY(QFileInfo::exists(lock));  // the dead process's lock is still there

        server_.clear_faults();
        const CliRun second = cli({"pull", big_.id}, env);
        QVERIFY2(second.exit_code == 0, qPrintable(second.err));
        const auto gets = server_.requests_for("/storage/" + sha);
        QCOMPARE(gets.size(), 2);
        QCOMPARE(gets[0].range_start(), qint64(-1));
        QCOMPARE(gets[1].range_start(), kept);
        QCOMPARE(gets[1].status, 206);
        QVERIFY2(second.err.contains(QString("resuming from byte %1").arg(kept)), qPrintable(second.err));
        QCOMPARE(file_sha256(snapshot(h, big_) + "/model.safetensors"), sha);
        QVERIFY(!QFileInfo::exists(partial));
        QVERIFY(!QFileInfo::exists(lock));
        qInfo("killed at %lld bytes of %lld; the second run asked for Range: %s", kept, qint64(big_.files[1].content.size()),
              gets[1].range.constData());
    }

    void twoProcessesPullTheSameRepo() {
        const QString h = home("twice");
        const auto env = environment(h);
        TestHubFaults slow;
        slow.bytes_per_second = 3 << 20;
        server_.set_faults("*", slow);
        server_.clear_requests();
        QProcess a, b;
        start(a, {"pull", twice_.id}, env);
        start(b, {"pull", twice_.id}, env);
        const CliRun first = finish(a);
        const CliRun second = finish(b);
        QVERIFY2(first.exit_code == 0, qPrintable(first.err));
        QVERIFY2(second.exit_code == 0, qPrintable(second.err));
        QCOMPARE(first.out, second.out);
        for (const TestHubFile& file : twice_.files) {
            const QString sha = HubTestServer::sha256_hex(file.content);
            QCOMPARE(file_sha256(snapshot(h, twice_) + "/" + file.path), sha);
            if (file.lfs) QCOMPARE(server_.requests_for("/storage/" + sha).size(), 1);
        }
        QCOMPARE(QDir(blobs(h, twice_)).entryList(QDir::Files).size(), 4);
        QVERIFY(QDir(h + "/hub/.locks/models--cli--twice").entryList(QDir::Files).isEmpty());
        QCOMPARE(QString::fromLatin1(read_all(h + "/hub/models--cli--twice/refs/main")), twice_.commit);
    }

    // On a terminal the progress is one line redrawn in place (a pseudo-terminal through script(1)).
    void progressBarOnATerminal() {
        const QString script = QStandardPaths::findExecutable("script");
        if (script.isEmpty()) QSKIP("script(1) is not installed");
        const QString h = home("tty");
        TestHubFaults slow;
        slow.bytes_per_second = 4 << 20;
        server_.set_faults("model.safetensors", slow);
        QProcess process;
        process.setProcessEnvironment(environment(h));
        process.start(script, {"-qec", QString("'%1' pull %2").arg(QStringLiteral(OXINFER_CLI_PATH), big_.id), "/dev/null"});
        process.closeWriteChannel();
        QVERIFY(process.waitForFinished(30000));
        const QString out = QString::fromUtf8(process.readAllStandardOutput());
        QCOMPARE(process.exitCode(), 0);
        QVERIFY2(out.contains('\r') && out.contains("% [") && out.contains("ETA") && out.contains("/s"), qPrintable(out));
        QVERIFY(out.contains(snapshot(h, big_)));
    }
};

QTEST_GUILESS_MAIN(HubCliTest)
#include "test_hub_cli.moc"
