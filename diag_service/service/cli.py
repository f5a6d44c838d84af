"""``diag serve``: run the HTTP service with uvicorn.

Register in the main CLI with ``app.command("serve")(serve)``. Exit codes (:mod:`diag_service.errors`):
3 for invalid settings or a refused bind address, 5 when the store cannot be opened.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from diag_service.errors import ConfigError

if TYPE_CHECKING:
    from diag_service.service.settings import Settings

err = Console(stderr=True)

#: Bind addresses that listen on every interface.
WILDCARDS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    """Whether a bind address reaches only this machine: ``localhost`` or a loopback IP (127.0.0.0/8, ::1)."""
    h = host.strip().lower().removeprefix("[").removesuffix("]")
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def bind_refusal(host: str, settings: Settings, allow_no_auth: bool = False) -> str | None:
    """Why ``diag serve`` will not bind ``host`` with ``settings``, or None.

    Without tokens every caller has every scope, so only a loopback address is allowed unless
    ``allow_no_auth`` says an authenticating proxy in front does that job.
    """
    if settings.auth_required or is_loopback(host) or allow_no_auth:
        return None
    return (f"no tokens are configured, so anyone who can reach {host!r} could read every diagnosis and submit work. "
            "Configure tokens (settings 'tokens' or DIAG_TOKENS), bind 127.0.0.1, or pass --allow-no-auth when an "
            "authenticating proxy is the only way in.")


def serve(
    host: Annotated[str, typer.Option(help="Address to bind (127.0.0.1: this machine only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8080,
    config: Annotated[Path | None, typer.Option(help="Settings file (YAML or JSON); DIAG_* variables override it.")] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Uploads, database and history (default $DIAG_HOME/service).")] = None,
    database_url: Annotated[str | None, typer.Option(help="SQLAlchemy URL (default SQLite in the data folder).")] = None,
    allowed_root: Annotated[list[Path] | None, typer.Option(help="Folder that path requests may name (repeatable).")] = None,
    workers: Annotated[int | None, typer.Option(help="Worker processes running analyses.")] = None,
    public_url: Annotated[str | None, typer.Option(help="Base URL of the pages, for links in bot messages.")] = None,
    max_connections: Annotated[int, typer.Option(help="Concurrent connections before 503 (uvicorn limit).")] = 256,
    log_level: Annotated[str, typer.Option(help="critical | error | warning | info | debug")] = "info",
    allow_no_auth: Annotated[bool, typer.Option(help="Serve a non-loopback address without tokens (only behind a proxy "
                                                     "that authenticates every request).")] = False,
) -> None:
    """Serve the diagnosis API, the pages, the probes and (when configured) the Slack bot."""
    import uvicorn

    from diag_service.service.app import create_app
    from diag_service.service.settings import load_settings

    try:
        settings = load_settings(config, data_dir=data_dir, database_url=database_url, workers=workers, public_url=public_url,
                                 allowed_roots=list(allowed_root) if allowed_root else None)
    except (ValidationError, ValueError) as exc:
        raise ConfigError(f"invalid settings: {exc}") from exc
    refusal = bind_refusal(host, settings, allow_no_auth)
    if refusal is not None:
        raise ConfigError(f"refused to serve: {refusal}")
    if not settings.auth_required and not is_loopback(host):
        err.print("[yellow]warning:[/yellow] no tokens configured (--allow-no-auth): every request that reaches "
                  f"{escape(host)} has every scope")
    named = host.strip().lower().removeprefix("[").removesuffix("]")
    if named not in WILDCARDS and named not in settings.trusted_hosts:
        # the address given to bind is the name clients use: serve it (a foreign name still is not)
        settings = settings.model_copy(update={"allowed_hosts": [*settings.allowed_hosts, named]})
    elif named in WILDCARDS and all(is_loopback(h) for h in settings.trusted_hosts):
        err.print("[yellow]warning:[/yellow] allowed_hosts lists only loopback names: requests addressed to any other "
                  "name or address get 400; set allowed_hosts (DIAG_ALLOWED_HOSTS) or public_url")
    app = create_app(settings)  # a StoreError (unavailable, exit 5) goes to the one CLI handler
    # proxy_headers=False: X-Forwarded-* are believed only from settings.trusted_proxies (EdgeMiddleware),
    # not from uvicorn's default of any loopback peer
    uvicorn.run(app, host=host, port=port, log_level=log_level, limit_concurrency=max_connections, timeout_keep_alive=15,
                timeout_graceful_shutdown=30, server_header=False, proxy_headers=False)
