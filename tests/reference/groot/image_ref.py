"""GR00T N1.6's image pipeline in NumPy, to the rounding (../shared/notes/groot-n16.md §2, §8).

Eval transform (albumentations path): optional letterbox (black bars to a square, top/left get
floor(pad/2)), SmallestMaxSize(256, cv2.INTER_AREA), centre crop to int(0.95 H) x int(0.95 W)
at ((H-h)//2, (W-w)//2), SmallestMaxSize(256) again; then the Eagle processor's smart_resize
to multiples of 28 and a Pillow bicubic resize; pixels (x - 127.5) / 127.5.

OpenCV INTER_AREA and Pillow's bicubic are written out from their algorithms (integer and
float32 steps as their C code does them on x86-64 without FMA), since neither library is used
here. Images are uint8 arrays [H, W, 3] (RGB).
"""

import math
import struct
import zlib

import numpy as np

DBL_EPSILON = np.finfo(np.float64).eps


def round_half_even(x):
    """Python's round (ties to even), as albumentations and smart_resize use it."""
    return int(round(x))


# --- OpenCV INTER_AREA -------------------------------------------------------------------------

def _area_tab(ssize, dsize, scale):
    """computeResizeAreaTab: [(dst index, src index, float32 weight)] in OpenCV's order."""
    tab = []
    for dx in range(dsize):
        fsx1 = dx * scale
        fsx2 = fsx1 + scale
        cell = min(scale, ssize - fsx1)
        sx1, sx2 = math.ceil(fsx1), math.floor(fsx2)
        sx2 = min(sx2, ssize - 1)
        sx1 = min(sx1, sx2)
        if sx1 - fsx1 > 1e-3:
            tab.append((dx, sx1 - 1, np.float32((sx1 - fsx1) / cell)))
        for sx in range(sx1, sx2):
            tab.append((dx, sx, np.float32(1.0 / cell)))
        if fsx2 - sx2 > 1e-3:
            tab.append((dx, sx2, np.float32(min(min(fsx2 - sx2, 1.0), cell) / cell)))
    return tab


def _padded(tab, dsize):
    """The table as [dsize, K] index / weight arrays (weight 0 pads; adding +0.0 is exact)."""
    per = [[] for _ in range(dsize)]
    for d, s, w in tab:
        per[d].append((s, w))
    k = max(len(p) for p in per)
    idx = np.zeros((dsize, k), np.int64)
    wt = np.zeros((dsize, k), np.float32)
    for d, p in enumerate(per):
        for j, (s, w) in enumerate(p):
            idx[d, j], wt[d, j] = s, w
    return idx, wt


def _resize_area_float(img, nh, nw, scale_x, scale_y):
    """ResizeArea_Invoker: float32 sums, horizontal per source row, then vertical, cvRound."""
    h, w, c = img.shape
    xi, xw = _padded(_area_tab(w, nw, scale_x), nw)
    yi, yw = _padded(_area_tab(h, nh, scale_y), nh)
    src = img.astype(np.float32)
    buf = np.zeros((h, nw, c), np.float32)
    for k in range(xi.shape[1]):
        buf = buf + src[:, xi[:, k], :] * xw[None, :, k, None]
    out = yw[:, 0, None, None] * buf[yi[:, 0]]
    for k in range(1, yi.shape[1]):
        out = out + yw[:, k, None, None] * buf[yi[:, k]]
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def _resize_area_fast(img, sx, sy):
    """resizeAreaFast for integer factors: 2x2 on 1/3/4 channels is (sum + 2) >> 2, other
    factors saturate_cast(sum * (1.f / area)) with round-half-even."""
    h, w, c = img.shape
    nh, nw = h // sy, w // sx
    blocks = img[:nh * sy, :nw * sx].astype(np.int64).reshape(nh, sy, nw, sx, c)
    total = blocks.sum(axis=(1, 3))
    if sx == 2 and sy == 2 and c in (1, 3, 4):
        return ((total + 2) >> 2).astype(np.uint8)
    prod = total.astype(np.float32) * (np.float32(1.0) / np.float32(sx * sy))
    return np.clip(np.rint(prod), 0, 255).astype(np.uint8)


def _linear_area_coeffs(ssize, dsize, clamp_border):
    """INTER_AREA's emulation when enlarging (or mixed): source index and 11-bit fixed-point
    weights per destination index, and xmax, the first index from which the right border
    is clamped. OpenCV fixes the border coefficients of columns only (clamp_border); rows
    past the bottom are clamped when they are read."""
    inv_scale = dsize / ssize
    scale = 1.0 / inv_scale
    idx = np.zeros(dsize, np.int64)
    w0 = np.zeros(dsize, np.int64)
    w1 = np.zeros(dsize, np.int64)
    xmax = dsize
    for d in range(dsize):
        s = math.floor(d * scale)
        f = np.float32((d + 1) - (s + 1) * inv_scale)
        f = np.float32(0.0) if f <= 0 else np.float32(f - np.float32(math.floor(f)))
        if clamp_border and s + 1 >= ssize:
            xmax = min(xmax, d)
            if s >= ssize - 1:
                f, s = np.float32(0.0), ssize - 1
        idx[d] = s
        w0[d] = int(np.rint((np.float32(1.0) - f) * np.float32(2048)))
        w1[d] = int(np.rint(f * np.float32(2048)))
    return idx, w0, w1, xmax


def _resize_linear_area(img, nh, nw):
    """The bilinear fixed-point path with area coefficients: horizontal products S*a in int,
    vertical ((b0 * (R0 >> 4)) >> 16) + ((b1 * (R1 >> 4)) >> 16) + 2) >> 2."""
    h, w, c = img.shape
    xi, a0, a1, xmax = _linear_area_coeffs(w, nw, True)
    yi, b0, b1, _ = _linear_area_coeffs(h, nh, False)
    src = img.astype(np.int64)
    right = np.minimum(xi + 1, w - 1)
    rows = src[:, xi, :] * a0[None, :, None] + src[:, right, :] * a1[None, :, None]
    rows[:, xmax:, :] = src[:, xi[xmax:], :] * 2048
    r0 = rows[np.clip(yi, 0, h - 1)]
    r1 = rows[np.clip(yi + 1, 0, h - 1)]
    out = (((b0[:, None, None] * (r0 >> 4)) >> 16) + ((b1[:, None, None] * (r1 >> 4)) >> 16) + 2) >> 2
    return np.clip(out, 0, 255).astype(np.uint8)


def resize_area(img, nh, nw):
    """cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA) for uint8 [H, W, C]."""
    h, w = img.shape[:2]
    if (nh, nw) == (h, w):
        return img.copy()
    inv_x, inv_y = nw / w, nh / h
    scale_x, scale_y = 1.0 / inv_x, 1.0 / inv_y
    if scale_x >= 1 and scale_y >= 1:
        ix, iy = round_half_even(scale_x), round_half_even(scale_y)
        if abs(scale_x - ix) < DBL_EPSILON and abs(scale_y - iy) < DBL_EPSILON:
            return _resize_area_fast(img, ix, iy)
        return _resize_area_float(img, nh, nw, scale_x, scale_y)
    return _resize_linear_area(img, nh, nw)


# --- Pillow's bicubic ------------------------------------------------------------------------------

_PRECISION_BITS = 32 - 8 - 2


def _bicubic(x):
    a = -0.5
    x = abs(x)
    if x < 1.0:
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    if x < 2.0:
        return (((x - 5) * x + 8) * x - 4) * a
    return 0.0


def _pil_coeffs(in_size, out_size):
    """precompute_coeffs + normalize_coeffs_8bpc: (xmin, [int32 coefficients]) per output."""
    scale = float(in_size) / out_size
    filterscale = max(scale, 1.0)
    support = 2.0 * filterscale
    out = []
    for xx in range(out_size):
        center = (xx + 0.5) * scale
        ss = 1.0 / filterscale
        xmin = max(int(center - support + 0.5), 0)
        xmax = min(int(center + support + 0.5), in_size) - xmin
        ws = [_bicubic((x + xmin - center + 0.5) * ss) for x in range(xmax)]
        total = 0.0
        for wv in ws:
            total += wv
        if total != 0.0:
            ws = [wv / total for wv in ws]
        ks = [int(-0.5 + wv * (1 << _PRECISION_BITS)) if wv < 0 else int(0.5 + wv * (1 << _PRECISION_BITS))
              for wv in ws]
        out.append((xmin, ks))
    return out


def _pil_pass(img, out_size, axis):
    """One separable pass along `axis` (1 = horizontal, 0 = vertical) of uint8 [H, W, C]."""
    coeffs = _pil_coeffs(img.shape[axis], out_size)
    k = max(len(ks) for _, ks in coeffs)
    idx = np.zeros((out_size, k), np.int64)
    kk = np.zeros((out_size, k), np.int64)
    for o, (xmin, ks) in enumerate(coeffs):
        idx[o, :len(ks)] = np.arange(xmin, xmin + len(ks))
        kk[o, :len(ks)] = ks
    src = np.moveaxis(img.astype(np.int64), axis, 0)  # [in, other, C]
    acc = np.full((out_size,) + src.shape[1:], 1 << (_PRECISION_BITS - 1), np.int64)
    for j in range(k):
        acc += src[idx[:, j]] * kk[:, j, None, None]
    out = np.clip(acc >> _PRECISION_BITS, 0, 255)
    out[acc <= 0] = 0
    return np.moveaxis(out.astype(np.uint8), 0, axis)


def resize_bicubic_pil(img, nh, nw):
    """PIL.Image.fromarray(img).resize((nw, nh)) (BICUBIC, Pillow's default for resize):
    horizontal pass then vertical, each rounded to uint8; an axis whose size is unchanged is
    not resampled."""
    h, w = img.shape[:2]
    out = img
    if nw != w:
        out = _pil_pass(out, nw, 1)
    if nh != h:
        out = _pil_pass(out, nh, 0)
    return out.copy() if out is img else out


# --- the GR00T / Eagle pipeline ---------------------------------------------------------------------

def letterbox(img):
    """Pad to a square with zeros (cv2.copyMakeBorder): top/left get floor(pad / 2)."""
    h, w = img.shape[:2]
    if h == w:
        return img
    side = max(h, w)
    top, left = (side - h) // 2, (side - w) // 2
    out = np.zeros((side, side) + img.shape[2:], img.dtype)
    out[top:top + h, left:left + w] = img
    return out


def smallest_max_size_shape(h, w, max_size):
    """albumentations SmallestMaxSize: scale = max_size / min(h, w); sizes round(dim * scale)."""
    scale = max_size / float(min(h, w))
    if scale == 1.0:
        return h, w
    return round_half_even(h * scale), round_half_even(w * scale)


def smallest_max_size(img, max_size):
    nh, nw = smallest_max_size_shape(img.shape[0], img.shape[1], max_size)
    return resize_area(img, nh, nw)


def center_crop_fraction(img, fraction):
    """FractionalCenterCrop: int(H * f) x int(W * f) at ((H - h) // 2, (W - w) // 2)."""
    h, w = img.shape[:2]
    ch, cw = max(1, int(h * fraction)), max(1, int(w * fraction))
    y0, x0 = (h - ch) // 2, (w - cw) // 2
    return img[y0:y0 + ch, x0:x0 + cw]


FACTOR, MIN_PIXELS, MAX_PIXELS, MAX_RATIO, MAX_SIDE = 28, 4 * 28 * 28, 4096 * 28 * 28, 200, 7000


def smart_resize(h, w, factor=FACTOR, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS):
    """Eagle's smart_resize: multiples of `factor`, rounded half-to-even, at most 7000; rescaled
    only when the area leaves [min_pixels, max_pixels]."""
    if max(h, w) / min(h, w) > MAX_RATIO:
        raise ValueError(f"image {w}x{h}: aspect ratio above {MAX_RATIO}")
    hb = min(max(factor, round_half_even(h / factor) * factor), MAX_SIDE)
    wb = min(max(factor, round_half_even(w / factor) * factor), MAX_SIDE)
    if hb * wb > max_pixels:
        beta = math.sqrt((hb * wb) / max_pixels)
        hb = math.floor(hb / beta / factor) * factor
        wb = math.floor(wb / beta / factor) * factor
    elif hb * wb < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        hb = math.ceil(h * beta / factor) * factor
        wb = math.ceil(w * beta / factor) * factor
    return hb, wb


def eval_transform(img, shortest_edge=256, crop_fraction=0.95, use_letterbox=False):
    """GR00T's albumentations eval transform of one uint8 frame."""
    if use_letterbox:
        img = letterbox(img)
    img = smallest_max_size(img, shortest_edge)
    img = center_crop_fraction(img, crop_fraction)
    return smallest_max_size(img, shortest_edge)


def preprocess_frame(img, shortest_edge=256, crop_fraction=0.95, use_letterbox=False):
    """One camera frame -> (uint8 [H', W', 3] as the vision tower sees it, tokens after unshuffle)."""
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise ValueError(f"a frame must be uint8 [H, W, 3], got {img.dtype} {list(img.shape)}")
    img = eval_transform(img, shortest_edge, crop_fraction, use_letterbox)
    nh, nw = smart_resize(img.shape[0], img.shape[1])
    img = resize_bicubic_pil(img, nh, nw)
    return img, (nh * nw) // (FACTOR * FACTOR)


def normalize_pixels(img):
    """uint8 [H, W, 3] -> float32 [3, H, W], (x - 127.5) / 127.5 computed in float32."""
    x = img.astype(np.float32).transpose(2, 0, 1)
    return (x - np.float32(127.5)) / np.float32(127.5)


# --- PNG (standard library zlib) --------------------------------------------------------------------

def read_png(path):
    """8-bit non-interlaced PNG -> uint8 [H, W, 3] (grey replicated, alpha dropped)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG file")
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if ihdr is None:
        raise ValueError(f"{path}: no IHDR chunk")
    w, h, depth, ctype, _, _, interlace = ihdr
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"{path}: only 8-bit non-interlaced grey/RGB(A) PNGs are read "
                         f"(bit depth {depth}, colour type {ctype}, interlace {interlace}); "
                         "convert it or pass a .npy frame")
    raw = zlib.decompress(b"".join(idat))
    stride = w * channels
    out = np.zeros((h, stride), np.uint8)
    prev = np.zeros(stride, np.int64)
    for y in range(h):
        ftype = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int64)
        if ftype == 0:
            cur = line
        elif ftype == 2:
            cur = (line + prev) & 255
        elif ftype == 1:  # Sub: a running sum per channel
            cur = (np.cumsum(line.reshape(w, channels), axis=0) & 255).reshape(-1)
        elif ftype in (3, 4):
            cur = np.zeros(stride, np.int64)
            for x in range(stride):
                a = int(cur[x - channels]) if x >= channels else 0
                b = int(prev[x])
                c = int(prev[x - channels]) if x >= channels else 0
                if ftype == 3:
                    pred = (a + b) >> 1
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[x] = (int(line[x]) + pred) & 255
        else:
            raise ValueError(f"{path}: bad PNG filter type {ftype} in row {y}")
        out[y] = cur
        prev = cur
    img = out.reshape(h, w, channels)
    if channels in (1, 2):
        img = np.repeat(img[:, :, :1], 3, axis=2)
    return np.ascontiguousarray(img[:, :, :3])


def write_png(path, img):
    """uint8 [H, W, 3] -> an RGB PNG (filter 0 on every row)."""
    img = np.ascontiguousarray(img, np.uint8)
    h, w, c = img.shape
    if c != 3:
        raise ValueError("write_png writes RGB frames")
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 6)))
        f.write(chunk(b"IEND", b""))


def load_frame(path):
    """A frame from .png or .npy (uint8 [H, W, 3])."""
    if path.endswith(".npy"):
        img = np.load(path)
        if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
            raise ValueError(f"{path}: expected uint8 [H, W, 3], got {img.dtype} {list(img.shape)}")
        return img
    return read_png(path)
