#include "chat/text.h"

#include <algorithm>
#include <stdexcept>

namespace oxinfer::jinja::text {

namespace {

// Decodes one code point at `i` of valid UTF-8 and advances `i`.
char32_t next_code_point(std::string_view s, size_t& i) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char lead = byte(i);
    if (lead < 0x80) {
        ++i;
        return lead;
    }
    if (lead < 0xE0) {
        const char32_t c = ((lead & 0x1Fu) << 6) | (byte(i + 1) & 0x3Fu);
        i += 2;
        return c;
    }
    if (lead < 0xF0) {
        const char32_t c = ((lead & 0x0Fu) << 12) | ((byte(i + 1) & 0x3Fu) << 6) | (byte(i + 2) & 0x3Fu);
        i += 3;
        return c;
    }
    const char32_t c = ((lead & 0x07u) << 18) | ((byte(i + 1) & 0x3Fu) << 12) | ((byte(i + 2) & 0x3Fu) << 6) |
                       (byte(i + 3) & 0x3Fu);
    i += 4;
    return c;
}

bool in(char32_t c, char32_t lo, char32_t hi) { return c >= lo && c <= hi; }

// Case pairs laid out as alternating upper/lower code points in [lo, hi]; `upper_even` says
// whether the upper-case letter of each pair has the even code point.
struct AlternatingRange {
    char32_t lo, hi;
    bool upper_even;
};

constexpr AlternatingRange kAlternating[] = {
    {0x0100, 0x012F, true},  {0x0132, 0x0137, true},  {0x0139, 0x0148, false}, {0x014A, 0x0177, true},
    {0x0179, 0x017E, false}, {0x0460, 0x0481, true},  {0x048A, 0x04BF, true},  {0x04C1, 0x04CE, false},
    {0x04D0, 0x052F, true},  {0x1E00, 0x1E95, true},  {0x1EA0, 0x1EFF, true},
};

// Ranges where lower = upper + offset.
struct OffsetRange {
    char32_t upper_lo, upper_hi;
    int32_t offset;  // lower - upper
};

constexpr OffsetRange kOffsets[] = {
    {0x0041, 0x005A, 32},  {0x00C0, 0x00D6, 32},   {0x00D8, 0x00DE, 32}, {0x0391, 0x03A1, 32},
    {0x03A3, 0x03AB, 32},  {0x0388, 0x038A, 37},   {0x038E, 0x038F, 63}, {0x0410, 0x042F, 32},
    {0x0400, 0x040F, 80},  {0x0531, 0x0556, 48},   {0xFF21, 0xFF3A, 32},
};

char32_t simple_upper(char32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
    for (const OffsetRange& r : kOffsets)
        if (c >= r.upper_lo + static_cast<char32_t>(r.offset) && c <= r.upper_hi + static_cast<char32_t>(r.offset))
            return c - static_cast<char32_t>(r.offset);
    for (const AlternatingRange& r : kAlternating) {
        if (!in(c, r.lo, r.hi)) continue;
        const bool even = (c % 2) == 0;
        if (even == r.upper_even) return c;
        return r.upper_even ? c - 1 : c + 1;
    }
    switch (c) {
        case 0x00FF: return 0x0178;
        case 0x00B5: return 0x039C;
        case 0x0131: return 'I';
        case 0x017F: return 'S';
        case 0x03C2: return 0x03A3;
        case 0x03AC: return 0x0386;
        case 0x03CC: return 0x038C;
        default: return c;
    }
}

char32_t simple_lower(char32_t c) {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    for (const OffsetRange& r : kOffsets)
        if (in(c, r.upper_lo, r.upper_hi)) return c + static_cast<char32_t>(r.offset);
    for (const AlternatingRange& r : kAlternating) {
        if (!in(c, r.lo, r.hi)) continue;
        const bool even = (c % 2) == 0;
        if (even != r.upper_even) return c;
        return r.upper_even ? c + 1 : c - 1;
    }
    switch (c) {
        case 0x0178: return 0x00FF;
        case 0x0130: return 'i';
        case 0x0386: return 0x03AC;
        case 0x038C: return 0x03CC;
        default: return c;
    }
}

std::u32string_view view(const std::u32string& s) { return s; }

}  // namespace

bool valid_utf8(std::string_view s, size_t* bad_offset) {
    size_t i = 0;
    const auto fail = [&] {
        if (bad_offset) *bad_offset = i;
        return false;
    };
    while (i < s.size()) {
        const unsigned char lead = static_cast<unsigned char>(s[i]);
        if (lead < 0x80) {
            ++i;
            continue;
        }
        size_t need = 0;
        char32_t min = 0;
        if ((lead & 0xE0) == 0xC0) {
            need = 1;
            min = 0x80;
        } else if ((lead & 0xF0) == 0xE0) {
            need = 2;
            min = 0x800;
        } else if ((lead & 0xF8) == 0xF0) {
            need = 3;
            min = 0x10000;
        } else {
            return fail();
        }
        if (s.size() - i <= need) return fail();
        char32_t c = lead & (0x3F >> need);
        for (size_t k = 1; k <= need; ++k) {
            const unsigned char b = static_cast<unsigned char>(s[i + k]);
            if ((b & 0xC0) != 0x80) return fail();
            c = (c << 6) | (b & 0x3F);
        }
        if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return fail();
        i += need + 1;
    }
    return true;
}

std::u32string decode(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) out.push_back(next_code_point(s, i));
    return out;
}

void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

std::string encode(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) append_utf8(out, c);
    return out;
}

size_t length(std::string_view s) {
    size_t n = 0;
    for (char c : s)
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    return n;
}

bool is_ascii(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

bool is_space(char32_t c) {
    if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) return true;
    if (c < 0x80) return false;
    return c == 0x85 || c == 0xA0 || c == 0x1680 || in(c, 0x2000, 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_printable(char32_t c) {
    if (c < 0x20 || c == 0x7F) return false;
    if (c < 0x7F) return true;
    if (in(c, 0x80, 0xA0) || c == 0xAD) return false;
    if (in(c, 0x600, 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x180E) return false;
    if (c == 0x1680 || in(c, 0x2000, 0x200F) || in(c, 0x2028, 0x202F) || in(c, 0x205F, 0x2064) ||
        in(c, 0x2066, 0x206F) || c == 0x3000)
        return false;
    if (in(c, 0xD800, 0xF8FF) || c == 0xFEFF || in(c, 0xFFF9, 0xFFFB) || c == 0xFFFE || c == 0xFFFF) return false;
    if (c == 0xE0001 || in(c, 0xE0020, 0xE007F) || c >= 0xF0000) return false;
    return true;
}

bool is_cased(char32_t c) { return simple_upper(c) != c || simple_lower(c) != c || c == 0xDF; }

bool is_alpha(char32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (is_cased(c) || c == 0xAA || c == 0xBA) return true;
    return in(c, 0x05D0, 0x05EA) || in(c, 0x0620, 0x064A) || in(c, 0x0904, 0x0939) || in(c, 0x0E01, 0x0E30) ||
           in(c, 0x3041, 0x3096) || in(c, 0x30A1, 0x30FA) || in(c, 0x3400, 0x4DBF) || in(c, 0x4E00, 0x9FFF) ||
           in(c, 0xAC00, 0xD7A3) || in(c, 0x20000, 0x2FA1F);
}

bool is_digit(char32_t c) {
    return (c >= '0' && c <= '9') || in(c, 0x0660, 0x0669) || in(c, 0x06F0, 0x06F9) || in(c, 0x0966, 0x096F) ||
           in(c, 0xFF10, 0xFF19) || c == 0xB2 || c == 0xB3 || c == 0xB9;
}

char32_t to_upper(char32_t c) { return simple_upper(c); }
char32_t to_lower(char32_t c) { return simple_lower(c); }

std::string upper(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const char32_t c = next_code_point(s, i);
        if (c == 0xDF) {
            out += "SS";
        } else if (c == 0x149) {
            append_utf8(out, 0x2BC);
            out += 'N';
        } else {
            append_utf8(out, simple_upper(c));
        }
    }
    return out;
}

std::string lower(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const char32_t c = next_code_point(s, i);
        if (c == 0x130) {
            out += 'i';
            append_utf8(out, 0x307);
        } else {
            append_utf8(out, simple_lower(c));
        }
    }
    return out;
}

std::string capitalize(std::string_view s) {
    if (s.empty()) return {};
    size_t i = 0;
    const char32_t first = next_code_point(s, i);
    std::string out = upper(encode(std::u32string(1, first)));
    out += lower(s.substr(i));
    return out;
}

std::string title(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    bool previous_cased = false;
    size_t i = 0;
    while (i < s.size()) {
        const char32_t c = next_code_point(s, i);
        const bool cased = is_cased(c);
        if (previous_cased) {
            append_utf8(out, simple_lower(c));
        } else if (c == 0xDF) {
            out += "Ss";
        } else {
            append_utf8(out, simple_upper(c));
        }
        previous_cased = cased;
    }
    return out;
}

std::string swapcase(std::string_view s) {
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
        const char32_t c = next_code_point(s, i);
        const char32_t u = simple_upper(c);
        if (c == 0xDF) {
            out += "SS";
        } else {
            append_utf8(out, u != c ? u : simple_lower(c));
        }
    }
    return out;
}

bool is_lower(std::string_view s) {
    bool any_cased = false;
    size_t i = 0;
    while (i < s.size()) {
        const char32_t c = next_code_point(s, i);
        if (simple_lower(c) != c) return false;  // an upper-case letter
        if (simple_upper(c) != c || c == 0xDF) any_cased = true;
    }
    return any_cased;
}

bool is_upper(std::string_view s) {
    bool any_cased = false;
    size_t i = 0;
    while (i < s.size()) {
        const char32_t c = next_code_point(s, i);
        if (simple_upper(c) != c || c == 0xDF) return false;  // a lower-case letter
        if (simple_lower(c) != c) any_cased = true;
    }
    return any_cased;
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
    const std::u32string set = chars ? decode(*chars) : std::u32string();
    const auto strippable = [&](char32_t c) {
        return chars ? set.find(c) != std::u32string::npos : is_space(c);
    };
    if (is_ascii(s) && (!chars || is_ascii(*chars))) {
        size_t begin = 0, end = s.size();
        if (left)
            while (begin < end && strippable(static_cast<unsigned char>(s[begin]))) ++begin;
        if (right)
            while (end > begin && strippable(static_cast<unsigned char>(s[end - 1]))) --end;
        return std::string(s.substr(begin, end - begin));
    }
    const std::u32string u = decode(s);
    size_t begin = 0, end = u.size();
    if (left)
        while (begin < end && strippable(u[begin])) ++begin;
    if (right)
        while (end > begin && strippable(u[end - 1])) --end;
    return encode(view(u).substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
    std::vector<std::string> out;
    if (sep) {
        if (sep->empty()) throw std::invalid_argument("empty separator");
        size_t start = 0;
        while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
            const size_t at = s.find(*sep, start);
            if (at == std::string_view::npos) break;
            out.emplace_back(s.substr(start, at - start));
            start = at + sep->size();
        }
        out.emplace_back(s.substr(start));
        return out;
    }
    const std::u32string u = decode(s);
    size_t i = 0;
    while (true) {
        while (i < u.size() && is_space(u[i])) ++i;
        if (i >= u.size()) break;
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
            out.push_back(encode(view(u).substr(i)));
            break;
        }
        size_t j = i;
        while (j < u.size() && !is_space(u[j])) ++j;
        out.push_back(encode(view(u).substr(i, j - i)));
        i = j;
    }
    return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
    std::vector<std::string> out;
    if (sep) {
        if (sep->empty()) throw std::invalid_argument("empty separator");
        size_t end = s.size();
        while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
            if (end < sep->size()) break;
            const size_t at = s.rfind(*sep, end - sep->size());
            if (at == std::string_view::npos) break;
            out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
            end = at;
        }
        out.emplace_back(s.substr(0, end));
        std::reverse(out.begin(), out.end());
        return out;
    }
    const std::u32string u = decode(s);
    size_t end = u.size();
    while (true) {
        while (end > 0 && is_space(u[end - 1])) --end;
        if (end == 0) break;
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
            out.push_back(encode(view(u).substr(0, end)));
            break;
        }
        size_t j = end;
        while (j > 0 && !is_space(u[j - 1])) --j;
        out.push_back(encode(view(u).substr(j, end - j)));
        end = j;
    }
    std::reverse(out.begin(), out.end());
    return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
    const std::u32string u = decode(s);
    std::vector<std::string> out;
    size_t start = 0, i = 0;
    while (i < u.size()) {
        const char32_t c = u[i];
        const bool boundary = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) ||
                              c == 0x85 || c == 0x2028 || c == 0x2029;
        if (!boundary) {
            ++i;
            continue;
        }
        size_t end_of_break = i + 1;
        if (c == '\r' && i + 1 < u.size() && u[i + 1] == '\n') end_of_break = i + 2;
        out.push_back(encode(view(u).substr(start, (keepends ? end_of_break : i) - start)));
        start = i = end_of_break;
    }
    if (start < u.size()) out.push_back(encode(view(u).substr(start)));
    return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count) {
    std::string out;
    if (old.empty()) {
        const std::u32string u = decode(s);
        int64_t done = 0;
        for (size_t i = 0; i <= u.size(); ++i) {
            if (count < 0 || done < count) {
                out += replacement;
                ++done;
            }
            if (i < u.size()) append_utf8(out, u[i]);
        }
        return out;
    }
    size_t start = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        const size_t at = s.find(old, start);
        if (at == std::string_view::npos) break;
        out.append(s.substr(start, at - start));
        out.append(replacement);
        start = at + old.size();
        ++done;
    }
    out.append(s.substr(start));
    return out;
}

namespace {

// Python slice-bound normalisation for str.count/find: clamps to [0, n].
std::pair<size_t, size_t> code_point_bounds(size_t n, std::optional<int64_t> start, std::optional<int64_t> end) {
    const auto norm = [n](int64_t v) -> size_t {
        if (v < 0) v += static_cast<int64_t>(n);
        if (v < 0) v = 0;
        if (v > static_cast<int64_t>(n)) v = static_cast<int64_t>(n);
        return static_cast<size_t>(v);
    };
    return {start ? norm(*start) : 0, end ? norm(*end) : n};
}

}  // namespace

int64_t count(std::string_view s, std::string_view sub, std::optional<int64_t> start, std::optional<int64_t> end) {
    const std::u32string u = decode(s);
    const std::u32string needle = decode(sub);
    auto [b, e] = code_point_bounds(u.size(), start, end);
    if (b > e) return 0;
    if (needle.empty()) return static_cast<int64_t>(e - b + 1);
    int64_t n = 0;
    size_t i = b;
    while (i + needle.size() <= e) {
        if (u.compare(i, needle.size(), needle) == 0) {
            ++n;
            i += needle.size();
        } else {
            ++i;
        }
    }
    return n;
}

int64_t find(std::string_view s, std::string_view sub, std::optional<int64_t> start, std::optional<int64_t> end,
             bool reverse) {
    const std::u32string u = decode(s);
    const std::u32string needle = decode(sub);
    auto [b, e] = code_point_bounds(u.size(), start, end);
    if (b > e || e - b < needle.size()) return -1;
    if (!reverse) {
        for (size_t i = b; i + needle.size() <= e; ++i)
            if (u.compare(i, needle.size(), needle) == 0) return static_cast<int64_t>(i);
    } else {
        for (size_t i = e - needle.size() + 1; i-- > b;)
            if (u.compare(i, needle.size(), needle) == 0) return static_cast<int64_t>(i);
    }
    return -1;
}

std::string center(std::string_view s, int64_t width, char32_t fill) {
    const int64_t n = static_cast<int64_t>(length(s));
    if (width <= n) return std::string(s);
    const int64_t margin = width - n;
    const int64_t left = margin / 2 + (margin & width & 1);
    std::string out;
    for (int64_t i = 0; i < left; ++i) append_utf8(out, fill);
    out += s;
    for (int64_t i = 0; i < margin - left; ++i) append_utf8(out, fill);
    return out;
}

std::string ljust(std::string_view s, int64_t width, char32_t fill) {
    std::string out(s);
    for (int64_t i = static_cast<int64_t>(length(s)); i < width; ++i) append_utf8(out, fill);
    return out;
}

std::string rjust(std::string_view s, int64_t width, char32_t fill) {
    std::string out;
    for (int64_t i = static_cast<int64_t>(length(s)); i < width; ++i) append_utf8(out, fill);
    out += s;
    return out;
}

std::string repr(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = (has_single && !has_double) ? '"' : '\'';
    std::string out(1, quote);
    size_t i = 0;
    static const char* hex = "0123456789abcdef";
    while (i < s.size()) {
        const char32_t c = next_code_point(s, i);
        if (c == static_cast<char32_t>(quote) || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (is_printable(c)) {
            append_utf8(out, c);
        } else if (c < 0x100) {
            out += "\\x";
            out += hex[(c >> 4) & 0xF];
            out += hex[c & 0xF];
        } else if (c < 0x10000) {
            out += "\\u";
            for (int shift = 12; shift >= 0; shift -= 4) out += hex[(c >> shift) & 0xF];
        } else {
            out += "\\U";
            for (int shift = 28; shift >= 0; shift -= 4) out += hex[(c >> shift) & 0xF];
        }
    }
    out += quote;
    return out;
}

}  // namespace oxinfer::jinja::text
