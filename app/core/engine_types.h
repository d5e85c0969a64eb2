#pragma once
// What the UI and the engine thread send each other (app/core/engine.h). Plain values, copied
// through queued signals.

#include <QJsonObject>
#include <QList>
#include <QMetaType>
#include <QString>

namespace studio {

// Sampling of one chat (stored with it as JSON) and the app's defaults.
struct SamplingSettings {
    double temperature = 0.7;
    double topP = 0.95;
    int topK = 40;
    double minP = 0.05;
    double repeatPenalty = 1.0;
    int maxTokens = 2048;
    qint64 seed = -1;  // -1: a new random seed for each reply

    QJsonObject toJson() const;
    // Keys missing from `json` keep the values of `defaults`.
    static SamplingSettings fromJson(const QJsonObject& json, const SamplingSettings& defaults);
    static SamplingSettings fromJson(const QJsonObject& json) { return fromJson(json, SamplingSettings()); }
    bool operator==(const SamplingSettings&) const = default;
};

// How a model is loaded.
struct LoadSettings {
    int threads = 0;             // 0: the physical cores
    qint64 contextLength = 0;    // 0: the model's own
    QString kvType = QStringLiteral("f32");  // f32, f16, bf16
    bool operator==(const LoadSettings&) const = default;
};

struct ChatTurn {
    QString role;  // "user" or "assistant"
    QString content;
};

struct ChatRequest {
    quint64 id = 0;
    QString systemPrompt;
    QList<ChatTurn> history;  // the branch before the new user message
    QString userMessage;
    SamplingSettings sampling;
    int thinking = -1;  // -1: the template's default; 0 off; 1 on
};

struct ModelSummary {
    QString model;         // as asked (path or repo id)
    QString name;          // shown: the folder or file name
    QString architecture;
    QString weightType;
    qint64 weightBytes = 0;
    qint64 contextLength = 0;
    double loadSeconds = 0;
};

// A chunk of streamed text (coalesced on the engine thread) and where the generation is.
struct GenerationUpdate {
    quint64 requestId = 0;
    QString text;
    qint64 generatedTokens = 0;
    double tokensPerSecond = 0;
    qint64 contextUsed = 0;
    qint64 contextLength = 0;
};

struct GenerationResult {
    quint64 requestId = 0;
    QString text;        // the whole reply
    QString stopReason;  // "stop_token", "max_tokens", "context_full", "cancelled", ... ; "error" with `error`
    QString error;
    qint64 promptTokens = 0;
    qint64 reusedPromptTokens = 0;
    qint64 generatedTokens = 0;
    double promptTokensPerSecond = 0;
    double tokensPerSecond = 0;
    double timeToFirstToken = 0;
    qint64 contextUsed = 0;
    qint64 contextLength = 0;

    // The statistics kept with an assistant message (ChatMessage::meta).
    QJsonObject toMeta(const QString& modelName) const;
};

}  // namespace studio

Q_DECLARE_METATYPE(studio::SamplingSettings)
Q_DECLARE_METATYPE(studio::LoadSettings)
Q_DECLARE_METATYPE(studio::ChatRequest)
Q_DECLARE_METATYPE(studio::ModelSummary)
Q_DECLARE_METATYPE(studio::GenerationUpdate)
Q_DECLARE_METATYPE(studio::GenerationResult)
