#pragma once
// The chats as a list model for the sidebar: one row per chat, newest change first, over a
// ChatStore owned elsewhere. The store sends no signals; whoever changes it calls refresh().

#include "core/chat_store.h"

#include <QAbstractListModel>

namespace studio {

class ChatListModel : public QAbstractListModel {
    Q_OBJECT

public:
    enum Role { IdRole = Qt::UserRole + 1, UpdatedRole, SystemPromptRole };

    explicit ChatListModel(ChatStore* store, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    // DisplayRole and EditRole: the title; ToolTipRole: the title and the time of the last change;
    // IdRole: the chat id; UpdatedRole: the last change (UTC); SystemPromptRole.
    QVariant data(const QModelIndex& index, int role) const override;
    // EditRole renames the chat in the store (an empty title is refused); the row then moves to the top.
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    QHash<int, QByteArray> roleNames() const override;

    // Shows only the chats whose title or messages contain search (case-insensitive); empty: all.
    void setFilter(const QString& search);
    QString filter() const;
    // Re-reads the chats from the store, as row insertions, removals, moves and changes, so that
    // views keep their selection and current item.
    void refresh();
    int rowOf(qint64 chatId) const;  // -1 when not shown
    qint64 idAt(int row) const;      // 0 when out of range

private:
    ChatStore* store_;
    QString filter_;
    QList<ChatInfo> rows_;
};

}  // namespace studio
