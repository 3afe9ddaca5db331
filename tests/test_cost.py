"""Issue 10: a run or sweep that would blow up is refused before it starts,
with the estimate and the field to change (exit 2, nothing written), unless
forced; validate prints the estimate and checks every sweep point and
expectation up front."""

from __future__ import annotations

import pytest

from ccarena import Scenario, ScenarioError
from ccarena.cli import main
from ccarena.cost import LIMITS, MAX_POINTS, check, estimate

SMALL = 'name = "c"\nduration = "1s"\n[bottleneck]\nrate = "10Mbps"\n[[flows]]\ncc = "reno"\nrtt = "10ms"\n'


def _write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_estimate_bounds_packets_by_the_capacity(tmp_path):
    c = estimate(Scenario.from_dict({"duration": "10s", "bottleneck": {"rate": "100Mbps"},
                                     "flows": [{"cc": "reno", "rtt": "10ms", "count": 2}]}))  # fmt: skip
    assert c.bottleneck_packets == pytest.approx(1e9 / (1514 * 8) + 1)
    assert c.sample_rows == 2 * 101
    # A real run stays under its estimate.
    from ccarena import run

    scn = Scenario.from_dict({"duration": "2s", "bottleneck": {"rate": "20Mbps"},
                              "flows": [{"cc": "cubic", "rtt": "10ms"}]})  # fmt: skip
    r = run(scn, tmp_path / "run")
    assert 0 < r.stats["bottleneck_packets"] <= estimate(scn).bottleneck_packets


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ('duration = "1000000s"\n', "duration"),  # at 10 Mbit/s: 3.3e9 events
        ('[sample]\ninterval = "1ns"\n', "sample.interval"),
    ],
)
def test_costly_run_is_refused_with_one_line_unless_forced(tmp_path, capsys, extra, field):
    text = SMALL.replace('duration = "1s"\n', "") if extra.startswith("duration") else SMALL
    p = _write(tmp_path, extra + text if extra.startswith("duration") else text + extra)
    out = tmp_path / "run"
    assert main(["run", str(p), "--out", str(out), "--no-figure"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{p}: {field}:" in err and "--yes" in err, err
    assert not out.exists()
    with pytest.raises(ScenarioError):
        check(Scenario.load(p))
    assert check(Scenario.load(p), force=True).events > LIMITS["events"] or field == "sample.interval"


def test_validate_prints_the_cost_and_refuses_what_run_would(tmp_path, capsys):
    p = _write(tmp_path, SMALL)
    assert main(["validate", str(p)]) == 0
    assert "cost of one run: ~" in capsys.readouterr().out
    big = _write(tmp_path, SMALL.replace('"1s"', '"1000000s"'), "big.toml")
    assert main(["validate", str(big)]) == 2
    assert main(["validate", str(big), "--yes"]) == 0


def test_huge_sweep_is_refused_before_any_point_is_built(tmp_path, capsys):
    axis = ", ".join(f'"{i + 1}Mbps"' for i in range(1000))
    p = _write(tmp_path, SMALL + f'[sweep]\n"bottleneck.rate" = [{axis}]\nrepeats = 1000\n')
    assert main(["sweep", str(p), "--out", str(tmp_path / "exp")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "sweep" in err and f"{MAX_POINTS:,}" in err, err
    assert not (tmp_path / "exp").exists()


def test_validate_checks_sweep_points_and_expectations_up_front(tmp_path, capsys):
    bad_point = _write(tmp_path, SMALL + '[sweep]\n"bottleneck.rate" = ["10Mbps", "-5Mbps"]\n', "p.toml")
    assert main(["validate", str(bad_point)]) == 2
    assert "bottleneck.rate" in capsys.readouterr().err
    bad_expect = _write(tmp_path, SMALL + '[[expect]]\nmetric = "jain"\nop = "~"\nvalue = 1\n', "e.toml")
    assert main(["validate", str(bad_expect)]) == 2
    assert "expect[0].op" in capsys.readouterr().err
    # run refuses it before simulating (no run directory)
    assert main(["run", str(bad_expect), "--out", str(tmp_path / "r"), "--no-figure"]) == 2
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("[path]\nrtt_split = nan\n", "path.rtt_split"),
        ("[path]\nrtt_split = inf\n", "path.rtt_split"),
        ('[[flows]]\ncc = "reno"\nrtt = "10ms"\nrtt_split = -inf\n', "flows[1].rtt_split"),
    ],
)
def test_nan_and_inf_are_named_as_such(tmp_path, capsys, line, field):
    p = _write(tmp_path, SMALL + line)
    assert main(["validate", str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{p}: {field}:" in err and "NaN and infinities" in err, err


def _parking_lot(hops: int, link_delay: bool) -> Scenario:
    """A long Reno flow across ``hops`` links of 20 Mbit/s and a cross flow
    on each; 5 ms after each link, or the same delays in the flows' paths."""
    d = 5 if link_delay else 0
    extra = 0 if link_delay else 10
    flows = [
        {"cc": "reno", "rtt": f"{10 + extra * hops}ms", "route": [f"hop{k}" for k in range(1, hops + 1)]}
    ]
    flows += [{"cc": "reno", "rtt": f"{10 + extra}ms", "route": [f"hop{k}"]} for k in range(1, hops + 1)]
    topology = {"kind": "parking_lot", "hops": hops, "rate": "20Mbps", "delay": f"{d}ms", "buffer": "1BDP"}
    return Scenario.from_dict({"name": f"pl{hops}", "duration": "3s", "flows": flows, "topology": topology})


@pytest.mark.parametrize("hops", [3, 32])
def test_a_networks_estimate_counts_its_packet_hops_and_delay_lines(hops):
    """Issue 39: a 32-link parking lot took about 3x its estimated time.
    Its packets are counted on every link they leave (each link kept busy by
    its cross flow: within 3% under the capacity bound), and each one a link
    puts on its delay line is an event of its own: the events the links'
    delays add to the run (against the same delays in the flows' paths) are
    the estimate's line packets within 8% (0.95 of them on 3 links, 0.98 on
    32), and the time estimate counts them."""
    from ccarena.cost import LINE_EVENT_COST
    from ccarena.runner import simulate

    lines, paths = _parking_lot(hops, True), _parking_lot(hops, False)
    c, c0 = estimate(lines), estimate(paths)
    got = simulate(lines.core_json, None).stats
    got0 = simulate(paths.core_json, None).stats
    for cost, stats in ((c, got), (c0, got0)):
        assert 0.97 * cost.bottleneck_packets <= stats["bottleneck_packets"] <= cost.bottleneck_packets
        assert stats["events"] <= cost.events
    assert c.links == hops and c.bottleneck_packets == pytest.approx(c0.bottleneck_packets)
    assert c.line_packets == pytest.approx(c.bottleneck_packets) and c0.line_packets == 0
    assert got["events"] - got0["events"] == pytest.approx(c.line_packets, rel=0.08)
    assert c.wall_s / c0.wall_s == pytest.approx(1 + LINE_EVENT_COST)
    assert f"summed over its {hops} links" in c.describe() and "onto delay lines" in c.describe()


def _mem(duration: str, count: int = 10, rate: str = "1Gbps", buffer: str = "1BDP") -> float:
    flows = [{"cc": "cubic", "rtt": "20ms", "count": count}]
    scn = Scenario.from_dict(
        {"duration": duration, "bottleneck": {"rate": rate, "buffer": buffer}, "flows": flows}
    )
    return estimate(scn).peak_bytes


def test_the_memory_estimate_follows_flows_and_packets_not_the_duration():
    # Past one batch of sample rows (65,536: 10 flows x 6,554 s at 100 ms),
    # a longer run holds no more: its tables wait on disk.
    one = {"duration": "1s", "bottleneck": {"rate": "1Gbps"}, "flows": [{"cc": "cubic", "rtt": "20ms"}]}
    assert estimate(Scenario.from_dict(one)).rows_held == 11
    assert _mem("7000s") == _mem("56000s")
    assert _mem("100s") < _mem("7000s")
    # Linear in the flows and in the packets the buffer holds, at sizes the
    # runs measured (16.3 KiB a bulk flow with its rows, 170-240 bytes a
    # packet: benches/memory.py); the buffer's packets at 1514-byte frames.
    step = _mem("1s", count=2000) - _mem("1s", count=1000)
    assert _mem("1s", count=3000) - _mem("1s", count=2000) == pytest.approx(step)
    assert 12 * 1024 < step / 1000 < 24 * 1024
    held = _mem("1s", buffer="10BDP") - _mem("1s", buffer="1BDP")
    assert _mem("1s", buffer="19BDP") - _mem("1s", buffer="10BDP") == pytest.approx(held)
    assert 170 < held / (9 * 2_500_000 / 1514) < 240


def test_a_run_over_the_memory_limit_names_what_takes_it(tmp_path, capsys):
    # 400 BDP at 100 Gbit/s and 10 ms: 33 million packets held, about 6.6 GB.
    text = SMALL.replace('rate = "10Mbps"', 'rate = "100Gbps"\nbuffer = "400BDP"')
    assert main(["validate", str(_write(tmp_path, text))]) == 2
    err = capsys.readouterr().err
    assert ": bottleneck.buffer:" in err and "of memory" in err, err
    # 90,000 flows at 16 KiB and their sample rows: 1.7 GB, under the limit.
    assert _mem("1s", count=90_000) < LIMITS["peak_bytes"]
