#pragma once
// The messages of one branch of a chat, as a column of message cards in a scroll area. Each card
// renders Markdown (code blocks in their own frame with a copy button), shows reasoning
// (<think>...</think>) collapsed, and offers the actions of its role: copy, edit (user),
// regenerate (assistant), and arrows between sibling branches.

#include "core/chat_store.h"

#include <QFrame>
#include <QList>
#include <QScrollArea>

class QLabel;
class QToolButton;
class QVBoxLayout;

namespace studio {

// Text split into Markdown prose, fenced code blocks and the reasoning block.
struct MessageParts {
    QString reasoning;          // inside <think>...</think> ("" when none)
    bool reasoningOpen = false; // the block is still being written
    struct Segment {
        bool code = false;
        QString language;       // after the opening fence
        QString text;
        bool operator==(const Segment&) const = default;
    };
    QList<Segment> segments;    // the answer after the reasoning
    static MessageParts parse(const QString& content);
};

class MessageCard : public QFrame {
    Q_OBJECT
public:
    MessageCard(const ChatMessage& message, int siblingIndex, int siblingCount, QWidget* parent = nullptr);
    const ChatMessage& message() const { return message_; }
    int siblingIndex() const { return siblingIndex_; }
    int siblingCount() const { return siblingCount_; }
    // Streaming: new content for the card (re-rendered; the reasoning keeps its open/closed state).
    void setContent(const QString& content);
    void setStatus(const QString& text);  // below the text: tokens/s, "stopped", errors
    void setBusy(bool busy);              // hides the actions while the reply is written
    QString renderedText() const;         // what the card shows, for tests

signals:
    void editRequested(qint64 messageId);
    void regenerateRequested(qint64 messageId);
    void siblingRequested(qint64 messageId, int offset);  // -1 previous, +1 next

private:
    // Shows message_.content. While a reply streams only its growing end changes: the widgets of
    // unchanged segments stay, and the last one takes its new text in place.
    void render();

    ChatMessage message_;
    int siblingIndex_ = 0;
    int siblingCount_ = 1;
    QVBoxLayout* body_ = nullptr;
    QLabel* status_ = nullptr;
    QWidget* actions_ = nullptr;
    bool reasoningExpanded_ = false;
    QToolButton* reasoningToggle_ = nullptr;
    QLabel* reasoningText_ = nullptr;
    QList<MessageParts::Segment> shownSegments_;
    QList<QWidget*> segmentWidgets_;
};

class MessageView : public QScrollArea {
    Q_OBJECT
public:
    explicit MessageView(QWidget* parent = nullptr);
    // Shows `branch` (root first); sibling counts from the store. Cards of the part that did not
    // change are kept, so a long chat is not laid out again for each new message.
    void showBranch(const ChatStore& store, const QList<ChatMessage>& branch);
    void clear();
    MessageCard* cardFor(qint64 messageId) const;
    QList<MessageCard*> cards() const { return cards_; }
    void scrollToEnd();
    void setPlaceholder(const QString& text);

signals:
    void editRequested(qint64 messageId);
    void regenerateRequested(qint64 messageId);
    void siblingRequested(qint64 messageId, int offset);

private:
    // Cards go with deleteLater: the one removed may be the sender of the click that led here.
    void removeCardsFrom(int index);

    QList<MessageCard*> cards_;
    QWidget* column_ = nullptr;
    QVBoxLayout* layout_ = nullptr;
    QLabel* placeholder_ = nullptr;
    bool followEnd_ = true;
};

}  // namespace studio
