#pragma once
// The models on this computer as a table: the Hugging Face cache, the folders the user added and
// $OXINFER_MODEL_PATH (oxinfer::find_local_models), each with what it needs in memory at the
// chosen context (oxinfer::model_footprint) and whether that fits this machine. Scanning reads
// headers only and runs on a pool thread, so a large cache never freezes the window.

#include <QAbstractTableModel>
#include <QFutureWatcher>
#include <QList>
#include <QString>
#include <QStringList>

namespace studio {

struct LocalModelEntry {
    QString id;
    QString path;
    QString source;        // "cache" or "folder"
    QString format;        // gguf, safetensors, torch
    QString type;          // the weights' type: "q4_k", "bf16" (else the file name's quantization or the config's dtype)
    QString architecture;
    qint64 fileBytes = 0;
    qint64 parameters = 0;       // 0 when unknown
    qint64 weightBytes = 0;
    qint64 cacheBytes = 0;       // KV cache and state at the context the scan used
    qint64 contextLength = 0;    // that context: the settings', at most the model's own
    QString problem;             // why it cannot be read or estimated ("" when fine)
    qint64 availableBytes = 0;   // free memory when it was scanned

    qint64 memoryBytes() const { return weightBytes + cacheBytes; }
};

class LocalModelsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Name, Architecture, Parameters, Type, Size, Memory, ColumnCount };
    enum Role { PathRole = Qt::UserRole + 1, FitsRole, ProblemRole };

    explicit LocalModelsModel(QObject* parent = nullptr);
    ~LocalModelsModel() override;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    // Scans again in the background (the settings' folders and context); emits scanFinished.
    void refresh();
    bool scanning() const { return watcher_.isRunning(); }
    const QList<LocalModelEntry>& entries() const { return entries_; }
    int rowOfPath(const QString& path) const;

    // The memory estimate shown, in words: "3.2 GB of 15.6 GB available: fits".
    static QString fitText(const LocalModelEntry& entry);
    static bool fits(const LocalModelEntry& entry);

    // The scan itself (any thread): models in the cache, `folders` and $OXINFER_MODEL_PATH.
    static QList<LocalModelEntry> scan(const QStringList& folders, qint64 contextLength, const QString& kvType);

signals:
    void scanFinished();

private:
    static void scanInto(QList<LocalModelEntry>& entries, const QStringList& folders, qint64 contextLength, const QString& kvType);

    QList<LocalModelEntry> entries_;
    QFutureWatcher<QList<LocalModelEntry>> watcher_;
    bool rescan_ = false;
};

}  // namespace studio
