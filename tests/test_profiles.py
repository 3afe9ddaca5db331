"""Host profiles (ccarena.profiles): a measured turnaround table with where
it was measured, named by a scenario (`[hosts] profile`) or by conformance
(`--sim-hosts`); `ccarena linux measure-host` writes one (as root)."""

from __future__ import annotations

import pytest

import ccarena
from ccarena import _core, profiles
from ccarena.scenario import ScenarioError
from conftest import linux_unavailable

TABLE = {"sender_us": [10.0 + k for k in range(18)], "receiver_us": [20.0 + k for k in range(18)]}
DOC = {"duration": "1s", "bottleneck": {"rate": "10Mbps"}, "flows": [{"cc": "reno", "rtt": "20ms"}]}


def _write(path, measured: str = 'hostname = "lab"\n', table=TABLE):
    path.write_text(
        f"[measured]\n{measured}\n[hosts]\nlatency = {{ sender_us = {table['sender_us']}, "
        f"receiver_us = {table['receiver_us']} }}\n"
    )
    return path


def test_the_default_profile_is_the_cores_default_table():
    """The table compiled into the core is a shipped profile, with where it
    was measured: a user can see which machine their defaults describe."""
    p = profiles.resolve(profiles.DEFAULT)
    sender, receiver = _core.default_host_table()
    assert list(p.sender_us) == pytest.approx(sender) and list(p.receiver_us) == pytest.approx(receiver)
    assert p.measured["utc"] and p.measured["method"]
    assert profiles.DEFAULT in profiles.shipped()


def test_a_scenario_names_a_profile_by_file_or_name(tmp_path):
    prof = _write(tmp_path / "lab.toml")
    scn_file = tmp_path / "s.toml"
    scn_file.write_text(
        'duration = "1s"\n[bottleneck]\nrate = "10Mbps"\n[[flows]]\ncc = "reno"\nrtt = "20ms"\n'
        '[hosts]\nprofile = "lab.toml"\n'
    )
    s = ccarena.Scenario.load(scn_file)  # read relative to the scenario file
    table = s.normalized["hosts"]["latency"]["table"]
    assert table["sender_ns"] == [round(x * 1e3) for x in TABLE["sender_us"]]
    assert s.raw["hosts"]["profile"] == "lab.toml"  # as written; the hash covers the table
    same = ccarena.Scenario.from_dict({**DOC, "hosts": {"latency": TABLE}})
    assert s.hash == ccarena.Scenario.from_dict({**DOC, "name": s.name, "hosts": {"latency": TABLE}}).hash
    assert same.normalized["hosts"] == s.normalized["hosts"]
    shipped = ccarena.Scenario.from_dict({**DOC, "hosts": {"profile": profiles.DEFAULT}})
    assert shipped.normalized["hosts"]["latency"]["table"]["sender_ns"][0] == round(
        profiles.resolve(profiles.DEFAULT).sender_us[0] * 1e3
    )
    assert prof.is_file()


@pytest.mark.parametrize(
    ("hosts", "says"),
    [
        ({"profile": "no-such-profile"}, "no such file"),
        ({"profile": 3}, "expected a profile file"),
        ({"profile": "x.toml", "latency": "none"}, "not both"),
    ],
)
def test_a_bad_profile_is_one_line_naming_the_field(hosts, says):
    with pytest.raises(ScenarioError) as e:
        ccarena.Scenario.from_dict({**DOC, "hosts": hosts})
    assert "hosts.profile" in str(e.value) and says in str(e.value) and "\n" not in str(e.value)


def test_a_bad_profile_file_says_what_is_wrong(tmp_path):
    bad = _write(tmp_path / "bad.toml", table={"sender_us": [3.0, 2.0], "receiver_us": [1.0]})
    with pytest.raises(profiles.ProfileError, match="must not decrease"):
        profiles.load(bad)
    (tmp_path / "junk.toml").write_text("not = [toml")
    with pytest.raises(profiles.ProfileError, match="invalid TOML"):
        profiles.load(tmp_path / "junk.toml")


def test_a_written_profile_reads_back(tmp_path):
    p = profiles.Profile("lab", tuple(TABLE["sender_us"]), tuple(TABLE["receiver_us"]), {"runs": 3, "x": "y"})
    back = profiles.load(profiles.write(tmp_path / "lab.toml", p, "a comment"))
    assert back.sender_us == p.sender_us and back.measured == p.measured


@pytest.mark.linux
@pytest.mark.skipif(linux_unavailable() is not None, reason=linux_unavailable() or "")
def test_measure_host_writes_a_profile_of_this_machine(tmp_path, capsys):
    from ccarena.cli import main
    from ccarena.linux.host import host_info

    out = tmp_path / "me.toml"
    rc = main(["linux", "measure-host", "--runs", "1", "--out", str(out)])
    if rc == 1 and "none of the 1 runs was trustworthy" in capsys.readouterr().err:
        # Other work on the machine: measure-host refuses, as it must.
        assert not out.exists()
        pytest.skip("the machine was busy: measure-host refused to write a profile")
    assert rc == 0
    p = profiles.load(out)
    here = host_info()
    assert p.measured["hostname"] == here["hostname"] and p.measured["cpus"] == here["cpus"]
    assert p.measured["runs"] == 1 and len(p.sender_us) == len(_core.host_percentiles())
    assert 1.0 < p.sender_us[8] < 1000.0  # a median turnaround in us
    # A measurement is never overwritten.
    assert main(["linux", "measure-host", "--runs", "1", "--out", str(out)]) == 2
    assert profiles.load(out).measured == p.measured
