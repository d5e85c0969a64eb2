"""Reference checkpoints and goldens for Gemma 3 and Gemma 4 text (tests/test_gemma_reference.cpp).

Run with Debian's Python, torch and numpy (transformers is not needed):

    /usr/bin/python3 tests/reference/gemma_reference.py [case ...]

The forward pass is written here from transformers' modeling_gemma3.py and modeling_gemma4.py
(and the notes in ../shared/specs/arch-specs.md sections 2 and 4.3):

  Gemma 3  embeddings times sqrt(hidden); per layer h += post_attn_norm(attn(input_norm(h))),
           h += post_ffw_norm(mlp(pre_ffw_norm(h))) with every RMSNorm multiplying by (1 + w) (q/k
           norms too, before RoPE); attention scaled by query_pre_attn_scalar^-1/2; sliding layers
           see the current key and the window - 1 before it, with their own RoPE base
           (rope_local_base_freq) and no scaling; full layers use rope_theta with linear scaling;
           MLP down(gelu_tanh(gate(x)) * up(x)); tied head.
  Gemma 4  the same sandwich with RMSNorms that multiply by w as stored; q_norm and k_norm with
           weights, v normalised without one; attention scale 1; full layers with their own head
           size (global_head_dim) and "proportional" RoPE (inv_freq over the full head size, only
           the first partial_rotary_factor share of the pairs rotating); KV sharing (the last
           num_kv_shared_layers layers read the keys and values of the last earlier layer of their
           type); attention_k_eq_v (full layers' values are their raw keys); per-layer embeddings
           (PLE) mixed into every layer's residual; a layer_scalar per layer; the double-wide MLP
           on shared layers; final logit softcapping.

Cases (each in gemma/<case>/):

  gemma3   Gemma3ForConditionalGeneration as released: text settings in text_config, tensors under
           language_model.model.* (vision tower omitted), rope_scaling linear 8 on full layers.
           hf/ (float32), hf_text/ (Gemma3ForCausalLM, model.*, rope_parameters per layer type as
           transformers 5 writes them), bf16.safetensors, f32.gguf (llama.cpp's gemma3 layout).
  gemma4   Gemma4ForConditionalGeneration's language model (model.language_model.*): PLE, KV
           sharing over the last 3 of 7 layers (their unused k/v weights still in the file, as in
           the released E2B), double-wide MLP, layer_scalar, softcap 30. hf/, hf_text/
           (Gemma4ForCausalLM, model.*), bf16.safetensors, f32.gguf (gemma4).
  gemma4_keqv  Gemma4ForCausalLM with attention_k_eq_v and num_global_key_value_heads (as the
           31B), no PLE, no sharing. hf/, bf16.safetensors, f32.gguf.
  gemma4_moe  as gemma4_keqv with the 26B-A4B's mixture of experts beside each MLP (4 experts, top 2,
           fused gate_up_proj, router scale and per-expert scale). hf/, bf16.safetensors, f32.gguf.
  gemma4_assistant  the gemma4 case's drafter (Gemma4AssistantForCausalLM, modeling_gemma4_assistant.py):
           4 query-only layers over the main model's caches, pre/post projections, ordered
           embeddings with 8 centroids (top 2), trained here on the main model's greedy text
           (train_assistant) so that its drafts are sometimes right. hf/ (with the centroids) and
           f32.gguf (gemma4-assistant, centroids dropped as llama.cpp's converter does). Its goldens
           are in gemma4/golden.json under f32.assistant: the drafts from every position the
           speculative loop starts at and the loop's draft / accepted counts, for both files.
           `gemma_reference.py assistant` rewrites it alone (from the gemma4 files).

Every case: sliding window 8, so the 700-token sequence crosses it many times, and the engine's
ring cache for sliding layers (window + 512 slots) wraps.

  golden.json      the prompt, the 32 greedy tokens after it and the smallest top-1/top-2 gap on
                   the way, for f32 and bf16 weights
  <variant>_logits.npy  float32 logits of prompt + greedy[:-1] from one forward pass (computed in
                   float64 on the checkpoint's values); decoding token by token with the cache is
                   checked to give the same here.
"""

import json
import math
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llm_reference as base  # noqa: E402  (tokenizer and file writers)

ACC = torch.float64  # see qwen35_reference.py: goldens in float64 on the stored values
torch.set_default_dtype(ACC)

OUT = Path(__file__).resolve().parent / "gemma"
F32 = np.float32
PROMPT_LENGTH = 668
GREEDY_TOKENS = 32
WINDOW = 8

GEMMA3_TEXT = dict(
    model_type="gemma3_text", vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=6,
    num_attention_heads=4, num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=24, hidden_activation="gelu_pytorch_tanh",
    rms_norm_eps=1e-6, rope_theta=1000000.0, rope_local_base_freq=10000.0, rope_scaling={"rope_type": "linear", "factor": 8.0},
    sliding_window=WINDOW, layer_types=["sliding_attention"] * 5 + ["full_attention"], max_position_embeddings=1024,
    final_logit_softcapping=None, attn_logit_softcapping=None, attention_bias=False, tie_word_embeddings=True,
    bos_token_id=2, eos_token_id=base.EOS, pad_token_id=0, torch_dtype="float32")

GEMMA4_TEXT = dict(
    model_type="gemma4_text", vocab_size=128, hidden_size=32, intermediate_size=48, num_hidden_layers=7,
    num_attention_heads=4, num_key_value_heads=1, head_dim=16, global_head_dim=32, num_global_key_value_heads=None,
    attention_k_eq_v=False, hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, sliding_window=WINDOW,
    layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                 "sliding_attention", "full_attention"],
    rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                     "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}},
    final_logit_softcapping=30.0, vocab_size_per_layer_input=128, hidden_size_per_layer_input=16, num_kv_shared_layers=3,
    use_double_wide_mlp=True, enable_moe_block=False, attention_bias=False, max_position_embeddings=1024,
    use_bidirectional_attention=None, tie_word_embeddings=True, bos_token_id=2, eos_token_id=base.EOS, pad_token_id=0,
    dtype="float32")

CASES = {
    "gemma3": dict(architectures=["Gemma3ForConditionalGeneration"], model_type="gemma3", text_config=GEMMA3_TEXT,
                   vision_config={"model_type": "siglip_vision_model", "hidden_size": 16, "num_hidden_layers": 1},
                   mm_tokens_per_image=4, boi_token_index=120, eoi_token_index=121, image_token_index=122,
                   eos_token_id=base.EOS, torch_dtype="float32"),
    "gemma4": dict(architectures=["Gemma4ForConditionalGeneration"], model_type="gemma4", text_config=GEMMA4_TEXT,
                   vision_config=None, audio_config=None, tie_word_embeddings=True, eos_token_id=base.EOS, dtype="float32"),
    # As the 31B: full layers keep one key/value head whose values are the keys before their norm.
    "gemma4_keqv": dict(GEMMA4_TEXT, architectures=["Gemma4ForCausalLM"], attention_k_eq_v=True, num_key_value_heads=2,
                        num_global_key_value_heads=1, hidden_size_per_layer_input=0, vocab_size_per_layer_input=None,
                        num_kv_shared_layers=0, use_double_wide_mlp=False),
    # As the 26B-A4B: a routed GeGLU mixture of experts beside every layer's MLP.
    "gemma4_moe": dict(GEMMA4_TEXT, architectures=["Gemma4ForCausalLM"], attention_k_eq_v=True, num_key_value_heads=2,
                       num_global_key_value_heads=1, hidden_size_per_layer_input=0, vocab_size_per_layer_input=None,
                       num_kv_shared_layers=0, use_double_wide_mlp=False, enable_moe_block=True, num_experts=4, top_k_experts=2,
                       moe_intermediate_size=16),
}


def text(cfg):
    return cfg.get("text_config") or cfg


def is_gemma4(t):
    return t["model_type"].startswith("gemma4")


def layer_types(t):
    return t["layer_types"]


def first_shared(t):
    return t["num_hidden_layers"] - (t.get("num_kv_shared_layers") or 0)


def producer(t, i):
    """The layer whose keys and values layer i reads: itself, or for a KV-shared layer the last
    layer before the shared range with the same type."""
    f = first_shared(t)
    if i < f:
        return i
    return max(j for j in range(f) if layer_types(t)[j] == layer_types(t)[i])


def layer_shape(t, i):
    """(head size, kv heads, has v_proj) of layer i."""
    full = layer_types(t)[i] == "full_attention"
    if not is_gemma4(t) or not full:
        return t["head_dim"], t["num_key_value_heads"], True
    keqv = t.get("attention_k_eq_v")
    nkv = t["num_global_key_value_heads"] if keqv else t["num_key_value_heads"]
    return t["global_head_dim"], nkv, not keqv


def mlp_width(t, i):
    wide = is_gemma4(t) and t.get("use_double_wide_mlp") and 0 < first_shared(t) <= i
    return t["intermediate_size"] * (2 if wide else 1)


# ---- weights, in the text-only names (model.*) ----

def make_weights(cfg, seed):
    t = text(cfg)
    g = torch.Generator().manual_seed(seed)
    h, v, nh = t["hidden_size"], t["vocab_size"], t["num_attention_heads"]
    g4 = is_gemma4(t)

    def mat(rows, cols, gain=1.0):
        return torch.randn(rows, cols, generator=g) * (gain / math.sqrt(cols))

    def norm(n, scale=1.0):  # Gemma 3 stores zero-centred weights (used as 1 + w); Gemma 4 uses w as stored
        return (1.0 if g4 else 0.0) * scale + 0.2 * scale * torch.randn(n, generator=g)

    # Gemma 3 without PLE or layer scalars: a larger embedding makes the tied head echo the token.
    w = {"model.embed_tokens.weight": (0.3 if g4 else 0.1) * torch.randn(v, h, generator=g)}
    ple = t.get("hidden_size_per_layer_input") or 0
    L = t["num_hidden_layers"]
    if g4 and ple:
        w["model.embed_tokens_per_layer.weight"] = 0.3 * torch.randn(v, L * ple, generator=g)
        w["model.per_layer_model_projection.weight"] = mat(L * ple, h, 1.0)
        w["model.per_layer_projection_norm.weight"] = norm(ple)
    for i in range(L):
        p = f"model.layers.{i}."
        hd, nkv, has_v = layer_shape(t, i)
        for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"):
            w[p + n + ".weight"] = norm(h)
        w[p + "self_attn.q_proj.weight"] = mat(nh * hd, h, 2.0)
        # KV-shared layers carry unused k/v weights in released checkpoints: written, never read.
        w[p + "self_attn.k_proj.weight"] = mat(nkv * hd, h, 2.0)
        if has_v:
            w[p + "self_attn.v_proj.weight"] = mat(nkv * hd, h)
        w[p + "self_attn.o_proj.weight"] = mat(h, nh * hd, 3.0)
        # Gemma 4's k_norm is small in released weights (E2B ~0.125): with attention scale 1 and
        # unit-RMS q and k, scores would reach head_dim, a saturated softmax that turns float32
        # rounding into differences of 1e-4 in the logits.
        w[p + "self_attn.q_norm.weight"] = norm(hd, 0.5 if g4 else 1.0)
        w[p + "self_attn.k_norm.weight"] = norm(hd, 0.25 if g4 else 1.0)
        inter = mlp_width(t, i)
        w[p + "mlp.gate_proj.weight"] = mat(inter, h, 2.0)
        w[p + "mlp.up_proj.weight"] = mat(inter, h, 2.0)
        w[p + "mlp.down_proj.weight"] = mat(h, inter, 3.0)
        if t.get("enable_moe_block"):
            e, mi = t["num_experts"], t["moe_intermediate_size"]
            w[p + "router.proj.weight"] = mat(e, h, 3.0)
            w[p + "router.scale"] = 1.0 + 0.2 * torch.randn(h, generator=g)
            w[p + "router.per_expert_scale"] = 1.0 + 0.2 * torch.randn(e, generator=g)
            w[p + "experts.gate_up_proj"] = torch.randn(e, 2 * mi, h, generator=g) * (2.0 / math.sqrt(h))
            w[p + "experts.down_proj"] = torch.randn(e, h, mi, generator=g) * (2.0 / math.sqrt(mi))
            for n in ("pre_feedforward_layernorm_2", "post_feedforward_layernorm_1", "post_feedforward_layernorm_2"):
                w[p + n + ".weight"] = norm(h)
        if g4:
            w[p + "layer_scalar"] = 0.5 + 0.5 * torch.rand(1, generator=g)
            if ple:
                w[p + "per_layer_input_gate.weight"] = mat(ple, h, 2.0)
                w[p + "per_layer_projection.weight"] = mat(h, ple, 2.0)
                w[p + "post_per_layer_input_norm.weight"] = norm(h)
    w["model.norm.weight"] = norm(h)
    return w


def released_names(cfg, w):
    if not cfg.get("text_config"):
        return w
    prefix = "model.language_model." if is_gemma4(text(cfg)) else "language_model.model."
    return {prefix + k[len("model."):]: x for k, x in w.items()}


# ---- the forward pass ----

def rms_norm(x, weight, eps, gemma3):
    r = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    if weight is None:
        return r
    return r * (1.0 + weight) if gemma3 else r * weight


def rotate_half(x):
    m = x.shape[-1] // 2
    return torch.cat([-x[..., m:], x[..., :m]], dim=-1)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def inverse_frequencies(t, kind):
    """inv_freq of a layer type as modeling_rope_utils computes it in float32 (head_dim / 2 values)."""
    hd = layer_shape(t, layer_types(t).index(kind))[0]
    if is_gemma4(t):
        rp = t["rope_parameters"][kind]
        base_ = rp["rope_theta"]
        if rp["rope_type"] == "proportional":
            rotated = int(rp["partial_rotary_factor"] * hd // 2)
            inv = 1.0 / (base_ ** (torch.arange(0, 2 * rotated, 2, dtype=torch.int64).float() / hd))
            inv = torch.cat([inv, torch.zeros(hd // 2 - rotated, dtype=torch.float32)])
            return inv / rp.get("factor", 1.0)
        return 1.0 / (base_ ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    full = kind == "full_attention"
    base_ = t["rope_theta"] if full else t["rope_local_base_freq"]
    inv = 1.0 / (base_ ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    rs = t.get("rope_scaling")
    if full and rs and rs.get("rope_type") == "linear":
        inv = inv / rs["factor"]
    return inv


def rope(x, positions, inv):
    angles = positions.float()[:, None] * inv[None, :]  # float32, as transformers
    emb = torch.cat([angles, angles], dim=-1)
    cos, sin = emb.cos().to(ACC)[:, None, :], emb.sin().to(ACC)[:, None, :]
    return x * cos + rotate_half(x) * sin


class Cache:
    """Keys and values of every producing layer, whole history (the reference keeps everything and
    masks the window; the engine's ring must give the same)."""

    def __init__(self):
        self.k, self.v, self.length = {}, {}, 0


def attention(t, w, p, i, x, positions, cache, shared):
    g3 = not is_gemma4(t)
    eps = t["rms_norm_eps"]
    T = x.shape[0]
    nh = t["num_attention_heads"]
    hd, nkv, has_v = layer_shape(t, i)
    kind = layer_types(t)[i]
    inv = inverse_frequencies(t, kind)
    q = (x @ w[p + "self_attn.q_proj.weight"].T).view(T, nh, hd)
    q = rope(rms_norm(q, w[p + "self_attn.q_norm.weight"], eps, g3), positions, inv)
    src = producer(t, i)
    if src == i:
        k = (x @ w[p + "self_attn.k_proj.weight"].T).view(T, nkv, hd)
        v = (x @ w[p + "self_attn.v_proj.weight"].T).view(T, nkv, hd) if has_v else k
        k = rope(rms_norm(k, w[p + "self_attn.k_norm.weight"], eps, g3), positions, inv)
        if not g3:
            v = rms_norm(v, None, eps, False)
        k_all = torch.cat([cache.k[i], k]) if cache and i in cache.k else k
        v_all = torch.cat([cache.v[i], v]) if cache and i in cache.v else v
        shared[i] = (k_all, v_all)
    else:
        k_all, v_all = shared[src]
    S = k_all.shape[0]
    key_pos = torch.arange(S)
    rep = nh // nkv
    kk = k_all.repeat_interleave(rep, dim=1)
    vv = v_all.repeat_interleave(rep, dim=1)
    scale = 1.0 if not g3 else t["query_pre_attn_scalar"] ** -0.5
    scores = torch.einsum("thd,shd->hts", q, kk) * scale
    visible = key_pos[None, :] <= positions[:, None]
    if kind == "sliding_attention":
        visible &= key_pos[None, :] > positions[:, None] - t["sliding_window"]
    scores = scores.masked_fill(~visible[None], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.einsum("hts,shd->thd", probs, vv).reshape(T, nh * hd)
    return out @ w[p + "self_attn.o_proj.weight"].T


def experts(t, w, p, h, m):
    """Gemma4TextRouter and Gemma4TextExperts beside the MLP output m: routed on the residual h
    (normed without weight, times router.scale / sqrt(hidden)), softmax, top k renormalised, times
    per_expert_scale; the experts (GeGLU, gate rows first in gate_up_proj) read
    pre_feedforward_layernorm_2(h); each branch normed, then summed."""
    eps, d = t["rms_norm_eps"], t["hidden_size"]
    r = rms_norm(h, None, eps, False) * w[p + "router.scale"] * d ** -0.5
    probs = torch.softmax(r @ w[p + "router.proj.weight"].T, dim=-1)
    top_w, top_i = torch.topk(probs, t["top_k_experts"], dim=-1)
    top_w = top_w / top_w.sum(-1, keepdim=True) * w[p + "router.per_expert_scale"][top_i]
    x = rms_norm(h, w[p + "pre_feedforward_layernorm_2.weight"], eps, False)
    mi = t["moe_intermediate_size"]
    out = torch.zeros_like(x)
    for tok in range(x.shape[0]):
        for j in range(top_i.shape[1]):
            e = int(top_i[tok, j])
            gu = w[p + "experts.gate_up_proj"][e] @ x[tok]
            y = w[p + "experts.down_proj"][e] @ (gelu_tanh(gu[:mi]) * gu[mi:])
            out[tok] += top_w[tok, j] * y
    return rms_norm(m, w[p + "post_feedforward_layernorm_1.weight"], eps, False) + \
        rms_norm(out, w[p + "post_feedforward_layernorm_2.weight"], eps, False)


def per_layer_inputs(t, w, ids, x0):
    P, L, d = t["hidden_size_per_layer_input"], t["num_hidden_layers"], t["hidden_size"]
    tok = w["model.embed_tokens_per_layer.weight"][ids] * math.sqrt(P)
    proj = (x0 @ w["model.per_layer_model_projection.weight"].T) * d ** -0.5
    proj = rms_norm(proj.view(-1, L, P), w["model.per_layer_projection_norm.weight"], t["rms_norm_eps"], False)
    return (proj + tok.view(-1, L, P)) * 2 ** -0.5


def forward(cfg, w, ids, cache=None, return_state=False):
    t = text(cfg)
    g3 = not is_gemma4(t)
    eps = t["rms_norm_eps"]
    ids = torch.tensor(ids)
    first = cache.length if cache else 0
    positions = torch.arange(first, first + len(ids))
    h = w["model.embed_tokens.weight"][ids] * math.sqrt(t["hidden_size"])
    ple = per_layer_inputs(t, w, ids, h) if not g3 and t.get("hidden_size_per_layer_input") else None
    shared = {}
    for i in range(t["num_hidden_layers"]):
        p = f"model.layers.{i}."
        a = attention(t, w, p, i, rms_norm(h, w[p + "input_layernorm.weight"], eps, g3), positions, cache, shared)
        h = h + rms_norm(a, w[p + "post_attention_layernorm.weight"], eps, g3)
        m = rms_norm(h, w[p + "pre_feedforward_layernorm.weight"], eps, g3)
        m = (gelu_tanh(m @ w[p + "mlp.gate_proj.weight"].T) * (m @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        if t.get("enable_moe_block"):
            m = experts(t, w, p, h, m)
        h = h + rms_norm(m, w[p + "post_feedforward_layernorm.weight"], eps, g3)
        if ple is not None:
            gate = gelu_tanh(h @ w[p + "per_layer_input_gate.weight"].T) * ple[:, i, :]
            h = h + rms_norm(gate @ w[p + "per_layer_projection.weight"].T, w[p + "post_per_layer_input_norm.weight"], eps, False)
        if not g3:
            h = h * w[p + "layer_scalar"]
    if cache:
        for i, (k, v) in shared.items():
            cache.k[i], cache.v[i] = k, v
        cache.length += len(ids)
    h = rms_norm(h, w["model.norm.weight"], eps, g3)
    logits = h @ w["model.embed_tokens.weight"].T
    cap = t.get("final_logit_softcapping")
    if cap:
        logits = cap * torch.tanh(logits / cap)
    if return_state:  # the final-normed hidden states and the keys/values of every producing layer
        return logits, h, shared
    return logits


def prompt_ids():
    g = torch.Generator().manual_seed(43)
    return torch.randint(0, base.VOCAB.index("<|endoftext|>"), (PROMPT_LENGTH,), generator=g).tolist()


def goldens(cfg, w):
    """Greedy as transformers generates (the prompt in one pass, then a token at a time with the
    cache), and the logits of prompt + greedy[:-1] from one pass, checked to equal the stepped run."""
    prompt = prompt_ids()
    w = {k: x.to(ACC) for k, x in w.items()}
    with torch.no_grad():
        cache = Cache()
        step = forward(cfg, w, prompt, cache)
        stepped = [step]
        greedy, gap = [], float("inf")
        for i in range(GREEDY_TOKENS):
            last = step[-1]
            top2 = torch.topk(last, 2).values
            gap = min(gap, float(top2[0] - top2[1]))
            greedy.append(int(torch.argmax(last)))
            if i + 1 < GREEDY_TOKENS:
                step = forward(cfg, w, [greedy[-1]], cache)
                stepped.append(step)
        logits = forward(cfg, w, prompt + greedy[:-1])
        diff = float((logits - torch.cat(stepped)).abs().max())
        assert diff < 1e-9, f"one pass and token by token differ by {diff}"
    return {"prompt": prompt, "greedy": greedy, "min_greedy_gap": gap, "logits": logits.numpy().astype(F32)}


def float32_error(cfg, w, golden):
    global ACC
    ACC = torch.float32
    torch.set_default_dtype(ACC)
    try:
        with torch.no_grad():
            logits = forward(cfg, {k: x.float() for k, x in w.items()}, golden["prompt"] + golden["greedy"][:-1])
        return float(np.abs(logits.numpy() - golden["logits"]).max())
    finally:
        ACC = torch.float64
        torch.set_default_dtype(ACC)


def pick_weights(cfg, first_seed):
    """As qwen35_reference.pick_weights: a clear greedy run (gaps >= 0.01, >= 8 distinct tokens)
    for f32 and bf16 weights, and float32 rounding alone within 4e-5 of the goldens."""
    for seed in range(first_seed, first_seed + 100):
        w = make_weights(cfg, seed)
        ok = True
        for v in (w, base.bf16_rounded(w)):
            g = goldens(cfg, v)
            if g["min_greedy_gap"] < 0.01 or len(set(g["greedy"])) < 8 or float32_error(cfg, v, g) > 4e-5:
                ok = False
                break
        if ok:
            return w
    raise SystemExit("no usable seed")


# ---- GGUF, as llama.cpp's converter writes gemma3 / gemma4 (conversion/gemma.py, gguf-py constants) ----

GGUF_LAYER = {
    "input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "post_attention_norm.weight",
    "pre_feedforward_layernorm.weight": "ffn_norm.weight", "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight",
    "per_layer_input_gate.weight": "inp_gate.weight", "per_layer_projection.weight": "proj.weight",
    "post_per_layer_input_norm.weight": "post_norm.weight", "layer_scalar": "layer_output_scale.weight",
    "router.proj.weight": "ffn_gate_inp.weight", "router.scale": "ffn_gate_inp.scale", "router.per_expert_scale": "ffn_down_exps.scale",
    "experts.gate_up_proj": "ffn_gate_up_exps.weight", "experts.down_proj": "ffn_down_exps.weight",
    "pre_feedforward_layernorm_2.weight": "pre_ffw_norm_2.weight", "post_feedforward_layernorm_1.weight": "post_ffw_norm_1.weight",
    "post_feedforward_layernorm_2.weight": "post_ffw_norm_2.weight",
}


def write_gguf(path, cfg, w):
    """Gemma 3: every norm stored as 1 + w; llama.cpp has no query_pre_attn_scalar key and scales by
    head_dim^-1/2, right for the released configs: this tiny model's other scalar is folded into
    q_norm (times sqrt(head_dim / query_pre_attn_scalar)) so that the file computes the same model.
    Gemma 4: norms as stored, head sizes as key_length (full) / key_length_swa, the layer pattern as
    bools, head_count_kv and feed_forward_length per layer where they differ, proportional RoPE as
    rope_freqs divisors (1e30 for the pairs that do not turn)."""
    t = text(cfg)
    g4 = is_gemma4(t)
    a = "gemma4" if g4 else "gemma3"
    L = t["num_hidden_layers"]
    full_hd = layer_shape(t, layer_types(t).index("full_attention"))[0]
    md = [("general.architecture", "string", a), ("general.name", "string", "oxinfer reference"),
          (f"{a}.block_count", "u32", L), (f"{a}.context_length", "u32", t["max_position_embeddings"]),
          (f"{a}.embedding_length", "u32", t["hidden_size"]),
          (f"{a}.attention.head_count", "u32", t["num_attention_heads"]),
          (f"{a}.attention.layer_norm_rms_epsilon", "f32", t["rms_norm_eps"]),
          (f"{a}.attention.sliding_window", "u32", t["sliding_window"]), (f"{a}.vocab_size", "u32", t["vocab_size"])]
    if g4:
        widths = [mlp_width(t, i) for i in range(L)]
        kv = [layer_shape(t, i)[1] for i in range(L)]
        md += [(f"{a}.feed_forward_length", "array", ("i32", widths)) if len(set(widths)) > 1 else
               (f"{a}.feed_forward_length", "u32", widths[0]),
               (f"{a}.attention.head_count_kv", "array", ("i32", kv)) if len(set(kv)) > 1 else
               (f"{a}.attention.head_count_kv", "u32", kv[0]),
               (f"{a}.attention.key_length", "u32", full_hd), (f"{a}.attention.value_length", "u32", full_hd),
               (f"{a}.attention.key_length_swa", "u32", t["head_dim"]), (f"{a}.attention.value_length_swa", "u32", t["head_dim"]),
               (f"{a}.attention.sliding_window_pattern", "array", ("bool", [x == "sliding_attention" for x in layer_types(t)])),
               (f"{a}.attention.shared_kv_layers", "u32", t.get("num_kv_shared_layers") or 0),
               (f"{a}.embedding_length_per_layer_input", "u32", t.get("hidden_size_per_layer_input") or 0),
               (f"{a}.rope.freq_base", "f32", t["rope_parameters"]["full_attention"]["rope_theta"]),
               (f"{a}.rope.freq_base_swa", "f32", t["rope_parameters"]["sliding_attention"]["rope_theta"]),
               (f"{a}.rope.dimension_count", "u32", full_hd), (f"{a}.rope.dimension_count_swa", "u32", t["head_dim"]),
               (f"{a}.final_logit_softcapping", "f32", t["final_logit_softcapping"])]
        if t.get("enable_moe_block"):
            md += [(f"{a}.expert_count", "u32", t["num_experts"]), (f"{a}.expert_used_count", "u32", t["top_k_experts"]),
                   (f"{a}.expert_feed_forward_length", "u32", t["moe_intermediate_size"])]
    else:
        md += [(f"{a}.feed_forward_length", "u32", t["intermediate_size"]),
               (f"{a}.attention.head_count_kv", "u32", t["num_key_value_heads"]),
               (f"{a}.attention.key_length", "u32", t["head_dim"]), (f"{a}.attention.value_length", "u32", t["head_dim"]),
               (f"{a}.rope.freq_base", "f32", t["rope_theta"]), (f"{a}.rope.freq_base_swa", "f32", t["rope_local_base_freq"]),
               (f"{a}.rope.scaling.type", "string", "linear"), (f"{a}.rope.scaling.factor", "f32", t["rope_scaling"]["factor"])]
    types = [3 if tok in base.SPECIALS else 1 for tok in base.VOCAB]
    md += [("tokenizer.ggml.model", "string", "gpt2"), ("tokenizer.ggml.pre", "string", "default"),
           ("tokenizer.ggml.tokens", "array", ("string", base.VOCAB)), ("tokenizer.ggml.token_type", "array", ("i32", types)),
           ("tokenizer.ggml.merges", "array", ("string", base.MERGES)), ("tokenizer.ggml.eos_token_id", "u32", base.EOS),
           ("tokenizer.ggml.padding_token_id", "u32", base.VOCAB.index("<|endoftext|>")),
           ("tokenizer.ggml.add_bos_token", "bool", False), ("tokenizer.chat_template", "string", base.CHAT_TEMPLATE)]
    tensors = []

    def add(name, x):
        arr = x.float().numpy().astype("<f4")
        tensors.append((name, "f32", list(arr.shape), arr.tobytes()))

    def value(hf, x):
        if not g4 and hf.endswith("norm.weight"):
            x = x + 1.0
            if hf.endswith("q_norm.weight"):
                x = x * math.sqrt(t["head_dim"] / t["query_pre_attn_scalar"])
        return x

    add("token_embd.weight", w["model.embed_tokens.weight"])
    if g4 and t.get("hidden_size_per_layer_input"):
        add("per_layer_token_embd.weight", w["model.embed_tokens_per_layer.weight"])
        add("per_layer_model_proj.weight", w["model.per_layer_model_projection.weight"])
        add("per_layer_proj_norm.weight", w["model.per_layer_projection_norm.weight"])
    if g4:
        rotated = int(t["rope_parameters"]["full_attention"]["partial_rotary_factor"] * full_hd // 2)
        add("rope_freqs.weight", torch.tensor([1.0] * rotated + [1e30] * (full_hd // 2 - rotated)))
    for i in range(L):
        p = f"model.layers.{i}."
        for hf, gg in GGUF_LAYER.items():
            if p + hf in w:
                add(f"blk.{i}.{gg}", value(hf, w[p + hf]))
    add("output_norm.weight", value("model.norm.weight", w["model.norm.weight"]))
    base.write_gguf(path, md, tensors)


# ---- Gemma 4's assistant (modeling_gemma4_assistant.py) ----

ASSISTANT = dict(
    architectures=["Gemma4AssistantForCausalLM"], model_type="gemma4_assistant", backbone_hidden_size=32,
    use_ordered_embeddings=True, num_centroids=8, centroid_intermediate_top_k=2, tie_word_embeddings=True,
    eos_token_id=base.EOS, dtype="float32",
    text_config=dict(GEMMA4_TEXT, hidden_size=16, intermediate_size=32, num_hidden_layers=4,
                     layer_types=["sliding_attention"] * 3 + ["full_attention"], num_kv_shared_layers=4,
                     hidden_size_per_layer_input=0, vocab_size_per_layer_input=0, use_double_wide_mlp=False,
                     final_logit_softcapping=None))
DRAFT_TOKENS = 3  # drafts per verification, the engine's default


def make_assistant(seed):
    t = ASSISTANT["text_config"]
    g = torch.Generator().manual_seed(seed)
    h, v, nh, hb = t["hidden_size"], t["vocab_size"], t["num_attention_heads"], ASSISTANT["backbone_hidden_size"]

    def mat(rows, cols, gain=1.0):
        return torch.randn(rows, cols, generator=g) * (gain / math.sqrt(cols))

    def norm(n):
        return 1.0 + 0.1 * torch.randn(n, generator=g)

    w = {"model.embed_tokens.weight": 0.3 * torch.randn(v, h, generator=g), "model.norm.weight": norm(h),
         "pre_projection.weight": mat(h, 2 * hb), "post_projection.weight": mat(hb, h),
         "masked_embedding.centroids.weight": mat(ASSISTANT["num_centroids"], h, 2.0)}
    for i in range(t["num_hidden_layers"]):
        p = f"model.layers.{i}."
        hd = layer_shape(t, i)[0]
        for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"):
            w[p + n + ".weight"] = norm(h)
        w[p + "self_attn.q_proj.weight"] = mat(nh * hd, h, 2.0)
        w[p + "self_attn.q_norm.weight"] = norm(hd)
        w[p + "self_attn.o_proj.weight"] = mat(h, nh * hd, 2.0)
        w[p + "mlp.gate_proj.weight"] = mat(t["intermediate_size"], h, 2.0)
        w[p + "mlp.up_proj.weight"] = mat(t["intermediate_size"], h, 2.0)
        w[p + "mlp.down_proj.weight"] = mat(h, t["intermediate_size"], 2.0)
        w[p + "layer_scalar"] = torch.ones(1)
    # token_ordering: cluster c holds the ids at [c * V/C, (c + 1) * V/C) of this permutation.
    ordering = torch.randperm(v, generator=g)
    return w, ordering


def assistant_step(cfg, w, wa, shared, positions, tokens, hidden):
    """One draft step for a batch of independent queries: query j sits at positions[j] (the position
    of tokens[j], not in the main model's cache) and sees the main model's keys before it. Returns
    the normed output y (for the logits) and post_projection(y), the next step's hidden."""
    t, ta = text(cfg), ASSISTANT["text_config"]
    eps = ta["rms_norm_eps"]
    x = w["model.embed_tokens.weight"][tokens] * math.sqrt(t["hidden_size"])
    a = torch.cat([x, hidden], dim=-1) @ wa["pre_projection.weight"].T
    P = len(tokens)
    f = first_shared(t)
    for i in range(ta["num_hidden_layers"]):
        p = f"model.layers.{i}."
        kind = layer_types(ta)[i]
        src = max(j for j in range(f) if layer_types(t)[j] == kind)  # the main model's last producer of the type
        k_all, v_all = shared[src]
        hd, nkv, _ = layer_shape(t, src)
        nh = ta["num_attention_heads"]
        n = rms_norm(a, wa[p + "input_layernorm.weight"], eps, False)
        q = (n @ wa[p + "self_attn.q_proj.weight"].T).view(P, nh, hd)
        q = rope(rms_norm(q, wa[p + "self_attn.q_norm.weight"], eps, False), positions, inverse_frequencies(t, kind))
        key_pos = torch.arange(k_all.shape[0])
        visible = key_pos[None, :] < positions[:, None]
        if kind == "sliding_attention":  # transformers' flipped bidirectional window: the W keys before
            visible &= key_pos[None, :] >= positions[:, None] - ta["sliding_window"]
        rep = nh // nkv
        scores = torch.einsum("thd,shd->hts", q, k_all.repeat_interleave(rep, dim=1))
        probs = torch.softmax(scores.masked_fill(~visible[None], float("-inf")), dim=-1)
        out = torch.einsum("hts,shd->thd", probs, v_all.repeat_interleave(rep, dim=1)).reshape(P, nh * hd)
        a = a + rms_norm(out @ wa[p + "self_attn.o_proj.weight"].T, wa[p + "post_attention_layernorm.weight"], eps, False)
        m = rms_norm(a, wa[p + "pre_feedforward_layernorm.weight"], eps, False)
        m = (gelu_tanh(m @ wa[p + "mlp.gate_proj.weight"].T) * (m @ wa[p + "mlp.up_proj.weight"].T)) @ wa[p + "mlp.down_proj.weight"].T
        a = (a + rms_norm(m, wa[p + "post_feedforward_layernorm.weight"], eps, False)) * wa[p + "layer_scalar"]
    y = rms_norm(a, wa["model.norm.weight"], eps, False)
    return y, y @ wa["post_projection.weight"].T


def assistant_logits(wa, ordering, y, masked):
    """The tied head's logits; masked: only the tokens of the top centroid clusters, the rest set
    below them (Gemma4AssistantMaskedEmbedder)."""
    logits = y @ wa["model.embed_tokens.weight"].T
    if not masked:
        return logits
    clusters = ordering.view(ASSISTANT["num_centroids"], -1)
    top = torch.topk(y @ wa["masked_embedding.centroids.weight"].T, ASSISTANT["centroid_intermediate_top_k"], dim=-1).indices
    out = torch.full_like(logits, float("-inf"))
    for j in range(len(y)):
        ids = clusters[top[j]].reshape(-1)
        out[j, ids] = logits[j, ids]
    return out


def draft_runs(cfg, w, wa, ordering, sequence, starts, masked, steps=DRAFT_TOKENS):
    """Greedy drafts from each start position s (token sequence[s], main hidden state of s - 1),
    `steps` of them, and the smallest top-1/top-2 gap met."""
    with torch.no_grad():
        _, hidden, shared = forward(cfg, w, sequence, return_state=True)
        positions = torch.tensor(starts)
        tokens = torch.tensor([sequence[s] for s in starts])
        h = hidden[positions - 1]
        drafts, gap = [[] for _ in starts], float("inf")
        for _ in range(steps):
            y, h = assistant_step(cfg, w, wa, shared, positions, tokens, h)
            logits = assistant_logits(wa, ordering, y, masked)
            top2 = torch.topk(logits, 2, dim=-1).values
            gap = min(gap, float((top2[:, 0] - top2[:, 1]).min()))
            tokens = torch.argmax(logits, dim=-1)
            for j, tok in enumerate(tokens.tolist()):
                drafts[j].append(tok)
    return drafts, gap


def train_assistant(cfg, w, wa, ordering, steps=400):
    """Fits the assistant to the main model on greedy continuations (as a released drafter is
    trained to agree with its model): drafts 1..3 from every position, teacher-forced, with the
    full head's and the centroids' cross-entropy. The test prompt's own continuation is left out,
    so that its drafts are partly right, partly wrong."""
    t = text(cfg)
    g = torch.Generator().manual_seed(11)
    main = {k: x.to(ACC) for k, x in w.items()}
    clusters_of = torch.empty(t["vocab_size"], dtype=torch.long)
    clusters_of[ordering] = torch.arange(t["vocab_size"]) // (t["vocab_size"] // ASSISTANT["num_centroids"])
    data = []
    with torch.no_grad():
        for _ in range(12):
            ids = torch.randint(0, base.VOCAB.index("<|endoftext|>"), (24,), generator=g).tolist()
            cache = Cache()
            step = forward(cfg, main, ids, cache)
            for _ in range(40):
                ids.append(int(torch.argmax(step[-1])))
                step = forward(cfg, main, [ids[-1]], cache)
            _, hidden, shared = forward(cfg, main, ids, return_state=True)
            data.append((ids, hidden, shared))
    params = {k: x.clone().to(ACC).requires_grad_(True) for k, x in wa.items()}
    optimizer = torch.optim.AdamW(params.values(), lr=1e-2, weight_decay=0.05)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = 0
        for ids, hidden, shared in data:
            starts = torch.arange(24, len(ids) - DRAFT_TOKENS)
            h = hidden[starts - 1]
            for d in range(DRAFT_TOKENS):
                tokens = torch.tensor(ids)[starts + d]
                target = torch.tensor(ids)[starts + d + 1]
                y, h = assistant_step(cfg, main, params, shared, starts, tokens, h)
                loss = loss + torch.nn.functional.cross_entropy(y @ params["model.embed_tokens.weight"].T, target)
                loss = loss + torch.nn.functional.cross_entropy(y @ params["masked_embedding.centroids.weight"].T, clusters_of[target])
        loss.backward()
        optimizer.step()
    print("assistant training loss per sequence", round(float(loss) / len(data), 4))
    return {k: x.detach().to(torch.float32) for k, x in params.items()}


def speculative_replay(golden, drafts_at):
    """The engine's loop (llm.cpp Session::generate) on the greedy run: after each sampled token
    that leaves room, up to DRAFT_TOKENS drafts (fewer near max_tokens) are verified with it; the
    matching prefix is accepted."""
    tokens = golden["prompt"] + golden["greedy"]
    generated, position, drafts, accepted = 1, len(golden["prompt"]), 0, 0
    while generated < GREEDY_TOKENS:
        k = min(DRAFT_TOKENS, GREEDY_TOKENS - generated - 1)
        m = 0
        if k >= 1:
            proposal = drafts_at(position)[:k]
            drafts += k
            while m < k and proposal[m] == tokens[position + 1 + m]:
                m += 1
            accepted += m
        generated += m + 1
        position += m + 1
    return drafts, accepted


def assistant_goldens(cfg, w, wa, ordering, golden, masked):
    """Drafts from every position the replay may start at (and a spread of others), the gap, and
    the replay's draft and acceptance counts."""
    w = {k: x.to(ACC) for k, x in w.items()}
    wa = {k: x.to(ACC) for k, x in wa.items()}
    sequence = golden["prompt"] + golden["greedy"][:-1]
    starts = list(range(len(golden["prompt"]), len(sequence))) + [10, 100, 300, 520, 600]
    runs, gap = draft_runs(cfg, w, wa, ordering, sequence, starts, masked)
    at = dict(zip(starts, runs))
    drafts, accepted = speculative_replay(golden, lambda s: at[s])
    return {"starts": starts, "drafts_from": runs, "min_draft_gap": gap, "drafts": drafts, "accepted": accepted}


def write_assistant(folder, wa, ordering):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(ASSISTANT, indent=2) + "\n")
    base.write_safetensors(folder / "model.safetensors", dict(wa, **{"masked_embedding.token_ordering": ordering}), "F32")


def write_assistant_gguf(path, wa):
    """As llama.cpp's converter writes gemma4-assistant: the masked-embedding tensors dropped (full
    vocabulary logits), pre/post projections as nextn.*, every layer KV-shared."""
    t = ASSISTANT["text_config"]
    a = "gemma4-assistant"
    full_hd = layer_shape(t, 3)[0]
    md = [("general.architecture", "string", a), ("general.name", "string", "oxinfer reference assistant"),
          (f"{a}.block_count", "u32", 4), (f"{a}.nextn_predict_layers", "u32", 4), (f"{a}.context_length", "u32", t["max_position_embeddings"]),
          (f"{a}.embedding_length", "u32", t["hidden_size"]), (f"{a}.embedding_length_out", "u32", ASSISTANT["backbone_hidden_size"]),
          (f"{a}.feed_forward_length", "u32", t["intermediate_size"]), (f"{a}.attention.head_count", "u32", t["num_attention_heads"]),
          (f"{a}.attention.head_count_kv", "u32", t["num_key_value_heads"]),
          (f"{a}.attention.key_length", "u32", full_hd), (f"{a}.attention.value_length", "u32", full_hd),
          (f"{a}.attention.key_length_swa", "u32", t["head_dim"]), (f"{a}.attention.value_length_swa", "u32", t["head_dim"]),
          (f"{a}.attention.sliding_window", "u32", t["sliding_window"]),
          (f"{a}.attention.sliding_window_pattern", "array", ("bool", [x == "sliding_attention" for x in t["layer_types"]])),
          (f"{a}.attention.shared_kv_layers", "u32", 4), (f"{a}.embedding_length_per_layer_input", "u32", 0),
          (f"{a}.attention.layer_norm_rms_epsilon", "f32", t["rms_norm_eps"]),
          (f"{a}.rope.freq_base", "f32", 1000000.0), (f"{a}.rope.freq_base_swa", "f32", 10000.0),
          (f"{a}.rope.dimension_count", "u32", full_hd), (f"{a}.rope.dimension_count_swa", "u32", t["head_dim"]),
          (f"{a}.vocab_size", "u32", t["vocab_size"])]
    tensors = []

    def add(name, x):
        arr = x.float().numpy().astype("<f4")
        tensors.append((name, "f32", list(arr.shape), arr.tobytes()))

    add("token_embd.weight", wa["model.embed_tokens.weight"])
    add("nextn.pre_projection.weight", wa["pre_projection.weight"])
    add("nextn.post_projection.weight", wa["post_projection.weight"])
    rotated = int(0.25 * full_hd // 2)
    add("rope_freqs.weight", torch.tensor([1.0] * rotated + [1e30] * (full_hd // 2 - rotated)))
    for i in range(4):
        p = f"model.layers.{i}."
        for hf, gg in GGUF_LAYER.items():
            if p + hf in wa:
                add(f"blk.{i}.{gg}", wa[p + hf])
    add("output_norm.weight", wa["model.norm.weight"])
    base.write_gguf(path, md, tensors)


def read_safetensors(path):
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(raw[8 + n + begin:8 + n + end], dtype="<f4").copy()).view(info["shape"])
    return out


def make_assistant_case():
    """The assistant of the gemma4 case: trained on its model, written as an HF folder (with the
    centroids) and a GGUF (without, as llama.cpp's converter); goldens into gemma4/golden.json."""
    cfg = CASES["gemma4"]
    case = OUT / "gemma4"
    w = {"model." + k[len("model.language_model."):]: x for k, x in read_safetensors(case / "hf" / "model.safetensors").items()}
    summary = json.loads((case / "golden.json").read_text())
    golden = {"prompt": summary["prompt"], "greedy": summary["f32"]["greedy"]}
    wa, ordering = make_assistant(5100)
    wa = train_assistant(cfg, w, wa, ordering)
    write_assistant(OUT / "gemma4_assistant" / "hf", wa, ordering)
    write_assistant_gguf(OUT / "gemma4_assistant" / "f32.gguf", wa)
    summary["f32"]["assistant"] = {"hf": assistant_goldens(cfg, w, wa, ordering, golden, True),
                                   "gguf": assistant_goldens(cfg, w, wa, ordering, golden, False)}
    (case / "golden.json").write_text(json.dumps(summary, indent=1) + "\n")
    for k, v in summary["f32"]["assistant"].items():
        print("assistant", k, "drafts", v["drafts"], "accepted", v["accepted"], "min draft gap", round(v["min_draft_gap"], 5))


def text_only_config(cfg):
    t = dict(text(cfg))
    arch = "Gemma4ForCausalLM" if is_gemma4(t) else "Gemma3ForCausalLM"
    t["architectures"] = [arch]
    if not is_gemma4(t):  # transformers 5 writes Gemma 3's RoPE per layer type
        t.pop("rope_theta"), t.pop("rope_local_base_freq"), t.pop("rope_scaling")
        t["rope_parameters"] = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}}
    return t


def main():
    only = set(sys.argv[1:])
    OUT.mkdir(exist_ok=True)
    if only == {"assistant"}:
        make_assistant_case()
        return
    for index, (name, cfg) in enumerate(CASES.items()):
        if only and name not in only:
            continue
        case = OUT / name
        case.mkdir(exist_ok=True)
        w = pick_weights(cfg, 4300 + 100 * index)
        released = released_names(cfg, w)
        base.write_hf_folder(case / "hf", cfg, released)
        if cfg.get("text_config"):
            base.write_hf_folder(case / "hf_text", text_only_config(cfg), w)
        base.write_safetensors(case / "bf16.safetensors", released, "BF16")
        write_gguf(case / "f32.gguf", cfg, w)
        results = {"f32": goldens(cfg, w), "bf16": goldens(cfg, base.bf16_rounded(w))}
        summary = {"prompt": results["f32"]["prompt"]}
        for variant, g in results.items():
            np.save(case / f"{variant}_logits.npy", g["logits"])
            summary[variant] = {"greedy": g["greedy"], "min_greedy_gap": g["min_greedy_gap"]}
        (case / "golden.json").write_text(json.dumps(summary, indent=1) + "\n")
        print(name, "min greedy gaps:", {k: round(results[k]["min_greedy_gap"], 5) for k in results},
              "distinct greedy tokens:", len(set(results["f32"]["greedy"])))
        if name == "gemma4":
            make_assistant_case()


if __name__ == "__main__":
    main()
