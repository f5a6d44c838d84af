"""``diag lab``: run fault-injection scenarios with real torch.distributed (gloo, CPU) jobs.

``diag lab list`` and ``--help`` work on a core install; ``run`` and ``suite`` need the ``[lab]`` extra
and say so (:class:`~diag_service.lab.LabUnavailable`) when it is missing.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from diag_service.clitools import DiagGroup
from diag_service.lab import require_lab
from diag_service.lab.scenarios import DEFAULT_SCENARIO_DIR, load_scenarios, resolve_scenario

app = typer.Typer(cls=DiagGroup,
    help="Fault-injection lab: real torchrun/gloo training runs with injected faults and ground truth.",
    no_args_is_help=True,
)

WATCH_HELP = ("Watch each run live: a local diag serve and one diag watch agent per node; writes live.json "
              "(detection and diagnosis times, the live diagnosis) into each run folder.")


@contextlib.contextmanager
def _live(watch: bool) -> Iterator[Any]:
    """A local service for the agents of ``--watch`` runs (None without it)."""
    if not watch:
        yield None
        return
    from diag_service.lab.live import LiveService

    data = Path(tempfile.mkdtemp(prefix="diag-lab-live-"))
    typer.echo(f"[lab] live service data in {data}")
    with LiveService(data) as live:
        yield live


ScenarioDir = Annotated[Path, typer.Option("--scenarios-dir", help="Folder of scenario YAML files.", file_okay=False)]


@app.command("run")
def run_cmd(
    scenario: Annotated[str, typer.Argument(help="Scenario name (see `diag lab list`) or a YAML path.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder (must be empty or absent).")],
    ranks: Annotated[int | None, typer.Option(help="Number of ranks (default: the scenario's).")] = None,
    faulty_rank: Annotated[int | None, typer.Option(help="Faulty global rank (default: the scenario's).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic data and jitter.")] = 0,
    nodes: Annotated[int | None, typer.Option(help="Simulated nodes, 1 or 2 (default: the scenario's).")] = None,
    onset_step: Annotated[int | None, typer.Option(help="Onset step (default: the scenario's).")] = None,
    faulthandler: Annotated[bool, typer.Option(help="Use faulthandler dumps instead of py-spy.")] = False,
    keep_work: Annotated[bool, typer.Option(help="Keep the .lab/ work folder (holds the truth).")] = False,
    watch: Annotated[bool, typer.Option("--watch", help=WATCH_HELP)] = False,
    scenarios_dir: ScenarioDir = DEFAULT_SCENARIO_DIR,
) -> None:
    """Run one scenario and capture its logs, stack dumps, timing, events and truth into OUT."""
    require_lab()  # before importing the runner (psutil): a missing extra is named, not an ImportError
    from diag_service.lab.runner import run_scenario

    sc = resolve_scenario(scenario, scenarios_dir)
    with _live(watch) as live:
        res = run_scenario(
            sc,
            out,
            ranks=ranks,
            faulty_rank=faulty_rank,
            seed=seed,
            nodes=nodes,
            onset_step=onset_step,
            force_dump_fallback=faulthandler,
            keep_work=keep_work,
            echo=typer.echo,
            live=live,
        )
    typer.echo(
        json.dumps(
            {
                "out": str(res.out_dir),
                "status": res.status,
                "duration_s": res.duration_s,
                "hang_detected": res.hang_detected,
                "snapshots": res.snapshots,
                "exit_codes": res.exit_codes,
            }
        )
    )


@app.command("suite")
def suite_cmd(
    out: Annotated[Path, typer.Option("--out", help="Output folder; one sub-folder per run.")],
    runs: Annotated[int, typer.Option("--runs", min=1, help="Number of runs.")] = 10,
    seed: Annotated[int, typer.Option(help="Seed of the plan (scenario order, faulty ranks, onsets).")] = 0,
    ranks: Annotated[int | None, typer.Option(help="Ranks for every run (default: each scenario's).")] = None,
    nodes: Annotated[int | None, typer.Option(help="Nodes for every run (default: each scenario's).")] = None,
    only: Annotated[list[str] | None, typer.Option("--only", help="Restrict to these scenario names (repeatable).")] = None,
    watch: Annotated[bool, typer.Option("--watch", help=WATCH_HELP)] = False,
    scenarios_dir: ScenarioDir = DEFAULT_SCENARIO_DIR,
) -> None:
    """Run N scenarios (cycling through all, random faulty ranks and onsets) into OUT."""
    require_lab()
    from diag_service.lab.runner import run_suite

    scenarios = load_scenarios(scenarios_dir)
    if only:
        missing = sorted(set(only) - set(scenarios))
        if missing:
            raise typer.BadParameter(f"unknown scenarios: {', '.join(missing)}")
        scenarios = {k: v for k, v in scenarios.items() if k in only}
    with _live(watch) as live:
        rows = run_suite(scenarios, out, runs, seed=seed, ranks=ranks, nodes=nodes, echo=typer.echo, live=live)
    ok = sum(1 for r in rows if r.get("status") != "error")
    typer.echo(f"{ok}/{len(rows)} runs captured into {out} (index: {out / 'suite.jsonl'})")


@app.command("list")
def list_cmd(scenarios_dir: ScenarioDir = DEFAULT_SCENARIO_DIR) -> None:
    """List the scenarios under a header: the fault scenarios by failure mode, then the control runs.

    A control run injects no fault: its failure mode names the detector it checks (nothing may be
    raised), so it is listed apart and without a category.
    """
    rows = []
    for name, sc in load_scenarios(scenarios_dir).items():
        control = sc.fault.kind == "none"
        rows.append((control, str(sc.failure_mode), name, "-" if control else str(sc.category), sc.fault.kind))
    typer.echo(f"  {'SCENARIO':32s} {'FAILURE MODE':13s} {'CATEGORY':15s} FAULT")
    for control in (False, True):
        group = sorted(r for r in rows if r[0] is control)
        if group:
            typer.echo("control runs (no fault injected; the failure mode's detector must raise nothing):"
                       if control else "fault scenarios:")
        for _, mode, name, category, kind in group:
            typer.echo(f"  {name:32s} {mode:13s} {category:15s} {kind}")


if __name__ == "__main__":
    app()
