// UTF-8, character properties and normalization (ICU), regular expressions (PCRE2).

#include "unicode.h"

#include "components.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <unicode/brkiter.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/utext.h>
#include <unicode/bytestream.h>

#include <cstring>
#include <mutex>

namespace oxinfer::tokenizer {

size_t StringHash::operator()(std::string_view text) const noexcept {
    // FNV-1a over 8-byte words: fast for the short strings of vocabularies.
    uint64_t hash = 0xcbf29ce484222325ull;
    size_t i = 0;
    for (; i + 8 <= text.size(); i += 8) {
        uint64_t word;
        std::memcpy(&word, text.data() + i, 8);
        hash = (hash ^ word) * 0x100000001b3ull;
        hash ^= hash >> 29;
    }
    for (; i < text.size(); ++i) hash = (hash ^ static_cast<unsigned char>(text[i])) * 0x100000001b3ull;
    return static_cast<size_t>(hash ^ (hash >> 32));
}

void utf8_append(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

size_t utf8_count(std::string_view text) {
    size_t count = 0;
    for (unsigned char c : text) count += (c & 0xC0) != 0x80;
    return count;
}

namespace {

// Length of the valid UTF-8 sequence at `pos`, or 0 when it is invalid or cut short; `needed`
// gets how many bytes the sequence would need when it is only cut short (else 0).
size_t valid_sequence(std::string_view text, size_t pos, size_t* cut_short = nullptr) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    const unsigned char c = s[pos];
    if (cut_short) *cut_short = 0;
    if (c < 0x80) return 1;
    size_t length;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) length = 2;
    else if (c == 0xE0) length = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) length = 3;
    else if (c == 0xED) length = 3, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF) length = 3;
    else if (c == 0xF0) length = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) length = 4;
    else if (c == 0xF4) length = 4, hi = 0x8F;
    else return 0;
    for (size_t k = 1; k < length; ++k) {
        if (pos + k >= n) {
            if (cut_short) *cut_short = length;
            return 0;
        }
        const unsigned char b = s[pos + k];
        const unsigned char low = k == 1 ? lo : 0x80, high = k == 1 ? hi : 0xBF;
        if (b < low || b > high) return 0;
    }
    return length;
}

// Bytes of the maximal invalid subsequence at `pos` (Unicode's "maximal subpart" rule).
size_t invalid_length(std::string_view text, size_t pos) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const unsigned char c = s[pos];
    size_t length;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) length = 2;
    else if (c == 0xE0) length = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) length = 3;
    else if (c == 0xED) length = 3, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF) length = 3;
    else if (c == 0xF0) length = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) length = 4;
    else if (c == 0xF4) length = 4, hi = 0x8F;
    else return 1;
    size_t k = 1;
    for (; k < length && pos + k < text.size(); ++k) {
        const unsigned char b = s[pos + k];
        const unsigned char low = k == 1 ? lo : 0x80, high = k == 1 ? hi : 0xBF;
        if (b < low || b > high) break;
    }
    return k;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
    size_t pos = 0;
    while (pos < text.size()) {
        if (static_cast<unsigned char>(text[pos]) < 0x80) {
            ++pos;
            continue;
        }
        const size_t length = valid_sequence(text, pos);
        if (length == 0) return false;
        pos += length;
    }
    return true;
}

std::string to_valid_utf8(std::string_view text) {
    if (is_valid_utf8(text)) return std::string(text);
    std::string out;
    out.reserve(text.size() + 8);
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t length = valid_sequence(text, pos);
        if (length) {
            out.append(text.substr(pos, length));
            pos += length;
        } else {
            out += "\xEF\xBF\xBD";
            pos += invalid_length(text, pos);
        }
    }
    return out;
}

size_t complete_utf8_prefix(std::string_view text) {
    // Only the last 3 bytes can start a sequence that is cut short.
    const size_t start = text.size() > 3 ? text.size() - 3 : 0;
    for (size_t pos = start; pos < text.size(); ++pos) {
        const unsigned char c = static_cast<unsigned char>(text[pos]);
        if ((c & 0xC0) == 0x80) continue;
        size_t cut = 0;
        if (valid_sequence(text, pos, &cut) == 0 && cut) return pos;
    }
    return text.size();
}

bool is_whitespace(char32_t cp) {
    if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
    return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_WHITE_SPACE);
}

bool is_numeric(char32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_N_MASK) != 0;
}

bool is_alphanumeric(char32_t cp) {
    if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_ALPHABETIC) || is_numeric(cp);
}

bool is_punctuation(char32_t cp) {
    if (cp < 0x80) return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) || (cp >= 0x7B && cp <= 0x7E);
    return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_P_MASK) != 0;
}

bool is_other(char32_t cp) { return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_C_MASK) != 0; }

bool is_mark(char32_t cp) {
    if (cp < 0x300) return false;
    return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_M_MASK) != 0;
}

bool is_mark_nonspacing(char32_t cp) {
    if (cp < 0x300) return false;
    return u_charType(static_cast<UChar32>(cp)) == U_NON_SPACING_MARK;
}

bool is_word_char(char32_t cp) {
    if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
    const UChar32 c = static_cast<UChar32>(cp);
    if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL)) return true;
    return (U_GET_GC_MASK(c) & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

namespace {

const icu::Normalizer2& normalizer_for(NormalForm form) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* normalizer = nullptr;
    switch (form) {
        case NormalForm::NFC: normalizer = icu::Normalizer2::getNFCInstance(status); break;
        case NormalForm::NFD: normalizer = icu::Normalizer2::getNFDInstance(status); break;
        case NormalForm::NFKC: normalizer = icu::Normalizer2::getNFKCInstance(status); break;
        case NormalForm::NFKD: normalizer = icu::Normalizer2::getNFKDInstance(status); break;
    }
    if (U_FAILURE(status) || !normalizer) throw std::runtime_error(std::string("ICU normalizer unavailable: ") + u_errorName(status));
    return *normalizer;
}

bool is_ascii(std::string_view text) {
    for (unsigned char c : text)
        if (c >= 0x80) return false;
    return true;
}

}  // namespace

std::string normalize(std::string_view text, NormalForm form) {
    if (is_ascii(text)) return std::string(text);
    const icu::Normalizer2& normalizer = normalizer_for(form);
    UErrorCode status = U_ZERO_ERROR;
    const icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
    if (normalizer.isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return std::string(text);
    status = U_ZERO_ERROR;
    std::string out;
    out.reserve(text.size() + text.size() / 4);
    icu::StringByteSink<std::string> sink(&out);
    normalizer.normalizeUTF8(0, piece, sink, nullptr, status);
    if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU normalization failed: ") + u_errorName(status));
    return out;
}

std::string lowercase(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
        const unsigned char c = static_cast<unsigned char>(text[pos]);
        if (c < 0x80) {
            out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
            ++pos;
            continue;
        }
        char32_t cp;
        pos += utf8_next(text, pos, cp);
        // The only unconditional multi-character lowercase mapping (SpecialCasing.txt).
        if (cp == 0x130) {
            out += "i\xCC\x87";
            continue;
        }
        utf8_append(out, static_cast<char32_t>(u_tolower(static_cast<UChar32>(cp))));
    }
    return out;
}

std::vector<size_t> grapheme_boundaries(std::string_view text) {
    std::vector<size_t> bounds;
    if (text.empty()) {
        bounds.push_back(0);
        return bounds;
    }
    if (is_ascii(text)) {
        // ASCII: every character is its own cluster except CR LF.
        for (size_t i = 0; i < text.size(); ++i) {
            if (i > 0 && text[i] == '\n' && text[i - 1] == '\r') continue;
            bounds.push_back(i);
        }
        bounds.push_back(text.size());
        return bounds;
    }
    UErrorCode status = U_ZERO_ERROR;
    thread_local std::unique_ptr<icu::BreakIterator> iterator;
    if (!iterator) {
        iterator.reset(icu::BreakIterator::createCharacterInstance(icu::Locale::getRoot(), status));
        if (U_FAILURE(status) || !iterator) throw std::runtime_error("ICU grapheme iterator unavailable");
    }
    UText* utext = utext_openUTF8(nullptr, text.data(), static_cast<int64_t>(text.size()), &status);
    if (U_FAILURE(status)) throw std::runtime_error("ICU utext_openUTF8 failed");
    iterator->setText(utext, status);
    for (int32_t b = iterator->first(); b != icu::BreakIterator::DONE; b = iterator->next()) bounds.push_back(static_cast<size_t>(b));
    utext_close(utext);
    if (bounds.empty() || bounds.back() != text.size()) bounds.push_back(text.size());
    return bounds;
}

// ---- Regex

namespace {

// Oniguruma's \s is Unicode White_Space, which includes U+0085; PCRE2's \s with UCP does not.
std::string adapt_pattern(std::string_view pattern) {
    std::string out;
    out.reserve(pattern.size() + 16);
    bool in_class = false;
    size_t class_start = 0;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char e = pattern[i + 1];
            if (e == 's') out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
            else if (e == 'S' && !in_class) out += "[^\\s\\x{85}]";
            else {
                out.push_back(c);
                out.push_back(e);
            }
            ++i;
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            class_start = out.size();
            out.push_back(c);
            if (i + 1 < pattern.size() && pattern[i + 1] == '^') out.push_back(pattern[++i]);
            if (i + 1 < pattern.size() && pattern[i + 1] == ']') out.push_back(pattern[++i]);
            continue;
        }
        if (in_class && c == ']' && out.size() > class_start) in_class = false;
        out.push_back(c);
    }
    return out;
}

struct MatchState {
    pcre2_match_data* data = nullptr;
    pcre2_match_context* context = nullptr;
    pcre2_jit_stack* stack = nullptr;
    MatchState() {
        data = pcre2_match_data_create(1, nullptr);
        context = pcre2_match_context_create(nullptr);
        stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
        if (context && stack) pcre2_jit_stack_assign(context, nullptr, stack);
    }
    ~MatchState() {
        pcre2_match_data_free(data);
        pcre2_match_context_free(context);
        pcre2_jit_stack_free(stack);
    }
};

MatchState& match_state() {
    thread_local MatchState state;
    return state;
}

}  // namespace

Regex::Regex(std::string_view pattern, bool literal) : pattern_(pattern) {
    if (literal) {
        is_literal_ = true;
        literal_ = std::string(pattern);
        return;
    }
    const std::string adapted = adapt_pattern(pattern);
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(adapted.data()), adapted.size(), PCRE2_UTF | PCRE2_UCP, &error,
                                     &offset, nullptr);
    if (!code) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error, message, sizeof message);
        throw ConfigError("invalid regex '" + std::string(pattern) + "': " + reinterpret_cast<char*>(message) + " at offset " +
                          std::to_string(offset));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter when JIT is unavailable
    code_ = code;
}

Regex::~Regex() {
    if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const {
    matches.clear();
    if (is_literal_) {
        if (literal_.empty()) return;
        size_t pos = 0;
        while ((pos = text.find(literal_, pos)) != std::string_view::npos) {
            matches.emplace_back(pos, pos + literal_.size());
            pos += literal_.size();
        }
        return;
    }
    MatchState& state = match_state();
    auto* code = static_cast<pcre2_code*>(code_);
    size_t start = 0;
    bool have_last = false;
    size_t last_end = 0;
    while (start <= text.size()) {
        const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), start, PCRE2_NO_UTF_CHECK,
                                   state.data, state.context);
        if (rc < 0) {
            if (rc == PCRE2_ERROR_NOMATCH) break;
            throw std::runtime_error("regex '" + pattern_ + "' failed to match (PCRE2 error " + std::to_string(rc) + ")");
        }
        const PCRE2_SIZE* vector = pcre2_get_ovector_pointer(state.data);
        const size_t begin = vector[0], end = vector[1];
        if (begin == end && have_last && last_end == end) {
            // An empty match right after the previous one: skip one character.
            if (start >= text.size()) break;
            start += utf8_length(static_cast<unsigned char>(text[start]));
            continue;
        }
        matches.emplace_back(begin, end);
        have_last = true;
        last_end = end;
        start = end;
    }
}

}  // namespace oxinfer::tokenizer
