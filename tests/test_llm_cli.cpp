// The real oxinfer binary: logits, generate, chat, synth and bench --model, as
// ../shared/specs/cli.md describes them, on the reference models of tests/reference/llm.

#include "test_support.h"

#include <oxinfer/npy.h>
#include <oxinfer/synth.h>

#include <nlohmann/json.hpp>

#include <QObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using oxinfer::test::run_cli;
const fs::path kDir = fs::path(OXINFER_REFERENCE_DIR) / "llm";

nlohmann::json golden(const std::string& name) {
    std::ifstream in(kDir / name / "golden.json");
    return nlohmann::json::parse(in);
}

QString id_list(const std::vector<int32_t>& ids) {
    QStringList parts;
    for (int32_t id : ids) parts << QString::number(id);
    return parts.join(' ');
}

QString path_of(const fs::path& path) { return QString::fromStdString(path.string()); }

}  // namespace

class LlmCliTest : public QObject {
    Q_OBJECT

private slots:
    void logits_match_the_reference() {
        QTemporaryDir dir;
        const auto g = golden("qwen2");
        auto ids = g["prompt"].get<std::vector<int32_t>>();
        const auto greedy = g["f32"]["greedy"].get<std::vector<int32_t>>();
        ids.insert(ids.end(), greedy.begin(), greedy.end() - 1);
        const QString out = dir.filePath("logits.npy");
        const auto result = run_cli({"logits", "--model", path_of(kDir / "qwen2" / "f32.gguf"), "--tokens", id_list(ids), "--out", out, "-t", "2"});
        QVERIFY2(result.exit_code == 0, result.err.constData());
        const auto logits = oxinfer::read_npy_f32(out.toStdString());
        const auto expected = oxinfer::read_npy_f32(kDir / "qwen2" / "f32_logits.npy");
        QCOMPARE(logits.shape, expected.shape);
        for (size_t i = 0; i < logits.values.size(); ++i) QVERIFY(std::fabs(logits.values[i] - expected.values[i]) <= 1e-4f);

        // --prompt: the HF folder's tokenizer.json and the GGUF's vocabulary give the same ids, so
        // the same logits.
        const QString last = dir.filePath("last.npy"), last_gguf = dir.filePath("last_gguf.npy");
        QCOMPARE(run_cli({"logits", "--model", path_of(kDir / "qwen2" / "hf"), "--prompt", "Hi there, all", "--out", last, "--last"}).exit_code, 0);
        QCOMPARE(run_cli({"logits", "--model", path_of(kDir / "qwen2" / "f32.gguf"), "--prompt", "Hi there, all", "--out", last_gguf, "--last"}).exit_code, 0);
        const auto from_hf = oxinfer::read_npy_f32(last.toStdString()), from_gguf = oxinfer::read_npy_f32(last_gguf.toStdString());
        QCOMPARE(from_hf.shape, (std::vector<int64_t>{1, 128}));
        for (size_t i = 0; i < from_hf.values.size(); ++i) QVERIFY(std::fabs(from_hf.values[i] - from_gguf.values[i]) <= 1e-4f);
    }

    void generate_json_gives_the_greedy_tokens() {
        const auto g = golden("llama3");
        const auto result = run_cli({"generate", "--model", path_of(kDir / "llama3" / "hf"), "--tokens", id_list(g["prompt"].get<std::vector<int32_t>>()),
                                     "-n", "32", "--ignore-eos", "--temp", "0", "--json", "-t", "2"});
        QVERIFY2(result.exit_code == 0, result.err.constData());
        const auto out = nlohmann::json::parse(result.out.toStdString());
        QCOMPARE(out["ids"].get<std::vector<int32_t>>(), g["f32"]["greedy"].get<std::vector<int32_t>>());
        QCOMPARE(out["prompt_tokens"].get<int>(), 12);
        QVERIFY(out["text"].is_string() && out["pp_tok_s"].get<double>() > 0 && out["tg_tok_s"].get<double>() > 0);
    }

    // --mtp: the same greedy tokens, drafted by Qwen3.5's MTP head; the JSON counts the drafts.
    void generate_with_mtp_drafts() {
        const fs::path qwen35 = fs::path(OXINFER_REFERENCE_DIR) / "qwen35" / "qwen3_5";
        std::ifstream in(qwen35 / "golden.json");
        const auto g = nlohmann::json::parse(in);
        const auto result = run_cli({"generate", "--model", path_of(qwen35 / "f32.gguf"), "--tokens", id_list(g["prompt"].get<std::vector<int32_t>>()),
                                     "-n", "32", "--ignore-eos", "--mtp", "--json", "-t", "2"});
        QVERIFY2(result.exit_code == 0, result.err.constData());
        const auto out = nlohmann::json::parse(result.out.toStdString());
        QCOMPARE(out["ids"].get<std::vector<int32_t>>(), g["f32"]["greedy"].get<std::vector<int32_t>>());
        QCOMPARE(out["draft_tokens"].get<int64_t>(), g["f32"]["mtp"]["drafts"].get<int64_t>());
        QCOMPARE(out["accepted_draft_tokens"].get<int64_t>(), g["f32"]["mtp"]["accepted"].get<int64_t>());
        QCOMPARE(out["draft_acceptance"].get<double>(),
                 g["f32"]["mtp"]["accepted"].get<double>() / g["f32"]["mtp"]["drafts"].get<double>());
        const auto bench = run_cli({"bench", "--model", path_of(qwen35 / "hf"), "-p", "0", "-n", "8", "-r", "1", "--mtp", "--json"});
        QVERIFY2(bench.exit_code == 0, bench.err.constData());
        const auto rows = nlohmann::json::parse(bench.out.toStdString());
        QCOMPARE(rows.size(), size_t{2});
        QCOMPARE(rows[1]["test"].get<std::string>(), std::string("tg8+mtp"));
        QVERIFY(rows[1]["draft_acceptance"].get<double>() >= 0 && rows[1]["tok_s"].get<double>() > 0);
        const auto without = run_cli({"generate", "--model", path_of(kDir / "qwen3" / "hf"), "--tokens", "1 2", "-n", "2", "--mtp"});
        QCOMPARE(without.exit_code, 1);
        QVERIFY(without.err.contains("has no multi-token-prediction head"));
    }

    // --draft-model: Gemma 4's assistant drafts up to --draft-max tokens per verification; the same
    // greedy tokens, with the reference's drafts and accepted drafts in the JSON; bench adds tgN+draft.
    void generate_with_draft_model() {
        const fs::path gemma = fs::path(OXINFER_REFERENCE_DIR) / "gemma";
        std::ifstream in(gemma / "gemma4" / "golden.json");
        const auto g = nlohmann::json::parse(in);
        const QString assistant = path_of(gemma / "gemma4_assistant" / "hf");
        const auto result = run_cli({"generate", "--model", path_of(gemma / "gemma4" / "f32.gguf"), "--draft-model", assistant, "--tokens",
                                     id_list(g["prompt"].get<std::vector<int32_t>>()), "-n", "32", "--ignore-eos", "--json", "-t", "2"});
        QVERIFY2(result.exit_code == 0, result.err.constData());
        const auto out = nlohmann::json::parse(result.out.toStdString());
        QCOMPARE(out["ids"].get<std::vector<int32_t>>(), g["f32"]["greedy"].get<std::vector<int32_t>>());
        QCOMPARE(out["draft_tokens"].get<int64_t>(), g["f32"]["assistant"]["hf"]["drafts"].get<int64_t>());
        QCOMPARE(out["accepted_draft_tokens"].get<int64_t>(), g["f32"]["assistant"]["hf"]["accepted"].get<int64_t>());
        // One draft per verification: more verifications, the same tokens.
        const auto one = run_cli({"generate", "--model", path_of(gemma / "gemma4" / "hf"), "--draft-model", assistant, "--draft-max", "1",
                                  "--tokens", id_list(g["prompt"].get<std::vector<int32_t>>()), "-n", "32", "--ignore-eos", "--json"});
        QVERIFY2(one.exit_code == 0, one.err.constData());
        const auto single = nlohmann::json::parse(one.out.toStdString());
        QCOMPARE(single["ids"].get<std::vector<int32_t>>(), out["ids"].get<std::vector<int32_t>>());
        QVERIFY(single["draft_tokens"].get<int64_t>() > 0 && single["draft_tokens"].get<int64_t>() < 32);
        const auto bench = run_cli({"bench", "--model", path_of(gemma / "gemma4" / "hf"), "--draft-model", assistant, "-p", "0", "-n", "8",
                                    "-r", "1", "--json"});
        QVERIFY2(bench.exit_code == 0, bench.err.constData());
        const auto rows = nlohmann::json::parse(bench.out.toStdString());
        QCOMPARE(rows.size(), size_t{2});
        QCOMPARE(rows[1]["test"].get<std::string>(), std::string("tg8+draft"));
        auto error = run_cli({"generate", "--model", path_of(gemma / "gemma4" / "hf"), "--draft-model", assistant, "--mtp", "--tokens", "1 2"});
        QVERIFY(error.err.contains("give --mtp or --draft-model, not both"));
        error = run_cli({"generate", "--model", path_of(gemma / "gemma4" / "hf"), "--draft-model", assistant, "--draft-max", "0", "--tokens", "1"});
        QVERIFY(error.err.contains("--draft-max: must be 1 to 16"));
    }

    void generate_streams_text() {
        // Streaming output is the decoded text of the --json ids, plus a final newline.
        const QStringList common = {"generate", "--model", path_of(kDir / "qwen3_moe" / "hf"), "--prompt", "Hello", "--chat", "-n", "12",
                                    "--temp", "0.8", "--top-k", "20", "--top-p", "0.9", "--min-p", "0.05", "--repeat-penalty", "1.1",
                                    "--seed", "3"};
        const auto streamed = run_cli(common);
        QVERIFY2(streamed.exit_code == 0, streamed.err.constData());
        const auto as_json = run_cli(QStringList(common) << "--json");
        QCOMPARE(as_json.exit_code, 0);
        const auto out = nlohmann::json::parse(as_json.out.toStdString());
        QCOMPARE(streamed.out.toStdString(), out["text"].get<std::string>() + "\n");
        // The chat template wraps the prompt: <|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n
        QVERIFY(out["prompt_tokens"].get<int>() > 8);
    }

    void chat_session() {
        const auto chat = run_cli({"chat", "--model", path_of(kDir / "qwen3" / "hf"), "--system", "terse", "-n", "5", "-t", "2"},
                                  "Hello\n/reset\n/system be kind\nHi again\n/quit\n");
        QCOMPARE(chat.exit_code, 0);
        const QString out = chat.out;
        QVERIFY2(out.contains("(conversation reset)") && out.contains("(system prompt set, conversation reset)"), qPrintable(out));
    }

    // A prompt longer than --ctx: `generate` fails naming both lengths; `chat` says so and goes on.
    void prompt_longer_than_the_context() {
        const auto generated = run_cli({"generate", "--model", path_of(kDir / "qwen3" / "hf"), "--ctx", "4", "--tokens", "1 2 3 4 5", "-n", "2"});
        QCOMPARE(generated.exit_code, 1);
        QVERIFY2(generated.err.contains("the prompt's 5 tokens do not fit in the context length of 4 (--ctx sets it)"), generated.err.constData());

        const auto chat = run_cli({"chat", "--model", path_of(kDir / "qwen3" / "hf"), "--ctx", "8", "-n", "2", "-t", "2"}, "Hello\nHello again\n/quit\n");
        QCOMPARE(chat.exit_code, 0);
        const QString out = chat.out;
        QCOMPARE(out.count("(the conversation no longer fits in the context of 8 tokens: /reset starts over, --ctx sets the length)"), 2);
    }

    void synth_then_bench() {
        QTemporaryDir dir;
        // A small config of the Qwen3 family; the named shapes are real sizes (hundreds of MB).
        nlohmann::json config = {{"architectures", {"Qwen3ForCausalLM"}}, {"model_type", "qwen3"}, {"vocab_size", 512}, {"hidden_size", 256},
                                 {"intermediate_size", 512}, {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                                 {"head_dim", 64}, {"max_position_embeddings", 1024}, {"tie_word_embeddings", true}};
        const QString config_path = dir.filePath("config.json");
        std::ofstream(config_path.toStdString()) << config.dump();
        for (const char* type : {"q4_k", "q8_0", "bf16"}) {
            const QString out = dir.filePath(QString("synth-%1.gguf").arg(type));
            const auto written = run_cli({"synth", "--config", config_path, "--type", type, "--out", out});
            QVERIFY2(written.exit_code == 0, written.err.constData());
            const auto bench = run_cli({"bench", "--model", out, "-p", "16", "-n", "4", "-r", "2", "-t", "2", "--json"});
            QVERIFY2(bench.exit_code == 0, bench.err.constData());
            const auto report = nlohmann::json::parse(bench.out.toStdString());
            QCOMPARE(report.size(), size_t{2});
            QCOMPARE(report[0]["test"].get<std::string>(), std::string("pp16"));
            QCOMPARE(report[1]["test"].get<std::string>(), std::string("tg4"));
            QCOMPARE(report[0]["type"].get<std::string>(), std::string(type));
            QVERIFY(report[1]["tok_s"].get<double>() > 0 && report[0]["threads"].get<int>() == 2 && report[0]["model_bytes"].get<double>() > 0);
            QCOMPARE(report[0]["n_depth"].get<int>(), 0);
        }
        // -d: both tests after 1000 tokens in the cache (llama-bench's depth; the context is sized for them), named as
        // llama-bench names them.
        const auto deep = run_cli({"bench", "--model", dir.filePath("synth-q4_k.gguf"), "-p", "16", "-n", "4", "-r", "1", "-d", "1000", "--json"});
        QVERIFY2(deep.exit_code == 0, deep.err.constData());
        const auto deep_report = nlohmann::json::parse(deep.out.toStdString());
        QCOMPARE(deep_report.size(), size_t{2});
        QCOMPARE(deep_report[0]["test"].get<std::string>(), std::string("pp16 @ d1000"));
        QCOMPARE(deep_report[1]["test"].get<std::string>(), std::string("tg4 @ d1000"));
        QCOMPARE(deep_report[1]["n_depth"].get<int>(), 1000);
        const auto negative = run_cli({"bench", "--model", dir.filePath("synth-q4_k.gguf"), "-d", "-1"});
        QVERIFY(negative.exit_code != 0 && negative.err.contains("-d must not be negative"));
        const auto with_bound = run_cli({"bench", "--model", dir.filePath("synth-q4_k.gguf"), "-d", "8", "--bandwidth"});
        QVERIFY(with_bound.exit_code != 0 && with_bound.err.contains("by the weight bytes alone"));
        // --bandwidth: a read bandwidth per tg run (read in turn with its tokens), and tg against the bound it sets, run by run
        // (the median of two is the larger share).
        const auto bound = run_cli({"bench", "--model", dir.filePath("synth-bf16.gguf"), "-p", "0", "-n", "4", "-r", "2", "-t", "2", "--bandwidth", "--json"});
        QVERIFY2(bound.exit_code == 0, bound.err.constData());
        const auto tg = nlohmann::json::parse(bound.out.toStdString()).at(0);
        QCOMPARE(tg["bandwidth_gbs"].size(), size_t{2});
        double larger_share = 0;
        for (size_t i = 0; i < 2; ++i) {
            const double gbs = tg["bandwidth_gbs"][i].get<double>();
            QVERIFY(gbs > 0);
            larger_share = std::max(larger_share, tg["samples_ts"][i].get<double>() * tg["model_bytes"].get<double>() / (gbs * 1e9));
        }
        QVERIFY(std::fabs(tg["bound_fraction"].get<double>() - larger_share) <= 1e-9 * larger_share);

        const QString folder = dir.filePath("synth-folder");
        QCOMPARE(run_cli({"synth", "--config", config_path, "--type", "bf16", "--out", folder}).exit_code, 0);
        const auto inspect = run_cli({"inspect", folder, "--json"});
        QCOMPARE(inspect.exit_code, 0);
        QCOMPARE(nlohmann::json::parse(inspect.out.toStdString())["tensors"][0]["dtype"].get<std::string>(), std::string("bf16"));
        const auto generated = run_cli({"generate", "--model", folder, "--tokens", "1 2 3", "-n", "3", "--json"});
        QVERIFY2(generated.exit_code == 0, generated.err.constData());
        QCOMPARE(nlohmann::json::parse(generated.out.toStdString())["ids"].size(), size_t{3});
    }

    // synth writes Gemma 4 (per-layer embeddings, KV sharing, double-wide MLP, proportional RoPE)
    // and its assistant in the layouts the loader reads: small configs, GGUF and HF folder.
    void synth_gemma4_with_assistant() {
        QTemporaryDir dir;
        nlohmann::json text = {{"model_type", "gemma4_text"}, {"vocab_size", 512}, {"hidden_size", 128}, {"intermediate_size", 256},
                               {"num_hidden_layers", 6}, {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"head_dim", 64},
                               {"global_head_dim", 128}, {"sliding_window", 16}, {"max_position_embeddings", 1024},
                               {"layer_types", {"sliding_attention", "sliding_attention", "full_attention", "sliding_attention",
                                                "sliding_attention", "full_attention"}},
                               {"rope_parameters", {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
                                                    {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25},
                                                                        {"rope_theta", 1000000.0}}}}},
                               {"final_logit_softcapping", 30.0}, {"hidden_size_per_layer_input", 32}, {"vocab_size_per_layer_input", 512},
                               {"num_kv_shared_layers", 2}, {"use_double_wide_mlp", true}, {"tie_word_embeddings", true}};
        nlohmann::json model = text;
        model["architectures"] = {"Gemma4ForCausalLM"};
        nlohmann::json assistant_text = text;
        assistant_text.update({{"hidden_size", 64}, {"num_hidden_layers", 2}, {"num_kv_shared_layers", 2}, {"hidden_size_per_layer_input", 0},
                               {"use_double_wide_mlp", false}, {"layer_types", {"sliding_attention", "full_attention"}}});
        const nlohmann::json assistant = {{"architectures", {"Gemma4AssistantForCausalLM"}}, {"model_type", "gemma4_assistant"},
                                          {"backbone_hidden_size", 128}, {"tie_word_embeddings", true}, {"text_config", assistant_text}};
        std::ofstream(dir.filePath("model.json").toStdString()) << model.dump();
        std::ofstream(dir.filePath("assistant.json").toStdString()) << assistant.dump();
        for (const QString& suffix : {QString(".gguf"), QString("-folder")}) {
            const QString out = dir.filePath("gemma4" + suffix), drafter = dir.filePath("assistant" + suffix);
            for (const auto& [config, path] : {std::pair{dir.filePath("model.json"), out}, std::pair{dir.filePath("assistant.json"), drafter}}) {
                const auto written = run_cli({"synth", "--config", config, "--type", suffix == ".gguf" ? "q8_0" : "bf16", "--out", path});
                QVERIFY2(written.exit_code == 0, written.err.constData());
            }
            const auto plain = run_cli({"generate", "--model", out, "--tokens", "2 3 4", "-n", "8", "--ignore-eos", "--json"});
            QVERIFY2(plain.exit_code == 0, plain.err.constData());
            const auto drafted = run_cli({"generate", "--model", out, "--draft-model", drafter, "--tokens", "2 3 4", "-n", "8", "--ignore-eos", "--json"});
            QVERIFY2(drafted.exit_code == 0, drafted.err.constData());
            const auto a = nlohmann::json::parse(plain.out.toStdString()), b = nlohmann::json::parse(drafted.out.toStdString());
            QCOMPARE(b["ids"].get<std::vector<int32_t>>(), a["ids"].get<std::vector<int32_t>>());
            QVERIFY(b["draft_tokens"].get<int64_t>() > 0);
        }
    }

    // --layers on a Gemma shape keeps the first layers of its pattern and as much of the KV-shared
    // tail as still has a producer of each type (E4B: 7 layers, 5 sliding + 1 full + 1 sliding).
    void synth_layers_keep_gemma_consistent() {
        for (const char* shape : {"gemma-4-e2b", "gemma-4-e4b"}) {
            const auto config = oxinfer::synth_config("gemma4", shape, 7);
            const auto& types = config["layer_types"];
            QCOMPARE(types.size(), size_t{7});
            const int64_t shared = config["num_kv_shared_layers"].get<int64_t>();
            QVERIFY(shared > 0 && shared < 7);
            for (int64_t i = 7 - shared; i < 7; ++i) {
                bool producer = false;
                for (int64_t j = 0; j < 7 - shared; ++j) producer = producer || types[static_cast<size_t>(j)] == types[static_cast<size_t>(i)];
                QVERIFY2(producer, shape);
            }
        }
        QCOMPARE(oxinfer::synth_config("qwen3moe", "qwen3-30b-a3b", 4)["num_hidden_layers"].get<int64_t>(), int64_t{4});
    }

    void clear_errors() {
        auto result = run_cli({"synth", "--shape", "gpt-5", "--type", "q4_k", "--out", "x.gguf"});
        QCOMPARE(result.exit_code, 1);
        QVERIFY(result.err.startsWith("oxinfer: error: --shape: unknown shape 'gpt-5'; known: qwen3-0.6b (qwen3)"));
        result = run_cli({"synth", "--arch", "llama", "--shape", "qwen3-0.6b", "--type", "q4_k", "--out", "x.gguf"});
        QVERIFY(result.err.contains("is a qwen3 shape, not llama"));
        result = run_cli({"generate", "--model", path_of(kDir / "qwen3" / "f32.gguf"), "--tokens", "1 x", "-n", "2"});
        QVERIFY(result.err.contains("is not a list of token ids"));
        result = run_cli({"logits", "--model", path_of(kDir / "qwen3" / "hf"), "--tokens", "1", "--out", "/nonexistent/dir/x.npy"});
        QCOMPARE(result.exit_code, 1);
        result = run_cli({"bench", "--model", "/no/such/model"});
        QCOMPARE(result.exit_code, 1);
        QVERIFY(result.err.startsWith("oxinfer: error: "));
        result = run_cli({"generate", "--model", path_of(kDir / "qwen3" / "hf"), "--prompt", "x", "--quant", "q3"});
        QVERIFY(result.err.contains("--quant: 'q3' is not one of bf16, q8, q4"));
    }
};

QTEST_GUILESS_MAIN(LlmCliTest)
#include "test_llm_cli.moc"
