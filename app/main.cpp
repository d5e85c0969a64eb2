// oxinfer-studio: opens the main window, or with --screenshot FILE [--pane NAME] renders a pane to
// a PNG and exits.

#include "core/app_settings.h"
#include "ui/main_window.h"
#include "ui/settings_pane.h"

#include "core/engine.h"
#include "core/local_models_model.h"
#include "ui/chat_pane.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QImage>
#include <QPixmap>
#include <QString>
#include <QTextStream>

namespace {

// Renders the window without showing it on screen (also works with QT_QPA_PLATFORM=offscreen).
int screenshot(MainWindow& window, const QString& file) {
    window.setAttribute(Qt::WA_DontShowOnScreen);
    window.resize(MainWindow::defaultSize());
    window.show();  // not mapped on screen, but lets the layouts and style settle
    // The model list is scanned in the background: wait for it (headers only: seconds at most).
    QElapsedTimer scan;
    scan.start();
    // So is a model given with --model.
    while ((window.localModels()->scanning() || window.engine()->state() == studio::Engine::State::Loading) && scan.elapsed() < 60000)
        QApplication::processEvents(QEventLoop::AllEvents, 50);
    QApplication::processEvents();
    QApplication::processEvents();
    const QImage image = window.grab().toImage();
    window.close();
    if (image.isNull() || !image.save(file, "PNG")) {
        QTextStream(stderr) << "oxinfer-studio: error: " << file << ": cannot write screenshot\n";
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("Oxinfer Studio"));
    QApplication::setOrganizationName(QStringLiteral("oxinfer"));
    QApplication::setApplicationVersion(QStringLiteral(OXINFER_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("oxinfer-studio"));
    QApplication::setWindowIcon(MainWindow::appIcon());

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Oxinfer Studio: chat, transcription, speech, image generation and document search with "
                       "local models, on your own computer."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption screenshotOption(
        QStringLiteral("screenshot"), QStringLiteral("Render the main window to FILE (PNG) and exit; shows nothing."),
        QStringLiteral("FILE"));
    parser.addOption(screenshotOption);
    const QCommandLineOption paneOption(QStringLiteral("pane"),
                                        QStringLiteral("The pane to open: %1.").arg(MainWindow::paneNames().join(QStringLiteral(", "))),
                                        QStringLiteral("NAME"), QStringLiteral("chat"));
    parser.addOption(paneOption);
    const QCommandLineOption modelOption(QStringLiteral("model"), QStringLiteral("Load MODEL (a folder, .gguf file or repo id) at start."),
                                         QStringLiteral("MODEL"));
    parser.addOption(modelOption);
    const QCommandLineOption importOption(QStringLiteral("import-chat"), QStringLiteral("Add the chat exported as JSON in FILE and open it."),
                                          QStringLiteral("FILE"));
    parser.addOption(importOption);
    parser.process(app);  // handles --help and --version, and exits on unknown options

    studio::applyTheme(studio::AppSettings::theme());
    MainWindow window;
    if (parser.isSet(paneOption) && !window.showPane(parser.value(paneOption))) {
        QTextStream(stderr) << "oxinfer-studio: error: unknown pane '" << parser.value(paneOption) << "' ("
                            << MainWindow::paneNames().join(QStringLiteral(", ")) << ")\n";
        return 2;
    }
    for (const QString& file : parser.values(importOption)) {
        QString error;
        if (!window.chatPane()->importChat(file, &error)) {
            QTextStream(stderr) << "oxinfer-studio: error: " << error << "\n";
            return 1;
        }
    }
    if (parser.isSet(modelOption)) window.engine()->loadModel(parser.value(modelOption), studio::AppSettings::loadSettings());
    if (parser.isSet(screenshotOption)) return screenshot(window, parser.value(screenshotOption));

    window.show();
    return QApplication::exec();
}
