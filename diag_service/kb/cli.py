"""``diag kb`` commands: build the store from YAML, search it, add operator feedback, show its state.

Exit codes: 0 success; 2 bad input (unreadable diagnosis JSON, empty text, invalid option); 3 invalid
incident YAML; 4 model mismatch; 5 store busy (writer lock) or unusable.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from diag_service.clitools import DiagGroup
from diag_service.domain import Category, Diagnosis, FailureMode, RecoveryLevel
from diag_service.errors import DiagError, InputError
from diag_service.kb.embed import Embedder, HashingEmbedder, MiniLMEmbedder, default_embedder
from diag_service.kb.kb import KBConfig, KnowledgeBase, SearchResult, default_home
from diag_service.kb.records import KBError

app = typer.Typer(cls=DiagGroup, help="Incident knowledge base: similar past incidents, their root cause and fix.",
                  no_args_is_help=True)
err = Console(stderr=True)

HomeOpt = Annotated[
    Path | None,
    typer.Option("--home", envvar="DIAG_HOME", help="Data folder (store in HOME/kb). Default: ~/.local/share/diag."),
]
EmbedderOpt = Annotated[
    str,
    typer.Option("--embedder", help="'hybrid' (all-MiniLM-L6-v2 0.7 + lexical hashing 0.3, default), 'minilm' (MiniLM alone) "
                 "or 'hashing' (lexical alone, for tests)."),
]


def _embedder(name: str) -> Embedder:
    if name == "minilm":
        return MiniLMEmbedder()
    if name == "hashing":
        return HashingEmbedder()
    if name == "hybrid":
        return default_embedder()
    raise typer.BadParameter(f"unknown embedder {name!r} (minilm | hybrid | hashing)", param_hint="--embedder")


def _open(home: Path | None, embedder: str, check_model: bool = True) -> KnowledgeBase:
    return KnowledgeBase(KBConfig(home=home or default_home()), _embedder(embedder), check_model=check_model)


def _fail(exc: Exception) -> DiagError:
    """What to raise for ``exc``: a :class:`DiagError` as it is (the CLI's handler gives it its exit code),
    a ``ValueError`` from an argument check as bad input."""
    return exc if isinstance(exc, DiagError) else InputError(str(exc))


@app.command("build")
def build_cmd(
    source: Annotated[Path | None, typer.Option(help="Incident folder (default: knowledge_base/incidents).")] = None,
    home: HomeOpt = None,
    embedder: EmbedderOpt = "hybrid",
    reembed: Annotated[bool, typer.Option(help="Re-embed every stored record (to switch models).")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the build report as JSON.")] = False,
) -> None:
    """Validate the incident YAML and load it into the local store; rebuild the index."""
    kb = _open(home, embedder, check_model=not reembed)
    try:
        rep = kb.build(source_dir=source, reembed=reembed)
    except (KBError, ValueError) as exc:
        raise _fail(exc) from exc
    if json_out:
        sys.stdout.write(rep.model_dump_json(indent=2) + "\n")
        return
    for w in rep.warnings:
        err.print(f"[yellow]warning:[/yellow] {w}")
    sys.stdout.write(
        f"{rep.total} records in {kb.dir} ({rep.added} added, {rep.updated} updated, {rep.unchanged} unchanged"
        + (f", {len(rep.kept_not_in_source)} kept though no longer in the YAML" if rep.kept_not_in_source else "")
        + f"); index {rep.index_kind}; model {rep.model}; novelty threshold {rep.novelty_threshold:.3f}"
        + (f" (calibrated, AUROC {rep.calibration.auroc:.3f})" if rep.calibration else " (default)")
        + f"; {rep.seconds:.1f} s\n"
    )


def _print_result(res: SearchResult, json_out: bool) -> None:
    if json_out:
        sys.stdout.write(res.model_dump_json(indent=2) + "\n")
        return
    out = Console(highlight=False)
    out.print(f"[dim]query:[/dim] {escape(res.query_text) or '(no event found)'}")
    if res.is_novel:
        best = f"best score {res.hits[0].score:.3f}" if res.hits else "no records"
        out.print(f"[bold yellow]Looks new[/bold yellow]: {best} < novelty threshold {res.threshold:.3f}.")
    for h in res.hits:
        r = h.record
        seen = f", seen {h.count}x" if h.count > 1 else ""
        out.print(f"\n[bold]{h.score:.3f}[/bold]  {r.id}  [cyan]{r.category.value}[/cyan]  {r.recovery.level.value}{seen}")
        out.print(f"  [bold]{escape(r.title)}[/bold]")
        out.print(f"  cause: {escape(r.root_cause)}")
        out.print(f"  [green]action ({r.recovery.level.value}): {escape(r.recovery.action)}[/green]")
        if r.references:
            out.print(f"  [dim]{r.references[0]}[/dim]")


@app.command("search")
def search_cmd(
    text: Annotated[str | None, typer.Argument(help="Log line(s) as printed by the framework; '-' reads stdin.")] = None,
    k: Annotated[int, typer.Option("-k", help="Number of incidents (1-100).")] = 5,
    from_diagnosis: Annotated[Path | None, typer.Option(help="Search with a diagnosis JSON (diag diagnose --json).")] = None,
    home: HomeOpt = None,
    embedder: EmbedderOpt = "hybrid",
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Find the stored incidents most similar to log text or to a diagnosis."""
    if (text is None) == (from_diagnosis is None):
        raise InputError("give either TEXT or --from-diagnosis")
    diag = _read_diagnosis(from_diagnosis) if from_diagnosis is not None else None
    if text == "-":
        text = sys.stdin.read()
    kb = _open(home, embedder)
    try:
        res = kb.search_diagnosis(diag, k) if diag is not None else kb.search(text or "", k)
    except (KBError, ValueError) as exc:
        raise _fail(exc) from exc
    _print_result(res, json_out)


def _read_diagnosis(path: Path) -> Diagnosis:
    try:
        return Diagnosis.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise InputError(f"{path} is not a diagnosis JSON (diag diagnose --json): {where}: {first['msg']}") from exc


@app.command("add")
def add_cmd(
    from_diagnosis: Annotated[Path, typer.Option(help="Diagnosis JSON written by `diag diagnose --json` or `--out`.")],
    confirm: Annotated[bool, typer.Option("--confirm", help="Write it (without: show what would be stored).")] = False,
    category: Annotated[Category | None, typer.Option(help="The right category (default: the diagnosis's).")] = None,
    root_cause: Annotated[str | None, typer.Option(help="The root cause in words (default: the diagnosis summary).")] = None,
    action: Annotated[str | None, typer.Option(help="What fixed it (default: the diagnosis's recovery action).")] = None,
    level: Annotated[RecoveryLevel | None, typer.Option(help="Recovery level L0-L4 of that action (default L2).")] = None,
    title: Annotated[str | None, typer.Option(help="Short title (default: from the root signature).")] = None,
    failure_mode: Annotated[FailureMode | None, typer.Option(help="Correct the failure mode.")] = None,
    home: HomeOpt = None,
    embedder: EmbedderOpt = "hybrid",
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Confirm or correct a diagnosis; it becomes a record (near-duplicates are merged and counted)."""
    diag = _read_diagnosis(from_diagnosis)
    kb = _open(home, embedder)
    if not confirm:
        try:
            res = kb.search_diagnosis(diag, 3)
        except (KBError, ValueError) as exc:
            raise _fail(exc) from exc
        cat = category or diag.category
        near = res.hits[0] if res.hits else None
        would = (
            f"merge into {near.record.id} (score {near.score:.3f})"
            if near and near.score >= kb.config.merge_threshold and near.record.category == cat else "create a new record"
        )
        verdict = "confirmed" if cat == diag.category else "corrected"
        sys.stdout.write(f"dry run: category {cat.value} ({verdict}); would {would}. Add --confirm to write.\n")
        return
    try:
        res = kb.add_feedback(diag, category=category, root_cause=root_cause, action=action, level=level, title=title,
                              failure_mode=failure_mode)
    except (KBError, ValueError) as exc:
        raise _fail(exc) from exc
    if json_out:
        sys.stdout.write(res.model_dump_json(indent=2) + "\n")
    elif res.merged:
        sys.stdout.write(f"{res.verdict}: merged into {res.record_id} (now seen {res.count}x)\n")
    else:
        sys.stdout.write(f"{res.verdict}: new record {res.record_id}\n")


@app.command("info")
def info_cmd(home: HomeOpt = None, embedder: EmbedderOpt = "hybrid") -> None:
    """Show where the store is, its model, index and record counts."""
    kb = _open(home, embedder, check_model=False)
    sys.stdout.write(json.dumps(kb.info().model_dump(), indent=2) + "\n")
