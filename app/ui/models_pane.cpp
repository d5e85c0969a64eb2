#include "ui/models_pane.h"

#include "core/app_settings.h"
#include "core/local_models_model.h"
#include "core/recommended_models.h"

#include <oxinfer/hf_cache.h>
#include <oxinfer/platform.h>

#include <QComboBox>
#include <QFileDialog>
#include <QFrame>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QTabWidget>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

namespace studio {

namespace {

QString bytesText(qint64 bytes) { return QString::fromStdString(oxinfer::format_bytes(uint64_t(std::max<qint64>(bytes, 0)))); }

QString progressLine(const oxinfer::hub::DownloadProgress& p) {
    QString text = QStringLiteral("%1 of %2").arg(bytesText(p.done_bytes), bytesText(p.total_bytes));
    if (p.bytes_per_second > 0) text += QStringLiteral(" \u00b7 %1/s").arg(bytesText(qint64(p.bytes_per_second)));
    if (p.eta_seconds >= 0) {
        const int s = int(p.eta_seconds);
        text += s >= 3600 ? QStringLiteral(" \u00b7 %1 h %2 min left").arg(s / 3600).arg(s % 3600 / 60)
                          : QStringLiteral(" \u00b7 %1 min %2 s left").arg(s / 60).arg(s % 60);
    }
    return text + QStringLiteral(" \u00b7 file %1 of %2").arg(std::min(p.files_done + 1, p.files_total)).arg(p.files_total);
}

}  // namespace

ModelsPane::ModelsPane(Engine* engine, LocalModelsModel* models, HubClient* hub, QWidget* parent)
    : QWidget(parent), engine_(engine), models_(models), hub_(hub) {
    setObjectName(QStringLiteral("modelsPane"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(24, 18, 24, 18);
    layout->setSpacing(10);
    auto* title = new QLabel(QStringLiteral("Models"), this);
    title->setObjectName(QStringLiteral("paneTitle"));
    layout->addWidget(title);
    tabs_ = new QTabWidget(this);
    tabs_->setObjectName(QStringLiteral("modelTabs"));
    tabs_->addTab(createLocalTab(), QStringLiteral("On this computer"));
    tabs_->addTab(createDownloadTab(), QStringLiteral("Download"));
    layout->addWidget(tabs_, 1);
    updateDetails();
    updateDownloadControls();
}

QWidget* ModelsPane::createLocalTab() {
    auto* tab = new QWidget(this);
    auto* layout = new QVBoxLayout(tab);
    layout->setContentsMargins(12, 12, 12, 12);
    auto* intro = new QLabel(QStringLiteral("Models in the Hugging Face cache (%1) and in the folders you add. The memory column "
                                            "is what the weights and the KV cache need at the context length of Settings.")
                                 .arg(QString::fromStdString(oxinfer::hf::hub_cache_dir().string()).toHtmlEscaped()),
                             tab);
    intro->setObjectName(QStringLiteral("paneIntro"));
    intro->setWordWrap(true);
    layout->addWidget(intro);

    auto* buttons = new QHBoxLayout;
    load_ = new QPushButton(QStringLiteral("Load"), tab);
    load_->setObjectName(QStringLiteral("loadSelected"));
    unload_ = new QPushButton(QStringLiteral("Unload"), tab);
    unload_->setObjectName(QStringLiteral("unloadModel"));
    auto* addFolderButton = new QPushButton(QStringLiteral("Add folder\u2026"), tab);
    addFolderButton->setObjectName(QStringLiteral("addFolder"));
    auto* refresh = new QPushButton(QStringLiteral("Refresh"), tab);
    refresh->setObjectName(QStringLiteral("refreshModels"));
    for (QPushButton* b : {load_, unload_, addFolderButton, refresh}) buttons->addWidget(b);
    buttons->addStretch(1);
    layout->addLayout(buttons);

    table_ = new QTableView(tab);
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

    details_ = new QLabel(tab);
    details_->setObjectName(QStringLiteral("modelDetails"));
    details_->setWordWrap(true);
    details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(details_);
    loaded_ = new QLabel(tab);
    loaded_->setObjectName(QStringLiteral("loadedModel"));
    layout->addWidget(loaded_);

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
    return tab;
}

QWidget* ModelsPane::createDownloadTab() {
    auto* tab = new QWidget(this);
    tab->setObjectName(QStringLiteral("downloadTab"));
    auto* layout = new QVBoxLayout(tab);
    layout->setContentsMargins(12, 12, 12, 12);
    layout->setSpacing(8);

    const uint64_t available = oxinfer::detect_platform().available_ram_bytes;
    auto* heading = new QLabel(QStringLiteral("Recommended for this computer (%1 of memory available)").arg(bytesText(qint64(available))), tab);
    heading->setObjectName(QStringLiteral("sectionHeading"));
    layout->addWidget(heading);
    const QList<RecommendedModel> recommended = recommendedModels(available);
    if (recommended.isEmpty()) {
        auto* none = new QLabel(QStringLiteral("None of the small models we suggest fits in the memory available now. Close other "
                                               "programs, or search below for a smaller quantization."),
                                tab);
        none->setWordWrap(true);
        layout->addWidget(none);
    }
    for (const RecommendedModel& model : recommended) {
        auto* row = new QFrame(tab);
        row->setObjectName(QStringLiteral("recommendation"));
        auto* rowLayout = new QHBoxLayout(row);
        rowLayout->setContentsMargins(12, 8, 12, 8);
        auto* text = new QLabel(QStringLiteral("<b>%1</b> &nbsp;<span style='color:gray'>%2 \u00b7 %3 \u00b7 about %4</span><br>%5")
                                    .arg(model.title.toHtmlEscaped(), model.repo.toHtmlEscaped(), model.variant, bytesText(model.bytes),
                                         model.note.toHtmlEscaped()),
                                row);
        text->setTextFormat(Qt::RichText);
        text->setWordWrap(true);
        rowLayout->addWidget(text, 1);
        auto* get = new QPushButton(QStringLiteral("Download"), row);
        get->setObjectName(QStringLiteral("recommendedDownload"));
        get->setProperty("repo", model.repo);
        connect(get, &QPushButton::clicked, this, [this, model] { hub_->download(model.repo, model.variant); });
        rowLayout->addWidget(get);
        layout->addWidget(row);
    }

    auto* searchHeading = new QLabel(QStringLiteral("Search the Hugging Face hub"), tab);
    searchHeading->setObjectName(QStringLiteral("sectionHeading"));
    layout->addSpacing(8);
    layout->addWidget(searchHeading);
    auto* searchRow = new QHBoxLayout;
    search_ = new QLineEdit(tab);
    search_->setObjectName(QStringLiteral("hubSearch"));
    search_->setPlaceholderText(QStringLiteral("Model name, e.g. Qwen3.5 GGUF"));
    auto* searchButton = new QPushButton(QStringLiteral("Search"), tab);
    searchButton->setObjectName(QStringLiteral("hubSearchButton"));
    searchRow->addWidget(search_, 1);
    searchRow->addWidget(searchButton);
    layout->addLayout(searchRow);
    results_ = new QListWidget(tab);
    results_->setObjectName(QStringLiteral("hubResults"));
    layout->addWidget(results_, 1);
    auto* chooseRow = new QHBoxLayout;
    variants_ = new QComboBox(tab);
    variants_->setObjectName(QStringLiteral("hubVariants"));
    variants_->setPlaceholderText(QStringLiteral("Choose a model above"));
    variants_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    download_ = new QPushButton(QStringLiteral("Download"), tab);
    download_->setObjectName(QStringLiteral("hubDownload"));
    chooseRow->addWidget(variants_, 1);
    chooseRow->addWidget(download_);
    layout->addLayout(chooseRow);

    auto* progressRow = new QHBoxLayout;
    progress_ = new QProgressBar(tab);
    progress_->setObjectName(QStringLiteral("downloadProgress"));
    progress_->setRange(0, 1000);
    pause_ = new QPushButton(QStringLiteral("Pause"), tab);
    pause_->setObjectName(QStringLiteral("pauseDownload"));
    cancel_ = new QPushButton(QStringLiteral("Cancel"), tab);
    cancel_->setObjectName(QStringLiteral("cancelDownload"));
    progressRow->addWidget(progress_, 1);
    progressRow->addWidget(pause_);
    progressRow->addWidget(cancel_);
    layout->addLayout(progressRow);
    progressText_ = new QLabel(tab);
    progressText_->setObjectName(QStringLiteral("downloadText"));
    progressText_->setWordWrap(true);
    layout->addWidget(progressText_);

    const auto search = [this] { searchHub(search_->text()); };
    connect(searchButton, &QPushButton::clicked, this, search);
    connect(search_, &QLineEdit::returnPressed, this, search);
    connect(hub_, &HubClient::searchFinished, this, [this](const QList<oxinfer::hub::SearchHit>& hits, const QString& error) {
        results_->clear();
        if (!error.isEmpty()) return progressText_->setText(QStringLiteral("Search failed: ") + error);
        for (const auto& hit : hits) {
            auto* item = new QListWidgetItem(QStringLiteral("%1    \u2193 %2  \u2665 %3").arg(hit.id).arg(hit.downloads).arg(hit.likes), results_);
            item->setData(Qt::UserRole, hit.id);
        }
        if (hits.isEmpty()) progressText_->setText(QStringLiteral("No model matches."));
    });
    connect(results_, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
        variants_->clear();
        if (!item) return;
        variantsRepo_ = item->data(Qt::UserRole).toString();
        variants_->setPlaceholderText(QStringLiteral("Reading the files of %1\u2026").arg(variantsRepo_));
        hub_->listVariants(variantsRepo_);
        updateDownloadControls();
    });
    connect(hub_, &HubClient::variantsListed, this, [this](const QString& repo, const QList<ModelVariant>& variants, const QString& error) {
        if (repo != variantsRepo_) return;
        variants_->clear();
        variants_->setPlaceholderText(error.isEmpty() ? QStringLiteral("No model files in this repo") : error);
        const uint64_t available = oxinfer::platform().available_ram_bytes;
        for (const ModelVariant& v : variants)
            variants_->addItem(QStringLiteral("%1 \u00b7 %2%3").arg(v.name, bytesText(v.bytes),
                                                                   uint64_t(v.bytes) > available ? QStringLiteral(" \u00b7 does not fit in memory") : QString()),
                               v.name);
        updateDownloadControls();
    });
    connect(download_, &QPushButton::clicked, this, [this] {
        if (variants_->currentIndex() >= 0) hub_->download(variantsRepo_, variants_->currentData().toString());
    });
    connect(pause_, &QPushButton::clicked, this, [this] {
        if (hub_->downloadState() == HubClient::DownloadState::Paused) hub_->resume();
        else hub_->pause();
    });
    connect(cancel_, &QPushButton::clicked, hub_, &HubClient::cancel);
    connect(hub_, &HubClient::downloadStateChanged, this, &ModelsPane::updateDownloadControls);
    connect(hub_, &HubClient::downloadProgress, this, [this](const oxinfer::hub::DownloadProgress& p) {
        progress_->setValue(p.total_bytes > 0 ? int(1000 * p.done_bytes / p.total_bytes) : 0);
        progressText_->setText(QStringLiteral("%1: %2").arg(hub_->downloadingRepo(), progressLine(p)));
    });
    connect(hub_, &HubClient::downloadFinished, this, [this](const QString& repo, const QString&) {
        progress_->setValue(1000);
        progressText_->setText(QStringLiteral("%1 is downloaded: it is under \u201cOn this computer\u201d, ready to load.").arg(repo));
        models_->refresh();
    });
    connect(hub_, &HubClient::downloadFailed, this, [this](const QString&, const QString& error) {
        progressText_->setText(QStringLiteral("Download stopped: ") + error);
    });
    return tab;
}

void ModelsPane::showDownloads() { tabs_->setCurrentIndex(1); }

void ModelsPane::searchHub(const QString& text) {
    search_->setText(text);
    results_->clear();
    progressText_->setText(QStringLiteral("Searching\u2026"));
    hub_->search(text);
}

void ModelsPane::updateDownloadControls() {
    const auto state = hub_->downloadState();
    const bool idle = state == HubClient::DownloadState::Idle;
    download_->setEnabled(idle && variants_->currentIndex() >= 0);
    for (QPushButton* button : findChildren<QPushButton*>(QStringLiteral("recommendedDownload"))) button->setEnabled(idle);
    pause_->setEnabled(!idle);
    pause_->setText(state == HubClient::DownloadState::Paused ? QStringLiteral("Resume") : QStringLiteral("Pause"));
    cancel_->setEnabled(!idle);
    progress_->setVisible(!idle || progress_->value() > 0);
}

void ModelsPane::addFolder(const QString& folder) {
    QStringList folders = AppSettings::modelFolders();
    if (!folders.contains(folder)) folders.append(folder);
    AppSettings::setModelFolders(folders);
    models_->refresh();
}

void ModelsPane::loadSelected() {
    const QModelIndexList rows = table_->selectionModel()->selectedRows();
    if (rows.isEmpty() || engine_->state() != Engine::State::Idle) return;
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
