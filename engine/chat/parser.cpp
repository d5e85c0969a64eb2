#include "chat/parser.h"

#include "chat/builtins.h"

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <set>

namespace oxinfer::jinja {

namespace {

// A token test as jinja2 writes it: a token type ("block_end", "rparen", ...) or "name:endfor".
struct Needle {
    TokenType type;
    std::string value;  // name or operator text; empty: any value of that type
};

Needle name_needle(std::string value) { return {TokenType::Name, std::move(value)}; }

std::string describe_type(TokenType type) {
    switch (type) {
        case TokenType::Data: return "template data / text";
        case TokenType::VariableBegin: return "begin of print statement";
        case TokenType::VariableEnd: return "end of print statement";
        case TokenType::BlockBegin: return "begin of statement block";
        case TokenType::BlockEnd: return "end of statement block";
        case TokenType::Name: return "name";
        case TokenType::String: return "string";
        case TokenType::Integer: return "integer";
        case TokenType::Float: return "float";
        case TokenType::Operator: return "operator";
        case TokenType::Eof: return "end of template";
    }
    return "token";
}

std::string describe(const Token& token) {
    if (token.type == TokenType::Name || token.type == TokenType::Operator) return token.value;
    return describe_type(token.type);
}

std::string describe(const Needle& needle) {
    if (!needle.value.empty()) return needle.value;
    return describe_type(needle.type);
}

std::string quote_name(const std::string& s) { return "'" + s + "'"; }

class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

    Body parse_template() {
        Body body = subparse(nullptr);
        if (current().type != TokenType::Eof) fail("unexpected " + quote_name(describe(current())));
        return body;
    }

private:
    // ---- token stream ----

    const Token& current() const { return tokens_[pos_]; }
    const Token& look() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
    const Token& next() {
        const Token& token = tokens_[pos_];
        if (pos_ + 1 < tokens_.size()) ++pos_;
        return token;
    }

    static bool test(const Token& token, const Needle& needle) {
        if (token.type != needle.type) return false;
        return needle.value.empty() || token.value == needle.value;
    }
    bool at(TokenType type) const { return current().type == type; }
    bool at_op(const char* op) const { return current().type == TokenType::Operator && current().value == op; }
    bool at_name(const char* name) const { return current().type == TokenType::Name && current().value == name; }
    bool skip_op(const char* op) {
        if (!at_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(const char* name) {
        if (!at_name(name)) return false;
        next();
        return true;
    }

    const Token& expect(const Needle& needle) {
        if (!test(current(), needle)) {
            if (current().type == TokenType::Eof)
                fail("unexpected end of template, expected " + quote_name(describe(needle)) + ".");
            fail("expected token " + quote_name(describe(needle)) + ", got " + quote_name(describe(current())));
        }
        return next();
    }
    const Token& expect_op(const char* op) { return expect({TokenType::Operator, op}); }
    const Token& expect_type(TokenType type) { return expect({type, ""}); }

    [[noreturn]] void fail(std::string message) const { throw SyntaxError{std::move(message), current().offset}; }
    [[noreturn]] void fail_at(std::string message, size_t offset) const { throw SyntaxError{std::move(message), offset}; }

    // jinja2's message for an unknown tag or an unexpected end of the template.
    [[noreturn]] void fail_unknown(const std::string* name, const std::vector<Needle>* extra_end) const {
        std::vector<std::vector<Needle>> stack = end_token_stack_;
        if (extra_end) stack.push_back(*extra_end);
        std::set<std::string> expected;
        for (const auto& needles : stack)
            for (const Needle& needle : needles) expected.insert(describe(needle));
        std::string looking;
        if (!stack.empty()) {
            for (size_t i = 0; i < stack.back().size(); ++i) {
                if (i) looking += " or ";
                looking += quote_name(describe(stack.back()[i]));
            }
        }
        std::string message = name ? "Encountered unknown tag " + quote_name(*name) + "." : "Unexpected end of template.";
        if (!looking.empty()) {
            if (name && expected.count(*name))
                message += " You probably made a nesting mistake. Jinja is expecting this tag, but currently looking for " +
                           looking + ".";
            else
                message += " Jinja was looking for the following tags: " + looking + ".";
        }
        if (!tag_stack_.empty()) message += " The innermost block that needs to be closed is " + quote_name(tag_stack_.back()) + ".";
        fail(message);
    }

    // ---- statements ----

    Body subparse(const std::vector<Needle>* end_tokens) {
        DepthGuard guard(*this);
        Body body;
        if (end_tokens) end_token_stack_.push_back(*end_tokens);
        while (!at(TokenType::Eof)) {
            const Token& token = current();
            if (token.type == TokenType::Data) {
                body.push_back(std::make_unique<DataStmt>(token.value, token.offset));
                next();
            } else if (token.type == TokenType::VariableBegin) {
                next();
                const size_t offset = current().offset;
                ExprPtr expr = parse_tuple(false, true, nullptr, false);
                expect_type(TokenType::VariableEnd);
                body.push_back(std::make_unique<OutputStmt>(std::move(expr), offset));
            } else if (token.type == TokenType::BlockBegin) {
                next();
                if (end_tokens && std::any_of(end_tokens->begin(), end_tokens->end(),
                                              [&](const Needle& n) { return test(current(), n); })) {
                    end_token_stack_.pop_back();
                    return body;
                }
                parse_statement(body);
                expect_type(TokenType::BlockEnd);
            } else {
                fail("internal parsing error");
            }
        }
        if (end_tokens) end_token_stack_.pop_back();
        return body;
    }

    Body parse_statements(std::vector<Needle> end_tokens, bool drop_needle) {
        skip_op(":");
        expect_type(TokenType::BlockEnd);
        Body body = subparse(&end_tokens);
        if (at(TokenType::Eof)) fail_unknown(nullptr, &end_tokens);
        if (drop_needle) next();
        return body;
    }

    void parse_statement(Body& out) {
        const Token& token = current();
        if (token.type != TokenType::Name) fail("tag name expected");
        const std::string tag = token.value;
        const size_t offset = token.offset;
        static const std::set<std::string> known = {"for",     "if",   "block",  "extends",  "print",
                                                    "macro",   "include", "from", "import", "set",
                                                    "with",    "autoescape", "call", "filter", "break",
                                                    "continue", "generation"};
        if (!known.count(tag)) fail_unknown(&tag, nullptr);
        tag_stack_.push_back(tag);
        if (tag == "for") out.push_back(parse_for());
        else if (tag == "if") out.push_back(parse_if());
        else if (tag == "set") out.push_back(parse_set());
        else if (tag == "macro") out.push_back(parse_macro());
        else if (tag == "call") out.push_back(parse_call_block());
        else if (tag == "filter") out.push_back(parse_filter_block());
        else if (tag == "with") out.push_back(parse_with());
        else if (tag == "print") parse_print(out);
        else if (tag == "break" || tag == "continue") {
            next();
            if (loop_depth_ == 0) fail_at(quote_name(tag) + " outside loop", offset);
            out.push_back(std::make_unique<SimpleStmt>(tag == "break" ? StmtKind::Break : StmtKind::Continue, offset));
        } else if (tag == "generation" || tag == "autoescape" || tag == "block") {
            out.push_back(parse_scope(tag));
        } else {
            fail_at("{% " + tag +
                        " %} needs a template loader; transformers renders chat templates without one, so it fails "
                        "there too",
                    offset);
        }
        tag_stack_.pop_back();
    }

    StmtPtr parse_scope(const std::string& tag) {
        auto node = std::make_unique<ScopeStmt>(next().offset);
        if (tag == "block") {
            const std::string name = expect_type(TokenType::Name).value;
            skip_name("scoped");
            skip_name("required");
            node->body = parse_statements({name_needle("endblock")}, true);
            if (at(TokenType::Name) && current().value == name) next();
        } else if (tag == "autoescape") {
            parse_expression(true);
            node->body = parse_statements({name_needle("endautoescape")}, true);
        } else {
            node->body = parse_statements({name_needle("endgeneration")}, true);
        }
        return node;
    }

    StmtPtr parse_for() {
        auto node = std::make_unique<ForStmt>(next().offset);
        const std::vector<Needle> in_rule = {name_needle("in")};
        node->target = parse_assign_target(true, false, &in_rule, false);
        expect(name_needle("in"));
        const std::vector<Needle> recursive_rule = {name_needle("recursive")};
        node->iterable = parse_tuple(false, false, &recursive_rule, false);
        if (skip_name("if")) node->filter = parse_expression(true);
        node->recursive = skip_name("recursive");
        ++loop_depth_;
        node->body = parse_statements({name_needle("endfor"), name_needle("else")}, false);
        --loop_depth_;
        if (next().value != "endfor") node->otherwise = parse_statements({name_needle("endfor")}, true);
        return node;
    }

    StmtPtr parse_if() {
        auto node = std::make_unique<IfStmt>(next().offset);
        while (true) {
            ExprPtr test = parse_tuple(false, false, nullptr, false);
            Body body = parse_statements({name_needle("elif"), name_needle("else"), name_needle("endif")}, false);
            node->branches.emplace_back(std::move(test), std::move(body));
            const Token& token = next();
            if (token.value == "elif") continue;
            if (token.value == "else") node->otherwise = parse_statements({name_needle("endif")}, true);
            break;
        }
        return node;
    }

    StmtPtr parse_set() {
        const size_t offset = next().offset;
        Target target = parse_assign_target(true, false, nullptr, true);
        if (skip_op("=")) {
            auto node = std::make_unique<SetStmt>(offset);
            node->target = std::move(target);
            node->value = parse_tuple(false, true, nullptr, false);
            return node;
        }
        auto node = std::make_unique<SetBlockStmt>(offset);
        node->target = std::move(target);
        node->filter = parse_filter(nullptr, false);
        node->body = parse_statements({name_needle("endset")}, true);
        return node;
    }

    StmtPtr parse_with() {
        auto node = std::make_unique<WithStmt>(next().offset);
        while (!at(TokenType::BlockEnd)) {
            if (!node->targets.empty()) expect_op(",");
            node->targets.push_back(parse_assign_target(true, false, nullptr, false));
            expect_op("=");
            node->values.push_back(parse_expression(true));
        }
        node->body = parse_statements({name_needle("endwith")}, true);
        return node;
    }

    void parse_signature(MacroDef& macro) {
        expect_op("(");
        while (!at_op(")")) {
            if (!macro.params.empty()) expect_op(",");
            Target param = parse_assign_target(true, true, nullptr, false);
            if (skip_op("=")) {
                macro.defaults.push_back(parse_expression(true));
            } else if (!macro.defaults.empty()) {
                fail("non-default argument follows default argument");
            }
            macro.params.push_back(param.name);
        }
        expect_op(")");
    }

    StmtPtr parse_macro() {
        auto node = std::make_unique<MacroStmt>(next().offset);
        node->macro->name = parse_assign_target(true, true, nullptr, false).name;
        parse_signature(*node->macro);
        const int saved_depth = loop_depth_;
        loop_depth_ = 0;
        node->macro->body = parse_statements({name_needle("endmacro")}, true);
        loop_depth_ = saved_depth;
        note_special_names(*node->macro);
        return node;
    }

    StmtPtr parse_call_block() {
        auto node = std::make_unique<CallBlockStmt>(next().offset);
        node->caller->name = "caller";
        if (at_op("(")) parse_signature(*node->caller);
        const size_t offset = current().offset;
        ExprPtr call = parse_expression(true);
        if (call->kind != ExprKind::Call) fail_at("expected call", offset);
        node->call.reset(static_cast<CallExpr*>(call.release()));
        const int saved_depth = loop_depth_;
        loop_depth_ = 0;
        node->caller->body = parse_statements({name_needle("endcall")}, true);
        loop_depth_ = saved_depth;
        note_special_names(*node->caller);
        return node;
    }

    StmtPtr parse_filter_block() {
        auto node = std::make_unique<FilterBlockStmt>(next().offset);
        node->filter = parse_filter(nullptr, true);
        node->body = parse_statements({name_needle("endfilter")}, true);
        return node;
    }

    void parse_print(Body& out) {
        next();
        bool first = true;
        while (!at(TokenType::BlockEnd)) {
            if (!first) expect_op(",");
            first = false;
            const size_t offset = current().offset;
            out.push_back(std::make_unique<OutputStmt>(parse_expression(true), offset));
        }
    }

    Target parse_assign_target(bool with_tuple, bool name_only, const std::vector<Needle>* extra_end_rules,
                               bool with_namespace) {
        const size_t offset = current().offset;
        if (with_namespace && look().type == TokenType::Operator && look().value == ".") {
            Target target;
            target.kind = Target::Kind::NamespaceAttr;
            target.offset = offset;
            target.name = expect_type(TokenType::Name).value;
            next();  // the dot
            target.attr = expect_type(TokenType::Name).value;
            return target;
        }
        if (name_only) {
            Target target;
            target.offset = offset;
            target.name = expect_type(TokenType::Name).value;
            return target;
        }
        ExprPtr expr = with_tuple ? parse_tuple(true, true, extra_end_rules, false) : parse_primary();
        return to_target(*expr);
    }

    Target to_target(const Expr& expr) const {
        Target target;
        target.offset = expr.offset;
        if (expr.kind == ExprKind::Name) {
            target.name = static_cast<const NameExpr&>(expr).name;
            return target;
        }
        if (expr.kind == ExprKind::List && static_cast<const ListExpr&>(expr).tuple) {
            target.kind = Target::Kind::Tuple;
            for (const ExprPtr& item : static_cast<const ListExpr&>(expr).items) target.items.push_back(to_target(*item));
            return target;
        }
        const char* what = expr.kind == ExprKind::Const ? "const" : expr.kind == ExprKind::List ? "list" : "expression";
        fail_at(std::string("can't assign to '") + what + "'", expr.offset);
    }

    // ---- expressions ----

    ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

    ExprPtr parse_condexpr() {
        ExprPtr expr = parse_or();
        while (at_name("if")) {
            auto cond = std::make_unique<CondExpr>(next().offset);
            cond->test = parse_or();
            if (skip_name("else")) cond->otherwise = parse_condexpr();
            cond->then = std::move(expr);
            expr = std::move(cond);
        }
        return expr;
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (at_name("or")) {
            const size_t offset = next().offset;
            left = std::make_unique<BinaryExpr>(BinaryOp::Or, std::move(left), parse_and(), offset);
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (at_name("and")) {
            const size_t offset = next().offset;
            left = std::make_unique<BinaryExpr>(BinaryOp::And, std::move(left), parse_not(), offset);
        }
        return left;
    }

    ExprPtr parse_not() {
        if (at_name("not")) {
            const size_t offset = next().offset;
            return std::make_unique<UnaryExpr>(UnaryOp::Not, parse_not(), offset);
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        const size_t offset = current().offset;
        ExprPtr expr = parse_math1();
        std::unique_ptr<CompareExpr> compare;
        while (true) {
            CompareOp op;
            if (at_op("==")) op = CompareOp::Eq;
            else if (at_op("!=")) op = CompareOp::Ne;
            else if (at_op("<")) op = CompareOp::Lt;
            else if (at_op("<=")) op = CompareOp::Le;
            else if (at_op(">")) op = CompareOp::Gt;
            else if (at_op(">=")) op = CompareOp::Ge;
            else if (at_name("in")) op = CompareOp::In;
            else if (at_name("not") && look().type == TokenType::Name && look().value == "in") {
                next();
                op = CompareOp::NotIn;
            } else {
                break;
            }
            next();
            if (!compare) compare = std::make_unique<CompareExpr>(std::move(expr), offset);
            compare->rest.emplace_back(op, parse_math1());
        }
        if (compare) return compare;
        return expr;
    }

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (at_op("+") || at_op("-")) {
            const BinaryOp op = current().value == "+" ? BinaryOp::Add : BinaryOp::Sub;
            const size_t offset = next().offset;
            left = std::make_unique<BinaryExpr>(op, std::move(left), parse_concat(), offset);
        }
        return left;
    }

    ExprPtr parse_concat() {
        const size_t offset = current().offset;
        ExprPtr first = parse_math2();
        if (!at_op("~")) return first;
        auto concat = std::make_unique<ConcatExpr>(offset);
        concat->parts.push_back(std::move(first));
        while (skip_op("~")) concat->parts.push_back(parse_math2());
        return concat;
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
            const std::string& v = current().value;
            const BinaryOp op = v == "*" ? BinaryOp::Mul : v == "/" ? BinaryOp::Div : v == "//" ? BinaryOp::FloorDiv : BinaryOp::Mod;
            const size_t offset = next().offset;
            left = std::make_unique<BinaryExpr>(op, std::move(left), parse_pow(), offset);
        }
        return left;
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (at_op("**")) {
            const size_t offset = next().offset;
            left = std::make_unique<BinaryExpr>(BinaryOp::Pow, std::move(left), parse_unary(true), offset);
        }
        return left;
    }

    // Bounds the recursion of the parser (and so of the renderer) on hostile input.
    struct DepthGuard {
        Parser& parser;
        explicit DepthGuard(Parser& p) : parser(p) {
            if (++parser.depth_ > kMaxNesting)
                parser.fail("the template nests too deeply (more than " + std::to_string(kMaxNesting) + " levels)");
        }
        ~DepthGuard() { --parser.depth_; }
    };

    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this);
        ExprPtr node;
        if (at_op("-") || at_op("+")) {
            const UnaryOp op = current().value == "-" ? UnaryOp::Neg : UnaryOp::Pos;
            const size_t offset = next().offset;
            node = std::make_unique<UnaryExpr>(op, parse_unary(false), offset);
        } else {
            node = parse_primary();
        }
        node = parse_postfix(std::move(node));
        if (with_filter) node = parse_filter_expr(std::move(node));
        return node;
    }

    ExprPtr parse_primary() {
        const Token& token = current();
        const size_t offset = token.offset;
        switch (token.type) {
            case TokenType::Name: {
                const std::string& v = token.value;
                ExprPtr node;
                if (v == "true" || v == "True") node = std::make_unique<ConstExpr>(Value::boolean(true), offset);
                else if (v == "false" || v == "False") node = std::make_unique<ConstExpr>(Value::boolean(false), offset);
                else if (v == "none" || v == "None") node = std::make_unique<ConstExpr>(Value::none(), offset);
                else node = std::make_unique<NameExpr>(v, offset);
                next();
                return node;
            }
            case TokenType::String: {
                std::string s;
                while (at(TokenType::String)) s += next().value;
                return std::make_unique<ConstExpr>(Value::string(std::move(s)), offset);
            }
            case TokenType::Integer: return std::make_unique<ConstExpr>(Value::integer(next().int_value), offset);
            case TokenType::Float: return std::make_unique<ConstExpr>(Value::number(next().float_value), offset);
            case TokenType::Operator:
                if (token.value == "(") {
                    next();
                    ExprPtr node = parse_tuple(false, true, nullptr, true);
                    expect_op(")");
                    return node;
                }
                if (token.value == "[") return parse_list();
                if (token.value == "{") return parse_dict();
                break;
            default: break;
        }
        fail("unexpected " + quote_name(describe(token)));
    }

    bool is_tuple_end(const std::vector<Needle>* extra_end_rules) const {
        if (at(TokenType::VariableEnd) || at(TokenType::BlockEnd) || at_op(")")) return true;
        if (extra_end_rules)
            return std::any_of(extra_end_rules->begin(), extra_end_rules->end(),
                               [&](const Needle& n) { return test(current(), n); });
        return false;
    }

    ExprPtr parse_tuple(bool simplified, bool with_condexpr, const std::vector<Needle>* extra_end_rules,
                        bool explicit_parentheses) {
        const size_t offset = current().offset;
        std::vector<ExprPtr> args;
        bool is_tuple = false;
        while (true) {
            if (!args.empty()) expect_op(",");
            if (is_tuple_end(extra_end_rules)) break;
            args.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
            if (at_op(",")) {
                is_tuple = true;
            } else {
                break;
            }
        }
        if (!is_tuple) {
            if (!args.empty()) return std::move(args[0]);
            if (!explicit_parentheses) fail("Expected an expression, got " + quote_name(describe(current())));
        }
        auto tuple = std::make_unique<ListExpr>(true, offset);
        tuple->items = std::move(args);
        return tuple;
    }

    ExprPtr parse_list() {
        auto node = std::make_unique<ListExpr>(false, expect_op("[").offset);
        while (!at_op("]")) {
            if (!node->items.empty()) expect_op(",");
            if (at_op("]")) break;
            node->items.push_back(parse_expression(true));
        }
        expect_op("]");
        return node;
    }

    ExprPtr parse_dict() {
        auto node = std::make_unique<DictExpr>(expect_op("{").offset);
        while (!at_op("}")) {
            if (!node->items.empty()) expect_op(",");
            if (at_op("}")) break;
            ExprPtr key = parse_expression(true);
            expect_op(":");
            ExprPtr value = parse_expression(true);
            node->items.emplace_back(std::move(key), std::move(value));
        }
        expect_op("}");
        return node;
    }

    ExprPtr parse_postfix(ExprPtr node) {
        while (true) {
            if (at_op(".") || at_op("[")) {
                node = parse_subscript(std::move(node));
            } else if (at_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
        while (true) {
            if (at_op("|")) {
                node = parse_filter(std::move(node), false);
            } else if (at_name("is")) {
                node = parse_test(std::move(node));
            } else if (at_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr node) {
        const Token& token = next();
        const size_t offset = token.offset;
        if (token.value == ".") {
            const Token& attr = current();
            if (attr.type == TokenType::Name) {
                next();
                return std::make_unique<GetattrExpr>(std::move(node), attr.value, offset);
            }
            if (attr.type != TokenType::Integer) fail("expected name or number");
            next();
            return std::make_unique<GetitemExpr>(std::move(node),
                                                 std::make_unique<ConstExpr>(Value::integer(attr.int_value), attr.offset),
                                                 offset);
        }
        std::vector<ExprPtr> args;
        while (!at_op("]")) {
            if (!args.empty()) expect_op(",");
            args.push_back(parse_subscribed());
        }
        expect_op("]");
        ExprPtr key;
        if (args.size() == 1) {
            key = std::move(args[0]);
        } else {
            auto tuple = std::make_unique<ListExpr>(true, offset);
            tuple->items = std::move(args);
            key = std::move(tuple);
        }
        return std::make_unique<GetitemExpr>(std::move(node), std::move(key), offset);
    }

    ExprPtr parse_subscribed() {
        const size_t offset = current().offset;
        std::vector<ExprPtr> parts;
        if (at_op(":")) {
            next();
            parts.push_back(nullptr);
        } else {
            ExprPtr node = parse_expression(true);
            if (!at_op(":")) return node;
            next();
            parts.push_back(std::move(node));
        }
        if (at_op(":")) {
            parts.push_back(nullptr);
        } else if (!at_op("]") && !at_op(",")) {
            parts.push_back(parse_expression(true));
        } else {
            parts.push_back(nullptr);
        }
        if (at_op(":")) {
            next();
            if (!at_op("]") && !at_op(",")) parts.push_back(parse_expression(true));
            else parts.push_back(nullptr);
        } else {
            parts.push_back(nullptr);
        }
        auto slice = std::make_unique<SliceExpr>(offset);
        slice->start = std::move(parts[0]);
        slice->stop = std::move(parts[1]);
        slice->step = std::move(parts[2]);
        return slice;
    }

    CallArguments parse_call_args() {
        const Token& open = expect_op("(");
        CallArguments args;
        bool require_comma = false;
        const auto ensure = [&](bool ok) {
            if (!ok) fail_at("invalid syntax for function call expression", open.offset);
        };
        while (!at_op(")")) {
            if (require_comma) {
                expect_op(",");
                if (at_op(")")) break;
            }
            if (at_op("*")) {
                ensure(!args.star_args && !args.star_kwargs);
                next();
                args.star_args = parse_expression(true);
            } else if (at_op("**")) {
                ensure(!args.star_kwargs);
                next();
                args.star_kwargs = parse_expression(true);
            } else if (at(TokenType::Name) && look().type == TokenType::Operator && look().value == "=") {
                ensure(!args.star_kwargs);
                std::string key = next().value;
                next();
                args.keyword.emplace_back(std::move(key), parse_expression(true));
            } else {
                ensure(!args.star_args && !args.star_kwargs && args.keyword.empty());
                args.positional.push_back(parse_expression(true));
            }
            require_comma = true;
        }
        expect_op(")");
        return args;
    }

    ExprPtr parse_call(ExprPtr node) {
        const size_t offset = node->offset;
        auto call = std::make_unique<CallExpr>(std::move(node), offset);
        call->args = parse_call_args();
        return call;
    }

    std::string dotted_name() {
        std::string name = expect_type(TokenType::Name).value;
        while (at_op(".")) {
            next();
            name += "." + expect_type(TokenType::Name).value;
        }
        return name;
    }

    ExprPtr parse_filter(ExprPtr node, bool start_inline) {
        while (at_op("|") || start_inline) {
            if (!start_inline) next();
            const size_t offset = current().offset;
            std::string name = dotted_name();
            if (!has_filter(name)) fail_at("No filter named " + quote_name(name) + ".", offset);
            auto filter = std::make_unique<FilterExpr>(std::move(node), std::move(name), offset);
            if (at_op("(")) filter->args = parse_call_args();
            node = std::move(filter);
            start_inline = false;
        }
        return node;
    }

    ExprPtr parse_test(ExprPtr node) {
        const size_t offset = next().offset;
        const bool negated = skip_name("not");
        const size_t name_offset = current().offset;
        std::string name = dotted_name();
        if (!has_test(name)) fail_at("No test named " + quote_name(name) + ".", name_offset);
        auto test_node = std::make_unique<TestExpr>(std::move(node), std::move(name), offset);
        const Token& token = current();
        if (at_op("(")) {
            test_node->args = parse_call_args();
        } else if ((token.type == TokenType::Name || token.type == TokenType::String || token.type == TokenType::Integer ||
                    token.type == TokenType::Float || at_op("[") || at_op("{")) &&
                   !at_name("else") && !at_name("or") && !at_name("and")) {
            if (at_name("is")) fail("You cannot chain multiple tests with is");
            ExprPtr arg = parse_postfix(parse_primary());
            test_node->args.positional.push_back(std::move(arg));
        }
        if (negated) return std::make_unique<UnaryExpr>(UnaryOp::Not, std::move(test_node), offset);
        return test_node;
    }

    // Marks which of varargs/kwargs/caller a macro body refers to (jinja2 decides the same way
    // whether a macro accepts extra arguments).
    static void note_special_names(MacroDef& macro) {
        std::function<void(const Expr*)> visit_expr;
        std::function<void(const Body&)> visit_body;
        const auto visit_args = [&](const CallArguments& args) {
            for (const auto& e : args.positional) visit_expr(e.get());
            for (const auto& kv : args.keyword) visit_expr(kv.second.get());
            visit_expr(args.star_args.get());
            visit_expr(args.star_kwargs.get());
        };
        visit_expr = [&](const Expr* e) {
            if (!e) return;
            switch (e->kind) {
                case ExprKind::Name: {
                    const std::string& n = static_cast<const NameExpr*>(e)->name;
                    if (n == "varargs") macro.uses_varargs = true;
                    if (n == "kwargs") macro.uses_kwargs = true;
                    if (n == "caller") macro.uses_caller = true;
                    break;
                }
                case ExprKind::List:
                    for (const auto& item : static_cast<const ListExpr*>(e)->items) visit_expr(item.get());
                    break;
                case ExprKind::Dict:
                    for (const auto& kv : static_cast<const DictExpr*>(e)->items) {
                        visit_expr(kv.first.get());
                        visit_expr(kv.second.get());
                    }
                    break;
                case ExprKind::Getattr: visit_expr(static_cast<const GetattrExpr*>(e)->object.get()); break;
                case ExprKind::Getitem:
                    visit_expr(static_cast<const GetitemExpr*>(e)->object.get());
                    visit_expr(static_cast<const GetitemExpr*>(e)->key.get());
                    break;
                case ExprKind::Slice: {
                    const auto* s = static_cast<const SliceExpr*>(e);
                    visit_expr(s->start.get());
                    visit_expr(s->stop.get());
                    visit_expr(s->step.get());
                    break;
                }
                case ExprKind::Call:
                    visit_expr(static_cast<const CallExpr*>(e)->callee.get());
                    visit_args(static_cast<const CallExpr*>(e)->args);
                    break;
                case ExprKind::Filter:
                    visit_expr(static_cast<const FilterExpr*>(e)->value.get());
                    visit_args(static_cast<const FilterExpr*>(e)->args);
                    break;
                case ExprKind::Test:
                    visit_expr(static_cast<const TestExpr*>(e)->value.get());
                    visit_args(static_cast<const TestExpr*>(e)->args);
                    break;
                case ExprKind::Unary: visit_expr(static_cast<const UnaryExpr*>(e)->operand.get()); break;
                case ExprKind::Binary:
                    visit_expr(static_cast<const BinaryExpr*>(e)->left.get());
                    visit_expr(static_cast<const BinaryExpr*>(e)->right.get());
                    break;
                case ExprKind::Compare:
                    visit_expr(static_cast<const CompareExpr*>(e)->first.get());
                    for (const auto& r : static_cast<const CompareExpr*>(e)->rest) visit_expr(r.second.get());
                    break;
                case ExprKind::Concat:
                    for (const auto& p : static_cast<const ConcatExpr*>(e)->parts) visit_expr(p.get());
                    break;
                case ExprKind::Cond: {
                    const auto* c = static_cast<const CondExpr*>(e);
                    visit_expr(c->test.get());
                    visit_expr(c->then.get());
                    visit_expr(c->otherwise.get());
                    break;
                }
                case ExprKind::Const: break;
            }
        };
        visit_body = [&](const Body& body) {
            for (const StmtPtr& s : body) {
                switch (s->kind) {
                    case StmtKind::Output: visit_expr(static_cast<const OutputStmt*>(s.get())->expr.get()); break;
                    case StmtKind::If: {
                        const auto* n = static_cast<const IfStmt*>(s.get());
                        for (const auto& [test, branch] : n->branches) {
                            visit_expr(test.get());
                            visit_body(branch);
                        }
                        visit_body(n->otherwise);
                        break;
                    }
                    case StmtKind::For: {
                        const auto* n = static_cast<const ForStmt*>(s.get());
                        visit_expr(n->iterable.get());
                        visit_expr(n->filter.get());
                        visit_body(n->body);
                        visit_body(n->otherwise);
                        break;
                    }
                    case StmtKind::Set: visit_expr(static_cast<const SetStmt*>(s.get())->value.get()); break;
                    case StmtKind::SetBlock: {
                        const auto* n = static_cast<const SetBlockStmt*>(s.get());
                        visit_expr(n->filter.get());
                        visit_body(n->body);
                        break;
                    }
                    case StmtKind::CallBlock: {
                        const auto* n = static_cast<const CallBlockStmt*>(s.get());
                        visit_expr(n->call.get());
                        break;
                    }
                    case StmtKind::FilterBlock: {
                        const auto* n = static_cast<const FilterBlockStmt*>(s.get());
                        visit_expr(n->filter.get());
                        visit_body(n->body);
                        break;
                    }
                    case StmtKind::With: {
                        const auto* n = static_cast<const WithStmt*>(s.get());
                        for (const auto& v : n->values) visit_expr(v.get());
                        visit_body(n->body);
                        break;
                    }
                    case StmtKind::Scope: visit_body(static_cast<const ScopeStmt*>(s.get())->body); break;
                    default: break;
                }
            }
        };
        visit_body(macro.body);
        for (const auto& d : macro.defaults) visit_expr(d.get());
    }

    static constexpr int kMaxNesting = 200;

    std::vector<Token> tokens_;
    size_t pos_ = 0;
    int depth_ = 0;
    std::vector<std::string> tag_stack_;
    std::vector<std::vector<Needle>> end_token_stack_;
    int loop_depth_ = 0;
};

}  // namespace

Body parse(std::vector<Token> tokens) { return Parser(std::move(tokens)).parse_template(); }

}  // namespace oxinfer::jinja
