"""``diag watch``: the node agent (see :mod:`diag_service.live.agent`)."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path
from typing import Annotated

import typer

from diag_service.domain import is_job_id
from diag_service.errors import DiagError, ErrorKind


class WatchError(DiagError):
    """``diag watch`` was asked for something it cannot do (nothing to watch, a bad job id)."""

    kind = ErrorKind.INPUT


def watch(
    ctx: typer.Context,
    job_id: Annotated[str, typer.Option("--job-id", help="The job's id, as the service and the scheduler know it.")],
    service: Annotated[str | None, typer.Option(help="Base URL of diag serve (else batches stay in the spool). "
                                                     "Token: $DIAG_AGENT_TOKEN.")] = None,
    log_dir: Annotated[Path | None, typer.Option(help="Folder of the workers' logs (torchrun --log-dir, consoles).")] = None,
    feed_dir: Annotated[Path | None, typer.Option(help="Folder of per-rank timing feeds (timing*.jsonl) written "
                                                       "outside the logs; this node's records are sent.")] = None,
    fr_dir: Annotated[Path | None, typer.Option(help="Folder the job writes Flight Recorder dumps to "
                                                     "(TORCH_FR_DUMP_TEMP_FILE's folder); this node's are sent.")] = None,
    pid: Annotated[int | None, typer.Option(help="PID of the running launcher (torchrun agent) to watch; without it "
                                                 "and a command, the torchrun whose --log-dir, arguments or working "
                                                 "directory is --log-dir.")] = None,
    node: Annotated[str | None, typer.Option(help="This node's name (default: the host name).")] = None,
    state_dir: Annotated[Path | None, typer.Option(help="Spool and console folder (default ./.diag-watch/JOB).")] = None,
    hang_floor: Annotated[float, typer.Option(help="Seconds without a new step before a hang, at least.")] = 60.0,
    hang_factor: Annotated[float, typer.Option(help="... or this many times the p99 step interval, if longer.")] = 10.0,
    stack_every: Annotated[float, typer.Option(help="Seconds between stack samples while hung.")] = 5.0,
    heartbeat: Annotated[float, typer.Option(help="Seconds between heartbeats, until the service's first answer "
                                                  "says the interval it expects (then that).")] = 5.0,
    quiet: Annotated[bool, typer.Option("--quiet", help="Log only warnings.")] = False,
    log_file: Annotated[Path | None, typer.Option(help="Write the agent's own log here instead of stderr.")] = None,
) -> None:
    """Watch one job's workers on this node: failures, hangs (with stack samples) and progress, sent to the
    service as they happen. Run one agent per node, beside that node's torchrun.

    Wrap the launcher:  diag watch --job-id J --service URL -- torchrun --nnodes 2 ... train.py

    Or attach to a running one:  diag watch --job-id J --service URL --log-dir DIR [--pid PID]

    Token: $DIAG_AGENT_TOKEN. Deployment (Kubernetes sidecar, Slurm srun wrapper): docs/live.md."""
    # the [watch] extra's packages, which the agent imports only where it uses them: imported here, so that a
    # missing one stops `diag watch` before it starts the job, not after (leaving the job running unwatched)
    import psutil  # noqa: F401
    import watchfiles  # noqa: F401

    from diag_service.live.agent import Agent, WatchSettings, launch, launcher_log_dir
    from diag_service.live.spool import http_sender

    cmd = list(ctx.args)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if cmd and cmd[0].startswith("-"):  # an option of ours misspelt, not the launcher's command
        raise WatchError(f"unknown option {cmd[0]!r} (the command to run goes after --)")
    if not is_job_id(job_id):
        raise WatchError(f"not a job id: {job_id!r}")
    if not cmd and pid is None and log_dir is None:
        raise WatchError("nothing to watch: give a command after --, or --pid and/or --log-dir")
    if cmd and log_dir is None:
        log_dir = launcher_log_dir(cmd, os.environ)  # the wrapped torchrun's own --log-dir / PET_LOG_DIR
        if log_dir is not None:
            typer.echo(f"[diag watch] watching the workers' logs under the launcher's --log-dir {log_dir}", err=True)
    if log_dir is not None and not log_dir.is_dir():
        log_dir.mkdir(parents=True, exist_ok=True)  # torchrun creates its tree inside it later
    fmt = "%(asctime)s [diag watch] %(message)s" if log_file else "[diag watch] %(message)s"
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format=fmt, filename=str(log_file))
    else:
        logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format=fmt, stream=sys.stderr)
    logging.getLogger("watchfiles").setLevel(logging.WARNING)  # one line per change otherwise
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one "HTTP Request: POST ..." line per batch otherwise
    cfg = WatchSettings(job_id=job_id, log_dir=log_dir, feed_dir=feed_dir, fr_dir=fr_dir, pid=pid,
                        state_dir=state_dir or Path(".diag-watch") / job_id.replace("/", "_"),
                        hang_floor_s=hang_floor, hang_factor=hang_factor, stack_every_s=stack_every, heartbeat_s=heartbeat)
    if node:
        cfg.node = node
    if not cmd and pid is None and log_dir is not None:
        cfg.pid = _attach(log_dir)
    token = os.environ.get("DIAG_AGENT_TOKEN")
    if service and not token:
        # said, not warned: a service without agent tokens takes the batches as they are; one that requires them
        # refuses them, and the sender reports that refusal
        logging.getLogger("diag.watch").info(
            "no DIAG_AGENT_TOKEN: batches are sent without a token (a service that requires agent tokens, "
            "docs/service.md, refuses them)")
    if service:
        logging.getLogger("diag.watch").info(
            "the service's live view of this job: GET %s/v1/live/jobs/%s (status, latest diagnosis; its ETPR: .../etpr)",
            service.rstrip("/"), job_id)
    send = http_sender(service, job_id, token) if service else None
    launcher = pump = None
    if cmd:
        try:
            launcher, pump = launch(cmd, cfg.state_dir / "console")
        except OSError as exc:
            raise WatchError(f"cannot start {cmd[0]!r}: {exc.strerror or exc}") from exc
    agent = Agent(cfg, send, launcher=launcher, pump=pump)

    def _stop(signum: int, _frame: object) -> None:
        if launcher is not None and launcher.poll() is None:
            launcher.send_signal(signum)  # the job decides; the agent sees it exit
        else:
            agent.stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    code = agent.run()
    raise typer.Exit(code if 0 <= code < 256 else 1)


def _attach(log_dir: Path) -> int | None:
    """The pid of the one torchrun / torchelastic launcher that references ``log_dir``
    (:func:`~diag_service.live.agent.find_launchers`), said on stderr; None (logs only, said too) when there is
    none. Raises :class:`WatchError` when several reference it as strongly (give ``--pid``)."""
    from diag_service.live.agent import find_launchers

    found = find_launchers(log_dir)
    if not found:
        typer.echo(f"[diag watch] no torchrun process references {log_dir}: watching its logs only (no workers, no "
                   "stack samples, no exit status); give --pid to attach to the launcher", err=True)
        return None
    best = [m for m in found if m.how == found[0].how]
    if len(best) > 1:
        raise WatchError(f"{len(best)} torchrun processes reference {log_dir} ({found[0].how}): pids "
                         f"{', '.join(str(m.pid) for m in best[:10])}; give --pid")
    m = found[0]
    what = {"log-dir": "its --log-dir", "argument": "an argument", "cwd": "its working directory"}[m.how]
    typer.echo(f"[diag watch] attached to torchrun pid {m.pid} ({what} is {log_dir}): {' '.join(m.cmdline)[:300]}",
               err=True)
    return m.pid


# the launcher's command line follows "--" and is passed on untouched
watch.context_settings = {"allow_extra_args": True, "ignore_unknown_options": True}  # type: ignore[attr-defined]

__all__ = ["WatchError", "watch"]
