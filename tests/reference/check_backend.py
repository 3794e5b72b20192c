#!/usr/bin/env python3
"""Compares edgevla's CPU backend with the NumPy reference on generated tiny checkpoints.

For each case: `edgevla model init` writes a seeded checkpoint, `edgevla model forward`
runs the model on seeded inputs and writes inputs + outputs (docs/checkpoint.md §5),
pi0_numpy.py recomputes the outputs from the same inputs, and compare.py checks every
output (vision embeddings, prefix K/V, the velocity of every step, the final actions)
against the tolerance. Exits 1 when any case fails.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# name, model, dtype, seed, masked camera slots, prompt tokens, steps
CASES = [
    ("pi05-one-masked", "pi05", "f32", 1, [2], 12, 10),
    ("pi05-two-masked-long-prompt", "pi05", "f32", 2, [0, 2], 48, 10),
    ("pi0-one-masked", "pi0", "f32", 3, [1], 20, 10),
    ("pi0-all-cameras-4-steps", "pi0", "f32", 4, [], 30, 4),
    ("pi05-bf16-weights", "pi05", "bf16", 5, [1], 16, 10),
    ("pi0-f16-weights", "pi0", "f16", 6, [], 8, 10),
]


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write("command failed: %s\n%s%s" % (" ".join(cmd), result.stdout, result.stderr))
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--edgevla", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tol", default="1e-4")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    failed = []
    for name, model, dtype, seed, masked, tokens, steps in CASES:
        ckpt = os.path.join(args.work, name)
        got = os.path.join(args.work, name + ".got.safetensors")
        ref = os.path.join(args.work, name + ".ref.safetensors")
        cmd = [args.edgevla, "model", "init", "--config", "tiny", "--model", model, "--seed", str(seed),
               "--dtype", dtype, "--out", ckpt]
        ok = run(cmd).returncode == 0
        if ok:
            cmd = [args.edgevla, "model", "forward", "--checkpoint", ckpt, "--seed", str(seed * 7),
                   "--prompt-tokens", str(tokens), "--steps", str(steps), "--out", got]
            for m in masked:
                cmd += ["--masked", str(m)]
            ok = run(cmd).returncode == 0
        if ok:
            ok = run([sys.executable, os.path.join(HERE, "pi0_numpy.py"), "--checkpoint", ckpt,
                      "--inputs", got, "--out", ref]).returncode == 0
        if ok:
            result = run([sys.executable, os.path.join(HERE, "compare.py"), "--ref", ref, "--got", got,
                          "--tol", args.tol])
            print("== %s (%s, %s weights, masked %s, %d tokens, %d steps)" % (name, model, dtype, masked, tokens, steps))
            print(result.stdout, end="")
            ok = result.returncode == 0
        if not ok:
            failed.append(name)
    if failed:
        print("FAILED: " + ", ".join(failed))
        return 1
    print("all %d cases within %s" % (len(CASES), args.tol))
    return 0


if __name__ == "__main__":
    sys.exit(main())
