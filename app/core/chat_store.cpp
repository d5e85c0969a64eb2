// The chat database: schema and its migrations, the transactions every change runs in, the
// message-tree queries, and the Markdown and JSON exports.

#include "core/chat_store.h"

#include <QDir>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSet>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

#include <algorithm>
#include <atomic>

namespace studio {
namespace {

// PRAGMA application_id of a chat database ("OXIC"), so that a file of some other program that
// happens to have the same user_version is not mistaken for ours.
constexpr int kApplicationId = 0x4f584943;

// The format version of exportJson().
constexpr int kExportFormatVersion = 1;

// SQLite's result code for "file is not a database".
const QString kSqliteNotADatabase = QStringLiteral("26");

// The schema as the steps that build it: step i takes a database from user_version i to i + 1.
// To change the schema, append a step; never edit one that has shipped. Times are milliseconds
// since the epoch (UTC), JSON columns hold compact JSON objects.
const QList<QStringList>& migrationSteps() {
    static const QList<QStringList> steps = {
        // 1: chats and their message trees. AUTOINCREMENT so that the id of a deleted chat or
        // message, still held somewhere in the UI, never names a newer one.
        {
            QStringLiteral("CREATE TABLE chats ("
                           " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                           " title TEXT NOT NULL,"
                           " created INTEGER NOT NULL,"
                           " updated INTEGER NOT NULL,"
                           " system_prompt TEXT NOT NULL DEFAULT '',"
                           " settings TEXT NOT NULL DEFAULT '{}',"
                           // No foreign key: messages only go away with their chat, and
                           // setCurrentLeaf checks that the message is the chat's.
                           " current_leaf INTEGER)"),
            QStringLiteral("CREATE INDEX chats_by_updated ON chats (updated)"),
            QStringLiteral("CREATE TABLE messages ("
                           " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                           " chat_id INTEGER NOT NULL REFERENCES chats (id) ON DELETE CASCADE,"
                           " parent_id INTEGER REFERENCES messages (id) ON DELETE CASCADE,"
                           " role TEXT NOT NULL,"
                           " content TEXT NOT NULL,"
                           " created INTEGER NOT NULL,"
                           " meta TEXT NOT NULL DEFAULT '{}')"),
            QStringLiteral("CREATE INDEX messages_by_chat_parent ON messages (chat_id, parent_id)"),
            // The parent_id cascade looks a deleted message's children up by parent alone.
            QStringLiteral("CREATE INDEX messages_by_parent ON messages (parent_id)"),
            QStringLiteral("PRAGMA application_id = %1").arg(kApplicationId),
        },
    };
    return steps;
}

// A chat's new `updated`: now, but always past every chat's, so that the newest-first order is
// the order of the changes even when two fall in the same millisecond. Binds :now.
const QString kNextUpdated = QStringLiteral("MAX(:now, (SELECT COALESCE(MAX(updated), 0) + 1 FROM chats))");

const QString kChatColumns = QStringLiteral("id, title, created, updated, system_prompt, settings, current_leaf");
const QString kMessageColumns = QStringLiteral("m.id, m.chat_id, m.parent_id, m.role, m.content, m.created, m.meta");

qint64 nowMs() { return QDateTime::currentMSecsSinceEpoch(); }

QDateTime utcTime(const QVariant& ms) { return QDateTime::fromMSecsSinceEpoch(ms.toLongLong(), Qt::UTC); }

QString isoTime(const QDateTime& time) { return time.toUTC().toString(Qt::ISODateWithMs); }

QString jsonText(const QJsonObject& object) {
    return QString::fromUtf8(QJsonDocument(object).toJson(QJsonDocument::Compact));
}

QJsonObject jsonObject(const QVariant& text) { return QJsonDocument::fromJson(text.toString().toUtf8()).object(); }

// Text for a NOT NULL column: Qt binds a null QString as NULL, and QString() is a common "empty".
QString notNull(const QString& text) { return text.isNull() ? QStringLiteral("") : text; }

// NULL for 0, the "none" of the API.
QVariant idOrNull(qint64 id) { return id == 0 ? QVariant() : QVariant(id); }

ChatInfo chatFrom(const QSqlQuery& query) {
    ChatInfo chat;
    chat.id = query.value(0).toLongLong();
    chat.title = query.value(1).toString();
    chat.created = utcTime(query.value(2));
    chat.updated = utcTime(query.value(3));
    chat.systemPrompt = query.value(4).toString();
    chat.settings = jsonObject(query.value(5));
    chat.currentLeaf = query.value(6).toLongLong();
    return chat;
}

ChatMessage messageFrom(const QSqlQuery& query) {
    ChatMessage message;
    message.id = query.value(0).toLongLong();
    message.chatId = query.value(1).toLongLong();
    message.parentId = query.value(2).toLongLong();
    message.role = query.value(3).toString();
    message.content = query.value(4).toString();
    message.created = utcTime(query.value(5));
    message.meta = jsonObject(query.value(6));
    return message;
}

QString sqlErrorText(const QSqlError& error) {
    return error.databaseText().isEmpty() ? error.text() : error.databaseText();
}

// An assistant reply for Markdown: reasoning (<think>...</think>, or the unclosed <think> of a
// reply cut short) becomes a collapsed <details> block; an empty one (thinking turned off) goes.
QString markdownOfReply(const QString& content) {
    static const QRegularExpression thinkBlock(QStringLiteral("<think>(.*?)(?:</think>|\\z)"),
                                               QRegularExpression::DotMatchesEverythingOption);
    QString markdown;
    qsizetype copiedUpTo = 0;
    for (QRegularExpressionMatchIterator matches = thinkBlock.globalMatch(content); matches.hasNext();) {
        const QRegularExpressionMatch match = matches.next();
        markdown += QStringView(content).mid(copiedUpTo, match.capturedStart() - copiedUpTo);
        const QString reasoning = match.captured(1).trimmed();
        if (!reasoning.isEmpty())
            markdown += QStringLiteral("<details><summary>Reasoning</summary>\n\n%1\n\n</details>\n\n").arg(reasoning);
        copiedUpTo = match.capturedEnd();
        while (copiedUpTo < content.size() && content.at(copiedUpTo).isSpace()) ++copiedUpTo;
    }
    markdown += QStringView(content).mid(copiedUpTo);
    return markdown.trimmed();
}

bool isKnownRole(const QString& role) {
    return role == QLatin1String("user") || role == QLatin1String("assistant");
}

}  // namespace

ChatStore::ChatStore() = default;

ChatStore::~ChatStore() { close(); }

int ChatStore::schemaVersion() { return int(migrationSteps().size()); }

bool ChatStore::open(const QString& path, QString* error) {
    close();
    const bool opened = openFile(path);
    if (!opened) close();
    if (error) *error = opened ? QString() : lastError_;
    return opened;
}

bool ChatStore::openFile(const QString& path) {
    path_ = QFileInfo(path).absoluteFilePath();
    const QString folder = QFileInfo(path_).absolutePath();
    if (!QDir().mkpath(folder)) return fail(QStringLiteral("cannot create the folder %1").arg(QDir::toNativeSeparators(folder)));

    // Each store has a connection of its own, so that two stores (or a test's own connection)
    // never share one.
    static std::atomic<int> connectionCount{0};
    connectionName_ = QStringLiteral("studio.ChatStore.%1").arg(++connectionCount);
    db_ = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connectionName_);
    if (!db_.isValid()) return fail(QStringLiteral("the Qt SQLite driver (QSQLITE) is not available"));
    db_.setDatabaseName(path_);
    if (!db_.open()) return failSql(QStringLiteral("cannot open the file"), db_.lastError());

    // SQLite opens files lazily: the first statement is the one that finds a damaged file.
    auto versionQuery = prepare(QStringLiteral("PRAGMA user_version"));
    if (!versionQuery) return false;
    if (!versionQuery->exec() || !versionQuery->next()) {
        const QSqlError error = versionQuery->lastError();
        if (error.nativeErrorCode() == kSqliteNotADatabase)
            return fail(QStringLiteral("is not a chat database: not an SQLite file, or a damaged one (%1)").arg(sqlErrorText(error)));
        return failSql(QStringLiteral("cannot read the database"), error);
    }
    const int version = versionQuery->value(0).toInt();
    versionQuery.reset();  // done reading: the journal mode cannot change under an open statement

    if (version > schemaVersion())
        return fail(QStringLiteral("was written by a newer version of Oxinfer Studio (chat schema %1; this version "
                                   "knows up to %2); it is left untouched")
                        .arg(version)
                        .arg(schemaVersion()));
    if (!checkOwnership(version)) return false;

    // WAL with full syncs: a commit is on disk when it returns, and a killed process or a power
    // cut loses at most the transaction under way. Foreign keys are off by default in SQLite.
    for (const char* pragma : {"PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL", "PRAGMA foreign_keys = ON"})
        if (!execute(QLatin1String(pragma), QStringLiteral("cannot set up the connection"))) return false;
    return version == schemaVersion() || migrate(version);
}

// Never writes into another program's SQLite file: ours carry kApplicationId from schema 1 on,
// and a file at version 0 must still be empty.
bool ChatStore::checkOwnership(int version) {
    const QString check = version > 0 ? QStringLiteral("SELECT application_id = :ours FROM pragma_application_id")
                                      : QStringLiteral("SELECT COUNT(*) = 0 FROM sqlite_master");
    auto query = prepare(check);
    if (!query) return false;
    if (version > 0) query->bindValue(QStringLiteral(":ours"), kApplicationId);
    if (!run(*query, QStringLiteral("cannot read the database"))) return false;
    if (query->next() && query->value(0).toBool()) return true;
    return fail(QStringLiteral("is an SQLite database of another program, not a chat database; it is left untouched"));
}

bool ChatStore::migrate(int fromVersion) {
    const QList<QStringList>& steps = migrationSteps();
    return inTransaction([&] {
        for (qsizetype step = fromVersion; step < steps.size(); ++step) {
            for (const QString& statement : steps[step])
                if (!execute(statement, QStringLiteral("cannot upgrade the chat schema to version %1").arg(step + 1)))
                    return false;
        }
        // PRAGMA takes no bound values; the number is ours.
        return execute(QStringLiteral("PRAGMA user_version = %1").arg(steps.size()),
                       QStringLiteral("cannot record the chat schema version"));
    });
}

void ChatStore::close() {
    if (connectionName_.isEmpty()) return;
    db_.close();
    // removeDatabase wants the last handle on the connection gone first.
    db_ = QSqlDatabase();
    QSqlDatabase::removeDatabase(connectionName_);
    connectionName_.clear();
    path_.clear();
}

bool ChatStore::isOpen() const { return db_.isOpen(); }

QString ChatStore::path() const { return path_; }

QString ChatStore::lastError() const { return lastError_; }

QList<ChatInfo> ChatStore::chats(const QString& search) const {
    auto query = prepare(QStringLiteral("SELECT %1 FROM chats ORDER BY updated DESC, id DESC").arg(kChatColumns));
    if (!query || !run(*query, QStringLiteral("cannot list the chats"))) return {};
    QList<ChatInfo> found;
    while (query->next()) found << chatFrom(*query);
    if (search.isEmpty()) return found;

    // The search runs here rather than in SQL: SQLite's LIKE folds the case of ASCII letters only.
    QSet<qint64> matching;
    for (const ChatInfo& chat : found)
        if (chat.title.contains(search, Qt::CaseInsensitive)) matching.insert(chat.id);
    auto contents = prepare(QStringLiteral("SELECT chat_id, content FROM messages"));
    if (!contents || !run(*contents, QStringLiteral("cannot search the messages"))) return {};
    while (contents->next()) {
        const qint64 chatId = contents->value(0).toLongLong();
        if (!matching.contains(chatId) && contents->value(1).toString().contains(search, Qt::CaseInsensitive))
            matching.insert(chatId);
    }
    found.removeIf([&](const ChatInfo& chat) { return !matching.contains(chat.id); });
    return found;
}

std::optional<ChatInfo> ChatStore::chat(qint64 id) const {
    auto query = prepare(QStringLiteral("SELECT %1 FROM chats WHERE id = :id").arg(kChatColumns));
    if (!query) return std::nullopt;
    query->bindValue(QStringLiteral(":id"), id);
    if (!run(*query, QStringLiteral("cannot read chat %1").arg(id))) return std::nullopt;
    if (!query->next()) {
        fail(QStringLiteral("there is no chat %1").arg(id));
        return std::nullopt;
    }
    return chatFrom(*query);
}

qint64 ChatStore::createChat(const QString& title, const QString& systemPrompt, const QJsonObject& settings) {
    qint64 id = 0;
    inTransaction([&] { return (id = insertChat(title, nowMs(), systemPrompt, settings)) != 0; });
    return id;
}

qint64 ChatStore::insertChat(const QString& title, qint64 createdMs, const QString& systemPrompt, const QJsonObject& settings) {
    auto query = prepare(QStringLiteral("INSERT INTO chats (title, created, updated, system_prompt, settings)"
                                        " VALUES (:title, :created, %1, :prompt, :settings)")
                             .arg(kNextUpdated));
    if (!query) return 0;
    query->bindValue(QStringLiteral(":title"), notNull(title));
    query->bindValue(QStringLiteral(":created"), createdMs);
    query->bindValue(QStringLiteral(":now"), nowMs());
    query->bindValue(QStringLiteral(":prompt"), notNull(systemPrompt));
    query->bindValue(QStringLiteral(":settings"), jsonText(settings));
    if (!run(*query, QStringLiteral("cannot create a chat"))) return 0;
    return query->lastInsertId().toLongLong();
}

bool ChatStore::renameChat(qint64 id, const QString& title) {
    return inTransaction([&] { return updateChat(id, QStringLiteral("title"), notNull(title)); });
}

bool ChatStore::deleteChat(qint64 id) {
    return inTransaction([&] {
        auto query = prepare(QStringLiteral("DELETE FROM chats WHERE id = :id"));
        if (!query) return false;
        query->bindValue(QStringLiteral(":id"), id);
        if (!run(*query, QStringLiteral("cannot delete chat %1").arg(id))) return false;
        return query->numRowsAffected() == 1 || fail(QStringLiteral("there is no chat %1").arg(id));
    });
}

bool ChatStore::setSystemPrompt(qint64 id, const QString& text) {
    return inTransaction([&] { return updateChat(id, QStringLiteral("system_prompt"), notNull(text)); });
}

bool ChatStore::setSettings(qint64 id, const QJsonObject& settings) {
    return inTransaction([&] { return updateChat(id, QStringLiteral("settings"), jsonText(settings)); });
}

bool ChatStore::setCurrentLeaf(qint64 chatId, qint64 messageId) {
    return inTransaction([&] {
        const std::optional<qint64> owner = chatOfMessage(messageId);
        if (!owner) return false;
        if (*owner != chatId) return fail(QStringLiteral("message %1 is not in chat %2").arg(messageId).arg(chatId));
        return updateChat(chatId, QStringLiteral("current_leaf"), messageId);
    });
}

qint64 ChatStore::addMessage(qint64 chatId, qint64 parentId, const QString& role, const QString& content,
                             const QJsonObject& meta) {
    if (!isKnownRole(role)) {
        fail(QStringLiteral("unknown message role \"%1\"").arg(role));
        return 0;
    }
    qint64 id = 0;
    inTransaction([&] {
        if (parentId != 0) {
            const std::optional<qint64> parentChat = chatOfMessage(parentId);
            if (!parentChat) return false;
            if (*parentChat != chatId) return fail(QStringLiteral("message %1 is not in chat %2").arg(parentId).arg(chatId));
        } else if (!chatExists(chatId)) {
            return false;
        }
        const qint64 added = insertMessage(chatId, parentId, role, content, nowMs(), meta);
        if (!added || !updateChat(chatId, QStringLiteral("current_leaf"), added)) return false;
        id = added;
        return true;
    });
    return id;
}

bool ChatStore::updateMessage(qint64 id, const QString& content, const QJsonObject& meta) {
    return inTransaction([&] {
        const std::optional<qint64> chatId = chatOfMessage(id);
        if (!chatId) return false;
        auto query = prepare(QStringLiteral("UPDATE messages SET content = :content, meta = :meta WHERE id = :id"));
        if (!query) return false;
        query->bindValue(QStringLiteral(":content"), notNull(content));
        query->bindValue(QStringLiteral(":meta"), jsonText(meta));
        query->bindValue(QStringLiteral(":id"), id);
        return run(*query, QStringLiteral("cannot update message %1").arg(id)) && updateChat(*chatId);
    });
}

std::optional<ChatMessage> ChatStore::message(qint64 id) const {
    auto query = prepare(QStringLiteral("SELECT %1 FROM messages m WHERE m.id = :id").arg(kMessageColumns));
    if (!query) return std::nullopt;
    query->bindValue(QStringLiteral(":id"), id);
    if (!run(*query, QStringLiteral("cannot read message %1").arg(id))) return std::nullopt;
    if (!query->next()) {
        fail(QStringLiteral("there is no message %1").arg(id));
        return std::nullopt;
    }
    return messageFrom(*query);
}

QList<ChatMessage> ChatStore::path(qint64 leafId) const {
    auto query = prepare(QStringLiteral("WITH RECURSIVE branch (id, depth) AS ("
                                        " SELECT id, 0 FROM messages WHERE id = :leaf"
                                        " UNION ALL"
                                        " SELECT m.parent_id, b.depth + 1 FROM branch b JOIN messages m ON m.id = b.id"
                                        " WHERE m.parent_id IS NOT NULL)"
                                        " SELECT %1 FROM branch b JOIN messages m ON m.id = b.id ORDER BY b.depth DESC")
                             .arg(kMessageColumns));
    if (!query) return {};
    query->bindValue(QStringLiteral(":leaf"), leafId);
    if (!run(*query, QStringLiteral("cannot read the branch of message %1").arg(leafId))) return {};
    QList<ChatMessage> branch;
    while (query->next()) branch << messageFrom(*query);
    if (branch.isEmpty()) fail(QStringLiteral("there is no message %1").arg(leafId));
    return branch;
}

QList<ChatMessage> ChatStore::children(qint64 chatId, qint64 parentId) const {
    auto query = prepare(QStringLiteral("SELECT %1 FROM messages m WHERE m.chat_id = :chat AND m.parent_id IS :parent"
                                        " ORDER BY m.id")
                             .arg(kMessageColumns));
    if (!query) return {};
    query->bindValue(QStringLiteral(":chat"), chatId);
    query->bindValue(QStringLiteral(":parent"), idOrNull(parentId));
    if (!run(*query, QStringLiteral("cannot read the replies to message %1").arg(parentId))) return {};
    QList<ChatMessage> found;
    while (query->next()) found << messageFrom(*query);
    return found;
}

qint64 ChatStore::newestLeafBelow(qint64 messageId) const {
    const std::optional<qint64> chatId = chatOfMessage(messageId);
    if (!chatId) return 0;
    auto query = prepare(QStringLiteral("SELECT MAX(id) FROM messages WHERE chat_id = :chat AND parent_id = :parent"));
    if (!query) return 0;
    qint64 leaf = messageId;
    for (;;) {
        query->bindValue(QStringLiteral(":chat"), *chatId);
        query->bindValue(QStringLiteral(":parent"), leaf);
        if (!run(*query, QStringLiteral("cannot read the replies to message %1").arg(leaf)) || !query->next()) return 0;
        if (query->value(0).isNull()) return leaf;
        leaf = query->value(0).toLongLong();
    }
}

int ChatStore::messageCount(qint64 chatId) const {
    auto query = prepare(QStringLiteral("SELECT COUNT(*) FROM messages WHERE chat_id = :chat"));
    if (!query) return 0;
    query->bindValue(QStringLiteral(":chat"), chatId);
    if (!run(*query, QStringLiteral("cannot count the messages of chat %1").arg(chatId)) || !query->next()) return 0;
    return query->value(0).toInt();
}

QString ChatStore::exportMarkdown(qint64 chatId) const {
    const std::optional<ChatInfo> info = chat(chatId);
    if (!info) return {};
    QString markdown = QStringLiteral("# %1\n").arg(info->title);
    if (!info->systemPrompt.isEmpty()) markdown += QStringLiteral("\n## System\n\n%1\n").arg(info->systemPrompt.trimmed());
    const QList<ChatMessage> branch = info->currentLeaf == 0 ? QList<ChatMessage>() : path(info->currentLeaf);
    for (const ChatMessage& message : branch) {
        const bool isReply = message.role == QLatin1String("assistant");
        markdown += QStringLiteral("\n## %1\n\n%2\n")
                        .arg(isReply ? QStringLiteral("Assistant") : QStringLiteral("User"),
                             isReply ? markdownOfReply(message.content) : message.content.trimmed());
    }
    return markdown;
}

QJsonObject ChatStore::exportJson(qint64 chatId) const {
    const std::optional<ChatInfo> info = chat(chatId);
    if (!info) return {};
    auto query = prepare(QStringLiteral("SELECT %1 FROM messages m WHERE m.chat_id = :chat ORDER BY m.id").arg(kMessageColumns));
    if (!query) return {};
    query->bindValue(QStringLiteral(":chat"), chatId);
    if (!run(*query, QStringLiteral("cannot read the messages of chat %1").arg(chatId))) return {};
    QJsonArray messages;
    while (query->next()) {
        const ChatMessage message = messageFrom(*query);
        messages.append(QJsonObject{
            {QStringLiteral("id"), message.id},
            {QStringLiteral("parent"), message.parentId == 0 ? QJsonValue(QJsonValue::Null) : QJsonValue(message.parentId)},
            {QStringLiteral("role"), message.role},
            {QStringLiteral("content"), message.content},
            {QStringLiteral("created"), isoTime(message.created)},
            {QStringLiteral("meta"), message.meta},
        });
    }
    return {
        {QStringLiteral("format"), QStringLiteral("oxinfer-chat")},
        {QStringLiteral("version"), kExportFormatVersion},
        {QStringLiteral("title"), info->title},
        {QStringLiteral("created"), isoTime(info->created)},
        {QStringLiteral("updated"), isoTime(info->updated)},
        {QStringLiteral("systemPrompt"), info->systemPrompt},
        {QStringLiteral("settings"), info->settings},
        {QStringLiteral("currentLeaf"), info->currentLeaf},
        {QStringLiteral("messages"), messages},
    };
}

qint64 ChatStore::insertMessage(qint64 chatId, qint64 parentId, const QString& role, const QString& content, qint64 createdMs,
                                const QJsonObject& meta) {
    auto query = prepare(QStringLiteral("INSERT INTO messages (chat_id, parent_id, role, content, created, meta)"
                                        " VALUES (:chat, :parent, :role, :content, :created, :meta)"));
    if (!query) return 0;
    query->bindValue(QStringLiteral(":chat"), chatId);
    query->bindValue(QStringLiteral(":parent"), idOrNull(parentId));
    query->bindValue(QStringLiteral(":role"), role);
    query->bindValue(QStringLiteral(":content"), notNull(content));
    query->bindValue(QStringLiteral(":created"), createdMs);
    query->bindValue(QStringLiteral(":meta"), jsonText(meta));
    if (!run(*query, QStringLiteral("cannot add a message to chat %1").arg(chatId))) return 0;
    return query->lastInsertId().toLongLong();
}

qint64 ChatStore::importJson(const QJsonObject& chat) {
    if (chat.value(QStringLiteral("format")).toString() != QLatin1String("oxinfer-chat")) {
        fail(QStringLiteral("not an exported chat (\"format\" is not \"oxinfer-chat\")"));
        return 0;
    }
    if (chat.value(QStringLiteral("version")).toInt() > kExportFormatVersion) {
        fail(QStringLiteral("the chat was exported by a newer version (format %1; this one reads %2)")
                 .arg(chat.value(QStringLiteral("version")).toInt())
                 .arg(kExportFormatVersion));
        return 0;
    }
    const QJsonArray messages = chat.value(QStringLiteral("messages")).toArray();
    const qint64 now = nowMs();
    const auto timeOf = [now](const QJsonValue& value) {
        const QDateTime time = QDateTime::fromString(value.toString(), Qt::ISODateWithMs);
        return time.isValid() ? time.toMSecsSinceEpoch() : now;
    };
    qint64 id = 0;
    inTransaction([&] {
        const qint64 chatId = insertChat(chat.value(QStringLiteral("title")).toString(QStringLiteral("Imported chat")),
                                         timeOf(chat.value(QStringLiteral("created"))),
                                         chat.value(QStringLiteral("systemPrompt")).toString(), chat.value(QStringLiteral("settings")).toObject());
        if (!chatId) return false;
        // Parents before children, whatever the order in the file (ids in the file are the file's
        // own): from the roots down, each message's children in the order of their ids.
        QHash<qint64, QList<QJsonObject>> childrenOf;  // by the parent's id in the file; roots under -1
        QSet<qint64> ids;
        for (const QJsonValue& value : messages) {
            const QJsonObject m = value.toObject();
            const qint64 fileId = m.value(QStringLiteral("id")).toInteger();
            if (ids.contains(fileId)) return fail(QStringLiteral("two messages have the same id (%1)").arg(fileId));
            ids.insert(fileId);
            const QJsonValue parent = m.value(QStringLiteral("parent"));
            childrenOf[parent.isNull() ? -1 : parent.toInteger()].append(m);
        }
        QHash<qint64, qint64> newIds;
        QList<std::pair<qint64, qint64>> queue{{-1, 0}};  // (id in the file, id here)
        for (qsizetype next = 0; next < queue.size(); ++next) {
            QList<QJsonObject> children = childrenOf.value(queue[next].first);
            std::stable_sort(children.begin(), children.end(), [](const QJsonObject& a, const QJsonObject& b) {
                return a.value(QStringLiteral("id")).toInteger() < b.value(QStringLiteral("id")).toInteger();
            });
            for (const QJsonObject& m : children) {
                const qint64 fileId = m.value(QStringLiteral("id")).toInteger();
                const QString role = m.value(QStringLiteral("role")).toString();
                if (!isKnownRole(role)) return fail(QStringLiteral("message %1 has an unknown role \"%2\"").arg(fileId).arg(role));
                const qint64 added = insertMessage(chatId, queue[next].second, role, m.value(QStringLiteral("content")).toString(),
                                                   timeOf(m.value(QStringLiteral("created"))), m.value(QStringLiteral("meta")).toObject());
                if (!added) return false;
                newIds.insert(fileId, added);
                queue.append({fileId, added});
            }
        }
        // What was not reached from a root hangs from a parent that is not in the file (or a cycle).
        for (const QJsonValue& value : messages) {
            const qint64 fileId = value.toObject().value(QStringLiteral("id")).toInteger();
            if (!newIds.contains(fileId)) return fail(QStringLiteral("message %1 names a parent that is not in the file").arg(fileId));
        }
        // The branch shown: the file's, else the newest message's branch.
        qint64 leaf = newIds.value(chat.value(QStringLiteral("currentLeaf")).toInteger(), 0);
        if (!leaf && !queue.isEmpty() && queue.size() > 1) leaf = newestLeafBelow(queue.last().second);
        if (leaf && !updateChat(chatId, QStringLiteral("current_leaf"), leaf)) return false;
        id = chatId;
        return true;
    });
    return id;
}

bool ChatStore::inTransaction(const std::function<bool()>& change) {
    // IMMEDIATE takes the write lock first, so that another process writing the file makes this
    // wait (the driver's busy timeout) instead of failing halfway through the change.
    if (!execute(QStringLiteral("BEGIN IMMEDIATE"), QStringLiteral("cannot start a transaction"))) return false;
    if (change() && execute(QStringLiteral("COMMIT"), QStringLiteral("cannot save the change"))) return true;
    // lastError() keeps the failure that got here; whether ROLLBACK still had work to do does not matter.
    QSqlQuery(db_).exec(QStringLiteral("ROLLBACK"));
    return false;
}

// Sets the chat's `updated` and, when named, one more column (a name from this file, never input).
bool ChatStore::updateChat(qint64 id, const QString& column, const QVariant& value) {
    const QString assignments = column.isEmpty() ? QStringLiteral("updated = %1").arg(kNextUpdated)
                                                 : QStringLiteral("%1 = :value, updated = %2").arg(column, kNextUpdated);
    auto query = prepare(QStringLiteral("UPDATE chats SET %1 WHERE id = :id").arg(assignments));
    if (!query) return false;
    if (!column.isEmpty()) query->bindValue(QStringLiteral(":value"), value);
    query->bindValue(QStringLiteral(":now"), nowMs());
    query->bindValue(QStringLiteral(":id"), id);
    if (!run(*query, QStringLiteral("cannot change chat %1").arg(id))) return false;
    return query->numRowsAffected() == 1 || fail(QStringLiteral("there is no chat %1").arg(id));
}

std::optional<qint64> ChatStore::chatOfMessage(qint64 messageId) const {
    auto query = prepare(QStringLiteral("SELECT chat_id FROM messages WHERE id = :id"));
    if (!query) return std::nullopt;
    query->bindValue(QStringLiteral(":id"), messageId);
    if (!run(*query, QStringLiteral("cannot read message %1").arg(messageId))) return std::nullopt;
    if (!query->next()) {
        fail(QStringLiteral("there is no message %1").arg(messageId));
        return std::nullopt;
    }
    return query->value(0).toLongLong();
}

bool ChatStore::chatExists(qint64 chatId) const {
    auto query = prepare(QStringLiteral("SELECT 1 FROM chats WHERE id = :id"));
    if (!query) return false;
    query->bindValue(QStringLiteral(":id"), chatId);
    if (!run(*query, QStringLiteral("cannot read chat %1").arg(chatId))) return false;
    return query->next() || fail(QStringLiteral("there is no chat %1").arg(chatId));
}

std::optional<QSqlQuery> ChatStore::prepare(const QString& sql) const {
    if (!isOpen()) {
        fail(QStringLiteral("no chat database is open"));
        return std::nullopt;
    }
    QSqlQuery query(db_);
    // Rows are read once, in order: forward-only keeps the driver from caching them all.
    query.setForwardOnly(true);
    if (!query.prepare(sql)) {
        failSql(QStringLiteral("cannot prepare a statement"), query.lastError());
        return std::nullopt;
    }
    return query;
}

bool ChatStore::run(QSqlQuery& query, const QString& what) const {
    return query.exec() || failSql(what, query.lastError());
}

bool ChatStore::execute(const QString& sql, const QString& what) {
    auto query = prepare(sql);
    return query && run(*query, what);
}

bool ChatStore::fail(const QString& what) const {
    lastError_ = path_.isEmpty() ? what : QStringLiteral("%1: %2").arg(QDir::toNativeSeparators(path_), what);
    return false;
}

bool ChatStore::failSql(const QString& what, const QSqlError& error) const {
    return fail(QStringLiteral("%1: %2").arg(what, sqlErrorText(error)));
}

}  // namespace studio
