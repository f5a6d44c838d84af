"""Configuration of ``diag serve``: one pydantic-settings model, read from a YAML/JSON file and ``DIAG_*`` variables.

:class:`Settings` is a :class:`pydantic_settings.BaseSettings`: every field can be given as
``DIAG_<FIELD>`` (``DIAG_WORKERS=4``), a nested one as ``DIAG_<FIELD>_<SUBFIELD>``
(``DIAG_SLACK_BOT_TOKEN``, ``DIAG_LIMITS_MAX_MEMBERS``), lists and mappings as JSON (``DIAG_TOKENS``,
``DIAG_WEBHOOKS``) except the path and name lists noted on their fields. :func:`load_settings` layers
them: call arguments, then ``DIAG_*`` variables, then the settings file, then the defaults.

Secrets (bearer tokens, the Slack signing secret and bot token) are :class:`~pydantic.SecretStr`, so
they never show in a ``repr``, a log line or ``/openapi.json``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from diag_service.limits import BundleLimits
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
    """The service's limits on uploaded bundles: the upload's own size and longest admitted line, and the
    service's values of the bundle bounds (:class:`~diag_service.limits.BundleLimits`, tighter than the
    CLI's) that both its admission check and the ingest of its diagnoses apply (:meth:`ingest_limits`).
    Each refusal is a 4xx naming the setting."""

    model_config = ConfigDict(extra="forbid")

    max_upload_bytes: int = Field(default=1 << 30, ge=1024, description="Compressed bytes on the wire.")
    max_members: int = Field(default=20_000, ge=1, description="Files in an archive, nested ones included.")
    max_unpacked_bytes: int = Field(default=8 << 30, ge=1024, description="Total decompressed bytes.")
    max_ratio: float = Field(default=100.0, ge=2, description="Decompressed/compressed ratio of one member, and of "
                                                              "the whole upload...")
    ratio_floor_bytes: int = Field(default=16 << 20, ge=0, description="...once it is past this many bytes.")
    max_line_bytes: int = Field(default=8 << 20, ge=4096, description="Longest line accepted (ingest cuts at 1 MiB).")
    max_nesting: int = Field(default=1, ge=0, description="Levels of archives inside the upload that are opened "
                                                          "(BundleLimits.max_nesting).")

    def ingest_limits(self) -> BundleLimits:
        """The bundle bounds these settings give (decompressed total, ratio and its floor, members, nesting):
        the one walk of a bundle applies them to refuse at admission and to salvage in ingest, so ingest
        never reads what admission did not inspect. The longest line is not one of them on purpose: admission
        refuses a line longer than ``max_line_bytes``, ingest cuts lines at its own 1 MiB for memory and
        display."""
        return BundleLimits(max_total_bytes=self.max_unpacked_bytes, max_ratio=self.max_ratio,
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
    user_scopes: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Slack user id (U…/W…) -> the service scopes that user has in the bot: read (/diag and mentions "
                    "of a stored diagnosis), diagnose (diagnose attached or on-disk logs), kb:write (Confirm / Correct).",
    )
    default_scopes: list[str] = Field(
        default_factory=list,
        description="Scopes of a Slack user not in user_scopes. Default: none (such a user is told to ask for access).",
    )

    @field_validator("user_scopes")
    @classmethod
    def _slack_users(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for user, scopes in v.items():
            if not re.fullmatch(r"[UW][A-Z0-9]{1,31}", user):
                raise ValueError(f"{user[:40]!r} is not a Slack user id (U… or W…, upper-case letters and digits)")
            TokenSpec._known_scopes(scopes)
        return v

    @field_validator("default_scopes")
    @classmethod
    def _default_scopes(cls, v: list[str]) -> list[str]:
        return TokenSpec._known_scopes(v)

    def scopes_of(self, user_id: str) -> frozenset[str]:
        """The scopes of a Slack user (``user_scopes``, else ``default_scopes``)."""
        return frozenset(self.user_scopes.get(user_id, self.default_scopes))

    @property
    def enabled(self) -> bool:
        return self.signing_secret is not None and self.bot_token is not None


#: Host names the service answers to by default: this machine's loopback names (``allowed_hosts``).
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


def _split_list(v: Any, sep: str) -> Any:
    """A ``sep``-separated string (from a ``DIAG_*`` variable) as a list without empty items; lists pass through."""
    if isinstance(v, str):
        return [x.strip() for x in v.split(sep) if x.strip()]
    return v


class Settings(BaseSettings):
    """Everything ``create_app`` needs. Defaults suit one replica on one machine.

    Constructing it (``Settings()``, ``Settings.model_validate({...})``) also reads ``DIAG_*`` variables
    for the fields not given; :func:`load_settings` adds a settings file and an explicit environment.
    """

    model_config = SettingsConfigDict(
        extra="forbid", env_prefix="DIAG_", env_nested_delimiter="_", env_nested_max_split=1, env_ignore_empty=True,
    )

    data_dir: Path = Field(default_factory=default_data_dir, description="Uploads, the SQLite database, the recovery history.")
    database_url: str | None = Field(default=None, description="SQLAlchemy URL; default sqlite:///<data_dir>/diag.sqlite.")
    replica_id: str = Field(default_factory=socket.gethostname, description="Owner of queued work (restart recovery).")
    allowed_roots: Annotated[list[Path], NoDecode] = Field(
        default_factory=list, description="Path requests must resolve under one of these (DIAG_ALLOWED_ROOTS: "
                                          "os.pathsep-separated).")
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
    lease_s: float = Field(default=30, ge=1, description="A replica renews its jobs' leases every lease_s/3 seconds; "
                           "another replica takes over a job whose lease lapsed (its replica died).")

    tokens: Annotated[list[TokenSpec], NoDecode] = Field(
        default_factory=list, description="Empty: no authentication (loopback use only). DIAG_TOKENS: a JSON list.")
    rate_per_minute: float = Field(default=600, gt=0, description="Requests per minute per token (or client address).")
    rate_burst: int = Field(default=120, ge=1)
    auth_failures_max: int = Field(default=10, ge=1, description="Failed authentications one client address may make "
                                   "at once; past it 429 until the allowance refills (auth_failures_window_s).")
    auth_failures_window_s: float = Field(default=300, gt=0, description="Seconds in which a locked-out address "
                                          "regains its whole auth_failures_max allowance.")

    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(LOOPBACK_HOSTS),
        description="Host header names served (others get 400; '*.example.org' for a domain, '*' for any). "
                    "public_url's host is added. DIAG_ALLOWED_HOSTS: comma-separated.")
    allowed_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Other web origins (scheme://host[:port]) whose pages may send POSTs; the "
                                          "service's own origin and public_url's are always allowed. Comma-separated.")
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Addresses or networks (CIDR) of reverse proxies whose X-Forwarded-For and "
                                          "X-Forwarded-Proto are believed; empty: none. Comma-separated.")

    kb_enabled: bool = True
    kb_home: Path | None = Field(default=None, description="Knowledge-base data folder (default: the kb's own default).")
    kb_embedder: Literal["minilm", "hashing"] = "minilm"

    llm: bool = Field(default=True, description="End each diagnosis with a local model's cited summary (models/llm.yaml); "
                      "without a usable model the deterministic summary is used.")

    recovery: bool = True
    platform: Literal["kubernetes", "volcano", "slurm", "ray", "torchrun"] | None = Field(
        default=None, description="Scheduler whose commands recovery plans carry; unset: the one the logs show, as "
                                  "`diag diagnose` does (torchrun's manual steps when they show none).")
    recovery_history: bool = Field(default=True, description="Record recommendations in <data_dir>/recovery_history.sqlite.")
    recovery_policy: Path | None = Field(
        default=None, description="Recovery policy file (default: the built-in knowledge_base/recovery_policy.yaml); "
                                  "its execution section decides whether live plans are executed (with DIAG_EXECUTOR=shell).")

    slow_streams_max: int = Field(default=256, ge=1, description="Live step-record streams held in memory.")
    live: LiveSettings = Field(default_factory=LiveSettings, description="Live jobs fed by node agents (diag watch).")
    slack: SlackSettings = Field(default_factory=SlackSettings)
    webhooks: list[WebhookSpec] = Field(default_factory=list)
    alert_repeat_s: float = Field(default=6 * 3600, ge=0, description="One message per incident within this window.")

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then ``DIAG_*`` variables (``load_settings(env=...)`` or the process's), then the settings file."""
        return init_settings, _EnvSource(settings_cls), _FileSource(settings_cls)

    @field_validator("allowed_roots", mode="before")
    @classmethod
    def _split_roots(cls, v: Any) -> Any:
        return _split_list(v, os.pathsep)

    @field_validator("allowed_roots")
    @classmethod
    def _absolute_roots(cls, v: list[Path]) -> list[Path]:
        return [Path(os.path.realpath(p.expanduser())) for p in v]

    @field_validator("tokens", mode="before")
    @classmethod
    def _tokens_json(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                return json.loads(v)
            except json.JSONDecodeError as exc:
                raise ValueError(f"DIAG_TOKENS is not a JSON list: {exc.msg}") from None
        return v

    @field_validator("allowed_hosts", "allowed_origins", "trusted_proxies", mode="before")
    @classmethod
    def _split_names(cls, v: Any) -> Any:
        return _split_list(v, ",")

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names(cls, v: list[str]) -> list[str]:
        out = []
        for h in v:
            name = h.strip().lower().removeprefix("[").removesuffix("]")
            if not name or any(c in name for c in "/ @?#") or (":" in name and not _is_ip(name)):
                raise ValueError(f"allowed_hosts: {h!r} is not a host name or address (no scheme, port or path)")
            if "*" in name and name != "*" and not (name.startswith("*.") and "*" not in name[2:]):
                raise ValueError(f"allowed_hosts: {h!r}: a wildcard is '*' or a leading '*.'")
            out.append(name)
        return out

    @field_validator("allowed_origins")
    @classmethod
    def _origins(cls, v: list[str]) -> list[str]:
        out = []
        for o in v:
            parts = urlsplit(o.strip().lower())
            if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") \
                    or parts.query or parts.fragment:
                raise ValueError(f"allowed_origins: {o!r} is not an origin (scheme://host[:port])")
            out.append(origin_key(parts.scheme, parts.hostname, parts.port))
        return out

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, v: list[str]) -> list[str]:
        for p in v:
            try:
                ipaddress.ip_network(p, strict=False)
            except ValueError:
                raise ValueError(f"trusted_proxies: {p!r} is not an IP address or network") from None
        return v

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'diag.sqlite'}"

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"

    @property
    def auth_required(self) -> bool:
        return bool(self.tokens)

    @property
    def trusted_hosts(self) -> list[str]:
        """``allowed_hosts`` and the host of ``public_url`` (lower case, IPv6 without brackets)."""
        hosts = list(self.allowed_hosts)
        if self.public_url and (h := urlsplit(self.public_url).hostname):
            hosts.append(h.lower())
        return hosts

    @property
    def trusted_origins(self) -> list[str]:
        """``allowed_origins`` and the origin of ``public_url``, as :func:`origin_key` gives them."""
        origins = list(self.allowed_origins)
        if self.public_url:
            parts = urlsplit(self.public_url)
            if parts.scheme in ("http", "https") and parts.hostname:
                origins.append(origin_key(parts.scheme, parts.hostname, parts.port))
        return origins


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def origin_key(scheme: str, host: str, port: int | None) -> str:
    """``scheme://host:port`` with the scheme's default port filled in (RFC 6454 origin tuple), lower case."""
    return f"{scheme.lower()}://{host.lower()}:{port or (443 if scheme.lower() == 'https' else 80)}"


#: What :func:`load_settings` hands to the two sources below for one construction: (file, environment).
_LOADING: ContextVar[tuple[Path | None, Mapping[str, str] | None]] = ContextVar("diag_settings_loading",
                                                                                default=(None, None))


class _EnvSource(EnvSettingsSource):
    """``DIAG_*`` variables from ``load_settings(env=...)`` when given, else from the process environment."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        env = _LOADING.get()[1]
        if env is None:
            return super()._load_env_vars()
        return {(k if self.case_sensitive else k.lower()): v for k, v in env.items()
                if not (self.env_ignore_empty and v == "")}


class _FileSource(PydanticBaseSettingsSource):
    """The settings file of :func:`load_settings` (YAML, or JSON by its ``.json`` suffix); none otherwise."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = _LOADING.get()[0]
        if path is None:
            return {}
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"cannot read settings file {path}: {exc}") from exc
        loaded = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        if loaded is not None and not isinstance(loaded, dict):
            raise ValueError(f"{path}: the settings file must hold a mapping")
        return loaded or {}


def load_settings(path: str | Path | None = None, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Settings from ``overrides`` (``None`` values skipped), then ``DIAG_*`` variables, then a YAML or JSON
    file (optional), then the defaults.

    ``env``: the variables to read (default ``os.environ``). Each field is ``DIAG_<FIELD>``; the ones in
    use: ``DIAG_DATA_DIR``, ``DIAG_DATABASE_URL``, ``DIAG_REPLICA_ID``, ``DIAG_PUBLIC_URL``,
    ``DIAG_WORKERS``, ``DIAG_WORKER_MODE``, ``DIAG_QUEUE_MAX``, ``DIAG_KB_HOME``, ``DIAG_KB_EMBEDDER``,
    ``DIAG_LLM``, ``DIAG_ALLOWED_ROOTS`` (``os.pathsep``-separated), ``DIAG_TOKENS`` (JSON list of
    ``{"name", "token", "scopes"}``), ``DIAG_ALLOWED_HOSTS``, ``DIAG_ALLOWED_ORIGINS``,
    ``DIAG_TRUSTED_PROXIES`` (comma-separated), ``DIAG_SLACK_SIGNING_SECRET``, ``DIAG_SLACK_BOT_TOKEN``,
    ``DIAG_SLACK_ALERT_CHANNEL``. Empty variables count as unset. Raises :class:`pydantic.ValidationError`
    (a ``ValueError``) or ``ValueError`` naming the offending field, variable or file.
    """
    token = _LOADING.set((Path(path) if path is not None else None, env))
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    finally:
        _LOADING.reset(token)
