#include "ui/chat_pane.h"

#include "core/app_settings.h"
#include "core/chat_list_model.h"
#include "core/local_models_model.h"
#include "ui/message_view.h"

#include <oxinfer/platform.h>

#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QMimeData>
#include <QMimeDatabase>
#include <QStringDecoder>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QJsonDocument>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QSpinBox>
#include <QTimer>
#include <QSplitter>
#include <QVBoxLayout>

namespace studio {
namespace {

constexpr int kSaveIntervalMs = 1000;

QString chatTitleFrom(const QString& text) {
    QString title = text.simplified();
    if (title.size() > 48) title = title.left(47).trimmed() + QChar(0x2026);
    return title.isEmpty() ? QStringLiteral("New chat") : title;
}

// The composer sends on Enter; Shift+Enter starts a new line.
class Composer : public QPlainTextEdit {
public:
    std::function<void()> onSend;
    using QPlainTextEdit::QPlainTextEdit;

protected:
    void keyPressEvent(QKeyEvent* event) override {
        if ((event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter) && !(event->modifiers() & Qt::ShiftModifier)) {
            if (onSend) onSend();
            return;
        }
        QPlainTextEdit::keyPressEvent(event);
    }
};

QDoubleSpinBox* doubleSpin(double min, double max, double step, int decimals, QWidget* parent) {
    auto* spin = new QDoubleSpinBox(parent);
    spin->setRange(min, max);
    spin->setSingleStep(step);
    spin->setDecimals(decimals);
    return spin;
}

}  // namespace

ChatPane::ChatPane(ChatStore* store, Engine* engine, LocalModelsModel* models, QWidget* parent)
    : QWidget(parent), store_(store), engine_(engine), models_(models) {
    setObjectName(QStringLiteral("chatPane"));
    chatList_ = new ChatListModel(store_, this);
    settingsSave_ = new QTimer(this);
    settingsSave_->setSingleShot(true);
    settingsSave_->setInterval(400);
    connect(settingsSave_, &QTimer::timeout, this, &ChatPane::saveChatSettings);
    searchDelay_ = new QTimer(this);
    searchDelay_->setSingleShot(true);
    searchDelay_->setInterval(250);

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->setObjectName(QStringLiteral("chatSplitter"));
    splitter->setChildrenCollapsible(false);
    splitter->addWidget(createSidebar());

    auto* center = new QWidget(splitter);
    center->setObjectName(QStringLiteral("chatCenter"));
    auto* centerLayout = new QVBoxLayout(center);
    centerLayout->setContentsMargins(0, 0, 0, 0);
    centerLayout->setSpacing(0);

    auto* header = new QWidget(center);
    header->setObjectName(QStringLiteral("chatHeader"));
    auto* headerLayout = new QHBoxLayout(header);
    headerLayout->setContentsMargins(16, 8, 12, 8);
    title_ = new QLabel(QStringLiteral("New chat"), header);
    title_->setObjectName(QStringLiteral("chatTitle"));
    headerLayout->addWidget(title_, 1);
    modelChoice_ = new QComboBox(header);
    modelChoice_->setObjectName(QStringLiteral("modelChoice"));
    modelChoice_->setModel(models_);
    modelChoice_->setModelColumn(LocalModelsModel::Name);
    modelChoice_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    modelChoice_->setMinimumContentsLength(18);
    modelChoice_->setPlaceholderText(QStringLiteral("Choose a model"));
    headerLayout->addWidget(modelChoice_);
    loadButton_ = new QPushButton(QStringLiteral("Load"), header);
    loadButton_->setObjectName(QStringLiteral("loadModel"));
    headerLayout->addWidget(loadButton_);
    centerLayout->addWidget(header);
    modelStatus_ = new QLabel(center);
    modelStatus_->setObjectName(QStringLiteral("modelStatus"));
    modelStatus_->setContentsMargins(16, 2, 16, 6);
    modelStatus_->setWordWrap(true);
    modelStatus_->setTextFormat(Qt::RichText);
    connect(modelStatus_, &QLabel::linkActivated, this, [this] { emit modelsRequested(); });
    centerLayout->addWidget(modelStatus_);

    messages_ = new MessageView(center);
    centerLayout->addWidget(messages_, 1);
    connect(messages_, &MessageView::editRequested, this, &ChatPane::editMessage);
    connect(messages_, &MessageView::regenerateRequested, this, &ChatPane::regenerate);
    connect(messages_, &MessageView::siblingRequested, this, &ChatPane::showSibling);

    banner_ = new QLabel(center);
    banner_->setObjectName(QStringLiteral("chatBanner"));
    banner_->setWordWrap(true);
    banner_->hide();
    centerLayout->addWidget(banner_);
    editBanner_ = new QLabel(QStringLiteral("Editing a message: sending makes a new version beside the old one. "
                                            "<a href=\"cancel\">Cancel</a>"),
                             center);
    editBanner_->setObjectName(QStringLiteral("editBanner"));
    editBanner_->setTextFormat(Qt::RichText);
    editBanner_->hide();
    connect(editBanner_, &QLabel::linkActivated, this, [this] {
        editing_ = 0;
        composer_->clear();
        editBanner_->hide();
    });
    centerLayout->addWidget(editBanner_);
    attachments_ = new QLabel(center);
    attachments_->setObjectName(QStringLiteral("attachments"));
    attachments_->setTextFormat(Qt::RichText);
    attachments_->setWordWrap(true);
    attachments_->hide();
    connect(attachments_, &QLabel::linkActivated, this, [this] {
        attached_.clear();
        showAttachments();
    });
    centerLayout->addWidget(attachments_);

    auto* composerRow = new QWidget(center);
    composerRow->setObjectName(QStringLiteral("composerRow"));
    auto* composerLayout = new QHBoxLayout(composerRow);
    composerLayout->setContentsMargins(16, 8, 16, 4);
    auto* composer = new Composer(composerRow);
    composer->onSend = [this] { sendButton_->click(); };
    composer_ = composer;
    composer_->setObjectName(QStringLiteral("composer"));
    composer_->setPlaceholderText(QStringLiteral("Message (Enter sends, Shift+Enter for a new line)"));
    composer_->setFixedHeight(84);
    composerLayout->addWidget(composer_, 1);
    sendButton_ = new QPushButton(QStringLiteral("Send"), composerRow);
    sendButton_->setObjectName(QStringLiteral("sendButton"));
    sendButton_->setDefault(true);
    sendButton_->setMinimumWidth(84);
    composerLayout->addWidget(sendButton_, 0, Qt::AlignBottom);
    centerLayout->addWidget(composerRow);
    stats_ = new QLabel(center);
    stats_->setObjectName(QStringLiteral("chatStats"));
    stats_->setContentsMargins(18, 0, 18, 8);
    centerLayout->addWidget(stats_);
    splitter->addWidget(center);
    splitter->addWidget(createSettingsPanel());
    splitter->setStretchFactor(0, 0);
    splitter->setStretchFactor(1, 1);
    splitter->setStretchFactor(2, 0);
    splitter->setSizes({240, 700, 260});

    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(splitter);

    connect(sendButton_, &QPushButton::clicked, this, [this] {
        if (generating()) stop();
        else sendMessage(composer_->toPlainText());
    });
    connect(composer_, &QPlainTextEdit::textChanged, this, &ChatPane::updateComposer);
    connect(loadButton_, &QPushButton::clicked, this, [this] {
        const QString path = modelChoice_->currentIndex() >= 0
                                 ? models_->index(modelChoice_->currentIndex(), 0).data(LocalModelsModel::PathRole).toString()
                                 : QString();
        if (path.isEmpty()) return emit modelsRequested();
        engine_->loadModel(path, AppSettings::loadSettings());
    });
    connect(models_, &QAbstractItemModel::modelReset, this, [this] {
        const auto& model = engine_->model();
        const int row = models_->rowOfPath(model ? model->model : AppSettings::lastModel());
        if (row >= 0) modelChoice_->setCurrentIndex(row);
        updateModelRow();
    });
    connect(engine_, &Engine::stateChanged, this, [this] {
        updateModelRow();
        updateComposer();
    });
    connect(engine_, &Engine::modelLoaded, this, [this](const ModelSummary& model) {
        AppSettings::setLastModel(model.model);
        if (const int row = models_->rowOfPath(model.model); row >= 0) modelChoice_->setCurrentIndex(row);
        updateModelRow();
    });
    connect(engine_, &Engine::modelLoadFailed, this, [this](const QString&, const QString& error) {
        updateModelRow();
        modelStatus_->setText(QStringLiteral("<span style='color:#c0392b'>Could not load the model: %1</span>").arg(error.toHtmlEscaped()));
    });
    connect(engine_, &Engine::modelUnloaded, this, [this] {
        updateModelRow();
        updateComposer();
    });
    connect(engine_, &Engine::generationUpdate, this, &ChatPane::onUpdate);
    connect(engine_, &Engine::generationFinished, this, &ChatPane::onFinished);

    setAcceptDrops(true);
    showChat(chatList_->rowCount() > 0 ? chatList_->idAt(0) : 0);  // where the user left off
    updateModelRow();
}

void ChatPane::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void ChatPane::dropEvent(QDropEvent* event) {
    attachFiles(event->mimeData()->urls());
    event->acceptProposedAction();
}

void ChatPane::attachFiles(const QList<QUrl>& files) {
    QStringList problems;
    const QMimeDatabase mimes;
    for (const QUrl& url : files) {
        const QFileInfo info(url.toLocalFile());
        if (!url.isLocalFile() || !info.isFile()) {
            problems << QStringLiteral("%1 is not a file on this computer.").arg(url.toDisplayString().toHtmlEscaped());
            continue;
        }
        const QString type = mimes.mimeTypeForFile(info).name();
        if (type.startsWith(QLatin1String("image/")) || type.startsWith(QLatin1String("audio/")) || type.startsWith(QLatin1String("video/"))) {
            const QString kind = type.left(type.indexOf(QLatin1Char('/')));
            problems << QStringLiteral("%1: this model cannot read %2 yet. Image, audio and video input arrives with the vision "
                                       "and audio models; text files can be attached now.")
                            .arg(info.fileName().toHtmlEscaped(), kind == QLatin1String("image") ? QStringLiteral("images") : kind);
            continue;
        }
        if (info.size() > kMaxAttachmentBytes) {
            problems << QStringLiteral("%1 is too large to attach (%2; at most %3).")
                            .arg(info.fileName().toHtmlEscaped(), QString::fromStdString(oxinfer::format_bytes(uint64_t(info.size()))),
                                 QString::fromStdString(oxinfer::format_bytes(uint64_t(kMaxAttachmentBytes))));
            continue;
        }
        QFile file(info.filePath());
        if (!file.open(QIODevice::ReadOnly)) {
            problems << QStringLiteral("%1 cannot be read: %2").arg(info.fileName().toHtmlEscaped(), file.errorString().toHtmlEscaped());
            continue;
        }
        const QByteArray bytes = file.readAll();
        QStringDecoder utf8(QStringDecoder::Utf8);
        const QString text = utf8.decode(bytes);
        if (utf8.hasError() || bytes.contains('\0')) {
            problems << QStringLiteral("%1 is not a text file: only text can be attached for now.").arg(info.fileName().toHtmlEscaped());
            continue;
        }
        attached_.append({info.fileName(), text.endsWith(QLatin1Char('\n')) ? text.chopped(1) : text});
    }
    showAttachments();
    if (!problems.isEmpty()) {
        banner_->setText(problems.join(QStringLiteral("<br>")));
        banner_->show();
    }
}

QStringList ChatPane::attachmentNames() const {
    QStringList names;
    for (const Attachment& a : attached_) names << a.name;
    return names;
}

void ChatPane::showAttachments() {
    QStringList names;
    for (const Attachment& a : attached_) names << QStringLiteral("<b>%1</b>").arg(a.name.toHtmlEscaped());
    attachments_->setText(QStringLiteral("Attached to the next message: %1 &nbsp; <a href=\"clear\">Remove</a>").arg(names.join(QStringLiteral(", "))));
    attachments_->setVisible(!attached_.isEmpty());
    updateComposer();
}

// The files go before the message, each in a fence named after it (the chat shows them as code
// blocks with the file name).
QString ChatPane::withAttachments(const QString& text) const {
    QString content;
    for (const Attachment& a : attached_) {
        QString fence = QStringLiteral("```");
        while (a.text.contains(fence)) fence += QLatin1Char('`');
        content += QStringLiteral("%1%2\n%3\n%1\n\n").arg(fence, a.name, a.text);
    }
    return content + text;
}

QWidget* ChatPane::createSidebar() {
    auto* sidebar = new QWidget(this);
    sidebar->setObjectName(QStringLiteral("chatSidebar"));
    auto* layout = new QVBoxLayout(sidebar);
    layout->setContentsMargins(10, 10, 6, 10);
    auto* newChat = new QPushButton(QStringLiteral("New chat"), sidebar);
    newChat->setObjectName(QStringLiteral("newChat"));
    connect(newChat, &QPushButton::clicked, this, [this] { openChat(0); });
    auto* importButton = new QPushButton(QStringLiteral("Import\u2026"), sidebar);
    importButton->setObjectName(QStringLiteral("importChat"));
    importButton->setToolTip(QStringLiteral("Add a chat exported as JSON"));
    connect(importButton, &QPushButton::clicked, this, [this] {
        const QString file = QFileDialog::getOpenFileName(this, QStringLiteral("Import a chat"), QString(), QStringLiteral("Chats (*.json)"));
        QString error;
        if (!file.isEmpty() && !importChat(file, &error)) QMessageBox::warning(this, QStringLiteral("Import a chat"), error);
    });
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(newChat, 1);
    buttons->addWidget(importButton);
    layout->addLayout(buttons);
    search_ = new QLineEdit(sidebar);
    search_->setObjectName(QStringLiteral("chatSearch"));
    search_->setPlaceholderText(QStringLiteral("Search chats"));
    search_->setClearButtonEnabled(true);
    // Searching reads every message: once typing pauses, not on each key.
    connect(search_, &QLineEdit::textChanged, searchDelay_, qOverload<>(&QTimer::start));
    connect(searchDelay_, &QTimer::timeout, this, [this] { chatList_->setFilter(search_->text()); });
    layout->addWidget(search_);
    chatView_ = new QListView(sidebar);
    chatView_->setObjectName(QStringLiteral("chatList"));
    chatView_->setModel(chatList_);
    chatView_->setEditTriggers(QAbstractItemView::EditKeyPressed);
    chatView_->setContextMenuPolicy(Qt::CustomContextMenu);
    chatView_->setUniformItemSizes(true);
    connect(chatView_, &QListView::clicked, this, [this](const QModelIndex& index) { openChat(chatList_->idAt(index.row())); });
    connect(chatView_, &QListView::customContextMenuRequested, this, [this](const QPoint& at) {
        const QModelIndex index = chatView_->indexAt(at);
        if (!index.isValid()) return;
        const qint64 id = chatList_->idAt(index.row());
        QMenu menu(this);
        menu.addAction(QStringLiteral("Rename\u2026"), this, [this, id] { renameChat(id); });
        menu.addAction(QStringLiteral("Export as Markdown\u2026"), this, [this, id] {
            const QString file = QFileDialog::getSaveFileName(this, QStringLiteral("Export chat"), QString(), QStringLiteral("Markdown (*.md)"));
            if (!file.isEmpty()) exportChat(id, file.endsWith(QLatin1String(".md")) ? file : file + QStringLiteral(".md"));
        });
        menu.addAction(QStringLiteral("Export as JSON\u2026"), this, [this, id] {
            const QString file = QFileDialog::getSaveFileName(this, QStringLiteral("Export chat"), QString(), QStringLiteral("JSON (*.json)"));
            if (!file.isEmpty()) exportChat(id, file.endsWith(QLatin1String(".json")) ? file : file + QStringLiteral(".json"));
        });
        menu.addSeparator();
        menu.addAction(QStringLiteral("Delete"), this, [this, id] { deleteChat(id); });
        menu.exec(chatView_->viewport()->mapToGlobal(at));
    });
    layout->addWidget(chatView_, 1);
    return sidebar;
}

QWidget* ChatPane::createSettingsPanel() {
    auto* panel = new QWidget(this);
    panel->setObjectName(QStringLiteral("chatSettings"));
    auto* layout = new QVBoxLayout(panel);
    layout->setContentsMargins(10, 12, 12, 12);
    auto* heading = new QLabel(QStringLiteral("This chat"), panel);
    heading->setObjectName(QStringLiteral("panelHeading"));
    layout->addWidget(heading);
    layout->addWidget(new QLabel(QStringLiteral("System prompt"), panel));
    systemPrompt_ = new QPlainTextEdit(panel);
    systemPrompt_->setObjectName(QStringLiteral("systemPrompt"));
    systemPrompt_->setPlaceholderText(QStringLiteral("How the assistant should behave"));
    systemPrompt_->setMaximumHeight(110);
    layout->addWidget(systemPrompt_);
    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    temperature_ = doubleSpin(0, 2, 0.05, 2, panel);
    temperature_->setToolTip(QStringLiteral("0 always picks the most likely token"));
    topP_ = doubleSpin(0.01, 1, 0.01, 2, panel);
    topK_ = new QSpinBox(panel);
    topK_->setRange(0, 1000);
    topK_->setSpecialValueText(QStringLiteral("off"));
    minP_ = doubleSpin(0, 1, 0.01, 2, panel);
    repeatPenalty_ = doubleSpin(1, 2, 0.01, 2, panel);
    maxTokens_ = new QSpinBox(panel);
    maxTokens_->setRange(1, 131072);
    thinking_ = new QComboBox(panel);
    thinking_->addItems({QStringLiteral("Model default"), QStringLiteral("Off"), QStringLiteral("On")});
    temperature_->setObjectName(QStringLiteral("temperature"));
    maxTokens_->setObjectName(QStringLiteral("maxTokens"));
    thinking_->setObjectName(QStringLiteral("thinking"));
    form->addRow(QStringLiteral("Temperature"), temperature_);
    form->addRow(QStringLiteral("Top p"), topP_);
    form->addRow(QStringLiteral("Top k"), topK_);
    form->addRow(QStringLiteral("Min p"), minP_);
    form->addRow(QStringLiteral("Repeat penalty"), repeatPenalty_);
    form->addRow(QStringLiteral("Max tokens"), maxTokens_);
    form->addRow(QStringLiteral("Thinking"), thinking_);
    layout->addLayout(form);
    layout->addStretch(1);

    const auto changed = [this] {
        if (!loadingSettings_) settingsSave_->start();
    };
    connect(systemPrompt_, &QPlainTextEdit::textChanged, this, changed);
    for (QDoubleSpinBox* spin : {temperature_, topP_, minP_, repeatPenalty_})
        connect(spin, &QDoubleSpinBox::valueChanged, this, changed);
    for (QSpinBox* spin : {topK_, maxTokens_}) connect(spin, &QSpinBox::valueChanged, this, changed);
    connect(thinking_, &QComboBox::currentIndexChanged, this, changed);
    return panel;
}

void ChatPane::openChat(qint64 chatId) {
    if (chatId == chatId_ && chatId != 0) return;  // already open: a click on it changes nothing
    showChat(chatId);
}

void ChatPane::showChat(qint64 chatId) {
    flushChatSettings();
    if (generating()) stop();
    chatId_ = chatId;
    editing_ = 0;
    editBanner_->hide();
    banner_->hide();
    const int row = chatList_->rowOf(chatId);
    if (row >= 0) chatView_->setCurrentIndex(chatList_->index(row));
    else chatView_->clearSelection();
    loadChatSettings();
    showCurrentBranch();
    updateComposer();
    composer_->setFocus();
}

void ChatPane::loadChatSettings() {
    loadingSettings_ = true;
    const auto chat = chatId_ ? store_->chat(chatId_) : std::nullopt;
    const SamplingSettings s = chat ? SamplingSettings::fromJson(chat->settings, AppSettings::defaultSampling()) : AppSettings::defaultSampling();
    title_->setText(chat ? chat->title : QStringLiteral("New chat"));
    systemPrompt_->setPlainText(chat ? chat->systemPrompt : QString());
    temperature_->setValue(s.temperature);
    topP_->setValue(s.topP);
    topK_->setValue(s.topK);
    minP_->setValue(s.minP);
    repeatPenalty_->setValue(s.repeatPenalty);
    maxTokens_->setValue(s.maxTokens);
    const int thinking = chat ? chat->settings.value("thinking").toInt(-1) : -1;
    thinking_->setCurrentIndex(thinking < 0 ? 0 : thinking == 0 ? 1 : 2);
    loadingSettings_ = false;
}

void ChatPane::flushChatSettings() {
    if (!settingsSave_->isActive()) return;
    settingsSave_->stop();
    saveChatSettings();
}

void ChatPane::saveChatSettings() {
    if (loadingSettings_ || !chatId_) return;
    SamplingSettings s;
    s.temperature = temperature_->value();
    s.topP = topP_->value();
    s.topK = topK_->value();
    s.minP = minP_->value();
    s.repeatPenalty = repeatPenalty_->value();
    s.maxTokens = maxTokens_->value();
    QJsonObject json = s.toJson();
    json.insert("thinking", thinking_->currentIndex() == 0 ? -1 : thinking_->currentIndex() == 1 ? 0 : 1);
    store_->setSettings(chatId_, json);
    store_->setSystemPrompt(chatId_, systemPrompt_->toPlainText());
}

void ChatPane::showCurrentBranch() {
    const auto chat = chatId_ ? store_->chat(chatId_) : std::nullopt;
    const QList<ChatMessage> branch = chat && chat->currentLeaf ? store_->path(chat->currentLeaf) : QList<ChatMessage>();
    messages_->showBranch(*store_, branch);
    messages_->setPlaceholder(branch.isEmpty() ? QStringLiteral("Start the conversation below.") : QString());
    if (!branch.isEmpty()) {
        const QJsonObject meta = branch.last().meta;
        showContextUse(meta.value("contextUsed").toInteger(), meta.value("contextLength").toInteger(), meta.value("tokensPerSecond").toDouble());
    } else {
        stats_->clear();
    }
}

void ChatPane::showContextUse(qint64 used, qint64 length, double tokensPerSecond) {
    if (length <= 0) return stats_->clear();
    QString text = QStringLiteral("Context %1 / %2 tokens (%3%)").arg(used).arg(length).arg(100.0 * double(used) / double(length), 0, 'f', 0);
    if (tokensPerSecond > 0) text = QStringLiteral("%1 tokens/s  \u00b7  ").arg(tokensPerSecond, 0, 'f', 1) + text;
    stats_->setText(text);
}

void ChatPane::updateModelRow() {
    const bool loading = engine_->state() == Engine::State::Loading;
    loadButton_->setEnabled(!loading && engine_->state() != Engine::State::Generating);
    loadButton_->setText(loading ? QStringLiteral("Loading\u2026") : QStringLiteral("Load"));
    if (loading) {
        modelStatus_->setText(QStringLiteral("Loading the model\u2026"));
    } else if (const auto& model = engine_->model()) {
        modelStatus_->setText(QStringLiteral("%1 \u00b7 %2 \u00b7 %3 \u00b7 %4 \u00b7 %5 tokens of context \u00b7 loaded in %6 s")
                                  .arg(model->name.toHtmlEscaped(), model->architecture, model->weightType,
                                       QString::fromStdString(oxinfer::format_bytes(uint64_t(model->weightBytes))))
                                  .arg(model->contextLength)
                                  .arg(model->loadSeconds, 0, 'f', 2));
    } else if (models_->rowCount() == 0) {
        modelStatus_->setText(QStringLiteral("No model on this computer yet. <a href=\"models\">Find one in Models</a>."));
    } else {
        modelStatus_->setText(QStringLiteral("No model loaded: choose one above and press Load."));
    }
}

void ChatPane::updateComposer() {
    const bool busy = generating();
    sendButton_->setText(busy ? QStringLiteral("Stop") : QStringLiteral("Send"));
    sendButton_->setEnabled(busy || (engine_->hasModel() && engine_->state() == Engine::State::Idle &&
                                     (!composer_->toPlainText().trimmed().isEmpty() || !attached_.isEmpty())));
    sendButton_->setToolTip(engine_->hasModel() ? QString() : QStringLiteral("Load a model first"));
}

void ChatPane::sendMessage(const QString& text) {
    if ((text.trimmed().isEmpty() && attached_.isEmpty()) || generating() || !engine_->hasModel() ||
        engine_->state() != Engine::State::Idle)
        return;
    flushChatSettings();
    const QString title = chatTitleFrom(text.trimmed().isEmpty() ? attached_.first().name : text);
    qint64 parent = 0;
    if (chatId_ == 0) {
        QJsonObject settings = AppSettings::defaultSampling().toJson();
        settings.insert("thinking", -1);
        chatId_ = store_->createChat(title, systemPrompt_->toPlainText(), settings);
        if (!chatId_) {
            QMessageBox::warning(this, QStringLiteral("Chat"), QStringLiteral("The chat could not be saved: %1").arg(store_->lastError()));
            return;
        }
        saveChatSettings();
        chatList_->refresh();
        title_->setText(title);
    } else if (editing_) {
        parent = store_->message(editing_).value_or(ChatMessage()).parentId;
    } else {
        parent = store_->chat(chatId_).value_or(ChatInfo()).currentLeaf;
    }
    const qint64 userId = store_->addMessage(chatId_, parent, QStringLiteral("user"), withAttachments(text));
    if (!userId) {
        QMessageBox::warning(this, QStringLiteral("Chat"), QStringLiteral("The message could not be saved: %1").arg(store_->lastError()));
        return;
    }
    editing_ = 0;
    editBanner_->hide();
    composer_->clear();
    attached_.clear();
    showAttachments();
    startReply(userId);
}

void ChatPane::startReply(qint64 userMessageId) {
    const auto user = store_->message(userMessageId);
    if (!user || generating() || !engine_->hasModel() || engine_->state() != Engine::State::Idle) return;
    flushChatSettings();
    ChatRequest request;
    const auto chat = store_->chat(chatId_);
    request.systemPrompt = chat ? chat->systemPrompt : QString();
    if (user->parentId)
        for (const ChatMessage& m : store_->path(user->parentId)) request.history.append({m.role, m.content});
    request.userMessage = user->content;
    request.sampling = SamplingSettings::fromJson(chat ? chat->settings : QJsonObject(), AppSettings::defaultSampling());
    request.thinking = chat ? chat->settings.value("thinking").toInt(-1) : -1;

    const QString modelName = engine_->model()->name;
    streamingModel_ = modelName;
    streamingChat_ = chatId_;
    streamedTokens_ = 0;
    streamingMessage_ = store_->addMessage(chatId_, userMessageId, QStringLiteral("assistant"), QString(),
                                           {{"model", modelName}, {"partial", true}});
    if (!streamingMessage_) {
        QMessageBox::warning(this, QStringLiteral("Chat"), QStringLiteral("The reply could not be saved: %1").arg(store_->lastError()));
        return;
    }
    streamed_.clear();
    sinceSave_.start();
    banner_->hide();
    showCurrentBranch();
    if (MessageCard* card = messages_->cardFor(streamingMessage_)) {
        card->setBusy(true);
        card->setStatus(QStringLiteral("Writing\u2026"));
    }
    request_ = engine_->generate(request);
    chatList_->refresh();
    updateComposer();
}

void ChatPane::onUpdate(const GenerationUpdate& update) {
    if (update.requestId != request_ || !streamingMessage_) return;
    streamed_ += update.text;
    streamedTokens_ = update.generatedTokens;
    if (MessageCard* card = messages_->cardFor(streamingMessage_)) {
        card->setContent(streamed_);
        card->setStatus(QStringLiteral("Writing\u2026 %1 tokens").arg(update.generatedTokens));
    }
    if (chatId_ == streamingChat_) showContextUse(update.contextUsed, update.contextLength, update.tokensPerSecond);
    if (sinceSave_.elapsed() >= kSaveIntervalMs) {
        store_->updateMessage(streamingMessage_, streamed_, {{"model", streamingModel_}, {"partial", true}});
        sinceSave_.restart();
    }
}

void ChatPane::onFinished(const GenerationResult& result) {
    if (result.requestId != request_ || !streamingMessage_) return;
    const qint64 messageId = streamingMessage_;
    const bool shown = chatId_ == streamingChat_;
    streamingMessage_ = 0;
    request_ = 0;
    const QString text = result.stopReason == QLatin1String("error") || result.stopReason == QLatin1String("context_full")
                             ? streamed_
                             : result.text;
    store_->updateMessage(messageId, text, result.toMeta(streamingModel_));
    if (MessageCard* card = messages_->cardFor(messageId)) {
        card->setContent(text);
        card->setBusy(false);
        QString status = QStringLiteral("%1 tokens \u00b7 %2 tokens/s").arg(result.generatedTokens).arg(result.tokensPerSecond, 0, 'f', 1);
        if (result.stopReason == QLatin1String("cancelled")) status += QStringLiteral(" \u00b7 stopped");
        if (result.stopReason == QLatin1String("context_full"))
            status = result.generatedTokens == 0 ? QStringLiteral("No reply: the context is full.") : status + QStringLiteral(" \u00b7 the context is full");
        if (result.stopReason == QLatin1String("error")) status = QStringLiteral("Error: ") + result.error;
        card->setStatus(status);
    }
    if (shown) {
        showContextUse(result.contextUsed, result.contextLength, result.tokensPerSecond);
        if (result.stopReason == QLatin1String("context_full")) {
            banner_->setText(QStringLiteral("The context is full (%1 of %2 tokens): the model cannot read more of this chat. Start a "
                                            "new chat, or raise the context length in Settings and load the model again.")
                                 .arg(result.contextUsed)
                                 .arg(result.contextLength));
            banner_->show();
        }
    }
    chatList_->refresh();
    updateComposer();
}

void ChatPane::saveInterruptedReply() {
    if (!streamingMessage_) return;
    store_->updateMessage(streamingMessage_, streamed_,
                          {{"model", streamingModel_}, {"stop", QStringLiteral("cancelled")}, {"tokens", streamedTokens_}});
}

void ChatPane::stop() {
    if (generating()) engine_->stop();
}

void ChatPane::regenerate(qint64 assistantMessageId) {
    const auto message = store_->message(assistantMessageId);
    if (message && message->parentId) startReply(message->parentId);
}

void ChatPane::editMessage(qint64 userMessageId) {
    const auto message = store_->message(userMessageId);
    if (!message) return;
    editing_ = userMessageId;
    composer_->setPlainText(message->content);
    editBanner_->show();
    composer_->setFocus();
}

void ChatPane::showSibling(qint64 messageId, int offset) {
    if (generating()) return;
    const auto message = store_->message(messageId);
    if (!message) return;
    const QList<ChatMessage> siblings = store_->children(message->chatId, message->parentId);
    for (int i = 0; i < siblings.size(); ++i) {
        if (siblings[i].id != messageId) continue;
        const int target = i + offset;
        if (target < 0 || target >= siblings.size()) return;
        store_->setCurrentLeaf(chatId_, store_->newestLeafBelow(siblings[target].id));
        showCurrentBranch();
        return;
    }
}

void ChatPane::renameChat(qint64 chatId) {
    const auto chat = store_->chat(chatId);
    if (!chat) return;
    bool ok = false;
    const QString title = QInputDialog::getText(this, QStringLiteral("Rename chat"), QStringLiteral("Title"), QLineEdit::Normal, chat->title, &ok);
    if (!ok || title.trimmed().isEmpty()) return;
    store_->renameChat(chatId, title.trimmed());
    chatList_->refresh();
    if (chatId == chatId_) title_->setText(title.trimmed());
}

void ChatPane::deleteChat(qint64 chatId) {
    const auto chat = store_->chat(chatId);
    if (!chat) return;
    if (QMessageBox::question(this, QStringLiteral("Delete chat"),
                              QStringLiteral("Delete \"%1\" and all its messages?").arg(chat->title)) != QMessageBox::Yes)
        return;
    if (chatId == chatId_) openChat(0);
    store_->deleteChat(chatId);
    chatList_->refresh();
}

qint64 ChatPane::importChat(const QString& file, QString* error) {
    constexpr qint64 kMaxImportBytes = 256ll << 20;  // far above any chat; the file is read whole
    QFile in(file);
    QJsonParseError parse{};
    const bool readable = in.open(QIODevice::ReadOnly) && in.size() <= kMaxImportBytes;
    const QJsonDocument document = readable ? QJsonDocument::fromJson(in.readAll(), &parse) : QJsonDocument();
    qint64 id = 0;
    if (in.isOpen() && !readable) {
        if (error) *error = QStringLiteral("%1: too large for a chat (%2 bytes)").arg(file).arg(in.size());
    } else if (!in.isOpen()) {
        if (error) *error = QStringLiteral("%1: %2").arg(file, in.errorString());
    } else if (!document.isObject()) {
        if (error) *error = QStringLiteral("%1: not a JSON object (%2)").arg(file, parse.errorString());
    } else if (!(id = store_->importJson(document.object()))) {
        if (error) *error = QStringLiteral("%1: %2").arg(file, store_->lastError());
    }
    if (id) {
        chatList_->refresh();
        openChat(id);
    }
    return id;
}

bool ChatPane::exportChat(qint64 chatId, const QString& file) {
    QSaveFile out(file);  // written whole or not at all
    if (!out.open(QIODevice::WriteOnly)) return false;
    const QByteArray bytes = file.endsWith(QLatin1String(".md"), Qt::CaseInsensitive)
                                 ? store_->exportMarkdown(chatId).toUtf8()
                                 : QJsonDocument(store_->exportJson(chatId)).toJson(QJsonDocument::Indented);
    out.write(bytes);
    return out.commit();
}

}  // namespace studio
