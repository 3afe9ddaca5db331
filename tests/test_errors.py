import json
from pathlib import Path

import pytest

from ccarena.scenario import Scenario, ScenarioError, _blame, parse_override


def test_error_is_one_line_file_path_message():
    e = ScenarioError("s.toml", "flows[1].rtt", 'expected a duration like "20ms"')
    assert str(e) == 's.toml: flows[1].rtt: expected a duration like "20ms"'
    assert isinstance(e, ValueError)
    assert (e.source, e.path, e.message, e.override) == ("s.toml", "flows[1].rtt", e.message, None)


def test_error_without_path_and_multiline_message_stays_one_line():
    e = ScenarioError("s.toml", "", "invalid TOML:\n  bad   thing")
    assert str(e) == "s.toml: invalid TOML: bad thing"


def test_error_names_the_override():
    e = ScenarioError("s.toml", "bottleneck.rate", "must be > 0", "--set bottleneck.rate=0Mbps")
    assert str(e) == "s.toml: bottleneck.rate: must be > 0 (set by --set bottleneck.rate=0Mbps)"


def test_blame_matches_field_inside_or_around_override():
    ovs = [parse_override("flows.0.rtt=1ms"), parse_override('bottleneck={rate = "0Mbps"}')]
    assert _blame("flows[0].rtt", ovs) is ovs[0]
    assert _blame("bottleneck.rate", ovs) is ovs[1]
    assert _blame("flows[1].rtt", ovs) is None
    assert _blame("flows[0].rtt_split", ovs) is None
    assert _blame("", ovs) is None


def test_missing_file(tmp_path: Path):
    with pytest.raises(ScenarioError) as ei:
        Scenario.load(tmp_path / "nope.toml")
    assert str(ei.value) == f"{tmp_path / 'nope.toml'}: no such file"


def test_invalid_toml_names_file_and_line(tmp_path: Path):
    p = tmp_path / "bad.toml"
    p.write_text('name = "x"\nduration = \n')
    with pytest.raises(ScenarioError) as ei:
        Scenario.load(p)
    msg = str(ei.value)
    assert msg.startswith(f"{p}: invalid TOML: ")
    assert "line 2" in msg
    assert "\n" not in msg


def test_malformed_set_names_file(tmp_path: Path, write_scenario, tiny):
    p = write_scenario(tiny)
    with pytest.raises(ScenarioError) as ei:
        Scenario.load(p, ["flows.0.rtt"])
    assert str(ei.value).startswith(f"{p}: --set flows.0.rtt: expected KEY=VALUE")


def test_override_out_of_range_names_file_field_and_set(write_scenario, tiny):
    p = write_scenario(tiny)
    with pytest.raises(ScenarioError) as ei:
        Scenario.load(p, ["flows.3.rtt=5ms"])
    assert str(ei.value) == (
        f"{p}: flows[3].rtt: index 3 is out of range: flows has 1 entry (set by --set flows.3.rtt=5ms)"
    )


def test_core_error_from_override_mentions_set(write_scenario, tiny):
    p = write_scenario(tiny)
    with pytest.raises(ScenarioError) as ei:
        Scenario.load(p, ["flows.0.rtt=ten-parsecs"])
    e = ei.value
    assert e.path == "flows[0].rtt"
    assert e.override == "--set flows.0.rtt=ten-parsecs"
    assert str(e).startswith(f"{p}: flows[0].rtt: ")
    assert str(e).endswith("(set by --set flows.0.rtt=ten-parsecs)")


def test_core_error_from_file_does_not_mention_set(write_scenario, tiny):
    tiny["flows"][0]["rtt"] = "ten-parsecs"
    p = write_scenario(tiny)
    with pytest.raises(ScenarioError) as ei:
        Scenario.load(p, ["seed=3"])
    assert ei.value.override is None
    assert "--set" not in str(ei.value)


def test_core_scenario_error_is_a_value_error_with_attributes(tiny):
    from ccarena import _core

    assert issubclass(_core.ScenarioError, ValueError)
    tiny["flows"][0]["cc"] = "no-such-cc"
    with pytest.raises(_core.ScenarioError) as ei:
        _core.normalize(json.dumps(tiny))
    assert ei.value.path == "flows[0].cc"
    assert "no-such-cc" in ei.value.message
    assert str(ei.value) == f"{ei.value.path}: {ei.value.message}"
