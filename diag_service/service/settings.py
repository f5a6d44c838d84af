"""Configuration of ``diag serve``: one pydantic model, read from a YAML/JSON file and ``DIAG_*`` variables.

Secrets (bearer tokens, the Slack signing secret and bot token) are :class:`~pydantic.SecretStr`, so
they never show in a ``repr``, a log line or ``/openapi.json``.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from diag_service.ingest.bundle import IngestLimits
from diag_service.live.settings import LiveSettings
from diag_service.resources import data_home

#: Scopes a bearer token can carry. ``read``: GET endpoints and pages; ``diagnose``: submit work;
#: ``kb:write``: knowledge-base writes (feedback, add); ``agent``: node agents posting live batches.
SCOPES = ("read", "diagnose", "kb:write", "agent")


def default_data_dir() -> Path:
    """``$DIAG_HOME/service``, else ``$XDG_DATA_HOME/diag/service``, else ``~/.local/share/diag/service``."""
    return data_home() / "service"


class TokenSpec(BaseModel):
    """One bearer token. ``name`` is what logs and metrics show; the token itself never is."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._@-]+$")
    token: SecretStr
    scopes: list[str] = Field(default_factory=lambda: ["read"])

    @field_validator("token")
    @classmethod
    def _long_enough(cls, v: SecretStr) -> SecretStr:
        if len(v.get_secret_value()) < 16:
            raise ValueError("a token must be at least 16 characters")
        return v

    @field_validator("scopes")
    @classmethod
    def _known_scopes(cls, v: list[str]) -> list[str]:
        bad = [s for s in v if s not in SCOPES]
        if bad:
            raise ValueError(f"unknown scope(s) {bad}; known: {', '.join(SCOPES)}")
        return v


class WebhookSpec(BaseModel):
    """An outgoing alert webhook. ``format``: ``slack`` (also Slack-compatible receivers), ``mattermost``, ``lark``."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(pattern=r"^https?://")
    format: Literal["slack", "mattermost", "lark"] = "slack"


class UploadLimits(BaseModel):
    """Refusal thresholds for uploaded bundles (each refusal is a 4xx naming the limit)."""

    model_config = ConfigDict(extra="forbid")

    max_upload_bytes: int = Field(default=1 << 30, ge=1024, description="Compressed bytes on the wire.")
    max_members: int = Field(default=20_000, ge=1, description="Files in an archive.")
    max_unpacked_bytes: int = Field(default=8 << 30, ge=1024, description="Total decompressed bytes.")
    max_ratio: float = Field(default=100.0, ge=2, description="Decompressed/compressed ratio of one member...")
    ratio_floor_bytes: int = Field(default=16 << 20, ge=0, description="...once it is past this many bytes.")
    max_line_bytes: int = Field(default=8 << 20, ge=4096, description="Longest line accepted (ingest cuts at 1 MiB).")
    max_nesting: int = Field(default=1, ge=0, description="Archives inside archives that are inspected.")

    def ingest_limits(self) -> IngestLimits:
        """The same limits as ingest takes them: the service's admission check and the ingest of its
        diagnoses apply one set (decompressed total, ratio and its floor, members, nesting), so ingest never
        reads what admission did not inspect. Line length differs on purpose: admission refuses a line
        longer than ``max_line_bytes``, ingest cuts lines at its own 1 MiB for memory and display."""
        return IngestLimits(max_total_bytes=self.max_unpacked_bytes, max_ratio=self.max_ratio,
                            ratio_floor_bytes=self.ratio_floor_bytes, max_members=self.max_members,
                            max_nesting=self.max_nesting)


class SlackSettings(BaseModel):
    """The chatops bot. Mounted at ``/slack/events`` when ``signing_secret`` and ``bot_token`` are set."""

    model_config = ConfigDict(extra="forbid")

    signing_secret: SecretStr | None = None
    bot_token: SecretStr | None = None
    api_base_url: str = Field(default="https://slack.com/api/", description="Slack Web API base (a fake in tests).")
    alert_channel: str | None = Field(default=None, description="Channel id for proactive hang/slow posts.")
    file_url_prefixes: list[str] = Field(
        default_factory=lambda: ["https://files.slack.com/"],
        description="Attached files are downloaded only from URLs starting with one of these.",
    )
    max_file_bytes: int = Field(default=256 << 20, ge=1024)
    wait_s: float = Field(default=600, gt=0, description="How long the bot waits for a diagnosis it queued.")

    @property
    def enabled(self) -> bool:
        return self.signing_secret is not None and self.bot_token is not None


class Settings(BaseModel):
    """Everything ``create_app`` needs. Defaults suit one replica on one machine."""

    model_config = ConfigDict(extra="forbid")

    data_dir: Path = Field(default_factory=default_data_dir, description="Uploads, the SQLite database, the recovery history.")
    database_url: str | None = Field(default=None, description="SQLAlchemy URL; default sqlite:///<data_dir>/diag.sqlite.")
    replica_id: str = Field(default_factory=socket.gethostname, description="Owner of queued work (restart recovery).")
    allowed_roots: list[Path] = Field(default_factory=list, description="Path requests must resolve under one of these.")
    public_url: str | None = Field(default=None, description="Base URL of the pages, for links in bot messages.")

    limits: UploadLimits = Field(default_factory=UploadLimits)
    sync_max_bytes: int = Field(default=16 << 20, ge=0, description="Uploads up to this size are answered with the result.")
    sync_wait_s: float = Field(default=30, ge=0, description="Longest wait for a small bundle before answering 202.")
    body_read_timeout_s: float = Field(default=30, gt=0, description="Longest pause between two chunks of a body.")
    request_timeout_s: float = Field(default=120, gt=0, description="Whole-request deadline (504 after it).")
    max_concurrent_uploads: int = Field(default=8, ge=1)
    max_json_bytes: int = Field(default=32 << 20, ge=1024, description="JSON bodies (step records, events).")

    workers: int = Field(default=2, ge=1, le=64)
    worker_mode: Literal["process", "thread"] = "process"
    queue_max: int = Field(default=64, ge=1, description="Queued + running jobs; beyond it new work gets 503.")
    job_timeout_s: float = Field(default=900, gt=0, description="A job running longer is stopped (process mode).")
    max_attempts: int = Field(default=3, ge=1, description="Runs of one job (restarts, crashes) before giving up.")
    keep_uploads: bool = Field(default=False, description="Keep uploaded bundles after their diagnosis is stored.")

    tokens: list[TokenSpec] = Field(default_factory=list, description="Empty: no authentication (loopback use only).")
    rate_per_minute: float = Field(default=600, gt=0, description="Requests per minute per token (or client address).")
    rate_burst: int = Field(default=120, ge=1)

    kb_enabled: bool = True
    kb_home: Path | None = Field(default=None, description="Knowledge-base data folder (default: the kb's own default).")
    kb_embedder: Literal["minilm", "hashing"] = "minilm"

    llm: bool = Field(default=True, description="End each diagnosis with a local model's cited summary (models/llm.yaml); "
                      "without a usable model the deterministic summary is used.")

    recovery: bool = True
    platform: Literal["kubernetes", "volcano", "slurm"] = "kubernetes"
    recovery_history: bool = Field(default=True, description="Record recommendations in <data_dir>/recovery_history.sqlite.")

    slow_streams_max: int = Field(default=256, ge=1, description="Live step-record streams held in memory.")
    live: LiveSettings = Field(default_factory=LiveSettings, description="Live jobs fed by node agents (diag watch).")
    slack: SlackSettings = Field(default_factory=SlackSettings)
    webhooks: list[WebhookSpec] = Field(default_factory=list)
    alert_repeat_s: float = Field(default=6 * 3600, ge=0, description="One message per incident within this window.")

    @field_validator("allowed_roots")
    @classmethod
    def _absolute_roots(cls, v: list[Path]) -> list[Path]:
        return [Path(os.path.realpath(p.expanduser())) for p in v]

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'diag.sqlite'}"

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"

    @property
    def auth_required(self) -> bool:
        return bool(self.tokens)


_ENV_SCALARS = {
    "DIAG_DATA_DIR": "data_dir",
    "DIAG_DATABASE_URL": "database_url",
    "DIAG_REPLICA_ID": "replica_id",
    "DIAG_PUBLIC_URL": "public_url",
    "DIAG_WORKERS": "workers",
    "DIAG_WORKER_MODE": "worker_mode",
    "DIAG_QUEUE_MAX": "queue_max",
    "DIAG_KB_HOME": "kb_home",
    "DIAG_KB_EMBEDDER": "kb_embedder",
    "DIAG_LLM": "llm",
}


def load_settings(path: str | Path | None = None, env: dict[str, str] | None = None, **overrides: Any) -> Settings:
    """Settings from a YAML or JSON file (optional), then ``DIAG_*`` variables, then ``overrides``.

    Variables: ``DIAG_DATA_DIR``, ``DIAG_DATABASE_URL``, ``DIAG_REPLICA_ID``, ``DIAG_PUBLIC_URL``,
    ``DIAG_WORKERS``, ``DIAG_WORKER_MODE``, ``DIAG_QUEUE_MAX``, ``DIAG_KB_HOME``, ``DIAG_KB_EMBEDDER``,
    ``DIAG_ALLOWED_ROOTS`` (``os.pathsep``-separated), ``DIAG_TOKENS`` (JSON list of
    ``{"name", "token", "scopes"}``), ``DIAG_SLACK_SIGNING_SECRET``, ``DIAG_SLACK_BOT_TOKEN``,
    ``DIAG_SLACK_ALERT_CHANNEL``. Raises :class:`pydantic.ValidationError` or ``ValueError`` with the
    offending field or file.
    """
    env = dict(os.environ if env is None else env)
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"cannot read settings file {p}: {exc}") from exc
        loaded = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
        if loaded is not None and not isinstance(loaded, dict):
            raise ValueError(f"{p}: the settings file must hold a mapping")
        data.update(loaded or {})
    for var, key in _ENV_SCALARS.items():
        if env.get(var):
            data[key] = env[var]
    if env.get("DIAG_ALLOWED_ROOTS"):
        data["allowed_roots"] = [r for r in env["DIAG_ALLOWED_ROOTS"].split(os.pathsep) if r]
    if env.get("DIAG_TOKENS"):
        try:
            data["tokens"] = json.loads(env["DIAG_TOKENS"])
        except json.JSONDecodeError as exc:
            raise ValueError(f"DIAG_TOKENS is not a JSON list: {exc.msg}") from None
    slack = dict(data.get("slack") or {})
    for var, key in (("DIAG_SLACK_SIGNING_SECRET", "signing_secret"), ("DIAG_SLACK_BOT_TOKEN", "bot_token"),
                     ("DIAG_SLACK_ALERT_CHANNEL", "alert_channel")):
        if env.get(var):
            slack[key] = env[var]
    if slack:
        data["slack"] = slack
    data.update({k: v for k, v in overrides.items() if v is not None})
    return Settings.model_validate(data)
