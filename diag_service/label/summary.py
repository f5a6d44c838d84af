"""What the labelled archive says: failures by mode and category, top root-cause templates, worst nodes.

:func:`summarise` turns rows into a :class:`LabelSummary` (written as ``_summary.json``);
:func:`render_markdown` renders it (``_summary.md``, and what the CLI prints). Clusters are jobs
with the same ``root_template_id``; with ``--llm`` each cluster has one summary, written by the
model from the cluster's representative (:func:`summarise_clusters`).
"""

from __future__ import annotations

import importlib
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from diag_service.domain import Category, Diagnosis, Narrative
from diag_service.label.models import ClusterSummary, LabelRow

SUMMARY_SCHEMA = "label-summary/1"
#: Categories counted as node faults in :attr:`LabelSummary.hardware_nodes`.
HARDWARE_CATEGORIES = (Category.GPU_HARDWARE.value, Category.NETWORK.value)

SummarizeFn = Callable[[Diagnosis], Narrative]


class TemplateCluster(BaseModel):
    """Jobs whose root-cause templates match."""

    template_id: str
    template: str = Field(description="The root-cause template of the cluster's representative (smallest job id).")
    jobs: int
    share: float = Field(description="Fraction of the labelled jobs.")
    categories: dict[str, int]
    failure_modes: dict[str, int]
    example_job_ids: list[str]
    summary: str | None = None
    summary_source: str | None = None


class NodeFaults(BaseModel):
    node: str
    faults: int
    categories: dict[str, int]
    example_job_ids: list[str]


class LabelSummary(BaseModel):
    """The summary of one output folder (every row in it, not only this run's)."""

    schema_id: str = SUMMARY_SCHEMA
    archive: str
    out: str
    jobs: int
    labelled: int
    errors: int
    by_mode: dict[str, int]
    by_category: dict[str, int]
    by_mode_and_category: dict[str, dict[str, int]]
    by_responsible: dict[str, int]
    by_recovery_level: dict[str, int]
    errors_by_reason: dict[str, int]
    clusters: int
    top_templates: list[TemplateCluster]
    hardware_nodes: list[NodeFaults] = Field(description="Nodes named faulty in gpu_hardware or network failures, most first.")
    versions: dict[str, dict[str, int]] = Field(description="Version strings seen per component, with row counts.")
    run: dict[str, Any] = Field(default_factory=dict, description="This run: engine, workers, timings, notes.")


def _sorted(c: Counter[str]) -> dict[str, int]:
    return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def error_reason(error: str) -> str:
    """The class of an error message: its text before the first ':' (``empty bundle: no readable ...`` -> ``empty bundle``)."""
    head = error.split(":", 1)[0].strip()
    return head[:80] or "error"


def summarise(
    rows: list[LabelRow], archive: str, out: str, clusters: dict[str, ClusterSummary] | None = None,
    top: int = 20, run: dict[str, Any] | None = None,
) -> LabelSummary:
    """The summary of ``rows`` (all rows of the output). ``clusters``: the model's cluster summaries, if any."""
    ok = [r for r in rows if r.status == "ok"]
    errs = [r for r in rows if r.status == "error"]
    by_mc: dict[str, Counter[str]] = defaultdict(Counter)
    for r in ok:
        by_mc[r.failure_mode or "?"][r.category or "?"] += 1
    groups: dict[str, list[LabelRow]] = defaultdict(list)
    for r in ok:
        if r.root_template_id:
            groups[r.root_template_id].append(r)
    clusters = clusters or {}
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top]
    top_templates = []
    for tid, members in ranked:
        members = sorted(members, key=lambda r: r.job_id)
        s = clusters.get(tid)
        top_templates.append(TemplateCluster(
            template_id=tid, template=members[0].root_template or "", jobs=len(members),
            share=round(len(members) / max(1, len(ok)), 4),
            categories=_sorted(Counter(r.category or "?" for r in members)),
            failure_modes=_sorted(Counter(r.failure_mode or "?" for r in members)),
            example_job_ids=[r.job_id for r in members[:5]],
            summary=s.text if s else None, summary_source=s.source if s else None,
        ))
    node_count: Counter[str] = Counter()
    node_cats: dict[str, Counter[str]] = defaultdict(Counter)
    node_jobs: dict[str, list[str]] = defaultdict(list)
    for r in sorted(ok, key=lambda r: r.job_id):
        if r.category in HARDWARE_CATEGORIES:
            for n in r.faulty_nodes:
                node_count[n] += 1
                node_cats[n][r.category] += 1
                node_jobs[n].append(r.job_id)
    hardware = [
        NodeFaults(node=n, faults=c, categories=_sorted(node_cats[n]), example_job_ids=node_jobs[n][:5])
        for n, c in sorted(node_count.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    ]
    versions: dict[str, Counter[str]] = defaultdict(Counter)
    for r in ok:
        for comp, v in (("diag_service", r.diag_version), ("signatures", r.signatures_version),
                        ("recovery_policy", r.recovery_policy_version), ("kb", r.kb_version), ("model", r.model_version)):
            if v:
                versions[comp][v] += 1
    return LabelSummary(
        archive=archive, out=out, jobs=len(rows), labelled=len(ok), errors=len(errs),
        by_mode=_sorted(Counter(r.failure_mode or "?" for r in ok)),
        by_category=_sorted(Counter(r.category or "?" for r in ok)),
        by_mode_and_category={m: _sorted(c) for m, c in sorted(by_mc.items())},
        by_responsible=_sorted(Counter(r.responsible or "?" for r in ok)),
        by_recovery_level=_sorted(Counter(r.recovery_level or "none" for r in ok)),
        errors_by_reason=_sorted(Counter(error_reason(r.error or "") for r in errs)),
        clusters=len(groups), top_templates=top_templates, hardware_nodes=hardware,
        versions={k: _sorted(v) for k, v in sorted(versions.items())}, run=run or {},
    )


def _cell(text: str, width: int = 120) -> str:
    t = " ".join(text.split()).replace("|", "\\|")
    return t if len(t) <= width else t[: width - 1] + "…"


def render_markdown(s: LabelSummary) -> str:
    """The summary as a markdown report."""
    pct = (lambda n: f"{100 * n / s.labelled:.1f} %") if s.labelled else (lambda n: "-")
    out = [
        f"# Labels: {s.archive}",
        "",
        f"{s.jobs} jobs: {s.labelled} labelled, {s.errors} could not be labelled. {s.clusters} distinct root-cause templates.",
        "",
        "## Failures by mode and category",
        "",
    ]
    cats = list(s.by_category)
    if cats:
        out += ["| mode | " + " | ".join(cats) + " | total |", "|---|" + "---:|" * (len(cats) + 1)]
        for m, row in s.by_mode_and_category.items():
            out.append(f"| {m} | " + " | ".join(str(row.get(c, 0)) for c in cats) + f" | {sum(row.values())} |")
        out.append("| **total** | " + " | ".join(str(s.by_category[c]) for c in cats) + f" | {s.labelled} |")
    else:
        out.append("No job could be labelled.")
    out += ["", "| responsible | jobs | share |", "|---|---:|---:|"]
    out += [f"| {k} | {v} | {pct(v)} |" for k, v in s.by_responsible.items()]
    out += ["", "| recovery level | jobs | share |", "|---|---:|---:|"]
    out += [f"| {k} | {v} | {pct(v)} |" for k, v in s.by_recovery_level.items()]
    out += ["", f"## Top root-cause templates (of {s.clusters})", ""]
    if s.top_templates:
        has_summary = any(t.summary for t in s.top_templates)
        head = "| # | jobs | share | category | template | examples |" + (" summary |" if has_summary else "")
        out += [head, "|---:|---:|---:|---|---|---|" + ("---|" if has_summary else "")]
        for i, t in enumerate(s.top_templates, 1):
            cat = ", ".join(f"{k} {v}" for k, v in t.categories.items())
            line = (f"| {i} | {t.jobs} | {100 * t.share:.1f} % | {cat} | `{_cell(t.template, 100).replace('`', '')}` | "
                    f"{', '.join(t.example_job_ids[:3])} |")
            if has_summary:
                line += f" {_cell(t.summary or '', 200)} |"
            out.append(line)
    else:
        out.append("None.")
    out += ["", "## Nodes with most hardware faults (gpu_hardware, network)", ""]
    if s.hardware_nodes:
        out += ["| node | faults | categories | jobs |", "|---|---:|---|---|"]
        for n in s.hardware_nodes:
            cats_n = ", ".join(f"{k} {v}" for k, v in n.categories.items())
            out.append(f"| {n.node} | {n.faults} | {cats_n} | {', '.join(n.example_job_ids[:3])} |")
    else:
        out.append("No node was named faulty.")
    if s.errors:
        out += ["", "## Could not be labelled", "", "| reason | jobs |", "|---|---:|"]
        out += [f"| {_cell(k, 100)} | {v} |" for k, v in s.errors_by_reason.items()]
    out += ["", "## Versions", ""]
    for comp, vs in s.versions.items():
        out.append(f"- {comp}: " + ", ".join(f"`{v}` ({n} rows)" for v, n in vs.items()))
    if s.run:
        r = s.run
        out += ["", "## This run", ""]
        out += [f"- {k}: {v}" for k, v in r.items() if not isinstance(v, (list, dict))]
        for note in r.get("notes", []):
            out.append(f"- note: {note}")
    return "\n".join(out) + "\n"


def load_summarizer() -> tuple[SummarizeFn, str] | None:
    """``diag_service.llm.summarize`` and its module's name, when that module is installed (else ``None``)."""
    try:
        mod = importlib.import_module("diag_service.llm")
    except ImportError:
        return None
    fn = getattr(mod, "summarize", None)
    if not callable(fn):
        return None
    return fn, str(getattr(mod, "MODEL_NAME", None) or getattr(mod, "__version__", None) or "diag_service.llm")


def cluster_summary(template_id: str, job_id: str, d: Diagnosis, summarize: SummarizeFn, default_model: str) -> ClusterSummary:
    """The model's summary of one cluster, from its representative's diagnosis.

    ``model`` is the narrative's model, else ``fallback`` for the deterministic fallback, else ``default_model``.
    """
    n = summarize(d)
    model = n.model or ("fallback" if n.source == "fallback" else default_model)
    return ClusterSummary(template_id=template_id, job_id=job_id, text=n.text, source=n.source, model=model)
