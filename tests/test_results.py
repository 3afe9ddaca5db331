import json
import math
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from ccarena import Scenario, _core
from ccarena.results import Results, conform, markdown, schemas, tables_from_ipc
from ccarena.stats import jain
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


def test_a_run_written_before_networks_loads_with_its_one_link(tmp_path: Path):
    # Runs written before [[links]] existed have no links table and no link
    # or route column: their one link is the dumbbell's bottleneck, whose
    # numbers the summary holds.
    tables = {k: v for k, v in _tables().items() if k != "links"}
    r = Results.load(write_run(tmp_path / "run", META, tables))
    assert r.links["link"].tolist() == ["bottleneck"]
    assert r.links["utilization"].tolist() == [0.9] and r.links["drops"].tolist() == [3]
    assert list(r.links.columns) == schemas()["links"].names
    assert set(r.queue["link"]) == {"bottleneck"} and set(r.flows["route"]) == {"bottleneck"}


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


def test_docs_list_every_column_of_the_schema():
    # docs/results.md's tables are generated from the one definition; a
    # column added, renamed or redefined without the docs fails here.
    text = (Path(__file__).parent.parent / "docs" / "results.md").read_text(encoding="utf-8")
    assert markdown() in text


def test_simulated_tables_hold_the_schema_first():
    # Two algorithms with different state columns: the fixed columns come
    # first, in the schema's order and types, the algorithms' after them.
    scn = Scenario.from_dict(
        {
            "duration": "300ms",
            "bottleneck": {"rate": "20Mbps"},
            "flows": [{"cc": "cubic", "rtt": "10ms"}, {"cc": "bbr1", "rtt": "20ms"}],
        }
    )
    run = _core.run(json.dumps(scn.normalized))
    tables = tables_from_ipc({n: run.ipc(n) for n in run.names()})
    assert list(tables) == list(schemas())
    for name, schema in schemas().items():
        got = tables[name].schema
        first = [(got.field(k).name, got.field(k).type) for k in range(len(schema))]
        assert first == [(f.name, f.type) for f in schema], name
    assert {"bbr_mode", "cubic_wmax_pkts"} <= set(tables["samples"].column_names)
    flows = tables["flows"].to_pandas()
    assert tables["summary"].column("jain")[0].as_py() == jain(flows["goodput_mbps"])


def test_conform_orders_types_and_refuses_a_missing_column():
    names = schemas()["transitions"].names
    frame = pd.DataFrame(
        {"to": ["CONG_AVOID"], "extra": [1], "from": ["SLOW_START"], "flow": [0], "time_s": [1]}
    )
    t = conform("transitions", frame)
    assert t.column_names == [*names, "extra"]
    assert t.schema.field("time_s").type == pa.float64()
    # An integer column without a value in some row stays integer, nullable.
    q = pd.DataFrame({c: [1, None] if c == "drops" else [0, 0] for c in schemas()["queue"].names})
    assert conform("queue", q).schema.field("drops").type == pa.int64()
    assert conform("queue", q).column("drops").null_count == 1
    with pytest.raises(ValueError, match=r"lacks the column.*from"):
        conform("transitions", frame.drop(columns=["from"]))


def test_jain_is_the_cores_and_leaves_out_flows_without_a_goodput():
    assert jain([5.0, 5.0]) == pytest.approx(1.0)
    assert jain([9.0, 0.0, 0.0]) == pytest.approx(1 / 3)
    assert jain([5.0, float("nan"), 5.0]) == pytest.approx(1.0)
    assert math.isnan(jain([])) and math.isnan(jain([0.0, 0.0]))
