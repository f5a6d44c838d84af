"""The pydantic models of batch labelling: a job to label, the options every worker shares, one output row.

A :class:`LabelRow` is built only from a :class:`~diag_service.domain.Diagnosis` (or, for a bundle
that cannot be diagnosed, from the error's reason), by the same code in every engine, so the local
process pool and Ray produce the same rows. It holds no timing or host detail: labelling the same
archive twice gives the same rows.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: Version of the row layout (columns and their meaning); bump when a column changes meaning or disappears (a column
#: added keeps it: :func:`diag_service.label.output.read_labels` reads an older part's missing column as null).
LABEL_SCHEMA = "label-row/1"

KBMode = Literal["auto", "on", "off"]


class Job(BaseModel):
    """One job of the archive: its id, the path of its bundle and the manifest's metadata.

    ``input_error`` is set when the archive's listing itself is wrong for this entry (an invalid or
    duplicate manifest line): the job becomes an error row without being diagnosed.
    """

    model_config = ConfigDict(frozen=True)

    job_id: str
    path: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    input_error: str | None = None


class LabelOptions(BaseModel):
    """What every worker needs to label a job the same way. Fields marked in :data:`ROW_OPTIONS` change rows.

    ``kb``: ``auto`` uses the knowledge base (:mod:`diag_service.kb`) when it imports and loads, ``on``
    requires it, ``off`` never loads it. ``job_timeout_s``: a bundle whose diagnosis takes longer becomes
    an error row (0: no limit; enforced where the worker runs jobs on its main thread).
    """

    model_config = ConfigDict(frozen=True)

    kb: KBMode = "auto"
    signatures_dir: str | None = None
    policy_path: str | None = None
    platform: str = "kubernetes"
    recovery: bool = True
    exclude: list[str] = Field(default_factory=list)
    job_timeout_s: float = Field(default=600.0, ge=0)

    def fingerprint(self) -> str:
        """The options that change rows, as canonical JSON (a resumed run must use the same)."""
        return json.dumps(self.model_dump(include=ROW_OPTIONS, mode="json"), sort_keys=True)


#: Options whose change would make rows of a resumed run disagree with the rows already written.
ROW_OPTIONS = {"kb", "signatures_dir", "policy_path", "platform", "recovery", "exclude"}


class LabelRow(BaseModel):
    """One output row: the label of one job, or the reason it could not be labelled (``status='error'``).

    ``root_template_id`` identifies the job's root-cause event template across jobs (a hash of the
    Drain3 template with its variable parts unified): jobs that share it form one cluster, and the
    cluster gets one ``summary`` (``--llm``), filled in when the output is written.
    """

    job_id: str
    path: str
    status: Literal["ok", "error"]
    error: str | None = None
    failure_mode: str | None = None
    category: str | None = None
    responsible: str | None = None
    confidence: float | None = None
    first_failing_rank: int | None = None
    first_failing_node: str | None = None
    faulty_nodes: list[str] = Field(default_factory=list)
    root_template_id: str | None = None
    root_template: str | None = None
    root_signature_ids: list[str] = Field(default_factory=list)
    root_cause: str | None = None
    similar_incident_ids: list[str] = Field(default_factory=list)
    novel: bool | None = None
    recovery_level: str | None = None
    summary: str | None = None
    summary_source: str | None = None
    ranks_seen: int | None = None
    nodes_seen: int | None = None
    files: int | None = None
    bytes_read: int | None = None
    warnings: list[str] = Field(default_factory=list)
    metadata: str = Field(default="{}", description="The manifest's metadata for the job, as JSON.")
    diag_version: str | None = None
    signatures_version: str | None = None
    recovery_policy_version: str | None = None
    kb_version: str | None = None
    model_version: str | None = None
    versions: str = Field(default="{}", description="Diagnosis.versions (plus kb and model when used), as JSON.")


class ClusterSummary(BaseModel):
    """The model's summary of one cluster (jobs with the same root-cause template), from its representative."""

    template_id: str
    job_id: str = Field(description="Representative: the cluster's smallest job id.")
    text: str
    source: str
    model: str | None = None
