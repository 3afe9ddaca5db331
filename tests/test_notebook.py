"""The notebook in docs/ runs from top to bottom, and runs and experiments
display as HTML with their tables and figures."""

from __future__ import annotations

from pathlib import Path

import pytest

import ccarena

ROOT = Path(__file__).resolve().parents[1]


def test_runs_and_experiments_render_as_html(tmp_path):
    doc = {
        "name": "html",
        "duration": "2s",
        "bottleneck": {"rate": "20Mbps", "buffer": "1BDP"},
        "flows": [{"cc": "cubic", "rtt": "20ms"}, {"cc": "bbr3", "rtt": "20ms"}],
        "sweep": {"bottleneck.buffer": ["0.5BDP", "2BDP"]},
    }
    exp = ccarena.sweep(doc, out=tmp_path / "e", jobs=1)
    page = exp._repr_html_()
    assert "<table" in page and "data:image/png;base64," in page
    assert "bottleneck.buffer" in page and "0.5BDP" in page
    res = exp.results(0)
    before = sorted(p.name for p in res.path.iterdir())
    page = res._repr_html_()
    assert "<table" in page and "data:image/png;base64," in page and "bbr3" in page
    # Displaying writes nothing into the run directory.
    assert sorted(p.name for p in res.path.iterdir()) == before


def test_the_docs_notebook_runs(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(ROOT / "docs" / "cubic-vs-bbr3.ipynb", as_version=4)
    nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    html = [
        o["data"]["text/html"]
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "text/html" in o.get("data", {})
    ]
    assert any("Experiment cubic-vs-bbr3" in h and "data:image/png;base64," in h for h in html)
    assert any("Results cubic-vs-bbr3" in h for h in html)
