// The hub API client against the test server: model info (default branch, revision, unknown
// revision), the recursive tree with sizes and LFS sha256 over several Link pages, search with
// filters and sorting, the token (HF_TOKEN, the token file) and HF_ENDPOINT from the environment,
// and the errors: 401/403 for a gated repo naming the license page, 401/404 for a missing repo.

#include "hub_test_support.h"

#include <oxinfer/hub/file_selection.h>

#include <QTemporaryDir>
#include <QTest>

using namespace oxinfer;
using namespace oxinfer::test;

class HubApiTest : public QObject {
    Q_OBJECT

    HubTestServer server_;
    QTemporaryDir dir_;

    hub::HubConfig config() const { return test_config(server_, dir_.path() + "/hub"); }

    hub::RepoInfo info(hub::HubApi& api, const QString& repo, const QString& revision, hub::HubError* error) {
        hub::RepoInfo result;
        run_loop([&](std::function<void()> done) {
            api.model_info(repo, revision, [&, done](const hub::RepoInfo& answer, const hub::HubError& problem) {
                result = answer;
                *error = problem;
                done();
            });
        });
        return result;
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        TestHubRepo tiny;
        tiny.id = "acme/tiny-llm";
        tiny.commit = commit_of("tiny");
        tiny.tags = {"safetensors", "text-generation"};
        tiny.downloads = 500;
        tiny.likes = 9;
        tiny.library_name = "transformers";
        tiny.files = {{"config.json", "{}", false, {}},
                      {"model.safetensors", random_bytes(5000, 3), true, {}},
                      {"tokenizer.json", "{\"model\": {}}", false, {}},
                      {"onnx/model.onnx", random_bytes(100, 4), true, {}},
                      {"README.md", "# tiny", false, {}}};
        server_.add_repo(tiny);
        const QList<std::tuple<QString, qint64, qint64>> ggufs = {
            {"acme/small-GGUF", 100, 50}, {"acme/popular-GGUF", 9000, 20}, {"other/liked-GGUF", 300, 800}};
        for (const auto& [id, downloads, likes] : ggufs) {
            TestHubRepo repo;
            repo.id = id;
            repo.commit = commit_of(id);
            repo.tags = {"gguf", "text-generation"};
            repo.downloads = downloads;
            repo.likes = likes;
            repo.files = {{"model-Q4_K_M.gguf", random_bytes(64, 5), true, {}}};
            server_.add_repo(repo);
        }
        TestHubRepo gated;
        gated.id = "acme/gated-llm";
        gated.commit = commit_of("gated");
        gated.gated = "manual";
        gated.allowed_tokens = {"hf_allowed"};
        gated.files = {{"config.json", "{}", false, {}}};
        server_.add_repo(gated);
    }

    void modelInfo() {
        hub::HubApi api(config());
        hub::HubError error;
        const hub::RepoInfo main = info(api, "acme/tiny-llm", "", &error);
        QVERIFY2(!error, qPrintable(error.text()));
        QCOMPARE(main.id, QString("acme/tiny-llm"));
        QCOMPARE(main.sha, commit_of("tiny"));
        QCOMPARE(main.downloads, qint64(500));
        QCOMPARE(main.likes, qint64(9));
        QCOMPARE(main.gated, QString());
        QCOMPARE(main.library_name, QString("transformers"));
        QVERIFY(main.tags.contains("safetensors"));
        QCOMPARE(main.files.size(), 5);
        QCOMPARE(server_.requests_for("/api/models/acme/tiny-llm").last().path, QString("/api/models/acme/tiny-llm"));

        const hub::RepoInfo at_commit = info(api, "acme/tiny-llm", commit_of("tiny"), &error);
        QVERIFY(!error);
        QCOMPARE(at_commit.sha, commit_of("tiny"));
        QCOMPARE(server_.requests().last().path, "/api/models/acme/tiny-llm/revision/" + commit_of("tiny"));

        info(api, "acme/tiny-llm", "no-such-branch", &error);
        QCOMPARE(error.kind, hub::HubError::Kind::RevisionNotFound);
        QCOMPARE(error.http_status, 404);
    }

    void treeWithSizesAndShaOverPages() {
        server_.set_tree_page_size(2);
        hub::HubApi api(config());
        hub::HubError error;
        server_.clear_requests();
        const hub::RepoInfo full = fetch_repo(api, "acme/tiny-llm", "main", &error);
        server_.set_tree_page_size(0);
        QVERIFY2(!error, qPrintable(error.text()));
        QCOMPARE(server_.requests_for("/tree/").size(), 3);  // 5 files + 1 folder entry, 2 per page
        QCOMPARE(server_.requests_for("/tree/").first().path, "/api/models/acme/tiny-llm/tree/" + commit_of("tiny"));
        QStringList paths;
        for (const hub::RepoFile& file : full.files) paths << file.path;
        QCOMPARE(paths, QStringList({"config.json", "model.safetensors", "tokenizer.json", "onnx/model.onnx", "README.md"}));
        const hub::RepoFile& weights = full.files[1];
        QCOMPARE(weights.size, qint64(5000));
        QVERIFY(weights.is_lfs());
        QCOMPARE(weights.lfs_sha256, HubTestServer::sha256_hex(random_bytes(5000, 3)));
        QCOMPARE(weights.etag(), weights.lfs_sha256);
        const hub::RepoFile& config_file = full.files[0];
        QVERIFY(!config_file.is_lfs());
        QCOMPARE(config_file.etag(), HubTestServer::git_sha1_hex("{}"));

        // What a safetensors pull takes: no README, no onnx export.
        QStringList chosen;
        for (const hub::RepoFile& file : hub::select_engine_files(full.files)) chosen << file.path;
        QCOMPARE(chosen, QStringList({"config.json", "model.safetensors", "tokenizer.json"}));
    }

    void search() {
        hub::HubApi api(config());
        const auto run_search = [&](hub::SearchQuery query) {
            QStringList ids;
            run_loop([&](std::function<void()> done) {
                api.search(query, [&, done](const QList<hub::SearchHit>& hits, const hub::HubError& error) {
                    QVERIFY(!error);
                    for (const hub::SearchHit& hit : hits) ids << hit.id;
                    done();
                });
            });
            return ids;
        };
        hub::SearchQuery query;
        query.search = "GGUF";
        query.filters = {"gguf"};
        query.sort = "downloads";
        QCOMPARE(run_search(query), QStringList({"acme/popular-GGUF", "other/liked-GGUF", "acme/small-GGUF"}));
        const TestHubRequest request = server_.requests().last();
        QCOMPARE(request.path, QString("/api/models"));
        QVERIFY(request.query.contains("filter=gguf"));
        QVERIFY(request.query.contains("sort=downloads"));
        QVERIFY(request.query.contains("direction=-1"));
        query.sort = "likes";
        query.limit = 2;
        QCOMPARE(run_search(query), QStringList({"other/liked-GGUF", "acme/small-GGUF"}));
        query = {};
        query.search = "tiny";
        QCOMPARE(run_search(query), QStringList({"acme/tiny-llm"}));
        query.filters = {"gguf"};
        QCOMPARE(run_search(query), QStringList());
    }

    void gatedRepoNamesTheLicensePage() {
        hub::HubConfig anonymous = config();
        hub::HubApi api(anonymous);
        hub::HubError error;
        info(api, "acme/gated-llm", "main", &error);
        QCOMPARE(error.kind, hub::HubError::Kind::Gated);
        QCOMPARE(error.http_status, 401);
        QVERIFY2(error.message.contains("accept its license at " + server_.endpoint() + "/acme/gated-llm"), qPrintable(error.message));
        QVERIFY2(error.message.contains("no token is set"), qPrintable(error.message));

        hub::HubConfig wrong = config();
        wrong.token = "hf_not_on_the_list";
        hub::HubApi wrong_api(wrong);
        info(wrong_api, "acme/gated-llm", "main", &error);
        QCOMPARE(error.kind, hub::HubError::Kind::Gated);
        QCOMPARE(error.http_status, 403);
        QVERIFY(error.message.contains(server_.endpoint() + "/acme/gated-llm"));
        QCOMPARE(server_.requests().last().authorization, QByteArray("Bearer hf_not_on_the_list"));

        hub::HubConfig allowed = config();
        allowed.token = "hf_allowed";
        hub::HubApi allowed_api(allowed);
        const hub::RepoInfo granted = info(allowed_api, "acme/gated-llm", "main", &error);
        QVERIFY2(!error, qPrintable(error.text()));
        QCOMPARE(granted.gated, QString("manual"));
    }

    void missingRepo() {
        hub::HubConfig with_token = config();
        with_token.token = "hf_allowed";
        hub::HubApi api(with_token);
        hub::HubError error;
        info(api, "acme/no-such-model", "main", &error);
        QCOMPARE(error.kind, hub::HubError::Kind::RepoNotFound);
        QCOMPARE(error.http_status, 404);
        QVERIFY(error.message.contains("repository not found"));
        QCOMPARE(error.text().left(19), QString("acme/no-such-model:"));

        hub::HubApi anonymous(config());
        info(anonymous, "acme/no-such-model", "main", &error);
        QCOMPARE(error.kind, hub::HubError::Kind::RepoNotFound);
        QCOMPARE(error.http_status, 401);
        QVERIFY(error.message.contains("private or gated"));
    }

    void unreachableEndpoint() {
        hub::HubConfig dead = config();
        dead.endpoint = "http://127.0.0.1:1";
        hub::HubApi api(dead);
        hub::HubError error;
        info(api, "acme/tiny-llm", "main", &error);
        QCOMPARE(error.kind, hub::HubError::Kind::Network);
    }

    void settingsFromEnvironment() {
        const QByteArray home = QFile::encodeName(dir_.path() + "/home");
        qputenv("HF_HOME", home);
        qputenv("HF_ENDPOINT", server_.endpoint().toUtf8() + "/");
        qunsetenv("HF_TOKEN");
        qunsetenv("HF_HUB_CACHE");
        qunsetenv("HF_TOKEN_PATH");
        qunsetenv("HUGGING_FACE_HUB_TOKEN");
        QDir().mkpath(dir_.path() + "/home");
        QFile token(dir_.path() + "/home/token");
        QVERIFY(token.open(QIODevice::WriteOnly));
        token.write("hf_allowed\n");
        token.close();
        qputenv("OXINFER_HUB_STALL_SECONDS", "1.5");
        hub::HubConfig config = hub::HubConfig::from_environment();
        QCOMPARE(config.endpoint, server_.endpoint());
        QCOMPARE(config.token, QString("hf_allowed"));
        QCOMPARE(config.cache_dir, dir_.path() + "/home/hub");
        QCOMPARE(config.stall_timeout_ms, 1500);
        hub::HubApi api(config);
        hub::HubError error;
        info(api, "acme/gated-llm", "main", &error);
        QVERIFY2(!error, qPrintable(error.text()));
        QCOMPARE(server_.requests().last().authorization, QByteArray("Bearer hf_allowed"));
        qputenv("HF_TOKEN", "hf_from_env");
        QCOMPARE(hub::HubConfig::from_environment().token, QString("hf_from_env"));
        for (const char* name : {"HF_HOME", "HF_ENDPOINT", "HF_TOKEN", "OXINFER_HUB_STALL_SECONDS"}) qunsetenv(name);
    }

    void fileSelection() {
        const auto files = [](const QStringList& paths) {
            QList<hub::RepoFile> out;
            for (const QString& path : paths) out.append({path, 10, "", ""});
            return out;
        };
        const auto names = [](const QList<hub::RepoFile>& list) {
            QStringList out;
            for (const hub::RepoFile& file : list) out << file.path;
            return out;
        };
        QVERIFY(hub::glob_match("*.json", "sub/config.json"));  // fnmatch: '*' crosses folders
        QVERIFY(hub::glob_match("sub/", "sub/a.bin"));
        QVERIFY(hub::glob_match("model-0000[12]-*", "model-00002-of-00002.safetensors"));
        QVERIFY(!hub::glob_match("*.json", "model.safetensors"));
        QCOMPARE(names(hub::filter_files(files({"a.json", "b.bin", "c/d.json"}), {"*.json"})), QStringList({"a.json", "c/d.json"}));

        const auto sharded = files({"config.json", "generation_config.json", "model-00001-of-00002.safetensors",
                                    "model-00002-of-00002.safetensors", "model.safetensors.index.json",
                                    "pytorch_model.bin", "pytorch_model.bin.index.json", "tokenizer.json",
                                    "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
                                    "README.md", ".gitattributes", "original/consolidated.00.pth", "onnx/model.onnx",
                                    "flax_model.msgpack", "tf_model.h5"});
        QCOMPARE(names(hub::select_engine_files(sharded)),
                 QStringList({"config.json", "generation_config.json", "model-00001-of-00002.safetensors",
                              "model-00002-of-00002.safetensors", "model.safetensors.index.json", "tokenizer.json",
                              "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"}));
        const auto torch_only = files({"config.json", "pytorch_model.bin", "vocab.json", "merges.txt"});
        QCOMPARE(names(hub::select_engine_files(torch_only)), QStringList({"config.json", "pytorch_model.bin", "vocab.json", "merges.txt"}));
        const auto sentence = files({"config.json", "model.safetensors", "modules.json", "1_Pooling/config.json",
                                     "2_Dense/model.safetensors", "2_Dense/config.json", "onnx/model.onnx"});
        QCOMPARE(names(hub::select_engine_files(sentence)),
                 QStringList({"config.json", "model.safetensors", "modules.json", "1_Pooling/config.json",
                              "2_Dense/model.safetensors", "2_Dense/config.json"}));

        const auto gguf = files({"README.md", "m-Q4_K_M.gguf", "m-Q8_0-00001-of-00002.gguf", "m-Q8_0-00002-of-00002.gguf",
                                 "mmproj-m-bf16.gguf", "mmproj-m-f16.gguf"});
        QVERIFY(hub::is_gguf_repo(gguf));
        QVERIFY(!hub::is_gguf_repo(sharded));
        const auto variants = hub::gguf_variants(gguf);
        QCOMPARE(variants.size(), size_t(2));
        QCOMPARE(names(hub::select_gguf_variant(gguf, variants[1])),
                 QStringList({"m-Q8_0-00001-of-00002.gguf", "m-Q8_0-00002-of-00002.gguf", "mmproj-m-f16.gguf"}));
    }
};

QTEST_GUILESS_MAIN(HubApiTest)
#include "test_hub_api.moc"
