// The engine thread (app/core/engine.h): loading, streaming, stop, errors, and a UI thread that
// keeps answering while the engine works.

#include "core/engine.h"

#include "chat_test_model.h"
#include "event_loop_probe.h"

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>
#include <QtTest>

using studio::Engine;

namespace {


studio::ChatRequest request(const QString& text, int maxTokens) {
    studio::ChatRequest r;
    r.systemPrompt = QStringLiteral("You are terse.");
    r.userMessage = text;
    r.sampling.temperature = 0;  // greedy: the same reply every time
    r.sampling.maxTokens = maxTokens;
    return r;
}

}  // namespace

class TestEngine : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        model_ = QString::fromStdString(oxinfer::test::write_chat_test_model(std::filesystem::path(dir_.path().toStdString()) / "chat-model", 8).string());
    }

    void loadsOnTheEngineThreadAndKeepsTheUiResponsive() {
        Engine engine;
        QSignalSpy loaded(&engine, &Engine::modelLoaded);
        oxinfer::test::EventLoopProbe probe;
        engine.loadModel(model_, {});
        QCOMPARE(engine.state(), Engine::State::Loading);
        QVERIFY(loaded.wait(30000));
        QCOMPARE(engine.state(), Engine::State::Idle);
        const auto summary = loaded.first().first().value<studio::ModelSummary>();
        QCOMPARE(summary.architecture, QStringLiteral("Qwen3ForCausalLM"));
        QCOMPARE(summary.name, QStringLiteral("chat-model"));
        QCOMPARE(summary.contextLength, qint64(4096));
        QCOMPARE(summary.weightType, QStringLiteral("bf16"));

        // A long reply: the engine works for a while, the UI thread keeps answering within 50 ms.
        QSignalSpy updates(&engine, &Engine::generationUpdate);
        QSignalSpy finished(&engine, &Engine::generationFinished);
        QElapsedTimer generation;
        generation.start();
        const quint64 id = engine.generate(request(QStringLiteral("Tell me a story"), 120));
        QCOMPARE(engine.state(), Engine::State::Generating);
        QVERIFY(finished.wait(120000));
        const qint64 generationMs = generation.elapsed();
        QVERIFY2(generationMs > 300, "the reply must take long enough for the measurement to mean something");
        QVERIFY2(probe.worstGapMs() < 50, qPrintable(QStringLiteral("the UI waited %1 ms").arg(probe.worstGapMs())));

        const auto result = finished.first().first().value<studio::GenerationResult>();
        QCOMPARE(result.requestId, id);
        QCOMPARE(result.stopReason, QStringLiteral("max_tokens"));
        QCOMPARE(result.generatedTokens, qint64(120));
        QVERIFY(result.tokensPerSecond > 0);
        QVERIFY(result.contextUsed > result.generatedTokens);
        // Streamed chunks: coalesced (fewer updates than tokens), together the whole reply.
        QString streamed;
        for (const auto& args : updates) {
            const auto update = args.first().value<studio::GenerationUpdate>();
            QCOMPARE(update.requestId, id);
            streamed += update.text;
        }
        QCOMPARE(streamed, result.text);
        QVERIFY(updates.size() > 1);
        QVERIFY2(updates.size() < 120, qPrintable(QStringLiteral("%1 updates for 120 tokens").arg(updates.size())));
        // At most one update per interval, give or take the timer's grain.
        QVERIFY(updates.size() <= generationMs / Engine::kUpdateIntervalMs + 2);
    }

    void stopEndsTheReplyWithinAToken() {
        Engine engine;
        QSignalSpy loaded(&engine, &Engine::modelLoaded);
        engine.loadModel(model_, {});
        QVERIFY(loaded.wait(30000));
        QSignalSpy updates(&engine, &Engine::generationUpdate);
        QSignalSpy finished(&engine, &Engine::generationFinished);
        engine.generate(request(QStringLiteral("Go on"), 2000));
        QVERIFY(updates.wait(30000));
        const qint64 tokensAtStop = updates.last().first().value<studio::GenerationUpdate>().generatedTokens;
        engine.stop();
        QVERIFY(finished.wait(10000));
        const auto result = finished.first().first().value<studio::GenerationResult>();
        QCOMPARE(result.stopReason, QStringLiteral("cancelled"));
        // Tokens that were already on their way when stop() came, plus at most the one in progress.
        QVERIFY2(result.generatedTokens < tokensAtStop + 10,
                 qPrintable(QStringLiteral("%1 tokens, %2 at stop").arg(result.generatedTokens).arg(tokensAtStop)));

        // A stop before the request starts also counts; the next request runs normally.
        engine.generate(request(QStringLiteral("again"), 5));
        engine.stop();
        QVERIFY(finished.wait(10000));
        QCOMPARE(finished.last().first().value<studio::GenerationResult>().stopReason, QStringLiteral("cancelled"));
        engine.generate(request(QStringLiteral("again"), 5));
        QVERIFY(finished.wait(10000));
        QCOMPARE(finished.last().first().value<studio::GenerationResult>().generatedTokens, qint64(5));
    }

    // Stop also ends a long prompt (between its 512-token pieces), before any token.
    void stopEndsALongPrompt() {
        Engine engine;
        QSignalSpy loaded(&engine, &Engine::modelLoaded);
        engine.loadModel(model_, {});
        QVERIFY(loaded.wait(30000));
        QSignalSpy finished(&engine, &Engine::generationFinished);
        QStringList words;
        for (int i = 0; i < 700; ++i) words << QStringLiteral("word%1").arg(i % 10);
        engine.generate(request(words.join(QLatin1Char(' ')), 20));  // thousands of tokens with this vocabulary
        QTest::qWait(100);
        engine.stop();
        QVERIFY(finished.wait(30000));
        const auto result = finished.first().first().value<studio::GenerationResult>();
        QCOMPARE(result.stopReason, QStringLiteral("cancelled"));
        QCOMPARE(result.generatedTokens, qint64(0));
    }

    // A chat longer than the context is reported as a full context, not as an engine error.
    void chatLongerThanTheContextIsContextFull() {
        Engine engine;
        QSignalSpy loaded(&engine, &Engine::modelLoaded);
        studio::LoadSettings small;
        small.contextLength = 64;
        engine.loadModel(model_, small);
        QVERIFY(loaded.wait(30000));
        QSignalSpy finished(&engine, &Engine::generationFinished);
        engine.generate(request(QString(QStringLiteral("many words ")).repeated(40), 5));
        QVERIFY(finished.wait(30000));
        const auto result = finished.first().first().value<studio::GenerationResult>();
        QCOMPARE(result.stopReason, QStringLiteral("context_full"));
        QVERIFY(result.contextUsed >= 64);
        QCOMPARE(result.contextLength, qint64(64));
    }

    // Requests run in order; the state says what is still to come.
    void stateFollowsPendingRequests() {
        Engine engine;
        QSignalSpy loaded(&engine, &Engine::modelLoaded);
        QSignalSpy finished(&engine, &Engine::generationFinished);
        engine.loadModel(model_, {});
        engine.generate(request(QStringLiteral("hi"), 3));  // queued behind the load
        QCOMPARE(engine.state(), Engine::State::Loading);
        QVERIFY(loaded.wait(30000));
        QVERIFY(engine.state() != Engine::State::Loading);
        QVERIFY(finished.size() == 1 || finished.wait(30000));
        QCOMPARE(engine.state(), Engine::State::Idle);
        QCOMPARE(finished.first().first().value<studio::GenerationResult>().generatedTokens, qint64(3));
    }

    // The history of a branch is what the model sees: the same history gives the same reply.
    void historyIsTheBranch() {
        Engine engine;
        QSignalSpy loaded(&engine, &Engine::modelLoaded);
        QSignalSpy finished(&engine, &Engine::generationFinished);
        engine.loadModel(model_, {});
        QVERIFY(loaded.wait(30000));
        auto r = request(QStringLiteral("second"), 8);
        r.history = {{QStringLiteral("user"), QStringLiteral("first")}, {QStringLiteral("assistant"), QStringLiteral("ok")}};
        engine.generate(r);
        QVERIFY(finished.wait(30000));
        engine.generate(request(QStringLiteral("second"), 8));  // another branch: no history
        QVERIFY(finished.wait(30000));
        engine.generate(r);
        QVERIFY(finished.wait(30000));
        const auto first = finished.at(0).first().value<studio::GenerationResult>();
        const auto other = finished.at(1).first().value<studio::GenerationResult>();
        const auto again = finished.at(2).first().value<studio::GenerationResult>();
        QCOMPARE(again.text, first.text);
        QVERIFY(again.reusedPromptTokens > 0);
        QVERIFY(other.promptTokens < first.promptTokens);
    }

    void errorsAreReported() {
        Engine engine;
        QSignalSpy failed(&engine, &Engine::modelLoadFailed);
        engine.loadModel(dir_.filePath(QStringLiteral("missing-model")), {});
        QVERIFY(failed.wait(10000));
        QVERIFY2(failed.first().at(1).toString().contains(QStringLiteral("missing-model")), qPrintable(failed.first().at(1).toString()));
        QVERIFY(!engine.hasModel());

        QSignalSpy finished(&engine, &Engine::generationFinished);
        engine.generate(request(QStringLiteral("hi"), 4));
        QVERIFY(finished.wait(10000));
        const auto result = finished.first().first().value<studio::GenerationResult>();
        QCOMPARE(result.stopReason, QStringLiteral("error"));
        QVERIFY(!result.error.isEmpty());

        studio::LoadSettings bad;
        bad.kvType = QStringLiteral("q3");
        engine.loadModel(model_, bad);
        QVERIFY(failed.wait(10000));
        QVERIFY(failed.last().at(1).toString().contains(QStringLiteral("q3")));
    }

    void samplingSettingsRoundTrip() {
        studio::SamplingSettings s;
        s.temperature = 0.3;
        s.topK = 7;
        s.seed = 42;
        QCOMPARE(studio::SamplingSettings::fromJson(s.toJson()), s);
        // Missing keys take the defaults given.
        studio::SamplingSettings defaults;
        defaults.maxTokens = 99;
        QCOMPARE(studio::SamplingSettings::fromJson({{"topK", 3}}, defaults).maxTokens, 99);
    }

private:
    QTemporaryDir dir_;
    QString model_;
};

QTEST_MAIN(TestEngine)
#include "test_engine.moc"
