"""A congestion control of your own, in Python (`cc = "python"`): the
simulator calls it on every ACK and loss, obeys its window, records its
state, raises its exceptions, and steps a run for a learning agent
(`ccarena.gym`)."""

from __future__ import annotations

import textwrap

import pytest

import ccarena
from ccarena import _core

CONTROLLERS = textwrap.dedent(
    """
    import ccarena

    class PyReno(ccarena.Controller):
        '''Slow start, +1 packet per window, halve on loss.'''
        def __init__(self):
            super().__init__()
            self.ssthresh = float("inf")
            self.losses = 0

        def on_ack(self, sample, conn):
            if conn.ca_state != "open":
                return
            if self.cwnd < self.ssthresh:
                self.cwnd += sample.acked
                self.phase = "SLOW_START"
            else:
                self.cwnd += sample.acked / self.cwnd
                self.phase = "CONG_AVOID"

        def on_loss(self, kind, conn):
            self.losses += 1
            self.ssthresh = max(self.cwnd / 2, 2)
            self.cwnd = self.ssthresh if kind == "recovery" else 1

        def state(self):
            return {"pyreno_losses": self.losses, "pyreno_ssthresh": self.ssthresh}

    class Fixed(ccarena.Controller):
        def __init__(self, window=5):
            super().__init__()
            self.cwnd = window

    class Broken(ccarena.Controller):
        def on_ack(self, sample, conn):
            if sample.now > 0.5:
                raise ZeroDivisionError("the controller's own bug")
    """
)


@pytest.fixture
def cc_file(tmp_path):
    p = tmp_path / "mycc.py"
    p.write_text(CONTROLLERS)
    return p


def _doc(cc_params, other=None, duration="10s", rate="20Mbps", buffer="1BDP"):
    flows = [{"cc": "python", "cc_params": cc_params, "rtt": "40ms"}]
    if other:
        flows.append({"cc": other, "rtt": "40ms"})
    return {"duration": duration, "bottleneck": {"rate": rate, "buffer": buffer}, "flows": flows}


def test_a_python_reno_shares_fairly_with_the_native_one(cc_file):
    r = ccarena.run(_doc({"class": f"{cc_file}:PyReno"}, other="reno", duration="30s"))
    g = r.flows["goodput_mbps"]
    share = g.iloc[0] / g.sum()
    assert 0.35 < share < 0.65, share
    assert r.summary["utilization"].iloc[0] > 0.9
    s = r.samples[r.samples["flow"] == 0]
    assert s["pyreno_losses"].iloc[-1] > 0 and s["pyreno_ssthresh"].notna().all()
    t = r.transitions[r.transitions["flow"] == 0]
    assert {"SLOW_START", "CONG_AVOID"} <= set(t["to"])


def test_the_simulator_obeys_the_controllers_window(cc_file):
    # 5 packets per 40 ms round trip, far below the link: window-limited.
    r = ccarena.run(_doc({"class": f"{cc_file}:Fixed", "window": 5}, buffer="4BDP"))
    expected = 5 * 1448 * 8 / 0.040 / 1e6
    got = r.flows["goodput_mbps"].iloc[0]
    assert abs(got - expected) < 0.1 * expected, (got, expected)
    assert (r.samples["cwnd_pkts"].iloc[2:] == 5).all()


def test_same_scenario_same_bits(cc_file):
    doc = _doc({"class": f"{cc_file}:PyReno"}, other="cubic", duration="5s")
    a, b = ccarena.run(doc), ccarena.run(doc)
    assert a.flows.equals(b.flows) and a.samples.equals(b.samples)


def test_a_controllers_exception_is_raised_by_run(cc_file, tmp_path):
    from ccarena.errors import ControllerError

    with pytest.raises(
        ControllerError, match=r"flow 0: the controller's on_ack raised ZeroDivisionError"
    ) as e:
        ccarena.run(_doc({"class": f"{cc_file}:Broken"}, duration="3s"), out=tmp_path / "r")
    assert isinstance(e.value.__cause__, ZeroDivisionError)
    assert not (tmp_path / "r").exists()


def test_the_command_line_says_it_in_one_line(cc_file, tmp_path, capsys, monkeypatch):
    from ccarena.cli import main

    monkeypatch.chdir(cc_file.parent)
    p = tmp_path / "s.toml"
    p.write_text(
        'duration = "2s"\n[bottleneck]\nrate = "10Mbps"\n'
        '[[flows]]\ncc = "python"\nrtt = "20ms"\ncc_params = { class = "mycc:Broken" }\n'
    )
    assert main(["run", str(p), "--out", str(tmp_path / "r"), "--no-figure"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ZeroDivisionError" in err[0] and "flow 0" in err[0], err
    p.write_text(p.read_text().replace("mycc:Broken", "nosuchmodule:X"))
    assert main(["run", str(p), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "flows[0].cc_params.class" in err[0] and "nosuchmodule" in err[0], err
    assert not (tmp_path / "r").exists()


def test_bad_class_specs(cc_file, tmp_path):
    with pytest.raises(ccarena.ScenarioError, match="class"):
        ccarena.Scenario.from_dict(_doc({"window": 5}))
    with pytest.raises(ccarena.ScenarioError, match="module:Class"):
        ccarena.Scenario.from_dict(_doc({"class": "no_colon"}))
    with pytest.raises(ccarena.ScenarioError, match=r"not a ccarena\.Controller subclass"):
        ccarena.Scenario.from_dict(_doc({"class": f"{cc_file}:textwrap"}))


def test_a_stepped_simulation_is_the_same_run(cc_file):
    from ccarena.results import tables_from_ipc
    from ccarena.runner import simulate

    scn = ccarena.Scenario.from_dict(_doc({"class": f"{cc_file}:PyReno"}, other="bbr1", duration="3s"))
    whole = simulate(scn.core_json)
    sim = _core.Simulation(scn.core_json)
    t = 0
    while sim.advance(t):
        t += 33_000_000
    stepped = sim.results()
    a = tables_from_ipc({n: whole.ipc(n) for n in whole.names()})
    b = tables_from_ipc({n: stepped.ipc(n) for n in stepped.names()})
    for name in a:
        # pandas' equals: NaN equals NaN (Arrow's does not).
        assert a[name].to_pandas().equals(b[name].to_pandas()), name
