"""The CLI's tables read at any width from 80 columns up: no cell cut to
"…", no line wider than the terminal, every number present. Wide tables
become one block per row (or, for `compare`, per flow) when they do not fit."""

from __future__ import annotations

import copy
import re
from pathlib import Path

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
