"""Incident records: the YAML schema of ``knowledge_base/incidents/*.yaml`` and its validating loader.

A file holds a version and a list of incidents::

    version: 1
    incidents:
      - id: xid79-fallen-off-bus            # unique across all files; [a-z0-9][a-z0-9._-]*
        title: GPU fell off the PCIe bus (Xid 79)
        failure_mode: fail_stop
        category: gpu_hardware
        family: gpu-fell-off-bus             # records with the same root cause share a family
        evidence:                            # log lines exactly as the framework/driver prints them
          - 'NVRM: Xid (PCI:0000:3b:00): 79, pid=2121, GPU has fallen off the bus.'
        root_cause: The GPU stopped answering on PCIe ...
        recovery: {level: L3, action: Cordon the node, ...}
        references: [https://docs.nvidia.com/deploy/xid-errors/index.html]
        tags: [xid, pcie]

Loading validates every field with pydantic (unknown keys are refused) and checks that ids are
unique across files; any problem raises :class:`RecordError` whose message names the file, the
incident (index and id) and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from diag_service.domain import Category, FailureMode, RecoveryLevel
from diag_service.errors import DiagError, ErrorKind
from diag_service.resources import builtin
from diag_service.yamlio import load_yaml_model, validation_message

RECORD_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{2,95}$"
#: Ids of records created from operator feedback start with this prefix; seed ids must not.
FEEDBACK_PREFIX = "fb-"

EvidenceLine = Annotated[str, StringConstraints(min_length=3, max_length=2000)]
Tag = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.+-]{0,40}$")]


#: What to tell a user whose install lacks the retrieval packages (sentence-transformers, faiss-cpu).
KB_EXTRA_HINT = "similar-incident retrieval needs the [kb] extra: pip install 'diag-service[kb]'"

class KBError(DiagError):
    """Base class of every knowledge-base error; the message says what to do."""

    kind = ErrorKind.UNAVAILABLE


class RecordError(KBError):
    """An incident file is malformed; the message names the file, the incident and the field."""

    kind = ErrorKind.CONFIG


class Recovery(BaseModel):
    """What fixed the incident, and at which level (L0 observe … L4 hand to the job owner)."""

    model_config = ConfigDict(extra="forbid")

    level: RecoveryLevel
    action: str = Field(min_length=5, max_length=2000)


class IncidentRecord(BaseModel):
    """One known incident: what it looks like in the logs, why it happened, what fixed it."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=RECORD_ID_PATTERN)
    title: str = Field(min_length=5, max_length=200)
    failure_mode: FailureMode
    category: Category
    family: str | None = Field(
        default=None, pattern=r"^[a-z0-9][a-z0-9._-]{1,80}$",
        description="Records sharing a root cause share a family (used to calibrate novelty).",
    )
    evidence: list[EvidenceLine] = Field(min_length=1, max_length=40)
    root_cause: str = Field(min_length=10, max_length=4000)
    recovery: Recovery
    references: list[str] = Field(default_factory=list, max_length=20)
    tags: list[Tag] = Field(default_factory=list, max_length=20)

    @field_validator("references")
    @classmethod
    def _urls(cls, v: list[str]) -> list[str]:
        for ref in v:
            if not ref.startswith(("https://", "http://")) or " " in ref:
                raise ValueError(f"reference must be an http(s) URL without spaces: {ref!r}")
        return v


class SeedIncident(IncidentRecord):
    """A record from ``knowledge_base/incidents``: references are required, feedback ids are reserved."""

    references: list[str] = Field(min_length=1, max_length=20)

    @field_validator("id")
    @classmethod
    def _not_feedback(cls, v: str) -> str:
        if v.startswith(FEEDBACK_PREFIX):
            raise ValueError(f"ids starting with {FEEDBACK_PREFIX!r} are reserved for operator feedback records")
        return v


class IncidentFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(ge=1, le=1)
    incidents: list[dict] = Field(default_factory=list)


def default_incidents_dir() -> Path:
    """The built-in ``knowledge_base/incidents`` (:func:`diag_service.resources.builtin`)."""
    return builtin("knowledge_base", "incidents")


def load_incident_file(path: Path) -> list[SeedIncident]:
    """Load and validate one incident file. Raises :class:`RecordError` naming ``path``."""
    parsed, _text, node = load_yaml_model(path, IncidentFile, RecordError)
    out: list[SeedIncident] = []
    for i, item in enumerate(parsed.incidents):
        rid = item.get("id", "?") if isinstance(item, dict) else "?"
        try:
            out.append(SeedIncident.model_validate(item))
        except ValidationError as exc:
            where = validation_message(str(path), node, exc, base=("incidents", i))
            raise RecordError(f"{where} (incident #{i + 1}, id {rid!r})") from exc
    return out


def load_records(directory: str | Path | None = None) -> list[SeedIncident]:
    """Load every ``*.yaml`` under ``directory`` (default :func:`default_incidents_dir`), in file order.

    Raises :class:`RecordError` if the folder has no incident file, a file is malformed, or an id
    is defined twice (the message names both files).
    """
    d = Path(directory) if directory is not None else default_incidents_dir()
    if not d.is_dir():
        raise RecordError(f"incident folder not found: {d}")
    files = sorted(d.glob("*.yaml"))
    if not files:
        raise RecordError(f"no incident files (*.yaml) in {d}")
    seen: dict[str, str] = {}
    records: list[SeedIncident] = []
    for f in files:
        for rec in load_incident_file(f):
            if rec.id in seen:
                raise RecordError(f"{f}: incident id {rec.id!r} already defined in {seen[rec.id]}")
            seen[rec.id] = f.name
            records.append(rec)
    return records
