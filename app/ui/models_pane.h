#pragma once
// The Models pane: the models on this computer with their architecture, parameters, type, size
// and the memory they need at the chosen context (and whether that fits); load and unload; add
// folders of models. Its Download tab recommends models that fit this machine (the first-run
// page), searches the hub, and downloads one quantization with progress, pause, resume and cancel.

#include "core/engine.h"
#include "core/hub_client.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTableView;

namespace studio {

class LocalModelsModel;

class ModelsPane : public QWidget {
    Q_OBJECT
public:
    ModelsPane(Engine* engine, LocalModelsModel* models, HubClient* hub, QWidget* parent = nullptr);
    QTableView* table() const { return table_; }
    void addFolder(const QString& folder);
    void loadSelected();
    void showDownloads();  // the Download tab (first run: the recommendations)
    void searchHub(const QString& text);

private:
    QWidget* createLocalTab();
    QWidget* createDownloadTab();
    void updateDetails();
    void updateDownloadControls();

    Engine* engine_;
    LocalModelsModel* models_;
    QTableView* table_ = nullptr;
    QLabel* details_ = nullptr;
    QLabel* loaded_ = nullptr;
    QPushButton* load_ = nullptr;
    QPushButton* unload_ = nullptr;

    HubClient* hub_;
    QTabWidget* tabs_ = nullptr;
    QLineEdit* search_ = nullptr;
    QListWidget* results_ = nullptr;
    QComboBox* variants_ = nullptr;
    QPushButton* download_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* progressText_ = nullptr;
    QPushButton* pause_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QString variantsRepo_;
};

}  // namespace studio
