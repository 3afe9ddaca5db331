"""The SRPT ideal: preemptive shortest-remaining-processing-time on one link.

Jobs arrive at given times with given sizes; the link serves, at its full
rate, the job with the least remaining work, preempting it when a job with
less work arrives (ties: the earlier arrival, then the lower index). SRPT
minimises the mean completion time on a single server, so it is the usual
lower bound for flow completion times on a bottleneck.

Event-driven, O(n log n): jobs in a heap keyed by remaining work; between
two arrivals only the job at the top is served, so only its key changes,
and it stays the smallest.
"""

from __future__ import annotations

import heapq

import numpy as np
import pandas as pd

__all__ = ["srpt", "srpt_completion"]


def srpt_completion(arrival_s, size_bytes, rate_bps: float) -> np.ndarray:
    """Completion times (seconds, same origin as ``arrival_s``) of jobs of
    ``size_bytes`` arriving at ``arrival_s`` on a link of ``rate_bps`` under
    preemptive SRPT. Arrays in any order; the result is in the input order."""
    a = np.asarray(arrival_s, dtype=np.float64)
    z = np.asarray(size_bytes, dtype=np.float64)
    if a.shape != z.shape or a.ndim != 1:
        raise ValueError("arrival_s and size_bytes must be 1-D arrays of the same length")
    if not rate_bps > 0:
        raise ValueError("rate_bps must be positive")
    if (z < 0).any() or not np.isfinite(a).all():
        raise ValueError("sizes must be >= 0 and arrival times finite")
    work = z * 8.0 / rate_bps  # service time of each job alone, seconds
    order = np.argsort(a, kind="stable")
    done = np.empty(len(a))
    heap: list[tuple[float, float, int]] = []  # (remaining work, arrival, index)
    t = 0.0
    for i in order:
        ai = a[i]
        # serve until this arrival: finish every job that completes before it
        while heap:
            rem, arr, j = heap[0]
            if t + rem <= ai:
                heapq.heappop(heap)
                t += rem
                done[j] = t
            else:
                if ai > t:
                    heapq.heapreplace(heap, (rem - (ai - t), arr, j))
                break
        t = max(t, ai)
        heapq.heappush(heap, (work[i], ai, int(i)))
    while heap:
        rem, _, j = heapq.heappop(heap)
        t += rem
        done[j] = t
    return done


def srpt(
    flows: pd.DataFrame,
    rate_bps: float,
    *,
    start_col: str = "start_s",
    size_col: str = "size_bytes",
) -> pd.Series:
    """``srpt_completion`` on a frame: the completion time of each flow (its
    last byte through the link), seconds, indexed like ``flows``."""
    done = srpt_completion(flows[start_col].to_numpy(), flows[size_col].to_numpy(), rate_bps)
    return pd.Series(done, index=flows.index, name="srpt_end_s")
