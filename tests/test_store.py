import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

from ccarena import store
from ccarena.store import StoreError, default_run_dir, write_run


def _tables(scale: float = 1.0) -> dict[str, pa.Table]:
    return {
        "summary": pa.table({"utilization": [0.9 * scale], "drops": pa.array([3], pa.int64())}),
        "flows": pa.table({"flow": [0, 1], "cc": ["reno", "cubic"], "goodput_mbps": [1.0 * scale, 2.0]}),
        "samples": pa.table({"time_s": [0.1, 0.2], "flow": [0, 0], "goodput_mbps": [1.0, 2.0]}),
        "queue": pa.table({"time_s": [0.1, 0.2], "sojourn_mean_ms": [1.0, 3.0]}),
        "transitions": pa.table({"time_s": pa.array([], pa.float64()), "to": pa.array([], pa.string())}),
        "links": pa.table({"link": ["bottleneck"], "utilization": [0.9 * scale]}),
    }


META = {"backend": "sim", "hash": "old", "ccarena_version": "0.0.0", "scenario": {"name": "x", "seed": 1}}


def _entries(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_writes_all_files(tmp_path: Path):
    target = tmp_path / "results" / "x" / "abc"
    assert write_run(target, META, _tables()) == target
    assert _entries(target) == sorted(
        ["scenario.json", "manifest.json"] + [f"{t}.parquet" for t in store.TABLES]
    )
    listed = json.loads((target / "manifest.json").read_text())["files"]
    assert sorted(listed) == sorted(n for n in _entries(target) if n != "manifest.json")
    assert all(v["bytes"] == (target / k).stat().st_size for k, v in listed.items())
    assert json.loads((target / "scenario.json").read_text()) == META
    assert _entries(target.parent) == ["abc"]  # no temporary directory left


def test_same_input_same_bytes(tmp_path: Path):
    a = write_run(tmp_path / "a", META, _tables())
    b = write_run(tmp_path / "b", META, _tables())
    for name in _entries(a):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


class Boom(RuntimeError):
    pass


def _fail_on_third_table(monkeypatch):
    real = store.write_table
    calls = []

    def failing(table, path):
        calls.append(path)
        if len(calls) == 3:
            path.write_bytes(b"PAR1 half a file")  # a half-written file, then the failure
            raise Boom("disk full")
        real(table, path)

    monkeypatch.setattr(store, "write_table", failing)
    return calls


def test_failure_mid_write_leaves_nothing(tmp_path: Path, monkeypatch):
    calls = _fail_on_third_table(monkeypatch)
    target = tmp_path / "results" / "x" / "abc"
    with pytest.raises(Boom):
        write_run(target, META, _tables())
    assert len(calls) == 3
    assert not target.exists()
    # neither the temporary directory nor the parents this call created remain
    assert _entries(tmp_path) == []


def test_failure_keeps_existing_parent_untouched(tmp_path: Path, monkeypatch):
    parent = tmp_path / "results"
    parent.mkdir()
    (parent / "other").mkdir()
    _fail_on_third_table(monkeypatch)
    with pytest.raises(Boom):
        write_run(parent / "abc", META, _tables())
    assert _entries(parent) == ["other"]


def test_failure_while_replacing_keeps_the_old_run(tmp_path: Path, monkeypatch):
    target = tmp_path / "run"
    write_run(target, META, _tables())
    before = {n: (target / n).read_bytes() for n in _entries(target)}
    _fail_on_third_table(monkeypatch)
    with pytest.raises(Boom):
        write_run(target, {**META, "hash": "new"}, _tables(2.0))
    assert {n: (target / n).read_bytes() for n in _entries(target)} == before
    assert _entries(tmp_path) == ["run"]


def test_failure_in_extra_leaves_nothing(tmp_path: Path):
    def extra(tmp: Path) -> None:
        (tmp / "timeseries.png").write_bytes(b"\x89PNG half")
        raise Boom("plot failed")

    with pytest.raises(Boom):
        write_run(tmp_path / "run", META, _tables(), extra)
    assert _entries(tmp_path) == []


def test_extra_files_are_part_of_the_run(tmp_path: Path):
    seen = []

    def extra(tmp: Path) -> None:
        seen.append(tmp)
        assert tmp != tmp_path / "run" and tmp.parent == tmp_path
        assert not (tmp_path / "run").exists()  # not published yet
        (tmp / "timeseries.png").write_bytes(b"png")

    write_run(tmp_path / "run", META, _tables(), extra)
    assert (tmp_path / "run" / "timeseries.png").read_bytes() == b"png"
    assert not seen[0].exists()


@pytest.mark.parametrize("exchange", [True, False])
def test_replaces_existing_run(tmp_path: Path, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(store, "_exchange", lambda a, b: False)
    target = tmp_path / "run"

    def figure(tmp: Path) -> None:
        (tmp / "timeseries.png").write_bytes(b"old figure")

    write_run(target, META, _tables(), figure)
    write_run(target, {**META, "hash": "new"}, _tables(2.0))
    assert json.loads((target / "scenario.json").read_text())["hash"] == "new"
    assert not (target / "timeseries.png").exists()  # ccarena's own, of the earlier run
    assert _entries(tmp_path) == ["run"]


@pytest.mark.parametrize(
    "mine", ["my-photo.png", "diagram.svg", "report/my-notes.txt", "capture/mine.pcapng", "notes/a.txt"]
)
def test_a_file_ccarena_did_not_write_is_never_deleted(tmp_path: Path, mine):
    """Issue 39: pictures and notes the user put into an earlier run's
    folder were deleted by the next run (every *.png, *.svg and report/ was
    counted as ccarena's). Only what the manifest lists is ccarena's."""
    target = tmp_path / "run"
    write_run(target, META, _tables())
    (target / mine).parent.mkdir(exist_ok=True)
    (target / mine).write_bytes(b"the user's")
    before = sorted(str(p.relative_to(target)) for p in target.rglob("*"))
    with pytest.raises(StoreError, match="did not write"):
        write_run(target, {**META, "hash": "new"}, _tables(2.0))
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*")) == before
    assert (target / mine).read_bytes() == b"the user's"
    assert json.loads((target / "scenario.json").read_text())["hash"] == "old"
    assert _entries(tmp_path) == ["run"]


def test_a_run_of_an_older_ccarena_without_a_manifest(tmp_path: Path):
    """Before manifests a run directory held the tables, scenario.json,
    timeseries.png and capture/*.pcapng: such a one is replaced; with
    anything else in it (a report, a picture), it is the user's."""
    target = tmp_path / "run"
    write_run(target, META, _tables())
    (target / "manifest.json").unlink()
    (target / "timeseries.png").write_bytes(b"old ccarena's figure")
    write_run(target, {**META, "hash": "new"}, _tables(2.0))
    assert json.loads((target / "scenario.json").read_text())["hash"] == "new"
    (target / "manifest.json").unlink()
    (target / "report").mkdir()
    (target / "report" / "index.html").write_text("an old report, or the user's")
    with pytest.raises(StoreError, match="report"):
        write_run(target, META, _tables())
    assert (target / "report" / "index.html").is_file()


def test_a_changed_file_of_ccarenas_counts_as_the_users(tmp_path: Path):
    target = tmp_path / "run"

    def figure(tmp: Path) -> None:
        (tmp / "timeseries.png").write_bytes(b"ccarena's figure")

    write_run(target, META, _tables(), figure)
    (target / "timeseries.png").write_bytes(b"the user's own figure, same name")
    with pytest.raises(StoreError, match=r"timeseries\.png"):
        write_run(target, {**META, "hash": "new"}, _tables(2.0))
    assert (target / "timeseries.png").read_bytes() == b"the user's own figure, same name"


def test_a_kernel_run_is_never_replaced(tmp_path: Path):
    target = tmp_path / "lx"
    write_run(target, {**META, "backend": "linux"}, _tables())
    with pytest.raises(StoreError, match="kernel run"):
        write_run(target, {**META, "backend": "linux", "hash": "new"}, _tables(2.0))
    with pytest.raises(StoreError, match="kernel run"):
        write_run(target, META, _tables())
    assert json.loads((target / "scenario.json").read_text())["backend"] == "linux"


def test_an_earlier_report_stays_with_an_unchanged_run_and_goes_with_a_changed_one(tmp_path: Path):
    target = tmp_path / "run"
    write_run(target, META, _tables())
    store.write_dir(target / "report", lambda d: (d / "index.html").write_text("report"), "test")
    write_run(target, META, _tables())  # the same scenario again
    assert (target / "report" / "index.html").read_text() == "report"
    write_run(target, {**META, "hash": "new"}, _tables(2.0))  # another: the report described the old
    assert not (target / "report").exists()
    # a note of the user's inside report/ makes the folder theirs
    store.write_dir(target / "report", lambda d: (d / "index.html").write_text("report"), "test")
    (target / "report" / "my-notes.txt").write_text("mine")
    with pytest.raises(StoreError, match=r"my-notes\.txt"):
        write_run(target, META, _tables())
    with pytest.raises(StoreError, match=r"my-notes\.txt"):
        store.write_dir(target / "report", lambda d: None, "test")
    assert (target / "report" / "my-notes.txt").read_text() == "mine"


def test_a_stale_temporary_run_beside_out_goes_with_the_next_run(tmp_path: Path):
    """Issue 39: a run killed (SIGKILL) while drawing its figure left its
    temporary directory beside --out, and no later run removed it. A dead
    writer's temporary run goes; one holding anything else stays."""
    dead = 2**22 + 12345  # above pid_max's default: no such process
    stale = tmp_path / f".run.tmp-{dead}-0123abcd"
    stale.mkdir()
    (stale / "scenario.json").write_text("{}")
    (stale / "samples.parquet").write_bytes(b"PAR1")
    odd = tmp_path / f".mine.tmp-{dead}-0123abcd"
    odd.mkdir()
    (odd / "thesis.tex").write_text("x")
    write_run(tmp_path / "other", META, _tables())
    assert not stale.exists()
    assert (odd / "thesis.tex").read_text() == "x"


def test_replaces_empty_directory(tmp_path: Path):
    (tmp_path / "run").mkdir()
    write_run(tmp_path / "run", META, _tables())
    assert (tmp_path / "run" / "scenario.json").is_file()


def test_refuses_to_replace_a_directory_that_is_not_a_run(tmp_path: Path):
    target = tmp_path / "home"
    target.mkdir()
    (target / "precious.txt").write_text("keep me")
    with pytest.raises(StoreError, match="did not write"):
        write_run(target, META, _tables())
    assert _entries(target) == ["precious.txt"]
    assert _entries(tmp_path) == ["home"]


def test_refuses_to_replace_a_file(tmp_path: Path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(StoreError):
        write_run(tmp_path / "f", META, _tables())


def test_exchange_swaps_directories(tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "1").touch()
    (b / "2").touch()
    if not store._exchange(a, b):
        pytest.skip("renameat2(RENAME_EXCHANGE) not supported here")
    assert _entries(a) == ["2"] and _entries(b) == ["1"]


def test_default_run_dir_layout():
    assert default_run_dir("two-rtts", "0123abcd") == Path("results/two-rtts/0123abcd")
    assert default_run_dir("a/b c", "h", "out") == Path("out/a_b_c/h")
    assert default_run_dir("..", "h").parent.name == "scenario"


def _user_folder(tmp_path):
    d = tmp_path / "thesis"
    (d / "data").mkdir(parents=True)
    (d / "scenario.json").write_text('{"mine": true}')
    (d / "thesis.tex").write_text("\\\\documentclass{article}")
    return d


def test_out_never_replaces_a_folder_that_only_holds_a_scenario_json(tmp_path, capsys):
    """Issue 10: a folder with scenario.json, thesis.tex and data/ came back
    holding only the run's files."""
    from ccarena.cli import main

    d = _user_folder(tmp_path)
    scn = tmp_path / "s.toml"
    scn.write_text('duration = "1s"\n[bottleneck]\nrate = "10Mbps"\n[[flows]]\ncc = "reno"\nrtt = "10ms"\n')
    assert main(["run", str(scn), "--out", str(d), "--no-figure"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(d) in err
    assert sorted(p.name for p in d.iterdir()) == ["data", "scenario.json", "thesis.tex"]
    assert (d / "scenario.json").read_text() == '{"mine": true}'


def test_out_replaces_a_run_but_not_a_run_with_a_user_file(tmp_path, capsys):
    from ccarena.cli import main

    scn = tmp_path / "s.toml"
    scn.write_text('duration = "1s"\n[bottleneck]\nrate = "10Mbps"\n[[flows]]\ncc = "reno"\nrtt = "10ms"\n')
    out = tmp_path / "run"
    assert main(["run", str(scn), "--out", str(out), "--no-figure"]) == 0
    assert main(["run", str(scn), "--out", str(out), "--no-figure", "--set", "seed=2"]) == 0
    (out / "notes.txt").write_text("mine")
    assert main(["run", str(scn), "--out", str(out), "--no-figure"]) == 2
    assert (out / "notes.txt").read_text() == "mine"
    f = tmp_path / "afile"
    f.write_text("x")
    assert main(["run", str(scn), "--out", str(f), "--no-figure"]) == 2
    assert f.read_text() == "x"
    link = tmp_path / "link"
    link.symlink_to(out)
    assert main(["run", str(scn), "--out", str(link), "--no-figure"]) == 2
    assert (out / "notes.txt").is_file()


def test_sweep_out_never_overwrites_a_foreign_experiment_json(tmp_path, capsys):
    from ccarena.cli import main

    scn = tmp_path / "s.toml"
    scn.write_text(
        'duration = "1s"\n[bottleneck]\nrate = "10Mbps"\n[[flows]]\ncc = "reno"\nrtt = "10ms"\n'
        '[sweep]\n"bottleneck.rate" = ["10Mbps", "20Mbps"]\n'
    )
    d = tmp_path / "paper"
    d.mkdir()
    (d / "experiment.json").write_text('{"my": "notes"}')
    assert main(["sweep", str(scn), "--out", str(d), "--jobs", "1"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert sorted(p.name for p in d.iterdir()) == ["experiment.json"]
    assert (d / "experiment.json").read_text() == '{"my": "notes"}'
    # an earlier experiment of ccarena's is resumed, not refused
    e = tmp_path / "exp"
    assert main(["sweep", str(scn), "--out", str(e), "--jobs", "1"]) == 0
    assert main(["sweep", str(scn), "--out", str(e), "--jobs", "1"]) == 0


def test_stale_temporary_runs_go_even_when_their_writer_is_a_zombie(tmp_path: Path):
    # A killed sweep's worker exits mid-write when its driver dies and may
    # stay a zombie (nobody reaps it): its temporary run directory is stale
    # all the same. A live writer's stays.
    child = os.fork()
    if child == 0:
        os._exit(0)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline, "the child never exited"
        time.sleep(0.01)
    try:
        zombie = tmp_path / f".abc.tmp-{child}-00000000"
        live = tmp_path / f".def.tmp-{os.getpid()}-00000000"
        zombie.mkdir()
        live.mkdir()
        assert store.clean_stale_tmp(tmp_path) == [zombie]
        assert live.exists() and not zombie.exists()
    finally:
        os.waitpid(child, 0)
