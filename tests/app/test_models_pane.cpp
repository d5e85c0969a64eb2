// The Models pane and its list (LocalModelsModel): what each model needs and whether it fits,
// folders the user adds, load and unload through the engine.

#include "core/app_settings.h"
#include "core/engine.h"
#include "core/hub_client.h"
#include "core/local_models_model.h"
#include "ui/models_pane.h"

#include <oxinfer/local_models.h>

#include <QAbstractItemModelTester>
#include <QDir>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>

using studio::LocalModelsModel;

namespace {
const QString kReference = QStringLiteral(OXINFER_REFERENCE_DIR);
}

class TestModelsPane : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY(root_.isValid());
        QSettings::setDefaultFormat(QSettings::IniFormat);
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, root_.filePath(QStringLiteral("settings")));
        qputenv("HF_HUB_CACHE", root_.filePath(QStringLiteral("no-cache")).toUtf8());
        qputenv("OXINFER_MODEL_PATH", "");
        // A folder of models the user adds: an HF folder and a loose GGUF file.
        QVERIFY(QDir().mkpath(root_.filePath(QStringLiteral("mine"))));
        namespace fs = std::filesystem;
        fs::copy(fs::path(kReference.toStdString()) / "llm/qwen3/hf", fs::path(root_.filePath(QStringLiteral("mine/qwen3-tiny")).toStdString()),
                 fs::copy_options::recursive);
        QVERIFY(QFile::copy(kReference + QStringLiteral("/llm/llama3/q8_0.gguf"), root_.filePath(QStringLiteral("mine/llama-tiny-Q8_0.gguf"))));
        QFile broken(root_.filePath(QStringLiteral("mine/broken-Q4_K_M.gguf")));
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write("GGUF, but cut short");
    }

    void listShowsWhatEachModelNeeds() {
        studio::AppSettings::setModelFolders({root_.filePath(QStringLiteral("mine"))});
        studio::AppSettings::setLoadSettings({0, 128, QStringLiteral("f32")});
        LocalModelsModel models;
        QAbstractItemModelTester tester(&models, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy scanned(&models, &LocalModelsModel::scanFinished);
        models.refresh();
        QVERIFY(models.scanning());
        QVERIFY(scanned.wait(20000));
        QCOMPARE(models.rowCount(), 3);
        QCOMPARE(models.columnCount(), int(LocalModelsModel::ColumnCount));

        const int qwen = models.rowOfPath(root_.filePath(QStringLiteral("mine/qwen3-tiny")));
        QVERIFY(qwen >= 0);
        const studio::LocalModelEntry& e = models.entries().at(qwen);
        const oxinfer::ModelFootprint footprint = oxinfer::model_footprint(e.path.toStdString());
        QCOMPARE(e.contextLength, qint64(128));  // the settings' context, below the model's 256
        QCOMPARE(e.weightBytes, qint64(footprint.weight_bytes));
        QCOMPARE(e.cacheBytes, qint64(footprint.cache_bytes(128, oxinfer::DType::F32)));
        QCOMPARE(e.type, QStringLiteral("F32"));
        QCOMPARE(models.index(qwen, LocalModelsModel::Architecture).data().toString(), QStringLiteral("Qwen3ForCausalLM"));
        QVERIFY(models.index(qwen, 0).data(LocalModelsModel::FitsRole).toBool());
        QVERIFY(models.index(qwen, 0).data(Qt::ToolTipRole).toString().contains(QStringLiteral("fits")));

        const int llama = models.rowOfPath(root_.filePath(QStringLiteral("mine/llama-tiny-Q8_0.gguf")));
        QCOMPARE(models.entries().at(llama).type, QStringLiteral("Q8_0"));

        // A file that cannot be read is listed with the reason, never loaded.
        const int broken = models.rowOfPath(root_.filePath(QStringLiteral("mine/broken-Q4_K_M.gguf")));
        QVERIFY(broken >= 0);
        QVERIFY(!models.entries().at(broken).problem.isEmpty());
        QVERIFY(!models.index(broken, 0).data(LocalModelsModel::FitsRole).toBool());
        QCOMPARE(models.index(broken, LocalModelsModel::Memory).data().toString(), QStringLiteral("unreadable"));

        // A model larger than the free memory does not fit.
        studio::LocalModelEntry huge = e;
        huge.weightBytes = e.availableBytes + 1;
        QVERIFY(!LocalModelsModel::fits(huge));
        QVERIFY(LocalModelsModel::fitText(huge).endsWith(QStringLiteral("does not fit")));
    }

    void paneLoadsAndUnloads() {
        studio::AppSettings::setModelFolders({});
        studio::AppSettings::setLoadSettings({0, 128, QStringLiteral("f32")});
        studio::Engine engine;
        studio::HubClient hub;
        LocalModelsModel models;
        studio::ModelsPane pane(&engine, &models, &hub);
        QSignalSpy scanned(&models, &LocalModelsModel::scanFinished);
        models.refresh();
        QVERIFY(scanned.wait(20000));
        QCOMPARE(models.rowCount(), 0);

        pane.addFolder(root_.filePath(QStringLiteral("mine")));  // saved and scanned again
        QCOMPARE(studio::AppSettings::modelFolders(), QStringList{root_.filePath(QStringLiteral("mine"))});
        QVERIFY(scanned.wait(20000));
        QCOMPARE(models.rowCount(), 3);

        auto* load = pane.findChild<QPushButton*>(QStringLiteral("loadSelected"));
        auto* unload = pane.findChild<QPushButton*>(QStringLiteral("unloadModel"));
        QVERIFY(!load->isEnabled());
        pane.table()->selectRow(models.rowOfPath(root_.filePath(QStringLiteral("mine/broken-Q4_K_M.gguf"))));
        QVERIFY(!load->isEnabled());  // unreadable
        pane.table()->selectRow(models.rowOfPath(root_.filePath(QStringLiteral("mine/qwen3-tiny"))));
        QVERIFY(load->isEnabled());
        QVERIFY(pane.findChild<QLabel*>(QStringLiteral("modelDetails"))->text().contains(QStringLiteral("qwen3-tiny")));

        QSignalSpy loaded(&engine, &studio::Engine::modelLoaded);
        load->click();
        QVERIFY(loaded.wait(30000));
        QCOMPARE(engine.model()->contextLength, qint64(128));
        QVERIFY(pane.findChild<QLabel*>(QStringLiteral("loadedModel"))->text().startsWith(QStringLiteral("Loaded: qwen3-tiny")));
        QVERIFY(unload->isEnabled());
        QSignalSpy unloaded(&engine, &studio::Engine::modelUnloaded);
        unload->click();
        QVERIFY(unloaded.wait(10000));
        QVERIFY(!engine.hasModel());
        QCOMPARE(pane.findChild<QLabel*>(QStringLiteral("loadedModel"))->text(), QStringLiteral("No model loaded."));
    }

private:
    QTemporaryDir root_;
};

QTEST_MAIN(TestModelsPane)
#include "test_models_pane.moc"
