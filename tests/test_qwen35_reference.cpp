// Qwen3.5 against tests/reference/qwen35_reference.py: tiny random-weight Qwen3.5 models (three
// Gated DeltaNet layers and one gated-attention layer, 4 value heads over 2 key heads, dk 16 != dv
// 8, partial rotary; dense; MoE with a shared expert and fused gate_up_proj; Qwen3-Next with its
// fused, head-grouped qkvz/ba projections, per-expert tensors and no top-k renormalisation) whose logits were computed with PyTorch from transformers' modeling_qwen3_5.py,
// in float64 on the checkpoint's values: the chunked delta rule for prefills, the recurrent one for
// single tokens, as transformers switches between them (the script checks that both agree).
//
// Checked from the released layout (model.language_model.*), the text-only export (model.*), BF16
// safetensors and GGUF in llama.cpp's qwen35 / qwen35moe / qwen3next layouts (Qwen3.5's value heads
// tiled, norms stored as 1 + w): prompts of 1, 63, 64, 65 and 130 tokens (the delta rule's chunk is 64) and the
// whole 161-token sequence in one prefill; the 130-token prompt then decoded a token at a time;
// 32 free-running greedy tokens. Tolerance 1e-4 max abs on logits of magnitude up to ~12. The
// engine computes in float32: measured up to 7.4e-5 (f32) and 6.4e-5 (bf16), where the same
// reference run in float32, as transformers runs, strays 8.0e-5 from the float64 goldens.
//
// The DeltaNet state cannot be rolled back token by token, so the session state keeps snapshots
// (before each prompt's last token); multi-turn reuse and truncation are checked against the
// goldens, which a full recompute equals.

#include "logit_goldens.h"

#include "kernels/thread_pool.h"
#include "models/causal_lm.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/llm.h>
#include <oxinfer/model_config.h>
#include <oxinfer/npy.h>

#include <nlohmann/json.hpp>

#include <QObject>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kDir = fs::path(OXINFER_REFERENCE_DIR) / "qwen35";
constexpr double kTolerance = 1e-4;

using oxinfer::test::LogitGolden;

LogitGolden load_golden(const std::string& name, const std::string& variant) { return oxinfer::test::load_logit_golden(kDir / name, variant); }

}  // namespace

class Qwen35ReferenceTest : public QObject {
    Q_OBJECT

private slots:
    void matches_reference_data() {
        QTest::addColumn<QString>("name");     // qwen3_5, qwen3_5_moe, qwen3_next
        QTest::addColumn<QString>("source");   // hf, hf_text, bf16, f32.gguf
        QTest::addColumn<QString>("variant");  // f32, bf16
        for (const char* name : {"qwen3_5", "qwen3_5_moe", "qwen3_next"}) {
            const QString n(name);
            QTest::newRow(qPrintable(n + "/hf")) << n << "hf" << "f32";
            if (n != "qwen3_next") QTest::newRow(qPrintable(n + "/hf_text")) << n << "hf_text" << "f32";
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

        // Prefills of several lengths around the chunk of 64, and of the whole sequence.
        for (size_t length : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{130}, golden.sequence.size()}) {
            oxinfer::Session session(*model);
            const double error = oxinfer::test::logits_error(session.evaluate(oxinfer::test::token_slice(golden.sequence, 0, length), true), golden, 0, length, vocab);
            qInfo("%s/%s: prefill of %zu tokens, max |diff| %.3g", qPrintable(name), qPrintable(source), length, error);
            QVERIFY2(error <= kTolerance, qPrintable(QString("prefill of %1 tokens differs by %2").arg(length).arg(error)));
        }

        // The prompt, then one token at a time (the recurrent form of the delta rule).
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

    // A second turn continues the first one's states: its prefill starts from the conv and
    // recurrent states (and KV cache) left by the first, and gives the full recompute's logits.
    void second_turn_continues_the_states() {
        const LogitGolden golden = load_golden("qwen3_5", "f32");
        auto model = oxinfer::test::load_with_two_threads(kDir / "qwen3_5" / "hf");
        const int64_t vocab = model->config().vocab_size;
        for (size_t split : {size_t{1}, size_t{65}, size_t{100}}) {
            oxinfer::Session session(*model);
            session.evaluate(oxinfer::test::token_slice(golden.sequence, 0, split));
            const std::vector<float> rest = session.evaluate(oxinfer::test::token_slice(golden.sequence, split, golden.sequence.size()), true);
            const double error = oxinfer::test::logits_error(rest, golden, split, golden.sequence.size() - split, vocab);
            qInfo("turn split at %zu: max |diff| %.3g", split, error);
            QVERIFY(error <= kTolerance);
        }
    }

    // Going back: to a snapshot (taken before each prompt's last token) when there is one at or
    // before the point asked for, else to the start; either way the logits are the reference's.
    void truncation_goes_back_to_a_snapshot() {
        const LogitGolden golden = load_golden("qwen3_5", "f32");
        auto model = oxinfer::test::load_with_two_threads(kDir / "qwen3_5" / "hf");
        const int64_t vocab = model->config().vocab_size;
        oxinfer::Session session(*model);
        session.evaluate(oxinfer::test::token_slice(golden.sequence, 0, 100));      // snapshot at 99
        session.evaluate(oxinfer::test::token_slice(golden.sequence, 100, 140));    // snapshot at 139
        QCOMPARE(session.truncate(150), int64_t{140});         // nothing to drop
        QCOMPARE(session.truncate(120), int64_t{99});          // back to the first prompt's snapshot
        QCOMPARE(session.tokens(), std::vector<int32_t>(golden.sequence.begin(), golden.sequence.begin() + 99));
        std::vector<float> rest = session.evaluate(oxinfer::test::token_slice(golden.sequence, 99, golden.sequence.size()), true);
        QVERIFY(oxinfer::test::logits_error(rest, golden, 99, golden.sequence.size() - 99, vocab) <= kTolerance);
        QCOMPARE(session.truncate(50), int64_t{0});            // no snapshot at or before 50
        QVERIFY(session.tokens().empty());
        rest = session.evaluate(oxinfer::test::token_slice(golden.sequence, 0, 70), true);
        QVERIFY(oxinfer::test::logits_error(rest, golden, 0, 70, vocab) <= kTolerance);

        // Regenerating an answer resumes from the snapshot before the prompt's last token.
        oxinfer::Session chat(*model);
        oxinfer::GenerateOptions options;
        options.max_tokens = 6;
        options.stop_at_model_stop_tokens = false;
        const auto first = chat.generate(golden.prompt, options);
        const auto again = chat.generate(golden.prompt, options);
        QCOMPARE(again.stats.reused_prompt_tokens, static_cast<int64_t>(golden.prompt.size() - 1));
        QCOMPARE(again.tokens, first.tokens);
        QCOMPARE(first.tokens, std::vector<int32_t>(golden.greedy.begin(), golden.greedy.begin() + 6));

        // Inside a short evaluation (2 to 4 tokens, as a speculative verification) every position
        // can be returned to: the states after each of its tokens are kept.
        oxinfer::Session verify(*model);
        verify.evaluate(oxinfer::test::token_slice(golden.sequence, 0, 100));
        verify.evaluate(oxinfer::test::token_slice(golden.sequence, 100, 103));
        QCOMPARE(verify.truncate(101), int64_t{101});
        rest = verify.evaluate(oxinfer::test::token_slice(golden.sequence, 101, golden.sequence.size()), true);
        QVERIFY(oxinfer::test::logits_error(rest, golden, 101, golden.sequence.size() - 101, vocab) <= kTolerance);
    }

    // The MTP head (mtp.*, trained by the reference to agree with the model; nextn in GGUF) against
    // the reference: its logits at every position of the golden sequence, one position at a time
    // and all at once, from the engine's own hidden states; then generation with drafting gives the
    // same 32 greedy tokens as without, with exactly the reference's drafts and accepted drafts.
    void mtp_head_matches_reference_data() {
        QTest::addColumn<QString>("source");
        QTest::newRow("hf") << "hf";
        QTest::newRow("hf_text") << "hf_text";
        QTest::newRow("gguf") << "f32.gguf";
    }

    void mtp_head_matches_reference() {
        QFETCH(QString, source);
        const fs::path path = kDir / "qwen3_5" / source.toStdString();
        const LogitGolden golden = load_golden("qwen3_5", "f32");
        const oxinfer::NpyArray expected = oxinfer::read_npy_f32(kDir / "qwen3_5" / "f32_mtp_logits.npy");
        std::ifstream in(kDir / "qwen3_5" / "golden.json");
        const json mtp = json::parse(in)["f32"]["mtp"];

        const auto checkpoint = oxinfer::Checkpoint::open(path);
        const oxinfer::TransformerConfig config = oxinfer::read_transformer_config(*checkpoint);
        oxinfer::ThreadPool pool(2);
        auto lm = oxinfer::models::create_causal_lm(*checkpoint, config, {}, pool);
        oxinfer::models::DraftHead* head = lm->draft_head();
        QVERIFY(head);
        const int64_t vocab = config.vocab_size, d = config.hidden_size, n = static_cast<int64_t>(golden.sequence.size());
        QCOMPARE(expected.shape, (std::vector<int64_t>{n - 1, vocab}));
        auto state = lm->new_state(oxinfer::DType::F32, 512);
        std::vector<float> logits(static_cast<size_t>(n * vocab)), hidden(static_cast<size_t>(n * d));
        lm->forward(golden.sequence.data(), n, *state, logits.data(), true, hidden.data());

        auto draft = head->new_state(oxinfer::DType::F32, 512);
        std::vector<float> step(static_cast<size_t>(vocab));
        double error = 0;
        for (int64_t i = 0; i + 1 < n; ++i) {
            head->forward(hidden.data() + i * d, golden.sequence.data() + i + 1, 1, *draft, step.data());
            for (int64_t j = 0; j < vocab; ++j)
                error = std::max(error, std::fabs(double(step[j]) - expected.values[static_cast<size_t>(i * vocab + j)]));
        }
        auto batch = head->new_state(oxinfer::DType::F32, 512);
        head->forward(hidden.data(), golden.sequence.data() + 1, n - 1, *batch, step.data());
        for (int64_t j = 0; j < vocab; ++j)
            error = std::max(error, std::fabs(double(step[j]) - expected.values[static_cast<size_t>((n - 2) * vocab + j)]));
        // The head's input is the engine's own hidden state (float32, like the main logits within
        // ~5e-5 of the float64 reference) and its logits reach 18 where the model's reach 13: the
        // same rounding, scaled, gives up to ~1.2e-4; 2e-4 allows for it. A wrong weight, norm or
        // position moves them by whole units.
        qInfo("%s: MTP logits max |diff| %.3g", qPrintable(source), error);
        QVERIFY(error <= 2 * kTolerance);

        oxinfer::LoadOptions options;
        options.threads = 2;
        auto model = oxinfer::Model::load(path.string(), options);
        oxinfer::Session session(*model);
        oxinfer::GenerateOptions generate;
        generate.max_tokens = static_cast<int64_t>(golden.greedy.size());
        generate.stop_at_model_stop_tokens = false;
        generate.draft = true;
        const auto result = session.generate(golden.prompt, generate);
        QCOMPARE(result.tokens, golden.greedy);
        qInfo("%s: %lld drafts, %lld accepted", qPrintable(source), static_cast<long long>(result.stats.draft_tokens),
              static_cast<long long>(result.stats.accepted_draft_tokens));
        QVERIFY(mtp["min_draft_gap"].get<double>() > 2 * kTolerance);
        QCOMPARE(result.stats.draft_tokens, mtp["drafts"].get<int64_t>());
        QCOMPARE(result.stats.accepted_draft_tokens, mtp["accepted"].get<int64_t>());
        // The session holds what plain decoding leaves: the prompt and the tokens but the last.
        std::vector<int32_t> expected_tokens = golden.prompt;
        expected_tokens.insert(expected_tokens.end(), golden.greedy.begin(), golden.greedy.end() - 1);
        QCOMPARE(session.tokens(), expected_tokens);
        // A second turn drafts on from the cached states.
        std::vector<int32_t> second = expected_tokens;
        second.push_back(golden.greedy.back());
        generate.max_tokens = 4;
        const auto more = session.generate(second, generate);
        QCOMPARE(more.stats.reused_prompt_tokens, static_cast<int64_t>(second.size() - 1));
        QCOMPARE(more.tokens.size(), size_t{4});

        // At the end of the context drafting stops where plain decoding does, whether or not a
        // draft is pending there.
        generate.max_tokens = 32;
        for (int64_t room = 3; room <= 12; ++room) {
            options.context_length = static_cast<int64_t>(golden.prompt.size()) + room;
            auto small = oxinfer::Model::load(path.string(), options);
            oxinfer::Session plain_session(*small), draft_session(*small);
            generate.draft = false;
            const auto plain = plain_session.generate(golden.prompt, generate);
            generate.draft = true;
            const auto drafted = draft_session.generate(golden.prompt, generate);
            QCOMPARE(plain.stop, oxinfer::StopReason::ContextFull);
            QCOMPARE(drafted.stop, oxinfer::StopReason::ContextFull);
            QCOMPARE(drafted.tokens, plain.tokens);
        }
    }
};

QTEST_GUILESS_MAIN(Qwen35ReferenceTest)
#include "test_qwen35_reference.moc"
