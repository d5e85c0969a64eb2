// The pickle machine: a stack, a mark stack and a memo, driven by one opcode at a time.
// Opcode meanings follow CPython's Lib/pickletools.py; nothing here imports or calls anything.

#include "formats/pickle.h"

#include <oxinfer/error.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace oxinfer::pickle {
namespace {

// The opcodes we implement, by protocol. Text-mode (protocol 0/1) opcodes such as INT, STRING,
// PUT, GET, INST and OBJ are refused: torch.save never writes them.
enum Op : uint8_t {
    MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', DUP = '2',
    BININT = 'J', BININT1 = 'K', BININT2 = 'M', NONE = 'N', BINPERSID = 'Q', REDUCE = 'R',
    BINSTRING = 'T', SHORT_BINSTRING = 'U', BINUNICODE = 'X', APPEND = 'a', BUILD = 'b', GLOBAL = 'c',
    DICT = 'd', APPENDS = 'e', BINGET = 'h', LONG_BINGET = 'j', LIST = 'l', BINPUT = 'q', LONG_BINPUT = 'r',
    SETITEM = 's', TUPLE = 't', SETITEMS = 'u', EMPTY_DICT = '}', EMPTY_LIST = ']', EMPTY_TUPLE = ')',
    BINFLOAT = 'G',
    // protocol 2
    PROTO = 0x80, NEWOBJ = 0x81, TUPLE1 = 0x85, TUPLE2 = 0x86, TUPLE3 = 0x87, NEWTRUE = 0x88, NEWFALSE = 0x89,
    LONG1 = 0x8a, LONG4 = 0x8b,
    // protocol 3
    BINBYTES = 'B', SHORT_BINBYTES = 'C',
    // protocol 4
    SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d, BINBYTES8 = 0x8e, EMPTY_SET = 0x8f, ADDITEMS = 0x90,
    FROZENSET = 0x91, NEWOBJ_EX = 0x92, STACK_GLOBAL = 0x93, MEMOIZE = 0x94, FRAME = 0x95,
    // protocol 5
    BYTEARRAY8 = 0x96,
};

constexpr int kHighestProtocol = 5;

std::string hex_byte(uint8_t value) {
    static const char digits[] = "0123456789abcdef";
    return std::string("0x") + digits[value >> 4] + digits[value & 0xf];
}

}  // namespace

std::string_view kind_name(Kind kind) {
    switch (kind) {
        case Kind::None: return "None";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::BigInt: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "str";
        case Kind::Bytes: return "bytes";
        case Kind::Tuple: return "tuple";
        case Kind::List: return "list";
        case Kind::Dict: return "dict";
        case Kind::Set: return "set";
        case Kind::Global: return "global";
        case Kind::Object: return "object";
        case Kind::Native: return "native";
    }
    return "?";
}

std::string Value::describe() const {
    if (kind == Kind::Global) return std::string(text) + "." + std::string(name);
    if (kind == Kind::Object && callee && callee->kind == Kind::Global) return callee->describe() + "(...)";
    return std::string(kind_name(kind));
}

Machine::Machine(std::span<const std::byte> pickle, std::string subject, std::string source)
    : data_(pickle), subject_(std::move(subject)), source_(std::move(source)) {
    none_ = &make(Kind::None);
    true_ = &make(Kind::Bool);
    true_->boolean = true;
    false_ = &make(Kind::Bool);
}

void Machine::fail(const std::string& problem) const {
    throw Error(subject_, problem + " (" + source_ + ", opcode at offset " + std::to_string(opcode_pos_) + ")");
}

Value& Machine::make(Kind kind) {
    if (arena_.size() >= kMaxValues) fail("the pickle builds more than " + std::to_string(kMaxValues) + " values");
    Value& value = arena_.emplace_back();
    value.kind = kind;
    return value;
}

Value& Machine::make_int(int64_t value) {
    Value& out = make(Kind::Int);
    out.integer = value;
    return out;
}

std::span<const std::byte> Machine::take(size_t count) {
    if (count > data_.size() - pos_)
        fail("truncated pickle: " + std::to_string(count) + " bytes needed at offset " + std::to_string(pos_) + " but it ends at " +
             std::to_string(data_.size()));
    auto out = data_.subspan(pos_, count);
    pos_ += count;
    return out;
}

template <class T>
T Machine::read() {
    T value;
    std::memcpy(&value, take(sizeof(T)).data(), sizeof(T));
    return value;
}

std::string_view Machine::read_line() {
    const size_t limit = std::min(data_.size() - pos_, kMaxGlobalLine + 1);
    for (size_t i = 0; i < limit; ++i) {
        if (data_[pos_ + i] == std::byte{'\n'}) {
            const auto bytes = take(i + 1);
            return {reinterpret_cast<const char*>(bytes.data()), i};
        }
    }
    fail(limit > kMaxGlobalLine ? "GLOBAL name longer than " + std::to_string(kMaxGlobalLine) + " bytes"
                                : std::string("truncated pickle: GLOBAL name without its newline"));
}

void Machine::push(Value& value) { stack_.push_back(&value); }

Value& Machine::pop() {
    const size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() <= floor) fail("pickle stack underflow");
    Value* value = stack_.back();
    stack_.pop_back();
    return *value;
}

Value& Machine::top() {
    const size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() <= floor) fail("pickle stack underflow");
    return *stack_.back();
}

std::vector<Value*> Machine::pop_mark() {
    if (marks_.empty()) fail("pickle opcode needs a MARK but none is open");
    const size_t height = marks_.back();
    marks_.pop_back();
    std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(height), stack_.end());
    stack_.resize(height);
    return items;
}

Value& Machine::memo_get(uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail("pickle memo has no entry " + std::to_string(key));
    return *it->second;
}

void Machine::set_items(Value& target, std::span<Value* const> pairs) {
    if (pairs.size() % 2 != 0) fail("SETITEMS with an odd number of values");
    if (target.kind != Kind::Dict && target.kind != Kind::Object)
        fail("SETITEM on a " + std::string(kind_name(target.kind)) + ", not a dict");
    // A dict pickled by Python never repeats a key; a repeated one is kept and reported by the
    // reader that cares (the torch reader refuses duplicate tensor names).
    for (size_t i = 0; i < pairs.size(); i += 2) target.entries.emplace_back(pairs[i], pairs[i + 1]);
}

void Machine::append_items(Value& target, std::span<Value* const> values) {
    if (target.kind != Kind::List && target.kind != Kind::Set && target.kind != Kind::Object)
        fail("APPEND to a " + std::string(kind_name(target.kind)) + ", not a list");
    target.items.insert(target.items.end(), values.begin(), values.end());
}

Value& Machine::call(Hooks& hooks, Value& callee, Value& args) {
    if (callee.kind == Kind::Global) {
        // Plain Python containers that pickles build by calling their class.
        if (callee.is_global("collections", "OrderedDict") || callee.is_global("builtins", "dict") ||
            callee.is_global("collections", "defaultdict")) {
            Value& dict = make(Kind::Dict);
            // OrderedDict(items): a list of (key, value) pairs as the first argument.
            if (!callee.is_global("collections", "defaultdict") && args.kind == Kind::Tuple && !args.items.empty() &&
                args.items[0]->kind == Kind::List) {
                for (Value* pair : args.items[0]->items) {
                    if (pair->kind != Kind::Tuple || pair->items.size() != 2) fail("OrderedDict argument is not a list of pairs");
                    set_items(dict, pair->items);
                }
            }
            return dict;
        }
        if (Value* built = hooks.call(*this, callee, args)) return *built;
    }
    Value& object = make(Kind::Object);
    object.callee = &callee;
    object.args = &args;
    return object;
}

Value& Machine::run(Hooks& hooks) {
    pos_ = 0;
    while (true) {
        opcode_pos_ = pos_;
        if (pos_ >= data_.size()) fail("truncated pickle: it ends without a STOP opcode");
        const auto op = static_cast<uint8_t>(data_[pos_++]);
        switch (op) {
            case PROTO: {
                const auto version = read<uint8_t>();
                if (version > kHighestProtocol) fail("pickle protocol " + std::to_string(version) + " is not supported");
                protocol_ = version;
                break;
            }
            case FRAME: {
                // A framing hint for buffered readers; the opcodes inside follow directly.
                const auto length = read<uint64_t>();
                if (length > data_.size() - pos_) fail("pickle frame of " + std::to_string(length) + " bytes runs past the end of the pickle");
                break;
            }
            case STOP: return pop();

            case MARK:
                if (marks_.size() >= kMaxMarkDepth) fail("pickle nests MARKs deeper than " + std::to_string(kMaxMarkDepth));
                marks_.push_back(stack_.size());
                break;
            case POP:
                if (stack_.size() > (marks_.empty() ? 0 : marks_.back())) {
                    stack_.pop_back();
                } else {
                    pop_mark();
                }
                break;
            case POP_MARK: pop_mark(); break;
            case DUP: push(top()); break;

            case NONE: push(*none_); break;
            case NEWTRUE: push(*true_); break;
            case NEWFALSE: push(*false_); break;
            case BININT: push(make_int(read<int32_t>())); break;
            case BININT1: push(make_int(read<uint8_t>())); break;
            case BININT2: push(make_int(read<uint16_t>())); break;
            case LONG1:
            case LONG4: {
                uint64_t length;
                if (op == LONG1) {
                    length = read<uint8_t>();
                } else {
                    const auto signed_length = read<int32_t>();
                    if (signed_length < 0) fail("LONG4 with a negative length");
                    length = static_cast<uint64_t>(signed_length);
                }
                const auto bytes = take(length);
                if (length <= 8) {
                    // Little-endian two's complement: sign-extend from the top byte.
                    uint64_t bits = 0;
                    for (size_t i = 0; i < length; ++i) bits |= uint64_t{static_cast<uint8_t>(bytes[i])} << (8 * i);
                    if (length > 0 && length < 8 && (static_cast<uint8_t>(bytes[length - 1]) & 0x80)) bits |= ~uint64_t{0} << (8 * length);
                    push(make_int(static_cast<int64_t>(bits)));
                } else {
                    Value& big = make(Kind::BigInt);
                    big.text = {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
                    push(big);
                }
                break;
            }
            case BINFLOAT: {
                const auto bytes = take(8);  // stored big-endian
                uint64_t bits = 0;
                for (size_t i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<uint8_t>(bytes[i]);
                Value& number = make(Kind::Float);
                number.number = std::bit_cast<double>(bits);
                push(number);
                break;
            }

            case BINUNICODE:
            case SHORT_BINUNICODE:
            case BINUNICODE8:
            case BINSTRING:
            case SHORT_BINSTRING:
            case BINBYTES:
            case SHORT_BINBYTES:
            case BINBYTES8:
            case BYTEARRAY8: {
                uint64_t length;
                switch (op) {
                    case SHORT_BINUNICODE:
                    case SHORT_BINSTRING:
                    case SHORT_BINBYTES: length = read<uint8_t>(); break;
                    case BINUNICODE8:
                    case BINBYTES8:
                    case BYTEARRAY8: length = read<uint64_t>(); break;
                    case BINSTRING: {
                        const auto signed_length = read<int32_t>();
                        if (signed_length < 0) fail("BINSTRING with a negative length");
                        length = static_cast<uint64_t>(signed_length);
                        break;
                    }
                    default: length = read<uint32_t>(); break;
                }
                const auto bytes = take(length);  // checks the length against what is left first
                const bool text = op == BINUNICODE || op == SHORT_BINUNICODE || op == BINUNICODE8 || op == BINSTRING || op == SHORT_BINSTRING;
                Value& value = make(text ? Kind::String : Kind::Bytes);
                value.text = {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
                push(value);
                break;
            }

            case EMPTY_TUPLE: push(make(Kind::Tuple)); break;
            case EMPTY_LIST: push(make(Kind::List)); break;
            case EMPTY_DICT: push(make(Kind::Dict)); break;
            case EMPTY_SET: push(make(Kind::Set)); break;
            case TUPLE:
            case LIST:
            case FROZENSET: {
                auto items = pop_mark();
                Value& value = make(op == TUPLE ? Kind::Tuple : op == LIST ? Kind::List : Kind::Set);
                value.items = std::move(items);
                push(value);
                break;
            }
            case TUPLE1:
            case TUPLE2:
            case TUPLE3: {
                const size_t count = op - TUPLE1 + 1;
                Value& tuple = make(Kind::Tuple);
                tuple.items.resize(count);
                for (size_t i = count; i-- > 0;) tuple.items[i] = &pop();
                push(tuple);
                break;
            }
            case DICT: {
                const auto items = pop_mark();
                Value& dict = make(Kind::Dict);
                set_items(dict, items);
                push(dict);
                break;
            }

            case APPEND: {
                Value* value = &pop();
                append_items(top(), std::span<Value* const>(&value, 1));
                break;
            }
            case APPENDS:
            case ADDITEMS: {
                const auto items = pop_mark();
                Value& target = top();
                if (op == ADDITEMS && target.kind != Kind::Set) fail("ADDITEMS to a " + std::string(kind_name(target.kind)) + ", not a set");
                append_items(target, items);
                break;
            }
            case SETITEM: {
                Value* pair[2];
                pair[1] = &pop();
                pair[0] = &pop();
                set_items(top(), pair);
                break;
            }
            case SETITEMS: {
                const auto items = pop_mark();
                set_items(top(), items);
                break;
            }

            case BINPUT:
            case LONG_BINPUT:
            case MEMOIZE: {
                const uint64_t key = op == BINPUT ? read<uint8_t>() : op == LONG_BINPUT ? read<uint32_t>() : memo_.size();
                memo_[key] = &top();
                break;
            }
            case BINGET: push(memo_get(read<uint8_t>())); break;
            case LONG_BINGET: push(memo_get(read<uint32_t>())); break;

            case GLOBAL:
            case STACK_GLOBAL: {
                Value& global = make(Kind::Global);
                if (op == GLOBAL) {
                    global.text = read_line();
                    global.name = read_line();
                } else {
                    Value& name = pop();
                    Value& module = pop();
                    if (module.kind != Kind::String || name.kind != Kind::String) fail("STACK_GLOBAL needs two strings");
                    global.text = module.text;
                    global.name = name.text;
                }
                push(global);
                break;
            }
            case REDUCE:
            case NEWOBJ: {
                Value& args = pop();
                Value& callee = pop();
                push(call(hooks, callee, args));
                break;
            }
            case NEWOBJ_EX: {
                pop();  // keyword arguments: recorded nowhere, never used
                Value& args = pop();
                Value& callee = pop();
                push(call(hooks, callee, args));
                break;
            }
            case BUILD: {
                Value& state = pop();
                Value& target = top();
                // __setstate__ is never run: the state is kept for whoever reads the object.
                if (target.kind == Kind::Dict || target.kind == Kind::Object) target.state = &state;
                break;
            }
            case BINPERSID: {
                Value& pid = pop();
                push(hooks.persistent_load(*this, pid));
                break;
            }

            default:
                throw Error(subject_, "unsupported pickle opcode " + hex_byte(op) + " at offset " + std::to_string(opcode_pos_) + " of " +
                                          source_);
        }
    }
}

}  // namespace oxinfer::pickle
