"""The papers' findings (ccarena.catalog.findings): each cites its paper,
states what the paper reports, and has a check that can fail: on a table
whose values the claim excludes it says "no", on one it allows "yes"."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ccarena.catalog import REGISTRY
from ccarena.catalog import findings as fd
from ccarena.catalog import quantities as qt
from ccarena.results import Results


class FakeExperiment:
    """An experiment of runs made from frames: ``points`` is a list of
    (swept values, flows frame, summary frame, queue frame)."""

    def __init__(self, keys, points):
        self.keys = list(keys)
        rows, self._res = [], []
        for i, (values, flows, summary, queue) in enumerate(points):
            rows.append({**values, "repeat": 0, "run": f"r{i}"})
            frames = {
                "summary": summary,
                "flows": flows,
                "samples": pd.DataFrame({"time_s": [], "flow": [], "group": []}),
                "queue": queue,
                "transitions": pd.DataFrame({"time_s": [], "flow": [], "from": [], "to": []}),
            }
            self._res.append(Results(frames, {"scenario": {}}))
        self.runs = pd.DataFrame(rows)

    def results(self, i):
        return self._res[i]


def _flows(goodputs, groups=None, rtt=10.0):
    n = len(goodputs)
    return pd.DataFrame(
        {
            "flow": range(n),
            "group": groups or list(range(n)),
            "goodput_mbps": goodputs,
            "segs_sent": [1000] * n,
            "segs_retrans": [10] * n,
            "rtt_ms": [rtt] * n,
        }
    )


def _summary(util=0.9, rate=100.0):
    return pd.DataFrame({"utilization": [util], "rate_mbps": [rate], "jain": [0.9]})


def _queue(backlogs):
    return pd.DataFrame({"time_s": [0.1 * (k + 1) for k in range(len(backlogs))], "backlog_bytes": backlogs})


def test_each_kind_of_check_says_no_on_a_table_its_claim_excludes():
    exp = FakeExperiment(
        ["flows.0.cc"],
        [
            ({"flows.0.cc": "bbr"}, _flows([60.0, 40.0]), _summary(0.95), _queue([0, 125_000, 250_000])),
            ({"flows.0.cc": "cubic"}, _flows([30.0, 70.0]), _summary(0.80), _queue([0, 0, 0])),
        ],
    )
    bbr, cubic = {"flows.0.cc": "bbr"}, {"flows.0.cc": "cubic"}
    share = qt.group_share(0)
    assert fd.Threshold(share, bbr, ">", 0.5).judge(exp)[0] is True
    assert fd.Threshold(share, cubic, ">", 0.5).judge(exp)[0] is False
    assert fd.Band(share, bbr, 0.55, 0.65).judge(exp)[0] is True
    assert fd.Band(share, cubic, 0.55, 0.65).judge(exp)[0] is False
    assert fd.Compare(share, bbr, ">", share, cubic, margin=0.2).judge(exp)[0] is True
    assert fd.Compare(share, cubic, ">", share, bbr, margin=0.0).judge(exp)[0] is False
    assert fd.Compare(share, bbr, ">=", share, cubic, margin=2.0, ratio=True).judge(exp)[0] is True
    each = fd.Each(lambda p: fd.Threshold(qt.summary("utilization"), p, ">=", 0.9), (bbr, cubic))
    assert each.judge(exp)[0] is False and "0.8" in each.judge(exp)[1]
    # Queueing delay in RTTmin: 250 kB at 100 Mbit/s is 20 ms, 2 RTTmin of 10 ms.
    q = qt.qdelay_rttmin(1.0)
    assert fd.Band(q, bbr, 1.9, 2.1).judge(exp)[0] is True
    assert fd.Threshold(q, cubic, ">", 0.0).judge(exp)[0] is False
    # No run at a point: not checked, never "holds".
    assert fd.Threshold(share, {"flows.0.cc": "reno"}, ">", 0.5).judge(exp)[0] is None


def test_a_check_that_cannot_fail_is_told_apart():
    fct = fd.Quantity("FCT", per_run=lambda r: 1.0, domain=(1e-9, math.inf))  # an FCT is above 0
    assert not fd.Threshold(fct, {}, ">", 0.0).can_fail()  # the catalog's old "fct_s > 0"
    assert fd.Threshold(fct, {}, ">", 1.5).can_fail()
    share = qt.group_share(0)
    assert not fd.Band(share, {}, 0.0, 1.0).can_fail()
    assert fd.Band(share, {}, 0.4, 0.6).can_fail()
    assert not fd.Threshold(share, {}, "<=", 1.0).can_fail()


def _all():
    return [f for fs in fd.FINDINGS.values() for f in fs]


def test_every_id_has_findings_from_its_paper_each_able_to_fail():
    assert set(fd.FINDINGS) <= set(REGISTRY)
    missing = sorted(set(REGISTRY) - set(fd.FINDINGS))
    assert not missing, f"ids without findings: {missing}"
    for f in _all():
        paper = f.id.split("/")[0]
        assert f.cite.startswith(f"{paper}, "), f
        assert "Fig." in f.cite or "Table" in f.cite or "Sec." in f.cite, f
        assert f.claim and f.paper and f.kernel, f
        assert f.check.can_fail(), f"{f.id}: {f.claim}: its check cannot fail"


@pytest.mark.parametrize("kind", ["Threshold", "Band", "Compare", "Each"])
def test_every_kind_of_check_is_used_as_intended(kind):
    """Comparative claims are comparisons; a paper's number is a band."""
    for f in _all():
        if isinstance(f.check, fd.Band):
            assert f.check.why or f.why, f"{f.id}: a band says where its width comes from: {f.claim}"
