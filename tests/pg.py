"""A real PostgreSQL for the storage tests: ``DIAG_TEST_POSTGRES_URL`` when set, otherwise a throwaway
server started for the test session.

The throwaway server: ``initdb`` into a temporary folder, ``pg_ctl start`` listening on a unix socket
in that folder only (``listen_addresses`` empty: no TCP port to clash with another run), trust
authentication, fsync off (nothing here must survive a power cut), stopped and removed at the end of
the session. PostgreSQL refuses to run as root, and tests run as root on CI (``.ci/run`` as the session
user, which is root there): as root, the server runs as the ``postgres`` account (Debian's package
creates it) or else ``nobody``, and its folder belongs to that account.

The binaries are found on ``PATH`` or in ``/usr/lib/postgresql/<version>/bin`` (Debian's layout;
``postgresql`` is on the machine image, and ``.ci/run`` installs it where it is missing). Without
them the tests skip saying so, except under ``CI`` where they fail: CI must run them.

Each test gets a database of its own (``postgres_url``), so rows of one test never meet another's.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

_PORT = 5432  # only names the socket file (.s.PGSQL.5432) in our own folder; no TCP listener


def _pg_bin() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl``: PATH first, then the newest Debian version folder."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(initdb).parent

    def version(p: str) -> float:
        try:
            return float(Path(p).parent.parent.name)
        except ValueError:
            return 0.0

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=version, reverse=True)
    return Path(found[0]).parent if found else None


@dataclass
class PgServer:
    """A running throwaway server. ``base_url``: SQLAlchemy URL without a database name."""

    bin_dir: Path
    root: Path
    user: str | None  # the account it runs as when we are root; None: as ourselves

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def base_url(self) -> str:
        return f"postgresql+psycopg://postgres@/{{db}}?host={self.root}&port={_PORT}"

    def url(self, db: str) -> str:
        return self.base_url.format(db=db)

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        kw: dict[str, object] = {}
        if self.user is not None:
            pw = pwd.getpwnam(self.user)
            kw = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": str(self.root)}
        return subprocess.run([str(self.bin_dir / args[0]), *args[1:]], capture_output=True, text=True, env=env,
                              timeout=timeout, check=False, cwd=self.root, **kw)  # type: ignore[call-overload]

    def start(self) -> None:
        r = self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale",
                      "--no-sync")
        if r.returncode != 0:
            raise RuntimeError(f"initdb failed ({r.returncode}): {r.stderr[-2000:]}")
        opts = (f"-k {self.root} -p {_PORT} -c listen_addresses= -c fsync=off -c full_page_writes=off "
                "-c synchronous_commit=off -c max_connections=100")
        r = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-t", "60", "-o", opts,
                      "start")
        if r.returncode != 0:
            log = (self.root / "server.log").read_text(errors="replace")[-2000:] if (self.root / "server.log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed ({r.returncode}): {r.stderr[-1000:]} {log}")

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)

    def create_database(self) -> str:
        """A new empty database; returns its name."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(host=str(self.root), port=_PORT, user="postgres", dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name


def _server_account() -> str | None:
    """None when not root; otherwise the unprivileged account the server runs as."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' account exists to run PostgreSQL as")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL tests cannot run on CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PgServer | str]:
    """``DIAG_TEST_POSTGRES_URL`` (a string) when set, otherwise a started :class:`PgServer`."""
    external = os.environ.get("DIAG_TEST_POSTGRES_URL")
    if external:
        yield external
        return
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("the PostgreSQL driver is not installed (pip install 'psycopg[binary]', the [postgres] extra)")
    bin_dir = _pg_bin()
    if bin_dir is None:
        _unavailable("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin; "
                     "install Debian's postgresql package or set DIAG_TEST_POSTGRES_URL")
    user = _server_account()
    root = Path(tempfile.mkdtemp(prefix="diag-pg-", dir="/tmp"))  # short: unix socket paths are limited to ~107 bytes
    if user is not None:
        pw = pwd.getpwnam(user)
        os.chown(root, pw.pw_uid, pw.pw_gid)
    server = PgServer(bin_dir, root, user)  # type: ignore[arg-type]
    try:
        server.start()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        server.stop()
        _unavailable(f"could not start a throwaway PostgreSQL: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PgServer | str) -> str:
    """A SQLAlchemy URL of an empty PostgreSQL database for this test (the external URL as it is when given)."""
    if isinstance(postgres_server, str):
        return postgres_server
    return postgres_server.url(postgres_server.create_database())
