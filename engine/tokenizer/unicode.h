#pragma once
// Unicode for the tokenizers: UTF-8 steps, character properties and normalization through ICU,
// and regular expressions through PCRE2 (UTF + UCP, JIT) with the iteration rules of the
// Oniguruma engine that Hugging Face tokenizers uses.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oxinfer::tokenizer {

// Decodes the code point at `pos` of valid UTF-8; returns its byte length.
inline size_t utf8_next(std::string_view text, size_t pos, char32_t& cp) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data()) + pos;
    const unsigned char c = s[0];
    if (c < 0x80) {
        cp = c;
        return 1;
    }
    if (c < 0xE0) {
        cp = (char32_t(c & 0x1F) << 6) | (s[1] & 0x3F);
        return 2;
    }
    if (c < 0xF0) {
        cp = (char32_t(c & 0x0F) << 12) | (char32_t(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        return 3;
    }
    cp = (char32_t(c & 0x07) << 18) | (char32_t(s[1] & 0x3F) << 12) | (char32_t(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    return 4;
}
// Byte length of the character that starts with `lead`.
inline size_t utf8_length(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }
void utf8_append(std::string& out, char32_t cp);
// Number of code points of valid UTF-8.
size_t utf8_count(std::string_view text);
bool is_valid_utf8(std::string_view text);
// Valid UTF-8 with U+FFFD for each maximal invalid subsequence (like Rust's from_utf8_lossy).
std::string to_valid_utf8(std::string_view text);
// Byte length of a valid UTF-8 prefix of `text` that leaves out an incomplete sequence at its end.
size_t complete_utf8_prefix(std::string_view text);

// Character properties (the Rust standard library's definitions, through ICU's data).
bool is_whitespace(char32_t cp);          // White_Space
bool is_numeric(char32_t cp);             // General_Category N*
bool is_alphanumeric(char32_t cp);        // Alphabetic or N*
bool is_punctuation(char32_t cp);         // ASCII punctuation or General_Category P*
bool is_other(char32_t cp);               // General_Category C*
bool is_mark(char32_t cp);                // General_Category M*
bool is_mark_nonspacing(char32_t cp);     // General_Category Mn
bool is_word_char(char32_t cp);           // \w of Rust's regex crate (UTS #18)

enum class NormalForm { NFC, NFD, NFKC, NFKD };
std::string normalize(std::string_view text, NormalForm form);
// Rust's char::to_lowercase (full, context-free mapping) of each character.
std::string lowercase(std::string_view text);
// Byte offsets where extended grapheme clusters start, plus text.size().
std::vector<size_t> grapheme_boundaries(std::string_view text);

// A compiled pattern. Regex patterns are written for Oniguruma: they are adapted to PCRE2
// where the two differ (\s also matches U+0085 there). Literal patterns match their text.
class Regex {
public:
    Regex(std::string_view pattern, bool literal);
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    // Non-overlapping matches from left to right as [begin, end) byte offsets; after an empty
    // match the search resumes one character later (Oniguruma's find_iter).
    void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const;
    const std::string& pattern() const { return pattern_; }

private:
    std::string pattern_;
    std::string literal_;
    bool is_literal_ = false;
    void* code_ = nullptr;  // pcre2_code_8
};

}  // namespace oxinfer::tokenizer
