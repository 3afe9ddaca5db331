"""The Linux backend's traffic generator (ccarena/linux/gen.py) on this
namespace's loopback, without the bottleneck: a receiver listening for
more flows than the usual descriptor limit accepts each one's connection,
and successive flows start in order, each after its predecessor
completed. (The backend itself runs it in namespaces: tests/test_linux.py.)"""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ccarena.linux import gen

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="Linux TCP_INFO and tcp_congestion"
)

GEN = str(Path(gen.__file__).resolve())
MANY = 1100  # independent sized flows: their listeners alone exceed 1,024 descriptors
CHAIN = 5  # successive flows after them


def _free_base(n: int) -> int:
    """A base port with n free ports above it."""
    for base in range(20000, 60000 - n, 1500):
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    pytest.skip("no run of free loopback ports")


def _usual_limit() -> None:
    """The generator starts where the soft descriptor limit is the usual 1,024."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))


def test_a_thousand_flows_and_a_chain_of_successive_ones(tmp_path):
    base = _free_base(MANY + CHAIN)
    flows = [
        {
            "id": i,
            "port": base + i,
            "cc": "cubic",
            "start_ns": int((0.1 + 0.05 * (i % 20)) * 1e9),
            "size": 10_000,
        }
        for i in range(MANY)
    ]
    for k in range(CHAIN):
        i = MANY + k
        after = None if k == 0 else {"flow": i - 1, "gap_ns": 20_000_000}
        flows.append(
            {
                "id": i,
                "port": base + i,
                "cc": "cubic",
                "start_ns": 100_000_000,
                "size": 50_000,
                "after": after,
            }
        )
    t0 = time.monotonic_ns() + int(2.5e9)
    cfg = {
        "t0_ns": t0,
        "duration_ns": int(3e9),
        "interval_ns": int(0.5e9),
        "dst": "127.0.0.1",
        "flows": flows,
    }
    (tmp_path / "gen.json").write_text(json.dumps(cfg))
    args = [str(tmp_path / "gen.json"), str(tmp_path)]
    rcv = subprocess.Popen([sys.executable, GEN, "receiver", *args], preexec_fn=_usual_limit)
    deadline = time.monotonic() + 2.0
    while not (tmp_path / "receiver.ready").exists():
        assert rcv.poll() is None, "the receiver exited before it was ready"
        assert time.monotonic() < deadline, "the receiver was not listening within 2 s"
        time.sleep(0.01)
    snd = subprocess.Popen([sys.executable, GEN, "sender", *args], preexec_fn=_usual_limit)
    assert snd.wait(timeout=30) == 0 and rcv.wait(timeout=30) == 0
    sent = {f["flow"]: f for f in json.loads((tmp_path / "sender.json").read_text())["flows"]}
    got = {f["flow"]: f for f in json.loads((tmp_path / "receiver.json").read_text())["flows"]}
    # Every flow's connection was accepted and read to its end.
    assert all(got[i].get("bytes") == f["size"] and "eof_s" in got[i] for i, f in enumerate(flows)), [
        (i, got[i]) for i, f in enumerate(flows) if got[i].get("bytes") != f["size"]
    ][:3]
    # The chain: each starts its gap after its predecessor completed.
    for k in range(1, CHAIN):
        prev, this = sent[MANY + k - 1], sent[MANY + k]
        assert this["syn_s"] >= prev["done_s"] + 0.02, (prev, this)
