#!/usr/bin/python3
"""The Python side of tests/model/groot/embodiment_test.cpp: the NumPy reference's state
normalisation and action decoding (tests/reference/groot/groot_numpy.py) on seeded inputs, for
every embodiment of a checkpoint.

  normalization_oracle.py CHECKPOINT OUT.safetensors [SEED]
  normalization_oracle.py --float64 IN.safetensors OUT.safetensors

The second form rewrites groot_numpy.py's --out file with every floating tensor as float64 and
the rest left out (its mixed dtypes leave tensors unaligned, which edgevla's reader refuses).

Per embodiment tag T, OUT holds:
  T.raw_state.<group>     float32 [D]   raw state, drawn wide around the statistics (some values
                                        outside [min, max], so clipping matters)
  T.state                 float32 [max_state_dim]  normalize_state(...)
  T.actions_normalized    float32 [horizon, max_action_dim]  N(0, 0.8²) (some beyond ±1)
  T.action.<group>        float64 [H_e, D]  decode_actions(...)
Every tensor is stored as float64 (values of float32 ones unchanged), so all are aligned.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reference", "groot"))
sys.path.append(os.path.join(HERE, "..", "..", "reference"))
import groot_numpy  # noqa: E402
import safetensors_io  # noqa: E402


def main(argv):
    if argv[1] == "--float64":
        src = safetensors_io.load(argv[2])
        safetensors_io.save(argv[3], {k: np.asarray(v, np.float64) for k, v in src.items()
                                      if np.asarray(v).dtype.kind == "f"})
        return 0
    ckpt = groot_numpy.Checkpoint(argv[1])
    seed = int(argv[3]) if len(argv) > 3 else 0
    cfg = ckpt.config
    out = {}
    for k, tag in enumerate(sorted(ckpt.processor["modality_configs"])):
        rng = np.random.default_rng([seed, 101, k])
        state = {}
        for group in ckpt.processor["modality_configs"][tag]["state"]["modality_keys"]:
            s = ckpt.statistics[tag]["state"][group]
            lo, hi = np.asarray(s["min"]), np.asarray(s["max"])
            mid, half = (lo + hi) / 2, np.maximum((hi - lo) / 2, 0.1)
            state[group] = (mid + rng.uniform(-1.4, 1.4, mid.shape) * half).astype(np.float32)
        norm = groot_numpy.normalize_state(ckpt, tag, state, int(cfg["max_state_dim"]), np.float32)
        actions = (rng.standard_normal((int(cfg["action_horizon"]), int(cfg["max_action_dim"]))) * 0.8
                   ).astype(np.float32)
        decoded = groot_numpy.decode_actions(ckpt, tag, actions, state)
        out.update({f"{tag}.raw_state.{g}": v for g, v in state.items()})
        out[f"{tag}.state"] = np.asarray(norm, np.float32)
        out[f"{tag}.actions_normalized"] = actions
        out.update({f"{tag}.action.{g}": np.asarray(a, np.float64) for g, a in decoded.items()})
    safetensors_io.save(argv[2], {k: np.asarray(v, np.float64) for k, v in out.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
