#pragma once
// Binding call arguments to a Python-style signature, for the built-in filters, tests and methods.

#include "chat/value.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace oxinfer::jinja {

class Arguments {
public:
    // `names` are the parameters after the filtered value / receiver, in order; positional
    // arguments fill them first, then keywords by name. Extra or unknown arguments raise TypeError.
    Arguments(const char* function, const CallArgs& args, std::initializer_list<const char*> names)
        : function_(function), names_(names), values_(names.size()), given_(names.size(), false) {
        if (args.positional.size() > names_.size())
            raise("TypeError", std::string(function_) + "() takes at most " + std::to_string(names_.size()) +
                                   " argument(s) (" + std::to_string(args.positional.size()) + " given)");
        for (size_t i = 0; i < args.positional.size(); ++i) {
            values_[i] = args.positional[i];
            given_[i] = true;
        }
        for (const auto& [key, value] : args.keyword) {
            size_t index = names_.size();
            for (size_t i = 0; i < names_.size(); ++i)
                if (key == names_[i]) index = i;
            if (index == names_.size())
                raise("TypeError", std::string(function_) + "() got an unexpected keyword argument '" + key + "'");
            if (given_[index])
                raise("TypeError", std::string(function_) + "() got multiple values for argument '" + key + "'");
            values_[index] = value;
            given_[index] = true;
        }
    }

    bool has(size_t i) const { return given_[i]; }
    // The argument, or `fallback` when it was not passed.
    const Value& get(size_t i, const Value& fallback) const { return given_[i] ? values_[i] : fallback; }
    const Value& get(size_t i) const {
        if (!given_[i])
            raise("TypeError", std::string(function_) + "() missing required argument: '" + names_[i] + "'");
        return values_[i];
    }
    bool flag(size_t i, bool fallback) const { return given_[i] ? values_[i].truthy() : fallback; }
    int64_t integer(size_t i, int64_t fallback) const {
        if (!given_[i] || values_[i].is_none()) return fallback;
        if (!values_[i].is_integral())
            raise("TypeError", std::string(function_) + "(): '" + values_[i].type_name() +
                                   "' object cannot be interpreted as an integer");
        return values_[i].as_int();
    }

private:
    const char* function_;
    std::vector<const char*> names_;
    std::vector<Value> values_;
    std::vector<bool> given_;
};

}  // namespace oxinfer::jinja
