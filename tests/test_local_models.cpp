// oxinfer/local_models.h: the memory estimate against what the engine really allocates, and the
// model list of a folder.

#include <oxinfer/llm.h>
#include <oxinfer/local_models.h>

#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <numeric>

namespace fs = std::filesystem;

namespace {

const fs::path kReference = OXINFER_REFERENCE_DIR;

// The KV cache (and state) a session holds after a chat of `tokens` tokens: the engine's own count.
uint64_t allocated_after(const fs::path& model_path, int64_t tokens, oxinfer::DType kv_type) {
    oxinfer::LoadOptions options;
    options.threads = 1;
    options.kv_type = kv_type;
    auto model = oxinfer::Model::load(model_path.string(), options);
    oxinfer::Session session(*model);
    std::vector<int32_t> ids(static_cast<size_t>(tokens));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i % 50 + 3);
    // Five turns of a chat, each prompt extending the last: recurrent models keep their most
    // snapshots (one per prompt, at most 4).
    oxinfer::GenerateOptions one_token;
    one_token.max_tokens = 1;
    for (size_t turn = 1; turn <= 5; ++turn)
        session.generate(std::span(ids).first(ids.size() * turn / 5), one_token);
    return session.kv_cache_bytes();
}

}  // namespace

class LocalModelsTest : public QObject {
    Q_OBJECT

private slots:
    void footprint_matches_the_engine_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("kv");
        // The engine reserves 256 positions first: 200 tokens hold exactly the estimate for 256.
        for (const char* path : {"llm/qwen3/hf", "llm/qwen3_moe/f32.gguf", "gemma/gemma4/hf", "gemma/gemma4/f32.gguf",
                                 "gemma/gemma4_keqv/hf", "gemma/gemma3/hf", "qwen35/qwen3_5/hf", "qwen35/qwen3_5/f32.gguf"}) {
            QTest::newRow(path) << QString(path) << int(oxinfer::DType::F32);
            QTest::newRow((std::string(path) + " bf16 cache").c_str()) << QString(path) << int(oxinfer::DType::BF16);
        }
    }
    void footprint_matches_the_engine() {
        QFETCH(QString, model);
        QFETCH(int, kv);
        const fs::path path = kReference / model.toStdString();
        const auto type = static_cast<oxinfer::DType>(kv);
        const oxinfer::ModelFootprint footprint = oxinfer::model_footprint(path);
        QVERIFY(footprint.parameters > 0);
        QVERIFY(footprint.weight_bytes > 0);
        QCOMPARE(footprint.cache_bytes(256, type), allocated_after(path, 200, type));
    }

    void footprint_counts_every_tensor() {
        const oxinfer::ModelFootprint footprint = oxinfer::model_footprint(kReference / "llm/qwen3/hf");
        const auto& c = footprint.config;
        // Embedding, head (untied), per layer q/k/v/o, q/k norms, two norms, gate/up/down; final norm.
        const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
        const int64_t per_layer = c.hidden_size * (q + 2 * kv) + q * c.hidden_size + 2 * c.head_dim + 2 * c.hidden_size +
                                  3 * c.hidden_size * c.intermediate_size;
        const int64_t head = c.tie_word_embeddings ? 0 : c.vocab_size * c.hidden_size;
        QCOMPARE(footprint.parameters, c.vocab_size * c.hidden_size + head + c.num_hidden_layers * per_layer + c.hidden_size);
        QCOMPARE(footprint.weight_bytes, static_cast<uint64_t>(footprint.parameters) * 4);  // f32
        QCOMPARE(footprint.weight_type, oxinfer::DType::F32);
        QCOMPARE(oxinfer::model_footprint(kReference / "llm/qwen3/q8_0.gguf").weight_type, oxinfer::DType::Q8_0);
    }

    void sliding_layers_stop_growing_at_their_window() {
        const oxinfer::ModelFootprint footprint = oxinfer::model_footprint(kReference / "gemma/gemma4/hf");
        QVERIFY(footprint.window_kv_bytes_per_token_f32 > 0);
        QCOMPARE(footprint.window_positions, int64_t{8 + 512});
        const uint64_t at_2k = footprint.cache_bytes(2048, oxinfer::DType::F32);
        const uint64_t at_4k = footprint.cache_bytes(4096, oxinfer::DType::F32);
        QCOMPARE(at_4k - at_2k, footprint.kv_bytes_per_token_f32 * 2048);  // only the full layers grow
    }

    void unreadable_model_is_an_error_naming_it() {
        QTemporaryDir dir;
        const fs::path file = fs::path(dir.path().toStdString()) / "broken.gguf";
        std::ofstream(file) << "GGUF but not really";
        OXINFER_EXPECT_ERROR(oxinfer::model_footprint(file), "broken.gguf");
    }

    void folders_list_their_models() {
        QTemporaryDir dir;
        const fs::path root = dir.path().toStdString();
        fs::copy(kReference / "llm/qwen3/hf", root / "qwen3-tiny", fs::copy_options::recursive);
        fs::copy_file(kReference / "gemma/gemma4/f32.gguf", root / "gemma4-tiny-F32.gguf");
        std::ofstream(root / "notes.txt") << "not a model";
        const auto models = oxinfer::find_local_models(root / "no-cache", {root});
        QCOMPARE(models.size(), size_t{2});
        const auto gguf = models[0].format == "gguf" ? models[0] : models[1];
        const auto folder = models[0].format == "gguf" ? models[1] : models[0];
        QCOMPARE(gguf.id, std::string("gemma4-tiny-F32.gguf"));
        QCOMPARE(gguf.architecture, std::string("gemma4"));
        QCOMPARE(gguf.type, std::string("F32"));
        QCOMPARE(gguf.source, std::string("folder"));
        QCOMPARE(folder.id, std::string("qwen3-tiny"));
        QCOMPARE(folder.architecture, std::string("Qwen3ForCausalLM"));
        QCOMPARE(folder.format, std::string("safetensors"));
        QVERIFY(folder.bytes > 0);
        QVERIFY(folder.problem.empty());
    }
};

QTEST_GUILESS_MAIN(LocalModelsTest)
#include "test_local_models.moc"
