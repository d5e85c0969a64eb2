// Opening checkpoints: format detection by content, Hugging Face folders (single and sharded,
// with their index), the typed configs, and the GGUF <-> Hugging Face tensor names.

#include "checkpoint_writers.h"
#include "test_support.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/model_config.h>
#include <oxinfer/tensor_names.h>

#include <QTemporaryDir>
#include <QTest>

#include <cstring>
#include <fstream>

using namespace oxinfer;
using namespace oxinfer::test;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

json llama_config() {
    return json::parse(R"({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 16, "hidden_size": 8,
        "intermediate_size": 12, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
        "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": true,
        "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": [2, 3],
        "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192}})");
}

std::vector<TestTensor> some_tensors(int count) {
    std::vector<TestTensor> tensors;
    for (int i = 0; i < count; ++i)
        tensors.push_back(f32_tensor("model.layers." + std::to_string(i) + ".w", {2, 2}, random_floats(4, static_cast<uint32_t>(i))));
    return tensors;
}

}  // namespace

class CheckpointTest : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    fs::path root() const { return dir_.path().toStdString(); }

private slots:
    void opensShardedFolder() {
        const fs::path folder = root() / "sharded";
        write_hf_folder(folder, llama_config(), some_tensors(5), 3);
        std::ofstream(folder / "generation_config.json") << R"({"bos_token_id": 1, "eos_token_id": [2, 9], "temperature": 0.6, "top_p": 0.9, "do_sample": true})";
        const auto checkpoint = Checkpoint::open(folder);
        QCOMPARE(checkpoint->format(), CheckpointFormat::Safetensors);
        QCOMPARE(checkpoint->files().size(), size_t{3});
        QCOMPARE(checkpoint->tensors().size(), size_t{5});
        QCOMPARE(checkpoint->architecture(), std::string("LlamaForCausalLM"));
        for (int i = 0; i < 5; ++i)
            QCOMPARE(checkpoint->read_f32(checkpoint->get("model.layers." + std::to_string(i) + ".w")), random_floats(4, static_cast<uint32_t>(i)));

        const TransformerConfig config = read_transformer_config(*checkpoint);
        QCOMPARE(config.architecture, std::string("LlamaForCausalLM"));
        QCOMPARE(config.hidden_size, int64_t{8});
        QCOMPARE(config.head_dim, int64_t{4});
        QCOMPARE(config.num_key_value_heads, int64_t{1});
        QCOMPARE(config.rope_theta, 500000.0);
        QVERIFY(config.tie_word_embeddings);
        QVERIFY(config.rope_scaling.has_value());
        QCOMPARE(config.rope_scaling->type, std::string("llama3"));
        QCOMPARE(config.rope_scaling->factor, 32.0);
        QCOMPARE(*config.rope_scaling->original_max_position_embeddings, int64_t{8192});

        const GenerationConfig generation = read_generation_config(*checkpoint);
        QCOMPARE(generation.eos_token_ids, (std::vector<int64_t>{2, 9}));
        QCOMPARE(*generation.temperature, 0.6);
        QVERIFY(generation.do_sample);
    }

    void shardIndexErrors() {
        const fs::path folder = root() / "broken-index";
        write_hf_folder(folder, llama_config(), some_tensors(4), 2);
        fs::remove(folder / "model-00002-of-00002.safetensors");
        OXINFER_EXPECT_ERROR(Checkpoint::open(folder), "model.safetensors.index.json: names shard 'model-00002-of-00002.safetensors'");
        OXINFER_EXPECT_ERROR(Checkpoint::open(folder), "which does not exist");

        std::ofstream(folder / "model.safetensors.index.json") << R"({"weight_map": {"a": "../../etc/passwd"}})";
        OXINFER_EXPECT_ERROR(Checkpoint::open(folder), "weight_map names an invalid shard path '../../etc/passwd'");
        std::ofstream(folder / "model.safetensors.index.json") << R"({"metadata": {}})";
        OXINFER_EXPECT_ERROR(Checkpoint::open(folder), "has no \"weight_map\" object");
        std::ofstream(folder / "model.safetensors.index.json") << R"([1, 2)";
        OXINFER_EXPECT_ERROR(Checkpoint::open(folder), "model.safetensors.index.json: not valid JSON");
    }

    void duplicateTensorsAcrossShards() {
        const fs::path folder = root() / "duplicate";
        fs::create_directories(folder);
        write_bytes(folder / "a.safetensors", safetensors_bytes({f32_tensor("w", {1}, {1})}));
        write_bytes(folder / "b.safetensors", safetensors_bytes({f32_tensor("w", {1}, {2})}));
        OXINFER_EXPECT_ERROR(Checkpoint::open(folder), "tensor 'w' also appears in a.safetensors");
    }

    void detectsFormatsByContent() {
        const fs::path empty = root() / "empty.safetensors";
        std::ofstream(empty).close();
        OXINFER_EXPECT_ERROR(Checkpoint::open(empty), "empty.safetensors: file is empty");
        const fs::path text = root() / "notes.gguf";
        std::ofstream(text) << "just some text, not weights";
        OXINFER_EXPECT_ERROR(Checkpoint::open(text), "notes.gguf: unknown checkpoint format");
        OXINFER_EXPECT_ERROR(Checkpoint::open(root() / "missing.gguf"), "missing.gguf: no such file or folder");
        const fs::path nothing = root() / "no-weights";
        fs::create_directories(nothing);
        OXINFER_EXPECT_ERROR(Checkpoint::open(nothing), "no model weights found");
        // A GGUF named .safetensors is still read as GGUF.
        GgufWriter writer;
        writer.add_string("general.architecture", "qwen3");
        writer.write(root() / "misnamed.safetensors");
        QCOMPARE(Checkpoint::open(root() / "misnamed.safetensors")->format(), CheckpointFormat::Gguf);
        // A safetensors header whose length starts with byte 0x80 (the pickle PROTO opcode) is
        // still safetensors: the header is padded with spaces to 0x80 + 256·k bytes.
        std::vector<std::byte> bytes = safetensors_bytes({f32_tensor("w", {2}, {1.0f, 2.0f})});
        uint64_t header = 0;
        std::memcpy(&header, bytes.data(), 8);
        const uint64_t padded = (header + 255 - 0x80) / 256 * 256 + 0x80;  // the least >= header ending in 0x80
        bytes.insert(bytes.begin() + 8 + static_cast<std::ptrdiff_t>(header), padded - header, std::byte{' '});
        std::memcpy(bytes.data(), &padded, 8);
        QCOMPARE(bytes[0], std::byte{0x80});
        const fs::path file = root() / "header-0x80.safetensors";
        write_bytes(file, bytes);
        const auto checkpoint = Checkpoint::open(file);
        QCOMPARE(checkpoint->format(), CheckpointFormat::Safetensors);
        QCOMPARE(checkpoint->read_f32(checkpoint->get("w")), (std::vector<float>{1.0f, 2.0f}));
    }

    void configErrors() {
        OXINFER_EXPECT_ERROR(transformer_config_from_hf(json::parse(R"({"hidden_size": 8})"), "config.json"), "config.json: missing 'vocab_size'");
        OXINFER_EXPECT_ERROR(transformer_config_from_hf(json::parse(R"({"vocab_size": 4, "hidden_size": "8"})"), "config.json"), "'hidden_size' is not an integer");
        json bad = llama_config();
        bad["num_key_value_heads"] = 3;
        OXINFER_EXPECT_ERROR(transformer_config_from_hf(bad, "config.json"), "num_attention_heads (2) is not a multiple of num_key_value_heads (3)");
        bad = llama_config();
        bad["num_hidden_layers"] = 0;
        OXINFER_EXPECT_ERROR(transformer_config_from_hf(bad, "config.json"), "'num_hidden_layers' must be positive, not 0");
        OXINFER_EXPECT_ERROR(transformer_config_from_hf(json::array(), "config.json"), "config is not a JSON object");
    }

    void multimodalConfigUsesTextConfig() {
        const json config = json::parse(R"({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
            "text_config": {"model_type": "gemma3_text", "vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 3,
                            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8}})");
        const TransformerConfig parsed = transformer_config_from_hf(config, "config.json");
        QCOMPARE(parsed.architecture, std::string("Gemma3ForConditionalGeneration"));
        QCOMPARE(parsed.model_type, std::string("gemma3_text"));
        QCOMPARE(parsed.head_dim, int64_t{8});
        QCOMPARE(parsed.num_hidden_layers, int64_t{3});
    }

    void configFromGguf() {
        GgufWriter writer;
        writer.add_string("general.architecture", "qwen3");
        writer.add_u32("qwen3.embedding_length", 64);
        writer.add_u32("qwen3.block_count", 2);
        writer.add_u32("qwen3.feed_forward_length", 96);
        writer.add_u32("qwen3.attention.head_count", 4);
        writer.add_u32("qwen3.attention.head_count_kv", 2);
        writer.add_u32("qwen3.attention.key_length", 32);
        writer.add_u32("qwen3.context_length", 4096);
        writer.add_f32("qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
        writer.add_f32("qwen3.rope.freq_base", 1000000.0f);
        writer.add_strings("tokenizer.ggml.tokens", {"a", "b", "c"});
        writer.add_u32("tokenizer.ggml.bos_token_id", 0);
        writer.add_u32("tokenizer.ggml.eos_token_id", 2);
        writer.add_tensor(f32_tensor("token_embd.weight", {3, 64}, random_floats(192, 5)));
        writer.write(root() / "qwen3.gguf");
        const auto checkpoint = Checkpoint::open(root() / "qwen3.gguf");
        const TransformerConfig config = read_transformer_config(*checkpoint);
        QCOMPARE(config.architecture, std::string("Qwen3ForCausalLM"));
        QCOMPARE(config.vocab_size, int64_t{3});
        QCOMPARE(config.head_dim, int64_t{32});
        QCOMPARE(config.num_key_value_heads, int64_t{2});
        QCOMPARE(config.intermediate_size, int64_t{96});
        QCOMPARE(config.max_position_embeddings, int64_t{4096});
        QCOMPARE(config.rope_theta, 1000000.0);
        QVERIFY(config.tie_word_embeddings);  // no output.weight
        const GenerationConfig generation = read_generation_config(*checkpoint);
        QCOMPARE(generation.eos_token_ids, std::vector<int64_t>{2});
        QCOMPARE(*generation.bos_token_id, int64_t{0});

        GgufWriter missing;
        missing.add_string("general.architecture", "qwen3");
        missing.write(root() / "bare.gguf");
        OXINFER_EXPECT_ERROR(read_transformer_config(*Checkpoint::open(root() / "bare.gguf")), "missing 'qwen3.embedding_length'");
    }

    void tensorNames_data() {
        QTest::addColumn<QString>("arch");
        QTest::addColumn<QString>("gguf");
        QTest::addColumn<QString>("hf");
        QTest::newRow("embedding") << "llama" << "token_embd.weight" << "model.embed_tokens.weight";
        QTest::newRow("head") << "llama" << "output.weight" << "lm_head.weight";
        QTest::newRow("final norm") << "qwen3" << "output_norm.weight" << "model.norm.weight";
        QTest::newRow("q") << "llama" << "blk.0.attn_q.weight" << "model.layers.0.self_attn.q_proj.weight";
        QTest::newRow("q bias") << "qwen2" << "blk.12.attn_q.bias" << "model.layers.12.self_attn.q_proj.bias";
        QTest::newRow("o") << "llama" << "blk.3.attn_output.weight" << "model.layers.3.self_attn.o_proj.weight";
        QTest::newRow("q norm") << "qwen3" << "blk.27.attn_q_norm.weight" << "model.layers.27.self_attn.q_norm.weight";
        QTest::newRow("ffn norm") << "llama" << "blk.1.ffn_norm.weight" << "model.layers.1.post_attention_layernorm.weight";
        QTest::newRow("down") << "llama" << "blk.1.ffn_down.weight" << "model.layers.1.mlp.down_proj.weight";
        QTest::newRow("router") << "qwen3moe" << "blk.5.ffn_gate_inp.weight" << "model.layers.5.mlp.gate.weight";
        QTest::newRow("experts") << "qwen3moe" << "blk.5.ffn_up_exps.weight" << "model.layers.5.mlp.experts.up_proj.weight";
        QTest::newRow("gemma pre-ffn") << "gemma3" << "blk.2.ffn_norm.weight" << "model.layers.2.pre_feedforward_layernorm.weight";
        QTest::newRow("gemma post-attn") << "gemma3" << "blk.2.post_attention_norm.weight" << "model.layers.2.post_attention_layernorm.weight";
        QTest::newRow("gemma post-ffn") << "gemma3" << "blk.2.post_ffw_norm.weight" << "model.layers.2.post_feedforward_layernorm.weight";
        QTest::newRow("gemma4 ple table") << "gemma4" << "per_layer_token_embd.weight" << "model.embed_tokens_per_layer.weight";
        QTest::newRow("gemma4 ple gate") << "gemma4" << "blk.7.inp_gate.weight" << "model.layers.7.per_layer_input_gate.weight";
        QTest::newRow("gemma4 layer scalar") << "gemma4" << "blk.7.layer_output_scale.weight" << "model.layers.7.layer_scalar";
        QTest::newRow("gemma4 assistant") << "gemma4-assistant" << "nextn.pre_projection.weight" << "pre_projection.weight";
    }

    void tensorNames() {
        QFETCH(QString, arch);
        QFETCH(QString, gguf);
        QFETCH(QString, hf);
        QCOMPARE(QString::fromStdString(hf_tensor_name(gguf.toStdString(), arch.toStdString()).value_or("(none)")), hf);
        QCOMPARE(QString::fromStdString(gguf_tensor_name(hf.toStdString(), arch.toStdString()).value_or("(none)")), gguf);
    }

    void namesWithoutCounterpart() {
        QVERIFY(!hf_tensor_name("rope_freqs.weight", "llama"));
        QVERIFY(!hf_tensor_name("blk.x.attn_q.weight", "llama"));
        QVERIFY(!hf_tensor_name("blk.0.attn_q", "llama"));
        QVERIFY(!hf_tensor_name("blk.0.unknown.weight", "llama"));
        QVERIFY(!gguf_tensor_name("model.layers.0.self_attn.rotary_emb.inv_freq", "llama"));
        QCOMPARE(*hf_architecture("qwen3moe"), std::string("Qwen3MoeForCausalLM"));
        QCOMPARE(*gguf_architecture("LlamaForCausalLM"), std::string("llama"));
        QVERIFY(!hf_architecture("not-an-arch"));
    }
};

QTEST_APPLESS_MAIN(CheckpointTest)
#include "test_checkpoint.moc"
