#!/usr/bin/python3
"""ctest: the Python client (edgevla_client.py) against a running edgevla graph, and its decoder
against crafted malformed envelopes.

    /usr/bin/python3 test_python_client.py --edgevla build/bin/edgevla --source-dir .

The binary and source directory may also come from $EDGEVLA_BIN (a directory holding edgevla,
or the binary itself) and $EDGEVLA_SOURCE_DIR.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import msgpack
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import edgevla_client as ec  # noqa: E402

OVERALL_TIMEOUT_S = 60.0  # the end-to-end test never runs longer than this
TOPIC = "/pytest/image"
NODE = "pattern_source"
WIDTH, HEIGHT, CHANNELS = 64, 48, 3
MESSAGES = 25

EDGEVLA = None
SOURCE_DIR = None


def _envelope(tensors, **overrides):
    env = {
        "edgevla": 1, "type": "Test", "type_version": 1, "topic": "/t", "seq": 1,
        "src": 1, "pub": 2, "publisher": "h/1/1", "trace": [["n", 2]],
        "fields": {"a": 1, "b": 2.5, "c": "x", "d": True}, "tensors": tensors,
    }
    env.update(overrides)
    return msgpack.packb(env, use_bin_type=True)


def _f32_desc(frame=0, **overrides):
    d = {"name": "x", "dtype": "f32", "shape": [3], "nbytes": 12, "frame": frame}
    d.update(overrides)
    return d


class DecoderTest(unittest.TestCase):
    """The decoder's checks, on crafted envelopes (no process needed)."""

    def test_valid_envelope_decodes(self):
        data = np.array([1.5, -2.0, 3.25], dtype="<f4").tobytes()
        bf = np.array([0x3F80, 0xC000], dtype="<u2").tobytes()  # bf16 1.0, -2.0
        env = _envelope([_f32_desc(), {"name": "b", "dtype": "bf16", "shape": [2], "nbytes": 4,
                                        "frame": 1, "future_key": 7}], unknown_key=[1, 2])
        m = ec.decode(env, [data, bf])
        self.assertEqual(m.type, "Test")
        self.assertEqual(m.fields, {"a": 1, "b": 2.5, "c": "x", "d": True})
        self.assertIs(type(m.fields["d"]), bool)
        self.assertEqual(m.trace, [ec.TraceHop("n", 2)])
        np.testing.assert_array_equal(m.tensors["x"], [1.5, -2.0, 3.25])
        self.assertEqual(m.dtypes["b"], "bf16")
        np.testing.assert_array_equal(ec.bf16_to_float32(m.tensors["b"]), [1.0, -2.0])

    def test_nbytes_disagreeing_with_shape_is_rejected(self):
        env = _envelope([_f32_desc(nbytes=13)])
        with self.assertRaisesRegex(ec.WireError,
                                    r"tensor 'x' f32\[3\] needs 12 bytes but the descriptor says 13"):
            ec.decode(env, [b"\0" * 13])

    def test_truncated_frame_is_rejected(self):
        env = _envelope([_f32_desc()])
        with self.assertRaisesRegex(ec.WireError, r"needs 12 bytes but its frame holds 11"):
            ec.decode(env, [b"\0" * 11])

    def test_missing_frame_is_rejected(self):
        env = _envelope([_f32_desc(frame=1)])
        with self.assertRaisesRegex(ec.WireError, r"refers to frame 1 but the message has 1"):
            ec.decode(env, [b"\0" * 12])

    def test_wrong_wire_version_is_rejected(self):
        with self.assertRaisesRegex(ec.WireError, r"wire version 2 is not 1"):
            ec.decode(_envelope([], edgevla=2))

    def test_missing_required_key_is_rejected(self):
        env = msgpack.packb({"edgevla": 1, "type": "T", "topic": "/t"})
        with self.assertRaisesRegex(ec.WireError, r"lacks one of the keys edgevla, type, topic, seq"):
            ec.decode(env)

    def test_frame_and_shm_together_are_rejected(self):
        d = _f32_desc(shm={"segment": "/edgevla.0.1.1.0", "offset": 4096, "gen": 1})
        with self.assertRaisesRegex(ec.WireError, r"exactly one of 'frame' or 'shm'"):
            ec.decode(_envelope([d]), [b"\0" * 12])

    def test_shm_descriptor_says_use_tcp(self):
        d = _f32_desc()
        del d["frame"]
        d["shm"] = {"segment": "/edgevla.0.1.1.0", "offset": 4096, "gen": 3}
        with self.assertRaisesRegex(ec.ShmTensorError, r"shared memory.*tcp endpoint"):
            ec.decode(_envelope([d]))

    def test_unknown_dtype_and_bad_field_are_rejected(self):
        with self.assertRaisesRegex(ec.WireError, r"unknown dtype 'float32'"):
            ec.decode(_envelope([_f32_desc(dtype="float32")]), [b"\0" * 12])
        with self.assertRaisesRegex(ec.WireError, r"field 'bad' is not a bool, integer"):
            ec.decode(_envelope([], fields={"bad": [1]}))

    def test_trailing_bytes_and_topic_mismatch_are_rejected(self):
        with self.assertRaisesRegex(ec.WireError, r"1 trailing bytes"):
            ec.decode(_envelope([]) + b"\xc0")
        with self.assertRaisesRegex(ec.WireError, r"envelope names topic '/t' but was sent on '/u'"):
            ec.decode_multipart([b"/u\0", _envelope([])])
        with self.assertRaisesRegex(ec.WireError, r"not NUL-terminated"):
            ec.decode_multipart([b"/t", _envelope([])])


def _exe_and_source():
    exe = EDGEVLA or os.environ.get("EDGEVLA_BIN")
    if exe and os.path.isdir(exe):
        exe = os.path.join(exe, "edgevla")
    if exe:
        exe = os.path.abspath(exe)
    src = SOURCE_DIR or os.environ.get("EDGEVLA_SOURCE_DIR") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    return exe, os.path.abspath(src)


class EndToEndTest(unittest.TestCase):
    """edgevla launch with a tcp endpoint; the Python client subscribes and checks every byte."""

    def setUp(self):
        exe, src = _exe_and_source()
        if not exe or not os.access(exe, os.X_OK):
            self.fail(f"edgevla binary not found (pass --edgevla or set EDGEVLA_BIN): {exe!r}")
        self.deadline = time.monotonic() + OVERALL_TIMEOUT_S
        self.domain = f"pyc{os.getpid()}-{os.urandom(3).hex()}"
        # The launch's tcp is encrypted: a key pair for it and one for this client.
        self.keys = tempfile.mkdtemp(prefix="edgevla-pyc-keys-")
        for name in ("server", "client"):
            subprocess.run([exe, "keys", "generate", "--out", os.path.join(self.keys, name)], check=True,
                           stdout=subprocess.DEVNULL, timeout=30)
        self.env = dict(os.environ, EDGEVLA_DOMAIN=self.domain, EDGEVLA_PYTEST_KEYS=self.keys)
        self.env.pop("EDGEVLA_REGISTRY_DIR", None)
        os.environ.pop("EDGEVLA_REGISTRY_DIR", None)
        self.launch_file = os.path.join(src, "tests", "python", "python_client.launch.yaml")
        self.log = tempfile.TemporaryFile(mode="w+")
        # --duration is a safety net only: the test stops the launch with SIGINT much sooner.
        self.proc = subprocess.Popen(
            [exe, "launch", self.launch_file, "--duration", str(int(OVERALL_TIMEOUT_S) + 10)],
            env=self.env, stdout=self.log, stderr=subprocess.STDOUT, cwd=src)

    def tearDown(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(ec.registry_dir(self.domain), ignore_errors=True)
        shutil.rmtree(self.keys, ignore_errors=True)

    def subscriber(self, endpoint, topics):
        return ec.Subscriber(endpoint, topics, server_key_file=os.path.join(self.keys, "server.public"),
                             secret_key_file=os.path.join(self.keys, "client.secret"))

    def left(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.fail(f"overall timeout of {OVERALL_TIMEOUT_S} s exceeded\n{self.launch_log()}")
        return left

    def launch_log(self):
        self.log.flush()
        self.log.seek(0)
        return "--- edgevla launch output ---\n" + self.log.read()

    def test_subscribe_decode_and_verify(self):
        # Discovery: the registry file appears once the bus is up; it names the tcp endpoint.
        try:
            endpoint = ec.find_tcp_endpoint(self.domain, TOPIC, timeout_s=min(20.0, self.left()))
        except TimeoutError as e:
            self.fail(f"{e} (launch exit code {self.proc.poll()})\n{self.launch_log()}")
        self.assertTrue(endpoint.startswith("tcp://127.0.0.1:"), endpoint)
        entries = [e for e in ec.list_buses(self.domain) if e.get("tcp") == endpoint]
        self.assertEqual(len(entries), 1)
        entry = entries[0]
        self.assertEqual(entry["pid"], self.proc.pid)
        self.assertEqual(entry["process"], "pysrc")
        self.assertIn(NODE, entry["nodes"])
        self.assertIn({"topic": TOPIC, "type": "Image", "node": NODE}, entry["publishers"])

        # Control endpoint: [command, argument] -> ["ok"|"error", YAML text].
        nodes = ec.control_request(entry["control"], "nodes", "", timeout_s=min(5.0, self.left()))
        self.assertIn(f"name: {NODE}", nodes)
        params = ec.control_request(entry["control"], "params", NODE, timeout_s=min(5.0, self.left()))
        self.assertIn("width: 64", params)
        with self.assertRaisesRegex(RuntimeError, "no node named 'nope'"):
            ec.control_request(entry["control"], "params", "nope", timeout_s=min(5.0, self.left()))

        # Without the keys (plaintext) nothing arrives; with a key not on the list neither.
        with ec.Subscriber(endpoint, [TOPIC]) as sub:
            with self.assertRaises(TimeoutError):
                sub.recv_parts(timeout_s=min(1.0, self.left()))
        subprocess.run([_exe_and_source()[0], "keys", "generate", "--out", os.path.join(self.keys, "stranger")],
                       check=True, stdout=subprocess.DEVNULL, timeout=30)
        with ec.Subscriber(endpoint, [TOPIC], server_key_file=os.path.join(self.keys, "server.public"),
                           secret_key_file=os.path.join(self.keys, "stranger.secret")) as sub:
            with self.assertRaises(TimeoutError):
                sub.recv_parts(timeout_s=min(1.0, self.left()))

        messages = []
        with self.subscriber(endpoint, [TOPIC]) as sub:
            while len(messages) < MESSAGES:
                try:
                    parts = sub.recv_parts(timeout_s=min(10.0, self.left()))
                except TimeoutError as e:
                    self.fail(f"{e} after {len(messages)} messages\n{self.launch_log()}")
                self.assertEqual(parts[0], ec.topic_frame(TOPIC))
                self.assertEqual(len(parts), 3, "topic, envelope and one inline tensor frame")
                messages.append(ec.decode_multipart(parts))
        with self.subscriber(endpoint, ["/edgevla/status"]) as sub:
            status = sub.recv(timeout_s=min(10.0, self.left()))

        now = time.time_ns()
        host = socket.gethostname()
        prev = None
        for m in messages:
            self.assertEqual(m.type, "Image")
            self.assertEqual(m.type_version, 1)
            self.assertEqual(m.topic, TOPIC)
            # One id per publisher: "<bus id>#<n>".
            self.assertTrue(m.publisher.startswith(entry["bus"] + "#"), m.publisher)
            self.assertTrue(m.publisher.startswith(f"{host}/{self.proc.pid}/"), m.publisher)
            self.assertEqual(m.fields["encoding"], "rgb8")
            self.assertEqual(m.fields["camera"], "pycam")
            frame = m.fields["frame"]
            self.assertIs(type(frame), int)
            # Stamps: wall clock ns since the epoch; capture before publish.
            self.assertLessEqual(m.src, m.pub)
            self.assertLess(abs(now - m.pub), 120 * 10**9, "pub is not wall-clock ns")
            self.assertEqual([h.node for h in m.trace], [NODE])
            self.assertEqual(m.trace[-1].stamp_ns, m.pub)
            # The tensor: u8 [H, W, C], every byte the source pattern (frame*7 + i) & 0xff.
            self.assertEqual(list(m.tensors), ["pixels"])
            px = m.tensors["pixels"]
            self.assertEqual(m.dtypes["pixels"], "u8")
            self.assertEqual(px.dtype, np.uint8)
            self.assertEqual(px.shape, (HEIGHT, WIDTH, CHANNELS))
            expect = ((frame * 7 + np.arange(px.size, dtype=np.int64)) & 0xFF).astype(np.uint8)
            bad = np.flatnonzero(px.reshape(-1) != expect)
            self.assertEqual(bad.size, 0, f"seq {m.seq} frame {frame}: {bad.size} bytes differ, "
                                          f"first at flat index {bad[:1]}")
            if prev is not None:
                self.assertEqual(m.seq, prev.seq + 1, "seq must increase by 1")
                self.assertEqual(frame, prev.fields["frame"] + 1)
                self.assertGreaterEqual(m.pub, prev.pub)
            prev = m

        self.assertEqual(status.type, "NodeStatus")
        self.assertEqual(status.tensors, {})
        self.assertEqual(status.fields["node"], NODE)
        self.assertEqual(status.fields["state"], "active")

        # SIGINT stops the launch cleanly.
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(min(15.0, self.left()))
        except subprocess.TimeoutExpired:
            self.fail(f"edgevla launch did not exit after SIGINT\n{self.launch_log()}")
        self.assertEqual(code, 0, self.launch_log())


def main():
    global EDGEVLA, SOURCE_DIR
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--edgevla")
    ap.add_argument("--source-dir")
    args, rest = ap.parse_known_args()
    EDGEVLA, SOURCE_DIR = args.edgevla, args.source_dir
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
