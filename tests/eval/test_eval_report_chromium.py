"""Open report.html in headless Chromium and check that its plots decode and its tables lay out.

A harness page next to the report loads it in an iframe (file access allowed for this test only;
the report itself has no script) and writes what it finds into the DOM that ``--dump-dom``
prints. Needs Debian's ``chromium`` (``apt-get install -y chromium``).
"""

import json
import re
import shutil
import subprocess

import pytest

from sdk.eval.report import build_report, write_report

pytestmark = pytest.mark.chromium

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

HARNESS = """<!DOCTYPE html><html><body><pre id="result">pending</pre>
<iframe id="f" src="report.html" style="width:1200px;height:3000px"></iframe>
<script>
document.getElementById("f").addEventListener("load", () => {
  const doc = document.getElementById("f").contentDocument;
  const imgs = [...doc.querySelectorAll("img[data-plot]")].map(i => ({plot: i.dataset.plot,
      ok: i.complete && i.naturalWidth > 0, height: i.getBoundingClientRect().height}));
  const tables = [...doc.querySelectorAll("table[id]")].map(t => ({id: t.id,
      rows: t.tBodies[0].rows.length, height: t.getBoundingClientRect().height}));
  document.getElementById("result").textContent = JSON.stringify({imgs, tables});
});
</script></body></html>"""


def inspect(folder, tmp_path):
    """Run Chromium on the harness next to ``folder/report.html``; return what the page found."""
    (folder / "harness.html").write_text(HARNESS)
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'chromium-profile'}", "--allow-file-access-from-files",
           "--virtual-time-budget=10000", "--dump-dom", (folder / "harness.html").as_uri()]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    match = re.search(r'<pre id="result">(.*?)</pre>', out.stdout, re.S)
    assert match, f"no result in Chromium's DOM dump; stderr tail: {out.stderr[-2000:]}"
    assert match.group(1) != "pending", "the report never finished loading in Chromium"
    return json.loads(match.group(1))


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")
def test_report_plots_and_tables_render_in_chromium(tmp_path, report_inputs):
    _, html = write_report(tmp_path / "run", build_report(**report_inputs))
    found = inspect(html.parent, tmp_path)
    plots = {i["plot"]: i for i in found["imgs"]}
    assert set(plots) == {"summary", "training-sft", "training-grpo", "benefit"}
    assert all(i["ok"] and i["height"] > 100 for i in plots.values()), plots
    tables = {t["id"]: t for t in found["tables"]}
    for tid, rows in {"summary-table": 3, "domain-table": 3, "regressions-table": 1, "cost-table": 6,
                      "quarantine-table": 2, "flags-table": 2, "marginal-table": 1,
                      "components-table": 2}.items():
        assert tables[tid]["rows"] == rows and tables[tid]["height"] > 20 * rows, tables[tid]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")
def test_chromium_check_catches_a_broken_plot(tmp_path, report_inputs):
    _, html = write_report(tmp_path / "run", build_report(**report_inputs))
    page = html.read_text()
    good = 'data-plot="benefit" alt="held-out pass@1 vs training compute" src="data:image/png;base64,'
    assert good in page
    html.write_text(page.replace(good, 'data-plot="benefit" src="data:image/png;base64,AAAA', 1))
    plots = {i["plot"]: i for i in inspect(html.parent, tmp_path)["imgs"]}
    assert plots["summary"]["ok"] and not plots["benefit"]["ok"]
