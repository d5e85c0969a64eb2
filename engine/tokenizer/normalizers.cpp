// Normalizers of Hugging Face tokenizers: NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents,
// Replace, Prepend, BertNormalizer, Precompiled (SentencePiece charsmaps), Nmt, ByteLevel, Sequence.

#include "components.h"

#include <cstring>

namespace oxinfer::tokenizer {
namespace {

char32_t first_char(std::string_view text) {
    char32_t cp = 0;
    if (!text.empty()) utf8_next(text, 0, cp);
    return cp;
}

class UnicodeNormalizer : public Normalizer {
public:
    explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
    void normalize(std::string& text) const override { text = tokenizer::normalize(text, form_); }

private:
    NormalForm form_;
};

class Lowercase : public Normalizer {
public:
    void normalize(std::string& text) const override { text = lowercase(text); }
};

class Strip : public Normalizer {
public:
    Strip(bool left, bool right) : left_(left), right_(right) {}
    bool keeps_start(std::string_view text) const override { return !(left_ && !text.empty() && is_whitespace(first_char(text))); }
    void normalize(std::string& text) const override {
        size_t begin = 0, end = text.size();
        if (left_) {
            while (begin < end) {
                char32_t cp;
                const size_t length = utf8_next(text, begin, cp);
                if (!is_whitespace(cp)) break;
                begin += length;
            }
        }
        if (right_) {
            while (end > begin) {
                size_t start = end - 1;
                while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
                char32_t cp;
                utf8_next(text, start, cp);
                if (!is_whitespace(cp)) break;
                end = start;
            }
        }
        text = text.substr(begin, end - begin);
    }

private:
    bool left_, right_;
};

// Removes combining marks (General_Category M), as unicode-normalization's is_combining_mark.
void remove_chars(std::string& text, bool (*predicate)(char32_t)) {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
        char32_t cp;
        const size_t length = utf8_next(text, pos, cp);
        if (!predicate(cp)) out.append(text, pos, length);
        pos += length;
    }
    text.swap(out);
}

class StripAccents : public Normalizer {
public:
    bool keeps_start(std::string_view text) const override { return text.empty() || !is_mark(first_char(text)); }
    void normalize(std::string& text) const override { remove_chars(text, is_mark); }
};

class Replace : public Normalizer {
public:
    Replace(const json& pattern, std::string content) : content_(std::move(content)) {
        if (pattern.contains("String")) regex_ = std::make_unique<Regex>(pattern.at("String").get<std::string>(), true);
        else if (pattern.contains("Regex")) regex_ = std::make_unique<Regex>(pattern.at("Regex").get<std::string>(), false);
        else throw ConfigError("Replace pattern must be {\"String\": ...} or {\"Regex\": ...}");
    }
    bool keeps_start(std::string_view text) const override {
        if (!content_.empty() || text.empty()) return true;
        std::vector<std::pair<size_t, size_t>> matches;
        regex_->find_all(text, matches);
        return matches.empty() || matches[0].first != 0 || matches[0].second == 0;
    }
    void normalize(std::string& text) const override {
        thread_local std::vector<std::pair<size_t, size_t>> matches;
        regex_->find_all(text, matches);
        if (matches.empty()) return;
        std::string out;
        out.reserve(text.size());
        size_t last = 0;
        for (const auto& [begin, end] : matches) {
            out.append(text, last, begin - last);
            out += content_;
            last = end;
        }
        out.append(text, last, std::string::npos);
        text.swap(out);
    }

private:
    std::unique_ptr<Regex> regex_;
    std::string content_;
};

class Prepend : public Normalizer {
public:
    explicit Prepend(std::string prepend) : prepend_(std::move(prepend)) {}
    void normalize(std::string& text) const override {
        if (!text.empty()) text = prepend_ + text;
    }

private:
    std::string prepend_;
};

bool is_chinese_char(char32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

class BertNormalizer : public Normalizer {
public:
    BertNormalizer(bool clean_text, bool chinese, std::optional<bool> strip_accents, bool lowercase)
        : clean_text_(clean_text), chinese_(chinese), strip_accents_(strip_accents.value_or(lowercase)), lowercase_(lowercase) {}

    bool keeps_start(std::string_view text) const override {
        if (text.empty()) return true;
        const char32_t cp = first_char(text);
        if (clean_text_ && (cp == 0 || cp == 0xFFFD || (cp != '\t' && cp != '\n' && cp != '\r' && is_other(cp)))) return false;
        if (strip_accents_) {
            const std::string decomposed = tokenizer::normalize(text.substr(0, utf8_length(static_cast<unsigned char>(text[0]))), NormalForm::NFD);
            if (is_mark_nonspacing(first_char(decomposed))) return false;
        }
        return true;
    }

    void normalize(std::string& text) const override {
        if (clean_text_ || chinese_) {
            std::string out;
            out.reserve(text.size() + 8);
            size_t pos = 0;
            while (pos < text.size()) {
                char32_t cp;
                const size_t length = utf8_next(text, pos, cp);
                pos += length;
                if (clean_text_) {
                    const bool tab_nl_cr = cp == '\t' || cp == '\n' || cp == '\r';
                    if (cp == 0 || cp == 0xFFFD || (!tab_nl_cr && is_other(cp))) continue;
                    if (tab_nl_cr || is_whitespace(cp)) cp = ' ';
                }
                if (chinese_ && is_chinese_char(cp)) {
                    out.push_back(' ');
                    utf8_append(out, cp);
                    out.push_back(' ');
                } else {
                    utf8_append(out, cp);
                }
            }
            text.swap(out);
        }
        if (strip_accents_) {
            text = tokenizer::normalize(text, NormalForm::NFD);
            remove_chars(text, is_mark_nonspacing);
        }
        if (lowercase_) text = lowercase(text);
    }

private:
    bool clean_text_, chinese_, strip_accents_, lowercase_;
};

class Nmt : public Normalizer {
public:
    bool keeps_start(std::string_view text) const override {
        const char32_t cp = first_char(text);
        return text.empty() || !((cp >= 0x01 && cp <= 0x08) || cp == 0x0B || (cp >= 0x0E && cp <= 0x1F) || cp == 0x7F || cp == 0x8F || cp == 0x9F);
    }
    void normalize(std::string& text) const override {
        std::string out;
        out.reserve(text.size());
        size_t pos = 0;
        while (pos < text.size()) {
            char32_t cp;
            pos += utf8_next(text, pos, cp);
            if ((cp >= 0x01 && cp <= 0x08) || cp == 0x0B || (cp >= 0x0E && cp <= 0x1F) || cp == 0x7F || cp == 0x8F || cp == 0x9F) continue;
            if (cp == 0x09 || cp == 0x0A || cp == 0x0C || cp == 0x0D || cp == 0x1680 || (cp >= 0x200B && cp <= 0x200F) ||
                cp == 0x2028 || cp == 0x2029 || cp == 0x2581 || cp == 0xFEFF || cp == 0xFFFD)
                cp = ' ';
            utf8_append(out, cp);
        }
        text.swap(out);
    }
};

class ByteLevelNormalizer : public Normalizer {
public:
    void normalize(std::string& text) const override {
        std::string out;
        byte_level_map(text, out);
        text.swap(out);
    }
};

// SentencePiece's precompiled_charsmap: a darts-clone double-array trie from UTF-8 keys to
// offsets in a blob of NUL-terminated replacement strings. Applied per grapheme cluster (whole
// cluster first when shorter than 6 bytes, else each character), as Hugging Face does.
class Precompiled : public Normalizer {
public:
    explicit Precompiled(const std::string& blob) {
        parse(blob);
    }
    bool keeps_start(std::string_view text) const override {
        if (text.empty()) return true;
        const std::vector<size_t> bounds = grapheme_boundaries(text);
        const std::string_view grapheme = text.substr(0, bounds.size() > 1 ? bounds[1] : text.size());
        if (grapheme.size() < 6) {
            if (const auto replacement = transform(grapheme)) return !replacement->empty();
        }
        if (const auto replacement = transform(grapheme.substr(0, utf8_length(static_cast<unsigned char>(grapheme[0]))))) return !replacement->empty();
        return true;
    }

private:
    void parse(const std::string& blob) {
        if (blob.size() < 4) throw ConfigError("Precompiled: precompiled_charsmap is too short");
        uint32_t trie_bytes;
        std::memcpy(&trie_bytes, blob.data(), 4);
        if (trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4) throw ConfigError("Precompiled: bad trie size in precompiled_charsmap");
        array_.resize(trie_bytes / 4);
        std::memcpy(array_.data(), blob.data() + 4, trie_bytes);
        normalized_ = blob.substr(4 + trie_bytes);
        if (!is_valid_utf8(normalized_)) throw ConfigError("Precompiled: replacement strings are not valid UTF-8");
        if (array_.empty()) throw ConfigError("Precompiled: empty trie");
    }

public:
    void normalize(std::string& text) const override {
        if (text.empty()) return;
        const std::vector<size_t> bounds = grapheme_boundaries(text);
        std::string out;
        out.reserve(text.size());
        bool modified = false;
        for (size_t g = 0; g + 1 < bounds.size(); ++g) {
            const std::string_view grapheme(text.data() + bounds[g], bounds[g + 1] - bounds[g]);
            if (grapheme.size() < 6) {
                if (const auto replacement = transform(grapheme)) {
                    out.append(*replacement);
                    modified = true;
                    continue;
                }
            }
            size_t pos = 0;
            while (pos < grapheme.size()) {
                const size_t length = utf8_length(static_cast<unsigned char>(grapheme[pos]));
                const std::string_view part = grapheme.substr(pos, length);
                if (const auto replacement = transform(part)) {
                    out.append(*replacement);
                    modified = true;
                } else {
                    out.append(part);
                }
                pos += length;
            }
        }
        if (modified) text.swap(out);
    }

private:
    static uint32_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }
    static bool has_leaf(uint32_t unit) { return (unit >> 8) & 1; }
    static uint32_t value(uint32_t unit) { return unit & ((1u << 31) - 1); }
    static uint32_t label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }

    uint32_t at(size_t pos) const { return pos < array_.size() ? array_[pos] : 0; }

    // The replacement of the shortest key that is a prefix of `chunk` (common_prefix_search's
    // first result), or nullopt.
    std::optional<std::string_view> transform(std::string_view chunk) const {
        size_t node = 0;
        uint32_t unit = at(node);
        node ^= offset(unit);
        for (unsigned char c : chunk) {
            if (c == 0) break;
            node ^= c;
            unit = at(node);
            if (label(unit) != c) return std::nullopt;
            node ^= offset(unit);
            if (has_leaf(unit)) {
                const size_t index = value(at(node));
                if (index > normalized_.size()) return std::nullopt;
                size_t end = index;
                while (end < normalized_.size() && normalized_[end] != 0) ++end;
                return std::string_view(normalized_).substr(index, end - index);
            }
        }
        return std::nullopt;
    }

    std::vector<uint32_t> array_;
    std::string normalized_;
};

std::string base64_decode(std::string_view text) {
    auto digit = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    std::string out;
    out.reserve(text.size() * 3 / 4);
    uint32_t buffer = 0;
    int bits = 0;
    for (char c : text) {
        if (c == '=' || c == '\n' || c == '\r') continue;
        const int d = digit(c);
        if (d < 0) throw ConfigError("Precompiled: precompiled_charsmap is not base64");
        buffer = (buffer << 6) | static_cast<uint32_t>(d);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
        }
    }
    return out;
}

class Sequence : public Normalizer {
public:
    explicit Sequence(std::vector<std::unique_ptr<Normalizer>> items) : items_(std::move(items)) {}
    bool keeps_start(std::string_view text) const override {
        std::string current(text);
        for (const auto& item : items_) {
            if (!item->keeps_start(current)) return false;
            item->normalize(current);
        }
        return true;
    }
    void normalize(std::string& text) const override {
        for (const auto& item : items_) item->normalize(text);
    }

private:
    std::vector<std::unique_ptr<Normalizer>> items_;
};

}  // namespace

std::unique_ptr<Normalizer> make_precompiled_normalizer(const std::string& charsmap_bytes) {
    return std::make_unique<Precompiled>(charsmap_bytes);
}

std::unique_ptr<Normalizer> make_normalizer(const json& config) {
    if (config.is_null()) return nullptr;
    if (!config.is_object()) throw ConfigError("normalizer must be an object");
    const std::string type = json_string(config, "type");
    if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalForm::NFC);
    if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalForm::NFD);
    if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalForm::NFKC);
    if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalForm::NFKD);
    if (type == "Lowercase") return std::make_unique<Lowercase>();
    if (type == "Strip") return std::make_unique<Strip>(json_bool(config, "strip_left", true), json_bool(config, "strip_right", true));
    if (type == "StripAccents") return std::make_unique<StripAccents>();
    if (type == "Replace") return std::make_unique<Replace>(json_field(config, "pattern"), json_string(config, "content"));
    if (type == "Prepend") return std::make_unique<Prepend>(json_string(config, "prepend"));
    if (type == "Nmt") return std::make_unique<Nmt>();
    if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
    if (type == "BertNormalizer") {
        const json& strip = json_field(config, "strip_accents");
        std::optional<bool> strip_accents;
        if (strip.is_boolean()) strip_accents = strip.get<bool>();
        return std::make_unique<BertNormalizer>(json_bool(config, "clean_text", true), json_bool(config, "handle_chinese_chars", true),
                                                strip_accents, json_bool(config, "lowercase", true));
    }
    if (type == "Precompiled") {
        const json& charsmap = json_field(config, "precompiled_charsmap");
        if (charsmap.is_null()) return nullptr;  // an empty charsmap normalizes nothing
        if (charsmap.is_string()) {
            if (charsmap.get_ref<const std::string&>().empty()) return nullptr;
            return std::make_unique<Precompiled>(base64_decode(charsmap.get<std::string>()));
        }
        if (charsmap.is_array()) {
            std::string bytes;
            for (const json& b : charsmap) bytes.push_back(static_cast<char>(b.get<int>()));
            return std::make_unique<Precompiled>(bytes);
        }
        throw ConfigError("Precompiled: precompiled_charsmap must be a base64 string");
    }
    if (type == "Sequence") {
        std::vector<std::unique_ptr<Normalizer>> items;
        for (const json& item : json_field(config, "normalizers"))
            if (auto normalizer = make_normalizer(item)) items.push_back(std::move(normalizer));
        return std::make_unique<Sequence>(std::move(items));
    }
    throw ConfigError("unknown normalizer type '" + type + "'");
}

}  // namespace oxinfer::tokenizer
