"""The CLI's tables read at any width from 80 columns up: no cell cut to
"…", no line wider than the terminal, every number present. Wide tables
become one block per row (or, for `compare`, per flow) when they do not fit."""

from __future__ import annotations

import copy
import io
import re
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from ccarena import cli, run
from ccarena.compare import Comparison
from ccarena.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
WIDTHS = [80, 200]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _cli(capsys, monkeypatch, width: int, *argv: str) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _assert_fits(text: str, width: int) -> None:
    lines = text.splitlines()
    assert lines
    too_wide = [ln for ln in lines if len(ln) > width]
    assert not too_wide, "\n".join(too_wide)
    cut = [ln for ln in lines if "…" in ln and "more" not in ln]
    assert not cut, "\n".join(cut)


def _many_flows(tiny) -> dict:
    doc = copy.deepcopy(tiny)
    doc["duration"] = "1s"
    doc["flows"] = [
        {"cc": "cubic", "rtt": "10ms", "label": "a-very-long-flow-label-for-the-table"},
        {"cc": "bbr3", "rtt": "40ms", "size": "200KB", "start": "0.2s"},
    ]
    return doc


@pytest.mark.parametrize("width", WIDTHS)
def test_validate_of_a_network_fits(capsys, monkeypatch, width):
    out = _cli(capsys, monkeypatch, width, "validate", str(ROOT / "scenarios" / "parking-lot-cellular.toml"))
    _assert_fits(out, width)
    for name in ("hop1", "hop2", "hop3", "hop1>hop2>hop3"):
        assert name in out


@pytest.mark.parametrize("width", WIDTHS)
def test_run_fits(capsys, monkeypatch, write_scenario, tiny, width):
    p = write_scenario(_many_flows(tiny))
    out = _cli(capsys, monkeypatch, width, "run", str(p), "--no-figure")
    _assert_fits(out, width)
    assert "bbr3" in out and "cubic" in out


def test_a_wide_table_turns_into_blocks_only_when_it_must(capsys, monkeypatch, write_scenario, tiny):
    doc = _many_flows(tiny)
    doc["sweep"] = {"flows.0.rtt": ["10ms", "20ms"], "bottleneck.buffer": ["0.5BDP", "2BDP"]}
    p = write_scenario(doc)
    wide = _cli(capsys, monkeypatch, 200, "sweep", str(p), "--out", "w", "--jobs", "1")
    narrow = _cli(capsys, monkeypatch, 80, "sweep", str(p), "--out", "w", "--jobs", "1")
    _assert_fits(wide, 200)
    _assert_fits(narrow, 80)
    # Both show every run's metrics: the same numbers, laid out differently.
    nums = lambda s: sorted(re.findall(r"\d+\.\d+ %|\d+\.\d\d\b", s))  # noqa: E731
    assert nums(wide) == nums(narrow)
    assert max(len(ln) for ln in narrow.splitlines()) <= 80 < max(len(ln) for ln in wide.splitlines())


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_table_fits(tmp_path, tiny, width):
    doc = _many_flows(tiny)
    scn = Scenario.from_dict(doc, source="t")
    a = run(scn, tmp_path / "a")
    b = run(Scenario.from_dict({**doc, "seed": 2}, source="t"), tmp_path / "b")
    comp = Comparison(scn, ["sim", "linux"], {"sim": a, "linux": b})
    con = Console(width=width, record=True, highlight=False, markup=False)
    for t in comp.rich_tables():
        con.print(t)
    text = con.export_text()
    _assert_fits(text, width)
    for _, r in comp.flows.iterrows():
        assert f"{r['sim_goodput_mbps']:.2f}" in text and f"{r['linux_goodput_mbps']:.2f}" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_list_fits(capsys, monkeypatch, width):
    _assert_fits(_cli(capsys, monkeypatch, width, "list"), width)


def _render(table, width: int = 80) -> str:
    con = Console(file=io.StringIO(), width=width, record=True, highlight=False, markup=False)
    con.print(table)
    return con.export_text()


def _value_lines(text: str, field: str) -> list[str]:
    """The value column's lines of ``field``'s row in a record block: its
    own line and the continuation lines under it."""
    out: list[str] = []
    for ln in text.splitlines():
        cells = [c.strip() for c in ln.split("│")[1:-1]]
        if len(cells) != 2:
            continue
        if cells[0] == field or (out and cells[0] == "" and cells[1]):
            out.append(cells[1])
        elif out:
            break
    return out


class _Tables:
    """What the CLI's run tables read (``Results.head`` and ``count``), from frames."""

    def __init__(self, **frames: pd.DataFrame) -> None:
        self.frames = frames

    def head(self, name: str, limit: int) -> list[dict]:
        return self.frames[name].head(limit).to_dict("records")

    def count(self, name: str) -> int:
        return len(self.frames[name])


def test_every_cli_table_fits_80_columns_and_breaks_values_where_they_read(tmp_path):
    """Each table the CLI prints, with long names, routes and swept values,
    rendered at 80 columns: no line wider, no cell cut to "…", and a long
    value broken after a separator, never inside a name."""
    from types import SimpleNamespace

    from ccarena.catalog import findings_table
    from ccarena.conformance import cells_table, differs_table, load_matrix

    hops = [f"hop{k}" for k in range(1, 33)]
    doc = {
        "name": "a-parking-lot-of-thirty-two-hops",
        "duration": "1s",
        "topology": {"kind": "parking_lot", "hops": 32, "rate": "20Mbps", "qdisc": "fq_codel"},
        "flows": [
            {"label": "the-long-flow-crossing-every-one-of-the-thirty-two-hops", "cc": "reno", "rtt": "10ms",
             "route": hops, "size": "10MB"},
            {"cc": "ledbat_pp", "rtt": "10ms", "route": ["hop1"]},
        ],
    }  # fmt: skip
    scn = Scenario.from_dict(doc, source=str(tmp_path / "a-scenario-file-with-a-long-name.toml"))
    tables = list(cli._validate_summary(scn))
    flows = pd.DataFrame(
        [{"flow": i, "cc": "ledbat_pp", "rtt_ms": 123.456, "goodput_mbps": 12345.678, "retrans_rate": 0.12345,
          "srtt_mean_ms": 1234.5, "fct_s": 123.456} for i in range(3)]
    )  # fmt: skip
    links = pd.DataFrame(
        [{"link": "a-link-name-of-thirty-two-chars", "rate_mbps": 1e5, "flows": 10000, "utilization": 0.95,
          "qdelay_mean_ms": 1234.56, "qdelay_p99_ms": 12345.67, "drops": 12345678}]
    )  # fmt: skip
    schedule = str([["10s", "50ms"], ["20s", "10ms"], ["30s", "80ms"], ["40s", "100ms"], ["50s", "5ms"]])
    runs = pd.DataFrame(
        [{"flows.0.cc": cc, "bottleneck.buffer": "0.5BDP", "flows.1.rtt_schedule": schedule, "repeat": 0,
          "utilization": 0.9, "jain": 0.99, "retrans_rate": 0.01, "mean_rtt_ms": 12.3, "qdelay_p95_ms": 3.2}
         for cc in ("bbr3", "cubic")]
    )  # fmt: skip
    exp = SimpleNamespace(keys=["flows.0.cc", "bottleneck.buffer", "flows.1.rtt_schedule"], runs=runs)
    verdicts = pd.DataFrame(
        [{"cell": "mixed-rtt-bbr1-cubic-fq-pie/12", "flow": 3, "cc": "bbr1", "rtt_ms": 80.0, "rank": 2.0,
          "disagree": "share, goodput_mbps, retrans_rate, srtt_mean_ms, qdelay_ms, drops, fct_s"}]
    )  # fmt: skip
    findings = [
        {"id": "bbrv2-eval/fig9", "cite": "Sec. 4.2, Fig. 9", "paper": "below 1 BDP",
         "finding": "BBRv2 keeps the queue below one BDP at every buffer size swept",
         "check": "qdelay_p95_ms < 40 when bottleneck.buffer=100BDP", "holds": "no", "runs": "3/4",
         "measured": "41.25", "at": "bottleneck.buffer=100BDP flows.0.cc=bbr2 repeat=1"}
    ]  # fmt: skip
    matrix = load_matrix(ROOT / "conformance" / "matrix.toml")
    tables += [
        cli._flows_table(_Tables(flows=flows)),
        cli._links_table(_Tables(links=links)),
        cli._runs_table(exp),
        differs_table(verdicts),
        cells_table(matrix.cells[:40]),
        findings_table(findings),
    ]
    for t in tables:
        _assert_fits(_render(t), 80)
    flows_text = _render(tables[2] if len(tables) == 9 else tables[1])
    route = _value_lines(flows_text, "route")
    assert "".join(route) == ">".join(hops) and len(route) > 1, route
    assert all(line.endswith(">") for line in route[:-1]), route  # never "…hop22>hop" / "23>…"
    text = _render(cli._runs_table(exp))
    assert "".join(_value_lines(text, "flows.1.rtt_schedule")).replace(" ", "") == schedule.replace(" ", "")


def test_expectations_of_a_sweep_fit_80_columns(capsys, monkeypatch, write_scenario, tiny):
    """The expectations table, with a `when` and the values of runs that
    fail it, at 80 columns; a swept value a little over the label's limit is
    kept whole (clipping it made it longer: "… (9 characters) …")."""
    doc = _many_flows(tiny)
    schedule = [["0.2s", "50ms"], ["0.5s", "10ms"], ["0.7s", "80ms"]]
    doc["sweep"] = {"bottleneck.buffer": ["0.5BDP", "2BDP"], "flows.1.rtt_schedule": [schedule, []]}
    p = write_scenario(doc)
    with p.open("a") as f:  # a quoted dotted key, which the helper's TOML would nest
        f.write('\n[[expect]]\nmetric = "share"\nop = "<"\nvalue = 0.01\ngroup = 1\n')
        f.write('when = { "bottleneck.buffer" = "0.5BDP" }\n')
        f.write('\n[[expect]]\nmetric = "jain"\nop = ">="\nvalue = 0.9999\n')
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["sweep", str(p), "--out", "w", "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    _assert_fits(out, 80)
    assert "expectation" in out and "characters)" not in out
