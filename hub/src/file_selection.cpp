#include <oxinfer/hub/file_selection.h>

#include <QRegularExpression>
#include <QSet>

#include <algorithm>

namespace oxinfer::hub {
namespace {

// fnmatch's translation: '*' anything (slashes too), '?' one character, [abc] / [!abc] sets.
QString glob_to_regex(const QString& pattern) {
    QString out = "^";
    for (qsizetype i = 0; i < pattern.size(); ++i) {
        const QChar c = pattern[i];
        if (c == '*') {
            out += ".*";
        } else if (c == '?') {
            out += '.';
        } else if (c == '[') {
            qsizetype j = i + 1;
            if (j < pattern.size() && pattern[j] == '!') ++j;
            if (j < pattern.size() && pattern[j] == ']') ++j;
            while (j < pattern.size() && pattern[j] != ']') ++j;
            if (j >= pattern.size()) {
                out += "\\[";
            } else {
                QString set = pattern.mid(i + 1, j - i - 1);
                set.replace("\\", "\\\\");
                if (set.startsWith('!')) set[0] = '^';
                out += '[' + set + ']';
                i = j;
            }
        } else {
            out += QRegularExpression::escape(QString(c));
        }
    }
    return out + "$";
}

QString base_name(const QString& path) { return path.section('/', -1); }
QString top_folder(const QString& path) { return path.contains('/') ? path.section('/', 0, 0) : QString(); }

bool is_weights(const QString& path) {
    const QString name = base_name(path).toLower();
    return name.endsWith(".safetensors") || (name.startsWith("pytorch_model") && name.endsWith(".bin")) ||
           (name.startsWith("diffusion_pytorch_model") && name.endsWith(".bin"));
}

// The files every model folder may carry beside its weights.
bool is_support_file(const QString& name) {
    static const QSet<QString> names = {
        "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model",
        "special_tokens_map.json", "added_tokens.json", "vocab.json", "vocab.txt", "merges.txt", "spiece.model",
        "sentencepiece.bpe.model", "chat_template.jinja", "chat_template.json", "preprocessor_config.json",
        "processor_config.json", "video_preprocessor_config.json", "feature_extractor_config.json",
        "normalizer.json", "model_index.json", "modules.json", "sentence_bert_config.json",
        "config_sentence_transformers.json", "scheduler_config.json"};
    const QString lower = name.toLower();
    return names.contains(lower) || lower.endsWith(".tiktoken") || lower.endsWith(".safetensors.index.json") ||
           lower.endsWith(".bin.index.json");
}

// "unet/diffusion_pytorch_model.fp16.safetensors" -> true: a precision variant of another file.
bool is_variant_of_existing(const QString& path, const QSet<QString>& all) {
    static const QRegularExpression variant(QStringLiteral(R"(^(.*)\.(fp16|bf16|fp32|non_ema|ema)\.(safetensors|bin)$)"));
    const auto match = variant.match(path);
    return match.hasMatch() && all.contains(match.captured(1) + "." + match.captured(3));
}

bool excluded_folder(const QString& path) {
    static const QStringList folders = {"onnx", "openvino", "flax", "tf", "coreml", "original", "mlx", "gguf"};
    const QStringList parts = path.split('/');
    for (qsizetype i = 0; i + 1 < parts.size(); ++i)
        if (folders.contains(parts[i].toLower())) return true;
    return false;
}

}  // namespace

bool glob_match(const QString& pattern, const QString& path) {
    QString full = pattern;
    if (full.endsWith('/')) full += '*';
    const QRegularExpression regex(glob_to_regex(full), QRegularExpression::DotMatchesEverythingOption);
    return regex.match(path).hasMatch();
}

QList<RepoFile> filter_files(const QList<RepoFile>& files, const QStringList& include) {
    if (include.isEmpty()) return files;
    QList<RepoFile> out;
    for (const RepoFile& file : files)
        for (const QString& pattern : include)
            if (glob_match(pattern, file.path)) {
                out << file;
                break;
            }
    return out;
}

std::vector<hf::GgufVariant> gguf_variants(const QList<RepoFile>& files) {
    std::vector<std::pair<std::string, uint64_t>> pairs;
    for (const RepoFile& file : files) pairs.emplace_back(file.path.toStdString(), file.size > 0 ? uint64_t(file.size) : 0);
    return hf::group_gguf_files(pairs);
}

bool is_gguf_repo(const QList<RepoFile>& files) {
    bool gguf = false;
    for (const RepoFile& file : files) {
        if (is_weights(file.path)) return false;
        gguf = gguf || file.path.endsWith(".gguf", Qt::CaseInsensitive);
    }
    return gguf;
}

QList<RepoFile> select_gguf_variant(const QList<RepoFile>& files, const hf::GgufVariant& variant) {
    QList<RepoFile> out;
    QList<RepoFile> projectors;
    for (const RepoFile& file : files) {
        if (std::find(variant.files.begin(), variant.files.end(), file.path.toStdString()) != variant.files.end()) out << file;
        else if (hf::is_gguf_projector(file.path.toStdString())) projectors << file;
    }
    if (!projectors.isEmpty()) {
        const auto rank = [](const RepoFile& file) {
            const QString name = base_name(file.path).toLower();
            if (name.contains("f16") && !name.contains("bf16")) return 0;
            if (name.contains("bf16")) return 1;
            if (name.contains("f32")) return 2;
            return 3;
        };
        std::stable_sort(projectors.begin(), projectors.end(),
                         [&](const RepoFile& a, const RepoFile& b) { return rank(a) < rank(b); });
        out << projectors.front();
    }
    return out;
}

QList<RepoFile> select_engine_files(const QList<RepoFile>& files) {
    QSet<QString> all;
    bool top_safetensors = false;
    bool diffusers = false;
    for (const RepoFile& file : files) {
        all.insert(file.path);
        if (!file.path.contains('/') && file.path.endsWith(".safetensors")) top_safetensors = true;
        if (file.path == QLatin1String("model_index.json")) diffusers = true;
    }
    QSet<QString> folders_with_safetensors;
    for (const RepoFile& file : files)
        if (file.path.endsWith(".safetensors")) folders_with_safetensors.insert(top_folder(file.path));

    QList<RepoFile> out;
    for (const RepoFile& file : files) {
        const QString& path = file.path;
        const QString name = base_name(path);
        const QString folder = top_folder(path);
        if (excluded_folder(path)) continue;
        const bool nested = path.contains('/');
        // Subfolders: sentence-transformers modules ("1_Pooling") and diffusers components.
        static const QRegularExpression module_folder(QStringLiteral(R"(^\d+_\w+$)"));
        if (nested && path.count('/') > 1) continue;
        if (nested && !diffusers && !module_folder.match(folder).hasMatch()) continue;
        if (is_support_file(name)) {
            if (name.endsWith(".bin.index.json") && folders_with_safetensors.contains(folder)) continue;
            out << file;
            continue;
        }
        if (!is_weights(path)) continue;
        if (diffusers && !nested) continue;  // single-file checkpoints beside the components
        if (path.endsWith(".bin") && folders_with_safetensors.contains(folder)) continue;
        if (is_variant_of_existing(path, all)) continue;
        // Mistral repos carry the same weights twice: consolidated.safetensors and the HF shards.
        if (!nested && top_safetensors && name.startsWith("consolidated")) {
            const bool others = std::any_of(files.begin(), files.end(), [](const RepoFile& other) {
                return !other.path.contains('/') && other.path.endsWith(".safetensors") &&
                       !base_name(other.path).startsWith("consolidated");
            });
            if (others) continue;
        }
        out << file;
    }
    return out;
}

qint64 total_size(const QList<RepoFile>& files) {
    qint64 total = 0;
    for (const RepoFile& file : files) total += std::max<qint64>(file.size, 0);
    return total;
}

}  // namespace oxinfer::hub
