#include "ui/message_view.h"

#include <QApplication>
#include <QClipboard>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QRegularExpression>
#include <QScrollBar>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

namespace studio {

MessageParts MessageParts::parse(const QString& content) {
    MessageParts parts;
    QString answer = content;
    // Reasoning models open with <think> (some templates put it in the prompt, so the reply may
    // start inside the block and only close it).
    const qsizetype close = answer.indexOf(QLatin1String("</think>"));
    const qsizetype open = answer.indexOf(QLatin1String("<think>"));
    if (open >= 0 && (close < 0 || open < close)) {
        const qsizetype start = open + 7;
        if (close < 0) {
            parts.reasoning = answer.mid(start).trimmed();
            parts.reasoningOpen = true;
            answer.clear();
        } else {
            parts.reasoning = answer.mid(start, close - start).trimmed();
            answer = answer.left(open) + answer.mid(close + 8);
        }
    } else if (close >= 0 && answer.left(close).indexOf(QLatin1String("```")) < 0) {
        parts.reasoning = answer.left(close).trimmed();
        answer = answer.mid(close + 8);
    }
    answer = answer.trimmed();

    // Fenced code blocks (``` or ~~~, optional language); an unclosed fence runs to the end.
    static const QRegularExpression fence(QStringLiteral("^(`{3,}|~{3,})[ \\t]*([^\\s`]*)[^\\n]*$"), QRegularExpression::MultilineOption);
    qsizetype position = 0;
    while (position < answer.size()) {
        const QRegularExpressionMatch start = fence.match(answer, position);
        if (!start.hasMatch()) break;
        const QString before = answer.mid(position, start.capturedStart() - position).trimmed();
        if (!before.isEmpty()) parts.segments.append({false, {}, before});
        const qsizetype codeStart = start.capturedEnd() + 1;
        const QRegularExpression closing(QStringLiteral("^") + QRegularExpression::escape(start.captured(1)) + QStringLiteral("[ \\t]*$"),
                                         QRegularExpression::MultilineOption);
        const QRegularExpressionMatch end = closing.match(answer, codeStart);
        const qsizetype codeEnd = end.hasMatch() ? end.capturedStart() : answer.size();
        QString code = codeStart < answer.size() ? answer.mid(codeStart, codeEnd - codeStart) : QString();
        if (code.endsWith(QLatin1Char('\n'))) code.chop(1);
        parts.segments.append({true, start.captured(2), code});
        position = end.hasMatch() ? end.capturedEnd() : answer.size();
    }
    const QString rest = answer.mid(position).trimmed();
    if (!rest.isEmpty()) parts.segments.append({false, {}, rest});
    return parts;
}

namespace {

QLabel* markdownLabel(const QString& markdown, QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setTextFormat(Qt::MarkdownText);
    label->setText(markdown);
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse);
    label->setOpenExternalLinks(true);
    label->setObjectName(QStringLiteral("messageText"));
    return label;
}

QToolButton* actionButton(const QString& text, const QString& tip, QWidget* parent) {
    auto* button = new QToolButton(parent);
    button->setText(text);
    button->setToolTip(tip);
    button->setAutoRaise(true);
    button->setCursor(Qt::PointingHandCursor);
    return button;
}

// A fenced code block: language and a copy button above monospace text.
QFrame* codeBlock(const MessageParts::Segment& segment, QWidget* parent) {
    auto* frame = new QFrame(parent);
    frame->setObjectName(QStringLiteral("codeBlock"));
    auto* layout = new QVBoxLayout(frame);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    auto* header = new QWidget(frame);
    header->setObjectName(QStringLiteral("codeHeader"));
    auto* headerLayout = new QHBoxLayout(header);
    headerLayout->setContentsMargins(10, 2, 4, 2);
    auto* language = new QLabel(segment.language.isEmpty() ? QStringLiteral("code") : segment.language, header);
    language->setObjectName(QStringLiteral("codeLanguage"));
    headerLayout->addWidget(language, 1);
    auto* copy = actionButton(QStringLiteral("Copy"), QStringLiteral("Copy the code"), header);
    copy->setObjectName(QStringLiteral("copyCode"));
    headerLayout->addWidget(copy);
    layout->addWidget(header);
    auto* code = new QLabel(segment.text, frame);
    code->setObjectName(QStringLiteral("codeText"));
    code->setTextFormat(Qt::PlainText);
    code->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    code->setTextInteractionFlags(Qt::TextSelectableByMouse);
    code->setContentsMargins(10, 8, 10, 8);
    code->setWordWrap(true);
    layout->addWidget(code);
    // The text as shown now: a block still being written grows in place.
    QObject::connect(copy, &QToolButton::clicked, copy, [copy, code] {
        QApplication::clipboard()->setText(code->text());
        copy->setText(QStringLiteral("Copied"));
        QTimer::singleShot(1500, copy, [copy] { copy->setText(QStringLiteral("Copy")); });
    });
    return frame;
}

}  // namespace

MessageCard::MessageCard(const ChatMessage& message, int siblingIndex, int siblingCount, QWidget* parent)
    : QFrame(parent), message_(message), siblingIndex_(siblingIndex), siblingCount_(siblingCount) {
    const bool user = message.role == QLatin1String("user");
    setObjectName(user ? QStringLiteral("userMessage") : QStringLiteral("assistantMessage"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(16, 10, 16, 8);
    layout->setSpacing(6);
    auto* role = new QLabel(user ? QStringLiteral("You") : message.meta.value("model").toString(QStringLiteral("Assistant")), this);
    role->setObjectName(QStringLiteral("messageRole"));
    layout->addWidget(role);
    auto* body = new QWidget(this);
    body_ = new QVBoxLayout(body);
    body_->setContentsMargins(0, 0, 0, 0);
    body_->setSpacing(8);
    layout->addWidget(body);
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("messageStatus"));
    status_->setWordWrap(true);
    status_->hide();
    layout->addWidget(status_);

    actions_ = new QWidget(this);
    auto* actions = new QHBoxLayout(actions_);
    actions->setContentsMargins(0, 0, 0, 0);
    actions->setSpacing(2);
    if (siblingCount > 1) {
        auto* previous = actionButton(QStringLiteral("\u2039"), QStringLiteral("Previous version"), actions_);
        previous->setObjectName(QStringLiteral("previousBranch"));
        previous->setEnabled(siblingIndex > 0);
        auto* position = new QLabel(QStringLiteral("%1 / %2").arg(siblingIndex + 1).arg(siblingCount), actions_);
        position->setObjectName(QStringLiteral("branchPosition"));
        auto* next = actionButton(QStringLiteral("\u203a"), QStringLiteral("Next version"), actions_);
        next->setObjectName(QStringLiteral("nextBranch"));
        next->setEnabled(siblingIndex + 1 < siblingCount);
        connect(previous, &QToolButton::clicked, this, [this] { emit siblingRequested(message_.id, -1); });
        connect(next, &QToolButton::clicked, this, [this] { emit siblingRequested(message_.id, +1); });
        actions->addWidget(previous);
        actions->addWidget(position);
        actions->addWidget(next);
    }
    auto* copy = actionButton(QStringLiteral("Copy"), QStringLiteral("Copy the message"), actions_);
    copy->setObjectName(QStringLiteral("copyMessage"));
    connect(copy, &QToolButton::clicked, this, [this] {
        QString text;
        for (const auto& segment : MessageParts::parse(message_.content).segments)
            text += segment.code ? QStringLiteral("```%1\n%2\n```\n\n").arg(segment.language, segment.text) : segment.text + QStringLiteral("\n\n");
        QApplication::clipboard()->setText(text.trimmed());
    });
    actions->addWidget(copy);
    if (user) {
        auto* edit = actionButton(QStringLiteral("Edit"), QStringLiteral("Edit and send again (keeps this version)"), actions_);
        edit->setObjectName(QStringLiteral("editMessage"));
        connect(edit, &QToolButton::clicked, this, [this] { emit editRequested(message_.id); });
        actions->addWidget(edit);
    } else {
        auto* regenerate = actionButton(QStringLiteral("Regenerate"), QStringLiteral("Write another reply (keeps this one)"), actions_);
        regenerate->setObjectName(QStringLiteral("regenerateMessage"));
        connect(regenerate, &QToolButton::clicked, this, [this] { emit regenerateRequested(message_.id); });
        actions->addWidget(regenerate);
    }
    actions->addStretch(1);
    layout->addWidget(actions_);

    if (message.meta.value("partial").toBool())
        setStatus(QStringLiteral("This reply was interrupted before it finished."));
    else if (message.meta.contains("tokensPerSecond"))
        setStatus(QStringLiteral("%1 tokens \u00b7 %2 tokens/s").arg(message.meta.value("tokens").toInt()).arg(message.meta.value("tokensPerSecond").toDouble(), 0, 'f', 1));
    render();
}

void MessageCard::setContent(const QString& content) {
    if (content == message_.content) return;
    message_.content = content;
    render();
}

void MessageCard::setStatus(const QString& text) {
    status_->setText(text);
    status_->setVisible(!text.isEmpty());
}

void MessageCard::setBusy(bool busy) { actions_->setVisible(!busy); }

QString MessageCard::renderedText() const {
    QStringList texts;
    for (const QLabel* label : findChildren<QLabel*>())
        if (label->objectName() == QLatin1String("messageText") || label->objectName() == QLatin1String("codeText")) texts << label->text();
    return texts.join(QLatin1Char('\n'));
}

void MessageCard::render() {
    const MessageParts parts = MessageParts::parse(message_.content);
    QWidget* parent = body_->parentWidget();
    const bool reasoning = !parts.reasoning.isEmpty() || parts.reasoningOpen;
    if (reasoning && !reasoningToggle_) {
        reasoningToggle_ = actionButton(QString(), QStringLiteral("Show or hide the model's reasoning"), parent);
        reasoningToggle_->setObjectName(QStringLiteral("reasoningToggle"));
        reasoningToggle_->setCheckable(true);
        reasoningToggle_->setChecked(reasoningExpanded_);
        reasoningToggle_->setArrowType(reasoningExpanded_ ? Qt::DownArrow : Qt::RightArrow);
        reasoningToggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
        reasoningText_ = new QLabel(parent);
        reasoningText_->setObjectName(QStringLiteral("reasoningText"));
        reasoningText_->setWordWrap(true);
        reasoningText_->setTextFormat(Qt::PlainText);
        reasoningText_->setTextInteractionFlags(Qt::TextSelectableByMouse);
        reasoningText_->setVisible(reasoningExpanded_);
        connect(reasoningToggle_, &QToolButton::toggled, this, [this](bool on) {
            reasoningExpanded_ = on;
            reasoningToggle_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
            reasoningText_->setVisible(on);
        });
        body_->insertWidget(0, reasoningToggle_, 0, Qt::AlignLeft);
        body_->insertWidget(1, reasoningText_);
    } else if (!reasoning && reasoningToggle_) {
        delete reasoningToggle_;
        delete reasoningText_;
        reasoningToggle_ = nullptr;
        reasoningText_ = nullptr;
    }
    if (reasoningToggle_) {
        reasoningToggle_->setText(parts.reasoningOpen ? QStringLiteral("Thinking\u2026") : QStringLiteral("Reasoning"));
        if (reasoningText_->text() != parts.reasoning) reasoningText_->setText(parts.reasoning);
    }

    qsizetype next = 0;
    while (next < shownSegments_.size() && next < parts.segments.size() && shownSegments_[next] == parts.segments[next]) ++next;
    if (next < shownSegments_.size() && next < parts.segments.size() && shownSegments_[next].code == parts.segments[next].code &&
        shownSegments_[next].language == parts.segments[next].language) {
        QWidget* widget = segmentWidgets_[next];
        QLabel* label = parts.segments[next].code ? widget->findChild<QLabel*>(QStringLiteral("codeText")) : static_cast<QLabel*>(widget);
        label->setText(parts.segments[next].text);
        ++next;
    }
    while (segmentWidgets_.size() > next) delete segmentWidgets_.takeLast();
    for (qsizetype i = next; i < parts.segments.size(); ++i) {
        const auto& segment = parts.segments[i];
        QWidget* widget = segment.code ? static_cast<QWidget*>(codeBlock(segment, parent)) : markdownLabel(segment.text, parent);
        body_->addWidget(widget);
        segmentWidgets_.append(widget);
    }
    shownSegments_ = parts.segments;
}

MessageView::MessageView(QWidget* parent) : QScrollArea(parent) {
    setObjectName(QStringLiteral("messageView"));
    setWidgetResizable(true);
    setFrameShape(QFrame::NoFrame);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    column_ = new QWidget;
    column_->setObjectName(QStringLiteral("messageColumn"));
    layout_ = new QVBoxLayout(column_);
    layout_->setContentsMargins(24, 16, 24, 16);
    layout_->setSpacing(12);
    placeholder_ = new QLabel(column_);
    placeholder_->setObjectName(QStringLiteral("chatPlaceholder"));
    placeholder_->setAlignment(Qt::AlignCenter);
    placeholder_->setWordWrap(true);
    layout_->addWidget(placeholder_);
    layout_->addStretch(1);
    setWidget(column_);
    // Keep following the end while the user has not scrolled up.
    connect(verticalScrollBar(), &QScrollBar::valueChanged, this,
            [this](int value) { followEnd_ = value >= verticalScrollBar()->maximum() - 24; });
    connect(verticalScrollBar(), &QScrollBar::rangeChanged, this, [this](int, int max) {
        if (followEnd_) verticalScrollBar()->setValue(max);
    });
}

void MessageView::clear() { removeCardsFrom(0); }

void MessageView::removeCardsFrom(int index) {
    while (cards_.size() > index) {
        MessageCard* card = cards_.takeLast();
        layout_->removeWidget(card);
        card->hide();
        card->deleteLater();
    }
}

void MessageView::setPlaceholder(const QString& text) {
    placeholder_->setText(text);
    placeholder_->setVisible(!text.isEmpty());
}

void MessageView::showBranch(const ChatStore& store, const QList<ChatMessage>& branch) {
    struct Shown {
        int index = 0;
        int count = 1;
    };
    QList<Shown> positions;
    for (const ChatMessage& message : branch) {
        const QList<ChatMessage> siblings = store.children(message.chatId, message.parentId);
        Shown shown{0, int(siblings.size())};
        for (int i = 0; i < siblings.size(); ++i)
            if (siblings[i].id == message.id) shown.index = i;
        positions.append(shown);
    }
    int kept = 0;
    while (kept < cards_.size() && kept < branch.size() && cards_[kept]->message() == branch[kept] &&
           cards_[kept]->siblingIndex() == positions[kept].index && cards_[kept]->siblingCount() == positions[kept].count)
        ++kept;
    removeCardsFrom(kept);
    for (int i = kept; i < branch.size(); ++i) {
        auto* card = new MessageCard(branch[i], positions[i].index, positions[i].count, column_);
        connect(card, &MessageCard::editRequested, this, &MessageView::editRequested);
        connect(card, &MessageCard::regenerateRequested, this, &MessageView::regenerateRequested);
        connect(card, &MessageCard::siblingRequested, this, &MessageView::siblingRequested);
        layout_->insertWidget(layout_->count() - 1, card);
        cards_.append(card);
    }
    followEnd_ = true;
    scrollToEnd();
}

MessageCard* MessageView::cardFor(qint64 messageId) const {
    for (MessageCard* card : cards())
        if (card->message().id == messageId) return card;
    return nullptr;
}

void MessageView::scrollToEnd() {
    QTimer::singleShot(0, this, [this] { verticalScrollBar()->setValue(verticalScrollBar()->maximum()); });
}

}  // namespace studio
