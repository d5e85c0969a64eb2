#include "ui/settings_pane.h"

#include <oxinfer/platform.h>

#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPalette>
#include <QSpinBox>
#include <QStyle>
#include <QStyleFactory>
#include <QVBoxLayout>

namespace studio {

void applyTheme(Theme theme) {
    static const QString systemStyle = QApplication::style()->name();
    static const QPalette systemPalette = QApplication::palette();
    if (theme == Theme::System) {
        QApplication::setStyle(QStyleFactory::create(systemStyle));
        QApplication::setPalette(systemPalette);
        return;
    }
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QPalette p;
    if (theme == Theme::Dark) {
        const QColor window(0x1f, 0x24, 0x2b), base(0x17, 0x1b, 0x21), text(0xe6, 0xe9, 0xed), accent(0x2a, 0x8c, 0x82);
        p.setColor(QPalette::Window, window);
        p.setColor(QPalette::WindowText, text);
        p.setColor(QPalette::Base, base);
        p.setColor(QPalette::AlternateBase, QColor(0x27, 0x2e, 0x37));
        // The frame shades (card and code block borders) dark too, not Qt's light defaults.
        p.setColor(QPalette::Light, QColor(0x59, 0x63, 0x6f));
        p.setColor(QPalette::Midlight, QColor(0x3a, 0x42, 0x4c));
        p.setColor(QPalette::Mid, QColor(0x4a, 0x53, 0x5e));
        p.setColor(QPalette::Dark, QColor(0x11, 0x14, 0x18));
        p.setColor(QPalette::Shadow, Qt::black);
        p.setColor(QPalette::Text, text);
        p.setColor(QPalette::Button, window);
        p.setColor(QPalette::ButtonText, text);
        p.setColor(QPalette::ToolTipBase, base);
        p.setColor(QPalette::ToolTipText, text);
        p.setColor(QPalette::PlaceholderText, QColor(0x8a, 0x94, 0x9e));
        p.setColor(QPalette::Highlight, accent);
        p.setColor(QPalette::HighlightedText, Qt::white);
        p.setColor(QPalette::Link, QColor(0x5f, 0xc4, 0xb8));
        p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x6b, 0x74, 0x7e));
        p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x6b, 0x74, 0x7e));
    } else {
        p = QApplication::style()->standardPalette();
        p.setColor(QPalette::Highlight, QColor(0x2a, 0x8c, 0x82));
    }
    QApplication::setPalette(p);
}

SettingsPane::SettingsPane(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("settingsPane"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(24, 18, 24, 18);
    auto* title = new QLabel(QStringLiteral("Settings"), this);
    title->setObjectName(QStringLiteral("paneTitle"));
    layout->addWidget(title);

    const LoadSettings load = AppSettings::loadSettings();
    const SamplingSettings sampling = AppSettings::defaultSampling();
    // Three sections in a column of readable width.
    auto* column = new QWidget(this);
    column->setMaximumWidth(620);
    auto* columnLayout = new QVBoxLayout(column);
    columnLayout->setContentsMargins(0, 8, 0, 0);
    const auto section = [&](const QString& heading, const QString& intro) {
        auto* label = new QLabel(heading, column);
        label->setObjectName(QStringLiteral("sectionHeading"));
        columnLayout->addSpacing(10);
        columnLayout->addWidget(label);
        if (!intro.isEmpty()) {
            auto* text = new QLabel(intro, column);
            text->setObjectName(QStringLiteral("paneIntro"));
            text->setWordWrap(true);
            columnLayout->addWidget(text);
        }
        auto* form = new QFormLayout;
        form->setLabelAlignment(Qt::AlignRight);
        form->setFieldGrowthPolicy(QFormLayout::FieldsStayAtSizeHint);
        columnLayout->addLayout(form);
        return form;
    };
    QFormLayout* form = section(QStringLiteral("Running models"), QStringLiteral("These apply when a model is loaded next."));

    auto* threads = new QSpinBox(column);
    threads->setObjectName(QStringLiteral("threads"));
    threads->setRange(0, 1024);
    threads->setSpecialValueText(QStringLiteral("Automatic (%1 cores)").arg(oxinfer::platform().physical_cores));
    threads->setValue(load.threads);
    auto* context = new QSpinBox(column);
    context->setObjectName(QStringLiteral("contextLength"));
    context->setRange(0, 1 << 20);
    context->setSingleStep(1024);
    context->setSpecialValueText(QStringLiteral("The model's own"));
    context->setValue(int(load.contextLength));
    auto* kv = new QComboBox(column);
    kv->setObjectName(QStringLiteral("kvType"));
    kv->addItem(QStringLiteral("f32 (exact)"), QStringLiteral("f32"));
    kv->addItem(QStringLiteral("f16 (half the memory)"), QStringLiteral("f16"));
    kv->addItem(QStringLiteral("bf16 (half the memory)"), QStringLiteral("bf16"));
    kv->setCurrentIndex(std::max(0, kv->findData(load.kvType)));
    form->addRow(QStringLiteral("Threads"), threads);
    form->addRow(QStringLiteral("Context length"), context);
    form->addRow(QStringLiteral("KV cache"), kv);

    const auto saveLoad = [this, threads, context, kv] {
        AppSettings::setLoadSettings({threads->value(), context->value(), kv->currentData().toString()});
        emit loadSettingsChanged();
    };
    connect(threads, &QSpinBox::valueChanged, this, saveLoad);
    connect(context, &QSpinBox::valueChanged, this, saveLoad);
    connect(kv, &QComboBox::currentIndexChanged, this, saveLoad);

    auto* temperature = new QDoubleSpinBox(column);
    temperature->setRange(0, 2);
    temperature->setSingleStep(0.05);
    temperature->setValue(sampling.temperature);
    auto* topP = new QDoubleSpinBox(column);
    topP->setRange(0.01, 1);
    topP->setSingleStep(0.01);
    topP->setValue(sampling.topP);
    auto* topK = new QSpinBox(column);
    topK->setRange(0, 1000);
    topK->setSpecialValueText(QStringLiteral("off"));
    topK->setValue(sampling.topK);
    auto* minP = new QDoubleSpinBox(column);
    minP->setRange(0, 1);
    minP->setSingleStep(0.01);
    minP->setValue(sampling.minP);
    auto* maxTokens = new QSpinBox(column);
    maxTokens->setRange(1, 131072);
    maxTokens->setValue(sampling.maxTokens);
    form = section(QStringLiteral("New chats"), QStringLiteral("The sampling a new chat starts with; each chat can change its own."));
    form->addRow(QStringLiteral("Temperature"), temperature);
    form->addRow(QStringLiteral("Top p"), topP);
    form->addRow(QStringLiteral("Top k"), topK);
    form->addRow(QStringLiteral("Min p"), minP);
    form->addRow(QStringLiteral("Max tokens"), maxTokens);
    const auto saveSampling = [temperature, topP, topK, minP, maxTokens] {
        SamplingSettings s = AppSettings::defaultSampling();
        s.temperature = temperature->value();
        s.topP = topP->value();
        s.topK = topK->value();
        s.minP = minP->value();
        s.maxTokens = maxTokens->value();
        AppSettings::setDefaultSampling(s);
    };
    for (QDoubleSpinBox* spin : {temperature, topP, minP}) connect(spin, &QDoubleSpinBox::valueChanged, this, saveSampling);
    for (QSpinBox* spin : {topK, maxTokens}) connect(spin, &QSpinBox::valueChanged, this, saveSampling);

    auto* theme = new QComboBox(column);
    theme->setObjectName(QStringLiteral("theme"));
    theme->addItems({QStringLiteral("System"), QStringLiteral("Light"), QStringLiteral("Dark")});
    theme->setCurrentIndex(int(AppSettings::theme()));
    connect(theme, &QComboBox::currentIndexChanged, this, [this](int index) {
        AppSettings::setTheme(Theme(index));
        applyTheme(Theme(index));
        emit themeChanged(Theme(index));
    });
    form = section(QStringLiteral("Appearance"), QString());
    form->addRow(QStringLiteral("Theme"), theme);

    for (QWidget* field : column->findChildren<QAbstractSpinBox*>()) field->setMinimumWidth(240);
    for (QWidget* field : column->findChildren<QComboBox*>()) field->setMinimumWidth(240);
    temperature->setObjectName(QStringLiteral("defaultTemperature"));
    maxTokens->setObjectName(QStringLiteral("defaultMaxTokens"));
    layout->addWidget(column);
    layout->addStretch(1);
}

}  // namespace studio
