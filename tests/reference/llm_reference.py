"""Reference checkpoints and goldens for tests/test_llm_reference.cpp.

Run with Debian's Python, torch and numpy (transformers is not needed):

    /usr/bin/python3 tests/reference/llm_reference.py

For each case it builds a tiny random-weight model and writes, into llm/<case>/:

    hf/                config.json, generation_config.json, model.safetensors (float32),
                       tokenizer.json, tokenizer_config.json: a Hugging Face folder
    model.bin          the same state dict through torch.save (pytorch_model.bin's format)
    f32.gguf           the same weights as llama.cpp's converter lays them out, with the vocabulary
    bf16.safetensors   the weights rounded to bfloat16, stored as BF16
    q8_0.gguf          the matrices quantised to Q8_0 (norms stay float32, as llama.cpp keeps them)
    golden.json        the prompt, and for each weight variant (f32, bf16, q8_0) the 32 greedy
                       tokens after the prompt and the smallest top-1/top-2 logit gap met on the
                       way (so a test knows its margin)
    <variant>_logits.npy  float32 logits of every position of the prompt and the greedy tokens
                       (the last one excepted), one forward pass, shape (43, 128)
    q8_0_decode_logits.npy  the same positions as the engine's decode path computes them: prompt
                       prefilled in float32, then one token at a time with int8-quantised
                       activations (q8_0 and q4_k greedy tokens follow this path too)
    q8_0_int8_prefill_*  the q8_0 goldens with int8 activations in the prefill too: the engine's
                       path for Q8_0 weights in the interleaved layout (kernels/interleave.h),
                       whose prefill multiplies int8 activations as its GEMV does

and a Q4_K case (dimensions of 256, Q4_K's block) with q4_k.gguf only. Its products with Q4_K
weights take int8 activations in the prefill too (the engine's Q4_K GEMM quantises them as its
GEMV does, like llama.cpp), so q4_k_decode_logits.npy and the greedy tokens have every position
computed that way. `llm_reference.py qwen3_q4_k` rewrites that case alone.

The forward pass is written here from the Hugging Face modeling code of each family
(modeling_llama.py, modeling_qwen2.py, modeling_qwen3.py, modeling_qwen3_moe.py), in float32:
RMSNorm in float32, rotate_half RoPE with cos/sin from float32 inverse frequencies (llama3
scaling as modeling_rope_utils computes it), grouped-query attention with repeat_kv, softmax in
float32, SwiGLU MLPs, and for Qwen3-MoE a float32 softmax router, top-k, renormalised when
norm_topk_prob. Greedy continuations recompute the whole sequence at every step (no cache).
Quantised variants run the same forward on the dequantised weights; the Q8_0 and Q4_K blocks
are decoded with ggml_blocks_reference.py's numpy decoders. File writers follow the published
format descriptions (safetensors header, GGUF v3), not the C++ readers.
"""

import json
import math
import struct
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ggml_blocks_reference as ggml  # noqa: E402

OUT = Path(__file__).resolve().parent / "llm"
F32 = np.float32

# ---- the tokenizer: byte-level BPE over printable ASCII and newline, a few merges, ChatML ----

def byte_level_char(b):
    # GPT-2's bytes_to_unicode: printable bytes map to themselves, others to 256 + n.
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    if b in printable:
        return chr(b)
    n = sum(1 for x in range(b) if x not in printable)
    return chr(256 + n)


BASE_TOKENS = [byte_level_char(b) for b in [10] + list(range(32, 127))]  # 96 tokens
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["Ġ t", "h e", "i n", "e r", "a n", "r e", "o n", "Ġ a", "e n", "a t", "o u", "e d", "h a", "t o", "o r",
          "i t", "i s", "h i", "e s", "n g", "Ġ s", "Ġ w", "Ġ o", "Ġ b", "l l", "Ġ c", "Ġ f", "Ġ m", "a r"]
# Added tokens come after the model's vocabulary, as tokenizers numbers them.
VOCAB = BASE_TOKENS + [m.replace(" ", "") for m in MERGES] + SPECIALS
assert len(VOCAB) == 128 and len(set(VOCAB)) == 128
EOS = VOCAB.index("<|im_end|>")
CHAT_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
                 "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def tokenizer_json():
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": VOCAB.index(s), "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for s in SPECIALS],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(VOCAB) if t not in SPECIALS}, "merges": MERGES},
    }


def tokenizer_config_json():
    return {"add_bos_token": False, "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
            "chat_template": CHAT_TEMPLATE, "model_max_length": 256}


# ---- model cases ----

COMMON = dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, rms_norm_eps=1e-6, max_position_embeddings=256, torch_dtype="float32",
              bos_token_id=None, eos_token_id=EOS)

CASES = {
    # Llama 3.2-style: llama3 RoPE scaling (short original context so every band of the rule is
    # used), tied head.
    "llama3": dict(COMMON, architectures=["LlamaForCausalLM"], model_type="llama", head_dim=8, rope_theta=500000.0,
                   tie_word_embeddings=True, attention_bias=False, mlp_bias=False,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 64}),
    # Llama 3.1-style untied head, plain RoPE.
    "llama3_untied": dict(COMMON, architectures=["LlamaForCausalLM"], model_type="llama", head_dim=8, rope_theta=10000.0,
                          tie_word_embeddings=False, attention_bias=False, mlp_bias=False),
    "qwen2": dict(COMMON, architectures=["Qwen2ForCausalLM"], model_type="qwen2", rope_theta=1000000.0,
                  tie_word_embeddings=False, use_sliding_window=False),
    # Qwen3: head_dim 16 with 4 heads (64 != hidden 32, as in real Qwen3), q/k norms, tied.
    "qwen3": dict(COMMON, architectures=["Qwen3ForCausalLM"], model_type="qwen3", head_dim=16, rope_theta=1000000.0,
                  tie_word_embeddings=True, attention_bias=False),
    "qwen3_moe": dict(COMMON, architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe", head_dim=16, rope_theta=1000000.0,
                      tie_word_embeddings=False, attention_bias=False, num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=32, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[]),
}

# Q4_K works on 256-value blocks, so its case has rows of 256.
Q4K_CASE = dict(COMMON, architectures=["Qwen3ForCausalLM"], model_type="qwen3", hidden_size=256, intermediate_size=256,
                num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, head_dim=128, rope_theta=1000000.0,
                tie_word_embeddings=True, attention_bias=False)

PROMPT = [VOCAB.index(c) for c in "Hi"] + [VOCAB.index("Ġt"), VOCAB.index("he"), 40, 41, 5, 77, 101, 3, 64, 12]
GREEDY_TOKENS = 32


def family(cfg):
    return cfg["architectures"][0]


def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def make_weights(cfg, seed):
    """A state dict in Hugging Face names. Gains are chosen so that the layers outweigh the token's
    own embedding in the residual stream (else a tied head just repeats the last token) and the
    logits spread over a few units."""
    g = torch.Generator().manual_seed(seed)
    h, inter, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd, nh, nkv = head_dim(cfg), cfg["num_attention_heads"], cfg["num_key_value_heads"]

    def mat(rows, cols, gain=1.0):
        return torch.randn(rows, cols, generator=g) * (gain / math.sqrt(cols))

    def norm(n):
        return 1.0 + 0.2 * torch.randn(n, generator=g)

    w = {"model.embed_tokens.weight": torch.randn(v, h, generator=g)}
    arch = family(cfg)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm(h)
        w[p + "post_attention_layernorm.weight"] = norm(h)
        w[p + "self_attn.q_proj.weight"] = mat(nh * hd, h, 2.0)
        w[p + "self_attn.k_proj.weight"] = mat(nkv * hd, h, 2.0)
        w[p + "self_attn.v_proj.weight"] = mat(nkv * hd, h)
        w[p + "self_attn.o_proj.weight"] = mat(h, nh * hd, 4.0)
        if arch == "Qwen2ForCausalLM":
            for name, n in (("q_proj", nh * hd), ("k_proj", nkv * hd), ("v_proj", nkv * hd)):
                w[p + f"self_attn.{name}.bias"] = 0.5 * torch.randn(n, generator=g)
        if arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM"):
            w[p + "self_attn.q_norm.weight"] = norm(hd)
            w[p + "self_attn.k_norm.weight"] = norm(hd)
        if arch == "Qwen3MoeForCausalLM":
            e, mi = cfg["num_experts"], cfg["moe_intermediate_size"]
            w[p + "mlp.gate.weight"] = mat(e, h, 3.0)
            for j in range(e):
                q = p + f"mlp.experts.{j}."
                w[q + "gate_proj.weight"] = mat(mi, h)
                w[q + "up_proj.weight"] = mat(mi, h)
                w[q + "down_proj.weight"] = mat(h, mi)
        else:
            w[p + "mlp.gate_proj.weight"] = mat(inter, h, 2.0)
            w[p + "mlp.up_proj.weight"] = mat(inter, h, 2.0)
            w[p + "mlp.down_proj.weight"] = mat(h, inter, 4.0)
    w["model.norm.weight"] = norm(h)
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = mat(v, h, 4.0)
    return w


# ---- the forward pass, after transformers' modeling code ----

def inverse_frequencies(cfg):
    dim = head_dim(cfg)
    inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    rs = cfg.get("rope_scaling")
    if rs and rs.get("rope_type") == "llama3":
        factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        inv = torch.where(medium, smoothed, scaled)
    return inv


def rms_norm(x, weight, eps):
    x32 = x.float()
    return weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def swiglu_mlp(x, gate, up, down, lin, pos):
    return lin(torch.nn.functional.silu(lin(x, gate, pos)) * lin(x, up, pos), down, pos)


def quantize_activations(x, block):
    """The decode path's int8 activations (kernels/matmul.cpp): per block of `block` values of each
    row, d = amax / 127 in float32 and q = round-to-nearest-even(x / d), used as q * d."""
    rows = x.reshape(-1, block)
    d = rows.abs().max(dim=1, keepdim=True).values / 127
    inv = torch.where(d > 0, 1 / torch.where(d > 0, d, torch.ones_like(d)), torch.zeros_like(d))
    q = torch.round(rows * inv)  # torch.round rounds half to even, as nearbyint does
    return (q * d).reshape(x.shape)


def forward(cfg, w, ids, act=None):
    """Logits of every position. `act` = (block, first_row): emulate the engine's decode path, whose
    matrix products with quantised weights take int8-quantised activations, for rows >= first_row
    (and for the head of row first_row - 1, the prompt's last row, computed alone)."""

    def lin(x, weight, pos, first_row=act[1] if act else 0):
        if act:
            decoded = pos >= first_row  # rows of tokens evaluated one at a time
            x = x.clone()
            x[decoded] = quantize_activations(x[decoded], act[0])
        return x @ weight.T

    arch = family(cfg)
    t = len(ids)
    pos = torch.arange(t)
    hd, nh, nkv = head_dim(cfg), cfg["num_attention_heads"], cfg["num_key_value_heads"]
    eps = cfg["rms_norm_eps"]
    x = w["model.embed_tokens.weight"][torch.tensor(ids)]
    freqs = torch.arange(t).float()[:, None] * inverse_frequencies(cfg)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
    mask = torch.full((t, t), float("-inf")).triu(1)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)

        def proj(name, heads):
            y = lin(h, w[p + f"self_attn.{name}.weight"], pos)
            if p + f"self_attn.{name}.bias" in w:
                y = y + w[p + f"self_attn.{name}.bias"]
            return y.view(t, heads, hd)

        q, k, v = proj("q_proj", nh), proj("k_proj", nkv), proj("v_proj", nkv)
        if arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM"):
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(nh // nkv, dim=1)  # repeat_kv: each kv head serves consecutive q heads
        v = v.repeat_interleave(nh // nkv, dim=1)
        scores = torch.einsum("qhd,khd->hqk", q, k) * hd ** -0.5 + mask
        probs = torch.softmax(scores.float(), dim=-1)
        attn = torch.einsum("hqk,khd->qhd", probs, v).reshape(t, nh * hd)
        x = x + lin(attn, w[p + "self_attn.o_proj.weight"], pos)
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if arch == "Qwen3MoeForCausalLM":
            router = torch.softmax(lin(h, w[p + "mlp.gate.weight"], pos).float(), dim=-1)
            top_w, top_i = torch.topk(router, cfg["num_experts_per_tok"], dim=-1)
            if cfg["norm_topk_prob"]:
                top_w = top_w / top_w.sum(dim=-1, keepdim=True)
            out = torch.zeros_like(h)
            for e in range(cfg["num_experts"]):
                rows, slot = torch.where(top_i == e)
                if len(rows) == 0:
                    continue
                q_ = p + f"mlp.experts.{e}."
                y = swiglu_mlp(h[rows], w[q_ + "gate_proj.weight"], w[q_ + "up_proj.weight"], w[q_ + "down_proj.weight"], lin, pos[rows])
                out.index_add_(0, rows, y * top_w[rows, slot, None])
            x = x + out
        else:
            x = x + swiglu_mlp(h, w[p + "mlp.gate_proj.weight"], w[p + "mlp.up_proj.weight"], w[p + "mlp.down_proj.weight"], lin, pos)
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    # The prompt's prefill computes the head for its last row alone, which also takes the GEMV path.
    return lin(x, head, pos, act[1] - 1 if act else 0)


def goldens(cfg, w, act_block=None, quantised_prefill=False):
    """Greedy continuation (whole sequence recomputed each step), then the logits of every
    position of prompt + continuation[:-1] from one forward pass. With act_block (quantised
    weights) the continuation and the "decode_logits" follow the engine's decode path: the prompt
    as one prefill, then each token with int8 activations of that block size."""
    act = (act_block, 0 if quantised_prefill else len(PROMPT)) if act_block else None
    with torch.no_grad():
        ids = list(PROMPT)
        greedy, gap = [], float("inf")
        for _ in range(GREEDY_TOKENS):
            last = forward(cfg, w, ids, act)[-1]
            top2 = torch.topk(last, 2).values
            gap = min(gap, float(top2[0] - top2[1]))
            nxt = int(torch.argmax(last))
            greedy.append(nxt)
            ids.append(nxt)
        out = {"greedy": greedy, "min_greedy_gap": gap, "logits": forward(cfg, w, ids[:-1]).numpy().astype(F32)}
        if act:
            out["decode_logits"] = forward(cfg, w, ids[:-1], act).numpy().astype(F32)
    return out


def write_goldens(case, results):
    """golden.json with the prompt and per variant the greedy tokens and margin; <variant>_logits.npy
    with float32 logits of shape (positions, vocab)."""
    summary = {"prompt": PROMPT}
    for variant, g in results.items():
        np.save(case / f"{variant}_logits.npy", g["logits"])
        if "decode_logits" in g:
            np.save(case / f"{variant}_decode_logits.npy", g["decode_logits"])
        summary[variant] = {"greedy": g["greedy"], "min_greedy_gap": g["min_greedy_gap"]}
    (case / "golden.json").write_text(json.dumps(summary, indent=1) + "\n")


# ---- quantisation (into the ggml block layouts) ----

def f16_bytes(values):
    return np.asarray(values, dtype=F32).astype("<f2").view(np.uint8).reshape(-1, 2)


def quantize_q8_0(m):
    """ggml's quantize_row_q8_0_ref: d = amax/127, q = round(x/d), per 32 values."""
    blocks = m.reshape(-1, 32).astype(F32)
    d = np.abs(blocks).max(axis=1) / F32(127)
    inv = np.where(d > 0, F32(1) / np.where(d > 0, d, 1), 0).astype(F32)
    q = np.round(blocks * inv[:, None]).astype(np.int8)  # ties to even (ggml: away from zero); any valid block will do
    out = np.zeros((blocks.shape[0], 34), dtype=np.uint8)
    out[:, 0:2] = f16_bytes(d)
    out[:, 2:] = q.view(np.uint8)
    return out


def quantize_q4_k(m):
    """Per 32-value sub-block a step (max - min)/15 and an offset -min, both coded on 6 bits
    against the block's half d and dmin; codes 0..15 with value = d*sc*q - dmin*m."""
    blocks = m.reshape(-1, 8, 32).astype(F32)
    lo = np.minimum(blocks.min(axis=2), 0)
    hi = blocks.max(axis=2)
    scales, mins = (hi - lo) / F32(15), -lo
    d = (scales.max(axis=1) / F32(63)).astype("<f2").astype(F32)
    dmin = (mins.max(axis=1) / F32(63)).astype("<f2").astype(F32)
    sc = np.clip(np.floor(scales / np.where(d > 0, d, 1)[:, None] + 0.5), 0, 63).astype(np.uint8)
    mn = np.clip(np.floor(mins / np.where(dmin > 0, dmin, 1)[:, None] + 0.5), 0, 63).astype(np.uint8)
    step = (d[:, None] * sc)[:, :, None]
    offset = (dmin[:, None] * mn)[:, :, None]
    q = np.clip(np.floor((blocks + offset) / np.where(step > 0, step, 1) + 0.5), 0, 15).astype(np.uint8)
    q = np.where(step > 0, q, 0).astype(np.uint8)
    out = np.zeros((blocks.shape[0], 144), dtype=np.uint8)
    out[:, 0:2] = f16_bytes(d)
    out[:, 2:4] = f16_bytes(dmin)
    out[:, 4:8] = (sc[:, :4] & 63) | ((sc[:, 4:] >> 4) << 6)
    out[:, 8:12] = (mn[:, :4] & 63) | ((mn[:, 4:] >> 4) << 6)
    out[:, 12:16] = (sc[:, 4:] & 15) | ((mn[:, 4:] & 15) << 4)
    pairs = q.reshape(-1, 4, 2, 32)
    out[:, 16:] = (pairs[:, :, 0, :] | (pairs[:, :, 1, :] << 4)).reshape(-1, 128)
    return out


def dequantize(kind, blocks, shape):
    return torch.from_numpy((ggml.q8_0(blocks) if kind == "q8_0" else ggml.q4_k(blocks)).reshape(shape).copy())


# ---- file writers ----

def write_safetensors(path, tensors, dtype):
    header, chunks, offset = {}, [], 0
    for name, t in tensors.items():
        kind = dtype
        if t.dtype == torch.int64:  # index buffers stay integers
            kind, bits = "I64", t.contiguous().numpy().astype("<i8").tobytes()
        elif dtype == "BF16":
            bits = (t.contiguous().float().to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes())
        else:
            bits = t.contiguous().float().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": kind, "shape": list(t.shape), "data_offsets": [offset, offset + len(bits)]}
        chunks.append(bits)
        offset += len(bits)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))


GGUF_TYPES = {"u32": 4, "i32": 5, "f32": 6, "bool": 7, "string": 8, "array": 9}
GGML_TYPES = {"f32": 0, "q8_0": 8, "q4_k": 12}


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_value(kind, value):
    if kind == "u32":
        return struct.pack("<I", value)
    if kind == "i32":
        return struct.pack("<i", value)
    if kind == "f32":
        return struct.pack("<f", value)
    if kind == "bool":
        return struct.pack("<?", value)
    if kind == "string":
        return gguf_string(value)
    item, values = value
    return struct.pack("<IQ", GGUF_TYPES[item], len(values)) + b"".join(gguf_value(item, v) for v in values)


def write_gguf(path, metadata, tensors):
    """metadata: [(key, kind, value)]; tensors: [(name, ggml type, numpy shape, raw bytes)]."""
    alignment = 32
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for key, kind, value in metadata:
        out += gguf_string(key) + struct.pack("<I", GGUF_TYPES[kind]) + gguf_value(kind, value)
    offset, data = 0, b""
    for name, kind, shape, raw in tensors:
        dims = list(reversed(shape))  # ggml order: innermost first
        out += gguf_string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        out += struct.pack("<IQ", GGML_TYPES[kind], offset)
        pad = -len(raw) % alignment
        data += raw + b"\0" * pad
        offset += len(raw) + pad
    out += b"\0" * (-len(out) % alignment)
    path.write_bytes(out + data)


GGUF_ARCH = {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3", "Qwen3MoeForCausalLM": "qwen3moe"}
GGUF_LAYER_NAMES = {
    "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm", "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down", "mlp.gate": "ffn_gate_inp",
}


def llama_cpp_permute(wt, heads):
    """convert_hf_to_gguf.py's LlamaModel.permute: the rows of each head reordered so that rotary
    pairs (i, i + d/2) become adjacent (2i, 2i+1), for ggml's interleaved RoPE."""
    rows = wt.shape[0]
    return wt.reshape(heads, 2, rows // heads // 2, *wt.shape[1:]).swapaxes(1, 2).reshape(wt.shape)


def llama3_rope_factors(cfg):
    """convert_hf_to_gguf.py's rope_freqs.weight for llama3 scaling: a divisor per frequency."""
    rs = cfg["rope_scaling"]
    dim = head_dim(cfg)
    factor, low, high, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
    freqs = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    out = []
    for f in freqs.tolist():
        wavelen = 2 * math.pi / f
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=F32)


def gguf_metadata(cfg):
    a = GGUF_ARCH[family(cfg)]
    md = [("general.architecture", "string", a), ("general.name", "string", "oxinfer reference"),
          (f"{a}.block_count", "u32", cfg["num_hidden_layers"]), (f"{a}.context_length", "u32", cfg["max_position_embeddings"]),
          (f"{a}.embedding_length", "u32", cfg["hidden_size"]), (f"{a}.feed_forward_length", "u32", cfg["intermediate_size"]),
          (f"{a}.attention.head_count", "u32", cfg["num_attention_heads"]),
          (f"{a}.attention.head_count_kv", "u32", cfg["num_key_value_heads"]),
          (f"{a}.attention.key_length", "u32", head_dim(cfg)), (f"{a}.attention.value_length", "u32", head_dim(cfg)),
          (f"{a}.rope.dimension_count", "u32", head_dim(cfg)),
          (f"{a}.rope.freq_base", "f32", cfg["rope_theta"]), (f"{a}.attention.layer_norm_rms_epsilon", "f32", cfg["rms_norm_eps"]),
          (f"{a}.vocab_size", "u32", cfg["vocab_size"])]
    if "num_experts" in cfg:
        md += [(f"{a}.expert_count", "u32", cfg["num_experts"]), (f"{a}.expert_used_count", "u32", cfg["num_experts_per_tok"]),
               (f"{a}.expert_feed_forward_length", "u32", cfg["moe_intermediate_size"])]
    types = [3 if t in SPECIALS else 1 for t in VOCAB]  # CONTROL, NORMAL
    md += [("tokenizer.ggml.model", "string", "gpt2"), ("tokenizer.ggml.pre", "string", "gpt-2"),
           ("tokenizer.ggml.tokens", "array", ("string", VOCAB)), ("tokenizer.ggml.token_type", "array", ("i32", types)),
           ("tokenizer.ggml.merges", "array", ("string", MERGES)), ("tokenizer.ggml.eos_token_id", "u32", EOS),
           ("tokenizer.ggml.padding_token_id", "u32", VOCAB.index("<|endoftext|>")),
           ("tokenizer.ggml.add_bos_token", "bool", False), ("tokenizer.chat_template", "string", CHAT_TEMPLATE)]
    return md


def gguf_tensors(cfg, w, kind):
    """llama.cpp's names and layout; matrices in `kind`, 1-D tensors float32. Returns the tensor
    list and the weights as a reader of this file sees them (dequantised), in HF names and layout."""
    arch = family(cfg)
    seen = dict(w)
    out = []

    def add_matrix(name, hf_names, t):
        nonlocal out
        arr = t.float().numpy().astype(F32)
        if kind == "f32":
            out.append((name, "f32", list(arr.shape), arr.astype("<f4").tobytes()))
            return
        blocks = quantize_q8_0(arr) if kind == "q8_0" else quantize_q4_k(arr)
        out.append((name, kind, list(arr.shape), blocks.tobytes()))
        deq = dequantize(kind, blocks, arr.shape)
        for i, hf in enumerate(hf_names):
            seen[hf] = deq[i] if len(hf_names) > 1 else deq

    def add_vector(name, t):
        out.append((name, "f32", [t.shape[0]], t.float().numpy().astype("<f4").tobytes()))

    add_matrix("token_embd.weight", ["model.embed_tokens.weight"], w["model.embed_tokens.weight"])
    if arch == "LlamaForCausalLM" and cfg.get("rope_scaling"):
        factors = llama3_rope_factors(cfg)
        out.append(("rope_freqs.weight", "f32", [len(factors)], factors.astype("<f4").tobytes()))
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        for hf, gg in GGUF_LAYER_NAMES.items():
            for suffix in ("weight", "bias"):
                key = p + hf + "." + suffix
                if key not in w:
                    continue
                t = w[key]
                if arch == "LlamaForCausalLM" and hf in ("self_attn.q_proj", "self_attn.k_proj"):
                    heads = cfg["num_attention_heads"] if hf == "self_attn.q_proj" else cfg["num_key_value_heads"]
                    permuted = llama_cpp_permute(t, heads)
                    if t.dim() == 2:
                        add_matrix(f"blk.{i}.{gg}.{suffix}", [key], permuted)
                        # the permutation is undone for the reference: it reads HF's layout
                        if kind != "f32":
                            inverse = torch.argsort(llama_cpp_permute(torch.arange(t.shape[0]), heads))
                            seen[key] = seen[key][inverse]
                        continue
                if t.dim() == 2:
                    add_matrix(f"blk.{i}.{gg}.{suffix}", [key], t)
                else:
                    add_vector(f"blk.{i}.{gg}.{suffix}", t)
        if arch == "Qwen3MoeForCausalLM":
            # Experts stacked as llama.cpp's ffn_{gate,up,down}_exps: numpy shape (experts, rows, cols).
            for proj, gg in (("gate_proj", "ffn_gate_exps"), ("up_proj", "ffn_up_exps"), ("down_proj", "ffn_down_exps")):
                names = [p + f"mlp.experts.{e}.{proj}.weight" for e in range(cfg["num_experts"])]
                add_matrix(f"blk.{i}.{gg}.weight", names, torch.stack([w[n] for n in names]))
    add_vector("output_norm.weight", w["model.norm.weight"])
    if "lm_head.weight" in w:
        add_matrix("output.weight", ["lm_head.weight"], w["lm_head.weight"])
    return out, seen


def pick_weights(cfg, first_seed, variant=lambda w: w, act_block=None, quantised_prefill=False):
    """The first seed from `first_seed` whose greedy run is a usable test: every step's top-1 logit
    at least 0.01 above the runner-up (so float32 rounding cannot flip it) and at least 8 distinct
    tokens (not a loop on one token). Deterministic: the same seed is found on every run."""
    for seed in range(first_seed, first_seed + 100):
        w = make_weights(cfg, seed)
        g = goldens(cfg, variant(w), act_block, quantised_prefill)
        if g["min_greedy_gap"] >= 0.01 and len(set(g["greedy"])) >= 8:
            return w
    raise SystemExit("no usable seed")


def bf16_rounded(w):
    return {k: v.to(torch.bfloat16).float() for k, v in w.items()}


def write_hf_folder(folder, cfg, w):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [EOS, VOCAB.index("<|endoftext|>")],
                                                               "pad_token_id": VOCAB.index("<|endoftext|>")}, indent=2) + "\n")
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer_json(), ensure_ascii=False) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config_json(), indent=2) + "\n")
    write_safetensors(folder / "model.safetensors", w, "F32")


def main():
    only = set(sys.argv[1:])  # case names to rewrite; all when empty
    OUT.mkdir(exist_ok=True)
    for index, (name, cfg) in enumerate(CASES.items()):
        if only and name not in only:
            continue
        case = OUT / name
        case.mkdir(exist_ok=True)
        w = pick_weights(cfg, 1000 + 100 * index)
        write_hf_folder(case / "hf", cfg, w)
        torch.save({k: v.clone() for k, v in w.items()}, case / "model.bin")
        f32_tensors, _ = gguf_tensors(cfg, w, "f32")
        write_gguf(case / "f32.gguf", gguf_metadata(cfg), f32_tensors)
        write_safetensors(case / "bf16.safetensors", w, "BF16")
        q8_tensors, q8_seen = gguf_tensors(cfg, w, "q8_0")
        write_gguf(case / "q8_0.gguf", gguf_metadata(cfg), q8_tensors)
        golden = {"f32": goldens(cfg, w), "bf16": goldens(cfg, bf16_rounded(w)), "q8_0": goldens(cfg, q8_seen, 32),
                  "q8_0_int8_prefill": goldens(cfg, q8_seen, 32, quantised_prefill=True)}
        write_goldens(case, golden)
        print(name, "min greedy gaps:", {k: round(golden[k]["min_greedy_gap"], 5) for k in ("f32", "bf16", "q8_0")},
              "distinct greedy tokens:", len(set(golden["f32"]["greedy"])))

    if only and "qwen3_q4_k" not in only:
        return
    case = OUT / "qwen3_q4_k"
    case.mkdir(exist_ok=True)
    w = pick_weights(Q4K_CASE, 2000, lambda w: gguf_tensors(Q4K_CASE, w, "q4_k")[1], 256, quantised_prefill=True)
    q4_tensors, q4_seen = gguf_tensors(Q4K_CASE, w, "q4_k")
    write_gguf(case / "q4_k.gguf", gguf_metadata(Q4K_CASE), q4_tensors)
    golden = {"q4_k": goldens(Q4K_CASE, q4_seen, 256, quantised_prefill=True)}
    write_goldens(case, golden)
    print("qwen3_q4_k min greedy gap:", round(golden["q4_k"]["min_greedy_gap"], 5), "distinct greedy tokens:", len(set(golden["q4_k"]["greedy"])))


if __name__ == "__main__":
    main()
