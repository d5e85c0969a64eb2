#include "args.h"

#include <oxinfer/error.h>

namespace oxinfer::cli {

Args::Args(std::string command, std::string usage, std::string description, std::vector<OptionSpec> options)
    : command_(std::move(command)), usage_(std::move(usage)), description_(std::move(description)), options_(std::move(options)) {}

const OptionSpec* Args::lookup(const std::string& text) const {
    for (const OptionSpec& option : options_) {
        if (text == "--" + option.name) return &option;
        if (!option.short_name.empty() && text == "-" + option.short_name) return &option;
    }
    return nullptr;
}

void Args::parse(const std::vector<std::string>& argv) {
    bool only_positionals = false;
    for (size_t i = 0; i < argv.size(); ++i) {
        std::string text = argv[i];
        if (only_positionals || text.size() < 2 || text[0] != '-' || (text[1] >= '0' && text[1] <= '9')) {
            positionals_.push_back(text);
            continue;
        }
        if (text == "--") {
            only_positionals = true;
            continue;
        }
        if (text == "--help" || text == "-h") {
            help_ = true;
            continue;
        }
        std::optional<std::string> inline_value;
        if (const auto equals = text.find('='); text.rfind("--", 0) == 0 && equals != std::string::npos) {
            inline_value = text.substr(equals + 1);
            text = text.substr(0, equals);
        }
        const OptionSpec* option = lookup(text);
        if (!option) throw Error(command_, "unknown option '" + text + "' (see oxinfer " + command_ + " --help)");
        if (option->value_name.empty()) {
            if (inline_value) throw Error(command_, "option '" + text + "' takes no value");
            values_[option->name].push_back("");
            continue;
        }
        if (!inline_value) {
            if (i + 1 >= argv.size()) throw Error(command_, "option '" + text + "' needs a value (" + option->value_name + ")");
            inline_value = argv[++i];
        }
        values_[option->name].push_back(*inline_value);
    }
}

std::string Args::help() const {
    std::string out = "usage: oxinfer " + command_ + " " + usage_ + "\n\n" + description_ + "\n\noptions:\n";
    for (const OptionSpec& option : options_) {
        std::string left = "  ";
        left += option.short_name.empty() ? "    " : "-" + option.short_name + ", ";
        left += "--" + option.name;
        if (!option.value_name.empty()) left += " " + option.value_name;
        if (left.size() < 30) left.append(30 - left.size(), ' ');
        else left += "  ";
        out += left + option.help + "\n";
    }
    out += "  -h, --help                  show this help\n";
    return out;
}

bool Args::flag(const std::string& name) const { return values_.count(name) > 0; }

std::optional<std::string> Args::value(const std::string& name) const {
    const auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    return it->second.back();
}

std::vector<std::string> Args::values(const std::string& name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::required(const std::string& name) const {
    auto found = value(name);
    if (!found) throw Error(command_, "missing --" + name + " (see oxinfer " + command_ + " --help)");
    return *found;
}

const std::string& Args::positional(size_t index, const std::string& what) const {
    if (index >= positionals_.size()) throw Error(command_, "missing " + what + " (see oxinfer " + command_ + " --help)");
    return positionals_[index];
}

std::vector<OptionSpec> common_options() {
    return {
        {"threads", "t", "N", "worker threads (default: physical cores)"},
        {"profile", "", "", "print the time spent per category to stderr"},
    };
}

}  // namespace oxinfer::cli
