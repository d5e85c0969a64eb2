// Gemma 3 and Gemma 4 against tests/reference/gemma_reference.py: tiny random-weight models whose
// logits were computed with PyTorch from transformers' modeling_gemma3.py / modeling_gemma4.py, in
// float64 on the checkpoints' values. Sliding window 8 over a 700-token sequence, so the window
// is crossed everywhere and the engine's ring cache for sliding layers (window + 512 slots)
// wraps; Gemma 3 with (1 + w) norms, query_pre_attn_scalar and linear RoPE scaling on full layers;
// Gemma 4 with per-layer embeddings, KV sharing over the last 3 of 7 layers (with their unused
// k/v weights in the files), the double-wide MLP, layer scalars, proportional RoPE on full layers
// with their own head size, and final softcapping; a second Gemma 4 with attention_k_eq_v, and a
// third with the 26B-A4B's mixture of experts beside each MLP.
//
// Checked from the released layouts (language_model.model.* for Gemma 3, model.language_model.*
// for Gemma 4), text-only exports (model.*), BF16 safetensors and GGUF in llama.cpp's gemma3 /
// gemma4 layouts: prefills of 1, 7, 8, 9, 300, 520, 600 tokens and the whole sequence; the
// prompt decoded a token at a time; 32 greedy tokens. Tolerance 1e-4 max abs on logits up to ~10.

#include "logit_goldens.h"

#include "kernels/thread_pool.h"
#include "models/causal_lm.h"
#include "models/kv_cache.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/error.h>
#include <oxinfer/llm.h>
#include <oxinfer/model_config.h>
#include <oxinfer/npy.h>

#include <nlohmann/json.hpp>

#include <QObject>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kDir = fs::path(OXINFER_REFERENCE_DIR) / "gemma";
constexpr double kTolerance = 1e-4;
constexpr int64_t kWindow = 8;

using oxinfer::test::LogitGolden;

LogitGolden load_golden(const std::string& name, const std::string& variant) { return oxinfer::test::load_logit_golden(kDir / name, variant); }

}  // namespace

class GemmaReferenceTest : public QObject {
    Q_OBJECT

private slots:
    void matches_reference_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("source");   // hf, hf_text, bf16, f32.gguf
        QTest::addColumn<QString>("variant");  // f32, bf16
        for (const char* name : {"gemma3", "gemma4", "gemma4_keqv", "gemma4_moe"}) {
            const QString n(name);
            QTest::newRow(qPrintable(n + "/hf")) << n << "hf" << "f32";
            if (n == "gemma3" || n == "gemma4") QTest::newRow(qPrintable(n + "/hf_text")) << n << "hf_text" << "f32";
            QTest::newRow(qPrintable(n + "/bf16")) << n << "bf16" << "bf16";
            QTest::newRow(qPrintable(n + "/gguf")) << n << "f32.gguf" << "f32";
        }
    }

    void matches_reference() {
        QFETCH(QString, name);
        QFETCH(QString, source);
        QFETCH(QString, variant);
        const std::string case_name = name.toStdString(), src = source.toStdString();
        QTemporaryDir dir;
        fs::path path = kDir / case_name / src;
        if (src == "bf16")
            path = oxinfer::test::folder_with_weights(dir.path().toStdString(), kDir / case_name, "bf16.safetensors", "model.safetensors");
        const LogitGolden golden = load_golden(case_name, variant.toStdString());
        auto model = oxinfer::test::load_with_two_threads(path);
        const int64_t vocab = model->config().vocab_size;
        QCOMPARE(golden.logits.shape, (std::vector<int64_t>{static_cast<int64_t>(golden.sequence.size()), vocab}));

        // Prefills around the window and the prefill step of 512, and of the whole sequence (two
        // steps, the second one storing into the wrapped ring).
        for (size_t length : {size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{300}, size_t{520}, size_t{600}, golden.sequence.size()}) {
            oxinfer::Session session(*model);
            const double error = oxinfer::test::logits_error(session.evaluate(oxinfer::test::token_slice(golden.sequence, 0, length), true), golden, 0, length, vocab);
            qInfo("%s/%s: prefill of %zu tokens, max |diff| %.3g", qPrintable(name), qPrintable(source), length, error);
            QVERIFY2(error <= kTolerance, qPrintable(QString("prefill of %1 tokens differs by %2").arg(length).arg(error)));
        }

        // The prompt, then one token at a time.
        oxinfer::Session decode(*model);
        std::vector<float> step = decode.evaluate(golden.prompt);
        double decode_error = 0;
        for (size_t i = 0; i < golden.greedy.size(); ++i) {
            decode_error = std::max(decode_error, oxinfer::test::logits_error(step, golden, golden.prompt.size() - 1 + i, 1, vocab));
            if (i + 1 < golden.greedy.size()) step = decode.evaluate(std::vector<int32_t>{golden.greedy[i]});
        }
        qInfo("%s/%s: decode max |diff| %.3g", qPrintable(name), qPrintable(source), decode_error);
        QVERIFY2(decode_error <= kTolerance, qPrintable(QString("decoded logits differ by %1").arg(decode_error)));

        QVERIFY(golden.min_gap > 2 * kTolerance);
        oxinfer::Session session(*model);
        oxinfer::GenerateOptions generate;
        generate.max_tokens = static_cast<int64_t>(golden.greedy.size());
        generate.stop_at_model_stop_tokens = false;
        QCOMPARE(session.generate(golden.prompt, generate).tokens, golden.greedy);
    }

    // The sliding layers' ring holds window + 512 positions: the cache stays that size however long
    // the sequence, and going back works while the window before the new end is still in the ring
    // (else everything is evaluated again); the logits after going back are the reference's.
    void sliding_cache_is_bounded_and_rewinds() {
        const LogitGolden golden = load_golden("gemma4", "f32");
        auto model = oxinfer::test::load_with_two_threads(kDir / "gemma4" / "hf");
        const int64_t vocab = model->config().vocab_size;
        const size_t n = golden.sequence.size();
        oxinfer::Session session(*model);
        session.evaluate(oxinfer::test::token_slice(golden.sequence, 0, 600));
        const uint64_t at_600 = session.kv_cache_bytes();
        for (size_t i = 600; i < n; ++i) session.evaluate(oxinfer::test::token_slice(golden.sequence, i, i + 1));
        QCOMPARE(session.kv_cache_bytes(), at_600);  // the ring was full at 600 already

        const int64_t ring = kWindow + oxinfer::models::kMaxStoreTokens;
        // The window keys before it still held (kWindow of them: a draft model's query sees that many).
        const int64_t oldest_rewind = static_cast<int64_t>(n) - ring + kWindow;
        QCOMPARE(session.truncate(oldest_rewind), oldest_rewind);
        std::vector<float> rest = session.evaluate(oxinfer::test::token_slice(golden.sequence, static_cast<size_t>(oldest_rewind), n), true);
        QVERIFY(oxinfer::test::logits_error(rest, golden, static_cast<size_t>(oldest_rewind), n - static_cast<size_t>(oldest_rewind), vocab) <= kTolerance);
        QCOMPARE(session.truncate(oldest_rewind - 1), int64_t{0});  // one further back: overwritten
        QVERIFY(session.tokens().empty());
        rest = session.evaluate(oxinfer::test::token_slice(golden.sequence, 0, 20), true);
        QVERIFY(oxinfer::test::logits_error(rest, golden, 0, 20, vocab) <= kTolerance);

        // Regenerating an answer reuses the prompt.
        oxinfer::Session chat(*model);
        oxinfer::GenerateOptions options;
        options.max_tokens = 6;
        options.stop_at_model_stop_tokens = false;
        const auto first = chat.generate(golden.prompt, options);
        const auto again = chat.generate(golden.prompt, options);
        QCOMPARE(again.stats.reused_prompt_tokens, static_cast<int64_t>(golden.prompt.size() - 1));
        QCOMPARE(again.tokens, first.tokens);
        QCOMPARE(first.tokens, std::vector<int32_t>(golden.greedy.begin(), golden.greedy.begin() + 6));
    }

    // Gemma 4's assistant (trained by the reference on its model's greedy text): its drafts from
    // the model's caches and hidden states, at every position the speculative loop starts from and
    // a few more, equal the reference's (HF folder: top-centroid vocabulary; GGUF: the converter
    // drops the centroids, full vocabulary); generation with it gives the 32 greedy tokens of plain
    // decoding with exactly the reference's drafts and accepted drafts.
    void assistant_matches_reference_data() {
        QTest::addColumn<QString>("source");
        QTest::newRow("hf") << "hf";
        QTest::newRow("gguf") << "f32.gguf";
    }

    void assistant_matches_reference() {
        QFETCH(QString, source);
        const std::string src = source.toStdString();
        const fs::path main_path = kDir / "gemma4" / "hf", draft_path = kDir / "gemma4_assistant" / src;
        const LogitGolden golden = load_golden("gemma4", "f32");
        std::ifstream in(kDir / "gemma4" / "golden.json");
        const json expected = json::parse(in)["f32"]["assistant"][src == "hf" ? "hf" : "gguf"];
        QVERIFY(expected["min_draft_gap"].get<double>() > 2 * kTolerance);

        const auto checkpoint = oxinfer::Checkpoint::open(main_path);
        const auto draft_checkpoint = oxinfer::Checkpoint::open(draft_path);
        oxinfer::ThreadPool pool(2);
        auto lm = oxinfer::models::create_causal_lm(*checkpoint, oxinfer::read_transformer_config(*checkpoint), {}, pool);
        lm->attach_draft_model(*draft_checkpoint, oxinfer::read_transformer_config(*draft_checkpoint), {});
        oxinfer::models::DraftModel* drafter = lm->draft_model();
        QVERIFY(drafter);
        const int64_t vocab = lm->config().vocab_size, d = lm->config().hidden_size;
        std::vector<std::pair<int64_t, std::vector<int32_t>>> runs;
        for (size_t i = 0; i < expected["starts"].size(); ++i)
            runs.emplace_back(expected["starts"][i].get<int64_t>(), expected["drafts_from"][i].get<std::vector<int32_t>>());
        std::sort(runs.begin(), runs.end());
        // The sequence evaluated piece by piece up to each start; the draft reads the cache there.
        auto state = lm->new_state(oxinfer::DType::F32, 1024);
        std::vector<float> logits(static_cast<size_t>(vocab)), hidden;
        int mismatches = 0;
        for (const auto& [start, want] : runs) {
            const int64_t have = state->size();
            hidden.resize(static_cast<size_t>((start - have) * d));
            lm->forward(golden.sequence.data() + have, start - have, *state, logits.data(), false, hidden.data());
            std::vector<int32_t> drafts(want.size());
            drafter->draft(*state, hidden.data() + (start - have - 1) * d, golden.sequence[static_cast<size_t>(start)],
                           static_cast<int64_t>(want.size()), drafts.data());
            if (drafts != want) ++mismatches;
        }
        QCOMPARE(mismatches, 0);

        oxinfer::LoadOptions options;
        options.threads = 2;
        options.draft_model = draft_path.string();
        auto model = oxinfer::Model::load(main_path.string(), options);
        QVERIFY(model->has_draft_model());
        oxinfer::Session session(*model);
        oxinfer::GenerateOptions generate;
        generate.max_tokens = static_cast<int64_t>(golden.greedy.size());
        generate.stop_at_model_stop_tokens = false;
        generate.draft = true;
        const auto result = session.generate(golden.prompt, generate);
        QCOMPARE(result.tokens, golden.greedy);
        qInfo("%s: %lld drafts, %lld accepted", qPrintable(source), static_cast<long long>(result.stats.draft_tokens),
              static_cast<long long>(result.stats.accepted_draft_tokens));
        QCOMPARE(result.stats.draft_tokens, expected["drafts"].get<int64_t>());
        QCOMPARE(result.stats.accepted_draft_tokens, expected["accepted"].get<int64_t>());
        QVERIFY(result.stats.accepted_draft_tokens > 0 && result.stats.accepted_draft_tokens < result.stats.draft_tokens);
        std::vector<int32_t> expected_tokens = golden.prompt;
        expected_tokens.insert(expected_tokens.end(), golden.greedy.begin(), golden.greedy.end() - 1);
        QCOMPARE(session.tokens(), expected_tokens);

        // Near the end of the context drafting stops where plain decoding does.
        generate.max_tokens = 32;
        for (int64_t room = 2; room <= 6; ++room) {
            options.context_length = static_cast<int64_t>(golden.prompt.size()) + room;
            auto small = oxinfer::Model::load(main_path.string(), options);
            oxinfer::Session plain_session(*small), draft_session(*small);
            generate.draft = false;
            const auto plain = plain_session.generate(golden.prompt, generate);
            generate.draft = true;
            const auto drafted = draft_session.generate(golden.prompt, generate);
            QCOMPARE(drafted.stop, plain.stop);
            QCOMPARE(drafted.tokens, plain.tokens);
        }
    }

    // A drafter alone, or beside a model it was not made for, is a clear error.
    void assistant_errors() {
        const fs::path assistant = kDir / "gemma4_assistant" / "hf";
        try {
            oxinfer::test::load_with_two_threads(assistant);
            QFAIL("an assistant loaded as a model");
        } catch (const oxinfer::Error& e) {
            QVERIFY2(std::string(e.what()).find("draft model") != std::string::npos, e.what());
        }
        oxinfer::LoadOptions options;
        options.draft_model = assistant.string();
        for (const char* other : {"gemma3", "gemma4_keqv"}) {
            try {
                oxinfer::Model::load((kDir / other / "hf").string(), options);
                QFAIL("an assistant attached to another model");
            } catch (const oxinfer::Error& e) {
                qInfo("%s: %s", other, e.what());
            }
        }
    }
};

QTEST_GUILESS_MAIN(GemmaReferenceTest)
#include "test_gemma_reference.moc"
