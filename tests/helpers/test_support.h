#pragma once
// Shared test plumbing: running the real oxinfer binary, and checking that a call throws an
// oxinfer::Error whose message says what it should.

#include <oxinfer/error.h>

#include <QString>
#include <QStringList>
#include <QTest>

#include <functional>
#include <string>

namespace oxinfer::test {

struct ProcessResult {
    int exit_code = -1;
    QByteArray out;
    QByteArray err;
};

// Runs build/cli/oxinfer with `arguments` and `input` on its standard input, and waits (up to 120 s).
ProcessResult run_cli(const QStringList& arguments, const QByteArray& input = {});

// The message of the oxinfer::Error that `action` throws, or "" (and a test failure) if none.
std::string error_message(const std::function<void()>& action);

}  // namespace oxinfer::test

// Fails the test unless `action` throws an oxinfer::Error whose message contains `fragment`.
#define OXINFER_EXPECT_ERROR(action, fragment)                                                                       \
    do {                                                                                                             \
        const std::string oxinfer_message_ = ::oxinfer::test::error_message([&] { action; });                        \
        if (oxinfer_message_.find(fragment) == std::string::npos)                                                    \
            QFAIL(qPrintable(QStringLiteral("expected an error containing \"%1\", got \"%2\"")                     \
                                 .arg(QString::fromStdString(fragment), QString::fromStdString(oxinfer_message_)))); \
    } while (false)
