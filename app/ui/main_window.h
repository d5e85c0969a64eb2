#pragma once
// The main window of Oxinfer Studio. In this release it holds a welcome page and a status bar
// that says which machine the engine runs on; the task panes arrive with the engine's models.

#include <QIcon>
#include <QMainWindow>
#include <QSize>
#include <QString>

class QLabel;

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    explicit MainWindow(QWidget* parent = nullptr);

    // The size the window opens at.
    static QSize defaultSize() { return {1200, 780}; }

    // The application's mark, drawn in code (no image plugins needed) at the usual icon sizes.
    static QIcon appIcon();

    // What the status bar's "platformLabel" shows: CPU, cores/threads, SIMD features, RAM.
    QString platformLine() const;

private:
    QWidget* createWelcomePage();
    QLabel* platformLabel_ = nullptr;
};
