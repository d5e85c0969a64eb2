#pragma once
// A small pickle machine that reads Python pickles (protocols 2-5, the opcodes torch.save emits)
// into a tree of plain values WITHOUT running any code. A GLOBAL is only a name; calling it
// (REDUCE, NEWOBJ) builds an opaque Object that records the name and arguments, unless the
// Hooks recognise the name and build something else (torch's tensor rebuild functions). Persistent
// ids (BINPERSID) are handed to the Hooks as well.
//
// Values live in an arena owned by the Machine and refer to each other by pointer, so shared and
// even cyclic structures (through the memo) are cheap and safe. Strings and bytes are views into
// the pickle data, which must outlive the Machine's values.
//
// Reference: CPython Lib/pickletools.py (the opcode descriptions) and PEP 307 / 3154 / 574.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace oxinfer::pickle {

enum class Kind : uint8_t {
    None, Bool, Int, BigInt, Float, String, Bytes,
    Tuple, List, Dict, Set,
    Global,  // module + name, as found by GLOBAL / STACK_GLOBAL
    Object,  // the opaque result of calling something the Hooks do not know
    Native,  // a value the Hooks built (a torch storage or tensor)
};
std::string_view kind_name(Kind kind);

struct Value {
    Kind kind = Kind::None;
    bool boolean = false;
    int64_t integer = 0;                             // Int
    double number = 0;                               // Float
    std::string_view text;                           // String (UTF-8), Bytes, BigInt (little-endian two's complement); Global: module
    std::string_view name;                           // Global: name
    std::vector<Value*> items;                       // Tuple, List, Set; Object: APPENDed items
    std::vector<std::pair<Value*, Value*>> entries;  // Dict; Object: SETITEMs
    Value* callee = nullptr;                         // Object: what was called (usually a Global)
    Value* args = nullptr;                           // Object: the arguments
    Value* state = nullptr;                          // Dict, Object: the BUILD state
    uint32_t native_tag = 0;                         // Native: the Hooks' own kind and index
    uint32_t native_index = 0;

    bool is_string() const { return kind == Kind::String || kind == Kind::Bytes; }
    bool is_global(std::string_view module, std::string_view global_name) const {
        return kind == Kind::Global && text == module && name == global_name;
    }
    // "collections.OrderedDict" for a Global; the callee's name for an Object; else the kind.
    std::string describe() const;
};

class Machine;

class Hooks {
public:
    virtual ~Hooks() = default;
    // BINPERSID: the persistent id popped from the stack; returns the value to push.
    virtual Value& persistent_load(Machine& machine, Value& pid) = 0;
    // REDUCE / NEWOBJ of a Global. Returns the value to push, or nullptr for an opaque Object.
    virtual Value* call(Machine& machine, Value& callee, Value& args) { return nullptr; }
};

class Machine {
public:
    // `subject` names the file in errors; `source` names the pickle inside it ("archive/data.pkl").
    Machine(std::span<const std::byte> pickle, std::string subject, std::string source);
    Machine(const Machine&) = delete;
    Machine& operator=(const Machine&) = delete;

    // Runs to STOP and returns the pickled value. Throws oxinfer::Error on malformed input, an
    // opcode this machine does not implement, or a pickle that exceeds the limits below.
    Value& run(Hooks& hooks);

    Value& make(Kind kind);
    Value& make_int(int64_t value);
    // Throws Error(subject, problem + where in the pickle the current opcode is).
    [[noreturn]] void fail(const std::string& problem) const;

    int protocol() const { return protocol_; }
    size_t values() const { return arena_.size(); }

    // Limits against hostile pickles: values made, nested MARKs, GLOBAL line length.
    static constexpr size_t kMaxValues = size_t{1} << 22;  // ~0.6 GB of values; a state dict needs ~25 per tensor
    static constexpr size_t kMaxMarkDepth = 4096;
    static constexpr size_t kMaxGlobalLine = 4096;

private:
    std::span<const std::byte> take(size_t count);
    template <class T>
    T read();
    std::string_view read_line();
    Value& pop();
    Value& top();
    std::vector<Value*> pop_mark();
    void push(Value& value);
    Value& call(Hooks& hooks, Value& callee, Value& args);
    void set_items(Value& target, std::span<Value* const> pairs);
    void append_items(Value& target, std::span<Value* const> values);
    Value& memo_get(uint64_t key);

    std::span<const std::byte> data_;
    std::string subject_;
    std::string source_;
    size_t pos_ = 0;
    size_t opcode_pos_ = 0;
    int protocol_ = 0;
    std::deque<Value> arena_;
    std::vector<Value*> stack_;
    std::vector<size_t> marks_;  // stack heights at each open MARK
    std::unordered_map<uint64_t, Value*> memo_;
    Value* none_ = nullptr;
    Value* true_ = nullptr;
    Value* false_ = nullptr;
};

}  // namespace oxinfer::pickle
