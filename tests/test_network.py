"""Networks of [[links]] and trace-driven links through the Python loader,
the CLI and the result tables (issue 11); the simulator's own tests are in
crates/sim/tests/network.rs."""

from itertools import pairwise
from pathlib import Path

import pytest

from ccarena import Scenario, cli, run
from ccarena.scenario import ScenarioError
from ccarena.traces import HERE, read_trace, shipped

REPO = Path(__file__).resolve().parent.parent


def test_shipped_traces_are_valid_mahimahi_traces():
    assert {"constant-12mbps", "cellular-walk", "cellular-onoff"} <= set(shipped())
    for name in shipped():
        ms = read_trace(HERE / f"{name}.trace")
        assert all(a <= b for a, b in pairwise(ms)) and ms[-1] > 0, name


def test_a_shipped_trace_drives_the_link(tmp_path):
    scn = Scenario.from_dict(
        {
            "duration": "3s",
            "bottleneck": {"trace": "constant-12mbps", "buffer": "50pkt"},
            "flows": [{"cc": "cubic", "rtt": "20ms"}],
        }
    )
    b = scn.normalized["bottleneck"]
    assert b["trace"]["name"] == "constant-12mbps" and len(b["trace"]["ms"]) == 1000
    assert b["rate_bps"] == 12_112_000  # its mean rate: a 1514-byte frame per ms
    assert scn.raw["bottleneck"]["trace"] == "constant-12mbps"  # as written, for sweeps
    res = run(scn, out=tmp_path / "r")
    assert res.links["rate_mbps"].tolist() == [12.112]
    assert 0.8 < res.summary["utilization"][0] <= 1.0


def test_a_topology_with_a_shipped_trace_gives_every_hop_the_trace():
    # [topology]'s link fields are every hop's: its trace is read too.
    scn = Scenario.from_dict(
        {
            "duration": "1s",
            "topology": {"kind": "parking_lot", "hops": 2, "trace": "constant-12mbps"},
            "flows": [{"cc": "reno", "rtt": "10ms", "route": ["hop1", "hop2"]}],
        }
    )
    assert [len(x["trace"]["ms"]) for x in scn.normalized["links"]] == [1000, 1000]
    assert scn.raw["topology"]["trace"] == "constant-12mbps"


def test_a_trace_file_is_read_relative_to_the_scenario_and_hashed_by_content(tmp_path):
    (tmp_path / "cell.trace").write_text("".join(f"{m}\n" for m in range(1, 501)))
    s = tmp_path / "s.toml"
    s.write_text(
        'duration = "2s"\n[[links]]\nname = "cell"\ntrace = "cell.trace"\n'
        '[[flows]]\ncc = "reno"\nrtt = "20ms"\nroute = ["cell"]\n'
    )
    a = Scenario.load(s)
    assert a.normalized["links"][0]["trace"] == {"name": "cell.trace", "ms": list(range(1, 501))}
    (tmp_path / "cell.trace").write_text("".join(f"{m}\n" for m in range(2, 502)))
    assert Scenario.load(s).hash != a.hash


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("1\n3\n2\n", "line 3: 2 after 3"),
        ("1\nx\n", "line 2"),
        ("1\n\n2\n", "line 2"),
        ("", "no timestamps"),
        ("0\n0\n", "nonzero"),
    ],
)
def test_a_bad_trace_is_one_line_naming_the_field(capsys, tmp_path, content, message):
    (tmp_path / "bad.trace").write_text(content)
    s = tmp_path / "s.toml"
    s.write_text('duration = "1s"\n[bottleneck]\ntrace = "bad.trace"\n[[flows]]\ncc = "reno"\nrtt = "20ms"\n')
    code = cli.main(["validate", str(s)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "bottleneck.trace:" in err and message in err, err


def test_trace_and_network_errors_name_the_field():
    base = {"duration": "1s", "flows": [{"cc": "reno", "rtt": "20ms"}]}
    cases = [
        ({"bottleneck": {"trace": "no-such-trace"}}, "bottleneck.trace", "shipped:"),
        ({"bottleneck": {"trace": "constant-12mbps", "rate": "10Mbps"}}, "bottleneck.rate", "trace"),
        ({"bottleneck": {"trace": [2, 1]}}, "bottleneck.trace", "must not decrease"),
        ({"links": [{"name": "a", "rate": "1Mbps"}]}, "flows[0].route", "missing"),
    ]
    for extra, field, what in cases:
        with pytest.raises(ScenarioError) as e:
            Scenario.from_dict({**base, **extra})
        assert e.value.path == field and what in e.value.message, str(e.value)


def test_the_parking_lot_scenario_runs_with_per_link_tables(tmp_path):
    res = run(REPO / "scenarios" / "parking-lot.toml", out=tmp_path / "r", duration="5s")
    assert res.links["link"].tolist() == ["hop1", "hop2", "hop3"]
    assert res.flows["route"].tolist() == ["hop1>hop2>hop3", "hop1", "hop2", "hop3"]
    assert res.flows["rtt_ms"].tolist() == [40.0, 20.0, 20.0, 20.0]
    assert sorted(set(res.queue["link"])) == ["hop1", "hop2", "hop3"]
    assert (res.links["utilization"] <= 1).all() and res.summary["utilization"][0] <= 1
    # The long flow crosses three congested links: it gets the least.
    g = res.flows["goodput_mbps"]
    assert g[0] < g[1:].min()


def test_the_issue_network_runs_with_its_report(tmp_path):
    # A 3-hop parking lot with a cellular trace on one link and two-way
    # traffic on another: the usual tables, the run figure and the report.
    res = run(
        REPO / "scenarios" / "parking-lot-cellular.toml", out=tmp_path / "r", duration="4s", figure=True
    )
    assert res.links["link"].tolist() == ["hop1", "hop2", "hop3", "hop3-back"]
    assert res.flows["route"].tolist()[-1] == "hop3-back"
    assert res.figure is not None and res.figure.is_file()
    assert cli.main(["report", str(res.path)]) == 0
    text = (res.path / "report" / "index.html").read_text()
    assert "<h2>Links</h2>" in text and "hop3-back" in text
