#!/usr/bin/python3
"""The Python side of tests/model/groot/image_pipeline_test.cpp: seeded frames of several sizes
through the NumPy reference's pipeline (tests/reference/groot/image_ref.py).

  image_oracle.py OUT_DIR H1xW1[:letterbox] H2xW2 ...

For case i: OUT_DIR/i.in (uint8 [H, W, 3] raw), OUT_DIR/i.out (the uint8 frame the vision tower
sees, raw), OUT_DIR/i.shape ("H W" of i.out), and OUT_DIR/i.smart ("h w" of smart_resize(H, W)).
Frames mix smooth gradients, hard edges and noise, so every rounding step is exercised.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reference", "groot"))
import image_ref  # noqa: E402


def frame(h, w, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.zeros((h, w, 3), np.float64)
    img[..., 0] = 255.0 * x / max(w - 1, 1)
    img[..., 1] = 255.0 * y / max(h - 1, 1)
    img[..., 2] = np.where((x // 7 + y // 5) % 2 == 0, 230.0, 20.0)
    img += rng.normal(0.0, 25.0, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def main():
    out_dir = sys.argv[1]
    for i, spec in enumerate(sys.argv[2:]):
        size, _, mode = spec.partition(":")
        h, w = (int(v) for v in size.split("x"))
        img = frame(h, w, 1000 + i)
        out, _ = image_ref.preprocess_frame(img, use_letterbox=(mode == "letterbox"))
        img.tofile(os.path.join(out_dir, f"{i}.in"))
        np.ascontiguousarray(out).tofile(os.path.join(out_dir, f"{i}.out"))
        with open(os.path.join(out_dir, f"{i}.shape"), "w") as f:
            f.write(f"{out.shape[0]} {out.shape[1]}\n")
        sh, sw = image_ref.smart_resize(h, w)
        with open(os.path.join(out_dir, f"{i}.smart"), "w") as f:
            f.write(f"{sh} {sw}\n")


if __name__ == "__main__":
    main()
