import pytest

from ccarena.scenario import (
    Override,
    apply_override,
    format_path,
    keyword_override,
    parse_key,
    parse_override,
    parse_value,
)


@pytest.mark.parametrize(
    ("key", "segments"),
    [
        ("seed", ("seed",)),
        ("bottleneck.rate", ("bottleneck", "rate")),
        ("flows.0.rtt", ("flows", 0, "rtt")),
        ("flows[0].rtt", ("flows", 0, "rtt")),
        ("flows[1]", ("flows", 1)),
        ("a.b[2][3].c", ("a", "b", 2, 3, "c")),
        ("bottleneck.fq_codel.ce_threshold", ("bottleneck", "fq_codel", "ce_threshold")),
    ],
)
def test_parse_key_dotted_and_indexed(key, segments):
    assert parse_key(key) == segments


@pytest.mark.parametrize("key", ["", "a..b", ".a", "a.", "[0]", "a[x]", "a[0", " a", "a]"])
def test_parse_key_rejects_malformed(key):
    with pytest.raises(ValueError):
        parse_key(key)


def test_format_path_matches_core_style():
    assert format_path(("flows", 1, "rtt")) == "flows[1].rtt"
    assert format_path(("bottleneck", "rate")) == "bottleneck.rate"
    assert format_path(parse_key("flows.0")) == "flows[0]"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3", 3),
        ("-2", -2),
        ("0.5", 0.5),
        ("true", True),
        ("false", False),
        ('"quoted"', "quoted"),
        ("100Mbps", "100Mbps"),
        ("cubic", "cubic"),
        ("20ms", "20ms"),
        ("1.5MB", "1.5MB"),
        ("[1, 2]", [1, 2]),
        ('["0.1BDP", "1BDP"]', ["0.1BDP", "1BDP"]),
        ('{max_rate = "8.5Mbps"}', {"max_rate": "8.5Mbps"}),
        ("", ""),
        ("a b", "a b"),
    ],
)
def test_values_parse_as_toml_else_string(text, value):
    got = parse_value(text)
    assert got == value
    assert type(got) is type(value)


def test_parse_override_splits_at_first_equals():
    ov = parse_override('flows[0].pacing={max_rate = "8Mbps"}')
    assert ov.path == ("flows", 0, "pacing")
    assert ov.value == {"max_rate": "8Mbps"}
    assert ov.origin.startswith("--set flows[0].pacing=")
    assert parse_override("name=a=b").value == "a=b"


def test_parse_override_requires_equals():
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_override("flows.0.rtt")


def _doc():
    return {"seed": 1, "bottleneck": {"rate": "10Mbps"}, "flows": [{"cc": "reno"}, {"cc": "reno"}]}


def test_apply_sets_nested_indexed_and_typed():
    d = _doc()
    for text in ["flows.1.cc=cubic", "flows[0].rtt=50ms", "seed=9", "bottleneck.ecn=true"]:
        apply_override(d, parse_override(text))
    assert d["flows"][1]["cc"] == "cubic"
    assert d["flows"][0]["rtt"] == "50ms"
    assert d["seed"] == 9
    assert d["bottleneck"]["ecn"] is True


def test_apply_creates_missing_tables():
    d = _doc()
    apply_override(d, parse_override("bottleneck.fq_codel.target=5ms"))
    apply_override(d, parse_override("sample.interval=10ms"))
    assert d["bottleneck"]["fq_codel"] == {"target": "5ms"}
    assert d["sample"] == {"interval": "10ms"}


def test_apply_last_override_wins():
    d = _doc()
    apply_override(d, parse_override("seed=2"))
    apply_override(d, parse_override("seed=3"))
    assert d["seed"] == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("flows.2.cc=cubic", "index 2 is out of range: flows has 2 entries"),
        ("bottleneck.0=x", "bottleneck is not a list"),
        ("seed.x=1", "seed is an integer, not a table"),
        ("path.0.rtt=1ms", "path is not set, so it cannot be indexed"),
        ("flows.cc=cubic", "flows is a list, not a table"),
    ],
)
def test_apply_errors_name_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        apply_override(_doc(), parse_override(text))


def test_keyword_override_uses_double_underscore_for_dots():
    ov = keyword_override("bottleneck__rate", "50Mbps")
    assert ov == Override(("bottleneck", "rate"), "50Mbps", "bottleneck__rate='50Mbps'")
    assert keyword_override("flows__0__rtt", "10ms").path == ("flows", 0, "rtt")
    # values are used as given, not parsed
    assert keyword_override("seed", "3").value == "3"
