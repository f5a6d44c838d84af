"""``diag label``: label every job of an archive into a Parquet dataset, resumably, with a summary.

Register with ``app.command("label")(label)``; ``python -m diag_service.label`` runs it on its own.

Exit codes: 0 done (rows for bundles that could not be labelled carry an error reason); 1 the
engine failed or was interrupted (progress is kept: run the same command again); 2 bad input (no
archive, output folder busy / not ours / started for another archive or options, --llm without a
model); 3 invalid signature catalog.
"""

from __future__ import annotations

import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from diag_service.clitools import DiagCommand, DiagGroup
from diag_service.label.models import LabelOptions
from diag_service.label.run import LabelRequest, NoProgress, label_archive
from diag_service.label.summary import render_markdown

err = Console(stderr=True, soft_wrap=True)


class EngineName(StrEnum):
    local = "local"
    ray = "ray"


class KBChoice(StrEnum):
    auto = "auto"
    on = "on"
    off = "off"


#: What each stage counts, for the rate column.
UNITS = {"label": "jobs", "summaries": "clusters"}


def rate_text(per_s: float | None, unit: str) -> str:
    """``12.3 jobs/s``, or ``25 s/cluster`` when slower than one per second."""
    if not per_s:
        return f"- {unit}/s"
    if per_s >= 1:
        return f"{per_s:,.1f} {unit}/s"
    return f"{1 / per_s:,.0f} s/{unit.rstrip('s')}"


class _Rate(ProgressColumn):
    """Items per second over the last 30 s (rich's own estimate, which ignores items done before a resume)."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        return Text(rate_text(task.speed, self.unit), style="progress.data.speed")


class RichProgress:
    """A progress bar with rate and ETA on a terminal; a plain line every ``interval_s`` otherwise (logs, CI)."""

    def __init__(self, console: Console, interval_s: float = 10.0) -> None:
        self.console = console
        self.live = console.is_terminal
        self.interval_s = interval_s
        self._progress: Progress | None = None
        self._task = None
        self._stage, self._total, self._done, self._t0, self._last, self._start_done = "", 0, 0, 0.0, 0.0, 0

    def start(self, stage: str, total: int, done: int) -> None:
        self._stage, self._total, self._done, self._start_done = stage, total, done, done
        self._t0 = self._last = time.monotonic()
        if self.live:
            self._progress = Progress(
                TextColumn(f"[bold]{stage}"), BarColumn(), MofNCompleteColumn(), _Rate(UNITS.get(stage, "items")),
                TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                console=self.console, transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(stage, total=total, completed=done)
        else:
            self.console.print(f"{stage}: {done}/{total} already done, {total - done} to go")

    def advance(self, n: int) -> None:
        self._done += n
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=n)
        elif time.monotonic() - self._last >= self.interval_s:
            self._last = time.monotonic()
            self.console.print(self._line())

    def _line(self) -> str:
        elapsed = time.monotonic() - self._t0
        rate = (self._done - self._start_done) / elapsed if elapsed > 0 else 0.0
        eta = (self._total - self._done) / rate if rate > 0 else float("nan")
        eta_s = f"{eta // 60:.0f}m{eta % 60:02.0f}s" if eta == eta else "?"
        unit = UNITS.get(self._stage, "items")
        return f"{self._stage}: {self._done}/{self._total} ({rate_text(rate, unit)}, elapsed {elapsed:.0f}s, ETA {eta_s})"

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        else:
            self.console.print(self._line())


ArchiveArg = Annotated[
    Path, typer.Argument(help="Folder of job bundles (one folder or archive per job) or a manifest (.jsonl/.csv/.parquet).")
]
OutOpt = Annotated[
    Path, typer.Option("--out", "-o", help="Output folder: Parquet parts, _summary.json/.md, _ledger.sqlite.")
]
EngineOpt = Annotated[EngineName, typer.Option(help="local: process pool on this machine; ray: Ray Data actor pool.")]
RayAddressOpt = Annotated[
    str | None, typer.Option("--ray-address", help="Ray cluster to join ('auto', 'ray://host:10001'); default: a local Ray.")
]
WorkersOpt = Annotated[int | None, typer.Option(min=1, help="Worker processes / Ray actors (default: one per CPU).")]
LLMOpt = Annotated[bool, typer.Option("--llm", help="One model summary per cluster of matching root-cause templates.")]
KBOpt = Annotated[KBChoice, typer.Option(help="Similar past incidents from the knowledge base: auto (if installed), on, off.")]
BatchOpt = Annotated[int, typer.Option(min=1, help="Jobs per task.")]
PartRowsOpt = Annotated[int, typer.Option(min=1, help="Rows per output part (a part is also written every minute).")]
TimeoutOpt = Annotated[float, typer.Option(min=0, help="Seconds before a bundle is given up as an error row (0: none).")]
ExcludeOpt = Annotated[list[str] | None, typer.Option(help="Skip files matching this glob inside every bundle (repeatable).")]
PlatformOpt = Annotated[str, typer.Option(help="kubernetes | volcano | slurm | ray | torchrun: for the recovery level's plan.")]
FreshOpt = Annotated[bool, typer.Option("--fresh", help="Discard this output folder's previous rows and start over.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the summary as JSON instead of markdown.")]
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar (rate, ETA) on stderr.")]


def label(
    archive: ArchiveArg,
    out: OutOpt,
    engine: EngineOpt = EngineName.local,
    ray_address: RayAddressOpt = None,
    workers: WorkersOpt = None,
    llm: LLMOpt = False,
    kb: KBOpt = KBChoice.auto,
    batch_size: BatchOpt = 8,
    part_rows: PartRowsOpt = 1000,
    job_timeout: TimeoutOpt = 600.0,
    exclude: ExcludeOpt = None,
    platform: PlatformOpt = "kubernetes",
    fresh: FreshOpt = False,
    json_out: JsonOpt = False,
    progress: ProgressOpt = True,
) -> None:
    """Label every failed job of an archive: one row per job, resumable, with a summary of what is costing you."""
    req = LabelRequest(
        archive=str(archive), out=str(out), engine=engine.value, ray_address=ray_address, workers=workers,
        batch_size=batch_size, llm=llm, part_rows=part_rows, fresh=fresh,
        options=LabelOptions(kb=kb.value, exclude=exclude or [], platform=platform, job_timeout_s=job_timeout),
    )
    sink = RichProgress(err) if progress else NoProgress()
    try:
        result = label_archive(req, progress=sink)
    except KeyboardInterrupt as exc:
        err.print(f"[yellow]interrupted[/yellow]: progress is kept in {out}; run the same command again to continue")
        raise typer.Exit(1) from exc
    for note in result.notes:
        err.print(f"note: {note}", soft_wrap=True)
    if json_out:
        sys.stdout.write(result.summary.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(render_markdown(result.summary))
    err.print(
        f"{result.summary.jobs} jobs ({result.labelled_now} labelled now, {result.done_before} before) in {result.seconds:.1f} s"
        f" -> {result.out}  (summary: {result.summary_md})",
        soft_wrap=True,
    )


app = typer.Typer(cls=DiagGroup, add_completion=False)
app.command(help=label.__doc__, cls=DiagCommand)(label)
