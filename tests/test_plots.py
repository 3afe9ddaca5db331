from pathlib import Path

import numpy as np
import pandas as pd

from ccarena.plots import plot_run, plot_timeseries
from ccarena.plots.timeseries import flow_label
from ccarena.results import Results

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _frames(n_flows: int = 2):
    t = np.arange(1, 51) * 0.1
    samples = pd.concat(
        pd.DataFrame({"time_s": t, "flow": f, "goodput_mbps": 10 * (1 - np.exp(-t / (f + 1)))})
        for f in range(n_flows)
    )
    queue = pd.DataFrame({"time_s": t, "sojourn_mean_ms": 5 + np.sin(t), "sojourn_max_ms": 7 + np.sin(t)})
    flows = pd.DataFrame(
        {
            "flow": range(n_flows),
            "cc": ["reno", "cubic"] * (n_flows // 2) + ["reno"] * (n_flows % 2),
            "rtt_ms": [10.0 + 10 * f for f in range(n_flows)],
        }
    )
    return samples, queue, flows


def test_writes_png(tmp_path: Path):
    samples, queue, flows = _frames()
    out = plot_timeseries(samples, queue, tmp_path / "sub" / "t.png", flows=flows, title="synthetic")
    assert out == tmp_path / "sub" / "t.png"
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 10_000


def test_many_flows_and_empty_frames(tmp_path: Path):
    samples, queue, flows = _frames(40)
    assert plot_timeseries(samples, queue, tmp_path / "many.png", flows=flows).is_file()
    empty = plot_timeseries(samples.iloc[:0], queue.iloc[:0], tmp_path / "empty.png")
    assert empty.read_bytes().startswith(PNG_MAGIC)


def test_same_frames_same_png(tmp_path: Path):
    samples, queue, flows = _frames()
    a = plot_timeseries(samples, queue, tmp_path / "a.png", flows=flows, title="x")
    b = plot_timeseries(samples, queue, tmp_path / "b.png", flows=flows, title="x")
    assert a.read_bytes() == b.read_bytes()


def test_flow_label_names_flow_cc_and_rtt():
    _, _, flows = _frames()
    assert flow_label(1, flows) == "flow 1 · cubic · 20 ms"
    assert flow_label(5, flows) == "flow 5"
    assert flow_label(0, None) == "flow 0"


def test_plot_run_from_results(tmp_path: Path):
    samples, queue, flows = _frames()
    summary = pd.DataFrame({"rate_mbps": [20.0], "utilization": [0.95], "jain": [0.99]})
    r = Results(
        {
            "summary": summary,
            "flows": flows,
            "samples": samples,
            "queue": queue,
            "transitions": pd.DataFrame({"time_s": []}),
        },
        {"scenario": {"name": "synthetic"}},
        tmp_path,
    )
    out = plot_run(r)
    assert out == tmp_path / "timeseries.png"
    assert r.figure == out


def test_many_flows_drawn_as_group_mean_and_spread(tmp_path: Path):
    """Above 64 flows the run figure draws each group's mean goodput per flow
    (and its p10-p90 band), not a line per flow."""
    from matplotlib.figure import Figure

    from ccarena.plots.timeseries import _plot_group_spread

    samples, queue, flows = _frames(200)
    samples["group"] = (samples["flow"] >= 100).astype(int)
    assert plot_timeseries(samples, queue, tmp_path / "many.png", flows=flows).is_file()
    ax = Figure().subplots()
    _plot_group_spread(ax, samples, flows)
    assert len(ax.lines) == 2  # one mean line per group
    for g, line in enumerate(ax.lines):
        want = samples[samples["group"] == g].groupby("time_s")["goodput_mbps"].mean()
        np.testing.assert_allclose(line.get_ydata(), want.to_numpy())
        assert "100 flows" in line.get_label()


def test_panels_many_flows(tmp_path: Path):
    """100 flows: each panel draws them as one line collection holding a
    line per flow (read back from the SVG), and every sample is tabled."""
    import re

    from ccarena.plots import plot_panels

    samples, queue, flows = _frames(100)
    samples["cwnd_pkts"] = samples["goodput_mbps"] * 2
    drawn = plot_panels(samples, queue, tmp_path / "p.png", flows=flows)
    assert drawn.png.read_bytes().startswith(PNG_MAGIC)
    svg = drawn.svg.read_text()
    groups = re.findall(r'<g id="LineCollection_\d+">(.*?)</g>', svg, flags=re.S)
    assert [g.count("<path") for g in groups] == [100, 100]  # goodput and cwnd panels
    per_flow = drawn.data[drawn.data["flow"] != "queue"]
    assert per_flow["flow"].nunique() == 100 and len(per_flow) == len(samples)
