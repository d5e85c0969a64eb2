#pragma once
// The Chat pane: the conversations (new, rename, delete, search, export), the messages of the
// branch shown, the composer with send and stop, and each chat's system prompt and sampling.
// Replies stream from the engine thread; the reply being written is saved about once a second,
// so a crash keeps all earlier messages and most of the last one.

#include "core/chat_store.h"
#include "core/engine.h"

#include <QElapsedTimer>
#include <QList>
#include <QUrl>
#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListView;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTimer;

namespace studio {

class ChatListModel;
class LocalModelsModel;
class MessageView;

class ChatPane : public QWidget {
    Q_OBJECT
public:
    ChatPane(ChatStore* store, Engine* engine, LocalModelsModel* models, QWidget* parent = nullptr);

    qint64 currentChat() const { return chatId_; }
    void openChat(qint64 chatId);  // 0: a new, empty chat (created when the first message is sent)
    void sendMessage(const QString& text);  // what the Send button does with the composer's text
    void regenerate(qint64 assistantMessageId);
    void editMessage(qint64 userMessageId);  // puts it in the composer; the next send makes a sibling
    void showSibling(qint64 messageId, int offset);
    void stop();
    bool generating() const { return streamingMessage_ != 0; }
    // Saves the reply being written as it stands (the app is closing and the engine stops).
    void saveInterruptedReply();
    MessageView* messageView() const { return messages_; }
    ChatListModel* chatList() const { return chatList_; }

    bool exportChat(qint64 chatId, const QString& file);  // .md: Markdown, else JSON
    // A chat exported as JSON (here or elsewhere), added and opened; 0 and *error otherwise.
    qint64 importChat(const QString& file, QString* error = nullptr);

    // Files dropped onto the chat: text files attach as context to the next message (shown above
    // the composer); images, audio and video get a clear message until the models can read them.
    void attachFiles(const QList<QUrl>& files);
    QStringList attachmentNames() const;
    static constexpr qint64 kMaxAttachmentBytes = 512 * 1024;

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

signals:
    void modelsRequested();  // "choose a model" leads to the Models pane

private:
    void showChat(qint64 chatId);
    QWidget* createSidebar();
    QWidget* createSettingsPanel();
    void startReply(qint64 userMessageId);
    void showCurrentBranch();
    void loadChatSettings();
    void saveChatSettings();
    void flushChatSettings();  // a save still waiting for typing to pause, now
    void updateModelRow();
    void updateComposer();
    void onUpdate(const GenerationUpdate& update);
    void onFinished(const GenerationResult& result);
    void showContextUse(qint64 used, qint64 length, double tokensPerSecond);
    void renameChat(qint64 chatId);
    void deleteChat(qint64 chatId);
    void showAttachments();
    QString withAttachments(const QString& text) const;

    ChatStore* store_;
    Engine* engine_;
    LocalModelsModel* models_;
    ChatListModel* chatList_ = nullptr;
    qint64 chatId_ = 0;

    QLineEdit* search_ = nullptr;
    QListView* chatView_ = nullptr;
    QLabel* title_ = nullptr;
    QComboBox* modelChoice_ = nullptr;
    QPushButton* loadButton_ = nullptr;
    QLabel* modelStatus_ = nullptr;
    MessageView* messages_ = nullptr;
    QLabel* banner_ = nullptr;
    QLabel* editBanner_ = nullptr;
    QLabel* attachments_ = nullptr;
    QPlainTextEdit* composer_ = nullptr;
    QPushButton* sendButton_ = nullptr;
    QLabel* stats_ = nullptr;

    QPlainTextEdit* systemPrompt_ = nullptr;
    QDoubleSpinBox* temperature_ = nullptr;
    QDoubleSpinBox* topP_ = nullptr;
    QSpinBox* topK_ = nullptr;
    QDoubleSpinBox* minP_ = nullptr;
    QDoubleSpinBox* repeatPenalty_ = nullptr;
    QSpinBox* maxTokens_ = nullptr;
    QComboBox* thinking_ = nullptr;
    bool loadingSettings_ = false;

    struct Attachment {
        QString name;
        QString text;
    };
    QList<Attachment> attached_;
    qint64 editing_ = 0;           // the user message being edited
    quint64 request_ = 0;          // the engine request being streamed
    qint64 streamingMessage_ = 0;  // the assistant message it fills
    qint64 streamingChat_ = 0;
    QString streamingModel_;
    qint64 streamedTokens_ = 0;
    QString streamed_;
    QTimer* settingsSave_ = nullptr;  // edits of the chat's settings are saved once typing pauses
    QTimer* searchDelay_ = nullptr;
    QElapsedTimer sinceSave_;
};

}  // namespace studio
