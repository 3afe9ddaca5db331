"""One install gives both backends: the wheel `maturin`/`pip wheel` builds,
installed in a fresh virtual environment, runs the simulator and (as root,
where network namespaces work) the Linux backend through the
`ccarena-bottleneck` console script it installs beside `ccarena`, with no
cargo command and no source tree in reach."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A virtual environment with the freshly built wheel. It sees the
    site-packages of the environment running the tests for the dependencies
    (numpy, pandas, ...), whether that is the system's or a virtualenv's (a
    venv made from a venv's interpreter with ``--system-site-packages``
    sees only the base interpreter's, so they are added by a ``.pth``
    file); its own ccarena comes first, its site-packages being ahead of
    every path a ``.pth`` file adds."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(ROOT)],
        check=True,
    )
    (wheel,) = dist.glob("ccarena-*.whl")
    env_dir = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], check=True)
    py = env_dir / "bin" / "python"
    theirs = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    ours = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(ours, "caller-environment.pth").write_text("".join(f"{p}\n" for p in sorted(theirs)))
    subprocess.run(
        [py, "-m", "pip", "install", "--no-deps", "--force-reinstall", "--quiet", str(wheel)], check=True
    )
    return env_dir


def _run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    # Outside the source tree, with no $CCARENA_BOTTLENECK and the venv's
    # bin first on PATH, as after `pip install` in a new environment.
    env = {k: v for k, v in os.environ.items() if k != "CCARENA_BOTTLENECK"}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    return subprocess.run(
        [str(venv / "bin" / "ccarena"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def _scenario(tmp: Path) -> Path:
    p = tmp / "one.toml"
    p.write_text(
        'duration = "3s"\n[bottleneck]\nrate = "20Mbps"\nbuffer = "1BDP"\n'
        '[[flows]]\ncc = "cubic"\nrtt = "20ms"\n',
        encoding="utf-8",
    )
    return p


def test_the_wheel_installs_ccarena_and_the_bottleneck(venv, tmp_path):
    bins = {p.name for p in (venv / "bin").iterdir()}
    assert {"ccarena", "ccarena-bottleneck"} <= bins
    cp = subprocess.run([venv / "bin" / "ccarena-bottleneck", "--help"], capture_output=True, text=True)
    assert cp.returncode == 0 and "usage: ccarena-bottleneck" in cp.stdout
    cp = subprocess.run([venv / "bin" / "ccarena-bottleneck", "--bogus"], capture_output=True, text=True)
    assert cp.returncode == 2 and "--bogus" in cp.stderr
    # The venv's own package, not the source tree's or this interpreter's.
    cp = subprocess.run(
        [venv / "bin" / "python", "-c", "import ccarena, sys; print(ccarena.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert str(venv) in cp.stdout


def test_a_simulator_run_from_the_wheel(venv, tmp_path):
    cp = _run(venv, "run", str(_scenario(tmp_path)), "--out", "r", "--no-figure", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    meta = json.loads((tmp_path / "r" / "scenario.json").read_text())
    assert meta["scenario"]["flows"][0]["cc"] == "cubic"


def _linux_ok() -> str | None:
    if sys.platform != "linux" or os.geteuid() != 0:
        return "needs root on Linux"
    for tool in ("ip", "ethtool"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode:
            return f"needs {tool}"
    return None


@pytest.mark.linux
@pytest.mark.skipif(_linux_ok() is not None, reason=_linux_ok() or "")
def test_a_linux_run_from_the_wheel(venv, tmp_path):
    cp = _run(
        venv,
        "run",
        str(_scenario(tmp_path)),
        "--backend",
        "linux",
        "--out",
        "lx",
        "--no-figure",
        cwd=tmp_path,
    )
    assert cp.returncode == 0, cp.stderr + cp.stdout
    meta = json.loads((tmp_path / "lx" / "scenario.json").read_text())
    assert meta["backend"] == "linux"
    assert meta["linux"]["bottleneck"].startswith(str(venv)), meta["linux"].get("bottleneck")
