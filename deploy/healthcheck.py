"""Docker ``HEALTHCHECK`` of the diag image (deploy/Dockerfile).

When the container runs ``diag serve`` (found in PID 1's command line, also behind ``docker run --init``),
GET ``http://127.0.0.1:<port>/healthz`` with ``<port>`` from ``--port`` (default 8080, the ``diag serve``
default) and exit 0 on HTTP 200, else 1. A container running anything else (``diag watch``) has no HTTP
endpoint and exits 0: it is healthy while it runs.
"""

from __future__ import annotations

import sys
import urllib.request
from pathlib import Path

#: ``diag serve``'s default ``--port`` (diag_service/service/cli.py).
DEFAULT_PORT = 8080


def serve_port(argv: list[str]) -> int | None:
    """The port ``diag serve`` listens on, from its command line (``--port N`` or ``--port=N``); None when
    ``argv`` does not run ``serve``. Raises ``ValueError`` for a port that is not a number."""
    if "serve" not in argv:
        return None
    port = str(DEFAULT_PORT)
    for i, arg in enumerate(argv):
        if arg == "--port" and i + 1 < len(argv):
            port = argv[i + 1]
        elif arg.startswith("--port="):
            port = arg.split("=", 1)[1]
    return int(port)


def main() -> int:
    """Exit status for Docker: 0 healthy, 1 unhealthy."""
    argv = [a.decode(errors="replace") for a in Path("/proc/1/cmdline").read_bytes().split(b"\0") if a]
    port = serve_port(argv)
    if port is None:
        return 0
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=4) as r:
            return 0 if r.status == 200 else 1
    except OSError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
