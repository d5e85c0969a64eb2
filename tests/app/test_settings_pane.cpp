// The Settings pane: each change is saved at once (AppSettings) and the theme applies.

#include "core/app_settings.h"
#include "ui/settings_pane.h"

#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QPalette>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

using studio::AppSettings;

class TestSettingsPane : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        QSettings::setDefaultFormat(QSettings::IniFormat);
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, dir_.path());
    }

    void defaults() {
        const studio::LoadSettings load = AppSettings::loadSettings();
        QCOMPARE(load.threads, 0);
        QCOMPARE(load.contextLength, qint64(8192));
        QCOMPARE(load.kvType, QStringLiteral("f32"));
        QCOMPARE(AppSettings::theme(), studio::Theme::System);
    }

    void changesAreSaved() {
        studio::SettingsPane pane;
        QSignalSpy loadChanged(&pane, &studio::SettingsPane::loadSettingsChanged);
        pane.findChild<QSpinBox*>(QStringLiteral("threads"))->setValue(3);
        pane.findChild<QSpinBox*>(QStringLiteral("contextLength"))->setValue(4096);
        auto* kv = pane.findChild<QComboBox*>(QStringLiteral("kvType"));
        kv->setCurrentIndex(kv->findData(QStringLiteral("bf16")));
        QCOMPARE(loadChanged.size(), 3);
        QCOMPARE(AppSettings::loadSettings(), (studio::LoadSettings{3, 4096, QStringLiteral("bf16")}));

        pane.findChild<QDoubleSpinBox*>(QStringLiteral("defaultTemperature"))->setValue(0.2);
        pane.findChild<QSpinBox*>(QStringLiteral("defaultMaxTokens"))->setValue(300);
        QCOMPARE(AppSettings::defaultSampling().temperature, 0.2);
        QCOMPARE(AppSettings::defaultSampling().maxTokens, 300);

        // A new pane shows what was saved.
        studio::SettingsPane again;
        QCOMPARE(again.findChild<QSpinBox*>(QStringLiteral("threads"))->value(), 3);
        QCOMPARE(again.findChild<QComboBox*>(QStringLiteral("kvType"))->currentData().toString(), QStringLiteral("bf16"));
    }

    void themeApplies() {
        studio::SettingsPane pane;
        auto* theme = pane.findChild<QComboBox*>(QStringLiteral("theme"));
        theme->setCurrentIndex(int(studio::Theme::Dark));
        QCOMPARE(AppSettings::theme(), studio::Theme::Dark);
        QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 80);
        theme->setCurrentIndex(int(studio::Theme::Light));
        QVERIFY(QApplication::palette().color(QPalette::Window).lightness() > 180);
        theme->setCurrentIndex(int(studio::Theme::System));
        QCOMPARE(AppSettings::theme(), studio::Theme::System);
    }

private:
    QTemporaryDir dir_;
};

QTEST_MAIN(TestSettingsPane)
#include "test_settings_pane.moc"
