#include "ui/main_window.h"

#include "core/app_settings.h"
#include "core/chat_store.h"
#include "core/engine.h"
#include "core/hub_client.h"
#include "core/local_models_model.h"
#include "ui/chat_pane.h"
#include "ui/models_pane.h"
#include "ui/settings_pane.h"

#include <oxinfer/platform.h>

#include <QDir>
#include <QListWidget>
#include <QStackedWidget>

#include <QFontMetrics>
#include <QFrame>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLinearGradient>
#include <QPainter>
#include <QPaintEvent>
#include <QPixmap>
#include <QScrollArea>
#include <QStatusBar>
#include <QStringList>
#include <QStyle>
#include <QVBoxLayout>

namespace {

// A label that keeps its whole text (text() is the full line, the tooltip shows it) but paints
// it elided when the window is narrower than the line, instead of forcing a wider window.
class ElidingLabel : public QLabel {
public:
    using QLabel::QLabel;

    QSize minimumSizeHint() const override { return {0, QLabel::minimumSizeHint().height()}; }

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter painter(this);
        const QRect area = contentsRect();
        const QString shown = fontMetrics().elidedText(text(), Qt::ElideRight, area.width());
        style()->drawItemText(&painter, area, int(alignment()), palette(), isEnabled(), shown, foregroundRole());
    }
};

QString qs(const std::string& text) { return QString::fromStdString(text); }

QString cpuName(const oxinfer::PlatformInfo& info) {
    const QString name = info.cpu_name.empty() || info.cpu_name == "unknown" ? QStringLiteral("Unknown CPU")
                                                                             : qs(info.cpu_name).simplified();
    return QStringLiteral("%1 (%2)").arg(name, qs(info.arch));
}

QString coresText(const oxinfer::PlatformInfo& info) {
    return QStringLiteral("%1 %2 / %3 %4")
        .arg(info.physical_cores)
        .arg(info.physical_cores == 1 ? QStringLiteral("core") : QStringLiteral("cores"))
        .arg(info.logical_cores)
        .arg(info.logical_cores == 1 ? QStringLiteral("thread") : QStringLiteral("threads"));
}

QString featuresText(const oxinfer::PlatformInfo& info) {
    QStringList names;
    for (const auto& name : info.features.names()) names << qs(name);
    return names.isEmpty() ? QStringLiteral("no SIMD extensions") : names.join(QLatin1Char(' '));
}

QString memoryText(const oxinfer::PlatformInfo& info) {
    return QStringLiteral("%1 RAM (%2 available)")
        .arg(qs(oxinfer::format_bytes(info.total_ram_bytes)), qs(oxinfer::format_bytes(info.available_ram_bytes)));
}

// The app's look on top of the palette (so that light and dark themes both work).
const char* const kStyle = R"(
#chatList::item { padding: 6px 4px; }
#sectionHeading { font-size: 12pt; font-weight: 600; }
#recommendation { background: palette(base); border: 1px solid palette(midlight); border-radius: 8px; }
#navigation { border: none; background: palette(window); font-size: 11pt; padding-top: 8px; }
#navigation::item { padding: 9px 14px; border-radius: 6px; margin: 1px 8px; }
#navigation::item:selected { background: palette(highlight); color: palette(highlighted-text); }
#paneTitle { font-size: 18pt; font-weight: 600; }
#paneIntro, #hubNote, #messageStatus, #chatStats, #branchPosition, #codeLanguage { color: palette(placeholder-text); }
#chatTitle { font-size: 13pt; font-weight: 600; }
#userMessage { background: palette(alternate-base); border-radius: 10px; }
#assistantMessage { background: palette(base); border: 1px solid palette(midlight); border-radius: 10px; }
#messageRole { font-weight: 600; }
#codeBlock { border: 1px solid palette(mid); border-radius: 6px; background: palette(alternate-base); }
#codeHeader { border-bottom: 1px solid palette(midlight); }
#chatBanner { background: #fbeee0; color: #7a4510; padding: 8px 16px; }
#editBanner { background: palette(alternate-base); padding: 6px 16px; }
#chatPlaceholder { color: palette(placeholder-text); font-size: 12pt; padding: 40px; }
#comingTitle { font-size: 20pt; font-weight: 600; }
#comingText { font-size: 11pt; }
#comingNote { color: palette(placeholder-text); }
)";

struct PaneInfo {
    const char* name;
    const char* label;
};
constexpr PaneInfo kPanes[] = {{"chat", "Chat"},       {"transcribe", "Transcribe"}, {"speak", "Speak"}, {"imagine", "Imagine"},
                               {"search", "Search"},   {"models", "Models"},         {"settings", "Settings"}};

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), store_(std::make_unique<studio::ChatStore>()),
      engine_(std::make_unique<studio::Engine>()),
      hub_(std::make_unique<studio::HubClient>()) {
    setObjectName(QStringLiteral("mainWindow"));
    setWindowTitle(QStringLiteral("Oxinfer Studio"));
    setWindowIcon(appIcon());
    resize(defaultSize());
    setStyleSheet(QLatin1String(kStyle));

    const QString database = QDir(studio::AppSettings::dataDir()).filePath(QStringLiteral("chats.sqlite"));
    QString storeError;
    store_->open(database, &storeError);
    models_ = new studio::LocalModelsModel(this);

    auto* central = new QWidget(this);
    auto* layout = new QHBoxLayout(central);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    navigation_ = new QListWidget(central);
    navigation_->setObjectName(QStringLiteral("navigation"));
    navigation_->setFixedWidth(150);
    panes_ = new QStackedWidget(central);
    panes_->setObjectName(QStringLiteral("panes"));
    layout->addWidget(navigation_);
    auto* line = new QFrame(central);
    line->setFrameShape(QFrame::VLine);
    line->setFrameShadow(QFrame::Sunken);
    layout->addWidget(line);
    layout->addWidget(panes_, 1);
    setCentralWidget(central);

    chatPane_ = new studio::ChatPane(store_.get(), engine_.get(), models_, panes_);
    modelsPane_ = new studio::ModelsPane(engine_.get(), models_, hub_.get(), panes_);
    auto* settings = new studio::SettingsPane(panes_);
    for (const PaneInfo& pane : kPanes) {
        const QString name = QLatin1String(pane.name);
        QWidget* widget = nullptr;
        if (name == QLatin1String("chat")) widget = chatPane_;
        else if (name == QLatin1String("models")) widget = modelsPane_;
        else if (name == QLatin1String("settings")) widget = settings;
        else if (name == QLatin1String("transcribe"))
            widget = createComingSoonPane(name, QStringLiteral("Transcribe"),
                                          QStringLiteral("Turn speech into text with Whisper models: drop in an audio or video file, or record "
                                                         "from the microphone, and get a transcript with timestamps, in the spoken language or "
                                                         "translated into English."));
        else if (name == QLatin1String("speak"))
            widget = createComingSoonPane(name, QStringLiteral("Speak"),
                                          QStringLiteral("Turn text into natural speech with Orpheus TTS and similar models: choose a voice, "
                                                         "listen, and save the audio."));
        else if (name == QLatin1String("imagine"))
            widget = createComingSoonPane(name, QStringLiteral("Imagine"),
                                          QStringLiteral("Draw images from a description with Stable Diffusion models, with the size, steps "
                                                         "and seed under your control."));
        else
            widget = createComingSoonPane(name, QStringLiteral("Search"),
                                          QStringLiteral("Search your own documents by meaning with embedding models: add folders of text, "
                                                         "PDF and Markdown files, and ask in your own words."));
        widget->setProperty("paneName", name);
        panes_->addWidget(widget);
        auto* item = new QListWidgetItem(QLatin1String(pane.label), navigation_);
        item->setData(Qt::UserRole, name);
    }
    connect(navigation_, &QListWidget::currentRowChanged, panes_, &QStackedWidget::setCurrentIndex);
    connect(chatPane_, &studio::ChatPane::modelsRequested, this, [this] {
        showPane(QStringLiteral("models"));
        if (models_->rowCount() == 0) modelsPane_->showDownloads();
    });
    // First run: no model on this computer yet, so the window opens on the recommendations.
    connect(models_, &studio::LocalModelsModel::scanFinished, this, [this] {
        if (firstScan_ && models_->rowCount() == 0) {
            showPane(QStringLiteral("models"));
            modelsPane_->showDownloads();
        }
        firstScan_ = false;
    });
    connect(settings, &studio::SettingsPane::loadSettingsChanged, models_, &studio::LocalModelsModel::refresh);
    navigation_->setCurrentRow(0);

    statusBar()->setObjectName(QStringLiteral("statusBar"));
    statusBar()->setSizeGripEnabled(false);
    platformLabel_ = new ElidingLabel(platformLine(), this);
    platformLabel_->setObjectName(QStringLiteral("platformLabel"));
    platformLabel_->setToolTip(platformLabel_->text());
    platformLabel_->setContentsMargins(8, 2, 8, 2);
    platformLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // Stretch so the label takes the whole bar; it elides rather than widening the window.
    statusBar()->addPermanentWidget(platformLabel_, 1);
    if (!store_->isOpen())
        statusBar()->showMessage(QStringLiteral("Chats cannot be saved: %1").arg(storeError));

    models_->refresh();
}

MainWindow::~MainWindow() {
    // The reply being written is saved as far as it got; the engine stops and joins its thread;
    // then the panes go, before the engine thread's and hub's objects and the store they use.
    chatPane_->saveInterruptedReply();
    engine_.reset();
    delete takeCentralWidget();
    hub_.reset();
}

QStringList MainWindow::paneNames() {
    QStringList names;
    for (const PaneInfo& pane : kPanes) names << QLatin1String(pane.name);
    return names;
}

bool MainWindow::showPane(const QString& name) {
    const int index = int(paneNames().indexOf(name));
    if (index < 0) return false;
    firstScan_ = false;  // a pane chosen (by the user, --pane) is not overridden by the first-run page
    navigation_->setCurrentRow(index);
    return true;
}

QString MainWindow::currentPane() const { return panes_->currentWidget()->property("paneName").toString(); }

QString MainWindow::platformLine() const {
    const oxinfer::PlatformInfo& info = oxinfer::platform();
    const QString dot = QStringLiteral("  \u00b7  ");
    return cpuName(info) + dot + coresText(info) + dot + featuresText(info) + dot + memoryText(info);
}

QWidget* MainWindow::createComingSoonPane(const QString& name, const QString& title, const QString& what) {
    auto* pane = new QWidget(panes_);
    pane->setObjectName(name + QStringLiteral("Pane"));
    auto* layout = new QVBoxLayout(pane);
    layout->setContentsMargins(48, 40, 48, 40);
    auto* heading = new QLabel(title, pane);
    heading->setObjectName(QStringLiteral("comingTitle"));
    auto* text = new QLabel(what, pane);
    text->setObjectName(QStringLiteral("comingText"));
    text->setWordWrap(true);
    auto* note = new QLabel(QStringLiteral("Not built yet: this pane arrives when the engine runs these models. Nothing here works "
                                           "today; Chat and Models do."),
                            pane);
    note->setObjectName(QStringLiteral("comingNote"));
    note->setWordWrap(true);
    for (QLabel* label : {heading, text, note}) label->setMaximumWidth(720);
    layout->addStretch(1);
    layout->addWidget(heading);
    layout->addSpacing(12);
    layout->addWidget(text);
    layout->addSpacing(16);
    layout->addWidget(note);
    layout->addStretch(2);
    return pane;
}

QIcon MainWindow::appIcon() {
    // Same design as resources/icons/oxinfer-studio.svg: a slate-to-teal tile with a white ring
    // and a small amber spark.
    QIcon icon;
    for (int size : {16, 24, 32, 48, 64, 72, 128, 256}) {
        QPixmap pixmap(size, size);
        pixmap.fill(Qt::transparent);
        QPainter p(&pixmap);
        p.setRenderHint(QPainter::Antialiasing);
        const qreal s = size;
        QLinearGradient gradient(0, 0, s, s);
        gradient.setColorAt(0, QColor(0x2b, 0x4c, 0x6f));
        gradient.setColorAt(1, QColor(0x2a, 0x8c, 0x82));
        p.setPen(Qt::NoPen);
        p.setBrush(gradient);
        p.drawRoundedRect(QRectF(0, 0, s, s), 0.22 * s, 0.22 * s);
        QPen ring(Qt::white);
        ring.setWidthF(0.10 * s);
        p.setPen(ring);
        p.setBrush(Qt::NoBrush);
        p.drawEllipse(QPointF(0.47 * s, 0.53 * s), 0.22 * s, 0.22 * s);
        p.setPen(Qt::NoPen);
        p.setBrush(QColor(0xf2, 0xc1, 0x4e));
        p.drawEllipse(QPointF(0.76 * s, 0.24 * s), 0.075 * s, 0.075 * s);
        p.end();
        icon.addPixmap(pixmap);
    }
    return icon;
}
