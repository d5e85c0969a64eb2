// jinja2's built-in filters (jinja2/filters.py, FILTERS) and tests (jinja2/tests.py, TESTS), with
// transformers' own `tojson` in place of jinja2's HTML-safe one:
// json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).

#include "chat/arguments.h"
#include "chat/builtins.h"
#include "chat/interpreter.h"
#include "chat/text.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <unordered_map>
#include <unordered_set>

namespace oxinfer::jinja {

namespace {

using FilterFn = Value (*)(Interpreter&, const Value&, CallArgs&);
using TestFn = bool (*)(Interpreter&, const Value&, CallArgs&);

Value generator(std::vector<Value> items) { return Value::list(std::move(items), ListFlavor::Generator); }

// soft_str: str(x), with Undefined as "".
std::string soft_str(const Value& v) { return v.str(); }

Value lower_if_string(const Value& v) { return v.is_string() ? Value::string(text::lower(v.as_string())) : v; }

// make_attrgetter: "a.b.0" looks up each part with getitem (digit parts as integers).
std::vector<Value> attribute_parts(const Value& attribute) {
    if (attribute.is_none() || attribute.is_undefined()) return {};
    if (!attribute.is_string()) return {attribute};
    std::vector<Value> parts;
    for (const std::string& part : text::split(attribute.as_string(), std::string("."), -1)) {
        const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        parts.push_back(digits ? Value::integer(std::stoll(part)) : Value::string(part));
    }
    return parts;
}

Value get_attribute_path(Interpreter& interpreter, Value item, const std::vector<Value>& parts, const Value* fallback) {
    for (const Value& part : parts) {
        item = interpreter.getitem(item, part);
        if (fallback && !fallback->is_none() && item.is_undefined()) item = *fallback;
    }
    return item;
}

// The sort key make_multi_attrgetter builds: one value per comma-separated attribute.
Value multi_key(Interpreter& interpreter, const Value& item, const Value& attribute, bool case_sensitive) {
    std::vector<std::vector<Value>> paths;
    if (attribute.is_string()) {
        for (const std::string& a : text::split(attribute.as_string(), std::string(","), -1))
            paths.push_back(attribute_parts(Value::string(a)));
    } else {
        paths.push_back(attribute_parts(attribute));
    }
    std::vector<Value> key;
    for (const auto& path : paths) {
        Value v = get_attribute_path(interpreter, item, path, nullptr);
        key.push_back(case_sensitive ? v : lower_if_string(v));
    }
    return Value::list(std::move(key));
}

template <typename KeyFn>
std::vector<Value> sorted_by(std::vector<Value> items, KeyFn key_of, bool reverse) {
    std::vector<std::pair<Value, Value>> keyed;
    keyed.reserve(items.size());
    for (Value& item : items) {
        Value key = key_of(item);
        keyed.emplace_back(std::move(key), std::move(item));
    }
    std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& a, const auto& b) {
        const int c = reverse ? compare(b.first, a.first, "<") : compare(a.first, b.first, "<");
        return c == -1;
    });
    std::vector<Value> out;
    out.reserve(keyed.size());
    for (auto& kv : keyed) out.push_back(std::move(kv.second));
    return out;
}

// ---- filters ----------------------------------------------------------------------------------

Value f_abs(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("abs", args, {});
    if (v.is_integral()) {
        if (v.as_int() == INT64_MIN) raise("OverflowError", "integer overflow");
        return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    if (v.is_float()) return Value::number(std::fabs(v.as_float()));
    if (v.is_undefined()) v.fail_undefined();
    raise("TypeError", "bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_attr(Interpreter& interpreter, const Value& v, CallArgs& args) {
    Arguments a("attr", args, {"name"});
    const Value& name = a.get(0);
    if (!name.is_string()) raise("TypeError", "attribute name must be string");
    Value out;
    if (v.is_undefined()) v.fail_undefined();
    if (v.is_namespace()) {
        if (const Value* found = v.dict_data().find(std::string_view(name.as_string()))) return *found;
    } else if (v.is_object()) {
        if (v.object_ref().get_attr(name.as_string(), out)) return out;
    } else if (builtin_attribute(v, name.as_string(), out)) {
        return out;
    }
    (void)interpreter;
    return Value::undefined_attribute(v, name);
}

Value f_batch(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("batch", args, {"linecount", "fill_with"});
    const int64_t count = a.integer(0, 0);
    const Value fill = a.get(1, Value::none());
    std::vector<Value> out, current;
    for (Value& item : iterate(v)) {
        if (static_cast<int64_t>(current.size()) == count) {
            out.push_back(Value::list(std::move(current)));
            current.clear();
        }
        current.push_back(std::move(item));
    }
    if (!current.empty()) {
        if (!fill.is_none())
            while (static_cast<int64_t>(current.size()) < count) current.push_back(fill);
        out.push_back(Value::list(std::move(current)));
    }
    return generator(std::move(out));
}

Value f_capitalize(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("capitalize", args, {});
    return Value::string(text::capitalize(soft_str(v)));
}

Value f_center(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("center", args, {"width"});
    return Value::string(text::center(soft_str(v), a.integer(0, 80), ' '));
}

Value f_length(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("length", args, {});
    return Value::integer(length(v));
}

Value f_default(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("default", args, {"default_value", "boolean"});
    if (v.is_undefined() || (a.flag(1, false) && !v.truthy())) return a.get(0, Value::string(""));
    return v;
}

Value f_dictsort(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("dictsort", args, {"case_sensitive", "by", "reverse"});
    const bool case_sensitive = a.flag(0, false);
    const std::string by = a.has(1) ? a.get(1).str() : "key";
    if (by != "key" && by != "value") raise("FilterArgumentError", "You can only sort by either \"key\" or \"value\"");
    if (!v.is_dict()) {
        if (v.is_undefined()) v.fail_undefined();
        raise("AttributeError", "'" + v.type_name() + "' object has no attribute 'items'");
    }
    std::vector<Value> items;
    for (const auto& [k, val] : v.dict_data().entries) items.push_back(Value::tuple({k, val}));
    const size_t pos = by == "key" ? 0 : 1;
    return Value::list(sorted_by(
        std::move(items),
        [&](const Value& item) {
            const Value& x = item.list_data().items[pos];
            return case_sensitive ? x : lower_if_string(x);
        },
        a.flag(2, false)));
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

Value f_escape(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("escape", args, {});
    return Value::string(html_escape(soft_str(v)));
}

Value f_filesizeformat(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("filesizeformat", args, {"binary"});
    const bool binary = a.flag(0, false);
    double bytes;
    if (v.is_number()) bytes = v.as_float();
    else if (v.is_string()) bytes = std::strtod(v.as_string().c_str(), nullptr);
    else raise("TypeError", "float() argument must be a string or a real number, not '" + v.type_name() + "'");
    const double base = binary ? 1024 : 1000;
    static const char* decimal[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
    static const char* binary_units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    if (bytes == 1) return Value::string("1 Byte");
    if (bytes < base) return Value::string(std::to_string(static_cast<int64_t>(bytes)) + " Bytes");
    char buf[64];
    for (int i = 0; i < 8; ++i) {
        const double unit = std::pow(base, i + 2);
        if (bytes < unit || i == 7) {
            std::snprintf(buf, sizeof buf, "%.1f %s", base * bytes / unit, binary ? binary_units[i] : decimal[i]);
            return Value::string(buf);
        }
    }
    return Value::string("");
}

Value f_first(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("first", args, {});
    if (v.is_list() && !v.is_flavor(ListFlavor::Generator) && !v.is_flavor(ListFlavor::Reversed)) {
        const auto& items = v.list_data().items;
        return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
    }
    const std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    return items.front();
}

Value f_last(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("last", args, {});
    if (v.is_flavor(ListFlavor::Generator) || v.is_flavor(ListFlavor::DictValues) || v.is_flavor(ListFlavor::DictItems) ||
        v.is_flavor(ListFlavor::Reversed))
        raise("TypeError", "'" + v.type_name() + "' object is not reversible");
    if (!v.is_list() && !v.is_string() && !v.is_dict() && !v.is_undefined())
        raise("TypeError", "'" + v.type_name() + "' object is not reversible");
    const std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items.back();
}

// Python float(str): optional whitespace and sign, digits with single underscores, inf/nan.
bool parse_python_float(const std::string& raw, double& out) {
    const std::string s = text::strip(raw, std::nullopt, true, true);
    if (s.empty()) return false;
    std::string cleaned;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '_') {
            const bool ok = i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                            std::isdigit(static_cast<unsigned char>(s[i + 1]));
            if (!ok) return false;
            continue;
        }
        if (c == 'x' || c == 'X' || c == 'p' || c == 'P') return false;
        cleaned += c;
    }
    std::string lowered = text::lower(cleaned);
    std::string unsigned_part = lowered;
    if (!unsigned_part.empty() && (unsigned_part[0] == '+' || unsigned_part[0] == '-')) unsigned_part.erase(0, 1);
    if (unsigned_part == "inf" || unsigned_part == "infinity" || unsigned_part == "nan") {
        const double v = unsigned_part == "nan" ? NAN : INFINITY;
        out = lowered[0] == '-' ? -v : v;
        return true;
    }
    if (unsigned_part.find_first_not_of("0123456789.e+-") != std::string::npos) return false;
    char* end = nullptr;
    errno = 0;
    out = std::strtod(cleaned.c_str(), &end);
    return end && *end == '\0';
}

Value f_float(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("float", args, {"default"});
    const Value fallback = a.get(0, Value::number(0.0));
    if (v.is_number()) return Value::number(v.as_float());
    if (v.is_string()) {
        double d;
        if (parse_python_float(v.as_string(), d)) return Value::number(d);
    }
    return fallback;
}

Value f_format(Interpreter&, const Value& v, CallArgs& args) {
    if (!args.positional.empty() && !args.keyword.empty())
        raise("FilterArgumentError", "can't handle positional and keyword arguments at the same time");
    if (!args.keyword.empty()) {
        auto data = std::make_shared<DictData>();
        for (auto& [k, val] : args.keyword) data->set(k, val);
        return Value::string(percent_format(soft_str(v), Value::dict(data)));
    }
    return Value::string(percent_format(soft_str(v), Value::tuple(args.positional)));
}

Value f_groupby(Interpreter& interpreter, const Value& v, CallArgs& args) {
    Arguments a("groupby", args, {"attribute", "default", "case_sensitive"});
    const std::vector<Value> parts = attribute_parts(a.get(0));
    const Value fallback = a.get(1, Value::none());
    const bool case_sensitive = a.flag(2, false);
    const auto key_of = [&](const Value& item) {
        Value k = get_attribute_path(interpreter, item, parts, &fallback);
        return case_sensitive ? k : lower_if_string(k);
    };
    const std::vector<Value> sorted = sorted_by(iterate(v), key_of, false);
    std::vector<Value> groups;
    size_t i = 0;
    while (i < sorted.size()) {
        const Value key = key_of(sorted[i]);
        std::vector<Value> members;
        size_t j = i;
        while (j < sorted.size() && equals(key_of(sorted[j]), key)) members.push_back(sorted[j++]);
        const Value grouper = case_sensitive ? key : get_attribute_path(interpreter, members[0], parts, &fallback);
        groups.push_back(Value::tuple({grouper, Value::list(std::move(members))}));
        i = j;
    }
    return Value::list(std::move(groups));
}

Value f_indent(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("indent", args, {"width", "first", "blank"});
    std::string indention;
    const Value width = a.get(0, Value::integer(4));
    if (width.is_string()) indention = width.as_string();
    else if (width.is_integral()) indention = std::string(static_cast<size_t>(std::max<int64_t>(width.as_int(), 0)), ' ');
    else raise("TypeError", "can't multiply sequence by non-int of type '" + width.type_name() + "'");
    if (v.is_undefined()) v.fail_undefined();
    if (!v.is_string()) raise("TypeError", "unsupported operand type(s) for +=: '" + v.type_name() + "' and 'str'");
    const std::string s = v.as_string() + "\n";
    const std::vector<std::string> lines = text::splitlines(s, false);
    std::string out;
    if (a.flag(2, false)) {
        for (size_t i = 0; i < lines.size(); ++i) {
            if (i) out += "\n" + indention;
            out += lines[i];
        }
    } else if (!lines.empty()) {
        out = lines[0];
        for (size_t i = 1; i < lines.size(); ++i) {
            out += "\n";
            if (!lines[i].empty()) out += indention;
            out += lines[i];
        }
    }
    if (a.flag(1, false)) out = indention + out;
    return Value::string(out);
}

// Python int(str, base): whitespace, sign, underscores between digits, an optional matching prefix.
bool parse_python_int(const std::string& raw, int base, int64_t& out) {
    std::string s = text::strip(raw, std::nullopt, true, true);
    bool negative = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        negative = s[0] == '-';
        s.erase(0, 1);
    }
    if (s.size() > 2 && s[0] == '0') {
        const char p = static_cast<char>(s[1] | 0x20);
        if ((p == 'x' && base == 16) || (p == 'o' && base == 8) || (p == 'b' && base == 2)) s.erase(0, 2);
    }
    if (s.empty()) return false;
    std::string digits;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '_') {
            if (i == 0 || i + 1 >= s.size() || s[i + 1] == '_') return false;
            continue;
        }
        const char c = static_cast<char>(s[i] | (std::isalpha(static_cast<unsigned char>(s[i])) ? 0x20 : 0));
        const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c >= 'a' && c <= 'z') ? c - 'a' + 10 : 99;
        if (d >= base) return false;
        digits += s[i];
    }
    errno = 0;
    const unsigned long long value = std::strtoull(digits.c_str(), nullptr, base);
    if (errno == ERANGE || value > static_cast<unsigned long long>(INT64_MAX)) raise("OverflowError", "integer too large");
    out = negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
    return true;
}

int64_t float_to_int(double d) {
    if (std::isinf(d)) raise("OverflowError", "cannot convert float infinity to integer");
    if (std::fabs(d) >= 9.2e18) raise("OverflowError", "integer too large");
    return static_cast<int64_t>(std::trunc(d));
}

Value f_int(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("int", args, {"default", "base"});
    const Value fallback = a.get(0, Value::integer(0));
    const int64_t base = a.integer(1, 10);
    if (v.is_integral()) return Value::integer(v.as_int());
    if (v.is_float()) {
        if (std::isnan(v.as_float())) return fallback;
        return Value::integer(float_to_int(v.as_float()));
    }
    if (v.is_string()) {
        int64_t i;
        if (base >= 2 && base <= 36 && parse_python_int(v.as_string(), static_cast<int>(base), i)) return Value::integer(i);
        double d;
        if (parse_python_float(v.as_string(), d) && !std::isnan(d)) return Value::integer(float_to_int(d));
    }
    return fallback;
}

Value f_items(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("items", args, {});
    if (v.is_undefined()) return generator({});
    if (!v.is_dict()) raise("TypeError", "Can only get item pairs from a mapping.");
    std::vector<Value> items;
    for (const auto& [k, val] : v.dict_data().entries) items.push_back(Value::tuple({k, val}));
    return generator(std::move(items));
}

Value f_join(Interpreter& interpreter, const Value& v, CallArgs& args) {
    Arguments a("join", args, {"d", "attribute"});
    const std::string sep = soft_str(a.get(0, Value::string("")));
    const std::vector<Value> parts = attribute_parts(a.get(1, Value::none()));
    std::string out;
    bool first = true;
    for (const Value& item : iterate(v)) {
        if (!first) out += sep;
        first = false;
        out += a.has(1) ? get_attribute_path(interpreter, item, parts, nullptr).str() : item.str();
    }
    return Value::string(std::move(out));
}

Value f_list(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("list", args, {});
    return Value::list(iterate(v));
}

Value f_lower(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("lower", args, {});
    return Value::string(text::lower(soft_str(v)));
}

Value f_upper(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("upper", args, {});
    return Value::string(text::upper(soft_str(v)));
}

Value f_map(Interpreter& interpreter, const Value& v, CallArgs& args) {
    if (!v.truthy()) return generator({});
    std::vector<Value> out;
    if (args.positional.empty()) {
        Value attribute, fallback = Value::none();
        bool has_attribute = false;
        for (auto& [k, val] : args.keyword) {
            if (k == "attribute") {
                attribute = val;
                has_attribute = true;
            } else if (k == "default") {
                fallback = val;
            } else {
                raise("FilterArgumentError", "Unexpected keyword argument " + text::repr(k));
            }
        }
        if (!has_attribute) raise("FilterArgumentError", "map requires a filter argument");
        const std::vector<Value> parts = attribute_parts(attribute);
        for (const Value& item : iterate(v)) out.push_back(get_attribute_path(interpreter, item, parts, &fallback));
        return generator(std::move(out));
    }
    const std::string name = args.positional[0].str();
    if (!has_filter(name)) raise("TemplateRuntimeError", "No filter named " + text::repr(name) + ".");
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    for (const Value& item : iterate(v)) {
        CallArgs copy = rest;
        out.push_back(apply_filter(interpreter, name, item, copy));
    }
    return generator(std::move(out));
}

Value min_max(Interpreter& interpreter, const Value& v, CallArgs& args, bool want_max, const char* name) {
    Arguments a(name, args, {"case_sensitive", "attribute"});
    const bool case_sensitive = a.flag(0, false);
    const std::vector<Value> parts = attribute_parts(a.get(1, Value::none()));
    const std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    const auto key_of = [&](const Value& item) {
        Value k = get_attribute_path(interpreter, item, parts, nullptr);
        return case_sensitive ? k : lower_if_string(k);
    };
    size_t best = 0;
    Value best_key = key_of(items[0]);
    for (size_t i = 1; i < items.size(); ++i) {
        Value k = key_of(items[i]);
        const int c = compare(k, best_key, want_max ? ">" : "<");
        if ((want_max && c == 1) || (!want_max && c == -1)) {
            best = i;
            best_key = std::move(k);
        }
    }
    return items[best];
}

Value f_min(Interpreter& interpreter, const Value& v, CallArgs& args) { return min_max(interpreter, v, args, false, "min"); }
Value f_max(Interpreter& interpreter, const Value& v, CallArgs& args) { return min_max(interpreter, v, args, true, "max"); }

Value f_pprint(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("pprint", args, {});
    return Value::string(v.repr());
}

Value f_random(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("random", args, {});
    const std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined("No random item, sequence was empty.");
    static std::mt19937_64 rng{std::random_device{}()};
    return items[std::uniform_int_distribution<size_t>(0, items.size() - 1)(rng)];
}

bool select_test(Interpreter& interpreter, const Value& item, const std::string* test, const CallArgs& test_args) {
    if (!test) return item.truthy();
    CallArgs copy = test_args;
    return apply_test(interpreter, *test, item, copy);
}

Value select_or_reject(Interpreter& interpreter, const Value& v, CallArgs& args, bool select, bool by_attribute) {
    if (!v.truthy()) return generator({});
    size_t offset = 0;
    std::vector<Value> parts;
    if (by_attribute) {
        if (args.positional.empty()) raise("FilterArgumentError", "Missing parameter for attribute name");
        parts = attribute_parts(args.positional[0]);
        offset = 1;
    }
    std::string test_name;
    const std::string* test = nullptr;
    CallArgs test_args;
    if (args.positional.size() > offset) {
        test_name = args.positional[offset].str();
        if (!has_test(test_name)) raise("TemplateRuntimeError", "No test named " + text::repr(test_name) + ".");
        test = &test_name;
        test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(offset + 1), args.positional.end());
        test_args.keyword = args.keyword;
    }
    std::vector<Value> out;
    for (const Value& item : iterate(v)) {
        const Value subject = by_attribute ? get_attribute_path(interpreter, item, parts, nullptr) : item;
        if (select_test(interpreter, subject, test, test_args) == select) out.push_back(item);
    }
    return generator(std::move(out));
}

Value f_select(Interpreter& i, const Value& v, CallArgs& a) { return select_or_reject(i, v, a, true, false); }
Value f_reject(Interpreter& i, const Value& v, CallArgs& a) { return select_or_reject(i, v, a, false, false); }
Value f_selectattr(Interpreter& i, const Value& v, CallArgs& a) { return select_or_reject(i, v, a, true, true); }
Value f_rejectattr(Interpreter& i, const Value& v, CallArgs& a) { return select_or_reject(i, v, a, false, true); }

Value f_replace(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("replace", args, {"old", "new", "count"});
    const int64_t count = a.integer(2, -1);
    return Value::string(text::replace(soft_str(v), soft_str(a.get(0)), soft_str(a.get(1)), count));
}

Value f_reverse(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("reverse", args, {});
    if (v.is_string()) {
        std::u32string u = text::decode(v.as_string());
        std::reverse(u.begin(), u.end());
        return Value::string(text::encode(u));
    }
    const bool reversible = v.is_undefined() || v.is_dict() ||
                            (v.is_list() && !v.is_flavor(ListFlavor::Generator) && !v.is_flavor(ListFlavor::Reversed));
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    if (reversible) return Value::list(std::move(items), ListFlavor::Reversed);
    return Value::list(std::move(items));
}

// Python's round(x, n) for floats: correctly rounded through the decimal string.
double python_round(double x, int64_t ndigits) {
    if (!std::isfinite(x)) return x;
    if (ndigits > 300) return x;
    if (ndigits >= 0) {
        char buf[512];
        std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(ndigits), x);
        return std::strtod(buf, nullptr);
    }
    const double scale = std::pow(10.0, static_cast<double>(-ndigits));
    const double y = x / scale;
    double z = std::nearbyint(y);
    return z * scale;
}

Value f_round(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("round", args, {"precision", "method"});
    const int64_t precision = a.integer(0, 0);
    const std::string method = a.has(1) ? a.get(1).str() : "common";
    if (method != "common" && method != "ceil" && method != "floor")
        raise("FilterArgumentError", "method must be common, ceil or floor");
    if (v.is_undefined()) v.fail_undefined();
    if (!v.is_number()) raise("TypeError", "type " + v.type_name() + " doesn't define __round__ method");
    if (method == "common") {
        if (v.is_integral()) {
            if (precision >= 0) return Value::integer(v.as_int());
            return Value::integer(static_cast<int64_t>(python_round(static_cast<double>(v.as_int()), precision)));
        }
        return Value::number(python_round(v.as_float(), precision));
    }
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double scaled = method == "ceil" ? std::ceil(v.as_float() * scale) : std::floor(v.as_float() * scale);
    return Value::number(scaled / scale);
}

Value f_safe(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("safe", args, {});
    return Value::string(soft_str(v));
}

Value f_slice(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("slice", args, {"slices", "fill_with"});
    const int64_t slices = a.integer(0, 1);
    const Value fill = a.get(1, Value::none());
    const std::vector<Value> seq = iterate(v);
    const int64_t n = static_cast<int64_t>(seq.size());
    if (slices <= 0) raise("ZeroDivisionError", "integer division or modulo by zero");
    const int64_t per = n / slices, extra = n % slices;
    int64_t offset = 0;
    std::vector<Value> out;
    for (int64_t k = 0; k < slices; ++k) {
        const int64_t start = offset + k * per;
        if (k < extra) ++offset;
        const int64_t end = offset + (k + 1) * per;
        std::vector<Value> part(seq.begin() + start, seq.begin() + end);
        if (!fill.is_none() && k >= extra) part.push_back(fill);
        out.push_back(Value::list(std::move(part)));
    }
    return generator(std::move(out));
}

Value f_sort(Interpreter& interpreter, const Value& v, CallArgs& args) {
    Arguments a("sort", args, {"reverse", "case_sensitive", "attribute"});
    const bool case_sensitive = a.flag(1, false);
    const Value attribute = a.get(2, Value::none());
    return Value::list(sorted_by(
        iterate(v), [&](const Value& item) { return multi_key(interpreter, item, attribute, case_sensitive); },
        a.flag(0, false)));
}

Value f_string(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("string", args, {});
    return Value::string(soft_str(v));
}

Value f_striptags(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("striptags", args, {});
    std::string s = soft_str(v), stripped;
    size_t i = 0;
    while (i < s.size()) {
        if (s.compare(i, 4, "<!--") == 0) {
            const size_t end = s.find("-->", i + 4);
            if (end != std::string::npos) {
                i = end + 3;
                continue;
            }
        }
        if (s[i] == '<') {
            const size_t end = s.find('>', i + 1);
            if (end != std::string::npos) {
                i = end + 1;
                continue;
            }
        }
        stripped += s[i++];
    }
    std::string joined;
    for (const std::string& word : text::split(stripped, std::nullopt, -1)) {
        if (!joined.empty()) joined += ' ';
        joined += word;
    }
    static const std::pair<const char*, const char*> entities[] = {
        {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&#34;", "\""}, {"&#39;", "'"}, {"&quot;", "\""}, {"&nbsp;", "\xC2\xA0"}};
    for (const auto& [from, to] : entities) joined = text::replace(joined, from, to, -1);
    return Value::string(joined);
}

Value f_sum(Interpreter& interpreter, const Value& v, CallArgs& args) {
    Arguments a("sum", args, {"attribute", "start"});
    const std::vector<Value> parts = attribute_parts(a.get(0, Value::none()));
    Value total = a.get(1, Value::integer(0));
    if (total.is_string()) raise("TypeError", "sum() can't sum strings [use ''.join(seq) instead]");
    for (const Value& item : iterate(v))
        total = binary_add(total, a.has(0) ? get_attribute_path(interpreter, item, parts, nullptr) : item);
    return total;
}

Value f_title(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("title", args, {});
    // jinja2: split on runs of [-\s({\[<], upper-case the first character of each piece.
    const std::u32string s = text::decode(soft_str(v));
    std::u32string out;
    size_t i = 0;
    const auto is_separator = [](char32_t c) {
        return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || text::is_space(c);
    };
    while (i < s.size()) {
        size_t j = i;
        const bool sep = is_separator(s[i]);
        while (j < s.size() && is_separator(s[j]) == sep) ++j;
        if (sep) {
            out.append(s, i, j - i);
        } else {
            const std::string head = text::upper(text::encode(std::u32string(1, s[i])));
            out += text::decode(head);
            out += text::decode(text::lower(text::encode(s.substr(i + 1, j - i - 1))));
        }
        i = j;
    }
    return Value::string(text::encode(out));
}

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value f_tojson(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
    return Value::string(json_dumps(v, a.flag(0, false), a.get(1, Value::none()), a.get(2, Value::none()), a.flag(3, false)));
}

Value f_trim(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("trim", args, {"chars"});
    std::optional<std::string> chars;
    if (a.has(0) && !a.get(0).is_none()) chars = a.get(0).str();
    return Value::string(text::strip(soft_str(v), chars, true, true));
}

Value f_truncate(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("truncate", args, {"length", "killwords", "end", "leeway"});
    const int64_t length = a.integer(0, 255);
    const bool killwords = a.flag(1, false);
    const std::string end = a.has(2) ? a.get(2).str() : "...";
    const int64_t leeway = a.integer(3, 5);
    const auto end_len = static_cast<int64_t>(text::length(end));
    if (length < end_len) raise("AssertionError", "expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
    if (leeway < 0) raise("AssertionError", "expected leeway >= 0, got " + std::to_string(leeway));
    const std::string s = soft_str(v);
    const std::u32string u = text::decode(s);
    if (static_cast<int64_t>(u.size()) <= length + leeway) return Value::string(s);
    const std::string head = text::encode(std::u32string_view(u).substr(0, static_cast<size_t>(length - end_len)));
    if (killwords) return Value::string(head + end);
    const std::vector<std::string> parts = text::rsplit(head, std::string(" "), 1);
    return Value::string(parts[0] + end);
}

Value f_unique(Interpreter& interpreter, const Value& v, CallArgs& args) {
    Arguments a("unique", args, {"case_sensitive", "attribute"});
    const bool case_sensitive = a.flag(0, false);
    const std::vector<Value> parts = attribute_parts(a.get(1, Value::none()));
    std::unordered_set<std::string> seen;
    std::vector<Value> out;
    for (const Value& item : iterate(v)) {
        Value key = get_attribute_path(interpreter, item, parts, nullptr);
        if (!case_sensitive) key = lower_if_string(key);
        if (seen.insert(hash_key(key)).second) out.push_back(item);
    }
    return generator(std::move(out));
}

std::string url_quote(const Value& v, bool for_qs) {
    const std::string s = v.str();
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' || (!for_qs && c == '/')) {
            out += static_cast<char>(c);
        } else if (for_qs && c == ' ') {
            out += '+';
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 0xF];
        }
    }
    return out;
}

Value f_urlencode(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("urlencode", args, {});
    if (v.is_string() || (!v.is_list() && !v.is_dict())) return Value::string(url_quote(v, false));
    std::vector<std::pair<Value, Value>> pairs;
    if (v.is_dict()) {
        for (const auto& kv : v.dict_data().entries) pairs.push_back(kv);
    } else {
        for (const Value& item : iterate(v)) {
            const std::vector<Value> kv = iterate(item);
            if (kv.size() != 2) raise("ValueError", "urlencode expects pairs");
            pairs.emplace_back(kv[0], kv[1]);
        }
    }
    std::string out;
    for (const auto& [k, val] : pairs) {
        if (!out.empty()) out += '&';
        out += url_quote(k, true) + "=" + url_quote(val, true);
    }
    return Value::string(out);
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("wordcount", args, {});
    int64_t count = 0;
    bool in_word = false;
    for (char32_t c : text::decode(soft_str(v))) {
        const bool word = c == '_' || text::is_alpha(c) || text::is_digit(c);
        if (word && !in_word) ++count;
        in_word = word;
    }
    return Value::integer(count);
}

Value f_unsupported(Interpreter&, const Value&, CallArgs&) {
    raise("TemplateRuntimeError", "this filter (urlize, wordwrap or xmlattr) is not supported by oxinfer's template renderer");
}

const std::unordered_map<std::string, FilterFn>& filters() {
    static const std::unordered_map<std::string, FilterFn> table = {
        {"abs", f_abs},
        {"attr", f_attr},
        {"batch", f_batch},
        {"capitalize", f_capitalize},
        {"center", f_center},
        {"count", f_length},
        {"d", f_default},
        {"default", f_default},
        {"dictsort", f_dictsort},
        {"e", f_escape},
        {"escape", f_escape},
        {"filesizeformat", f_filesizeformat},
        {"first", f_first},
        {"float", f_float},
        {"forceescape", f_escape},
        {"format", f_format},
        {"groupby", f_groupby},
        {"indent", f_indent},
        {"int", f_int},
        {"join", f_join},
        {"last", f_last},
        {"length", f_length},
        {"list", f_list},
        {"lower", f_lower},
        {"items", f_items},
        {"map", f_map},
        {"min", f_min},
        {"max", f_max},
        {"pprint", f_pprint},
        {"random", f_random},
        {"reject", f_reject},
        {"rejectattr", f_rejectattr},
        {"replace", f_replace},
        {"reverse", f_reverse},
        {"round", f_round},
        {"safe", f_safe},
        {"select", f_select},
        {"selectattr", f_selectattr},
        {"slice", f_slice},
        {"sort", f_sort},
        {"string", f_string},
        {"striptags", f_striptags},
        {"sum", f_sum},
        {"title", f_title},
        {"trim", f_trim},
        {"truncate", f_truncate},
        {"unique", f_unique},
        {"upper", f_upper},
        {"urlencode", f_urlencode},
        {"urlize", f_unsupported},
        {"wordcount", f_wordcount},
        {"wordwrap", f_unsupported},
        {"xmlattr", f_unsupported},
        {"tojson", f_tojson},
    };
    return table;
}

// ---- tests ------------------------------------------------------------------------------------

Value modulo(const Value& a, const Value& b) {
    if (a.is_undefined()) a.fail_undefined();
    if (b.is_undefined()) b.fail_undefined();
    if (a.is_integral() && b.is_integral()) {
        if (b.as_int() == 0) raise("ZeroDivisionError", "integer division or modulo by zero");
        int64_t r = a.as_int() % b.as_int();
        if (r != 0 && ((r < 0) != (b.as_int() < 0))) r += b.as_int();
        return Value::integer(r);
    }
    if (a.is_number() && b.is_number()) {
        if (b.as_float() == 0.0) raise("ZeroDivisionError", "float modulo");
        double r = std::fmod(a.as_float(), b.as_float());
        if (r != 0 && ((r < 0) != (b.as_float() < 0))) r += b.as_float();
        return Value::number(r);
    }
    if (a.is_string()) return Value::string(percent_format(a.as_string(), b));
    raise("TypeError", "unsupported operand type(s) for %: '" + a.type_name() + "' and '" + b.type_name() + "'");
}

bool t_odd(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("odd", args, {});
    return equals(modulo(v, Value::integer(2)), Value::integer(1));
}
bool t_even(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("even", args, {});
    return equals(modulo(v, Value::integer(2)), Value::integer(0));
}
bool t_divisibleby(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("divisibleby", args, {"num"});
    return equals(modulo(v, a.get(0)), Value::integer(0));
}
bool t_defined(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("defined", args, {});
    return !v.is_undefined();
}
bool t_undefined(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("undefined", args, {});
    return v.is_undefined();
}
bool t_filter(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("filter", args, {});
    return v.is_string() && has_filter(v.as_string());
}
bool t_test(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("test", args, {});
    return v.is_string() && has_test(v.as_string());
}
bool t_none(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("none", args, {});
    return v.is_none();
}
bool t_boolean(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("boolean", args, {});
    return v.is_bool();
}
bool t_false(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("false", args, {});
    return v.is_bool() && !v.as_bool();
}
bool t_true(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("true", args, {});
    return v.is_bool() && v.as_bool();
}
bool t_integer(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("integer", args, {});
    return v.is_int();
}
bool t_float(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("float", args, {});
    return v.is_float();
}
bool t_lower(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("lower", args, {});
    return text::is_lower(v.str());
}
bool t_upper(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("upper", args, {});
    return text::is_upper(v.str());
}
bool t_string(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("string", args, {});
    return v.is_string();
}
bool t_mapping(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("mapping", args, {});
    return v.is_dict();
}
bool t_number(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("number", args, {});
    return v.is_number();
}
bool t_sequence(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("sequence", args, {});
    if (v.is_string() || v.is_dict() || v.is_undefined()) return true;
    return v.is_plain_list() || v.is_tuple() || v.is_flavor(ListFlavor::Range);
}
bool t_iterable(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("iterable", args, {});
    if (v.is_string() || v.is_dict() || v.is_list() || v.is_undefined()) return true;
    return v.is_object() && v.object_ref().type_name() == "LoopContext";
}
bool t_callable(Interpreter&, const Value& v, CallArgs& args) {
    Arguments("callable", args, {});
    return v.is_callable() || v.is_undefined();
}
bool t_sameas(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("sameas", args, {"other"});
    const Value& other = a.get(0);
    if (v.kind() != other.kind()) return false;
    switch (v.kind()) {
        case Kind::None: return true;
        case Kind::Undefined: return v.identity() == other.identity();
        case Kind::Bool: return v.as_bool() == other.as_bool();
        case Kind::Int: return v.as_int() == other.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
        default: return v.identity() == other.identity();
    }
}
bool t_escaped(Interpreter&, const Value&, CallArgs& args) {
    Arguments("escaped", args, {});
    return false;
}
bool t_in(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("in", args, {"seq"});
    const Value& seq = a.get(0);
    if (seq.is_string()) {
        if (!v.is_string()) raise("TypeError", "'in <string>' requires string as left operand, not " + v.type_name());
        return seq.as_string().find(v.as_string()) != std::string::npos;
    }
    if (seq.is_dict()) return seq.dict_data().find(v) != nullptr;
    for (const Value& item : iterate(seq))
        if (equals(item, v)) return true;
    return false;
}

int compare_test(const Value& v, CallArgs& args, const char* name, const char* op) {
    Arguments a(name, args, {"other"});
    return compare(v, a.get(0), op);
}
bool t_eq(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("eq", args, {"other"});
    return equals(v, a.get(0));
}
bool t_ne(Interpreter&, const Value& v, CallArgs& args) {
    Arguments a("ne", args, {"other"});
    return !equals(v, a.get(0));
}
bool t_gt(Interpreter&, const Value& v, CallArgs& args) { return compare_test(v, args, "gt", ">") == 1; }
bool t_ge(Interpreter&, const Value& v, CallArgs& args) {
    const int c = compare_test(v, args, "ge", ">=");
    return c == 1 || c == 0;
}
bool t_lt(Interpreter&, const Value& v, CallArgs& args) { return compare_test(v, args, "lt", "<") == -1; }
bool t_le(Interpreter&, const Value& v, CallArgs& args) {
    const int c = compare_test(v, args, "le", "<=");
    return c == -1 || c == 0;
}

const std::unordered_map<std::string, TestFn>& tests() {
    static const std::unordered_map<std::string, TestFn> table = {
        {"odd", t_odd},         {"even", t_even},       {"divisibleby", t_divisibleby}, {"defined", t_defined},
        {"undefined", t_undefined}, {"filter", t_filter}, {"test", t_test},           {"none", t_none},
        {"boolean", t_boolean}, {"false", t_false},     {"true", t_true},             {"integer", t_integer},
        {"float", t_float},     {"lower", t_lower},     {"upper", t_upper},           {"string", t_string},
        {"mapping", t_mapping}, {"number", t_number},   {"sequence", t_sequence},     {"iterable", t_iterable},
        {"callable", t_callable}, {"sameas", t_sameas}, {"escaped", t_escaped},       {"in", t_in},
        {"==", t_eq},           {"eq", t_eq},           {"equalto", t_eq},            {"!=", t_ne},
        {"ne", t_ne},           {">", t_gt},            {"gt", t_gt},                 {"greaterthan", t_gt},
        {"ge", t_ge},           {">=", t_ge},           {"<", t_lt},                  {"lt", t_lt},
        {"lessthan", t_lt},     {"<=", t_le},           {"le", t_le},
    };
    return table;
}

}  // namespace

bool has_filter(std::string_view name) { return filters().count(std::string(name)) > 0; }
bool has_test(std::string_view name) { return tests().count(std::string(name)) > 0; }

Value apply_filter(Interpreter& interpreter, const std::string& name, const Value& value, CallArgs& args) {
    const auto it = filters().find(name);
    if (it == filters().end()) raise("TemplateRuntimeError", "No filter named " + text::repr(name) + ".");
    return it->second(interpreter, value, args);
}

bool apply_test(Interpreter& interpreter, const std::string& name, const Value& value, CallArgs& args) {
    const auto it = tests().find(name);
    if (it == tests().end()) raise("TemplateRuntimeError", "No test named " + text::repr(name) + ".");
    return it->second(interpreter, value, args);
}

}  // namespace oxinfer::jinja
