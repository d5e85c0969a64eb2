// Python's string formatting for templates: printf-style `"%s" % x` (and the `format` filter)
// and `"{}".format(x)` with the format-spec mini-language for str, int and float.

#include "chat/builtins.h"
#include "chat/interpreter.h"
#include "chat/text.h"

#include <cmath>
#include <cstdio>

namespace oxinfer::jinja {

namespace {

std::string c_format(const std::string& spec, double value) {
    char buf[512];
    const int n = std::snprintf(buf, sizeof buf, spec.c_str(), value);
    if (n < 0) raise("ValueError", "bad format");
    if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
    std::string out(static_cast<size_t>(n) + 1, '\0');
    std::snprintf(out.data(), out.size(), spec.c_str(), value);
    out.resize(static_cast<size_t>(n));
    return out;
}

std::string c_format_int(const std::string& spec, long long value) {
    char buf[128];
    const int n = std::snprintf(buf, sizeof buf, spec.c_str(), value);
    return std::string(buf, static_cast<size_t>(std::max(n, 0)));
}

std::string ascii_repr(const Value& v) {
    const std::string r = v.repr();
    std::string out;
    static const char* hex = "0123456789abcdef";
    for (char32_t c : text::decode(r)) {
        if (c < 0x80) {
            out += static_cast<char>(c);
        } else if (c < 0x100) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xF];
        } else if (c < 0x10000) {
            out += "\\u";
            for (int s = 12; s >= 0; s -= 4) out += hex[(c >> s) & 0xF];
        } else {
            out += "\\U";
            for (int s = 28; s >= 0; s -= 4) out += hex[(c >> s) & 0xF];
        }
    }
    return out;
}

// Python float formatting for a C-style conversion (e, f, g, with '#' etc.), inf/nan as Python writes them.
std::string float_conversion(double v, char type, int precision, bool alternate, char sign) {
    if (std::isnan(v) || std::isinf(v)) {
        const bool upper = type == 'E' || type == 'F' || type == 'G';
        std::string out;
        if (std::signbit(v) && !std::isnan(v)) out += '-';
        else if (sign == '+' || sign == ' ') out += sign;
        out += std::isnan(v) ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf");
        return out;
    }
    std::string spec = "%";
    if (sign == '+' || sign == ' ') spec += sign;
    if (alternate) spec += '#';
    spec += '.';
    spec += std::to_string(precision);
    spec += type;
    return c_format(spec, v);
}

// ---- format-spec mini-language ----

struct Spec {
    char32_t fill = ' ';
    char align = 0;  // '<', '>', '^', '='
    char sign = 0;   // '+', '-', ' '
    bool alternate = false;
    bool zero = false;
    int64_t width = -1;
    char grouping = 0;  // ',' or '_'
    int64_t precision = -1;
    char type = 0;
};

Spec parse_spec(const std::string& spec_text) {
    Spec spec;
    const std::u32string s = text::decode(spec_text);
    size_t i = 0;
    const auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
    if (s.size() >= 2 && is_align(s[1])) {
        spec.fill = s[0];
        spec.align = static_cast<char>(s[1]);
        i = 2;
    } else if (!s.empty() && is_align(s[0])) {
        spec.align = static_cast<char>(s[0]);
        i = 1;
    }
    if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = static_cast<char>(s[i++]);
    if (i < s.size() && s[i] == '#') {
        spec.alternate = true;
        ++i;
    }
    if (i < s.size() && s[i] == '0') {
        spec.zero = true;
        ++i;
    }
    if (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        spec.width = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') spec.width = spec.width * 10 + (s[i++] - '0');
    }
    if (i < s.size() && (s[i] == ',' || s[i] == '_')) spec.grouping = static_cast<char>(s[i++]);
    if (i < s.size() && s[i] == '.') {
        ++i;
        if (i >= s.size() || s[i] < '0' || s[i] > '9') raise("ValueError", "Format specifier missing precision");
        spec.precision = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') spec.precision = spec.precision * 10 + (s[i++] - '0');
    }
    if (i < s.size()) spec.type = static_cast<char>(s[i++]);
    if (i < s.size()) raise("ValueError", "Invalid format specifier");
    if (spec.zero && !spec.align) {
        spec.fill = '0';
        spec.align = '=';
    }
    return spec;
}

std::string group_digits(const std::string& digits, char sep, int every) {
    std::string out;
    const int n = static_cast<int>(digits.size());
    for (int i = 0; i < n; ++i) {
        if (i && (n - i) % every == 0) out += sep;
        out += digits[static_cast<size_t>(i)];
    }
    return out;
}

std::string apply_width(const std::string& sign, const std::string& body, const Spec& spec, char default_align) {
    const char align = spec.align ? spec.align : default_align;
    const int64_t len = static_cast<int64_t>(text::length(sign) + text::length(body));
    if (spec.width <= len) return sign + body;
    const int64_t padding = spec.width - len;
    std::string fill;
    const auto fills = [&](int64_t count) {
        std::string f;
        for (int64_t k = 0; k < count; ++k) text::append_utf8(f, spec.fill);
        return f;
    };
    switch (align) {
        case '<': return sign + body + fills(padding);
        case '^': return fills(padding / 2) + sign + body + fills(padding - padding / 2);
        case '=': return sign + fills(padding) + body;
        default: return fills(padding) + sign + body;
    }
}

std::string format_with_spec(const Value& value, const std::string& spec_text) {
    if (spec_text.empty()) return value.str();
    const Spec spec = parse_spec(spec_text);
    if (value.is_string()) {
        if (spec.type && spec.type != 's')
            raise("ValueError", std::string("Unknown format code '") + spec.type + "' for object of type 'str'");
        if (spec.sign) raise("ValueError", "Sign not allowed in string format specifier");
        if (spec.align == '=') raise("ValueError", "'=' alignment not allowed in string format specifier");
        std::string body = value.as_string();
        if (spec.precision >= 0) {
            const std::u32string u = text::decode(body);
            if (static_cast<int64_t>(u.size()) > spec.precision)
                body = text::encode(std::u32string_view(u).substr(0, static_cast<size_t>(spec.precision)));
        }
        return apply_width("", body, spec, '<');
    }
    if (value.is_integral() && (spec.type == 0 || std::string_view("bcdoxXn").find(spec.type) != std::string_view::npos)) {
        if (spec.precision >= 0) raise("ValueError", "Precision not allowed in integer format specifier");
        const int64_t v = value.as_int();
        const bool negative = v < 0;
        const uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
        std::string digits;
        std::string prefix;
        const char type = spec.type ? spec.type : 'd';
        if (type == 'c') {
            std::string c;
            text::append_utf8(c, static_cast<char32_t>(v));
            return apply_width("", c, spec, '<');
        }
        const int base = type == 'b' ? 2 : type == 'o' ? 8 : (type == 'x' || type == 'X') ? 16 : 10;
        uint64_t m = magnitude;
        do {
            const int d = static_cast<int>(m % static_cast<uint64_t>(base));
            digits.insert(digits.begin(), static_cast<char>(d < 10 ? '0' + d : (type == 'X' ? 'A' : 'a') + d - 10));
            m /= static_cast<uint64_t>(base);
        } while (m);
        if (spec.alternate && base != 10) prefix = type == 'b' ? "0b" : type == 'o' ? "0o" : type == 'X' ? "0X" : "0x";
        if (spec.grouping) digits = group_digits(digits, spec.grouping, base == 10 ? 3 : 4);
        std::string sign = negative ? "-" : (spec.sign == '+' ? "+" : spec.sign == ' ' ? " " : "");
        return apply_width(sign + prefix, digits, spec, '>');
    }
    if (value.is_number()) {
        double v = value.as_float();
        char type = spec.type;
        if (type && std::string_view("eEfFgG%n").find(type) == std::string_view::npos)
            raise("ValueError", std::string("Unknown format code '") + type + "' for object of type 'float'");
        std::string body;
        if (type == 0 && spec.precision < 0) {
            body = float_repr(std::fabs(v));
            if (value.is_integral()) body = std::to_string(value.as_int() < 0 ? -value.as_int() : value.as_int());
        } else if (type == 0 || type == 'n') {
            body = float_conversion(std::fabs(v), 'g', static_cast<int>(spec.precision < 0 ? 6 : spec.precision),
                                    spec.alternate, 0);
            if (type == 0 && body.find_first_of(".einf") == std::string::npos) body += ".0";
        } else if (type == '%') {
            body = float_conversion(std::fabs(v) * 100.0, 'f', static_cast<int>(spec.precision < 0 ? 6 : spec.precision),
                                    spec.alternate, 0) +
                   "%";
        } else {
            body = float_conversion(std::fabs(v), type, static_cast<int>(spec.precision < 0 ? 6 : spec.precision),
                                    spec.alternate, 0);
        }
        if (spec.grouping) {
            const size_t int_end = body.find_first_not_of("0123456789");
            body = group_digits(body.substr(0, int_end), spec.grouping, 3) +
                   (int_end == std::string::npos ? "" : body.substr(int_end));
        }
        const bool negative = std::signbit(v) && !std::isnan(v);
        std::string sign = negative ? "-" : (spec.sign == '+' ? "+" : spec.sign == ' ' ? " " : "");
        return apply_width(sign, body, spec, '>');
    }
    raise("TypeError", "unsupported format string passed to " + value.type_name() + ".__format__");
}

}  // namespace

std::string percent_format(const std::string& format, const Value& args) {
    std::vector<Value> positional;
    const Value* mapping = nullptr;
    if (args.is_tuple()) {
        positional = args.list_data().items;
    } else {
        if (args.is_dict()) mapping = &args;
        positional.push_back(args);
    }
    size_t next_arg = 0;
    bool used_mapping = false;
    const auto take = [&]() -> Value {
        if (next_arg >= positional.size()) raise("TypeError", "not enough arguments for format string");
        return positional[next_arg++];
    };
    std::string out;
    const std::string& f = format;
    for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] != '%') {
            out += f[i];
            continue;
        }
        if (++i >= f.size()) raise("ValueError", "incomplete format");
        Value key_value;
        bool keyed = false;
        if (f[i] == '(') {
            const size_t close = f.find(')', i);
            if (close == std::string::npos) raise("ValueError", "incomplete format key");
            if (!mapping) raise("TypeError", "format requires a mapping");
            const Value* found = mapping->dict_data().find(std::string_view(f).substr(i + 1, close - i - 1));
            if (!found) raise("KeyError", text::repr(f.substr(i + 1, close - i - 1)));
            key_value = *found;
            keyed = used_mapping = true;
            i = close + 1;
        }
        bool left = false, plus = false, space = false, alternate = false, zero = false;
        for (; i < f.size(); ++i) {
            if (f[i] == '-') left = true;
            else if (f[i] == '+') plus = true;
            else if (f[i] == ' ') space = true;
            else if (f[i] == '#') alternate = true;
            else if (f[i] == '0') zero = true;
            else break;
        }
        int64_t width = -1, precision = -1;
        if (i < f.size() && f[i] == '*') {
            const Value w = take();
            if (!w.is_integral()) raise("TypeError", "* wants int");
            width = w.as_int();
            if (width < 0) {
                left = true;
                width = -width;
            }
            ++i;
        } else {
            while (i < f.size() && f[i] >= '0' && f[i] <= '9') width = (width < 0 ? 0 : width) * 10 + (f[i++] - '0');
        }
        if (i < f.size() && f[i] == '.') {
            ++i;
            precision = 0;
            if (i < f.size() && f[i] == '*') {
                const Value p = take();
                if (!p.is_integral()) raise("TypeError", "* wants int");
                precision = p.as_int();
                ++i;
            } else {
                while (i < f.size() && f[i] >= '0' && f[i] <= '9') precision = precision * 10 + (f[i++] - '0');
            }
        }
        while (i < f.size() && (f[i] == 'h' || f[i] == 'l' || f[i] == 'L')) ++i;
        if (i >= f.size()) raise("ValueError", "incomplete format");
        const char type = f[i];
        if (type == '%') {
            out += '%';
            continue;
        }
        const Value arg = keyed ? key_value : take();
        std::string body;
        std::string sign;
        bool numeric = false;
        switch (type) {
            case 's': body = arg.str(); break;
            case 'r': body = arg.repr(); break;
            case 'a': body = ascii_repr(arg); break;
            case 'c':
                if (arg.is_string() && text::length(arg.as_string()) == 1) body = arg.as_string();
                else if (arg.is_integral()) text::append_utf8(body, static_cast<char32_t>(arg.as_int()));
                else raise("TypeError", "%c requires int or char");
                break;
            case 'd':
            case 'i':
            case 'u':
            case 'o':
            case 'x':
            case 'X': {
                if (!arg.is_number()) {
                    raise("TypeError", std::string("%") + type + " format: " +
                                           (type == 'd' || type == 'i' || type == 'u' ? "a real number" : "an integer") +
                                           " is required, not " + arg.type_name());
                }
                if (arg.is_float() && (type == 'o' || type == 'x' || type == 'X'))
                    raise("TypeError", std::string("%") + type + " format: an integer is required, not float");
                if (arg.is_float() && !std::isfinite(arg.as_float()))
                    raise("OverflowError", "cannot convert float infinity to integer");
                const int64_t v = arg.is_float() ? static_cast<int64_t>(std::trunc(arg.as_float())) : arg.as_int();
                const uint64_t magnitude = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
                std::string spec = "%";
                if (precision >= 0) spec += "." + std::to_string(precision);
                spec += (type == 'o' ? "llo" : type == 'x' ? "llx" : type == 'X' ? "llX" : "llu");
                body = c_format_int(spec, static_cast<long long>(magnitude));
                if (alternate && type != 'd' && type != 'i' && type != 'u')
                    body = (type == 'o' ? "0o" : type == 'x' ? "0x" : "0X") + body;
                sign = v < 0 ? "-" : plus ? "+" : space ? " " : "";
                numeric = true;
                break;
            }
            case 'e':
            case 'E':
            case 'f':
            case 'F':
            case 'g':
            case 'G': {
                if (!arg.is_number()) raise("TypeError", "must be real number, not " + arg.type_name());
                const double v = arg.as_float();
                body = float_conversion(std::fabs(v), type, static_cast<int>(precision < 0 ? 6 : precision), alternate, 0);
                sign = (std::signbit(v) && !std::isnan(v)) ? "-" : plus ? "+" : space ? " " : "";
                numeric = true;
                break;
            }
            default:
                raise("ValueError", std::string("unsupported format character '") + type + "'");
        }
        if (!numeric && precision >= 0 && (type == 's' || type == 'r' || type == 'a')) {
            const std::u32string u = text::decode(body);
            if (static_cast<int64_t>(u.size()) > precision)
                body = text::encode(std::u32string_view(u).substr(0, static_cast<size_t>(precision)));
        }
        const int64_t len = static_cast<int64_t>(text::length(sign) + text::length(body));
        if (width > len) {
            if (left) {
                out += sign + body + std::string(static_cast<size_t>(width - len), ' ');
            } else if (zero && numeric) {
                out += sign + std::string(static_cast<size_t>(width - len), '0') + body;
            } else {
                out += std::string(static_cast<size_t>(width - len), ' ') + sign + body;
            }
        } else {
            out += sign + body;
        }
    }
    if (!used_mapping && !mapping && next_arg < positional.size())
        raise("TypeError", "not all arguments converted during string formatting");
    return out;
}

std::string str_format(Interpreter& interpreter, const std::string& format, const CallArgs& args) {
    std::string out;
    int auto_index = 0;
    bool manual = false, automatic = false;
    const auto resolve = [&](const std::string& field) -> Value {
        size_t i = 0;
        while (i < field.size() && field[i] != '.' && field[i] != '[') ++i;
        const std::string first = field.substr(0, i);
        Value value;
        const bool numeric = !first.empty() && first.find_first_not_of("0123456789") == std::string::npos;
        if (first.empty() || numeric) {
            size_t index;
            if (first.empty()) {
                if (manual) raise("ValueError", "cannot switch from manual field specification to automatic field numbering");
                automatic = true;
                index = static_cast<size_t>(auto_index++);
            } else {
                if (automatic) raise("ValueError", "cannot switch from manual field specification to automatic field numbering");
                manual = true;
                index = std::stoul(first);
            }
            if (index >= args.positional.size())
                raise("IndexError", "Replacement index " + std::to_string(index) + " out of range for positional args tuple");
            value = args.positional[index];
        } else {
            bool found = false;
            for (const auto& [k, v] : args.keyword)
                if (k == first) {
                    value = v;
                    found = true;
                }
            if (!found) raise("KeyError", text::repr(first));
        }
        while (i < field.size()) {
            if (field[i] == '.') {
                size_t j = i + 1;
                while (j < field.size() && field[j] != '.' && field[j] != '[') ++j;
                value = interpreter.getattr(value, field.substr(i + 1, j - i - 1));
                if (value.is_undefined()) value.fail_undefined();
                i = j;
            } else {
                const size_t close = field.find(']', i);
                if (close == std::string::npos) raise("ValueError", "Missing ']' in format string");
                const std::string key = field.substr(i + 1, close - i - 1);
                const bool int_key = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
                value = interpreter.getitem(value, int_key ? Value::integer(std::stoll(key)) : Value::string(key));
                if (value.is_undefined()) value.fail_undefined();
                i = close + 1;
            }
        }
        return value;
    };
    for (size_t i = 0; i < format.size(); ++i) {
        const char c = format[i];
        if (c == '}') {
            if (i + 1 < format.size() && format[i + 1] == '}') {
                out += '}';
                ++i;
                continue;
            }
            raise("ValueError", "Single '}' encountered in format string");
        }
        if (c != '{') {
            out += c;
            continue;
        }
        if (i + 1 < format.size() && format[i + 1] == '{') {
            out += '{';
            ++i;
            continue;
        }
        // Find the matching '}' (format specs may nest one level of {}).
        size_t depth = 1, j = i + 1;
        for (; j < format.size() && depth; ++j) {
            if (format[j] == '{') ++depth;
            else if (format[j] == '}') --depth;
        }
        if (depth) raise("ValueError", "expected '}' before end of string");
        const std::string field = format.substr(i + 1, j - i - 2);
        i = j - 1;
        std::string name = field, conversion, spec;
        const size_t colon = field.find(':');
        if (colon != std::string::npos) {
            spec = field.substr(colon + 1);
            name = field.substr(0, colon);
        }
        const size_t bang = name.find('!');
        if (bang != std::string::npos) {
            conversion = name.substr(bang + 1);
            name = name.substr(0, bang);
        }
        Value value = resolve(name);
        if (spec.find('{') != std::string::npos) spec = str_format(interpreter, spec, args);
        if (conversion == "r") value = Value::string(value.repr());
        else if (conversion == "s") value = Value::string(value.str());
        else if (conversion == "a") value = Value::string(ascii_repr(value));
        else if (!conversion.empty()) raise("ValueError", "Unknown conversion specifier " + conversion);
        out += format_with_spec(value, spec);
    }
    return out;
}

}  // namespace oxinfer::jinja
