#!/usr/bin/python3
"""Seeded random pi0 / pi0.5 checkpoints of custom sizes, and random inputs, for the
reference self-test and the torch benchmark (the product's generator is `edgevla model init`).

  make_checkpoint.py --preset tiny|small --model pi0|pi05 --out DIR [--seed N]
                     [--dtype f32|bf16|f16] [--inputs IO.safetensors] [--input-seed N]

Key names and shapes follow docs/model.md §3.2, sized from the preset (checkpoint.md §3).
The key list is written out here independently of pi0_numpy.expected_shapes, so that a
mistake in one shows up as a load error instead of passing silently.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

# checkpoint.md §3. The expert's depth and head sizes equal the VLM's (checkpoint.md §2 rules).
PRESETS = {
    "tiny": dict(vision=dict(image_size=224, patch_size=14, width=32, depth=2, mlp_dim=64, num_heads=2),
                 vlm=dict(width=64, depth=2, mlp_dim=128, num_heads=2, num_kv_heads=1, head_dim=16,
                          vocab_size=1024),
                 expert=dict(width=32, mlp_dim=64), action_horizon=10, max_token_len=48),
    "small": dict(vision=dict(image_size=224, patch_size=14, width=256, depth=4, mlp_dim=1024, num_heads=4),
                  vlm=dict(width=512, depth=6, mlp_dim=2048, num_heads=8, num_kv_heads=1, head_dim=64,
                           vocab_size=4096),
                  expert=dict(width=256, mlp_dim=1024), action_horizon=50, max_token_len=64),
}
PRECISION = {"f32": ("float32", "F32"), "bf16": ("bfloat16", "BF16"), "f16": ("float16", "F16")}
ACTION_DIM = 32


def make_config(preset, model_type, dtype="f32"):
    p = PRESETS[preset]
    vlm = dict(p["vlm"])
    expert = dict(width=p["expert"]["width"], depth=vlm["depth"], mlp_dim=p["expert"]["mlp_dim"],
                  num_heads=vlm["num_heads"], num_kv_heads=vlm["num_kv_heads"], head_dim=vlm["head_dim"])
    return {
        "action_dim": ACTION_DIM, "action_horizon": p["action_horizon"],
        "paligemma_variant": "custom", "action_expert_variant": "custom",
        "precision": PRECISION[dtype][0], "model_type": model_type,
        "max_token_len": p["max_token_len"], "num_steps": 10,
        "vision": dict(p["vision"]), "vlm": vlm, "expert": expert,
    }


def weight_shapes(cfg):
    """{key: (shape, kind)}; kind picks the init: linear weight, bias, LayerNorm scale, RMSNorm
    offset, position or token embedding."""
    v, g, x, A = cfg["vision"], cfg["vlm"], cfg["expert"], cfg["action_dim"]
    pi05 = cfg["model_type"] == "pi05"
    V = "paligemma_with_expert.paligemma.model.vision_tower.vision_model"
    G = "paligemma_with_expert.paligemma.model.language_model"
    X = "paligemma_with_expert.gemma_expert.model"
    Dv, p, tokens = v["width"], v["patch_size"], (v["image_size"] // v["patch_size"]) ** 2
    s = {}

    def lin(name, out, inp, bias=True):
        s[f"{name}.weight"] = ((out, inp), "linear")
        if bias:
            s[f"{name}.bias"] = ((out,), "bias")

    s[f"{V}.embeddings.patch_embedding.weight"] = ((Dv, 3, p, p), "linear")
    s[f"{V}.embeddings.patch_embedding.bias"] = ((Dv,), "bias")
    s[f"{V}.embeddings.position_embedding.weight"] = ((tokens, Dv), "position")
    for i in range(v["depth"]):
        L = f"{V}.encoder.layers.{i}"
        for ln in ("layer_norm1", "layer_norm2"):
            s[f"{L}.{ln}.weight"], s[f"{L}.{ln}.bias"] = ((Dv,), "layernorm"), ((Dv,), "bias")
        for t in ("q", "k", "v"):
            lin(f"{L}.self_attn.{t}_proj", Dv, Dv)
        lin(f"{L}.self_attn.out_proj", Dv, Dv)
        lin(f"{L}.mlp.fc1", v["mlp_dim"], Dv)
        lin(f"{L}.mlp.fc2", Dv, v["mlp_dim"])
    s[f"{V}.post_layernorm.weight"], s[f"{V}.post_layernorm.bias"] = ((Dv,), "layernorm"), ((Dv,), "bias")
    lin("paligemma_with_expert.paligemma.model.multi_modal_projector.linear", g["width"], Dv)
    s["paligemma_with_expert.paligemma.lm_head.weight"] = ((g["vocab_size"], g["width"]), "embedding")

    for prefix, d, ada in ((G, g, False), (X, x, pi05)):
        W, qh, kvh = d["width"], d["num_heads"] * d["head_dim"], d["num_kv_heads"] * d["head_dim"]

        def norm(name):
            if ada:
                lin(f"{name}.dense", 3 * W, W)
            else:
                s[f"{name}.weight"] = ((W,), "rmsnorm")

        for i in range(d["depth"]):
            L = f"{prefix}.layers.{i}"
            norm(f"{L}.input_layernorm")
            lin(f"{L}.self_attn.q_proj", qh, W, bias=False)
            lin(f"{L}.self_attn.k_proj", kvh, W, bias=False)
            lin(f"{L}.self_attn.v_proj", kvh, W, bias=False)
            lin(f"{L}.self_attn.o_proj", W, qh, bias=False)
            norm(f"{L}.post_attention_layernorm")
            lin(f"{L}.mlp.gate_proj", d["mlp_dim"], W, bias=False)
            lin(f"{L}.mlp.up_proj", d["mlp_dim"], W, bias=False)
            lin(f"{L}.mlp.down_proj", W, d["mlp_dim"], bias=False)
        norm(f"{prefix}.norm")
    # Unused by inference, present in openpi's files (model.md §3.3).
    s["paligemma_with_expert.gemma_expert.lm_head.weight"] = ((g["vocab_size"], x["width"]), "embedding")

    E = x["width"]
    lin("action_in_proj", E, A)
    lin("action_out_proj", A, E)
    if pi05:
        lin("time_mlp_in", E, E)
        lin("time_mlp_out", E, E)
    else:
        lin("state_proj", E, A)
        lin("action_time_mlp_in", E, 2 * E)
        lin("action_time_mlp_out", E, E)
    return s


def random_weights(cfg, seed):
    """Seeded weights: linear layers N(0, 1/fan_in) so activations keep their scale through the
    layers; biases and norm offsets small; token embeddings N(0, 1/width) (they are scaled by
    sqrt(width) in the prefix)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, kind) in weight_shapes(cfg).items():
        r = rng.standard_normal(shape, dtype=np.float32)
        if kind == "linear":
            r /= np.sqrt(np.prod(shape[1:]))
        elif kind == "embedding":
            r /= np.sqrt(shape[1])
        elif kind == "layernorm":
            r = 1 + 0.05 * r
        elif kind == "position":
            r *= 0.2
        else:  # bias, rmsnorm offset
            r *= 0.05
        out[name] = r
    return out


def write_checkpoint(out_dir, cfg, seed, dtype="f32"):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    weights = random_weights(cfg, seed)
    stored = PRECISION[dtype][1]
    safetensors_io.save(os.path.join(out_dir, "model.safetensors"), weights,
                        metadata={"format": "pt", "generator": "tests/reference/make_checkpoint.py"},
                        dtypes={k: stored for k in weights})


def make_inputs(cfg, seed, masked_camera=1, prompt_len=None):
    """Random inputs of checkpoint.md §5: images uniform in [-1, 1] with camera `masked_camera`
    masked (zero pixels), a prompt of `prompt_len` real tokens (default 3/4 of T) then padding,
    seeded state and noise, num_steps from the config."""
    rng = np.random.default_rng(seed)
    v, T = cfg["vision"], cfg["max_token_len"]
    C = len(cfg.get("cameras", ("base_0_rgb", "left_wrist_0_rgb", "right_wrist_0_rgb")))
    S, H, A = v["image_size"], cfg["action_horizon"], cfg["action_dim"]
    n = prompt_len if prompt_len is not None else (3 * T) // 4
    images = rng.uniform(-1, 1, (C, 3, S, S)).astype(np.float32)
    image_mask = np.ones(C, np.uint8)
    if masked_camera is not None:
        images[masked_camera] = 0
        image_mask[masked_camera] = 0
    tokens = np.zeros(T, np.int32)
    tokens[0] = 2  # BOS
    tokens[1:n] = rng.integers(3, cfg["vlm"]["vocab_size"], n - 1)
    token_mask = (np.arange(T) < n).astype(np.uint8)
    return {
        "images": images, "image_mask": image_mask, "tokens": tokens, "token_mask": token_mask,
        "state": (0.5 * rng.standard_normal(A)).astype(np.float32),
        "noise": rng.standard_normal((H, A)).astype(np.float32),
        "num_steps": np.array([cfg.get("num_steps", 10)], np.int32),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--model", choices=("pi0", "pi05"), default="pi05")
    ap.add_argument("--out", required=True, help="checkpoint folder to write")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=sorted(PRECISION), default="f32")
    ap.add_argument("--inputs", help="also write random inputs (checkpoint.md §5) to this file")
    ap.add_argument("--input-seed", type=int, default=1)
    args = ap.parse_args()
    cfg = make_config(args.preset, args.model, args.dtype)
    write_checkpoint(args.out, cfg, args.seed, args.dtype)
    if args.inputs:
        safetensors_io.save(args.inputs, make_inputs(cfg, args.input_seed))


if __name__ == "__main__":
    main()
