#pragma once
// The Jinja lexer: splits a template into data and the tokens of {{ ... }} and {% ... %} tags,
// applying whitespace control exactly as jinja2's lexer does ({%- -%} {{- -}} {#- -#} {%+ +%},
// trim_blocks: the first newline after a block or comment tag is dropped; lstrip_blocks:
// whitespace from the start of a line up to a block or comment tag is dropped). Comments are
// removed and {% raw %} content becomes data.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oxinfer::jinja {

enum class TokenType : uint8_t {
    Data,
    VariableBegin,
    VariableEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Integer,
    Float,
    Operator,
    Eof,
};

struct Token {
    TokenType type = TokenType::Eof;
    std::string value;  // Data text, name, decoded string literal, operator text
    int64_t int_value = 0;
    double float_value = 0.0;
    size_t offset = 0;  // byte offset in the normalised source
};

// A syntax error at a byte offset of the normalised source.
struct SyntaxError {
    std::string message;
    size_t offset = 0;
};

struct LexerOptions {
    bool trim_blocks = true;
    bool lstrip_blocks = true;
};

// jinja2 normalises the source first: \r\n and \r become \n, and one trailing newline is
// dropped (keep_trailing_newline=False). Offsets in tokens refer to the result.
std::string normalize_source(std::string_view source);

// Throws SyntaxError.
std::vector<Token> tokenize(std::string_view normalized_source, const LexerOptions& options);

// Maps byte offsets of the normalised source to 1-based line and column (in code points).
class SourceMap {
public:
    explicit SourceMap(std::string_view source);
    uint32_t line(size_t offset) const;
    uint32_t column(size_t offset) const;

private:
    std::string_view source_;
    std::vector<size_t> line_starts_;
};

}  // namespace oxinfer::jinja
