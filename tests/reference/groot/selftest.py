#!/usr/bin/python3
"""Self-test of the GR00T N1.6 reference (NumPy only; tiny and small generated checkpoints).

  selftest.py [--work DIR] [--keep] [--qwen-dir DIR]

--work: scratch folder (default: a temporary one, removed unless --keep).
--qwen-dir: a folder with Qwen's real vocab.json, merges.txt and added_tokens.json (the Eagle
folder of the GR00T source tree); when given, the token ids the spec quotes (§2, §8) are
checked against it too. Exits non-zero and names every failed check.
"""

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
import unicodedata
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.join(HERE, ".."))
import bpe_reference  # noqa: E402
import groot_configs  # noqa: E402
import groot_numpy as gn  # noqa: E402
import image_ref  # noqa: E402
import make_checkpoint  # noqa: E402
import safetensors_io  # noqa: E402
import tokenizer_files  # noqa: E402


def check(ok, message):
    if not ok:
        raise AssertionError(message)


def rel_l2(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


class Fixture:
    """Checkpoints written once: tiny in f32 / bf16 / f16 (same seed), small in bf16."""

    def __init__(self, root):
        self.root = root
        self.dirs = {}
        for name, cfg, dtype in (("tiny_f32", "tiny", "f32"), ("tiny_bf16", "tiny", "bf16"),
                                 ("tiny_f16", "tiny", "f16"), ("small_bf16", "small", "bf16")):
            self.dirs[name] = os.path.join(root, name)
            make_checkpoint.write_checkpoint(self.dirs[name], groot_configs.get(cfg), seed=3, dtype=dtype)
        self.ckpt = {k: gn.Checkpoint(d) for k, d in self.dirs.items()}

    def run(self, name, views, embodiment="gr1", seed=0, dtype=np.float64, frames=None, **kw):
        ck = self.ckpt[name]
        frames = frames if frames is not None else gn.random_frames(views, (480, 640), seed)
        state = gn.random_state(ck, embodiment, seed)
        return gn.infer(ck, frames, "Pick the pear, then place it on the plate!", embodiment, state,
                        gn.make_noise(ck, seed), dtype, **kw)


# --- checkpoints -------------------------------------------------------------------------------------

def expected_key_counts(cfg):
    """Keys per part from the architecture alone (independent of make_checkpoint's list)."""
    return dict(vision=3 + 16 * cfg["vision"]["num_hidden_layers"] + 2 + 11,
                language=1 + 11 * cfg["select_layer"] + 1 + 1,
                mlp1=6, dit=4 + 14 * cfg["dit"]["num_layers"] + 4, action_head_other=17)


def test_checkpoint_layout(fx):
    """Key list, shapes, dtypes, byte counts and shards of tiny/small; full's dry run equals the
    published 1106 tensors, 6,573,217,664 bytes and 4.99 + 1.58 GB shards."""
    full = make_checkpoint.count(groot_configs.get("full"), "bf16")
    pub = groot_configs.PUBLISHED
    check(full["tensors"] == 1106 == pub["tensors"], f"full: {full['tensors']} tensors, published 1106")
    check(full["total_size"] == 6_573_217_664, f"full bf16: {full['total_size']} bytes, published 6,573,217,664")
    check([round(s["bytes"] / 1e9, 2) for s in full["shards"]] == [4.99, 1.58],
          f"full shards {[s['bytes'] for s in full['shards']]}, published 4.99 + 1.58 GB")
    check(full["keys"] == dict(expected_key_counts(groot_configs.get("full"))),
          f"full keys per part {full['keys']}")
    check(not make_checkpoint.check_against_published(full), "check_against_published reports a mismatch")
    with contextlib.redirect_stdout(io.StringIO()):
        rc = make_checkpoint.main(["--config", "full", "--dry-run"])
    check(rc == 0, "full --dry-run exits non-zero")

    for name, itemsize, st_dtype in (("tiny_f32", 4, "F32"), ("tiny_bf16", 2, "BF16"), ("tiny_f16", 2, "F16"),
                                     ("small_bf16", 2, "BF16")):
        d = fx.dirs[name]
        cfg = groot_configs.get(name.split("_")[0])
        specs = make_checkpoint.weight_specs(cfg)
        with open(os.path.join(d, "model.safetensors.index.json")) as f:
            index = json.load(f)
        wm = index["weight_map"]
        check(sorted(wm) == sorted(k for k, _, _ in specs), f"{name}: index keys differ from the spec list")
        check(list(wm) == sorted(wm), f"{name}: weight_map not sorted")
        files = sorted(set(wm.values()))
        n = len(files)
        check(n >= 2 and files == [f"model-{k:05d}-of-{n:05d}.safetensors" for k in range(1, n + 1)],
              f"{name}: shard names {files}")
        counts = {}
        for key, _, _ in specs:
            counts[make_checkpoint.key_part(key)] = counts.get(make_checkpoint.key_part(key), 0) + 1
        check(counts == expected_key_counts(cfg), f"{name}: keys per part {counts}, expected {expected_key_counts(cfg)}")
        total = 0
        for fname in files:
            st = safetensors_io.SafetensorsFile(os.path.join(d, fname))
            check(st.metadata.get("format") == "pt", f"{name}/{fname}: metadata {st.metadata}")
            for key in st.keys():
                check(wm[key] == fname, f"{name}: {key} is in {fname}, the index says {wm[key]}")
        for key, shape, _ in specs:
            st = safetensors_io.SafetensorsFile(os.path.join(d, wm[key]))
            check(st.shape(key) == tuple(shape), f"{name}: {key} shape {st.shape(key)}, expected {shape}")
            check(st.dtype(key) == st_dtype, f"{name}: {key} stored as {st.dtype(key)}")
            total += int(np.prod(shape)) * itemsize
        check(index["metadata"]["total_size"] == total, f"{name}: total_size {index['metadata']['total_size']} != {total}")
        with open(os.path.join(d, "config.json")) as f:
            conf = json.load(f)
        check(conf["model_type"] == "Gr00tN1d6" and conf["select_layer"] == cfg["select_layer"]
              and conf["max_state_dim"] == 128 and conf["action_horizon"] == 50, f"{name}: config.json {conf}")
        for fname in tokenizer_files.TOKENIZER_FILES + ("config.json", "processor_config.json"):
            check(os.path.isfile(os.path.join(d, "Eagle-Block2A-2B-v2", fname)), f"{name}: Eagle folder lacks {fname}")
    # shapes that matter, spot-checked against the spec's numbers for full
    shapes = {k: s for k, s, _ in make_checkpoint.weight_specs(groot_configs.get("full"))}
    for key, shape in (("backbone.model.vision_model.vision_model.embeddings.patch_embedding.weight", (1152, 588)),
                       ("backbone.model.vision_model.vision_model.embeddings.patch_embedding.bias", (1152,)),
                       ("backbone.model.vision_model.vision_model.embeddings.position_embedding.weight", (256, 1152)),
                       ("backbone.model.language_model.model.embed_tokens.weight", (151680, 2048)),
                       ("backbone.model.language_model.model.layers.15.self_attn.k_proj.weight", (1024, 2048)),
                       ("backbone.model.mlp1.1.weight", (2048, 4608)),
                       ("action_head.state_encoder.layer1.W", (32, 128, 1024)),
                       ("action_head.action_encoder.W2.W", (32, 3072, 1536)),
                       ("action_head.action_decoder.layer2.W", (32, 1024, 128)),
                       ("action_head.position_embedding.weight", (1024, 1536)),
                       ("action_head.model.transformer_blocks.0.attn1.to_k.weight", (1536, 2048)),
                       ("action_head.model.transformer_blocks.1.attn1.to_k.weight", (1536, 1536)),
                       ("action_head.model.transformer_blocks.31.ff.net.0.proj.weight", (6144, 1536)),
                       ("action_head.model.proj_out_1.weight", (3072, 1536)),
                       ("action_head.model.proj_out_2.weight", (1024, 1536))):
        check(shapes.get(key) == shape, f"full: {key} is {shapes.get(key)}, spec says {shape}")
    check("backbone.model.language_model.model.layers.16.mlp.up_proj.weight" not in shapes,
          "full: LLM layer 16 present; only layers 0-15 are kept")


def test_weights_and_determinism(fx, root):
    """Same seed -> byte-identical checkpoints; bf16/f16 files hold the rounded f32 values;
    lm_head equals embed_tokens; another seed changes the weights."""
    again = os.path.join(root, "tiny_f32_again")
    make_checkpoint.write_checkpoint(again, groot_configs.get("tiny"), seed=3, dtype="f32")
    for fname in sorted(os.listdir(fx.dirs["tiny_f32"])):
        p = os.path.join(fx.dirs["tiny_f32"], fname)
        if os.path.isfile(p):
            with open(p, "rb") as a, open(os.path.join(again, fname), "rb") as b:
                check(hashlib.sha256(a.read()).digest() == hashlib.sha256(b.read()).digest(),
                      f"tiny seed 3 written twice: {fname} differs")
    f32, bf16, f16 = (fx.ckpt[k] for k in ("tiny_f32", "tiny_bf16", "tiny_f16"))
    for key in ("backbone.model.mlp1.1.weight", "action_head.action_encoder.W2.W",
                "backbone.model.language_model.model.layers.0.input_layernorm.weight"):
        w = f32.get(key, np.float32)
        check(np.array_equal(bf16.get(key, np.float32),
                             safetensors_io.bf16_bits_to_f32(safetensors_io.f32_to_bf16_bits(w))),
              f"{key}: bf16 file is not the rounded f32 values")
        check(np.array_equal(f16.get(key, np.float32), w.astype(np.float16).astype(np.float32)),
              f"{key}: f16 file is not the rounded f32 values")
    lm = "backbone.model.language_model."
    check(np.array_equal(f32.get(lm + "lm_head.weight", np.float32), f32.get(lm + "model.embed_tokens.weight", np.float32)),
          "lm_head differs from embed_tokens")
    other = make_checkpoint.tensor_value("backbone.model.mlp1.1.weight", (64, 128), "linear", 4)
    check(not np.array_equal(other, f32.get("backbone.model.mlp1.1.weight", np.float32)), "seed 4 gives seed 3's weights")
    ln = f32.get("backbone.model.vision_model.vision_model.post_layernorm.weight", np.float64)
    check(abs(ln.mean() - 1) < 0.05 and ln.std() < 0.1, f"norm scales not near 1 (mean {ln.mean()}, std {ln.std()})")


# --- tokenizer ----------------------------------------------------------------------------------------

PRE_TOKENIZE_CASES = [
    ("Hello world", ["Hello", " world"]),
    ("don't stop", ["don", "'t", " stop"]),
    ("I'M HERE", ["I", "'M", " HERE"]),
    ("it'\u017f", ["it", "'\u017f"]),
    ("'sup", ["'s", "up"]),
    ("x  y", ["x", " ", " y"]),
    ("a\n\nb", ["a", "\n\n", "b"]),
    ("a \n b", ["a", " \n", " b"]),
    ("123abc", ["1", "2", "3", "abc"]),
    ("\u00bfQu\u00e9?", ["\u00bfQu\u00e9", "?"]),
    ("hi!!\n\nyo", ["hi", "!!\n\n", "yo"]),
    ("end.  ", ["end", ".", "  "]),
    ("a\u00a0b", ["a", "\u00a0b"]),
    ("x\u001c\u001cy", ["x", "\u001c\u001c", "y"]),
    ("a (b)", ["a", " (", "b", ")"]),
    ("\u0663\u216b\u00bd", ["\u0663", "\u216b", "\u00bd"]),
    ("\u65e5\u672c\u8a9e", ["\u65e5\u672c\u8a9e"]),
    ("\r\n", ["\r\n"]),
    ("   \n", ["   \n"]),
    ("a\tb", ["a", "\tb"]),
    ("plate<image 1>", ["plate", "<image", " ", "1", ">"]),
]

ROUND_TRIP = ["Pick the pear from the counter and place it in the plate.",
              "Déjà vu: naïve café, Größe, ½ + ¾ = 1¼, ﬁne ligature",
              "日本語のテキストと한국어 그리고 русский текст",
              "emoji 🤖🍐 and symbols €, ©, ™, \\, \u200b zero width",
              "tabs\tand\nnew lines\r\n  and   runs of spaces   ",
              "<|im_start|>user\nhi<|im_end|>\n<img><IMG_CONTEXT><IMG_CONTEXT></img><|endoftext|>",
              "'s 'T 're 'VE 'm 'll 'd it's I'LL", ""]


def test_tokenizer():
    """Pre-tokenizer splits, NFC, round trips, added tokens whole, real byte ids, the prompt pieces."""
    for text, expected in PRE_TOKENIZE_CASES:
        got = bpe_reference.pre_tokenize(text)
        check(got == expected, f"pre_tokenize({text!r}) = {got}, expected {expected}")
    check(len(set(bpe_reference.BYTE_TO_CHAR.values())) == 256, "byte map is not one to one")
    check(tokenizer_files.train_bpe(300) == tokenizer_files.train_bpe(300), "BPE training is not deterministic")
    with tempfile.TemporaryDirectory() as d:
        for name in ("tiny", "small", "full"):
            cfg = groot_configs.get(name)
            folder = os.path.join(d, name)
            vocab, merges, added = tokenizer_files.write(folder, cfg)
            tok = bpe_reference.Tokenizer.from_dir(folder)
            os.remove(os.path.join(folder, "tokenizer.json"))
            tok2 = bpe_reference.Tokenizer.from_dir(folder)  # vocab.json + merges.txt + added_tokens.json
            ids = tokenizer_files.token_ids(cfg)
            base = 151643 if name == "full" else len(vocab)
            check(sorted(vocab.values()) == list(range(len(vocab))), f"{name}: vocabulary ids are not dense")
            check(name != "full" or len(vocab) == 151643, f"{name}: vocabulary ends at {len(vocab)}, Qwen's at 151643")
            check(ids["pad"] == base and ids["im_start"] == base + 1 and ids["im_end"] == base + 2
                  and ids["image_context"] == base + 26 and ids["image_start"] == base + 27
                  and ids["image_end"] == base + 28, f"{name}: added token ids {ids}, base {base}")
            check(max(i for _, i, _ in added) < cfg["text"]["vocab_size"], f"{name}: added ids beyond the vocabulary")
            for text in ROUND_TRIP:
                text = unicodedata.normalize("NFC", text)
                a = tok.encode(text)
                check(a == tok2.encode(text), f"{name}: tokenizer.json and vocab/merges disagree on {text!r}")
                check(tok.decode(a) == text, f"{name}: decode(encode({text!r})) = {tok.decode(a)!r}")
            check(tok.encode("e\u0301") == tok.encode("\u00e9"), f"{name}: input is not NFC-normalised")
            special = tok.encode("<|im_start|><IMG_CONTEXT><IMG_CONTEXT></img><|im_end|>")
            check(special == [ids["im_start"], ids["image_context"], ids["image_context"], ids["image_end"],
                              ids["im_end"]], f"{name}: added tokens not kept whole: {special}")
            # single-byte symbols keep Qwen's real ids
            for ch, real in (("<", 27), (">", 29), (" ", 220), ("\n", 198), (".", 13), ("!", 0)):
                check(tok.encode(ch) == [real], f"{name}: {ch!r} -> {tok.encode(ch)}, Qwen's id is {real}")
            for k in range(1, 10):
                got = tok.encode(f"<image {k}>")
                check(got == [27, vocab["image"], 220, 15 + k, 29],
                      f"{name}: <image {k}> -> {got}, expected [27, id('image'), 220, {15 + k}, 29]")
            check(tok.encode("<image 12>") == [27, vocab["image"], 220, 16, 17, 29], f"{name}: <image 12>")
            prefix = tok.encode(gn.SYSTEM_PREFIX)
            strings = [tok.id_to_token[i] for i in prefix]
            qwen = ["<|im_start|>", "system", "\u010a", "You", "\u0120are", "\u0120a", "\u0120helpful",
                    "\u0120assistant", ".", "<|im_end|>", "\u010a", "<|im_start|>", "user", "\u010a"]
            if name != "tiny":  # tiny's 300 merges stop before 'Ġhelpful'
                check(strings == qwen, f"{name}: prefix tokens {strings}, Qwen's are {qwen}")
            check(tok.encode(gn.SUFFIX) == [ids["im_end"], 198], f"{name}: suffix ids")
            with open(os.path.join(d, name, "tokenizer_config.json")) as f:
                tc = json.load(f)
            check(tc["added_tokens_decoder"][str(ids["image_context"])]["content"] == "<IMG_CONTEXT>",
                  f"{name}: tokenizer_config.json added_tokens_decoder")


def test_real_qwen_ids(qwen_dir):
    """(with --qwen-dir) the spec's token ids from Qwen's real vocabulary (§2, §8)."""
    tok = bpe_reference.Tokenizer.from_dir(qwen_dir)
    check(tok.encode(gn.SYSTEM_PREFIX) == [151644, 8948, 198, 2610, 525, 264, 10950, 17847, 13, 151645, 198,
                                           151644, 872, 198], f"prefix ids {tok.encode(gn.SYSTEM_PREFIX)}")
    check(tok.encode("<image 1>") == [27, 1805, 220, 16, 29], f"<image 1> -> {tok.encode('<image 1>')}")
    check(tok.encode(gn.SUFFIX) == [151645, 198], "suffix ids")
    instr = gn.formalize_language("pick the pear from the counter and place it in the plate")
    ids = tok.encode(gn.prompt_text(instr, [81]))
    check(len(ids) == 116 and ids.count(151669) == 81, f"GR1 prompt: {len(ids)} tokens, spec says 116 (35 + 81)")


# --- images ----------------------------------------------------------------------------------------

def _png_with_filters(path, img):
    """An RGB PNG whose rows use filters 0..4 in turn (the writer of the test, not of image_ref)."""
    h, w, c = img.shape
    raw, prev = bytearray(), np.zeros(w * c, np.int64)
    for y in range(h):
        cur = img[y].reshape(-1).astype(np.int64)
        ft = y % 5
        left = np.concatenate([np.zeros(c, np.int64), cur[:-c]])
        upleft = np.concatenate([np.zeros(c, np.int64), prev[:-c]])
        if ft == 0:
            enc = cur
        elif ft == 1:
            enc = cur - left
        elif ft == 2:
            enc = cur - prev
        elif ft == 3:
            enc = cur - (left + prev) // 2
        else:
            p = left + prev - upleft
            pa, pb, pc = np.abs(p - left), np.abs(p - prev), np.abs(p - upleft)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, upleft))
            enc = cur - pred
        raw += bytes([ft]) + bytes((enc & 255).astype(np.uint8))
        prev = cur

    def chunk(kind, body):
        return len(body).to_bytes(4, "big") + kind + body + (zlib.crc32(kind + body) & 0xFFFFFFFF).to_bytes(4, "big")

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", w.to_bytes(4, "big") + h.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0]))
                + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b""))


def test_image_pipeline():
    """§8's sizes and rounding, INTER_AREA's two paths on hand-computed cases, letterbox, pixel
    range, PNG reading; Pillow's bicubic against Pillow itself when it is installed."""
    check(image_ref.smart_resize(266, 266) == (280, 280) and image_ref.smart_resize(238, 238) == (224, 224),
          "smart_resize must round half to even: 266 -> 280, 238 -> 224")
    check(image_ref.smallest_max_size_shape(512, 513, 256) == (256, 256)
          and image_ref.smallest_max_size_shape(512, 515, 256) == (256, 258),
          "SmallestMaxSize must round half to even (256.5 -> 256, 257.5 -> 258)")
    rng = np.random.default_rng(0)
    for (h, w), lb, shape, tokens in (((256, 256), False, (252, 252), 81), ((480, 640), False, (252, 336), 108),
                                      ((480, 640), True, (252, 252), 81), ((720, 1280), True, (252, 252), 81),
                                      ((640, 480), True, (252, 252), 81), ((200, 300), True, (252, 252), 81),
                                      ((224, 224), False, (252, 252), 81)):
        img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        out, n = image_ref.preprocess_frame(img, use_letterbox=lb)
        check(out.shape[:2] == shape and n == tokens,
              f"{w}x{h} letterbox={lb}: {out.shape[1]}x{out.shape[0]} and {n} tokens, expected "
              f"{shape[1]}x{shape[0]} and {tokens}")
    lbx = image_ref.letterbox(np.full((3, 6, 3), 9, np.uint8))
    check(lbx.shape == (6, 6, 3) and (lbx[1:4] == 9).all() and (lbx[0] == 0).all() and (lbx[4:] == 0).all(),
          "letterbox: 3 rows padded to 6 must put 1 black row on top and 2 below")
    # INTER_AREA: area averaging when shrinking (3x3 -> 2x2 weights 2/3, 1/3) ...
    img = np.array([[0, 30, 60], [90, 120, 150], [180, 210, 240]], np.uint8)[:, :, None].repeat(3, 2)
    check((image_ref.resize_area(img, 2, 2)[:, :, 0] == [[40, 80], [160, 200]]).all(), "INTER_AREA 3x3 -> 2x2")
    # ... exact 2x: (sum + 2) >> 2, ties up; other integer factors: half to even
    blk = np.zeros((2, 2, 3), np.uint8)
    blk[1, 1] = 2
    check((image_ref.resize_area(blk, 1, 1) == 1).all(), "INTER_AREA 2x: (0+0+0+2+2)>>2 must be 1")
    blk4 = np.zeros((4, 4, 3), np.uint8)
    blk4[0, :2] = 4  # sum 8 -> 0.5 -> 0
    check((image_ref.resize_area(blk4, 1, 1) == 0).all(), "INTER_AREA 4x: 8/16 must round to 0 (half to even)")
    blk4[0, 2:] = 8  # sum 24 -> 1.5 -> 2
    check((image_ref.resize_area(blk4, 1, 1) == 2).all(), "INTER_AREA 4x: 24/16 must round to 2 (half to even)")
    # ... enlarging: sx = floor(d * s), fx = (d + 1) - (sx + 1) / s (0 if <= 0, else its fraction),
    # right border clamped: 2 -> 3 gives fx = 0, 0.5, border; an integer factor replicates.
    row = np.array([[[0, 0, 0], [200, 200, 200]]], np.uint8)
    for n, expected in ((3, [0, 100, 200]), (4, [0, 0, 200, 200])):
        got = image_ref.resize_area(row, 1, n)[0, :, 0]
        check((got == expected).all(), f"INTER_AREA 2 -> {n} gives {got}, expected {expected}")
    for c in (0, 1, 128, 255):
        for (h, w, nh, nw) in ((480, 640, 256, 341), (243, 323, 256, 340), (100, 300, 50, 400), (600, 600, 200, 200)):
            out = image_ref.resize_area(np.full((h, w, 3), c, np.uint8), nh, nw)
            check((out == c).all(), f"INTER_AREA {w}x{h} -> {nw}x{nh} changes a constant image {c}")
    px = image_ref.normalize_pixels(np.array([[[0, 255, 128]]], np.uint8))
    check(px.dtype == np.float32 and px[0, 0, 0] == -1 and px[1, 0, 0] == 1 and px[2, 0, 0] == np.float32(0.5 / 127.5),
          f"pixel normalisation gives {px.ravel()}")
    with tempfile.TemporaryDirectory() as d:
        img = rng.integers(0, 256, (17, 23, 3), dtype=np.uint8)
        image_ref.write_png(os.path.join(d, "a.png"), img)
        check(np.array_equal(image_ref.read_png(os.path.join(d, "a.png")), img), "PNG round trip")
        _png_with_filters(os.path.join(d, "b.png"), img)
        check(np.array_equal(image_ref.read_png(os.path.join(d, "b.png")), img), "PNG with Sub/Up/Average/Paeth rows")
    try:
        from PIL import Image
    except ImportError:
        print("    (Pillow not installed: bicubic not compared with Pillow)")
        return
    for (h, w, nh, nw) in ((256, 256, 252, 252), (256, 340, 252, 336), (100, 77, 56, 84), (300, 200, 224, 140)):
        img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        ref = np.asarray(Image.fromarray(img).resize((nw, nh), Image.BICUBIC))
        check(np.array_equal(image_ref.resize_bicubic_pil(img, nh, nw), ref),
              f"bicubic {w}x{h} -> {nw}x{nh} differs from Pillow {Image.__version__}")


# --- normalisation --------------------------------------------------------------------------------------

def test_normalisation(fx):
    """Normalise then un-normalise is the identity where defined; std 0 passes through; min == max
    gives 0; clipping; sin/cos layout; relative joints and EEF poses made absolute."""
    ck = fx.ckpt["tiny_f32"]
    rng = np.random.default_rng(1)
    p = {"min": np.array([-1.0, 0.0, 2.0]), "max": np.array([3.0, 1.0, 2.0]),
         "mean": np.array([0.5, 0.2, 2.0]), "std": np.array([2.0, 0.5, 0.0])}
    x = np.array([0.25, 0.75, 7.0], np.float32)
    y = gn.normalize_minmax(x, p, True)
    check(y[2] == 0 and y.dtype == np.float32, f"min == max must normalise to 0, got {y}")
    back = gn.unnormalize_minmax(y.astype(np.float64), p)
    check(np.allclose(back[:2], x[:2], rtol=0, atol=1e-6), f"min/max round trip {x[:2]} -> {back[:2]}")
    check((gn.normalize_minmax(np.array([-5.0, 2.0, 0.0], np.float32), p, True)[:2] == [-1, 1]).all(),
          "values outside [min, max] must clip to +-1")
    check(gn.normalize_minmax(np.array([-5.0, 2.0, 0.0], np.float32), p, False)[0] == -3, "no clip when clip_outliers is off")
    z = gn.normalize_meanstd(x, p)
    check(z[2] == x[2], f"std 0 must pass the raw value through, got {z[2]}")
    back = gn.unnormalize_meanstd(z.astype(np.float64), p)
    check(np.allclose(back, x, rtol=0, atol=1e-6), f"mean/std round trip {x} -> {back}")
    # the state vector of gr1: sin/cos arms (7+7 -> 28), hands min/max, waist mean/std, zero padding
    state = gn.random_state(ck, "gr1", 0)
    vec = gn.normalize_state(ck, "gr1", state, 128, np.float64)
    la = state["left_arm"]
    check(np.allclose(vec[:7], np.sin(la)) and np.allclose(vec[7:14], np.cos(la)), "sin/cos group layout")
    check(vec.shape == (128,) and (vec[46:] == 0).all() and np.abs(vec[28:40]).max() <= 1, "gr1 state layout / clip")
    wst = ck.statistics["gr1"]["state"]["waist"]
    check(np.allclose(vec[40:43], ((state["waist"].astype(np.float64) - wst["mean"]) / wst["std"]).astype(np.float32)),
          "mean/std group of the state")
    # degenerate dims of new_embodiment: joints[3] has min == max and std == 0
    st = gn.random_state(ck, "new_embodiment", 1)
    v2 = gn.normalize_state(ck, "new_embodiment", st, 128, np.float64)
    check(v2[6 + 3] == 0, f"degenerate min/max state dim must be 0, got {v2[9]}")
    # decoding: relative joints add the raw last state; EEF composes poses; widths and horizons
    for tag in ("gr1", "oxe_droid", "new_embodiment", "unitree_g1", "libero_panda"):
        e = groot_configs.embodiment(tag)
        raw = gn.random_state(ck, tag, 2)
        acts = rng.uniform(-1, 1, (50, 128))
        out = gn.decode_actions(ck, tag, acts, raw)
        check(list(out) == [a[0] for a in e["action"]], f"{tag}: action groups {list(out)}")
        col = 0
        for group, width, rep, typ, fmt, sk in e["action"]:
            a = out[group]
            check(a.shape == (e["horizon"], width), f"{tag}.{group}: shape {a.shape}")
            prm = gn.norm_params(ck, tag, "action", group)
            y = acts[:e["horizon"], col:col + width]
            col += width
            base = (gn.unnormalize_meanstd(y, prm) if group in (e["action_mean_std"] or [])
                    else gn.unnormalize_minmax(y, prm))
            if rep == "RELATIVE":
                check(np.asarray(prm["min"]).shape == (e["horizon"], width),
                      f"{tag}.{group}: relative statistics shape {np.asarray(prm['min']).shape}")
                ref = raw[sk or group].astype(np.float64)
                if typ == "NON_EEF":
                    check(np.allclose(a, base + ref), f"{tag}.{group}: relative joints are not ref + rel")
                else:
                    t_ref = gn.eef_to_matrix(ref, fmt)
                    t0 = t_ref @ gn.eef_to_matrix(base[0], fmt)
                    check(np.allclose(gn.eef_to_matrix(a[0], fmt), t0, atol=1e-9), f"{tag}.{group}: EEF not T_ref @ T_rel")
            else:
                check(np.allclose(a, base), f"{tag}.{group}: absolute group un-normalised wrongly")
    r = np.array([0.3, -1.1, 0.7])
    check(np.allclose(gn.matrix_to_rotvec(gn.rotvec_to_matrix(r)), r), "rotvec round trip")
    ident = np.array([0, 0, 0, 1, 0, 0, 0, 1, 0], np.float64)
    ref = np.concatenate([[0.1, 0.2, 0.3], gn.rotvec_to_matrix(r)[:2].ravel()])
    check(np.allclose(gn.matrix_to_eef(gn.eef_to_matrix(ref, "XYZ_ROT6D") @ gn.eef_to_matrix(ident, "XYZ_ROT6D"),
                                       "XYZ_ROT6D"), ref), "EEF rot6d: identity relative pose must give the reference")


# --- the model ----------------------------------------------------------------------------------------

def test_per_image_attention(fx):
    """Changing view 2's pixels leaves view 1's vision tokens, and every LLM position before
    view 2, bitwise unchanged; positions from view 2 on change."""
    frames = gn.random_frames(2, (480, 640), 5)
    a = fx.run("tiny_f32", 2, "libero_panda", frames=frames)
    frames2 = [frames[0], 255 - frames[1]]
    b = fx.run("tiny_f32", 2, "libero_panda", frames=frames2)
    check(np.array_equal(a["vision_tokens"][0], b["vision_tokens"][0]), "view 1's vision tokens depend on view 2")
    check(not np.array_equal(a["vision_tokens"][1], b["vision_tokens"][1]), "view 2's tokens ignore its pixels")
    first2 = int(np.flatnonzero(a["image_mask"])[a["tokens_per_view"][0]])
    check(np.array_equal(a["backbone_features"][:first2], b["backbone_features"][:first2]),
          "LLM features before view 2 changed (causal attention)")
    check(not np.allclose(a["backbone_features"][first2:], b["backbone_features"][first2:]), "features ignore view 2")


def test_determinism_and_shapes(fx):
    """Same seed -> identical outputs; finite outputs of the right shapes for 1-3 views and every
    embodiment on tiny; f32 within 1e-4 of f64; bf16 weights close to f32; left padding and
    the small config."""
    a = fx.run("tiny_f32", 1, "gr1", seed=4)
    b = gn.infer(gn.Checkpoint(fx.dirs["tiny_f32"]), gn.random_frames(1, (480, 640), 4),
                 "Pick the pear, then place it on the plate!", "gr1", gn.random_state(fx.ckpt["tiny_f32"], "gr1", 4),
                 gn.make_noise(fx.ckpt["tiny_f32"], 4))
    for k in ("backbone_features", "velocity", "actions_normalized"):
        check(np.array_equal(a[k], b[k]), f"{k} differs between two runs with the same seed")
    c = fx.run("tiny_f32", 1, "gr1", seed=5)
    check(not np.array_equal(a["actions_normalized"], c["actions_normalized"]), "another seed gives the same actions")
    cfg = groot_configs.get("tiny")
    W = cfg["text"]["hidden_size"]
    for tag in ("gr1", "libero_panda", "oxe_droid", "unitree_g1", "new_embodiment"):
        e = groot_configs.embodiment(tag)
        r = fx.run("tiny_f32", len(e["video"]), tag, seed=1)
        n = r["input_ids"].size
        check(r["backbone_features"].shape == (n, W) and r["image_mask"].sum() == 108 * len(e["video"]),
              f"{tag}: features {r['backbone_features'].shape}, {r['image_mask'].sum()} image tokens")
        check(r["velocity"].shape == (4, 50, 128) and r["actions_normalized"].shape == (50, 128),
              f"{tag}: velocity {r['velocity'].shape}")
        check(r["state_features"].shape == (1, cfg["input_embedding_dim"]), f"{tag}: state features")
        for k in ("backbone_features", "velocity", "actions_normalized"):
            check(np.isfinite(r[k]).all(), f"{tag}: non-finite {k}")
        for g, arr in r["actions"].items():
            check(np.isfinite(arr).all() and arr.shape[0] == e["horizon"], f"{tag}.{g}: {arr.shape}")
        rms = float(np.sqrt(np.mean(r["velocity"] ** 2)))
        check(0.05 < rms < 20, f"{tag}: velocity rms {rms} (activations not O(1))")
    f64 = fx.run("tiny_f32", 2, "libero_panda", seed=2)
    f32 = fx.run("tiny_f32", 2, "libero_panda", seed=2, dtype=np.float32)
    for k in ("backbone_features", "velocity", "actions_normalized"):
        check(f32[k].dtype == np.float32, f"f32 mode gives {f32[k].dtype} {k}")
        check(rel_l2(f32[k], f64[k]) < 1e-4, f"f32 vs f64 {k}: rel-L2 {rel_l2(f32[k], f64[k]):.2e}")
    bf = fx.run("tiny_bf16", 2, "libero_panda", seed=2)
    err = rel_l2(bf["actions_normalized"], f64["actions_normalized"])
    check(0 < err < 0.05, f"bf16 weights vs f32 weights: actions rel-L2 {err:.2e}")
    padded = fx.run("tiny_f32", 2, "libero_panda", seed=2, pad_to=f64["input_ids"].size + 37)
    check(padded["attention_mask"][:37].sum() == 0 and padded["input_ids"][0] == fx.ckpt["tiny_f32"].tokenizer.token_id("<|endoftext|>"),
          "left padding layout")
    err = rel_l2(padded["actions_normalized"], f64["actions_normalized"])
    check(err < 1e-5, f"left padding changes the actions (rel-L2 {err:.2e})")
    s1 = fx.run("small_bf16", 2, "new_embodiment", seed=3)
    s2 = fx.run("small_bf16", 2, "new_embodiment", seed=3, dtype=np.float32)
    check(np.isfinite(s1["actions_normalized"]).all(), "small: non-finite actions")
    check(rel_l2(s2["actions_normalized"], s1["actions_normalized"]) < 1e-4, "small: f32 vs f64 beyond 1e-4")
    check(s1["backbone_features"].shape[1] == groot_configs.get("small")["text"]["hidden_size"], "small: width")


def test_bad_input(fx, root):
    """Each bad input fails with an error naming the thing."""
    ck = fx.ckpt["tiny_f32"]
    frames = gn.random_frames(1, (256, 256), 0)
    state = gn.random_state(ck, "gr1", 0)
    noise = gn.make_noise(ck, 0)
    cases = [
        ("wrong view count", lambda: gn.infer(ck, frames * 2, "x", "gr1", state, noise), "1 view"),
        ("unknown embodiment", lambda: gn.infer(ck, frames, "x", "robot_x", state, noise), "robot_x"),
        ("missing state group", lambda: gn.infer(ck, frames, "x", "gr1", {k: v for k, v in state.items() if k != "waist"},
                                                 noise), "waist"),
        ("prompt shorter than padding", lambda: gn.infer(ck, frames, "x", "gr1", state, noise, pad_to=5), "pad-to"),
        ("no image", lambda: gn.Model(ck).action_head(np.zeros((4, 64)), np.ones(4, bool), np.zeros(4, bool),
                                                     np.zeros(128), 20, noise), "image"),
    ]
    other = os.path.join(root, "other_family")
    os.makedirs(other)
    with open(os.path.join(other, "config.json"), "w") as f:
        json.dump({"model_type": "pi05"}, f)
    cases.append(("another family", lambda: gn.Checkpoint(other), "Gr00tN1d6"))
    for what, fn, needle in cases:
        try:
            fn()
        except gn.GrootError as e:
            check(needle in str(e), f"{what}: the error does not name {needle!r}: {e}")
            continue
        raise AssertionError(f"{what}: no error")


def test_cli(fx, root):
    """groot_numpy.py's CLI writes every stage; make_checkpoint's CLI writes a loadable checkpoint."""
    out = os.path.join(root, "cli.safetensors")
    frame = os.path.join(root, "frame.png")
    image_ref.write_png(frame, gn.random_frames(1, (240, 320), 9)[0])
    npy = os.path.join(root, "frame.npy")
    np.save(npy, gn.random_frames(1, (300, 300), 9)[0])
    quiet = contextlib.redirect_stdout(io.StringIO())
    with quiet:
        rc = gn.main(["--checkpoint", fx.dirs["tiny_bf16"], "--images", f"{frame},{npy}", "--embodiment",
                      "libero_panda", "--dtype", "f32", "--out", out])
    check(rc == 0, f"groot_numpy CLI exit {rc}")
    t = safetensors_io.load(out)
    for k in ("pixel_values.0", "pixel_values.1", "input_ids", "attention_mask", "image_mask", "backbone_features",
              "velocity", "actions_normalized", "noise", "state", "action.gripper", "vision_tokens.1"):
        check(k in t, f"CLI output lacks {k}")
    check(t["pixel_values.0"].shape == (3, 252, 336) and t["pixel_values.1"].shape == (3, 252, 252),
          f"CLI pixel shapes {t['pixel_values.0'].shape} {t['pixel_values.1'].shape}")
    check(t["velocity"].shape == (4, 50, 128), "CLI velocity shape")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        rc = gn.main(["--checkpoint", fx.dirs["tiny_bf16"], "--random-images", "3", "--embodiment", "gr1"])
    check(rc == 2, "a view-count mismatch must exit 2")
    d = os.path.join(root, "cli_ckpt")
    with contextlib.redirect_stdout(io.StringIO()):
        rc = make_checkpoint.main(["--config", "tiny", "--out", d, "--dtype", "f16", "--letterbox", "on"])
    check(rc == 0, "make_checkpoint CLI failed")
    ck = gn.Checkpoint(d)
    check(gn.letterbox_choice(ck, "auto") is True, "letter_box_transform on is not picked up by letterbox auto")
    r = gn.infer(ck, gn.random_frames(1, (480, 640), 0), "x", "gr1", gn.random_state(ck, "gr1", 0), gn.make_noise(ck, 0))
    check(r["image_mask"].sum() == 81, f"letterboxed 640x480 must give 81 tokens, got {r['image_mask'].sum()}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", help="scratch folder (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--qwen-dir", help="Qwen's real vocab.json + merges.txt + added_tokens.json")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    root = args.work or tempfile.mkdtemp(prefix="groot_ref_")
    if args.work:
        shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root, exist_ok=True)
    failures, tests = 0, []
    try:
        fx = Fixture(os.path.join(root, "ckpt"))
        tests = [(test_checkpoint_layout, fx), (test_weights_and_determinism, fx, root), (test_tokenizer,),
                 (test_image_pipeline,), (test_normalisation, fx), (test_per_image_attention, fx),
                 (test_determinism_and_shapes, fx), (test_bad_input, fx, root), (test_cli, fx, root)]
        if args.qwen_dir:
            tests.append((test_real_qwen_ids, args.qwen_dir))
        for fn, *fargs in tests:
            t0 = time.perf_counter()
            try:
                fn(*fargs)
                status = "ok"
            except Exception as e:  # report every check, not only the first failure
                failures += 1
                status = f"FAIL: {e}"
                if not isinstance(e, AssertionError):
                    traceback.print_exc()
            print(f"{fn.__name__:<30} {time.perf_counter() - t0:6.2f} s  {status}", flush=True)
            print(f"    {' '.join(fn.__doc__.split())}")
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{'FAILED' if failures else 'passed'}: {failures} of {len(tests)} checks failed "
          f"({time.perf_counter() - start:.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
