"""``diag mcp``: serve the MCP tools over stdio for an agent client, as a client of a running ``diag serve``."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from diag_service.errors import ConfigError, MissingExtra


def mcp_cmd(
    service: Annotated[str, typer.Option("--service", envvar="DIAG_SERVICE_URL",
                                         help="Base URL of diag serve (e.g. http://diag:8080). Token: $DIAG_TOKEN.")],
    timeout: Annotated[float, typer.Option(help="Seconds one call to the service may take.")] = 120.0,
) -> None:
    """MCP server (stdio) for agent clients: diagnose a bundle, read a diagnosis or job, hang and slow analysis,
    a live job's status and ETPR, similar past incidents. Every tool is a call to the service's HTTP API with the
    token in $DIAG_TOKEN, so that token's scopes decide what the client may do (docs/service.md, "MCP")."""
    if not service.startswith(("http://", "https://")):
        raise ConfigError(f"--service must be an http:// or https:// URL, not {service[:100]!r}")
    try:
        from diag_service.mcp_server.server import ServiceAPI, build_server
    except ImportError as exc:  # the [mcp] extra missing, or an mcp release without the API this server uses
        raise MissingExtra(f"diag mcp needs the mcp package: pip install 'diag-service[mcp]' ({exc})") from None
    token = os.environ.get("DIAG_TOKEN") or None
    build_server(ServiceAPI(service, token, timeout_s=timeout)).run("stdio")
