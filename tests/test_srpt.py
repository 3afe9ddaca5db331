"""The SRPT ideal and the slowdown, on hand-checked cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ccarena.analysis import ALONE, AloneModel, ideal_fct, slowdown, srpt_fct
from ccarena.workloads import srpt, srpt_completion

BYTE_PER_S = 8.0  # a link of 8 bit/s serves one byte per second: sizes read as service times


def test_srpt_three_flows_preemption():
    """A (t=0, 4) runs 0-1; B (t=1, 1) preempts it, runs 1-2; C (t=2, 2) has less
    left than A (3), runs 2-4; A finishes 4-7."""
    done = srpt_completion([0, 1, 2], [4, 1, 2], BYTE_PER_S)
    assert done.tolist() == [7, 2, 4]


def test_srpt_no_preemption_by_a_larger_or_equal_job():
    # B (2) arrives when A has 1 left: A goes on. Then equal remaining work: the earlier arrival first.
    assert srpt_completion([0, 1], [2, 2], BYTE_PER_S).tolist() == [2, 4]
    assert srpt_completion([0, 0], [3, 3], BYTE_PER_S).tolist() == [3, 6]
    # C arrives when A has exactly as much left as C needs: A goes on
    assert srpt_completion([0, 2], [4, 2], BYTE_PER_S).tolist() == [4, 6]


def test_srpt_idle_link_and_input_order():
    # an idle gap between 1 and 5; arrays given out of order
    assert srpt_completion([5, 0], [1, 1], BYTE_PER_S).tolist() == [6, 1]
    # a zero-size job completes when it arrives (if the link is free for it: it is the shortest)
    assert srpt_completion([0, 1], [3, 0], BYTE_PER_S).tolist() == [3, 1]


def test_srpt_rate_scaling_and_frame():
    df = pd.DataFrame({"start_s": [0.0, 0.001, 0.002], "size_bytes": [4000, 1000, 2000]}, index=[7, 8, 9])
    s = srpt(df, rate_bps=8e6)  # 1 byte per microsecond
    assert s.index.tolist() == [7, 8, 9]
    assert s.to_numpy() == pytest.approx([0.007, 0.002, 0.004])


def _srpt_brute(a, z, rate):
    """Time-stepped reference: at every event, serve the least remaining work."""
    a = np.asarray(a, float)
    rem = np.asarray(z, float) * 8 / rate
    done = np.full(len(a), np.nan)
    t = 0.0
    while np.isnan(done).any():
        present = (a <= t + 1e-12) & np.isnan(done)
        if not present.any():
            t = a[np.isnan(done)].min()
            continue
        cand = np.flatnonzero(present)
        j = cand[np.lexsort((cand, a[cand], rem[cand]))[0]]
        future = a[(a > t + 1e-12) & np.isnan(done)]
        t_next = min(t + rem[j], future.min() if len(future) else np.inf)
        rem[j] -= t_next - t
        t = t_next
        if rem[j] <= 1e-12:
            done[j] = t
    return done


@pytest.mark.parametrize("seed", range(5))
def test_srpt_against_brute_force_and_fifo(seed):
    rng = np.random.default_rng(seed)
    n = 60
    a = np.round(rng.exponential(1.0, n).cumsum(), 3)
    z = rng.integers(1, 3000, n).astype(float)
    rate = 8000.0  # 1000 bytes per second: the link is often busy
    done = srpt_completion(a, z, rate)
    assert done == pytest.approx(_srpt_brute(a, z, rate), abs=1e-9)
    # work-conserving: the busy periods, so the last completion, are those of FIFO
    fifo = np.empty(n)
    t = 0.0
    for i in range(n):
        t = max(t, a[i]) + z[i] * 8 / rate
        fifo[i] = t
    assert done.max() == pytest.approx(fifo.max())
    assert (done - a).mean() <= (fifo - a).mean() + 1e-9  # SRPT minimises the mean
    assert (done - a >= z * 8 / rate - 1e-9).all()


# 1514-byte frames at 12.112 Mbit/s: one full segment per millisecond
RATE = 1514 * 8 * 1000.0
SEG = 1448


def test_ideal_fct_default_model():
    # handshake 10 ms + 1 ms + 10 ms for the last ACK
    assert ideal_fct(SEG, RATE, 0.010) == pytest.approx(0.021)
    # 1449 bytes: two segments, 1449 + 2 x 66 bytes
    assert ideal_fct(SEG + 1, RATE, 0.010) == pytest.approx(0.020 + (SEG + 1 + 132) * 8 / RATE)
    assert ideal_fct(30 * SEG, RATE, [0.0, 0.02]).tolist() == pytest.approx([0.030, 0.070])
    bare = AloneModel(handshake=False, last_ack=False, header_bytes=0)
    assert ideal_fct(1000, 8000.0, 0.5, bare) == pytest.approx(1.0)


def test_ideal_fct_slow_start():
    ss = AloneModel(slow_start=True)
    # RTT 20 ms: 10 segments leave in 10 ms; the first ACK is back 21 ms after the first left,
    # so the link idles 11 ms; the 20 remaining fit the next window. 20 + 30 + 11 + 20 ms.
    assert ideal_fct(30 * SEG, RATE, 0.020, ss) == pytest.approx(0.081)
    # RTT 10 ms: idle 10 - 9 = 1 ms
    assert ideal_fct(30 * SEG, RATE, 0.010, ss) == pytest.approx(0.051)
    # 10 segments fit the initial window: no idle round
    assert ideal_fct(10 * SEG, RATE, 0.020, ss) == pytest.approx(ideal_fct(10 * SEG, RATE, 0.020))
    # 70 segments, RTT 20 ms: idle 11 ms after 10, 1 ms after 20 more, then the window (40) fills the pipe
    assert ideal_fct(70 * SEG, RATE, 0.020, ss) == pytest.approx(0.020 + 0.070 + 0.020 + 0.011 + 0.001)


def test_slowdown_on_results_columns():
    flows = pd.DataFrame(
        {"size_bytes": [SEG, 30 * SEG, SEG], "fct_s": [0.042, 0.050, np.nan], "rtt_ms": [10.0, 10.0, 10.0]}
    )
    s = slowdown(flows, RATE)
    assert s.tolist()[:2] == pytest.approx([2.0, 1.0])
    assert np.isnan(s.iloc[2])
    assert slowdown(flows, RATE, rtt_s=0.0).iloc[0] == pytest.approx(0.042 / 0.001)
    with pytest.raises(ValueError, match="rtt"):
        slowdown(flows.drop(columns="rtt_ms"), RATE)


def test_srpt_fct_three_flows_and_alone():
    # one segment per ms; RTT 10 ms. Link arrivals = start + 10 ms (handshake); work 4, 1, 2 ms.
    flows = pd.DataFrame({"start_s": [0.0, 0.001, 0.002], "size_bytes": [4 * SEG, SEG, 2 * SEG]})
    fct = srpt_fct(flows, RATE, rtt_s=0.010)
    # link completions 17, 12, 14 ms (the hand-checked case above, shifted by 10 ms), + 10 ms for the ACK
    assert fct.tolist() == pytest.approx([0.027, 0.021, 0.022])
    assert (slowdown(flows.assign(fct_s=fct), RATE, rtt_s=0.010) >= 1 - 1e-12).all()
    alone = srpt_fct(flows.iloc[[1]], RATE, rtt_s=0.010)
    assert alone.iloc[0] == pytest.approx(ideal_fct(SEG, RATE, 0.010, ALONE))


def test_ideal_fct_token_bucket_burst():
    b = AloneModel(burst_bytes=1514)
    assert ideal_fct(SEG, RATE, 0.010, b) == pytest.approx(0.020)  # the one packet passes at once
    # 11 segments, RTT 20 ms, slow start: 10 ms of link time (the first packet free), an 11 ms gap
    # less the 1 ms the bucket refilled, then the 11th packet free: 20 + 10 + 10 + 20 ms
    assert ideal_fct(11 * SEG, RATE, 0.020, AloneModel(slow_start=True, burst_bytes=1514)) == pytest.approx(
        0.060
    )
