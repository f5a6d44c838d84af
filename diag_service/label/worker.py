"""Label one job: call the shared pipeline, add similar incidents when the knowledge base is there, make a row.

:class:`Labeller` is what both engines run: one instance per worker process (local engine) or per
Ray actor, so the models it loads (the knowledge base's embedder) load once per worker. It never
raises for a job: a bundle that cannot be diagnosed, or a bug met while diagnosing it, becomes an
error row with the reason.
"""

from __future__ import annotations

import hashlib
import json
import re
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from diag_service.domain import Diagnosis, EventRole, EventTemplate, SimilarIncident
from diag_service.ingest import BundleError
from diag_service.label.models import Job, LabelOptions, LabelRow
from diag_service.pipeline import DiagnoseRequest, diagnose
from diag_service.recovery import Policy, load_policy
from diag_service.signatures import site_catalog

#: Similar-incident lookup: ``(diagnosis, k) -> (incidents, is_novel)`` (the knowledge base's ``similar_incidents``).
SimilarFn = Callable[[Diagnosis, int], tuple[list[SimilarIncident], bool]]

MAX_WARNINGS = 5
SIMILAR_K = 5
_PLACEHOLDER = re.compile(r"<(?:[A-Z][A-Z0-9_]*|\*)>")
_RUN_OF_VARS = re.compile(r"<\*>(?:[\s:;,./#=()\[\]-]*<\*>)+")
_SOURCE_PREFIX = re.compile(r"^\s*\[[^\]]*\.(?:cpp|cc|cu|c|h|hpp|py):<\*>\]\s*")
_SPACES = re.compile(r"\s+")


class JobTimeout(BaseException):
    """A job's diagnosis took longer than ``LabelOptions.job_timeout_s``.

    A ``BaseException`` so that no ``except Exception`` inside the pipeline can swallow it.
    """


def normalise_template(template: str) -> str:
    """The part of a Drain3 template that must match for two jobs to share a root cause.

    Every mask (``<NUM>``, ``<RANK>``, ``<*>``...) becomes ``<*>``, runs of masks joined by punctuation
    collapse to one, a leading ``[... file.cpp:<*>]`` source prefix (glog) is dropped, and spaces are
    collapsed, so the same error printed by different jobs (other ranks, hosts, sizes) gives one key.
    """
    t = _PLACEHOLDER.sub("<*>", template)
    t = _RUN_OF_VARS.sub("<*>", t)
    t = _SOURCE_PREFIX.sub("", t)
    return _SPACES.sub(" ", t).strip()[:1000]


def template_key(template: str) -> str:
    """Stable id of a root-cause template across jobs: 12 hex digits of the normalised template's SHA-1."""
    return hashlib.sha1(normalise_template(template).encode("utf-8")).hexdigest()[:12]


def root_event(d: Diagnosis) -> EventTemplate | None:
    """The event template behind the diagnosis's root cause.

    The template whose first occurrence is the root cause's first evidence line; else the first
    ``root``-role template; else the most suspicious one (``Diagnosis.events`` is sorted that way).
    """
    if d.root_cause.evidence:
        first = d.root_cause.evidence[0]
        for e in d.events:
            if e.first.file == first.file and e.first.line == first.line:
                return e
    for e in d.events:
        if e.role is EventRole.ROOT:
            return e
    return d.events[0] if d.events else None


def _metadata_json(job: Job) -> str:
    return json.dumps(job.metadata, sort_keys=True, default=str)


def error_row(job: Job, reason: str) -> LabelRow:
    """The row of a job that could not be labelled, with the reason."""
    return LabelRow(job_id=job.job_id, path=job.path, status="error", error=reason[:2000], metadata=_metadata_json(job))


def row_from_diagnosis(job: Job, d: Diagnosis) -> LabelRow:
    """The output row of a diagnosed job (the summary columns are filled later, per cluster)."""
    ev = root_event(d)
    v = d.versions
    return LabelRow(
        job_id=job.job_id,
        path=job.path,
        status="ok",
        failure_mode=d.failure_mode.value,
        category=d.category.value,
        responsible=d.responsible.value,
        confidence=d.confidence,
        first_failing_rank=d.first_failing_rank,
        first_failing_node=d.first_failing_node,
        faulty_nodes=list(d.faulty_nodes),
        root_template_id=template_key(ev.template) if ev is not None else None,
        root_template=ev.template[:2000] if ev is not None else None,
        root_signature_ids=list(ev.signature_ids) if ev is not None else [],
        root_cause=d.root_cause.summary[:2000],
        similar_incident_ids=[s.incident_id for s in d.similar_incidents],
        novel=d.novel,
        recovery_level=d.recovery.level.value if d.recovery is not None else None,
        ranks_seen=d.input.ranks_seen,
        nodes_seen=len(d.input.nodes_seen),
        files=d.input.files,
        bytes_read=d.input.bytes_read,
        warnings=[w[:500] for w in d.input.warnings[:MAX_WARNINGS]],
        metadata=_metadata_json(job),
        diag_version=v.get("diag_service"),
        signatures_version=v.get("signatures"),
        recovery_policy_version=v.get("recovery_policy"),
        kb_version=v.get("kb"),
        model_version=v.get("model"),
        versions=json.dumps(v, sort_keys=True),
    )


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`JobTimeout` in the body after ``seconds`` (SIGALRM; main thread only, else no limit).

    A timer armed by someone else (e.g. a test runner's own timeout) is put back afterwards.
    """
    if seconds <= 0 or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def _raise(_signum: int, _frame: object) -> None:
        raise JobTimeout(f"diagnosis took longer than {seconds:g} s")

    outer_left, _ = signal.getitimer(signal.ITIMER_REAL)
    t0 = time.monotonic()
    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left > 0:
            signal.setitimer(signal.ITIMER_REAL, max(0.001, outer_left - (time.monotonic() - t0)))


class _FnRetriever:
    """A :class:`~diag_service.contracts.Retriever` over a lookup function ``(diagnosis, k) -> (incidents, novel)``."""

    def __init__(self, fn: SimilarFn) -> None:
        self.fn = fn

    def similar_incidents(self, diagnosis: Diagnosis, k: int = 5) -> tuple[list[Any], bool]:
        return self.fn(diagnosis, k)


def load_kb(mode: str) -> tuple[SimilarFn | None, str | None, str | None]:
    """The knowledge base's lookup, its version and why it is not used.

    ``off``: not loaded. ``auto``: used when :mod:`diag_service.kb` imports and its store opens (the
    embedding model is then loaded once, here); otherwise ``(None, None, reason)``. ``on``: like
    ``auto`` but raises ``RuntimeError`` instead of returning a reason.
    """
    if mode == "off":
        return None, None, None
    try:
        from diag_service.kb import default_kb, similar_incidents
    except ImportError as exc:
        reason = f"knowledge base not installed ({exc})"
        if mode == "on":
            raise RuntimeError(reason) from exc
        return None, None, reason
    try:
        kb = default_kb()
        info = kb.info()
        kb.embedder.encode(["warm up"])  # load the model now, once per worker, not inside the first job
    except Exception as exc:  # noqa: BLE001 - any failure to open the store or load the model
        reason = f"knowledge base unusable ({type(exc).__name__}: {exc})"
        if mode == "on":
            raise RuntimeError(reason) from exc
        return None, None, reason
    # the embedder's whole name (the hybrid's names its parts, with '/' and ';' inside): "<model>:<records>"
    return similar_incidents, f"{info.model or '?'}:{info.records}", None


class Labeller:
    """Labels jobs in the calling process. Build one per worker; it is reused for every job of that worker.

    ``similar``: inject the similar-incident lookup (tests); by default it comes from :func:`load_kb`.
    The stages every job is given are built here, once, from ``options``: the signature catalogue
    (built-ins plus ``signatures_dir``), the retriever over the lookup, and (on the first job, so a broken
    policy file is an error row as before) the recovery policy of ``policy_path``.
    Raises ``RuntimeError`` at construction when ``options.kb == 'on'`` and the knowledge base is unusable,
    and :class:`~diag_service.signatures.SignatureError` for a broken catalogue.
    """

    def __init__(self, options: LabelOptions, similar: SimilarFn | None = None, kb_version: str | None = None) -> None:
        self.options = options
        if similar is not None:
            self.similar, self.kb_version, self.kb_note = similar, kb_version or "injected", None
        else:
            self.similar, self.kb_version, self.kb_note = load_kb(options.kb)
        self.catalog = site_catalog(options.signatures_dir)
        self.retriever = _FnRetriever(self.similar) if self.similar is not None else None
        self._policy: Policy | None = None

    def policy(self) -> Policy | None:
        """The recovery policy of ``options.policy_path`` (None when recovery is off), read once.
        Raises :class:`~diag_service.recovery.PolicyError` for a broken file (a later call tries again)."""
        if self._policy is None and self.options.recovery:
            self._policy = load_policy(self.options.policy_path)
        return self._policy

    def diagnose(self, job: Job) -> Diagnosis:
        """The job's diagnosis from the shared pipeline, with similar incidents when the knowledge base is used.

        The lookup (the knowledge base's, or one injected at construction) is passed to the pipeline as its
        retriever, which may also let retrieval name the category, exactly as ``diag diagnose`` does.
        Raises :class:`~diag_service.ingest.BundleError` for a bundle that cannot be read and
        :class:`JobTimeout` past the job timeout.
        """
        o = self.options
        policy = self.policy()
        with _deadline(o.job_timeout_s):
            d = diagnose(DiagnoseRequest(
                path=job.path, job_id=job.job_id, recovery=o.recovery, platform=o.platform, exclude=list(o.exclude),
                catalog=self.catalog, policy=policy, retriever=self.retriever,
            ))
        if self.similar is not None:
            d.versions.setdefault("kb", self.kb_version or "unknown")
        if self.kb_note:
            d.input.warnings.insert(0, self.kb_note)
        return d

    def label(self, job: Job) -> LabelRow:
        """The row of one job; never raises (an undiagnosable bundle gives an error row)."""
        if job.input_error:
            return error_row(job, job.input_error)
        try:
            d = self.diagnose(job)
        except BundleError as exc:
            return error_row(job, str(exc))
        except JobTimeout as exc:
            return error_row(job, f"timeout: {exc}")
        except MemoryError:
            return error_row(job, "internal error: out of memory while diagnosing this bundle")
        except Exception as exc:  # noqa: BLE001 - a bug met on one bundle must not stop the batch
            where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
            at = f" at {where[0].filename.rsplit('/', 1)[-1]}:{where[0].lineno}" if where else ""
            return error_row(job, f"internal error: {type(exc).__name__}: {exc}{at}")
        return row_from_diagnosis(job, d)

    def label_batch(self, jobs: list[Job]) -> list[LabelRow]:
        """Rows of ``jobs``, in the same order."""
        return [self.label(j) for j in jobs]


def rows_to_columns(rows: list[LabelRow]) -> dict[str, Any]:
    """A batch of rows as the two columns the Ray engine ships back: ``job_id`` and ``row`` (JSON)."""
    import numpy as np

    return {
        "job_id": np.array([r.job_id for r in rows], dtype=object),
        "row": np.array([r.model_dump_json() for r in rows], dtype=object),
    }
