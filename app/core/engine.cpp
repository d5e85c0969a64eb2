#include "core/engine.h"

#include <oxinfer/error.h>
#include <oxinfer/llm.h>

#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>

#include <algorithm>
#include <random>

namespace studio {

// ---- Values ---------------------------------------------------------------------------------------

QJsonObject SamplingSettings::toJson() const {
    return {{"temperature", temperature}, {"topP", topP},         {"topK", topK},          {"minP", minP},
            {"repeatPenalty", repeatPenalty}, {"maxTokens", maxTokens}, {"seed", double(seed)}};
}

SamplingSettings SamplingSettings::fromJson(const QJsonObject& json, const SamplingSettings& defaults) {
    SamplingSettings s = defaults;
    s.temperature = json.value("temperature").toDouble(s.temperature);
    s.topP = json.value("topP").toDouble(s.topP);
    s.topK = json.value("topK").toInt(s.topK);
    s.minP = json.value("minP").toDouble(s.minP);
    s.repeatPenalty = json.value("repeatPenalty").toDouble(s.repeatPenalty);
    s.maxTokens = json.value("maxTokens").toInt(s.maxTokens);
    s.seed = qint64(json.value("seed").toDouble(double(s.seed)));
    return s;
}

QJsonObject GenerationResult::toMeta(const QString& modelName) const {
    QJsonObject meta{{"model", modelName},
                     {"stop", stopReason},
                     {"promptTokens", promptTokens},
                     {"tokens", generatedTokens},
                     {"tokensPerSecond", tokensPerSecond},
                     {"promptTokensPerSecond", promptTokensPerSecond},
                     {"timeToFirstToken", timeToFirstToken},
                     {"contextUsed", contextUsed},
                     {"contextLength", contextLength}};
    if (!error.isEmpty()) meta.insert("error", error);
    return meta;
}

namespace {

std::optional<oxinfer::DType> kvType(const QString& name) {
    if (name == QLatin1String("f32")) return oxinfer::DType::F32;
    if (name == QLatin1String("f16")) return oxinfer::DType::F16;
    if (name == QLatin1String("bf16")) return oxinfer::DType::BF16;
    return std::nullopt;
}

oxinfer::SamplingParams samplingParams(const SamplingSettings& s) {
    oxinfer::SamplingParams p;
    p.temperature = float(s.temperature);
    p.top_k = s.topK;
    p.top_p = float(s.topP);
    p.min_p = float(s.minP);
    p.repetition_penalty = float(s.repeatPenalty);
    p.seed = s.seed >= 0 ? uint64_t(s.seed) : std::random_device{}();
    return p;
}

QString displayName(const QString& model) {
    const QFileInfo info(model);
    return info.exists() ? info.fileName() : model;
}

}  // namespace

// ---- Engine (UI thread) ---------------------------------------------------------------------------

Engine::Engine(QObject* parent) : QObject(parent), cancelledThrough_(std::make_shared<std::atomic<quint64>>(0)) {
    static const bool registered = [] {
        qRegisterMetaType<SamplingSettings>();
        qRegisterMetaType<LoadSettings>();
        qRegisterMetaType<ChatRequest>();
        qRegisterMetaType<ModelSummary>();
        qRegisterMetaType<GenerationUpdate>();
        qRegisterMetaType<GenerationResult>();
        return true;
    }();
    Q_UNUSED(registered);
    thread_.setObjectName(QStringLiteral("oxinfer engine"));
    worker_ = new EngineWorker(cancelledThrough_);
    worker_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    connect(this, &Engine::loadRequested, worker_, &EngineWorker::load, Qt::QueuedConnection);
    connect(this, &Engine::unloadRequested, worker_, &EngineWorker::unload, Qt::QueuedConnection);
    connect(this, &Engine::generateRequested, worker_, &EngineWorker::generate, Qt::QueuedConnection);

    connect(worker_, &EngineWorker::loaded, this, [this](const ModelSummary& model) {
        loaded_ = model;
        --pendingLoads_;
        updateState();
        emit modelLoaded(model);
    });
    connect(worker_, &EngineWorker::loadFailed, this, [this](const QString& model, const QString& error) {
        loaded_.reset();
        --pendingLoads_;
        updateState();
        emit modelLoadFailed(model, error);
    });
    connect(worker_, &EngineWorker::unloaded, this, [this] {
        loaded_.reset();
        emit modelUnloaded();
    });
    connect(worker_, &EngineWorker::update, this, &Engine::generationUpdate);
    connect(worker_, &EngineWorker::finished, this, [this](const GenerationResult& result) {
        --pendingGenerations_;
        updateState();
        emit generationFinished(result);
    });
    thread_.start();
}

Engine::~Engine() {
    stop();
    thread_.quit();
    thread_.wait();
}

void Engine::updateState() {
    const State state = pendingLoads_ > 0 ? State::Loading : pendingGenerations_ > 0 ? State::Generating : State::Idle;
    if (state_ == state) return;
    state_ = state;
    emit stateChanged(state);
}

void Engine::loadModel(const QString& model, const LoadSettings& settings) {
    ++pendingLoads_;
    updateState();
    emit loadRequested(model, settings);
}

void Engine::unloadModel() { emit unloadRequested(); }

quint64 Engine::generate(ChatRequest request) {
    request.id = nextRequest_++;
    ++pendingGenerations_;
    updateState();
    emit generateRequested(request);
    return request.id;
}

void Engine::stop() {
    cancelledThrough_->store(nextRequest_ - 1);
    worker_->cancelRunning();
}

// ---- EngineWorker (engine thread) -----------------------------------------------------------------

EngineWorker::EngineWorker(std::shared_ptr<std::atomic<quint64>> cancelledThrough)
    : cancelledThrough_(std::move(cancelledThrough)) {}

EngineWorker::~EngineWorker() = default;

void EngineWorker::cancelRunning() {
    const std::lock_guard lock(conversationMutex_);
    if (conversation_) conversation_->cancel();
}

void EngineWorker::load(const QString& model, const LoadSettings& settings) {
    {
        const std::lock_guard lock(conversationMutex_);
        conversation_.reset();
    }
    model_.reset();  // the old model's memory goes before the new one's comes
    oxinfer::LoadOptions options;
    options.threads = settings.threads;
    options.context_length = settings.contextLength;
    const auto kv = kvType(settings.kvType);
    if (!kv) {
        emit loadFailed(model, QStringLiteral("unknown KV cache type '%1' (f32, f16 or bf16)").arg(settings.kvType));
        return;
    }
    options.kv_type = *kv;
    try {
        model_ = oxinfer::Model::load(model.toStdString(), options);
        if (!model_->has_tokenizer()) throw oxinfer::Error(model.toStdString(), "has no tokenizer: it cannot chat");
        model_->chat_template();  // throws when the model ships no chat template
        const std::lock_guard lock(conversationMutex_);
        conversation_ = std::make_unique<oxinfer::Conversation>(*model_);
    } catch (const std::exception& error) {
        model_.reset();
        emit loadFailed(model, QString::fromStdString(error.what()));
        return;
    }
    ModelSummary summary;
    summary.model = model;
    summary.name = modelName_ = displayName(model);
    summary.architecture = QString::fromStdString(model_->config().architecture);
    summary.weightType = QString::fromStdString(model_->weight_type());
    summary.weightBytes = qint64(model_->weight_bytes());
    summary.contextLength = model_->context_length();
    summary.loadSeconds = model_->load_seconds();
    emit loaded(summary);
}

void EngineWorker::unload() {
    {
        const std::lock_guard lock(conversationMutex_);
        conversation_.reset();
    }
    model_.reset();
    emit unloaded();
}

void EngineWorker::generate(const ChatRequest& request) {
    GenerationResult result;
    result.requestId = request.id;
    const auto cancelled = [&] { return request.id <= cancelledThrough_->load(); };
    if (!conversation_) {
        result.stopReason = QStringLiteral("error");
        result.error = QStringLiteral("No model is loaded.");
        emit finished(result);
        return;
    }
    result.contextLength = model_->context_length();
    if (cancelled()) {
        result.stopReason = QStringLiteral("cancelled");
        emit finished(result);
        return;
    }

    nlohmann::ordered_json history = nlohmann::ordered_json::array();
    for (const ChatTurn& turn : request.history)
        history.push_back({{"role", turn.role.toStdString()}, {"content", turn.content.toStdString()}});
    conversation_->set_system_prompt(request.systemPrompt.toStdString());
    conversation_->set_messages(std::move(history));
    conversation_->set_thinking(request.thinking < 0 ? std::optional<bool>() : std::optional<bool>(request.thinking == 1));

    oxinfer::GenerateOptions options;
    options.sampling = samplingParams(request.sampling);
    options.max_tokens = request.sampling.maxTokens;

    // Text is gathered here and sent at most every kUpdateIntervalMs: a steady rate for the UI
    // however fast the model is. UTF-8 is decoded once whole characters have arrived (the engine
    // holds back partial ones).
    std::string pending;
    qint64 generated = 0;
    QElapsedTimer sinceUpdate, sinceFirst;
    sinceUpdate.start();
    const auto flush = [&] {
        GenerationUpdate update;
        update.requestId = request.id;
        update.text = QString::fromStdString(pending);
        update.generatedTokens = generated;
        update.tokensPerSecond = generated > 1 && sinceFirst.isValid() ? (generated - 1) / (sinceFirst.nsecsElapsed() * 1e-9) : 0;
        update.contextUsed = qint64(conversation_->session().tokens().size()) + 1;
        update.contextLength = result.contextLength;
        pending.clear();
        sinceUpdate.restart();
        emit this->update(update);
    };
    try {
        const oxinfer::GenerationResult out =
            conversation_->reply(request.userMessage.toStdString(), options, [&](int32_t, std::string_view text) {
                if (!sinceFirst.isValid()) sinceFirst.start();
                ++generated;
                pending += text;
                if (sinceUpdate.elapsed() >= Engine::kUpdateIntervalMs && !pending.empty()) flush();
                return !cancelled();
            });
        if (!pending.empty()) flush();
        result.text = QString::fromStdString(out.text);
        result.stopReason = out.stop == oxinfer::StopReason::Callback ? QStringLiteral("cancelled")
                                                                      : QString::fromUtf8(oxinfer::stop_reason_name(out.stop).data(),
                                                                                          qsizetype(oxinfer::stop_reason_name(out.stop).size()));
        result.promptTokens = out.stats.prompt_tokens;
        result.reusedPromptTokens = out.stats.reused_prompt_tokens;
        result.generatedTokens = out.stats.generated_tokens;
        result.promptTokensPerSecond = out.stats.prefill_tokens_per_second();
        result.tokensPerSecond = out.stats.decode_tokens_per_second();
        result.timeToFirstToken = out.stats.time_to_first_token;
        // A chat that does not fit is not evaluated: it would need all of its prompt. Otherwise
        // the cache and the last sampled token, which takes the last place when the context fills.
        result.contextUsed = out.stop == oxinfer::StopReason::ContextFull && out.tokens.empty()
                                 ? out.stats.prompt_tokens
                                 : std::min(result.contextLength, qint64(conversation_->session().tokens().size()) + (out.tokens.empty() ? 0 : 1));
    } catch (const std::exception& error) {
        result.stopReason = QStringLiteral("error");
        result.error = QString::fromStdString(error.what());
    }
    emit finished(result);
}

}  // namespace studio
