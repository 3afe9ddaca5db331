"""A congestion control of your own, in Python.

Subclass :class:`Controller`, name it in a scenario and the simulator calls
it on every ACK::

    # mycc.py
    import ccarena

    class Aimd(ccarena.Controller):
        def __init__(self, gain=1.0):
            super().__init__()
            self.gain = gain

        def on_ack(self, sample, conn):
            self.cwnd += self.gain * sample.acked / self.cwnd

        def on_loss(self, kind, conn):
            self.cwnd = max(self.cwnd / 2, 2)

.. code-block:: toml

    [[flows]]
    cc = "python"
    cc_params = { class = "mycc:Aimd", gain = 2.0 }   # or "path/to/mycc.py:Aimd"

``class`` is ``module:Class`` (imported as Python imports it; the working
directory is searched first) or ``file.py:Class``; the other ``cc_params``
are passed to the constructor as keyword arguments (TOML values as they
are). One instance per flow, created when its connection is established.

The simulator reads ``cwnd`` (packets, a float is truncated, at least 1),
``pacing_rate`` (bytes per second; None sends unpaced, as far as cwnd
allows) and ``phase`` (a short label; its changes go to transitions.parquet)
after every call, and ``state()`` at every sample (its keys become columns
of samples.parquet). The TCP machinery around it is the simulator's:
SACK, RACK-TLP loss detection, retransmissions, the receiver's delayed
ACKs; the controller decides only how much to send.

The hooks see two read-only objects. ``sample`` (``on_ack``, ``on_ecn``):
``now`` (s), ``acked`` (packets newly ACKed or SACKed), ``lost`` (packets
newly marked lost), ``rtt`` (s, or None), ``delivery_rate`` (bytes/s of
this ACK's rate sample, or None), ``app_limited``, ``ece``,
``prior_in_flight``. ``conn``: ``flow``, ``now``, ``mss``, ``in_flight``,
``delivered``, ``lost``, ``delivered_ce``, ``srtt`` and ``min_rtt`` (s, or
None), ``ca_state`` ("open", "disorder", "cwr", "recovery", "loss"),
``cwnd_limited``, ``app_limited``.

A controller must be deterministic for runs to be reproducible (seed any
randomness from ``conn.flow`` or a parameter). The class is imported when
the scenario is read (a failure is a ``ScenarioError``); an exception in a
hook stops the run, and ``ccarena.run`` raises ``ControllerError`` with it
as the cause. The cost per ACK is in the README's
benchmark table.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["Controller"]


class Controller:
    """Base class of a Python congestion control; see the module's text."""

    #: Congestion window, packets.
    cwnd: float
    #: Pacing rate, bytes per second; None: unpaced.
    pacing_rate: float | None
    #: A label of the controller's phase ("" for none).
    phase: str | None

    def __init__(self, **params: Any) -> None:
        if params:
            raise TypeError(f"{type(self).__name__} takes no parameters: {', '.join(sorted(params))}")
        # None until the connection starts: then the flow's initial window,
        # unless the constructor set one.
        self.cwnd = None  # type: ignore[assignment]
        self.pacing_rate = None
        self.phase = ""

    def on_start(self, info: dict[str, Any]) -> None:
        """The connection is established. ``info``: ``now``, ``mss``,
        ``init_cwnd`` (``cwnd`` starts there), ``srtt`` (the handshake's, s),
        ``ecn``."""

    def on_ack(self, sample: Any, conn: Any) -> None:
        """An ACK arrived."""

    def on_loss(self, kind: str, conn: Any) -> None:
        """A loss episode began: ``kind`` is "recovery" (fast retransmit) or
        "rto" (retransmission timeout)."""

    def on_ecn(self, sample: Any, conn: Any) -> None:
        """The ACK (already given to ``on_ack``) carried ECN-Echo."""

    def state(self) -> dict[str, float]:
        """Columns for samples.parquet (the same keys at every call)."""
        return {}


def load_class(spec: str) -> type:
    """``module:Class`` or ``path/file.py:Class`` -> the class (a Controller subclass)."""
    module, _, name = spec.rpartition(":")
    if module.endswith(".py"):
        path = Path(module).resolve()
        key = f"ccarena_user_{abs(hash(str(path)))}"
        mod = sys.modules.get(key)
        if mod is None:
            s = importlib.util.spec_from_file_location(key, path)
            if s is None or s.loader is None:
                raise ImportError(f"cannot load {path}")
            mod = importlib.util.module_from_spec(s)
            sys.modules[key] = mod
            s.loader.exec_module(mod)
    else:
        if "" not in sys.path:
            sys.path.insert(0, "")
        mod = importlib.import_module(module)
    cls = getattr(mod, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Controller)):
        raise TypeError("not a ccarena.Controller subclass")
    return cls


def _instantiate(spec: str, kwargs_json: str, flow: int, info: dict[str, Any]) -> Controller:
    """Called by the simulator when flow ``flow`` connects."""
    ctl = load_class(spec)(**json.loads(kwargs_json))
    if getattr(ctl, "cwnd", None) is None:
        ctl.cwnd = info["init_cwnd"]
    ctl.on_start(info)
    return ctl
