#pragma once
// The models the app suggests on first run: small chat models that run well on a CPU, each as one
// GGUF quantization on the Hugging Face hub, kept to those that fit this machine's memory.

#include <QList>
#include <QString>

namespace studio {

struct RecommendedModel {
    QString title;    // "Qwen3.5 0.8B"
    QString repo;     // "unsloth/Qwen3.5-0.8B-GGUF"
    QString variant;  // "Q8_0"
    qint64 bytes = 0; // the download, roughly (the hub's answer is what counts)
    QString note;     // one line: why this one
};

// Those that fit in `availableBytes` with room for a context of a few thousand tokens, the
// smallest first.
QList<RecommendedModel> recommendedModels(quint64 availableBytes);

}  // namespace studio
