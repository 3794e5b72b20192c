#!/usr/bin/python3
"""PyTorch CPU baseline of pi0 / pi0.5 inference (fp32), for timing against edgevla.

An implementation independent of tests/reference/pi0_numpy.py (it shares only the
safetensors reader), written from docs/model.md the way one would write a fast eager
PyTorch version: weights loaded once as float32 with the q/k/v and gate/up projections fused,
masked cameras and padding tokens skipped, the prefix KV cache computed once into a buffer
that the suffix appends to in place, the suffix recomputed each Euler step.

  torch_pi0.py --checkpoint DIR --inputs IO.safetensors [--out OUT.safetensors]
               [--threads N] [--repeat N] [--warmup N]

Prints one JSON line with the median wall time of each stage in ms. --out writes the
inputs and the outputs section of docs/checkpoint.md §5, for tests/reference/compare.py.
"""

import argparse
import os
import sys


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--out")
    ap.add_argument("--threads", type=int, help="threads for BLAS and for torch's own kernels")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be >= 1 and --warmup >= 0")
    return args


if __name__ == "__main__":
    ARGS = parse_args()
    # Debian's torch does its GEMMs in OpenBLAS (own pthread pool) and its other kernels in
    # OpenMP. Both pools are sized and told not to spin before the libraries load: with
    # spinning OpenMP workers the two pools fight for the cores (measured 3x slower on 2 cores).
    if ARGS.threads:
        os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import safetensors_io  # noqa: E402

MASK_VALUE = -2.3819763e38  # openpi's finite mask bias (model.md §11.3)
EPS = 1e-6
SO400M = dict(image_size=224, patch_size=14, width=1152, depth=27, mlp_dim=4304, num_heads=16)
GEMMA = {
    "gemma_2b": dict(width=2048, depth=18, mlp_dim=16384, num_heads=8, num_kv_heads=1, head_dim=256),
    "gemma_300m": dict(width=1024, depth=18, mlp_dim=4096, num_heads=8, num_kv_heads=1, head_dim=256),
}
GEMMA["gemma_2b_lora"], GEMMA["gemma_300m_lora"] = GEMMA["gemma_2b"], GEMMA["gemma_300m"]

V = "paligemma_with_expert.paligemma.model.vision_tower.vision_model"
G = "paligemma_with_expert.paligemma.model.language_model"
X = "paligemma_with_expert.gemma_expert.model"
PROJ = "paligemma_with_expert.paligemma.model.multi_modal_projector.linear"
EMBED_KEYS = ("paligemma_with_expert.paligemma.lm_head.weight", G + ".embed_tokens.weight")


def rms_norm(x, scale):
    """Gemma RMSNorm with the (1 + w) factor already folded into `scale`."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * scale


def rope_tables(pos, head_dim):
    """cos / sin of shape [n, 1, head_dim] for rotate-half RoPE (both halves share a frequency)."""
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angle = pos.to(torch.float32)[:, None] * inv_freq[None, :]
    angle = torch.cat([angle, angle], dim=-1)[:, None, :]
    return angle.cos(), angle.sin()


def apply_rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def time_embedding(t, width):
    """model.md §7.1, in float64 then rounded to float32."""
    fraction = torch.linspace(0.0, 1.0, width // 2, dtype=torch.float64)
    period = 4e-3 * (4.0 / 4e-3) ** fraction
    arg = (1.0 / period) * (2 * math.pi) * float(t)
    return torch.cat([arg.sin(), arg.cos()]).to(torch.float32)


class Gqa:
    """Attention of n queries over m keys with K kv heads shared by N/K query heads each.
    Grouping the query heads of a kv head into the rows of one matrix makes each group a
    single GEMM instead of N small ones."""

    def __init__(self, num_heads, num_kv_heads, head_dim):
        self.N, self.K, self.h = num_heads, num_kv_heads, head_dim
        self.rep = num_heads // num_kv_heads
        self.scale = head_dim ** -0.5

    def __call__(self, q, k, v, bias=None):
        """q [n, N, h]; k, v [K, m, h]; bias [rep·n, m] or None -> [n, N·h]."""
        n = q.shape[0]
        qg = q.view(n, self.K, self.rep, self.h).permute(1, 2, 0, 3).reshape(self.K, self.rep * n, self.h)
        if bias is None:
            logits = torch.bmm(qg, k.transpose(1, 2)).mul_(self.scale)
        else:
            logits = torch.baddbmm(bias.expand(self.K, -1, -1), qg, k.transpose(1, 2), alpha=self.scale)
        o = torch.bmm(torch.softmax(logits, dim=-1), v)
        return o.view(self.K, self.rep, n, self.h).permute(2, 0, 1, 3).reshape(n, self.N * self.h)


class TorchPi0:
    def __init__(self, ckpt_dir):
        with open(os.path.join(ckpt_dir, "config.json")) as f:
            cfg = json.load(f)
        self.st = safetensors_io.SafetensorsFile(os.path.join(ckpt_dir, "model.safetensors"))
        self.pi05 = "time_mlp_in.weight" in self.st
        self.vis = {**SO400M, **cfg.get("vision", {})}
        self.vlm = {**GEMMA.get(cfg.get("paligemma_variant", "gemma_2b"), {}), **cfg.get("vlm", {})}
        self.exp = {**GEMMA.get(cfg.get("action_expert_variant", "gemma_300m"), {}), **cfg.get("expert", {})}
        self.H = cfg["action_horizon"]
        self.grid = self.vis["image_size"] // self.vis["patch_size"]
        self.gqa = Gqa(self.vlm["num_heads"], self.vlm["num_kv_heads"], self.vlm["head_dim"])
        self.embed_key = next((k for k in EMBED_KEYS if k in self.st), None)
        if self.embed_key is None:
            raise ValueError(f"{self.st.path}: no token embedding table ({' or '.join(EMBED_KEYS)})")
        self._load()

    def _t(self, name):
        return torch.from_numpy(np.array(self.st.get(name), dtype=np.float32))

    def _load(self):
        t = self._t
        self.patch_w = t(f"{V}.embeddings.patch_embedding.weight")
        self.patch_b = t(f"{V}.embeddings.patch_embedding.bias")
        self.pos_emb = t(f"{V}.embeddings.position_embedding.weight")
        self.vis_layers = []
        for i in range(self.vis["depth"]):
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
        self.vlm_layers = [self._gemma_layer(f"{G}.layers.{i}", True) for i in range(self.vlm["depth"])]
        self.exp_layers = [self._gemma_layer(f"{X}.layers.{i}", not self.pi05) for i in range(self.exp["depth"])]
        E = self.exp["width"]
        if self.pi05:
            # Every adaRMSNorm of the expert (2 per layer + final) conditions on the same vector:
            # one stacked matmul per step yields all their scale/shift/gate.
            norms = [f"{X}.layers.{i}.{n}" for i in range(self.exp["depth"])
                     for n in ("input_layernorm", "post_attention_layernorm")] + [f"{X}.norm"]
            self.ada_w = torch.cat([t(f"{n}.dense.weight") for n in norms])
            self.ada_b = torch.cat([t(f"{n}.dense.bias") for n in norms])
            self.time_in = (t("time_mlp_in.weight"), t("time_mlp_in.bias"))
            self.time_out = (t("time_mlp_out.weight"), t("time_mlp_out.bias"))
            self.final_scale = None
        else:
            self.final_scale = 1 + t(f"{X}.norm.weight")
            self.state_proj = (t("state_proj.weight"), t("state_proj.bias"))
            # concat(a, temb) · Wᵀ = a · W[:, :E]ᵀ + temb · W[:, E:]ᵀ; the time half is one
            # vector per step, so it is computed once instead of once per action token.
            w_in = t("action_time_mlp_in.weight")
            self.at_in_act, self.at_in_time = w_in[:, :E].contiguous(), w_in[:, E:].contiguous()
            self.at_in_b = t("action_time_mlp_in.bias")
            self.at_out = (t("action_time_mlp_out.weight"), t("action_time_mlp_out.bias"))
        self.act_in = (t("action_in_proj.weight"), t("action_in_proj.bias"))
        self.act_out = (t("action_out_proj.weight"), t("action_out_proj.bias"))

    def _gemma_layer(self, p, plain_norms):
        t = self._t
        layer = dict(
            qkv=torch.cat([t(f"{p}.self_attn.{n}_proj.weight") for n in "qkv"]),
            o=t(f"{p}.self_attn.o_proj.weight"),
            gate_up=torch.cat([t(f"{p}.mlp.gate_proj.weight"), t(f"{p}.mlp.up_proj.weight")]),
            down=t(f"{p}.mlp.down_proj.weight"))
        if plain_norms:
            layer["in_scale"] = 1 + t(f"{p}.input_layernorm.weight")
            layer["post_scale"] = 1 + t(f"{p}.post_attention_layernorm.weight")
        return layer

    # --- stages -----------------------------------------------------------------------------

    def vision(self, images):
        """images [n, 3, S, S] -> [n, tokens, vlm width] (SigLIP + projector, model.md §4)."""
        Dv, heads = self.vis["width"], self.vis["num_heads"]
        hd = Dv // heads
        e = F.conv2d(images, self.patch_w, self.patch_b, stride=self.vis["patch_size"])
        e = e.flatten(2).transpose(1, 2) + self.pos_emb  # [n, tokens, Dv]
        n, T, _ = e.shape
        for L in self.vis_layers:
            y = F.layer_norm(e, (Dv,), *L["ln1"], eps=EPS)
            q, k, v = F.linear(y, *L["qkv"]).view(n, T, 3, heads, hd).permute(2, 0, 3, 1, 4).unbind(0)
            a = torch.softmax(torch.matmul(q, k.transpose(-1, -2)).mul_(hd ** -0.5), dim=-1) @ v
            e = e + F.linear(a.transpose(1, 2).reshape(n, T, Dv), *L["out"])
            y = F.layer_norm(e, (Dv,), *L["ln2"], eps=EPS)
            e = e + F.linear(F.gelu(F.linear(y, *L["fc1"]), approximate="tanh"), *L["fc2"])
        return F.linear(F.layer_norm(e, (Dv,), *self.post_ln, eps=EPS), *self.proj)

    def _qkv(self, y, layer, cos, sin):
        N, K, h = self.vlm["num_heads"], self.vlm["num_kv_heads"], self.vlm["head_dim"]
        n = y.shape[0]
        qkv = F.linear(y, layer["qkv"])
        q = apply_rope(qkv[:, :N * h].view(n, N, h), cos, sin)
        k = apply_rope(qkv[:, N * h:(N + K) * h].view(n, K, h), cos, sin)
        v = qkv[:, (N + K) * h:].view(n, K, h)
        return q, k.transpose(0, 1), v.transpose(0, 1)  # k, v as [K, n, h]

    @staticmethod
    def _mlp(y, layer):
        gate, up = F.linear(y, layer["gate_up"]).chunk(2, dim=-1)
        return F.linear(F.gelu(gate, approximate="tanh") * up, layer["down"])

    def prefix(self, image_tokens, token_ids, suffix_len):
        """KV cache of the valid prefix tokens (all of them attend to all of them, positions
        0..n-1), in per-layer buffers with room for `suffix_len` more keys."""
        emb = self.st.raw(self.embed_key)[token_ids.numpy()]
        if self.st.dtype(self.embed_key) == "BF16":
            emb = safetensors_io.bf16_bits_to_f32(emb)
        lang = torch.from_numpy(np.asarray(emb, dtype=np.float32)) * float(np.sqrt(self.vlm["width"]))
        x = torch.cat([image_tokens.reshape(-1, self.vlm["width"]), lang])
        n = x.shape[0]
        K, h, depth = self.vlm["num_kv_heads"], self.vlm["head_dim"], self.vlm["depth"]
        kbuf = torch.empty(depth, K, n + suffix_len, h)
        vbuf = torch.empty(depth, K, n + suffix_len, h)
        cos, sin = rope_tables(torch.arange(n), h)
        for i, L in enumerate(self.vlm_layers):
            q, k, v = self._qkv(rms_norm(x, L["in_scale"]), L, cos, sin)
            kbuf[i, :, :n], vbuf[i, :, :n] = k, v
            if i == depth - 1:
                break  # the last layer's output is never used
            x = x + F.linear(self.gqa(q, k, v), L["o"])
            x = x + self._mlp(rms_norm(x, L["post_scale"]), L)
        return kbuf, vbuf, n

    def action_head(self, kbuf, vbuf, n, noise, state, num_steps):
        """Euler loop of model.md §8 over the cached prefix. Returns (actions, velocities)."""
        H, E, depth = self.H, self.exp["width"], self.exp["depth"]
        S = H if self.pi05 else H + 1
        cos, sin = rope_tables(n + torch.arange(S), self.exp["head_dim"])
        bias = None
        if not self.pi05:
            # The state token (row 0) must not see the action tokens (model.md §7.3).
            bias = torch.zeros(S, n + S)
            bias[0, n + 1:] = MASK_VALUE
            bias = bias.repeat(self.gqa.rep, 1)
            state_tok = F.linear(state, *self.state_proj)[None]
            mod = [None] * (2 * depth + 1)  # plain norms: no modulation
        x_t = noise.clone()
        dt = torch.tensor(-1.0 / num_steps, dtype=torch.float32)
        t = torch.tensor(1.0, dtype=torch.float32)
        velocities = []
        while t >= -dt / 2:
            temb = time_embedding(t, E)
            act = F.linear(x_t, *self.act_in)
            if self.pi05:
                cond = F.silu(F.linear(F.silu(F.linear(temb, *self.time_in)), *self.time_out))
                mod = F.linear(cond, self.ada_w, self.ada_b).view(2 * depth + 1, 3, E)
                x = act
            else:
                time_part = F.linear(temb, self.at_in_time, self.at_in_b)
                h = F.silu(F.linear(act, self.at_in_act) + time_part)
                x = torch.cat([state_tok, F.linear(h, *self.at_out)])
            for i, L in enumerate(self.exp_layers):
                y, gate = self._expert_norm(x, L.get("in_scale"), mod[2 * i])
                q, k, v = self._qkv(y, L, cos, sin)
                kbuf[i, :, n:], vbuf[i, :, n:] = k, v
                o = F.linear(self.gqa(q, kbuf[i], vbuf[i], bias), L["o"])
                x = x + (o if gate is None else o * gate)
                y, gate = self._expert_norm(x, L.get("post_scale"), mod[2 * i + 1])
                m = self._mlp(y, L)
                x = x + (m if gate is None else m * gate)
            y, _ = self._expert_norm(x, self.final_scale, mod[-1])
            v = F.linear(y[S - H:], *self.act_out)
            velocities.append(v)
            x_t = x_t + dt * v
            t = t + dt
        return x_t, torch.stack(velocities)

    @staticmethod
    def _expert_norm(x, scale, mod):
        """Plain RMSNorm (pi0, `scale` = 1 + w) or adaRMSNorm (pi0.5, `mod` = [scale, shift, gate])."""
        if mod is None:
            return rms_norm(x, scale), None
        return rms_norm(x, 1 + mod[0]) + mod[1], mod[2]

    def infer(self, inputs):
        """Returns (outputs of checkpoint.md §5 as NumPy arrays, stage seconds)."""
        image_mask = inputs["image_mask"].astype(bool)
        token_mask = inputs["token_mask"].astype(bool)
        C, tokens_per_cam = len(image_mask), self.grid ** 2
        t0 = time.perf_counter()
        cams = np.flatnonzero(image_mask)
        image_tokens = self.vision(torch.from_numpy(inputs["images"][cams]))
        t1 = time.perf_counter()
        token_ids = torch.from_numpy(inputs["tokens"][token_mask].astype(np.int64))
        S = self.H if self.pi05 else self.H + 1
        kbuf, vbuf, n = self.prefix(image_tokens, token_ids, S)
        t2 = time.perf_counter()
        actions, velocities = self.action_head(kbuf, vbuf, n, torch.from_numpy(inputs["noise"]),
                                               torch.from_numpy(inputs["state"]), int(inputs["num_steps"][0]))
        t3 = time.perf_counter()
        vision = np.zeros((C, tokens_per_cam, self.vlm["width"]), np.float32)
        vision[cams] = image_tokens.numpy()
        prefix_mask = np.concatenate([np.repeat(image_mask, tokens_per_cam), token_mask])
        outputs = dict(vision_embeddings=vision, prefix_mask=prefix_mask.astype(np.uint8),
                       velocities=velocities.numpy(), actions=actions.numpy())
        for name, buf in (("prefix_k", kbuf), ("prefix_v", vbuf)):
            full = np.zeros((self.vlm["depth"], prefix_mask.size, self.vlm["num_kv_heads"], self.vlm["head_dim"]),
                            np.float32)
            full[:, prefix_mask] = buf[:, :, :n].transpose(1, 2).numpy()
            outputs[name] = full
        return outputs, dict(vision=t1 - t0, prefix=t2 - t1, action_head=t3 - t2, total=t3 - t0)


INPUTS = ("images", "image_mask", "tokens", "token_mask", "state", "noise", "num_steps")


def main(args):
    if args.threads:
        torch.set_num_threads(args.threads)
    raw = safetensors_io.load(args.inputs)
    missing = [k for k in INPUTS if k not in raw]
    if missing:
        sys.exit(f"{args.inputs}: missing input(s) {missing}")
    inputs = {k: np.array(raw[k]) for k in INPUTS}
    model = TorchPi0(args.checkpoint)
    with torch.inference_mode():
        for _ in range(args.warmup):
            model.infer(inputs)
        runs = [model.infer(inputs) for _ in range(args.repeat)]
    if args.out:
        safetensors_io.save(args.out, {**inputs, **runs[-1][0]},
                            metadata={"producer": "bench/torch_pi0.py", "torch": torch.__version__})
    ms = {f"{k}_ms": round(1e3 * float(np.median([r[1][k] for r in runs])), 3) for k in runs[0][1]}
    print(json.dumps({"impl": "torch", "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                      "model_type": "pi05" if model.pi05 else "pi0", "repeat": len(runs),
                      "warmup": args.warmup, **ms}))


if __name__ == "__main__":
    main(ARGS)
