import json
import os
from pathlib import Path

import pytest

from ccarena import cli
from ccarena.scenario import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NAME_BYTES,
    Scenario,
    ScenarioError,
    _blame,
    parse_override,
)


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


# --------------------------------------------------------------------------- hostile input (issue 10)

BASE_TOML = 'duration = "1s"\nbottleneck = { rate = "10Mbps" }\n[[flows]]\ncc = "reno"\nrtt = "20ms"\n'


@pytest.fixture
def one_reno(tiny):
    """1 s, 10 Mbps, one Reno flow."""
    tiny.update(duration="1s", bottleneck={"rate": "10Mbps"})
    return tiny


def _refused(capsys, tmp_path, monkeypatch, *argv: str) -> str:
    """Run the CLI in tmp_path; assert exit 2, one line on stderr, nothing
    written; return the line."""
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.iterdir())
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1, err
    assert sorted(tmp_path.iterdir()) == before
    return err.strip()


@pytest.mark.parametrize("value", ["[" * 500 + "]" * 500, "{ b = " * 500 + "1" + " }" * 500])
def test_nesting_too_deep_to_parse(capsys, tmp_path, monkeypatch, value):
    p = tmp_path / "s.toml"
    p.write_text(f"a = {value}\n{BASE_TOML}")
    line = _refused(capsys, tmp_path, monkeypatch, "validate", str(p))
    assert line == f"{p}: nested too deeply: tables and arrays go at most {MAX_DEPTH} levels deep"


LONG_KEY = "a" + ".a" * 49_999  # 100 kB: tomllib took 40 s and 9.8 GB to build it


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (f"{LONG_KEY} = 1\n", 1),
        (f"[{LONG_KEY}]\nx = 1\n", 1),
        (f"[[{LONG_KEY}]]\nx = 1\n", 1),
        (f'x = {{ y = "a.b", {LONG_KEY.replace(".", " . ")} = 1 }}\n', 1),
        (f'# {"a." * 40}\ns = """\n{"a." * 40}\n"""\n' + '"a"' + '."a"' * 49_999 + " = 1\n", 5),
    ],
)
def test_a_dotted_key_too_deep_is_refused_before_it_is_parsed(capsys, tmp_path, monkeypatch, text, line):
    import time

    p = tmp_path / "s.toml"
    p.write_text(BASE_TOML + text)
    t0 = time.perf_counter()
    refused = _refused(capsys, tmp_path, monkeypatch, "validate", str(p))
    assert time.perf_counter() - t0 < 3
    assert refused == (
        f"{p}: nested too deeply: tables and arrays go at most {MAX_DEPTH} levels deep "
        f"(a dotted key of 50,000 parts, line {line + BASE_TOML.count(chr(10))})"
    )


def test_a_dotted_key_one_part_longer_than_the_limit_is_refused(tmp_path):
    """``MAX_DEPTH`` parts are read (and refused by the core as an unknown
    field); one more is refused early, as the document check would."""
    p = tmp_path / "s.toml"
    p.write_text("a" + ".a" * (MAX_DEPTH - 1) + " = 1\n" + BASE_TOML)
    with pytest.raises(ScenarioError) as ei:
        Scenario.load(p)
    assert ei.value.path == "a" and ei.value.message.startswith("unknown field")
    p.write_text("a" + ".a" * MAX_DEPTH + " = 1\n")
    with pytest.raises(ScenarioError) as ei:
        Scenario.load(p)
    assert ei.value.message.endswith("(a dotted key of 33 parts, line 1)")


DOTS = "a." * 40 + "a"


@pytest.mark.parametrize(
    "value",
    [
        f'"{DOTS}"',
        f"'{DOTS}'",
        f'"\\"{DOTS}\\""',
        f'"a\\\\" # {DOTS}',
        f'"""\n{DOTS}\n"{DOTS}"\n""{DOTS}""\n"""',
        f'""""{DOTS}"""""',
        f'"""a\\\n{DOTS}"""',
        f"'''\n{DOTS}\n'{DOTS}'\n''{DOTS}''\n'''",
        f"''''{DOTS}'''''",
        f'{{ y = "{DOTS}", "{DOTS}" = 1, \'{DOTS}.z\'.b = 2 }}',
        f"[\"{DOTS}\", '{DOTS}']",
    ],
)
def test_dots_in_strings_and_comments_are_no_key(tmp_path, value):
    p = tmp_path / "s.toml"
    p.write_text(f"# {DOTS}\n{BASE_TOML}\n[x]\nv = {value}\n")
    with pytest.raises(ScenarioError) as ei:
        Scenario.load(p)
    assert ei.value.path == "x", ei.value  # read, and refused by the core as an unknown table


def test_nesting_deeper_than_the_limit_names_the_field(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(f"a = {'[' * 40}{']' * 40}\n{BASE_TOML}")
    with pytest.raises(ScenarioError) as ei:
        Scenario.load(p)
    assert ei.value.path == "a" + "[0]" * (MAX_DEPTH - 1)
    assert f"at most {MAX_DEPTH} levels" in ei.value.message


def test_deep_or_cyclic_dict_is_refused(one_reno):
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    cyclic: dict = {}
    cyclic["a"] = cyclic
    for value in (deep, cyclic):
        with pytest.raises(ScenarioError, match="nested too deeply"):
            Scenario.from_dict({**one_reno, "a": value})


def test_integer_too_long_for_python_names_the_field(capsys, tmp_path, monkeypatch):
    p = tmp_path / "s.toml"
    p.write_text(f'description = "{"1" * 5000}"\n{BASE_TOML}count = {"9" * 5000}\n')
    line = _refused(capsys, tmp_path, monkeypatch, "validate", str(p))
    assert line.startswith(f"{p}: flows[0].count: integer out of range: ")
    assert "64 bits" in line


def test_integer_too_long_in_set_names_the_field(capsys, tmp_path, monkeypatch, write_scenario, one_reno):
    p = write_scenario(one_reno)
    line = _refused(capsys, tmp_path, monkeypatch, "validate", str(p), "--set", "seed=" + "9" * 5000)
    assert line.startswith(f"{p}: seed: integer out of range: ")


def test_name_too_long_for_a_directory(capsys, tmp_path, monkeypatch, write_scenario, one_reno):
    one_reno["name"] = "é" * 150
    p = write_scenario(one_reno)
    line = _refused(capsys, tmp_path, monkeypatch, "run", str(p))
    assert line == (
        f"{p}: name: 300 bytes long: a name names the results directory, "
        f"so it is at most {MAX_NAME_BYTES} bytes (UTF-8)"
    )


def test_unnamed_scenario_with_a_long_file_name_is_named_by_its_start(write_scenario, one_reno):
    del one_reno["name"]
    p = write_scenario(one_reno, "x" * 200 + ".toml")
    assert Scenario.load(p).name == "x" * MAX_NAME_BYTES


@pytest.mark.parametrize("text", ["[/bold]", "[red]x"])
@pytest.mark.parametrize("command", ["run", "validate"])
def test_markup_in_user_text_prints_as_written(
    capsys, tmp_path, monkeypatch, write_scenario, one_reno, text, command
):
    monkeypatch.chdir(tmp_path)
    one_reno["name"] = text
    one_reno["flows"][0]["label"] = text
    write_scenario(one_reno)
    extra = ["--out", f"out{text}", "--no-figure"] if command == "run" else []
    code = cli.main([command, "s.toml", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert (f"run directory: out{text}" if command == "run" else f"{text} (s.toml)") in out


@pytest.mark.parametrize(
    ("path", "size", "message"),
    [
        ("/dev/zero", None, "is a device, pipe or socket, not a scenario file"),
        ("fifo", None, "is a device, pipe or socket, not a scenario file"),
        ("big.toml", MAX_FILE_BYTES + 1, "larger than 1 MiB, the most a scenario file may be"),
    ],
)
def test_file_not_regular_or_too_large(capsys, tmp_path, monkeypatch, path, size, message):
    p = tmp_path / path
    if path == "fifo":
        os.mkfifo(p)  # opening it would wait for a writer
    elif size is not None:
        p.write_text("#" * size)
    line = _refused(capsys, tmp_path, monkeypatch, "validate", str(p))
    assert line == f"{p}: {message}"


@pytest.mark.parametrize(
    ("toml", "field", "value"),
    [
        ("path = { rtt_split = nan }\n", "path.rtt_split", "nan"),
        ("[path]\nrtt = inf\n", "path.rtt", "inf"),
        ("seed = -inf\n", "seed", "-inf"),
        ("[sweep]\nseed = [1.0, nan]\n", "sweep.seed[1]", "nan"),
    ],
)
def test_nan_and_infinity_name_the_field(capsys, tmp_path, monkeypatch, toml, field, value):
    p = tmp_path / "s.toml"
    p.write_text(toml + BASE_TOML)
    line = _refused(capsys, tmp_path, monkeypatch, "validate", str(p))
    assert line == f"{p}: {field}: {value}: NaN and infinities are not allowed; expected a finite number"


def test_nan_from_set_names_the_field_and_set(capsys, tmp_path, monkeypatch, write_scenario, one_reno):
    p = write_scenario(one_reno)
    line = _refused(capsys, tmp_path, monkeypatch, "validate", str(p), "--set", "flows.0.rtt=nan")
    assert line == (
        f"{p}: flows[0].rtt: nan: NaN and infinities are not allowed; expected a finite number "
        "(set by --set flows.0.rtt=nan)"
    )


def test_error_with_newlines_in_user_text_stays_one_line():
    e = ScenarioError("s.toml", 'flows[0]."a\nb"', "x\ny", "--set a\nb=1")
    assert "\n" not in str(e)


# --------------------------------------------------------------------------- meaningless values (issue 39)


@pytest.mark.parametrize(
    ("sets", "field"),
    [
        (["path.loss=1"], "path.loss"),
        (['flows.0.ack_loss="100%"'], "flows[0].ack_loss"),
        (["bottleneck.buffer=1e30BDP"], "bottleneck.buffer"),
        (['bottleneck.rate_schedule=[["1s", "5Mbps"], ["1s", "7Mbps"]]'], "bottleneck.rate_schedule[1][0]"),
    ],
)
@pytest.mark.parametrize("command", ["validate", "run", "sweep"])
def test_a_run_that_cannot_mean_anything_is_refused(
    capsys, tmp_path, monkeypatch, write_scenario, one_reno, sets, field, command
):
    p = write_scenario(one_reno)
    argv = [command, str(p), *(f"--set={s}" for s in sets)]
    if command != "validate":
        argv += ["--out", "out"]
    line = _refused(capsys, tmp_path, monkeypatch, *argv)
    assert line.startswith(f"{p}: {field}: ")
    assert "warning" not in line


WARNED = [
    ('path.loss={model = "gilbert_elliott", p = "1%", r = 0}', "path.loss", "never leaves it"),
    ('bottleneck={rate = "1Kbps", buffer = "1pkt"}', "bottleneck.rate", "less than one frame"),
    ("bottleneck.bdp_rtt=0ms", "bottleneck.bdp_rtt", "one packet"),
    ("sample.interval=5s", "sample.interval", "no sample is taken"),
    ('path.jitter={model = "per_packet", max = "100s"}', "path.jitter.max", "longer than the run"),
]


@pytest.mark.parametrize(("set_", "field", "says"), WARNED)
def test_warnings_name_file_field_and_override(write_scenario, one_reno, set_, field, says):
    p = write_scenario(one_reno)
    scn = Scenario.load(p, [set_])
    (w,) = scn.warnings
    assert (w.source, w.path, w.override) == (str(p), field, f"--set {set_}")
    assert says in w.message
    assert str(w).startswith(f"{p}: {field}: warning: ") and str(w).endswith(f"(set by --set {set_})")
    assert Scenario.load(p).warnings == ()


@pytest.mark.parametrize("command", ["validate", "run", "sweep"])
def test_each_command_prints_the_warnings_before_it_runs(
    capsys, tmp_path, monkeypatch, write_scenario, one_reno, command
):
    monkeypatch.chdir(tmp_path)
    one_reno["duration"] = "200ms"
    one_reno["path"] = {"jitter": {"model": "per_packet", "max": "1s"}}
    one_reno["sample"] = {"interval": "300ms"}
    if command == "sweep":
        one_reno["sweep"] = {"seed": [1, 2]}
    p = write_scenario(one_reno)
    argv = [command, str(p)]
    if command != "validate":
        argv += ["--out", "out"] + (["--no-figure"] if command == "run" else ["--jobs", "1", "--no-progress"])
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 0, err
    assert err.splitlines()[:2] == [
        f"{p}: path.jitter.max: warning: 1s is longer than the run (200ms): a packet held that long "
        "arrives after the run ends; expected at most the run's duration",
        f"{p}: sample.interval: warning: 300ms is longer than the run (200ms): no sample is taken, "
        "so the samples and queue tables are empty; expected at most the run's duration",
    ]
    if command != "validate":
        assert (tmp_path / "out").is_dir()
