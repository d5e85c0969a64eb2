#pragma once
// The Settings pane: how models load (threads, context length, KV cache type), the sampling new
// chats start with, and the theme. Changes are saved as they are made.

#include "core/app_settings.h"

#include <QWidget>

namespace studio {

class SettingsPane : public QWidget {
    Q_OBJECT
public:
    explicit SettingsPane(QWidget* parent = nullptr);

signals:
    void loadSettingsChanged();  // the model list's memory estimates depend on them
    void themeChanged(studio::Theme theme);
};

// Fusion with a light or dark palette; System keeps the platform's own style and palette.
void applyTheme(Theme theme);

}  // namespace studio
