"""``diag serve`` settings on pydantic-settings: every ``DIAG_*`` variable of before still works, with the
same precedence (arguments, then variables, then the file), and every field now has its variable."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from diag_service.service.settings import LOOPBACK_HOSTS, Settings, load_settings


def test_each_existing_variable_sets_its_field(tmp_path: Path) -> None:
    env = {"DIAG_DATA_DIR": str(tmp_path / "d"), "DIAG_DATABASE_URL": "sqlite:////tmp/x.sqlite", "DIAG_REPLICA_ID": "r-2",
           "DIAG_PUBLIC_URL": "https://diag.example.com", "DIAG_WORKERS": "5", "DIAG_WORKER_MODE": "thread",
           "DIAG_QUEUE_MAX": "9", "DIAG_KB_HOME": str(tmp_path / "kb"), "DIAG_KB_EMBEDDER": "hashing", "DIAG_LLM": "false",
           "DIAG_ALLOWED_ROOTS": f"{tmp_path}{os.pathsep}{os.pathsep}/nonexistent",
           "DIAG_TOKENS": json.dumps([{"name": "ci", "token": "t" * 20, "scopes": ["read", "diagnose"]}]),
           "DIAG_SLACK_SIGNING_SECRET": "s" * 32, "DIAG_SLACK_BOT_TOKEN": "xoxb-" + "b" * 20,
           "DIAG_SLACK_ALERT_CHANNEL": "C0123"}
    s = load_settings(env=env)
    assert s.data_dir == tmp_path / "d" and s.database_url == "sqlite:////tmp/x.sqlite" and s.replica_id == "r-2"
    assert s.public_url == "https://diag.example.com" and s.workers == 5 and s.worker_mode == "thread"
    assert s.queue_max == 9 and s.kb_home == tmp_path / "kb" and s.kb_embedder == "hashing" and s.llm is False
    assert s.allowed_roots == [tmp_path.resolve(), Path("/nonexistent")]
    assert [(t.name, t.scopes) for t in s.tokens] == [("ci", ["read", "diagnose"])]
    assert s.slack.enabled and s.slack.alert_channel == "C0123"
    assert s.slack.bot_token is not None and s.slack.bot_token.get_secret_value() == "xoxb-" + "b" * 20


def test_defaults_and_empty_variables_are_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    s = load_settings(env={"DIAG_WORKERS": "", "DIAG_TOKENS": ""})
    assert s.workers == 2 and s.tokens == [] and not s.auth_required and s.queue_max == 64
    assert s.allowed_hosts == list(LOOPBACK_HOSTS) and s.trusted_proxies == [] and s.allowed_origins == []
    assert s.auth_failures_max == 10 and s.auth_failures_window_s == 300
    # the settings of a process: its own environment
    monkeypatch.setenv("DIAG_QUEUE_MAX", "11")
    assert Settings().queue_max == 11 and load_settings().queue_max == 11
    assert load_settings(env={}).queue_max == 64, "an explicit environment replaces the process's"


def test_precedence_arguments_then_variables_then_file(tmp_path: Path) -> None:
    cfg = tmp_path / "s.yaml"
    cfg.write_text("workers: 3\nqueue_max: 7\nlimits: {max_members: 10}\nslack: {alert_channel: C1}\n")
    s = load_settings(cfg, env={"DIAG_WORKERS": "5", "DIAG_SLACK_BOT_TOKEN": "xoxb-" + "x" * 20}, workers=None)
    assert s.workers == 5 and s.queue_max == 7 and s.limits.max_members == 10
    # a nested variable adds to the file's section instead of replacing it
    assert s.slack.alert_channel == "C1" and s.slack.bot_token is not None
    assert load_settings(cfg, env={"DIAG_WORKERS": "5"}, workers=6).workers == 6
    cfg.with_suffix(".json").write_text(json.dumps({"workers": 4}))
    assert load_settings(cfg.with_suffix(".json"), env={}).workers == 4
    with pytest.raises(ValueError, match="cannot read settings file"):
        load_settings(tmp_path / "missing.yaml", env={})


def test_every_field_has_a_variable_nested_ones_too() -> None:
    env = {"DIAG_LIMITS_MAX_MEMBERS": "7", "DIAG_RATE_BURST": "3", "DIAG_PLATFORM": "slurm",
           "DIAG_ALLOWED_HOSTS": "diag.example.com, *.corp.example", "DIAG_TRUSTED_PROXIES": "10.0.0.0/8,192.0.2.1",
           "DIAG_ALLOWED_ORIGINS": "https://grafana.example.com", "DIAG_AUTH_FAILURES_MAX": "4",
           "DIAG_WEBHOOKS": json.dumps([{"url": "https://hooks.example.com/x", "format": "lark"}])}
    s = load_settings(env=env)
    assert s.limits.max_members == 7 and s.limits.max_upload_bytes == 1 << 30 and s.rate_burst == 3
    assert s.platform == "slurm" and s.auth_failures_max == 4
    assert s.allowed_hosts == ["diag.example.com", "*.corp.example"] and s.trusted_proxies == ["10.0.0.0/8", "192.0.2.1"]
    assert s.allowed_origins == ["https://grafana.example.com:443"] and s.webhooks[0].format == "lark"


def test_bad_values_name_the_variable_or_field() -> None:
    with pytest.raises(ValueError, match="DIAG_TOKENS is not a JSON list"):
        load_settings(env={"DIAG_TOKENS": "not json"})
    with pytest.raises(ValidationError, match="at least 16"):
        load_settings(env={"DIAG_TOKENS": json.dumps([{"name": "x", "token": "short"}])})
    with pytest.raises(ValidationError, match="slack.signing_secrt"):  # a misspelt nested variable is not ignored
        load_settings(env={"DIAG_SLACK_SIGNING_SECRT": "s" * 32})
    with pytest.raises(ValidationError, match="allowed_hosts"):
        load_settings(env={"DIAG_ALLOWED_HOSTS": "https://diag.example.com/"})
    with pytest.raises(ValidationError, match="trusted_proxies"):
        load_settings(env={"DIAG_TRUSTED_PROXIES": "proxy.example.com"})
    with pytest.raises(ValidationError, match="allowed_origins"):
        load_settings(env={"DIAG_ALLOWED_ORIGINS": "grafana.example.com"})
    with pytest.raises(ValidationError, match="workers"):
        load_settings(env={"DIAG_WORKERS": "many"})
