// Pre-tokenizers of Hugging Face tokenizers: ByteLevel, Split (every behaviour, invert), Metaspace,
// Whitespace, WhitespaceSplit, BertPreTokenizer, Digits, Punctuation, CharDelimiterSplit, Sequence.

#include "components.h"

#include <array>

namespace oxinfer::tokenizer {

SplitBehavior parse_behavior(const json& value) {
    const std::string name = value.is_string() ? value.get<std::string>() : "";
    if (name == "Removed") return SplitBehavior::Removed;
    if (name == "Isolated") return SplitBehavior::Isolated;
    if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
    if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
    if (name == "Contiguous") return SplitBehavior::Contiguous;
    throw ConfigError("unknown split behavior '" + (value.is_string() ? name : value.dump()) + "'");
}

void split_by_behavior(const Piece& piece, const std::vector<Span>& spans, SplitBehavior behavior, Pieces& out) {
    thread_local std::vector<std::pair<size_t, size_t>> parts;
    parts.clear();
    switch (behavior) {
        case SplitBehavior::Isolated:
            for (const Span& span : spans) parts.emplace_back(span.begin, span.end);
            break;
        case SplitBehavior::Removed:
            for (const Span& span : spans)
                if (!span.match) parts.emplace_back(span.begin, span.end);
            break;
        case SplitBehavior::MergedWithPrevious: {
            bool previous_match = false;
            for (const Span& span : spans) {
                if (span.match && !previous_match && !parts.empty()) parts.back().second = span.end;
                else parts.emplace_back(span.begin, span.end);
                previous_match = span.match;
            }
            break;
        }
        case SplitBehavior::MergedWithNext: {
            bool previous_match = false;
            for (size_t i = spans.size(); i-- > 0;) {
                const Span& span = spans[i];
                if (span.match && !previous_match && !parts.empty()) parts.back().first = span.begin;
                else parts.emplace_back(span.begin, span.end);
                previous_match = span.match;
            }
            std::reverse(parts.begin(), parts.end());
            break;
        }
        case SplitBehavior::Contiguous: {
            bool previous_match = false;
            for (const Span& span : spans) {
                if (span.match == previous_match && !parts.empty()) parts.back().second = span.end;
                else parts.emplace_back(span.begin, span.end);
                previous_match = span.match;
            }
            break;
        }
    }
    for (const auto& [begin, end] : parts) {
        if (begin >= end) continue;
        Piece part;
        part.text.assign(piece.text, begin, end - begin);
        part.at_origin = piece.at_origin && begin == 0;
        out.push_back(std::move(part));
    }
}

namespace {

// Applies `split` to every piece that is not an added token.
template <typename Split>
void split_pieces(Pieces& pieces, Split&& split) {
    Pieces out;
    out.reserve(pieces.size() * 2);
    for (Piece& piece : pieces) {
        if (piece.id >= 0) {
            out.push_back(std::move(piece));
            continue;
        }
        split(piece, out);
    }
    pieces.swap(out);
}

// Spans of a per-character predicate: each matching character is one match.
template <typename Predicate>
void char_spans(const std::string& text, Predicate&& predicate, std::vector<Span>& spans) {
    spans.clear();
    size_t last = 0, pos = 0;
    while (pos < text.size()) {
        char32_t cp;
        const size_t length = utf8_next(text, pos, cp);
        if (predicate(cp)) {
            if (last < pos) spans.push_back({last, pos, false});
            spans.push_back({pos, pos + length, true});
            last = pos + length;
        }
        pos += length;
    }
    if (pos > last) spans.push_back({last, pos, false});
}

void regex_spans(const Regex& regex, const std::string& text, bool invert, std::vector<Span>& spans) {
    thread_local std::vector<std::pair<size_t, size_t>> matches;
    spans.clear();
    if (text.empty()) {
        spans.push_back({0, 0, invert});
        return;
    }
    regex.find_all(text, matches);
    size_t previous = 0;
    for (const auto& [begin, end] : matches) {
        if (previous != begin) spans.push_back({previous, begin, invert});
        spans.push_back({begin, end, !invert});
        previous = end;
    }
    if (previous != text.size()) spans.push_back({previous, text.size(), invert});
}

template <typename Predicate>
void split_on_chars(Pieces& pieces, Predicate predicate, SplitBehavior behavior) {
    thread_local std::vector<Span> spans;
    split_pieces(pieces, [&](const Piece& piece, Pieces& out) {
        char_spans(piece.text, predicate, spans);
        split_by_behavior(piece, spans, behavior, out);
    });
}

// GPT-2's byte alphabet.
struct ByteAlphabet {
    std::array<std::string, 256> to_unicode;
    std::array<char32_t, 256> code_point{};
    ByteAlphabet() {
        int extra = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
            code_point[b] = cp;
            utf8_append(to_unicode[b], cp);
        }
    }
};
const ByteAlphabet& alphabet() {
    static const ByteAlphabet instance;
    return instance;
}

constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevel : public PreTokenizer {
public:
    ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {
        if (use_regex_) regex_ = std::make_unique<Regex>(kGpt2Pattern, false);
    }
    void pre_tokenize(Pieces& pieces) const override {
        thread_local std::vector<Span> spans;
        if (add_prefix_space_ || use_regex_) {
            split_pieces(pieces, [&](Piece& piece, Pieces& out) {
                if (add_prefix_space_ && (piece.text.empty() || piece.text[0] != ' ')) piece.text = " " + piece.text;
                if (!use_regex_) {
                    out.push_back(std::move(piece));
                    return;
                }
                regex_spans(*regex_, piece.text, false, spans);
                split_by_behavior(piece, spans, SplitBehavior::Isolated, out);
            });
        }
        std::string mapped;
        for (Piece& piece : pieces) {
            if (piece.id >= 0) continue;
            byte_level_map(piece.text, mapped);
            piece.text.swap(mapped);
        }
    }
    bool byte_level() const override { return true; }

private:
    bool add_prefix_space_, use_regex_;
    std::unique_ptr<Regex> regex_;
};

class Split : public PreTokenizer {
public:
    Split(const json& pattern, SplitBehavior behavior, bool invert) : behavior_(behavior), invert_(invert) {
        if (pattern.contains("String")) regex_ = std::make_unique<Regex>(pattern.at("String").get<std::string>(), true);
        else if (pattern.contains("Regex")) regex_ = std::make_unique<Regex>(pattern.at("Regex").get<std::string>(), false);
        else throw ConfigError("Split pattern must be {\"String\": ...} or {\"Regex\": ...}");
    }
    void pre_tokenize(Pieces& pieces) const override {
        thread_local std::vector<Span> spans;
        split_pieces(pieces, [&](const Piece& piece, Pieces& out) {
            regex_spans(*regex_, piece.text, invert_, spans);
            split_by_behavior(piece, spans, behavior_, out);
        });
    }

private:
    std::unique_ptr<Regex> regex_;
    SplitBehavior behavior_;
    bool invert_;
};

enum class PrependScheme { First, Never, Always };

class Metaspace : public PreTokenizer {
public:
    Metaspace(char32_t replacement, PrependScheme scheme, bool split) : scheme_(scheme), split_(split) {
        utf8_append(replacement_, replacement);
        replacement_cp_ = replacement;
    }
    void pre_tokenize(Pieces& pieces) const override {
        thread_local std::vector<Span> spans;
        split_pieces(pieces, [&](Piece& piece, Pieces& out) {
            std::string text;
            text.reserve(piece.text.size() + 8);
            for (char c : piece.text) {
                if (c == ' ') text += replacement_;
                else text.push_back(c);
            }
            const bool starts = text.compare(0, replacement_.size(), replacement_) == 0;
            if (!starts && (scheme_ == PrependScheme::Always || (scheme_ == PrependScheme::First && piece.at_origin)))
                text = replacement_ + text;
            piece.text.swap(text);
            if (!split_) {
                out.push_back(std::move(piece));
                return;
            }
            const char32_t r = replacement_cp_;
            char_spans(piece.text, [r](char32_t cp) { return cp == r; }, spans);
            split_by_behavior(piece, spans, SplitBehavior::MergedWithNext, out);
        });
    }

private:
    std::string replacement_;
    char32_t replacement_cp_;
    PrependScheme scheme_;
    bool split_;
};

class Whitespace : public PreTokenizer {
public:
    // \w+|[^\w\s]+ with Rust regex's Unicode \w and \s; everything else is removed.
    void pre_tokenize(Pieces& pieces) const override {
        thread_local std::vector<Span> spans;
        split_pieces(pieces, [&](const Piece& piece, Pieces& out) {
            spans.clear();
            const std::string& text = piece.text;
            size_t pos = 0;
            int current = -1;  // 0: word run, 1: other run, -1: whitespace
            size_t run_start = 0;
            auto close = [&](size_t end) {
                if (current >= 0) spans.push_back({run_start, end, true});
            };
            while (pos < text.size()) {
                char32_t cp;
                const size_t length = utf8_next(text, pos, cp);
                const int kind = is_word_char(cp) ? 0 : is_whitespace(cp) ? -1 : 1;
                if (kind != current) {
                    close(pos);
                    current = kind;
                    run_start = pos;
                }
                pos += length;
            }
            close(pos);
            // Gaps between runs are the (removed) non-matches.
            std::vector<Span> full;
            size_t previous = 0;
            for (const Span& span : spans) {
                if (previous != span.begin) full.push_back({previous, span.begin, true});
                full.push_back({span.begin, span.end, false});
                previous = span.end;
            }
            if (previous != text.size()) full.push_back({previous, text.size(), true});
            split_by_behavior(piece, full, SplitBehavior::Removed, out);
        });
    }
};

class WhitespaceSplit : public PreTokenizer {
public:
    void pre_tokenize(Pieces& pieces) const override { split_on_chars(pieces, is_whitespace, SplitBehavior::Removed); }
};

class BertPreTokenizer : public PreTokenizer {
public:
    void pre_tokenize(Pieces& pieces) const override {
        split_on_chars(pieces, is_whitespace, SplitBehavior::Removed);
        split_on_chars(pieces, is_punctuation, SplitBehavior::Isolated);
    }
};

class Punctuation : public PreTokenizer {
public:
    explicit Punctuation(SplitBehavior behavior) : behavior_(behavior) {}
    void pre_tokenize(Pieces& pieces) const override { split_on_chars(pieces, is_punctuation, behavior_); }

private:
    SplitBehavior behavior_;
};

class Digits : public PreTokenizer {
public:
    explicit Digits(bool individual) : individual_(individual) {}
    void pre_tokenize(Pieces& pieces) const override {
        split_on_chars(pieces, is_numeric, individual_ ? SplitBehavior::Isolated : SplitBehavior::Contiguous);
    }

private:
    bool individual_;
};

class CharDelimiterSplit : public PreTokenizer {
public:
    explicit CharDelimiterSplit(char32_t delimiter) : delimiter_(delimiter) {}
    void pre_tokenize(Pieces& pieces) const override {
        const char32_t d = delimiter_;
        split_on_chars(pieces, [d](char32_t cp) { return cp == d; }, SplitBehavior::Removed);
    }

private:
    char32_t delimiter_;
};

class Sequence : public PreTokenizer {
public:
    explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> items) : items_(std::move(items)) {}
    void pre_tokenize(Pieces& pieces) const override {
        for (const auto& item : items_) item->pre_tokenize(pieces);
    }
    bool byte_level() const override {
        for (const auto& item : items_)
            if (item->byte_level()) return true;
        return false;
    }

private:
    std::vector<std::unique_ptr<PreTokenizer>> items_;
};

char32_t single_char(const json& config, const char* key, char32_t fallback) {
    const json& value = json_field(config, key);
    if (value.is_null()) return fallback;
    const std::string text = value.get<std::string>();
    if (text.empty() || utf8_count(text) != 1 || !is_valid_utf8(text)) throw ConfigError(std::string(key) + " must be one character");
    char32_t cp;
    utf8_next(text, 0, cp);
    return cp;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t byte) { return alphabet().to_unicode[byte]; }

int unicode_to_byte(char32_t cp) {
    static const std::array<int16_t, 324> table = [] {
        std::array<int16_t, 324> t{};
        t.fill(-1);
        for (int b = 0; b < 256; ++b) t[alphabet().code_point[b]] = static_cast<int16_t>(b);
        return t;
    }();
    return cp < table.size() ? table[cp] : -1;
}

void byte_level_map(std::string_view text, std::string& out) {
    const ByteAlphabet& a = alphabet();
    out.clear();
    out.reserve(text.size() * 2);
    for (unsigned char c : text) out += a.to_unicode[c];
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& config) {
    if (config.is_null()) return nullptr;
    if (!config.is_object()) throw ConfigError("pre_tokenizer must be an object");
    const std::string type = json_string(config, "type");
    if (type == "ByteLevel") return std::make_unique<ByteLevel>(json_bool(config, "add_prefix_space", true), json_bool(config, "use_regex", true));
    if (type == "Split")
        return std::make_unique<Split>(json_field(config, "pattern"), parse_behavior(json_field(config, "behavior")),
                                       json_bool(config, "invert", false));
    if (type == "Metaspace") {
        const char32_t replacement = single_char(config, "replacement", U'\u2581');
        PrependScheme scheme = PrependScheme::Always;
        const json& prepend = json_field(config, "prepend_scheme");
        if (prepend.is_string()) {
            const std::string name = prepend.get<std::string>();
            if (name == "first") scheme = PrependScheme::First;
            else if (name == "never") scheme = PrependScheme::Never;
            else if (name == "always") scheme = PrependScheme::Always;
            else throw ConfigError("unknown Metaspace prepend_scheme '" + name + "'");
        }
        const json& add_prefix = json_field(config, "add_prefix_space");
        if (add_prefix.is_boolean() && !add_prefix.get<bool>()) {
            if (prepend.is_string() && scheme != PrependScheme::Never)
                throw ConfigError("Metaspace: add_prefix_space does not match declared prepend_scheme");
            scheme = PrependScheme::Never;
        }
        return std::make_unique<Metaspace>(replacement, scheme, json_bool(config, "split", true));
    }
    if (type == "Whitespace") return std::make_unique<Whitespace>();
    if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplit>();
    if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
    if (type == "Digits") return std::make_unique<Digits>(json_bool(config, "individual_digits", false));
    if (type == "Punctuation") {
        const json& behavior = json_field(config, "behavior");
        return std::make_unique<Punctuation>(behavior.is_null() ? SplitBehavior::Isolated : parse_behavior(behavior));
    }
    if (type == "CharDelimiterSplit") return std::make_unique<CharDelimiterSplit>(single_char(config, "delimiter", U' '));
    if (type == "Sequence") {
        std::vector<std::unique_ptr<PreTokenizer>> items;
        for (const json& item : json_field(config, "pretokenizers"))
            if (auto pre = make_pre_tokenizer(item)) items.push_back(std::move(pre));
        return std::make_unique<Sequence>(std::move(items));
    }
    throw ConfigError("unknown pre_tokenizer type '" + type + "'");
}

}  // namespace oxinfer::tokenizer
