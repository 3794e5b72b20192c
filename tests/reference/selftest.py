#!/usr/bin/python3
"""Self-test of the NumPy reference (NumPy only, tiny generated checkpoints, a few seconds).

  selftest.py        exits non-zero and names the failed checks on failure
"""

import json
import os
import shutil
import sys
import tempfile
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import make_checkpoint  # noqa: E402
import pi0_numpy  # noqa: E402
import safetensors_io  # noqa: E402

# model.md §8: the float32 times of the 10-step Euler loop, as printed there.
DOC_TIMES = [1.0, 0.8999999761581421, 0.7999999523162842, 0.6999999284744263, 0.5999999046325684,
             0.49999991059303284, 0.3999999165534973, 0.2999999225139618, 0.19999992847442627,
             0.09999992698431015]


class Fixture:
    """Tiny pi0 and pi0.5 checkpoints (f32) in a temporary folder."""

    def __init__(self, root):
        self.root = root
        self.configs, self.models = {}, {}
        for mt in ("pi0", "pi05"):
            cfg = make_checkpoint.make_config("tiny", mt)
            make_checkpoint.write_checkpoint(self.dir(mt), cfg, seed=7)
            self.configs[mt] = cfg
            self.models[mt] = pi0_numpy.load_checkpoint(self.dir(mt))

    def dir(self, name):
        return os.path.join(self.root, name)

    def inputs(self, mt, masked_camera=1, seed=3):
        # A prompt of 29 real tokens out of T = 48: padding at the end.
        return make_checkpoint.make_inputs(self.configs[mt], seed, masked_camera, prompt_len=29)


def run(model, inputs, skip_masked=False):
    return pi0_numpy.infer(model, inputs, skip_masked)[0]


def check(ok, message):
    if not ok:
        raise AssertionError(message)


def check_outputs_close(ref, got, tol, what):
    failed = [r for r in compare.compare(ref, got, compare.OUTPUTS, tol) if r[4]]
    check(not failed, f"{what}: " + "; ".join(
        f"{name} {problem}" + (f" (rel-L2 {err:.3e})" if err is not None else "")
        for name, _, err, _, problem in failed))


def test_skip_masked(fx):
    """(a) skip_masked gives the literal path's valid outputs, for a masked first / middle camera."""
    for mt in ("pi0", "pi05"):
        for cam in (0, 1):
            inputs = fx.inputs(mt, masked_camera=cam)
            literal = run(fx.models[mt], inputs)
            skipped = run(fx.models[mt], inputs, skip_masked=True)
            check_outputs_close({**inputs, **literal}, {**inputs, **skipped}, 1e-6,
                                f"{mt}, camera {cam} masked: skip_masked vs literal")
            # The finite mask constant keeps the garbage rows of masked tokens finite (model.md §11.3).
            model = fx.models[mt]
            vision = pi0_numpy.embed_images(model, inputs["images"])
            prefix = pi0_numpy.build_prefix(model, vision, inputs["image_mask"], inputs["tokens"],
                                            inputs["token_mask"])
            cache = pi0_numpy.prefix_pass(model, prefix)
            check(np.isfinite(cache.k).all() and np.isfinite(cache.v).all(),
                  f"{mt}: non-finite K/V in masked prefix rows of the literal path")


def test_masked_content_ignored(fx):
    """(b) pixels of a masked camera and token ids at padded positions do not change any output."""
    rng = np.random.default_rng(11)
    for mt in ("pi0", "pi05"):
        inputs = fx.inputs(mt)
        base = run(fx.models[mt], inputs)
        changed = {k: v.copy() for k, v in inputs.items()}
        masked = ~inputs["image_mask"].astype(bool)
        changed["images"][masked] = rng.uniform(-1, 1, changed["images"][masked].shape)
        padded = ~inputs["token_mask"].astype(bool)
        changed["tokens"][padded] = rng.integers(0, fx.configs[mt]["vlm"]["vocab_size"], padded.sum())
        other = run(fx.models[mt], changed)
        for name in compare.OUTPUTS:
            diff = float(np.max(np.abs(base[name].astype(np.float64) - other[name])))
            check(diff == 0, f"{mt}: {name} changed by {diff:.3e} when only masked pixels / padded token ids changed")


def test_euler_times(fx):
    """(c) the Euler loop evaluates the velocity at exactly the float32 times of model.md §8."""
    model = fx.models["pi05"]
    inputs = fx.inputs("pi05")
    vision = pi0_numpy.embed_images(model, inputs["images"])
    prefix = pi0_numpy.build_prefix(model, vision, inputs["image_mask"], inputs["tokens"], inputs["token_mask"])
    cache = pi0_numpy.prefix_pass(model, prefix)
    _, velocities, times = pi0_numpy.sample_actions(model, cache, inputs["noise"], inputs["state"], 10)
    check(len(times) == 10 and velocities.shape[0] == 10, f"expected 10 steps, got {len(times)}")
    check(all(type(t) is np.float32 for t in times), "times are not float32 scalars")
    got = [float(t) for t in times]
    check(got == DOC_TIMES, f"times {got} differ from model.md §8 {DOC_TIMES}")


def test_low_precision_copies(fx):
    """(d) BF16 and F16 copies of a checkpoint load as float32 and give close outputs."""
    for mt in ("pi0", "pi05"):
        ref_model = fx.models[mt]
        inputs = fx.inputs(mt)
        ref = run(ref_model, inputs)
        tensors = safetensors_io.load(os.path.join(fx.dir(mt), "model.safetensors"))
        for dtype, tol in (("BF16", 3e-2), ("F16", 3e-3)):
            d = fx.dir(f"{mt}_{dtype}")
            os.makedirs(d)
            shutil.copy(os.path.join(fx.dir(mt), "config.json"), d)
            safetensors_io.save(os.path.join(d, "model.safetensors"), tensors, dtypes={k: dtype for k in tensors})
            model = pi0_numpy.load_checkpoint(d)
            name = "action_in_proj.weight"
            w, w32 = model.w[name], ref_model.w[name]
            check(w.dtype == np.float32, f"{mt} {dtype}: {name} loaded as {w.dtype}, not float32")
            rounded = (safetensors_io.bf16_bits_to_f32(safetensors_io.f32_to_bf16_bits(w32)) if dtype == "BF16"
                       else w32.astype(np.float16).astype(np.float32))
            check(np.array_equal(w, rounded), f"{mt} {dtype}: loaded weights are not the {dtype}-rounded originals")
            check_outputs_close({**inputs, **ref}, {**inputs, **run(model, inputs)}, tol,
                                f"{mt}: {dtype} copy vs f32 checkpoint")


def test_safetensors():
    """(e) round trip of every dtype with metadata, bf16 rounding, errors on damaged files."""
    rng = np.random.default_rng(5)
    tensors = {
        "f32": rng.standard_normal((3, 4)).astype(np.float32),
        "f16": rng.standard_normal(7).astype(np.float16),
        "f64": rng.standard_normal((2, 2, 2)),
        "i32": rng.integers(-2**31, 2**31, 5, dtype=np.int32),
        "i64": rng.integers(-2**62, 2**62, (2, 3), dtype=np.int64),
        "u8": rng.integers(0, 256, 9, dtype=np.uint8),
        "bool": rng.integers(0, 2, 6).astype(bool),
        "scalar": np.array(1.5, np.float32),
        "empty": np.zeros((0, 4), np.float32),
    }
    # BF16: exact values, ties to even (1 + 2^-8 -> 1, 1 + 3·2^-8 -> 1 + 2^-6), overflow to inf, NaN kept.
    bf16_in = np.array([1.0, -2.5, 1 + 2**-8, 1 + 3 * 2**-8, 3.4e38, np.inf, np.nan], np.float32)
    bf16_out = np.array([1.0, -2.5, 1.0, 1 + 2**-6, np.inf, np.inf, np.nan], np.float32)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.safetensors")
        safetensors_io.save(path, {**tensors, "bf16": bf16_in}, metadata={"k": "v"}, dtypes={"bf16": "BF16"})
        f = safetensors_io.SafetensorsFile(path)
        check(f.metadata == {"k": "v"}, f"metadata round trip gave {f.metadata}")
        for name, a in tensors.items():
            b = f.raw(name)
            check(b.dtype == a.dtype and b.shape == a.shape and np.array_equal(a, b),
                  f"round trip of {name}: {a.dtype} {a.shape} came back as {b.dtype} {b.shape} or changed")
        check(f.get("f16").dtype == np.float32 and np.array_equal(f.get("f16"), tensors["f16"]),
              "F16 tensor is not widened to an equal float32 array by get()")
        check(f.dtype("bf16") == "BF16", f"bf16 tensor stored as {f.dtype('bf16')}")
        check(np.array_equal(f.get("bf16"), bf16_out, equal_nan=True),
              f"bf16 rounding: {bf16_in} -> {f.get('bf16')}, expected {bf16_out}")
        del f
        with open(path, "rb") as fh:
            data = fh.read()
        damaged = {"truncated data": data[:-3], "truncated header": data[:20], "too short": data[:5],
                   "bad JSON": data[:8] + b"{" * (len(data) - 8)}
        for what, blob in damaged.items():
            bad = os.path.join(d, "bad.safetensors")
            with open(bad, "wb") as fh:
                fh.write(blob)
            try:
                safetensors_io.load(bad)
            except safetensors_io.SafetensorsError:
                continue
            raise AssertionError(f"{what} file was read without error")


def test_loader(fx):
    """(f) the embedding table under its other name loads; bad configs fail naming the problem."""
    inputs = fx.inputs("pi0")
    ref = run(fx.models["pi0"], inputs)
    tensors = safetensors_io.load(os.path.join(fx.dir("pi0"), "model.safetensors"))
    tensors[pi0_numpy.EMBED_KEYS[1]] = tensors.pop(pi0_numpy.EMBED_KEYS[0])
    d = fx.dir("pi0_embed_tokens")
    os.makedirs(d)
    safetensors_io.save(os.path.join(d, "model.safetensors"), tensors)
    cfg = fx.configs["pi0"]
    bad_configs = {"no_such_key": ({**cfg, "no_such_key": 1}, "no_such_key"),
                   "pi05": ({**cfg, "model_type": "pi05"}, "model_type"),
                   "depth": ({**cfg, "expert": {**cfg["expert"], "depth": 3}}, "depth"),
                   "head_dim": ({**cfg, "vlm": {**cfg["vlm"], "head_dim": 8}}, "head_dim")}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    other = run(pi0_numpy.load_checkpoint(d), inputs)
    check(all(np.array_equal(ref[k], other[k]) for k in ref), "embed_tokens-named table gives different outputs")
    for what, (bad, needle) in bad_configs.items():
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(bad, f)
        try:
            pi0_numpy.load_checkpoint(d)
        except pi0_numpy.ConfigError as e:
            check(needle in str(e), f"config with bad {what}: error does not name it: {e}")
            continue
        raise AssertionError(f"config with bad {what} loaded without error")


def main():
    start = time.perf_counter()
    failures = 0
    with tempfile.TemporaryDirectory() as root:
        fx = Fixture(root)
        tests = [(test_skip_masked, fx), (test_masked_content_ignored, fx), (test_euler_times, fx),
                 (test_low_precision_copies, fx), (test_safetensors,), (test_loader, fx)]
        for fn, *args in tests:
            t0 = time.perf_counter()
            try:
                fn(*args)
                status = "ok"
            except Exception as e:  # report every check, not just the first failure
                failures += 1
                status = f"FAIL: {e}"
                if not isinstance(e, AssertionError):
                    traceback.print_exc()
            print(f"{fn.__name__:<30} {time.perf_counter() - t0:6.2f} s  {status}")
            print(f"    {fn.__doc__.strip()}")
    print(f"{'FAILED' if failures else 'passed'}: {failures} of {len(tests)} checks failed "
          f"({time.perf_counter() - start:.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
