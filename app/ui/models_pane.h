#pragma once
// The Models pane: the models on this computer with their architecture, parameters, type, size
// and the memory they need at the chosen context (and whether that fits); load and unload; add
// folders of models.

#include "core/engine.h"

#include <QWidget>

class QLabel;
class QPushButton;
class QTableView;

namespace studio {

class LocalModelsModel;

class ModelsPane : public QWidget {
    Q_OBJECT
public:
    ModelsPane(Engine* engine, LocalModelsModel* models, QWidget* parent = nullptr);
    QTableView* table() const { return table_; }
    void addFolder(const QString& folder);
    void loadSelected();

private:
    void updateDetails();

    Engine* engine_;
    LocalModelsModel* models_;
    QTableView* table_ = nullptr;
    QLabel* details_ = nullptr;
    QLabel* loaded_ = nullptr;
    QPushButton* load_ = nullptr;
    QPushButton* unload_ = nullptr;
};

}  // namespace studio
