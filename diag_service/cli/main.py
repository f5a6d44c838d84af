"""``diag`` commands. Every command calls the shared pipeline; none holds diagnosis logic."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from diag_service.clitools import LazyDiagGroup
from diag_service.errors import InputError

err = Console(stderr=True)


class _DiagApp(LazyDiagGroup):
    # Sub-commands imported only when run (issue 21: a cold `diag --help` or `diag diagnose` does not import
    # the HTTP service, the lab's torch, Ray, polars or the knowledge base's models).
    lazy = {
        "hang": ("diag_service.hang.cli", "hang_cmd", "Fail-hang: who is stuck where, from stack and Flight Recorder dumps."),
        "slow": ("diag_service.slow.cli", "app", "Fail-slow: job slowdown episodes and straggler ranks/nodes from timing."),
        "kb": ("diag_service.kb.cli", "app", "Incident knowledge base: build, search, add."),
        "etpr": ("diag_service.etpr.cli", "app", "ETPR: effective training productivity and its losses by cause."),
        "serve": ("diag_service.service.cli", "serve", "HTTP diagnosis service (FastAPI + uvicorn)."),
        "label": ("diag_service.label.cli", "label",
                  "Batch-label an archive of failed jobs (resumable; local or Ray engine)."),
        "lab": ("diag_service.lab.cli", "app", "Fault-injection lab: real torch.distributed failures."),
        "watch": ("diag_service.live.cli", "watch", "Node agent: watch a running job, report failures and hangs live."),
        "mcp": ("diag_service.mcp_server.cli", "mcp_cmd", "MCP server (stdio) for agent clients, over a running diag serve."),
    }


app = typer.Typer(help="Diagnose failed, hung and slow large-model training jobs.", no_args_is_help=True, cls=_DiagApp)


@app.command("diagnose")
def diagnose_cmd(
    path: Annotated[Path, typer.Argument(
        help="Log bundle: directory, .tar/.tar.gz/.zip, or one log file; - reads standard input "
             "(kubectl logs POD | diag diagnose -).")],
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of the report.")] = False,
    job_id: Annotated[str | None, typer.Option(help="Job id to put in the result.")] = None,
    out: Annotated[Path | None, typer.Option(help="Also write the JSON result to this file.")] = None,
    events: Annotated[int, typer.Option(min=0, help="Event templates to show in the report (0: none).")] = 10,
    history: Annotated[Path | None, typer.Option(help="Recovery history (SQLite) for escalation and lemon nodes.")] = None,
    platform: Annotated[str | None, typer.Option(
        help="kubernetes | volcano | slurm | ray | torchrun: dry-run commands for the plan (default: the scheduler the logs "
             "show, else torchrun: no scheduler, the steps as comments).")] = None,
    no_recovery: Annotated[bool, typer.Option("--no-recovery", help="Skip the recovery recommendation.")] = False,
    exclude: Annotated[list[str] | None, typer.Option(help="Skip files matching this glob (repeatable).")] = None,
    kb: Annotated[bool, typer.Option("--kb/--no-kb", help="List similar past incidents (knowledge base).")] = True,
    llm: Annotated[bool, typer.Option("--llm/--no-llm", help="End with a local model's cited summary (models/llm.yaml).")] = True,
) -> None:
    """Diagnose a failed job from the logs of all its ranks."""
    from diag_service.pipeline import DiagnoseRequest, diagnose
    from diag_service.recovery import load_policy
    from diag_service.signatures import site_catalog

    # The stages are built here, from the options, and handed to the pipeline (the optional ones are
    # imported only when asked for: a cold `diag diagnose --no-kb --no-llm` loads no model package).
    retriever = summarizer = None
    if kb:
        from diag_service.kb import DefaultRetriever

        retriever = DefaultRetriever()
    if llm:
        from diag_service.llm import LocalSummarizer

        summarizer = LocalSummarizer()
    d = diagnose(
        DiagnoseRequest(
            path="/dev/stdin" if str(path) == "-" else str(path), job_id=job_id, recovery=not no_recovery,
            history_path=str(history) if history else None, platform=platform, exclude=exclude or [],
            catalog=site_catalog(), policy=None if no_recovery else load_policy(),
            retriever=retriever, summarizer=summarizer,
        )
    )
    payload = d.model_dump_json(indent=2)
    if out is not None:
        out.write_text(payload + "\n", encoding="utf-8")
    if json_out:
        sys.stdout.write(payload + "\n")
    else:
        from diag_service.cli.report import render

        render(d, Console(), max_events=events)


@app.command("schema")
def schema_cmd(
    out: Annotated[Path | None, typer.Option(help="Write the JSON Schema here instead of stdout.")] = None,
) -> None:
    """Print the JSON Schema of the diagnosis output."""
    from diag_service.domain import Diagnosis

    text = json.dumps(Diagnosis.model_json_schema(), indent=2) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")


@app.command("signatures")
def signatures_cmd(
    directory: Annotated[Path | None, typer.Option(
        help="A folder that is the whole catalogue (default: the built-ins, then $DIAG_SIGNATURES_PATH, then packs).",
    )] = None,
) -> None:
    """Validate the signature catalog and list it."""
    from diag_service.signatures import load_signatures, signature_search_path

    if directory is None:
        for d in signature_search_path():
            err.print(f"reading {d}")
    sigs = load_signatures(directory)
    for c in sigs.signatures:
        s = c.spec
        sys.stdout.write(f"{s.id:32} {s.category.value:15} {s.role.value:8} p{s.priority:<3} {s.name}\n")
    sys.stdout.write(f"{len(sigs)} signatures, catalog version {sigs.version}\n")


@app.command("recover")
def recover_cmd(
    diagnosis: Annotated[Path, typer.Argument(help="A diagnosis JSON written by `diag diagnose --json` ('-' for stdin).")],
    history: Annotated[Path | None, typer.Option(help="Recovery history (SQLite); records this recommendation.")] = None,
    platform: Annotated[str | None, typer.Option(
        help="kubernetes | volcano | slurm | ray | torchrun (default: the platform of the diagnosis' own plan, else "
             "torchrun).")] = None,
    policy: Annotated[Path | None, typer.Option(help="Policy file (default: the package's own).")] = None,
    gpus: Annotated[int | None, typer.Option(help="GPUs of the job, for GPU-second estimates.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    execute: Annotated[bool, typer.Option("--execute", help="Run the plan (needs DIAG_EXECUTOR=shell).")] = False,
) -> None:
    """Recommend the cheapest recovery likely to work for a diagnosis (dry-run by default)."""
    from diag_service.cli.report import render_recovery
    from diag_service.domain import Diagnosis
    from diag_service.recovery import ExecutionRefused, History, ShellExecutor, load_policy, recommend

    try:
        text = sys.stdin.read() if str(diagnosis) == "-" else diagnosis.read_text(encoding="utf-8")
        d = Diagnosis.model_validate_json(text)
    except OSError as exc:
        raise InputError(f"cannot read {diagnosis}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        first = str(exc).splitlines()[0][:200]
        raise InputError(f"{diagnosis} is not a diagnosis written by `diag diagnose --json` ({first})") from exc
    pol = load_policy(policy)
    hist = History(history) if history else None
    chosen = platform or (d.recovery.platform if d.recovery is not None else None) or "torchrun"
    plan = recommend(d, pol, hist, platform=chosen, gpus=gpus)
    ran: list[str] = []
    if execute:
        try:
            ran = ShellExecutor().run(plan)
        except ExecutionRefused as exc:
            if not json_out:  # the plan as it stands, titled as not executed; the error says why (exit 4)
                render_recovery(plan, Console(), not_executed=str(exc), checkpoint=d.last_checkpoint)
            raise
        plan.executed = True
        if hist is not None:
            hist.record_outcome(plan.idempotency_key, "executed", "; ".join(ran))
    if json_out:
        sys.stdout.write(plan.model_dump_json(indent=2) + "\n")
        return
    render_recovery(plan, Console(), checkpoint=d.last_checkpoint)
    for line in ran:  # what --execute ran; the dry-run commands are in the panel above
        sys.stdout.write(line + "\n")
