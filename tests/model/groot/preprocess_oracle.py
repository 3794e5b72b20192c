#!/usr/bin/python3
"""The Python side of tests/model/groot/preprocessor_test.cpp: groot_numpy.py's `preprocess` on
seeded frames and state.

  preprocess_oracle.py CHECKPOINT OUT_DIR EMBODIMENT HxW SEED LETTERBOX(auto|on|off) PAD_TO(0: none) INSTRUCTION

OUT_DIR holds: frame.k (uint8 [H, W, 3] raw) per view; state.json ({group: [values]}, the raw
state); pixel_values.k (float32 [3, H', W'] raw) and size.k ("H' W'"); input_ids (int32 raw);
attention_mask (uint8 raw); state (float32 [max_state_dim] raw); meta.json (embodiment id,
tokens per view, prompt, letterbox).
"""

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reference", "groot"))
import groot_numpy  # noqa: E402


def main():
    ck, out, tag, size, seed, lb, pad_to, instruction = sys.argv[1:9]
    ckpt = groot_numpy.Checkpoint(ck, None)
    h, w = (int(v) for v in size.split("x"))
    views = ckpt.processor["modality_configs"][tag]["video"]["modality_keys"]
    frames = groot_numpy.random_frames(len(views), (h, w), int(seed))
    state = groot_numpy.random_state(ckpt, tag, int(seed))
    pre = groot_numpy.preprocess(ckpt, frames, instruction, tag, state, lb, int(pad_to) or None, np.float32)
    for k, f in enumerate(frames):
        f.tofile(os.path.join(out, f"frame.{k}"))
        px = np.ascontiguousarray(pre["pixel_values"][k], np.float32)
        px.tofile(os.path.join(out, f"pixel_values.{k}"))
        with open(os.path.join(out, f"size.{k}"), "w") as fh:
            fh.write(f"{px.shape[1]} {px.shape[2]}\n")
    with open(os.path.join(out, "state.json"), "w") as fh:
        json.dump({g: [float(v) for v in vals] for g, vals in state.items()}, fh)
    pre["input_ids"].astype(np.int32).tofile(os.path.join(out, "input_ids"))
    pre["attention_mask"].astype(np.uint8).tofile(os.path.join(out, "attention_mask"))
    np.asarray(pre["state"], np.float32).tofile(os.path.join(out, "state"))
    with open(os.path.join(out, "meta.json"), "w") as fh:
        json.dump({"embodiment_id": pre["embodiment_id"], "tokens_per_view": list(pre["tokens_per_view"]),
                   "prompt": pre["prompt"], "letterbox": bool(pre["letterbox"])}, fh)


if __name__ == "__main__":
    main()
