#!/usr/bin/env python3
"""Small random-weight GGUF files for the architectures of issue 17.

Usage: scripts/make_arch_gguf.py ARCH OUT.gguf [--seed N] [--f32] [--tokenizer GGUF]
                                  [--mmproj MMPROJ.gguf]
       scripts/make_arch_gguf.py --list

--mmproj also writes a random projector for the model (gemma3, gemma4's
gemma4v, qwen3vl, qwen2vl: scripts/make_mmproj_gguf.py), with the same
seed.

ARCH: qwen2 qwen3 gemma2 gemma3 phi3 qwen3moe mixtral (a `llama` file with
experts: ffn_gate_inp and ffn_{gate,up,down}_exps of width n_ff, as Mixtral)
phi3long (phi3 with rope.scaling.original_context_length 32, below the
prompts' length and llama.cpp's n_ctx, so rope_factors_long applies, and
rope.scaling.attn_factor 1.19); llamayarn, qwen2yarn (llama / qwen2 with
rope.scaling.type yarn, factor 4, original_context_length 32), llamalinear
(linear, factor 4) and gemma3yarn (yarn, factor 8, original 32);
qwen3moek (qwen3moe with random Q4_K / Q6_K blocks, experts 256 wide: no
golden, for the invariance tests of the K-quants' two matmul orders);
gptoss (`gpt-oss`, llama.cpp's openai-moe graph: attention sinks, Q/K/V and
output biases, sliding-window layers (window 16, the even ones) alternating
with full ones, YaRN factor 8 over 32 original positions, a biased router
over 8 experts (4 used) whose gate/up/down are random MXFP4 blocks with F32
biases, the other matrices Q8_0 (gguf's quantizer of the random values: as
gpt-oss ships, MXFP4 experts beside Q8_0, so the file runs on kernels that
give llama.cpp's bits, which F16's do not); its vocabulary is the default
model's plus the harmony control tokens, its chat template
tests/data/templates/gpt-oss.jinja, eos <|return|>).

The tokenizer (every tokenizer.* key: vocabulary, merges, special ids, chat
template) is copied from the default model, models/SmolLM2-135M-Instruct.Q4_1.gguf,
so token ids are valid and the file tokenizes like the default model (49152
tokens). Weights: 2-D and 3-D tensors F16 (F32 with --f32), norms, biases,
router and rope factors F32. Tensor names and hyperparameter keys are those
llama.cpp's loader expects (src/models/<arch>.cpp, llama-arch.cpp).

Determinism: the weights come from a counter-based generator written here
(splitmix64 of seed, tensor name and element index; the sum of four 16-bit
lanes of each output, i.e. an Irwin-Hall approximation of a normal), using
only integer and exact float arithmetic, so the same seed gives the same bytes
on every machine and numpy version. The key nucleus.gen records the generator
version and seed.

Values (chosen so activations stay sane and every piece shows in the logits):
token embedding std 0.2 (tied output: logits std ~3), separate output.weight std
0.2, projection matrices std 1/sqrt(fan_in), norm weights 1 + 0.1 z (as stored
in the GGUF: for gemma the HF (1 + w) is already folded in by llama.cpp's
converter, so the file holds the final multiplier); gemma's post-attention and
post-FFN norms 4 (1 + 0.1 z), so that the layers, not the sqrt(n_embd)-scaled
embedding, dominate the residual (else every top-1 is the input token); Q/K/V
biases 0.5 z,
router std 2/sqrt(n_embd), phi3 rope factors short 1 + 0.5|z|, long 1 + 4|z|.
gpt-oss: sinks 2 z (a head's sink then takes a visible share of its
attention), experts' gate and up std 3/sqrt(n_embd) (so that the SwiGLU's
clamp at 7 is reached), every bias 0.5 z; MXFP4 blocks: random 4-bit codes,
the E8M0 exponent set per block (one of three around the one giving the
std). Gemma 4's scores are q.k unscaled over RMS-normed q and k: its attn_q_norm
weights are 0.125 (1 + 0.1 z), so that the scores (std ~ sqrt(head_dim) with
weights near 1) are those of a scaled attention (with weights near 1 the
F16 rounding of q alone moves the logits by 0.1 to 1 between two correct
engines); its router reads the residual RMS-normed and divided by
sqrt(n_embd), so its per-channel scale is 1.25 sqrt(n_embd) (1 + 0.1 z)
(router logits of std ~2). Routing is where two correct engines part: the
float noise between them (~1e-3 relative after F16 rounding) moves a near
tie of the second and third expert in one of the ~3000 choices over the
goldens' positions to the other expert at most router scales tried (0.25
to 3 sqrt(n_embd)); at 1.25 none does.
Sliding windows are 16 positions (smaller than the golden's prompts);
gemma2's soft caps are deliberately small (attention 4, final 8) so that
skipping or misplacing a cap changes the logits clearly.
"""
import hashlib
import os
import struct
import sys

import numpy as np

import gguf
from gguf import quants

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TOKENIZER = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
GEN_VERSION = 1

N_EMBD = 256
N_HEAD = 4
N_HEAD_KV = 2
N_FF = 512
N_CTX = 2048
SWA = 16

# per arch: layers, head_dim, tied output, rope base
ARCHS = {
    "qwen2": dict(n_layer=4, head_dim=64, tied=False, rope_base=1000000.0),
    "qwen3": dict(n_layer=4, head_dim=128, tied=True, rope_base=1000000.0),
    "gemma2": dict(n_layer=4, head_dim=128, tied=True, rope_base=10000.0),
    "gemma3": dict(n_layer=6, head_dim=128, tied=True, rope_base=1000000.0),
    "phi3": dict(n_layer=4, head_dim=64, tied=False, rope_base=10000.0),
    "qwen3moe": dict(n_layer=4, head_dim=128, tied=True, rope_base=1000000.0,
                     n_expert=8, n_expert_used=2, n_ff_exp=128),
    "phi3long": dict(n_layer=4, head_dim=64, tied=False, rope_base=10000.0,
                     gguf_arch="phi3", orig_ctx=32, attn_factor=1.19),
    # qwen3moe with K-quant matrices of random blocks (Q4_K; Q6_K where
    # llama-quantize's Q4_K_M puts it: the tied output, attn_output, the
    # experts' down), experts 256 wide so that every matrix is one; no
    # llama.cpp golden: the forward tests' invariance checks take it
    "qwen3moek": dict(n_layer=4, head_dim=128, tied=True, rope_base=1000000.0,
                      n_expert=8, n_expert_used=2, n_ff_exp=256,
                      base="qwen3moe", kquant=True),
    # general.architecture "llama"; the experts are n_ff (here 128) wide
    "mixtral": dict(n_layer=4, head_dim=64, tied=False, rope_base=1000000.0,
                    n_expert=8, n_expert_used=2, n_ff_exp=128, gguf_arch="llama"),
    # RoPE scaling declared by the file (base: the arch whose tensors and
    # keys it has). YaRN factor 4 over an original context of 32 positions,
    # so the 48-token prompts run past it and the ramp spans real pairs.
    "llamayarn": dict(n_layer=4, head_dim=64, tied=False, rope_base=10000.0,
                      base="llama", scaling=("yarn", 4.0), orig_ctx=32),
    "qwen2yarn": dict(n_layer=4, head_dim=64, tied=False, rope_base=1000000.0,
                      base="qwen2", scaling=("yarn", 4.0), orig_ctx=32),
    "llamalinear": dict(n_layer=4, head_dim=64, tied=False, rope_base=10000.0,
                        base="llama", scaling=("linear", 4.0)),
    # gemma3 with YaRN on its global layers (its local layers keep base
    # 10000 unscaled, with the same ext_factor and magnitude, as llama.cpp)
    "gemma3yarn": dict(n_layer=6, head_dim=128, tied=True, rope_base=1000000.0,
                       base="gemma3", scaling=("yarn", 8.0), orig_ctx=32),
    # gpt-oss (general.architecture "gpt-oss"): sinks, biases everywhere,
    # windows on the even layers (llama.cpp's default pattern 2), YaRN,
    # MXFP4 experts; the harmony tokens and template
    "gptoss": dict(n_layer=4, head_dim=64, tied=False, rope_base=150000.0,
                   n_expert=8, n_expert_used=4, n_ff_exp=128, gguf_arch="gpt-oss",
                   scaling=("yarn", 8.0), orig_ctx=32, harmony=True, q8=True),
    # Gemma 4 (keys and tensors: gemma4_keys, gemma4_tensors). E2B-like:
    # per-layer token embeddings (32 per layer), the last 3 layers reading
    # the K/V of layers 3 (sliding) and 4 (full), sliding layers of 2 KV
    # heads of 64 and full layers of 2 KV heads of 128 whose RoPE turns a
    # quarter of the pairs (rope_freqs 1e30 on the rest), the pattern as a
    # bool array, shared layers twice as wide in the FFN, final soft cap 10,
    # a scalar layer_output_scale per layer
    "gemma4": dict(n_layer=8, head_dim=64, tied=True, rope_base=1000000.0,
                   swa=[1, 1, 0, 1, 0, 1, 1, 0], head_dim_full=128,
                   n_head_kv_swa=2, n_head_kv_full=2, n_kv_shared=3,
                   n_embd_per_layer=32, double_wide=True),
    # 26B-A4B-like: no per-layer embeddings or shared K/V; every layer has
    # a dense FFN (its own pre/post norms) beside 8 experts (2 used, 128
    # wide, GELU) routed from the RMS-normed residual times a per-channel
    # scale, each expert's output times its own scale; sliding layers of 4
    # KV heads of 64, full ones of 1 of 128 taking V = K (no attn_v), as
    # the 26B's attention_k_eq_v
    "gemma4moe": dict(n_layer=6, head_dim=64, tied=True, rope_base=1000000.0,
                      base="gemma4", swa=[1, 1, 0, 1, 1, 0], head_dim_full=128,
                      n_head_kv_swa=4, n_head_kv_full=1, n_kv_shared=0,
                      n_embd_per_layer=0, n_expert=8, n_expert_used=2,
                      n_ff_exp=128, k_eq_v=True),
    # Qwen3.5 hybrid: gated DeltaNet layers and every interval-th layer full
    # attention (gated Q, Q/K norms, NEOX/IMRoPE on n_rot = head_dim / 4);
    # ssm: conv kernel 4, k heads (group_count) of state_size, v heads
    # (time_step_rank); v heads twice the k heads, as Qwen3.6 (qwen35 repeats
    # the k heads: v head h reads k head h % n_k). Matrices F32: with F16
    # ones both llama.cpp and nucleus round every matmul input to F16, and
    # on these files that rounding alone moves the logits by up to 0.04
    # from the f32 reference (position 0 included), past the bounds the
    # hybrid's own math is tested to (F32: 8e-4 from llama.cpp); the F16
    # matmuls are the other files' test.
    "qwen35": dict(n_layer=8, head_dim=128, tied=False, rope_base=10000000.0,
                   attn_interval=4, f32=True,
                   ssm=dict(d_conv=4, d_state=64, n_k=2, n_v=4)),
    # the second pattern: the layers from attention.recurrent_layers (a bool
    # per layer, as converted from config.json's layer_types), k heads equal
    # to v heads, tied output
    # qwen35 with one MTP (next-token prediction) layer after the 8:
    # nextn_predict_layers 1, block_count 9, blk.8 an attention layer with
    # nextn.{eh_proj,enorm,hnorm,shared_head_norm}; the model's graph does
    # not run it (nor llama.cpp's main graph), so its logits are qwen35's;
    # the MTP head runs when loaded with it (test_forward_mtp, --spec mtp)
    "qwen35mtp": dict(n_layer=8, head_dim=128, tied=False,
                      rope_base=10000000.0, base="qwen35", attn_interval=4,
                      f32=True, mtp=1,
                      ssm=dict(d_conv=4, d_state=64, n_k=2, n_v=4)),
    "qwen35r": dict(n_layer=6, head_dim=128, tied=True, rope_base=10000000.0,
                    base="qwen35", recurrent=[1, 0, 1, 1, 0, 1], f32=True,
                    ssm=dict(d_conv=4, d_state=32, n_k=4, n_v=4)),
    # Embedding and rerank models (issue 44; goldens: scripts/
    # gen_embed_goldens.py, tests/data/embed/). Qwen3-Embedding: qwen3 with
    # pooling_type last. Qwen3-Reranker: qwen3 with rank pooling, the rank
    # head cls.output of 2 rows (yes, no: the converter's rows of the LM
    # head), classifier.output_labels and the rerank prompt template.
    # EmbeddingGemma (general.architecture gemma-embedding): gemma3's
    # layers with non-causal attention and symmetric windows (16: 8 either
    # side), mean pooling, sentence-transformers' dense_2 (256 -> 1024) and
    # dense_3 (1024 -> 256) with their feat_in / feat_out keys.
    "qwen3emb": dict(n_layer=4, head_dim=128, tied=True, rope_base=1000000.0,
                     base="qwen3", pooling=gguf.PoolingType.LAST),
    "qwen3rank": dict(n_layer=4, head_dim=128, tied=True,
                      rope_base=1000000.0, base="qwen3",
                      pooling=gguf.PoolingType.RANK, rank_labels=["yes", "no"]),
    "gemmaemb": dict(n_layer=6, head_dim=128, tied=True, rope_base=1000000.0,
                     base="gemma3", gguf_arch="gemma-embedding",
                     pooling=gguf.PoolingType.MEAN, dense=1024),
    # Qwen3.5/3.6 MoE (`qwen35moe`, llama.cpp's qwen35moe graph): qwen35's
    # layers with, in place of the FFN, 8 routed experts (2 used, 128 wide;
    # softmax router, weights renormalised) plus a shared expert 256 wide
    # (expert_shared_feed_forward_length, neither n_ff nor the experts'
    # width) scaled by sigmoid(ffn_gate_inp_shexp . h); every 2nd layer
    # attention (another pattern than qwen35's)
    "qwen35moe": dict(n_layer=4, head_dim=128, tied=True,
                      rope_base=10000000.0, base="qwen35",
                      gguf_arch="qwen35moe", attn_interval=2, f32=True,
                      n_expert=8, n_expert_used=2, n_ff_exp=128,
                      n_ff_shexp=256,
                      ssm=dict(d_conv=4, d_state=64, n_k=2, n_v=4)),
    # Qwen3-Next (`qwen3next`, llama.cpp's qwen3next graph): qwen35moe's
    # layers with the DeltaNet projections packed per key head, as its
    # converter writes them: ssm_ba (per key head its value heads' beta,
    # then their alpha) and, in qwen3next, the older files' one ssm_in (per
    # key head q, k, then its value heads' v and z); value head h reads key
    # head h / 2 (grouped, not qwen35's tiled h % 2); NEOX RoPE, no
    # sections; every 4th layer attention. qwen3nextm: the newer
    # converter's attn_qkv and attn_gate, the experts' gate and up merged
    # into one ffn_gate_up_exps, and one MTP layer (blk.4: the MTP head,
    # run only when loaded with it)
    "qwen3next": dict(n_layer=4, head_dim=128, tied=True,
                      rope_base=10000000.0, base="qwen35",
                      gguf_arch="qwen3next", attn_interval=4, f32=True,
                      n_expert=8, n_expert_used=2, n_ff_exp=128,
                      n_ff_shexp=256, next=True, packed_qkvz=True,
                      ssm=dict(d_conv=4, d_state=64, n_k=2, n_v=4)),
    "qwen3nextm": dict(n_layer=4, head_dim=128, tied=True,
                       rope_base=10000000.0, base="qwen35",
                       gguf_arch="qwen3next", attn_interval=2, f32=True,
                       n_expert=8, n_expert_used=2, n_ff_exp=128,
                       n_ff_shexp=256, next=True, gate_up=True, mtp=1,
                       ssm=dict(d_conv=4, d_state=64, n_k=2, n_v=4)),
    # BERT encoders (issue 44; goldens: scripts/gen_embed_goldens.py):
    # bert (BERT / MiniLM: absolute positions, token types, LayerNorm with
    # biases, GELU, non-causal, mean pooling) and bertrank (a cross-encoder:
    # rank pooling over the CLS row, the rank head cls [n_embd -> n_embd]
    # with tanh and cls.output of one row, one label); nomicbert
    # (nomic-bert: NEOX RoPE base 1000 instead of position embeddings, Q/K/V
    # fused, a SwiGLU FFN, no biases but the LayerNorms'). build_bert.
    "bert": dict(n_layer=4, head_dim=64, base="bert",
                 pooling=gguf.PoolingType.MEAN),
    "nomicbert": dict(n_layer=4, head_dim=64, base="bert",
                      gguf_arch="nomic-bert", rope_base=1000.0,
                      pooling=gguf.PoolingType.MEAN),
    "bertrank": dict(n_layer=4, head_dim=64, base="bert",
                     pooling=gguf.PoolingType.RANK, rank_labels=["relevance"]),
    # The language models of the vision-language Qwens (issue 46), with
    # M-RoPE: rope.dimension_sections give each pair one of a row's (t, h,
    # w, e) positions, and a text row's are (p, p, p, 0) in llama.cpp, so
    # the pairs of e stay unturned. qwen2vl (qwen2 + sections, ggml's MROPE):
    # sections [4, 4, 4, 4] over 32 pairs (sector = pair % 16), so pairs
    # 12-15 and 28-31 take e. qwen3vl (qwen3 + interleaved sections, ggml's
    # IMROPE; DeepStack: n_deepstack_layers 2, which text rows do not use):
    # Qwen3-VL's own [24, 20, 20, 0] over 64 pairs (pairs 61, 62 take e).
    # qwen3vlmoe (qwen3vl's attention, qwen3moe's experts; n_deepstack 1):
    # [2, 3, 3, 0] (sector = pair % 8: pair 6, 14, ... take e: the one
    # rule of the interleave that text rows see).
    "qwen2vl": dict(n_layer=4, head_dim=64, tied=False, rope_base=1000000.0,
                    sections=[4, 4, 4, 4]),
    "qwen3vl": dict(n_layer=4, head_dim=128, tied=True, rope_base=5000000.0,
                    sections=[24, 20, 20, 0], deepstack=2),
    "qwen3vlmoe": dict(n_layer=4, head_dim=128, tied=True,
                       rope_base=1000000.0, n_expert=8, n_expert_used=2,
                       n_ff_exp=128, sections=[2, 3, 3, 0], deepstack=1),
}

# Qwen3-Reranker's prompt (llama.cpp's converter writes it as the chat
# template "rerank"; llama-server fills in {query} and {document}).
RERANK_TEMPLATE = (
    "<|im_start|>system\nJudge whether the Document meets the requirements "
    "based on the Query and the Instruct provided. Note that the answer can "
    "only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n<Instruct>: "
    "Given a web search query, retrieve relevant passages that answer the "
    "query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n")

# The harmony format's control tokens (o200k_harmony's names), appended to
# the vocabulary of a harmony file.
HARMONY_TOKENS = ["<|startoftext|>", "<|return|>", "<|constrain|>", "<|channel|>",
                  "<|start|>", "<|end|>", "<|message|>", "<|call|>"]
HARMONY_TEMPLATE = os.path.join(ROOT, "tests", "data", "templates", "gpt-oss.jinja")

# ---------------------------------------------------------------- tokenizer

_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
           7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def read_tokenizer_kv(path):
    """[(key, value, GGUFValueType, sub_type)] for the tokenizer.* keys of a GGUF
    (own minimal parser: gguf.GGUFReader takes seconds on a 49k vocabulary)."""
    with open(path, "rb") as f:
        data = f.read(64 << 20)
    if data[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    ver, n_tensors, n_kv = struct.unpack_from("<IQQ", data, 4)
    off = 24

    def rstr(o):
        (n,) = struct.unpack_from("<Q", data, o)
        return data[o + 8:o + 8 + n].decode("utf-8"), o + 8 + n

    def rval(t, o):
        if t == 8:
            return rstr(o)
        fmt = _SCALAR[t]
        return struct.unpack_from(fmt, data, o)[0], o + struct.calcsize(fmt)

    out = []
    for _ in range(n_kv):
        key, off = rstr(off)
        (t,) = struct.unpack_from("<I", data, off)
        off += 4
        sub = None
        if t == 9:
            sub, n = struct.unpack_from("<IQ", data, off)
            off += 12
            if sub == 8:
                val = []
                for _ in range(n):
                    s, off = rstr(off)
                    val.append(s)
            else:
                fmt = _SCALAR[sub]
                sz = struct.calcsize(fmt)
                val = list(np.frombuffer(data, dtype=np.dtype(fmt), count=n, offset=off).tolist())
                off += sz * n
        else:
            val, off = rval(t, off)
        if key.startswith("tokenizer."):
            out.append((key, val, gguf.GGUFValueType(t),
                        None if sub is None else gguf.GGUFValueType(sub)))
    return out


def harmony_tokenizer(tok):
    """tok with the harmony control tokens appended (type CONTROL), eos
    <|return|> and the gpt-oss chat template (the published text,
    tests/data/templates/gpt-oss.jinja)."""
    out = []
    n = next(len(v) for k, v, _, _ in tok if k == "tokenizer.ggml.tokens")
    with open(HARMONY_TEMPLATE, encoding="utf-8", newline="") as f:
        template = f.read()
    for k, v, t, sub in tok:
        if k == "tokenizer.ggml.tokens":
            v = list(v) + HARMONY_TOKENS
        elif k == "tokenizer.ggml.token_type":
            v = list(v) + [3] * len(HARMONY_TOKENS)  # CONTROL
        elif k == "tokenizer.ggml.eos_token_id":
            v = n + HARMONY_TOKENS.index("<|return|>")
        elif k == "tokenizer.ggml.bos_token_id":
            v = n + HARMONY_TOKENS.index("<|startoftext|>")
        elif k == "tokenizer.chat_template":
            v = template
        out.append((k, v, t, sub))
    return out

# ---------------------------------------------------------------- generator

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(x):
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def randn(seed, name, n, start=0):
    """n approximately standard-normal float64 values, a pure function of
    (seed, name, index); the indices start at start."""
    h = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    base = np.uint64(int.from_bytes(h[:8], "little"))
    with np.errstate(over="ignore"):
        z = _splitmix64(np.arange(start, start + n, dtype=np.uint64)
                        * np.uint64(0xD1B54A32D192ED03) + base)
    m = np.uint64(0xFFFF)
    s = ((z & m) + ((z >> np.uint64(16)) & m) + ((z >> np.uint64(32)) & m)
         + (z >> np.uint64(48))).astype(np.float64)
    # four U{0..65535}: mean 2*65535, variance 4*(65536^2-1)/12
    return (s - 131070.0) * (1.0 / 37837.22694)


CHUNK = 1 << 22  # values per piece of random_rows


def random_rows(seed, name, shape, std, convert):
    """convert(randn(seed, name, prod(shape)).reshape(shape) * std), made a
    few whole rows at a time (the same values) so that a matrix of the bench
    files' sizes (bench/make_arch_shaped.py) needs little memory; convert
    maps a 2-D piece of rows to its stored rows."""
    row = shape[-1]
    n_rows = int(np.prod(shape)) // row
    step = max(1, CHUNK // row)
    parts = [convert((randn(seed, name, min(step, n_rows - r) * row, r * row)
                      * std).reshape(-1, row))
             for r in range(0, n_rows, step)]
    return np.concatenate(parts).reshape(*shape[:-1], -1)

# ---------------------------------------------------------------- model


def build_bert(kind, out, seed, f32, tokenizer):
    """A bert (or nomic-bert) file as llama.cpp's converter writes one
    (scripts/convert_hf.py for real bert checkpoints):
    {arch}.attention.layer_norm_epsilon, causal false, pooling_type, two
    token types, N_CTX position embeddings (nomic-bert: rope.freq_base);
    embeddings std 0.2, projections std 1/sqrt(fan_in), LayerNorm weights
    1 + 0.1 z and biases 0.1 z, the other biases 0.5 z. The vocabulary is
    the default model's (any works: the goldens store token ids)."""
    cfg = ARCHS[kind]
    L, hd = cfg["n_layer"], cfg["head_dim"]
    n_head = N_EMBD // hd
    tok = read_tokenizer_kv(tokenizer)
    n_vocab = next(len(v) for k, v, _, _ in tok if k == "tokenizer.ggml.tokens")
    mat_dt = np.float32 if f32 else np.float16
    nomic = cfg.get("gguf_arch") == "nomic-bert"
    w = gguf.GGUFWriter(out, cfg.get("gguf_arch", "bert"))
    w.add_name("nucleus random weights")
    w.add_string("nucleus.gen", f"scripts/make_arch_gguf.py v{GEN_VERSION} "
                 f"{kind} --seed {seed}" + (" --f32" if f32 else ""))
    w.add_file_type(0 if f32 else 1)
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(L)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(n_head)
    w.add_layer_norm_eps(1e-12)
    if nomic:
        w.add_rope_freq_base(cfg["rope_base"])
    w.add_causal_attention(False)
    w.add_pooling_type(cfg["pooling"])
    if "rank_labels" in cfg:
        w.add_classifier_output_labels(cfg["rank_labels"])
    w.add_token_type_count(2)
    for k, v, t, sub in tok:
        w.add_key_value(k, v, t, sub)

    def mat(name, shape, std, dt=mat_dt):
        x = randn(seed, name, int(np.prod(shape))).reshape(shape) * std
        w.add_tensor(name, x.astype(dt))

    def vec(name, n, kind):
        z = randn(seed, name, n)
        x = {"norm": 1.0 + 0.1 * z, "nbias": 0.1 * z, "bias": 0.5 * z}[kind]
        w.add_tensor(name, x.astype(np.float32))

    inv = lambda n: 1.0 / np.sqrt(n)
    mat("token_embd.weight", (n_vocab, N_EMBD), 0.2)
    mat("token_types.weight", (2, N_EMBD), 0.2, np.float32)
    if not nomic:
        mat("position_embd.weight", (N_CTX, N_EMBD), 0.2, np.float32)
    vec("token_embd_norm.weight", N_EMBD, "norm")
    vec("token_embd_norm.bias", N_EMBD, "nbias")
    for i in range(L):
        p = f"blk.{i}."
        if nomic:
            mat(p + "attn_qkv.weight", (3 * N_EMBD, N_EMBD), inv(N_EMBD))
            mat(p + "attn_output.weight", (N_EMBD, N_EMBD), inv(N_EMBD))
        for name in () if nomic else ("attn_q", "attn_k", "attn_v", "attn_output"):
            mat(p + name + ".weight", (N_EMBD, N_EMBD), inv(N_EMBD))
            vec(p + name + ".bias", N_EMBD, "bias")
        vec(p + "attn_output_norm.weight", N_EMBD, "norm")
        vec(p + "attn_output_norm.bias", N_EMBD, "nbias")
        if nomic:
            mat(p + "ffn_gate.weight", (N_FF, N_EMBD), inv(N_EMBD))
        mat(p + "ffn_up.weight", (N_FF, N_EMBD), inv(N_EMBD))
        mat(p + "ffn_down.weight", (N_EMBD, N_FF), inv(N_FF))
        if not nomic:
            vec(p + "ffn_up.bias", N_FF, "bias")
            vec(p + "ffn_down.bias", N_EMBD, "bias")
        vec(p + "layer_output_norm.weight", N_EMBD, "norm")
        vec(p + "layer_output_norm.bias", N_EMBD, "nbias")
    if "rank_labels" in cfg:
        mat("cls.weight", (N_EMBD, N_EMBD), inv(N_EMBD))
        vec("cls.bias", N_EMBD, "bias")
        mat("cls.output.weight", (len(cfg["rank_labels"]), N_EMBD), inv(N_EMBD))
        vec("cls.output.bias", len(cfg["rank_labels"]), "bias")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# what build()'s overrides may set beyond an ARCHS entry's own keys
WIDTH_KEYS = ("n_embd", "n_head", "n_head_kv", "n_ff", "window", "sections")


def widths(cfg):
    """(n_embd, n_head, n_head_kv, n_ff, window): the module's small widths
    unless cfg names others (bench/make_arch_shaped.py's realistic ones)."""
    return (cfg.get("n_embd", N_EMBD), cfg.get("n_head", N_HEAD),
            cfg.get("n_head_kv", N_HEAD_KV), cfg.get("n_ff", N_FF),
            cfg.get("window", SWA))


def build(arch, out, seed=0, f32=False, tokenizer=DEFAULT_TOKENIZER,
          overrides=None):
    """Writes ARCH's file to out; overrides (a dict) replace entries of its
    ARCHS configuration, widths included (see widths())."""
    if arch not in ARCHS:
        raise SystemExit(f"unknown arch {arch!r}: one of {' '.join(ARCHS)}")
    unknown = set(overrides or {}) - set(ARCHS[arch]) - set(WIDTH_KEYS)
    if unknown:
        raise SystemExit(f"{arch}: overrides {sorted(unknown)} are neither "
                         f"its keys nor {', '.join(WIDTH_KEYS)}")
    cfg = {**ARCHS[arch], **(overrides or {})}
    n_embd, n_head, n_head_kv, n_ff, window = widths(cfg)
    if cfg.get("base") == "bert":
        return build_bert(arch, out, seed, f32, tokenizer)
    kind, arch = arch, cfg.get("base", arch)
    L, hd = cfg["n_layer"], cfg["head_dim"]
    tok = read_tokenizer_kv(tokenizer)
    if cfg.get("harmony"):
        tok = harmony_tokenizer(tok)
    n_vocab = next(len(v) for k, v, _, _ in tok if k == "tokenizer.ggml.tokens")
    f32 = f32 or cfg.get("f32", False)
    mat_dt = np.float32 if f32 else np.float16
    n_q, n_kv = n_head * hd, n_head_kv * hd

    w = gguf.GGUFWriter(out, cfg.get("gguf_arch", arch))
    # general.name must not contain "phi3"/"phi-3": llama.cpp's vocab loader then
    # sets Phi-3 token attributes and throws (unordered_map::at) on a vocabulary
    # without </s>, <unk>, <s>.
    w.add_name("nucleus random weights")
    w.add_string("nucleus.gen", f"scripts/make_arch_gguf.py v{GEN_VERSION} "
                 f"{kind} --seed {seed}" + (" --f32" if f32 else "")
                 + (f" {overrides}" if overrides else ""))
    w.add_file_type(0 if f32 else 1)
    w.add_context_length(N_CTX)
    w.add_embedding_length(n_embd)
    w.add_block_count(L + cfg.get("mtp", 0))
    if arch == "gemma4":
        w.add_head_count(n_head)
        gemma4_keys(w, cfg)
    else:
        w.add_feed_forward_length(cfg["n_ff_exp"] if arch == "mixtral" else n_ff)
        w.add_head_count(n_head)
        w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(cfg["rope_base"])
    if arch not in ("gemma4", "gptoss") and (hd * n_head != n_embd
                             or arch.startswith(("gemma", "qwen3"))):
        w.add_key_length(hd)
        w.add_value_length(hd)
    if arch == "gemma2":
        w.add_sliding_window(window)          # pattern: llama.cpp default 2 (even layers local)
        w.add_attn_logit_softcapping(4.0)
        w.add_final_logit_softcapping(8.0)
    if arch == "gemma3":
        w.add_sliding_window(window)          # pattern: llama.cpp default 6; local rope base default 10000
    if arch in ("phi3", "phi3long"):
        w.add_rope_dimension_count(hd)
        w.add_rope_scaling_orig_ctx_len(cfg.get("orig_ctx", N_CTX))
    if "scaling" in cfg:
        w.add_rope_scaling_type(gguf.RopeScalingType(cfg["scaling"][0]))
        w.add_rope_scaling_factor(cfg["scaling"][1])
        if "orig_ctx" in cfg:
            w.add_rope_scaling_orig_ctx_len(cfg["orig_ctx"])
    if "attn_factor" in cfg:
        w.add_rope_scaling_attn_factors(cfg["attn_factor"])
    if "sections" in cfg:
        w.add_rope_dimension_sections(cfg["sections"])
    if "deepstack" in cfg:
        w.add_num_deepstack_layers(cfg["deepstack"])
    if arch == "qwen35":
        ssm = cfg["ssm"]
        w.add_rope_dimension_count(hd // 4)
        if "sections" not in cfg and not cfg.get("next"):  # (else above)
            w.add_rope_dimension_sections([6, 5, 5, 0])
        w.add_ssm_conv_kernel(ssm["d_conv"])
        w.add_ssm_state_size(ssm["d_state"])
        w.add_ssm_group_count(ssm["n_k"])
        w.add_ssm_time_step_rank(ssm["n_v"])
        w.add_ssm_inner_size(ssm["d_state"] * ssm["n_v"])
        ga = cfg.get("gguf_arch", arch)
        if cfg.get("mtp"):
            w.add_uint32(f"{ga}.nextn_predict_layers", cfg["mtp"])
        if "recurrent" in cfg:
            w.add_array(f"{ga}.attention.recurrent_layers",
                        [bool(x) for x in cfg["recurrent"]])
        else:
            w.add_full_attention_interval(cfg["attn_interval"])
    if arch in ("qwen3moe", "qwen3vlmoe", "mixtral", "gptoss") or (
            arch == "qwen35" and "n_expert" in cfg):
        w.add_expert_count(cfg["n_expert"])
        w.add_expert_used_count(cfg["n_expert_used"])
    if arch in ("qwen3moe", "qwen3vlmoe", "gptoss") or (
            arch == "qwen35" and "n_expert" in cfg):
        w.add_expert_feed_forward_length(cfg["n_ff_exp"])
    if "n_ff_shexp" in cfg:
        w.add_expert_shared_feed_forward_length(cfg["n_ff_shexp"])
    if arch == "gptoss":
        w.add_key_length(hd)
        w.add_value_length(hd)
        w.add_sliding_window(window)          # pattern: llama.cpp default 2 (even layers local)
    if "pooling" in cfg:
        w.add_pooling_type(cfg["pooling"])
    if "rank_labels" in cfg:
        w.add_classifier_output_labels(cfg["rank_labels"])
        w.add_string("tokenizer.chat_template.rerank", RERANK_TEMPLATE)
    if "dense" in cfg:
        gname = cfg["gguf_arch"]
        w.add_uint32(f"{gname}.dense_2_feat_in", n_embd)
        w.add_uint32(f"{gname}.dense_2_feat_out", cfg["dense"])
        w.add_uint32(f"{gname}.dense_3_feat_in", cfg["dense"])
        w.add_uint32(f"{gname}.dense_3_feat_out", n_embd)
    for k, v, t, sub in tok:
        w.add_key_value(k, v, t, sub)

    def mat(name, shape, std):  # shape in numpy order (rows = GGUF ne1)
        if cfg.get("q8"):
            q = random_rows(seed, name, shape, std, lambda x: quants.quantize(
                x.astype(np.float32), gguf.GGMLQuantizationType.Q8_0))
            w.add_tensor(name, q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            return
        if cfg.get("kquant") and shape[-1] % 256 == 0:
            q6 = name.endswith(("token_embd.weight", "attn_output.weight",
                                "ffn_down_exps.weight"))
            kquant_mat(name, shape, std, q6)
            return
        w.add_tensor(name, random_rows(seed, name, shape, std,
                                       lambda x: x.astype(mat_dt)))

    def kquant_mat(name, shape, std, q6):
        # random blocks: quants, scales (and mins) uniform; d (and dmin)
        # set so the values have about std (Q4_K: d sc q - dmin m, q 0..15,
        # sc, m 0..63; Q6_K: d sc (q - 32), q 0..63, sc int8)
        bsz = 210 if q6 else 144
        n_blocks = int(np.prod(shape)) // 256
        h = hashlib.sha256(f"{seed}:{name}:blocks".encode()).digest()
        base = np.uint64(int.from_bytes(h[:8], "little"))
        n_words = (n_blocks * bsz + 7) // 8
        with np.errstate(over="ignore"):
            z = _splitmix64(np.arange(n_words, dtype=np.uint64)
                            * np.uint64(0xD1B54A32D192ED03) + base)
        b = z.view(np.uint8)[: n_blocks * bsz].reshape(n_blocks, bsz).copy()
        if q6:
            d = np.float16(std / (18.5 * 74.0))
            b[:, 208:210] = np.frombuffer(d.tobytes(), np.uint8)
        else:
            d = np.float16(std / (4.6 * 32.0))
            dmin = np.float16(float(d) * 7.5)
            b[:, 0:2] = np.frombuffer(d.tobytes(), np.uint8)
            b[:, 2:4] = np.frombuffer(dmin.tobytes(), np.uint8)
        qt = gguf.GGMLQuantizationType.Q6_K if q6 else gguf.GGMLQuantizationType.Q4_K
        w.add_tensor(name, b.reshape(*shape[:-1], shape[-1] // 256 * bsz),
                     raw_dtype=qt)

    def mxfp4_mat(name, shape, std):
        # random 32-blocks: a byte E8M0 exponent e, 16 bytes of 4-bit codes
        # (values kvalues[q] * 2^(e - 128), kvalues 0 1 2 3 4 6 8 12 and
        # their negatives: rms 5.85); e one of three around the std's
        n_blocks = int(np.prod(shape)) // 32
        h = hashlib.sha256(f"{seed}:{name}:blocks".encode()).digest()
        base = np.uint64(int.from_bytes(h[:8], "little"))
        n_words = (n_blocks * 17 + 7) // 8
        with np.errstate(over="ignore"):
            z = _splitmix64(np.arange(n_words, dtype=np.uint64)
                            * np.uint64(0xD1B54A32D192ED03) + base)
        b = z.view(np.uint8)[: n_blocks * 17].reshape(n_blocks, 17).copy()
        e0 = 128 + int(round(np.log2(std / 5.85)))
        b[:, 0] = e0 - 1 + b[:, 0] % 3
        w.add_tensor(name, b.reshape(*shape[:-1], shape[-1] // 32 * 17),
                     raw_dtype=gguf.GGMLQuantizationType.MXFP4)

    def vec(name, n, kind, shape=None):
        z = randn(seed, name, n)
        x = {"norm": 1.0 + 0.1 * z, "post": 4.0 * (1.0 + 0.1 * z), "bias": 0.5 * z,
             "qnorm": 0.125 * (1.0 + 0.1 * z),
             "rscale": 1.25 * np.sqrt(n_embd) * (1.0 + 0.1 * z),
             "short": 1.0 + 0.5 * np.abs(z), "long": 1.0 + 4.0 * np.abs(z),
             "sink": 2.0 * z}[kind]
        w.add_tensor(name, x.astype(np.float32).reshape(shape or (n,)))

    inv = lambda n: 1.0 / np.sqrt(n)
    if arch == "gemma4":
        gemma4_tensors(w, cfg, seed, n_vocab, mat, vec)
        L = 0  # (its layers written there)

    def qwen35_layer(p, i):
        recurrent = i < L and (cfg["recurrent"][i] if "recurrent" in cfg
                               else (i + 1) % cfg["attn_interval"] != 0)
        if recurrent:
            ssm = cfg["ssm"]
            S, nk, nv = ssm["d_state"], ssm["n_k"], ssm["n_v"]
            conv = 2 * nk * S + nv * S
            if cfg.get("packed_qkvz"):
                mat(p + "ssm_in.weight", (conv + nv * S, n_embd), inv(n_embd))
            else:
                mat(p + "attn_qkv.weight", (conv, n_embd), inv(n_embd))
                mat(p + "attn_gate.weight", (nv * S, n_embd), inv(n_embd))
            x = randn(seed, p + "ssm_conv1d.weight", conv * ssm["d_conv"])
            w.add_tensor(p + "ssm_conv1d.weight",
                         (x.reshape(conv, ssm["d_conv"]) * 0.5).astype(np.float32))
            vec(p + "ssm_dt.bias", nv, "bias")
            # -exp(A_log), A_log about 0: decays exp(a softplus(.)) near 1/2
            z = randn(seed, p + "ssm_a", nv)
            w.add_tensor(p + "ssm_a", (-np.exp(0.5 * z)).astype(np.float32))
            if cfg.get("next"):
                mat(p + "ssm_ba.weight", (2 * nv, n_embd), inv(n_embd))
            else:
                mat(p + "ssm_beta.weight", (nv, n_embd), inv(n_embd))
                mat(p + "ssm_alpha.weight", (nv, n_embd), inv(n_embd))
            vec(p + "ssm_norm.weight", S, "norm")
            mat(p + "ssm_out.weight", (n_embd, nv * S), inv(nv * S))
        else:
            mat(p + "attn_q.weight", (2 * n_q, n_embd), inv(n_embd))
            mat(p + "attn_k.weight", (n_kv, n_embd), inv(n_embd))
            mat(p + "attn_v.weight", (n_kv, n_embd), inv(n_embd))
            vec(p + "attn_q_norm.weight", hd, "norm")
            vec(p + "attn_k_norm.weight", hd, "norm")
            mat(p + "attn_output.weight", (n_embd, n_q), inv(n_q))
        vec(p + "post_attention_norm.weight", n_embd, "norm")
        if "n_expert" in cfg:
            E, F, FS = cfg["n_expert"], cfg["n_ff_exp"], cfg["n_ff_shexp"]
            x = randn(seed, p + "ffn_gate_inp.weight", E * n_embd).reshape(E, n_embd)
            w.add_tensor(p + "ffn_gate_inp.weight",
                         (x * 2.0 * inv(n_embd)).astype(np.float32))
            if cfg.get("gate_up"):  # per expert: F gate rows, F up rows
                mat(p + "ffn_gate_up_exps.weight", (E, 2 * F, n_embd),
                    inv(n_embd))
            else:
                mat(p + "ffn_gate_exps.weight", (E, F, n_embd), inv(n_embd))
                mat(p + "ffn_up_exps.weight", (E, F, n_embd), inv(n_embd))
            mat(p + "ffn_down_exps.weight", (E, n_embd, F), inv(F))
            # the shared expert's gate: one logit per row, std ~1
            x = randn(seed, p + "ffn_gate_inp_shexp.weight", n_embd)
            w.add_tensor(p + "ffn_gate_inp_shexp.weight",
                         (x * inv(n_embd)).astype(np.float32))
            mat(p + "ffn_gate_shexp.weight", (FS, n_embd), inv(n_embd))
            mat(p + "ffn_up_shexp.weight", (FS, n_embd), inv(n_embd))
            mat(p + "ffn_down_shexp.weight", (n_embd, FS), inv(FS))
        else:
            mat(p + "ffn_gate.weight", (n_ff, n_embd), inv(n_embd))
            mat(p + "ffn_up.weight", (n_ff, n_embd), inv(n_embd))
            mat(p + "ffn_down.weight", (n_embd, n_ff), inv(n_ff))
        if i >= L:  # an MTP layer
            mat(p + "nextn.eh_proj.weight", (n_embd, 2 * n_embd),
                inv(2 * n_embd))
            vec(p + "nextn.enorm.weight", n_embd, "norm")
            vec(p + "nextn.hnorm.weight", n_embd, "norm")
            vec(p + "nextn.shared_head_norm.weight", n_embd, "norm")

    mat("token_embd.weight", (n_vocab, n_embd), 0.2)
    vec("output_norm.weight", n_embd, "norm")
    if "rank_labels" in cfg:
        mat("cls.output.weight", (len(cfg["rank_labels"]), n_embd), 0.2)
    if "dense" in cfg:
        mat("dense_2.weight", (cfg["dense"], n_embd), inv(n_embd))
        mat("dense_3.weight", (n_embd, cfg["dense"]), inv(cfg["dense"]))
    if not cfg["tied"]:
        mat("output.weight", (n_vocab, n_embd), 0.2)
    if arch in ("phi3", "phi3long"):
        vec("rope_factors_short.weight", hd // 2, "short")
        vec("rope_factors_long.weight", hd // 2, "long")
    for i in range(L + cfg.get("mtp", 0)):
        p = f"blk.{i}."
        vec(p + "attn_norm.weight", n_embd, "norm")
        if arch == "qwen35":
            qwen35_layer(p, i)
            continue
        if arch in ("phi3", "phi3long"):
            mat(p + "attn_qkv.weight", (n_q + 2 * n_kv, n_embd), inv(n_embd))
        else:
            mat(p + "attn_q.weight", (n_q, n_embd), inv(n_embd))
            mat(p + "attn_k.weight", (n_kv, n_embd), inv(n_embd))
            mat(p + "attn_v.weight", (n_kv, n_embd), inv(n_embd))
        if arch in ("qwen2", "qwen2vl", "gptoss"):
            vec(p + "attn_q.bias", n_q, "bias")
            vec(p + "attn_k.bias", n_kv, "bias")
            vec(p + "attn_v.bias", n_kv, "bias")
        if arch in ("qwen3", "qwen3moe", "qwen3vl", "qwen3vlmoe", "gemma3"):
            vec(p + "attn_q_norm.weight", hd, "norm")
            vec(p + "attn_k_norm.weight", hd, "norm")
        mat(p + "attn_output.weight", (n_embd, n_q), inv(n_q))
        if arch.startswith("gemma"):
            vec(p + "post_attention_norm.weight", n_embd, "post")
        if arch == "gptoss":
            vec(p + "attn_output.bias", n_embd, "bias")
            vec(p + "attn_sinks.weight", n_head, "sink")
            # gpt-oss's pre-FFN norm is named post_attention_norm
            vec(p + "post_attention_norm.weight", n_embd, "norm")
            E, F = cfg["n_expert"], cfg["n_ff_exp"]
            x = randn(seed, p + "ffn_gate_inp.weight", E * n_embd).reshape(E, n_embd)
            w.add_tensor(p + "ffn_gate_inp.weight", (x * 2.0 * inv(n_embd)).astype(np.float32))
            vec(p + "ffn_gate_inp.bias", E, "bias")
            mxfp4_mat(p + "ffn_gate_exps.weight", (E, F, n_embd), 3.0 * inv(n_embd))
            mxfp4_mat(p + "ffn_up_exps.weight", (E, F, n_embd), 3.0 * inv(n_embd))
            mxfp4_mat(p + "ffn_down_exps.weight", (E, n_embd, F), inv(F))
            vec(p + "ffn_gate_exps.bias", E * F, "bias", (E, F))
            vec(p + "ffn_up_exps.bias", E * F, "bias", (E, F))
            vec(p + "ffn_down_exps.bias", E * n_embd, "bias", (E, n_embd))
            continue
        vec(p + "ffn_norm.weight", n_embd, "norm")
        if arch in ("qwen3moe", "qwen3vlmoe", "mixtral"):
            E, F = cfg["n_expert"], cfg["n_ff_exp"]
            x = randn(seed, p + "ffn_gate_inp.weight", E * n_embd).reshape(E, n_embd)
            w.add_tensor(p + "ffn_gate_inp.weight", (x * 2.0 * inv(n_embd)).astype(np.float32))
            mat(p + "ffn_gate_exps.weight", (E, F, n_embd), inv(n_embd))
            mat(p + "ffn_up_exps.weight", (E, F, n_embd), inv(n_embd))
            mat(p + "ffn_down_exps.weight", (E, n_embd, F), inv(F))
        elif arch in ("phi3", "phi3long"):
            mat(p + "ffn_up.weight", (2 * n_ff, n_embd), inv(n_embd))
            mat(p + "ffn_down.weight", (n_embd, n_ff), inv(n_ff))
        else:
            mat(p + "ffn_gate.weight", (n_ff, n_embd), inv(n_embd))
            mat(p + "ffn_up.weight", (n_ff, n_embd), inv(n_embd))
            mat(p + "ffn_down.weight", (n_embd, n_ff), inv(n_ff))
        if arch.startswith("gemma"):
            vec(p + "post_ffw_norm.weight", n_embd, "post")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def gemma4_keys(w, cfg):
    """The gemma4.* keys beyond the common ones, as llama.cpp's converter
    writes them (conversion/gemma.py Gemma4Model)."""
    L, swa = cfg["n_layer"], [bool(x) for x in cfg["swa"]]
    shared = cfg["n_kv_shared"]
    n_embd, n_head, n_head_kv, n_ff, window = widths(cfg)
    w.add_feed_forward_length(
        [n_ff * 2 if cfg.get("double_wide") and i >= L - shared else n_ff
         for i in range(L)])
    w.add_head_count_kv([cfg["n_head_kv_swa"] if s else cfg["n_head_kv_full"]
                         for s in swa])
    w.add_key_length(cfg["head_dim_full"])
    w.add_value_length(cfg["head_dim_full"])
    w.add_key_length_swa(cfg["head_dim"])
    w.add_value_length_swa(cfg["head_dim"])
    w.add_rope_dimension_count(cfg["head_dim_full"])
    w.add_rope_dimension_count_swa(cfg["head_dim"])
    w.add_rope_freq_base_swa(10000.0)
    w.add_sliding_window(window)
    w.add_sliding_window_pattern(swa)
    w.add_shared_kv_layers(shared)
    w.add_embedding_length_per_layer_input(cfg["n_embd_per_layer"])
    w.add_final_logit_softcapping(10.0)
    if cfg.get("n_expert"):
        w.add_expert_count(cfg["n_expert"])
        w.add_expert_used_count(cfg["n_expert_used"])
        w.add_expert_feed_forward_length(cfg["n_ff_exp"])


def gemma4_tensors(w, cfg, seed, n_vocab, mat, vec):
    """Gemma 4's layers (llama.cpp's llama_model_gemma4::load_arch_tensors):
    a shared layer (the last n_kv_shared) has no attn_k / attn_v /
    attn_k_norm; a k_eq_v full layer no attn_v."""
    L, swa, shared = cfg["n_layer"], cfg["swa"], cfg["n_kv_shared"]
    n_embd, n_head, n_head_kv, n_ff, window = widths(cfg)
    P, inv = cfg["n_embd_per_layer"], lambda n: 1.0 / np.sqrt(n)
    hf = cfg["head_dim_full"]
    # proportional RoPE: a quarter of the full layers' pairs turn
    n_rot = hf // 2 // 4
    w.add_tensor("rope_freqs.weight", np.array(
        [1.0] * n_rot + [1e30] * (hf // 2 - n_rot), dtype=np.float32))
    if P:
        mat("per_layer_token_embd.weight", (n_vocab, P * L), 0.2)
        mat("per_layer_model_proj.weight", (P * L, n_embd), inv(n_embd))
        vec("per_layer_proj_norm.weight", P, "norm")
    for i in range(L):
        p = f"blk.{i}."
        hd = cfg["head_dim"] if swa[i] else hf
        n_kv = (cfg["n_head_kv_swa"] if swa[i] else cfg["n_head_kv_full"]) * hd
        own_kv = i < L - shared
        F = n_ff * 2 if cfg.get("double_wide") and not own_kv else n_ff
        vec(p + "attn_norm.weight", n_embd, "norm")
        mat(p + "attn_q.weight", (n_head * hd, n_embd), inv(n_embd))
        vec(p + "attn_q_norm.weight", hd, "qnorm")
        if own_kv:
            mat(p + "attn_k.weight", (n_kv, n_embd), inv(n_embd))
            if swa[i] or not cfg.get("k_eq_v"):
                mat(p + "attn_v.weight", (n_kv, n_embd), inv(n_embd))
            vec(p + "attn_k_norm.weight", hd, "norm")
        mat(p + "attn_output.weight", (n_embd, n_head * hd), inv(n_head * hd))
        vec(p + "post_attention_norm.weight", n_embd, "post")
        vec(p + "ffn_norm.weight", n_embd, "norm")
        mat(p + "ffn_gate.weight", (F, n_embd), inv(n_embd))
        mat(p + "ffn_up.weight", (F, n_embd), inv(n_embd))
        mat(p + "ffn_down.weight", (n_embd, F), inv(F))
        vec(p + "post_ffw_norm.weight", n_embd, "post")
        if cfg.get("n_expert"):
            E, FE = cfg["n_expert"], cfg["n_ff_exp"]
            x = randn(seed, p + "ffn_gate_inp.weight", E * n_embd)
            w.add_tensor(p + "ffn_gate_inp.weight", (x.reshape(E, n_embd)
                         * 2.0 * inv(n_embd)).astype(np.float32))
            vec(p + "ffn_gate_inp.scale", n_embd, "rscale")
            vec(p + "pre_ffw_norm_2.weight", n_embd, "norm")
            vec(p + "post_ffw_norm_1.weight", n_embd, "post")
            vec(p + "post_ffw_norm_2.weight", n_embd, "post")
            mat(p + "ffn_gate_exps.weight", (E, FE, n_embd), inv(n_embd))
            mat(p + "ffn_up_exps.weight", (E, FE, n_embd), inv(n_embd))
            mat(p + "ffn_down_exps.weight", (E, n_embd, FE), inv(FE))
            vec(p + "ffn_down_exps.scale", E, "short")
        if P:
            mat(p + "inp_gate.weight", (P, n_embd), inv(n_embd))
            mat(p + "proj.weight", (n_embd, P), inv(P))
            vec(p + "post_norm.weight", n_embd, "post")
        z = randn(seed, p + "layer_output_scale.weight", 1)
        w.add_tensor(p + "layer_output_scale.weight",
                     (0.75 + 0.1 * z).astype(np.float32))


def main(argv):
    if "--list" in argv:
        print(" ".join(ARCHS))
        return
    args, seed, f32, tokz, mmproj = [], 0, False, DEFAULT_TOKENIZER, None
    it = iter(argv)
    for a in it:
        if a == "--mmproj":
            mmproj = next(it)
        elif a == "--seed":
            seed = int(next(it))
        elif a == "--f32":
            f32 = True
        elif a == "--tokenizer":
            tokz = next(it)
        else:
            args.append(a)
    if len(args) != 2:
        raise SystemExit(__doc__)
    build(args[0], args[1], seed, f32, tokz)
    if mmproj:
        from make_mmproj_gguf import build_mmproj
        build_mmproj(args[0], mmproj, seed, N_EMBD, randn)


if __name__ == "__main__":
    main(sys.argv[1:])
