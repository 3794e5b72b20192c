#!/usr/bin/python3
"""Seeded random GR00T N1.6 checkpoints in the published layout (../shared/notes/groot-n16.md §5, §8).

  make_checkpoint.py --config tiny|small|full --out DIR [--seed N] [--dtype f32|bf16|f16]
                     [--max-shard-bytes N] [--letterbox on|off] [--dry-run]

Writes, like huggingface.co/nvidia/GR00T-N1.6-3B:
  model-0000k-of-0000n.safetensors   sharded in state-dict order (HF's rule: a new shard when
                                     the next tensor would pass --max-shard-bytes; full: 5 GB)
  model.safetensors.index.json       {"metadata": {"total_size"}, "weight_map": {key: file}}
  config.json                        the Gr00tN1d6 config (select_layer, action head sizes, ...)
  processor_config.json              Gr00tN1d6Processor kwargs: modality configs per embodiment
  statistics.json                    per-embodiment state / action / relative_action statistics
  embodiment_id.json                 {tag: projector index}
and, because the published checkpoint takes the backbone's architecture and tokenizer from
the Eagle folder vendored in the GR00T source tree (spec §2), a copy of that folder's role:
  Eagle-Block2A-2B-v2/               (named after config.json's model_name) config.json with
                                     vision_config / text_config, the tokenizer files
                                     (tokenizer.json, vocab.json, merges.txt, added_tokens.json,
                                     tokenizer_config.json, special_tokens_map.json,
                                     chat_template.json), processor_config.json,
                                     preprocessor_config.json.
Key names and shapes are those of §5 plus the patch-embedding bias of §8; the tokenizer is the
synthetic one of tokenizer_files.py. --dry-run writes nothing and prints the tensor count, the
byte count in the chosen dtype and the shard sizes (for `full` in bf16 it must be the
published 1106 tensors and 6,573,217,664 bytes; the exit status says whether it is).

Weights: every tensor from its own generator (seed, crc32 of its key), so a key's values do not
depend on the config's other keys; scaled so activations stay O(1) through the deep stacks:
linear weights N(0, 1/fan_in), biases N(0, 0.02²), norm scales 1 + N(0, 0.05²).
lm_head equals embed_tokens (the text config ties them).
"""

import argparse
import json
import math
import os
import struct
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import groot_configs  # noqa: E402
import safetensors_io  # noqa: E402
import tokenizer_files  # noqa: E402

DTYPES = {"f32": ("F32", 4, "float32"), "bf16": ("BF16", 2, "bfloat16"), "f16": ("F16", 2, "float16")}
V = "backbone.model.vision_model.vision_model"
L = "backbone.model.language_model"
M = "backbone.model.mlp1"
H = "action_head"
D = "action_head.model"


def weight_specs(cfg):
    """[(key, shape, init kind)] in state-dict order (module registration order upstream)."""
    v, t, d = cfg["vision"], cfg["text"], cfg["dit"]
    s = []

    def lin(name, out, inp, bias=True, kind="linear"):
        s.append((f"{name}.weight", (out, inp), kind))
        if bias:
            s.append((f"{name}.bias", (out,), "bias"))

    def ln(name, width):
        s.append((f"{name}.weight", (width,), "norm"))
        s.append((f"{name}.bias", (width,), "bias"))

    Dv, P = v["hidden_size"], v["patch_size"]
    lin(f"{V}.embeddings.patch_embedding", Dv, v["num_channels"] * P * P)
    s.append((f"{V}.embeddings.position_embedding.weight", (v["num_patches"], Dv), "position"))
    for i in range(v["num_hidden_layers"]):
        p = f"{V}.encoder.layers.{i}"
        for n in ("k_proj", "v_proj", "q_proj", "out_proj"):
            lin(f"{p}.self_attn.{n}", Dv, Dv)
        ln(f"{p}.layer_norm1", Dv)
        lin(f"{p}.mlp.fc1", v["intermediate_size"], Dv)
        lin(f"{p}.mlp.fc2", Dv, v["intermediate_size"])
        ln(f"{p}.layer_norm2", Dv)
    ln(f"{V}.post_layernorm", Dv)
    # the pooling head: present in the checkpoint, unused by GR00T
    s.append((f"{V}.head.probe", (1, 1, Dv), "embed"))
    s.append((f"{V}.head.attention.in_proj_weight", (3 * Dv, Dv), "linear"))
    s.append((f"{V}.head.attention.in_proj_bias", (3 * Dv,), "bias"))
    lin(f"{V}.head.attention.out_proj", Dv, Dv)
    ln(f"{V}.head.layernorm", Dv)
    lin(f"{V}.head.mlp.fc1", v["intermediate_size"], Dv)
    lin(f"{V}.head.mlp.fc2", Dv, v["intermediate_size"])

    W, hd = t["hidden_size"], t["head_dim"]
    nq, nkv = t["num_attention_heads"], t["num_key_value_heads"]
    s.append((f"{L}.model.embed_tokens.weight", (t["vocab_size"], W), "embed"))
    for i in range(cfg["select_layer"]):
        p = f"{L}.model.layers.{i}"
        lin(f"{p}.self_attn.q_proj", nq * hd, W, bias=False)
        lin(f"{p}.self_attn.k_proj", nkv * hd, W, bias=False)
        lin(f"{p}.self_attn.v_proj", nkv * hd, W, bias=False)
        lin(f"{p}.self_attn.o_proj", W, nq * hd, bias=False)
        s.append((f"{p}.self_attn.q_norm.weight", (hd,), "norm"))
        s.append((f"{p}.self_attn.k_norm.weight", (hd,), "norm"))
        lin(f"{p}.mlp.gate_proj", t["intermediate_size"], W, bias=False)
        lin(f"{p}.mlp.up_proj", t["intermediate_size"], W, bias=False)
        lin(f"{p}.mlp.down_proj", W, t["intermediate_size"], bias=False)
        s.append((f"{p}.input_layernorm.weight", (W,), "norm"))
        s.append((f"{p}.post_attention_layernorm.weight", (W,), "norm"))
    s.append((f"{L}.model.norm.weight", (W,), "norm"))
    s.append((f"{L}.lm_head.weight", (t["vocab_size"], W), "embed"))

    unshuffled = Dv * round(1 / cfg["downsample_ratio"]) ** 2
    ln(f"{M}.0", unshuffled)
    lin(f"{M}.1", W, unshuffled)
    lin(f"{M}.3", W, W)

    E = d["num_attention_heads"] * d["attention_head_dim"]
    lin(f"{D}.timestep_encoder.timestep_embedder.linear_1", E, 256)
    lin(f"{D}.timestep_encoder.timestep_embedder.linear_2", E, E)
    for i in range(d["num_layers"]):
        p = f"{D}.transformer_blocks.{i}"
        kv_in = E if i % 2 == 1 else cfg["backbone_embedding_dim"]  # odd blocks: self-attention
        lin(f"{p}.norm1.linear", 2 * E, E)
        lin(f"{p}.attn1.to_q", E, E)
        lin(f"{p}.attn1.to_k", E, kv_in)
        lin(f"{p}.attn1.to_v", E, kv_in)
        lin(f"{p}.attn1.to_out.0", E, E)
        lin(f"{p}.ff.net.0.proj", 4 * E, E)
        lin(f"{p}.ff.net.2", E, 4 * E)
    lin(f"{D}.proj_out_1", 2 * E, E)
    lin(f"{D}.proj_out_2", d["output_dim"], E)

    n_emb, S, A = cfg["max_num_embodiments"], cfg["max_state_dim"], cfg["max_action_dim"]
    Hs, Ei = cfg["hidden_size"], cfg["input_embedding_dim"]

    def cat(name, inp, out):
        s.append((f"{name}.W", (n_emb, inp, out), "category"))
        s.append((f"{name}.b", (n_emb, out), "bias"))

    cat(f"{H}.state_encoder.layer1", S, Hs)
    cat(f"{H}.state_encoder.layer2", Hs, Ei)
    cat(f"{H}.action_encoder.W1", A, Ei)
    cat(f"{H}.action_encoder.W2", 2 * Ei, Ei)
    cat(f"{H}.action_encoder.W3", Ei, Ei)
    cat(f"{H}.action_decoder.layer1", Hs, Hs)
    cat(f"{H}.action_decoder.layer2", Hs, A)
    ln(f"{H}.vlln", cfg["backbone_embedding_dim"])
    s.append((f"{H}.position_embedding.weight", (cfg["max_seq_len"], Ei), "action_position"))
    return s


def key_part(key):
    if key.startswith(V):
        return "vision"
    if key.startswith(L):
        return "language"
    if key.startswith(M):
        return "mlp1"
    if key.startswith(D):
        return "dit"
    return "action_head_other"


def plan_shards(specs, itemsize, max_shard_bytes):
    """HF's split: tensors in order; a new shard starts when the next tensor would pass the limit."""
    shards, cur, cur_bytes = [], [], 0
    for key, shape, _ in specs:
        nbytes = math.prod(shape) * itemsize
        if cur and cur_bytes + nbytes > max_shard_bytes:
            shards.append((cur, cur_bytes))
            cur, cur_bytes = [], 0
        cur.append(key)
        cur_bytes += nbytes
    if cur:
        shards.append((cur, cur_bytes))
    n = len(shards)
    return [(f"model-{k + 1:05d}-of-{n:05d}.safetensors", keys, b) for k, (keys, b) in enumerate(shards)]


def count(cfg, dtype="bf16", max_shard_bytes=None):
    """What a checkpoint of `cfg` holds: tensors, parameters, bytes, keys per part, shard sizes."""
    specs = weight_specs(cfg)
    itemsize = DTYPES[dtype][1]
    params = sum(math.prod(shape) for _, shape, _ in specs)
    parts = {}
    for key, _, _ in specs:
        parts[key_part(key)] = parts.get(key_part(key), 0) + 1
    shards = plan_shards(specs, itemsize, max_shard_bytes or cfg["max_shard_bytes"])
    return dict(config=cfg["name"], dtype=dtype, tensors=len(specs), params=params,
                total_size=params * itemsize, keys=parts,
                shards=[dict(file=f, tensors=len(k), bytes=b) for f, k, b in shards])


# --- weight values --------------------------------------------------------------------------------

def _rng(seed, key):
    return np.random.default_rng([seed, zlib.crc32(key.encode())])


def tensor_chunks(key, shape, kind, seed, chunk_elems=1 << 24):
    """The values of one tensor as float32 chunks (row-major), generated in pieces so that the
    full config's 310M-element embedding table never needs a float64 copy."""
    # lm_head is tied to embed_tokens: same generator, same values.
    gen_key = key.replace(f"{L}.lm_head.weight", f"{L}.model.embed_tokens.weight")
    rng = _rng(seed, gen_key)
    total = math.prod(shape)
    fan_in = shape[-1] if kind == "linear" else (shape[1] if kind == "category" else 1)
    for start in range(0, total, chunk_elems):
        n = min(chunk_elems, total - start)
        x = rng.standard_normal(n, dtype=np.float32)
        if kind in ("linear", "category"):
            x *= np.float32(1.0 / math.sqrt(fan_in))
        elif kind == "bias":
            x *= np.float32(0.02)
        elif kind == "norm":
            x = np.float32(1.0) + np.float32(0.05) * x
        elif kind == "position":
            x *= np.float32(0.5)
        elif kind == "action_position":
            x *= np.float32(0.2)
        elif kind == "embed":
            pass
        else:
            raise ValueError(f"{key}: unknown init kind {kind!r}")
        yield x


def tensor_value(key, shape, kind, seed):
    return np.concatenate(list(tensor_chunks(key, shape, kind, seed))).reshape(shape)


def _encode(x, dtype):
    if dtype == "f32":
        return x.astype("<f4").tobytes()
    if dtype == "bf16":
        return safetensors_io.f32_to_bf16_bits(x).astype("<u2").tobytes()
    return x.astype("<f2").tobytes()


def write_shard(path, specs, seed, dtype):
    """One safetensors file written tensor by tensor (header first, from the shapes)."""
    st_dtype, itemsize, _ = DTYPES[dtype]
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for key, shape, _ in specs:
        nbytes = math.prod(shape) * itemsize
        header[key] = {"dtype": st_dtype, "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for key, shape, kind in specs:
            for x in tensor_chunks(key, shape, kind, seed):
                f.write(_encode(x, dtype))


# --- json files -----------------------------------------------------------------------------------

def model_config(cfg, dtype, seed, ids):
    d = cfg["dit"]
    return {
        "architectures": ["Gr00tN1d6"],
        "model_type": "Gr00tN1d6",
        "model_dtype": "bfloat16",
        "model_name": "nvidia/Eagle-Block2A-2B-v2",
        "backbone_model_type": "eagle",
        "model_revision": None,
        "tune_top_llm_layers": 4,
        "backbone_embedding_dim": cfg["backbone_embedding_dim"],
        "tune_llm": False,
        "tune_visual": False,
        "select_layer": cfg["select_layer"],
        "reproject_vision": False,
        "use_flash_attention": True,
        "load_bf16": True,
        "eagle_collator": False,
        "backbone_trainable_params_fp32": True,
        "image_crop_size": None,
        "image_target_size": None,
        "shortest_image_edge": cfg["shortest_image_edge"],
        "crop_fraction": cfg["crop_fraction"],
        "random_rotation_angle": None,
        "color_jitter_params": None,
        "use_albumentations_transforms": True,
        "formalize_language": True,
        "apply_sincos_state_encoding": True,
        "use_relative_action": True,
        "max_state_dim": cfg["max_state_dim"],
        "max_action_dim": cfg["max_action_dim"],
        "action_horizon": cfg["action_horizon"],
        "hidden_size": cfg["hidden_size"],
        "input_embedding_dim": cfg["input_embedding_dim"],
        "add_pos_embed": True,
        "attn_dropout": 0.2,
        "use_vlln": True,
        "max_seq_len": cfg["max_seq_len"],
        "use_alternate_vl_dit": True,
        "attend_text_every_n_blocks": cfg["attend_text_every_n_blocks"],
        "diffusion_model_cfg": {
            "positional_embeddings": None, "num_layers": d["num_layers"],
            "num_attention_heads": d["num_attention_heads"], "attention_head_dim": d["attention_head_dim"],
            "norm_type": "ada_norm", "dropout": 0.2, "final_dropout": True, "output_dim": d["output_dim"],
            "interleave_self_attention": True},
        "num_inference_timesteps": cfg["num_inference_timesteps"],
        "noise_beta_alpha": 1.5,
        "noise_beta_beta": 1.0,
        "noise_s": 0.999,
        "num_timestep_buckets": cfg["num_timestep_buckets"],
        "tune_projector": True,
        "tune_diffusion_model": True,
        "tune_vlln": True,
        "state_dropout_prob": 0.0,
        "state_additive_noise_scale": 0.0,
        "max_num_embodiments": cfg["max_num_embodiments"],
        "torch_dtype": DTYPES[dtype][2],
        "transformers_version": "4.51.3",
        # Not in the published file: how this one was made.
        "edgevla_generated": {"config": cfg["name"], "seed": seed, "dtype": dtype,
                              "generator": "tests/reference/groot/make_checkpoint.py",
                              "token_ids": ids},
    }


def eagle_config(cfg, ids):
    """The vendored Eagle-Block2A-2B-v2 config.json's architecture fields, sized from cfg."""
    v, t = cfg["vision"], cfg["text"]
    return {
        "architectures": ["Eagle3_VLForConditionalGeneration"],
        "model_type": "eagle_3_vl",
        "downsample_ratio": cfg["downsample_ratio"],
        "dynamic_image_size": False,
        "image_token_index": ids["image_context"],
        "mlp_connector_layers": 2,
        "pad2square": False,
        "select_layer": -1,
        "use_pixel_shuffle": True,
        "use_thumbnail": False,
        "torch_dtype": "bfloat16",
        "text_config": {
            "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False,
            "bos_token_id": ids["pad"], "eos_token_id": ids["im_end"], "head_dim": t["head_dim"],
            "hidden_act": "silu", "hidden_size": t["hidden_size"], "intermediate_size": t["intermediate_size"],
            "max_position_embeddings": t["max_position_embeddings"], "num_attention_heads": t["num_attention_heads"],
            "num_hidden_layers": t["num_hidden_layers"], "num_key_value_heads": t["num_key_value_heads"],
            "rms_norm_eps": t["rms_norm_eps"], "rope_scaling": None, "rope_theta": t["rope_theta"],
            "sliding_window": None, "use_sliding_window": False, "tie_word_embeddings": t["tie_word_embeddings"],
            "vocab_size": t["vocab_size"], "torch_dtype": "bfloat16"},
        "vision_config": {
            "model_type": "siglip2_vision_model", "hidden_act": "gelu_pytorch_tanh",
            "hidden_size": v["hidden_size"], "intermediate_size": v["intermediate_size"],
            "layer_norm_eps": v["layer_norm_eps"], "num_attention_heads": v["num_attention_heads"],
            "num_channels": v["num_channels"], "num_hidden_layers": v["num_hidden_layers"],
            "num_patches": v["num_patches"], "patch_size": v["patch_size"], "use_rope": False,
            "use_windows_attn": False, "window_size": 14, "full_attention_indexes": [],
            "torch_dtype": "bfloat16"},
    }


def _statistics_for(e, horizon_rows, seed):
    """Made-up but consistent statistics of one embodiment: min < mean < max, std > 0,
    q01/q99 inside [min, max]; degenerate dims get min == max and std == 0."""
    rng = _rng(seed, "statistics/" + e["tag"])

    def group(width, degenerate, scale, rows=None):
        shape = (rows, width) if rows else (width,)
        center = rng.normal(0.0, scale, shape)
        half = rng.uniform(0.2, 1.5, shape) * scale
        lo, hi = center - half, center + half
        mean = center + rng.uniform(-0.3, 0.3, shape) * half
        std = rng.uniform(0.2, 0.6, shape) * half
        q01, q99 = lo + 0.05 * half, hi - 0.05 * half
        for dim in degenerate:
            lo[..., dim] = hi[..., dim] = mean[..., dim] = q01[..., dim] = q99[..., dim] = center[..., dim]
            std[..., dim] = 0.0
        return {k: np.round(a, 6).tolist() for k, a in
                dict(min=lo, max=hi, mean=mean, std=std, q01=q01, q99=q99).items()}

    deg = e.get("degenerate", {})
    out = {"state": {k: group(w, deg.get(k, []), 1.0) for k, w in e["state"]},
           "action": {k: group(w, deg.get(k, []), 1.0) for k, w, *_ in e["action"]}}
    rel = {k: group(w, deg.get(k, []), 0.1, rows=horizon_rows)
           for k, w, rep, *_ in e["action"] if rep == "RELATIVE"}
    if rel:
        out["relative_action"] = rel
    return out


def processor_config(cfg, letterbox):
    modality = {}
    for e in groot_configs.EMBODIMENTS:
        def mc(keys, delta, sin_cos=None, mean_std=None, actions=None):
            return {"delta_indices": delta, "modality_keys": keys, "sin_cos_embedding_keys": sin_cos,
                    "mean_std_embedding_keys": mean_std, "action_configs": actions}
        acts = [{"rep": rep, "type": typ, "format": fmt, "state_key": sk}
                for _, _, rep, typ, fmt, sk in e["action"]]
        modality[e["tag"]] = {
            "video": mc(e["video"], [0]),
            "state": mc([k for k, _ in e["state"]], [0], e["state_sin_cos"], e["state_mean_std"]),
            "action": mc([a[0] for a in e["action"]], list(range(e["horizon"])), None,
                         e["action_mean_std"], acts),
            "language": mc(["annotation.human.action.task_description"], [0]),
        }
    kwargs = {
        "modality_configs": modality,
        "image_crop_size": None,
        "image_target_size": None,
        "use_albumentations": True,
        "random_rotation_angle": None,
        "color_jitter_params": {"brightness": 0.3, "contrast": 0.4, "saturation": 0.5, "hue": 0.08},
        "shortest_image_edge": cfg["shortest_image_edge"],
        "crop_fraction": cfg["crop_fraction"],
        "model_name": "nvidia/Eagle-Block2A-2B-v2",
        "model_type": "eagle",
        "formalize_language": True,
        "max_state_dim": cfg["max_state_dim"],
        "max_action_dim": cfg["max_action_dim"],
        "max_action_horizon": cfg["action_horizon"],
        "use_percentiles": False,
        "clip_outliers": True,
        "apply_sincos_state_encoding": True,
        "use_relative_action": True,
    }
    if letterbox is not None:
        kwargs["letter_box_transform"] = bool(letterbox)
    return {"processor_class": "Gr00tN1d6Processor", "processor_kwargs": kwargs}


def _dump(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def write_json_files(out, cfg, dtype, seed, letterbox=None):
    """Everything but the weights (config, processor, statistics, tokenizer, Eagle folder)."""
    os.makedirs(out, exist_ok=True)
    ids = tokenizer_files.token_ids(cfg)
    _dump(os.path.join(out, "config.json"), model_config(cfg, dtype, seed, ids))
    _dump(os.path.join(out, "processor_config.json"), processor_config(cfg, letterbox))
    _dump(os.path.join(out, "statistics.json"),
          {e["tag"]: _statistics_for(e, e["horizon"], seed) for e in groot_configs.EMBODIMENTS})
    _dump(os.path.join(out, "embodiment_id.json"), {e["tag"]: e["id"] for e in groot_configs.EMBODIMENTS})
    eagle = os.path.join(out, "Eagle-Block2A-2B-v2")
    tokenizer_files.write(eagle, cfg)
    _dump(os.path.join(eagle, "config.json"), eagle_config(cfg, ids))
    _dump(os.path.join(eagle, "processor_config.json"), {
        "image_end_token": "</img>", "image_placeholder": "image", "image_start_token": "<img>",
        "image_token": "<IMG_CONTEXT>", "pixels_per_token": 784, "processor_class": "Eagle3_VLProcessor",
        "video_placeholder": "video", "video_token": "<IMG_CONTEXT>"})
    _dump(os.path.join(eagle, "preprocessor_config.json"), {
        "do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": False,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
        "image_processor_type": "Eagle3_VLImageProcessorFast", "resample": 3,
        "rescale_factor": 1 / 255, "data_format": "channels_first"})
    return ids


def write_checkpoint(out, cfg, seed=0, dtype="f32", max_shard_bytes=None, letterbox=None):
    """A whole checkpoint of `cfg` in `out`. -> count(cfg, dtype)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r}: choose from {', '.join(DTYPES)}")
    groot_configs.check(cfg)
    write_json_files(out, cfg, dtype, seed, letterbox)
    specs = weight_specs(cfg)
    by_key = {k: (k, shape, kind) for k, shape, kind in specs}
    shards = plan_shards(specs, DTYPES[dtype][1], max_shard_bytes or cfg["max_shard_bytes"])
    weight_map = {}
    for fname, keys, _ in shards:
        write_shard(os.path.join(out, fname), [by_key[k] for k in keys], seed, dtype)
        weight_map.update({k: fname for k in keys})
    summary = count(cfg, dtype, max_shard_bytes)
    _dump(os.path.join(out, "model.safetensors.index.json"),
          {"metadata": {"total_size": summary["total_size"]},
           "weight_map": dict(sorted(weight_map.items()))})
    return summary


def check_against_published(summary):
    """[problems] of a full/bf16 count against the published numbers (spec §5, §8)."""
    pub = groot_configs.PUBLISHED
    bad = []
    if summary["tensors"] != pub["tensors"]:
        bad.append(f"tensors {summary['tensors']} != published {pub['tensors']}")
    if summary["total_size"] != pub["total_size_bf16"]:
        bad.append(f"total_size {summary['total_size']} != published {pub['total_size_bf16']}")
    if summary["params"] != pub["params"]:
        bad.append(f"params {summary['params']} != published {pub['params']}")
    for part, n in pub["keys"].items():
        if summary["keys"].get(part) != n:
            bad.append(f"{part} keys {summary['keys'].get(part)} != published {n}")
    if len(summary["shards"]) != pub["shards"]:
        bad.append(f"{len(summary['shards'])} shards != published {pub['shards']}")
    else:
        for s, gb in zip(summary["shards"], pub["shard_gb"]):
            if abs(s["bytes"] / 1e9 - gb) > 0.006:
                bad.append(f"{s['file']} {s['bytes'] / 1e9:.3f} GB != published {gb} GB")
    return bad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True, choices=sorted(groot_configs.CONFIGS))
    ap.add_argument("--out", help="checkpoint folder (not needed with --dry-run)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--max-shard-bytes", type=int, help="default: the config's (full: 5e9, as HF's 5GB)")
    ap.add_argument("--letterbox", choices=("on", "off"),
                    help="write processor_config.json's letter_box_transform (default: leave it out)")
    ap.add_argument("--dry-run", action="store_true", help="count tensors, bytes and shards; write nothing")
    args = ap.parse_args(argv)
    cfg = groot_configs.get(args.config)
    if args.dry_run:
        summary = count(cfg, args.dtype, args.max_shard_bytes)
        if args.config == "full" and args.dtype == "bf16" and not args.max_shard_bytes:
            bad = check_against_published(summary)
            summary["matches_published"] = not bad
            summary["mismatches"] = bad
        print(json.dumps(summary, indent=2))
        return 1 if summary.get("mismatches") else 0
    if not args.out:
        ap.error("--out is required unless --dry-run")
    letterbox = None if args.letterbox is None else args.letterbox == "on"
    summary = write_checkpoint(args.out, cfg, args.seed, args.dtype, args.max_shard_bytes, letterbox)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
