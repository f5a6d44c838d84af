"""What a worker runs: one call into the shared core per job kind, and nothing else.

A task is a JSON-able dict (it is stored with the job, so a restarted service can run it again):

- ``{"kind": "diagnose", "path", "job_id", "exclude", "ingest", "recovery", "platform", "history_path", "kb", "llm"}``
  → :func:`diag_service.pipeline.diagnose` (with its knowledge-base step when ``kb`` is set; with the
  hashing embedder the retrieval is added after it through :func:`diag_service.localize.combine_retrieval`);
- ``{"kind": "hang", "dumps_dir", "min_stuck_snapshots"}`` → :func:`diag_service.hang.analyze_hang`;
- ``{"kind": "slow", "path", "world_size"}`` → :func:`diag_service.slow.analyze_slow`;
- ``{"kind": "etpr", "path", "by", "slow_tolerance"}`` → :mod:`diag_service.etpr` (load, ledger, report).

:func:`run_task` never raises: it returns ``{"ok": True, "result": <JSON text>, ...}`` or
``{"ok": False, "status": <HTTP status>, "error": <message>}``. Models and catalogs load once per
process (the pipeline caches its catalog and policy; the knowledge base is kept here).
"""

from __future__ import annotations

import logging
import os
import signal
import tempfile
import threading
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

log = logging.getLogger("diag_service.service.worker")

_kb_lock = threading.Lock()
_kb_cache: dict[str, Any] = {}


def knowledge_base(cfg: dict[str, Any]) -> Any:
    """The process's :class:`diag_service.kb.KnowledgeBase` for ``cfg`` (``home``, ``embedder``), opened once.

    With the MiniLM embedder this is the kb module's own :func:`~diag_service.kb.default_kb` (the one the
    pipeline consults, so the model loads once per process; see :func:`use_kb_home`).
    """
    from diag_service.kb import HashingEmbedder, KBConfig, KnowledgeBase, default_kb

    if cfg.get("embedder", "minilm") == "minilm":
        use_kb_home(cfg)
        return default_kb()
    key = f"{cfg.get('home')}|{cfg.get('embedder')}"
    with _kb_lock:
        kb = _kb_cache.get(key)
        if kb is None:
            conf = KBConfig(home=Path(cfg["home"])) if cfg.get("home") else KBConfig()
            embedder = HashingEmbedder() if cfg.get("embedder") == "hashing" else None
            kb = KnowledgeBase(conf, embedder)
            if kb.store.count() == 0:
                kb.build()
            _kb_cache[key] = kb
        return kb


def _ok(result: str, **extra: Any) -> dict[str, Any]:
    return {"ok": True, "result": result, **extra}


def _err(status: int, message: str) -> dict[str, Any]:
    return {"ok": False, "status": status, "error": message}


def _diagnose(task: dict[str, Any]) -> dict[str, Any]:
    from diag_service.ingest import IngestLimits
    from diag_service.pipeline import DiagnoseRequest, diagnose

    limits = IngestLimits(**task["ingest"]) if task.get("ingest") else None
    kb_cfg = task.get("kb")
    # The pipeline consults the process's default knowledge base (MiniLM, $DIAG_HOME/kb) itself, before the
    # recovery plan; the hashing embedder (tests, tools) is not one it offers, so that case is added here.
    in_pipeline = bool(kb_cfg) and kb_cfg.get("embedder", "minilm") == "minilm"
    after = bool(kb_cfg) and not in_pipeline  # retrieval added here, and the summary after it (it may cite it)
    d = diagnose(DiagnoseRequest(
        path=task["path"], job_id=task.get("job_id"), exclude=task.get("exclude") or [], limits=limits,
        recovery=task.get("recovery", True), platform=task.get("platform", "kubernetes"),
        history_path=task.get("history_path"), kb=in_pipeline,
        llm=bool(task.get("llm")) and not after,
    ))
    if after:
        from diag_service.kb import KBError
        from diag_service.localize import combine_retrieval

        try:
            incidents, novel = knowledge_base(kb_cfg).similar_incidents(d, k=5)
        except (KBError, ValueError, OSError) as exc:
            d.input.warnings.append(f"knowledge base not consulted: {exc}")
        else:
            combine_retrieval(d, incidents, novel)
        if task.get("llm"):
            from diag_service.llm import summarize

            d.narrative = summarize(d)
    return _ok(d.model_dump_json(), category=d.category.value, failure_mode=d.failure_mode.value,
               summary=d.root_cause.summary, timings_ms=d.timings_ms)


def _hang(task: dict[str, Any]) -> dict[str, Any]:
    from diag_service.hang import HangRequest, analyze_hang

    rep = analyze_hang(HangRequest(dumps_dir=task["dumps_dir"], min_stuck_snapshots=task.get("min_stuck_snapshots", 3)))
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
        from diag_service.hang.dumps import DumpError

        errs.append(DumpError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(errs)


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
        log.error("task %s failed: %s", task.get("kind"), traceback.format_exc(limit=20))
        return err(500, f"internal error while analysing ({exc.__class__.__name__}: {str(exc)[:500]})")


def use_kb_home(kb_cfg: dict[str, Any] | None) -> None:
    """Point the process's default knowledge base (the one the pipeline consults) at ``kb_cfg["home"]``.

    The knowledge base lives in ``$DIAG_HOME/kb``; a configured home is exported as ``DIAG_HOME`` for
    this process (a worker process, or the whole server in thread mode).
    """
    if kb_cfg and kb_cfg.get("home") and kb_cfg.get("embedder", "minilm") == "minilm":
        os.environ["DIAG_HOME"] = str(kb_cfg["home"])


def warm_up(kb_cfg: dict[str, Any] | None = None) -> None:
    """Load what every diagnosis needs once per process: a tiny log through the pipeline (catalog,
    policy, template miner) and, when configured, the knowledge base with its model."""
    with tempfile.TemporaryDirectory(prefix="diag-warm-") as tmp:
        p = Path(tmp) / "warmup.log"
        p.write_text("Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n"
                     "RuntimeError: CUDA error: an illegal memory access was encountered\n", encoding="utf-8")
        run_task({"kind": "diagnose", "path": str(p), "job_id": "warmup", "recovery": True, "kb": kb_cfg})


def worker_main(conn: Connection, kb_cfg: dict[str, Any] | None) -> None:
    """Entry point of a worker process: warm up, say ``ready``, then answer tasks until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when workers stop
    logging.basicConfig(level=logging.WARNING)
    use_kb_home(kb_cfg)
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
