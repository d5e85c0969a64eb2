#pragma once
// A small command-line parser: options declared per subcommand, "--name value", "--name=value",
// short aliases, repeated options, positionals, and a generated --help.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace oxinfer::cli {

struct OptionSpec {
    std::string name;        // "out" for --out
    std::string short_name;  // "o" for -o, or ""
    std::string value_name;  // "FILE"; empty for a flag
    std::string help;
};

class Args {
public:
    Args(std::string command, std::string usage, std::string description, std::vector<OptionSpec> options);

    // Throws oxinfer::Error("<command>", ...) on unknown options or missing values.
    void parse(const std::vector<std::string>& argv);

    bool help_requested() const { return help_; }
    std::string help() const;

    bool flag(const std::string& name) const;
    std::optional<std::string> value(const std::string& name) const;
    std::vector<std::string> values(const std::string& name) const;
    std::string required(const std::string& name) const;
    const std::vector<std::string>& positionals() const { return positionals_; }
    // The positional at `index`; throws naming `what` when it is missing.
    const std::string& positional(size_t index, const std::string& what) const;

private:
    const OptionSpec* lookup(const std::string& text) const;

    std::string command_, usage_, description_;
    std::vector<OptionSpec> options_;
    std::map<std::string, std::vector<std::string>> values_;
    std::vector<std::string> positionals_;
    bool help_ = false;
};

// Options every subcommand takes (threads, profiling); add them to a command's list.
std::vector<OptionSpec> common_options();

}  // namespace oxinfer::cli
