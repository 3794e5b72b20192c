#!/usr/bin/python3
"""A small, self-contained Python subscriber for edgevla topics.

Implements the wire format of msgs/README.md (edgevla wire version 1) with nothing but the
Debian packages python3-zmq, python3-msgpack, python3-numpy and python3-yaml:

    from edgevla_client import Subscriber, find_tcp_endpoint
    endpoint = find_tcp_endpoint(domain="default", topic="/camera/image")
    with Subscriber(endpoint, ["/camera/image"], server_key_file="keys/robot.public",
                    secret_key_file="keys/laptop.secret") as sub:
        msg = sub.recv(timeout_s=5)
        print(msg.type, msg.seq, msg.fields, msg.tensors["pixels"].shape)

Tensors are returned as read-only numpy arrays over the received frames. Only inline tensors
(the tcp endpoint, where every tensor is a frame) are supported: a shared-memory descriptor
(the ipc endpoint, tensors over 4096 bytes) raises ShmTensorError.

tcp is encrypted (ZeroMQ CURVE) unless the publishing group says insecure: true: the client
names the publisher's public key file (server_key_file) and its own secret key file
(secret_key_file, mode 0600, from `edgevla keys generate`), whose public key must be in the
publisher's allowed_keys. Run as a program it prints the messages of a topic:

    /usr/bin/python3 edgevla_client.py --domain default /camera/image -n 5 \\
        --server-key keys/robot.public --secret-key keys/laptop.secret
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence

import msgpack
import numpy as np
import yaml
import zmq

# --- Constants of the wire format (msgs/wire.hpp) -------------------------------------------

WIRE_VERSION = 1

MAX_ENVELOPE_BYTES = 1 << 20
MAX_TENSORS = 4096
MAX_FIELDS = 4096
MAX_TRACE_HOPS = 256
MAX_STRING_BYTES = 64 * 1024
MAX_TENSOR_ELEMENTS = 1 << 40  # the C++ kMaxTensorBytes, which bounds each dim and the element count
MAX_RANK = 8
INT64_MAX = (1 << 63) - 1
UINT32_MAX = (1 << 32) - 1

# Wire dtype name -> (element size in bytes, numpy dtype). Every multi-byte type is
# little-endian. bf16 has no numpy type: its elements are returned as the raw uint16 bit
# patterns (see bf16_to_float32).
DTYPES: Dict[str, tuple] = {
    "bool": (1, np.dtype("?")),
    "u8": (1, np.dtype("u1")),
    "i8": (1, np.dtype("i1")),
    "u16": (2, np.dtype("<u2")),
    "i16": (2, np.dtype("<i2")),
    "u32": (4, np.dtype("<u4")),
    "i32": (4, np.dtype("<i4")),
    "u64": (8, np.dtype("<u8")),
    "i64": (8, np.dtype("<i8")),
    "f16": (2, np.dtype("<f2")),
    "bf16": (2, np.dtype("<u2")),
    "f32": (4, np.dtype("<f4")),
    "f64": (8, np.dtype("<f8")),
}


class WireError(ValueError):
    """A message that does not follow the wire format; the text names the offending part."""


class ShmTensorError(WireError):
    """A tensor travels as a shared-memory descriptor, which this client does not map."""


@dataclass
class TraceHop:
    node: str
    stamp_ns: int


@dataclass
class Message:
    type: str
    type_version: int
    topic: str
    seq: int
    src: int  # source (capture) stamp, wall clock ns since the epoch
    pub: int  # publish stamp, wall clock ns since the epoch
    publisher: str  # id of the publishing bus, "<host>/<pid>/<n>"
    trace: List[TraceHop] = field(default_factory=list)
    fields: Dict[str, Any] = field(default_factory=dict)
    tensors: Dict[str, np.ndarray] = field(default_factory=dict)  # in descriptor order
    dtypes: Dict[str, str] = field(default_factory=dict)  # tensor name -> wire dtype name


def bf16_to_float32(bits: np.ndarray) -> np.ndarray:
    """Converts bf16 bit patterns (as returned for dtype 'bf16') to float32, exactly."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


# --- Decoding --------------------------------------------------------------------------------


def topic_frame(topic: str) -> bytes:
    """Frame 0 for `topic`; also the ZeroMQ SUBSCRIBE prefix for exactly that topic."""
    return topic.encode("utf-8") + b"\0"


def observer_frame(topic: str) -> bytes:
    """The subscription that marks this client as an observer of `topic` ("" = every topic):
    publishers never hold shared memory for it, so it cannot slow the graph down."""
    return b"\x01" + topic.encode("utf-8") + b"\0"


def parse_topic_frame(frame: bytes) -> str:
    if len(frame) == 0 or frame[-1] != 0:
        raise WireError("topic frame is not NUL-terminated")
    return bytes(frame[:-1]).decode("utf-8", errors="surrogateescape")


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _get_str(v: Any, what: str) -> str:
    if not _is_str(v):
        raise WireError(f"envelope '{what}' is not a string")
    if len(v.encode("utf-8", errors="surrogateescape")) > MAX_STRING_BYTES:
        raise WireError(f"envelope '{what}' string exceeds {MAX_STRING_BYTES} bytes")
    return v


def _get_uint(v: Any, what: str) -> int:
    # bool is a subclass of int in Python; msgpack booleans are not integers.
    if type(v) is not int or v < 0:
        raise WireError(f"envelope '{what}' is not a non-negative integer")
    return v


def _get_int(v: Any, what: str) -> int:
    if type(v) is not int or v > INT64_MAX:
        raise WireError(f"envelope '{what}' is not a 64-bit integer")
    return v


def _get_field(v: Any, name: str) -> Any:
    if type(v) is bool:
        return v
    if type(v) is int:
        return _get_int(v, name)
    if type(v) is float:
        return v
    if _is_str(v):
        return _get_str(v, name)
    raise WireError(f"envelope field '{name}' is not a bool, integer, float or string")


@dataclass
class _TensorDesc:
    name: str
    dtype: str
    shape: tuple
    nbytes: int
    frame: Optional[int]
    shm: Optional[dict]


def _decode_shm(v: Any, name: str) -> dict:
    if not isinstance(v, dict):
        raise WireError(f"tensor '{name}' shm is not a map")
    out: Dict[str, Any] = {"gen": 0}
    for key, val in v.items():
        if not _is_str(key):
            continue
        if key == "segment":
            out["segment"] = _get_str(val, "shm.segment")
        elif key == "offset":
            out["offset"] = _get_uint(val, "shm.offset")
        elif key == "gen":
            g = _get_uint(val, "shm.gen")
            if g > UINT32_MAX:
                raise WireError("shm.gen out of range")
            out["gen"] = g
    if "segment" not in out or "offset" not in out:
        raise WireError(f"tensor '{name}' shm lacks segment or offset")
    return out


def _decode_tensor_desc(v: Any) -> _TensorDesc:
    if not isinstance(v, dict):
        raise WireError("tensor descriptor is not a map")
    name = dtype = shape = nbytes = frame = shm = None
    for key, val in v.items():
        if not _is_str(key):
            continue
        if key == "name":
            name = _get_str(val, "tensor.name")
        elif key == "dtype":
            s = _get_str(val, "tensor.dtype")
            if s not in DTYPES:
                raise WireError(f"tensor dtype: unknown dtype '{s}' (accepted: {', '.join(DTYPES)})")
            dtype = s
        elif key == "shape":
            if not isinstance(val, (list, tuple)) or len(val) > MAX_RANK:
                raise WireError(f"tensor shape is not an array of at most {MAX_RANK} dims")
            dims = []
            for d in val:
                d = _get_uint(d, "tensor.shape")
                if d > MAX_TENSOR_ELEMENTS:
                    raise WireError("tensor dim too large")
                dims.append(d)
            shape = tuple(dims)
        elif key == "nbytes":
            nbytes = _get_uint(val, "tensor.nbytes")
        elif key == "frame":
            f = _get_uint(val, "tensor.frame")
            if f > MAX_TENSORS:
                raise WireError(f"tensor frame index {f} too large")
            frame = f
        elif key == "shm":
            shm = _decode_shm(val, name or "")
    if name is None or dtype is None or shape is None or nbytes is None:
        raise WireError(
            f"tensor descriptor '{name or ''}' lacks one of name, dtype, shape, nbytes")
    if (frame is None) == (shm is None):
        raise WireError(f"tensor '{name}' must have exactly one of 'frame' or 'shm'")
    n = 1
    for d in shape:
        if d != 0 and n > MAX_TENSOR_ELEMENTS // d:
            raise WireError(f"tensor '{name}' is too large")
        n *= d
    expect = n * DTYPES[dtype][0]
    if expect != nbytes:
        raise WireError(
            f"tensor '{name}' {dtype}{list(shape)} needs {expect} bytes but the descriptor "
            f"says {nbytes}")
    return _TensorDesc(name, dtype, shape, nbytes, frame, shm)


def _bind_tensor(d: _TensorDesc, frames: Sequence[Any]) -> np.ndarray:
    if d.shm is not None:
        raise ShmTensorError(
            f"tensor '{d.name}' is in shared memory segment '{d.shm['segment']}' (offset "
            f"{d.shm['offset']}, gen {d.shm['gen']}), which this client does not map; subscribe "
            "to the bus's tcp endpoint (a group's tcp listen, 'tcp:' in its registry file), "
            "where every tensor travels inline")
    if d.frame >= len(frames):
        raise WireError(
            f"tensor '{d.name}' refers to frame {d.frame} but the message has {len(frames)} "
            "tensor frames")
    buf = memoryview(frames[d.frame]).cast("B")
    if buf.nbytes != d.nbytes:
        raise WireError(
            f"tensor '{d.name}' {d.dtype}{list(d.shape)} needs {d.nbytes} bytes but its frame "
            f"holds {buf.nbytes}")
    arr = np.frombuffer(buf, dtype=DTYPES[d.dtype][1], count=d.nbytes // DTYPES[d.dtype][0])
    return arr.reshape(d.shape)


def decode(envelope: bytes, tensor_frames: Sequence[Any] = ()) -> Message:
    """Decodes an envelope (frame 1) and binds its tensors to `tensor_frames` (frames 2..).

    Raises WireError (ShmTensorError for shared-memory tensors) on any malformed input, with
    the same checks and limits as the C++ decoder (msgs/wire.cpp).
    """
    if len(envelope) > MAX_ENVELOPE_BYTES:
        raise WireError(f"envelope of {len(envelope)} bytes exceeds {MAX_ENVELOPE_BYTES}")
    try:
        root = msgpack.unpackb(
            bytes(envelope), raw=False, unicode_errors="surrogateescape", strict_map_key=False,
            use_list=True, max_str_len=MAX_STRING_BYTES, max_bin_len=MAX_STRING_BYTES,
            max_array_len=MAX_TENSORS, max_map_len=MAX_FIELDS, max_ext_len=0)
    except msgpack.ExtraData as e:
        raise WireError(f"envelope has {len(e.extra)} trailing bytes after the msgpack map") from None
    except Exception as e:  # noqa: BLE001 - any unpack failure is a malformed envelope
        raise WireError(f"envelope is not valid msgpack: {e}") from None
    if not isinstance(root, dict):
        raise WireError("envelope is not a msgpack map")

    seen = set()
    type_ = topic = None
    seq = None
    type_version = 0
    src = pub = 0
    publisher = ""
    trace: List[TraceHop] = []
    fields: Dict[str, Any] = {}
    tensor_descs = None
    for key, val in root.items():
        if not _is_str(key):
            continue  # unknown (non-string) keys are ignored, like unknown string keys
        if key == "edgevla":
            v = _get_uint(val, "edgevla")
            if v != WIRE_VERSION:
                raise WireError(
                    f"envelope wire version {v} is not {WIRE_VERSION}; this client speaks "
                    f"edgevla wire version {WIRE_VERSION}")
            seen.add(key)
        elif key == "type":
            type_ = _get_str(val, "type")
        elif key == "type_version":
            type_version = _get_uint(val, "type_version")
        elif key == "topic":
            topic = _get_str(val, "topic")
        elif key == "seq":
            seq = _get_uint(val, "seq")
        elif key == "src":
            src = _get_int(val, "src")
        elif key == "pub":
            pub = _get_int(val, "pub")
        elif key == "publisher":
            publisher = _get_str(val, "publisher")
        elif key == "trace":
            if not isinstance(val, list):
                raise WireError("envelope 'trace' is not an array")
            if len(val) > MAX_TRACE_HOPS:
                raise WireError("envelope 'trace' has too many hops")
            for hop in val:
                if not isinstance(hop, list) or len(hop) != 2:
                    raise WireError("trace hop is not [node, stamp_ns]")
                trace.append(TraceHop(_get_str(hop[0], "trace.node"),
                                      _get_int(hop[1], "trace.stamp")))
        elif key == "fields":
            if not isinstance(val, dict):
                raise WireError("envelope 'fields' is not a map")
            if len(val) > MAX_FIELDS:
                raise WireError("envelope has too many fields")
            for fname, fval in val.items():
                fname = _get_str(fname, "field name")
                fields[fname] = _get_field(fval, fname)
        elif key == "tensors":
            if not isinstance(val, list):
                raise WireError("envelope 'tensors' is not an array")
            if len(val) > MAX_TENSORS:
                raise WireError("envelope has too many tensors")
            tensor_descs = val
    if "edgevla" not in seen or type_ is None or topic is None or seq is None:
        raise WireError("envelope lacks one of the keys edgevla, type, topic, seq")
    if type_version > UINT32_MAX:
        raise WireError("envelope type_version out of range")

    msg = Message(type=type_, type_version=type_version, topic=topic, seq=seq, src=src, pub=pub,
                  publisher=publisher, trace=trace, fields=fields)
    for raw in tensor_descs or ():
        d = _decode_tensor_desc(raw)
        if d.name in msg.tensors:
            raise WireError(f"tensor '{d.name}' appears twice")
        msg.tensors[d.name] = _bind_tensor(d, tensor_frames)
        msg.dtypes[d.name] = d.dtype
    return msg


def decode_multipart(parts: Sequence[Any]) -> Message:
    """Decodes one received ZeroMQ multipart message [topic\\0, envelope, tensor frames...]."""
    if len(parts) < 2:
        raise WireError(
            f"malformed message with {len(parts)} frame(s); expected topic, envelope, tensors")
    topic = parse_topic_frame(bytes(parts[0]))
    msg = decode(bytes(parts[1]), parts[2:])
    if msg.topic != topic:
        raise WireError(f"envelope names topic '{msg.topic}' but was sent on '{topic}'")
    return msg


# --- Subscribing -----------------------------------------------------------------------------


class KeyFileError(ValueError):
    """A key file that cannot be used (missing, malformed, or a secret open to others)."""


def _read_key_line(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            lines = [ln.strip() for ln in f.read().splitlines()]
    except OSError as e:
        raise KeyFileError(f"{what} file '{path}' cannot be read: {e.strerror} (key files come from "
                        "`edgevla keys generate --out PREFIX`)") from None
    # '#' is a z85 character: a comment is '#' followed by a blank or nothing.
    keys = [ln for ln in lines if ln and not (ln == b"#" or ln.startswith(b"# "))]
    if len(keys) != 1 or len(keys[0]) != 40:
        raise KeyFileError(f"{what} file '{path}' does not hold one z85 CURVE key (40 characters on "
                        "one line); write it with `edgevla keys generate --out PREFIX`")
    return keys[0]


def read_public_key(path: str) -> bytes:
    """The z85 key of a .public file written by `edgevla keys generate`."""
    if path.endswith(".secret"):
        raise KeyFileError(f"'{path}' is a secret key file; name its public key "
                        f"({path[:-len('.secret')]}.public) here")
    return _read_key_line(path, "public key")


def read_secret_key(path: str) -> bytes:
    """The z85 key of a .secret file; refused when group or others may read or write it."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise KeyFileError(f"secret key file '{path}' cannot be read: {e.strerror} (write one with "
                        "`edgevla keys generate --out PREFIX`)") from None
    if st.st_mode & 0o077:
        raise KeyFileError(f"secret key file '{path}' is open to other users (mode "
                        f"{st.st_mode & 0o7777:04o}); run `chmod 600 {path}`")
    return _read_key_line(path, "secret key")


class Subscriber:
    """A ZeroMQ SUB socket on one bus endpoint, subscribed to whole topics.

    Pass topics=None (or []) to receive every topic the endpoint publishes (empty prefix).
    Each topic is subscribed as topic + NUL: the publisher only sends a topic that someone
    subscribed to exactly like that (or with the empty prefix).

    With server_key_file and secret_key_file the connection is CURVE (what a bus's tcp
    endpoint speaks unless its group has insecure: true); without, it is plaintext.
    """

    def __init__(self, endpoint: str, topics: Optional[Iterable[str]] = None,
                 context: Optional[zmq.Context] = None, rcvhwm: int = 1000,
                 server_key_file: Optional[str] = None, secret_key_file: Optional[str] = None):
        if (server_key_file is None) != (secret_key_file is None):
            raise KeyFileError("give both server_key_file (the publisher's .public) and "
                            "secret_key_file (this client's .secret), or neither for plaintext")
        curve = None
        if server_key_file is not None:
            if not zmq.has("curve"):
                raise KeyFileError("this libzmq has no CURVE security; install a libzmq built with "
                                "libsodium (Debian: libzmq5)")
            secret = read_secret_key(secret_key_file)
            curve = (read_public_key(server_key_file), secret, zmq.curve_public(secret))
        self._own_context = context is None
        self._context = context or zmq.Context()
        self._socket = self._context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.RCVHWM, rcvhwm)
        if curve is not None:
            self._socket.setsockopt(zmq.CURVE_SERVERKEY, curve[0])
            self._socket.setsockopt(zmq.CURVE_SECRETKEY, curve[1])
            self._socket.setsockopt(zmq.CURVE_PUBLICKEY, curve[2])
        topics = list(topics or [])
        if topics:
            for t in topics:
                self._socket.setsockopt(zmq.SUBSCRIBE, topic_frame(t))
                self._socket.setsockopt(zmq.SUBSCRIBE, observer_frame(t))
        else:
            self._socket.setsockopt(zmq.SUBSCRIBE, b"")
            self._socket.setsockopt(zmq.SUBSCRIBE, observer_frame(""))
        self._socket.connect(endpoint)
        self.endpoint = endpoint

    def recv_parts(self, timeout_s: Optional[float] = None) -> List[bytes]:
        if timeout_s is not None:
            if not self._socket.poll(max(0, int(timeout_s * 1000))):
                raise TimeoutError(f"no message from {self.endpoint} within {timeout_s} s")
        return self._socket.recv_multipart()

    def recv(self, timeout_s: Optional[float] = None) -> Message:
        return decode_multipart(self.recv_parts(timeout_s))

    def close(self) -> None:
        self._socket.close(0)
        if self._own_context:
            self._context.term()

    def __enter__(self) -> "Subscriber":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def control_request(endpoint: str, command: str, argument: str = "",
                    timeout_s: float = 3.0) -> str:
    """One request on a bus's control endpoint; returns the YAML text of an 'ok' reply.

    Raises RuntimeError with the process's message on an 'error' reply, TimeoutError when the
    process does not answer.
    """
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(endpoint)
        sock.send_multipart([command.encode(), argument.encode()])
        if not sock.poll(int(timeout_s * 1000)):
            raise TimeoutError(f"no answer from {endpoint} within {timeout_s} s")
        parts = sock.recv_multipart()
        if len(parts) != 2:
            raise WireError(f"malformed control reply from {endpoint} ({len(parts)} frames)")
        status, text = parts[0].decode(), parts[1].decode("utf-8", errors="replace")
        if status != "ok":
            raise RuntimeError(f"{command} {argument}: {text}")
        return text
    finally:
        sock.close(0)
        ctx.term()


# --- Discovery (registry directory) ----------------------------------------------------------


def registry_dir(domain: Optional[str] = None) -> str:
    """${EDGEVLA_REGISTRY_DIR}, else ${XDG_RUNTIME_DIR:-/tmp}/edgevla-<uid>/<domain>."""
    override = os.environ.get("EDGEVLA_REGISTRY_DIR")
    if override:
        return override
    domain = domain or os.environ.get("EDGEVLA_DOMAIN") or "default"
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return os.path.join(base, f"edgevla-{os.getuid()}", domain)


def read_registry_file(path: str) -> Dict[str, Any]:
    """One registry file: bus, pid, host, process, started_ns, data, control, tcp, nodes,
    publishers and subscriptions (lists of {topic, type, node})."""
    with open(path, encoding="utf-8") as f:
        entry = yaml.safe_load(f) or {}
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: not a registry entry")
    for key in ("nodes", "publishers", "subscriptions"):
        entry[key] = entry.get(key) or []
    for key in ("bus", "host", "process", "data", "control", "tcp"):
        entry[key] = "" if entry.get(key) is None else str(entry[key])
    for key in ("pid", "started_ns"):
        if key in entry:
            entry[key] = int(entry[key])
    return entry


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def list_buses(domain: Optional[str] = None) -> List[Dict[str, Any]]:
    """Every readable registry entry of live processes in the domain."""
    out = []
    for path in sorted(glob.glob(os.path.join(registry_dir(domain), "*.yaml"))):
        try:
            entry = read_registry_file(path)
        except (OSError, ValueError, yaml.YAMLError):
            continue  # being replaced; read it next time
        if "bus" not in entry or not _alive(int(entry.get("pid", 0))):
            continue
        entry["file"] = path
        out.append(entry)
    return out


def find_tcp_endpoint(domain: Optional[str] = None, topic: Optional[str] = None,
                      timeout_s: float = 0.0, poll_s: float = 0.05) -> str:
    """The tcp endpoint of a bus in `domain` (one that publishes `topic`, if given).

    Polls the registry directory until one appears or `timeout_s` passes (TimeoutError).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        for e in list_buses(domain):
            if not e.get("tcp"):
                continue
            if topic is None or any(p.get("topic") == topic for p in e["publishers"]):
                return e["tcp"]
        if time.monotonic() >= deadline:
            what = f" publishing '{topic}'" if topic else ""
            raise TimeoutError(
                f"no bus with a tcp endpoint{what} in {registry_dir(domain)} (give the group a "
                "tcp section with listen in its launch file)")
        time.sleep(poll_s)


# --- CLI -------------------------------------------------------------------------------------


def _summary(msg: Message) -> str:
    lines = [f"{msg.topic}  {msg.type} v{msg.type_version}  seq {msg.seq}  publisher {msg.publisher}",
             f"  src {msg.src}  pub {msg.pub}  (src->pub {(msg.pub - msg.src) / 1e6:.3f} ms)",
             "  trace: " + " -> ".join(f"{h.node}@{h.stamp_ns}" for h in msg.trace)]
    for k, v in msg.fields.items():
        lines.append(f"  field {k}: {v!r}")
    for name, arr in msg.tensors.items():
        lines.append(f"  tensor {name}: {msg.dtypes[name]}{list(arr.shape)} ({arr.nbytes} bytes)")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="Print the messages of an edgevla topic (tcp).")
    ap.add_argument("topic", nargs="?", help="topic to print (all topics when omitted)")
    ap.add_argument("--endpoint", help="tcp endpoint; default: found in the registry")
    ap.add_argument("--domain", help="domain whose registry to search (default $EDGEVLA_DOMAIN)")
    ap.add_argument("-n", "--count", type=int, default=0, help="stop after N messages")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each message")
    ap.add_argument("--server-key", help="the publisher's .public key file (CURVE)")
    ap.add_argument("--secret-key", help="this client's .secret key file (CURVE; mode 0600)")
    args = ap.parse_args(argv)
    try:
        endpoint = args.endpoint or find_tcp_endpoint(args.domain, args.topic, args.timeout)
        with Subscriber(endpoint, [args.topic] if args.topic else None,
                        server_key_file=args.server_key, secret_key_file=args.secret_key) as sub:
            got = 0
            while args.count <= 0 or got < args.count:
                print(_summary(sub.recv(args.timeout)), flush=True)
                got += 1
    except (TimeoutError, WireError, KeyFileError) as e:
        print(f"edgevla_client: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
