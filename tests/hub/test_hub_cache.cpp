// The Hugging Face cache: where it is (HF_HOME, HF_HUB_CACHE, XDG_CACHE_HOME, the token file),
// how repo ids and GGUF quantizations are read, resolving MODEL arguments through refs/ and
// snapshots/ of a cache written the way huggingface_hub writes it, and the exact layout the
// downloader writes (blobs by sha256 / git sha1, relative links, refs/main, no leftovers), with
// and without symlinks.

#include "checkpoint_writers.h"
#include "hub_test_support.h"
#include "test_support.h"

#include <oxinfer/error.h>
#include <oxinfer/hf_cache.h>

#include <QTemporaryDir>
#include <QTest>

#include <filesystem>

using namespace oxinfer;
using namespace oxinfer::test;
namespace fs = std::filesystem;

namespace {

// Sets (or unsets, with an empty value) environment variables for one scope.
class EnvScope {
public:
    void set(const char* name, const QByteArray& value) {
        saved_.append({name, qgetenv(name), qEnvironmentVariableIsSet(name)});
        if (value.isNull()) qunsetenv(name);
        else qputenv(name, value);
    }
    ~EnvScope() {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
            if (it->was_set) qputenv(it->name, it->value);
            else qunsetenv(it->name);
        }
    }

private:
    struct Saved {
        const char* name;
        QByteArray value;
        bool was_set;
    };
    QList<Saved> saved_;
};

void write_text(const fs::path& path, const QByteArray& text) {
    fs::create_directories(path.parent_path());
    QFile file(QString::fromStdString(path.string()));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(text);
}

// A repo cached the way huggingface_hub writes it: blobs, relative links, refs/main.
void write_python_style_repo(const fs::path& cache, const std::string& repo, const std::string& commit,
                             const std::vector<std::pair<std::string, QByteArray>>& files) {
    const fs::path folder = cache / hf::repo_folder_name(repo);
    for (const auto& [path, content] : files) {
        const std::string blob = HubTestServer::sha256_hex(content).toStdString();
        write_text(folder / "blobs" / blob, content);
        const fs::path pointer = folder / "snapshots" / commit / path;
        fs::create_directories(pointer.parent_path());
        fs::create_symlink((folder / "blobs" / blob).lexically_relative(pointer.parent_path()), pointer);
    }
    write_text(folder / "refs" / "main", QByteArray::fromStdString(commit));
}

QByteArray gguf_file(const std::string& arch) {
    GgufWriter gguf;
    gguf.add_string("general.architecture", arch);
    gguf.add_tensor(f32_tensor("token_embd.weight", {2, 4}, random_floats(8, 7)));
    const std::vector<std::byte> bytes = gguf.bytes();
    return QByteArray(reinterpret_cast<const char*>(bytes.data()), qsizetype(bytes.size()));
}

}  // namespace

class HubCacheTest : public QObject {
    Q_OBJECT

    HubTestServer server_;
    QTemporaryDir dir_;

    QString cache() const { return dir_.path() + "/hub"; }

    TestHubRepo layout_repo() const {
        TestHubRepo repo;
        repo.id = "layout-org/tiny-model";
        repo.commit = commit_of("layout");
        repo.files = {{"config.json", R"({"architectures": ["LlamaForCausalLM"]})", false, {}},
                      {"model.safetensors", random_bytes(300000, 1), true, {}},
                      {"1_Pooling/config.json", R"({"pooling_mode_mean_tokens": true})", false, {}},
                      {"weights/extra.bin", random_bytes(70000, 2), true, {}}};
        return repo;
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        QVERIFY(server_.port() != 0);
        server_.add_repo(layout_repo());
    }

    void cacheFolderFromEnvironment() {
        EnvScope env;
        env.set("HF_HUB_CACHE", QByteArray());
        env.set("HUGGINGFACE_HUB_CACHE", QByteArray());
        env.set("HF_HOME", QByteArray());
        env.set("HF_TOKEN_PATH", QByteArray());
        env.set("XDG_CACHE_HOME", "/x/cache");
        QCOMPARE(hf::hub_cache_dir(), fs::path("/x/cache/huggingface/hub"));
        env.set("XDG_CACHE_HOME", QByteArray());
        env.set("HOME", "/home/someone");
        QCOMPARE(hf::hub_cache_dir(), fs::path("/home/someone/.cache/huggingface/hub"));
        env.set("HF_HOME", "/data/hf");
        QCOMPARE(hf::hub_cache_dir(), fs::path("/data/hf/hub"));
        QCOMPARE(hf::token_path(), fs::path("/data/hf/token"));
        env.set("HF_HOME", "~/hf");
        QCOMPARE(hf::hub_cache_dir(), fs::path("/home/someone/hf/hub"));
        env.set("HF_HUB_CACHE", "/elsewhere/hub");
        QCOMPARE(hf::hub_cache_dir(), fs::path("/elsewhere/hub"));
    }

    void tokenFromEnvironmentOrFile() {
        EnvScope env;
        env.set("HF_HOME", QFile::encodeName(dir_.path() + "/home"));
        env.set("HF_TOKEN_PATH", QByteArray());
        env.set("HF_TOKEN", QByteArray());
        env.set("HUGGING_FACE_HUB_TOKEN", QByteArray());
        QCOMPARE(hf::read_token(), std::string());
        write_text(fs::path(dir_.path().toStdString()) / "home" / "token", "hf_from_file\n");
        QCOMPARE(hf::read_token(), std::string("hf_from_file"));
        env.set("HF_TOKEN", " hf_from_env ");
        QCOMPARE(hf::read_token(), std::string("hf_from_env"));
    }

    void repoIdsAndModelRefs() {
        QCOMPARE(hf::repo_folder_name("Qwen/Qwen3-0.6B"), std::string("models--Qwen--Qwen3-0.6B"));
        QCOMPARE(hf::repo_folder_name("gpt2"), std::string("models--gpt2"));
        QVERIFY(hf::is_repo_id("unsloth/Qwen3-0.6B-GGUF"));
        QVERIFY(!hf::is_repo_id("a/b/c"));
        QVERIFY(!hf::is_repo_id("a--b/c"));
        QVERIFY(!hf::is_repo_id("./model"));
        QVERIFY(hf::is_commit_hash(commit_of("x").toStdString()));
        QVERIFY(!hf::is_commit_hash("main"));
        const auto plain = hf::parse_model_ref("org/name");
        QVERIFY(plain && plain->repo_id == "org/name" && plain->selector.empty());
        const auto quant = hf::parse_model_ref("org/name:Q4_K_M");
        QVERIFY(quant && quant->repo_id == "org/name" && quant->selector == "Q4_K_M");
        const auto file = hf::parse_model_ref("org/name:sub/model-q8_0.gguf");
        QVERIFY(file && file->selector == "sub/model-q8_0.gguf");
        QVERIFY(!hf::parse_model_ref("model.gguf"));
        QVERIFY(!hf::parse_model_ref("../x/y"));
        QVERIFY(!hf::parse_model_ref("org/name:"));
    }

    void ggufQuantizations() {
        QCOMPARE(hf::gguf_quant_name("Qwen3-0.6B-Q4_K_M.gguf"), std::string("Q4_K_M"));
        QCOMPARE(hf::gguf_quant_name("llama-2-7b.q8_0.gguf"), std::string("Q8_0"));
        QCOMPARE(hf::gguf_quant_name("gemma-3-4b-it-IQ4_XS.gguf"), std::string("IQ4_XS"));
        QCOMPARE(hf::gguf_quant_name("Qwen3-8B-BF16.gguf"), std::string("BF16"));
        QCOMPARE(hf::gguf_quant_name("Q4_K_M/Big-Q4_K_M-00001-of-00003.gguf"), std::string("Q4_K_M"));
        QCOMPARE(hf::gguf_quant_name("BF16/Big-00002-of-00002.gguf"), std::string("BF16"));
        QCOMPARE(hf::gguf_quant_name("x-UD-Q4_K_XL.gguf"), std::string("UD-Q4_K_XL"));
        QCOMPARE(hf::gguf_quant_name("model.gguf"), std::string("model"));
        int part = 0, count = 0;
        QVERIFY(hf::gguf_split_part("a-Q8_0-00002-of-00003.gguf", &part, &count));
        QCOMPARE(part, 2);
        QCOMPARE(count, 3);
        QVERIFY(hf::is_gguf_projector("mmproj-model-f16.gguf"));

        const auto variants = hf::group_gguf_files({{"m-Q8_0-00001-of-00002.gguf", 600},
                                                    {"m-Q8_0-00002-of-00002.gguf", 400},
                                                    {"m-Q4_K_M.gguf", 500},
                                                    {"mmproj-m-f16.gguf", 50},
                                                    {"README.md", 5}});
        QCOMPARE(variants.size(), size_t(2));
        QCOMPARE(variants[0].quant, std::string("Q4_K_M"));
        QCOMPARE(variants[0].bytes, uint64_t(500));
        QCOMPARE(variants[1].quant, std::string("Q8_0"));
        QCOMPARE(variants[1].files.size(), size_t(2));
        QCOMPARE(variants[1].bytes, uint64_t(1000));
        QVERIFY(hf::find_gguf_variant(variants, "q8_0") == &variants[1]);
        QVERIFY(hf::find_gguf_variant(variants, "m-Q8_0-00002-of-00002.gguf") == &variants[1]);
        QVERIFY(hf::find_gguf_variant(variants, "Q2_K") == nullptr);
    }

    // A cache as huggingface_hub leaves it: MODEL arguments resolve through refs/main and snapshots.
    void resolvesPythonWrittenCache() {
        const fs::path cache = fs::path(dir_.path().toStdString()) / "python-cache";
        const std::string st_commit = commit_of("st").toStdString();
        write_python_style_repo(cache, "org/st-model", st_commit,
                                {{"config.json", R"({"architectures": ["Qwen3ForCausalLM"]})"}, {"model.safetensors", "x"}});
        const std::string gg_commit = commit_of("gg").toStdString();
        write_python_style_repo(cache, "org/gg-model", gg_commit,
                                {{"m-Q4_K_M.gguf", gguf_file("llama")},
                                 {"m-Q8_0-00001-of-00002.gguf", gguf_file("llama")},
                                 {"m-Q8_0-00002-of-00002.gguf", "rest"}});
        const std::string one_commit = commit_of("one").toStdString();
        write_python_style_repo(cache, "org/one-gguf", one_commit, {{"only-Q6_K.gguf", gguf_file("qwen3")}});

        QCOMPARE(hf::resolve_model("org/st-model", cache), cache / "models--org--st-model" / "snapshots" / st_commit);
        QCOMPARE(hf::resolve_model("org/one-gguf", cache),
                 cache / "models--org--one-gguf" / "snapshots" / one_commit / "only-Q6_K.gguf");
        QCOMPARE(hf::resolve_model("org/gg-model:Q8_0", cache),
                 cache / "models--org--gg-model" / "snapshots" / gg_commit / "m-Q8_0-00001-of-00002.gguf");
        QCOMPARE(hf::resolve_model("org/gg-model:m-Q4_K_M.gguf", cache),
                 cache / "models--org--gg-model" / "snapshots" / gg_commit / "m-Q4_K_M.gguf");
        OXINFER_EXPECT_ERROR(hf::resolve_model("org/gg-model", cache), "2 GGUF quantizations are cached (Q4_K_M, Q8_0)");
        OXINFER_EXPECT_ERROR(hf::resolve_model("org/gg-model:Q2_K", cache), "no file or quantization 'Q2_K'");
        OXINFER_EXPECT_ERROR(hf::resolve_model("org/missing", cache), "oxinfer pull org/missing");
        // A path that exists wins over a repo id of the same spelling.
        const fs::path local = fs::path(dir_.path().toStdString()) / "org" / "st-model";
        fs::create_directories(local);
        const fs::path cwd = fs::current_path();
        fs::current_path(dir_.path().toStdString());
        QCOMPARE(hf::resolve_model("org/st-model", cache), fs::path("org/st-model"));
        fs::current_path(cwd);
        // Without refs/main (files fetched by commit), the snapshot is still found.
        fs::remove(cache / "models--org--st-model" / "refs" / "main");
        QCOMPARE(*hf::cached_commit(cache, "org/st-model"), st_commit);

        const auto models = hf::scan_cache(cache);
        QStringList ids;
        for (const auto& model : models) ids << QString::fromStdString(model.id + " " + model.format);
        QCOMPARE(ids, QStringList({"org/gg-model:Q4_K_M gguf", "org/gg-model:Q8_0 gguf", "org/one-gguf gguf",
                                   "org/st-model safetensors"}));
    }

    // The whole cache after a download: exactly what huggingface_hub writes.
    void downloadWritesHuggingfaceHubLayout() {
        const TestHubRepo repo = layout_repo();
        hub::HubConfig config = test_config(server_, cache());
        hub::HubApi api(config);
        hub::HubError error;
        const hub::RepoInfo info = fetch_repo(api, repo.id, "main", &error);
        QVERIFY2(!error, qPrintable(error.text()));
        hub::Downloader downloader(config);
        const DownloadRun run = run_download(downloader, repo.id, info.sha, info.files);
        QVERIFY2(run.ended && !run.error, qPrintable(run.error.text()));

        const QString weights = HubTestServer::sha256_hex(repo.files[1].content);
        const QString config_blob = HubTestServer::git_sha1_hex(repo.files[0].content);
        const QString pooling_blob = HubTestServer::git_sha1_hex(repo.files[2].content);
        const QString extra = HubTestServer::sha256_hex(repo.files[3].content);
        const QString snapshot = "models--layout-org--tiny-model/snapshots/" + repo.commit + "/";
        const QString blobs = "models--layout-org--tiny-model/blobs/";
        QStringList expected = {
            ".locks/",
            ".locks/models--layout-org--tiny-model/",
            "CACHEDIR.TAG (" + QString::number(QFileInfo(cache() + "/CACHEDIR.TAG").size()) + " bytes)",
            "models--layout-org--tiny-model/",
            blobs,
            blobs + config_blob + " (" + QString::number(repo.files[0].content.size()) + " bytes)",
            blobs + weights + " (300000 bytes)",
            blobs + pooling_blob + " (" + QString::number(repo.files[2].content.size()) + " bytes)",
            blobs + extra + " (70000 bytes)",
            "models--layout-org--tiny-model/refs/",
            "models--layout-org--tiny-model/refs/main (40 bytes)",
            "models--layout-org--tiny-model/snapshots/",
            snapshot.chopped(1) + "/",
            snapshot + "1_Pooling/",
            snapshot + "1_Pooling/config.json -> ../../../blobs/" + pooling_blob,
            snapshot + "config.json -> ../../blobs/" + config_blob,
            snapshot + "model.safetensors -> ../../blobs/" + weights,
            snapshot + "weights/",
            snapshot + "weights/extra.bin -> ../../../blobs/" + extra,
        };
        expected.sort();
        QCOMPARE(tree_listing(cache()), expected);
        QCOMPARE(read_all(cache() + "/models--layout-org--tiny-model/refs/main"), repo.commit.toLatin1());
        QCOMPARE(read_all(cache() + "/" + snapshot + "model.safetensors"), repo.files[1].content);
        QCOMPARE(run.snapshot, cache() + "/" + snapshot.chopped(1));

        // The engine side resolves what was written.
        QCOMPARE(hf::resolve_model(repo.id.toStdString(), cache().toStdString()),
                 fs::path((cache() + "/" + snapshot.chopped(1)).toStdString()));

        // A second download reuses everything: HEAD requests only, nothing fetched.
        server_.clear_requests();
        hub::Downloader again(config);
        const DownloadRun second = run_download(again, repo.id, info.sha, info.files);
        QVERIFY(second.ended && !second.error);
        for (const hub::DownloadedFile& file : again.results()) QVERIFY(!file.downloaded);
        QCOMPARE(server_.requests_for("/storage/").size(), 0);
        QCOMPARE(tree_listing(cache()), expected);
    }

    // Where symlinks are not allowed, huggingface_hub moves a new blob into snapshots/ instead;
    // HF_HUB_DISABLE_SYMLINKS forces that here.
    void withoutSymlinks() {
        EnvScope env;
        env.set("HF_HUB_DISABLE_SYMLINKS", "1");
        const QString cache = dir_.path() + "/no-links";
        hub::HubConfig config = test_config(server_, cache);
        config.use_symlinks = hub::HubConfig::from_environment().use_symlinks;
        QVERIFY(!config.use_symlinks);
        hub::HubApi api(config);
        hub::HubError error;
        const hub::RepoInfo info = fetch_repo(api, "layout-org/tiny-model", "main", &error);
        QVERIFY(!error);
        hub::Downloader downloader(config);
        const DownloadRun run = run_download(downloader, "layout-org/tiny-model", info.sha, info.files);
        QVERIFY2(run.ended && !run.error, qPrintable(run.error.text()));
        const TestHubRepo repo = layout_repo();
        const QString snapshot = cache + "/models--layout-org--tiny-model/snapshots/" + repo.commit;
        for (const TestHubFile& file : repo.files) {
            const QFileInfo info(snapshot + "/" + file.path);
            QVERIFY(info.isFile() && !info.isSymLink());
            QCOMPARE(read_all(info.filePath()), file.content);
        }
        QVERIFY(QDir(cache + "/models--layout-org--tiny-model/blobs").entryList(QDir::Files).isEmpty());
        QCOMPARE(read_all(cache + "/models--layout-org--tiny-model/refs/main"), repo.commit.toLatin1());
        QCOMPARE(hf::resolve_model("layout-org/tiny-model", cache.toStdString()), fs::path(snapshot.toStdString()));
    }

    // Files Python tools downloaded are reused as they are: no byte is fetched again.
    void reusesPythonDownloads() {
        const TestHubRepo repo = layout_repo();
        const fs::path cache = fs::path(dir_.path().toStdString()) / "reuse";
        std::vector<std::pair<std::string, QByteArray>> files;
        for (const TestHubFile& file : repo.files) files.emplace_back(file.path.toStdString(), file.content);
        write_python_style_repo(cache, repo.id.toStdString(), repo.commit.toStdString(), files);
        hub::HubConfig config = test_config(server_, QString::fromStdString(cache.string()));
        hub::HubApi api(config);
        hub::HubError error;
        const hub::RepoInfo info = fetch_repo(api, repo.id, "main", &error);
        QVERIFY(!error);
        server_.clear_requests();
        hub::Downloader downloader(config);
        const DownloadRun run = run_download(downloader, repo.id, info.sha, info.files);
        QVERIFY(run.ended && !run.error);
        QCOMPARE(downloader.results().size(), repo.files.size());
        for (const hub::DownloadedFile& file : downloader.results()) QVERIFY(!file.downloaded);
        QCOMPARE(server_.requests_for("/storage/").size(), 0);
    }
};

QTEST_GUILESS_MAIN(HubCacheTest)
#include "test_hub_cache.moc"
