#include "test_support.h"

#include <QProcess>

namespace oxinfer::test {

ProcessResult run_cli(const QStringList& arguments, const QByteArray& input) {
    QProcess process;
    process.start(QStringLiteral(OXINFER_CLI_PATH), arguments);
    process.write(input);
    process.closeWriteChannel();
    ProcessResult result;
    if (!process.waitForFinished(120000)) {
        process.kill();
        process.waitForFinished();
        result.err = "timed out";
        return result;
    }
    result.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    result.out = process.readAllStandardOutput();
    result.err = process.readAllStandardError();
    return result;
}

std::string error_message(const std::function<void()>& action) {
    try {
        action();
    } catch (const oxinfer::Error& error) {
        return error.what();
    } catch (const std::exception& error) {
        return std::string("(not an oxinfer::Error) ") + error.what();
    }
    return "(no error thrown)";
}

}  // namespace oxinfer::test
