#pragma once
// Renders a parsed template: Jinja/Python semantics for expressions, jinja2's scoping rules
// (a for-loop iteration, a macro call and a with/set block each get their own scope; `set` at
// template level is visible to later code; namespace() objects are the way to carry values out
// of a loop), macros with defaults, varargs/kwargs and `caller`, loops with `loop.*`, else,
// filters, recursion, break and continue.

#include "chat/ast.h"

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace oxinfer::jinja {

struct Scope {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Scope> parent;

    Value* find(const std::string& name);
};

struct RenderSettings {
    // The local time strftime_now() reports; the real clock when unset.
    std::optional<std::tm> now;
};

class Interpreter {
public:
    explicit Interpreter(RenderSettings settings) : settings_(std::move(settings)) {}

    // Renders `body` with the variables of `context` (a dict). Throws RenderError.
    std::string render(const Body& body, const Value& context);

    // Operations the built-ins need, with the sandbox's rules.
    Value call(const Value& callee, CallArgs& args);
    Value getattr(const Value& object, const std::string& name);
    Value getitem(const Value& object, const Value& key);
    std::tm now() const;

    // Used by the objects the interpreter creates (macros, loops).
    Value call_macro(const std::shared_ptr<MacroDef>& macro, const std::shared_ptr<Scope>& closure, CallArgs& args);
    Value run_recursive_loop(const ForStmt& node, const std::shared_ptr<Scope>& scope, const Value& iterable, int depth);

private:
    enum class Flow { Normal, Break, Continue };

    Value eval(const Expr& expr, const std::shared_ptr<Scope>& scope);
    Value eval_inner(const Expr& expr, const std::shared_ptr<Scope>& scope);
    Value eval_call(const CallExpr& expr, const std::shared_ptr<Scope>& scope);
    Value eval_filter(const FilterExpr& expr, const std::shared_ptr<Scope>& scope, const Value* input);
    CallArgs eval_args(const CallArguments& args, const std::shared_ptr<Scope>& scope);
    Value lookup(const std::string& name, const std::shared_ptr<Scope>& scope);
    Value slice(const Value& object, const SliceExpr& slice, const std::shared_ptr<Scope>& scope);

    Flow exec(const Body& body, const std::shared_ptr<Scope>& scope, std::string& out);
    Flow exec_stmt(const Stmt& stmt, const std::shared_ptr<Scope>& scope, std::string& out);
    Flow exec_for(const ForStmt& node, const std::shared_ptr<Scope>& scope, std::string& out, const Value& iterable,
                  int depth);
    void assign(const Target& target, const Value& value, const std::shared_ptr<Scope>& scope);

    std::shared_ptr<Scope> new_scope(const std::shared_ptr<Scope>& parent);

    RenderSettings settings_;
    std::unordered_map<std::string, Value> globals_;
    std::vector<std::weak_ptr<Scope>> scopes_;  // every scope of the render, cleared at its end
    int depth_ = 0;
};

// Python binary operators on values (used by the interpreter and the sum filter).
Value binary_add(const Value& a, const Value& b);

}  // namespace oxinfer::jinja
