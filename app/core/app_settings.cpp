#include "core/app_settings.h"

#include <QJsonDocument>
#include <QSettings>
#include <QStandardPaths>

namespace studio {

LoadSettings AppSettings::loadSettings() {
    QSettings s;
    LoadSettings l;
    l.threads = s.value("engine/threads", l.threads).toInt();
    l.contextLength = s.value("engine/contextLength", 8192).toLongLong();
    l.kvType = s.value("engine/kvType", l.kvType).toString();
    return l;
}

void AppSettings::setLoadSettings(const LoadSettings& l) {
    QSettings s;
    s.setValue("engine/threads", l.threads);
    s.setValue("engine/contextLength", l.contextLength);
    s.setValue("engine/kvType", l.kvType);
}

SamplingSettings AppSettings::defaultSampling() {
    const QJsonObject json = QJsonDocument::fromJson(QSettings().value("chat/defaultSampling").toByteArray()).object();
    return SamplingSettings::fromJson(json);
}

void AppSettings::setDefaultSampling(const SamplingSettings& settings) {
    QSettings().setValue("chat/defaultSampling", QJsonDocument(settings.toJson()).toJson(QJsonDocument::Compact));
}

Theme AppSettings::theme() {
    const QString name = QSettings().value("ui/theme", "system").toString();
    return name == "light" ? Theme::Light : name == "dark" ? Theme::Dark : Theme::System;
}

void AppSettings::setTheme(Theme theme) {
    QSettings().setValue("ui/theme", theme == Theme::Light ? "light" : theme == Theme::Dark ? "dark" : "system");
}

QStringList AppSettings::modelFolders() { return QSettings().value("models/folders").toStringList(); }
void AppSettings::setModelFolders(const QStringList& folders) { QSettings().setValue("models/folders", folders); }
QString AppSettings::lastModel() { return QSettings().value("models/last").toString(); }
void AppSettings::setLastModel(const QString& model) { QSettings().setValue("models/last", model); }

QString AppSettings::dataDir() {
    const QString dir = qEnvironmentVariable("OXINFER_STUDIO_DATA_DIR");
    return dir.isEmpty() ? QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) : dir;
}

}  // namespace studio
