// GGUF vocabularies (tokenizer.ggml.*) turned into the same pipeline objects as tokenizer.json:
//   gpt2  -> byte-level BPE, the pre-tokenizer regex named by tokenizer.ggml.pre (llama.cpp's names)
//   llama -> SentencePiece-style BPE with byte fallback (merges from tokenizer.ggml.merges, or
//            derived from the scores as transformers' SentencePieceExtractor does)
//   bert  -> WordPiece (GGUF spells word starts with U+2581 and continuations bare)
//   t5    -> Unigram with the precompiled charsmap
// Token types: 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte.

#include "components.h"

#include <oxinfer/error.h>

#include <algorithm>
#include <map>

namespace oxinfer::tokenizer {
namespace {

constexpr const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt2NoTail = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen35 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreType {
    std::vector<std::string> regexes;  // applied in turn, matches and the rest both kept
    bool ignore_merges = false;
};

// llama.cpp's pre-tokenizer names (tokenizer.ggml.pre) and the regexes of the tokenizer.json files
// they were taken from.
std::optional<PreType> pre_type(const std::string& name) {
    static const std::map<std::string, PreType> table = [] {
        std::map<std::string, PreType> t;
        const PreType llama3{{kLlama3}, true};
        for (const char* n : {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "dbrx", "smaug-bpe",
                              "chatglm-bpe"})
            t[n] = llama3;
        t["chatglm-bpe"].ignore_merges = false;
        for (const char* n : {"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2", "hunyuan", "grok-2", "solar-open"}) t[n] = PreType{{kQwen2}, false};
        t["qwen35"] = PreType{{kQwen35}, false};
        for (const char* n : {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code",
                              "roberta-bpe", "mpt", "olmo", "jais", "trillion", "granite-docling", "a.x-4.0", "mellum"})
            t[n] = PreType{{kGpt2}, false};
        for (const char* n : {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"})
            t[n] = PreType{{R"(\p{N})", kGpt2NoTail}, false};
        t["falcon"] = PreType{{R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2NoTail, "[0-9][0-9][0-9]"}, false};
        t["default"] = PreType{{R"([\p{P}\$\+<=>\^~\|]+)", kGpt2NoTail, R"(\p{N}+)", "[0-9][0-9][0-9]"}, false};
        t["deepseek-coder"] = PreType{{"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", R"(\p{N})"}, false};
        t["deepseek-v3"] = PreType{{R"(\p{N}{1,3})", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
                                    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
                                   false};
        for (const char* n : {"poro-chat", "bloom", "gpt3-finnish"}) t[n] = PreType{{" ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+"}, false};
        t["viking"] = PreType{{" ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+", R"(\p{N})"}, false};
        for (const char* n : {"gpt-4o", "llama4", "minimax-m2"}) t[n] = PreType{{kGpt4o}, false};
        t["tekken"] = PreType{{kTekken}, true};
        t["seed-coder"] = PreType{{R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"}, false};
        t["bailingmoe"] = PreType{{R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"}, false};
        t["superbpe"] = PreType{{R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"}, false};
        return t;
    }();
    const auto it = table.find(name);
    if (it == table.end()) return std::nullopt;
    return it->second;
}

enum TokenType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

std::vector<std::string> string_list(const json& metadata, const char* key, bool required) {
    const json& value = json_field(metadata, key);
    if (value.is_null()) {
        if (required) throw ConfigError(std::string(key) + " is missing");
        return {};
    }
    if (!value.is_array()) throw ConfigError(std::string(key) + " must be an array of strings");
    std::vector<std::string> out;
    out.reserve(value.size());
    for (const json& item : value) {
        if (!item.is_string()) throw ConfigError(std::string(key) + " must be an array of strings");
        out.push_back(item.get<std::string>());
    }
    return out;
}

std::optional<int64_t> int_value(const json& metadata, const char* key) {
    const json& value = json_field(metadata, key);
    if (value.is_number_integer()) return value.get<int64_t>();
    return std::nullopt;
}

std::optional<bool> bool_value(const json& metadata, const char* key) {
    const json& value = json_field(metadata, key);
    if (value.is_boolean()) return value.get<bool>();
    return std::nullopt;
}

json split_regex(const std::string& regex) {
    return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
}

json template_processing(const std::vector<std::string>& tokens, std::optional<int64_t> first, std::optional<int64_t> last) {
    json single = json::array();
    json specials = json::object();
    auto special = [&](int64_t id) {
        const std::string& name = tokens.at(static_cast<size_t>(id));
        single.push_back({{"SpecialToken", {{"id", name}, {"type_id", 0}}}});
        specials[name] = {{"id", name}, {"ids", {id}}, {"tokens", {name}}};
    };
    if (first) special(*first);
    single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    if (last) special(*last);
    return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", json::array()}, {"special_tokens", specials}};
}

// transformers' SentencePieceExtractor: every split of a piece into two pieces of the vocabulary
// is a merge; merges are ordered by the score of the merged piece (highest first), then by the
// lengths of the left and right parts (longest first), ties kept in vocabulary order.
std::vector<std::pair<std::string, std::string>> merges_from_scores(const std::vector<std::string>& tokens, const std::vector<float>& scores,
                                                                    const std::vector<int32_t>& types) {
    StringIdMap vocab;
    for (size_t id = 0; id < tokens.size(); ++id) vocab[tokens[id]] = static_cast<int32_t>(id);
    struct Merge {
        std::string left, right;
        float score;
        size_t left_chars, right_chars;
        int32_t left_id, right_id;
    };
    std::vector<Merge> merges;
    std::vector<Merge> local;
    for (size_t id = 0; id < tokens.size(); ++id) {
        const std::string& piece = tokens[id];
        local.clear();
        size_t chars_left = 0;
        const size_t total_chars = utf8_count(piece);
        for (size_t pos = 0; pos < piece.size();) {
            pos += utf8_length(static_cast<unsigned char>(piece[pos]));
            ++chars_left;
            if (pos >= piece.size()) break;
            const std::string_view left = std::string_view(piece).substr(0, pos), right = std::string_view(piece).substr(pos);
            const auto l = vocab.find(left), r = vocab.find(right);
            if (l != vocab.end() && r != vocab.end())
                local.push_back({std::string(left), std::string(right), id < scores.size() ? scores[id] : 0.0f, chars_left,
                                 total_chars - chars_left, l->second, r->second});
        }
        std::stable_sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
            return a.left_id != b.left_id ? a.left_id < b.left_id : a.right_id < b.right_id;
        });
        merges.insert(merges.end(), local.begin(), local.end());
    }
    (void)types;
    std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
        if (a.score != b.score) return a.score > b.score;
        if (a.left_chars != b.left_chars) return a.left_chars > b.left_chars;
        return a.right_chars > b.right_chars;
    });
    std::vector<std::pair<std::string, std::string>> out;
    out.reserve(merges.size());
    for (Merge& merge : merges) out.emplace_back(std::move(merge.left), std::move(merge.right));
    return out;
}

}  // namespace

std::unique_ptr<Pipeline> load_gguf_vocab(const json& metadata, std::string source) {
    auto pipeline = std::make_unique<Pipeline>();
    pipeline->source = source;
    try {
        const std::string model = json_string(metadata, "tokenizer.ggml.model");
        if (model.empty()) throw ConfigError("no tokenizer in this GGUF (tokenizer.ggml.model is missing)");
        if (model == "none" || model == "no_vocab") throw ConfigError("this GGUF has no vocabulary (tokenizer.ggml.model is '" + model + "')");
        const std::vector<std::string> tokens = string_list(metadata, "tokenizer.ggml.tokens", true);
        std::vector<int32_t> types(tokens.size(), kNormal);
        const json& type_list = json_field(metadata, "tokenizer.ggml.token_type");
        if (type_list.is_array()) {
            if (type_list.size() != tokens.size()) throw ConfigError("tokenizer.ggml.token_type has a different length than tokenizer.ggml.tokens");
            for (size_t i = 0; i < tokens.size(); ++i) types[i] = type_list[i].get<int32_t>();
        }
        std::vector<float> scores;
        const json& score_list = json_field(metadata, "tokenizer.ggml.scores");
        if (score_list.is_array()) {
            if (score_list.size() != tokens.size()) throw ConfigError("tokenizer.ggml.scores has a different length than tokenizer.ggml.tokens");
            for (const json& score : score_list) scores.push_back(score.get<float>());
        }
        auto id_of = [&](const char* key) -> std::optional<int64_t> {
            const auto id = int_value(metadata, key);
            if (!id || *id < 0) return std::nullopt;
            if (static_cast<size_t>(*id) >= tokens.size())
                throw ConfigError(std::string(key) + " " + std::to_string(*id) + " is outside the vocabulary of " + std::to_string(tokens.size()));
            return id;
        };
        const auto bos = id_of("tokenizer.ggml.bos_token_id");
        const auto eos = id_of("tokenizer.ggml.eos_token_id");
        const auto eot = id_of("tokenizer.ggml.eot_token_id");
        const auto eom = id_of("tokenizer.ggml.eom_token_id");
        auto unk = id_of("tokenizer.ggml.unknown_token_id");
        auto sep = id_of("tokenizer.ggml.seperator_token_id");
        if (!sep) sep = id_of("tokenizer.ggml.separator_token_id");
        const auto cls = id_of("tokenizer.ggml.cls_token_id");
        if (!unk)
            for (size_t i = 0; i < tokens.size(); ++i)
                if (types[i] == kUnknown) {
                    unk = static_cast<int64_t>(i);
                    break;
                }
        const bool add_space_prefix = bool_value(metadata, "tokenizer.ggml.add_space_prefix").value_or(true);
        std::optional<bool> add_bos = bool_value(metadata, "tokenizer.ggml.add_bos_token");
        std::optional<bool> add_eos = bool_value(metadata, "tokenizer.ggml.add_eos_token");

        json normalizer, pre_tokenizer, decoder, post_processor;
        if (model == "gpt2") {
            const std::string pre_name = json_string(metadata, "tokenizer.ggml.pre", "default");
            const auto pre = pre_type(pre_name);
            if (!pre) throw ConfigError("unknown pre-tokenizer '" + pre_name + "' (tokenizer.ggml.pre)");
            json sequence = json::array();
            for (const std::string& regex : pre->regexes) sequence.push_back(split_regex(regex));
            sequence.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}});
            pre_tokenizer = {{"type", "Sequence"}, {"pretokenizers", sequence}};
            decoder = {{"type", "ByteLevel"}};
            // transformers' GGUF converter for Qwen2-family vocabularies adds Qwen2's NFC normalizer.
            if (pre_name == "qwen2" || pre_name == "qwen35" || pre_name == "deepseek-r1-qwen") normalizer = {{"type", "NFC"}};
            const std::vector<std::string> merge_lines = string_list(metadata, "tokenizer.ggml.merges", true);
            std::vector<std::pair<std::string, std::string>> merges;
            merges.reserve(merge_lines.size());
            for (const std::string& line : merge_lines) {
                const size_t space = line.find(' ', 1);
                if (space == std::string::npos) throw ConfigError("tokenizer.ggml.merges entry '" + line + "' is not two tokens separated by a space");
                merges.emplace_back(line.substr(0, space), line.substr(space + 1));
            }
            BpeOptions options;
            options.ignore_merges = pre->ignore_merges;
            pipeline->model = make_bpe(tokens, merges, options);
            if (!add_bos) add_bos = false;
        } else if (model == "llama") {
            // SentencePiece BPE as transformers' LlamaConverter writes it (legacy, no pre-tokenizer).
            json steps = json::array();
            if (add_space_prefix) steps.push_back({{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}});
            steps.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}});
            normalizer = {{"type", "Sequence"}, {"normalizers", steps}};
            json decoders = json::array({{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                                         {{"type", "ByteFallback"}},
                                         {{"type", "Fuse"}}});
            if (add_space_prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
            decoder = {{"type", "Sequence"}, {"decoders", decoders}};
            std::vector<std::pair<std::string, std::string>> merges;
            const std::vector<std::string> merge_lines = string_list(metadata, "tokenizer.ggml.merges", false);
            if (!merge_lines.empty()) {
                for (const std::string& line : merge_lines) {
                    const size_t space = line.find(' ', 1);
                    if (space == std::string::npos) throw ConfigError("tokenizer.ggml.merges entry '" + line + "' is not two tokens separated by a space");
                    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
                }
            } else {
                if (scores.empty()) throw ConfigError("a 'llama' vocabulary needs tokenizer.ggml.scores or tokenizer.ggml.merges");
                merges = merges_from_scores(tokens, scores, types);
            }
            BpeOptions options;
            if (unk) options.unk_token = tokens[static_cast<size_t>(*unk)];
            options.fuse_unk = true;
            options.byte_fallback = true;
            pipeline->model = make_bpe(tokens, merges, options);
            if (!add_bos) add_bos = true;
        } else if (model == "bert") {
            // GGUF spells WordPiece vocabularies with a U+2581 before word starts and bare continuations.
            std::vector<std::string> vocab;
            vocab.reserve(tokens.size());
            for (size_t i = 0; i < tokens.size(); ++i) {
                const std::string& token = tokens[i];
                if (token.rfind("\xE2\x96\x81", 0) == 0) vocab.push_back(token.substr(3));
                else if (types[i] == kControl || types[i] == kUnknown || types[i] == kUserDefined || types[i] == kUnused ||
                         (token.size() >= 2 && token.front() == '[' && token.back() == ']'))
                    vocab.push_back(token);
                else vocab.push_back("##" + token);
            }
            pipeline->model = make_wordpiece(vocab, unk ? vocab[static_cast<size_t>(*unk)] : "[UNK]", "##", 100);
            normalizer = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true}, {"strip_accents", nullptr}, {"lowercase", true}};
            pre_tokenizer = {{"type", "BertPreTokenizer"}};
            decoder = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
            // The added tokens below use the GGUF spelling; map the pipeline's names through the vocabulary.
            std::vector<std::string> names = vocab;
            if (cls && sep && add_bos.value_or(true)) post_processor = template_processing(names, cls, sep);
            for (size_t i = 0; i < tokens.size(); ++i) {
                if (types[i] != kControl && types[i] != kUserDefined && types[i] != kUnknown) continue;
                AddedToken token;
                token.content = vocab[i];
                token.id = static_cast<int32_t>(i);
                token.special = types[i] != kUserDefined;
                token.normalized = false;
                pipeline->added.add(std::move(token));
            }
        } else if (model == "t5") {
            const json& charsmap = json_field(metadata, "tokenizer.ggml.precompiled_charsmap");
            if (charsmap.is_array() && !charsmap.empty()) {
                std::string bytes;
                bytes.reserve(charsmap.size());
                for (const json& b : charsmap) bytes.push_back(static_cast<char>(b.get<int>() & 0xFF));
                pipeline->normalizer = make_precompiled_normalizer(bytes);
            }
            const bool remove_extra = bool_value(metadata, "tokenizer.ggml.remove_extra_whitespaces").value_or(true);
            if (remove_extra) normalizer = {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}};
            const char* scheme = add_space_prefix ? "always" : "never";
            pre_tokenizer = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", scheme}, {"split", true}};
            decoder = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", scheme}, {"split", true}};
            std::vector<std::pair<std::string, double>> vocab;
            vocab.reserve(tokens.size());
            for (size_t i = 0; i < tokens.size(); ++i) vocab.emplace_back(tokens[i], i < scores.size() ? scores[i] : 0.0);
            bool byte_fallback = false;
            for (size_t i = 0; i < tokens.size(); ++i) byte_fallback = byte_fallback || types[i] == kByte;
            std::optional<int32_t> unk_id;
            if (unk) unk_id = static_cast<int32_t>(*unk);
            pipeline->model = make_unigram(std::move(vocab), unk_id, byte_fallback);
            if (!add_bos) add_bos = false;
            if (!add_eos) add_eos = true;
        } else {
            throw ConfigError("unsupported tokenizer model '" + model + "' (tokenizer.ggml.model; supported: gpt2, llama, bert, t5)");
        }

        // The precompiled charsmap normalizer (t5) was built directly; the others come from JSON.
        if (!normalizer.is_null()) {
            auto made = make_normalizer(normalizer);
            if (pipeline->normalizer) {
                struct Pair : Normalizer {
                    std::unique_ptr<Normalizer> first, second;
                    void normalize(std::string& text) const override {
                        first->normalize(text);
                        second->normalize(text);
                    }
                };
                auto pair = std::make_unique<Pair>();
                pair->first = std::move(pipeline->normalizer);
                pair->second = std::move(made);
                pipeline->normalizer = std::move(pair);
            } else {
                pipeline->normalizer = std::move(made);
            }
        }
        pipeline->pre_tokenizer = make_pre_tokenizer(pre_tokenizer);
        pipeline->decoder = make_decoder(decoder);
        if (model != "bert") {
            std::optional<int64_t> first, last;
            if (add_bos.value_or(false) && bos) first = bos;
            if (add_eos.value_or(false) && eos) last = eos;
            if (first || last) post_processor = template_processing(tokens, first, last);
            // Control and user-defined tokens are matched in the text before the model, as
            // Hugging Face's added tokens are; control tokens are special.
            for (size_t i = 0; i < tokens.size(); ++i) {
                if (types[i] != kControl && types[i] != kUserDefined && types[i] != kUnknown) continue;
                AddedToken token;
                token.content = tokens[i];
                token.id = static_cast<int32_t>(i);
                token.special = types[i] != kUserDefined;
                token.normalized = false;
                pipeline->added.add(std::move(token));
            }
        }
        pipeline->post_processor = make_post_processor(post_processor);
        pipeline->added.finalize(pipeline->normalizer.get());

        // Settings a tokenizer_config.json would give.
        const std::vector<std::string>& names = tokens;
        if (bos) {
            pipeline->bos_id = static_cast<int32_t>(*bos);
            pipeline->bos_token = names[static_cast<size_t>(*bos)];
        }
        if (eos) pipeline->eos_token = names[static_cast<size_t>(*eos)];
        for (const auto& id : {eos, eot, eom})
            if (id && std::find(pipeline->eos_ids.begin(), pipeline->eos_ids.end(), static_cast<int32_t>(*id)) == pipeline->eos_ids.end())
                pipeline->eos_ids.push_back(static_cast<int32_t>(*id));
        pipeline->add_bos = add_bos;
        pipeline->add_eos = add_eos;
        pipeline->chat_template = json_string(metadata, "tokenizer.chat_template");
    } catch (const ConfigError& error) {
        throw Error(source, error.what());
    } catch (const json::exception& error) {
        throw Error(source, std::string("unexpected tokenizer value: ") + error.what());
    }
    return pipeline;
}

}  // namespace oxinfer::tokenizer
