"""Record the zoo: run each scenario's training script for real (gloo, CPU) and keep what the user would hand over.

Every scenario is a launcher command line run by ``bash`` in a fresh working directory
(``/tmp/zoo/<id>/``) holding the script under the name a user would give it (``train.py``, ``main.py``, ...)
and whatever files the scenario prepares (data shards, a checkpoint). stdout and stderr go to one pipe,
so ``console.log`` holds them interleaved as a terminal shows them (``PYTHONUNBUFFERED=1`` gives the line
buffering a terminal would); its first line is the command as typed. A launcher's ``--log-dir`` tree is
copied next to it. Faults that come from outside the script are applied here, while the job runs, the way
the outside world applies them: a memory-limited cgroup (v1) for a rank so that the kernel OOM killer ends
it, an address-space limit set with ``prlimit`` on a rank, a signal sent to a rank or to the launcher, a
port held by another process, an unroutable rendezvous address. The scripts themselves hold no
injection code but the bug they are about.

Absolute paths of this machine are rewritten to neutral ones (working dir -> /home/user/proj, venv ->
/opt/venv, the interpreter's prefix -> /usr/local). Timestamps and PIDs stay.

    .venv/bin/python eval/zoo/record.py                 # all scenarios (one at a time)
    .venv/bin/python eval/zoo/record.py ID [ID ...]     # some
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ZOO = Path(__file__).resolve().parent
SCRIPTS = ZOO / "scripts"
RUNS = ZOO / "runs"
WORK = Path("/tmp/zoo")
VENV = Path("/work/main/.venv")
CGROUP = Path("/sys/fs/cgroup/memory/zoo_rank")
HARD_TIMEOUT_S = 90
REWRITES = [
    (str(VENV), "/opt/venv"),
    ("/root/.pyenv/versions/3.11.7", "/usr/local"),
    ("/work/wt/h1", "/home/user/proj"),
]


@dataclass
class Scenario:
    id: str
    file: str  # the name the user gave the script
    cmd: str  # as typed; {port} is replaced by the scenario's port
    setup: str = ""  # bash run in the work dir before the job
    teardown: str = ""  # bash run after it (e.g. unmount what setup mounted)
    env: dict[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    #: outside action while the job runs: ("cgroup", rank, MiB) | ("prlimit_as", rank, extra MiB) |
    #: ("kill", rank, signal, after_s) | ("kill_launcher", signal, after_s) | ("hold_port",)
    action: tuple = ()


def _port(i: int) -> int:
    return 31100 + 7 * i


def _children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            out.append(int(p.name))
    return out


def _descendants(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        for c in _children(todo.pop()):
            seen.append(c)
            todo.append(c)
    return seen


def _env_of(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(kv.split("=", 1) for kv in raw.decode(errors="replace").split("\0") if "=" in kv)


def _rank_pid(root: int, rank: int, script: str, deadline: float) -> int | None:
    """The process of global rank ``rank`` running ``script`` (not one of its DataLoader workers)."""
    while time.time() < deadline:
        for pid in _descendants(root):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if script not in cmd or _env_of(pid).get("RANK") != str(rank):
                continue
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if _env_of(parent).get("RANK") == str(rank):
                continue
            return pid
        time.sleep(0.05)
    return None


def _vmsize(pid: int) -> int:
    return next(int(x.split()[1]) for x in Path(f"/proc/{pid}/status").read_text().splitlines()
                if x.startswith("VmSize:"))


def _settled_vmsize(pid: int, still_s: float = 1.0, max_s: float = 30.0) -> int:
    """The process's virtual size (KiB) once it has not changed for ``still_s``."""
    t0 = last_change = time.time()
    vm = _vmsize(pid)
    while time.time() - t0 < max_s:
        time.sleep(0.1)
        now = _vmsize(pid)
        if now != vm:
            vm, last_change = now, time.time()
        elif time.time() - last_change >= still_s:
            break
    return vm


def _act(sc: Scenario, proc: subprocess.Popen, stop: threading.Event) -> None:
    if not sc.action or sc.action[0] == "hold_port":
        return
    kind = sc.action[0]
    deadline = time.time() + 30
    if kind == "kill_launcher":
        _, sig, after = sc.action
        if not stop.wait(after):
            os.kill(proc.pid, sig)  # bash execs the launcher
        return
    pid = _rank_pid(proc.pid, sc.action[1], sc.file, deadline)
    if pid is None:
        print(f"  !! rank {sc.action[1]} not found", file=sys.stderr)
        return
    if kind == "cgroup":
        CGROUP.mkdir(exist_ok=True)
        (CGROUP / "memory.limit_in_bytes").write_text(str(sc.action[2] * 1024 * 1024))
        (CGROUP / "cgroup.procs").write_text(str(pid))
    elif kind == "prlimit_as":
        vm = _settled_vmsize(pid)  # after the imports and the process group: the job's own allocations
        limit = vm * 1024 + sc.action[2] * 1024 * 1024
        subprocess.run(["prlimit", f"--pid={pid}", f"--as={limit}:{limit}"], check=True)
    elif kind == "kill":
        _, _, sig, after = sc.action
        if not stop.wait(after):
            os.kill(pid, sig)


def record(sc: Scenario, i: int) -> None:
    wd = WORK / sc.id
    if wd.exists():
        shutil.rmtree(wd)
    wd.mkdir(parents=True)
    shutil.copy(SCRIPTS / f"{sc.id}.py", wd / sc.file)
    port = _port(i)
    env = {k: v for k, v in os.environ.items() if k not in sc.unset and not k.startswith(("MASTER_", "TORCH", "RANK"))}
    env.update(PATH=f"{VENV}/bin:{env['PATH']}", PYTHONUNBUFFERED="1", ZOO_PORT=str(port))
    env.update({k: v.replace("{port}", str(port)) for k, v in sc.env.items()})
    env.pop("VIRTUAL_ENV", None)
    if sc.setup:
        subprocess.run(["bash", "-c", sc.setup.replace("{port}", str(port))], cwd=wd, env=env, check=True)
    cmd = sc.cmd.replace("{port}", str(port))
    holder = None
    if sc.action and sc.action[0] == "hold_port":
        holder = socket.socket()
        holder.bind(("0.0.0.0", port))
        holder.listen()
    t0 = time.time()
    with open(wd / "console.log", "wb") as out:
        out.write(f"$ {cmd}\n".encode())
        out.flush()
        proc = subprocess.Popen(["bash", "-c", cmd], cwd=wd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        stop = threading.Event()
        th = threading.Thread(target=_act, args=(sc, proc, stop), daemon=True)
        th.start()
        try:
            rc = proc.wait(HARD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
            print(f"  !! {sc.id}: hard timeout", file=sys.stderr)
        stop.set()
        th.join(5)
    if holder:
        holder.close()
    if sc.teardown:
        subprocess.run(["bash", "-c", sc.teardown], cwd=wd)
    if CGROUP.exists():
        _rmcgroup()
    dt = time.time() - t0
    dest = RUNS / sc.id
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    _copy_rewritten(wd / "console.log", dest / "console.log", wd)
    if (wd / "logs").is_dir():
        for f in sorted((wd / "logs").rglob("*")):
            if f.is_file():
                target = dest / "logs" / f.relative_to(wd / "logs")
                target.parent.mkdir(parents=True, exist_ok=True)
                _copy_rewritten(f, target, wd)
    print(f"{sc.id}: rc={rc} {dt:.1f}s")


def _rmcgroup() -> None:
    for _ in range(50):
        try:
            CGROUP.rmdir()
            return
        except OSError:
            time.sleep(0.1)


def _copy_rewritten(src: Path, dst: Path, wd: Path) -> None:
    text = src.read_bytes().decode(errors="surrogateescape")
    for a, b in [(str(wd), "/home/user/proj"), *REWRITES]:
        text = text.replace(a, b)
    dst.write_bytes(text.encode(errors="surrogateescape"))


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(ZOO))
    from scenarios import SCENARIOS

    ids = [s.id for s in SCENARIOS]
    assert len(ids) == len(set(ids)), "duplicate scenario id"
    for i, sc in enumerate(SCENARIOS):
        if argv and sc.id not in argv:
            continue
        record(sc, i)


if __name__ == "__main__":
    main(sys.argv[1:])
