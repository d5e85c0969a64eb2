#include "ui/models_pane.h"

#include "core/app_settings.h"
#include "core/local_models_model.h"

#include <oxinfer/hf_cache.h>

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

namespace studio {

ModelsPane::ModelsPane(Engine* engine, LocalModelsModel* models, QWidget* parent)
    : QWidget(parent), engine_(engine), models_(models) {
    setObjectName(QStringLiteral("modelsPane"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(24, 18, 24, 18);
    layout->setSpacing(10);
    auto* title = new QLabel(QStringLiteral("Models"), this);
    title->setObjectName(QStringLiteral("paneTitle"));
    layout->addWidget(title);
    auto* intro = new QLabel(QStringLiteral("Models in the Hugging Face cache (%1) and in the folders you add. The memory column "
                                            "is what the weights and the KV cache need at the context length of Settings.")
                                 .arg(QString::fromStdString(oxinfer::hf::hub_cache_dir().string()).toHtmlEscaped()),
                             this);
    intro->setObjectName(QStringLiteral("paneIntro"));
    intro->setWordWrap(true);
    layout->addWidget(intro);

    auto* buttons = new QHBoxLayout;
    load_ = new QPushButton(QStringLiteral("Load"), this);
    load_->setObjectName(QStringLiteral("loadSelected"));
    unload_ = new QPushButton(QStringLiteral("Unload"), this);
    unload_->setObjectName(QStringLiteral("unloadModel"));
    auto* addFolderButton = new QPushButton(QStringLiteral("Add folder\u2026"), this);
    addFolderButton->setObjectName(QStringLiteral("addFolder"));
    auto* refresh = new QPushButton(QStringLiteral("Refresh"), this);
    refresh->setObjectName(QStringLiteral("refreshModels"));
    for (QPushButton* b : {load_, unload_, addFolderButton, refresh}) buttons->addWidget(b);
    buttons->addStretch(1);
    layout->addLayout(buttons);

    table_ = new QTableView(this);
    table_->setObjectName(QStringLiteral("modelTable"));
    table_->setModel(models_);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setAlternatingRowColors(true);
    table_->setShowGrid(false);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(LocalModelsModel::Name, QHeaderView::Stretch);
    layout->addWidget(table_, 1);

    details_ = new QLabel(this);
    details_->setObjectName(QStringLiteral("modelDetails"));
    details_->setWordWrap(true);
    details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(details_);
    loaded_ = new QLabel(this);
    loaded_->setObjectName(QStringLiteral("loadedModel"));
    layout->addWidget(loaded_);
    auto* hub = new QLabel(QStringLiteral("Searching and downloading from the Hugging Face hub inside the app is not built yet; "
                                          "until it is, <code>oxinfer pull ORG/NAME</code> downloads a model into the cache, "
                                          "and it appears here after Refresh."),
                           this);
    hub->setObjectName(QStringLiteral("hubNote"));
    hub->setWordWrap(true);
    hub->setTextFormat(Qt::RichText);
    layout->addWidget(hub);

    connect(load_, &QPushButton::clicked, this, &ModelsPane::loadSelected);
    connect(table_, &QTableView::doubleClicked, this, &ModelsPane::loadSelected);
    connect(unload_, &QPushButton::clicked, engine_, &Engine::unloadModel);
    connect(refresh, &QPushButton::clicked, models_, &LocalModelsModel::refresh);
    connect(addFolderButton, &QPushButton::clicked, this, [this] {
        const QString folder = QFileDialog::getExistingDirectory(this, QStringLiteral("Add a folder of models"));
        if (!folder.isEmpty()) addFolder(folder);
    });
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &ModelsPane::updateDetails);
    connect(models_, &QAbstractItemModel::modelReset, this, &ModelsPane::updateDetails);
    connect(engine_, &Engine::stateChanged, this, &ModelsPane::updateDetails);
    connect(engine_, &Engine::modelLoaded, this, &ModelsPane::updateDetails);
    connect(engine_, &Engine::modelUnloaded, this, &ModelsPane::updateDetails);
    connect(engine_, &Engine::modelLoadFailed, this, [this](const QString&, const QString& error) {
        loaded_->setText(QStringLiteral("Could not load: ") + error);
    });
    updateDetails();
}

void ModelsPane::addFolder(const QString& folder) {
    QStringList folders = AppSettings::modelFolders();
    if (!folders.contains(folder)) folders.append(folder);
    AppSettings::setModelFolders(folders);
    models_->refresh();
}

void ModelsPane::loadSelected() {
    const QModelIndexList rows = table_->selectionModel()->selectedRows();
    if (rows.isEmpty()) return;
    engine_->loadModel(rows.first().data(LocalModelsModel::PathRole).toString(), AppSettings::loadSettings());
}

void ModelsPane::updateDetails() {
    const QModelIndexList rows = table_->selectionModel()->selectedRows();
    const bool idle = engine_->state() == Engine::State::Idle;
    load_->setEnabled(idle && !rows.isEmpty() && rows.first().data(LocalModelsModel::ProblemRole).toString().isEmpty());
    unload_->setEnabled(idle && engine_->hasModel());
    if (rows.isEmpty()) {
        details_->setText(models_->rowCount() == 0 ? QStringLiteral("No models found yet.") : QStringLiteral("Select a model to see what it needs."));
    } else {
        const LocalModelEntry& e = models_->entries().at(rows.first().row());
        details_->setText(QStringLiteral("%1\n%2").arg(e.path, LocalModelsModel::fitText(e)));
    }
    if (engine_->state() == Engine::State::Loading) loaded_->setText(QStringLiteral("Loading\u2026"));
    else if (const auto& model = engine_->model()) loaded_->setText(QStringLiteral("Loaded: %1 (%2, %3)").arg(model->name, model->architecture, model->weightType));
    else loaded_->setText(QStringLiteral("No model loaded."));
}

}  // namespace studio
