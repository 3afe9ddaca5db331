"""The HTML report opens offline in headless Chromium and every image loads."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import ccarena
from ccarena import cli
from ccarena.report import write_report

DOC = {
    "name": "rep",
    "duration": "2s",
    "seed": 4,
    "bottleneck": {"rate": "20Mbps", "buffer": "1BDP"},
    "flows": [{"cc": "cubic", "rtt": "20ms"}, {"cc": "bbr1", "rtt": "40ms"}],
    "sweep": {"bottleneck.buffer": ["0.5BDP", "4BDP"], "flows.0.rtt": ["10ms", "30ms"]},
    "expect": [{"metric": "utilization", "op": ">", "value": 0.5}],
}

CHROMIUM = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)

PROBE = """<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.title = 'IMAGES ' + ok + '/' + imgs.length;
});
</script>"""


def _dump_dom(index: Path, tmp_path: Path) -> str:
    page = index.with_name("probe.html")
    page.write_text(index.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    out = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--allow-file-access-from-files",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=5000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return out.stdout


def test_report_files_are_local(tmp_path: Path, capsys):
    exp = ccarena.sweep(DOC, out=tmp_path / "e", jobs=1)
    assert cli.main(["report", str(exp.path)]) == 0
    index = exp.path / "report" / "index.html"
    html = index.read_text(encoding="utf-8")
    srcs = re.findall(r'<img src="([^"]+)"', html)
    assert len(srcs) >= 5
    assert all((index.parent / s).is_file() for s in srcs)
    assert "http://" not in html and "https://" not in html
    assert "PASS" in html and "bottleneck.buffer" in html and "[sweep]" in html


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (apt-get install chromium; .ci/run installs it)")
def test_report_renders_in_headless_chromium(tmp_path: Path):
    exp = ccarena.sweep(DOC, out=tmp_path / "e", jobs=1)
    index = write_report(exp)
    run_index = write_report(ccarena.Experiment.from_run(exp.run_dir(0)))
    for page in (index, run_index):
        dom = _dump_dom(page, tmp_path)
        m = re.search(r"<title>IMAGES (\d+)/(\d+)</title>", dom)
        assert m, dom[:500]
        assert int(m[2]) >= 2 and m[1] == m[2], m[0]
