#pragma once
// The values a Jinja template computes with, modelled on the Python objects jinja2 works with:
// None, bool, int (64-bit here), float, str, list, tuple, dict (insertion-ordered), jinja2's
// Undefined and Namespace, generators and dict views, and callables (macros, globals, bound
// methods, loop objects). Containers are shared by reference, as in Python.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace oxinfer::jinja {

class Interpreter;
class Value;

// A Python exception raised while rendering: `type` is the Python class name ("TypeError",
// "UndefinedError", "SecurityError", "TemplateError" for raise_exception, ...).
struct RenderError {
    std::string type;
    std::string message;
    // Source offset of the innermost node that failed; attached by the interpreter as the error
    // passes through it.
    bool located = false;
    size_t offset = 0;
};
[[noreturn]] void raise(std::string type, std::string message);

enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Object };

// What a List value is in Python terms. All are sequences of items here; they differ in how they
// print, whether they have a length, can be indexed, and whether they are used up by iteration.
enum class ListFlavor : uint8_t { List, Tuple, Generator, Reversed, DictKeys, DictValues, DictItems, Range };

struct ListData {
    std::vector<Value> items;
    ListFlavor flavor = ListFlavor::List;
    bool consumed = false;                      // generators and iterators: iterated once already
    int64_t range_start = 0, range_stop = 0, range_step = 1;  // for printing range objects
};

struct DictData {
    std::vector<std::pair<Value, Value>> entries;  // insertion order
    std::unordered_map<std::string, size_t> index;  // hash_key(key) -> position in entries

    const Value* find(const Value& key) const;  // throws TypeError for unhashable keys
    const Value* find(std::string_view key) const;
    void set(const Value& key, Value value);
    void set(std::string_view key, Value value);
    size_t size() const { return entries.size(); }
};

struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

// Callables and other objects with attributes (macros, loop, cycler, bound methods, ...).
class Object {
public:
    virtual ~Object() = default;
    virtual std::string type_name() const = 0;            // Python's type(x).__name__
    virtual std::string qualified_type_name() const;      // as jinja2's object_type_repr names it
    virtual std::string repr() const;
    virtual bool get_attr(const std::string& name, Value& out);
    virtual bool callable() const { return false; }
    virtual Value call(Interpreter& interpreter, CallArgs& args);
};

class Value {
public:
    Value() = default;  // Undefined with no hint
    static Value undefined(std::string hint, bool security = false);
    static Value undefined_name(std::string_view name);                    // "'x' is undefined"
    static Value undefined_attribute(const Value& object, const Value& key);  // "'dict object' has no attribute 'x'"
    static Value none();
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value number(double d);
    static Value string(std::string s);
    static Value list(std::vector<Value> items, ListFlavor flavor = ListFlavor::List);
    static Value tuple(std::vector<Value> items) { return list(std::move(items), ListFlavor::Tuple); }
    static Value dict(std::shared_ptr<DictData> data = nullptr);
    static Value ns(std::shared_ptr<DictData> data = nullptr);
    static Value object(std::shared_ptr<Object> object);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_float() const { return kind_ == Kind::Float; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
    bool is_integral() const { return kind_ == Kind::Int || kind_ == Kind::Bool; }  // Python int (bool included)
    bool is_string() const { return kind_ == Kind::String; }
    bool is_list() const { return kind_ == Kind::List; }
    bool is_dict() const { return kind_ == Kind::Dict; }
    bool is_namespace() const { return kind_ == Kind::Namespace; }
    bool is_object() const { return kind_ == Kind::Object; }
    bool is_flavor(ListFlavor flavor) const { return kind_ == Kind::List && list_data().flavor == flavor; }
    bool is_plain_list() const { return is_flavor(ListFlavor::List); }
    bool is_tuple() const { return is_flavor(ListFlavor::Tuple); }
    bool is_callable() const;

    bool as_bool() const { return b_; }
    int64_t as_int() const { return kind_ == Kind::Bool ? (b_ ? 1 : 0) : i_; }
    double as_float() const;  // int, bool or float
    const std::string& as_string() const { return *std::static_pointer_cast<const std::string>(ptr_); }
    ListData& list_data() const { return *std::static_pointer_cast<ListData>(ptr_); }
    DictData& dict_data() const { return *std::static_pointer_cast<DictData>(ptr_); }
    Object& object_ref() const { return *std::static_pointer_cast<Object>(ptr_); }
    std::shared_ptr<Object> object_ptr() const { return std::static_pointer_cast<Object>(ptr_); }
    const void* identity() const { return ptr_.get(); }

    const std::string& undefined_message() const;
    bool undefined_is_security() const;
    [[noreturn]] void fail_undefined() const;  // raises the UndefinedError/SecurityError this value stands for

    // Python semantics.
    bool truthy() const;
    std::string str() const;       // str(x); Undefined gives ""
    std::string repr() const;      // repr(x)
    std::string type_name() const; // type(x).__name__
    std::string object_type_repr() const;  // jinja2.utils.object_type_repr

    nlohmann::ordered_json to_json() const;  // for the public API's results; throws for non-JSON values
    static Value from_json(const nlohmann::ordered_json& json);

private:
    Kind kind_ = Kind::Undefined;
    union {
        bool b_;
        int64_t i_ = 0;
        double f_;
    };
    std::shared_ptr<void> ptr_;  // String: std::string; List: ListData; Dict/Namespace: DictData; Object; Undefined: info
};

// The hashing identity Python gives dict keys: 1, 1.0 and True are one key. Throws TypeError for
// unhashable values (lists, dicts).
std::string hash_key(const Value& key);

// Python's repr() of a float (shortest round-trip digits, '1e+16' / '0.0001' switch-over, 'inf').
std::string float_repr(double value);

// Python comparison and equality; ordering across unrelated types raises TypeError as Python does.
bool equals(const Value& a, const Value& b);
int compare(const Value& a, const Value& b, const char* op);  // -1, 0, 1; `op` names the operator in errors

// The items of an iterable value (list, tuple, dict keys, string characters, ...). Raises
// TypeError for values that are not iterable; Undefined iterates as empty. Generators are used up.
std::vector<Value> iterate(const Value& value);
// len(x); raises TypeError where Python has no len().
int64_t length(const Value& value);

// json.dumps(value, ensure_ascii, indent, separators, sort_keys) exactly as Python writes it.
// `indent`: None for none, an int (spaces) or a string. `separators`: None or a 2-item sequence.
std::string json_dumps(const Value& value, bool ensure_ascii, const Value& indent, const Value& separators,
                       bool sort_keys);

}  // namespace oxinfer::jinja
