"""A run's growing tables kept on disk while it runs (``_core.run``'s
``spill``, ``runner.simulated``): the tables written are those of a run
that kept everything in memory, and the spill directory never outlives
the run, whether it ends, fails or is interrupted."""

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ccarena import _core, store
from ccarena.runner import simulate, simulated
from ccarena.scenario import Scenario

# More than one batch (65,536 rows) of samples, and a flow of another
# algorithm starting after the first batch left, so the later batches
# have BBR's state columns that the first lacks (padded when written).
SCENARIO = {
    "name": "spill",
    "duration": "6s",
    "seed": 4,
    "bottleneck": {"rate": "20Mbps", "buffer": "1BDP"},
    "path": {"rtt": "20ms"},
    "sample": {"interval": "1ms"},
    "flows": [{"cc": "cubic", "count": 20}, {"cc": "bbr1", "start": "4.5s"}],
}


def _spills(d: Path) -> list[str]:
    return [p.name for p in d.iterdir() if p.name.endswith(".spill")]


@pytest.fixture(scope="module")
def scn() -> Scenario:
    return Scenario.from_dict(SCENARIO)


def test_spilled_tables_are_the_tables_kept_in_memory(scn, tmp_path):
    whole = simulate(scn.core_json)
    with simulated(scn.core_json, tmp_path / "run") as run:
        assert run.held() == ["summary", "flows", "links"]
        assert run.names() == list(store.TABLES)
        assert run.num_rows("samples") == whole.num_rows("samples") > 65_536
        [spill] = _spills(tmp_path)
        assert len(list((tmp_path / spill).glob("samples.*.arrow"))) == 2
        run.write(tmp_path)
    assert _spills(tmp_path) == []
    for name in store.TABLES:
        got = pq.read_table(tmp_path / f"{name}.parquet").to_pandas()
        want = pq.read_table(pa.BufferReader(whole.parquet(name))).to_pandas()
        assert list(got.columns) == list(want.columns) and got.equals(want), name  # NaN equals NaN
    samples = pq.read_table(tmp_path / "samples.parquet").to_pandas()
    # The first batch had no BBR columns: padded, they read as absent.
    assert samples.loc[samples.time_s < 1.0, "bbr_mode"].eq("").all()
    assert samples.loc[(samples.flow == 20) & (samples.time_s > 5.0), "bbr_mode"].ne("").all()


def test_a_stopped_run_leaves_no_spill(tmp_path):
    # Stopped at the first progress call (2^20 events, about 3 s simulated
    # here), after a batch of samples went to disk.
    fast = {"bottleneck": {"rate": "1Gbps", "buffer": "1BDP"}, "flows": [{"cc": "cubic", "count": 40}]}
    big = Scenario.from_dict({**SCENARIO, **fast})
    seen: list[list[str]] = []

    def stop(_t: int) -> None:
        seen.extend(os.listdir(tmp_path / _spills(tmp_path)[0]))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), simulated(big.core_json, tmp_path / "run", stop):
        pass
    assert "samples.000000.arrow" in seen
    assert list(tmp_path.iterdir()) == []


def test_a_spill_directory_is_never_an_existing_one(scn, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep.txt").write_text("x")
    with pytest.raises(RuntimeError, match="spill directory"):
        _core.run(scn.core_json, None, str(tmp_path / "mine"))
    assert (tmp_path / "mine" / "keep.txt").read_text() == "x"


def test_a_killed_runs_spill_is_cleaned_like_its_other_temporary_files(tmp_path):
    dead = 2**22 + 7  # above Linux's pid_max default: no such process
    left = tmp_path / f".run.tmp-{dead}-00ff.spill"
    left.mkdir()
    (left / "samples.000003.arrow").write_bytes(b"x")
    mine = tmp_path / f".run.tmp-{dead}-00fe.spill"
    mine.mkdir()
    (mine / "notes.txt").write_text("not a run's")
    assert store.clean_stale_tmp(tmp_path) == [left]
    assert mine.exists()


def test_the_spill_sits_beside_the_target_in_its_nearest_directory(tmp_path):
    d = store.spill_dir(tmp_path / "a" / "b" / "run")
    assert d.parent == tmp_path and d.name.startswith(".run.tmp-") and d.name.endswith(".spill")
    assert f"-{os.getpid()}-" in d.name
