// The app end to end, offscreen: load a small test checkpoint from the Models list, send a
// message and watch it stream, stop, regenerate, edit and resend, switch branches, restart the
// app and find the chat with its branches; the event loop answers within 50 ms meanwhile; and a
// SIGKILL during a reply loses no earlier message.

#include "core/chat_list_model.h"
#include "core/chat_store.h"
#include "core/engine.h"
#include "core/local_models_model.h"
#include "ui/chat_pane.h"
#include "ui/main_window.h"
#include "ui/message_view.h"

#include "chat_test_model.h"
#include "event_loop_probe.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTimer>
#include <QToolButton>
#include <QtTest>

#include <cstdio>

using studio::ChatPane;
using studio::Engine;
using studio::MessageCard;

namespace {


// The environment every window of the test uses: its own settings, chats, models and no cache.
void isolate(const QString& root) {
    qputenv("OXINFER_STUDIO_DATA_DIR", (root + "/data").toUtf8());
    qputenv("OXINFER_MODEL_PATH", (root + "/models").toUtf8());
    qputenv("HF_HUB_CACHE", (root + "/no-cache").toUtf8());
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, root + "/settings");
}

bool waitForScan(MainWindow& window) {
    return QTest::qWaitFor([&] { return !window.localModels()->scanning() && window.localModels()->rowCount() > 0; }, 20000);
}

// Chooses the test model in the chat pane and loads it.
bool loadModel(MainWindow& window) {
    auto* choice = window.findChild<QComboBox*>(QStringLiteral("modelChoice"));
    if (!choice || choice->count() != 1) return false;
    choice->setCurrentIndex(0);
    QSignalSpy loaded(window.engine(), &Engine::modelLoaded);
    window.findChild<QPushButton*>(QStringLiteral("loadModel"))->click();
    return loaded.wait(30000);
}

void setMaxTokens(MainWindow& window, int tokens) {
    window.chatPane()->findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(tokens);
}

// Greedy decoding: this random model then runs on without ever picking its stop token.
void setGreedy(MainWindow& window) {
    window.chatPane()->findChild<QDoubleSpinBox*>(QStringLiteral("temperature"))->setValue(0);
}

void send(MainWindow& window, const QString& text) {
    window.chatPane()->findChild<QPlainTextEdit*>(QStringLiteral("composer"))->setPlainText(text);
    window.chatPane()->findChild<QPushButton*>(QStringLiteral("sendButton"))->click();
}

QToolButton* button(MessageCard* card, const char* name) { return card->findChild<QToolButton*>(QLatin1String(name)); }

QString branchPosition(MessageCard* card) {
    auto* label = card->findChild<QLabel*>(QStringLiteral("branchPosition"));
    return label ? label->text() : QString();
}

// Run as a child process: a window that chats, then streams a long reply until it is killed.
int runChildApp(int argc, char** argv) {
    QApplication app(argc, argv);
    isolate(QString::fromLocal8Bit(argv[2]));
    MainWindow window;
    if (!waitForScan(window) || !loadModel(window)) return 3;
    QSignalSpy finished(window.engine(), &Engine::generationFinished);
    setMaxTokens(window, 6);
    setGreedy(window);
    send(window, QStringLiteral("first question"));
    if (!finished.wait(30000)) return 4;
    setMaxTokens(window, 4000);
    send(window, QStringLiteral("second question"));
    QTimer announce;
    QObject::connect(&announce, &QTimer::timeout, [&] {
        const auto chat = window.chatStore()->chat(window.chatPane()->currentChat());
        const auto reply = chat ? window.chatStore()->message(chat->currentLeaf) : std::nullopt;
        if (reply && reply->content.size() > 20) {  // saved at least once while streaming
            std::printf("streaming\n");
            std::fflush(stdout);
        }
    });
    announce.start(100);
    return app.exec();
}

}  // namespace

class TestChatPane : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY(root_.isValid());
        isolate(root_.path());
        oxinfer::test::write_chat_test_model(std::filesystem::path(root_.path().toStdString()) / "models" / "chat-model", 8);
    }

    void chatStreamsStopsRegeneratesEditsAndSurvivesARestart() {
        qint64 chatId = 0;
        {
            MainWindow window;
            window.setAttribute(Qt::WA_DontShowOnScreen);
            window.show();
            QAbstractItemModelTester modelsTester(window.localModels(), QAbstractItemModelTester::FailureReportingMode::QtTest);
            QAbstractItemModelTester chatsTester(window.chatPane()->chatList(), QAbstractItemModelTester::FailureReportingMode::QtTest);
            QVERIFY(waitForScan(window));
            QCOMPARE(window.localModels()->entries().first().id, QStringLiteral("chat-model"));
            QVERIFY(studio::LocalModelsModel::fits(window.localModels()->entries().first()));

            oxinfer::test::EventLoopProbe probe;
            QVERIFY(loadModel(window));
            ChatPane* pane = window.chatPane();
            auto* sendButton = pane->findChild<QPushButton*>(QStringLiteral("sendButton"));

            // Send: tokens stream into the reply's card while the engine writes.
            QSignalSpy updates(window.engine(), &Engine::generationUpdate);
            QSignalSpy finished(window.engine(), &Engine::generationFinished);
            setGreedy(window);  // settings made before the first message belong to the new chat
            send(window, QStringLiteral("Hello"));
            QVERIFY(pane->generating());
            QCOMPARE(sendButton->text(), QStringLiteral("Stop"));
            QVERIFY(updates.wait(30000));
            QVERIFY(QTest::qWaitFor([&] { return updates.size() >= 3; }, 30000));
            const QList<MessageCard*> streaming = pane->messageView()->cards();
            QCOMPARE(streaming.size(), 2);
            QVERIFY(!streaming.last()->renderedText().isEmpty());

            // Stop.
            sendButton->click();
            QVERIFY(finished.wait(10000));
            QCOMPARE(finished.last().first().value<studio::GenerationResult>().stopReason, QStringLiteral("cancelled"));
            QVERIFY(!pane->generating());
            QVERIFY2(probe.worstGapMs() < 50, qPrintable(QStringLiteral("the UI waited %1 ms").arg(probe.worstGapMs())));
            chatId = pane->currentChat();
            QVERIFY(chatId != 0);
            const auto first = window.chatStore()->path(window.chatStore()->chat(chatId)->currentLeaf);
            QCOMPARE(first.size(), 2);
            QVERIFY(!first.last().meta.value("partial").toBool());
            QCOMPARE(first.last().meta.value("stop").toString(), QStringLiteral("cancelled"));

            // Regenerate: a second reply beside the first.
            setMaxTokens(window, 12);
            button(pane->messageView()->cards().last(), "regenerateMessage")->click();
            QVERIFY(finished.wait(30000));
            QCOMPARE(finished.last().first().value<studio::GenerationResult>().generatedTokens, qint64(12));
            QCOMPARE(branchPosition(pane->messageView()->cards().last()), QStringLiteral("2 / 2"));

            // Edit and resend: a second first message, with its own reply.
            button(pane->messageView()->cards().first(), "editMessage")->click();
            auto* composer = pane->findChild<QPlainTextEdit*>(QStringLiteral("composer"));
            QCOMPARE(composer->toPlainText(), QStringLiteral("Hello"));
            composer->setPlainText(QStringLiteral("Hello, edited"));
            sendButton->click();
            QVERIFY(finished.wait(30000));
            QList<MessageCard*> cards = pane->messageView()->cards();
            QCOMPARE(cards.size(), 2);
            QCOMPARE(cards.first()->message().content, QStringLiteral("Hello, edited"));
            QCOMPARE(branchPosition(cards.first()), QStringLiteral("2 / 2"));

            // Back to the first version: its newest reply (the regenerated one) comes with it.
            button(cards.first(), "previousBranch")->click();
            cards = pane->messageView()->cards();
            QCOMPARE(cards.first()->message().content, QStringLiteral("Hello"));
            QCOMPARE(branchPosition(cards.last()), QStringLiteral("2 / 2"));
            QCOMPARE(cards.last()->message().meta.value("tokens").toInt(), 12);
            QVERIFY2(probe.worstGapMs() < 50, qPrintable(QStringLiteral("the UI waited %1 ms").arg(probe.worstGapMs())));
        }

        // Restart: the chat and its branches are all there.
        MainWindow window;
        QCOMPARE(window.chatPane()->chatList()->rowCount(), 1);
        QCOMPARE(window.chatPane()->chatList()->idAt(0), chatId);
        window.chatPane()->openChat(chatId);
        const QList<MessageCard*> cards = window.chatPane()->messageView()->cards();
        QCOMPARE(cards.size(), 2);
        QCOMPARE(cards.first()->message().content, QStringLiteral("Hello"));
        QCOMPARE(branchPosition(cards.first()), QStringLiteral("1 / 2"));
        QCOMPARE(branchPosition(cards.last()), QStringLiteral("2 / 2"));
        studio::ChatStore* store = window.chatStore();
        QCOMPARE(store->messageCount(chatId), 5);  // 2 first messages, 3 replies
        const auto roots = store->children(chatId, 0);
        QCOMPARE(roots.size(), 2);
        QCOMPARE(store->children(chatId, roots[0].id).size(), 2);
        QCOMPARE(store->children(chatId, roots[1].id).size(), 1);

        // Exports: Markdown of the branch shown, JSON of the whole tree.
        const QString markdown = root_.filePath(QStringLiteral("chat.md")), json = root_.filePath(QStringLiteral("chat.json"));
        QVERIFY(window.chatPane()->exportChat(chatId, markdown));
        QVERIFY(window.chatPane()->exportChat(chatId, json));
        QFile md(markdown);
        QVERIFY(md.open(QIODevice::ReadOnly));
        const QString mdText = QString::fromUtf8(md.readAll());
        QVERIFY(mdText.contains(QStringLiteral("Hello")));
        QVERIFY(!mdText.contains(QStringLiteral("Hello, edited")));
        QFile js(json);
        QVERIFY(js.open(QIODevice::ReadOnly));
        QCOMPARE(QJsonDocument::fromJson(js.readAll()).object().value("messages").toArray().size(), 5);
    }

    void droppedTextFilesAttachAndMediaIsExplained() {
        MainWindow window;
        QVERIFY(waitForScan(window));
        QVERIFY(loadModel(window));
        ChatPane* pane = window.chatPane();
        QVERIFY(pane->currentChat() != 0);  // the window reopens the last chat
        pane->openChat(0);
        const QString notes = root_.filePath(QStringLiteral("notes.txt")), picture = root_.filePath(QStringLiteral("cat.png"));
        QFile text(notes);
        QVERIFY(text.open(QIODevice::WriteOnly));
        text.write("The meeting is on Tuesday.\n");
        text.close();
        QImage(4, 4, QImage::Format_RGB32).save(picture, "PNG");
        pane->attachFiles({QUrl::fromLocalFile(notes), QUrl::fromLocalFile(picture)});
        QCOMPARE(pane->attachmentNames(), QStringList{QStringLiteral("notes.txt")});
        auto* banner = pane->findChild<QLabel*>(QStringLiteral("chatBanner"));
        QVERIFY(banner->isVisibleTo(pane));
        QVERIFY2(banner->text().contains(QStringLiteral("cannot read images yet")), qPrintable(banner->text()));

        QSignalSpy finished(window.engine(), &Engine::generationFinished);
        setMaxTokens(window, 3);
        send(window, QStringLiteral("When is the meeting?"));
        QVERIFY(finished.wait(30000));
        const auto branch = window.chatStore()->path(window.chatStore()->chat(pane->currentChat())->currentLeaf);
        QCOMPARE(branch.first().content, QStringLiteral("```notes.txt\nThe meeting is on Tuesday.\n```\n\nWhen is the meeting?"));
        QVERIFY(pane->attachmentNames().isEmpty());  // used by that message
        // Shown as a block named after the file.
        const QList<MessageCard*> cards = pane->messageView()->cards();
        QCOMPARE(cards.first()->findChild<QLabel*>(QStringLiteral("codeLanguage"))->text(), QStringLiteral("notes.txt"));
    }

    void otherPanesSayTheyAreComing() {
        MainWindow window;
        for (const QString& name : {QStringLiteral("transcribe"), QStringLiteral("speak"), QStringLiteral("imagine"), QStringLiteral("search")}) {
            QVERIFY(window.showPane(name));
            QCOMPARE(window.currentPane(), name);
            auto* note = window.findChild<QWidget*>(name + QStringLiteral("Pane"))->findChild<QLabel*>(QStringLiteral("comingNote"));
            QVERIFY(note && note->text().contains(QStringLiteral("Not built yet")));
        }
        QVERIFY(!window.showPane(QStringLiteral("nonsense")));
    }

    void sigkillDuringAReplyLosesNoEarlierMessage() {
        QTemporaryDir root;
        QVERIFY(root.isValid());
        QVERIFY(QDir().mkpath(root.filePath(QStringLiteral("models"))));
        QVERIFY(QFile::link(root_.filePath(QStringLiteral("models/chat-model")), root.filePath(QStringLiteral("models/chat-model"))));
        QProcess child;
        child.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        child.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--child-app"), root.path()});
        QVERIFY(child.waitForStarted());
        QVERIFY2(QTest::qWaitFor([&] { return child.canReadLine() || child.state() == QProcess::NotRunning; }, 60000),
                 "the child never started streaming");
        QCOMPARE(child.state(), QProcess::Running);
        QVERIFY(child.readLine().startsWith("streaming"));
        child.kill();  // SIGKILL on Unix
        QVERIFY(child.waitForFinished(10000));
        QCOMPARE(child.exitStatus(), QProcess::CrashExit);

        studio::ChatStore store;
        QString error;
        QVERIFY2(store.open(root.filePath(QStringLiteral("data/chats.sqlite")), &error), qPrintable(error));
        const auto chats = store.chats();
        QCOMPARE(chats.size(), 1);
        const auto branch = store.path(chats.first().currentLeaf);
        QCOMPARE(branch.size(), 4);
        QCOMPARE(branch[0].content, QStringLiteral("first question"));
        QCOMPARE(branch[1].meta.value("tokens").toInt(), 6);  // the finished reply, whole
        QVERIFY(!branch[1].meta.value("partial").toBool());
        QCOMPARE(branch[2].content, QStringLiteral("second question"));
        QVERIFY(branch[3].meta.value("partial").toBool());  // the reply being written: saved as far as it got
        QVERIFY(branch[3].content.size() > 20);
    }

private:
    QTemporaryDir root_;
};

int main(int argc, char** argv) {
    if (argc >= 3 && qstrcmp(argv[1], "--child-app") == 0) return runChildApp(argc, argv);
    QApplication app(argc, argv);
    TestChatPane test;
    return QTest::qExec(&test, argc, argv);
}

#include "test_chat_pane.moc"
