#!/usr/bin/env python3
"""PyTorch CUDA baseline of pi0 / pi0.5 inference, the yardstick of edgevla's cuda backend.

Written from docs/model.md as a fast PyTorch implementation would be (independent of
tests/reference/pi0_numpy.py and bench/torch_pi0.py; it shares only the safetensors reader):
weights loaded once onto the device (bf16 by default, the Gemma norm scales, adaRMS dense
layers and top-level heads in fp32 as in openpi's bf16 mode, model.md §11.2), q/k/v and
gate/up fused, masked cameras and padding tokens skipped (model.md §5.4), flash attention
through F.scaled_dot_product_attention with grouped kv heads, the prefix KV cache computed
once, the pi0.5 time conditioning of every Euler step (time MLP + all adaRMS dense layers)
computed in one batched product per call, the suffix recomputed each step.

  torch_pi0_cuda.py --checkpoint DIR [--inputs IO.safetensors] [--views 1|3|1,3] [--tokens 200]
                    [--steps 10] [--repeat N] [--warmup N] [--variants eager,graph,compile]
                    [--compile-modes default,max-autotune-no-cudagraphs] [--dtype bf16|f32]
                    [--floor] [--json OUT.json] [--out OUT.safetensors]

Variants, each timed end to end (backbone + action head, inputs already on the device) and
per stage, cuda-synchronised, median and p90 over --repeat runs after --warmup:
  eager    plain PyTorch calls;
  graph    the same calls captured into CUDA graphs (one for the whole E2E, one per stage);
  compile  torch.compile of the backbone function and of the action head's Euler-step
           function (the head's Python loop calls the compiled step `steps` times), then the
           whole E2E captured into one CUDA graph. Each mode of --compile-modes is measured;
           the faster one is reported as `compile`.

--floor measures the device's bf16 GEMM rate and copy bandwidth in the same run and derives
a lower bound of the E2E time from the model's FLOPs and weight bytes for the setting.
--out writes the eager variant's inputs and outputs (docs/checkpoint.md §5) for
tests/reference/compare.py or a cosine check against edgevla's cuda engine.
Prints one JSON line per view count (and writes them to --json).
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from torch_profile import profile_replays  # noqa: E402
from torch_timing import capture, cosine, time_fn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import safetensors_io  # noqa: E402

EPS = 1e-6
SO400M = dict(image_size=224, patch_size=14, width=1152, depth=27, mlp_dim=4304, num_heads=16)
GEMMA = {
    "gemma_2b": dict(width=2048, depth=18, mlp_dim=16384, num_heads=8, num_kv_heads=1, head_dim=256),
    "gemma_300m": dict(width=1024, depth=18, mlp_dim=4096, num_heads=8, num_kv_heads=1, head_dim=256),
}
GEMMA["gemma_2b_lora"], GEMMA["gemma_300m_lora"] = GEMMA["gemma_2b"], GEMMA["gemma_300m"]
CAMERAS = 3

V = "paligemma_with_expert.paligemma.model.vision_tower.vision_model"
G = "paligemma_with_expert.paligemma.model.language_model"
X = "paligemma_with_expert.gemma_expert.model"
PROJ = "paligemma_with_expert.paligemma.model.multi_modal_projector.linear"
EMBED_KEYS = ("paligemma_with_expert.paligemma.lm_head.weight", G + ".embed_tokens.weight")
INPUTS = ("images", "image_mask", "tokens", "token_mask", "state", "noise", "num_steps")
VARIANTS = ("eager", "graph", "compile")

HAVE_SDPA = hasattr(F, "scaled_dot_product_attention")
HAVE_RMS_NORM = hasattr(F, "rms_norm")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--inputs", help="I/O file whose inputs section is used (default: seeded random inputs)")
    ap.add_argument("--views", default="1", help="valid cameras of the random inputs: 1, 2, 3 or a list (1,3)")
    ap.add_argument("--tokens", type=int, default=200,
                    help="valid prompt tokens of the random inputs (at most the config's token budget)")
    ap.add_argument("--steps", type=int, help="Euler steps (default: the inputs' num_steps, else 10)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--variants", default="eager,graph,compile")
    ap.add_argument("--compile-modes", default="default",
                    help="torch.compile modes to try for the compile variant (comma list); the faster is reported")
    ap.add_argument("--dtype", choices=("bf16", "f32"), default="bf16")
    ap.add_argument("--device", default="cuda", help="cuda (the benchmark), or cpu for eager checks only")
    ap.add_argument("--floor", action="store_true", help="measure the device floor (GEMM rate, copy bandwidth)")
    ap.add_argument("--json", help="also append the JSON line(s) to this file")
    ap.add_argument("--profile-ranges", action="store_true",
                    help="after timing, replay each graph variant's stages once inside NVTX ranges "
                         "'torch.<variant>.backbone' and 'torch.<variant>.head' (for ncu --nvtx-include)")
    ap.add_argument("--out", help="write inputs + eager outputs (checkpoint.md §5) here")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be >= 1 and --warmup >= 0")
    args.variants = [v for v in args.variants.split(",") if v]
    bad = [v for v in args.variants if v not in VARIANTS]
    if bad or not args.variants:
        ap.error(f"--variants: unknown {bad}; choose from {','.join(VARIANTS)}")
    if args.device != "cuda" and args.variants != ["eager"]:
        ap.error("graph and compile variants need --device cuda")
    args.views = [int(v) for v in str(args.views).split(",") if v]
    if not args.views or any(v < 1 or v > CAMERAS for v in args.views):
        ap.error(f"--views must be between 1 and {CAMERAS}")
    if args.inputs and len(args.views) > 1:
        ap.error("--inputs fixes the cameras: give one --views value (it is ignored)")
    args.compile_modes = [m for m in args.compile_modes.split(",") if m]
    return args


# --- numerics shared by all variants --------------------------------------------------------------

def rms_norm(x, scale):
    """Gemma RMSNorm: statistics and the (1 + w) scale in fp32, result in x's dtype."""
    xf = x.float()
    if HAVE_RMS_NORM:
        y = F.rms_norm(xf, (xf.shape[-1],), scale, EPS)
    else:
        y = xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS) * scale
    return y.to(x.dtype)


def ada_rms_norm(x, scale1p, shift):
    """pi0.5 adaRMSNorm (model.md §6.2) with (1 + scale) and shift given, fp32 inside."""
    xf = x.float()
    if HAVE_RMS_NORM:
        y = F.rms_norm(xf, (xf.shape[-1],), None, EPS)
    else:
        y = xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)
    return torch.addcmul(shift, y, scale1p).to(x.dtype)


def rope(x, cos, sin_signed):
    """Rotate-half RoPE over the last dim: x·cos + [x2, x1]·[-sin, sin] (model.md §6.3).
    x [n, heads, h]; cos, sin_signed [n, 1, h] in x's dtype."""
    half = x.shape[-1] // 2
    swapped = torch.cat([x[..., half:], x[..., :half]], dim=-1)
    return torch.addcmul(x * cos, swapped, sin_signed)


def rope_tables(pos, head_dim, dtype, device):
    """cos and sign-folded sin [n, 1, head_dim], computed in fp32 then cast (the port casts
    them to the activation dtype before use)."""
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angle = pos.to(torch.float32)[:, None] * inv_freq[None, :]
    cos, sin = angle.cos(), angle.sin()
    cos = torch.cat([cos, cos], dim=-1)[:, None, :]
    sin_signed = torch.cat([-sin, sin], dim=-1)[:, None, :]
    return cos.to(device=device, dtype=dtype), sin_signed.to(device=device, dtype=dtype)


def attention(q, k, v, mask=None):
    """q [1, N, n, h], k / v [1, K, m, h] (N a multiple of K, query head j uses kv head
    j // (N/K)), scale h^-0.5, optional bool mask [n, m] (True = may attend) -> [n, N·h]."""
    N, n, h = q.shape[1], q.shape[2], q.shape[3]
    K = k.shape[1]
    if HAVE_SDPA:
        if K == N:
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        elif mask is None:
            o = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        else:  # masked grouped attention (pi0's suffix): expand the kv heads
            rep = N // K
            o = F.scaled_dot_product_attention(q, k.repeat_interleave(rep, dim=1),
                                               v.repeat_interleave(rep, dim=1), attn_mask=mask)
    else:  # torch without SDPA (CPU checks only)
        rep = N // K
        kk, vv = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        logits = torch.matmul(q, kk.transpose(-1, -2)) * (h ** -0.5)
        if mask is not None:
            logits = logits.masked_fill(~mask, float("-inf"))
        o = torch.matmul(torch.softmax(logits.float(), dim=-1).to(q.dtype), vv)
    return o.transpose(1, 2).reshape(n, N * h)


def time_embedding(t, width):
    """model.md §7.1: float64 math, rounded to float32."""
    fraction = np.linspace(0.0, 1.0, width // 2, dtype=np.float64)
    period = 4e-3 * (4.0 / 4e-3) ** fraction
    arg = (1.0 / period) * (2 * math.pi) * float(t)
    return np.concatenate([np.sin(arg), np.cos(arg)]).astype(np.float32)


def euler_times(num_steps):
    """The float32 times of openpi's loop (model.md §8) and dt."""
    dt, t, times = np.float32(-1.0 / num_steps), np.float32(1.0), []
    while t >= -dt / np.float32(2):
        times.append(t)
        t = np.float32(t + dt)
    return float(dt), times


# --- the model ---------------------------------------------------------------------------------------

class CudaPi0:
    def __init__(self, ckpt_dir, dtype, device):
        with open(os.path.join(ckpt_dir, "config.json")) as f:
            cfg = json.load(f)
        self.st = safetensors_io.SafetensorsFile(os.path.join(ckpt_dir, "model.safetensors"))
        self.pi05 = "time_mlp_in.weight" in self.st
        self.vis = {**SO400M, **cfg.get("vision", {})}
        self.vlm = {**GEMMA.get(cfg.get("paligemma_variant", "gemma_2b"), {}), **cfg.get("vlm", {})}
        self.exp = {**GEMMA.get(cfg.get("action_expert_variant", "gemma_300m"), {}), **cfg.get("expert", {})}
        self.H = int(cfg["action_horizon"])
        self.A = int(cfg.get("action_dim", 32))
        self.T = int(cfg.get("max_token_len", 200 if self.pi05 else 48))
        self.C = len(cfg.get("cameras", [None] * CAMERAS))
        self.num_steps = int(cfg.get("num_steps", 10))
        self.grid = self.vis["image_size"] // self.vis["patch_size"]
        self.emb_scale = math.sqrt(self.vlm["width"])  # the language embedding multiplier (model.md §5.1)
        self.S = self.H if self.pi05 else self.H + 1
        self.dt, self.dev = dtype, torch.device(device)
        self.embed_key = next((k for k in EMBED_KEYS if k in self.st), None)
        if self.embed_key is None:
            raise ValueError(f"{self.st.path}: no token embedding table ({' or '.join(EMBED_KEYS)})")
        t0 = time.perf_counter()
        self._load()
        if self.dev.type == "cuda":
            torch.cuda.synchronize()
        self.load_s = time.perf_counter() - t0

    # Weights go to the device in their stored dtype and are converted there.
    def _t(self, name, dtype=None):
        raw, sdt = self.st.raw(name), self.st.dtype(name)
        if sdt == "BF16":
            t = torch.from_numpy(np.array(raw).view(np.int16)).view(torch.bfloat16)
        else:
            t = torch.from_numpy(np.array(raw))
        return t.to(self.dev).to(dtype or self.dt)

    def _f32(self, name):
        return self._t(name, torch.float32)

    def _load(self):
        t, f32 = self._t, self._f32
        vd = self.vis
        self.patch_w = f32(f"{V}.embeddings.patch_embedding.weight").reshape(vd["width"], -1)
        self.patch_b = f32(f"{V}.embeddings.patch_embedding.bias")
        self.pos_emb = f32(f"{V}.embeddings.position_embedding.weight")
        self.vis_layers = []
        for i in range(vd["depth"]):
            p = f"{V}.encoder.layers.{i}"
            self.vis_layers.append(dict(
                ln1=(t(f"{p}.layer_norm1.weight"), t(f"{p}.layer_norm1.bias")),
                ln2=(t(f"{p}.layer_norm2.weight"), t(f"{p}.layer_norm2.bias")),
                qkv=(torch.cat([t(f"{p}.self_attn.{n}_proj.weight") for n in "qkv"]),
                     torch.cat([t(f"{p}.self_attn.{n}_proj.bias") for n in "qkv"])),
                out=(t(f"{p}.self_attn.out_proj.weight"), t(f"{p}.self_attn.out_proj.bias")),
                fc1=(t(f"{p}.mlp.fc1.weight"), t(f"{p}.mlp.fc1.bias")),
                fc2=(t(f"{p}.mlp.fc2.weight"), t(f"{p}.mlp.fc2.bias"))))
        self.post_ln = (t(f"{V}.post_layernorm.weight"), t(f"{V}.post_layernorm.bias"))
        self.proj = (t(f"{PROJ}.weight"), t(f"{PROJ}.bias"))
        self.embed = t(self.embed_key)
        depth = self.vlm["depth"]
        # The last prefix layer only produces K/V: its o / MLP weights are never read.
        self.vlm_layers = [self._gemma_layer(f"{G}.layers.{i}", True, full=i < depth - 1) for i in range(depth)]
        self.exp_layers = [self._gemma_layer(f"{X}.layers.{i}", not self.pi05) for i in range(self.exp["depth"])]
        E = self.exp["width"]
        if self.pi05:
            # All adaRMSNorms of the expert (2 per layer + final) condition on the same vector:
            # one stacked product gives every scale / shift / gate.
            norms = [f"{X}.layers.{i}.{n}" for i in range(self.exp["depth"])
                     for n in ("input_layernorm", "post_attention_layernorm")] + [f"{X}.norm"]
            self.ada_w = torch.cat([f32(f"{n}.dense.weight") for n in norms])
            self.ada_b = torch.cat([f32(f"{n}.dense.bias") for n in norms])
            self.time_in = (f32("time_mlp_in.weight"), f32("time_mlp_in.bias"))
            self.time_out = (f32("time_mlp_out.weight"), f32("time_mlp_out.bias"))
            self.final_scale = None
        else:
            self.final_scale = 1 + f32(f"{X}.norm.weight")
            self.state_proj = (f32("state_proj.weight"), f32("state_proj.bias"))
            # concat(a, temb)·Wᵀ = a·W[:, :E]ᵀ + temb·W[:, E:]ᵀ: the time half is one row per step.
            w_in = f32("action_time_mlp_in.weight")
            self.at_in_act, self.at_in_time = w_in[:, :E].contiguous(), w_in[:, E:].contiguous()
            self.at_in_b = f32("action_time_mlp_in.bias")
            self.at_out = (f32("action_time_mlp_out.weight"), f32("action_time_mlp_out.bias"))
        self.act_in = (f32("action_in_proj.weight"), f32("action_in_proj.bias"))
        self.act_out = (f32("action_out_proj.weight"), f32("action_out_proj.bias"))

    def _gemma_layer(self, p, plain_norms, full=True):
        t = self._t
        layer = dict(qkv=torch.cat([t(f"{p}.self_attn.{n}_proj.weight") for n in "qkv"]))
        if full:
            layer["o"] = t(f"{p}.self_attn.o_proj.weight")
            layer["gate_up"] = torch.cat([t(f"{p}.mlp.gate_proj.weight"), t(f"{p}.mlp.up_proj.weight")])
            layer["down"] = t(f"{p}.mlp.down_proj.weight")
        if plain_norms:
            layer["in_scale"] = 1 + self._f32(f"{p}.input_layernorm.weight")
            if full:
                layer["post_scale"] = 1 + self._f32(f"{p}.post_attention_layernorm.weight")
        return layer

    # --- a setting: which cameras / tokens are valid, the number of steps -------------------------

    def prepare(self, n_views, n_tokens, num_steps):
        """Per-setting constants (they depend only on shapes and the step count): RoPE tables of
        the prefix and suffix positions, time embeddings of the Euler steps, pi0's mask."""
        g = self.vlm
        self.n_img = n_views * self.grid ** 2
        self.n = self.n_img + n_tokens
        self.steps = num_steps
        self.dt_step, times = euler_times(num_steps)
        self.cos_p, self.sin_p = rope_tables(torch.arange(self.n), g["head_dim"], self.dt, self.dev)
        self.cos_s, self.sin_s = rope_tables(self.n + torch.arange(self.S), g["head_dim"], self.dt, self.dev)
        temb = np.stack([time_embedding(t, self.exp["width"]) for t in times])
        self.temb = torch.from_numpy(temb).to(self.dev)
        self.suffix_mask = None
        if not self.pi05:
            # The state token (suffix row 0) must not see the action tokens (model.md §7.3).
            m = torch.ones(self.S, self.n + self.S, dtype=torch.bool)
            m[0, self.n + 1:] = False
            self.suffix_mask = m.to(self.dev)

    # --- stages --------------------------------------------------------------------------------------

    def vision(self, images):
        """images [v, 3, S, S] f32 -> image tokens [v·tokens, D] (SigLIP + projector, model.md §4)."""
        vd = self.vis
        Dv, heads, p, g = vd["width"], vd["num_heads"], vd["patch_size"], self.grid
        hd = Dv // heads
        nv = images.shape[0]
        T = g * g
        # The stride-p patch conv as one fp32 product over (channel, row, col)-flattened patches.
        patches = images.reshape(nv, 3, g, p, g, p).permute(0, 2, 4, 1, 3, 5).reshape(nv, T, 3 * p * p)
        e = (F.linear(patches, self.patch_w, self.patch_b) + self.pos_emb).to(self.dt)
        for L in self.vis_layers:
            y = F.layer_norm(e, (Dv,), *L["ln1"], eps=EPS)
            q, k, v = F.linear(y, *L["qkv"]).view(nv, T, 3, heads, hd).permute(2, 0, 3, 1, 4).unbind(0)
            if HAVE_SDPA:
                a = F.scaled_dot_product_attention(q, k, v)
            else:
                a = torch.matmul(torch.softmax((torch.matmul(q, k.transpose(-1, -2)) * hd ** -0.5).float(), dim=-1)
                                 .to(v.dtype), v)
            e = e + F.linear(a.transpose(1, 2).reshape(nv, T, Dv), *L["out"])
            y = F.layer_norm(e, (Dv,), *L["ln2"], eps=EPS)
            e = e + F.linear(F.gelu(F.linear(y, *L["fc1"]), approximate="tanh"), *L["fc2"])
        z = F.layer_norm(e, (Dv,), *self.post_ln, eps=EPS)
        return F.linear(z, *self.proj).reshape(nv * T, self.vlm["width"])

    def _qkv(self, y, L, cos, sin_signed):
        """-> q [1, N, n, h], k [n, K, h] (post-RoPE), v [n, K, h]."""
        g = self.vlm
        N, K, h = g["num_heads"], g["num_kv_heads"], g["head_dim"]
        n = y.shape[0]
        qkv = F.linear(y, L["qkv"])
        qk = rope(qkv[:, :(N + K) * h].view(n, N + K, h), cos, sin_signed)
        q, k = qk[:, :N], qk[:, N:]
        v = qkv[:, (N + K) * h:].view(n, K, h)
        return q.transpose(0, 1).unsqueeze(0), k, v

    @staticmethod
    def _mlp(y, L):
        gate, up = F.linear(y, L["gate_up"]).chunk(2, dim=-1)
        return F.linear(F.gelu(gate, approximate="tanh") * up, L["down"])

    def backbone(self, images, token_ids):
        """Vision tower + prefix pass over the valid prefix tokens (all attend to all, positions
        0..n-1). -> (keys [L, n, K, h] post-RoPE, values [L, n, K, h], image tokens [v·256, D])."""
        img = self.vision(images)
        lang = F.embedding(token_ids, self.embed) * self.emb_scale
        x = torch.cat([img, lang])
        ks, vs = [], []
        depth = self.vlm["depth"]
        for i, L in enumerate(self.vlm_layers):
            q, k, v = self._qkv(rms_norm(x, L["in_scale"]), L, self.cos_p, self.sin_p)
            ks.append(k)
            vs.append(v)
            if i == depth - 1:
                break  # the last layer's output is never used (model.md §6.5)
            o = attention(q, k.transpose(0, 1).unsqueeze(0), v.transpose(0, 1).unsqueeze(0))
            x = x + F.linear(o, L["o"])
            x = x + self._mlp(rms_norm(x, L["post_scale"]), L)
        return torch.stack(ks), torch.stack(vs), img

    def head_prepare(self, state):
        """Per-call quantities shared by the Euler steps.
        pi0.5: the time MLP and every adaRMS dense layer for all steps in one batched product
        -> ((1 + scale) [steps, 2L+1, E] fp32, shift fp32, gate in the activation dtype).
        pi0: the state token [1, E] and the time half of action_time_mlp_in [steps, E]."""
        if self.pi05:
            cond = F.silu(F.linear(F.silu(F.linear(self.temb, *self.time_in)), *self.time_out))
            mod = F.linear(cond, self.ada_w, self.ada_b).view(self.steps, 2 * self.exp["depth"] + 1, 3, -1)
            return (1 + mod[:, :, 0], mod[:, :, 1], mod[:, :, 2].to(self.dt))
        state_tok = F.linear(state, *self.state_proj)[None]
        time_part = F.linear(self.temb, self.at_in_time, self.at_in_b)
        return (state_tok, time_part)

    def step(self, x_t, kp, vp, c0, c1, c2=None):
        """One Euler step (model.md §8) over the cached prefix. pi0.5: c0/c1/c2 = (1 + scale),
        shift, gate [2L+1, E] of this step; pi0: c0 = state token, c1 = time part [E].
        -> (x_t + dt·v, v)."""
        H, depth = self.H, self.exp["depth"]
        act = F.linear(x_t, *self.act_in)
        if self.pi05:
            x = act.to(self.dt)
        else:
            h = F.silu(F.linear(act, self.at_in_act) + c1)
            x = torch.cat([c0, F.linear(h, *self.at_out)]).to(self.dt)
        for i, L in enumerate(self.exp_layers):
            if self.pi05:
                y = ada_rms_norm(x, c0[2 * i], c1[2 * i])
            else:
                y = rms_norm(x, L["in_scale"])
            q, k, v = self._qkv(y, L, self.cos_s, self.sin_s)
            k_all = torch.cat([kp[i], k]).transpose(0, 1).unsqueeze(0)
            v_all = torch.cat([vp[i], v]).transpose(0, 1).unsqueeze(0)
            o = F.linear(attention(q, k_all, v_all, self.suffix_mask), L["o"])
            x = torch.addcmul(x, o, c2[2 * i]) if self.pi05 else x + o
            if self.pi05:
                y = ada_rms_norm(x, c0[2 * i + 1], c1[2 * i + 1])
                x = torch.addcmul(x, self._mlp(y, L), c2[2 * i + 1])
            else:
                x = x + self._mlp(rms_norm(x, L["post_scale"]), L)
        if self.pi05:
            y = ada_rms_norm(x, c0[2 * depth], c1[2 * depth])  # the final norm's gate is unused
        else:
            y = rms_norm(x, self.final_scale)
        v = F.linear(y[self.S - H:].float(), *self.act_out)
        return x_t + self.dt_step * v, v

    def head(self, kp, vp, noise, state, step_fn=None, prepare_fn=None):
        """The Euler loop -> (actions [H, A], velocities [steps, H, A])."""
        step_fn = step_fn or self.step
        c = (prepare_fn or self.head_prepare)(state)
        x_t, vs = noise, []
        for s in range(self.steps):
            if self.pi05:
                x_t, v = step_fn(x_t, kp, vp, c[0][s], c[1][s], c[2][s])
            else:
                x_t, v = step_fn(x_t, kp, vp, c[0], c[1][s])
            vs.append(v)
        return x_t, torch.stack(vs)


# --- inputs ----------------------------------------------------------------------------------------

def random_inputs(model, n_views, n_tokens, num_steps, seed):
    """Inputs of checkpoint.md §5: the first n_views cameras valid (uniform pixels in [-1, 1]),
    the rest masked (zeros); n_tokens real tokens (BOS then random ids) then padding."""
    rng = np.random.default_rng(seed)
    S = model.vis["image_size"]
    images = np.zeros((model.C, 3, S, S), np.float32)
    images[:n_views] = rng.uniform(-1, 1, (n_views, 3, S, S))
    image_mask = (np.arange(model.C) < n_views).astype(np.uint8)
    vocab = int(model.st.shape(model.embed_key)[0])
    tokens = np.zeros(model.T, np.int32)
    tokens[:n_tokens] = rng.integers(3, vocab, n_tokens)
    tokens[0] = 2
    token_mask = (np.arange(model.T) < n_tokens).astype(np.uint8)
    return dict(images=images, image_mask=image_mask, tokens=tokens, token_mask=token_mask,
                state=(0.5 * rng.standard_normal(model.A)).astype(np.float32),
                noise=rng.standard_normal((model.H, model.A)).astype(np.float32),
                num_steps=np.array([num_steps], np.int32))


def device_inputs(model, inputs):
    """The valid cameras' pixels and the valid token ids on the device (skipping masked rows is
    decided by the masks, i.e. by the setting), state and noise."""
    cams = np.flatnonzero(inputs["image_mask"].astype(bool))
    ids = inputs["tokens"][inputs["token_mask"].astype(bool)].astype(np.int64)
    d = model.dev
    return dict(images=torch.from_numpy(np.ascontiguousarray(inputs["images"][cams])).to(d),
                token_ids=torch.from_numpy(ids).to(d),
                state=torch.from_numpy(np.array(inputs["state"], np.float32)).to(d),
                noise=torch.from_numpy(np.array(inputs["noise"], np.float32)).to(d))


def io_outputs(model, inputs, kp, vp, img, actions, velocities):
    """The outputs section of checkpoint.md §5 (f32, masked rows zero)."""
    image_mask = inputs["image_mask"].astype(bool)
    token_mask = inputs["token_mask"].astype(bool)
    tpc, D = model.grid ** 2, model.vlm["width"]
    cams = np.flatnonzero(image_mask)
    vision = np.zeros((model.C, tpc, D), np.float32)
    vision[cams] = img.float().cpu().numpy().reshape(len(cams), tpc, D)
    prefix_mask = np.concatenate([np.repeat(image_mask, tpc), token_mask])
    out = dict(vision_embeddings=vision, prefix_mask=prefix_mask.astype(np.uint8),
               velocities=velocities.float().cpu().numpy(), actions=actions.float().cpu().numpy())
    for name, buf in (("prefix_k", kp), ("prefix_v", vp)):
        full = np.zeros((model.vlm["depth"], prefix_mask.size) + tuple(buf.shape[2:]), np.float32)
        full[:, prefix_mask] = buf.float().cpu().numpy()
        out[name] = full
    return out


# --- timing ----------------------------------------------------------------------------------------

def sync(model):
    if model.dev.type == "cuda":
        torch.cuda.synchronize()


def timed(model, fn, args):
    """Milliseconds per fn(), as time_fn with the bench's repeat and warm-up counts."""
    return time_fn(lambda: sync(model), fn, args.repeat, args.warmup)


def run_variant(model, name, di, args, bb_fn, head_fn):
    """Times E2E and both stages of one variant. -> (timings dict, actions)."""
    images, ids, noise, state = di["images"], di["token_ids"], di["noise"], di["state"]

    def e2e(images, ids, noise, state):
        kp, vp, _ = bb_fn(images, ids)
        return head_fn(kp, vp, noise, state)

    res = {}
    if name == "eager":
        kp, vp, _ = bb_fn(images, ids)
        res["e2e_ms"] = timed(model, lambda: e2e(images, ids, noise, state), args)
        res["backbone_ms"] = timed(model, lambda: bb_fn(images, ids), args)
        res["head_ms"] = timed(model, lambda: head_fn(kp, vp, noise, state), args)
        actions = e2e(images, ids, noise, state)[0]
    else:
        g_bb, bb_out = capture(torch, bb_fn, (images, ids))
        g_head, _ = capture(torch, head_fn, (bb_out[0], bb_out[1], noise, state))
        g_e2e, e2e_out = capture(torch, e2e, (images, ids, noise, state))
        res["e2e_ms"] = timed(model, g_e2e.replay, args)
        res["backbone_ms"] = timed(model, g_bb.replay, args)
        res["head_ms"] = timed(model, g_head.replay, args)
        if args.profile_ranges:
            profile_replays(torch, lambda: sync(model), name, [("backbone", g_bb), ("head", g_head)])
        g_e2e.replay()
        sync(model)
        actions = e2e_out[0].clone()
        del g_bb, g_head, g_e2e
    return res, actions


# --- floor -----------------------------------------------------------------------------------------

def count_model(model):
    """FLOPs (2 per multiply-add, every matmul incl. attention products) and weight bytes read
    by one inference of the current setting, as this program computes it."""
    vd, g, e = model.vis, model.vlm, model.exp
    act = 2 if model.dt == torch.bfloat16 else 4
    nv = model.n_img // model.grid ** 2
    T, Dv, p = model.grid ** 2, vd["width"], vd["patch_size"]
    N, K, h = g["num_heads"], g["num_kv_heads"], g["head_dim"]
    fl, wb = {}, {}
    # vision tower (patch product in fp32) + projector
    per = 2 * T * (3 * Dv * Dv + Dv * Dv + 2 * Dv * vd["mlp_dim"]) + 2 * 2 * T * T * Dv
    fl["vision"] = nv * (2 * T * 3 * p * p * Dv + vd["depth"] * per + 2 * T * Dv * g["width"])
    wb["vision"] = (4 * (Dv * 3 * p * p + Dv + T * Dv)
                    + act * (vd["depth"] * (4 * Dv * Dv + 2 * Dv * vd["mlp_dim"] + 9 * Dv + vd["mlp_dim"])
                             + 2 * Dv + Dv * g["width"] + g["width"]))
    # prefix Gemma (the last layer computes only q/k/v)
    n, D, M = model.n, g["width"], g["mlp_dim"]
    qkv_w = (N + 2 * K) * h * D
    full_w = qkv_w + N * h * D + 3 * D * M
    fl["prefix"] = (g["depth"] - 1) * (2 * n * full_w + 2 * 2 * N * n * n * h) + 2 * n * qkv_w
    wb["prefix"] = act * ((g["depth"] - 1) * full_w + qkv_w + (model.n - model.n_img) * D) \
        + 4 * (2 * g["depth"] - 1) * D
    # action head: expert layers x steps, heads x steps, time conditioning once per call
    S, E, Me, m, A, H = model.S, e["width"], e["mlp_dim"], model.n + model.S, model.A, model.H
    ew = (N + 2 * K) * h * E + N * h * E + 3 * E * Me
    fl_step = e["depth"] * (2 * S * ew + 2 * 2 * N * S * m * h) + 2 * H * A * E * 2
    wb_step = act * e["depth"] * ew + 4 * 2 * (A * E + E)
    if model.pi05:
        nn_ = 2 * e["depth"] + 1
        fl_once = model.steps * 2 * (2 * E * E + nn_ * 3 * E * E)
        wb_once = 4 * (2 * (E * E + E) + nn_ * (3 * E * E + 3 * E))
    else:
        fl_step += 2 * H * E * E + 2 * H * E * E  # action_time_mlp_in (action half), _out
        wb_step += 4 * (2 * E * E + 2 * E) + 4 * e["depth"] * 2 * E + 4 * E
        fl_once = 2 * A * E + model.steps * 2 * E * E  # state token, time half of mlp_in
        wb_once = 4 * (A * E + E + E * E + E)
    fl["head"] = model.steps * fl_step + fl_once
    wb["head"] = model.steps * wb_step + wb_once
    return fl, wb, act * e["depth"] * ew


def measure_floor(model):
    """bf16 GEMM rate of an 8192³ torch.matmul and device-to-device copy bandwidth, best of
    several timings each (CUDA events)."""
    dev = model.dev
    n = 8192
    torch.cuda.empty_cache()
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    c = torch.empty(n, n, device=dev, dtype=torch.bfloat16)

    def best(fn, reps=10, rounds=5):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        out = []
        for _ in range(rounds):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(reps):
                fn()
            e1.record()
            e1.synchronize()
            out.append(e0.elapsed_time(e1) / 1e3 / reps)
        return min(out)

    t_mm = best(lambda: torch.matmul(a, b, out=c))
    nbytes = 4 << 30
    src = torch.empty(nbytes, dtype=torch.uint8, device=dev).random_(0, 255)
    dst = torch.empty_like(src)
    t_cp = best(lambda: dst.copy_(src), reps=5)
    return dict(gemm_shape=[n, n, n], gemm_tflops=round(2 * n ** 3 / t_mm / 1e12, 1),
                copy_bytes=nbytes, copy_gbps_read_plus_write=round(2 * nbytes / t_cp / 1e9, 1))


def floor_numbers(model, dev_floor):
    fl, wb, expert_step_bytes = count_model(model)
    flops, wbytes = sum(fl.values()), sum(wb.values())
    rate, bw = dev_floor["gemm_tflops"] * 1e12, dev_floor["copy_gbps_read_plus_write"] * 1e9
    # Reading weights moves each byte once (no write): bandwidth counted as read+write of a copy.
    return dict(**dev_floor,
                flops=flops, flops_by_stage={k: int(v) for k, v in fl.items()},
                weight_bytes=wbytes, weight_bytes_by_stage={k: int(v) for k, v in wb.items()},
                floor_ms=round(1e3 * (flops / rate + wbytes / bw), 3),
                compute_floor_ms=round(1e3 * flops / rate, 3), weight_read_floor_ms=round(1e3 * wbytes / bw, 3),
                head_weight_read_floor_ms=round(1e3 * expert_step_bytes * model.steps / bw, 3),
                head_expert_bytes_per_step=int(expert_step_bytes))


# --- main ------------------------------------------------------------------------------------------

def bench_setting(model, inputs, args, dev_floor, out_path):
    di = device_inputs(model, inputs)
    n_views = int(inputs["image_mask"].astype(bool).sum())
    n_tokens = int(inputs["token_mask"].astype(bool).sum())
    steps = int(inputs["num_steps"][0])
    model.prepare(n_views, n_tokens, steps)
    rec = dict(impl="torch_cuda" if model.dev.type == "cuda" else "torch_" + model.dev.type,
               torch=torch.__version__,
               device=torch.cuda.get_device_name() if model.dev.type == "cuda" else model.dev.type,
               model_type="pi05" if model.pi05 else "pi0", dtype=args.dtype, views=n_views, tokens=n_tokens,
               prefix_len=model.n, horizon=model.H, steps=steps, batch=1, repeat=args.repeat, warmup=args.warmup,
               inputs=args.inputs or f"random seed {args.seed}", load_s=round(model.load_s, 1), variants={})
    with torch.inference_mode():
        # one eager run: the reference of the other variants' actions, and the --out file
        kp, vp, img = model.backbone(di["images"], di["token_ids"])
        actions, vel = model.head(kp, vp, di["noise"], di["state"])
        ref_actions = actions.float().clone()
        if out_path:
            rec["out"] = out_path
            safetensors_io.save(out_path, {**inputs, **io_outputs(model, inputs, kp, vp, img, actions, vel)},
                                metadata={"producer": "bench/torch_pi0_cuda.py", "torch": torch.__version__,
                                          "dtype": args.dtype})
        del kp, vp, img
        for name in args.variants:
            t0 = time.perf_counter()
            try:
                if name in ("eager", "graph"):
                    res, acts = run_variant(model, name, di, args, model.backbone, model.head)
                else:
                    res, acts = run_compile(model, di, args)
            except Exception as e:  # report and go on with the other variants
                rec["variants"][name] = dict(error=f"{type(e).__name__}: {e}"[:2000])
                print(f"{name}: failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                continue
            res["setup_s"] = round(time.perf_counter() - t0, 1)
            res["actions_cos_vs_eager"] = round(cosine(acts.float(), ref_actions), 6)
            rec["variants"][name] = res
            print(f"{name}: {json.dumps(res)}", file=sys.stderr, flush=True)
    if dev_floor:
        rec["floor"] = floor_numbers(model, dev_floor)
    return rec


def run_compile(model, di, args):
    """torch.compile of the backbone and of the Euler step (each mode of --compile-modes), the
    E2E in one CUDA graph; the faster mode's timings, with every mode's E2E median."""
    import torch._dynamo
    # The step function is called with each step's slice of the time conditioning; allow room
    # in case those views make dynamo specialise.
    for knob in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 64)
    best, tried = None, {}
    for mode in args.compile_modes:
        torch._dynamo.reset()
        t0 = time.perf_counter()
        bb_c = torch.compile(model.backbone, mode=mode, dynamic=False)
        step_c = torch.compile(model.step, mode=mode, dynamic=False)
        prep_c = torch.compile(model.head_prepare, mode=mode, dynamic=False)

        def head_c(kp, vp, noise, state):
            return model.head(kp, vp, noise, state, step_fn=step_c, prepare_fn=prep_c)

        try:
            # compile outside the timed region and outside graph capture
            kp, vp, _ = bb_c(di["images"], di["token_ids"])
            head_c(kp, vp, di["noise"], di["state"])
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - t0
            res, acts = run_variant(model, "compile", di, args, bb_c, head_c)
        except Exception as e:
            tried[mode] = dict(error=f"{type(e).__name__}: {e}"[:1000])
            print(f"compile {mode}: failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            continue
        res["mode"] = mode
        res["compile_s"] = round(compile_s, 1)
        tried[mode] = dict(e2e_median_ms=res["e2e_ms"]["median"], compile_s=res["compile_s"])
        print(f"compile {mode}: {json.dumps(res)}", file=sys.stderr, flush=True)
        if best is None or res["e2e_ms"]["median"] < best[0]["e2e_ms"]["median"]:
            best = (res, acts)
    if best is None:
        raise RuntimeError(f"every compile mode failed: {tried}")
    best[0]["modes_tried"] = tried
    return best


def main(args):
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    if args.device == "cuda":
        if not torch.cuda.is_available():
            sys.exit("torch_pi0_cuda: no CUDA device")
        # exact fp32 products in fp32 mode and for the fp32 heads (no TF32)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    model = CudaPi0(args.checkpoint, dtype, args.device)
    print(f"loaded {args.checkpoint} ({'pi05' if model.pi05 else 'pi0'}, {args.dtype}) in {model.load_s:.1f} s",
          file=sys.stderr, flush=True)
    dev_floor = measure_floor(model) if args.floor and model.dev.type == "cuda" else None
    if model.dev.type == "cuda":
        torch.cuda.empty_cache()
    if args.inputs:
        raw = safetensors_io.load(args.inputs)
        missing = [k for k in INPUTS if k not in raw]
        if missing:
            sys.exit(f"{args.inputs}: missing input(s) {missing}")
        settings = [{k: np.array(raw[k]) for k in INPUTS}]
        if args.steps:
            settings[0]["num_steps"] = np.array([args.steps], np.int32)
    else:
        if args.tokens < 1 or args.tokens > model.T:
            print(f"--tokens {args.tokens}: the token budget is {model.T}; using {min(max(args.tokens, 1), model.T)}",
                  file=sys.stderr)
        n_tokens = min(max(args.tokens, 1), model.T)
        settings = [random_inputs(model, v, n_tokens, args.steps or model.num_steps, args.seed) for v in args.views]
    for inputs in settings:
        out_path = args.out
        if out_path and len(settings) > 1:  # one file per view count: NAME.v<views>.EXT
            stem, ext = os.path.splitext(out_path)
            out_path = f"{stem}.v{int(inputs['image_mask'].sum())}{ext}"
        rec = bench_setting(model, inputs, args, dev_floor, out_path)
        line = json.dumps(rec)
        print(line, flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    main(parse_args())
