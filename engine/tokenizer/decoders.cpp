// Decoders: ByteLevel, Metaspace, WordPiece, ByteFallback, Fuse, Strip, Replace, BPEDecoder,
// CTC, Sequence. Each rewrites the list of token strings, as Hugging Face's decode_chain.

#include "components.h"

namespace oxinfer::tokenizer {
namespace {

class ByteLevel : public Decoder {
public:
    void decode_chain(std::vector<std::string>& tokens) const override {
        std::string bytes;
        for (const std::string& token : tokens) {
            // A token whose characters are not all in the byte alphabet is taken as it is.
            const size_t start = bytes.size();
            bool all = true;
            size_t pos = 0;
            while (pos < token.size()) {
                char32_t cp;
                pos += utf8_next(token, pos, cp);
                const int byte = unicode_to_byte(cp);
                if (byte < 0) {
                    all = false;
                    break;
                }
                bytes.push_back(static_cast<char>(byte));
            }
            if (!all) {
                bytes.resize(start);
                bytes += token;
            }
        }
        tokens.assign(1, to_valid_utf8(bytes));
    }
};

class Metaspace : public Decoder {
public:
    Metaspace(std::string replacement, bool prepend) : replacement_(std::move(replacement)), prepend_(prepend) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (size_t i = 0; i < tokens.size(); ++i) {
            std::string& token = tokens[i];
            if (token.find(replacement_) == std::string::npos) continue;
            std::string out;
            out.reserve(token.size());
            size_t pos = 0;
            while (pos < token.size()) {
                if (token.compare(pos, replacement_.size(), replacement_) == 0) {
                    // Every replacement character of the first token is dropped when a prefix was added.
                    if (!(i == 0 && prepend_)) out.push_back(' ');
                    pos += replacement_.size();
                } else {
                    const size_t length = utf8_length(static_cast<unsigned char>(token[pos]));
                    out.append(token, pos, length);
                    pos += length;
                }
            }
            token.swap(out);
        }
    }

private:
    std::string replacement_;
    bool prepend_;
};

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
    if (from.empty()) return text;
    std::string out;
    size_t last = 0, pos;
    while ((pos = text.find(from, last)) != std::string::npos) {
        out.append(text, last, pos - last);
        out.append(to);
        last = pos + from.size();
    }
    if (last == 0) return text;
    out.append(text, last, std::string::npos);
    return out;
}

std::string cleanup(std::string text) {
    text = replace_all(std::move(text), " .", ".");
    text = replace_all(std::move(text), " ?", "?");
    text = replace_all(std::move(text), " !", "!");
    text = replace_all(std::move(text), " ,", ",");
    text = replace_all(std::move(text), " ' ", "'");
    text = replace_all(std::move(text), " n't", "n't");
    text = replace_all(std::move(text), " 'm", "'m");
    text = replace_all(std::move(text), " do not", " don't");
    text = replace_all(std::move(text), " 's", "'s");
    text = replace_all(std::move(text), " 've", "'ve");
    text = replace_all(std::move(text), " 're", "'re");
    return text;
}

class WordPiece : public Decoder {
public:
    WordPiece(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (size_t i = 0; i < tokens.size(); ++i) {
            std::string& token = tokens[i];
            if (i != 0) {
                if (token.compare(0, prefix_.size(), prefix_) == 0) token.erase(0, prefix_.size());
                else token = " " + token;
            }
            if (cleanup_) token = cleanup(std::move(token));
        }
    }

private:
    std::string prefix_;
    bool cleanup_;
};

class ByteFallback : public Decoder {
public:
    void decode_chain(std::vector<std::string>& tokens) const override {
        std::vector<std::string> out;
        out.reserve(tokens.size());
        std::string bytes;
        auto flush = [&] {
            if (bytes.empty()) return;
            if (is_valid_utf8(bytes)) out.push_back(bytes);
            else
                for (size_t i = 0; i < bytes.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
            bytes.clear();
        };
        for (std::string& token : tokens) {
            int byte = -1;
            if (token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>') {
                auto hex = [](char c) -> int {
                    if (c >= '0' && c <= '9') return c - '0';
                    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
                    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
                    return -1;
                };
                const int hi = hex(token[3]), lo = hex(token[4]);
                if (hi >= 0 && lo >= 0) byte = hi * 16 + lo;
            }
            if (byte >= 0) {
                bytes.push_back(static_cast<char>(byte));
            } else {
                flush();
                out.push_back(std::move(token));
            }
        }
        flush();
        tokens.swap(out);
    }
};

class Fuse : public Decoder {
public:
    void decode_chain(std::vector<std::string>& tokens) const override {
        std::string joined;
        for (const std::string& token : tokens) joined += token;
        tokens.assign(1, std::move(joined));
    }
};

class Strip : public Decoder {
public:
    Strip(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (std::string& token : tokens) {
            std::vector<std::pair<size_t, char32_t>> chars;  // byte offset, code point
            size_t pos = 0;
            while (pos < token.size()) {
                char32_t cp;
                const size_t length = utf8_next(token, pos, cp);
                chars.emplace_back(pos, cp);
                pos += length;
            }
            size_t start_cut = 0;
            for (size_t i = 0; i < std::min(start_, chars.size()); ++i) {
                if (chars[i].second != content_) break;
                start_cut = i + 1;
            }
            size_t stop_cut = chars.size();
            for (size_t i = 0; i < stop_ && i < chars.size(); ++i) {
                const size_t index = chars.size() - i - 1;
                if (chars[index].second != content_) break;
                stop_cut = index;
            }
            if (start_cut >= stop_cut) {
                token.clear();
                continue;
            }
            const size_t begin = chars[start_cut].first;
            const size_t end = stop_cut < chars.size() ? chars[stop_cut].first : token.size();
            token = token.substr(begin, end - begin);
        }
    }

private:
    char32_t content_;
    size_t start_, stop_;
};

class Replace : public Decoder {
public:
    Replace(const json& pattern, std::string content) : content_(std::move(content)) {
        if (pattern.contains("String")) regex_ = std::make_unique<Regex>(pattern.at("String").get<std::string>(), true);
        else if (pattern.contains("Regex")) regex_ = std::make_unique<Regex>(pattern.at("Regex").get<std::string>(), false);
        else throw ConfigError("Replace pattern must be {\"String\": ...} or {\"Regex\": ...}");
    }
    void decode_chain(std::vector<std::string>& tokens) const override {
        std::vector<std::pair<size_t, size_t>> matches;
        for (std::string& token : tokens) {
            regex_->find_all(token, matches);
            if (matches.empty()) continue;
            std::string out;
            size_t last = 0;
            for (const auto& [begin, end] : matches) {
                out.append(token, last, begin - last);
                out += content_;
                last = end;
            }
            out.append(token, last, std::string::npos);
            token.swap(out);
        }
    }

private:
    std::unique_ptr<Regex> regex_;
    std::string content_;
};

class BpeDecoder : public Decoder {
public:
    explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (size_t i = 0; i < tokens.size(); ++i)
            tokens[i] = replace_all(std::move(tokens[i]), suffix_, i + 1 == tokens.size() ? "" : " ");
    }

private:
    std::string suffix_;
};

class Ctc : public Decoder {
public:
    Ctc(std::string pad, std::string delimiter, bool cleanup) : pad_(std::move(pad)), delimiter_(std::move(delimiter)), cleanup_(cleanup) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        std::vector<std::string> out;
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (i > 0 && tokens[i] == tokens[i - 1]) continue;  // dedup
            std::string token = replace_all(tokens[i], pad_, "");
            if (cleanup_) token = replace_all(cleanup(std::move(token)), delimiter_, " ");
            if (!token.empty()) out.push_back(std::move(token));
        }
        tokens.swap(out);
    }

private:
    std::string pad_, delimiter_;
    bool cleanup_;
};

class Sequence : public Decoder {
public:
    explicit Sequence(std::vector<std::unique_ptr<Decoder>> items) : items_(std::move(items)) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (const auto& item : items_) item->decode_chain(tokens);
    }

private:
    std::vector<std::unique_ptr<Decoder>> items_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const json& config) {
    if (config.is_null()) return nullptr;
    if (!config.is_object()) throw ConfigError("decoder must be an object");
    const std::string type = json_string(config, "type");
    if (type == "ByteLevel") return std::make_unique<ByteLevel>();
    if (type == "Metaspace") {
        bool prepend = true;
        const json& scheme = json_field(config, "prepend_scheme");
        if (scheme.is_string()) prepend = scheme.get<std::string>() != "never";
        const json& add_prefix = json_field(config, "add_prefix_space");
        if (add_prefix.is_boolean() && !add_prefix.get<bool>()) prepend = false;
        return std::make_unique<Metaspace>(json_string(config, "replacement", "\xE2\x96\x81"), prepend);
    }
    if (type == "WordPiece") return std::make_unique<WordPiece>(json_string(config, "prefix", "##"), json_bool(config, "cleanup", true));
    if (type == "ByteFallback") return std::make_unique<ByteFallback>();
    if (type == "Fuse") return std::make_unique<Fuse>();
    if (type == "Strip") {
        const std::string content = json_string(config, "content", " ");
        if (content.empty() || utf8_count(content) != 1) throw ConfigError("Strip decoder content must be one character");
        char32_t cp;
        utf8_next(content, 0, cp);
        const json& start = json_field(config, "start");
        const json& stop = json_field(config, "stop");
        return std::make_unique<Strip>(cp, start.is_number() ? start.get<size_t>() : 0, stop.is_number() ? stop.get<size_t>() : 0);
    }
    if (type == "Replace") return std::make_unique<Replace>(json_field(config, "pattern"), json_string(config, "content"));
    if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(json_string(config, "suffix", "</w>"));
    if (type == "CTC")
        return std::make_unique<Ctc>(json_string(config, "pad_token", "<pad>"), json_string(config, "word_delimiter_token", "|"),
                                     json_bool(config, "cleanup", true));
    if (type == "Sequence") {
        std::vector<std::unique_ptr<Decoder>> items;
        for (const json& item : json_field(config, "decoders"))
            if (auto decoder = make_decoder(item)) items.push_back(std::move(decoder));
        return std::make_unique<Sequence>(std::move(items));
    }
    throw ConfigError("unknown decoder type '" + type + "'");
}

}  // namespace oxinfer::tokenizer
