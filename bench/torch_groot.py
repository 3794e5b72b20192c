#!/usr/bin/env python3
"""PyTorch GR00T N1.6 inference, the yardstick of edgevla's groot family (CPU and CUDA).

Written from ../shared/notes/groot-n16.md the way a fast PyTorch version would be (independent
of tests/reference/groot/groot_numpy.py, whose checkpoint reader, tokenizer and image pipeline
it borrows to build its inputs): weights loaded once (bf16 by default), SigLIP2 q/k/v and Qwen3
q/k/v and gate/up fused, views of one size batched through SigLIP2 (attention inside each image),
flash attention via F.scaled_dot_product_attention (GQA for Qwen3, causal), the DiT's
cross-attention K/V of all 16 cross blocks computed once per chunk in two GEMMs over the text
and the image rows (the boolean masks become row selections), every timestep-only quantity
(temb, the 32 AdaLN scale/shift pairs, the output modulation, the tau half of the action
encoder's W2) computed once per setting, the 4 Euler steps in bf16.

  torch_groot.py --checkpoint DIR [--views 1,2] [--image-size 256x256] [--steps 4]
                 [--repeat N] [--warmup N] [--variants eager,graph,compile]
                 [--compile-modes default] [--dtype bf16|f32] [--device cuda|cpu] [--threads N]
                 [--floor] [--json OUT.json] [--out OUT.safetensors]
  torch_groot.py --checkpoint DIR --check-against-numpy [--embodiments gr1,libero_panda,oxe_droid]
                 [--device cpu|cuda] [--dtype f32|bf16]

Variants, timed end to end (backbone + action head; pixels and token ids already on the device)
and per stage, synchronised, median / p90 / min over --repeat runs after --warmup:
  eager    plain PyTorch calls;
  graph    the same calls captured in CUDA graphs (one for the E2E, one per stage, one for the
           head's 4 steps alone);
  compile  torch.compile of each layer function (SigLIP2 layer, Qwen3 layer, DiT self and cross
           block: one compiled graph reused by every layer of a kind), then the captures above.
--floor measures, in the same run, a bf16 GEMM rate and the copy bandwidth, and reports the device
floor (FLOPs at that rate plus weight bytes at that bandwidth, as bench/torch_pi0_cuda.py), the
4 steps' weight-read floor, and the time of one reduction over every weight byte (bytes only).
CPU mode (the issue's CPU comparison: small config, 2 threads, f32): --device cpu --dtype f32
--threads 2 --variants eager.
--check-against-numpy runs groot_numpy.py (float64) on the same preprocessed inputs and noise
for each embodiment of --embodiments (1-3 views) and compares backbone features, velocities,
normalised and decoded actions (f32: rel-L2 <= 1e-4; bf16: cosine >= 0.99); exit 1 on failure.
Prints one JSON line per setting (and appends them to --json). Torch is imported only after
the arguments are parsed: --help works without it.
"""

import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GROOT_REF = os.path.join(HERE, "..", "tests", "reference", "groot")
VARIANTS = ("eager", "graph", "compile")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True, help="GR00T N1.6 checkpoint folder (make_checkpoint.py layout)")
    ap.add_argument("--eagle-dir", help="backbone folder (default: <checkpoint>/<basename of model_name>)")
    ap.add_argument("--views", default="1,2", help="view counts to run (comma list)")
    ap.add_argument("--image-size", default="256x256", help="HxW of the random camera frames")
    ap.add_argument("--instruction", default="pick the pear from the counter and place it in the plate")
    ap.add_argument("--embodiment", default="gr1", help="embodiment whose category weights the bench uses")
    ap.add_argument("--steps", type=int, help="Euler steps (default: the config's num_inference_timesteps)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--variants", default="eager,graph,compile")
    ap.add_argument("--compile-modes", default="default",
                    help="torch.compile modes for the compile variant (comma list); the faster is reported")
    ap.add_argument("--dtype", choices=("bf16", "f32"), default="bf16")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu (eager only)")
    ap.add_argument("--threads", type=int, help="CPU threads (set before torch loads)")
    ap.add_argument("--floor", action="store_true", help="measure the device floor (CUDA)")
    ap.add_argument("--json", help="append the JSON line(s) to this file")
    ap.add_argument("--profile-ranges", action="store_true",
                    help="after timing, replay each graph variant's stages once inside NVTX ranges "
                         "'torch.<variant>.backbone' and 'torch.<variant>.head_steps' (for ncu --nvtx-include)")
    ap.add_argument("--out", help="write the eager variant's stage outputs of the first setting here")
    ap.add_argument("--check-against-numpy", action="store_true",
                    help="compare with tests/reference/groot/groot_numpy.py instead of timing")
    ap.add_argument("--embodiments", default="gr1,libero_panda,oxe_droid",
                    help="embodiments of --check-against-numpy (their view counts: 1, 2, 3)")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be >= 1 and --warmup >= 0")
    args.variants = [v for v in args.variants.split(",") if v]
    bad = [v for v in args.variants if v not in VARIANTS]
    if bad or not args.variants:
        ap.error(f"--variants: unknown {bad}; choose from {','.join(VARIANTS)}")
    if args.device != "cuda" and not args.check_against_numpy and args.variants != ["eager"]:
        ap.error("graph and compile variants need --device cuda (use --variants eager on the CPU)")
    args.views = [int(v) for v in str(args.views).split(",") if v]
    if not args.views or min(args.views) < 1:
        ap.error("--views must list positive view counts")
    args.image_size = tuple(int(v) for v in args.image_size.lower().split("x"))
    args.compile_modes = [m for m in args.compile_modes.split(",") if m]
    args.embodiments = [e for e in args.embodiments.split(",") if e]
    return args


# Threads must be fixed before torch (and its BLAS) loads; everything below imports torch lazily.
if __name__ == "__main__":
    ARGS = parse_args()
    if ARGS.threads:
        os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = \
            str(ARGS.threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

sys.path.insert(0, GROOT_REF)
sys.path.append(os.path.join(GROOT_REF, ".."))
import groot_numpy as gn  # noqa: E402
import image_ref  # noqa: E402
import safetensors_io  # noqa: E402
from torch_profile import profile_replays  # noqa: E402
from torch_timing import capture, cosine, time_fn  # noqa: E402

torch = F = None  # bound by _import_torch()


def _import_torch():
    global torch, F
    if torch is None:
        import torch as _torch
        import torch.nn.functional as _F
        torch, F = _torch, _F
    return torch


V = gn.V
L = gn.L
M = gn.M
H = gn.H
D = gn.D


# --- numerics (work on torch < 2 too, for CPU checks) --------------------------------------------

def sdpa(q, k, v, causal=False):
    """q [B, h, n, d], k / v [B, hk, m, d] (h a multiple of hk) -> [B, h, n, d]."""
    h, hk = q.shape[1], k.shape[1]
    if hasattr(F, "scaled_dot_product_attention"):
        if h == hk:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        try:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        except TypeError:  # torch < 2.5
            pass
    if h != hk:
        k, v = k.repeat_interleave(h // hk, dim=1), v.repeat_interleave(h // hk, dim=1)
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    logits = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    if causal:
        n, m = q.shape[2], k.shape[2]
        logits = logits.masked_fill(torch.ones(n, m, dtype=torch.bool, device=q.device).triu(m - n + 1), float("-inf"))
    return torch.matmul(torch.softmax(logits.float(), dim=-1).to(q.dtype), v)


def rms_norm(x, w, eps):
    """Qwen3 RMSNorm: fp32 statistics, cast back, then times the weight."""
    xf = x.float()
    y = xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps)
    return w * y.to(x.dtype)


def rope(x, cos, sin):
    """x [n, heads, d]; cos / sin [n, 1, d] rotate-half."""
    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rot * sin


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


# --- layer functions (pure, so that torch.compile can compile one per kind) ----------------------

def vision_layer(x, ln1w, ln1b, wqkv, bqkv, wo, bo, ln2w, ln2b, w1, b1, w2, b2, heads, eps):
    """x [V, T, D]: one SigLIP2 encoder layer, attention inside each image."""
    nv, t, d = x.shape
    y = F.layer_norm(x, (d,), ln1w, ln1b, eps)
    q, k, v = F.linear(y, wqkv, bqkv).view(nv, t, 3, heads, d // heads).permute(2, 0, 3, 1, 4).unbind(0)
    a = sdpa(q, k, v).transpose(1, 2).reshape(nv, t, d)
    x = x + F.linear(a, wo, bo)
    y = F.layer_norm(x, (d,), ln2w, ln2b, eps)
    return x + F.linear(gelu_tanh(F.linear(y, w1, b1)), w2, b2)


def llm_layer(x, cos, sin, in_w, wqkv, qn, kn, wo, post_w, wgu, wd, nq, nkv, hd, eps):
    """x [n, W]: one Qwen3 decoder layer, causal, positions in cos / sin."""
    n = x.shape[0]
    y = rms_norm(x, in_w, eps)
    qkv = F.linear(y, wqkv)
    q = rope(rms_norm(qkv[:, :nq * hd].view(n, nq, hd), qn, eps), cos, sin)
    k = rope(rms_norm(qkv[:, nq * hd:(nq + nkv) * hd].view(n, nkv, hd), kn, eps), cos, sin)
    v = qkv[:, (nq + nkv) * hd:].view(n, nkv, hd)
    o = sdpa(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], causal=True)
    x = x + F.linear(o[0].transpose(0, 1).reshape(n, nq * hd), wo)
    y = rms_norm(x, post_w, eps)
    g, u = F.linear(y, wgu).chunk(2, dim=-1)
    return x + F.linear(F.silu(g) * u, wd)


def dit_self_block(h, scale1p, shift, wqkv, bqkv, wo, bo, w1, b1, w2, b2, heads):
    s, e = h.shape
    y = F.layer_norm(h, (e,), None, None, 1e-5) * scale1p + shift
    q, k, v = F.linear(y, wqkv, bqkv).view(s, 3, heads, e // heads).permute(1, 2, 0, 3).unbind(0)
    a = sdpa(q[None], k[None], v[None])[0].transpose(0, 1).reshape(s, e)
    h = h + F.linear(a, wo, bo)
    y = F.layer_norm(h, (e,), None, None, 1e-5)
    return h + F.linear(gelu_tanh(F.linear(y, w1, b1)), w2, b2)


def dit_cross_block(h, scale1p, shift, wq, bq, k, v, wo, bo, w1, b1, w2, b2, heads):
    """k / v [heads, m, d]: the block's keys / values over its selected backbone rows."""
    s, e = h.shape
    y = F.layer_norm(h, (e,), None, None, 1e-5) * scale1p + shift
    q = F.linear(y, wq, bq).view(s, heads, e // heads).transpose(0, 1)
    a = sdpa(q[None], k[None], v[None])[0].transpose(0, 1).reshape(s, e)
    h = h + F.linear(a, wo, bo)
    y = F.layer_norm(h, (e,), None, None, 1e-5)
    return h + F.linear(gelu_tanh(F.linear(y, w1, b1)), w2, b2)


# --- the model -------------------------------------------------------------------------------------

class TorchGroot:
    def __init__(self, ckpt, dtype, device):
        _import_torch()
        self.ck, self.dt, self.dev = ckpt, dtype, torch.device(device)
        cfg, ev = ckpt.config, ckpt.eagle
        self.vis, self.txt = ev["vision_config"], ev["text_config"]
        self.select_layer = int(cfg["select_layer"])
        dc = cfg["diffusion_model_cfg"]
        self.n_blocks, self.heads = int(dc["num_layers"]), int(dc["num_attention_heads"])
        self.E = self.heads * int(dc["attention_head_dim"])
        self.horizon, self.A = int(cfg["action_horizon"]), int(cfg["max_action_dim"])
        self.buckets = int(cfg["num_timestep_buckets"])
        self.text_every = int(cfg.get("attend_text_every_n_blocks", 2))
        self.default_steps = int(cfg["num_inference_timesteps"])
        self.fns = dict(vision=vision_layer, llm=llm_layer, dit_self=dit_self_block, dit_cross=dit_cross_block)
        t0 = time.perf_counter()
        self._load()
        self._sync()
        self.load_s = time.perf_counter() - t0

    def _sync(self):
        if self.dev.type == "cuda":
            torch.cuda.synchronize()

    def _t(self, key, dtype=None):
        f = self.ck._where[key]
        raw, sdt = f.raw(key), f.dtype(key)
        if sdt == "BF16":
            t = torch.from_numpy(np.array(raw).view(np.int16)).view(torch.bfloat16)
        else:
            t = torch.from_numpy(np.array(raw))
        return t.to(self.dev).to(dtype or self.dt)

    def _load(self):
        t, vc, tc = self._t, self.vis, self.txt
        self.patch = (t(f"{V}.embeddings.patch_embedding.weight"), t(f"{V}.embeddings.patch_embedding.bias"))
        self.pos_table = t(f"{V}.embeddings.position_embedding.weight", torch.float32)
        self.vis_layers = []
        for i in range(vc["num_hidden_layers"]):
            p = f"{V}.encoder.layers.{i}"
            self.vis_layers.append((
                t(f"{p}.layer_norm1.weight"), t(f"{p}.layer_norm1.bias"),
                torch.cat([t(f"{p}.self_attn.{n}_proj.weight") for n in "qkv"]),
                torch.cat([t(f"{p}.self_attn.{n}_proj.bias") for n in "qkv"]),
                t(f"{p}.self_attn.out_proj.weight"), t(f"{p}.self_attn.out_proj.bias"),
                t(f"{p}.layer_norm2.weight"), t(f"{p}.layer_norm2.bias"),
                t(f"{p}.mlp.fc1.weight"), t(f"{p}.mlp.fc1.bias"), t(f"{p}.mlp.fc2.weight"), t(f"{p}.mlp.fc2.bias")))
        self.post_ln = (t(f"{V}.post_layernorm.weight"), t(f"{V}.post_layernorm.bias"))
        self.mlp1 = [t(f"{M}.{i}.{n}") for i in (0, 1, 3) for n in ("weight", "bias")]
        self.embed = t(f"{L}.model.embed_tokens.weight")
        self.llm_layers = []
        for i in range(self.select_layer):
            p = f"{L}.model.layers.{i}"
            self.llm_layers.append((
                t(f"{p}.input_layernorm.weight"),
                torch.cat([t(f"{p}.self_attn.{n}_proj.weight") for n in "qkv"]),
                t(f"{p}.self_attn.q_norm.weight"), t(f"{p}.self_attn.k_norm.weight"),
                t(f"{p}.self_attn.o_proj.weight"), t(f"{p}.post_attention_layernorm.weight"),
                torch.cat([t(f"{p}.mlp.gate_proj.weight"), t(f"{p}.mlp.up_proj.weight")]),
                t(f"{p}.mlp.down_proj.weight")))
        self.final_norm = t(f"{L}.model.norm.weight")
        # action head: category tensors stay whole ([32, in, out]); a setting picks one slot
        self.cat = {n: (t(f"{H}.{n}.W"), t(f"{H}.{n}.b")) for n in (
            "state_encoder.layer1", "state_encoder.layer2", "action_encoder.W1", "action_encoder.W2",
            "action_encoder.W3", "action_decoder.layer1", "action_decoder.layer2")}
        self.vlln = (t(f"{H}.vlln.weight"), t(f"{H}.vlln.bias"))
        self.pos_emb = t(f"{H}.position_embedding.weight")
        f32 = torch.float32
        self.temb_w = [(t(f"{D}.timestep_encoder.timestep_embedder.linear_{k}.weight", f32),
                        t(f"{D}.timestep_encoder.timestep_embedder.linear_{k}.bias", f32)) for k in (1, 2)]
        self.ada_w = [(t(f"{D}.transformer_blocks.{i}.norm1.linear.weight"),
                       t(f"{D}.transformer_blocks.{i}.norm1.linear.bias")) for i in range(self.n_blocks)]
        self.proj_out_1 = (t(f"{D}.proj_out_1.weight", f32), t(f"{D}.proj_out_1.bias", f32))
        self.proj_out_2 = (t(f"{D}.proj_out_2.weight"), t(f"{D}.proj_out_2.bias"))
        self.blocks = []
        kv_w = {"text": [], "image": []}
        for i in range(self.n_blocks):
            p = f"{D}.transformer_blocks.{i}"
            a = f"{p}.attn1"
            common = (t(f"{a}.to_out.0.weight"), t(f"{a}.to_out.0.bias"),
                      t(f"{p}.ff.net.0.proj.weight"), t(f"{p}.ff.net.0.proj.bias"),
                      t(f"{p}.ff.net.2.weight"), t(f"{p}.ff.net.2.bias"))
            if i % 2 == 1:
                self.blocks.append(("self", torch.cat([t(f"{a}.to_{n}.weight") for n in "qkv"]),
                                    torch.cat([t(f"{a}.to_{n}.bias") for n in "qkv"])) + common)
            else:
                kind = "text" if i % (2 * self.text_every) == 0 else "image"
                kv_w[kind].append((t(f"{a}.to_k.weight"), t(f"{a}.to_k.bias"), t(f"{a}.to_v.weight"), t(f"{a}.to_v.bias")))
                self.blocks.append(("cross", kind, len(kv_w[kind]) - 1, t(f"{a}.to_q.weight"), t(f"{a}.to_q.bias"))
                                   + common)
        # one GEMM per kind gives every cross block's K and V: rows [blk0 K; blk0 V; blk1 K; ...]
        self.kv_w = {k: (torch.cat([w for kw, kb, vw, vb in lst for w in (kw, vw)]),
                         torch.cat([b for kw, kb, vw, vb in lst for b in (kb, vb)])) for k, lst in kv_w.items()}
        self.n_cross = {k: len(lst) for k, lst in kv_w.items()}

    # --- per-setting constants -----------------------------------------------------------------------

    def prepare(self, grid, n_views, input_ids, embodiment_id, steps):
        """Everything that depends only on the setting: position embeddings of the grid, RoPE
        tables, the text / image rows, the embodiment's weight slots, the step tables."""
        f32 = torch.float32
        gh, gw = grid
        side = int(round(self.vis["num_patches"] ** 0.5))
        Dv = self.vis["hidden_size"]
        table = self.pos_table.reshape(side, side, Dv).permute(2, 0, 1)[None]
        pos = F.interpolate(table, size=(gh, gw), mode="bilinear", align_corners=False, antialias=True)
        self.vis_pos = pos[0].reshape(Dv, gh * gw).t().contiguous().to(self.dt)
        self.grid, self.n_views, self.steps = grid, n_views, steps
        ids = np.asarray(input_ids, np.int64)
        n = ids.size
        hd = self.txt["head_dim"]
        theta = float(self.txt.get("rope_theta", 1e6))
        inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).to(f32) / hd))
        ang = torch.arange(n, dtype=f32)[:, None] * inv[None, :]
        ang = torch.cat([ang, ang], dim=-1)[:, None, :]
        self.cos, self.sin = ang.cos().to(self.dev, self.dt), ang.sin().to(self.dev, self.dt)
        img = ids == self.ck.image_token_id
        self.n_tokens = n
        self.img_rows = torch.from_numpy(np.flatnonzero(img)).to(self.dev)
        self.txt_rows = torch.from_numpy(np.flatnonzero(~img)).to(self.dev)
        e = int(embodiment_id)
        self.slot = {k: (w[e].contiguous(), b[e].contiguous()) for k, (w, b) in self.cat.items()}
        w2, b2 = self.slot["action_encoder.W2"]
        self.w2_act = w2[:self.E].contiguous()
        # the step tables: temb, AdaLN (1 + scale, shift) of every block, the output modulation,
        # the tau half of W2 (+ its bias), in fp32 then cast
        self.ada, self.out_mod, self.tau_part = [], [], []
        w3, b3 = self.slot["action_encoder.W3"]
        self.w3_bias_pos = (b3[None, :] + self.pos_emb[:self.horizon]).contiguous()
        for k in range(steps):
            tb = int((k / float(steps)) * self.buckets)
            s = torch.from_numpy(gn.timestep_sinusoid(tb)).to(self.dev)
            temb = F.linear(F.silu(F.linear(s, *self.temb_w[0])), *self.temb_w[1])
            st = F.silu(temb)
            ada = torch.stack([F.linear(st, w.float(), b.float()) for w, b in self.ada_w])  # [blocks, 2E]
            self.ada.append(((1 + ada[:, :self.E]).to(self.dt).contiguous(), ada[:, self.E:].to(self.dt).contiguous()))
            om = F.linear(st, *self.proj_out_1)
            self.out_mod.append((om[:self.E].to(self.dt), (1 + om[self.E:]).to(self.dt)))
            tau = torch.from_numpy(gn.action_tau(tb, self.E)).to(self.dev)
            self.tau_part.append((tau.to(self.dt) @ w2[self.E:] + b2).contiguous())
        self.dt_step = 1.0 / steps

    # --- stages ------------------------------------------------------------------------------------

    def vision(self, pixels):
        """pixels [V, 3, Hp, Wp] -> image embeddings [V * tokens, W] (SigLIP2, unshuffle, mlp1)."""
        vc = self.vis
        P, Dv, heads, eps = vc["patch_size"], vc["hidden_size"], vc["num_attention_heads"], vc.get("layer_norm_eps", 1e-6)
        nv, c, hp, wp = pixels.shape
        gh, gw = hp // P, wp // P
        patches = pixels.reshape(nv, c, gh, P, gw, P).permute(0, 2, 4, 3, 5, 1).reshape(nv, gh * gw, P * P * c)
        x = F.linear(patches.to(self.dt), *self.patch) + self.vis_pos
        fn = self.fns["vision"]
        for lw in self.vis_layers:
            x = fn(x, *lw, heads, eps)
        x = F.layer_norm(x, (Dv,), *self.post_ln, eps)
        x = x.reshape(nv, gh // 2, 2, gw // 2, 2, Dv).permute(0, 1, 3, 5, 2, 4).reshape(nv * (gh // 2) * (gw // 2), 4 * Dv)
        ln_w, ln_b, w1, b1, w2, b2 = self.mlp1
        x = F.layer_norm(x, (4 * Dv,), ln_w, ln_b, 1e-5)
        return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)

    def backbone(self, pixels, ids):
        """-> backbone features [n, W] (Qwen3 layers 0..select_layer-1 + final norm)."""
        img = self.vision(pixels)
        x = self.embed.index_select(0, ids).index_copy(0, self.img_rows, img)
        tc = self.txt
        nq, nkv, hd, eps = tc["num_attention_heads"], tc["num_key_value_heads"], tc["head_dim"], tc.get("rms_norm_eps", 1e-6)
        fn = self.fns["llm"]
        for lw in self.llm_layers:
            x = fn(x, self.cos, self.sin, *lw, nq, nkv, hd, eps)
        return rms_norm(x, self.final_norm, eps)

    def head_prepare(self, feats, state):
        """vlln, the cross blocks' K/V over the text and image rows, the state token."""
        W = feats.shape[-1]
        vl = F.layer_norm(feats, (W,), *self.vlln, 1e-5)
        kv = {}
        hd = self.E // self.heads
        for kind, rows in (("text", self.txt_rows), ("image", self.img_rows)):
            out = F.linear(vl.index_select(0, rows), *self.kv_w[kind])  # [m, n_cross * 2E]
            m = out.shape[0]
            kv[kind] = out.view(m, self.n_cross[kind], 2, self.heads, hd).permute(1, 2, 3, 0, 4)  # [blk, 2, h, m, d]
        w1, b1 = self.slot["state_encoder.layer1"]
        w2, b2 = self.slot["state_encoder.layer2"]
        st = F.linear(torch.relu(state[None].to(self.dt) @ w1 + b1), w2.t(), b2)
        return kv["text"], kv["image"], st

    def step(self, a, kv_text, kv_image, state_tok, scale1p, shift, out_shift, out_scale1p, tau_part):
        """One Euler step -> (a + dt * v, v). The step's tables come in as arguments."""
        w1, b1 = self.slot["action_encoder.W1"]
        w3, _ = self.slot["action_encoder.W3"]
        x = a @ w1 + b1
        x = F.silu(x @ self.w2_act + tau_part)
        x = x @ w3 + self.w3_bias_pos
        h = torch.cat([state_tok, x])
        for i, blk in enumerate(self.blocks):
            if blk[0] == "self":
                h = self.fns["dit_self"](h, scale1p[i], shift[i], *blk[1:], self.heads)
            else:
                kv = (kv_text if blk[1] == "text" else kv_image)[blk[2]]
                h = self.fns["dit_cross"](h, scale1p[i], shift[i], blk[3], blk[4], kv[0], kv[1], *blk[5:], self.heads)
        y = F.layer_norm(h, (self.E,), None, None, 1e-6) * out_scale1p + out_shift
        y = F.linear(y, *self.proj_out_2)
        d1, e1 = self.slot["action_decoder.layer1"]
        d2, e2 = self.slot["action_decoder.layer2"]
        v = (torch.relu(y @ d1 + e1) @ d2 + e2)[-a.shape[0]:]
        return a + self.dt_step * v, v

    def head_steps(self, noise, kv_text, kv_image, state_tok):
        a, vs = noise.to(self.dt), []
        for k in range(self.steps):
            a, v = self.step(a, kv_text, kv_image, state_tok, self.ada[k][0], self.ada[k][1], self.out_mod[k][0],
                             self.out_mod[k][1], self.tau_part[k])
            vs.append(v)
        return a, torch.stack(vs)

    def head(self, feats, state, noise):
        kv_t, kv_i, st = self.head_prepare(feats, state)
        return self.head_steps(noise, kv_t, kv_i, st)

    def e2e(self, pixels, ids, state, noise):
        return self.head(self.backbone(pixels, ids), state, noise)

    # --- bytes and FLOPs one inference reads / does ------------------------------------------------

    def weight_bytes(self):
        def nb(*ts):
            return sum(t.numel() * t.element_size() for t in ts)
        n = self.n_tokens
        bb = nb(*self.patch) + sum(nb(*lw) for lw in self.vis_layers) + nb(*self.post_ln) + nb(*self.mlp1) \
            + sum(nb(*lw) for lw in self.llm_layers) + nb(self.final_norm) + n * self.embed.shape[1] * self.embed.element_size()
        once = nb(*self.vlln) + nb(*self.kv_w["text"]) + nb(*self.kv_w["image"]) \
            + nb(*self.slot["state_encoder.layer1"], *self.slot["state_encoder.layer2"])
        per_step = nb(*self.slot["action_encoder.W1"], self.w2_act, self.slot["action_encoder.W3"][0],
                      *self.slot["action_decoder.layer1"], *self.slot["action_decoder.layer2"], *self.proj_out_2)
        for blk in self.blocks:
            per_step += nb(*[x for x in blk if hasattr(x, "numel")])
        return dict(backbone=bb, head_once=once, head_per_step=per_step,
                    total=bb + once + self.steps * per_step, head_steps=self.steps * per_step)

    def flops(self):
        """2 per multiply-add of every matmul (attention products included)."""
        vc, tc, E = self.vis, self.txt, self.E
        Dv, Mv, T = vc["hidden_size"], vc["intermediate_size"], self.grid[0] * self.grid[1]
        nv = self.n_views
        vis = nv * (2 * T * 588 * Dv + vc["num_hidden_layers"] * (2 * T * (4 * Dv * Dv + 2 * Dv * Mv) + 4 * T * T * Dv))
        W = tc["hidden_size"]
        tok = nv * T // 4
        vis += 2 * tok * (4 * Dv * W + W * W)
        n, hd = self.n_tokens, tc["head_dim"]
        nq, nkv, Mt = tc["num_attention_heads"], tc["num_key_value_heads"], tc["intermediate_size"]
        llm = self.select_layer * (2 * n * W * (2 * nq + 2 * nkv) * hd + 6 * n * W * Mt + 4 * n * n * nq * hd // 2)
        S = self.horizon + 1
        m_t, m_i = len(self.txt_rows), len(self.img_rows)
        head = 2 * W * 2 * E * (m_t * self.n_cross["text"] + m_i * self.n_cross["image"])
        per_step = 2 * self.horizon * (self.A * E + E * E + E * E)
        for blk in self.blocks:
            per_step += 2 * S * (E * E * (3 if blk[0] == "self" else 1) + E * E + 8 * E * E)
            m = S if blk[0] == "self" else (len(self.txt_rows) if blk[1] == "text" else len(self.img_rows))
            per_step += 4 * S * m * E
        hs = self.proj_out_2[0].shape[0]
        per_step += 2 * S * (E * hs + hs * hs + hs * self.A)
        return dict(backbone=vis + llm, head=head + self.steps * per_step)


# --- inputs -------------------------------------------------------------------------------------------

def bench_inputs(model, ckpt, n_views, size, instruction, seed):
    """Random frames through the reference image pipeline, the prompt through the checkpoint's
    tokenizer, a normalised state vector and the noise; all views the same size."""
    frames = gn.random_frames(n_views, size, seed)
    pixels, counts = [], []
    p = ckpt.processor
    for f in frames:
        img, n = image_ref.preprocess_frame(f, p.get("shortest_image_edge", 256), p.get("crop_fraction", 0.95),
                                            gn.letterbox_choice(ckpt, "auto"))
        pixels.append(image_ref.normalize_pixels(img))
        counts.append(n)
    ids = ckpt.tokenizer.encode(gn.prompt_text(gn.formalize_language(instruction), counts))
    rng = np.random.default_rng([seed, 3])
    state = np.zeros(int(ckpt.config["max_state_dim"]), np.float32)
    state[:40] = rng.uniform(-1, 1, 40)
    return dict(pixels=np.stack(pixels), ids=np.array(ids, np.int64), state=state, noise=gn.make_noise(ckpt, seed),
                grid=(pixels[0].shape[1] // 14, pixels[0].shape[2] // 14))


def to_device(model, inp):
    d = model.dev
    return dict(pixels=torch.from_numpy(inp["pixels"]).to(d), ids=torch.from_numpy(inp["ids"]).to(d),
                state=torch.from_numpy(inp["state"]).to(d), noise=torch.from_numpy(inp["noise"]).to(d))


# --- timing -----------------------------------------------------------------------------------------

def sync(model):
    model._sync()


def timed(model, fn, args):
    """Milliseconds per fn(), as time_fn with the bench's repeat and warm-up counts."""
    return time_fn(lambda: sync(model), fn, args.repeat, args.warmup)


def run_variant(model, name, di, args, profile_as=None):
    """E2E and per-stage timings of one variant -> (timings, actions)."""
    px, ids, state, noise = di["pixels"], di["ids"], di["state"], di["noise"]
    feats = model.backbone(px, ids)
    prep = model.head_prepare(feats, state)
    res = {}
    if name == "eager" or model.dev.type != "cuda":
        res["e2e_ms"] = timed(model, lambda: model.e2e(px, ids, state, noise), args)
        res["backbone_ms"] = timed(model, lambda: model.backbone(px, ids), args)
        res["head_ms"] = timed(model, lambda: model.head(feats, state, noise), args)
        res["head_steps_ms"] = timed(model, lambda: model.head_steps(noise, *prep), args)
        actions = model.e2e(px, ids, state, noise)[0]
    else:
        g_e2e, out = capture(torch, model.e2e, (px, ids, state, noise))
        g_bb, bb_out = capture(torch, model.backbone, (px, ids))
        g_head, _ = capture(torch, model.head, (bb_out, state, noise))
        g_steps, _ = capture(torch, model.head_steps, (noise,) + tuple(prep))
        res["e2e_ms"] = timed(model, g_e2e.replay, args)
        res["backbone_ms"] = timed(model, g_bb.replay, args)
        res["head_ms"] = timed(model, g_head.replay, args)
        res["head_steps_ms"] = timed(model, g_steps.replay, args)
        if getattr(args, "profile_ranges", False):
            profile_replays(torch, lambda: sync(model), profile_as or name,
                            [("backbone", g_bb), ("head", g_head), ("head_steps", g_steps)])
        g_e2e.replay()
        sync(model)
        actions = out[0].clone()
        del g_e2e, g_bb, g_head, g_steps
    return res, actions


def run_compile(model, di, args):
    """torch.compile of each layer function (regional), then the CUDA-graph captures; the
    faster --compile-modes entry is reported, with every mode's E2E median."""
    import torch._dynamo
    for knob in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 64)
    plain = dict(model.fns)
    best, tried = None, {}
    try:
        for mode in args.compile_modes:
            torch._dynamo.reset()
            model.fns = {k: torch.compile(fn, mode=mode, dynamic=False) for k, fn in plain.items()}
            t0 = time.perf_counter()
            try:
                model.e2e(di["pixels"], di["ids"], di["state"], di["noise"])
                sync(model)
                compile_s = time.perf_counter() - t0
                res, acts = run_variant(model, "graph", di, args, profile_as="compile")
            except Exception as e:  # report, try the next mode
                tried[mode] = dict(error=f"{type(e).__name__}: {e}"[:1000])
                print(f"compile {mode}: failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                continue
            res["mode"], res["compile_s"] = mode, round(compile_s, 1)
            tried[mode] = dict(e2e_median_ms=res["e2e_ms"]["median"], compile_s=res["compile_s"])
            print(f"compile {mode}: {json.dumps(res)}", file=sys.stderr, flush=True)
            if best is None or res["e2e_ms"]["median"] < best[0]["e2e_ms"]["median"]:
                best = (res, acts)
    finally:
        model.fns = plain
    if best is None:
        raise RuntimeError(f"every compile mode failed: {tried}")
    best[0]["modes_tried"] = tried
    return best


# --- floor --------------------------------------------------------------------------------------------

def measure_floor(model, wb, fl):
    """Time to read `wb['total']` bytes once (a sum over a buffer of that size), the copy
    bandwidth, and a bf16 GEMM rate; the E2E's and the 4 steps' weight-read floors."""
    dev = model.dev
    torch.cuda.empty_cache()

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

    nbytes = int(wb["total"])
    buf = torch.empty(nbytes // 2, dtype=torch.bfloat16, device=dev).uniform_(-1, 1)
    acc = torch.empty((), dtype=torch.float32, device=dev)
    t_read = best(lambda: torch.sum(buf, 0, dtype=torch.float32, out=acc))
    del buf
    cb = 4 << 30
    src = torch.empty(cb, dtype=torch.uint8, device=dev).random_(0, 255)
    dst = torch.empty_like(src)
    t_copy = best(lambda: dst.copy_(src), reps=5)
    del src, dst
    n = 8192
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    c = torch.empty(n, n, device=dev, dtype=torch.bfloat16)
    t_mm = best(lambda: torch.matmul(a, b, out=c))
    del a, b, c
    read_bw = nbytes / t_read
    copy_bw = 2 * cb / t_copy
    rate = 2 * n ** 3 / t_mm
    # The device floor as issues 9 and 11 define it (and bench/torch_pi0_cuda.py computes it):
    # every FLOP at the measured GEMM rate plus every weight byte at the measured copy bandwidth
    # (a copy's reads and writes counted). The time of one reduction over all the weight bytes is
    # kept beside it (read_all_weight_bytes_ms): a bytes-only bound, lower than the floor.
    compute_s = sum(fl.values()) / rate
    return dict(weight_bytes=wb, read_all_weight_bytes_ms=round(1e3 * t_read, 3),
                read_gbps=round(read_bw / 1e9, 1), copy_gbps_read_plus_write=round(copy_bw / 1e9, 1),
                gemm_tflops=round(rate / 1e12, 1), flops=fl,
                floor_ms=round(1e3 * (compute_s + wb["total"] / copy_bw), 3),
                weight_read_floor_ms=round(1e3 * wb["total"] / copy_bw, 3),
                head_steps_floor_ms=round(1e3 * wb["head_steps"] / copy_bw, 3),
                head_steps_read_only_ms=round(1e3 * wb["head_steps"] / read_bw, 3),
                compute_floor_ms=round(1e3 * compute_s, 3))


# --- main ---------------------------------------------------------------------------------------------

def bench(args):
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    if args.device == "cuda":
        if not torch.cuda.is_available():
            sys.exit("torch_groot: no CUDA device")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if args.threads:
        torch.set_num_threads(args.threads)
    ckpt = gn.Checkpoint(args.checkpoint, args.eagle_dir)
    model = TorchGroot(ckpt, dtype, args.device)
    print(f"loaded {args.checkpoint} ({args.dtype}) in {model.load_s:.1f} s", file=sys.stderr, flush=True)
    emb = int(ckpt.embodiment_ids.get(args.embodiment, 0))
    steps = args.steps or model.default_steps
    records = []
    for n_views in args.views:
        inp = bench_inputs(model, ckpt, n_views, args.image_size, args.instruction, args.seed)
        model.prepare(inp["grid"], n_views, inp["ids"], emb, steps)
        di = to_device(model, inp)
        rec = dict(impl="torch_" + model.dev.type, torch=torch.__version__,
                   device=torch.cuda.get_device_name() if model.dev.type == "cuda" else model.dev.type,
                   threads=torch.get_num_threads() if model.dev.type == "cpu" else None,
                   config=ckpt.config.get("edgevla_generated", {}).get("config"), dtype=args.dtype, views=n_views,
                   image_size=list(args.image_size), tokens=int(inp["ids"].size),
                   image_tokens=int(len(model.img_rows)), horizon=model.horizon, steps=steps, batch=1,
                   embodiment=args.embodiment, repeat=args.repeat, warmup=args.warmup,
                   load_s=round(model.load_s, 1), variants={})
        with torch.inference_mode():
            ref_actions, vel = model.e2e(di["pixels"], di["ids"], di["state"], di["noise"])
            ref_actions = ref_actions.float().clone()
            if args.out and n_views == args.views[0]:
                feats = model.backbone(di["pixels"], di["ids"])
                safetensors_io.save(args.out, dict(input_ids=inp["ids"], noise=inp["noise"], state=inp["state"],
                                                   backbone_features=feats.float().cpu().numpy(),
                                                   velocity=vel.float().cpu().numpy(),
                                                   actions_normalized=ref_actions.cpu().numpy()),
                                    metadata={"producer": "bench/torch_groot.py", "dtype": args.dtype})
            for name in args.variants:
                t0 = time.perf_counter()
                try:
                    if name == "compile":
                        res, acts = run_compile(model, di, args)
                    else:
                        res, acts = run_variant(model, name, di, args)
                except Exception as e:  # report, go on with the other variants
                    rec["variants"][name] = dict(error=f"{type(e).__name__}: {e}"[:2000])
                    print(f"{name}: failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                    continue
                res["setup_s"] = round(time.perf_counter() - t0, 1)
                res["actions_cos_vs_eager"] = round(cosine(acts.float(), ref_actions), 6)
                rec["variants"][name] = res
                print(f"{name}: {json.dumps(res)}", file=sys.stderr, flush=True)
            if args.floor and model.dev.type == "cuda":
                rec["floor"] = measure_floor(model, model.weight_bytes(), model.flops())
            else:
                rec["weight_bytes"] = model.weight_bytes()
        line = json.dumps(rec)
        print(line, flush=True)
        records.append(rec)
        if args.json:
            with open(args.json, "a") as f:
                f.write(line + "\n")
    return records


def check_against_numpy(args):
    """The same inputs and noise through groot_numpy (float64) and this module; stage by stage."""
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    ckpt = gn.Checkpoint(args.checkpoint, args.eagle_dir)
    model = TorchGroot(ckpt, dtype, args.device)
    ref_model = gn.Model(ckpt, np.float64)
    failures, report = 0, []
    for tag in args.embodiments:
        n_views = len(gn.modality(ckpt, tag)["video"]["modality_keys"])
        frames = gn.random_frames(n_views, (480, 640), args.seed)
        state = gn.random_state(ckpt, tag, args.seed)
        noise = gn.make_noise(ckpt, args.seed)
        ref = gn.infer(ckpt, frames, args.instruction, tag, state, noise, np.float64, model=ref_model)
        px = [np.asarray(p) for p in ref["pixel_values"]]
        if len({p.shape for p in px}) != 1:
            raise SystemExit(f"{tag}: views of different sizes; the torch module batches one size")
        grid = (px[0].shape[1] // 14, px[0].shape[2] // 14)
        model.prepare(grid, n_views, ref["input_ids"], ref["embodiment_id"], model.default_steps)
        with torch.inference_mode():
            di = to_device(model, dict(pixels=np.stack(px), ids=ref["input_ids"],
                                       state=np.asarray(ref["state"], np.float32), noise=noise))
            feats = model.backbone(di["pixels"], di["ids"])
            actions, vel = model.head(feats, di["state"], di["noise"])
        got = dict(backbone_features=feats.float().cpu().numpy(), velocity=vel.float().cpu().numpy(),
                   actions_normalized=actions.float().cpu().numpy())
        decoded = gn.decode_actions(ckpt, tag, got["actions_normalized"].astype(np.float64), state)
        got["actions"] = np.concatenate([decoded[g].ravel() for g in ref["actions"]])
        want = dict(backbone_features=ref["backbone_features"], velocity=ref["velocity"],
                    actions_normalized=ref["actions_normalized"],
                    actions=np.concatenate([ref["actions"][g].ravel() for g in ref["actions"]]))
        row = dict(embodiment=tag, views=n_views, tokens=int(ref["input_ids"].size), stages={})
        for k in want:
            a, b = np.asarray(got[k], np.float64), np.asarray(want[k], np.float64)
            rel = float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))
            cos = float((a.ravel() @ b.ravel()) / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-300))
            ok = rel <= 1e-4 if args.dtype == "f32" else cos >= 0.99
            failures += 0 if ok else 1
            row["stages"][k] = dict(rel_l2=float(f"{rel:.3e}"), cosine=round(cos, 6), ok=ok)
        report.append(row)
        print(json.dumps(row), flush=True)
    summary = dict(check="torch_groot vs groot_numpy (float64)", device=args.device, dtype=args.dtype,
                   torch=torch.__version__, tolerance="rel-L2 <= 1e-4" if args.dtype == "f32" else "cosine >= 0.99",
                   failures=failures, passed=failures == 0)
    print(json.dumps(summary), flush=True)
    if args.json:
        with open(args.json, "a") as f:
            for row in report + [summary]:
                f.write(json.dumps(row) + "\n")
    return 1 if failures else 0


def main(args):
    _import_torch()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.check_against_numpy:
        return check_against_numpy(args)
    bench(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGS))
