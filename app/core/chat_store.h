#pragma once
// The chats of Oxinfer Studio, kept in an SQLite file. A chat is a tree of messages: regenerating
// a reply or editing and resending a message adds a sibling branch, and every branch is kept; the
// chat remembers which leaf is shown. Every change is one transaction, so the file stays whole
// when the app is killed at any moment.

#include <QDateTime>
#include <QJsonObject>
#include <QList>
#include <QSqlDatabase>
#include <QString>
#include <QVariant>

#include <functional>
#include <optional>

class QSqlError;
class QSqlQuery;

namespace studio {

struct ChatMessage {
    qint64 id = 0;
    qint64 chatId = 0;
    qint64 parentId = 0;  // 0: a root message (the first of its branch)
    QString role;         // "user" or "assistant"
    QString content;      // assistant text as generated, including any <think>...</think> block
    QDateTime created;    // UTC
    QJsonObject meta;     // e.g. {"model": "...", "tokens": 42, "tokensPerSecond": 9.5, "stop": "stop_token", "partial": true}

    bool operator==(const ChatMessage&) const = default;
};

struct ChatInfo {
    qint64 id = 0;
    QString title;
    QDateTime created;  // UTC
    QDateTime updated;  // UTC: the last change of any message or setting of the chat
    QString systemPrompt;
    QJsonObject settings;     // the chat's sampling settings (temperature, top_p, ...), opaque here
    qint64 currentLeaf = 0;   // the message at the end of the branch shown; 0: an empty chat

    bool operator==(const ChatInfo&) const = default;
};

// One chat database file. Use it on the thread that created it; every call is quick.
// Failures return false, 0, nullopt or an empty value and leave the reason in lastError().
class ChatStore {
public:
    ChatStore();
    ~ChatStore();
    ChatStore(const ChatStore&) = delete;
    ChatStore& operator=(const ChatStore&) = delete;

    // Opens or creates the database file (and its folders) and brings its schema up to
    // schemaVersion(). A file written by a newer version, or one that is not a chat database,
    // is refused untouched; *error (and lastError()) then names the file and the problem.
    bool open(const QString& path, QString* error = nullptr);
    void close();
    bool isOpen() const;
    QString path() const;
    // The schema version this code writes (PRAGMA user_version).
    static int schemaVersion();
    QString lastError() const;

    // Newest `updated` first. search: a case-insensitive substring of the title or of any message.
    QList<ChatInfo> chats(const QString& search = {}) const;
    std::optional<ChatInfo> chat(qint64 id) const;
    qint64 createChat(const QString& title, const QString& systemPrompt = {}, const QJsonObject& settings = {});
    bool renameChat(qint64 id, const QString& title);
    bool deleteChat(qint64 id);  // with all its messages
    bool setSystemPrompt(qint64 id, const QString& text);
    bool setSettings(qint64 id, const QJsonObject& settings);
    // messageId must be a message of the chat.
    bool setCurrentLeaf(qint64 chatId, qint64 messageId);

    // Adds a message under parentId (0: a new root) and makes it the chat's current leaf; returns its id.
    qint64 addMessage(qint64 chatId, qint64 parentId, const QString& role, const QString& content,
                      const QJsonObject& meta = {});
    // Replaces a message's content and meta (a streamed reply is saved this way as it grows).
    bool updateMessage(qint64 id, const QString& content, const QJsonObject& meta);
    std::optional<ChatMessage> message(qint64 id) const;
    // The branch from its root down to leafId, root first.
    QList<ChatMessage> path(qint64 leafId) const;
    // The messages under parentId (0: the chat's roots), oldest first.
    QList<ChatMessage> children(qint64 chatId, qint64 parentId) const;
    // Follows the newest child from messageId down to a leaf: after switching to a sibling, the
    // branch shown below it is its newest one.
    qint64 newestLeafBelow(qint64 messageId) const;
    int messageCount(qint64 chatId) const;

    // The branch that ends at the chat's current leaf as Markdown: "# Title", the system prompt,
    // then "## User" / "## Assistant" sections; reasoning in <think> becomes a <details> block.
    QString exportMarkdown(qint64 chatId) const;
    // The whole tree: {"format": "oxinfer-chat", "version": 1, "title", "created", "updated",
    // "systemPrompt", "settings", "currentLeaf", "messages": [{"id", "parent" (null for a root),
    // "role", "content", "created", "meta"}, ...]}, times as ISO 8601 UTC; {} when there is no such chat.
    QJsonObject exportJson(qint64 chatId) const;
    // A chat that exportJson wrote (here or on another computer), as a new chat with the whole
    // tree; returns its id, or 0 with lastError() saying what is wrong with the file's content.
    qint64 importJson(const QJsonObject& chat);

private:
    // Insert one chat / message, inside a transaction the caller holds; 0 on failure.
    qint64 insertChat(const QString& title, qint64 createdMs, const QString& systemPrompt, const QJsonObject& settings);
    qint64 insertMessage(qint64 chatId, qint64 parentId, const QString& role, const QString& content, qint64 createdMs,
                         const QJsonObject& meta);
    bool openFile(const QString& path);
    bool checkOwnership(int version);
    bool migrate(int fromVersion);
    bool inTransaction(const std::function<bool()>& change);
    bool updateChat(qint64 id, const QString& column = {}, const QVariant& value = {});
    std::optional<qint64> chatOfMessage(qint64 messageId) const;
    bool chatExists(qint64 chatId) const;

    std::optional<QSqlQuery> prepare(const QString& sql) const;
    bool run(QSqlQuery& query, const QString& what) const;
    bool execute(const QString& sql, const QString& what);
    bool fail(const QString& what) const;
    bool failSql(const QString& what, const QSqlError& error) const;

    QSqlDatabase db_;
    QString connectionName_;
    QString path_;
    mutable QString lastError_;
};

}  // namespace studio
