"""The ETPR HTML page: rendered from the template shipped in the package, with every value from the input
escaped (job ids, causes, the source path and issue texts are input)."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from diag_service.etpr import build_report, compute_ledger, normalize_events, render_html
from diag_service.etpr.loaders import rows_to_frame
from diag_service.etpr.report import REPORT_TEMPLATE

REPO = Path(__file__).resolve().parents[1]
EVIL = '<script>alert("x")</script>'


def _ledger_with_hostile_names():
    rows = [
        {"job": EVIL, "event": "allocated", "time": 0, "gpus": 8},
        {"job": EVIL, "event": "started", "time": 60},
        {"job": EVIL, "event": "first_step", "time": 120},
        {"job": EVIL, "event": "failure", "time": 600, "onset_time": 590, "category": "network", "node": EVIL,
         "cause": EVIL},
        {"job": EVIL, "event": "restart", "time": 900},
        {"job": EVIL, "event": "first_step", "time": 1000},
        {"job": EVIL, "event": "finished", "time": 2000, "status": "succeeded"},
        {"event": "progress", "time": 1500},  # no job: an issue row on the page
    ]
    ev, issues = normalize_events(rows_to_frame(rows))
    return compute_ledger(ev), issues


def test_page_escapes_input_values_and_keeps_its_sections():
    led, issues = _ledger_with_hostile_names()
    rep = build_report(led, source=f"/data/{EVIL}.jsonl", by="node", issues=issues)
    page = render_html(rep, led)
    body = page.split("<body>", 1)[1]
    tables = body.split('<section><h2>Terms</h2>', 1)[1]
    assert EVIL not in tables and "&lt;script&gt;alert(" in tables  # the job id in the jobs table
    assert "<title>ETPR report: /data/&lt;script&gt;" in page
    for title in ("Loss waterfall", "Cluster Pareto of causes", "Terms", "Cross-check with other systems",
                  "Input warnings and assumptions", "missing_job"):
        assert title in page
    assert page.count("<script") >= 4  # the plots' own scripts, inline (plotly.js once)


def test_template_is_package_data():
    tmpl = REPO / "diag_service" / "etpr" / "templates" / REPORT_TEMPLATE
    assert tmpl.is_file()
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["diag_service"]
    rel = tmpl.relative_to(REPO / "diag_service").as_posix()
    assert any(fnmatch.fnmatch(rel, p) for p in patterns), (rel, patterns)
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.startswith("jinja2") for d in deps)  # the page is core functionality


def test_jobs_table_lists_at_most_fifty_jobs():
    rows = []
    for j in range(60):
        rows += [{"job": f"j{j:02d}", "event": "allocated", "time": 0, "gpus": 1},
                 {"job": f"j{j:02d}", "event": "first_step", "time": 10},
                 {"job": f"j{j:02d}", "event": "finished", "time": 100 + j, "status": "succeeded"}]
    ev, issues = normalize_events(rows_to_frame(rows))
    led = compute_ledger(ev)
    page = render_html(build_report(led, source="s", issues=issues), led)
    jobs = page.split("<th>ETTR (wall)</th></tr>", 1)[1].split("</table>", 1)[0]
    assert jobs.count("<tr>") == 50
