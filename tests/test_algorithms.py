"""The algorithm catalogue as users reach it: `ccarena list` names every
algorithm and discipline with its reference, each algorithm runs and
reports its state columns, and the Linux backend refuses one whose kernel
module is not loaded, by name."""

from __future__ import annotations

import pytest

import ccarena
from ccarena import _core
from ccarena.cli import main
from ccarena.linux import backend as lb

# Every native algorithm, as the registry lists it (a Python controller
# has its own tests).
NATIVE = [n for n in _core.cc_names() if n != "python"]
# Where an algorithm's state columns start, when not with its own name.
STATE_PREFIX = {"yeah": "vegas_", "ledbat_pp": "ledbat_", "bbr1": "bbr_", "bbr2": "bbr_", "bbr3": "bbr_"}
# Reno and Scalable keep no state of their own.
NO_STATE = {"reno", "scalable"}
# The algorithms that own their window without a slow-start threshold.
NO_SSTHRESH = {"copa", "vivace", "bbr1", "bbq", "bbr2", "bbr3"}


def test_list_names_every_algorithm_and_discipline_with_its_reference(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # one row a line
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for n in _core.cc_names():
        ref = _core.cc_reference(n)
        assert ref, n
        assert any(f" {n} " in line and ref in line for line in out.splitlines()), n
    for n in _core.qdisc_names():
        assert _core.qdisc_reference(n) and _core.qdisc_reference(n) in out, n


@pytest.mark.parametrize("cc", NATIVE)
def test_each_algorithm_runs_and_reports_its_state(cc):
    r = ccarena.run(
        {
            "duration": "2s",
            "bottleneck": {"rate": "10Mbps", "buffer": "1BDP"},
            "flows": [{"cc": cc, "rtt": "20ms"}],
        }
    )
    f = r.flows.iloc[0]
    assert f["cc"] == cc and f["goodput_mbps"] > 5.0
    prefix = STATE_PREFIX.get(cc, f"{cc}_")
    own = [c for c in r.samples.columns if c.startswith(prefix)]
    assert bool(own) == (cc not in NO_STATE), cc
    assert ("ssthresh_pkts" in r.samples.columns) == (cc not in NO_SSTHRESH), cc


def test_the_linux_backend_refuses_an_algorithm_whose_module_is_not_loaded(monkeypatch):
    monkeypatch.setattr(lb, "_available_cc", lambda: {"reno", "cubic", "bbr"})
    scn = ccarena.Scenario.from_dict(
        {"duration": "2s", "bottleneck": {"rate": "10Mbps"}, "flows": [{"cc": "vegas", "rtt": "20ms"}]}
    )
    with pytest.raises(lb.LinuxUnsupported, match=r"no 'vegas'.*modprobe tcp_vegas"):
        lb.plan(scn)
    # With the module loaded, the flow runs on the kernel's vegas.
    monkeypatch.setattr(lb, "_available_cc", lambda: {"reno", "cubic", "bbr", "vegas"})
    flows, _ = lb.plan(scn)
    assert flows[0]["cc"] == "vegas"


def test_a_bad_parameter_of_a_new_algorithm_is_one_line(tmp_path, capsys):
    p = tmp_path / "s.toml"
    p.write_text(
        'duration = "1s"\n[bottleneck]\nrate = "10Mbps"\n'
        '[[flows]]\ncc = "vegas"\nrtt = "20ms"\ncc_params = { alpha = 5, beta = 2 }\n'
    )
    assert main(["run", str(p), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "alpha" in err and "beta" in err and str(p) in err
    assert not (tmp_path / "r").exists()
