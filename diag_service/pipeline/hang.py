"""Stack dumps read beside the job's logs: the one composition ``diag hang --logs`` and ``POST /v1/hang`` share.

Entry point: :func:`hang_with_logs` (dump folder and optional log bundle in, :class:`~diag_service.domain.HangReport`
out). The logs are diagnosed as ``diag diagnose`` reads them; when they show the hang (collective timeouts, or no
progress long before the job was stopped), fewer snapshots place the ranks (one is enough), which is how an on-call
engineer usually meets a hang: one ``py-spy dump`` per rank, taken once, and the logs.
"""

from __future__ import annotations

from pathlib import Path

from diag_service.domain import HangReport
from diag_service.hang import HangRequest, analyze_hang
from diag_service.ingest import BundleError
from diag_service.pipeline.run import DiagnoseRequest, diagnose


def hang_with_logs(dumps: str | Path, logs: str | Path | None = None, min_stuck_snapshots: int = 3) -> HangReport:
    """:func:`~diag_service.hang.analyze_hang` of ``dumps`` (a snapshot folder, a bundle with ``dumps/``), told by
    ``logs`` (a log folder or file; None: the dumps alone) whether the job hung. The logs' findings are added to the
    report's ``log_findings``; logs that cannot be read add one ``logs not read: ...`` line to its ``warnings``.

    Raises :class:`~diag_service.hang.analyzer.HangInputError` when ``dumps`` holds nothing to analyse."""
    notes: list[str] = []
    found: list[str] = []
    hung = False
    if logs is not None:
        try:
            d = diagnose(DiagnoseRequest(path=str(logs), recovery=False))
        except BundleError as exc:
            notes.append(f"logs not read: {exc}")
        else:
            found = list(d.findings)
            hung = d.hang_in_logs()
    rep = analyze_hang(HangRequest(dumps_dir=str(dumps), min_stuck_snapshots=min_stuck_snapshots, hung_from_logs=hung))
    rep.warnings.extend(notes)
    rep.log_findings = found
    return rep
