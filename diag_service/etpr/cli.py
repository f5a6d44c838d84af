"""``diag etpr``: ETPR accounting per job and per cluster from lifecycle events.

Register in the main CLI with ``app.add_typer(etpr_app, name="etpr")``: the behaviour is the sub-app's
callback (options may follow the positional argument), so ``diag etpr EVENTS ...`` needs no sub-command
name. ``app.command("etpr")(etpr_command)`` works as well.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from diag_service.clitools import DiagGroup
from diag_service.errors import InputError
from diag_service.etpr.accounting import compute_ledger
from diag_service.etpr.loaders import FORMATS, load_events
from diag_service.etpr.report import BY_CHOICES, build_report, jobs_table, render_html, render_text

app = typer.Typer(cls=DiagGroup, help="ETPR: how much allocated GPU time became training progress, where the rest went.",
                  context_settings={"allow_interspersed_args": True})
err = Console(stderr=True)


def etpr_command(
    events: Annotated[Path, typer.Argument(help="Events: .jsonl/.jsonl.gz/.parquet/.csv, a lab run or suite folder, "
                                                "glm130b_incidents.csv, a Philly cluster_job_log, StepFun fault_trace.json.")],
    jobs: Annotated[Path | None, typer.Option("--jobs", help="Job table (job, gpus, expected_throughput).")] = None,
    by: Annotated[str, typer.Option("--by", help="Pareto dimension: category | failure_mode | node | week | cause.")
                  ] = "category",
    html_out: Annotated[Path | None, typer.Option("--html", help="Write the HTML report (with plots) here.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the JSON report instead of the text summary.")] = False,
    fmt: Annotated[str, typer.Option("--format", "--source", help=f"Input source: {' | '.join(FORMATS)}.")] = "auto",
    job_id: Annotated[str | None, typer.Option(
        "--job-id", help="Job id of events that carry none (an events file of one job; a lab run, instead of its "
                         "folder name).")] = None,
    jobs_out: Annotated[Path | None, typer.Option("--jobs-out", help="Write the per-job table (.parquet or .csv).")
                        ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Also write the JSON report to this file.")] = None,
    slow_tolerance: Annotated[float, typer.Option(help="Throughput ratios >= 1 - this count as nominal.")] = 0.05,
    no_truth: Annotated[bool, typer.Option("--no-truth", help="Lab runs: do not use truth.json for attribution.")
                        ] = False,
) -> None:
    """Account allocated GPU time into productive, pre-execution, unproductive and reduced-quality time."""
    if by not in BY_CHOICES:
        raise InputError(f"--by must be one of {', '.join(BY_CHOICES)}")
    if not 0.0 <= slow_tolerance < 1.0:
        raise InputError("--slow-tolerance must be in [0, 1)")
    t0 = time.perf_counter()
    ev, issues = load_events(events, source=fmt, jobs=jobs, use_truth=not no_truth, job_id=job_id)
    t1 = time.perf_counter()
    ledger = compute_ledger(ev, slow_tolerance=slow_tolerance, by_week=(by == "week"))
    t2 = time.perf_counter()
    rep = build_report(ledger, source=str(events), by=by, issues=issues,
                       timings={"load_s": t1 - t0, "account_s": t2 - t1})
    if html_out is not None:
        html_out.write_text(render_html(rep, ledger), encoding="utf-8")
    if jobs_out is not None:
        tbl = jobs_table(ledger)
        if jobs_out.suffix == ".parquet":
            tbl.write_parquet(jobs_out)
        else:
            tbl.write_csv(jobs_out)
    payload = rep.model_dump_json(indent=2)
    if out is not None:
        out.write_text(payload + "\n", encoding="utf-8")
    if json_out:
        sys.stdout.write(payload + "\n")
    else:
        sys.stdout.write(render_text(rep) + "\n")
        if html_out is not None:
            sys.stdout.write(f"HTML report: {html_out}\n")


app.callback(invoke_without_command=True)(etpr_command)


if __name__ == "__main__":
    app()
