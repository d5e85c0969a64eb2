#pragma once
// jinja2's built-in filters and tests, the Python methods of str/list/dict that templates call,
// and Python's string formatting (`%` and str.format). Semantics follow jinja2 3.1 running in
// transformers' ImmutableSandboxedEnvironment (methods that modify lists or dicts are unsafe).

#include "chat/value.h"

#include <string>
#include <string_view>

namespace oxinfer::jinja {

bool has_filter(std::string_view name);
bool has_test(std::string_view name);
Value apply_filter(Interpreter& interpreter, const std::string& name, const Value& value, CallArgs& args);
bool apply_test(Interpreter& interpreter, const std::string& name, const Value& value, CallArgs& args);

// Attribute lookup for built-in types: a bound method for `"abc".upper`, an unsafe Undefined for
// methods that would modify a value (`list.append`), or false when there is no such attribute.
bool builtin_attribute(const Value& receiver, const std::string& name, Value& out);

// Python's `format % args` and `format.format(*args, **kwargs)`.
std::string percent_format(const std::string& format, const Value& args);
std::string str_format(Interpreter& interpreter, const std::string& format, const CallArgs& args);

}  // namespace oxinfer::jinja
