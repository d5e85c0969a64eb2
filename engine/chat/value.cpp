#include "chat/value.h"

#include "chat/text.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace oxinfer::jinja {

namespace {

struct UndefinedInfo {
    std::string message;
    bool security = false;
};

const std::string& empty_string() {
    static const std::string empty;
    return empty;
}

// Exact comparison of a Python int with a Python float.
int compare_int_float(int64_t i, double f) {
    if (std::isnan(f)) return 2;  // unordered
    if (f >= 9.3e18) return -1;
    if (f <= -9.3e18) return 1;
    const double floor_f = std::floor(f);
    const auto fi = static_cast<int64_t>(floor_f);
    if (i < fi) return -1;
    if (i > fi) return 1;
    return floor_f == f ? 0 : -1;
}

int compare_numbers(const Value& a, const Value& b) {
    if (a.is_integral() && b.is_integral()) return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
    if (a.is_integral()) return compare_int_float(a.as_int(), b.as_float());
    if (b.is_integral()) {
        const int c = compare_int_float(b.as_int(), a.as_float());
        return c == 2 ? 2 : -c;
    }
    const double x = a.as_float(), y = b.as_float();
    if (std::isnan(x) || std::isnan(y)) return 2;
    return x < y ? -1 : (x > y ? 1 : 0);
}

const char* view_name(ListFlavor flavor) {
    switch (flavor) {
        case ListFlavor::List: return "list";
        case ListFlavor::Tuple: return "tuple";
        case ListFlavor::Generator: return "generator";
        case ListFlavor::Reversed: return "list_reverseiterator";
        case ListFlavor::DictKeys: return "dict_keys";
        case ListFlavor::DictValues: return "dict_values";
        case ListFlavor::DictItems: return "dict_items";
        case ListFlavor::Range: return "range";
    }
    return "list";
}

}  // namespace

void raise(std::string type, std::string message) { throw RenderError{std::move(type), std::move(message)}; }

// ---- DictData ---------------------------------------------------------------------------------

const Value* DictData::find(const Value& key) const {
    const auto it = index.find(hash_key(key));
    return it == index.end() ? nullptr : &entries[it->second].second;
}

const Value* DictData::find(std::string_view key) const {
    std::string hashed = "s:";
    hashed += key;
    const auto it = index.find(hashed);
    return it == index.end() ? nullptr : &entries[it->second].second;
}

void DictData::set(const Value& key, Value value) {
    std::string hashed = hash_key(key);
    const auto it = index.find(hashed);
    if (it != index.end()) {
        entries[it->second].second = std::move(value);
        return;
    }
    index.emplace(std::move(hashed), entries.size());
    entries.emplace_back(key, std::move(value));
}

void DictData::set(std::string_view key, Value value) { set(Value::string(std::string(key)), std::move(value)); }

// ---- Object -----------------------------------------------------------------------------------

std::string Object::qualified_type_name() const { return type_name() + " object"; }
std::string Object::repr() const { return "<" + type_name() + " object>"; }
bool Object::get_attr(const std::string&, Value&) { return false; }
Value Object::call(Interpreter&, CallArgs&) { raise("TypeError", "'" + type_name() + "' object is not callable"); }

// ---- Value construction -----------------------------------------------------------------------

Value Value::undefined(std::string hint, bool security) {
    Value v;
    v.ptr_ = std::make_shared<UndefinedInfo>(UndefinedInfo{std::move(hint), security});
    return v;
}

Value Value::undefined_name(std::string_view name) { return undefined(text::repr(name) + " is undefined"); }

Value Value::undefined_attribute(const Value& object, const Value& key) {
    if (key.is_string()) return undefined(text::repr(object.object_type_repr()) + " has no attribute " + key.repr());
    return undefined(object.object_type_repr() + " has no element " + key.repr());
}

Value Value::none() {
    Value v;
    v.kind_ = Kind::None;
    return v;
}

Value Value::boolean(bool b) {
    Value v;
    v.kind_ = Kind::Bool;
    v.b_ = b;
    return v;
}

Value Value::integer(int64_t i) {
    Value v;
    v.kind_ = Kind::Int;
    v.i_ = i;
    return v;
}

Value Value::number(double d) {
    Value v;
    v.kind_ = Kind::Float;
    v.f_ = d;
    return v;
}

Value Value::string(std::string s) {
    Value v;
    v.kind_ = Kind::String;
    v.ptr_ = std::make_shared<std::string>(std::move(s));
    return v;
}

Value Value::list(std::vector<Value> items, ListFlavor flavor) {
    Value v;
    v.kind_ = Kind::List;
    auto data = std::make_shared<ListData>();
    data->items = std::move(items);
    data->flavor = flavor;
    v.ptr_ = std::move(data);
    return v;
}

Value Value::dict(std::shared_ptr<DictData> data) {
    Value v;
    v.kind_ = Kind::Dict;
    v.ptr_ = data ? std::move(data) : std::make_shared<DictData>();
    return v;
}

Value Value::ns(std::shared_ptr<DictData> data) {
    Value v;
    v.kind_ = Kind::Namespace;
    v.ptr_ = data ? std::move(data) : std::make_shared<DictData>();
    return v;
}

Value Value::object(std::shared_ptr<Object> object) {
    Value v;
    v.kind_ = Kind::Object;
    v.ptr_ = std::move(object);
    return v;
}

bool Value::is_callable() const { return kind_ == Kind::Object && object_ref().callable(); }

double Value::as_float() const {
    switch (kind_) {
        case Kind::Float: return f_;
        case Kind::Int: return static_cast<double>(i_);
        case Kind::Bool: return b_ ? 1.0 : 0.0;
        default: return 0.0;
    }
}

const std::string& Value::undefined_message() const {
    if (kind_ != Kind::Undefined || !ptr_) return empty_string();
    return std::static_pointer_cast<UndefinedInfo>(ptr_)->message;
}

bool Value::undefined_is_security() const {
    return kind_ == Kind::Undefined && ptr_ && std::static_pointer_cast<UndefinedInfo>(ptr_)->security;
}

void Value::fail_undefined() const {
    const std::string& message = undefined_message();
    raise(undefined_is_security() ? "SecurityError" : "UndefinedError", message.empty() ? "value is undefined" : message);
}

// ---- Python semantics -------------------------------------------------------------------------

bool Value::truthy() const {
    switch (kind_) {
        case Kind::Undefined:
        case Kind::None: return false;
        case Kind::Bool: return b_;
        case Kind::Int: return i_ != 0;
        case Kind::Float: return f_ != 0.0;
        case Kind::String: return !as_string().empty();
        case Kind::List: {
            const ListData& data = list_data();
            if (data.flavor == ListFlavor::Generator || data.flavor == ListFlavor::Reversed) return true;
            return !data.items.empty();
        }
        case Kind::Dict: return dict_data().size() > 0;
        case Kind::Namespace:
        case Kind::Object: return true;
    }
    return false;
}

std::string Value::str() const {
    switch (kind_) {
        case Kind::Undefined: return {};
        case Kind::String: return as_string();
        default: return repr();
    }
}

std::string Value::repr() const {
    switch (kind_) {
        case Kind::Undefined: return "Undefined";
        case Kind::None: return "None";
        case Kind::Bool: return b_ ? "True" : "False";
        case Kind::Int: return std::to_string(i_);
        case Kind::Float: return float_repr(f_);
        case Kind::String: return text::repr(as_string());
        case Kind::List: {
            const ListData& data = list_data();
            const auto join = [&](const char* open, const char* close) {
                std::string out = open;
                for (size_t i = 0; i < data.items.size(); ++i) {
                    if (i) out += ", ";
                    out += data.items[i].repr();
                }
                if (data.flavor == ListFlavor::Tuple && data.items.size() == 1) out += ",";
                return out + close;
            };
            switch (data.flavor) {
                case ListFlavor::List: return join("[", "]");
                case ListFlavor::Tuple: return join("(", ")");
                case ListFlavor::Generator: return "<generator object>";
                case ListFlavor::Reversed: return "<list_reverseiterator object>";
                case ListFlavor::DictKeys: return join("dict_keys([", "])");
                case ListFlavor::DictValues: return join("dict_values([", "])");
                case ListFlavor::DictItems: return join("dict_items([", "])");
                case ListFlavor::Range: {
                    std::string out = "range(" + std::to_string(data.range_start) + ", " + std::to_string(data.range_stop);
                    if (data.range_step != 1) out += ", " + std::to_string(data.range_step);
                    return out + ")";
                }
            }
            return join("[", "]");
        }
        case Kind::Dict:
        case Kind::Namespace: {
            std::string out = kind_ == Kind::Namespace ? "<Namespace {" : "{";
            const DictData& data = dict_data();
            for (size_t i = 0; i < data.entries.size(); ++i) {
                if (i) out += ", ";
                out += data.entries[i].first.repr();
                out += ": ";
                out += data.entries[i].second.repr();
            }
            return out + (kind_ == Kind::Namespace ? "}>" : "}");
        }
        case Kind::Object: return object_ref().repr();
    }
    return {};
}

std::string Value::type_name() const {
    switch (kind_) {
        case Kind::Undefined: return "Undefined";
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "str";
        case Kind::List: return view_name(list_data().flavor);
        case Kind::Dict: return "dict";
        case Kind::Namespace: return "Namespace";
        case Kind::Object: return object_ref().type_name();
    }
    return "object";
}

std::string Value::object_type_repr() const {
    switch (kind_) {
        case Kind::None: return "None";
        case Kind::Undefined: return "jinja2.runtime.Undefined object";
        case Kind::Namespace: return "jinja2.utils.Namespace object";
        case Kind::Object: return object_ref().qualified_type_name();
        default: return type_name() + " object";
    }
}

nlohmann::ordered_json Value::to_json() const {
    switch (kind_) {
        case Kind::None: return nullptr;
        case Kind::Bool: return b_;
        case Kind::Int: return i_;
        case Kind::Float:
            if (!std::isfinite(f_)) raise("ValueError", "a non-finite float has no JSON form");
            return f_;
        case Kind::String: return as_string();
        case Kind::List: {
            nlohmann::ordered_json out = nlohmann::ordered_json::array();
            for (const Value& item : list_data().items) out.push_back(item.to_json());
            return out;
        }
        case Kind::Dict:
        case Kind::Namespace: {
            nlohmann::ordered_json out = nlohmann::ordered_json::object();
            for (const auto& [key, value] : dict_data().entries) out[key.str()] = value.to_json();
            return out;
        }
        default: raise("TypeError", "Object of type " + type_name() + " is not JSON serializable");
    }
}

Value Value::from_json(const nlohmann::ordered_json& json) {
    switch (json.type()) {
        case nlohmann::ordered_json::value_t::object: {
            auto data = std::make_shared<DictData>();
            data->entries.reserve(json.size());
            for (const auto& [key, value] : json.items()) data->set(key, from_json(value));
            return dict(std::move(data));
        }
        case nlohmann::ordered_json::value_t::array: {
            std::vector<Value> items;
            items.reserve(json.size());
            for (const auto& item : json) items.push_back(from_json(item));
            return list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::string: return string(json.get<std::string>());
        case nlohmann::ordered_json::value_t::boolean: return boolean(json.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return integer(json.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const auto u = json.get<uint64_t>();
            if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return integer(static_cast<int64_t>(u));
            return number(static_cast<double>(u));
        }
        case nlohmann::ordered_json::value_t::number_float: return number(json.get<double>());
        default: return none();
    }
}

// ---- free functions ---------------------------------------------------------------------------

std::string hash_key(const Value& key) {
    switch (key.kind()) {
        case Kind::String: return "s:" + key.as_string();
        case Kind::Bool:
        case Kind::Int: return "i:" + std::to_string(key.as_int());
        case Kind::Float: {
            const double f = key.as_float();
            if (std::isfinite(f) && f == std::floor(f) && std::fabs(f) < 9.2e18)
                return "i:" + std::to_string(static_cast<int64_t>(f));
            return "f:" + float_repr(f);
        }
        case Kind::None: return "n";
        case Kind::Undefined: return "u";
        case Kind::List:
            if (key.is_tuple()) {
                std::string out = "t(";
                for (const Value& item : key.list_data().items) out += hash_key(item) + ",";
                return out + ")";
            }
            if (key.is_flavor(ListFlavor::Generator) || key.is_flavor(ListFlavor::Reversed) ||
                key.is_flavor(ListFlavor::Range) || key.is_flavor(ListFlavor::DictValues)) {
                char buf[32];
                std::snprintf(buf, sizeof buf, "o:%p", key.identity());
                return buf;
            }
            raise("TypeError", "unhashable type: '" + key.type_name() + "'");
        case Kind::Dict:
        case Kind::Namespace: raise("TypeError", "unhashable type: '" + key.type_name() + "'");
        case Kind::Object: {
            char buf[32];
            std::snprintf(buf, sizeof buf, "o:%p", key.identity());
            return buf;
        }
    }
    return "?";
}

std::string float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    char buf[64];
    const auto result = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
    std::string sci(buf, result.ptr);
    // sci looks like "-1.2345e+02": split into sign, digits and exponent.
    std::string out;
    size_t i = 0;
    if (sci[0] == '-') {
        out += '-';
        i = 1;
    }
    const size_t e_pos = sci.find('e');
    std::string digits;
    for (size_t k = i; k < e_pos; ++k)
        if (sci[k] != '.') digits += sci[k];
    const int exponent = std::stoi(sci.substr(e_pos + 1));
    const int decpt = exponent + 1;  // value = 0.DIGITS x 10^decpt
    const int n = static_cast<int>(digits.size());
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out += "0.";
            out.append(static_cast<size_t>(-decpt), '0');
            out += digits;
        } else if (decpt >= n) {
            out += digits;
            out.append(static_cast<size_t>(decpt - n), '0');
            out += ".0";
        } else {
            out += digits.substr(0, static_cast<size_t>(decpt));
            out += '.';
            out += digits.substr(static_cast<size_t>(decpt));
        }
        return out;
    }
    out += digits[0];
    if (n > 1) {
        out += '.';
        out += digits.substr(1);
    }
    const int e = decpt - 1;
    out += e < 0 ? "e-" : "e+";
    const int magnitude = e < 0 ? -e : e;
    if (magnitude < 10) out += '0';
    out += std::to_string(magnitude);
    return out;
}

bool equals(const Value& a, const Value& b) {
    if (a.is_undefined() || b.is_undefined()) return a.is_undefined() && b.is_undefined();
    if (a.is_number() && b.is_number()) return compare_numbers(a, b) == 0;
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Kind::None: return true;
        case Kind::String: return a.as_string() == b.as_string();
        case Kind::List: {
            const ListData& x = a.list_data();
            const ListData& y = b.list_data();
            if (x.flavor != y.flavor) return false;
            if (x.flavor == ListFlavor::Generator || x.flavor == ListFlavor::Reversed ||
                x.flavor == ListFlavor::DictValues)
                return &x == &y;
            if (x.items.size() != y.items.size()) return false;
            for (size_t i = 0; i < x.items.size(); ++i)
                if (!equals(x.items[i], y.items[i])) return false;
            return true;
        }
        case Kind::Dict: {
            const DictData& x = a.dict_data();
            const DictData& y = b.dict_data();
            if (x.size() != y.size()) return false;
            for (const auto& [key, value] : x.entries) {
                const Value* other = y.find(key);
                if (!other || !equals(value, *other)) return false;
            }
            return true;
        }
        default: return a.identity() == b.identity();
    }
}

int compare(const Value& a, const Value& b, const char* op) {
    if (a.is_undefined()) a.fail_undefined();
    if (b.is_undefined()) b.fail_undefined();
    if (a.is_number() && b.is_number()) {
        const int c = compare_numbers(a, b);
        return c == 2 ? 2 : c;
    }
    if (a.is_string() && b.is_string()) {
        const int c = a.as_string().compare(b.as_string());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (a.is_list() && b.is_list() && a.list_data().flavor == b.list_data().flavor &&
        (a.is_plain_list() || a.is_tuple())) {
        const auto& x = a.list_data().items;
        const auto& y = b.list_data().items;
        for (size_t i = 0; i < x.size() && i < y.size(); ++i)
            if (!equals(x[i], y[i])) return compare(x[i], y[i], op);
        return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    }
    raise("TypeError", std::string("'") + op + "' not supported between instances of '" + a.type_name() + "' and '" +
                           b.type_name() + "'");
}

std::vector<Value> iterate(const Value& value) {
    switch (value.kind()) {
        case Kind::Undefined: return {};
        case Kind::List: {
            ListData& data = value.list_data();
            if (data.flavor == ListFlavor::Generator || data.flavor == ListFlavor::Reversed) {
                if (data.consumed) return {};
                data.consumed = true;
            }
            return data.items;
        }
        case Kind::Dict: {
            std::vector<Value> keys;
            keys.reserve(value.dict_data().size());
            for (const auto& entry : value.dict_data().entries) keys.push_back(entry.first);
            return keys;
        }
        case Kind::String: {
            std::vector<Value> chars;
            const std::string& s = value.as_string();
            size_t i = 0;
            while (i < s.size()) {
                size_t j = i + 1;
                while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
                chars.push_back(Value::string(s.substr(i, j - i)));
                i = j;
            }
            return chars;
        }
        default: raise("TypeError", "'" + value.type_name() + "' object is not iterable");
    }
}

int64_t length(const Value& value) {
    switch (value.kind()) {
        case Kind::Undefined: return 0;
        case Kind::String: return static_cast<int64_t>(text::length(value.as_string()));
        case Kind::List: {
            const ListData& data = value.list_data();
            if (data.flavor == ListFlavor::Generator || data.flavor == ListFlavor::Reversed) break;
            return static_cast<int64_t>(data.items.size());
        }
        case Kind::Dict: return static_cast<int64_t>(value.dict_data().size());
        default: break;
    }
    raise("TypeError", "object of type '" + value.type_name() + "' has no len()");
}

// ---- json.dumps -------------------------------------------------------------------------------

namespace {

struct JsonWriter {
    bool ensure_ascii;
    bool sort_keys;
    bool indented;
    std::string indent;
    std::string item_separator;
    std::string key_separator;
    std::string out;

    void string(const std::string& s) {
        static const char* hex = "0123456789abcdef";
        const auto u_escape = [&](char32_t c) {
            out += "\\u";
            for (int shift = 12; shift >= 0; shift -= 4) out += hex[(c >> shift) & 0xF];
        };
        out += '"';
        const std::u32string u = text::decode(s);
        for (char32_t c : u) {
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                default:
                    if (c < 0x20) {
                        u_escape(c);
                    } else if (ensure_ascii && c > 0x7E) {
                        if (c >= 0x10000) {
                            const char32_t v = c - 0x10000;
                            u_escape(0xD800 | (v >> 10));
                            u_escape(0xDC00 | (v & 0x3FF));
                        } else {
                            u_escape(c);
                        }
                    } else {
                        text::append_utf8(out, c);
                    }
            }
        }
        out += '"';
    }

    void newline(int level) {
        out += '\n';
        for (int i = 0; i < level; ++i) out += indent;
    }

    std::string key_text(const Value& key) {
        switch (key.kind()) {
            case Kind::String: return key.as_string();
            case Kind::Float: {
                const double f = key.as_float();
                if (std::isnan(f)) return "NaN";
                if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
                return float_repr(f);
            }
            case Kind::Bool: return key.as_bool() ? "true" : "false";
            case Kind::Int: return std::to_string(key.as_int());
            case Kind::None: return "null";
            default:
                raise("TypeError", "keys must be str, int, float, bool or None, not " + key.type_name());
        }
    }

    void value(const Value& v, int level) {
        switch (v.kind()) {
            case Kind::None: out += "null"; return;
            case Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
            case Kind::Int: out += std::to_string(v.as_int()); return;
            case Kind::Float: {
                const double f = v.as_float();
                if (std::isnan(f)) out += "NaN";
                else if (std::isinf(f)) out += f > 0 ? "Infinity" : "-Infinity";
                else out += float_repr(f);
                return;
            }
            case Kind::String: string(v.as_string()); return;
            case Kind::List: {
                if (!v.is_plain_list() && !v.is_tuple()) break;
                const auto& items = v.list_data().items;
                if (items.empty()) {
                    out += "[]";
                    return;
                }
                out += '[';
                if (indented) newline(level + 1);
                for (size_t i = 0; i < items.size(); ++i) {
                    if (i) {
                        out += item_separator;
                        if (indented) newline(level + 1);
                    }
                    value(items[i], level + 1);
                }
                if (indented) newline(level);
                out += ']';
                return;
            }
            case Kind::Dict: {
                const DictData& data = v.dict_data();
                if (data.size() == 0) {
                    out += "{}";
                    return;
                }
                std::vector<const std::pair<Value, Value>*> entries;
                for (const auto& entry : data.entries) entries.push_back(&entry);
                if (sort_keys)
                    std::stable_sort(entries.begin(), entries.end(), [](const auto* x, const auto* y) {
                        return compare(x->first, y->first, "<") < 0;
                    });
                out += '{';
                if (indented) newline(level + 1);
                bool first = true;
                for (const auto* entry : entries) {
                    if (!first) {
                        out += item_separator;
                        if (indented) newline(level + 1);
                    }
                    first = false;
                    string(key_text(entry->first));
                    out += key_separator;
                    value(entry->second, level + 1);
                }
                if (indented) newline(level);
                out += '}';
                return;
            }
            default: break;
        }
        raise("TypeError", "Object of type " + v.type_name() + " is not JSON serializable");
    }
};

}  // namespace

std::string json_dumps(const Value& value, bool ensure_ascii, const Value& indent, const Value& separators,
                       bool sort_keys) {
    JsonWriter writer;
    writer.ensure_ascii = ensure_ascii;
    writer.sort_keys = sort_keys;
    writer.indented = !indent.is_none() && !indent.is_undefined();
    if (writer.indented) {
        if (indent.is_string()) {
            writer.indent = indent.as_string();
        } else if (indent.is_integral()) {
            const int64_t n = indent.as_int();
            writer.indent = std::string(n > 0 ? static_cast<size_t>(std::min<int64_t>(n, 1 << 16)) : 0, ' ');
        } else {
            raise("TypeError", "can't multiply sequence by non-int of type '" + indent.type_name() + "'");
        }
    }
    if (separators.is_none() || separators.is_undefined()) {
        writer.item_separator = writer.indented ? "," : ", ";
        writer.key_separator = ": ";
    } else {
        const std::vector<Value> parts = iterate(separators);
        if (parts.size() != 2) raise("ValueError", "separators must be an (item_separator, key_separator) pair");
        writer.item_separator = parts[0].str();
        writer.key_separator = parts[1].str();
    }
    writer.value(value, 0);
    return std::move(writer.out);
}

}  // namespace oxinfer::jinja
