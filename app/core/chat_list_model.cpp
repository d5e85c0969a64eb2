// The sidebar's chat list: reads the store and turns each refresh into the smallest row changes.

#include "core/chat_list_model.h"

#include <QLocale>
#include <QSet>

namespace studio {

ChatListModel::ChatListModel(ChatStore* store, QObject* parent) : QAbstractListModel(parent), store_(store) {
    rows_ = store_->chats();
}

int ChatListModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }

QVariant ChatListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const ChatInfo& chat = rows_.at(index.row());
    switch (role) {
    case Qt::DisplayRole:
    case Qt::EditRole:
        return chat.title;
    case Qt::ToolTipRole:
        return QStringLiteral("%1\n%2").arg(chat.title, QLocale().toString(chat.updated.toLocalTime(), QLocale::ShortFormat));
    case IdRole:
        return chat.id;
    case UpdatedRole:
        return chat.updated;
    case SystemPromptRole:
        return chat.systemPrompt;
    default:
        return {};
    }
}

bool ChatListModel::setData(const QModelIndex& index, const QVariant& value, int role) {
    if (role != Qt::EditRole || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return false;
    const QString title = value.toString().trimmed();
    if (title.isEmpty()) return false;
    if (title == rows_.at(index.row()).title) return true;
    if (!store_->renameChat(rows_.at(index.row()).id, title)) return false;
    refresh();
    return true;
}

Qt::ItemFlags ChatListModel::flags(const QModelIndex& index) const {
    const Qt::ItemFlags base = QAbstractListModel::flags(index);
    return index.isValid() ? base | Qt::ItemIsEditable : base;
}

QHash<int, QByteArray> ChatListModel::roleNames() const {
    QHash<int, QByteArray> names = QAbstractListModel::roleNames();
    names.insert(IdRole, "chatId");
    names.insert(UpdatedRole, "updated");
    names.insert(SystemPromptRole, "systemPrompt");
    return names;
}

void ChatListModel::setFilter(const QString& search) {
    if (search == filter_) return;
    filter_ = search;
    refresh();
}

QString ChatListModel::filter() const { return filter_; }

void ChatListModel::refresh() {
    const QList<ChatInfo> fresh = store_->chats(filter_);

    // Drop the chats no longer shown, bottom up so that the rows still to visit keep their numbers.
    QSet<qint64> freshIds;
    for (const ChatInfo& chat : fresh) freshIds.insert(chat.id);
    for (int row = int(rows_.size()) - 1; row >= 0; --row) {
        if (freshIds.contains(rows_.at(row).id)) continue;
        beginRemoveRows({}, row, row);
        rows_.removeAt(row);
        endRemoveRows();
    }

    // Then put each row in place from the top: rows above `row` already match `fresh`, so a chat
    // shown before is found at `row` or below it.
    for (int row = 0; row < fresh.size(); ++row) {
        const int shownAt = rowOf(fresh.at(row).id);
        if (shownAt == -1) {
            beginInsertRows({}, row, row);
            rows_.insert(row, fresh.at(row));
            endInsertRows();
            continue;
        }
        if (shownAt != row) {
            beginMoveRows({}, shownAt, shownAt, {}, row);
            rows_.move(shownAt, row);
            endMoveRows();
        }
        if (rows_.at(row) != fresh.at(row)) {
            rows_[row] = fresh.at(row);
            emit dataChanged(index(row), index(row));
        }
    }
}

int ChatListModel::rowOf(qint64 chatId) const {
    for (int row = 0; row < rows_.size(); ++row)
        if (rows_.at(row).id == chatId) return row;
    return -1;
}

qint64 ChatListModel::idAt(int row) const { return row >= 0 && row < rows_.size() ? rows_.at(row).id : 0; }

}  // namespace studio
