#include "core/local_models_model.h"

#include "core/app_settings.h"

#include <oxinfer/hf_cache.h>
#include <oxinfer/local_models.h>
#include <oxinfer/platform.h>

#include <QColor>
#include <QLocale>
#include <QtConcurrent/QtConcurrentRun>

namespace studio {
namespace {

QString bytesText(qint64 bytes) { return QString::fromStdString(oxinfer::format_bytes(uint64_t(std::max<qint64>(bytes, 0)))); }

QString parametersText(qint64 count) {
    if (count <= 0) return QStringLiteral("\u2014");
    if (count >= 1'000'000'000) return QStringLiteral("%1B").arg(count / 1e9, 0, 'f', 1);
    if (count >= 1'000'000) return QStringLiteral("%1M").arg(count / 1e6, 0, 'f', 0);
    return QStringLiteral("%1K").arg(count / 1e3, 0, 'f', 0);
}

oxinfer::DType kvDType(const QString& name) {
    return name == QLatin1String("f16") ? oxinfer::DType::F16 : name == QLatin1String("bf16") ? oxinfer::DType::BF16 : oxinfer::DType::F32;
}

}  // namespace

LocalModelsModel::LocalModelsModel(QObject* parent) : QAbstractTableModel(parent) {
    connect(&watcher_, &QFutureWatcher<QList<LocalModelEntry>>::finished, this, [this] {
        beginResetModel();
        entries_ = watcher_.result();
        endResetModel();
        emit scanFinished();
        if (rescan_) {
            rescan_ = false;
            refresh();
        }
    });
}

LocalModelsModel::~LocalModelsModel() { watcher_.waitForFinished(); }

QList<LocalModelEntry> LocalModelsModel::scan(const QStringList& folders, qint64 contextLength, const QString& kvType) {
    QList<LocalModelEntry> entries;
    try {
        scanInto(entries, folders, contextLength, kvType);
    } catch (const std::exception& error) {  // a folder that cannot be listed: keep what was found
        LocalModelEntry e;
        e.id = QStringLiteral("(scan stopped)");
        e.problem = QString::fromStdString(error.what());
        entries.append(e);
    }
    return entries;
}

void LocalModelsModel::scanInto(QList<LocalModelEntry>& entries, const QStringList& folders, qint64 contextLength, const QString& kvType) {
    std::vector<std::filesystem::path> paths;
    for (const QString& folder : folders) paths.emplace_back(folder.toStdString());
    for (const auto& folder : oxinfer::model_path_folders()) paths.push_back(folder);
    const qint64 available = qint64(oxinfer::detect_platform().available_ram_bytes);
    for (const oxinfer::LocalModel& model : oxinfer::find_local_models(oxinfer::hf::hub_cache_dir(), paths)) {
        LocalModelEntry e;
        e.id = QString::fromStdString(model.id);
        e.path = QString::fromStdString(model.path.string());
        e.source = QString::fromStdString(model.source);
        e.format = QString::fromStdString(model.format);
        e.type = QString::fromStdString(model.type);
        e.architecture = QString::fromStdString(model.architecture);
        e.fileBytes = qint64(model.bytes);
        e.problem = QString::fromStdString(model.problem);
        e.availableBytes = available;
        if (e.problem.isEmpty()) {
            try {
                const oxinfer::ModelFootprint footprint = oxinfer::model_footprint(model.path);
                const qint64 own = footprint.config.max_position_embeddings;
                e.contextLength = contextLength > 0 && (own <= 0 || contextLength < own) ? contextLength : own;
                e.parameters = footprint.parameters;
                e.type = QString::fromUtf8(oxinfer::dtype_name(footprint.weight_type).data(), qsizetype(oxinfer::dtype_name(footprint.weight_type).size())).toUpper();
                e.weightBytes = qint64(footprint.weight_bytes);
                e.cacheBytes = qint64(footprint.cache_bytes(e.contextLength, kvDType(kvType)));
                if (e.architecture.isEmpty()) e.architecture = QString::fromStdString(footprint.config.architecture);
            } catch (const std::exception& error) {
                e.problem = QString::fromStdString(error.what());
            }
        }
        entries.append(e);
    }
}

void LocalModelsModel::refresh() {
    if (watcher_.isRunning()) {
        rescan_ = true;  // the settings changed while scanning: scan once more after
        return;
    }
    const LoadSettings load = AppSettings::loadSettings();
    watcher_.setFuture(QtConcurrent::run(&LocalModelsModel::scan, AppSettings::modelFolders(), load.contextLength, load.kvType));
}

int LocalModelsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(entries_.size()); }
int LocalModelsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

int LocalModelsModel::rowOfPath(const QString& path) const {
    for (int i = 0; i < entries_.size(); ++i)
        if (entries_[i].path == path) return i;
    return -1;
}

bool LocalModelsModel::fits(const LocalModelEntry& entry) {
    return entry.problem.isEmpty() && entry.memoryBytes() <= entry.availableBytes;
}

QString LocalModelsModel::fitText(const LocalModelEntry& entry) {
    if (!entry.problem.isEmpty()) return QStringLiteral("cannot be read: %1").arg(entry.problem);
    return QStringLiteral("%1 at %2 tokens (weights %3 + cache %4) of %5 available: %6")
        .arg(bytesText(entry.memoryBytes()), QLocale().toString(entry.contextLength), bytesText(entry.weightBytes),
             bytesText(entry.cacheBytes), bytesText(entry.availableBytes),
             fits(entry) ? QStringLiteral("fits") : QStringLiteral("does not fit"));
}

QVariant LocalModelsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const LocalModelEntry& e = entries_[index.row()];
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Name: return e.id;
        case Architecture: return e.architecture.isEmpty() ? QStringLiteral("\u2014") : e.architecture;
        case Parameters: return parametersText(e.parameters);
        case Type: return e.type.isEmpty() ? e.format : e.type;
        case Size: return bytesText(e.fileBytes);
        case Memory: return e.problem.isEmpty() ? bytesText(e.memoryBytes()) : QStringLiteral("unreadable");
        }
        break;
    case Qt::ToolTipRole:
        return e.path + QLatin1Char('\n') + fitText(e);
    case Qt::TextAlignmentRole:
        if (index.column() == Parameters || index.column() == Size || index.column() == Memory)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        break;
    case Qt::ForegroundRole:
        if (index.column() == Memory && !fits(e)) return QColor(0xc0, 0x39, 0x2b);
        break;
    case PathRole: return e.path;
    case FitsRole: return fits(e);
    case ProblemRole: return e.problem;
    }
    return {};
}

QVariant LocalModelsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case Name: return QStringLiteral("Model");
    case Architecture: return QStringLiteral("Architecture");
    case Parameters: return QStringLiteral("Parameters");
    case Type: return QStringLiteral("Type");
    case Size: return QStringLiteral("Size");
    case Memory: return QStringLiteral("Memory needed");
    }
    return {};
}

}  // namespace studio
