#pragma once
// The app's settings, kept with QSettings: how models load, the default sampling of new chats,
// the theme, and the folders of models the user added. One place reads and writes each key.

#include "core/engine_types.h"

#include <QString>
#include <QStringList>

namespace studio {

enum class Theme { System, Light, Dark };

class AppSettings {
public:
    static LoadSettings loadSettings();
    static void setLoadSettings(const LoadSettings& settings);
    static SamplingSettings defaultSampling();
    static void setDefaultSampling(const SamplingSettings& settings);
    static Theme theme();
    static void setTheme(Theme theme);
    static QStringList modelFolders();
    static void setModelFolders(const QStringList& folders);
    static QString lastModel();
    static void setLastModel(const QString& model);

    // Where chats.sqlite lives: $OXINFER_STUDIO_DATA_DIR, else the platform's app data folder.
    static QString dataDir();
};

}  // namespace studio
