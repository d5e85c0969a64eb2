// The engine API (oxinfer/llm.h) on the reference models of tests/reference/llm: conversations
// that reuse the cache, cancel from another thread, stop tokens and strings, context limits, KV
// cache types, memory checks and clear errors for models it cannot run.

#include "test_support.h"

#include <oxinfer/error.h>
#include <oxinfer/llm.h>
#include <oxinfer/npy.h>
#include <oxinfer/tokenizer.h>

#include <nlohmann/json.hpp>

#include <QObject>
#include <QTemporaryDir>
#include <QTest>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

namespace {

namespace fs = std::filesystem;
const fs::path kDir = fs::path(OXINFER_REFERENCE_DIR) / "llm";

std::vector<int32_t> golden_ids(const std::string& name, const char* key) {
    std::ifstream in(kDir / name / "golden.json");
    const auto j = nlohmann::json::parse(in);
    return std::string(key) == "prompt" ? j["prompt"].get<std::vector<int32_t>>() : j["f32"][key].get<std::vector<int32_t>>();
}

std::unique_ptr<oxinfer::Model> load(const std::string& name, oxinfer::LoadOptions options = {}) {
    options.threads = 2;
    return oxinfer::Model::load((kDir / name / "hf").string(), options);
}

oxinfer::GenerateOptions greedy(int64_t max_tokens) {
    oxinfer::GenerateOptions options;
    options.max_tokens = max_tokens;
    options.stop_at_model_stop_tokens = false;
    return options;
}

}  // namespace

class LlmEngineTest : public QObject {
    Q_OBJECT

private slots:
    void model_facts() {
        auto model = load("qwen3");
        QCOMPARE(model->config().architecture, std::string("Qwen3ForCausalLM"));
        QVERIFY(model->has_tokenizer());
        // generation_config.json's eos ids [im_end, endoftext] and tokenizer_config.json's eos_token.
        QCOMPARE(model->stop_tokens(), (std::vector<int32_t>{125, 127}));
        QCOMPARE(model->context_length(), int64_t{256});
        QCOMPARE(model->weight_type(), std::string("f32"));
    }

    // A second turn renders the whole conversation again; the cache of the unchanged prefix is
    // reused, and the reply is the one a fresh session computes from the full prompt.
    void conversation_reuses_the_prefix() {
        auto model = load("qwen3_moe");
        oxinfer::Conversation chat(*model, "Be brief.");
        const auto first_prompt = chat.prompt_tokens("Hi there");
        const auto first = chat.reply("Hi there", greedy(6));
        QCOMPARE(first.stats.reused_prompt_tokens, int64_t{0});
        QCOMPARE(first.tokens.size(), size_t{6});
        QCOMPARE(chat.messages().size(), size_t{2});

        const auto second_prompt = chat.prompt_tokens("and then");
        const auto second = chat.reply("and then", greedy(8));
        QVERIFY2(second.stats.reused_prompt_tokens >= static_cast<int64_t>(first_prompt.size()),
                 qPrintable(QString("reused %1 of %2").arg(second.stats.reused_prompt_tokens).arg(first_prompt.size())));

        oxinfer::Session fresh(*model);
        const auto recomputed = fresh.generate(second_prompt, greedy(8));
        QCOMPARE(second.tokens, recomputed.tokens);
        QCOMPARE(second.text, recomputed.text);
    }

    // An app switches branches with set_messages: resending an edited first message after a
    // two-turn chat gives the reply of a fresh conversation, and the cached system prompt is kept.
    void conversation_set_messages_continues_another_branch() {
        auto model = load("qwen3");
        oxinfer::Conversation chat(*model, "Be brief.");
        chat.reply("Hi there", greedy(4));
        chat.reply("and then", greedy(4));
        QCOMPARE(chat.messages().size(), size_t{4});

        chat.set_messages(nlohmann::ordered_json::array());
        const auto edited = chat.reply("Hello instead", greedy(6));
        QVERIFY(edited.stats.reused_prompt_tokens > 0);
        QCOMPARE(chat.messages().size(), size_t{2});

        oxinfer::Conversation fresh(*model, "Be brief.");
        QCOMPARE(edited.tokens, fresh.reply("Hello instead", greedy(6)).tokens);

        // Regenerating the second turn of a branch: its first turn comes back as messages, and the
        // prompt is the one a conversation that never left that branch renders.
        nlohmann::ordered_json first_turn = nlohmann::ordered_json::array();
        first_turn.push_back({{"role", "user"}, {"content", "Hi there"}});
        first_turn.push_back({{"role", "assistant"}, {"content", "Hello"}});
        chat.set_messages(first_turn);
        fresh.set_messages(first_turn);
        const auto expected_prompt = fresh.prompt_tokens("and then");
        QCOMPARE(chat.prompt_tokens("and then"), expected_prompt);
        const auto regenerated = chat.reply("and then", greedy(6));
        oxinfer::Session session(*model);
        QCOMPARE(regenerated.tokens, session.generate(expected_prompt, greedy(6)).tokens);
    }

    // A prompt longer than one prefill chunk goes in pieces (so that cancel reaches it); the
    // reply is the one of a prompt evaluated in a single call.
    void long_prompt_in_pieces_gives_the_same_reply() {
        oxinfer::LoadOptions options;
        options.context_length = 2048;
        for (const char* name : {"qwen3", "llama3"}) {
            auto model = load(name, options);
            std::vector<int32_t> prompt(1300);
            for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7 + 3) % 120);
            oxinfer::Session pieces(*model);
            const auto result = pieces.generate(prompt, greedy(8));
            oxinfer::Session whole(*model);
            whole.evaluate(std::span(prompt).first(prompt.size() - 1));
            const auto expected = whole.generate(prompt, greedy(8));
            QCOMPARE(expected.stats.reused_prompt_tokens, int64_t(prompt.size() - 1));
            QCOMPARE(result.tokens, expected.tokens);
        }
    }

    void cancel_from_another_thread_stops_within_one_token() {
        auto model = load("llama3");
        oxinfer::Session session(*model);
        std::atomic<int> seen{0};
        std::atomic<bool> cancelled{false};
        oxinfer::GenerationResult result;
        std::thread worker([&] {
            result = session.generate(golden_ids("llama3", "prompt"), greedy(200), [&](int32_t, std::string_view) {
                if (++seen == 5)
                    while (!cancelled.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                return true;
            });
        });
        while (seen.load() < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        session.cancel();
        cancelled = true;
        worker.join();
        QCOMPARE(result.stop, oxinfer::StopReason::Cancelled);
        QCOMPARE(result.tokens.size(), size_t{5});
        // The session stays usable: the next generation runs to its limit.
        QCOMPARE(session.generate(golden_ids("llama3", "prompt"), greedy(3)).tokens.size(), size_t{3});
    }

    void stop_tokens_end_generation() {
        auto model = load("qwen2");
        const auto expected = golden_ids("qwen2", "greedy");
        auto options = greedy(32);
        options.stop_tokens = {expected[4]};
        oxinfer::Session session(*model);
        const auto result = session.generate(golden_ids("qwen2", "prompt"), options);
        QCOMPARE(result.stop, oxinfer::StopReason::StopToken);
        const auto first = std::find(expected.begin(), expected.end(), expected[4]);
        QCOMPARE(result.tokens, std::vector<int32_t>(expected.begin(), first));
    }

    void stop_strings_cut_the_text_and_the_stream() {
        auto model = load("llama3_untied");
        const auto expected = golden_ids("llama3_untied", "greedy");
        const std::string full = model->tokenizer().decode(expected);
        QVERIFY(full.size() > 12);
        const std::string stop = full.substr(6, 3);
        auto options = greedy(32);
        options.stop_strings = {"never appears", stop};
        oxinfer::Session session(*model);
        std::string streamed;
        const auto result = session.generate(golden_ids("llama3_untied", "prompt"), options, [&](int32_t, std::string_view text) {
            streamed += text;
            return true;
        });
        QCOMPARE(result.stop, oxinfer::StopReason::StopString);
        QCOMPARE(result.text, full.substr(0, full.find(stop)));
        QCOMPARE(streamed, result.text);
    }

    void callback_and_max_tokens_stop() {
        auto model = load("qwen3");
        oxinfer::Session session(*model);
        int calls = 0;
        const auto result = session.generate(golden_ids("qwen3", "prompt"), greedy(10), [&](int32_t, std::string_view) { return ++calls < 3; });
        QCOMPARE(result.stop, oxinfer::StopReason::Callback);
        QCOMPARE(result.tokens.size(), size_t{3});
        QCOMPARE(session.generate(golden_ids("qwen3", "prompt"), greedy(4)).stop, oxinfer::StopReason::MaxTokens);
    }

    void context_length_is_enforced() {
        oxinfer::LoadOptions options;
        options.context_length = 16;
        auto model = load("qwen3", options);
        oxinfer::Session session(*model);
        const auto result = session.generate(golden_ids("qwen3", "prompt"), greedy(32));  // 12-token prompt
        QCOMPARE(result.stop, oxinfer::StopReason::ContextFull);
        QCOMPARE(session.tokens().size(), size_t{16});
        OXINFER_EXPECT_ERROR(session.evaluate(std::vector<int32_t>{1}), std::string("do not fit in the context length of 16"));

        // A prompt as long as the context still gives its one token.
        oxinfer::GenerateOptions no_stops = greedy(4);
        no_stops.stop_at_model_stop_tokens = false;
        const auto exact = session.generate(std::vector<int32_t>(16, 1), no_stops);
        QCOMPARE(exact.stop, oxinfer::StopReason::ContextFull);
        QCOMPARE(exact.tokens.size(), size_t{1});
        // A prompt longer than the context is not evaluated: no tokens, the cache as it was.
        session.truncate(4);
        const std::vector<int32_t> too_long(17, 1);
        const auto refused = session.generate(too_long, greedy(4));
        QCOMPARE(refused.stop, oxinfer::StopReason::ContextFull);
        QVERIFY(refused.tokens.empty());
        QCOMPARE(refused.stats.prompt_tokens, int64_t{17});
        QCOMPARE(session.tokens().size(), size_t{4});
        // A conversation that outgrows the context keeps its messages; the reply is not added.
        oxinfer::Conversation chat(*model);
        const std::string long_message(200, 'a');
        QVERIFY(chat.prompt_tokens(long_message).size() > 16);
        const auto unanswered = chat.reply(long_message, greedy(4));
        QCOMPARE(unanswered.stop, oxinfer::StopReason::ContextFull);
        QVERIFY(unanswered.tokens.empty());
        QVERIFY(chat.messages().empty());
    }

    // f16 and bf16 caches round K and V to 11 and 8 significant bits; logits stay within 2e-2 and
    // 1e-1 of the float32 reference here (measured about 3e-3 and 2e-2).
    void kv_cache_types() {
        const auto golden = oxinfer::read_npy_f32(kDir / "qwen3" / "f32_logits.npy");
        const auto prompt = golden_ids("qwen3", "prompt");
        for (auto [type, tolerance] : {std::pair{oxinfer::DType::F16, 2e-2}, std::pair{oxinfer::DType::BF16, 1e-1}}) {
            oxinfer::LoadOptions options;
            options.kv_type = type;
            auto model = load("qwen3", options);
            oxinfer::Session session(*model);
            const auto logits = session.evaluate(prompt, true);
            double worst = 0;
            for (size_t i = 0; i < logits.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(logits[i]) - golden.values[i]));
            qInfo("kv %s: max |diff| %.3g", oxinfer::dtype_name(type).data(), worst);
            QVERIFY(worst <= tolerance);
            QVERIFY(session.kv_cache_bytes() > 0);
        }
    }

    void memory_checks() {
        // Converted weights live in memory: refused when they cannot fit.
        qputenv("OXINFER_TEST_AVAILABLE_RAM", "1000");
        oxinfer::LoadOptions options;
        options.convert_weights = oxinfer::DType::Q8_0;
        OXINFER_EXPECT_ERROR(load("qwen3", options), std::string("only 1000 B is available"));
        // Mapped weights may exceed memory: loaded with a warning.
        QVERIFY(load("qwen3") != nullptr);
        qunsetenv("OXINFER_TEST_AVAILABLE_RAM");
    }

    void unsupported_architecture_is_named() {
        QTemporaryDir dir;
        const fs::path folder = dir.path().toStdString();
        fs::copy(kDir / "qwen3" / "hf", folder, fs::copy_options::recursive);
        std::ifstream in(folder / "config.json");
        auto config = nlohmann::json::parse(in);
        in.close();
        config["architectures"] = {"MambaForCausalLM"};
        std::ofstream(folder / "config.json") << config.dump();
        OXINFER_EXPECT_ERROR(oxinfer::Model::load(folder.string()),
                             std::string("architecture 'MambaForCausalLM' is not supported; supported: LlamaForCausalLM, Qwen2ForCausalLM, "
                                         "Qwen3ForCausalLM, Qwen3MoeForCausalLM"));
    }

    void mismatched_tensor_shapes_are_named() {
        QTemporaryDir dir;
        const fs::path folder = dir.path().toStdString();
        fs::copy(kDir / "qwen3" / "hf", folder, fs::copy_options::recursive);
        std::ifstream in(folder / "config.json");
        auto config = nlohmann::json::parse(in);
        in.close();
        config["intermediate_size"] = 96;
        std::ofstream(folder / "config.json") << config.dump();
        OXINFER_EXPECT_ERROR(oxinfer::Model::load(folder.string()),
                             std::string("tensor 'model.layers.0.mlp.gate_proj.weight' has shape (64, 32), the config says (96, 32)"));
    }

    void bad_tokens_are_refused() {
        auto model = load("qwen3");
        oxinfer::Session session(*model);
        OXINFER_EXPECT_ERROR(session.evaluate(std::vector<int32_t>{5, 128}), std::string("token 128: is outside the vocabulary of 128"));
        OXINFER_EXPECT_ERROR(session.generate(std::vector<int32_t>{}, greedy(1)), std::string("the prompt is empty"));
    }
};

QTEST_GUILESS_MAIN(LlmEngineTest)
#include "test_llm_engine.moc"
