"""The Parquet layout of the label rows (one fixed schema, every part the same), and reading it back."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import polars as pl

from diag_service.label.models import LabelRow

_S, _I, _F, _B, _LS = pl.String, pl.Int64, pl.Float64, pl.Boolean, pl.List(pl.String)

#: Column types of the output, in column order; the columns are exactly the fields of :class:`LabelRow`.
SCHEMA: dict[str, Any] = {
    "job_id": _S, "path": _S, "status": _S, "error": _S,
    "failure_mode": _S, "category": _S, "responsible": _S, "confidence": _F,
    "first_failing_rank": _I, "first_failing_node": _S, "faulty_nodes": _LS,
    "root_template_id": _S, "root_template": _S, "root_signature_ids": _LS, "root_cause": _S,
    "similar_incident_ids": _LS, "novel": _B, "recovery_level": _S,
    "summary": _S, "summary_source": _S,
    "ranks_seen": _I, "nodes_seen": _I, "files": _I, "bytes_read": _I, "warnings": _LS,
    "metadata": _S,
    "diag_version": _S, "signatures_version": _S, "recovery_policy_version": _S, "kb_version": _S, "model_version": _S,
    "versions": _S,
}


def rows_to_frame(rows: list[LabelRow]) -> pl.DataFrame:
    """The rows as a DataFrame with :data:`SCHEMA` (an empty list gives an empty frame with the schema)."""
    data = [r.model_dump(mode="json") for r in rows]
    return pl.DataFrame(data, schema=SCHEMA, orient="row") if data else pl.DataFrame(schema=SCHEMA)


def rows_to_parquet_bytes(rows: list[LabelRow]) -> bytes:
    """One Parquet file (zstd) holding ``rows``."""
    buf = io.BytesIO()
    rows_to_frame(rows).write_parquet(buf, compression="zstd", statistics=True)
    return buf.getvalue()


def read_labels(out: str | Path) -> pl.DataFrame:
    """Every row of an output folder (all its parts), sorted by job id, in :data:`SCHEMA`'s columns (a part written
    before a column was added reads it as null). Raises ``FileNotFoundError`` if it has none."""
    files = sorted(Path(out).glob("part-*.parquet"))
    if not files:
        raise FileNotFoundError(f"no part-*.parquet in {out}")
    frames = [pl.read_parquet(f) for f in files]
    frames.append(pl.DataFrame(schema=SCHEMA))  # every column, even when no part has it
    return pl.concat(frames, how="diagonal_relaxed").select(list(SCHEMA)).sort("job_id")
