// The Python methods of str, list, tuple and dict that chat templates call (message.content.split(...),
// messages[0].get('x'), ...). Methods that would modify a list or dict are "unsafe" in transformers'
// ImmutableSandboxedEnvironment: looking one up gives an undefined value that raises SecurityError
// when used.

#include "chat/arguments.h"
#include "chat/builtins.h"
#include "chat/interpreter.h"
#include "chat/text.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace oxinfer::jinja {

namespace {

std::optional<std::string> optional_string(const char* method, const Value& v) {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (!v.is_string()) raise("TypeError", std::string(method) + " arg must be None or str");
    return v.as_string();
}

const std::string& need_string(const char* method, const Value& v) {
    if (!v.is_string()) raise("TypeError", std::string(method) + "() argument must be str, not " + v.type_name());
    return v.as_string();
}

std::optional<int64_t> optional_index(const Value& v) {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (!v.is_integral()) raise("TypeError", "slice indices must be integers or None or have an __index__ method");
    return v.as_int();
}

Value string_list(std::vector<std::string> parts) {
    std::vector<Value> items;
    items.reserve(parts.size());
    for (auto& p : parts) items.push_back(Value::string(std::move(p)));
    return Value::list(std::move(items));
}

char32_t fill_char(const Arguments& a, size_t i) {
    if (!a.has(i)) return ' ';
    const Value& v = a.get(i);
    if (!v.is_string() || text::length(v.as_string()) != 1)
        raise("TypeError", "The fill character must be exactly one character long");
    return text::decode(v.as_string())[0];
}

// startswith/endswith: prefix may be a str or a tuple of str; start/end slice the receiver.
bool affix_match(const char* method, const Value& receiver, CallArgs& args, bool at_end) {
    Arguments a(method, args, {"prefix", "start", "end"});
    const std::u32string s = text::decode(receiver.as_string());
    const auto n = static_cast<int64_t>(s.size());
    const auto norm = [n](int64_t v) {
        if (v < 0) v += n;
        return std::clamp<int64_t>(v, 0, n);
    };
    const int64_t b = a.has(1) && optional_index(a.get(1)) ? norm(*optional_index(a.get(1))) : 0;
    const int64_t e = a.has(2) && optional_index(a.get(2)) ? norm(*optional_index(a.get(2))) : n;
    const Value& affix = a.get(0);
    std::vector<Value> candidates;
    if (affix.is_tuple()) {
        candidates = affix.list_data().items;
    } else if (affix.is_string()) {
        candidates.push_back(affix);
    } else {
        raise("TypeError", std::string(method) + " first arg must be str or a tuple of str, not " + affix.type_name());
    }
    for (const Value& c : candidates) {
        if (!c.is_string())
            raise("TypeError", std::string("tuple for ") + method + " must only contain str, not " + c.type_name());
        const std::u32string x = text::decode(c.as_string());
        const auto len = static_cast<int64_t>(x.size());
        if (e - b < len) continue;
        const int64_t at = at_end ? e - len : b;
        if (s.compare(static_cast<size_t>(at), x.size(), x) == 0) return true;
    }
    return false;
}

template <bool (*Pred)(char32_t)>
bool all_chars(const std::string& s) {
    if (s.empty()) return false;
    for (char32_t c : text::decode(s))
        if (!Pred(c)) return false;
    return true;
}

bool is_alnum_char(char32_t c) { return text::is_alpha(c) || text::is_digit(c); }
bool is_ascii_char(char32_t c) { return c < 0x80; }

Value str_method(Interpreter& interpreter, const std::string& name, const Value& receiver, CallArgs& args) {
    const std::string& s = receiver.as_string();
    const auto no_args = [&] {
        if (!args.positional.empty() || !args.keyword.empty())
            raise("TypeError", "str." + name + "() takes no arguments (" + std::to_string(args.positional.size()) + " given)");
    };
    if (name == "upper") return no_args(), Value::string(text::upper(s));
    if (name == "lower" || name == "casefold") return no_args(), Value::string(text::lower(s));
    if (name == "title") return no_args(), Value::string(text::title(s));
    if (name == "capitalize") return no_args(), Value::string(text::capitalize(s));
    if (name == "swapcase") return no_args(), Value::string(text::swapcase(s));
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        Arguments a(name.c_str(), args, {"chars"});
        const auto chars = optional_string(name.c_str(), a.get(0, Value::none()));
        return Value::string(text::strip(s, chars, name != "rstrip", name != "lstrip"));
    }
    if (name == "split" || name == "rsplit") {
        Arguments a(name.c_str(), args, {"sep", "maxsplit"});
        const auto sep = optional_string(name.c_str(), a.get(0, Value::none()));
        const int64_t maxsplit = a.integer(1, -1);
        try {
            return string_list(name == "split" ? text::split(s, sep, maxsplit) : text::rsplit(s, sep, maxsplit));
        } catch (const std::invalid_argument&) {
            raise("ValueError", "empty separator");
        }
    }
    if (name == "splitlines") {
        Arguments a("splitlines", args, {"keepends"});
        return string_list(text::splitlines(s, a.flag(0, false)));
    }
    if (name == "startswith") return Value::boolean(affix_match("startswith", receiver, args, false));
    if (name == "endswith") return Value::boolean(affix_match("endswith", receiver, args, true));
    if (name == "replace") {
        Arguments a("replace", args, {"old", "new", "count"});
        return Value::string(text::replace(s, need_string("replace", a.get(0)), need_string("replace", a.get(1)),
                                           a.integer(2, -1)));
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
        Arguments a(name.c_str(), args, {"sub", "start", "end"});
        const std::string& sub = need_string(name.c_str(), a.get(0));
        const auto start = optional_index(a.get(1, Value::none()));
        const auto end = optional_index(a.get(2, Value::none()));
        if (name == "count") return Value::integer(text::count(s, sub, start, end));
        const int64_t at = text::find(s, sub, start, end, name[0] == 'r');
        if (at < 0 && (name == "index" || name == "rindex")) raise("ValueError", "substring not found");
        return Value::integer(at);
    }
    if (name == "join") {
        Arguments a("join", args, {"iterable"});
        std::string out;
        size_t i = 0;
        for (const Value& item : iterate(a.get(0))) {
            if (!item.is_string())
                raise("TypeError", "sequence item " + std::to_string(i) + ": expected str instance, " + item.type_name() +
                                       " found");
            if (i++) out += s;
            out += item.as_string();
        }
        return Value::string(std::move(out));
    }
    if (name == "format") return Value::string(str_format(interpreter, s, args));
    if (name == "format_map") {
        Arguments a("format_map", args, {"mapping"});
        CallArgs named;
        const Value& mapping = a.get(0);
        if (!mapping.is_dict()) raise("TypeError", "format_map() argument must be a mapping");
        for (const auto& [k, v] : mapping.dict_data().entries) named.keyword.emplace_back(k.str(), v);
        return Value::string(str_format(interpreter, s, named));
    }
    if (name == "center" || name == "ljust" || name == "rjust") {
        Arguments a(name.c_str(), args, {"width", "fillchar"});
        const int64_t width = a.integer(0, 0);
        const char32_t fill = fill_char(a, 1);
        if (name == "center") return Value::string(text::center(s, width, fill));
        if (name == "ljust") return Value::string(text::ljust(s, width, fill));
        return Value::string(text::rjust(s, width, fill));
    }
    if (name == "zfill") {
        Arguments a("zfill", args, {"width"});
        const int64_t width = a.integer(0, 0);
        const int64_t n = static_cast<int64_t>(text::length(s));
        if (width <= n) return receiver;
        std::string sign, rest = s;
        if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
            sign = s.substr(0, 1);
            rest = s.substr(1);
        }
        return Value::string(sign + std::string(static_cast<size_t>(width - n), '0') + rest);
    }
    if (name == "partition" || name == "rpartition") {
        Arguments a(name.c_str(), args, {"sep"});
        const std::string& sep = need_string(name.c_str(), a.get(0));
        if (sep.empty()) raise("ValueError", "empty separator");
        const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
        if (at == std::string::npos) {
            if (name == "partition") return Value::tuple({receiver, Value::string(""), Value::string("")});
            return Value::tuple({Value::string(""), Value::string(""), receiver});
        }
        return Value::tuple({Value::string(s.substr(0, at)), Value::string(sep), Value::string(s.substr(at + sep.size()))});
    }
    if (name == "removeprefix" || name == "removesuffix") {
        Arguments a(name.c_str(), args, {"affix"});
        const std::string& affix = need_string(name.c_str(), a.get(0));
        if (name == "removeprefix" && s.compare(0, affix.size(), affix) == 0) return Value::string(s.substr(affix.size()));
        if (name == "removesuffix" && !affix.empty() && s.size() >= affix.size() &&
            s.compare(s.size() - affix.size(), affix.size(), affix) == 0)
            return Value::string(s.substr(0, s.size() - affix.size()));
        return receiver;
    }
    if (name == "expandtabs") {
        Arguments a("expandtabs", args, {"tabsize"});
        const int64_t tab = a.integer(0, 8);
        std::u32string out;
        int64_t column = 0;
        for (char32_t c : text::decode(s)) {
            if (c == '\t') {
                if (tab > 0) {
                    const int64_t spaces = tab - column % tab;
                    out.append(static_cast<size_t>(spaces), U' ');
                    column += spaces;
                }
            } else {
                out.push_back(c);
                column = (c == '\n' || c == '\r') ? 0 : column + 1;
            }
        }
        return Value::string(text::encode(out));
    }
    no_args();
    if (name == "isalpha") return Value::boolean(all_chars<text::is_alpha>(s));
    if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") return Value::boolean(all_chars<text::is_digit>(s));
    if (name == "isalnum") return Value::boolean(all_chars<is_alnum_char>(s));
    if (name == "isspace") return Value::boolean(all_chars<text::is_space>(s));
    if (name == "isascii") return Value::boolean(s.empty() || all_chars<is_ascii_char>(s));
    if (name == "isprintable") return Value::boolean(s.empty() || all_chars<text::is_printable>(s));
    if (name == "islower") return Value::boolean(text::is_lower(s));
    if (name == "isupper") return Value::boolean(text::is_upper(s));
    if (name == "istitle") {
        // Upper-case letters only after uncased characters, lower-case only after cased ones.
        bool previous_cased = false, any = false;
        for (char32_t c : text::decode(s)) {
            const bool is_upper = text::to_lower(c) != c;
            const bool is_lower = text::to_upper(c) != c;
            if (is_upper) {
                if (previous_cased) return Value::boolean(false);
                previous_cased = any = true;
            } else if (is_lower) {
                if (!previous_cased) return Value::boolean(false);
                previous_cased = any = true;
            } else {
                previous_cased = false;
            }
        }
        return Value::boolean(any);
    }
    raise("AttributeError", "str." + name + "() is not supported by oxinfer's template renderer");
}

Value sequence_method(Interpreter&, const std::string& name, const Value& receiver, CallArgs& args) {
    const auto& items = receiver.list_data().items;
    if (name == "index") {
        Arguments a("index", args, {"value", "start", "stop"});
        const int64_t n = static_cast<int64_t>(items.size());
        const auto norm = [n](int64_t v) {
            if (v < 0) v += n;
            return std::clamp<int64_t>(v, 0, n);
        };
        const int64_t b = a.has(1) ? norm(a.integer(1, 0)) : 0;
        const int64_t e = a.has(2) ? norm(a.integer(2, n)) : n;
        for (int64_t i = b; i < e; ++i)
            if (equals(items[static_cast<size_t>(i)], a.get(0))) return Value::integer(i);
        raise("ValueError", a.get(0).repr() + " is not in " + receiver.type_name());
    }
    if (name == "count") {
        Arguments a("count", args, {"value"});
        int64_t n = 0;
        for (const Value& item : items)
            if (equals(item, a.get(0))) ++n;
        return Value::integer(n);
    }
    if (name == "copy") {
        Arguments a("copy", args, {});
        return Value::list(items, ListFlavor::List);
    }
    // jinja2's sandbox lets these two list mutations through (see builtin_attribute).
    ListData& data = receiver.list_data();
    if (name == "pop") {
        Arguments a("pop", args, {"index"});
        if (data.items.empty()) raise("IndexError", "pop from empty list");
        int64_t index = a.integer(0, -1);
        const auto n = static_cast<int64_t>(data.items.size());
        if (index < 0) index += n;
        if (index < 0 || index >= n) raise("IndexError", "pop index out of range");
        Value out = data.items[static_cast<size_t>(index)];
        data.items.erase(data.items.begin() + index);
        return out;
    }
    if (name == "clear") {
        Arguments a("clear", args, {});
        data.items.clear();
        return Value::none();
    }
    raise("AttributeError", receiver.type_name() + "." + name + "() is not supported");
}

Value dict_method(Interpreter&, const std::string& name, const Value& receiver, CallArgs& args) {
    const DictData& data = receiver.dict_data();
    if (name == "get") {
        Arguments a("get", args, {"key", "default"});
        const Value* found = data.find(a.get(0));
        return found ? *found : a.get(1, Value::none());
    }
    if (name == "items" || name == "keys" || name == "values") {
        Arguments a(name.c_str(), args, {});
        std::vector<Value> out;
        out.reserve(data.size());
        for (const auto& [k, v] : data.entries) {
            if (name == "items") out.push_back(Value::tuple({k, v}));
            else out.push_back(name == "keys" ? k : v);
        }
        return Value::list(std::move(out), name == "items"  ? ListFlavor::DictItems
                                           : name == "keys" ? ListFlavor::DictKeys
                                                            : ListFlavor::DictValues);
    }
    if (name == "copy") {
        Arguments a("copy", args, {});
        return Value::dict(std::make_shared<DictData>(data));
    }
    raise("AttributeError", "dict." + name + "() is not supported");
}

Value number_method(Interpreter&, const std::string& name, const Value& receiver, CallArgs& args) {
    Arguments a(name.c_str(), args, {});
    if (name == "conjugate") return receiver.is_float() ? receiver : Value::integer(receiver.as_int());
    if (name == "is_integer") return Value::boolean(std::isfinite(receiver.as_float()) && receiver.as_float() == std::floor(receiver.as_float()));
    int64_t v = receiver.as_int();
    uint64_t magnitude = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    int64_t bits = 0;
    while (magnitude) {
        ++bits;
        magnitude >>= 1;
    }
    return Value::integer(bits);
}

template <Value (*Impl)(Interpreter&, const std::string&, const Value&, CallArgs&)>
Value make_bound(const Value& receiver, const std::string& name) {
    class Bound : public Object {
    public:
        Bound(Value r, std::string n) : receiver_(std::move(r)), name_(std::move(n)) {}
        std::string type_name() const override { return "builtin_function_or_method"; }
        std::string repr() const override {
            return "<built-in method " + name_ + " of " + receiver_.type_name() + " object>";
        }
        bool callable() const override { return true; }
        Value call(Interpreter& interpreter, CallArgs& args) override { return Impl(interpreter, name_, receiver_, args); }

    private:
        Value receiver_;
        std::string name_;
    };
    return Value::object(std::make_shared<Bound>(receiver, name));
}

const std::set<std::string>& str_methods() {
    static const std::set<std::string> names = {
        "capitalize", "casefold",  "center",     "count",      "endswith",   "expandtabs", "find",      "format",
        "format_map", "index",     "isalnum",    "isalpha",    "isascii",    "isdecimal",  "isdigit",   "islower",
        "isnumeric",  "isprintable", "isspace",  "istitle",    "isupper",    "join",       "ljust",     "lower",
        "lstrip",     "partition", "removeprefix", "removesuffix", "replace", "rfind",      "rindex",    "rjust",
        "rpartition", "rsplit",    "rstrip",     "split",      "splitlines", "startswith", "strip",     "swapcase",
        "title",      "upper",     "zfill"};
    return names;
}

Value unsafe(const Value& receiver, const std::string& name) {
    return Value::undefined("access to attribute " + text::repr(name) + " of " + text::repr(receiver.type_name()) +
                                " object is unsafe.",
                            true);
}

}  // namespace

bool builtin_attribute(const Value& receiver, const std::string& name, Value& out) {
    if (name.rfind("__", 0) == 0 && !receiver.is_undefined()) {
        out = unsafe(receiver, name);
        return true;
    }
    switch (receiver.kind()) {
        case Kind::String:
            if (!str_methods().count(name)) return false;
            out = make_bound<str_method>(receiver, name);
            return true;
        case Kind::List: {
            const ListFlavor flavor = receiver.list_data().flavor;
            if (flavor == ListFlavor::List) {
                // jinja2.sandbox's list of unsafe MutableSequence methods (pop and clear are not on it).
                static const std::set<std::string> mutating = {"append", "reverse", "insert", "sort", "extend", "remove"};
                if (mutating.count(name)) {
                    out = unsafe(receiver, name);
                    return true;
                }
                if (name == "index" || name == "count" || name == "copy" || name == "pop" || name == "clear") {
                    out = make_bound<sequence_method>(receiver, name);
                    return true;
                }
            } else if (flavor == ListFlavor::Tuple || flavor == ListFlavor::Range) {
                if (name == "index" || name == "count") {
                    out = make_bound<sequence_method>(receiver, name);
                    return true;
                }
            }
            return false;
        }
        case Kind::Dict: {
            static const std::set<std::string> mutating = {"clear", "pop", "popitem", "setdefault", "update"};
            if (mutating.count(name)) {
                out = unsafe(receiver, name);
                return true;
            }
            if (name == "get" || name == "items" || name == "keys" || name == "values" || name == "copy") {
                out = make_bound<dict_method>(receiver, name);
                return true;
            }
            return false;
        }
        case Kind::Int:
        case Kind::Bool:
        case Kind::Float: {
            const bool is_float = receiver.is_float();
            if (name == "real") {
                out = is_float ? receiver : Value::integer(receiver.as_int());
            } else if (name == "imag") {
                out = is_float ? Value::number(0.0) : Value::integer(0);
            } else if (!is_float && name == "numerator") {
                out = Value::integer(receiver.as_int());
            } else if (!is_float && name == "denominator") {
                out = Value::integer(1);
            } else if (name == "conjugate" || (is_float && name == "is_integer") || (!is_float && name == "bit_length")) {
                out = make_bound<number_method>(receiver, name);
            } else {
                return false;
            }
            return true;
        }
        default: return false;
    }
}

}  // namespace oxinfer::jinja
