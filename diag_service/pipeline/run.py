"""Compose ingest → extract → redact → templates → signatures → localize, timing each stage.

The first four stages are chained generators, so the bundle streams through them block by block;
each stage's time is its own (exclusive) wall time, measured around its ``next()`` calls minus the
time spent upstream.
"""

from __future__ import annotations

import fnmatch
import os
import re
import tarfile
import time
import zipfile
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from diag_service import __version__
from diag_service.calibrate import Calibration, load_calibration
from diag_service.domain import Diagnosis, InputReport, RootCause
from diag_service.extract import ProgressLog, extract_events
from diag_service.hang import HangRequest, analyze_hang, find_dumps_dir
from diag_service.ingest import BundleError, IngestLimits, archive_member_text, read_bundle
from diag_service.localize import combine_hang, combine_retrieval, combine_slow, localize
from diag_service.recovery import History, Policy, load_policy, recommend
from diag_service.redact import redact_events
from diag_service.signatures import match_signatures, site_catalog
from diag_service.slow.analyze import analyze_bundle
from diag_service.slow.feeds import FeedError
from diag_service.slow.logs import FEED_MEMBER
from diag_service.templates import mine_templates

T = TypeVar("T")
MIXED_JOBS_SPAN_S = 7 * 86400


class DiagnoseRequest(BaseModel):
    """What to diagnose. ``path``: directory, archive or log file. ``signatures_dir``: a site's signature
    folder, added to the built-in catalogue (:func:`~diag_service.signatures.site_catalog`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: str
    job_id: str | None = None
    signatures_dir: str | None = None
    limits: IngestLimits | None = None
    recovery: bool = True
    policy_path: str | None = None
    history_path: str | None = None
    platform: str = "kubernetes"
    kb: bool = False  # similar past incidents (loads the embedding model once per process, ~8 s)
    exclude: list[str] = []  # fnmatch patterns on bundle-relative paths or base names, e.g. "truth.json"
    llm: bool = False  # narrative summary (diag_service.llm; falls back to a deterministic summary, never fails)
    #: maps the raw confidence to a measured probability of being right (diag_service.calibrate);
    #: None keeps the raw score (used to fit the map)
    calibration: Calibration | None = Field(default_factory=lambda: _calibration())


class _Timed:
    """Iterator wrapper accumulating inclusive seconds spent producing items."""

    def __init__(self, it: Iterator[T]) -> None:
        self.it = it
        self.seconds = 0.0

    def __iter__(self) -> _Timed:
        return self

    def __next__(self):  # noqa: ANN204
        t0 = time.perf_counter()
        try:
            return next(self.it)
        finally:
            self.seconds += time.perf_counter() - t0


@lru_cache(maxsize=1)
def _calibration() -> Calibration:
    return load_calibration()


def diagnose(req: DiagnoseRequest) -> Diagnosis:
    """Diagnose one job's log bundle.

    Raises :class:`BundleError` when the path is missing or unreadable, or holds no log lines.
    Returns a :class:`Diagnosis`; problems with parts of the input are in ``diagnosis.input.warnings``.
    """
    t_start = time.perf_counter()
    sigs = site_catalog(req.signatures_dir)
    report = InputReport(path=req.path)
    progress = ProgressLog()
    # Stack dumps go to the hang analyzer, not to the log stages.
    is_dir = Path(req.path).is_dir()
    dumps_dir = find_dumps_dir(req.path) if is_dir else None
    skip = _relative_prefix(req.path, dumps_dir)
    feeds = _timing_feeds(req.path)
    archive = not is_dir  # an archive (or one file): its timing feeds are found by member name
    exclude = [*req.exclude, *_diagignore(req.path, report)]
    feed_members: set[str] = set()

    def not_for_log_stages(path: str) -> bool:
        # dumps go to the hang analyzer and timing feeds to the slow analyzer; excluded files to nobody
        if skip is not None and (path + "/").startswith(skip):
            return True
        if path in feeds:
            return True
        if archive and FEED_MEMBER.search(path):  # a timing feed inside an archive, at any depth
            feed_members.add(path)
            return True
        return _excluded(path, exclude)

    blocks = _Timed(read_bundle(req.path, report, req.limits, skip=not_for_log_stages))
    raw = _Timed(extract_events(blocks, progress, sigs.prefilter_patterns()))
    clean = _Timed(redact_events(raw))
    t0 = time.perf_counter()
    groups = mine_templates(clean)
    t_mine_total = time.perf_counter() - t0
    timings = {
        "ingest": blocks.seconds,
        "extract": raw.seconds - blocks.seconds,
        "redact": clean.seconds - raw.seconds,
        "templates": t_mine_total - clean.seconds,
    }
    if report.lines == 0:
        raise BundleError(
            f"empty bundle: no readable log lines in {req.path}"
            + (f" ({'; '.join(report.warnings[:5])})" if report.warnings else "")
        )
    t0 = time.perf_counter()
    hits, per_group = match_signatures(groups, sigs)
    timings["signatures"] = time.perf_counter() - t0
    ranks_seen = {r for g in groups for r in g.ranks} | progress.ranks
    nodes_seen = {n for g in groups for n in g.nodes}
    t0 = time.perf_counter()
    loc = localize(groups, hits, per_group, progress, sigs, ranks_seen, nodes_seen)
    timings["localize"] = time.perf_counter() - t0
    report.ranks_seen = len(ranks_seen)
    stamps = [g.first_ts for g in groups if g.first_ts is not None and g.first is not None and not g.first.ts_approx]
    if stamps and max(stamps) - min(stamps) > MIXED_JOBS_SPAN_S:
        report.warnings.append(
            f"events span {(max(stamps) - min(stamps)) / 86400:.0f} days: the bundle may hold logs of several jobs "
            "or attempts; diagnose each job's logs separately"
        )
    report.nodes_seen = sorted(nodes_seen)[:256]
    d = Diagnosis(
        job_id=req.job_id or _job_id(req.path),
        failure_mode=loc.failure_mode,
        category=loc.category,
        responsible=loc.responsible,
        confidence=loc.confidence,
        root_cause=RootCause(summary=loc.summary, evidence=loc.evidence),
        first_failing_rank=loc.first_failing_rank,
        faulty_nodes=loc.faulty_nodes,
        signature_hits=hits,
        events=loc.events,
        findings=loc.findings,
        input=report,
        versions={"diag_service": __version__, "signatures": sigs.version},
    )
    if dumps_dir is not None:
        t0 = time.perf_counter()
        try:
            d.hang = analyze_hang(HangRequest(dumps_dir=str(dumps_dir)))
        except (OSError, ValueError) as exc:
            report.warnings.append(f"stack dumps not analysed: {exc}")
        else:
            combine_hang(d, d.hang)
        timings["hang"] = time.perf_counter() - t0
    if feeds or feed_members:
        t0 = time.perf_counter()
        try:
            slow = analyze_bundle(req.path)
        except (FeedError, OSError, ValueError) as exc:
            report.warnings.append(f"timing feed not analysed: {exc}")
        else:
            if slow is not None:
                report.warnings.extend(f"timing feed: {w}" for w in slow.input.warnings[:5])
                d.slow = slow.model_dump(mode="json", exclude={"config"})
                combine_slow(d, slow)
        timings["slow"] = time.perf_counter() - t0
    if req.kb:
        t0 = time.perf_counter()
        try:
            from diag_service.kb import similar_incidents

            incidents, novel = similar_incidents(d)
        except Exception as exc:  # noqa: BLE001 - a missing model or store never fails the diagnosis
            report.warnings.append(f"knowledge base not consulted: {type(exc).__name__}: {exc}")
        else:
            combine_retrieval(d, incidents, novel)
        timings["kb"] = time.perf_counter() - t0
    if req.calibration is not None:
        req.calibration.apply(d)
    if not d.has_evidence():
        report.warnings.append(
            f"no failure evidence: none of the {report.lines} line(s) is an error, warning, traceback or known "
            "failure message; are these the failed job's logs (every rank, the failed attempt)?"
        )
    if req.recovery:
        t0 = time.perf_counter()
        pol = _policy(req.policy_path)
        history = History(req.history_path) if req.history_path else None
        try:
            d.recovery = recommend(d, pol, history, platform=req.platform, gpus=len(ranks_seen) or None)
        finally:
            if history is not None:
                history.close()
        d.versions["recovery_policy"] = pol.version_hash
        timings["recovery"] = time.perf_counter() - t0
    if req.llm:
        t0 = time.perf_counter()
        try:
            from diag_service.llm import summarize_detailed

            res = summarize_detailed(d)
            d.narrative = res.narrative
            if res.fallback_reason and res.fallback_reason.startswith(("backend unavailable", "configuration")):
                report.warnings.append(f"summary written without the model ({res.fallback_reason})")
        except Exception as exc:  # noqa: BLE001 - a summary problem never fails the diagnosis
            report.warnings.append(f"summary not written: {type(exc).__name__}: {exc}")
        timings["llm"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_start
    d.timings_ms = {k: round(v * 1000, 2) for k, v in timings.items()}
    return d


def _job_id(path: str) -> str:
    """A default job id from the bundle's name, without archive and log extensions."""
    name = Path(path.rstrip("/")).name
    return re.sub(r"(?i)(\.(?:tar|tgz|gz|zip|log|txt|out|err|json|jsonl))+$", "", name) or name


def _excluded(path: str, patterns: list[str]) -> bool:
    base = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(path, p) or fnmatch.fnmatch(base, p) for p in patterns)


DIAGIGNORE = ".diagignore"


def _diagignore(path: str, report: InputReport) -> list[str]:
    """Patterns of a bundle's ``.diagignore`` (one glob per line, ``#`` comments), plus the file itself.

    A collector (or the fault-injection lab, for its ground truth) lists there the files of the bundle that
    are not logs: at the top of a bundle directory, or in a tar/zip archive at its top or in the one folder
    it was archived from (patterns with a ``/`` are then taken relative to that folder; archives over
    256 MiB are not searched). At most 200 patterns from the first 64 KiB. An unreadable file is a warning,
    not an error.
    """
    p = Path(path)
    folder = ""
    try:
        if p.is_dir():
            f = p / DIAGIGNORE
            if not f.is_file():
                return []
            with f.open("rb") as fh:
                text = fh.read(64 * 1024).decode("utf-8", errors="replace")
        else:
            found = archive_member_text(p, DIAGIGNORE)
            if found is None:
                return []
            member, text = found
            folder = member.rsplit("/", 1)[0] + "/" if "/" in member else ""
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile) as exc:
        report.warnings.append(f"{DIAGIGNORE}: unreadable ({exc}), not applied")
        return [DIAGIGNORE]
    pats = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return [DIAGIGNORE, *(folder + q if "/" in q else q for q in pats[:200])]


def _timing_feeds(path: str) -> set[str]:
    """Bundle-relative paths of per-rank timing feeds (``timing*.jsonl``, ``.csv``, ``.parquet``) at the
    top of a bundle directory; they are read by the slow analyzer."""
    p = Path(path)
    if not p.is_dir():
        return set()
    out = set()
    for pattern in ("timing*.jsonl", "timing*.csv", "timing*.parquet"):
        out |= {f.name for f in p.glob(pattern) if f.is_file()}
    return out


def _relative_prefix(root: str, sub: Path | None) -> str | None:
    if sub is None:
        return None
    rel = os.path.relpath(sub, root).replace(os.sep, "/")
    return "" if rel == "." else rel.rstrip("/") + "/"


@lru_cache(maxsize=4)
def _policy(path: str | None) -> Policy:
    return load_policy(path)
