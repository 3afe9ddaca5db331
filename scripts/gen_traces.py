"""Generate the delivery traces ccarena ships (python/ccarena/traces/*.trace).

Mahimahi's format: one line per delivery opportunity, the millisecond at
which the link may deliver one full-size packet (1504 bytes: a 1500-byte IP
packet and its TUN header); equal lines are several opportunities in one
millisecond; the schedule repeats from its last timestamp. One opportunity
per millisecond is 12.112 Mbit/s of full Ethernet frames.

The traces are synthetic and seeded (run this script again: the same
files): they give cellular-like variation to try a trace-driven link, not a
measurement of any network. For measured cellular links use the public
Mahimahi traces (e.g. mahimahi/traces/*.{up,down}) with `trace = "FILE"`.

    python3 scripts/gen_traces.py        # rewrites python/ccarena/traces/
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "python" / "ccarena" / "traces"
MBPS_PER_OPPORTUNITY_PER_MS = 1514 * 8 / 1e3  # Mbit/s of one opportunity per ms


def from_rates(rate_mbps_per_ms: np.ndarray) -> list[int]:
    """Opportunities for a rate given per millisecond: the fractional
    opportunities carried from one millisecond to the next."""
    out: list[int] = []
    credit = 0.0
    for ms, r in enumerate(rate_mbps_per_ms, start=1):
        credit += r / MBPS_PER_OPPORTUNITY_PER_MS
        n = int(credit)
        credit -= n
        out.extend([ms] * n)
    if not out or out[-1] != len(rate_mbps_per_ms):
        out.append(len(rate_mbps_per_ms))  # the trace lasts its whole length
    return out


def constant() -> list[int]:
    # 12.112 Mbit/s: one opportunity each millisecond for a second.
    return list(range(1, 1001))


def walk(seed: int = 1, seconds: int = 30) -> list[int]:
    # log-rate random walk pulled back towards 12 Mbit/s (Ornstein-Uhlenbeck),
    # between 2 and 48 Mbit/s, a step every 100 ms
    rng = np.random.default_rng(seed)
    steps = seconds * 10
    log_r = np.empty(steps)
    x = np.log(12.0)
    for k in range(steps):
        x = float(np.clip(x + 0.1 * (np.log(12.0) - x) + rng.normal(0, 0.25), np.log(2.0), np.log(48.0)))
        log_r[k] = x
    return from_rates(np.repeat(np.exp(log_r), 100))


def onoff(seed: int = 2, seconds: int = 20) -> list[int]:
    # 24 Mbit/s on for exponential periods (mean 1 s), off for mean 200 ms
    rng = np.random.default_rng(seed)
    rates = []
    on = True
    while len(rates) < seconds * 1000:
        mean = 1000 if on else 200
        rates += [24.0 if on else 0.0] * max(1, int(rng.exponential(mean)))
        on = not on
    return from_rates(np.array(rates[: seconds * 1000]))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, ms in (("constant-12mbps", constant()), ("cellular-walk", walk()), ("cellular-onoff", onoff())):
        (OUT / f"{name}.trace").write_text("".join(f"{m}\n" for m in ms))
        print(
            f"{name}: {len(ms)} opportunities over {ms[-1] / 1e3:g} s, "
            f"mean {len(ms) * MBPS_PER_OPPORTUNITY_PER_MS / ms[-1]:.2f} Mbit/s"
        )


if __name__ == "__main__":
    main()
