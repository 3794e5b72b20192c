#!/usr/bin/python3
"""Compare the outputs of two inference I/O files (docs/checkpoint.md §5).

  compare.py --ref REF.safetensors --got GOT.safetensors [--tol 1e-4] [--only name,name]

Relative L2 ‖got − ref‖ / max(‖ref‖, 1e-12) over the valid entries only: cameras with
image_mask 1 for vision_embeddings, prefix rows with prefix_mask 1 for prefix_k / prefix_v.
prefix_mask must match exactly. Exits 1 if any output is missing, misshaped, non-finite or
above the tolerance.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

OUTPUTS = ("vision_embeddings", "prefix_k", "prefix_v", "prefix_mask", "velocities", "actions")


def rel_l2(got, ref):
    got, ref = got.astype(np.float64), ref.astype(np.float64)
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-12))


def image_mask_of(ref, got):
    masks = [f["image_mask"].astype(bool) for f in (ref, got) if "image_mask" in f]
    if not masks:
        raise ValueError("image_mask is in neither file; it is needed to compare vision_embeddings")
    if len(masks) == 2 and not np.array_equal(*masks):
        raise ValueError(f"the files disagree on image_mask: ref {masks[0].astype(int)}, got {masks[1].astype(int)}")
    return masks[0]


def compare(ref, got, names, tol):
    """Rows (name, entries compared, rel-L2 or None, max |diff| or None, problem or None)."""
    rows = []
    for name in names:
        problem = None
        if name not in ref or name not in got:
            problem = f"missing in {'ref' if name not in ref else 'got'}"
        elif ref[name].shape != got[name].shape:
            problem = f"shape got {list(got[name].shape)} != ref {list(ref[name].shape)}"
        if problem:
            rows.append((name, 0, None, None, problem))
            continue
        r, g = ref[name], got[name]
        if name == "prefix_mask":
            n_diff = int(np.count_nonzero(r != g))
            rows.append((name, r.size, None, None, f"{n_diff} entries differ (must be equal)" if n_diff else None))
            continue
        if name == "vision_embeddings":
            keep = image_mask_of(ref, got)
            if keep.shape != r.shape[:1]:
                raise ValueError(f"image_mask has {keep.size} cameras but {name} has {r.shape[0]}")
            r, g = r[keep], g[keep]
        elif name in ("prefix_k", "prefix_v"):
            if "prefix_mask" not in ref:
                raise ValueError(f"ref has no prefix_mask; it is needed to compare {name}")
            keep = ref["prefix_mask"].astype(bool)
            if r.ndim < 2 or keep.shape != r.shape[1:2]:
                raise ValueError(f"prefix_mask has {keep.size} entries but {name} has shape {list(r.shape)}")
            r, g = r[:, keep], g[:, keep]
        nonfinite = [w for w, a in (("ref", r), ("got", g)) if not np.all(np.isfinite(a))]
        if nonfinite:
            rows.append((name, r.size, None, None, f"{' and '.join(nonfinite)} hold non-finite values"))
            continue
        err = rel_l2(g, r)
        max_abs = float(np.max(np.abs(g.astype(np.float64) - r))) if r.size else 0.0
        rows.append((name, r.size, err, max_abs, None if err <= tol else f"rel-L2 above {tol:g}"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", required=True)
    ap.add_argument("--got", required=True)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--only", help="comma-separated output names to compare (default: all)")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(OUTPUTS)
    unknown = [n for n in names if n not in OUTPUTS]
    if unknown:
        ap.error(f"unknown output name(s) {unknown}; outputs are {', '.join(OUTPUTS)}")
    try:
        ref, got = safetensors_io.load(args.ref), safetensors_io.load(args.got)
        rows = compare(ref, got, names, args.tol)
    except ValueError as e:
        print(f"compare: {e}", file=sys.stderr)
        return 1
    print(f"{'output':<18} {'entries':>10} {'rel-L2':>11} {'max|diff|':>11}  status")
    for name, n, err, max_abs, problem in rows:
        fmt = lambda x: f"{x:11.3e}" if x is not None else f"{'-':>11}"  # noqa: E731
        print(f"{name:<18} {n:>10} {fmt(err)} {fmt(max_abs)}  {'FAIL: ' + problem if problem else 'ok'}")
    failed = [r[0] for r in rows if r[4]]
    if failed:
        print(f"FAILED (tol {args.tol:g}): {', '.join(failed)}")
        return 1
    print(f"all {len(rows)} outputs within tol {args.tol:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
