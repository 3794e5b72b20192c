#!/usr/bin/python3
"""Reference pre-processing for edgevla's C++ tests (docs/model.md §9.4, §9.5), written from the
spec with PIL, NumPy and the sentencepiece Python binding -- the libraries openpi uses -- so the
C++ implementation can be compared against them.

  preprocess_ref.py resize DIR
      DIR/cases.json: [{"name", "width", "height", "encoding", "size"}, ...]; DIR/<name>.raw holds
      the pixels (u8 [height, width, channels] of the encoding). Writes DIR/<name>.u8 (the
      resized and padded RGB canvas, u8 [size, size, 3]) and DIR/<name>.f32 (the model input,
      f32 [3, size, size] in [-1, 1]).

  preprocess_ref.py tokenize MODEL CASES OUT
      CASES: [{"prompt", "state": [floats] or null, "max_len"}, ...]; writes OUT:
      [{"tokens", "mask", "full_length", "pieces"}, ...] with pi0's prompt format when "state"
      is null and pi0.5's otherwise.

Needs Debian's python3-pil, python3-numpy and python3-sentencepiece (run with /usr/bin/python3).
"""

import json
import os
import sys

import numpy as np


# Images ---------------------------------------------------------------------------------------

def to_rgb(raw, width, height, encoding):
    """What openpi receives: HWC uint8 RGB."""
    channels = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "mono8": 1}[encoding]
    a = np.frombuffer(raw, dtype=np.uint8).reshape(height, width, channels)
    if encoding == "bgr8":
        a = a[:, :, ::-1]
    elif encoding == "rgba8":
        a = a[:, :, :3]
    elif encoding == "mono8":
        a = np.repeat(a, 3, axis=2)
    return np.ascontiguousarray(a)


def resize_with_pad(rgb, size):
    """openpi's ResizeImages for one HWC uint8 image onto a size x size canvas."""
    from PIL import Image

    height, width = rgb.shape[:2]
    if (height, width) == (size, size):
        return rgb
    image = Image.fromarray(rgb)
    ratio = max(width / size, height / size)
    new_h = int(height / ratio)
    new_w = int(width / ratio)
    resized = image.resize((new_w, new_h), resample=Image.BILINEAR)
    canvas = Image.new(resized.mode, (size, size), 0)
    canvas.paste(resized, (int((size - new_w) / 2), int((size - new_h) / 2)))
    return np.asarray(canvas)


def model_input(rgb):
    """uint8 HWC -> float32 CHW, v / 255 * 2 - 1 in float32."""
    x = rgb.astype(np.float32) / np.float32(255.0) * np.float32(2.0) - np.float32(1.0)
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def cmd_resize(folder):
    with open(os.path.join(folder, "cases.json")) as f:
        cases = json.load(f)
    for c in cases:
        with open(os.path.join(folder, c["name"] + ".raw"), "rb") as f:
            rgb = to_rgb(f.read(), c["width"], c["height"], c["encoding"])
        out = resize_with_pad(rgb, c["size"])
        assert out.shape == (c["size"], c["size"], 3) and out.dtype == np.uint8
        with open(os.path.join(folder, c["name"] + ".u8"), "wb") as f:
            f.write(out.tobytes())
        with open(os.path.join(folder, c["name"] + ".f32"), "wb") as f:
            f.write(model_input(out).astype("<f4").tobytes())


# Prompts --------------------------------------------------------------------------------------

def clean(prompt):
    return prompt.strip().replace("_", " ").replace("\n", " ")


def state_bins(state):
    """256 bins over [-1, 1): -1 below -1, 255 from 1 - 1/128 up."""
    edges = np.linspace(-1.0, 1.0, 256 + 1)[:-1]
    return np.digitize(np.asarray(state, dtype=np.float64), bins=edges) - 1


def tokenize(sp, prompt, state, max_len):
    cleaned = clean(prompt)
    if state is None:
        tokens = sp.encode(cleaned, add_bos=True) + sp.encode("\n")
    else:
        bins = " ".join(str(int(b)) for b in state_bins(state))
        tokens = sp.encode(f"Task: {cleaned}, State: {bins};\nAction: ", add_bos=True)
    full_length = len(tokens)
    if len(tokens) < max_len:
        mask = [1] * len(tokens) + [0] * (max_len - len(tokens))
        tokens = tokens + [0] * (max_len - len(tokens))
    else:
        tokens = tokens[:max_len]
        mask = [1] * max_len
    return {"tokens": tokens, "mask": mask, "full_length": full_length,
            "pieces": [sp.id_to_piece(t) for t in tokens]}


def cmd_tokenize(model, cases_path, out_path):
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor()
    sp.load(model)
    with open(cases_path) as f:
        cases = json.load(f)
    results = [tokenize(sp, c["prompt"], c["state"], c["max_len"]) for c in cases]
    with open(out_path, "w") as f:
        json.dump(results, f)


def main(argv):
    if len(argv) == 3 and argv[1] == "resize":
        cmd_resize(argv[2])
    elif len(argv) == 5 and argv[1] == "tokenize":
        cmd_tokenize(argv[2], argv[3], argv[4])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
