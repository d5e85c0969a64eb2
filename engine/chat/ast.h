#pragma once
// The syntax tree of a parsed template: expressions and statements as jinja2's parser builds them.

#include "chat/value.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace oxinfer::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
    Const,
    Name,
    List,  // list or tuple literal
    Dict,
    Getattr,
    Getitem,
    Slice,
    Call,
    Filter,
    Test,
    Unary,
    Binary,
    Compare,
    Concat,
    Cond,
};

struct Expr {
    explicit Expr(ExprKind k, size_t at) : kind(k), offset(at) {}
    virtual ~Expr() = default;
    ExprKind kind;
    size_t offset;  // where the expression (or its operator) starts in the source
};

struct CallArguments {
    std::vector<ExprPtr> positional;
    std::vector<std::pair<std::string, ExprPtr>> keyword;
    ExprPtr star_args;    // *args
    ExprPtr star_kwargs;  // **kwargs
};

struct ConstExpr : Expr {
    ConstExpr(Value v, size_t at) : Expr(ExprKind::Const, at), value(std::move(v)) {}
    Value value;
};

struct NameExpr : Expr {
    NameExpr(std::string n, size_t at) : Expr(ExprKind::Name, at), name(std::move(n)) {}
    std::string name;
};

struct ListExpr : Expr {
    ListExpr(bool is_tuple, size_t at) : Expr(ExprKind::List, at), tuple(is_tuple) {}
    bool tuple;
    std::vector<ExprPtr> items;
};

struct DictExpr : Expr {
    explicit DictExpr(size_t at) : Expr(ExprKind::Dict, at) {}
    std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

struct GetattrExpr : Expr {
    GetattrExpr(ExprPtr o, std::string n, size_t at) : Expr(ExprKind::Getattr, at), object(std::move(o)), name(std::move(n)) {}
    ExprPtr object;
    std::string name;
};

struct GetitemExpr : Expr {
    GetitemExpr(ExprPtr o, ExprPtr k, size_t at) : Expr(ExprKind::Getitem, at), object(std::move(o)), key(std::move(k)) {}
    ExprPtr object;
    ExprPtr key;
};

struct SliceExpr : Expr {
    explicit SliceExpr(size_t at) : Expr(ExprKind::Slice, at) {}
    ExprPtr start, stop, step;  // each may be null
};

struct CallExpr : Expr {
    CallExpr(ExprPtr c, size_t at) : Expr(ExprKind::Call, at), callee(std::move(c)) {}
    ExprPtr callee;
    CallArguments args;
};

// `value | name(args)`. `value` is null for the innermost filter of a {% filter %} block or a
// {% set x | f %} block, whose input is the rendered body.
struct FilterExpr : Expr {
    FilterExpr(ExprPtr v, std::string n, size_t at) : Expr(ExprKind::Filter, at), value(std::move(v)), name(std::move(n)) {}
    ExprPtr value;
    std::string name;
    CallArguments args;
};

struct TestExpr : Expr {
    TestExpr(ExprPtr v, std::string n, size_t at) : Expr(ExprKind::Test, at), value(std::move(v)), name(std::move(n)) {}
    ExprPtr value;
    std::string name;
    CallArguments args;
};

enum class UnaryOp : uint8_t { Neg, Pos, Not };
struct UnaryExpr : Expr {
    UnaryExpr(UnaryOp o, ExprPtr e, size_t at) : Expr(ExprKind::Unary, at), op(o), operand(std::move(e)) {}
    UnaryOp op;
    ExprPtr operand;
};

enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, And, Or };
struct BinaryExpr : Expr {
    BinaryExpr(BinaryOp o, ExprPtr l, ExprPtr r, size_t at)
        : Expr(ExprKind::Binary, at), op(o), left(std::move(l)), right(std::move(r)) {}
    BinaryOp op;
    ExprPtr left, right;
};

enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };
struct CompareExpr : Expr {
    CompareExpr(ExprPtr f, size_t at) : Expr(ExprKind::Compare, at), first(std::move(f)) {}
    ExprPtr first;
    std::vector<std::pair<CompareOp, ExprPtr>> rest;
};

struct ConcatExpr : Expr {
    explicit ConcatExpr(size_t at) : Expr(ExprKind::Concat, at) {}
    std::vector<ExprPtr> parts;
};

struct CondExpr : Expr {
    CondExpr(size_t at) : Expr(ExprKind::Cond, at) {}
    ExprPtr test, then, otherwise;  // otherwise may be null (gives Undefined)
};

// Assignment targets: a name, a tuple of targets, or a namespace attribute (ns.attr).
struct Target {
    enum class Kind : uint8_t { Name, Tuple, NamespaceAttr } kind = Kind::Name;
    std::string name;
    std::string attr;
    std::vector<Target> items;
    size_t offset = 0;
};

enum class StmtKind : uint8_t {
    Data,
    Output,
    If,
    For,
    Set,
    SetBlock,
    Macro,
    CallBlock,
    FilterBlock,
    With,
    Break,
    Continue,
    Scope,  // a body rendered in place: {% generation %}, {% block %}, {% autoescape %}
};

struct Stmt {
    Stmt(StmtKind k, size_t at) : kind(k), offset(at) {}
    virtual ~Stmt() = default;
    StmtKind kind;
    size_t offset;
};

struct DataStmt : Stmt {
    DataStmt(std::string t, size_t at) : Stmt(StmtKind::Data, at), text(std::move(t)) {}
    std::string text;
};

struct OutputStmt : Stmt {
    OutputStmt(ExprPtr e, size_t at) : Stmt(StmtKind::Output, at), expr(std::move(e)) {}
    ExprPtr expr;
};

struct IfStmt : Stmt {
    explicit IfStmt(size_t at) : Stmt(StmtKind::If, at) {}
    std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif, elif, ...
    Body otherwise;
};

struct ForStmt : Stmt {
    explicit ForStmt(size_t at) : Stmt(StmtKind::For, at) {}
    Target target;
    ExprPtr iterable;
    ExprPtr filter;  // {% for x in xs if cond %}
    Body body;
    Body otherwise;
    bool recursive = false;
};

struct SetStmt : Stmt {
    explicit SetStmt(size_t at) : Stmt(StmtKind::Set, at) {}
    Target target;
    ExprPtr value;
};

struct SetBlockStmt : Stmt {
    explicit SetBlockStmt(size_t at) : Stmt(StmtKind::SetBlock, at) {}
    Target target;
    ExprPtr filter;  // a FilterExpr chain whose innermost value is null, or null
    Body body;
};

struct MacroDef {
    std::string name;
    std::vector<std::string> params;
    std::vector<ExprPtr> defaults;  // aligned to the last params
    Body body;
    bool uses_varargs = false;
    bool uses_kwargs = false;
    bool uses_caller = false;
};

struct MacroStmt : Stmt {
    explicit MacroStmt(size_t at) : Stmt(StmtKind::Macro, at), macro(std::make_shared<MacroDef>()) {}
    std::shared_ptr<MacroDef> macro;
};

struct CallBlockStmt : Stmt {
    explicit CallBlockStmt(size_t at) : Stmt(StmtKind::CallBlock, at), caller(std::make_shared<MacroDef>()) {}
    std::unique_ptr<CallExpr> call;
    std::shared_ptr<MacroDef> caller;  // the body, as the `caller` macro
};

struct FilterBlockStmt : Stmt {
    explicit FilterBlockStmt(size_t at) : Stmt(StmtKind::FilterBlock, at) {}
    ExprPtr filter;  // FilterExpr chain with a null innermost value
    Body body;
};

struct WithStmt : Stmt {
    explicit WithStmt(size_t at) : Stmt(StmtKind::With, at) {}
    std::vector<Target> targets;
    std::vector<ExprPtr> values;
    Body body;
};

struct ScopeStmt : Stmt {
    explicit ScopeStmt(size_t at) : Stmt(StmtKind::Scope, at) {}
    Body body;
};

struct SimpleStmt : Stmt {
    SimpleStmt(StmtKind k, size_t at) : Stmt(k, at) {}
};

}  // namespace oxinfer::jinja
