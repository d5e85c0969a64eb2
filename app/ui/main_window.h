#pragma once
// The main window of Oxinfer Studio: a sidebar of panes (Chat, Transcribe, Speak, Imagine,
// Search, Models, Settings) and a status bar that says which machine the engine runs on. It owns
// the engine thread, the chat store and the list of local models that the panes share.

#include <QIcon>
#include <QMainWindow>
#include <QSize>
#include <QString>
#include <QStringList>

#include <memory>

class QLabel;
class QListWidget;
class QStackedWidget;

namespace studio {
class ChatPane;
class ChatStore;
class Engine;
class HubClient;
class LocalModelsModel;
class ModelsPane;
}

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // The size the window opens at.
    static QSize defaultSize() { return {1200, 780}; }

    // The application's mark, drawn in code (no image plugins needed) at the usual icon sizes.
    static QIcon appIcon();

    // What the status bar's "platformLabel" shows: CPU, cores/threads, SIMD features, RAM.
    QString platformLine() const;

    // Pane names as --pane takes them: chat, transcribe, speak, imagine, search, models, settings.
    static QStringList paneNames();
    bool showPane(const QString& name);  // false for an unknown name
    QString currentPane() const;

    studio::Engine* engine() const { return engine_.get(); }
    studio::ChatStore* chatStore() const { return store_.get(); }
    studio::ChatPane* chatPane() const { return chatPane_; }
    studio::ModelsPane* modelsPane() const { return modelsPane_; }
    studio::LocalModelsModel* localModels() const { return models_; }
    studio::HubClient* hubClient() const { return hub_.get(); }

private:
    QWidget* createComingSoonPane(const QString& name, const QString& title, const QString& what);

    std::unique_ptr<studio::ChatStore> store_;
    std::unique_ptr<studio::Engine> engine_;
    std::unique_ptr<studio::HubClient> hub_;
    studio::LocalModelsModel* models_ = nullptr;
    studio::ChatPane* chatPane_ = nullptr;
    studio::ModelsPane* modelsPane_ = nullptr;
    QListWidget* navigation_ = nullptr;
    QStackedWidget* panes_ = nullptr;
    QLabel* platformLabel_ = nullptr;
    bool firstScan_ = true;
};
