#!/usr/bin/python3
"""Checks of the GR00T reference against the libraries upstream uses, where they are installed.

  cross_check.py [--work DIR] [--require NAME,...]

Each check runs only if its library imports (none of them is a Debian package on the
development machine; the GPU machine's Python has them all), and is reported as skipped
otherwise:
  cv2           image_ref.resize_area against cv2.resize(INTER_AREA), bit for bit, on shrinking
                (non-integer, 2x, 3x), enlarging and mixed sizes, and the whole eval transform
                against the same steps done with cv2 and Pillow
  PIL           image_ref.resize_bicubic_pil against Image.resize (BICUBIC)
  regex         bpe_reference.pre_tokenize against regex.findall of the Qwen2 pattern
  tokenizers    the generated tokenizer.json loaded by Hugging Face `tokenizers`: the same ids
                as bpe_reference on mixed text (specials, Unicode, whitespace runs)
  torch         groot_numpy.aa_bilinear_weights against F.interpolate(bilinear, antialias)
  transformers  groot_numpy's Qwen3 stack (layers 0..select_layer-1 + final norm) against
                transformers' Qwen3Model on a tiny checkpoint's weights
--require makes a skipped check a failure (e.g. on the GPU machine: --require cv2,tokenizers).
Prints one JSON line per check; exits non-zero if a check failed.
"""

import argparse
import json
import os
import sys
import tempfile
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.join(HERE, ".."))
import bpe_reference  # noqa: E402
import groot_configs  # noqa: E402
import groot_numpy as gn  # noqa: E402
import image_ref  # noqa: E402
import make_checkpoint  # noqa: E402
import tokenizer_files  # noqa: E402

TEXTS = ["<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
         "pick the pear from the counter and place it in the plate<image 1><img><IMG_CONTEXT><IMG_CONTEXT></img>"
         "<image 2><img><IMG_CONTEXT></img><|im_end|>\n",
         "Déjà vu: naïve café, Größe, ½ + ¾ = 1¼ — “quotes” and ‘single’ ones",
         "日本語のテキスト、한국어、русский текст; emoji 🤖🍐 ZWJ 👩‍🔬",
         "tabs\tand\nnew lines\r\n  and   runs of spaces   \n\n\n  x  ",
         "it's I'LL we'VE they're 'S 'sup ſ it'ſ",
         "x\u001c\u001cy a\u00a0b \u2003em space\u3000ideographic",
         "numbers 12345 ٣ Ⅻ ½ 3.14159 1e-6 0x1F",
         "code: def f(x):\n    return x**2  # square\n",
         "<think>\n\n</think>\n\n<tool_call>{}</tool_call><|endoftext|>"]


def _random_sizes(rng):
    cases = [((480, 640), (256, 341)), ((243, 323), (256, 340)), ((512, 512), (256, 256)), ((600, 900), (200, 300)),
             ((100, 300), (50, 400)), ((256, 256), (252, 252)), ((243, 243), (256, 256)), ((720, 1280), (256, 455)),
             ((7, 5), (13, 9)), ((64, 64), (32, 96))]
    for _ in range(30):
        h, w = (int(v) for v in rng.integers(8, 700, 2))
        nh, nw = (int(v) for v in rng.integers(4, 700, 2))
        cases.append(((h, w), (nh, nw)))
    return cases


def check_cv2():
    import cv2
    rng = np.random.default_rng(0)
    bad = []
    for (h, w), (nh, nw) in _random_sizes(rng):
        img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        ref = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA)
        got = image_ref.resize_area(img, nh, nw)
        if not np.array_equal(ref, got):
            bad.append(dict(src=[h, w], dst=[nh, nw], max_abs=int(np.abs(ref.astype(int) - got).max()),
                            differing=int((ref != got).sum())))
    from PIL import Image
    for (h, w) in ((480, 640), (256, 256), (720, 1280), (300, 200), (512, 512)):
        img = gn.random_frames(1, (h, w), h + w)[0]
        for lb in (False, True):
            x = img
            if lb:
                side = max(h, w)
                top, left = (side - h) // 2, (side - w) // 2
                x = cv2.copyMakeBorder(x, top, side - h - top, left, side - w - left, cv2.BORDER_CONSTANT, value=0)
            for step in range(2):
                s = 256 / min(x.shape[:2])
                size = (round(x.shape[1] * s), round(x.shape[0] * s))
                if s != 1.0:
                    x = cv2.resize(x, size, interpolation=cv2.INTER_AREA)
                if step == 0:
                    ch, cw = int(x.shape[0] * 0.95), int(x.shape[1] * 0.95)
                    y0, x0 = (x.shape[0] - ch) // 2, (x.shape[1] - cw) // 2
                    x = x[y0:y0 + ch, x0:x0 + cw]
            th, tw = image_ref.smart_resize(*x.shape[:2])
            ref = np.asarray(Image.fromarray(np.ascontiguousarray(x)).resize((tw, th)))
            got, _ = image_ref.preprocess_frame(img, use_letterbox=lb)
            if not np.array_equal(ref, got):
                bad.append(dict(pipeline=[h, w], letterbox=lb, shapes=[list(ref.shape), list(got.shape)]))
    return dict(opencv=cv2.__version__, cases=len(_random_sizes(np.random.default_rng(0))) + 10, mismatches=bad[:10],
                ok=not bad)


def check_pil():
    from PIL import Image
    import PIL
    rng = np.random.default_rng(1)
    bad = []
    for (h, w), (nh, nw) in _random_sizes(rng):
        img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        ref = np.asarray(Image.fromarray(img).resize((nw, nh), Image.BICUBIC))
        if not np.array_equal(ref, image_ref.resize_bicubic_pil(img, nh, nw)):
            bad.append([h, w, nh, nw])
    return dict(pillow=PIL.__version__, mismatches=bad[:10], ok=not bad)


def check_regex():
    import regex
    pat = regex.compile(bpe_reference.QWEN2_SPLIT_REGEX)
    rng = np.random.default_rng(2)
    alphabet = list("aZé日٣½ 'sStT\n\r\t.,!?-_()<>|\u00a0\u2003\u001c\u0301ſ0123") + ["'re", "'LL", "  ", "\n\n"]
    texts = list(TEXTS) + ["".join(rng.choice(alphabet, int(rng.integers(1, 40)))) for _ in range(3000)]
    bad = [t for t in texts if pat.findall(t) != bpe_reference.pre_tokenize(t)]
    return dict(regex=regex.__version__, texts=len(texts),
                mismatches=[dict(text=t, regex=pat.findall(t), ours=bpe_reference.pre_tokenize(t)) for t in bad[:5]],
                ok=not bad)


def check_tokenizers(work):
    import tokenizers
    out = dict(tokenizers=tokenizers.__version__, configs={})
    ok = True
    rng = np.random.default_rng(3)
    alphabet = list("abcdefgh ijkl'sS\n\t.,!日本é½٣🤖") + ["<|im_end|>", "<IMG_CONTEXT>", "<img>", "  "]
    texts = list(TEXTS) + ["".join(rng.choice(alphabet, int(rng.integers(1, 60)))) for _ in range(500)]
    for name in ("tiny", "full"):
        folder = os.path.join(work, f"tok_{name}")
        tokenizer_files.write(folder, groot_configs.get(name))
        hf = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        ours = bpe_reference.Tokenizer.from_dir(folder)
        bad = []
        for t in texts:
            a = hf.encode(t, add_special_tokens=False).ids
            b = ours.encode(t)
            if a != b:
                bad.append(dict(text=t, hf=a[:40], ours=b[:40]))
            elif hf.decode(a, skip_special_tokens=False) != ours.decode(b):
                bad.append(dict(text=t, decode=[hf.decode(a, skip_special_tokens=False), ours.decode(b)]))
        out["configs"][name] = dict(texts=len(texts), mismatches=bad[:5])
        ok = ok and not bad
    out["ok"] = ok
    return out


def check_torch_interpolate():
    import torch
    import torch.nn.functional as F
    rng = np.random.default_rng(4)
    table = rng.standard_normal((1, 5, 16, 16))
    worst = 0.0
    for gh, gw in ((18, 18), (18, 24), (8, 8), (12, 20), (16, 16), (4, 30), (50, 9)):
        ref = F.interpolate(torch.from_numpy(table), size=(gh, gw), mode="bilinear", align_corners=False,
                            antialias=True).numpy()[0]
        wy = gn.aa_bilinear_weights(16, gh, np.float64)
        wx = gn.aa_bilinear_weights(16, gw, np.float64)
        got = np.einsum("ai,cij,bj->cab", wy, table[0], wx)
        worst = max(worst, float(np.abs(ref - got).max()))
    return dict(torch=torch.__version__, max_abs=worst, ok=worst < 1e-9)


def check_transformers(work):
    import torch
    import transformers
    from transformers import Qwen3Config, Qwen3Model
    d = os.path.join(work, "tiny_ckpt")
    make_checkpoint.write_checkpoint(d, groot_configs.get("tiny"), seed=5, dtype="f32")
    ck = gn.Checkpoint(d)
    t = ck.eagle["text_config"]
    n_layers = int(ck.config["select_layer"])
    conf = Qwen3Config(vocab_size=t["vocab_size"], hidden_size=t["hidden_size"], intermediate_size=t["intermediate_size"],
                       num_hidden_layers=n_layers, num_attention_heads=t["num_attention_heads"],
                       num_key_value_heads=t["num_key_value_heads"], head_dim=t["head_dim"],
                       rms_norm_eps=t["rms_norm_eps"], rope_theta=t["rope_theta"],
                       max_position_embeddings=t["max_position_embeddings"], attention_bias=False,
                       tie_word_embeddings=True)
    conf._attn_implementation = "eager"
    hf = Qwen3Model(conf).double().eval()
    state = {}
    for k in hf.state_dict():
        state[k] = torch.from_numpy(ck.get(f"{gn.L}.model.{k}", np.float64))
    hf.load_state_dict(state)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 57, t["hidden_size"]))
    with torch.no_grad():
        ref = hf(inputs_embeds=torch.from_numpy(x), attention_mask=torch.ones(1, 57, dtype=torch.long)).last_hidden_state
    got = gn.Model(ck, np.float64).language(x[0], np.ones(57, bool))
    err = float(np.linalg.norm(ref[0].numpy() - got) / np.linalg.norm(ref[0].numpy()))
    # Both build the RoPE table from float32 angles and take cos / sin in float32 (torch's and
    # NumPy's float32 cos may differ by an ulp), the rest in float64: agreement at the 1e-7 level;
    # a structural difference (norm placement, rotation layout, head grouping) would be O(1).
    return dict(transformers=transformers.__version__, rel_l2=err, ok=err < 1e-5)


CHECKS = {"cv2": check_cv2, "PIL": check_pil, "regex": check_regex, "tokenizers": check_tokenizers,
          "torch": check_torch_interpolate, "transformers": check_transformers}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", help="scratch folder (default: a temporary one)")
    ap.add_argument("--require", default="", help="comma list of checks that must run (not be skipped)")
    args = ap.parse_args(argv)
    required = {r for r in args.require.split(",") if r}
    work = args.work or tempfile.mkdtemp(prefix="groot_cross_")
    os.makedirs(work, exist_ok=True)
    failed = 0
    for name, fn in CHECKS.items():
        try:
            __import__(name)
        except ImportError:
            print(json.dumps(dict(check=name, skipped="not installed", ok=name not in required)), flush=True)
            failed += name in required
            continue
        try:
            res = fn(work) if fn in (check_tokenizers, check_transformers) else fn()
        except Exception as e:  # report and go on
            traceback.print_exc()
            res = dict(error=f"{type(e).__name__}: {e}", ok=False)
        print(json.dumps(dict(check=name, **res), ensure_ascii=False), flush=True)
        failed += not res["ok"]
    print(json.dumps(dict(cross_check="done", failed=failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
