from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from ccarena.results import Results, tables_from_ipc
from ccarena.store import write_run
from test_store import META, _tables


def test_load_round_trips_frames(tmp_path: Path):
    tables = _tables()
    target = write_run(tmp_path / "run", META, tables)
    r = Results.load(target)
    assert r.path == target
    assert r.meta == META
    assert r.scenario == META["scenario"]
    assert r.name == "x"
    for name, t in tables.items():
        pd.testing.assert_frame_equal(r.table(name), t.to_pandas())
    assert list(r.flows["cc"]) == ["reno", "cubic"]
    assert r.summary["drops"].dtype == "int64"
    assert len(r.transitions) == 0
    assert r.figure is None
    assert "2 flows" in repr(r)


def test_load_rejects_non_run_directory(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        Results.load(tmp_path)


def test_results_need_all_tables():
    with pytest.raises(ValueError, match="transitions"):
        Results({k: v.to_pandas() for k, v in _tables().items() if k != "transitions"}, META)


def test_tables_from_ipc_reads_streams():
    t = pa.table({"time_s": [0.5], "bbr_mode": ["STARTUP"]})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    got = tables_from_ipc({"samples": sink.getvalue().to_pybytes()})
    assert got["samples"].equals(t)
