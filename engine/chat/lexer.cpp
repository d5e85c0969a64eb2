#include "chat/lexer.h"

#include "chat/text.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace oxinfer::jinja {

namespace {

bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex_digit(char c) { return is_ascii_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Python whitespace (what `\s` matches) at byte offset `i`; returns its byte length or 0.
size_t space_at(std::string_view s, size_t i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) return text::is_space(c) ? 1 : 0;
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (i + len > s.size()) return 0;
    const std::u32string cp = text::decode(s.substr(i, len));
    return cp.size() == 1 && text::is_space(cp[0]) ? len : 0;
}

size_t skip_spaces(std::string_view s, size_t i) {
    while (i < s.size()) {
        const size_t n = space_at(s, i);
        if (!n) break;
        i += n;
    }
    return i;
}

// Python's str.rstrip() (whitespace).
std::string_view rstrip_view(std::string_view s) {
    const std::string stripped = text::strip(s, std::nullopt, false, true);
    return s.substr(0, stripped.size());
}

bool all_space(std::string_view s) {
    if (s.empty()) return false;
    return skip_spaces(s, 0) == s.size();
}

// The data before a tag, with the tag's whitespace control applied (jinja2's OptionalLStrip).
std::string_view strip_before_tag(std::string_view text, char sign, bool lstrip, bool line_starting) {
    if (sign == '-') return rstrip_view(text);
    if (sign != '+' && lstrip) {
        const size_t newline = text.rfind('\n');
        const size_t l_pos = newline == std::string_view::npos ? 0 : newline + 1;
        if ((l_pos > 0 || line_starting) && all_space(text.substr(l_pos))) return text.substr(0, l_pos);
    }
    return text;
}

// Matches `{%(-|+|)\s*raw\s*(?:-%}\s*|%})` (or endraw with the block-end forms) at `pos`.
struct TagMatch {
    bool matched = false;
    char sign = 0;
    size_t end = 0;
};

TagMatch match_raw_tag(std::string_view s, size_t pos, std::string_view word, bool is_end, bool trim_blocks) {
    TagMatch m;
    if (s.compare(pos, 2, "{%") != 0) return m;
    size_t i = pos + 2;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) m.sign = s[i++];
    i = skip_spaces(s, i);
    if (s.compare(i, word.size(), word) != 0) return m;
    i = skip_spaces(s, i + word.size());
    if (is_end && s.compare(i, 3, "+%}") == 0) {
        m.end = i + 3;
    } else if (s.compare(i, 3, "-%}") == 0) {
        m.end = skip_spaces(s, i + 3);
    } else if (s.compare(i, 2, "%}") == 0) {
        m.end = i + 2;
        if (is_end && trim_blocks && m.end < s.size() && s[m.end] == '\n') ++m.end;
    } else {
        return m;
    }
    m.matched = true;
    return m;
}

class Lexer {
public:
    Lexer(std::string_view source, const LexerOptions& options) : s_(source), options_(options) {}

    std::vector<Token> run() {
        while (pos_ < s_.size()) root();
        push(TokenType::Eof, "", s_.size());
        return std::move(tokens_);
    }

private:
    void push(TokenType type, std::string value, size_t offset) {
        Token token;
        token.type = type;
        token.value = std::move(value);
        token.offset = offset;
        tokens_.push_back(std::move(token));
    }

    [[noreturn]] void fail(std::string message, size_t offset) { throw SyntaxError{std::move(message), offset}; }

    void root() {
        size_t p = pos_;
        while (true) {
            p = s_.find('{', p);
            if (p == std::string_view::npos || p + 1 >= s_.size()) {
                p = std::string_view::npos;
                break;
            }
            const char next = s_[p + 1];
            if (next == '{' || next == '%' || next == '#') break;
            ++p;
        }
        if (p == std::string_view::npos) {
            push(TokenType::Data, std::string(s_.substr(pos_)), pos_);
            pos_ = s_.size();
            return;
        }
        const std::string_view text = s_.substr(pos_, p - pos_);
        const char kind = s_[p + 1];
        if (kind == '%') {
            const TagMatch raw = match_raw_tag(s_, p, "raw", false, options_.trim_blocks);
            if (raw.matched) {
                emit_data(strip_before_tag(text, raw.sign, options_.lstrip_blocks, line_starting_), pos_);
                raw_block(p, raw);
                return;
            }
        }
        const char sign = (p + 2 < s_.size() && (s_[p + 2] == '-' || s_[p + 2] == '+')) ? s_[p + 2] : 0;
        emit_data(strip_before_tag(text, sign, options_.lstrip_blocks && kind != '{', line_starting_), pos_);
        pos_ = p + 2 + (sign ? 1 : 0);
        line_starting_ = false;
        if (kind == '#') {
            comment(p);
        } else {
            push(kind == '%' ? TokenType::BlockBegin : TokenType::VariableBegin, "", p);
            tag(kind == '%', p);
        }
    }

    void emit_data(std::string_view text, size_t offset) {
        if (!text.empty()) push(TokenType::Data, std::string(text), offset);
    }

    void raw_block(size_t begin, const TagMatch& raw) {
        line_starting_ = raw.end > begin && s_[raw.end - 1] == '\n';
        size_t q = raw.end;
        TagMatch end;
        while (true) {
            q = s_.find("{%", q);
            if (q == std::string_view::npos) fail("Missing end of raw directive", begin);
            end = match_raw_tag(s_, q, "endraw", true, options_.trim_blocks);
            if (end.matched) break;
            ++q;
        }
        const std::string_view content = s_.substr(raw.end, q - raw.end);
        emit_data(strip_before_tag(content, end.sign, options_.lstrip_blocks, line_starting_), raw.end);
        pos_ = end.end;
        line_starting_ = s_[pos_ - 1] == '\n';
    }

    void comment(size_t begin) {
        size_t q = pos_;
        while (true) {
            if (q >= s_.size()) fail("Missing end of comment tag", begin);
            if (s_.compare(q, 3, "+#}") == 0) {
                pos_ = q + 3;
                break;
            }
            if (s_.compare(q, 3, "-#}") == 0) {
                pos_ = skip_spaces(s_, q + 3);
                break;
            }
            if (s_.compare(q, 2, "#}") == 0) {
                pos_ = q + 2;
                if (options_.trim_blocks && pos_ < s_.size() && s_[pos_] == '\n') ++pos_;
                break;
            }
            ++q;
        }
        line_starting_ = s_[pos_ - 1] == '\n';
    }

    // Tokens inside {% ... %} (block) or {{ ... }} (variable), up to and including the end tag.
    void tag(bool block, size_t begin) {
        std::vector<char> balancing;
        while (pos_ < s_.size()) {
            if (balancing.empty() && end_tag(block)) return;
            const size_t start = pos_;
            const char c = s_[pos_];
            if (const size_t n = space_at(s_, pos_); n) {
                pos_ = skip_spaces(s_, pos_);
                line_starting_ = s_[pos_ - 1] == '\n';
                continue;
            }
            line_starting_ = false;
            if (number(start)) continue;
            if (name(start)) continue;
            if (c == '\'' || c == '"') {
                string_literal(start);
                continue;
            }
            if (op(start, balancing)) continue;
            std::string shown = text::repr(std::string(s_.substr(pos_, utf8_length(pos_))));
            fail("unexpected char " + shown + " at " + std::to_string(text::length(s_.substr(0, pos_))), pos_);
        }
        (void)begin;  // end of template inside a tag: the parser reports what it expected
    }

    size_t utf8_length(size_t at) const {
        const unsigned char c = static_cast<unsigned char>(s_[at]);
        size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        return std::min(n, s_.size() - at);
    }

    bool end_tag(bool block) {
        if (block) {
            if (s_.compare(pos_, 3, "+%}") == 0) {
                push(TokenType::BlockEnd, "", pos_);
                pos_ += 3;
            } else if (s_.compare(pos_, 3, "-%}") == 0) {
                push(TokenType::BlockEnd, "", pos_);
                pos_ = skip_spaces(s_, pos_ + 3);
            } else if (s_.compare(pos_, 2, "%}") == 0) {
                push(TokenType::BlockEnd, "", pos_);
                pos_ += 2;
                if (options_.trim_blocks && pos_ < s_.size() && s_[pos_] == '\n') ++pos_;
            } else {
                return false;
            }
        } else {
            if (s_.compare(pos_, 3, "-}}") == 0) {
                push(TokenType::VariableEnd, "", pos_);
                pos_ = skip_spaces(s_, pos_ + 3);
            } else if (s_.compare(pos_, 2, "}}") == 0) {
                push(TokenType::VariableEnd, "", pos_);
                pos_ += 2;
            } else {
                return false;
            }
        }
        line_starting_ = s_[pos_ - 1] == '\n';
        return true;
    }

    // `(\d+_)*\d+` at i: returns the end or npos.
    size_t digits_with_underscores(size_t i) const {
        if (i >= s_.size() || !is_ascii_digit(s_[i])) return std::string_view::npos;
        while (true) {
            while (i < s_.size() && is_ascii_digit(s_[i])) ++i;
            if (i + 1 < s_.size() && s_[i] == '_' && is_ascii_digit(s_[i + 1])) {
                ++i;
                continue;
            }
            return i;
        }
    }

    bool number(size_t start) {
        if (!is_ascii_digit(s_[start])) return false;
        // float: (?<!\.)(\d+_)*\d+((\.(\d+_)*\d+)?e[+-]?(\d+_)*\d+|\.(\d+_)*\d+)
        if (start == 0 || s_[start - 1] != '.') {
            const size_t int_end = digits_with_underscores(start);
            size_t end = std::string_view::npos;
            size_t i = int_end;
            size_t frac_end = std::string_view::npos;
            if (i < s_.size() && s_[i] == '.') frac_end = digits_with_underscores(i + 1);
            const size_t exp_start = frac_end != std::string_view::npos ? frac_end : int_end;
            if (exp_start < s_.size() && (s_[exp_start] == 'e' || s_[exp_start] == 'E')) {
                size_t k = exp_start + 1;
                if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
                const size_t exp_end = digits_with_underscores(k);
                if (exp_end != std::string_view::npos) end = exp_end;
            }
            if (end == std::string_view::npos && frac_end != std::string_view::npos) end = frac_end;
            if (end != std::string_view::npos) {
                std::string literal;
                for (size_t k = start; k < end; ++k)
                    if (s_[k] != '_') literal += s_[k];
                Token token;
                token.type = TokenType::Float;
                token.value = std::string(s_.substr(start, end - start));
                token.float_value = std::strtod(literal.c_str(), nullptr);
                token.offset = start;
                tokens_.push_back(std::move(token));
                pos_ = end;
                return true;
            }
        }
        // integer: 0b.. | 0o.. | 0x.. | [1-9](_?\d)* | 0(_?0)*
        size_t end = start;
        int base = 10;
        const auto prefixed = [&](char letter, auto valid) -> bool {
            if (s_[start] != '0' || start + 1 >= s_.size() || (s_[start + 1] | 0x20) != letter) return false;
            size_t i = start + 2;
            size_t last = std::string_view::npos;
            while (true) {
                size_t k = i;
                if (k < s_.size() && s_[k] == '_') ++k;
                if (k < s_.size() && valid(s_[k])) {
                    i = k + 1;
                    last = i;
                } else {
                    break;
                }
            }
            if (last == std::string_view::npos) return false;
            end = last;
            return true;
        };
        if (prefixed('b', [](char c) { return c == '0' || c == '1'; })) {
            base = 2;
        } else if (prefixed('o', [](char c) { return c >= '0' && c <= '7'; })) {
            base = 8;
        } else if (prefixed('x', is_hex_digit)) {
            base = 16;
        } else {
            const char want_first = s_[start];
            end = start + 1;
            while (true) {
                size_t k = end;
                if (k < s_.size() && s_[k] == '_') ++k;
                const bool ok = k < s_.size() && (want_first == '0' ? s_[k] == '0' : is_ascii_digit(s_[k]));
                if (!ok) break;
                end = k + 1;
            }
        }
        std::string digits;
        for (size_t k = start + (base == 10 ? 0 : 2); k < end; ++k)
            if (s_[k] != '_') digits += s_[k];
        errno = 0;
        const unsigned long long parsed = std::strtoull(digits.c_str(), nullptr, base);
        if (errno == ERANGE || parsed > static_cast<unsigned long long>(INT64_MAX))
            fail("integer literal too large for oxinfer's 64-bit integers", start);
        Token token;
        token.type = TokenType::Integer;
        token.value = std::string(s_.substr(start, end - start));
        token.int_value = static_cast<int64_t>(parsed);
        token.offset = start;
        tokens_.push_back(std::move(token));
        pos_ = end;
        return true;
    }

    bool name_char(size_t i, bool first, size_t& len) const {
        const unsigned char c = static_cast<unsigned char>(s_[i]);
        if (c < 0x80) {
            len = 1;
            return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && is_ascii_digit(c));
        }
        len = utf8_length(i);
        const std::u32string cp = text::decode(s_.substr(i, len));
        return cp.size() == 1 && (text::is_alpha(cp[0]) || (!first && text::is_digit(cp[0])));
    }

    bool name(size_t start) {
        size_t len = 0;
        if (!name_char(start, true, len)) return false;
        size_t i = start + len;
        while (i < s_.size() && name_char(i, false, len)) i += len;
        push(TokenType::Name, std::string(s_.substr(start, i - start)), start);
        pos_ = i;
        return true;
    }

    void string_literal(size_t start) {
        const char quote = s_[start];
        size_t i = start + 1;
        while (i < s_.size() && s_[i] != quote) {
            if (s_[i] == '\\') ++i;
            ++i;
        }
        if (i >= s_.size()) fail("unexpected char " + text::repr(std::string(1, quote)) + " at " +
                                     std::to_string(text::length(s_.substr(0, start))),
                                 start);
        push(TokenType::String, decode_escapes(s_.substr(start + 1, i - start - 1), start), start);
        pos_ = i + 1;
    }

    // Python's unicode-escape decoding of a string literal's body.
    std::string decode_escapes(std::string_view body, size_t offset) {
        std::string out;
        for (size_t i = 0; i < body.size(); ++i) {
            const char c = body[i];
            if (c != '\\' || i + 1 >= body.size()) {
                out += c;
                continue;
            }
            const char e = body[++i];
            const auto hex_escape = [&](size_t count, const char* name) {
                char32_t value = 0;
                for (size_t k = 1; k <= count; ++k) {
                    if (i + k >= body.size() || !is_hex_digit(body[i + k]))
                        fail(std::string("truncated ") + name + " escape", offset);
                    const char h = body[i + k];
                    value = value * 16 + static_cast<char32_t>(is_ascii_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
                }
                if (value > 0x10FFFF) fail("illegal Unicode character", offset);
                if (value >= 0xD800 && value <= 0xDFFF) fail("surrogate code points are not supported", offset);
                text::append_utf8(out, value);
                i += count;
            };
            switch (e) {
                case '\n': break;
                case '\\': out += '\\'; break;
                case '\'': out += '\''; break;
                case '"': out += '"'; break;
                case 'a': out += '\a'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'v': out += '\v'; break;
                case 'x': hex_escape(2, "\\xXX"); break;
                case 'u': hex_escape(4, "\\uXXXX"); break;
                case 'U': hex_escape(8, "\\UXXXXXXXX"); break;
                case 'N': fail("\\N{...} escapes are not supported", offset);
                default:
                    if (e >= '0' && e <= '7') {
                        char32_t value = static_cast<char32_t>(e - '0');
                        for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
                            value = value * 8 + static_cast<char32_t>(body[++i] - '0');
                        text::append_utf8(out, value);
                    } else {
                        out += '\\';
                        out += e;
                    }
            }
        }
        return out;
    }

    bool op(size_t start, std::vector<char>& balancing) {
        static const char* two[] = {"//", "**", "==", "!=", ">=", "<="};
        for (const char* candidate : two) {
            if (s_.compare(start, 2, candidate) == 0) {
                push(TokenType::Operator, candidate, start);
                pos_ = start + 2;
                return true;
            }
        }
        const char c = s_[start];
        static const std::string_view singles = "+-/*%~[](){}<>=.:|,;";
        if (singles.find(c) == std::string_view::npos) return false;
        if (c == '{' || c == '(' || c == '[') {
            balancing.push_back(c == '{' ? '}' : c == '(' ? ')' : ']');
        } else if (c == '}' || c == ')' || c == ']') {
            if (balancing.empty()) fail(std::string("unexpected '") + c + "'", start);
            const char expected = balancing.back();
            balancing.pop_back();
            if (expected != c) fail(std::string("unexpected '") + c + "', expected '" + expected + "'", start);
        }
        push(TokenType::Operator, std::string(1, c), start);
        pos_ = start + 1;
        return true;
    }

    std::string_view s_;
    LexerOptions options_;
    size_t pos_ = 0;
    bool line_starting_ = true;
    std::vector<Token> tokens_;
};

}  // namespace

std::string normalize_source(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

std::vector<Token> tokenize(std::string_view normalized_source, const LexerOptions& options) {
    return Lexer(normalized_source, options).run();
}

SourceMap::SourceMap(std::string_view source) : source_(source) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < source.size(); ++i)
        if (source[i] == '\n') line_starts_.push_back(i + 1);
}

uint32_t SourceMap::line(size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    return static_cast<uint32_t>(it - line_starts_.begin());
}

uint32_t SourceMap::column(size_t offset) const {
    const size_t start = line_starts_[line(offset) - 1];
    offset = std::min(offset, source_.size());
    return static_cast<uint32_t>(text::length(source_.substr(start, offset - start)) + 1);
}

}  // namespace oxinfer::jinja
