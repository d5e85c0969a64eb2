#pragma once
// Text helpers for the Jinja renderer: UTF-8 code points and the Python str methods that chat
// templates call (strip, split, upper, title, repr, ...), with Python's semantics. Strings are
// UTF-8 bytes; operations that Python defines per character work per code point.
//
// Case mapping covers ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (what tool names,
// JSON schema types and chat text need); other scripts are left unchanged.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oxinfer::jinja::text {

// UTF-8. Strings reaching the renderer are valid UTF-8 (checked where they enter).
bool valid_utf8(std::string_view s, size_t* bad_offset = nullptr);
std::u32string decode(std::string_view s);
std::string encode(std::u32string_view s);
void append_utf8(std::string& out, char32_t c);
size_t length(std::string_view s);  // code points
bool is_ascii(std::string_view s);

// Python's str.isspace() for one code point (also what `\s` matches in Python's re).
bool is_space(char32_t c);
bool is_printable(char32_t c);  // str.isprintable()
bool is_alpha(char32_t c);
bool is_digit(char32_t c);
bool is_cased(char32_t c);
char32_t to_upper(char32_t c);
char32_t to_lower(char32_t c);

std::string upper(std::string_view s);  // str.upper()
std::string lower(std::string_view s);  // str.lower()
std::string capitalize(std::string_view s);  // str.capitalize()
std::string title(std::string_view s);  // str.title()
std::string swapcase(std::string_view s);
bool is_lower(std::string_view s);  // str.islower()
bool is_upper(std::string_view s);  // str.isupper()

// str.strip/lstrip/rstrip: chars == nullopt strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / str.rsplit: sep == nullopt splits on runs of whitespace. maxsplit < 0: no limit.
// Throws std::invalid_argument("empty separator") for an empty sep.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
// str.replace: count < 0 replaces all; an empty `old` inserts between code points, as Python does.
std::string replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count);
// str.count / str.find / str.rfind over the code-point slice [start, end) (Python slice bounds).
int64_t count(std::string_view s, std::string_view sub, std::optional<int64_t> start, std::optional<int64_t> end);
int64_t find(std::string_view s, std::string_view sub, std::optional<int64_t> start, std::optional<int64_t> end,
             bool reverse);
std::string center(std::string_view s, int64_t width, char32_t fill);
std::string ljust(std::string_view s, int64_t width, char32_t fill);
std::string rjust(std::string_view s, int64_t width, char32_t fill);

// Python's repr() of a str: quotes chosen as Python chooses them, escapes for non-printables.
std::string repr(std::string_view s);

}  // namespace oxinfer::jinja::text
