#include "chat/interpreter.h"

#include "chat/builtins.h"
#include "chat/text.h"

#include <chrono>
#include <cmath>
#include <algorithm>
#include <functional>
#include <limits>

namespace oxinfer::jinja {

namespace {

constexpr int kMaxDepth = 500;           // macro calls and recursive loops (Python stops near 1000 frames)
constexpr int64_t kMaxRange = 100000;    // jinja2.sandbox.MAX_RANGE

[[noreturn]] void overflow() { raise("OverflowError", "integer overflow (oxinfer's integers are 64-bit)"); }

std::string type_pair(const char* op, const Value& a, const Value& b) {
    return std::string("unsupported operand type(s) for ") + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'";
}

void check_defined(const Value& a, const Value& b) {
    if (a.is_undefined()) a.fail_undefined();
    if (b.is_undefined()) b.fail_undefined();
}

// 64-bit arithmetic that raises where the result would not fit (portable: no compiler builtins).
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

int64_t checked_add(int64_t a, int64_t b) {
    if ((b > 0 && a > kMax - b) || (b < 0 && a < kMin - b)) overflow();
    return a + b;
}

int64_t checked_sub(int64_t a, int64_t b) {
    if ((b < 0 && a > kMax + b) || (b > 0 && a < kMin + b)) overflow();
    return a - b;
}

int64_t checked_mul(int64_t a, int64_t b) {
    if (a == 0 || b == 0) return 0;
    const bool fits = a > 0 ? (b > 0 ? a <= kMax / b : b >= kMin / a) : (b > 0 ? a >= kMin / b : (a != kMin && b != kMin && -a <= kMax / -b));
    if (!fits) overflow();
    return a * b;
}

Value repeat(const Value& seq, int64_t times) {
    if (seq.is_string()) {
        std::string out;
        const std::string& s = seq.as_string();
        if (times > 0 && s.size() * static_cast<uint64_t>(times) > (1u << 30)) raise("MemoryError", "string too large");
        for (int64_t i = 0; i < times; ++i) out += s;
        return Value::string(std::move(out));
    }
    const auto& items = seq.list_data().items;
    if (times > 0 && items.size() * static_cast<uint64_t>(times) > (1u << 24)) raise("MemoryError", "list too large");
    std::vector<Value> out;
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
    return Value::list(std::move(out), seq.list_data().flavor);
}

bool is_sequence_for_concat(const Value& v) { return v.is_plain_list() || v.is_tuple(); }

Value arithmetic(BinaryOp op, const Value& a, const Value& b) {
    check_defined(a, b);
    const bool ints = a.is_integral() && b.is_integral();
    const bool nums = a.is_number() && b.is_number();
    switch (op) {
        case BinaryOp::Add: return binary_add(a, b);
        case BinaryOp::Sub:
            if (ints) return Value::integer(checked_sub(a.as_int(), b.as_int()));
            if (nums) return Value::number(a.as_float() - b.as_float());
            raise("TypeError", type_pair("-", a, b));
        case BinaryOp::Mul:
            if (ints) return Value::integer(checked_mul(a.as_int(), b.as_int()));
            if (nums) return Value::number(a.as_float() * b.as_float());
            if ((a.is_string() || is_sequence_for_concat(a)) && b.is_integral()) return repeat(a, b.as_int());
            if ((b.is_string() || is_sequence_for_concat(b)) && a.is_integral()) return repeat(b, a.as_int());
            if ((a.is_string() || is_sequence_for_concat(a)) && b.is_float())
                raise("TypeError", "can't multiply sequence by non-int of type 'float'");
            if ((b.is_string() || is_sequence_for_concat(b)) && a.is_float())
                raise("TypeError", "can't multiply sequence by non-int of type 'float'");
            raise("TypeError", type_pair("*", a, b));
        case BinaryOp::Div:
            if (nums) {
                if (b.as_float() == 0.0) raise("ZeroDivisionError", "division by zero");
                if (ints) return Value::number(static_cast<double>(a.as_int()) / static_cast<double>(b.as_int()));
                return Value::number(a.as_float() / b.as_float());
            }
            raise("TypeError", type_pair("/", a, b));
        case BinaryOp::FloorDiv:
        case BinaryOp::Mod: {
            if (op == BinaryOp::Mod && a.is_string()) return Value::string(percent_format(a.as_string(), b));
            if (ints) {
                const int64_t x = a.as_int(), y = b.as_int();
                if (y == 0)
                    raise("ZeroDivisionError", op == BinaryOp::Mod ? "integer modulo by zero" : "integer division or modulo by zero");
                if (x == std::numeric_limits<int64_t>::min() && y == -1) overflow();
                int64_t q = x / y, r = x % y;
                if (r != 0 && ((r < 0) != (y < 0))) {
                    r += y;
                    --q;
                }
                return Value::integer(op == BinaryOp::FloorDiv ? q : r);
            }
            if (nums) {
                const double x = a.as_float(), y = b.as_float();
                if (y == 0.0)
                    raise("ZeroDivisionError", op == BinaryOp::FloorDiv ? "float floor division by zero" : "float modulo");
                double mod = std::fmod(x, y);
                double div = (x - mod) / y;
                if (mod != 0.0) {
                    if ((y < 0) != (mod < 0)) {
                        mod += y;
                        div -= 1.0;
                    }
                } else {
                    mod = std::copysign(0.0, y);
                }
                if (op == BinaryOp::Mod) return Value::number(mod);
                double floordiv;
                if (div != 0.0) {
                    floordiv = std::floor(div);
                    if (div - floordiv > 0.5) floordiv += 1.0;
                } else {
                    floordiv = std::copysign(0.0, x / y);
                }
                return Value::number(floordiv);
            }
            raise("TypeError", type_pair(op == BinaryOp::FloorDiv ? "//" : "%", a, b));
        }
        case BinaryOp::Pow:
            if (ints && b.as_int() >= 0) {
                int64_t base = a.as_int(), exp = b.as_int(), result = 1;
                while (exp > 0) {
                    if (exp & 1) result = checked_mul(result, base);
                    exp >>= 1;
                    if (exp) base = checked_mul(base, base);
                }
                return Value::integer(result);
            }
            if (nums) {
                if (a.as_float() == 0.0 && b.as_float() < 0)
                    raise("ZeroDivisionError", "0.0 cannot be raised to a negative power");
                const double r = std::pow(a.as_float(), b.as_float());
                if (std::isnan(r) && a.as_float() < 0) raise("ValueError", "negative number cannot be raised to a fractional power");
                return Value::number(r);
            }
            raise("TypeError", "unsupported operand type(s) for ** or pow(): '" + a.type_name() + "' and '" +
                                   b.type_name() + "'");
        default: break;
    }
    raise("TypeError", "bad operator");
}

bool contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case Kind::String:
            if (!item.is_string()) {
                if (item.is_undefined()) item.fail_undefined();
                raise("TypeError", "'in <string>' requires string as left operand, not " + item.type_name());
            }
            return container.as_string().find(item.as_string()) != std::string::npos;
        case Kind::Dict: return container.dict_data().find(item) != nullptr;
        case Kind::Undefined: return false;
        case Kind::List: {
            if (container.is_flavor(ListFlavor::DictKeys) || container.is_flavor(ListFlavor::DictItems)) {
                for (const Value& v : container.list_data().items)
                    if (equals(v, item)) return true;
                return false;
            }
            for (const Value& v : iterate(container))
                if (equals(v, item)) return true;
            return false;
        }
        default: raise("TypeError", "argument of type '" + container.type_name() + "' is not iterable");
    }
}

// ---- objects the interpreter creates ----------------------------------------------------------

class MacroObject : public Object {
public:
    MacroObject(std::shared_ptr<MacroDef> def, std::shared_ptr<Scope> closure)
        : def_(std::move(def)), closure_(std::move(closure)) {}
    std::string type_name() const override { return "Macro"; }
    std::string qualified_type_name() const override { return "jinja2.runtime.Macro object"; }
    std::string repr() const override { return "<Macro " + text::repr(def_->name) + ">"; }
    bool callable() const override { return true; }
    Value call(Interpreter& interpreter, CallArgs& args) override { return interpreter.call_macro(def_, closure_, args); }
    bool get_attr(const std::string& name, Value& out) override {
        if (name == "name") {
            out = Value::string(def_->name);
            return true;
        }
        if (name == "arguments") {
            std::vector<Value> params;
            for (const auto& p : def_->params) params.push_back(Value::string(p));
            out = Value::tuple(std::move(params));
            return true;
        }
        if (name == "catch_kwargs" || name == "catch_varargs" || name == "caller") {
            out = Value::boolean(name == "catch_kwargs" ? def_->uses_kwargs
                                 : name == "catch_varargs" ? def_->uses_varargs
                                                           : def_->uses_caller);
            return true;
        }
        return false;
    }

private:
    std::shared_ptr<MacroDef> def_;
    std::shared_ptr<Scope> closure_;
};

class FunctionObject : public Object {
public:
    using Fn = std::function<Value(Interpreter&, CallArgs&)>;
    FunctionObject(std::string name, Fn fn, std::string type = "function")
        : name_(std::move(name)), type_(std::move(type)), fn_(std::move(fn)) {}
    std::string type_name() const override { return type_; }
    std::string repr() const override { return "<" + type_ + " " + name_ + ">"; }
    bool callable() const override { return true; }
    Value call(Interpreter& interpreter, CallArgs& args) override { return fn_(interpreter, args); }

private:
    std::string name_, type_;
    Fn fn_;
};

Value make_function(std::string name, FunctionObject::Fn fn, std::string type = "function") {
    return Value::object(std::make_shared<FunctionObject>(std::move(name), std::move(fn), std::move(type)));
}

class LoopObject : public Object, public std::enable_shared_from_this<LoopObject> {
public:
    LoopObject(std::vector<Value> items, int depth, const ForStmt* node, std::shared_ptr<Scope> scope)
        : items_(std::move(items)), depth_(depth), node_(node), scope_(std::move(scope)) {}
    std::string type_name() const override { return "LoopContext"; }
    std::string qualified_type_name() const override { return "jinja2.runtime.LoopContext object"; }
    std::string repr() const override {
        return "<LoopContext " + std::to_string(index0 + 1) + "/" + std::to_string(items_.size()) + ">";
    }
    bool callable() const override { return true; }
    Value call(Interpreter& interpreter, CallArgs& args) override {
        if (!node_->recursive)
            raise("TypeError", "Tried to call non recursive loop. Maybe you forgot the 'recursive' modifier.");
        if (args.positional.size() != 1 || !args.keyword.empty())
            raise("TypeError", "loop() takes exactly one argument, the iterable");
        return interpreter.run_recursive_loop(*node_, scope_, args.positional[0], depth_ + 1);
    }
    bool get_attr(const std::string& name, Value& out) override {
        const int64_t n = static_cast<int64_t>(items_.size());
        if (name == "index") out = Value::integer(index0 + 1);
        else if (name == "index0") out = Value::integer(index0);
        else if (name == "revindex") out = Value::integer(n - index0);
        else if (name == "revindex0") out = Value::integer(n - index0 - 1);
        else if (name == "first") out = Value::boolean(index0 == 0);
        else if (name == "last") out = Value::boolean(index0 == n - 1);
        else if (name == "length") out = Value::integer(n);
        else if (name == "depth") out = Value::integer(depth_);
        else if (name == "depth0") out = Value::integer(depth_ - 1);
        else if (name == "previtem")
            out = index0 > 0 ? items_[static_cast<size_t>(index0 - 1)] : Value::undefined("there is no previous item");
        else if (name == "nextitem")
            out = index0 + 1 < n ? items_[static_cast<size_t>(index0 + 1)] : Value::undefined("there is no next item");
        else if (name == "cycle") {
            const int64_t index = index0;
            out = make_function("cycle", [index](Interpreter&, CallArgs& args) -> Value {
                if (args.positional.empty()) raise("TypeError", "no items for cycling given");
                return args.positional[static_cast<size_t>(index % static_cast<int64_t>(args.positional.size()))];
            }, "method");
        } else if (name == "changed") {
            auto self = shared_from_this();
            out = make_function("changed", [self](Interpreter&, CallArgs& args) -> Value {
                Value current = Value::tuple(args.positional);
                if (self->has_last_changed_ && equals(self->last_changed_, current)) return Value::boolean(false);
                self->last_changed_ = current;
                self->has_last_changed_ = true;
                return Value::boolean(true);
            }, "method");
        } else {
            return false;
        }
        return true;
    }

    int64_t index0 = 0;

private:
    std::vector<Value> items_;
    int depth_;
    const ForStmt* node_;
    std::shared_ptr<Scope> scope_;
    Value last_changed_;
    bool has_last_changed_ = false;
};

class CyclerObject : public Object, public std::enable_shared_from_this<CyclerObject> {
public:
    explicit CyclerObject(std::vector<Value> items) : items_(std::move(items)) {}
    std::string type_name() const override { return "Cycler"; }
    std::string qualified_type_name() const override { return "jinja2.utils.Cycler object"; }
    bool get_attr(const std::string& name, Value& out) override {
        if (name == "current") {
            out = items_[position_];
        } else if (name == "next") {
            out = make_function("next", [self = shared_from_this()](Interpreter&, CallArgs&) {
                Value v = self->items_[self->position_];
                self->position_ = (self->position_ + 1) % self->items_.size();
                return v;
            }, "method");
        } else if (name == "reset") {
            out = make_function("reset", [self = shared_from_this()](Interpreter&, CallArgs&) {
                self->position_ = 0;
                return Value::none();
            }, "method");
        } else {
            return false;
        }
        return true;
    }

private:
    std::vector<Value> items_;
    size_t position_ = 0;
};

class JoinerObject : public Object {
public:
    explicit JoinerObject(std::string sep) : sep_(std::move(sep)) {}
    std::string type_name() const override { return "Joiner"; }
    std::string qualified_type_name() const override { return "jinja2.utils.Joiner object"; }
    bool callable() const override { return true; }
    Value call(Interpreter&, CallArgs&) override {
        if (!used_) {
            used_ = true;
            return Value::string("");
        }
        return Value::string(sep_);
    }

private:
    std::string sep_;
    bool used_ = false;
};

int64_t range_arg(const Value& v) {
    if (v.is_integral()) return v.as_int();
    raise("TypeError", "'" + v.type_name() + "' object cannot be interpreted as an integer");
}

// dict(...) / namespace(...) arguments: one optional mapping or iterable of pairs, then kwargs.
std::shared_ptr<DictData> dict_from_args(const char* what, CallArgs& args) {
    auto data = std::make_shared<DictData>();
    if (args.positional.size() > 1)
        raise("TypeError", std::string(what) + " expected at most 1 argument, got " + std::to_string(args.positional.size()));
    if (!args.positional.empty()) {
        const Value& source = args.positional[0];
        if (source.is_dict() || source.is_namespace()) {
            for (const auto& [k, v] : source.dict_data().entries) data->set(k, v);
        } else {
            for (const Value& pair : iterate(source)) {
                const std::vector<Value> kv = iterate(pair);
                if (kv.size() != 2)
                    raise("ValueError", "dictionary update sequence element has length " + std::to_string(kv.size()) +
                                            "; 2 is required");
                data->set(kv[0], kv[1]);
            }
        }
    }
    for (auto& [k, v] : args.keyword) data->set(k, v);
    return data;
}

void expect_no_keywords(const char* name, const CallArgs& args) {
    if (!args.keyword.empty())
        raise("TypeError", std::string(name) + "() got an unexpected keyword argument '" + args.keyword[0].first + "'");
}

}  // namespace

Value* Scope::find(const std::string& name) {
    for (Scope* s = this; s; s = s->parent.get()) {
        const auto it = s->vars.find(name);
        if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
}

Value binary_add(const Value& a, const Value& b) {
    check_defined(a, b);
    if (a.is_integral() && b.is_integral()) return Value::integer(checked_add(a.as_int(), b.as_int()));
    if (a.is_number() && b.is_number()) return Value::number(a.as_float() + b.as_float());
    if (a.is_string() && b.is_string()) return Value::string(a.as_string() + b.as_string());
    if (is_sequence_for_concat(a) && is_sequence_for_concat(b) && a.list_data().flavor == b.list_data().flavor) {
        std::vector<Value> items = a.list_data().items;
        items.insert(items.end(), b.list_data().items.begin(), b.list_data().items.end());
        return Value::list(std::move(items), a.list_data().flavor);
    }
    if (a.is_string() || is_sequence_for_concat(a))
        raise("TypeError", "can only concatenate " + a.type_name() + " (not \"" + b.type_name() + "\") to " + a.type_name());
    raise("TypeError", type_pair("+", a, b));
}

std::tm Interpreter::now() const {
    if (settings_.now) return *settings_.now;
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm local{};
#ifdef _WIN32
    localtime_s(&local, &t);
#else
    localtime_r(&t, &local);
#endif
    return local;
}

std::string Interpreter::render(const Body& body, const Value& context) {
    globals_.clear();
    globals_["range"] = make_function("range", [](Interpreter&, CallArgs& args) {
        expect_no_keywords("range", args);
        const auto& p = args.positional;
        if (p.empty() || p.size() > 3)
            raise("TypeError", p.empty() ? "range expected at least 1 argument, got 0"
                                         : "range expected at most 3 arguments, got " + std::to_string(p.size()));
        int64_t start = 0, stop, step = 1;
        if (p.size() == 1) {
            stop = range_arg(p[0]);
        } else {
            start = range_arg(p[0]);
            stop = range_arg(p[1]);
            if (p.size() == 3) step = range_arg(p[2]);
        }
        if (step == 0) raise("ValueError", "range() arg 3 must not be zero");
        int64_t count = 0;
        if (step > 0 && start < stop) count = (stop - start + step - 1) / step;
        if (step < 0 && start > stop) count = (start - stop - step - 1) / -step;
        if (count > kMaxRange)
            raise("OverflowError", "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        std::vector<Value> items;
        items.reserve(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) items.push_back(Value::integer(start + i * step));
        Value v = Value::list(std::move(items), ListFlavor::Range);
        v.list_data().range_start = start;
        v.list_data().range_stop = stop;
        v.list_data().range_step = step;
        return v;
    }, "type");
    globals_["dict"] = make_function("dict", [](Interpreter&, CallArgs& args) { return Value::dict(dict_from_args("dict", args)); },
                                     "type");
    globals_["namespace"] = make_function("namespace", [](Interpreter&, CallArgs& args) {
        return Value::ns(dict_from_args("namespace", args));
    }, "type");
    globals_["cycler"] = make_function("cycler", [](Interpreter&, CallArgs& args) {
        expect_no_keywords("cycler", args);
        if (args.positional.empty()) raise("RuntimeError", "at least one item has to be provided");
        return Value::object(std::make_shared<CyclerObject>(args.positional));
    }, "type");
    globals_["joiner"] = make_function("joiner", [](Interpreter&, CallArgs& args) {
        std::string sep = ", ";
        if (!args.positional.empty()) sep = args.positional[0].str();
        for (auto& [k, v] : args.keyword)
            if (k == "sep") sep = v.str();
        return Value::object(std::make_shared<JoinerObject>(sep));
    }, "type");
    // transformers' additions (utils/chat_template_utils.py, _compile_jinja_template).
    globals_["raise_exception"] = make_function("raise_exception", [](Interpreter&, CallArgs& args) -> Value {
        std::string message;
        if (!args.positional.empty()) message = args.positional[0].str();
        for (auto& [k, v] : args.keyword)
            if (k == "message") message = v.str();
        raise("TemplateError", message);
    });
    globals_["strftime_now"] = make_function("strftime_now", [](Interpreter& interpreter, CallArgs& args) {
        if (args.positional.size() != 1) raise("TypeError", "strftime_now() takes exactly one argument (format)");
        const std::string format = args.positional[0].str();
        const std::tm t = interpreter.now();
        if (format.empty()) return Value::string("");
        std::string out(format.size() * 4 + 64, '\0');
        while (true) {
            const size_t n = std::strftime(out.data(), out.size(), format.c_str(), &t);
            if (n > 0 || out.size() > 65536) {
                out.resize(n);
                break;
            }
            out.resize(out.size() * 2);
        }
        return Value::string(out);
    });

    // Macros keep their defining scope alive and scopes hold the macros: break those cycles when
    // the render ends, however it ends.
    struct ScopeRelease {
        std::vector<std::weak_ptr<Scope>>& scopes;
        ~ScopeRelease() {
            for (auto& weak : scopes)
                if (auto scope = weak.lock()) scope->vars.clear();
            scopes.clear();
        }
    } release{scopes_};
    auto root = new_scope(nullptr);
    if (context.is_dict())
        for (const auto& [key, value] : context.dict_data().entries) root->vars[key.str()] = value;
    std::string out;
    depth_ = 0;
    exec(body, root, out);
    return out;
}

std::shared_ptr<Scope> Interpreter::new_scope(const std::shared_ptr<Scope>& parent) {
    auto scope = std::make_shared<Scope>();
    scope->parent = parent;
    if (scopes_.size() > 4096 && scopes_.size() % 4096 == 0)
        scopes_.erase(std::remove_if(scopes_.begin(), scopes_.end(), [](const auto& w) { return w.expired(); }), scopes_.end());
    scopes_.push_back(scope);
    return scope;
}

Value Interpreter::lookup(const std::string& name, const std::shared_ptr<Scope>& scope) {
    if (Value* v = scope->find(name)) return *v;
    const auto it = globals_.find(name);
    if (it != globals_.end()) return it->second;
    return Value::undefined_name(name);
}

Value Interpreter::getattr(const Value& object, const std::string& name) {
    Value out;
    switch (object.kind()) {
        case Kind::Undefined: object.fail_undefined();
        case Kind::Dict:
            if (builtin_attribute(object, name, out)) return out;
            if (const Value* v = object.dict_data().find(std::string_view(name))) return *v;
            break;
        case Kind::Namespace:
            if (const Value* v = object.dict_data().find(std::string_view(name))) return *v;
            break;
        case Kind::Object:
            if (object.object_ref().get_attr(name, out)) return out;
            break;
        default:
            if (builtin_attribute(object, name, out)) return out;
            break;
    }
    return Value::undefined_attribute(object, Value::string(name));
}

Value Interpreter::getitem(const Value& object, const Value& key) {
    Value out;
    switch (object.kind()) {
        case Kind::Undefined: object.fail_undefined();
        case Kind::List: {
            const ListData& data = object.list_data();
            const bool subscriptable = data.flavor == ListFlavor::List || data.flavor == ListFlavor::Tuple ||
                                       data.flavor == ListFlavor::Range;
            if (subscriptable && key.is_integral()) {
                int64_t i = key.as_int();
                const auto n = static_cast<int64_t>(data.items.size());
                if (i < 0) i += n;
                if (i >= 0 && i < n) return data.items[static_cast<size_t>(i)];
            }
            break;
        }
        case Kind::String:
            if (key.is_integral()) {
                const std::u32string u = text::decode(object.as_string());
                int64_t i = key.as_int();
                const auto n = static_cast<int64_t>(u.size());
                if (i < 0) i += n;
                if (i >= 0 && i < n) return Value::string(text::encode(std::u32string(1, u[static_cast<size_t>(i)])));
            }
            break;
        case Kind::Dict: {
            const Value* v = nullptr;
            if (!key.is_list() || key.is_tuple()) {
                try {
                    v = object.dict_data().find(key);
                } catch (const RenderError&) {
                    v = nullptr;  // unhashable key: jinja2 turns the TypeError into undefined
                }
            }
            if (v) return *v;
            break;
        }
        default: break;
    }
    if (key.is_string()) {
        const std::string& name = key.as_string();
        if (object.is_namespace()) {
            if (const Value* v = object.dict_data().find(std::string_view(name))) return *v;
        } else if (object.is_object()) {
            if (object.object_ref().get_attr(name, out)) return out;
        } else if (builtin_attribute(object, name, out)) {
            return out;
        }
    }
    return Value::undefined_attribute(object, key);
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
    if (callee.is_undefined()) callee.fail_undefined();
    if (callee.is_object() && callee.object_ref().callable()) return callee.object_ref().call(*this, args);
    raise("TypeError", "'" + callee.type_name() + "' object is not callable");
}

Value Interpreter::call_macro(const std::shared_ptr<MacroDef>& macro, const std::shared_ptr<Scope>& closure,
                              CallArgs& args) {
    if (depth_ >= kMaxDepth) raise("RecursionError", "maximum recursion depth exceeded");
    auto scope = new_scope(closure);
    const size_t nparams = macro->params.size();
    std::vector<bool> bound(nparams, false);
    std::vector<Value> varargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
        if (i < nparams) {
            scope->vars[macro->params[i]] = args.positional[i];
            bound[i] = true;
        } else if (macro->uses_varargs) {
            varargs.push_back(args.positional[i]);
        } else {
            raise("TypeError", "macro " + text::repr(macro->name) + " takes not more than " + std::to_string(nparams) +
                                   " argument(s)");
        }
    }
    auto kwargs = std::make_shared<DictData>();
    Value caller;
    bool has_caller = false;
    for (auto& [name, value] : args.keyword) {
        size_t index = nparams;
        for (size_t i = 0; i < nparams; ++i)
            if (macro->params[i] == name) index = i;
        if (index < nparams) {
            if (bound[index])
                raise("TypeError", "macro " + text::repr(macro->name) + " got multiple values for argument " +
                                       text::repr(name));
            scope->vars[name] = value;
            bound[index] = true;
        } else if (name == "caller") {
            caller = value;
            has_caller = true;
        } else if (macro->uses_kwargs) {
            kwargs->set(name, value);
        } else {
            raise("TypeError", "macro " + text::repr(macro->name) + " takes no keyword argument " + text::repr(name));
        }
    }
    const size_t first_default = nparams - macro->defaults.size();
    for (size_t i = 0; i < nparams; ++i) {
        if (bound[i]) continue;
        if (i >= first_default) {
            scope->vars[macro->params[i]] = eval(*macro->defaults[i - first_default], scope);
        } else {
            scope->vars[macro->params[i]] = Value::undefined("parameter " + text::repr(macro->params[i]) + " was not provided");
        }
    }
    if (macro->uses_varargs) scope->vars["varargs"] = Value::tuple(std::move(varargs));
    if (macro->uses_kwargs) scope->vars["kwargs"] = Value::dict(kwargs);
    if (has_caller) scope->vars["caller"] = caller;
    else if (macro->uses_caller && !scope->vars.count("caller")) scope->vars["caller"] = Value::undefined("No caller defined");
    std::string out;
    ++depth_;
    try {
        exec(macro->body, scope, out);
    } catch (...) {
        --depth_;
        throw;
    }
    --depth_;
    return Value::string(std::move(out));
}

CallArgs Interpreter::eval_args(const CallArguments& args, const std::shared_ptr<Scope>& scope) {
    CallArgs out;
    for (const ExprPtr& e : args.positional) out.positional.push_back(eval(*e, scope));
    if (args.star_args) {
        for (Value& v : iterate(eval(*args.star_args, scope))) out.positional.push_back(std::move(v));
    }
    for (const auto& [name, e] : args.keyword) out.keyword.emplace_back(name, eval(*e, scope));
    if (args.star_kwargs) {
        const Value extra = eval(*args.star_kwargs, scope);
        if (!extra.is_dict()) raise("TypeError", "argument after ** must be a mapping, not " + extra.type_name());
        for (const auto& [k, v] : extra.dict_data().entries) {
            if (!k.is_string()) raise("TypeError", "keywords must be strings");
            out.keyword.emplace_back(k.as_string(), v);
        }
    }
    return out;
}

Value Interpreter::eval(const Expr& expr, const std::shared_ptr<Scope>& scope) {
    try {
        return eval_inner(expr, scope);
    } catch (RenderError& error) {
        if (!error.located) {
            error.located = true;
            error.offset = expr.offset;
        }
        throw;
    }
}

Value Interpreter::eval_call(const CallExpr& expr, const std::shared_ptr<Scope>& scope) {
    const Value callee = eval(*expr.callee, scope);
    CallArgs args = eval_args(expr.args, scope);
    return call(callee, args);
}

Value Interpreter::eval_filter(const FilterExpr& expr, const std::shared_ptr<Scope>& scope, const Value* input) {
    Value value;
    if (expr.value) {
        if (expr.value->kind == ExprKind::Filter)
            value = eval_filter(static_cast<const FilterExpr&>(*expr.value), scope, input);
        else
            value = eval(*expr.value, scope);
    } else if (input) {
        value = *input;
    }
    CallArgs args = eval_args(expr.args, scope);
    try {
        return apply_filter(*this, expr.name, value, args);
    } catch (RenderError& error) {
        if (!error.located) {
            error.located = true;
            error.offset = expr.offset;
        }
        throw;
    }
}

Value Interpreter::slice(const Value& object, const SliceExpr& s, const std::shared_ptr<Scope>& scope) {
    const auto bound = [&](const ExprPtr& e) -> std::optional<int64_t> {
        if (!e) return std::nullopt;
        const Value v = eval(*e, scope);
        if (v.is_none()) return std::nullopt;
        if (!v.is_integral()) raise("TypeError", "slice indices must be integers or None or have an __index__ method");
        return v.as_int();
    };
    std::optional<int64_t> start, stop, step;
    try {
        start = bound(s.start);
        stop = bound(s.stop);
        step = bound(s.step);
    } catch (const RenderError& error) {
        if (error.type == "TypeError") return Value::undefined_attribute(object, Value::none());
        throw;
    }
    if (object.is_undefined()) object.fail_undefined();
    const bool is_string = object.is_string();
    const bool is_seq = object.is_list() && (object.is_plain_list() || object.is_tuple() || object.is_flavor(ListFlavor::Range));
    if (!is_string && !is_seq) return Value::undefined("'" + object.type_name() + "' object is not subscriptable");
    const int64_t st = step.value_or(1);
    if (st == 0) raise("ValueError", "slice step cannot be zero");
    std::u32string chars;
    int64_t n;
    if (is_string) {
        chars = text::decode(object.as_string());
        n = static_cast<int64_t>(chars.size());
    } else {
        n = static_cast<int64_t>(object.list_data().items.size());
    }
    const auto adjust = [&](std::optional<int64_t> v, bool is_start) -> int64_t {
        if (!v) return st < 0 ? (is_start ? n - 1 : -1) : (is_start ? 0 : n);
        int64_t x = *v;
        if (x < 0) {
            x += n;
            if (x < 0) x = st < 0 ? -1 : 0;
        } else if (x >= n) {
            x = st < 0 ? n - 1 : n;
        }
        return x;
    };
    const int64_t b = adjust(start, true), e = adjust(stop, false);
    std::vector<size_t> picks;
    for (int64_t i = b; st > 0 ? i < e : i > e; i += st) picks.push_back(static_cast<size_t>(i));
    if (is_string) {
        std::u32string out;
        for (size_t i : picks) out.push_back(chars[i]);
        return Value::string(text::encode(out));
    }
    std::vector<Value> items;
    for (size_t i : picks) items.push_back(object.list_data().items[i]);
    Value result = Value::list(std::move(items), object.list_data().flavor);
    if (object.is_flavor(ListFlavor::Range)) {
        // range(a, b, s)[i:j:k] is range(a + i*s, a + j*s, s*k), as Python computes it.
        const ListData& r = object.list_data();
        ListData& out = result.list_data();
        out.range_start = r.range_start + b * r.range_step;
        out.range_stop = r.range_start + e * r.range_step;
        out.range_step = r.range_step * st;
    }
    return result;
}

Value Interpreter::eval_inner(const Expr& expr, const std::shared_ptr<Scope>& scope) {
    switch (expr.kind) {
        case ExprKind::Const: return static_cast<const ConstExpr&>(expr).value;
        case ExprKind::Name: return lookup(static_cast<const NameExpr&>(expr).name, scope);
        case ExprKind::List: {
            const auto& node = static_cast<const ListExpr&>(expr);
            std::vector<Value> items;
            items.reserve(node.items.size());
            for (const ExprPtr& item : node.items) items.push_back(eval(*item, scope));
            return Value::list(std::move(items), node.tuple ? ListFlavor::Tuple : ListFlavor::List);
        }
        case ExprKind::Dict: {
            const auto& node = static_cast<const DictExpr&>(expr);
            auto data = std::make_shared<DictData>();
            for (const auto& [k, v] : node.items) {
                Value key = eval(*k, scope);
                data->set(key, eval(*v, scope));
            }
            return Value::dict(std::move(data));
        }
        case ExprKind::Getattr: {
            const auto& node = static_cast<const GetattrExpr&>(expr);
            return getattr(eval(*node.object, scope), node.name);
        }
        case ExprKind::Getitem: {
            const auto& node = static_cast<const GetitemExpr&>(expr);
            const Value object = eval(*node.object, scope);
            if (node.key->kind == ExprKind::Slice) return slice(object, static_cast<const SliceExpr&>(*node.key), scope);
            return getitem(object, eval(*node.key, scope));
        }
        case ExprKind::Slice: raise("TypeError", "a slice is only valid inside []");
        case ExprKind::Call: return eval_call(static_cast<const CallExpr&>(expr), scope);
        case ExprKind::Filter: return eval_filter(static_cast<const FilterExpr&>(expr), scope, nullptr);
        case ExprKind::Test: {
            const auto& node = static_cast<const TestExpr&>(expr);
            const Value value = eval(*node.value, scope);
            CallArgs args = eval_args(node.args, scope);
            return Value::boolean(apply_test(*this, node.name, value, args));
        }
        case ExprKind::Unary: {
            const auto& node = static_cast<const UnaryExpr&>(expr);
            const Value v = eval(*node.operand, scope);
            if (node.op == UnaryOp::Not) return Value::boolean(!v.truthy());
            if (v.is_undefined()) v.fail_undefined();
            if (v.is_integral()) {
                if (node.op == UnaryOp::Pos) return Value::integer(v.as_int());
                if (v.as_int() == std::numeric_limits<int64_t>::min()) overflow();
                return Value::integer(-v.as_int());
            }
            if (v.is_float()) return Value::number(node.op == UnaryOp::Neg ? -v.as_float() : v.as_float());
            raise("TypeError", std::string("bad operand type for unary ") + (node.op == UnaryOp::Neg ? "-" : "+") + ": '" +
                                   v.type_name() + "'");
        }
        case ExprKind::Binary: {
            const auto& node = static_cast<const BinaryExpr&>(expr);
            if (node.op == BinaryOp::And) {
                Value left = eval(*node.left, scope);
                return left.truthy() ? eval(*node.right, scope) : left;
            }
            if (node.op == BinaryOp::Or) {
                Value left = eval(*node.left, scope);
                return left.truthy() ? left : eval(*node.right, scope);
            }
            const Value left = eval(*node.left, scope);
            const Value right = eval(*node.right, scope);
            return arithmetic(node.op, left, right);
        }
        case ExprKind::Compare: {
            const auto& node = static_cast<const CompareExpr&>(expr);
            Value left = eval(*node.first, scope);
            for (const auto& [op, right_expr] : node.rest) {
                Value right = eval(*right_expr, scope);
                bool result = false;
                switch (op) {
                    case CompareOp::Eq: result = equals(left, right); break;
                    case CompareOp::Ne: result = !equals(left, right); break;
                    case CompareOp::In: result = contains(right, left); break;
                    case CompareOp::NotIn: result = !contains(right, left); break;
                    case CompareOp::Lt: {
                        const int c = compare(left, right, "<");
                        result = c == -1;
                        break;
                    }
                    case CompareOp::Le: {
                        const int c = compare(left, right, "<=");
                        result = c == -1 || c == 0;
                        break;
                    }
                    case CompareOp::Gt: {
                        const int c = compare(left, right, ">");
                        result = c == 1;
                        break;
                    }
                    case CompareOp::Ge: {
                        const int c = compare(left, right, ">=");
                        result = c == 1 || c == 0;
                        break;
                    }
                }
                if (!result) return Value::boolean(false);
                left = std::move(right);
            }
            return Value::boolean(true);
        }
        case ExprKind::Concat: {
            std::string out;
            for (const ExprPtr& part : static_cast<const ConcatExpr&>(expr).parts) out += eval(*part, scope).str();
            return Value::string(std::move(out));
        }
        case ExprKind::Cond: {
            const auto& node = static_cast<const CondExpr&>(expr);
            if (eval(*node.test, scope).truthy()) return eval(*node.then, scope);
            if (node.otherwise) return eval(*node.otherwise, scope);
            return Value::undefined("the inline if-expression evaluated to false and no else section was defined.");
        }
    }
    raise("RuntimeError", "unknown expression");
}

void Interpreter::assign(const Target& target, const Value& value, const std::shared_ptr<Scope>& scope) {
    switch (target.kind) {
        case Target::Kind::Name: scope->vars[target.name] = value; return;
        case Target::Kind::Tuple: {
            const std::vector<Value> items = iterate(value);
            if (items.size() < target.items.size())
                raise("ValueError", "not enough values to unpack (expected " + std::to_string(target.items.size()) +
                                        ", got " + std::to_string(items.size()) + ")");
            if (items.size() > target.items.size())
                raise("ValueError", "too many values to unpack (expected " + std::to_string(target.items.size()) + ")");
            for (size_t i = 0; i < items.size(); ++i) assign(target.items[i], items[i], scope);
            return;
        }
        case Target::Kind::NamespaceAttr: {
            Value* ns = scope->find(target.name);
            if (!ns) {
                const auto it = globals_.find(target.name);
                if (it == globals_.end()) Value::undefined_name(target.name).fail_undefined();
                raise("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
            }
            if (!ns->is_namespace()) raise("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
            ns->dict_data().set(target.attr, value);
            return;
        }
    }
}

Interpreter::Flow Interpreter::exec(const Body& body, const std::shared_ptr<Scope>& scope, std::string& out) {
    for (const StmtPtr& stmt : body) {
        const Flow flow = exec_stmt(*stmt, scope, out);
        if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_for(const ForStmt& node, const std::shared_ptr<Scope>& scope, std::string& out,
                                        const Value& iterable, int depth) {
    std::vector<Value> items = iterate(iterable);
    if (node.filter) {
        std::vector<Value> kept;
        for (Value& item : items) {
            auto filter_scope = new_scope(scope);
            assign(node.target, item, filter_scope);
            if (eval(*node.filter, filter_scope).truthy()) kept.push_back(std::move(item));
        }
        items = std::move(kept);
    }
    if (items.empty()) {
        if (!node.otherwise.empty()) {
            auto else_scope = new_scope(scope);
            exec(node.otherwise, else_scope, out);
        }
        return Flow::Normal;
    }
    auto loop = std::make_shared<LoopObject>(items, depth, &node, scope);
    const Value loop_value = Value::object(loop);
    for (size_t i = 0; i < items.size(); ++i) {
        loop->index0 = static_cast<int64_t>(i);
        auto iteration = new_scope(scope);
        assign(node.target, items[i], iteration);
        iteration->vars["loop"] = loop_value;
        const Flow flow = exec(node.body, iteration, out);
        if (flow == Flow::Break) break;
    }
    return Flow::Normal;
}

Value Interpreter::run_recursive_loop(const ForStmt& node, const std::shared_ptr<Scope>& scope, const Value& iterable,
                                      int depth) {
    if (depth_ >= kMaxDepth) raise("RecursionError", "maximum recursion depth exceeded");
    std::string out;
    ++depth_;
    try {
        exec_for(node, scope, out, iterable, depth);
    } catch (...) {
        --depth_;
        throw;
    }
    --depth_;
    return Value::string(std::move(out));
}

Interpreter::Flow Interpreter::exec_stmt(const Stmt& stmt, const std::shared_ptr<Scope>& scope, std::string& out) {
    try {
        switch (stmt.kind) {
            case StmtKind::Data: out += static_cast<const DataStmt&>(stmt).text; return Flow::Normal;
            case StmtKind::Output: out += eval(*static_cast<const OutputStmt&>(stmt).expr, scope).str(); return Flow::Normal;
            case StmtKind::If: {
                const auto& node = static_cast<const IfStmt&>(stmt);
                for (const auto& [test, body] : node.branches)
                    if (eval(*test, scope).truthy()) return exec(body, scope, out);
                return exec(node.otherwise, scope, out);
            }
            case StmtKind::For: {
                const auto& node = static_cast<const ForStmt&>(stmt);
                return exec_for(node, scope, out, eval(*node.iterable, scope), 1);
            }
            case StmtKind::Set: {
                const auto& node = static_cast<const SetStmt&>(stmt);
                assign(node.target, eval(*node.value, scope), scope);
                return Flow::Normal;
            }
            case StmtKind::SetBlock: {
                const auto& node = static_cast<const SetBlockStmt&>(stmt);
                auto inner = new_scope(scope);
                std::string captured;
                exec(node.body, inner, captured);
                Value value = Value::string(std::move(captured));
                if (node.filter) value = eval_filter(static_cast<const FilterExpr&>(*node.filter), scope, &value);
                assign(node.target, value, scope);
                return Flow::Normal;
            }
            case StmtKind::Macro: {
                const auto& node = static_cast<const MacroStmt&>(stmt);
                scope->vars[node.macro->name] = Value::object(std::make_shared<MacroObject>(node.macro, scope));
                return Flow::Normal;
            }
            case StmtKind::CallBlock: {
                const auto& node = static_cast<const CallBlockStmt&>(stmt);
                const Value caller = Value::object(std::make_shared<MacroObject>(node.caller, scope));
                const Value callee = eval(*node.call->callee, scope);
                CallArgs args = eval_args(node.call->args, scope);
                args.keyword.emplace_back("caller", caller);
                out += call(callee, args).str();
                return Flow::Normal;
            }
            case StmtKind::FilterBlock: {
                const auto& node = static_cast<const FilterBlockStmt&>(stmt);
                auto inner = new_scope(scope);
                std::string captured;
                exec(node.body, inner, captured);
                const Value input = Value::string(std::move(captured));
                out += eval_filter(static_cast<const FilterExpr&>(*node.filter), scope, &input).str();
                return Flow::Normal;
            }
            case StmtKind::With: {
                const auto& node = static_cast<const WithStmt&>(stmt);
                auto inner = new_scope(scope);
                std::vector<Value> values;
                for (const ExprPtr& e : node.values) values.push_back(eval(*e, scope));
                for (size_t i = 0; i < values.size(); ++i) assign(node.targets[i], values[i], inner);
                return exec(node.body, inner, out);
            }
            case StmtKind::Break: return Flow::Break;
            case StmtKind::Continue: return Flow::Continue;
            case StmtKind::Scope: {
                auto inner = new_scope(scope);
                return exec(static_cast<const ScopeStmt&>(stmt).body, inner, out);
            }
        }
    } catch (RenderError& error) {
        if (!error.located) {
            error.located = true;
            error.offset = stmt.offset;
        }
        throw;
    }
    return Flow::Normal;
}

}  // namespace oxinfer::jinja
