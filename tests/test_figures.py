"""Every figure kind from a small sweep, through the API and `ccarena plot`;
the t quantile behind the confidence intervals."""

from __future__ import annotations

from pathlib import Path

import pytest

import ccarena
from ccarena import cli
from ccarena.plots import KINDS, make_figure
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
