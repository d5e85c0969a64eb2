// The chat database: chats and message trees survive reopening, branches, search, exports, schema
// versions and damaged files, the sidebar's list model, and a writer killed with SIGKILL.

#include "core/chat_list_model.h"
#include "core/chat_store.h"

#include <QAbstractItemModelTester>
#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QFile>
#include <QJsonArray>
#include <QProcess>
#include <QSignalSpy>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <cstdio>

using studio::ChatInfo;
using studio::ChatListModel;
using studio::ChatMessage;
using studio::ChatStore;

namespace {

const char* const kChildWriterOption = "--child-writer";
constexpr int kChildFixedMessages = 50;

// A connection of the test's own to a database file, for what the store does not expose:
// pragmas, other programs' tables, integrity checks.
class RawDatabase {
public:
    explicit RawDatabase(const QString& path) : name_(QStringLiteral("test.raw.%1").arg(++count_)) {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name_);
        db.setDatabaseName(path);
        db.open();
    }
    ~RawDatabase() {
        QSqlDatabase::database(name_, false).close();
        QSqlDatabase::removeDatabase(name_);
    }

    // The first column of the first row of sql's result; an invalid QVariant on any failure.
    QVariant value(const QString& sql) const {
        QSqlQuery query(QSqlDatabase::database(name_, false));
        if (!query.exec(sql) || !query.next()) return {};
        return query.value(0);
    }
    bool exec(const QString& sql) const {
        QSqlQuery query(QSqlDatabase::database(name_, false));
        return query.exec(sql);
    }

private:
    static inline int count_ = 0;
    QString name_;
};

QStringList contentsOf(const QList<ChatMessage>& messages) {
    QStringList contents;
    for (const ChatMessage& message : messages) contents << message.content;
    return contents;
}

QList<qint64> idsOf(const QList<ChatMessage>& messages) {
    QList<qint64> ids;
    for (const ChatMessage& message : messages) ids << message.id;
    return ids;
}

QList<qint64> idsOf(const QList<ChatInfo>& chats) {
    QList<qint64> ids;
    for (const ChatInfo& chat : chats) ids << chat.id;
    return ids;
}

QList<qint64> idsShown(const ChatListModel& model) {
    QList<qint64> ids;
    for (int row = 0; row < model.rowCount(); ++row) ids << model.idAt(row);
    return ids;
}

// The growing reply of the child writer: content is n "x"s and meta {"n": n}, written together.
QJsonObject growingMeta(int n) { return {{QStringLiteral("n"), n}}; }

// The child process of survivesSigkill: fills a chat, says "ready", then rewrites one reply
// forever until it is killed.
int runChildWriter(const QString& path) {
    ChatStore store;
    QString error;
    if (!store.open(path, &error)) {
        std::fprintf(stderr, "%s\n", qPrintable(error));
        return 1;
    }
    const qint64 chatId = store.createChat(QStringLiteral("Killed while writing"));
    qint64 parentId = 0;
    for (int i = 0; i < kChildFixedMessages; ++i) {
        parentId = store.addMessage(chatId, parentId, i % 2 == 0 ? QStringLiteral("user") : QStringLiteral("assistant"),
                                    QStringLiteral("message %1").arg(i));
    }
    const qint64 growingId = store.addMessage(chatId, parentId, QStringLiteral("assistant"), QString(), growingMeta(0));
    if (parentId == 0 || growingId == 0 || !store.updateMessage(growingId, QStringLiteral("x"), growingMeta(1))) {
        std::fprintf(stderr, "%s\n", qPrintable(store.lastError()));
        return 1;
    }
    std::fputs("ready\n", stdout);
    std::fflush(stdout);
    for (int n = 2;; ++n) {
        if (!store.updateMessage(growingId, QString(n, QLatin1Char('x')), growingMeta(n))) {
            std::fprintf(stderr, "%s\n", qPrintable(store.lastError()));
            return 1;
        }
    }
}

}  // namespace

class TestChatStore : public QObject {
    Q_OBJECT

private slots:
    void init();
    void createOpenReopen();
    void messageTree();
    void currentLeafPersists();
    void renameAndDeleteCascade();
    void searchTitlesAndMessages();
    void settingsAndSystemPromptRoundTrip();
    void invalidChangesAreRefused();
    void exportMarkdownShowsCurrentBranch();
    void exportJsonHoldsWholeTree();
    void importJsonRebuildsTheTree();
    void importJsonRefusesBrokenFiles();
    void userVersionIsSchemaVersion();
    void newerSchemaIsRefused();
    void garbageFileIsRefused();
    void otherProgramsDatabaseIsRefused();
    void emptyFileIsMigrated();
    void folderThatCannotBeCreated();
    void listModelFollowsStore();
    void listModelRowLookup();
    void survivesSigkill();
};

void TestChatStore::init() {
    // The store must run without a single Qt warning (above all removeDatabase's "still in use").
    QTest::failOnWarning(QRegularExpression(QStringLiteral(".*")));
}

void TestChatStore::createOpenReopen() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("nested/folder/chats.db"));
    const QJsonObject settings{{QStringLiteral("temperature"), 0.7}, {QStringLiteral("top_p"), 0.9}};
    ChatInfo saved;
    QList<ChatMessage> savedBranch;
    {
        ChatStore store;
        QString error;
        QVERIFY2(store.open(path, &error), qPrintable(error));
        QVERIFY(error.isEmpty());
        QVERIFY(store.isOpen());
        QCOMPARE(store.path(), QFileInfo(path).absoluteFilePath());
        const qint64 chatId = store.createChat(QStringLiteral("First chat"), QStringLiteral("Be brief."), settings);
        QVERIFY(chatId > 0);
        const qint64 question = store.addMessage(chatId, 0, QStringLiteral("user"), QStringLiteral("Hello?"));
        const qint64 answer = store.addMessage(chatId, question, QStringLiteral("assistant"), QStringLiteral("Hi."),
                                               {{QStringLiteral("model"), QStringLiteral("qwen")}, {QStringLiteral("tokens"), 2}});
        QVERIFY(question > 0 && answer > 0);
        saved = store.chat(chatId).value();
        savedBranch = store.path(answer);
        QCOMPARE(saved.currentLeaf, answer);
        QCOMPARE(saved.created.timeSpec(), Qt::UTC);
        QVERIFY(saved.updated >= saved.created);
    }
    QVERIFY(QFile::exists(path));

    ChatStore store;
    QVERIFY2(store.open(path), qPrintable(store.lastError()));
    const QList<ChatInfo> chats = store.chats();
    QCOMPARE(chats.size(), 1);
    QCOMPARE(chats.first(), saved);
    QCOMPARE(chats.first().settings, settings);
    QCOMPARE(store.path(saved.currentLeaf), savedBranch);
    QCOMPARE(savedBranch.last().meta.value(QStringLiteral("model")).toString(), QStringLiteral("qwen"));
    QCOMPARE(store.messageCount(saved.id), 2);

    store.close();
    QVERIFY(!store.isOpen());
    QVERIFY(store.chats().isEmpty());
    QVERIFY(store.lastError().contains(QStringLiteral("no chat database is open")));
}

void TestChatStore::messageTree() {
    QTemporaryDir dir;
    ChatStore store;
    QVERIFY(store.open(dir.filePath(QStringLiteral("chats.db"))));
    const qint64 chatId = store.createChat(QStringLiteral("Tree"));
    const qint64 question = store.addMessage(chatId, 0, QStringLiteral("user"), QStringLiteral("What is 2+2?"));
    const qint64 answer = store.addMessage(chatId, question, QStringLiteral("assistant"), QStringLiteral("4"));
    const qint64 followUp = store.addMessage(chatId, answer, QStringLiteral("user"), QStringLiteral("And 3+3?"));
    const qint64 regenerated1 = store.addMessage(chatId, question, QStringLiteral("assistant"), QStringLiteral("Four."));
    const qint64 regenerated2 = store.addMessage(chatId, question, QStringLiteral("assistant"), QStringLiteral("2+2=4"));
    const qint64 edited = store.addMessage(chatId, 0, QStringLiteral("user"), QStringLiteral("What is 2+3?"));
    const qint64 editedAnswer = store.addMessage(chatId, edited, QStringLiteral("assistant"), QStringLiteral("5"));
    QCOMPARE(store.messageCount(chatId), 7);

    QCOMPARE(idsOf(store.children(chatId, 0)), (QList<qint64>{question, edited}));
    QCOMPARE(idsOf(store.children(chatId, question)), (QList<qint64>{answer, regenerated1, regenerated2}));
    QCOMPARE(idsOf(store.children(chatId, answer)), QList<qint64>{followUp});
    QVERIFY(store.children(chatId, followUp).isEmpty());

    QCOMPARE(contentsOf(store.path(followUp)), (QStringList{"What is 2+2?", "4", "And 3+3?"}));
    QCOMPARE(contentsOf(store.path(regenerated2)), (QStringList{"What is 2+2?", "2+2=4"}));
    QCOMPARE(contentsOf(store.path(editedAnswer)), (QStringList{"What is 2+3?", "5"}));
    QCOMPARE(store.path(question).size(), 1);
    QCOMPARE(store.path(editedAnswer).first().parentId, 0);
    QCOMPARE(store.path(editedAnswer).last().parentId, edited);

    QCOMPARE(store.newestLeafBelow(question), regenerated2);
    QCOMPARE(store.newestLeafBelow(answer), followUp);
    QCOMPARE(store.newestLeafBelow(edited), editedAnswer);
    QCOMPARE(store.newestLeafBelow(followUp), followUp);
    QCOMPARE(store.chat(chatId).value().currentLeaf, editedAnswer);

    // A reply that grows while it streams.
    QVERIFY(store.updateMessage(regenerated2, QStringLiteral("<think>add</think>2+2=4, surely"),
                                {{QStringLiteral("partial"), false}}));
    const ChatMessage updated = store.message(regenerated2).value();
    QCOMPARE(updated.content, QStringLiteral("<think>add</think>2+2=4, surely"));
    QCOMPARE(updated.meta, (QJsonObject{{QStringLiteral("partial"), false}}));
    QCOMPARE(updated.parentId, question);
    QCOMPARE(updated.role, QStringLiteral("assistant"));
}

void TestChatStore::currentLeafPersists() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.db"));
    qint64 chatId = 0;
    qint64 firstAnswer = 0;
    {
        ChatStore store;
        QVERIFY(store.open(path));
        chatId = store.createChat(QStringLiteral("Leaves"));
        QCOMPARE(store.chat(chatId).value().currentLeaf, 0);
        const qint64 question = store.addMessage(chatId, 0, QStringLiteral("user"), QStringLiteral("Q"));
        firstAnswer = store.addMessage(chatId, question, QStringLiteral("assistant"), QStringLiteral("A1"));
        store.addMessage(chatId, question, QStringLiteral("assistant"), QStringLiteral("A2"));
        const QDateTime before = store.chat(chatId).value().updated;
        QVERIFY(store.setCurrentLeaf(chatId, firstAnswer));
        QVERIFY(store.chat(chatId).value().updated > before);
    }
    ChatStore store;
    QVERIFY(store.open(path));
    QCOMPARE(store.chat(chatId).value().currentLeaf, firstAnswer);
}

void TestChatStore::renameAndDeleteCascade() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.db"));
    ChatStore store;
    QVERIFY(store.open(path));
    const qint64 kept = store.createChat(QStringLiteral("Kept"));
    const qint64 doomed = store.createChat(QStringLiteral("Doomed"));
    const qint64 keptMessage = store.addMessage(kept, 0, QStringLiteral("user"), QStringLiteral("stay"));
    const qint64 root = store.addMessage(doomed, 0, QStringLiteral("user"), QStringLiteral("go"));
    const qint64 reply = store.addMessage(doomed, root, QStringLiteral("assistant"), QStringLiteral("gone"));

    const QDateTime before = store.chat(kept).value().updated;
    QVERIFY(store.renameChat(kept, QStringLiteral("Kept, renamed")));
    QCOMPARE(store.chat(kept).value().title, QStringLiteral("Kept, renamed"));
    QVERIFY(store.chat(kept).value().updated > before);
    QCOMPARE(store.chats().first().id, kept);

    QVERIFY(store.deleteChat(doomed));
    QVERIFY(!store.chat(doomed));
    QVERIFY(store.lastError().contains(QStringLiteral("no chat %1").arg(doomed)));
    QVERIFY(!store.message(root));
    QVERIFY(!store.message(reply));
    QCOMPARE(store.messageCount(doomed), 0);
    QVERIFY(store.message(keptMessage));
    QCOMPARE(RawDatabase(path).value(QStringLiteral("SELECT COUNT(*) FROM messages")).toInt(), 1);

    QVERIFY(!store.deleteChat(doomed));
    QVERIFY(!store.renameChat(doomed, QStringLiteral("Ghost")));
    QVERIFY(store.lastError().contains(path));
    // Ids are never reused, so a stale one cannot name a new chat.
    QVERIFY(store.createChat(QStringLiteral("New")) > doomed);
}

void TestChatStore::searchTitlesAndMessages() {
    QTemporaryDir dir;
    ChatStore store;
    QVERIFY(store.open(dir.filePath(QStringLiteral("chats.db"))));
    const qint64 recipes = store.createChat(QStringLiteral("Pasta Recipes"));
    const qint64 physics = store.createChat(QStringLiteral("Physics"));
    const qint64 russian = store.createChat(QStringLiteral("Greeting"));
    const qint64 question = store.addMessage(physics, 0, QStringLiteral("user"), QStringLiteral("Explain Quantum tunnelling"));
    store.addMessage(physics, question, QStringLiteral("assistant"), QStringLiteral("A particle crosses a barrier."));
    store.addMessage(russian, 0, QStringLiteral("user"), QStringLiteral("Привет, мир"));

    QCOMPARE(idsOf(store.chats()), (QList<qint64>{russian, physics, recipes}));
    QCOMPARE(idsOf(store.chats(QStringLiteral("pasta"))), QList<qint64>{recipes});
    QCOMPARE(idsOf(store.chats(QStringLiteral("QUANTUM"))), QList<qint64>{physics});
    QCOMPARE(idsOf(store.chats(QStringLiteral("BARRIER"))), QList<qint64>{physics});
    QCOMPARE(idsOf(store.chats(QStringLiteral("ПРИВЕТ"))), QList<qint64>{russian});
    QCOMPARE(idsOf(store.chats(QStringLiteral("E"))), (QList<qint64>{russian, physics, recipes}));
    QVERIFY(store.chats(QStringLiteral("nowhere")).isEmpty());
}

void TestChatStore::settingsAndSystemPromptRoundTrip() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.db"));
    const QJsonObject settings{{QStringLiteral("temperature"), 0.2},
                               {QStringLiteral("top_k"), 40},
                               {QStringLiteral("stop"), QJsonArray{QStringLiteral("</s>")}}};
    qint64 chatId = 0;
    {
        ChatStore store;
        QVERIFY(store.open(path));
        chatId = store.createChat(QStringLiteral("Settings"));
        QCOMPARE(store.chat(chatId).value().settings, QJsonObject());
        QCOMPARE(store.chat(chatId).value().systemPrompt, QString());
        QVERIFY(store.setSystemPrompt(chatId, QStringLiteral("You are a pirate.\nSpeak like one.")));
        QVERIFY(store.setSettings(chatId, settings));
    }
    ChatStore store;
    QVERIFY(store.open(path));
    QCOMPARE(store.chat(chatId).value().systemPrompt, QStringLiteral("You are a pirate.\nSpeak like one."));
    QCOMPARE(store.chat(chatId).value().settings, settings);
}

void TestChatStore::invalidChangesAreRefused() {
    QTemporaryDir dir;
    ChatStore store;
    QVERIFY(store.open(dir.filePath(QStringLiteral("chats.db"))));
    const qint64 first = store.createChat(QStringLiteral("First"));
    const qint64 second = store.createChat(QStringLiteral("Second"));
    const qint64 message = store.addMessage(first, 0, QStringLiteral("user"), QStringLiteral("hi"));

    QCOMPARE(store.addMessage(second, message, QStringLiteral("assistant"), QStringLiteral("wrong chat")), 0);
    QVERIFY(store.lastError().contains(QStringLiteral("not in chat")));
    QCOMPARE(store.addMessage(first, message, QStringLiteral("narrator"), QStringLiteral("?")), 0);
    QVERIFY(store.lastError().contains(QStringLiteral("narrator")));
    QCOMPARE(store.addMessage(first, 12345, QStringLiteral("assistant"), QStringLiteral("no parent")), 0);
    QCOMPARE(store.addMessage(9999, 0, QStringLiteral("user"), QStringLiteral("no chat")), 0);
    QVERIFY(!store.setCurrentLeaf(second, message));
    QVERIFY(!store.updateMessage(12345, QStringLiteral("x"), {}));
    QCOMPARE(store.newestLeafBelow(12345), 0);
    QVERIFY(store.path(12345).isEmpty());
    QVERIFY(store.exportJson(9999).isEmpty());
    QVERIFY(store.exportMarkdown(9999).isEmpty());

    // Nothing of the refused changes was written.
    QCOMPARE(store.messageCount(first), 1);
    QCOMPARE(store.messageCount(second), 0);
    QCOMPARE(store.chat(second).value().currentLeaf, 0);
}

void TestChatStore::exportMarkdownShowsCurrentBranch() {
    QTemporaryDir dir;
    ChatStore store;
    QVERIFY(store.open(dir.filePath(QStringLiteral("chats.db"))));
    const qint64 chatId = store.createChat(QStringLiteral("Capitals"), QStringLiteral("Answer in one word."));
    const qint64 question = store.addMessage(chatId, 0, QStringLiteral("user"), QStringLiteral("Capital of France?"));
    const qint64 shown = store.addMessage(chatId, question, QStringLiteral("assistant"),
                                          QStringLiteral("<think>It is Paris.</think>\n\nParis"));
    store.addMessage(chatId, question, QStringLiteral("assistant"), QStringLiteral("Lyon, wrongly"));
    QVERIFY(store.setCurrentLeaf(chatId, shown));

    const QString markdown = store.exportMarkdown(chatId);
    QVERIFY(markdown.startsWith(QStringLiteral("# Capitals\n")));
    QVERIFY(markdown.contains(QStringLiteral("Answer in one word.")));
    QVERIFY(markdown.contains(QStringLiteral("## User\n\nCapital of France?")));
    QVERIFY(markdown.contains(QStringLiteral("## Assistant\n\n<details><summary>Reasoning</summary>\n\nIt is Paris.\n\n</details>")));
    QVERIFY(markdown.contains(QStringLiteral("</details>\n\nParis")));
    QVERIFY(!markdown.contains(QStringLiteral("<think>")));
    QVERIFY(!markdown.contains(QStringLiteral("Lyon")));
    QVERIFY(markdown.indexOf(QStringLiteral("## User")) < markdown.indexOf(QStringLiteral("## Assistant")));

    // A reply cut short inside its reasoning, and an empty reasoning block.
    const qint64 cut = store.addMessage(chatId, question, QStringLiteral("assistant"), QStringLiteral("<think>Hmm, maybe"));
    QVERIFY(store.exportMarkdown(chatId).contains(QStringLiteral("<summary>Reasoning</summary>\n\nHmm, maybe\n\n</details>")));
    QVERIFY(store.updateMessage(cut, QStringLiteral("<think>\n\n</think>\n\nParis."), {}));
    QVERIFY(store.exportMarkdown(chatId).endsWith(QStringLiteral("## Assistant\n\nParis.\n")));
}

void TestChatStore::exportJsonHoldsWholeTree() {
    QTemporaryDir dir;
    ChatStore store;
    QVERIFY(store.open(dir.filePath(QStringLiteral("chats.db"))));
    const QJsonObject settings{{QStringLiteral("temperature"), 1.0}};
    const qint64 chatId = store.createChat(QStringLiteral("Export"), QStringLiteral("System!"), settings);
    const qint64 question = store.addMessage(chatId, 0, QStringLiteral("user"), QStringLiteral("Q"));
    const qint64 answer1 = store.addMessage(chatId, question, QStringLiteral("assistant"), QStringLiteral("A1"),
                                            {{QStringLiteral("tokens"), 1}});
    const qint64 answer2 = store.addMessage(chatId, question, QStringLiteral("assistant"), QStringLiteral("A2"));
    const qint64 edit = store.addMessage(chatId, 0, QStringLiteral("user"), QStringLiteral("Q, edited"));

    const QJsonObject json = store.exportJson(chatId);
    QCOMPARE(json.value(QStringLiteral("format")).toString(), QStringLiteral("oxinfer-chat"));
    QCOMPARE(json.value(QStringLiteral("version")).toInt(), 1);
    QCOMPARE(json.value(QStringLiteral("title")).toString(), QStringLiteral("Export"));
    QCOMPARE(json.value(QStringLiteral("systemPrompt")).toString(), QStringLiteral("System!"));
    QCOMPARE(json.value(QStringLiteral("settings")).toObject(), settings);
    QCOMPARE(json.value(QStringLiteral("currentLeaf")).toInteger(), edit);
    const QDateTime created = QDateTime::fromString(json.value(QStringLiteral("created")).toString(), Qt::ISODateWithMs);
    QCOMPARE(created, store.chat(chatId).value().created);

    const QJsonArray messages = json.value(QStringLiteral("messages")).toArray();
    QCOMPARE(messages.size(), 4);
    const QList<std::pair<qint64, QJsonValue>> expected = {
        {question, QJsonValue::Null}, {answer1, question}, {answer2, question}, {edit, QJsonValue::Null}};
    for (int i = 0; i < messages.size(); ++i) {
        const QJsonObject message = messages.at(i).toObject();
        QCOMPARE(message.value(QStringLiteral("id")).toInteger(), expected.at(i).first);
        QCOMPARE(message.value(QStringLiteral("parent")), expected.at(i).second);
        QVERIFY(message.contains(QStringLiteral("role")));
        QVERIFY(message.contains(QStringLiteral("content")));
        QVERIFY(QDateTime::fromString(message.value(QStringLiteral("created")).toString(), Qt::ISODateWithMs).isValid());
        QVERIFY(message.value(QStringLiteral("meta")).isObject());
    }
    QCOMPARE(messages.at(1).toObject().value(QStringLiteral("content")).toString(), QStringLiteral("A1"));
    QCOMPARE(messages.at(1).toObject().value(QStringLiteral("meta")).toObject().value(QStringLiteral("tokens")).toInt(), 1);
}

void TestChatStore::importJsonRebuildsTheTree() {
    QTemporaryDir dir;
    ChatStore store;
    QVERIFY(store.open(dir.filePath(QStringLiteral("chats.db"))));
    const qint64 chatId = store.createChat(QStringLiteral("Trip"), QStringLiteral("Be brief."), {{QStringLiteral("topK"), 5}});
    const qint64 q = store.addMessage(chatId, 0, QStringLiteral("user"), QStringLiteral("Where?"));
    store.addMessage(chatId, q, QStringLiteral("assistant"), QStringLiteral("Rome"), {{QStringLiteral("tokens"), 1}});
    const qint64 a2 = store.addMessage(chatId, q, QStringLiteral("assistant"), QStringLiteral("Paris"));
    store.addMessage(chatId, a2, QStringLiteral("user"), QStringLiteral("Why?"));
    store.setCurrentLeaf(chatId, a2);
    QJsonObject exported = store.exportJson(chatId);
    // Children before parents in the file: the import still builds the tree.
    QJsonArray reversed;
    for (const QJsonValue& m : exported.value(QStringLiteral("messages")).toArray()) reversed.prepend(m);
    exported.insert(QStringLiteral("messages"), reversed);

    ChatStore other;
    QVERIFY(other.open(dir.filePath(QStringLiteral("other.db"))));
    const qint64 imported = other.importJson(exported);
    QVERIFY2(imported != 0, qPrintable(other.lastError()));
    const ChatInfo info = other.chat(imported).value();
    QCOMPARE(info.title, QStringLiteral("Trip"));
    QCOMPARE(info.systemPrompt, QStringLiteral("Be brief."));
    QCOMPARE(info.settings.value(QStringLiteral("topK")).toInt(), 5);
    QCOMPARE(info.created, store.chat(chatId)->created);
    const QList<ChatMessage> branch = other.path(info.currentLeaf);
    QCOMPARE(branch.size(), 2);
    QCOMPARE(branch[1].content, QStringLiteral("Paris"));
    const QList<ChatMessage> replies = other.children(imported, branch[0].id);
    QCOMPARE(replies.size(), 2);
    QCOMPARE(replies[0].meta.value(QStringLiteral("tokens")).toInt(), 1);
    QCOMPARE(other.children(imported, replies[1].id).first().content, QStringLiteral("Why?"));
    QCOMPARE(other.messageCount(imported), 4);
    // Exported again, the tree is the same as the original's (ids aside).
    QCOMPARE(other.exportMarkdown(imported), store.exportMarkdown(chatId));
}

void TestChatStore::importJsonRefusesBrokenFiles() {
    QTemporaryDir dir;
    ChatStore store;
    QVERIFY(store.open(dir.filePath(QStringLiteral("chats.db"))));
    const auto chatWith = [](const QJsonArray& messages) {
        return QJsonObject{{QStringLiteral("format"), QStringLiteral("oxinfer-chat")}, {QStringLiteral("version"), 1},
                           {QStringLiteral("title"), QStringLiteral("x")}, {QStringLiteral("messages"), messages}};
    };
    const auto message = [](int id, QJsonValue parent, const QString& role) {
        return QJsonObject{{QStringLiteral("id"), id}, {QStringLiteral("parent"), parent}, {QStringLiteral("role"), role},
                           {QStringLiteral("content"), QStringLiteral("c")}};
    };
    const QList<std::pair<QJsonObject, QString>> cases = {
        {QJsonObject{{QStringLiteral("format"), QStringLiteral("something")}}, QStringLiteral("not an exported chat")},
        {QJsonObject{{QStringLiteral("format"), QStringLiteral("oxinfer-chat")}, {QStringLiteral("version"), 99}}, QStringLiteral("newer version")},
        {chatWith({message(1, QJsonValue::Null, QStringLiteral("user")), message(2, 7, QStringLiteral("assistant"))}), QStringLiteral("message 2 names a parent")},
        {chatWith({message(1, QJsonValue::Null, QStringLiteral("wizard"))}), QStringLiteral("unknown role")},
        {chatWith({message(1, QJsonValue::Null, QStringLiteral("user")), message(1, QJsonValue::Null, QStringLiteral("user"))}), QStringLiteral("same id")},
    };
    for (const auto& [json, error] : cases) {
        QCOMPARE(store.importJson(json), qint64(0));
        QVERIFY2(store.lastError().contains(error), qPrintable(store.lastError()));
    }
    QVERIFY(store.chats().isEmpty());  // all or nothing
}

void TestChatStore::userVersionIsSchemaVersion() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.db"));
    {
        ChatStore store;
        QVERIFY(store.open(path));
    }
    QVERIFY(ChatStore::schemaVersion() >= 1);
    const RawDatabase raw(path);
    QCOMPARE(raw.value(QStringLiteral("PRAGMA user_version")).toInt(), ChatStore::schemaVersion());
    QCOMPARE(raw.value(QStringLiteral("PRAGMA journal_mode")).toString(), QStringLiteral("wal"));
}

void TestChatStore::newerSchemaIsRefused() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.db"));
    {
        ChatStore store;
        QVERIFY(store.open(path));
        store.addMessage(store.createChat(QStringLiteral("From the future")), 0, QStringLiteral("user"), QStringLiteral("hi"));
    }
    const int newer = ChatStore::schemaVersion() + 1;
    QVERIFY(RawDatabase(path).exec(QStringLiteral("PRAGMA user_version = %1").arg(newer)));

    ChatStore store;
    QString error;
    QVERIFY(!store.open(path, &error));
    QVERIFY(!store.isOpen());
    QVERIFY2(error.contains(QDir::toNativeSeparators(path)), qPrintable(error));
    QVERIFY2(error.contains(QStringLiteral("newer")), qPrintable(error));
    QCOMPARE(store.lastError(), error);

    const RawDatabase raw(path);
    QCOMPARE(raw.value(QStringLiteral("PRAGMA user_version")).toInt(), newer);
    QCOMPARE(raw.value(QStringLiteral("SELECT COUNT(*) FROM messages")).toInt(), 1);
}

void TestChatStore::garbageFileIsRefused() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("garbage.db"));
    QByteArray garbage;
    for (int i = 0; i < 8192; ++i) garbage += char((i * 7919 + 13) % 251);
    {
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(garbage);
    }
    ChatStore store;
    QString error;
    QVERIFY(!store.open(path, &error));
    QVERIFY(!store.isOpen());
    QVERIFY2(error.contains(QDir::toNativeSeparators(path)), qPrintable(error));
    QVERIFY2(error.contains(QStringLiteral("not a chat database")), qPrintable(error));
    QVERIFY(store.chats().isEmpty());
    QCOMPARE(store.createChat(QStringLiteral("nowhere")), 0);

    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), garbage);
}

void TestChatStore::otherProgramsDatabaseIsRefused() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("notes.db"));
    QVERIFY(RawDatabase(path).exec(QStringLiteral("CREATE TABLE notes (text TEXT)")));

    ChatStore store;
    QString error;
    QVERIFY(!store.open(path, &error));
    QVERIFY2(error.contains(QDir::toNativeSeparators(path)) && error.contains(QStringLiteral("another program")),
             qPrintable(error));
    const RawDatabase raw(path);
    QCOMPARE(raw.value(QStringLiteral("PRAGMA user_version")).toInt(), 0);
    QCOMPARE(raw.value(QStringLiteral("SELECT COUNT(*) FROM sqlite_master")).toInt(), 1);

    // One that has a chat schema version but not our application id.
    QVERIFY(raw.exec(QStringLiteral("PRAGMA user_version = 1")));
    QVERIFY(!store.open(path, &error));
    QVERIFY2(error.contains(QStringLiteral("another program")), qPrintable(error));
}

void TestChatStore::emptyFileIsMigrated() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("empty.db"));
    {
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
    }
    QCOMPARE(QFileInfo(path).size(), 0);
    QCOMPARE(RawDatabase(path).value(QStringLiteral("PRAGMA user_version")).toInt(), 0);

    ChatStore store;
    QVERIFY2(store.open(path), qPrintable(store.lastError()));
    QVERIFY(store.createChat(QStringLiteral("Migrated")) > 0);
    const RawDatabase raw(path);
    QCOMPARE(raw.value(QStringLiteral("PRAGMA user_version")).toInt(), ChatStore::schemaVersion());
    QCOMPARE(raw.value(QStringLiteral("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name LIKE 'messages_by_%'"))
                 .toInt(),
             2);
}

void TestChatStore::folderThatCannotBeCreated() {
    QTemporaryDir dir;
    const QString blocker = dir.filePath(QStringLiteral("a-file"));
    {
        QFile file(blocker);
        QVERIFY(file.open(QIODevice::WriteOnly));
    }
    ChatStore store;
    QString error;
    QVERIFY(!store.open(blocker + QStringLiteral("/chats.db"), &error));
    QVERIFY2(error.contains(QStringLiteral("cannot create the folder")), qPrintable(error));
}

void TestChatStore::listModelFollowsStore() {
    QTemporaryDir dir;
    ChatStore store;
    QVERIFY(store.open(dir.filePath(QStringLiteral("chats.db"))));
    const qint64 alpha = store.createChat(QStringLiteral("Alpha"));
    const qint64 beta = store.createChat(QStringLiteral("Beta"));
    const qint64 gamma = store.createChat(QStringLiteral("Gamma"));
    store.addMessage(alpha, 0, QStringLiteral("user"), QStringLiteral("needle in alpha"));  // alpha is newest now

    ChatListModel model(&store);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    QSignalSpy resets(&model, &QAbstractItemModel::modelReset);
    QSignalSpy moves(&model, &QAbstractItemModel::rowsMoved);
    QCOMPARE(idsShown(model), (QList<qint64>{alpha, gamma, beta}));

    const qint64 delta = store.createChat(QStringLiteral("Delta"));
    model.refresh();
    QCOMPARE(idsShown(model), (QList<qint64>{delta, alpha, gamma, beta}));

    // Renaming through the model moves the row to the top.
    const QModelIndex betaIndex = model.index(model.rowOf(beta));
    QVERIFY(model.flags(betaIndex) & Qt::ItemIsEditable);
    QVERIFY(model.setData(betaIndex, QStringLiteral("  Beta, renamed "), Qt::EditRole));
    QCOMPARE(store.chat(beta).value().title, QStringLiteral("Beta, renamed"));
    QCOMPARE(idsShown(model), (QList<qint64>{beta, delta, alpha, gamma}));
    QCOMPARE(model.data(model.index(0), Qt::DisplayRole).toString(), QStringLiteral("Beta, renamed"));
    QVERIFY(!model.setData(model.index(0), QStringLiteral("   "), Qt::EditRole));
    QCOMPARE(moves.size(), 1);

    QVERIFY(store.renameChat(gamma, QStringLiteral("Gamma 2")));
    QVERIFY(store.deleteChat(delta));
    const qint64 epsilon = store.createChat(QStringLiteral("Epsilon"));
    model.refresh();
    QCOMPARE(idsShown(model), (QList<qint64>{epsilon, gamma, beta, alpha}));
    QCOMPARE(model.data(model.index(1), Qt::EditRole).toString(), QStringLiteral("Gamma 2"));

    model.setFilter(QStringLiteral("NEEDLE"));
    QCOMPARE(model.filter(), QStringLiteral("NEEDLE"));
    QCOMPARE(idsShown(model), QList<qint64>{alpha});
    model.setFilter(QStringLiteral("a"));
    QCOMPARE(idsShown(model), (QList<qint64>{gamma, beta, alpha}));
    model.setFilter(QStringLiteral("gamma"));
    QCOMPARE(idsShown(model), QList<qint64>{gamma});
    model.setFilter(QString());
    QCOMPARE(idsShown(model), (QList<qint64>{epsilon, gamma, beta, alpha}));

    // A refresh with nothing changed changes nothing.
    QSignalSpy changes(&model, &QAbstractItemModel::dataChanged);
    model.refresh();
    QCOMPARE(changes.size(), 0);
    QCOMPARE(resets.size(), 0);

    // Everything gone, then back.
    for (const qint64 id : {epsilon, gamma, beta, alpha}) QVERIFY(store.deleteChat(id));
    model.refresh();
    QCOMPARE(model.rowCount(), 0);
    store.createChat(QStringLiteral("Zeta"));
    store.createChat(QStringLiteral("Eta"));
    model.refresh();
    QCOMPARE(model.rowCount(), 2);
}

void TestChatStore::listModelRowLookup() {
    QTemporaryDir dir;
    ChatStore store;
    QVERIFY(store.open(dir.filePath(QStringLiteral("chats.db"))));
    const qint64 older = store.createChat(QStringLiteral("Older"), QStringLiteral("Prompt"));
    const qint64 newer = store.createChat(QStringLiteral("Newer"));
    ChatListModel model(&store);

    QCOMPARE(model.rowOf(newer), 0);
    QCOMPARE(model.rowOf(older), 1);
    QCOMPARE(model.rowOf(12345), -1);
    QCOMPARE(model.idAt(0), newer);
    QCOMPARE(model.idAt(1), older);
    QCOMPARE(model.idAt(2), 0);
    QCOMPARE(model.idAt(-1), 0);

    const QModelIndex olderIndex = model.index(1);
    QCOMPARE(model.data(olderIndex, ChatListModel::IdRole).toLongLong(), older);
    QCOMPARE(model.data(olderIndex, ChatListModel::UpdatedRole).toDateTime(), store.chat(older).value().updated);
    QCOMPARE(model.data(olderIndex, ChatListModel::SystemPromptRole).toString(), QStringLiteral("Prompt"));
    QVERIFY(model.data(olderIndex, Qt::ToolTipRole).toString().startsWith(QStringLiteral("Older\n")));
    const QHash<int, QByteArray> names = model.roleNames();
    QCOMPARE(names.value(ChatListModel::IdRole), QByteArray("chatId"));
    QCOMPARE(names.value(Qt::DisplayRole), QByteArray("display"));
}

void TestChatStore::survivesSigkill() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("killed.db"));
    QProcess child;
    child.setProgram(QCoreApplication::applicationFilePath());
    child.setArguments({QString::fromLatin1(kChildWriterOption), path});
    child.start();
    QVERIFY2(child.waitForStarted(), qPrintable(child.errorString()));

    QByteArray output;
    const QDeadlineTimer deadline(60000);
    while (!output.contains("ready\n")) {
        QVERIFY2(child.state() == QProcess::Running || child.bytesAvailable() > 0,
                 child.readAllStandardError().constData());
        QVERIFY2(!deadline.hasExpired(), "the child writer did not get ready");
        child.waitForReadyRead(100);
        output += child.readAllStandardOutput();
    }
    QThread::msleep(200);
    child.kill();
    QVERIFY(child.waitForFinished(10000));
    QCOMPARE(child.exitStatus(), QProcess::CrashExit);

    ChatStore store;
    QVERIFY2(store.open(path), qPrintable(store.lastError()));
    QCOMPARE(RawDatabase(path).value(QStringLiteral("PRAGMA integrity_check")).toString(), QStringLiteral("ok"));
    const QList<ChatInfo> chats = store.chats();
    QCOMPARE(chats.size(), 1);
    QCOMPARE(store.messageCount(chats.first().id), kChildFixedMessages + 1);
    const QList<ChatMessage> branch = store.path(chats.first().currentLeaf);
    QCOMPARE(branch.size(), kChildFixedMessages + 1);
    for (int i = 0; i < kChildFixedMessages; ++i) {
        QCOMPARE(branch.at(i).content, QStringLiteral("message %1").arg(i));
        QCOMPARE(branch.at(i).role, i % 2 == 0 ? QStringLiteral("user") : QStringLiteral("assistant"));
    }
    const ChatMessage& growing = branch.last();
    const int n = growing.meta.value(QStringLiteral("n")).toInt();
    QVERIFY(n >= 1);
    QCOMPARE(growing.content, QString(n, QLatin1Char('x')));
    qInfo("the killed writer's last saved update: %d", n);
}

// The test binary doubles as survivesSigkill's child writer.
int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    if (argc == 3 && qstrcmp(argv[1], kChildWriterOption) == 0) return runChildWriter(QString::fromLocal8Bit(argv[2]));
    TestChatStore test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "test_chat_store.moc"
