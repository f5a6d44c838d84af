"""``diag serve``: run the HTTP service with uvicorn.

Register in the main CLI with ``app.command("serve")(serve)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console

err = Console(stderr=True)


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
) -> None:
    """Serve the diagnosis API, the pages, the probes and (when configured) the Slack bot."""
    import uvicorn

    from diag_service.service.app import create_app
    from diag_service.service.settings import load_settings
    from diag_service.service.store import StoreError

    try:
        settings = load_settings(config, data_dir=data_dir, database_url=database_url, workers=workers, public_url=public_url,
                                 allowed_roots=list(allowed_root) if allowed_root else None)
        app = create_app(settings)
    except (ValidationError, ValueError) as exc:
        err.print(f"[red]invalid settings:[/red] {exc}")
        raise typer.Exit(2) from exc
    except StoreError as exc:
        err.print(f"[red]store error:[/red] {exc}")
        raise typer.Exit(3) from exc
    if not settings.auth_required and host not in ("127.0.0.1", "localhost", "::1"):
        err.print("[yellow]warning:[/yellow] no tokens configured: anyone who can reach this address can use the API")
    uvicorn.run(app, host=host, port=port, log_level=log_level, limit_concurrency=max_connections, timeout_keep_alive=15,
                timeout_graceful_shutdown=30, server_header=False)
