#pragma once
// The engine thread. One QThread owns the oxinfer engine: it loads models and generates, and
// the UI thread never waits for it. Requests go in as queued signals; streamed text comes back
// coalesced to a steady rate (kUpdateIntervalMs), with progress and errors. stop() is the one
// direct call: an abort flag the generation checks before each token.

#include "core/engine_types.h"

#include <QObject>
#include <QThread>

#include <atomic>
#include <mutex>
#include <memory>
#include <optional>

namespace oxinfer {
class Model;
class Conversation;
}

namespace studio {

class EngineWorker;

class Engine : public QObject {
    Q_OBJECT
public:
    enum class State { Idle, Loading, Generating };
    Q_ENUM(State)

    static constexpr int kUpdateIntervalMs = 40;  // at most 25 text updates a second

    explicit Engine(QObject* parent = nullptr);
    ~Engine() override;  // stops a generation and waits for the thread

    State state() const { return state_; }
    bool hasModel() const { return loaded_.has_value(); }
    const std::optional<ModelSummary>& model() const { return loaded_; }

    // Each returns at once; the answer comes as a signal. Requests run in order; state() says
    // what the engine thread has yet to finish (a load before a generation).
    void loadModel(const QString& model, const LoadSettings& settings);
    void unloadModel();
    // Returns the request id the updates and the result carry.
    quint64 generate(ChatRequest request);
    // From the UI thread: every generation asked for so far ends before its next token, or its
    // next 512 prompt tokens (result stopReason "cancelled").
    void stop();

signals:
    void stateChanged(studio::Engine::State state);
    void modelLoaded(const studio::ModelSummary& model);
    void modelLoadFailed(const QString& model, const QString& error);
    void modelUnloaded();
    void generationUpdate(const studio::GenerationUpdate& update);
    void generationFinished(const studio::GenerationResult& result);

    // To the worker (queued).
    void loadRequested(const QString& model, const studio::LoadSettings& settings);
    void unloadRequested();
    void generateRequested(const studio::ChatRequest& request);

private:

    void updateState();

    QThread thread_;
    EngineWorker* worker_ = nullptr;
    State state_ = State::Idle;
    int pendingLoads_ = 0;
    int pendingGenerations_ = 0;
    std::optional<ModelSummary> loaded_;
    quint64 nextRequest_ = 1;
    // Requests up to this id are cancelled: shared with the worker, so that stop() also reaches a
    // request still waiting in the queue.
    std::shared_ptr<std::atomic<quint64>> cancelledThrough_;
};

// Lives on the engine thread.
class EngineWorker : public QObject {
    Q_OBJECT
public:
    explicit EngineWorker(std::shared_ptr<std::atomic<quint64>> cancelledThrough);
    ~EngineWorker() override;
    // Any thread: stops the generation running now, in its prompt too.
    void cancelRunning();

public slots:
    void load(const QString& model, const studio::LoadSettings& settings);
    void unload();
    void generate(const studio::ChatRequest& request);

signals:
    void loaded(const studio::ModelSummary& model);
    void loadFailed(const QString& model, const QString& error);
    void unloaded();
    void update(const studio::GenerationUpdate& update);
    void finished(const studio::GenerationResult& result);

private:
    std::unique_ptr<oxinfer::Conversation> conversation_;
    std::unique_ptr<oxinfer::Model> model_;
    std::mutex conversationMutex_;  // conversation_ changes (engine thread) vs cancelRunning (any thread)
    QString modelName_;
    std::shared_ptr<std::atomic<quint64>> cancelledThrough_;
};

}  // namespace studio
