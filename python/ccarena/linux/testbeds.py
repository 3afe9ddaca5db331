"""The kernel testbeds a Linux run can be made on (light: the command line
and ``conformance`` read it without loading the backend).

- ``userspace-bottleneck`` (the default): three namespaces, the bottleneck
  in user space running the simulator's own shaper, queue disciplines and
  delays against the wall clock (``backend.py``, ``crates/emu``).
- ``bridge-tbf``: a testbed built as the papers' Mininet setups are: a host
  namespace per sender and per receiver, Linux bridges, a router namespace
  whose egress toward the receivers is the kernel's own ``tbf`` with a
  ``bfifo`` child, a pure delay hop, and iperf3 (``bridge.py``).

Two testbeds of one scenario tell how far kernel testbeds differ from each
other (docs/validation.md, "The second testbed").
"""

from __future__ import annotations

__all__ = ["DEFAULT_TESTBED", "REVISIONS", "TESTBEDS"]

DEFAULT_TESTBED = "userspace-bottleneck"
TESTBEDS = (DEFAULT_TESTBED, "bridge-tbf")
#: The revision of what a testbed other than the default asks of the kernel
#: (a kernel run's identity, ``conformance.kernel_hash``; the default's is
#: its traffic generator's, ``gen.revision``).
REVISIONS = {"bridge-tbf": 1}
