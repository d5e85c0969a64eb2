#include "core/recommended_models.h"

namespace studio {

QList<RecommendedModel> recommendedModels(quint64 availableBytes) {
    constexpr qint64 GB = 1'000'000'000;
    // Headroom for the KV cache at a few thousand tokens, the app and the system.
    constexpr qint64 kHeadroom = 1 * GB;
    static const QList<RecommendedModel> all = {
        {QStringLiteral("Llama 3.2 1B Instruct"), QStringLiteral("bartowski/Llama-3.2-1B-Instruct-GGUF"), QStringLiteral("Q4_K_M"),
         qint64(0.81 * GB), QStringLiteral("Meta's small model: quick answers on any computer.")},
        {QStringLiteral("Qwen3.5 0.8B"), QStringLiteral("unsloth/Qwen3.5-0.8B-GGUF"), QStringLiteral("Q8_0"), qint64(0.87 * GB),
         QStringLiteral("Tiny and fast, thinks step by step when asked; many languages.")},
        {QStringLiteral("Gemma 4 E2B"), QStringLiteral("unsloth/gemma-4-E2B-it-GGUF"), QStringLiteral("Q4_K_M"), qint64(3.1 * GB),
         QStringLiteral("Google's efficient model: good writing and reasoning for its size.")},
        {QStringLiteral("Qwen3.5 4B"), QStringLiteral("unsloth/Qwen3.5-4B-GGUF"), QStringLiteral("Q4_K_M"), qint64(2.7 * GB),
         QStringLiteral("Noticeably smarter, still comfortable on 8 GB of memory.")},
    };
    QList<RecommendedModel> fitting;
    for (const RecommendedModel& model : all)
        if (quint64(model.bytes + kHeadroom) <= availableBytes) fitting.append(model);
    std::sort(fitting.begin(), fitting.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
    return fitting;
}

}  // namespace studio
