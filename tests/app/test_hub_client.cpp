// The app's hub access (app/core/hub_client.h) against the local test server that speaks the
// Hugging Face API: search, quantizations, a download with progress, pause, resume and cancel,
// the downloaded model in the local list; and the first-run page with nothing downloaded.

#include "core/hub_client.h"
#include "core/local_models_model.h"
#include "core/recommended_models.h"
#include "ui/main_window.h"
#include "ui/models_pane.h"

#include "hub_test_support.h"

#include <oxinfer/platform.h>

#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

using studio::HubClient;
using namespace oxinfer::test;

class TestHubClient : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY(root_.isValid());
        QFile model(QStringLiteral(OXINFER_REFERENCE_DIR "/llm/qwen3/f32.gguf"));
        QVERIFY(model.open(QIODevice::ReadOnly));
        gguf_ = model.readAll();
        TestHubRepo repo;
        repo.id = QStringLiteral("acme/tiny-chat-GGUF");
        repo.commit = commit_of(repo.id);
        repo.tags = {QStringLiteral("gguf"), QStringLiteral("text-generation")};
        repo.downloads = 1234;
        repo.files = {{QStringLiteral("tiny-chat-F32.gguf"), gguf_},
                      {QStringLiteral("tiny-chat-Q8_0.gguf"), gguf_.left(60000)},
                      {QStringLiteral("README.md"), "# tiny", false}};
        server_.add_repo(repo);
        TestHubRepo other;
        other.id = QStringLiteral("acme/other-model");
        other.commit = commit_of(other.id);
        other.tags = {QStringLiteral("text-generation")};
        other.files = {{QStringLiteral("config.json"), "{}", false}};
        server_.add_repo(other);

        qputenv("HF_ENDPOINT", server_.endpoint().toUtf8());
        qputenv("HF_HUB_CACHE", root_.filePath(QStringLiteral("cache")).toUtf8());
        qputenv("HF_TOKEN", "");
        qputenv("OXINFER_HUB_RETRY_MS", "20");
        qputenv("OXINFER_STUDIO_DATA_DIR", root_.filePath(QStringLiteral("data")).toUtf8());
        qputenv("OXINFER_MODEL_PATH", root_.filePath(QStringLiteral("no-models")).toUtf8());
        qputenv("XDG_CONFIG_HOME", root_.filePath(QStringLiteral("config")).toUtf8());
    }

    void searchAndVariants() {
        HubClient hub;
        QSignalSpy searched(&hub, &HubClient::searchFinished);
        hub.search(QStringLiteral("tiny"));
        QVERIFY(searched.wait(10000));
        const auto hits = searched.first().first().value<QList<oxinfer::hub::SearchHit>>();
        QCOMPARE(searched.first().at(1).toString(), QString());
        QCOMPARE(hits.size(), 1);
        QCOMPARE(hits.first().id, QStringLiteral("acme/tiny-chat-GGUF"));
        QCOMPARE(server_.requests_for(QStringLiteral("/api/models")).last().query.contains(QStringLiteral("search=tiny")), true);

        QSignalSpy listed(&hub, &HubClient::variantsListed);
        hub.listVariants(QStringLiteral("acme/tiny-chat-GGUF"));
        QVERIFY(listed.wait(10000));
        const auto variants = listed.first().at(1).value<QList<studio::ModelVariant>>();
        QCOMPARE(variants.size(), 2);
        QCOMPARE(variants[0].name, QStringLiteral("Q8_0"));  // smallest first
        QCOMPARE(variants[0].bytes, qint64(60000));
        QCOMPARE(variants[1].name, QStringLiteral("F32"));
        QCOMPARE(variants[1].files, QStringList{QStringLiteral("tiny-chat-F32.gguf")});

        hub.listVariants(QStringLiteral("acme/missing"));
        QVERIFY(listed.wait(10000));
        QVERIFY(!listed.last().at(2).toString().isEmpty());
    }

    void downloadPausesResumesAndLands() {
        TestHubFaults slow;
        slow.bytes_per_second = 40000;  // 3 s for the file: time to pause
        server_.set_faults(QStringLiteral("tiny-chat-F32.gguf"), slow);
        HubClient hub;
        QSignalSpy progress(&hub, &HubClient::downloadProgress);
        QSignalSpy finished(&hub, &HubClient::downloadFinished);
        QSignalSpy failed(&hub, &HubClient::downloadFailed);
        hub.download(QStringLiteral("acme/tiny-chat-GGUF"), QStringLiteral("F32"));
        QCOMPARE(hub.downloadState(), HubClient::DownloadState::Running);
        QVERIFY(QTest::qWaitFor([&] {
            return !progress.isEmpty() && progress.last().first().value<oxinfer::hub::DownloadProgress>().done_bytes > 0;
        }, 10000));
        hub.pause();
        QCOMPARE(hub.downloadState(), HubClient::DownloadState::Paused);
        QTest::qWait(300);
        hub.resume();
        QVERIFY(finished.wait(30000));
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().at(1).toString()));
        QCOMPARE(hub.downloadState(), HubClient::DownloadState::Idle);
        const QString path = finished.first().at(1).toString();
        QVERIFY2(path.endsWith(QStringLiteral("/snapshots/") + commit_of(QStringLiteral("acme/tiny-chat-GGUF")) + "/tiny-chat-F32.gguf"),
                 qPrintable(path));
        QCOMPARE(file_sha256(path), HubTestServer::sha256_hex(gguf_));
        // After the pause the file was resumed with a Range request (LFS storage), not started again.
        bool ranged = false;
        for (const auto& request : server_.requests_for(QStringLiteral("/storage/"))) ranged = ranged || request.range_start() > 0;
        QVERIFY(ranged);
        server_.clear_faults();

        // The local model list finds it in the cache, with what it needs.
        studio::LocalModelsModel models;
        QSignalSpy scanned(&models, &studio::LocalModelsModel::scanFinished);
        models.refresh();
        QVERIFY(scanned.wait(20000));
        QCOMPARE(models.rowCount(), 1);
        QCOMPARE(models.entries().first().id, QStringLiteral("acme/tiny-chat-GGUF"));
        QCOMPARE(models.entries().first().path, path);
        QVERIFY(models.entries().first().parameters > 0);
    }

    void cancelStopsAndKeepsThePartialFile() {
        TestHubFaults slow;
        slow.bytes_per_second = 10000;
        server_.set_faults(QStringLiteral("tiny-chat-Q8_0.gguf"), slow);
        HubClient hub;
        QSignalSpy progress(&hub, &HubClient::downloadProgress);
        QSignalSpy failed(&hub, &HubClient::downloadFailed);
        hub.download(QStringLiteral("acme/tiny-chat-GGUF"), QStringLiteral("Q8_0"));
        QVERIFY(QTest::qWaitFor([&] {
            return !progress.isEmpty() && progress.last().first().value<oxinfer::hub::DownloadProgress>().done_bytes > 0;
        }, 10000));
        hub.cancel();
        QVERIFY(failed.wait(10000));
        QVERIFY(failed.first().at(1).toString().contains(QStringLiteral("cancelled")));
        QCOMPARE(hub.downloadState(), HubClient::DownloadState::Idle);
        server_.clear_faults();
    }

    void firstRunRecommendsModelsThatFit() {
        const quint64 available = oxinfer::detect_platform().available_ram_bytes;
        const auto recommended = studio::recommendedModels(available);
        for (const auto& model : recommended) QVERIFY(quint64(model.bytes) < available);
        QVERIFY(studio::recommendedModels(0).isEmpty());
        QVERIFY(studio::recommendedModels(quint64(1) << 40).size() >= 3);

        qputenv("HF_HUB_CACHE", root_.filePath(QStringLiteral("empty-cache")).toUtf8());
        MainWindow window;
        QVERIFY(QTest::qWaitFor([&] { return window.currentPane() == QLatin1String("models"); }, 20000));
        auto* tabs = window.modelsPane()->findChild<QTabWidget*>(QStringLiteral("modelTabs"));
        QCOMPARE(tabs->currentWidget()->objectName(), QStringLiteral("downloadTab"));
        const QList<QPushButton*> buttons = window.modelsPane()->findChildren<QPushButton*>(QStringLiteral("recommendedDownload"));
        QCOMPARE(buttons.size(), recommended.size());

        // One click: the recommended quantization downloads and appears among the local models.
        const studio::RecommendedModel& pick = recommended.first();
        TestHubRepo repo;
        repo.id = pick.repo;
        repo.commit = commit_of(repo.id);
        repo.files = {{QStringLiteral("model-%1.gguf").arg(pick.variant), gguf_}, {QStringLiteral("model-Q2_K.gguf"), gguf_.left(1000)}};
        server_.add_repo(repo);
        QPushButton* button = nullptr;
        for (QPushButton* b : buttons)
            if (b->property("repo").toString() == pick.repo) button = b;
        QVERIFY(button);
        QSignalSpy scanned(window.localModels(), &studio::LocalModelsModel::scanFinished);
        button->click();
        QVERIFY(QTest::qWaitFor([&] { return window.localModels()->rowCount() == 1; }, 30000));
        QCOMPARE(window.localModels()->entries().first().id, pick.repo);
        QVERIFY(window.localModels()->entries().first().path.endsWith(QStringLiteral("model-%1.gguf").arg(pick.variant)));
        QVERIFY(server_.requests_for(QStringLiteral("model-Q2_K.gguf"), QStringLiteral("HEAD")).isEmpty());  // only the one chosen
        qputenv("HF_HUB_CACHE", root_.filePath(QStringLiteral("cache")).toUtf8());
    }

private:
    QTemporaryDir root_;
    HubTestServer server_;
    QByteArray gguf_;
};

QTEST_MAIN(TestHubClient)
#include "test_hub_client.moc"
