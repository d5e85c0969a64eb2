// How a message is split for display (reasoning, prose, fenced code) and shown in a card.

#include "ui/message_view.h"

#include <QApplication>
#include <QClipboard>
#include <QLabel>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

using studio::MessageParts;

class TestMessageView : public QObject {
    Q_OBJECT

private slots:
    void reasoningIsSeparated() {
        const auto parts = MessageParts::parse(QStringLiteral("<think>\nweigh it\n</think>\n\nThe answer."));
        QCOMPARE(parts.reasoning, QStringLiteral("weigh it"));
        QVERIFY(!parts.reasoningOpen);
        QCOMPARE(parts.segments.size(), 1);
        QCOMPARE(parts.segments[0].text, QStringLiteral("The answer."));
        // A template that opens the block in the prompt: the reply only closes it.
        QCOMPARE(MessageParts::parse(QStringLiteral("hmm</think>ok")).reasoning, QStringLiteral("hmm"));
        // Still thinking: all of it is reasoning.
        const auto open = MessageParts::parse(QStringLiteral("<think>step one"));
        QVERIFY(open.reasoningOpen);
        QCOMPARE(open.reasoning, QStringLiteral("step one"));
        QVERIFY(open.segments.isEmpty());
    }

    void codeBlocksAreSegments() {
        const auto parts = MessageParts::parse(QStringLiteral("Try:\n```python\nprint(1)\nprint(2)\n```\nthen `x`.\n~~~\nraw\n~~~"));
        QCOMPARE(parts.segments.size(), 4);
        QVERIFY(!parts.segments[0].code);
        QVERIFY(parts.segments[1].code);
        QCOMPARE(parts.segments[1].language, QStringLiteral("python"));
        QCOMPARE(parts.segments[1].text, QStringLiteral("print(1)\nprint(2)"));
        QCOMPARE(parts.segments[2].text, QStringLiteral("then `x`."));
        QCOMPARE(parts.segments[3].text, QStringLiteral("raw"));
        // A longer fence holds a shorter one (an attached file that contains a code block).
        const auto nested = MessageParts::parse(QStringLiteral("````notes.md\nsee:\n```\nx\n```\n````\nWhat is x?"));
        QCOMPARE(nested.segments.size(), 2);
        QCOMPARE(nested.segments[0].language, QStringLiteral("notes.md"));
        QCOMPARE(nested.segments[0].text, QStringLiteral("see:\n```\nx\n```"));
        QCOMPARE(nested.segments[1].text, QStringLiteral("What is x?"));
        // While streaming, an unclosed fence runs to the end.
        const auto streaming = MessageParts::parse(QStringLiteral("```cpp\nint x"));
        QCOMPARE(streaming.segments.size(), 1);
        QCOMPARE(streaming.segments[0].text, QStringLiteral("int x"));
    }

    // A new message adds one card; the cards before it stay (a long chat is not rebuilt). A new
    // version of a message replaces its card and what follows it.
    void branchKeepsTheCardsThatDidNotChange() {
        QTemporaryDir dir;
        studio::ChatStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("chats.sqlite"))));
        const qint64 chat = store.createChat(QStringLiteral("t"));
        qint64 parent = 0;
        for (int i = 0; i < 40; ++i)
            parent = store.addMessage(chat, parent, i % 2 ? QStringLiteral("assistant") : QStringLiteral("user"), QString::number(i));
        studio::MessageView view;
        view.showBranch(store, store.path(parent));
        const QList<studio::MessageCard*> before = view.cards();
        QCOMPARE(before.size(), 40);

        const qint64 question = store.addMessage(chat, parent, QStringLiteral("user"), QStringLiteral("more"));
        view.showBranch(store, store.path(question));
        QCOMPARE(view.cards().size(), 41);
        QCOMPARE(view.cards().mid(0, 40), before);

        // Regenerating the last reply of the first 40: that card (now "2 / 2") and the rest go.
        const qint64 regenerated = store.addMessage(chat, before.last()->message().parentId, QStringLiteral("assistant"), QStringLiteral("again"));
        view.showBranch(store, store.path(regenerated));
        QCOMPARE(view.cards().size(), 40);
        QCOMPARE(view.cards().mid(0, 39), before.mid(0, 39));
        QVERIFY(view.cards().last() != before.last());
        QCOMPARE(view.cards().last()->siblingCount(), 2);
        QCOMPARE(view.cardFor(regenerated), view.cards().last());
        QCOMPARE(view.cardFor(question), nullptr);
    }

    // While a reply streams, its finished parts keep their widgets and the growing one changes in
    // place (no re-layout of the whole reply at every update).
    void streamingUpdatesOnlyTheGrowingEnd() {
        studio::ChatMessage message;
        message.role = QStringLiteral("assistant");
        message.content = QStringLiteral("<think>hmm");
        studio::MessageCard card(message, 0, 1);
        auto* toggle = card.findChild<QToolButton*>(QStringLiteral("reasoningToggle"));
        QCOMPARE(toggle->text(), QStringLiteral("Thinking\u2026"));
        card.setContent(QStringLiteral("<think>hmm, yes</think>Intro\n```py\nx"));
        QCOMPARE(card.findChild<QToolButton*>(QStringLiteral("reasoningToggle")), toggle);
        QCOMPARE(toggle->text(), QStringLiteral("Reasoning"));
        QCOMPARE(card.findChild<QLabel*>(QStringLiteral("reasoningText"))->text(), QStringLiteral("hmm, yes"));
        auto* intro = card.findChild<QLabel*>(QStringLiteral("messageText"));
        auto* code = card.findChild<QLabel*>(QStringLiteral("codeText"));
        QCOMPARE(code->text(), QStringLiteral("x"));
        card.setContent(QStringLiteral("<think>hmm, yes</think>Intro\n```py\nx = 1\n```\nDone."));
        QCOMPARE(card.findChild<QLabel*>(QStringLiteral("codeText")), code);
        QCOMPARE(code->text(), QStringLiteral("x = 1"));
        const QList<QLabel*> texts = card.findChildren<QLabel*>(QStringLiteral("messageText"));
        QCOMPARE(texts.size(), 2);
        QVERIFY(texts.contains(intro));
        card.findChild<QToolButton*>(QStringLiteral("copyCode"))->click();
        QCOMPARE(QApplication::clipboard()->text(), QStringLiteral("x = 1"));
        // Content that changes earlier (an edit) is shown whole and right.
        card.setContent(QStringLiteral("Only text"));
        QVERIFY(!card.findChild<QToolButton*>(QStringLiteral("reasoningToggle")));
        QVERIFY(!card.findChild<QLabel*>(QStringLiteral("codeText")));
        QCOMPARE(card.renderedText(), QStringLiteral("Only text"));
    }

    void cardShowsReasoningCollapsedAndCodeWithCopy() {
        studio::ChatMessage message;
        message.id = 7;
        message.role = QStringLiteral("assistant");
        message.content = QStringLiteral("<think>secret plan</think>Here:\n```sh\nls\n```");
        studio::MessageCard card(message, 0, 1);
        auto* reasoning = card.findChild<QLabel*>(QStringLiteral("reasoningText"));
        QVERIFY(reasoning);
        QVERIFY(reasoning->isHidden());
        card.findChild<QToolButton*>(QStringLiteral("reasoningToggle"))->click();
        QVERIFY(!reasoning->isHidden());
        QVERIFY(card.findChild<QToolButton*>(QStringLiteral("copyCode")));
        QCOMPARE(card.findChild<QLabel*>(QStringLiteral("codeText"))->text(), QStringLiteral("ls"));
        QVERIFY(card.findChild<QToolButton*>(QStringLiteral("regenerateMessage")));
        QVERIFY(!card.findChild<QToolButton*>(QStringLiteral("editMessage")));
        QVERIFY(!card.findChild<QLabel*>(QStringLiteral("branchPosition")));  // no siblings, no arrows
        // Streaming more text keeps the reasoning open.
        card.setContent(message.content + QStringLiteral("\nDone."));
        QVERIFY(!card.findChild<QLabel*>(QStringLiteral("reasoningText"))->isHidden());
    }
};

QTEST_MAIN(TestMessageView)
#include "test_message_view.moc"
