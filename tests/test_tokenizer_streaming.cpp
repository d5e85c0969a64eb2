// Streaming detokenization (StreamingDecoder) on every golden input of every test tokenizer:
// chunks are valid UTF-8 and add up to decode(); characters split over byte tokens are held back.

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

class TokenizerStreamingTest : public QObject {
    Q_OBJECT

    TokenizerCache tokenizers_;
    const Tokenizer& load(const std::string& name) { return tokenizers_.load(name); }

private slots:
    void initTestCase() {
        const std::string missing = missing_test_data();
        if (!missing.empty()) QFAIL(missing.c_str());
    }

    void streaming_data() {
        add_tokenizer_rows();
    }

    // Token-by-token decoding adds up to the full decode and never emits broken UTF-8.
    void streaming() {
        QFETCH(QString, name);
        const Tokenizer& tokenizer = load(name.toStdString());
        const json reference = golden(name.toStdString());
        for (const json& item : reference.at("cases")) {
            const auto ids = item.at("ids").get<std::vector<int32_t>>();
            if (ids.size() > 600) continue;  // the 10,000-character word: quadratic in a naive check, covered below
            for (bool skip : {false, true}) {
                const std::string problem = stream_check(tokenizer, ids, skip, tokenizer.decode(ids, skip));
                if (!problem.empty()) QFAIL(qPrintable(QString::fromStdString(name.toStdString() + " \"" + shorten(item.at("input")) + "\": " + problem)));
            }
        }
        for (const json& item : reference.at("decodes")) {
            const auto ids = item.at("ids").get<std::vector<int32_t>>();
            const std::string problem = stream_check(tokenizer, ids, false, tokenizer.decode(ids, false));
            if (!problem.empty()) QFAIL(qPrintable(QString::fromStdString(name.toStdString() + " decode case: " + problem)));
        }
    }

    // Characters split over byte tokens are held back until complete; no stray leading space.
    void streaming_holds_partial_characters() {
        const Tokenizer& gemma = load("gemma3");
        const auto ids = gemma.encode("\xF0\x9F\xA6\x99 \xE4\xBD\xA0\xE5\xA5\xBD world", false);  // emoji mostly byte-fallback
        oxinfer::StreamingDecoder stream(gemma);
        std::vector<std::string> chunks;
        for (int32_t id : ids) chunks.push_back(stream.feed(id));
        chunks.push_back(stream.finish());
        std::string all;
        for (const std::string& chunk : chunks) {
            QVERIFY(oxinfer::tokenizer::is_valid_utf8(chunk));
            QVERIFY(chunk.find("\xEF\xBF\xBD") == std::string::npos);
            all += chunk;
        }
        QCOMPARE(all, gemma.decode(ids));

        const Tokenizer& albert = load("albert-unigram");  // Metaspace: the first word has no leading space
        oxinfer::StreamingDecoder words(albert, true);
        const auto albert_ids = albert.encode("Hello there world");
        std::string first;
        for (int32_t id : albert_ids)
            if (first.empty()) first = words.feed(id);
        QVERIFY(!first.empty());
        QVERIFY(first[0] != ' ');
    }

    void long_inputs_stream_linearly() {
        const Tokenizer& qwen = load("qwen3");
        std::string text;
        for (int i = 0; i < 2000; ++i) text += "Streaming text, token by token: \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x91\x8B ";
        const auto ids = qwen.encode(text);
        oxinfer::StreamingDecoder stream(qwen);
        std::string all;
        for (int32_t id : ids) all += stream.feed(id);
        all += stream.finish();
        QCOMPARE(all, text);
    }
};

QTEST_APPLESS_MAIN(TokenizerStreamingTest)
#include "test_tokenizer_streaming.moc"
