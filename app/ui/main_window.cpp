#include "ui/main_window.h"

#include <oxinfer/platform.h>

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

QLabel* makeLabel(const QString& text, const char* objectName, QWidget* parent) {
    auto* label = new QLabel(text, parent);
    label->setObjectName(QLatin1String(objectName));
    return label;
}

// Colours of the welcome page: a calm slate-and-teal scheme, set explicitly so that the page
// looks the same under any desktop theme.
const char* const kWelcomeStyle = R"(
#welcomePage { background: #f4f6f8; }
#welcomeTitle { color: #1b2a3a; font-size: 30pt; font-weight: 600; }
#welcomeTagline { color: #3d4b5c; font-size: 13pt; }
#releaseNote { background: #e8f1f6; border: 1px solid #c4dbe8; border-radius: 8px; }
#releaseNoteText { color: #24465c; font-size: 11pt; }
#machineCard { background: #ffffff; border: 1px solid #dfe4ea; border-radius: 8px; }
#machineTitle { color: #1b2a3a; font-size: 12pt; font-weight: 600; }
#machineCard QLabel[role="key"] { color: #6a7785; font-size: 10pt; }
#machineCard QLabel[role="value"] { color: #1b2a3a; font-size: 10pt; }
#versionLabel { color: #7c8894; font-size: 9pt; }
)";

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setObjectName(QStringLiteral("mainWindow"));
    setWindowTitle(QStringLiteral("Oxinfer Studio"));
    setWindowIcon(appIcon());
    resize(defaultSize());

    setCentralWidget(createWelcomePage());

    statusBar()->setObjectName(QStringLiteral("statusBar"));
    statusBar()->setSizeGripEnabled(false);
    statusBar()->setStyleSheet(QStringLiteral(
        "QStatusBar { background: #e9edf1; border-top: 1px solid #d5dce3; }"
        "QStatusBar::item { border: none; }"
        "QStatusBar QLabel { color: #3d4b5c; }"));
    platformLabel_ = new ElidingLabel(platformLine(), this);
    platformLabel_->setObjectName(QStringLiteral("platformLabel"));
    platformLabel_->setToolTip(platformLabel_->text());
    platformLabel_->setContentsMargins(8, 2, 8, 2);
    platformLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // Stretch so the label takes the whole bar; it elides rather than widening the window.
    statusBar()->addPermanentWidget(platformLabel_, 1);
}

QString MainWindow::platformLine() const {
    const oxinfer::PlatformInfo& info = oxinfer::platform();
    const QString dot = QStringLiteral("  \u00b7  ");
    return cpuName(info) + dot + coresText(info) + dot + featuresText(info) + dot + memoryText(info);
}

QWidget* MainWindow::createWelcomePage() {
    const oxinfer::PlatformInfo& info = oxinfer::platform();

    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("welcomeScroll"));
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidgetResizable(true);

    auto* page = new QWidget;
    page->setObjectName(QStringLiteral("welcomePage"));
    page->setStyleSheet(QLatin1String(kWelcomeStyle));
    scroll->setWidget(page);

    // One centred column of readable width.
    auto* outer = new QHBoxLayout(page);
    outer->setContentsMargins(48, 40, 48, 40);
    auto* column = new QVBoxLayout;
    column->setSpacing(0);
    outer->addStretch(1);
    outer->addLayout(column, 0);
    outer->addStretch(1);

    auto* header = new QHBoxLayout;
    header->setSpacing(20);
    auto* mark = new QLabel(page);
    mark->setObjectName(QStringLiteral("welcomeMark"));
    mark->setPixmap(appIcon().pixmap(72, 72));
    mark->setFixedSize(72, 72);
    header->addWidget(mark, 0, Qt::AlignVCenter);
    auto* title = makeLabel(QStringLiteral("Oxinfer Studio"), "welcomeTitle", page);
    header->addWidget(title, 1, Qt::AlignVCenter);

    auto* tagline = makeLabel(QStringLiteral("Chat with local models, transcribe audio, turn text into speech, generate "
                                             "images and search your documents \u2014 all on your own computer."),
                              "welcomeTagline", page);
    tagline->setWordWrap(true);

    auto* note = new QFrame(page);
    note->setObjectName(QStringLiteral("releaseNote"));
    auto* noteLayout = new QVBoxLayout(note);
    noteLayout->setContentsMargins(20, 16, 20, 16);
    auto* noteText = makeLabel(QStringLiteral("<b>An early release.</b> The engine's model support is being built "
                                              "now. The chat, transcription, speech, image and document panes will "
                                              "appear here as the engine learns to run each kind of model."),
                               "releaseNoteText", note);
    noteText->setWordWrap(true);
    noteText->setTextFormat(Qt::RichText);
    noteLayout->addWidget(noteText);

    auto* card = new QFrame(page);
    card->setObjectName(QStringLiteral("machineCard"));
    auto* cardLayout = new QVBoxLayout(card);
    cardLayout->setContentsMargins(20, 16, 20, 18);
    cardLayout->setSpacing(12);
    cardLayout->addWidget(makeLabel(QStringLiteral("This computer"), "machineTitle", card));
    auto* grid = new QGridLayout;
    grid->setHorizontalSpacing(24);
    grid->setVerticalSpacing(8);
    grid->setColumnStretch(1, 1);
    const struct {
        const char* key;
        QString value;
        const char* name;
    } rows[] = {
        {"Processor", cpuName(info), "machineCpu"},
        {"Cores", coresText(info), "machineCores"},
        {"Instruction sets", featuresText(info), "machineFeatures"},
        {"Memory", QStringLiteral("%1 total, %2 available")
                       .arg(qs(oxinfer::format_bytes(info.total_ram_bytes)),
                            qs(oxinfer::format_bytes(info.available_ram_bytes))),
         "machineMemory"},
    };
    int row = 0;
    for (const auto& r : rows) {
        auto* key = new QLabel(QLatin1String(r.key), card);
        key->setProperty("role", QStringLiteral("key"));
        auto* value = makeLabel(r.value, r.name, card);
        value->setProperty("role", QStringLiteral("value"));
        value->setWordWrap(true);
        value->setTextInteractionFlags(Qt::TextSelectableByMouse);
        grid->addWidget(key, row, 0, Qt::AlignTop);
        grid->addWidget(value, row, 1, Qt::AlignTop);
        ++row;
    }
    cardLayout->addLayout(grid);

    auto* version = makeLabel(QStringLiteral("Version %1").arg(QLatin1String(OXINFER_VERSION)), "versionLabel", page);

    column->addStretch(2);
    column->addLayout(header);
    column->addSpacing(18);
    column->addWidget(tagline);
    column->addSpacing(28);
    column->addWidget(note);
    column->addSpacing(20);
    column->addWidget(card);
    column->addSpacing(20);
    column->addWidget(version);
    column->addStretch(3);

    // A readable measure for the column (about 80 characters of the tagline); narrower windows scroll.
    const int measure = 720;
    for (int i = 0; i < column->count(); ++i)
        if (QWidget* w = column->itemAt(i)->widget()) w->setFixedWidth(measure);
    return scroll;
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
