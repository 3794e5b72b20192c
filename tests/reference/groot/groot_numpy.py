#!/usr/bin/python3
"""GR00T N1.6 inference in NumPy, written from ../shared/notes/groot-n16.md (§8 wins over §1-7).

The oracle of edgevla's `groot` family: every stage in float64 or float32, reading a checkpoint
in the published layout (make_checkpoint.py writes one; a published one works given its Eagle
folder, see --eagle-dir).

  groot_numpy.py --checkpoint DIR (--images a.png,b.npy | --random-images N [--image-size HxW])
                 [--instruction TEXT] [--embodiment TAG] [--state JSON|FILE] [--seed S]
                 [--dtype f64|f32] [--letterbox auto|on|off] [--pad-to L] [--out OUT.safetensors]

Stages (names of the tensors --out writes, all views concatenated where it says so):
  preprocess   frames -> eval transform, smart_resize, Pillow bicubic -> pixel_values.<k>
               [3, H, W]; the prompt (lower-cased, [^\\w\\s] removed, chat format, one
               `<image k><img>` + n x <IMG_CONTEXT> + `</img>` per view) -> input_ids,
               attention_mask, image_mask [L]; the state normalised per embodiment -> state [128]
  backbone     SigLIP2 per image -> vision_tokens.<k> [h*w, Dv]; pixel unshuffle + mlp1 ->
               image_embeds [n, W]; spliced into the token embeddings; Qwen3 layers
               0..select_layer-1 + final norm -> backbone_features [L, W]
  action_head  vlln -> vl_embeds; state encoder -> state_features [1, E]; 4 Euler steps of the
               alternating DiT -> velocity [steps, 50, 128]; actions_normalized [50, 128]; per
               action group, un-normalised and made absolute -> action.<group> [H_e, D]
The noise is drawn from --seed (float32, standard normal) and written as `noise`; pass it to
the implementation under test to compare stage by stage.
"""

import argparse
import json
import math
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.join(HERE, ".."))
import bpe_reference  # noqa: E402
import image_ref  # noqa: E402
import safetensors_io  # noqa: E402

V = "backbone.model.vision_model.vision_model"
L = "backbone.model.language_model"
M = "backbone.model.mlp1"
H = "action_head"
D = "action_head.model"

# Built-in embodiment ids (spec §1); the checkpoint's embodiment_id.json wins.
BUILTIN_EMBODIMENT_IDS = {"oxe_google": 0, "oxe_widowx": 1, "libero_panda": 2, "unitree_g1": 8,
                          "new_embodiment": 10, "robocasa_panda_omron": 13, "oxe_droid": 16, "gr1": 20,
                          "behavior_r1_pro": 24}
SYSTEM_PREFIX = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
SUFFIX = "<|im_end|>\n"
DTYPES = {"f64": np.float64, "f32": np.float32}


class GrootError(ValueError):
    """Bad input or checkpoint, with what to do about it."""


# --- checkpoint ------------------------------------------------------------------------------------

class Checkpoint:
    """Config, processor files and tensors of a checkpoint folder."""

    def __init__(self, path, eagle_dir=None):
        self.path = path

        def load(name, folder=path):
            p = os.path.join(folder, name)
            if not os.path.isfile(p):
                raise GrootError(f"{path}: no {name}; is this a GR00T N1.6 checkpoint?")
            with open(p, encoding="utf-8") as f:
                return json.load(f)

        self.config = load("config.json")
        if self.config.get("model_type") != "Gr00tN1d6":
            raise GrootError(f"{path}/config.json: model_type {self.config.get('model_type')!r}, "
                             "expected 'Gr00tN1d6' (a GR00T N1.6 checkpoint)")
        self.eagle_dir = eagle_dir or os.path.join(path, os.path.basename(self.config["model_name"]))
        if not os.path.isdir(self.eagle_dir):
            raise GrootError(f"no backbone folder {self.eagle_dir}: copy gr00t/model/modules/nvidia/"
                             "Eagle-Block2A-2B-v2 of the GR00T source there or pass --eagle-dir")
        self.eagle = load("config.json", self.eagle_dir)
        self.processor = load("processor_config.json")["processor_kwargs"]
        self.statistics = load("statistics.json")
        ids_path = os.path.join(path, "embodiment_id.json")
        self.embodiment_ids = dict(BUILTIN_EMBODIMENT_IDS)
        if os.path.isfile(ids_path):
            self.embodiment_ids.update(load("embodiment_id.json"))
        self.tokenizer = bpe_reference.Tokenizer.from_dir(self.eagle_dir)
        index = load("model.safetensors.index.json")
        self._files, self._where = {}, {}
        for key, fname in index["weight_map"].items():
            if fname not in self._files:
                self._files[fname] = safetensors_io.SafetensorsFile(os.path.join(path, fname))
            self._where[key] = self._files[fname]
        self.image_token_id = int(self.eagle["image_token_index"])

    def has(self, key):
        return key in self._where

    def get(self, key, dtype):
        if key not in self._where:
            raise GrootError(f"{self.path}: tensor {key!r} missing from the checkpoint")
        return np.asarray(self._where[key].get(key), dtype=dtype)


# --- numerics ---------------------------------------------------------------------------------------

def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + x.dtype.type(eps))
    if w is not None:
        y = y * w + b
    return y


def rms_norm(x, w, eps):
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + x.dtype.type(eps))
    return y * w


def gelu_tanh(x):
    c = x.dtype.type(math.sqrt(2.0 / math.pi))
    return x.dtype.type(0.5) * x * (1 + np.tanh(c * (x + x.dtype.type(0.044715) * x * x * x)))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu_erf(x):
    return (0.5 * x.astype(np.float64) * (1.0 + _erf(x.astype(np.float64) / math.sqrt(2.0)))).astype(x.dtype)


def silu(x):
    return x / (1 + np.exp(-x))


def softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def attention(q, k, v, mask=None):
    """q [n, h, d], k / v [m, h, d], mask [n, m] bool (True = attend) -> [n, h*d]. Rows whose
    mask is all False give zeros (flash-attention varlen on padding)."""
    scale = q.dtype.type(q.shape[-1] ** -0.5)
    logits = np.einsum("nhd,mhd->hnm", q, k) * scale
    if mask is not None:
        logits = np.where(mask[None], logits, -np.inf)
        empty = ~mask.any(-1)
        logits[:, empty, :] = 0
    p = softmax(logits)
    if mask is not None:
        p[:, ~mask.any(-1), :] = 0
    o = np.einsum("hnm,mhd->nhd", p, v)
    return o.reshape(q.shape[0], -1)


def linear(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


# --- preprocess ---------------------------------------------------------------------------------

def formalize_language(text):
    """Lower-case, then drop everything that is neither \\w nor \\s (Unicode-aware, as Python re)."""
    return re.sub(r"[^\w\s]", "", text.lower())


def prompt_text(instruction, tokens_per_view):
    views = "".join(f"<image {k + 1}><img>" + "<IMG_CONTEXT>" * n + "</img>"
                    for k, n in enumerate(tokens_per_view))
    return SYSTEM_PREFIX + instruction + views + SUFFIX


def letterbox_choice(ckpt, option):
    """on / off, or auto: the processor config's letter_box_transform when present, else off."""
    if option in ("on", "off"):
        return option == "on"
    return bool(ckpt.processor.get("letter_box_transform", False))


def modality(ckpt, tag):
    mc = ckpt.processor["modality_configs"]
    if tag not in mc:
        raise GrootError(f"embodiment {tag!r} is not in the checkpoint's processor_config.json "
                         f"(it has {', '.join(sorted(mc))}); pass one of those with --embodiment")
    if tag not in ckpt.statistics:
        raise GrootError(f"embodiment {tag!r} has no statistics in statistics.json")
    return mc[tag]


def norm_params(ckpt, tag, kind, group):
    """(min, max, mean, std) float64 arrays of a state / action group; percentiles when the
    processor says so; RELATIVE action groups use their per-step relative statistics."""
    p = ckpt.processor
    stats = ckpt.statistics[tag].get(kind, {})
    if group not in stats:
        raise GrootError(f"{tag}: {kind} group {group!r} has no statistics in statistics.json")
    s = stats[group]
    lo_key, hi_key = ("q01", "q99") if p.get("use_percentiles") else ("min", "max")
    params = {k: np.asarray(s[k], np.float64) for k in ("mean", "std")}
    params["min"], params["max"] = np.asarray(s[lo_key], np.float64), np.asarray(s[hi_key], np.float64)
    params["dim"] = len(s["min"])
    if kind == "action" and p.get("use_relative_action"):
        ac = modality(ckpt, tag)["action"]
        for key, conf in zip(ac["modality_keys"], ac.get("action_configs") or []):
            if key == group and conf["rep"] == "RELATIVE":
                rel = ckpt.statistics[tag].get("relative_action", {})
                if group not in rel:
                    raise GrootError(f"{tag}: RELATIVE action group {group!r} has no relative_action statistics")
                params.update({k: np.asarray(rel[group][k], np.float64) for k in ("min", "max", "mean", "std")})
    return params


def normalize_minmax(x, p, clip):
    """2 (x - min) / (max - min) - 1, 0 where max and min are close; float64 arithmetic stored
    in x's dtype, as upstream (its statistics are float64, its state float32)."""
    out = np.zeros_like(x)
    ok = ~np.isclose(p["max"], p["min"])
    t = ((x[..., ok].astype(np.float64) - p["min"][ok]) / (p["max"][ok] - p["min"][ok])).astype(x.dtype)
    out[..., ok] = 2 * t - 1
    return np.clip(out, -1, 1) if clip else out


def normalize_meanstd(x, p):
    out = x.copy()
    ok = p["std"] != 0
    out[..., ok] = ((x[..., ok].astype(np.float64) - p["mean"][ok]) / p["std"][ok]).astype(x.dtype)
    return out


def normalize_state(ckpt, tag, state, width, dtype):
    """Raw state groups {group: [D] or [T, D]} -> the normalised, zero-padded state [width]."""
    p = ckpt.processor
    sc = modality(ckpt, tag)["state"]
    sincos = set(sc.get("sin_cos_embedding_keys") or []) if p.get("apply_sincos_state_encoding") else set()
    meanstd = set(sc.get("mean_std_embedding_keys") or [])
    parts = []
    for group in sc["modality_keys"]:
        if group not in state:
            raise GrootError(f"{tag}: state group {group!r} missing from the input (needs "
                             f"{', '.join(sc['modality_keys'])})")
        x = np.atleast_2d(np.asarray(state[group], np.float32))[-1]
        if group in sincos:
            parts.append(np.concatenate([np.sin(x), np.cos(x)]))
            continue
        prm = norm_params(ckpt, tag, "state", group)
        if x.shape[-1] != prm["dim"]:
            raise GrootError(f"{tag}: state group {group!r} has {x.shape[-1]} values, statistics say {prm['dim']}")
        if group in meanstd:
            parts.append(normalize_meanstd(x, prm))
        else:
            parts.append(normalize_minmax(x, prm, p.get("clip_outliers", True)))
    vec = np.concatenate(parts) if parts else np.zeros(0, np.float32)
    if vec.size > width:
        raise GrootError(f"{tag}: normalised state has {vec.size} values, the model takes {width}")
    out = np.zeros(width, np.float32)
    out[:vec.size] = vec
    return out.astype(dtype)


def unnormalize_minmax(y, p):
    return (np.clip(y, -1.0, 1.0) + 1.0) / 2.0 * (p["max"] - p["min"]) + p["min"]


def unnormalize_meanstd(y, p):
    out = np.array(y, np.float64)
    ok = p["std"] != 0
    out[..., ok] = y[..., ok] * p["std"][ok] + p["mean"][ok]
    return out


# rotations for EEF groups (rows of the rotation matrix, as upstream's rot6d)
def rot6d_to_matrix(r):
    a, b = r[:3] / np.linalg.norm(r[:3]), r[3:6]
    b = b - np.dot(a, b) * a
    b = b / np.linalg.norm(b)
    return np.stack([a, b, np.cross(a, b)])


def rotvec_to_matrix(r):
    theta = np.linalg.norm(r)
    k = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
    if theta < 1e-8:
        return np.eye(3) + k + 0.5 * k @ k
    return np.eye(3) + math.sin(theta) / theta * k + (1 - math.cos(theta)) / theta ** 2 * k @ k


def matrix_to_rotvec(m):
    """Via the unit quaternion with w >= 0 (the rotation vector of angle in [0, pi])."""
    tr = np.trace(m)
    if tr > max(m[0, 0], m[1, 1], m[2, 2]):
        w = math.sqrt(1 + tr) / 2
        x, y, z = (m[2, 1] - m[1, 2]) / (4 * w), (m[0, 2] - m[2, 0]) / (4 * w), (m[1, 0] - m[0, 1]) / (4 * w)
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        q = [0.0, 0.0, 0.0]
        q[i] = math.sqrt(1 + m[i, i] - m[j, j] - m[k, k]) / 2
        q[j] = (m[j, i] + m[i, j]) / (4 * q[i])
        q[k] = (m[k, i] + m[i, k]) / (4 * q[i])
        w = (m[k, j] - m[j, k]) / (4 * q[i])
        x, y, z = q
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    v = np.array([x, y, z])
    s = np.linalg.norm(v)
    if s < 1e-12:
        return 2 * v / max(w, 1e-12)
    return 2 * math.atan2(s, w) * v / s


def eef_to_matrix(row, fmt):
    t = np.eye(4)
    if fmt == "XYZ_ROT6D":
        t[:3, 3], t[:3, :3] = row[:3], rot6d_to_matrix(row[3:9])
    elif fmt == "XYZ_ROTVEC":
        t[:3, 3], t[:3, :3] = row[:3], rotvec_to_matrix(row[3:6])
    elif fmt == "DEFAULT":
        t = np.asarray(row, np.float64).reshape(4, 4)
    else:
        raise GrootError(f"EEF action format {fmt!r} is not supported (XYZ_ROT6D, XYZ_ROTVEC, DEFAULT)")
    return t


def matrix_to_eef(t, fmt):
    if fmt == "XYZ_ROT6D":
        return np.concatenate([t[:3, 3], t[:2, :3].reshape(-1)])
    if fmt == "XYZ_ROTVEC":
        return np.concatenate([t[:3, 3], matrix_to_rotvec(t[:3, :3])])
    return t.reshape(-1)


def decode_actions(ckpt, tag, actions, raw_state):
    """Normalised actions [horizon, width] -> {group: [H_e, D]} un-normalised, RELATIVE groups
    made absolute against the raw last state of their state_key (float64)."""
    ac = modality(ckpt, tag)["action"]
    h_e = len(ac["delta_indices"])
    meanstd = set(ac.get("mean_std_embedding_keys") or [])
    confs = ac.get("action_configs") or [None] * len(ac["modality_keys"])
    out, col = {}, 0
    for group, conf in zip(ac["modality_keys"], confs):
        prm = norm_params(ckpt, tag, "action", group)
        y = np.asarray(actions[:h_e, col:col + prm["dim"]], np.float64)
        col += prm["dim"]
        a = unnormalize_meanstd(y, prm) if group in meanstd else unnormalize_minmax(y, prm)
        if conf is not None and conf["rep"] == "RELATIVE" and ckpt.processor.get("use_relative_action"):
            key = conf.get("state_key") or group
            if key not in raw_state:
                raise GrootError(f"{tag}: relative action group {group!r} needs state group {key!r}")
            ref = np.atleast_2d(np.asarray(raw_state[key], np.float64))[-1]
            if conf["type"] == "EEF":
                t_ref = eef_to_matrix(ref, conf["format"])
                a = np.stack([matrix_to_eef(t_ref @ eef_to_matrix(r, conf["format"]), conf["format"]) for r in a])
            else:
                if ref.shape[-1] != a.shape[-1]:
                    raise GrootError(f"{tag}: state {key!r} has {ref.shape[-1]} values, action {group!r} {a.shape[-1]}")
                a = a + ref
        out[group] = a
    return out


# --- the model --------------------------------------------------------------------------------------

def rope_tables(positions, head_dim, theta):
    """cos, sin [n, head_dim] computed in float32 (as transformers does), rotate-half layout."""
    inv = (np.float32(1.0) / (np.float32(theta) ** (np.arange(0, head_dim, 2, dtype=np.float32)
                                                     / np.float32(head_dim)))).astype(np.float32)
    ang = positions.astype(np.float32)[:, None] * inv[None, :]
    ang = np.concatenate([ang, ang], axis=-1)
    return np.cos(ang), np.sin(ang)


def apply_rope(x, cos, sin):
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos[:, None, :] + rot * sin[:, None, :]


def timestep_sinusoid(t, channels=256, dtype=np.float32):
    """diffusers Timesteps(256, flip_sin_to_cos=True, downscale_freq_shift=1) in float32."""
    half = channels // 2
    exponent = np.float32(-math.log(10000)) * np.arange(half, dtype=np.float32) / np.float32(half - 1)
    emb = np.float32(t) * np.exp(exponent)
    return np.concatenate([np.cos(emb), np.sin(emb)]).astype(dtype)


def action_tau(t, width, dtype=np.float32):
    """The action encoder's sinusoid: f_i = exp(-i ln(1e4) / (width/2)), [sin, cos], float32."""
    half = width // 2
    exponent = -np.arange(half, dtype=np.float32) * (np.float32(math.log(10000.0)) / np.float32(half))
    f = np.float32(t) * np.exp(exponent)
    return np.concatenate([np.sin(f), np.cos(f)]).astype(dtype)


def aa_bilinear_weights(in_size, out_size, dtype):
    """F.interpolate(mode='bilinear', align_corners=False, antialias=True) along one axis as a
    matrix [out, in] (the triangle filter widened by the scale when shrinking)."""
    scale = in_size / out_size
    support = scale if scale >= 1.0 else 1.0
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    w = np.zeros((out_size, in_size), np.float64)
    for i in range(out_size):
        center = scale * (i + 0.5)
        xmin = max(int(center - support + 0.5), 0)
        xsize = min(int(center + support + 0.5), in_size) - xmin
        ws = np.array([max(0.0, 1.0 - abs((j + xmin - center + 0.5) * invscale)) for j in range(xsize)])
        if ws.sum() != 0:
            ws = ws / ws.sum()
        w[i, xmin:xmin + xsize] = ws
    return w.astype(dtype)


class Model:
    def __init__(self, ckpt, dtype=np.float64):
        self.ck, self.dt = ckpt, dtype
        cfg, ev = ckpt.config, ckpt.eagle
        self.vis, self.txt = ev["vision_config"], ev["text_config"]
        self.select_layer = int(cfg["select_layer"])
        self.ratio = int(round(1 / ev.get("downsample_ratio", 0.5)))
        dc = cfg["diffusion_model_cfg"]
        self.dit_layers = int(dc["num_layers"])
        self.dit_heads, self.dit_hd = int(dc["num_attention_heads"]), int(dc["attention_head_dim"])
        self.horizon = int(cfg["action_horizon"])
        self.action_dim, self.state_dim = int(cfg["max_action_dim"]), int(cfg["max_state_dim"])
        self.steps = int(cfg["num_inference_timesteps"])
        self.buckets = int(cfg["num_timestep_buckets"])
        self.text_every = int(cfg.get("attend_text_every_n_blocks", 2))
        self.w = {}
        if ckpt.has(f"{L}.lm_head.weight"):
            a = ckpt.get(f"{L}.lm_head.weight", np.float32)
            b = ckpt.get(f"{L}.model.embed_tokens.weight", np.float32)
            self.lm_head_tied = bool(np.array_equal(a, b))
            if not self.lm_head_tied:
                print(f"warning: {ckpt.path}: lm_head differs from embed_tokens (tied in the text config); "
                      "embedding with embed_tokens", file=sys.stderr)

    def p(self, key):
        if key not in self.w:
            self.w[key] = self.ck.get(key, self.dt)
        return self.w[key]

    def lin(self, x, name, bias=True):
        return linear(x, self.p(f"{name}.weight"), self.p(f"{name}.bias") if bias else None)

    # SigLIP2 over one image (attention inside the image only)
    def vision(self, pixels):
        """pixels [3, Hp, Wp] (already normalised) -> tokens [gh*gw, Dv], (gh, gw)."""
        vc = self.vis
        P, Dv, nh = vc["patch_size"], vc["hidden_size"], vc["num_attention_heads"]
        eps = vc.get("layer_norm_eps", 1e-6)
        c, hp, wp = pixels.shape
        gh, gw = hp // P, wp // P
        patches = pixels.astype(self.dt).reshape(c, gh, P, gw, P).transpose(1, 3, 2, 4, 0).reshape(gh * gw, P * P * c)
        x = self.lin(patches, f"{V}.embeddings.patch_embedding")
        side = int(round(vc["num_patches"] ** 0.5))
        pos = self.p(f"{V}.embeddings.position_embedding.weight").reshape(side, side, Dv)
        wy, wx = aa_bilinear_weights(side, gh, self.dt), aa_bilinear_weights(side, gw, self.dt)
        x = x + np.einsum("ai,ijd,bj->abd", wy, pos, wx).reshape(gh * gw, Dv)
        for i in range(vc["num_hidden_layers"]):
            pre = f"{V}.encoder.layers.{i}"
            y = layer_norm(x, self.p(f"{pre}.layer_norm1.weight"), self.p(f"{pre}.layer_norm1.bias"), eps)
            q, k, v = (self.lin(y, f"{pre}.self_attn.{n}_proj").reshape(gh * gw, nh, -1) for n in "qkv")
            x = x + self.lin(attention(q, k, v), f"{pre}.self_attn.out_proj")
            y = layer_norm(x, self.p(f"{pre}.layer_norm2.weight"), self.p(f"{pre}.layer_norm2.bias"), eps)
            x = x + self.lin(gelu_tanh(self.lin(y, f"{pre}.mlp.fc1")), f"{pre}.mlp.fc2")
        x = layer_norm(x, self.p(f"{V}.post_layernorm.weight"), self.p(f"{V}.post_layernorm.bias"), eps)
        return x, (gh, gw)

    def project(self, tokens, grid):
        """Pixel unshuffle (channel c*r*r + dy*r + dx, tokens row-major) and mlp1."""
        gh, gw = grid
        r, Dv = self.ratio, tokens.shape[-1]
        x = tokens.reshape(gh // r, r, gw // r, r, Dv).transpose(0, 2, 4, 1, 3).reshape((gh // r) * (gw // r), Dv * r * r)
        x = layer_norm(x, self.p(f"{M}.0.weight"), self.p(f"{M}.0.bias"), 1e-5)
        x = gelu_erf(self.lin(x, f"{M}.1"))
        return self.lin(x, f"{M}.3")

    def language(self, embeds, attention_mask):
        """Qwen3 layers 0..select_layer-1 and the final norm. embeds [L, W]; positions 0..L-1
        over the (left-)padded sequence; causal and padding mask."""
        t = self.txt
        n, W = embeds.shape
        nq, nkv, hd = t["num_attention_heads"], t["num_key_value_heads"], t["head_dim"]
        eps = t.get("rms_norm_eps", 1e-6)
        cos, sin = rope_tables(np.arange(n), hd, t.get("rope_theta", 1e6))
        cos, sin = cos.astype(self.dt), sin.astype(self.dt)
        valid = np.asarray(attention_mask, bool)
        mask = np.tril(np.ones((n, n), bool)) & valid[None, :] & valid[:, None]
        x = embeds.astype(self.dt)
        for i in range(self.select_layer):
            pre = f"{L}.model.layers.{i}"
            y = rms_norm(x, self.p(f"{pre}.input_layernorm.weight"), eps)
            q = self.lin(y, f"{pre}.self_attn.q_proj", False).reshape(n, nq, hd)
            k = self.lin(y, f"{pre}.self_attn.k_proj", False).reshape(n, nkv, hd)
            v = self.lin(y, f"{pre}.self_attn.v_proj", False).reshape(n, nkv, hd)
            q = apply_rope(rms_norm(q, self.p(f"{pre}.self_attn.q_norm.weight"), eps), cos, sin)
            k = apply_rope(rms_norm(k, self.p(f"{pre}.self_attn.k_norm.weight"), eps), cos, sin)
            rep = nq // nkv
            o = attention(q, np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1), mask)
            x = x + self.lin(o, f"{pre}.self_attn.o_proj", False)
            y = rms_norm(x, self.p(f"{pre}.post_attention_layernorm.weight"), eps)
            g = self.lin(y, f"{pre}.mlp.gate_proj", False)
            u = self.lin(y, f"{pre}.mlp.up_proj", False)
            x = x + self.lin(silu(g) * u, f"{pre}.mlp.down_proj", False)
        return rms_norm(x, self.p(f"{L}.model.norm.weight"), eps)

    def backbone(self, pixel_values, input_ids, attention_mask):
        """-> dict(vision_tokens [list], image_embeds, backbone_features, image_mask)."""
        ids = np.asarray(input_ids, np.int64)
        image_mask = ids == self.ck.image_token_id
        vis, embeds = [], []
        for px in pixel_values:
            tok, grid = self.vision(px)
            vis.append(tok)
            embeds.append(self.project(tok, grid))
        img = np.concatenate(embeds) if embeds else np.zeros((0, self.txt["hidden_size"]), self.dt)
        if img.shape[0] != int(image_mask.sum()):
            raise GrootError(f"the prompt holds {int(image_mask.sum())} <IMG_CONTEXT> tokens, the images give "
                             f"{img.shape[0]}; the prompt and the images disagree")
        table = self.p(f"{L}.model.embed_tokens.weight")
        if ids.max(initial=0) >= table.shape[0]:
            raise GrootError(f"token id {int(ids.max())} beyond the embedding table ({table.shape[0]})")
        x = table[ids].copy()
        x[image_mask] = img
        feats = self.language(x, attention_mask)
        return dict(vision_tokens=vis, image_embeds=img, backbone_features=feats, image_mask=image_mask)

    # the action head
    def cat_linear(self, x, name, e):
        return x @ self.p(f"{name}.W")[e] + self.p(f"{name}.b")[e]

    def timestep_bucket(self, k):
        return int((k / float(self.steps)) * self.buckets)

    def temb(self, t):
        s = timestep_sinusoid(t).astype(self.dt)
        h = silu(self.lin(s, f"{D}.timestep_encoder.timestep_embedder.linear_1"))
        return self.lin(h, f"{D}.timestep_encoder.timestep_embedder.linear_2")

    def dit(self, sa, vl, kv_cache, text_mask, image_mask, t):
        """The alternating DiT over sa [S, E] -> [S, output_dim]."""
        nh, hd = self.dit_heads, self.dit_hd
        temb = silu(self.temb(t))
        x = sa
        S = x.shape[0]
        for i in range(self.dit_layers):
            pre = f"{D}.transformer_blocks.{i}"
            scale, shift = np.split(self.lin(temb, f"{pre}.norm1.linear"), 2)
            h = layer_norm(x, None, None, 1e-5) * (1 + scale) + shift
            q = self.lin(h, f"{pre}.attn1.to_q").reshape(S, nh, hd)
            if i % 2 == 1:
                k = self.lin(h, f"{pre}.attn1.to_k").reshape(S, nh, hd)
                v = self.lin(h, f"{pre}.attn1.to_v").reshape(S, nh, hd)
                o = attention(q, k, v)
            else:
                k, v = kv_cache[i]
                m = text_mask if i % (2 * self.text_every) == 0 else image_mask
                o = attention(q, k, v, np.broadcast_to(m[None, :], (S, m.size)))
            x = x + self.lin(o, f"{pre}.attn1.to_out.0")
            y = layer_norm(x, None, None, 1e-5)
            x = x + self.lin(gelu_tanh(self.lin(y, f"{pre}.ff.net.0.proj")), f"{pre}.ff.net.2")
        shift, scale = np.split(self.lin(temb, f"{D}.proj_out_1"), 2)
        x = layer_norm(x, None, None, 1e-6) * (1 + scale) + shift
        return self.lin(x, f"{D}.proj_out_2")

    def action_head(self, backbone_features, attention_mask, image_mask, state, embodiment_id, noise):
        """-> dict(vl_embeds, state_features, velocity [steps, H, A], actions_normalized [H, A])."""
        am = np.asarray(attention_mask, bool)
        im = np.asarray(image_mask, bool)
        if not (im & am).any():
            raise GrootError("no image token in the prompt: the DiT's image blocks would attend to nothing "
                             "(upstream gives NaN); give at least one view")
        e = int(embodiment_id)
        n_cat = self.p(f"{H}.state_encoder.layer1.W").shape[0]
        if not 0 <= e < n_cat:
            raise GrootError(f"embodiment id {e} outside the checkpoint's {n_cat} embodiment slots")
        vl = layer_norm(backbone_features.astype(self.dt), self.p(f"{H}.vlln.weight"), self.p(f"{H}.vlln.bias"), 1e-5)
        st = np.asarray(state, self.dt)[None, :]
        st = np.maximum(self.cat_linear(st, f"{H}.state_encoder.layer1", e), 0)
        state_features = self.cat_linear(st, f"{H}.state_encoder.layer2", e)
        nh, hd = self.dit_heads, self.dit_hd
        kv_cache = {}
        for i in range(0, self.dit_layers, 2):
            pre = f"{D}.transformer_blocks.{i}"
            kv_cache[i] = (self.lin(vl, f"{pre}.attn1.to_k").reshape(-1, nh, hd),
                           self.lin(vl, f"{pre}.attn1.to_v").reshape(-1, nh, hd))
        text_mask, img_mask = (~im) & am, im & am
        pos = self.p(f"{H}.position_embedding.weight")
        a = np.asarray(noise, self.dt)
        dt_step = 1.0 / self.steps
        vels = []
        for k in range(self.steps):
            t = self.timestep_bucket(k)
            a_emb = self.cat_linear(a, f"{H}.action_encoder.W1", e)
            tau = np.broadcast_to(action_tau(t, a_emb.shape[-1]).astype(self.dt), a_emb.shape)
            xx = self.cat_linear(np.concatenate([a_emb, tau], -1), f"{H}.action_encoder.W2", e)
            xx = self.cat_linear(silu(xx), f"{H}.action_encoder.W3", e)
            xx = xx + pos[:a.shape[0]]
            sa = np.concatenate([state_features, xx])
            out = self.dit(sa, vl, kv_cache, text_mask, img_mask, t)
            hdn = np.maximum(self.cat_linear(out, f"{H}.action_decoder.layer1", e), 0)
            pred = self.cat_linear(hdn, f"{H}.action_decoder.layer2", e)
            v = pred[-a.shape[0]:]
            vels.append(v)
            a = a + self.dt(dt_step) * v
        return dict(vl_embeds=vl, state_features=state_features, velocity=np.stack(vels), actions_normalized=a)


# --- one whole inference ----------------------------------------------------------------------------

def preprocess(ckpt, frames, instruction, embodiment, state, letterbox="auto", pad_to=None, dtype=np.float64):
    """-> dict of the model's inputs (pixel values per view, ids, masks, normalised state, id)."""
    mc = modality(ckpt, embodiment)
    views = mc["video"]["modality_keys"]
    if len(frames) != len(views):
        raise GrootError(f"{embodiment} takes {len(views)} view(s) ({', '.join(views)}), got {len(frames)} image(s)")
    if embodiment not in ckpt.embodiment_ids:
        raise GrootError(f"embodiment {embodiment!r} has no id in embodiment_id.json")
    p = ckpt.processor
    if not p.get("use_albumentations", False):
        raise GrootError("processor_config.json lacks use_albumentations=true: the torchvision image path "
                         "is not implemented")
    lb = letterbox_choice(ckpt, letterbox)
    pixels, counts, sizes = [], [], []
    for f in frames:
        img, n = image_ref.preprocess_frame(f, p.get("shortest_image_edge", 256), p.get("crop_fraction", 0.95), lb)
        pixels.append(image_ref.normalize_pixels(img))
        counts.append(n)
        sizes.append(img.shape[:2])
    instr = formalize_language(instruction) if p.get("formalize_language", True) else instruction
    text = prompt_text(instr, counts)
    ids = ckpt.tokenizer.encode(text)
    mask = [1] * len(ids)
    if pad_to is not None:
        if pad_to < len(ids):
            raise GrootError(f"--pad-to {pad_to} is shorter than the prompt ({len(ids)} tokens)")
        pad = ckpt.tokenizer.token_id("<|endoftext|>")
        ids = [pad] * (pad_to - len(ids)) + ids  # left padding
        mask = [0] * (pad_to - len(mask)) + mask
    return dict(pixel_values=pixels, image_sizes=np.array(sizes, np.int64), tokens_per_view=counts,
                prompt=text, instruction=instr, letterbox=lb,
                input_ids=np.array(ids, np.int64), attention_mask=np.array(mask, np.uint8),
                state=normalize_state(ckpt, embodiment, state, int(ckpt.config["max_state_dim"]), dtype),
                embodiment_id=int(ckpt.embodiment_ids[embodiment]))


def infer(ckpt, frames, instruction, embodiment, state, noise, dtype=np.float64, letterbox="auto", pad_to=None,
          model=None):
    """The whole pipeline. -> dict of every stage's outputs (see the module docstring)."""
    model = model or Model(ckpt, dtype)
    pre = preprocess(ckpt, frames, instruction, embodiment, state, letterbox, pad_to, dtype)
    bb = model.backbone(pre["pixel_values"], pre["input_ids"], pre["attention_mask"])
    ah = model.action_head(bb["backbone_features"], pre["attention_mask"], bb["image_mask"], pre["state"],
                           pre["embodiment_id"], noise)
    actions = decode_actions(ckpt, embodiment, ah["actions_normalized"], state)
    return dict(**pre, **bb, **ah, actions=actions)


def random_state(ckpt, embodiment, seed):
    """Raw state groups drawn around the statistics' means (seeded)."""
    rng = np.random.default_rng([seed, 7])
    out = {}
    for group in modality(ckpt, embodiment)["state"]["modality_keys"]:
        s = ckpt.statistics[embodiment]["state"][group]
        mean, std = np.asarray(s["mean"]), np.asarray(s["std"])
        out[group] = (mean + rng.standard_normal(mean.shape) * np.maximum(std, 0.1)).astype(np.float32)
    return out


def random_frames(n, size, seed):
    """n smooth-ish random uint8 frames [H, W, 3] (low-frequency colour plus noise)."""
    rng = np.random.default_rng([seed, 11])
    h, w = size
    frames = []
    for _ in range(n):
        coarse = rng.integers(0, 256, (h // 16 + 2, w // 16 + 2, 3)).astype(np.float64)
        yy = np.linspace(0, coarse.shape[0] - 1.001, h)
        xx = np.linspace(0, coarse.shape[1] - 1.001, w)
        y0, x0 = yy.astype(int), xx.astype(int)
        fy, fx = (yy - y0)[:, None, None], (xx - x0)[None, :, None]
        img = (coarse[y0][:, x0] * (1 - fy) * (1 - fx) + coarse[y0 + 1][:, x0] * fy * (1 - fx)
               + coarse[y0][:, x0 + 1] * (1 - fy) * fx + coarse[y0 + 1][:, x0 + 1] * fy * fx)
        img += rng.normal(0, 12, img.shape)
        frames.append(np.clip(np.rint(img), 0, 255).astype(np.uint8))
    return frames


def make_noise(ckpt, seed):
    rng = np.random.default_rng([seed, 13])
    return rng.standard_normal((int(ckpt.config["action_horizon"]), int(ckpt.config["max_action_dim"])),
                               dtype=np.float32)


def output_tensors(res, noise, dtype):
    """The stage outputs as a flat {name: array} for safetensors."""
    out = {f"pixel_values.{k}": np.asarray(p, np.float32) for k, p in enumerate(res["pixel_values"])}
    out.update({f"vision_tokens.{k}": np.asarray(t, dtype) for k, t in enumerate(res["vision_tokens"])})
    out.update(image_sizes=res["image_sizes"], input_ids=res["input_ids"],
               attention_mask=res["attention_mask"], image_mask=res["image_mask"].astype(np.uint8),
               state=np.asarray(res["state"], dtype), embodiment_id=np.array([res["embodiment_id"]], np.int32),
               noise=np.asarray(noise, np.float32), image_embeds=np.asarray(res["image_embeds"], dtype),
               backbone_features=np.asarray(res["backbone_features"], dtype),
               vl_embeds=np.asarray(res["vl_embeds"], dtype),
               state_features=np.asarray(res["state_features"], dtype),
               velocity=np.asarray(res["velocity"], dtype),
               actions_normalized=np.asarray(res["actions_normalized"], dtype))
    out.update({f"action.{g}": np.asarray(a, dtype) for g, a in res["actions"].items()})
    return out


def parse_state(text):
    if text is None:
        return None
    if os.path.isfile(text):
        with open(text, encoding="utf-8") as f:
            text = f.read()
    return {k: np.asarray(v, np.float32) for k, v in json.loads(text).items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--eagle-dir", help="backbone folder (default: <checkpoint>/<basename of model_name>)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--images", help="comma-separated .png / .npy frames, one per view in modality order")
    src.add_argument("--random-images", type=int, metavar="N", help="N seeded random frames")
    ap.add_argument("--image-size", default="480x640", help="HxW of --random-images (default 480x640)")
    ap.add_argument("--instruction", default="Pick the pear from the counter and place it in the plate.")
    ap.add_argument("--embodiment", default="gr1")
    ap.add_argument("--state", help="JSON {group: [values]} or a file holding it (default: seeded random)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the noise, random frames and random state")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="f64")
    ap.add_argument("--letterbox", choices=("auto", "on", "off"), default="auto")
    ap.add_argument("--pad-to", type=int, help="left-pad the prompt to this many tokens")
    ap.add_argument("--out", help="write the inputs and every stage's outputs here (safetensors)")
    args = ap.parse_args(argv)
    dtype = DTYPES[args.dtype]
    try:
        ckpt = Checkpoint(args.checkpoint, args.eagle_dir)
        if args.images:
            frames = [image_ref.load_frame(p) for p in args.images.split(",") if p]
        else:
            h, w = (int(v) for v in args.image_size.lower().split("x"))
            frames = random_frames(args.random_images, (h, w), args.seed)
        state = parse_state(args.state) or random_state(ckpt, args.embodiment, args.seed)
        noise = make_noise(ckpt, args.seed)
        res = infer(ckpt, frames, args.instruction, args.embodiment, state, noise, dtype, args.letterbox, args.pad_to)
    except GrootError as e:
        print(f"groot_numpy: {e}", file=sys.stderr)
        return 2
    if args.out:
        tensors = output_tensors(res, noise, dtype)
        tensors.update({f"raw_state.{g}": np.asarray(v, np.float32) for g, v in state.items()})
        safetensors_io.save(args.out, tensors, metadata={
            "producer": "tests/reference/groot/groot_numpy.py", "dtype": args.dtype, "embodiment": args.embodiment,
            "instruction": args.instruction, "prompt": res["prompt"], "letterbox": str(res["letterbox"]),
            "checkpoint": os.path.abspath(args.checkpoint)})
    summary = dict(embodiment=args.embodiment, embodiment_id=res["embodiment_id"], views=len(frames),
                   image_sizes=res["image_sizes"].tolist(), tokens=int(res["input_ids"].size),
                   image_tokens=int(res["image_mask"].sum()),
                   actions={g: list(a.shape) for g, a in res["actions"].items()},
                   velocity_rms=[float(np.sqrt(np.mean(v ** 2))) for v in res["velocity"]])
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
