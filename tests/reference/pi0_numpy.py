#!/usr/bin/python3
"""NumPy fp32 reference of the pi0 / pi0.5 forward pass (docs/model.md, docs/checkpoint.md).

Written for clarity, not speed: every step follows model.md, section numbers are quoted.
By default it computes what openpi computes (every camera and every prefix token, masked ones
too, with the finite additive mask); `skip_masked=True` computes only valid tokens, which
model.md §5.4 says gives the same valid outputs.

CLI:
  pi0_numpy.py --checkpoint DIR --inputs IO.safetensors --out REF.safetensors
               [--skip-masked] [--time] [--repeat N] [--warmup N] [--threads N]
The output file holds the inputs and the outputs section of checkpoint.md §5.
"""

import argparse
import os
import sys


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True, help="checkpoint folder (config.json, model.safetensors)")
    p.add_argument("--inputs", required=True, help="I/O file holding the inputs section (checkpoint.md §5)")
    p.add_argument("--out", help="write inputs + outputs here")
    p.add_argument("--skip-masked", action="store_true", help="compute only valid cameras and tokens")
    p.add_argument("--time", action="store_true", help="print per-stage wall times as one JSON line")
    p.add_argument("--repeat", type=int, default=1, help="timed runs (the median is printed)")
    p.add_argument("--warmup", type=int, default=0, help="untimed runs before the timed ones")
    p.add_argument("--threads", type=int, help="BLAS threads (sets OPENBLAS_NUM_THREADS / OMP_NUM_THREADS)")
    args = p.parse_args(argv)
    if not args.out and not args.time:
        p.error("nothing to do: give --out and/or --time")
    if args.repeat < 1 or args.warmup < 0:
        p.error("--repeat must be >= 1 and --warmup >= 0")
    return args


if __name__ == "__main__":
    ARGS = parse_args()
    # OpenBLAS reads its thread count when it is loaded, i.e. when numpy is first imported.
    if ARGS.threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(ARGS.threads)

import json  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

F32 = np.float32
# model.md §5.3 / §11.3: openpi's finite bias for disallowed pairs. Never -inf: fully masked
# rows must stay finite (uniform softmax) so that 0 · V does not turn into NaN.
MASK_VALUE = F32(-2.3819763e38)
NORM_EPS = 1e-6
ROPE_BASE = 10000.0

# ---------------------------------------------------------------------------------------------
# Configuration (checkpoint.md §2)

V = "paligemma_with_expert.paligemma.model.vision_tower.vision_model"
G = "paligemma_with_expert.paligemma.model.language_model"
X = "paligemma_with_expert.gemma_expert.model"
PROJ = "paligemma_with_expert.paligemma.model.multi_modal_projector.linear"
EMBED_KEYS = ("paligemma_with_expert.paligemma.lm_head.weight", G + ".embed_tokens.weight")

SO400M = dict(image_size=224, patch_size=14, width=1152, depth=27, mlp_dim=4304, num_heads=16)
GEMMA_2B = dict(width=2048, depth=18, mlp_dim=16384, num_heads=8, num_kv_heads=1, head_dim=256,
                vocab_size=257152)
GEMMA_300M = dict(width=1024, depth=18, mlp_dim=4096, num_heads=8, num_kv_heads=1, head_dim=256)
VLM_VARIANTS = {"gemma_2b": GEMMA_2B, "gemma_2b_lora": GEMMA_2B}
EXPERT_VARIANTS = {"gemma_300m": GEMMA_300M, "gemma_300m_lora": GEMMA_300M}
DEFAULT_CAMERAS = ["base_0_rgb", "left_wrist_0_rgb", "right_wrist_0_rgb"]
CONFIG_KEYS = {"action_dim", "action_horizon", "paligemma_variant", "action_expert_variant", "precision",
               "model_type", "max_token_len", "discrete_state_input", "num_steps", "asset_id", "cameras",
               "vision", "vlm", "expert"}


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class VisionDims:
    image_size: int
    patch_size: int
    width: int
    depth: int
    mlp_dim: int
    num_heads: int

    @property
    def grid(self):
        return self.image_size // self.patch_size

    @property
    def tokens(self):
        return self.grid ** 2


@dataclass(frozen=True)
class GemmaDims:
    width: int
    depth: int
    mlp_dim: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int = 0  # VLM only


@dataclass(frozen=True)
class Config:
    model_type: str  # "pi0" or "pi05"
    action_dim: int
    action_horizon: int
    max_token_len: int
    num_steps: int
    cameras: tuple
    vision: VisionDims
    vlm: GemmaDims
    expert: GemmaDims

    @property
    def pi05(self):
        return self.model_type == "pi05"

    @property
    def prefix_len(self):
        return len(self.cameras) * self.vision.tokens + self.max_token_len


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"config.json: {what} must be a positive integer, got {value!r}")
    return value


def _dims(raw, variant, variants, obj_key, fields):
    """Sizes of one block: a named variant, optionally overridden key by key by the `obj_key`
    object; variant `custom` takes every size from the object."""
    obj = raw.get(obj_key)
    if obj is not None and not isinstance(obj, dict):
        raise ConfigError(f"config.json: {obj_key!r} must be an object")
    obj = obj or {}
    unknown = sorted(set(obj) - set(fields))
    if unknown:
        raise ConfigError(f"config.json: unknown key(s) {unknown} in {obj_key!r} (known: {sorted(fields)})")
    if variant == "custom":
        base = {}
    elif variant in variants:
        base = dict(variants[variant])
    else:
        raise ConfigError(f"config.json: unknown variant {variant!r} for {obj_key!r} "
                          f"(known: {sorted(variants)} or 'custom')")
    base.update(obj)
    missing = [f for f in fields if f not in base]
    if missing:
        raise ConfigError(f"config.json: {obj_key!r} lacks {missing} (required with variant 'custom')")
    return {f: _positive_int(base[f], f"{obj_key}.{f}") for f in fields}


def parse_config(raw, weight_model_type):
    """Config from a config.json dict; `weight_model_type` is what the weight set says (model.md §1)."""
    unknown = sorted(set(raw) - CONFIG_KEYS)
    if unknown:
        raise ConfigError(f"config.json: unknown key(s) {unknown}")
    model_type = raw.get("model_type", weight_model_type)
    if model_type not in ("pi0", "pi05"):
        raise ConfigError(f"config.json: model_type must be 'pi0' or 'pi05', got {model_type!r}")
    if model_type != weight_model_type:
        raise ConfigError(f"config.json says model_type {model_type!r} but the weights are {weight_model_type!r}")
    vision = VisionDims(**_dims(raw, "so400m", {"so400m": SO400M}, "vision", list(SO400M)))
    vlm = GemmaDims(**_dims(raw, raw.get("paligemma_variant", "gemma_2b"), VLM_VARIANTS, "vlm", list(GEMMA_2B)))
    expert = GemmaDims(**_dims(raw, raw.get("action_expert_variant", "gemma_300m"), EXPERT_VARIANTS, "expert",
                               list(GEMMA_300M)))
    cameras = raw.get("cameras", DEFAULT_CAMERAS)
    if not isinstance(cameras, list) or not cameras or not all(isinstance(c, str) for c in cameras):
        raise ConfigError(f"config.json: cameras must be a non-empty list of names, got {cameras!r}")
    for key, kind in (("discrete_state_input", bool), ("asset_id", str), ("precision", str)):
        if key in raw and not isinstance(raw[key], kind):
            raise ConfigError(f"config.json: {key} must be a {kind.__name__}, got {raw[key]!r}")
    if "action_horizon" not in raw:
        raise ConfigError("config.json: action_horizon is required (it cannot be inferred from the weights)")
    cfg = Config(
        model_type=model_type,
        action_dim=_positive_int(raw.get("action_dim", 32), "action_dim"),
        action_horizon=_positive_int(raw["action_horizon"], "action_horizon"),
        max_token_len=_positive_int(raw.get("max_token_len", 200 if model_type == "pi05" else 48), "max_token_len"),
        num_steps=_positive_int(raw.get("num_steps", 10), "num_steps"),
        cameras=tuple(cameras), vision=vision, vlm=vlm, expert=expert)
    _check_rules(cfg)
    return cfg


def _check_rules(cfg):
    """The consistency rules of checkpoint.md §2 ("Rules for custom sizes")."""
    v, g, x = cfg.vision, cfg.vlm, cfg.expert
    rules = [
        (g.depth == x.depth, "vlm.depth == expert.depth"),
        (g.num_heads == x.num_heads, "vlm.num_heads == expert.num_heads"),
        (g.num_kv_heads == x.num_kv_heads, "vlm.num_kv_heads == expert.num_kv_heads"),
        (g.head_dim == x.head_dim, "vlm.head_dim == expert.head_dim"),
        (g.num_heads % g.num_kv_heads == 0, "num_heads divisible by num_kv_heads"),
        (g.head_dim % 2 == 0, "head_dim even (RoPE)"),
        (v.width % v.num_heads == 0, "vision.width divisible by vision.num_heads"),
        (v.image_size % v.patch_size == 0, "vision.image_size divisible by vision.patch_size"),
        (x.width % 2 == 0, "expert.width even (sin/cos halves of the time embedding)"),
    ]
    for ok, rule in rules:
        if not ok:
            raise ConfigError(f"config.json: sizes break the rule {rule}")


# ---------------------------------------------------------------------------------------------
# Checkpoint (model.md §3)

def expected_shapes(cfg):
    """Every tensor inference needs, with its shape (model.md §3.2 sized from cfg), except the
    embedding table, which may be stored under either of EMBED_KEYS."""
    v, g, x, A = cfg.vision, cfg.vlm, cfg.expert, cfg.action_dim
    s = {
        f"{V}.embeddings.patch_embedding.weight": (v.width, 3, v.patch_size, v.patch_size),
        f"{V}.embeddings.patch_embedding.bias": (v.width,),
        f"{V}.embeddings.position_embedding.weight": (v.tokens, v.width),
        f"{V}.post_layernorm.weight": (v.width,),
        f"{V}.post_layernorm.bias": (v.width,),
        f"{PROJ}.weight": (g.width, v.width),
        f"{PROJ}.bias": (g.width,),
    }
    for i in range(v.depth):
        p = f"{V}.encoder.layers.{i}"
        for n in ("layer_norm1", "layer_norm2"):
            s[f"{p}.{n}.weight"] = s[f"{p}.{n}.bias"] = (v.width,)
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            s[f"{p}.self_attn.{n}.weight"] = (v.width, v.width)
            s[f"{p}.self_attn.{n}.bias"] = (v.width,)
        s[f"{p}.mlp.fc1.weight"], s[f"{p}.mlp.fc1.bias"] = (v.mlp_dim, v.width), (v.mlp_dim,)
        s[f"{p}.mlp.fc2.weight"], s[f"{p}.mlp.fc2.bias"] = (v.width, v.mlp_dim), (v.width,)
    for prefix, d in ((G, g), (X, x)):
        qh, kvh = d.num_heads * d.head_dim, d.num_kv_heads * d.head_dim
        for i in range(d.depth):
            p = f"{prefix}.layers.{i}"
            s[f"{p}.self_attn.q_proj.weight"] = (qh, d.width)
            s[f"{p}.self_attn.k_proj.weight"] = (kvh, d.width)
            s[f"{p}.self_attn.v_proj.weight"] = (kvh, d.width)
            s[f"{p}.self_attn.o_proj.weight"] = (d.width, qh)
            s[f"{p}.mlp.gate_proj.weight"] = (d.mlp_dim, d.width)
            s[f"{p}.mlp.up_proj.weight"] = (d.mlp_dim, d.width)
            s[f"{p}.mlp.down_proj.weight"] = (d.width, d.mlp_dim)
    E = x.width
    norms = [f"{p}.layers.{i}.{n}" for p in (G, X) for i in range(g.depth)
             for n in ("input_layernorm", "post_attention_layernorm")]
    for n in norms:
        if n.startswith(G) or not cfg.pi05:
            s[f"{n}.weight"] = (g.width if n.startswith(G) else E,)
        else:  # pi0.5 adaRMSNorm: Linear E -> 3E, no weight vector (model.md §6.2)
            s[f"{n}.dense.weight"], s[f"{n}.dense.bias"] = (3 * E, E), (3 * E,)
    if cfg.pi05:
        s[f"{X}.norm.dense.weight"], s[f"{X}.norm.dense.bias"] = (3 * E, E), (3 * E,)
        heads = {"time_mlp_in": (E, E), "time_mlp_out": (E, E)}
    else:
        s[f"{X}.norm.weight"] = (E,)
        heads = {"state_proj": (E, A), "action_time_mlp_in": (E, 2 * E), "action_time_mlp_out": (E, E)}
    heads.update({"action_in_proj": (E, A), "action_out_proj": (A, E)})
    for name, shape in heads.items():
        s[f"{name}.weight"], s[f"{name}.bias"] = shape, (shape[0],)
    return s


def model_type_from_weights(keys):
    """model.md §1: the weight set tells pi0 and pi0.5 apart."""
    keys = set(keys)
    pi05 = {"time_mlp_in.weight", "time_mlp_out.weight"} <= keys
    pi0 = {"state_proj.weight", "action_time_mlp_in.weight", "action_time_mlp_out.weight"} <= keys
    if pi05 == pi0:
        raise ConfigError("cannot tell pi0 from pi0.5: the weights have " +
                          ("both" if pi0 else "neither") + " the pi0 heads (state_proj, action_time_mlp_*)"
                          " and the pi0.5 heads (time_mlp_*)")
    return "pi05" if pi05 else "pi0"


class Model:
    """Config plus float32 weights. The token embedding table stays in the mapped file and
    only looked-up rows are converted (the real table is 257152 × 2048)."""

    def __init__(self, cfg, weights, embed_file, embed_key):
        self.cfg = cfg
        self.w = weights
        self._embed_file = embed_file
        self._embed_key = embed_key

    def embed(self, ids):
        vocab = self._embed_file.shape(self._embed_key)[0]
        ids = np.asarray(ids, dtype=np.int64)
        bad = ids[(ids < 0) | (ids >= vocab)]
        if bad.size:
            raise ValueError(f"token id {int(bad[0])} outside the vocabulary [0, {vocab})")
        rows = self._embed_file.raw(self._embed_key)[ids]
        dtype = self._embed_file.dtype(self._embed_key)
        return safetensors_io.bf16_bits_to_f32(rows) if dtype == "BF16" else rows.astype(F32)


def load_checkpoint(path):
    with open(os.path.join(path, "config.json")) as f:
        raw = json.load(f)
    st = safetensors_io.SafetensorsFile(os.path.join(path, "model.safetensors"))
    cfg = parse_config(raw, model_type_from_weights(st.keys()))
    shapes = expected_shapes(cfg)
    embed_key = next((k for k in EMBED_KEYS if k in st), None)
    if embed_key is None:
        raise ConfigError(f"{st.path}: no token embedding table (looked for {' or '.join(EMBED_KEYS)})")
    shapes[embed_key] = (cfg.vlm.vocab_size, cfg.vlm.width)
    missing = [k for k in shapes if k not in st]
    if missing:
        raise ConfigError(f"{st.path}: {len(missing)} tensor(s) missing, first: {missing[0]}")
    for k, shape in shapes.items():
        if st.shape(k) != shape:
            raise ConfigError(f"{st.path}: {k} has shape {list(st.shape(k))}, config says {list(shape)}")
        if st.dtype(k) not in ("F32", "BF16", "F16"):
            raise ConfigError(f"{st.path}: {k} is {st.dtype(k)}; weights must be F32, BF16 or F16")
    del shapes[embed_key]
    # Copy into memory as float32 (aligned, no page faults while timing).
    weights = {k: np.array(st.get(k), dtype=F32) for k in shapes}
    return Model(cfg, weights, st, embed_key)


# ---------------------------------------------------------------------------------------------
# Building blocks (fp32)

def linear(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def layer_norm(x, w, b):
    mean = x.mean(-1, keepdims=True)
    var = np.square(x - mean).mean(-1, keepdims=True)  # biased variance
    return (x - mean) / np.sqrt(var + NORM_EPS) * w + b


def rms_scale(x):
    return x * (F32(1) / np.sqrt(np.mean(x * x, -1, keepdims=True) + NORM_EPS))


def gelu_tanh(x):
    return F32(0.5) * x * (F32(1) + np.tanh(F32(np.sqrt(2 / np.pi)) * (x + F32(0.044715) * x * x * x)))


def silu(x):
    return x / (F32(1) + np.exp(-x))


def softmax(logits):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def rope(x, pos):
    """Rotate-half RoPE on x [n, heads, h] at integer positions pos [n] (model.md §6.3):
    pairs (k, k + h/2), inv_freq and angles in float32."""
    h = x.shape[-1]
    half = h // 2
    inv_freq = F32(1) / (F32(ROPE_BASE) ** (np.arange(0, h, 2, dtype=F32) / F32(h)))
    angle = pos.astype(F32)[:, None] * inv_freq[None, :]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def attention(q, k, v, bias):
    """Grouped-query attention. q [n, N, h]; k, v [m, K, h]; bias [n, m] additive.
    Query head j reads kv head j // (N/K) (with K = 1 all heads share the one kv head)."""
    n, N, h = q.shape
    m, K, _ = k.shape
    q = q.reshape(n, K, N // K, h).transpose(1, 2, 0, 3)           # [K, N/K, n, h]
    logits = (q @ k.transpose(1, 2, 0)[:, None]) * F32(h ** -0.5)  # [K, N/K, n, m]
    p = softmax(logits + bias)
    o = p @ v.transpose(1, 0, 2)[:, None]                          # [K, N/K, n, h]
    return o.transpose(2, 0, 1, 3).reshape(n, N * h)


def mask_bias(pad, ar):
    """openpi's mask rule (model.md §5.3) as an additive bias [n, n]: i may attend j iff
    cumsum(ar)[j] <= cumsum(ar)[i] and both tokens are valid."""
    cs = np.cumsum(ar)
    allowed = (cs[None, :] <= cs[:, None]) & pad[:, None] & pad[None, :]
    return np.where(allowed, F32(0), MASK_VALUE).astype(F32)


# ---------------------------------------------------------------------------------------------
# SigLIP + projector (model.md §4)

def embed_images(model, images):
    """images [n, 3, S, S] in [-1, 1] -> image tokens [n, tokens, vlm.width]."""
    vd, w = model.cfg.vision, model.w
    n, p, g = images.shape[0], vd.patch_size, vd.grid
    # The stride-p conv as a matmul: flatten each patch in (channel, row, col) order, the order
    # of the conv weight's last three axes; patches in row-major order (token = g·r + c).
    patches = images.reshape(n, 3, g, p, g, p).transpose(0, 2, 4, 1, 3, 5).reshape(n, g * g, 3 * p * p)
    e = linear(patches, w[f"{V}.embeddings.patch_embedding.weight"].reshape(vd.width, -1),
               w[f"{V}.embeddings.patch_embedding.bias"])
    e = e + w[f"{V}.embeddings.position_embedding.weight"]
    heads, hd = vd.num_heads, vd.width // vd.num_heads
    for i in range(vd.depth):
        L = lambda name: w[f"{V}.encoder.layers.{i}.{name}"]  # noqa: E731
        y = layer_norm(e, L("layer_norm1.weight"), L("layer_norm1.bias"))
        q, k, v = (linear(y, L(f"self_attn.{t}_proj.weight"), L(f"self_attn.{t}_proj.bias"))
                   .reshape(n, g * g, heads, hd).transpose(0, 2, 1, 3) for t in "qkv")
        a = softmax((q @ k.transpose(0, 1, 3, 2)) * F32(hd ** -0.5)) @ v  # [n, heads, tokens, hd]
        a = a.transpose(0, 2, 1, 3).reshape(n, g * g, vd.width)
        e = e + linear(a, L("self_attn.out_proj.weight"), L("self_attn.out_proj.bias"))
        y = layer_norm(e, L("layer_norm2.weight"), L("layer_norm2.bias"))
        e = e + linear(gelu_tanh(linear(y, L("mlp.fc1.weight"), L("mlp.fc1.bias"))),
                       L("mlp.fc2.weight"), L("mlp.fc2.bias"))
    z = layer_norm(e, w[f"{V}.post_layernorm.weight"], w[f"{V}.post_layernorm.bias"])
    return linear(z, w[f"{PROJ}.weight"], w[f"{PROJ}.bias"])


# ---------------------------------------------------------------------------------------------
# Prefix and prefix pass (model.md §5, §6.5)

@dataclass
class Prefix:
    emb: np.ndarray   # [n, D] embeddings of the computed rows
    pos: np.ndarray   # [n] position ids of those rows
    rows: np.ndarray  # [n] their indices in the full prefix of length P
    pad: np.ndarray   # [P] bool, the full pad mask (model.md §5.2)


def build_prefix(model, image_tokens, image_mask, tokens, token_mask, skip_masked=False):
    """image_tokens [C, N, D] (rows of masked cameras are not read when skip_masked).
    Literal mode keeps all P rows; skip_masked keeps the valid ones only."""
    C, N, D = image_tokens.shape
    pad = np.concatenate([np.repeat(np.asarray(image_mask, bool), N), np.asarray(token_mask, bool)])
    pos = np.cumsum(pad) - 1  # masked tokens repeat the last valid position (or -1)
    rows = np.flatnonzero(pad) if skip_masked else np.arange(pad.size)
    img_rows, txt_rows = rows[rows < C * N], rows[rows >= C * N] - C * N
    lang = model.embed(np.asarray(tokens)[txt_rows]) * F32(np.sqrt(model.cfg.vlm.width))
    emb = np.concatenate([image_tokens.reshape(C * N, D)[img_rows], lang])
    return Prefix(emb=emb, pos=pos[rows], rows=rows, pad=pad)


@dataclass
class KVCache:
    k: np.ndarray    # [L, n, K, h] post-RoPE keys of the computed prefix rows
    v: np.ndarray    # [L, n, K, h] values
    pad: np.ndarray  # [n] bool, validity of those rows
    n_valid: int     # valid prefix tokens (first suffix position, model.md §7.3)


def prefix_pass(model, prefix):
    g, w = model.cfg.vlm, model.w
    x = prefix.emb
    n = x.shape[0]
    pad = prefix.pad[prefix.rows]
    bias = mask_bias(pad, np.zeros(n, int))  # every prefix token has ar = 0
    ks, vs = [], []
    for i in range(g.depth):
        L = lambda name: w[f"{G}.layers.{i}.{name}"]  # noqa: E731
        y = rms_scale(x) * (F32(1) + L("input_layernorm.weight"))
        q = rope(linear(y, L("self_attn.q_proj.weight")).reshape(n, g.num_heads, g.head_dim), prefix.pos)
        k = rope(linear(y, L("self_attn.k_proj.weight")).reshape(n, g.num_kv_heads, g.head_dim), prefix.pos)
        v = linear(y, L("self_attn.v_proj.weight")).reshape(n, g.num_kv_heads, g.head_dim)
        ks.append(k)
        vs.append(v)
        if i == g.depth - 1:
            break  # the rest of the last layer only feeds the prefix output, which is unused (§6.5)
        x = x + linear(attention(q, k, v, bias), L("self_attn.o_proj.weight"))
        y = rms_scale(x) * (F32(1) + L("post_attention_layernorm.weight"))
        x = x + gemma_mlp(y, L)
    return KVCache(k=np.stack(ks), v=np.stack(vs), pad=pad, n_valid=int(prefix.pad.sum()))


def gemma_mlp(y, L):
    return linear(gelu_tanh(linear(y, L("mlp.gate_proj.weight"))) * linear(y, L("mlp.up_proj.weight")),
                  L("mlp.down_proj.weight"))


# ---------------------------------------------------------------------------------------------
# Suffix and denoising (model.md §6.6, §7, §8)

def time_embedding(t, width):
    """Sin-cos embedding of the scalar time (model.md §7.1), in float64, rounded to float32."""
    fraction = np.linspace(0.0, 1.0, width // 2)
    period = 4e-3 * (4.0 / 4e-3) ** fraction
    omega = (1.0 / period) * (2 * np.pi)
    arg = omega * np.float64(t)
    return np.concatenate([np.sin(arg), np.cos(arg)]).astype(F32)


def expert_norm(model, name, x, cond):
    """Expert RMSNorm (pi0) or adaRMSNorm (pi0.5, model.md §6.2). Returns (y, gate or None)."""
    w = model.w
    if cond is None:
        return rms_scale(x) * (F32(1) + w[f"{name}.weight"]), None
    E = x.shape[-1]
    m = linear(cond, w[f"{name}.dense.weight"], w[f"{name}.dense.bias"])
    scale, shift, gate = m[:E], m[E:2 * E], m[2 * E:]
    return rms_scale(x) * (F32(1) + scale) + shift, gate


def gated(x, y, gate):
    return x + (y if gate is None else y * gate)


def suffix_step(model, cache, x_t, t, state):
    """One velocity evaluation v(x_t, t) -> [H, A] (model.md §6.6, §7)."""
    cfg, w = model.cfg, model.w
    e = cfg.expert
    temb = time_embedding(t, e.width)
    act = linear(x_t, w["action_in_proj.weight"], w["action_in_proj.bias"])
    if cfg.pi05:
        cond = silu(linear(silu(linear(temb, w["time_mlp_in.weight"], w["time_mlp_in.bias"])),
                           w["time_mlp_out.weight"], w["time_mlp_out.bias"]))
        x = act
        ar = np.r_[1, np.zeros(cfg.action_horizon - 1, int)]
    else:
        cond = None
        state_tok = linear(state, w["state_proj.weight"], w["state_proj.bias"])[None]
        at = np.concatenate([act, np.broadcast_to(temb, act.shape)], axis=-1)  # action half first
        h = silu(linear(at, w["action_time_mlp_in.weight"], w["action_time_mlp_in.bias"]))
        x = np.concatenate([state_tok, linear(h, w["action_time_mlp_out.weight"], w["action_time_mlp_out.bias"])])
        ar = np.r_[1, 1, np.zeros(cfg.action_horizon - 1, int)]
    S, n = x.shape[0], cache.pad.size
    # Suffix queries against [prefix ; suffix] keys, openpi's rule on the joined sequence (§7.3).
    bias = mask_bias(np.r_[cache.pad, np.ones(S, bool)], np.r_[np.zeros(n, int), ar])[n:]
    pos = cache.n_valid + np.arange(S)
    for i in range(e.depth):
        p = f"{X}.layers.{i}"
        L = lambda name: w[f"{p}.{name}"]  # noqa: E731
        y, gate = expert_norm(model, f"{p}.input_layernorm", x, cond)
        q = rope(linear(y, L("self_attn.q_proj.weight")).reshape(S, e.num_heads, e.head_dim), pos)
        k = rope(linear(y, L("self_attn.k_proj.weight")).reshape(S, e.num_kv_heads, e.head_dim), pos)
        v = linear(y, L("self_attn.v_proj.weight")).reshape(S, e.num_kv_heads, e.head_dim)
        o = attention(q, np.concatenate([cache.k[i], k]), np.concatenate([cache.v[i], v]), bias)
        x = gated(x, linear(o, L("self_attn.o_proj.weight")), gate)
        y, gate = expert_norm(model, f"{p}.post_attention_layernorm", x, cond)
        x = gated(x, gemma_mlp(y, L), gate)
    y, _ = expert_norm(model, f"{X}.norm", x, cond)  # the final norm's gate is discarded
    return linear(y[S - cfg.action_horizon:], w["action_out_proj.weight"], w["action_out_proj.bias"])


def euler_times(num_steps):
    """The float32 times of the Euler loop (model.md §8), accumulated exactly as openpi does."""
    dt = F32(-1.0 / num_steps)
    t = F32(1.0)
    times = []
    while t >= -dt / F32(2):
        times.append(t)
        t = F32(t + dt)
    return dt, times


def sample_actions(model, cache, noise, state, num_steps):
    """Euler integration from noise at t = 1 to t = 0. Returns (actions, velocities, times)."""
    dt, times = euler_times(num_steps)
    x = np.asarray(noise, F32)
    velocities = []
    for t in times:
        v = suffix_step(model, cache, x, t, state)
        velocities.append(v)
        x = x + dt * v
    return x, np.stack(velocities), times


# ---------------------------------------------------------------------------------------------
# One inference call on the I/O file's inputs (checkpoint.md §5)

INPUT_SPEC = {  # name -> (allowed dtypes, the first one the documented; shape from cfg)
    "images": (("float32",), lambda c: (len(c.cameras), 3, c.vision.image_size, c.vision.image_size)),
    "image_mask": (("uint8", "bool"), lambda c: (len(c.cameras),)),
    "tokens": (("int32", "int64"), lambda c: (c.max_token_len,)),
    "token_mask": (("uint8", "bool"), lambda c: (c.max_token_len,)),
    "state": (("float32",), lambda c: (c.action_dim,)),
    "noise": (("float32",), lambda c: (c.action_horizon, c.action_dim)),
    "num_steps": (("int32", "int64"), lambda c: (1,)),
}


def check_inputs(cfg, inputs):
    for name, (dtypes, shape) in INPUT_SPEC.items():
        if name not in inputs:
            raise ValueError(f"inputs: missing {name!r}")
        a = inputs[name]
        if a.dtype.name not in dtypes or a.shape != shape(cfg):
            raise ValueError(f"inputs: {name!r} is {a.dtype} {list(a.shape)}, expected {dtypes[0]} {list(shape(cfg))}")
    if int(inputs["num_steps"][0]) < 1:
        raise ValueError("inputs: num_steps must be >= 1")


def infer(model, inputs, skip_masked=False):
    """Run the model on an inputs dict. Returns (outputs dict of checkpoint.md §5, stage seconds)."""
    cfg = model.cfg
    check_inputs(cfg, inputs)
    image_mask = inputs["image_mask"].astype(bool)
    C, N, D = len(cfg.cameras), cfg.vision.tokens, cfg.vlm.width
    t0 = time.perf_counter()
    cams = np.flatnonzero(image_mask) if skip_masked else np.arange(C)
    vision = np.zeros((C, N, D), F32)
    vision[cams] = embed_images(model, inputs["images"][cams])
    t1 = time.perf_counter()
    prefix = build_prefix(model, vision, image_mask, inputs["tokens"], inputs["token_mask"], skip_masked)
    cache = prefix_pass(model, prefix)
    t2 = time.perf_counter()
    actions, velocities, _ = sample_actions(model, cache, inputs["noise"], inputs["state"],
                                            int(inputs["num_steps"][0]))
    t3 = time.perf_counter()
    vision[~image_mask] = 0  # masked cameras are written as zeros
    outputs = dict(vision_embeddings=vision, prefix_mask=prefix.pad.astype(np.uint8),
                   velocities=velocities, actions=actions)
    for name, kv in (("prefix_k", cache.k), ("prefix_v", cache.v)):
        full = np.zeros((cfg.vlm.depth, cfg.prefix_len) + kv.shape[2:], F32)
        full[:, prefix.rows[cache.pad]] = kv[:, cache.pad]  # invalid rows are written as zeros
        outputs[name] = full
    return outputs, dict(vision=t1 - t0, prefix=t2 - t1, action_head=t3 - t2, total=t3 - t0)


def main(args):
    model = load_checkpoint(args.checkpoint)
    inputs = safetensors_io.load(args.inputs)
    inputs = {k: np.array(inputs[k]) for k in INPUT_SPEC if k in inputs}
    for _ in range(args.warmup):
        infer(model, inputs, args.skip_masked)
    runs = [infer(model, inputs, args.skip_masked) for _ in range(args.repeat)]
    outputs = runs[-1][0]
    if args.out:
        safetensors_io.save(args.out, {**inputs, **outputs}, metadata={
            "producer": "tests/reference/pi0_numpy.py", "model_type": model.cfg.model_type,
            "skip_masked": str(args.skip_masked)})
    if args.time:
        ms = {f"{k}_ms": round(1e3 * float(np.median([r[1][k] for r in runs])), 3) for k in runs[0][1]}
        print(json.dumps({"impl": "numpy", "numpy": np.__version__, "threads": args.threads,
                          "model_type": model.cfg.model_type, "skip_masked": args.skip_masked,
                          "repeat": args.repeat, "warmup": args.warmup, **ms}))


if __name__ == "__main__":
    try:
        main(ARGS)
    except (OSError, ValueError) as e:  # missing files, bad config / weights / inputs
        sys.exit(f"pi0_numpy: {e}")
