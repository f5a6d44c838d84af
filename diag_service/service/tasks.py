"""What a worker runs: one call into the shared core per job kind, and nothing else.

A task is a JSON-able dict (it is stored with the job, so a restarted service can run it again):

- ``{"kind": "diagnose", "path", "job_id", "exclude", "ingest", "recovery", "platform", "history_path", "policy_path",
  "kb", "llm"}`` (a live job's also ``"restarts"``, a :class:`~diag_service.domain.JobRestarts`, and
  ``"record_counts": false``)
  → :func:`diag_service.pipeline.diagnose`, given this process's knowledge base (:func:`knowledge_base`,
  when ``kb`` is set) as its retriever and its summarizer (:func:`summarizer`, when ``llm`` is set);
- ``{"kind": "hang", "dumps_dir", "min_stuck_snapshots", "logs"?}`` → :func:`diag_service.pipeline.hang_with_logs`;
- ``{"kind": "slow", "path", "world_size"}`` → :func:`diag_service.slow.analyze_slow`;
- ``{"kind": "etpr", "path", "by", "slow_tolerance"}`` → :mod:`diag_service.etpr` (load, ledger, report).

:func:`run_task` never raises: it returns ``{"ok": True, "result": <JSON text>, ...}`` or
``{"ok": False, "status": <HTTP status>, "error": <message>}``. Models and catalogs load once per
process (the pipeline caches its catalog and policy; the knowledge base and the summarizer are kept here).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import signal
import stat
import sys
import tempfile
import threading
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from diag_service.service.faults import disk_full_message, is_disk_full

log = logging.getLogger("diag_service.service.worker")


def knowledge_base(cfg: dict[str, Any]) -> Any:
    """The process's :class:`diag_service.kb.KnowledgeBase` for ``cfg`` (``home``, ``embedder``), opened once
    (:func:`diag_service.kb.open_kb`; the model loads once per process). It is the retriever every
    diagnosis of this process is given, and the store search and feedback use."""
    from diag_service.kb import HashingEmbedder, open_kb

    embedder = HashingEmbedder() if cfg.get("embedder") == "hashing" else None
    return open_kb(cfg.get("home"), embedder)


@functools.cache
def summarizer() -> Any:
    """The process's :class:`diag_service.llm.LocalSummarizer` (``models/llm.yaml``), built once: the summary
    stage every diagnosis of this process with ``llm`` set is given (its model loads on first use)."""
    from diag_service.llm import LocalSummarizer

    return LocalSummarizer()


def _ok(result: str, **extra: Any) -> dict[str, Any]:
    return {"ok": True, "result": result, **extra}


def _err(status: int, message: str) -> dict[str, Any]:
    return {"ok": False, "status": status, "error": message}


def _diagnose(task: dict[str, Any]) -> dict[str, Any]:
    from diag_service.domain import JobRestarts
    from diag_service.ingest import IngestLimits
    from diag_service.pipeline import DiagnoseRequest, diagnose

    limits = IngestLimits(**task["ingest"]) if task.get("ingest") else None
    kb_cfg = task.get("kb")
    retriever = None
    warnings: list[str] = []
    if kb_cfg:
        try:
            retriever = knowledge_base(kb_cfg)
        except Exception as exc:  # noqa: BLE001 - a missing model or store never fails the diagnosis
            warnings.append(f"knowledge base not consulted: {type(exc).__name__}: {exc}")
    d = diagnose(DiagnoseRequest(
        path=task["path"], job_id=task.get("job_id"), exclude=task.get("exclude") or [], limits=limits,
        recovery=task.get("recovery", True), platform=task.get("platform"),
        history_path=task.get("history_path"), policy_path=task.get("policy_path"), retriever=retriever,
        summarizer=summarizer() if task.get("llm") else None,
        restarts=JobRestarts.model_validate(task["restarts"]) if task.get("restarts") else None,
        record_counts=task.get("record_counts", True),
    ))
    d.input.warnings.extend(warnings)
    return _ok(d.model_dump_json(), category=d.category.value, failure_mode=d.failure_mode.value,
               summary=d.root_cause.summary, timings_ms=d.timings_ms)


def _hang(task: dict[str, Any]) -> dict[str, Any]:
    from diag_service.pipeline import hang_with_logs

    rep = hang_with_logs(task["dumps_dir"], task.get("logs"), task.get("min_stuck_snapshots", 3))
    return _ok(rep.model_dump_json(), category=None, failure_mode="fail_hang" if rep.hung else None,
               summary=rep.explanation, hung=rep.hung)


def _slow(task: dict[str, Any]) -> dict[str, Any]:
    from diag_service.slow import analyze_slow

    rep = analyze_slow(task["path"], world_size=task.get("world_size"))
    return _ok(rep.model_dump_json(exclude={"config"}), category=rep.category.value,
               failure_mode=rep.failure_mode.value if rep.failure_mode else None, summary=rep.summary)


def _etpr(task: dict[str, Any]) -> dict[str, Any]:
    from diag_service.etpr import build_report, compute_ledger, load_events

    events, issues = load_events(Path(task["path"]))
    ledger = compute_ledger(events, slow_tolerance=task.get("slow_tolerance", 0.05), by_week=task.get("by") == "week")
    rep = build_report(ledger, source=task.get("source", "api"), by=task.get("by", "category"), issues=issues)
    return _ok(rep.model_dump_json(), category=None, failure_mode=None, summary=None)


_KINDS = {"diagnose": _diagnose, "hang": _hang, "slow": _slow, "etpr": _etpr}


def _input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean 'this input cannot be analysed' (422), as the core defines them."""
    from diag_service.ingest import BundleError
    from diag_service.slow import FeedError

    errs: list[type[BaseException]] = [BundleError, FeedError]
    try:
        from diag_service.etpr import EtprInputError

        errs.append(EtprInputError)
    except ImportError:  # pragma: no cover - etpr not installed
        pass
    try:
        from diag_service.hang.analyzer import HangInputError
        from diag_service.hang.dumps import DumpError

        errs += [DumpError, HangInputError]
    except ImportError:  # pragma: no cover
        pass
    return tuple(errs)


def _moved(task: dict[str, Any]) -> str | None:
    """Why a path request's input may no longer be read, or None. ``task["confined"]`` is the real path
    that was checked against the allowed roots when the request was accepted; the worker opens it
    later (queued, or again after a restart), so it is checked again here: a path (or a folder on the
    way) swapped for a symbolic link, or turned into a device or pipe, is refused."""
    confined = task.get("confined")
    if not confined:
        return None
    path = task.get("path") or task.get("dumps_dir") or ""
    if os.path.realpath(path) != confined or path != confined:
        return f"input {os.path.basename(confined)!r} changed since it was accepted (now a link elsewhere): refused"
    try:
        st = os.lstat(confined)
    except OSError as exc:
        return f"input {os.path.basename(confined)!r} is gone since it was accepted ({exc.strerror})"
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return f"input {os.path.basename(confined)!r} is not a regular file or folder: refused"
    return None


def run_task(task: dict[str, Any]) -> dict[str, Any]:
    """Run one task; never raises (see the module docstring).

    Error messages name an uploaded file by its name only: the server's upload folder (``upload_dir``) is
    taken out of them.
    """
    fn = _KINDS.get(task.get("kind", ""))
    if fn is None:
        return _err(500, f"unknown task kind {task.get('kind')!r}")
    hide = task.get("upload_dir")

    def err(status: int, msg: str) -> dict[str, Any]:
        return _err(status, msg.replace(hide.rstrip("/") + "/", "") if hide else msg)

    moved = _moved(task)
    if moved is not None:
        return err(403, moved)
    try:
        input_errors = _input_errors()
        try:
            return fn(task)
        except input_errors as exc:
            return err(422, str(exc) or exc.__class__.__name__)
    except (ValueError, FileNotFoundError, NotADirectoryError) as exc:
        return err(422, f"{exc.__class__.__name__}: {exc}")
    except MemoryError:
        return err(507, "the analysis ran out of memory")
    except Exception as exc:  # noqa: BLE001 - a worker reports every failure as a result, never dies of one
        if is_disk_full(exc):  # e.g. the recovery history or a knowledge-base write
            return err(507, disk_full_message(f"the analysis ({exc.__class__.__name__})"))
        log.error("task %s failed: %s", task.get("kind"), traceback.format_exc(limit=20))
        return err(500, f"internal error while analysing ({exc.__class__.__name__}: {str(exc)[:500]})")


def warm_up(kb_cfg: dict[str, Any] | None = None) -> None:
    """Load what every diagnosis needs once per process: a tiny log through the pipeline (catalog,
    policy, template miner) and, when configured, the knowledge base with its model."""
    with tempfile.TemporaryDirectory(prefix="diag-warm-") as tmp:
        p = Path(tmp) / "warmup.log"
        p.write_text("Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n"
                     "RuntimeError: CUDA error: an illegal memory access was encountered\n", encoding="utf-8")
        run_task({"kind": "diagnose", "path": str(p), "job_id": "warmup", "recovery": True, "kb": kb_cfg})


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent_pid: int, poll_s: float = 1.0) -> None:
    """End this process when the process ``parent_pid`` (its parent) ends, however it ends (SIGKILL too).

    Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, so the kernel kills this process the moment its parent
    (strictly: the parent's thread that started it) exits, even while this one is busy in native code.
    Everywhere, and as a second guard: a daemon thread that checks every ``poll_s`` seconds whether the
    parent is still ``os.getppid()`` and exits otherwise. Exits at once if the parent is already gone.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
                log.warning("prctl(PR_SET_PDEATHSIG) failed: errno %d", ctypes.get_errno())
        except (OSError, AttributeError) as exc:
            log.warning("prctl unavailable: %s", exc)

    def watch() -> None:
        while os.getppid() == parent_pid:
            threading.Event().wait(poll_s)
        os._exit(1)

    if os.getppid() != parent_pid:  # the parent died before the request above took effect
        os._exit(1)
    threading.Thread(target=watch, name="diag-parent-watch", daemon=True).start()


def worker_main(conn: Connection, kb_cfg: dict[str, Any] | None, parent_pid: int | None = None) -> None:
    """Entry point of a worker process: warm up, say ``ready``, then answer tasks until the pipe closes.
    With ``parent_pid`` (the server's pid) the worker ends when the server does (:func:`die_with_parent`)."""
    if parent_pid is not None:
        die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when workers stop
    logging.basicConfig(level=logging.WARNING)
    try:
        warm_up(kb_cfg)
    except Exception:  # noqa: BLE001 - a failed warm-up shows up on the first real task
        log.warning("warm-up failed: %s", traceback.format_exc(limit=5))
    conn.send(("ready", os.getpid()))
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        conn.send(run_task(task))
