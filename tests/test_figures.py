"""Every figure kind from a small sweep, through the API and `ccarena plot`;
the t quantile behind the confidence intervals."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import ccarena
from ccarena import cli
from ccarena.plots import KINDS, make_figure, plot_mean
from ccarena.plots.common import metric_bounds, metric_scale
from ccarena.plots.mean import mean_table
from ccarena.results import columns
from ccarena.stats import mean_ci, t_quantile

PNG = b"\x89PNG\r\n\x1a\n"

DOC = {
    "name": "figs",
    "duration": "2s",
    "seed": 2,
    "bottleneck": {"rate": "20Mbps", "buffer": "1BDP"},
    "flows": [{"cc": "reno", "rtt": "20ms"}, {"cc": "bbr1", "rtt": "40ms"}],
    "sweep": {"bottleneck.buffer": ["0.5BDP", "4BDP"], "flows.0.cc": ["reno", "cubic"], "repeats": 2},
}


@pytest.fixture(scope="module")
def exp(tmp_path_factory):
    return ccarena.sweep(DOC, out=tmp_path_factory.mktemp("figs") / "e", jobs=1)


def test_t_quantile_matches_tables():
    for df, want in ((1, 12.7062), (2, 4.3027), (9, 2.2622), (29, 2.0452), (1000, 1.9623)):
        assert t_quantile(0.975, df) == pytest.approx(want, abs=1e-4)
    assert t_quantile(0.025, 9) == pytest.approx(-2.2622, abs=1e-4)
    m, _lo, hi, n = mean_ci([1.0, 2.0, 3.0])
    assert (m, n) == (2.0, 3) and hi - m == pytest.approx(4.3027 * 1 / 3**0.5, abs=1e-4)


def test_a_fractions_confidence_interval_stays_in_0_to_1(tmp_path: Path):
    """Three repeats near a bound: Student's t interval reaches below 0
    (shares) or above 1 (utilization, Jain); drawn and tabled, it is clipped
    to the range, while an unbounded metric's interval is left as it is."""
    frame = pd.DataFrame(
        {
            "bottleneck.buffer": ["1BDP"] * 3 + ["4BDP"] * 3,
            "share_bbr1": [0.0, 0.02, 0.30, 0.40, 0.50, 0.60],
            "utilization": [0.99, 0.95, 0.60, 0.90, 0.92, 0.94],
            "jain": [1.0, 0.99, 0.70, 0.93, 0.94, 0.95],
            "retrans_rate": [0.0, 0.0, 0.05, 0.02, 0.03, 0.04],
            "goodput_mbps": [0.0, 0.5, 9.0, 4.0, 5.0, 6.0],
        }
    )
    x = "bottleneck.buffer"
    for metric in ("share_bbr1", "utilization", "jain", "retrans_rate"):
        _, lo, hi, _ = mean_ci(frame[metric][:3])
        assert lo < 0 or hi > 1, metric  # the unclipped interval leaves the range
        t = mean_table(frame, metric, x)
        assert (t["ci_low"] >= 0).all() and (t["ci_high"] <= 1).all(), (metric, t)
        assert (t["ci_low"] <= t["mean"]).all() and (t["mean"] <= t["ci_high"]).all()
        # Inside the range the t interval is unchanged.
        assert tuple(t.iloc[1][["ci_low", "ci_high"]]) == pytest.approx(mean_ci(frame[metric][3:])[1:3])
        drawn = plot_mean(frame, metric, tmp_path / f"{metric}.png", x=x)
        shown, top = drawn.data, metric_scale(metric)  # as drawn: utilization in %
        assert (shown["ci_low"] >= 0).all() and (shown["ci_high"] <= top).all(), (metric, shown)
    assert mean_table(frame, "goodput_mbps", x)["ci_low"].iloc[0] < 0  # unbounded: not clipped
    # Every column the tables define as a fraction is clipped.
    fractions = {c.name for _, cols in columns().values() for c in cols if c.unit == "fraction"}
    assert fractions and all(metric_bounds(c) == (0.0, 1.0) for c in fractions | {"jain", "share"})


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind(exp, kind, tmp_path: Path):
    png = make_figure(exp, kind, out=tmp_path / f"{kind}.png")
    assert png.read_bytes().startswith(PNG)
    assert png.with_suffix(".svg").read_text().lstrip().startswith("<?xml")
    assert png.with_suffix(".csv").stat().st_size > 0


def test_cdf_of_metrics_from_each_table(exp, tmp_path: Path):
    for metric in ("goodput_mbps", "utilization", "sojourn_mean_ms", "cwnd_pkts"):
        assert make_figure(exp, "cdf", metric=metric, out=tmp_path / f"{metric}.png").is_file()


def test_same_figure_same_bytes(exp, tmp_path: Path):
    a = make_figure(exp, "mean", out=tmp_path / "a.png")
    b = make_figure(exp, "mean", out=tmp_path / "b.png")
    assert a.read_bytes() == b.read_bytes()
    assert a.with_suffix(".svg").read_bytes() == b.with_suffix(".svg").read_bytes()


def test_plot_command(exp, capsys):
    assert (
        cli.main(["plot", str(exp.path), "--kind", "box", "--metric", "utilization", "--hue", "flows.0.cc"])
        == 0
    )
    assert (exp.path / "figures" / "box-utilization.png").is_file()
    run = exp.path / exp.runs["run"].iloc[0]
    assert cli.main(["plot", str(run), "--kind", "timeseries"]) == 0
    assert (run / "figures" / "timeseries-goodput_mbps+cwnd_pkts.png").is_file()
    capsys.readouterr()
    assert cli.main(["plot", str(exp.path), "--kind", "cdf", "--metric", "nope"]) == 2
    assert "no metric 'nope'" in capsys.readouterr().err
