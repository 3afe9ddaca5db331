"""The catalog: every id builds valid sweeps (full and quick), ids that lack
mechanisms refuse to run with exit 3, and `reproduce --quick` of one runnable
id per paper (marked `reproduce`, about a minute each at most)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ccarena import cli
from ccarena.catalog import PAPERS, REGISTRY, lookup
from ccarena.catalog.capabilities import available, missing
from ccarena.experiment import Experiment
from ccarena.scenario import Scenario
from ccarena.sweep import expand, parse_sweep


def test_every_paper_has_ids_and_every_id_builds():
    for paper in PAPERS:
        assert lookup(paper), paper
    for e in REGISTRY.values():
        for quick in (True, False):
            doc = e.build(quick)
            spec = parse_sweep(doc.get("sweep"), e.id)
            assert spec.size >= 1
            if not missing(e.needs):
                # Paper scale may exceed the cost limits (reproduce --yes).
                assert expand(Scenario.from_dict(doc, source=e.id), yes=not quick)
        if not missing(e.needs):
            assert e.build(True) != e.build(False) or e.id.startswith("bbq/fig1"), e.id


def test_capabilities_follow_the_core():
    from ccarena import _core

    caps = available()
    assert {f"cc:{n}" for n in _core.cc_names()} <= caps
    assert "qdisc:taildrop" in caps


def test_placements_are_read_from_the_runs_and_the_docs_table_is_current():
    """Where each id's conditions sit comes from its full-form scenario: the
    papers' testbeds put bbrv3-insights' delay and jitter on the ACK path,
    bbrv2-eval's delay and loss on the data path; docs/experiments.md holds
    the table the script would write now."""
    from ccarena.catalog import docsection, placement

    rows = {e.id: placement.placement(e) for e in REGISTRY.values()}
    t1 = rows["bbrv3-insights/table1"]
    assert t1.delay == "ACK path" and t1.jitter.startswith("ACK path") and "per_packet" in t1.jitter
    assert "data path" not in t1.jitter
    f6 = rows["bbrv2-eval/fig6"]
    assert f6.delay == "data path" and f6.loss.startswith("data path") and f6.rwnd == "25MB"
    assert "maxrate 8.5Mbps" in rows["bbrv2-eval/fig22"].pacing
    assert "fq_codel" in rows["bbrv2-eval/fig21"].queue and "cake" in rows["bbrv2-eval/fig21"].queue
    assert rows["mixed-workload/fig2"].delay == "data path"
    assert rows["bbq/fig3"].delay == "0.5 data, 0.5 ACK path" and rows["bbq/fig3"].jitter == "none"
    doc = Path(__file__).resolve().parents[1] / "docs" / "experiments.md"
    want = docsection.wrap(placement.BEGIN, placement.END, placement.table())
    assert docsection.current(doc, placement.BEGIN, placement.END) == want, (
        "docs/experiments.md is stale: python3 scripts/catalog_placement.py --write docs/experiments.md"
    )


def test_unavailable_id_exits_3_and_runs_nothing(tmp_path: Path, capsys, monkeypatch):
    # Every id runs with today's core; pretend one mechanism is missing so
    # the refusal path stays tested.
    import importlib

    capabilities = importlib.import_module("ccarena.catalog.capabilities")

    e = REGISTRY["bbq/fig13"]
    gone = sorted(e.needs)[0]
    monkeypatch.setattr(capabilities, "available", lambda: frozenset(capabilities.CAPABILITIES() - {gone}))
    assert missing(e.needs) == [gone]
    assert cli.main(["reproduce", e.id, "--quick", "--out", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert "not built yet" in err and missing(e.needs)[0] in err
    assert not any(tmp_path.iterdir())


def test_unknown_id_is_bad_input(capsys):
    assert cli.main(["reproduce", "bbq/fig99"]) == 2
    assert "no such experiment" in capsys.readouterr().err


def test_reproduce_at_runs_those_points_in_their_own_directory(tmp_path: Path, capsys):
    """--at and --repeats narrow one id's sweep: only those points run (the
    same runs, by hash, as the whole form's), into NAME-at-HASH, and the
    findings are checked on them."""
    id_ = "bbrv3-insights/fig10"
    args = ["reproduce", id_, "--quick", "--at", "flows.1.start=1s", "--out", str(tmp_path)]
    assert cli.main([*args, "--jobs", "1", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "the paper's findings" in out, out
    (d,) = tmp_path.iterdir()
    assert d.name.startswith("bbrv3-insights-fig10-quick-at-")
    exp = Experiment.load(d)
    assert list(exp.runs["flows.1.start"]) == ["1s"]
    whole = expand(Scenario.from_dict(REGISTRY[id_].build(True), source=id_))
    assert exp.runs["hash"][0] in {p.hash for p in whole if p.values["flows.1.start"] == "1s"}
    assert (d / "fig10" / "findings.csv").is_file()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--at", "flows.1.start=3s"], "has no value 3s; its values: 0s, 1s, 2s"),
        (["--at", "path.rtt=10ms"], "is not swept here"),
        (["--at", "flows.1.start"], "expected KEY=VALUE"),
        (["--repeats", "0"], "positive integer"),
    ],
)
def test_reproduce_at_bad_input_is_one_line_and_writes_nothing(extra, message, tmp_path: Path, capsys):
    code = cli.main(["reproduce", "bbrv3-insights/fig10", "--quick", *extra, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not any(tmp_path.iterdir())
    assert cli.main(["reproduce", "bbrv3-insights", "--at", "flows.1.start=1s"]) == 2
    assert "give an id, not a paper" in capsys.readouterr().err


def test_list_shows_ids_and_needs(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "bbq/fig3" in out and "mixed-workload/fig2" in out
    lines = out.splitlines()
    for id_, entry in REGISTRY.items():
        # The id's line and the lines under it, to the next id.
        k = next(i for i, ln in enumerate(lines) if ln.split() and ln.split()[0] == id_)
        block = [lines[k]]
        for ln in lines[k + 1 :]:
            if not ln.startswith("    "):
                break
            block.append(ln)
        assert ("waits for" in " ".join(block)) == bool(missing(entry.needs)), block
    # It fits a terminal of 80 columns.
    assert max(len(ln) for ln in lines) <= 80


# One id per paper: the first that can run with this core.
PER_PAPER = {
    "bbrv2-eval": ["bbrv2-eval/fig18", "bbrv2-eval/fig4", "bbrv2-eval/fig22"],
    "bbrv3-insights": ["bbrv3-insights/fig7", "bbrv3-insights/fig4"],
    "bbq": ["bbq/fig3"],
    "mixed-workload": ["mixed-workload/fig9", "mixed-workload/fig2"],
}


@pytest.mark.reproduce
@pytest.mark.parametrize("paper", list(PER_PAPER))
def test_reproduce_quick(paper, tmp_path: Path, capsys):
    ids = [i for i in PER_PAPER[paper] if not missing(REGISTRY[i].needs)]
    if not ids:
        pytest.skip(f"no {paper} experiment can run with this core yet")
    id_ = ids[0]
    code = cli.main(["reproduce", id_, "--quick", "--out", str(tmp_path), "--jobs", "2", "--no-progress"])
    out = capsys.readouterr().out
    # the paper's findings are printed and written, whether they hold or not;
    # they never change the exit status
    assert code == 0, out
    assert "the paper's findings" in out, out
    fig_dir = next(tmp_path.glob(f"*-quick/{id_.split('/')[1]}"))
    assert (fig_dir / "findings.csv").is_file()
    pngs = sorted(fig_dir.glob("*.png"))
    assert pngs and all(p.with_suffix(".csv").is_file() and p.with_suffix(".svg").is_file() for p in pngs)
    assert (fig_dir / "report" / "index.html").is_file()
    assert (fig_dir.parent / "runs.parquet").is_file()


def test_fig14_quick_deals_trace_like_flows_to_two_hosts():
    doc = REGISTRY["bbrv3-insights/fig14"].build(True)
    sweep = doc["sweep"]
    labels = sweep["zip"]["description"]
    # no capture: Collapsed (the trace-like workload) and Synthetic, each with both CCAs; no Replay
    assert labels == ["Collapsed / bbr3", "Collapsed / cubic", "Synthetic / bbr3", "Synthetic / cubic"]
    assert sweep["path.rtt"] == ["10ms", "50ms"]
    for label, flows in zip(labels, sweep["zip"]["flows"], strict=True):
        assert len(flows) > 100, label
        assert [f["host"] for f in flows[:4]] == [0, 1, 0, 1]
        assert {f["cc"] for f in flows} == {label.split(" / ")[1]}
        assert all("size" in f and "chunks" not in f for f in flows)
    assert doc["bottleneck"]["rate"] == "3Gbps"
    points = expand(Scenario.from_dict(doc, source="fig14"))
    assert len(points) == 8
    # fig15 draws the same runs
    assert REGISTRY["bbrv3-insights/fig15"].build(True) == doc


def _capture(path: Path, flows: int = 30) -> Path:
    """``flows`` TCP flows over 1.5 s, each two chunks of 3 packets 150 ms apart."""
    import dpkt

    pkts = []
    for i in range(flows):
        t0 = 0.05 * i
        for k, t in enumerate([t0, t0 + 0.001, t0 + 0.002, t0 + 0.152, t0 + 0.153, t0 + 0.154]):
            tcp = dpkt.tcp.TCP(
                sport=10000 + i, dport=80, seq=1 + 1000 * k, flags=dpkt.tcp.TH_ACK, data=b"x" * 1000
            )
            ip = dpkt.ip.IP(
                src=b"\x0a\x00\x00\x01", dst=b"\x0a\x00\x00\x02", p=dpkt.ip.IP_PROTO_TCP, data=tcp
            )
            ip.len = len(ip)
            eth = dpkt.ethernet.Ethernet(
                src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip
            )
            pkts.append((1.6e9 + t, bytes(eth)))
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f)
        for ts, buf in sorted(pkts):
            w.writepkt(buf, ts=ts)
    return path


def test_trace_ids_take_a_capture(tmp_path: Path, capsys):
    pcap = _capture(tmp_path / "cap.pcap")
    doc = REGISTRY["bbrv3-insights/fig14"].build(True, trace=str(pcap))
    labels = doc["sweep"]["zip"]["description"]
    assert [lb.split(" / ")[0] for lb in labels[::2]] == ["Replay", "Collapsed", "Synthetic"]
    replay = doc["sweep"]["zip"]["flows"][0]
    assert all(len(f["chunks"]) == 2 for f in replay) and [f["host"] for f in replay[:2]] == [0, 1]
    assert doc["name"].endswith("-cap")
    out = tmp_path / "out"
    args = ["reproduce", "bbrv3-insights/fig13", "--quick", "--trace", str(pcap), "--out", str(out)]
    assert cli.main([*args, "--jobs", "1", "--no-progress"]) == 0, capsys.readouterr().out
    data = pd.read_csv(next(out.glob("*-quick/fig13/figure.csv")))
    split = data[(data["policy"] == "split at 100 ms pauses") & (data["by"] == "flow")]
    never = data[(data["policy"] == "never split") & (data["by"] == "flow")]
    assert list(split["size_bytes"]) == [3000] and list(never["size_bytes"]) == [6000]
    # Replay's ideal FCT counts the pause before the last chunk: lone flows stay at slowdown ~1
    args = ["reproduce", "bbrv3-insights/fig14", "--quick", "--trace", str(pcap), "--out", str(out)]
    assert cli.main([*args, "--jobs", "2", "--no-progress"]) == 0, capsys.readouterr().out
    sd = pd.concat(pd.read_csv(p) for p in out.glob("*-quick/fig14/figure-*.csv"))
    assert set(sd["config"]) == {"Replay", "Collapsed", "Synthetic"}
    assert sd["mean_slowdown"].between(0.99, 1.05).all(), sd
