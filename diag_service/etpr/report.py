"""Build the :class:`~diag_service.etpr.schema.EtprReport` from a ledger, and render it (text, HTML).

The HTML page is one self-contained file (plotly.js inlined once, no network): headline numbers, the
loss waterfall (allocated GPU time down to productive), the Pareto of causes, failure mode x phase, the
what-if levers, per-job timelines of the most lossy jobs, and the input issues; the page is the Jinja2 template
``templates/etpr_report.html`` (autoescaped), the plots are built here.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import polars as pl

from diag_service.etpr.accounting import ALLOC_BUCKET_NAMES, Ledger, bucket_totals_frame, job_totals_frame, safe_ratio
from diag_service.etpr.schema import (
    BUCKET_TERM,
    KILLED,
    NO_FAILURE,
    AttributionRow,
    Bucket,
    BucketTotals,
    EtprReport,
    Issue,
    JobAccount,
    ParetoRow,
    Phase,
    Term,
    WhatIf,
)

if TYPE_CHECKING:
    import jinja2

BY_CHOICES = ("category", "failure_mode", "node", "week", "cause")
MAX_JOB_ACCOUNTS = 200

#: Google ml-goodput-measurement badput buckets (``BadputType``) and the buckets of ours they hold.
BADPUT_MAP: dict[str, list[str]] = {
    "TPU_INITIALIZATION+TRAINING_PREP+PROGRAM_STARTUP": [Bucket.SCHEDULING.value, Bucket.INIT.value],
    "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME": [Bucket.CKPT_LOAD.value],
    "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME": [Bucket.CKPT_STALL.value],
    "WASTED_PROGRESS_FROM_DISRUPTION": [Bucket.LOST_WORK.value],
    "OTHER (disruption detection, hang, diagnosis, recovery)": [Bucket.DETECTION.value, Bucket.HANG.value,
                                                                 Bucket.DIAGNOSIS.value, Bucket.RECOVERY.value],
    "program goodput loss (reduced quality)": [Bucket.SLOW.value],
}

#: The what-if levers: name, description, (bucket, phase or None, factor) rules.
WHAT_IFS: list[tuple[str, str, list[tuple[str, str | None, float]]]] = [
    ("diagnosis_10x_faster", "diagnosis takes a tenth of the time", [(Bucket.DIAGNOSIS.value, None, 0.1)]),
    ("detection_10x_faster", "failures and hangs are detected 10x sooner",
     [(Bucket.DETECTION.value, None, 0.1), (Bucket.HANG.value, None, 0.1)]),
    ("recovery_10x_faster", "recovery/restart after detection takes a tenth of the time",
     [(Bucket.RECOVERY.value, None, 0.1)]),
    ("no_stragglers", "no fail-slow: every productive second at the expected rate", [(Bucket.SLOW.value, None, 0.0)]),
    ("checkpoint_2x_often", "checkpoints twice as often: half the lost work, twice the checkpoint stalls",
     [(Bucket.LOST_WORK.value, None, 0.5), (Bucket.CKPT_STALL.value, None, 2.0)]),
    ("startup_2x_faster", "scheduling, initialisation and checkpoint load take half the time",
     [(Bucket.SCHEDULING.value, None, 0.5), (Bucket.INIT.value, None, 0.5), (Bucket.CKPT_LOAD.value, None, 0.5)]),
    ("no_failures", "no failure, hang or kill: their detection, diagnosis, recovery, lost work and re-init vanish",
     [(Bucket.DETECTION.value, None, 0.0), (Bucket.HANG.value, None, 0.0), (Bucket.DIAGNOSIS.value, None, 0.0),
      (Bucket.RECOVERY.value, None, 0.0), (Bucket.LOST_WORK.value, None, 0.0),
      (Bucket.SCHEDULING.value, Phase.REINIT.value, 0.0), (Bucket.INIT.value, Phase.REINIT.value, 0.0),
      (Bucket.CKPT_LOAD.value, Phase.REINIT.value, 0.0)]),
]

BUCKET_COLORS = {
    "productive": "#2ca02c", "slow": "#bcbd22", "scheduling": "#aec7e8", "init": "#1f77b4", "ckpt_load": "#17becf",
    "detection": "#ff9896", "hang": "#d62728", "diagnosis": "#e377c2", "recovery": "#9467bd", "lost_work": "#8c564b",
    "ckpt_stall": "#7f7f7f", "queue": "#dddddd", "requeue": "#c7c7c7",
}


def _totals(row: dict[str, float]) -> BucketTotals:
    alloc = float(row.get("allocated") or 0.0)
    buckets = {b: float(row.get(b) or 0.0) for b in ALLOC_BUCKET_NAMES}
    terms: dict[str, float] = {t.value: 0.0 for t in Term if t is not Term.QUEUE}
    for b, v in buckets.items():
        terms[BUCKET_TERM[Bucket(b)].value] += v
    q, rq = float(row.get("queue") or 0.0), float(row.get("requeue") or 0.0)
    p, s = buckets["productive"], buckets["slow"]
    goodput = {
        "scheduling_goodput": safe_ratio(alloc, alloc + q + rq),
        "runtime_goodput": safe_ratio(p + s, alloc),
        "program_goodput_proxy": safe_ratio(p, p + s),
    }
    badput = {k: sum(buckets.get(b, 0.0) for b in v) for k, v in BADPUT_MAP.items()}
    return BucketTotals(allocated_gpu_s=alloc, queue_gpu_s=q, requeue_gpu_s=rq, buckets_gpu_s=buckets,
                        terms_gpu_s=terms, etpr=safe_ratio(p, alloc), ettr=safe_ratio(p + s, alloc + rq),
                        goodput=goodput, badput_gpu_s=badput)


def _pareto_key(by: str) -> pl.Expr:
    no_fail = pl.col("mode").is_in([NO_FAILURE])
    label_nf = pl.concat_str([pl.lit("(no failure) "), pl.col("phase")])
    if by == "category":
        return (pl.when(no_fail).then(label_nf)
                .when(pl.col("mode") == KILLED).then(pl.concat_str([pl.lit("(killed) "), pl.col("cause")]))
                .otherwise(pl.col("category")))
    if by == "failure_mode":
        return pl.when(no_fail).then(label_nf).otherwise(pl.col("mode"))
    if by == "node":
        return pl.when(no_fail).then(label_nf).otherwise(pl.col("node"))
    if by == "week":
        return pl.col("week")
    if by == "cause":
        return pl.when(no_fail).then(label_nf).when(pl.col("cause") == "").then(
            pl.concat_str([pl.col("mode"), pl.lit("/"), pl.col("category")])).otherwise(pl.col("cause"))
    raise ValueError(f"--by must be one of {', '.join(BY_CHOICES)}")


def what_if(parts: pl.DataFrame, productive: float, allocated: float) -> list[WhatIf]:
    """ETPR under each lever of :data:`WHAT_IFS`: the same useful work in ``allocated - saved`` GPU time."""
    agg = parts.group_by(["bucket", "phase"]).agg(gpu_s=pl.col("gpu_s").sum())
    cells = {(r["bucket"], r["phase"]): r["gpu_s"] for r in agg.iter_rows(named=True)}
    base = safe_ratio(productive, allocated)
    out = []
    for name, desc, rules in WHAT_IFS:
        saved = 0.0
        for bucket, phase, factor in rules:
            v = sum(g for (b, ph), g in cells.items() if b == bucket and (phase is None or ph == phase))
            saved += v * (1.0 - factor)
        e = safe_ratio(productive, allocated - saved)
        out.append(WhatIf(name=name, description=desc, factors={b if p is None else f"{b}[{p}]": f for b, p, f in rules},
                          saved_gpu_s=saved, etpr=e,
                          delta_pp=None if e is None or base is None else 100.0 * (e - base)))
    out.sort(key=lambda w: -(w.delta_pp or 0.0))
    return out


def merge_issues(issues: Sequence[Issue]) -> list[Issue]:
    """One issue per (kind, code, message): counts added, examples concatenated (at most 5)."""
    merged: dict[tuple[str, str, str], Issue] = {}
    for i in issues:
        k = (i.kind, i.code, i.message)
        if k in merged:
            m = merged[k]
            m.count += i.count
            m.examples = (m.examples + [e for e in i.examples if e not in m.examples])[:5]
        else:
            merged[k] = i.model_copy(deep=True)
    return sorted(merged.values(), key=lambda i: (i.kind != "warning", -i.count))


def build_report(ledger: Ledger, source: str, by: str = "category", issues: Sequence = (),
                 timings: dict[str, float] | None = None, max_jobs: int = MAX_JOB_ACCOUNTS) -> EtprReport:
    """Aggregate a ledger into the report: cluster totals, Pareto by ``by``, mode x phase, what-ifs, jobs."""
    t0 = time.perf_counter()
    parts = ledger.parts
    if by == "week" and "week" not in parts.columns:
        raise ValueError("by='week' needs compute_ledger(by_week=True)")
    keys = ["bucket", "phase", "mode", "category", "node", "cause"] + (["week"] if "week" in parts.columns else [])
    cells = parts.group_by(keys).agg(gpu_s=pl.col("gpu_s").sum(), wall_s=pl.col("wall_s").sum()).with_columns(
        [pl.col(k).cast(pl.String) for k in keys])
    cluster_w = bucket_totals_frame(cells, [])
    cluster = _totals(cluster_w.row(0, named=True))
    per_job = job_totals_frame(ledger).hstack(ledger.jobs.drop("jid").get_columns())
    loss = cells.filter(pl.col("bucket").is_in([b for b in ALLOC_BUCKET_NAMES if b != "productive"]))
    total_loss = float(loss.get_column("gpu_s").sum()) if loss.height else 0.0
    pareto: list[ParetoRow] = []
    if loss.height:
        pk = loss.with_columns(key=_pareto_key(by).fill_null("?")).group_by("key").agg(gpu_s=pl.col("gpu_s").sum())
        pk = pk.sort(["gpu_s", "key"], descending=[True, False])
        cum = 0.0
        for r in pk.head(50).iter_rows(named=True):
            cum += r["gpu_s"]
            pareto.append(ParetoRow(key=str(r["key"]), gpu_s=r["gpu_s"], share_of_loss=r["gpu_s"] / total_loss,
                                    cumulative_share=cum / total_loss))
    mp: dict[str, dict[str, float]] = {}
    if loss.height:
        for r in loss.group_by(["mode", "phase"]).agg(g=pl.col("gpu_s").sum()).sort(["mode", "phase"]).iter_rows(named=True):
            mp.setdefault(r["mode"], {})[r["phase"]] = r["g"]
    attribution: list[AttributionRow] = []
    alloc = cluster.allocated_gpu_s
    if loss.height:
        keys = ["bucket", "phase", "mode", "category", "node", "cause"]
        att = loss.group_by(keys).agg(gpu_s=pl.col("gpu_s").sum()).sort("gpu_s", descending=True).head(200)
        for r in att.iter_rows(named=True):
            attribution.append(AttributionRow(term=BUCKET_TERM[Bucket(r["bucket"])].value, share_of_allocated=(
                r["gpu_s"] / alloc if alloc > 0 else 0.0), **r))
    wi = what_if(cells, cluster.buckets_gpu_s["productive"], alloc)

    # per-job ledgers: all jobs if few, else the most lossy
    per_job = per_job.with_columns(loss_gpu_s=pl.col("allocated") - pl.col("productive"))
    truncated = per_job.height > max_jobs
    sel = per_job.sort("loss_gpu_s", descending=True).head(max_jobs) if truncated else per_job.sort("job")
    accounts = []
    for r in sel.iter_rows(named=True):
        accounts.append(JobAccount(
            job=str(r["job"]), gpus=float(r["gpus"] or 1.0), attempts=int(r["attempts"] or 0),
            failures=int(r["failures"] or 0), first_time=float(r["first_time"] or 0.0),
            last_time=float(r["last_time"] or 0.0), totals=_totals(r),
            wall_s={b.value: float(r.get("wall_" + b.value) or 0.0) for b in Bucket},
            ettr_wall=r["ettr_wall"]))
    job_etpr = per_job.filter(pl.col("allocated") > 0).get_column("etpr")
    job_ettr = per_job.filter(pl.col("allocated") > 0).get_column("ettr_wall")
    tm = dict(timings or {})
    tm["report_s"] = time.perf_counter() - t0
    return EtprReport(
        source=source, jobs=ledger.jobs.height, events=ledger.n_events, cluster=cluster,
        job_etpr_mean=float(job_etpr.mean()) if job_etpr.len() else None,  # type: ignore[arg-type]
        job_ettr_mean=float(job_ettr.drop_nulls().mean()) if job_ettr.drop_nulls().len() else None,  # type: ignore[arg-type]
        by=by, pareto=pareto, mode_phase_gpu_s=mp, attribution=attribution, what_if=wi, job_accounts=accounts,
        job_accounts_truncated=truncated, issues=merge_issues(list(issues) + list(ledger.issues)),
        timings_s=tm)


def jobs_table(ledger: Ledger) -> pl.DataFrame:
    """Per-job wide table (GPU-seconds and wall seconds per bucket, ETPR, ETTR) for ``--jobs-out``."""
    return job_totals_frame(ledger).hstack(ledger.jobs.drop("jid").get_columns()).drop("jid")


# ---------------------------------------------------------------------------------------------------
# text
# ---------------------------------------------------------------------------------------------------

def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100.0 * x:.1f}%"


def _gpuh(x: float, hours: bool = True) -> str:
    return f"{x / 3600.0:,.1f} GPU-h" if hours else f"{x:,.1f} GPU-s"


def render_text(rep: EtprReport, max_rows: int = 8) -> str:
    """A terse plain-text summary for the terminal."""
    c = rep.cluster
    h = c.allocated_gpu_s >= 3600.0  # GPU-hours, or GPU-seconds for small inputs (the lab)
    lines = [f"ETPR {_pct(c.etpr)}  ({rep.jobs} jobs, {rep.events} events, source {rep.source})",
             f"allocated {_gpuh(c.allocated_gpu_s, h)}; queue before allocation {_gpuh(c.queue_gpu_s, h)}, "
             f"re-queue {_gpuh(c.requeue_gpu_s, h)}",
             "terms: " + ", ".join(f"{k} {_pct(safe_ratio(v, c.allocated_gpu_s))}" for k, v in c.terms_gpu_s.items()),
             f"ETTR (Meta-style) {_pct(c.ettr)}; goodput (Google-style): scheduling "
             f"{_pct(c.goodput['scheduling_goodput'])}, runtime {_pct(c.goodput['runtime_goodput'])}, "
             f"program (proxy) {_pct(c.goodput['program_goodput_proxy'])}",
             f"per-job mean ETPR {_pct(rep.job_etpr_mean)} (each job counts once)", "",
             f"largest losses by {rep.by}:"]
    for p in rep.pareto[:max_rows]:
        lines.append(f"  {p.key:40s} {_gpuh(p.gpu_s, h):>16s}  {100 * p.share_of_loss:5.1f}% of loss "
                     f"(cum {100 * p.cumulative_share:5.1f}%)")
    lines += ["", "levers (what-if, same work):"]
    for w in rep.what_if:
        lines.append(f"  {w.name:24s} ETPR {_pct(w.etpr):>7s}  ({'+' if (w.delta_pp or 0) >= 0 else ''}"
                     f"{(w.delta_pp or 0):.2f} pp)  {w.description}")
    warn = [i for i in rep.issues if i.kind == "warning"]
    assume = [i for i in rep.issues if i.kind == "assumption"]
    if warn or assume:
        lines += ["", f"input: {len(warn)} kinds of warning, {len(assume)} assumptions"]
        for i in warn + assume:
            ex = f" e.g. {', '.join(i.examples[:3])}" if i.examples else ""
            lines.append(f"  [{i.kind}] {i.code} x{i.count}: {i.message}{ex}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------------

#: Jobs listed in the HTML page's table (the report keeps up to :data:`MAX_JOB_ACCOUNTS`).
MAX_HTML_JOB_ROWS = 50
#: The page template, shipped in the package (``diag_service/etpr/templates``, package data).
REPORT_TEMPLATE = "etpr_report.html"


@functools.cache
def _template() -> jinja2.Template:
    """The HTML page template (Jinja2, autoescaped; filters ``pct`` and ``num``)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("diag_service.etpr", "templates"),
                             autoescape=jinja2.select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["pct"] = _pct
    env.filters["num"] = lambda v, digits=2: f"{v:,.{digits}f}"
    return env.get_template(REPORT_TEMPLATE)


def _fig_html(fig, first: bool) -> str:  # noqa: ANN001 - plotly figure
    return fig.to_html(full_html=False, include_plotlyjs="inline" if first else False,
                       config={"displaylogo": False, "responsive": True})


def render_html(rep: EtprReport, ledger: Ledger, max_timeline_jobs: int = 25) -> str:
    """One self-contained HTML page with the plots (plotly.js inlined once) and the tables."""
    import plotly.graph_objects as go
    from markupsafe import Markup
    from plotly.subplots import make_subplots

    c = rep.cluster
    div, unit = (3600.0, "GPU-hours") if c.allocated_gpu_s >= 3600.0 else (1.0, "GPU-seconds")
    alloc_h = c.allocated_gpu_s / div
    figs: list[tuple[str, str, object]] = []

    # 1. loss waterfall
    losses = [(b, c.buckets_gpu_s[b] / div) for b in ALLOC_BUCKET_NAMES if b != "productive"]
    losses = [x for x in losses if x[1] > 0]
    losses.sort(key=lambda x: -x[1])
    wf = go.Figure(go.Waterfall(
        orientation="v", measure=["absolute"] + ["relative"] * len(losses) + ["total"],
        x=["allocated"] + [b for b, _ in losses] + ["productive"],
        y=[alloc_h] + [-v for _, v in losses] + [0],
        text=[f"{alloc_h:,.1f}"] + [f"-{v:,.1f} ({100 * v / alloc_h:.1f}%)" if alloc_h else "" for _, v in losses]
        + [f"{c.buckets_gpu_s['productive'] / div:,.1f} ({_pct(c.etpr)})"],
        textposition="outside", connector={"line": {"color": "#999"}},
        decreasing={"marker": {"color": "#d62728"}}, totals={"marker": {"color": "#2ca02c"}},
        increasing={"marker": {"color": "#1f77b4"}}))
    wf.update_layout(title=f"Where allocated GPU time went ({unit})", yaxis_title=unit, height=460,
                     margin={"t": 60, "b": 40})
    figs.append(("waterfall", "Loss waterfall", wf))

    # 2. Pareto of causes
    if rep.pareto:
        keys = [p.key for p in rep.pareto[:20]]
        pf = make_subplots(specs=[[{"secondary_y": True}]])
        pf.add_trace(go.Bar(x=keys, y=[p.gpu_s / div for p in rep.pareto[:20]], name=f"{unit} lost",
                            marker_color="#d62728"), secondary_y=False)
        pf.add_trace(go.Scatter(x=keys, y=[100 * p.cumulative_share for p in rep.pareto[:20]], name="cumulative %",
                                mode="lines+markers", marker_color="#333"), secondary_y=True)
        pf.update_yaxes(title_text=unit, secondary_y=False)
        pf.update_yaxes(title_text="cumulative % of loss", range=[0, 105], secondary_y=True)
        pf.update_layout(title=f"Pareto of causes (by {rep.by})", height=480, margin={"t": 60, "b": 140},
                         legend={"orientation": "h", "y": 1.08})
        figs.append(("pareto", "Cluster Pareto of causes", pf))

    # 3. failure mode x phase
    if rep.mode_phase_gpu_s:
        modes = sorted(rep.mode_phase_gpu_s)
        phases = [p.value for p in Phase if any(p.value in v for v in rep.mode_phase_gpu_s.values())]
        z = [[rep.mode_phase_gpu_s[m].get(ph, 0.0) / div for ph in phases] for m in modes]
        hm = go.Figure(go.Heatmap(z=z, x=phases, y=modes, colorscale="Reds", text=[[f"{v:,.1f}" for v in row] for row in z],
                                  texttemplate="%{text}", colorbar={"title": unit}))
        hm.update_layout(title=f"Loss by failure mode x phase ({unit})", height=120 + 60 * len(modes),
                         margin={"t": 60, "b": 40})
        figs.append(("modephase", "Failure mode x phase", hm))

    # 4. what-if levers
    wi = [w for w in rep.what_if if w.delta_pp is not None]
    if wi:
        wfig = go.Figure(go.Bar(y=[w.name for w in wi][::-1], x=[w.delta_pp for w in wi][::-1], orientation="h",
                                text=[f"{w.delta_pp:+.2f} pp → {_pct(w.etpr)}" for w in wi][::-1],
                                textposition="auto", marker_color="#1f77b4"))
        wfig.update_layout(title="Levers: ETPR gain if ... (percentage points, same useful work)",
                           height=120 + 40 * len(wi), margin={"t": 60, "l": 180})
        figs.append(("whatif", "What-if levers", wfig))

    # 5. per-job timelines (most lossy jobs)
    names = [a.job for a in sorted(rep.job_accounts, key=lambda a: -(a.totals.allocated_gpu_s
                                                                       - a.totals.buckets_gpu_s["productive"]))]
    names = names[:max_timeline_jobs]
    if names:
        jid = ledger.jobs.filter(pl.col("job").is_in(names)).select("jid", "job")
        segs = (ledger.parts.join(jid, on="jid").filter(pl.col("bucket") != Bucket.SLOW.value)
                .sort(["job", "t"]))
        slow = (ledger.parts.join(jid, on="jid").filter(pl.col("bucket") == Bucket.SLOW.value)
                .group_by(["job", "t"]).agg(slow_s=pl.col("wall_s").sum()))
        segs = segs.join(slow, on=["job", "t"], how="left").with_columns(
            dur=pl.when(pl.col("bucket") == "productive").then(pl.col("wall_s") + pl.col("slow_s").fill_null(0.0))
            .otherwise(pl.col("wall_s")),
            bucket=pl.when((pl.col("bucket") == "productive")
                           & (pl.col("slow_s").fill_null(0.0) > 0.2 * (pl.col("wall_s") + pl.col("slow_s").fill_null(0.0))))
            .then(pl.lit("slow")).otherwise(pl.col("bucket")))
        tl = go.Figure()
        for b in [x.value for x in Bucket]:
            s = segs.filter(pl.col("bucket") == b)
            if s.height == 0:
                continue
            starts = [datetime.fromtimestamp(t, UTC) for t in s.get_column("t").to_list()]
            tl.add_trace(go.Bar(
                y=s.get_column("job").to_list(), x=[d * 1000.0 for d in s.get_column("dur").to_list()], base=starts,
                orientation="h", name=b if b != "slow" else "productive, slow (r < 0.8)",
                marker_color=BUCKET_COLORS.get(b, "#888"),
                hovertemplate="%{y}<br>" + b + ": %{customdata:.1f} s<extra></extra>",
                customdata=s.get_column("dur").to_list()))
        tl.update_layout(barmode="overlay", title="Per-job timeline (most lossy jobs)", xaxis={"type": "date"},
                         height=160 + 34 * len(names), margin={"t": 60, "l": 220},
                         legend={"orientation": "h", "y": -0.15})
        tl.update_yaxes(categoryorder="array", categoryarray=names[::-1])
        figs.append(("timeline", "Per-job timeline", tl))

    levers = ", ".join(f"{w.name} {w.delta_pp:+.1f} pp" for w in rep.what_if[:3] if w.delta_pp is not None)
    figures = [{"id": _id, "title": title, "html": Markup(_fig_html(fig, k == 0))}
               for k, (_id, title, fig) in enumerate(figs)]
    return _template().render(
        rep=rep, c=c, div=div, unit=unit, figures=figures, levers=levers,
        top=rep.pareto[0].key if rep.pareto else "n/a",
        share=lambda v: safe_ratio(v, c.allocated_gpu_s),
        bucket_term={b.value: t.value for b, t in BUCKET_TERM.items()},
        max_job_rows=MAX_HTML_JOB_ROWS,
    )
