"""Read and write safetensors files with NumPy only.

Layout: 8-byte little-endian header length n, n bytes of JSON header
(`{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}`),
then the data buffer; offsets are relative to the start of the buffer.

Reading maps the file (checkpoints can be several GB) and returns views into the map;
`SafetensorsFile.get` converts BF16 / F16 to float32 only for the tensor asked for.
"""

import json
import mmap
import os
import struct

import numpy as np

# safetensors dtype name -> NumPy dtype of the stored bytes. BF16 has no NumPy dtype: its
# 16-bit patterns are read as uint16 and widened by `bf16_bits_to_f32`.
_STORED = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_NATIVE_NAME = {
    np.dtype("f8"): "F64", np.dtype("f4"): "F32", np.dtype("f2"): "F16",
    np.dtype("i8"): "I64", np.dtype("i4"): "I32", np.dtype("u1"): "U8", np.dtype("?"): "BOOL",
}

# A header larger than this is certainly corrupt (the reference safetensors library caps at 100 MB).
_MAX_HEADER = 100 << 20


class SafetensorsError(ValueError):
    pass


def bf16_bits_to_f32(bits):
    """uint16 bfloat16 patterns -> float32 (exact: bf16 is the top half of an f32)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x):
    """float32 -> uint16 bfloat16 patterns, rounding to nearest, ties to even."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    bits = x.view(np.uint32)
    lsb = (bits >> 16) & 1
    rounded = ((bits + 0x7FFF + lsb) >> 16).astype(np.uint16)
    # Rounding could carry a NaN's low payload bits into an infinity: keep NaN a (quiet) NaN.
    return np.where(np.isnan(x), np.uint16(0x7FC0), rounded)


class SafetensorsFile:
    """A memory-mapped safetensors file. Tensors are read-only views into the map."""

    def __init__(self, path):
        self.path = os.fspath(path)
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 8:
                raise SafetensorsError(f"{self.path}: {size} bytes, too short for a safetensors header")
            (n,) = struct.unpack("<Q", f.read(8))
            if n > _MAX_HEADER or 8 + n > size:
                raise SafetensorsError(
                    f"{self.path}: header length {n} does not fit in the file ({size} bytes); "
                    "truncated or not a safetensors file")
            try:
                header = json.loads(f.read(n).decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise SafetensorsError(f"{self.path}: header is not valid JSON: {e}") from None
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if not isinstance(header, dict):
            raise SafetensorsError(f"{self.path}: header is not a JSON object")
        self.metadata = header.pop("__metadata__", None) or {}
        self._data_start = 8 + n
        data_size = size - self._data_start
        self._entries = {}
        for name, e in header.items():
            self._entries[name] = self._check_entry(name, e, data_size)

    def _check_entry(self, name, e, data_size):
        where = f"{self.path}: tensor {name!r}"
        try:
            dtype, shape, (begin, end) = e["dtype"], [int(d) for d in e["shape"]], e["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise SafetensorsError(f"{where}: malformed header entry {e!r}") from None
        if dtype not in _STORED:
            raise SafetensorsError(f"{where}: unsupported dtype {dtype!r} (supported: {', '.join(_STORED)})")
        if any(d < 0 for d in shape):
            raise SafetensorsError(f"{where}: negative dimension in shape {shape}")
        expected = int(np.prod(shape, dtype=np.int64)) * _STORED[dtype].itemsize
        if not (0 <= begin <= end) or end - begin != expected:
            raise SafetensorsError(
                f"{where}: data_offsets [{begin}, {end}] do not hold {dtype} {shape} ({expected} bytes)")
        if end > data_size:
            raise SafetensorsError(
                f"{where}: data ends at byte {end} but the file holds only {data_size} data bytes; truncated file")
        return dtype, tuple(shape), begin

    def keys(self):
        return list(self._entries)

    def __contains__(self, name):
        return name in self._entries

    def dtype(self, name):
        return self._entry(name)[0]

    def shape(self, name):
        return self._entry(name)[1]

    def _entry(self, name):
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"{self.path}: no tensor named {name!r}") from None

    def raw(self, name):
        """The stored values without conversion (BF16 as uint16 bit patterns), a read-only view."""
        dtype, shape, begin = self._entry(name)
        count = int(np.prod(shape, dtype=np.int64))
        flat = np.frombuffer(self._map, dtype=_STORED[dtype], count=count, offset=self._data_start + begin)
        return flat.reshape(shape)

    def get(self, name):
        """The tensor as a NumPy array; BF16 and F16 become float32 (a copy), others are views."""
        dtype = self.dtype(name)
        if dtype == "BF16":
            return bf16_bits_to_f32(self.raw(name))
        if dtype == "F16":
            return self.raw(name).astype(np.float32)
        return self.raw(name)


def load(path):
    """All tensors of a file as a dict of arrays (BF16/F16 widened to float32)."""
    f = SafetensorsFile(path)
    return {name: f.get(name) for name in f.keys()}


def _encode(name, value, as_dtype):
    a = np.asarray(value)
    if as_dtype is None:
        try:
            as_dtype = _NATIVE_NAME[a.dtype.newbyteorder("=")]
        except KeyError:
            raise SafetensorsError(f"tensor {name!r}: NumPy dtype {a.dtype} has no safetensors dtype") from None
    if as_dtype not in _STORED:
        raise SafetensorsError(f"tensor {name!r}: unsupported dtype {as_dtype!r}")
    if as_dtype == "BF16":
        stored = f32_to_bf16_bits(a.astype(np.float32))
    else:
        stored = a.astype(_STORED[as_dtype])
    return as_dtype, a.shape, np.ascontiguousarray(stored).tobytes()


def save(path, tensors, metadata=None, dtypes=None):
    """Write `tensors` ({name: array}) to `path`.

    `dtypes` optionally maps a name to the safetensors dtype to store it as (e.g. "BF16",
    rounded to nearest even); other tensors keep their NumPy dtype. `metadata` is a
    {str: str} dict stored as `__metadata__`.
    """
    dtypes = dtypes or {}
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, value in tensors.items():
        dtype, shape, blob = _encode(name, value, dtypes.get(name))
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # pad so the data buffer starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
