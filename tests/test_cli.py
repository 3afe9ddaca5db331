"""The `ccarena` command: bad input gives exit 2 and one line; `run` writes a
complete, deterministic run directory. These use the real simulator core."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ccarena import cli
from ccarena.store import TABLES


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _mutate(doc: dict[str, Any], path: tuple, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    node = doc
    for seg in path[:-1]:
        node = node[seg]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


_DELETE = object()

# (what is wrong, where in the file, the value, the field path the error must name)
BAD = [
    ("unknown field", ("bottleneck", "rte"), "10Mbps", "bottleneck"),
    ("unknown top-level field", ("durration",), "2s", "durration"),
    ("wrong type", ("seed",), "seven", "seed"),
    ("wrong type for a table", ("bottleneck",), "fast", "bottleneck"),
    ("unparsable unit", ("flows", 0, "rtt"), "20 parsecs", "flows[0].rtt"),
    ("unparsable rate", ("bottleneck", "rate"), "fast", "bottleneck.rate"),
    ("zero rate", ("bottleneck", "rate"), "0Mbps", "bottleneck.rate"),
    ("negative rate", ("bottleneck", "rate"), "-5Mbps", "bottleneck.rate"),
    ("zero duration", ("duration",), "0s", "duration"),
    ("negative duration", ("duration",), "-1s", "duration"),
    ("buffer smaller than one packet", ("bottleneck", "buffer"), "100B", "bottleneck.buffer"),
    ("no flows", ("flows",), _DELETE, "flows"),
    ("empty flows", ("flows",), [], "flows"),
    ("unknown cc", ("flows", 0, "cc"), "vegas-ultra", "flows[0].cc"),
    ("count zero", ("flows", 0, "count"), 0, "flows[0].count"),
    ("count negative", ("flows", 0, "count"), -2, "flows[0].count"),
    ("start after the end", ("flows", 0, "start"), "5s", "flows[0].start"),
    (
        "host table too short",
        ("hosts",),
        {"latency": {"sender_us": [50.0] * 17, "receiver_us": [50.0] * 18}},
        "hosts.latency.sender_us",
    ),
    (
        "host table decreasing",
        ("hosts",),
        {"latency": {"sender_us": [50.0] * 18, "receiver_us": [60.0] + [50.0] * 17}},
        "hosts.latency.receiver_us[1]",
    ),
    ("a tick rate Linux does not offer", ("hosts",), {"hz": 200}, "hosts.hz"),
    ("a tick rate as a string", ("hosts",), {"hz": "250"}, "hosts.hz"),
    ("delayed ACKs not a boolean", ("hosts",), {"delack": "linux"}, "hosts"),
]


def _assert_one_line_error(code: int, out: str, err: str, file: Path | str, field: str) -> None:
    assert code == 2, (out, err)
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{file}: "), lines[0]
    assert f": {field}" in lines[0], lines[0]
    assert " at line 1 column" not in lines[0]  # no positions in the JSON handed to the core


@pytest.mark.parametrize(("what", "where", "value", "field"), BAD, ids=[b[0] for b in BAD])
@pytest.mark.parametrize("command", ["run", "validate"])
def test_bad_scenario_exits_2_with_one_line(
    capsys, tmp_path, write_scenario, tiny, command, what, where, value, field
):
    p = write_scenario(_mutate(tiny, where, value))
    argv = [command, str(p)] + (["--out", str(tmp_path / "out")] if command == "run" else [])
    code, out, err = _run_cli(capsys, *argv)
    _assert_one_line_error(code, out, err, p, field)
    assert not (tmp_path / "results").exists()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("bottleneck.rate=0Mbps", "bottleneck.rate"),
        ("flows.0.rtt=20parsecs", "flows[0].rtt"),
        ("flows[0].cc=vegas-ultra", "flows[0].cc"),
        ("flows.0.count=0", "flows[0].count"),
        ("duration=-1s", "duration"),
        ("flows.4.rtt=1ms", "flows[4].rtt"),
    ],
)
def test_bad_override_names_set(capsys, tmp_path, write_scenario, tiny, override, field):
    p = write_scenario(tiny)
    code, out, err = _run_cli(capsys, "run", str(p), "--set", override)
    _assert_one_line_error(code, out, err, p, field)
    assert f"--set {override}" in err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file"), ("name = \n", "invalid TOML"), ("\xff\xfe", "")],
)
def test_unreadable_files(capsys, tmp_path, content, message):
    p = tmp_path / "s.toml"
    if content is not None:
        p.write_bytes(content.encode("latin-1"))
    code, _out, err = _run_cli(capsys, "run", str(p))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"{p}: ") and message in err
    assert not (tmp_path / "results").exists()


def test_out_that_is_not_a_run_directory_is_refused(capsys, tmp_path, write_scenario, tiny):
    p = write_scenario(tiny)
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine")
    code, _out, err = _run_cli(capsys, "run", str(p), "--out", str(keep))
    assert code == 2 and "did not write" in err and len(err.strip().splitlines()) == 1
    assert sorted(x.name for x in keep.iterdir()) == ["notes.txt"]


def test_usage_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as ei:
        cli.main(["run"])
    assert ei.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "SCENARIO" in err


def test_validate_prints_normalized_summary(capsys, write_scenario, tiny):
    tiny["flows"][0]["count"] = 3
    p = write_scenario(tiny)
    code, out, err = _run_cli(capsys, "validate", str(p), "--set", "seed=11")
    assert code == 0, err
    assert "3 flows" in out
    assert "50,000 bytes" in out  # the buffer, resolved: 1 BDP of 20 Mbit/s x 20 ms
    assert f"{p}: valid" in out
    assert not Path("results").exists()


def test_list(capsys):
    code, out, _ = _run_cli(capsys, "list")
    assert code == 0 and "reno" in out and "taildrop" in out and "cellular-walk" in out


def test_run_end_to_end_default_layout(capsys, write_scenario, tiny):
    p = write_scenario(tiny)
    code, out, err = _run_cli(capsys, "run", str(p))
    assert code == 0, err
    runs = list(Path("results", "tiny").iterdir())
    assert len(runs) == 1
    run = runs[0]
    names = sorted(x.name for x in run.iterdir())
    assert names == sorted(
        [f"{t}.parquet" for t in TABLES] + ["scenario.json", "manifest.json", "timeseries.png"]
    )
    meta = json.loads((run / "scenario.json").read_text())
    assert meta["backend"] == "sim" and meta["ccarena_version"]
    assert meta["hash"].startswith(run.name)
    assert f"run directory: {run}" in out
    assert f"figure: {run / 'timeseries.png'}" in out
    assert "reno" in out and "utilization" in out
    assert (run / "timeseries.png").read_bytes().startswith(b"\x89PNG")


def test_same_seed_gives_identical_files(capsys, tmp_path, write_scenario, tiny):
    p = write_scenario(tiny)
    for out_dir in ("a", "b"):
        code, _, err = _run_cli(capsys, "run", str(p), "--out", str(tmp_path / out_dir))
        assert code == 0, err
    a, b = tmp_path / "a", tmp_path / "b"
    names = sorted(x.name for x in a.iterdir())
    assert names == sorted(x.name for x in b.iterdir())
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_rerun_replaces_run_directory(capsys, tmp_path, write_scenario, tiny):
    p = write_scenario(tiny)
    out_dir = tmp_path / "run"
    assert _run_cli(capsys, "run", str(p), "--out", str(out_dir), "--no-figure")[0] == 0
    first = json.loads((out_dir / "scenario.json").read_text())["hash"]
    assert _run_cli(capsys, "run", str(p), "--out", str(out_dir), "--no-figure", "--set", "seed=8")[0] == 0
    second = json.loads((out_dir / "scenario.json").read_text())["hash"]
    assert first != second
    assert sorted(x.name for x in tmp_path.iterdir()) == ["run", "s.toml"]


def test_console_script_bad_input_has_no_traceback(tmp_path, write_scenario, tiny):
    tiny["bottleneck"]["rate"] = "0Mbps"
    p = write_scenario(tiny)
    exe = Path(sys.executable).parent / "ccarena"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "ccarena.cli"]
    proc = subprocess.run(
        [*cmd, "run", str(p)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "100"},
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith(f"{p}: bottleneck.rate: ")
    assert not (tmp_path / "results").exists()


def test_progress_reports_simulated_time_and_an_exception_stops_the_run(tiny):
    """The core calls back with the simulated time; an exception raised in
    the callback (as Ctrl-C's KeyboardInterrupt would be) ends the run."""
    from ccarena import _core
    from ccarena.scenario import Scenario

    # About 6 million events: a callback every 2^20 of them.
    doc = {**tiny, "duration": "30s", "bottleneck": {**tiny["bottleneck"], "rate": "1Gbps"}}
    scn = Scenario.from_dict(doc)
    seen: list[int] = []
    _core.run(scn.core_json, seen.append)
    assert len(seen) >= 2 and seen == sorted(seen) and seen[-1] <= 30_000_000_000

    class Stop(Exception):
        pass

    calls: list[int] = []

    def stop(t: int) -> None:
        calls.append(t)
        if len(calls) == 2:
            raise Stop

    with pytest.raises(Stop):
        _core.run(scn.core_json, stop)
    assert calls == seen[:2]  # stopped at once, not after the rest of the run


def test_ctrl_c_stops_a_long_simulation_within_a_second_and_writes_nothing(tmp_path, write_scenario, tiny):
    import signal
    import time

    doc = {**tiny, "duration": "600s", "bottleneck": {**tiny["bottleneck"], "rate": "1Gbps"}}
    p = write_scenario(doc)
    out = tmp_path / "never"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ccarena", "run", str(p), "--out", str(out), "--yes"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    time.sleep(3.0)  # well into the simulation (the start-up is under a second)
    assert proc.poll() is None
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=10)
    # About 0.1 s here (a check every 2^20 events); the bound leaves room for a loaded machine.
    assert time.monotonic() - sent < 3.0
    assert proc.returncode == 130, proc.stderr.read() if proc.stderr else ""
    # Nothing written, not even a temporary directory: only the scenario file.
    assert [q.name for q in tmp_path.iterdir()] == [p.name]


def test_the_host_table_host_latency_prints_is_one_validate_accepts(capsys, write_scenario, tiny):
    # scripts/host_latency.py --toml: the values at the core's percentiles
    # (host_percentiles), as `[hosts] latency` reads them.
    spec = importlib.util.spec_from_file_location(
        "host_latency", Path(__file__).resolve().parent.parent / "scripts" / "host_latency.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(1)
    text = mod.toml_table(rng.uniform(40, 90, 10_000), rng.uniform(50, 100, 10_000))
    p = write_scenario({**tiny, **tomllib.loads(text)})
    code, out, err = _run_cli(capsys, "validate", str(p))
    assert code == 0, err
    # Medians of 10,000 draws from uniform 40-90 and 50-100 us.
    m = re.search(r"table \(medians ([\d.]+) / ([\d.]+) us\)", out)
    assert m and abs(float(m[1]) - 65) < 1 and abs(float(m[2]) - 75) < 1, out
