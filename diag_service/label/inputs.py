"""List the jobs of an archive: a folder of job bundles, or a manifest (JSONL, CSV or Parquet).

Folder: every entry not starting with ``.`` is one job (a folder, an archive such as ``.tar.gz`` or
``.zip``, or one log file); its job id is the name without a known suffix (``job-17.tar.gz`` ->
``job-17``), or the full name where two entries would get the same id. Entries are listed in name
order, so ids and order do not depend on the file system.

Manifest: one job per line/row with ``path`` (relative paths are relative to the manifest's folder),
optional ``job_id`` (default: derived from the path as above) and optional ``metadata`` (an object);
any other column is metadata too. A line that cannot be read, has no path, or repeats a job id
becomes a job with ``input_error`` set (an error row in the output), never a failed run.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from diag_service.errors import DiagError, ErrorKind
from diag_service.jsonl import BadLine, iter_jsonl
from diag_service.label.models import Job

MANIFEST_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".parquet")
_STRIP = (".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".tar", ".zip", ".gz", ".log", ".txt", ".out", ".err")


class ArchiveError(DiagError, ValueError):
    """The archive cannot be listed at all (missing, not a folder or manifest, unreadable manifest)."""

    kind = ErrorKind.INPUT


def job_id_for(name: str) -> str:
    """The job id of an archive entry named ``name``: the name without one known suffix."""
    low = name.lower()
    for suffix in _STRIP:
        if low.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def discover_jobs(archive: str | Path, skip: list[str | Path] | None = None) -> list[Job]:
    """The jobs of ``archive`` (folder or manifest), in a stable order. ``skip``: paths never taken as jobs.

    Raises :class:`ArchiveError` when the archive is missing or is neither a folder nor a manifest.
    """
    root = Path(archive)
    if not root.exists():
        raise ArchiveError(f"no such archive: {root}")
    if root.is_dir():
        return _unique(_folder_jobs(root, {Path(s).resolve() for s in skip or []}))
    if root.name.lower().endswith(MANIFEST_SUFFIXES):
        return _unique(_manifest_jobs(root))
    raise ArchiveError(
        f"{root}: not a folder of job bundles nor a manifest ({', '.join(MANIFEST_SUFFIXES)}); "
        "to diagnose one bundle use `diag diagnose`"
    )


def _unique(jobs: list[Job]) -> list[Job]:
    """Guarantee one job per id (the ledger keys on it): a repeated id, which the rules above only make in
    contrived cases, gets ``~2``, ``~3``... so that no job is silently dropped."""
    seen: set[str] = set()
    out = []
    for j in jobs:
        jid, k = j.job_id, 2
        while jid in seen:
            jid, k = f"{j.job_id}~{k}", k + 1
        seen.add(jid)
        out.append(j if jid == j.job_id else j.model_copy(update={"job_id": jid}))
    return out


def _folder_jobs(root: Path, skip: set[Path]) -> list[Job]:
    entries = sorted(p for p in root.iterdir() if not p.name.startswith(".") and p.resolve() not in skip)
    ids = [job_id_for(p.name) for p in entries]
    taken: dict[str, int] = {}
    for i in ids:
        taken[i] = taken.get(i, 0) + 1
    return [Job(job_id=i if taken[i] == 1 else p.name, path=str(p.resolve())) for p, i in zip(entries, ids, strict=True)]


def _manifest_jobs(manifest: Path) -> list[Job]:
    name = manifest.name.lower()
    base = manifest.resolve().parent
    records: list[tuple[int, dict[str, Any] | None, str | None]] = []  # (line or row number, record, problem)
    try:
        if name.endswith(".parquet"):
            import polars as pl

            for n, rec in enumerate(pl.read_parquet(manifest).iter_rows(named=True), start=1):
                records.append((n, rec, None))
        elif name.endswith(".csv"):
            with manifest.open(newline="", encoding="utf-8-sig") as fh:
                for n, rec in enumerate(csv.DictReader(fh), start=2):
                    records.append((n, {k: v for k, v in rec.items() if k is not None and v not in (None, "")}, None))
        else:
            skipped: list[BadLine] = []
            records += [(n, rec, None) for n, rec in iter_jsonl(manifest, skipped)]
            records += [(b.line, None, b.reason) for b in skipped]
            records.sort(key=lambda r: r[0])
    except (OSError, ValueError, csv.Error) as exc:  # polars raises ValueError subclasses / ComputeError
        raise ArchiveError(f"cannot read manifest {manifest}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - polars' own exception types are not ValueError
        raise ArchiveError(f"cannot read manifest {manifest}: {type(exc).__name__}: {exc}") from exc

    jobs: list[Job] = []
    first_line: dict[str, int] = {}
    where = manifest.name
    for n, rec, problem in records:
        if rec is None:
            jobs.append(Job(job_id=f"{where}:{n}", path="", input_error=f"manifest line {n}: {problem}"))
            continue
        raw_path = rec.get("path")
        if not isinstance(raw_path, str) or not raw_path.strip():
            jid = str(rec.get("job_id") or f"{where}:{n}")
            jobs.append(Job(job_id=jid, path="", input_error=f"manifest line {n}: no 'path'"))
            continue
        p = Path(raw_path).expanduser()
        path = str(p if p.is_absolute() else base / p)
        jid = str(rec.get("job_id") or job_id_for(Path(raw_path.rstrip("/")).name))
        meta = rec.get("metadata")
        metadata: dict[str, Any] = dict(meta) if isinstance(meta, dict) else ({"metadata": meta} if meta is not None else {})
        metadata.update({k: v for k, v in rec.items() if k not in ("path", "job_id", "metadata")})
        if jid in first_line:
            jobs.append(Job(
                job_id=f"{jid}~{n}", path=path, metadata=metadata,
                input_error=f"manifest line {n}: duplicate job_id {jid!r} (first on line {first_line[jid]})",
            ))
            continue
        first_line[jid] = n
        jobs.append(Job(job_id=jid, path=path, metadata=metadata))
    return jobs
