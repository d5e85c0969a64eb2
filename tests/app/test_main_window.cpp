// The main window: title, the status bar's platform line, the pane sidebar, rendering, and the
// real oxinfer-studio binary's --screenshot option.

#include "core/chat_list_model.h"
#include "ui/chat_pane.h"
#include "ui/main_window.h"
#include "ui/message_view.h"

#include <oxinfer/platform.h>

#include <QApplication>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QListWidget>
#include <QProcess>
#include <QProcessEnvironment>
#include <QSet>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>

namespace {

// The oxinfer-studio binary. The build tree has the tests in <build>/tests and the app in
// <build>/app; OXINFER_STUDIO_PATH, when the build defines it, names the file exactly.
QString studioPath() {
#ifdef OXINFER_STUDIO_PATH
    return QStringLiteral(OXINFER_STUDIO_PATH);
#else
    const QDir testDir(QCoreApplication::applicationDirPath());
    for (const QString& name : {QStringLiteral("../app/oxinfer-studio"), QStringLiteral("../app/oxinfer-studio.exe")}) {
        const QFileInfo file(testDir.filePath(name));
        if (file.isFile() && file.isExecutable()) return file.canonicalFilePath();
    }
    return {};
#endif
}

QProcessEnvironment offscreenEnvironment() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    return env;
}

}  // namespace

class TestMainWindow : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void title();
    void platformLabelShowsTheMachine();
    void initTestCase();
    void sidebarListsEveryPane();
    void screenshotOfAPane();
    void importChatAndModelAtStart();
    void grabRendersTheWindow();
    void screenshotOptionWritesPng();
    void screenshotToUnwritablePathFails();

private:
    QTemporaryDir root_;
};

void TestMainWindow::title() {
    MainWindow window;
    QCOMPARE(window.windowTitle(), QStringLiteral("Oxinfer Studio"));
    QCOMPARE(window.size(), MainWindow::defaultSize());
    QVERIFY(!window.windowIcon().isNull());
}

void TestMainWindow::platformLabelShowsTheMachine() {
    MainWindow window;
    auto* label = window.statusBar()->findChild<QLabel*>(QStringLiteral("platformLabel"));
    QVERIFY(label != nullptr);
    const QString text = label->text();
    QCOMPARE(text, window.platformLine());

    const oxinfer::PlatformInfo info = oxinfer::detect_platform();
    QVERIFY2(text.contains(QStringLiteral("%1 core").arg(info.physical_cores)), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("%1 thread").arg(info.logical_cores)), qPrintable(text));
    for (const auto& name : info.features.names())
        QVERIFY2(text.contains(QString::fromStdString(name)), qPrintable(QString::fromStdString(name) + " in " + text));
    const QString totalRam = QString::fromStdString(oxinfer::format_bytes(info.total_ram_bytes));
    QVERIFY2(text.contains(totalRam + " RAM"), qPrintable(totalRam + " in " + text));
    if (info.cpu_name != "unknown") QVERIFY2(text.contains(QString::fromStdString(info.cpu_name).simplified()), qPrintable(text));
}

void TestMainWindow::initTestCase() {
    // Chats, settings and models of this test only.
    QVERIFY(root_.isValid());
    qputenv("OXINFER_STUDIO_DATA_DIR", root_.filePath(QStringLiteral("data")).toUtf8());
    qputenv("OXINFER_MODEL_PATH", root_.filePath(QStringLiteral("models")).toUtf8());
    qputenv("HF_HUB_CACHE", root_.filePath(QStringLiteral("no-cache")).toUtf8());
    qputenv("XDG_CONFIG_HOME", root_.filePath(QStringLiteral("config")).toUtf8());
}

void TestMainWindow::sidebarListsEveryPane() {
    MainWindow window;
    auto* navigation = window.findChild<QListWidget*>(QStringLiteral("navigation"));
    QVERIFY(navigation != nullptr);
    QCOMPARE(navigation->count(), 7);
    QStringList labels;
    for (int i = 0; i < navigation->count(); ++i) labels << navigation->item(i)->text();
    QCOMPARE(labels, (QStringList{"Chat", "Transcribe", "Speak", "Imagine", "Search", "Models", "Settings"}));
    QCOMPARE(window.currentPane(), QStringLiteral("chat"));
    navigation->setCurrentRow(5);
    QCOMPARE(window.currentPane(), QStringLiteral("models"));
    QVERIFY(window.showPane(QStringLiteral("settings")));
    QCOMPARE(navigation->currentRow(), 6);
}

void TestMainWindow::screenshotOfAPane() {
    const QString studio = studioPath();
    QVERIFY(!studio.isEmpty());
    const QString file = root_.filePath(QStringLiteral("models.png"));
    QProcess process;
    process.setProcessEnvironment(offscreenEnvironment());
    process.start(studio, {QStringLiteral("--screenshot"), file, QStringLiteral("--pane"), QStringLiteral("models")});
    QVERIFY(process.waitForFinished(60000));
    QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());
    QImage image;
    QVERIFY(image.load(file, "PNG"));
    QCOMPARE(image.size(), MainWindow::defaultSize());

    process.start(studio, {QStringLiteral("--screenshot"), file, QStringLiteral("--pane"), QStringLiteral("nowhere")});
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(process.exitCode(), 2);
    QVERIFY(QString::fromLocal8Bit(process.readAllStandardError()).contains(QStringLiteral("unknown pane 'nowhere'")));
}

void TestMainWindow::importChatAndModelAtStart() {
    const QString studio = studioPath();
    QVERIFY(!studio.isEmpty());
    const QString chat = root_.filePath(QStringLiteral("chat.json"));
    QFile out(chat);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(R"({"format": "oxinfer-chat", "version": 1, "title": "Imported", "currentLeaf": 2, "messages": [
        {"id": 1, "parent": null, "role": "user", "content": "Hi"},
        {"id": 2, "parent": 1, "role": "assistant", "content": "Hello!"}]})");
    out.close();
    const QString model = QStringLiteral(OXINFER_REFERENCE_DIR "/llm/qwen3/hf");
    QProcess process;
    process.setProcessEnvironment(offscreenEnvironment());
    process.start(studio, {QStringLiteral("--screenshot"), root_.filePath(QStringLiteral("chat.png")), QStringLiteral("--import-chat"), chat,
                           QStringLiteral("--model"), model, QStringLiteral("--pane"), QStringLiteral("chat")});
    QVERIFY(process.waitForFinished(60000));
    QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());

    // The chat is now in the store: a new window opens it, as the last chat.
    MainWindow window;
    QCOMPARE(window.chatPane()->chatList()->rowCount(), 1);
    QCOMPARE(window.chatPane()->currentChat(), window.chatPane()->chatList()->idAt(0));
    QCOMPARE(window.chatPane()->messageView()->cards().size(), 2);

    // A broken file is an error naming it.
    out.open(QIODevice::WriteOnly);
    out.write("{\"format\": \"nope\"}");
    out.close();
    process.start(studio, {QStringLiteral("--screenshot"), root_.filePath(QStringLiteral("chat.png")), QStringLiteral("--import-chat"), chat});
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(process.exitCode(), 1);
    const QString error = QString::fromLocal8Bit(process.readAllStandardError());
    QVERIFY2(error.contains(chat) && error.contains(QStringLiteral("not an exported chat")), qPrintable(error));
}

void TestMainWindow::grabRendersTheWindow() {
    MainWindow window;
    window.setAttribute(Qt::WA_DontShowOnScreen);
    window.show();
    QCoreApplication::processEvents();
    const QImage image = window.grab().toImage();
    QVERIFY(!image.isNull());
    QCOMPARE(image.size(), window.size() * window.devicePixelRatio());
}

void TestMainWindow::screenshotOptionWritesPng() {
    const QString studio = studioPath();
    QVERIFY2(!studio.isEmpty(), "oxinfer-studio is not built (expected next to the tests, in <build>/app)");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString file = dir.filePath(QStringLiteral("main-window.png"));

    QProcess process;
    process.setProcessEnvironment(offscreenEnvironment());
    process.start(studio, {QStringLiteral("--screenshot"), file});
    QVERIFY2(process.waitForFinished(60000), qPrintable(process.errorString()));
    QCOMPARE(process.exitStatus(), QProcess::NormalExit);
    QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());

    QImage image;
    QVERIFY2(image.load(file, "PNG"), qPrintable(file));
    QCOMPARE(image.size(), MainWindow::defaultSize());
    // Not one flat colour: a rendered window has text, a status bar and the icon.
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 3)
        for (int x = 0; x < image.width(); x += 3) colours.insert(image.pixel(x, y));
    QVERIFY2(colours.size() > 16, qPrintable(QStringLiteral("%1 distinct colours").arg(colours.size())));
}

void TestMainWindow::screenshotToUnwritablePathFails() {
    const QString studio = studioPath();
    QVERIFY2(!studio.isEmpty(), "oxinfer-studio is not built (expected next to the tests, in <build>/app)");
    const QString file = QStringLiteral("/nonexistent-oxinfer-dir/x.png");
    QVERIFY(!QFileInfo::exists(QFileInfo(file).path()));

    QProcess process;
    process.setProcessEnvironment(offscreenEnvironment());
    process.start(studio, {QStringLiteral("--screenshot"), file});
    QVERIFY2(process.waitForFinished(60000), qPrintable(process.errorString()));
    QCOMPARE(process.exitStatus(), QProcess::NormalExit);
    QVERIFY(process.exitCode() != 0);
    const QString error = QString::fromLocal8Bit(process.readAllStandardError());
    QVERIFY2(error.contains(QStringLiteral("oxinfer-studio: error: %1: cannot write screenshot").arg(file)), qPrintable(error));
}

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
