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

import contextlib
import os
import re
import shlex
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
WORK = Path(os.environ.get("ZOO_WORK", "/tmp/zoo"))  # clean batch 6: a prefixed work dir on a shared host
VENV = Path("/work/main/.venv")
#: batch 15: another recorder may share the host; ZOO_CGROUP_TAG suffixes this recorder's cgroup names and
#: ZOO_PORT_OFFSET shifts its ports, so two recorders never share a cgroup or a port
_TAG = os.environ.get("ZOO_CGROUP_TAG", "")
CGROUP = Path(f"/sys/fs/cgroup/memory/zoo_rank{_TAG}")
HARD_TIMEOUT_S = 90
REWRITES = [
    (str(VENV), "/opt/venv"),
    ("/work/wt/h221", "/home/user/proj"),  # batch 69 (h221; before /work/wt/h22, /work/wt/h2 and /work/wt/h1 style prefixes)
    ("/work/wt/h218", "/home/user/proj"),  # batch 66 (h218; before /work/wt/h21, /work/wt/h2 and /work/wt/h1 style prefixes)
    ("/work/wt/h219", "/home/user/proj"),  # batch 67 (h219; before /work/wt/h21, /work/wt/h2 and /work/wt/h1 style prefixes)
    ("/work/wt/h220", "/home/user/proj"),  # batch 68 (h220; before /work/wt/h22, /work/wt/h2 style prefixes)
    ("/work/wt/h217", "/home/user/proj"),  # batch 65 (h217; before /work/wt/h21, /work/wt/h2 and /work/wt/h1 style prefixes)
    ("/work/wt/h215", "/home/user/proj"),  # batch 64 (h215; before /work/wt/h21, /work/wt/h2 and /work/wt/h1 style prefixes)
    ("/work/wt/h214", "/home/user/proj"),  # batch 63 (h214; before /work/wt/h21, /work/wt/h2 and /work/wt/h1 style prefixes)
    ("/work/wt/h213", "/home/user/proj"),  # batch 62 (h213; before /work/wt/h21, /work/wt/h2 and /work/wt/h1 style prefixes)
    ("/work/wt/h212", "/home/user/proj"),  # batch 61 (h212; before /work/wt/h21, /work/wt/h2 and /work/wt/h1 style prefixes)
    ("/work/wt/h211", "/home/user/proj"),  # batch 60 (h211; before /work/wt/h21, /work/wt/h2 and /work/wt/h1 style prefixes)
    ("/work/wt/h210", "/home/user/proj"),  # batch 59 (h210; before /work/wt/h21 and /work/wt/h2 style prefixes)
    ("/work/wt/h208", "/home/user/proj"),  # batch 57 (h208; before /work/wt/h20 and /work/wt/h2 style prefixes)
    ("/work/wt/h209", "/home/user/proj"),  # batch 58 (h209; before /work/wt/h20 and /work/wt/h2 style prefixes)
    ("/work/wt/h207", "/home/user/proj"),  # batch 56 (h207; before /work/wt/h20 and /work/wt/h2 style prefixes)
    ("/work/wt/h203", "/home/user/proj"),  # batch 54 (h203; before /work/wt/h20 and /work/wt/h2 style prefixes)
    ("/work/wt/h201", "/home/user/proj"),  # batch 52 (h201; before /work/wt/h20 and /work/wt/h2 style prefixes)
    ("/work/wt/h202", "/home/user/proj"),  # batch 53 (h202; before /work/wt/h20 and /work/wt/h2 style prefixes)
    ("/work/wt/h199", "/home/user/proj"),  # batch 50 (h199; before /work/wt/h19 and /work/wt/h1 style prefixes)
    ("/work/wt/h190", "/home/user/proj"),  # batch 45 (h190; before /work/wt/h19 and /work/wt/h1 style prefixes)
    ("/work/wt/h191", "/home/user/proj"),  # batch 46 (h191; before /work/wt/h19 and /work/wt/h1 style prefixes)
    ("/work/wt/h194", "/home/user/proj"),  # batch 47 (h194; before /work/wt/h19 and /work/wt/h1 style prefixes)
    ("/work/wt/h195", "/home/user/proj"),  # batch 48 (h195; before /work/wt/h19 and /work/wt/h1 style prefixes)
    ("/work/wt/h198", "/home/user/proj"),  # batch 49 (h198; before /work/wt/h19 and /work/wt/h1 style prefixes)
    ("/work/wt/h200", "/home/user/proj"),  # batch 51 (h200; before /work/wt/h20 and /work/wt/h2 style prefixes)
    ("/work/wt/h187", "/home/user/proj"),  # batch 44 (h187; before /work/wt/h18 and /work/wt/h1 style prefixes)
    ("/work/wt/h182", "/home/user/proj"),  # batch 43 (h182; before /work/wt/h18 and /work/wt/h1 style prefixes)
    ("/work/wt/h179", "/home/user/proj"),  # batch 42 (h179; before /work/wt/h17 and /work/wt/h1 style prefixes)
    ("/work/wt/h176", "/home/user/proj"),  # batch 41 (h176; before /work/wt/h17 and /work/wt/h1 style prefixes)
    ("/work/wt/h173", "/home/user/proj"),  # batch 40 (h173; before /work/wt/h17 and /work/wt/h1 style prefixes)
    ("/work/wt/h170", "/home/user/proj"),  # batch 39 (h170; before /work/wt/h17 and /work/wt/h1 style prefixes)
    ("/work/wt/h167", "/home/user/proj"),  # batch 38 (h167; before /work/wt/h16 and /work/wt/h1, its prefixes)
    ("/work/wt/h164", "/home/user/proj"),  # batch 37 (h164; before /work/wt/h16 and /work/wt/h1, its prefixes)
    ("/work/wt/h161", "/home/user/proj"),  # batch 36 (h161; before /work/wt/h16 and /work/wt/h1, its prefixes)
    ("/work/wt/h158", "/home/user/proj"),  # batch 35 (h158; before /work/wt/h1, its prefix)
    ("/work/wt/h155", "/home/user/proj"),  # batch 34 (h155; before /work/wt/h1, its prefix)
    ("/work/wt/h152", "/home/user/proj"),  # batch 33 (h152; before /work/wt/h1, its prefix)
    ("/work/wt/h146", "/home/user/proj"),  # batch 32 (h146; before /work/wt/h1, its prefix)
    ("/work/wt/h147", "/home/user/proj"),  # clean batch 6 (h147; before /work/wt/h1, its prefix)
    ("/work/wt/h141", "/home/user/proj"),  # batch 31 (h141; before /work/wt/h1, its prefix)
    ("/work/wt/h139", "/home/user/proj"),  # batch 30 (h139; before /work/wt/h1, its prefix)
    ("/work/wt/h135", "/home/user/proj"),  # batch 29 (h135; before /work/wt/h1, its prefix)
    ("/work/wt/h134", "/home/user/proj"),  # batch 28 (h134; before /work/wt/h1, its prefix)
    ("/work/wt/h131", "/home/user/proj"),  # batch 27 (h131; before /work/wt/h1, its prefix)
    ("/work/wt/h127", "/home/user/proj"),  # batch 26 (h127; before /work/wt/h1, its prefix)
    ("/work/wt/h124", "/home/user/proj"),  # batch 25 (h124; before /work/wt/h1, its prefix)
    ("/work/wt/h119", "/home/user/proj"),  # batch 24 (h119; before /work/wt/h1, its prefix)
    ("/work/wt/h118", "/home/user/proj"),  # batch 23 (h118; before /work/wt/h1, its prefix)
    ("/work/wt/h114", "/home/user/proj"),  # batch 22 (h114; before /work/wt/h1, its prefix)
    ("/work/wt/h107", "/home/user/proj"),  # batch 21 (h107; before /work/wt/h1, its prefix)
    ("/work/wt/h103", "/home/user/proj"),  # batch 20 (h103; before /work/wt/h1, its prefix)
    ("/work/wt/h98", "/home/user/proj"),  # batch 19 (h98)
    ("/work/wt/h88", "/home/user/proj"),  # batch 17 (h88)
    ("/work/wt/h81", "/home/user/proj"),  # batch 15 (h81)
    ("/work/wt/h79", "/home/user/proj"),  # batch 16 (recorded as a second batch 15)
    ("/work/wt/h64", "/home/user/proj"),  # batch 14
    ("/work/wt/h48", "/home/user/proj"),  # batch 13 (before /work/wt/h4, its prefix)
    ("/work/wt/h45", "/home/user/proj"),  # batch 12 (before /work/wt/h4, its prefix)
    ("/work/wt/h41", "/home/user/proj"),  # batch 11
    ("/work/wt/h40", "/home/user/proj"),  # batch 10
    ("/work/wt/h35", "/home/user/proj"),  # batch 9
    ("/work/wt/h32", "/home/user/proj"),  # batch 8
    ("/root/.pyenv/versions/3.11.7", "/usr/local"),
    ("/work/wt/h16", "/home/user/proj"),  # batch 5 (before /work/wt/h1, its prefix)
    ("/work/wt/h27", "/home/user/proj"),  # batch 7
    ("/work/wt/h24", "/home/user/proj"),  # batch 6 (before /work/wt/h2x prefixes)
    ("/work/wt/h1", "/home/user/proj"),
    ("/work/wt/h4", "/home/user/proj"),
    ("/work/wt/h7", "/home/user/proj"),
    ("/root/", "/home/user/"),  # batch 3: Ray's default results directory (~/ray_results)
]
CPU_CGROUP = Path(f"/sys/fs/cgroup/cpu/zoo_job{_TAG}")
JOB_MEM_CGROUP = Path(f"/sys/fs/cgroup/memory/zoo_job{_TAG}")  # batch 6
JOB_PIDS_CGROUP = Path(f"/sys/fs/cgroup/pids/zoo_job{_TAG}")  # batch 6
FREEZER_CGROUP = Path(f"/sys/fs/cgroup/freezer/zoo_rank{_TAG}")  # batch 6
RANK_CPU_CGROUP = Path(f"/sys/fs/cgroup/cpu/zoo_rank{_TAG}")  # batch 7
BLKIO_CGROUP = Path(f"/sys/fs/cgroup/blkio/zoo_job{_TAG}")  # batch 9
#: batch 41: one CPU cgroup per rank (zoo_rank{TAG}_r<R>), for "ranks_quota"
RANKS_CPU_PREFIX = f"zoo_rank{_TAG}_r"
RANK_BLKIO_CGROUP = Path(f"/sys/fs/cgroup/blkio/zoo_rank{_TAG}")  # batch 10


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
    #: batch 2: ("ss_kill", rank, after_s) | ("kill_node", node, signal, after_s) |
    #: ("kill_node_launcher", node, signal, after_s) | ("shell", after_s, bash) | ("hog", after_s, cores) |
    #: ("pin_hog", rank, after_s) | ("stopcont", rank, after_s, run_ms, stop_ms) | ("cpu_quota", after_s, percent)
    #: batch 3 (Ray Train workers, found by the world_rank/pid line Ray prints): ("ray_kill", rank, signal, after_s) |
    #: ("ray_cgroup", rank, MiB) | ("ray_stopcont", rank, after_s, run_ms, stop_ms)
    #: batch 4 (a trigger may also be a line fragment of the launcher's --log-dir files; `until` None = the run's end):
    #: ("hogx", after, until, cores, per_core, duty) busy processes busy `duty` of every 100 ms |
    #: ("stopcont_until", rank, after, until, run_ms, stop_ms) |
    #: ("stall_every", rank, after, line_regex_with_step_group, every, stop_ms) the rank stopped for stop_ms each
    #: time a log line (the regex's match, so per epoch too) shows a step divisible by `every` |
    #: ("quota_until", after, until, percent) | ("pin_hogx", rank, after, n): ranks pinned one per core as pin_hog,
    #: then n busy processes on the rank's core, each in its own session (this host groups CPU shares by session)
    #: batch 5: ("worker_cgroup", rank, MiB, after) the rank's DataLoader workers (not the rank) moved into a memory
    #: cgroup | ("kill_when_file", rank, sig, path, min_bytes) the signal sent as soon as the file (relative to the
    #: work dir) reaches min_bytes, i.e. while it is being written | ("pyspy", after, nranks, delay_s) `py-spy dump`
    #: of every rank once, delay_s after the trigger, written to dumps/<snapshot>/rank-R.txt as an on-call engineer collects them
    #: batch 5: ("tc_rate", rank, after, rate) from the trigger on, the rank's established TCP connections (matched by
    #: its local ports on lo) are shaped to `rate` (tc htb, e.g. "2gbit": a degraded link); removed when the run ends
    #: batch 39: ("shell4", after, bash) as "shell", the trigger also looked for in the job's logs/ files
    #: batch 41: ("ranks_quota", nranks, after, percent) from the trigger on, every rank (with its threads and children)
    #: in a CPU cgroup (v1) of its own at `percent` of one core: each rank's container CPU limit lowered
    #: batch 44: ("both", action_a, action_b) two of the actions above at once, each in its own thread (e.g. a fault
    #: and the py-spy dumps an on-call engineer takes during the hang)
    #: batch 46: ("node_quota", node, after, percent) from the trigger on, one simulated node's agent and every process
    #: under it (its ranks, their threads and children) in one CPU cgroup (v1) at `percent` of one core: that node's
    #: CPU capacity lowered (a smaller or throttled instance) while the other node keeps its own
    action: tuple = ()
    #: batch 2: a second node's launcher (two agents on one host as two simulated nodes); each agent's
    #: terminal is then recorded as console_node0.log / console_node1.log
    cmd2: str = ""
    cmd2_delay_s: float = 1.0
    #: batch 2: the node's open-files limit (RLIMIT_NOFILE) for the job, 0 = this host's
    nofile: int = 0
    #: batch 4: a clean control run (no fault): written under clean/runs/<id>/ with the host's load before and after
    clean: bool = False
    #: batch 5: the job runs in its own mount namespace whose /dev/shm is a tmpfs of this many MiB (a container's
    #: shared-memory size, docker's default is 64 MiB); 0 = this host's /dev/shm
    shm_mb: int = 0
    #: batch 6: the job's container limits, applied to the launcher before it starts (so every rank, worker and
    #: thread inherits them): a memory cgroup (v1) of this many MiB, a pids cgroup of this many tasks (threads
    #: count), RLIMIT_FSIZE of this many bytes (`ulimit -f` of a batch system); 0 = none
    job_mem_mib: int = 0
    job_pids_max: int = 0
    fsize: int = 0
    #: batch 6: the second node's agent runs in this network namespace (its own interfaces, set up by `setup`);
    #: the console's first line stays the command as typed
    netns2: str = ""
    #: batch 8: the job's standard input is a pipe that stays open and is never written (a terminal nobody types
    #: in, a wrapper that keeps stdin open); False = this recorder's own stdin, as before
    stdin_open: bool = False
    #: batch 10: the job's CPU-time limit in seconds (RLIMIT_CPU, `ulimit -t` of a batch system's job script; each
    #: process gets SIGXCPU when its own CPU time passes it); 0 = none
    cpu_s: int = 0
    #: batch 11: on the second node this directory (relative to the work dir) is an empty tmpfs: a mount that did not
    #: come up on that node, leaving the bare mount point; the agent runs in a mount namespace of its own (gone with
    #: it), the console's first line stays the command as typed
    mask2: str = ""
    #: batch 68: the size of that tmpfs ("6m": node 1's own small local scratch instead of a bare mount point); "" = 1m
    mask2_size: str = ""
    #: batch 19: on the second node /etc/hosts is this file (relative to the work dir, written by `setup`): the
    #: node's own resolver view (a name that does not resolve there); the agent runs in a mount namespace of its own
    hosts2: str = ""
    #: batch 20: variables only the second node's agent (and its workers) has in its environment: that node's own
    #: profile, invisible in the command as typed
    env2: dict[str, str] = field(default_factory=dict)
    #: batch 61: variables the second node's agent (and its workers) does NOT have although the first node's does: a
    #: profile line, module or secret missing on that node only, invisible in the command as typed
    unset2: tuple[str, ...] = ()
    #: batch 48: the second node's container: its /dev/shm a tmpfs of this many MiB (0 = this host's); a file of the
    #: work dir bind-mounted over another ("src:dst", relative: that node's own checkout of a file); its agent as PID 1
    #: of a PID namespace of its own (a container whose main process is torchrun: when it dies, the kernel kills every
    #: process left in the container). Any of them runs the agent in a mount namespace of its own (gone with it); the
    #: console's first line stays the command as typed
    shm2_mb: int = 0
    bind2: str = ""
    pidns2: bool = False
    #: batch 53: the host kernel's OOM-killer lines of this run (each event from 'invoked oom-killer' to the kill, as
    #: `dmesg` prints them, only the events in this recorder's cgroups) written to dmesg.txt in the run folder, as an
    #: on-call engineer collects them from the node; this recorder's cgroup names in them read as this string (the
    #: job's container or pod cgroup), "" = not collected
    dmesg: str = ""
    #: batch 53: when the launcher ends, the job's other processes (those that inherited ZOO_RUN: orphaned workers)
    #: are given up to this many seconds to end by themselves before the recorder kills what is left; 0 = killed at once
    orphans_s: float = 0.0
    #: batch 59: on the first node (node 0) /etc/hosts is this file (relative to the work dir, written by `setup`), as
    #: `hosts2` is for the second: each node's own resolver view; its agent runs in a mount namespace of its own
    hosts1: str = ""
    #: batch 67: the job's processes (every node's agent and all it starts) run as root without CAP_DAC_OVERRIDE and
    #: CAP_DAC_READ_SEARCH (dropped from the bounding set by `setpriv` before the launcher starts): file permissions
    #: apply to them as to a non-root container user, so a directory another user owns is not writable; the console's
    #: first line stays the command as typed
    drop_dac: bool = False
    #: batch 65: files the job writes outside logs/ that the user hands over too (globs relative to the work dir, e.g.
    #: "worker_*/*.log", "out/node*/*", "slurm-*.out": a script or launcher writing one file per rank, task or node);
    #: copied into the run folder under the same relative paths (paths rewritten like the consoles), and read, like the
    #: consoles and logs/, when an action waits for a line fragment
    keep: tuple[str, ...] = ()


def _nodac(sc: Scenario, argv: list[str]) -> list[str]:
    """Batch 67: ``argv`` run without the DAC-override capabilities when the scenario asks for it."""
    if not sc.drop_dac:
        return argv
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps",
            "-dac_override,-dac_read_search", *argv]


#: batch 65: the running scenario's `keep` globs (read by _waited and _logs_text)
_KEEP: tuple[str, ...] = ()


def _kept_files(wd: Path) -> list[Path]:
    return sorted({f for g in _KEEP for f in wd.glob(g) if f.is_file()})


def _port(i: int) -> int:
    return 31100 + 7 * i + int(os.environ.get("ZOO_PORT_OFFSET", "0"))


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


def _cpu_quota(roots: list[int], percent: int) -> None:
    """Put the job's processes (``roots`` and their descendants) in :data:`CPU_CGROUP` at ``percent`` of one core."""
    CPU_CGROUP.mkdir(exist_ok=True)
    (CPU_CGROUP / "cpu.cfs_period_us").write_text("100000")
    (CPU_CGROUP / "cpu.cfs_quota_us").write_text(str(percent * 1000))
    for pid in [d for r in roots for d in [r, *_descendants(r)]]:
        with contextlib.suppress(OSError):
            (CPU_CGROUP / "cgroup.procs").write_text(str(pid))


def _env_of(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(kv.split("=", 1) for kv in raw.decode(errors="replace").split("\0") if "=" in kv)


def _scenario_rank_pid(roots: list[int], sc: Scenario) -> int | None:
    """The pid of the rank a scenario's action names (``sc.action[1]``), waiting up to 40 s; None, said on stderr,
    when it never appears."""
    pid = _rank_pid(roots, sc.action[1], sc.file, time.time() + 40)
    if pid is None:
        print(f"  !! rank {sc.action[1]} not found", file=sys.stderr)
    return pid


def _rank_pid(root: int | list[int], rank: int, script: str, deadline: float) -> int | None:
    """The process of global rank ``rank`` running ``script`` (not one of its DataLoader workers)."""
    roots = root if isinstance(root, list) else [root]
    while time.time() < deadline:
        for pid in [d for r in roots for d in _descendants(r)]:
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
        spawned = _spawned(roots, script)
        if len(spawned) > rank:
            return spawned[rank]
        time.sleep(0.05)
    return None


def _spawned(roots: list[int], script: str) -> list[int]:
    """``torch.multiprocessing.spawn`` children of the script's process, in start order (rank order): they carry
    no RANK variable and their command line is multiprocessing's, not the script's."""
    out = []
    for pid in [d for r in roots for d in _descendants(r)]:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            pcmd = Path(f"/proc/{parent}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "spawn_main" in cmd and "resource_tracker" not in cmd and script in pcmd:
            out.append(pid)
    return sorted(out)


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


def _sockets_of(pid: int) -> list[tuple[str, str]]:
    """(local, peer) address pairs of the established TCP connections the process holds."""
    out = subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True, text=True).stdout
    pairs = []
    for line in out.splitlines():
        if f"pid={pid}," in line:
            f = line.split()
            pairs.append((f[2], f[3]))
    return pairs


def _hog(cores: str) -> subprocess.Popen:
    """Busy processes pinned to ``cores`` (another tenant's job on the node)."""
    n = 2 * len(cores.split(","))  # two busy processes per core: the job keeps about a third of it
    code = "import multiprocessing as m\ndef f():\n    while True: pass\n" \
           f"ps=[m.Process(target=f) for _ in range({n})]\n[p.start() for p in ps]\n[p.join() for p in ps]\n"
    return subprocess.Popen(["taskset", "-c", cores, sys.executable, "-c", code], start_new_session=True)


class _StopAfter:
    def __init__(self, ev: threading.Event, wd: Path):
        self.ev, self.wd = ev, wd

    def wait(self, after: float | str | None = None) -> bool:
        if after is None:
            return self.ev.wait()
        return _waited(self.ev, after, self.wd)

    def is_set(self) -> bool:
        return self.ev.is_set()


def _waited(stop: threading.Event, after: float | str, wd: Path) -> bool:
    """Wait ``after`` seconds, or until the job's console shows the line fragment ``after``; True if the job ended."""
    if not isinstance(after, str):
        return stop.wait(after)
    while not stop.wait(0.1):
        for con in [*wd.glob("console*.log"), *_kept_files(wd)]:  # kept files: batch 65
            if after in con.read_text(errors="replace"):
                return False
    return True


def _act_batch2(sc: Scenario, procs: list[subprocess.Popen], stop: threading.Event, wd: Path) -> None:
    kind = sc.action[0]
    stop = _StopAfter(stop, wd)  # stop.wait(after) also takes a line fragment of the job's console
    roots = [p.pid for p in procs]
    if kind == "kill_node":
        _, node, sig, after = sc.action
        if not stop.wait(after):
            root = procs[node].pid  # the whole node: agent and workers (torchrun starts them in their own sessions)
            for pid in [root, *_descendants(root)]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
    elif kind == "kill_node_launcher":
        _, node, sig, after = sc.action
        if not stop.wait(after):
            os.kill(procs[node].pid, sig)
    elif kind == "shell":
        _, after, cmd = sc.action
        if not stop.wait(after):
            subprocess.run(["bash", "-c", cmd], cwd=wd)
    elif kind == "hog":
        _, after, cores = sc.action
        if not stop.wait(after):
            hog = _hog(cores)
            stop.wait()
            os.killpg(hog.pid, signal.SIGKILL)
    elif kind == "cpu_quota":
        _, after, percent = sc.action
        if stop.wait(after):
            return
        _cpu_quota(roots, percent)
    else:
        pid = _rank_pid(roots, sc.action[1], sc.file, time.time() + 30)
        if pid is None:
            print(f"  !! rank {sc.action[1]} not found", file=sys.stderr)
            return
        if kind == "ss_kill":
            if stop.wait(sc.action[2]):
                return
            for local, peer in _sockets_of(pid):
                lh, lp = local.rsplit(":", 1)
                ph, pp = peer.rsplit(":", 1)
                subprocess.run(["ss", "-K", "dst", ph, "dport", "=", pp, "src", lh, "sport", "=", lp],
                               capture_output=True)
        elif kind == "pin_hog":
            # each rank on its own core, as a launcher with CPU binding places them; another tenant's
            # process lands on the faulty rank's core
            for r in range(8):
                p = _rank_pid(roots, r, sc.file, time.time() + 0.5)
                if p is not None:
                    subprocess.run(["taskset", "-a", "-p", "-c", str(r % 2), str(p)], capture_output=True)
            if stop.wait(sc.action[2]):
                return
            hog = _hog(str(sc.action[1] % 2))
            stop.wait()
            os.killpg(hog.pid, signal.SIGKILL)
        elif kind == "stopcont":
            _, _, after, run_ms, stop_ms = sc.action
            if stop.wait(after):
                return
            while not stop.is_set():
                try:
                    os.kill(pid, signal.SIGSTOP)
                    time.sleep(stop_ms / 1000)
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    return
                stop.ev.wait(run_ms / 1000)


def _ray_rank_pid(wd: Path, rank: int, deadline: float) -> int | None:
    """The Ray Train worker of world rank ``rank``: Ray's controller prints ``- (ip=..., pid=N) world_rank=R, ...``
    once the worker group has started (the first group when it is restarted later)."""
    pat = re.compile(rf"pid=(\d+)\) world_rank={rank},")
    while time.time() < deadline:
        m = pat.search((wd / "console.log").read_text(errors="replace"))
        if m:
            return int(m.group(1))
        time.sleep(0.1)
    return None


def _act_ray(sc: Scenario, stop: threading.Event, wd: Path) -> None:
    kind, rank = sc.action[0], sc.action[1]
    stop = _StopAfter(stop, wd)
    pid = _ray_rank_pid(wd, rank, time.time() + 80)
    if pid is None:
        print(f"  !! ray worker {rank} not found", file=sys.stderr)
        return
    if kind == "ray_kill":
        _, _, sig, after = sc.action
        if not stop.wait(after):
            os.kill(pid, sig)
    elif kind == "ray_cgroup":
        CGROUP.mkdir(exist_ok=True)
        (CGROUP / "memory.limit_in_bytes").write_text(str(sc.action[2] * 1024 * 1024))
        (CGROUP / "cgroup.procs").write_text(str(pid))
    elif kind == "ray_stopcont":
        _, _, after, run_ms, stop_ms = sc.action
        if stop.wait(after):
            return
        while not stop.is_set():
            try:
                os.kill(pid, signal.SIGSTOP)
                time.sleep(stop_ms / 1000)
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                return
            stop.ev.wait(run_ms / 1000)


def _logs_text(wd: Path) -> str:
    """What the job has written so far: its console and the launcher's --log-dir files."""
    parts = [c.read_text(errors="replace") for c in wd.glob("console*.log")]
    if (wd / "logs").is_dir():
        parts += [f.read_text(errors="replace") for f in (wd / "logs").rglob("*.log")]
    parts += [f.read_text(errors="replace") for f in _kept_files(wd)]  # batch 65
    return "\n".join(parts)


def _waited4(stop: threading.Event, after: float | str | None, wd: Path) -> bool:
    """Batch 4: like _waited, also reading the --log-dir files; None never comes (waits for the job's end)."""
    if after is None:
        stop.wait()
        return True
    if not isinstance(after, str):
        return stop.wait(after)
    while not stop.wait(0.05):
        if after in _logs_text(wd):
            return False
    return True


def _busy_code(n: int, duty: float) -> str:
    return ("import multiprocessing as m, time\n"
            "def f():\n"
            "    while True:\n"
            f"        t = time.time() + {0.1 * duty}\n"
            "        while time.time() < t: pass\n"
            f"        if {1 - duty} > 0: time.sleep({0.1 * (1 - duty)})\n"
            f"ps=[m.Process(target=f) for _ in range({n})]\n[p.start() for p in ps]\n[p.join() for p in ps]\n")


def _act_batch4(sc: Scenario, procs: list[subprocess.Popen], stop: threading.Event, wd: Path) -> None:
    kind = sc.action[0]
    roots = [p.pid for p in procs]
    if kind == "hogx":
        _, after, until, cores, per_core, duty = sc.action
        if _waited4(stop, after, wd):
            return
        n = per_core * len(cores.split(","))
        hog = subprocess.Popen(["taskset", "-c", cores, sys.executable, "-c", _busy_code(n, duty)],
                               start_new_session=True)
        _waited4(stop, until, wd)
        os.killpg(hog.pid, signal.SIGKILL)
        return
    if kind == "quota_until":
        _, after, until, percent = sc.action
        if _waited4(stop, after, wd):
            return
        _cpu_quota(roots, percent)
        if not _waited4(stop, until, wd):
            (CPU_CGROUP / "cpu.cfs_quota_us").write_text("-1")
        return
    pid = _scenario_rank_pid(roots, sc)
    if pid is None:
        return
    if kind == "pin_hogx":
        _, rank, after, n = sc.action
        for r in range(8):
            p = _rank_pid(roots, r, sc.file, time.time() + 0.5)
            if p is not None:
                subprocess.run(["taskset", "-a", "-p", "-c", str(r % 2), str(p)], capture_output=True)
        if _waited4(stop, after, wd):
            return
        code = "while True: pass"
        hogs = [subprocess.Popen(["taskset", "-c", str(rank % 2), sys.executable, "-c", code], start_new_session=True)
                for _ in range(n)]
        stop.wait()
        for h in hogs:
            h.kill()
        return
    if kind == "stopcont_until":
        _, _, after, until, run_ms, stop_ms = sc.action
        if _waited4(stop, after, wd):
            return
        ended = threading.Event()
        threading.Thread(target=lambda: (_waited4(stop, until, wd), ended.set()), daemon=True).start()
        while not stop.is_set() and not ended.is_set():
            try:
                os.kill(pid, signal.SIGSTOP)
                time.sleep(stop_ms / 1000)
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                return
            stop.wait(run_ms / 1000)
    elif kind == "stall_every":
        _, _, after, line_re, every, stop_ms = sc.action
        if _waited4(stop, after, wd):
            return
        def files() -> list[Path]:
            return [*wd.glob("console*.log"), *((wd / "logs").rglob("*.log") if (wd / "logs").is_dir() else [])]

        # stalls start with the lines written after the trigger, not with the earlier ones
        pat, done, offsets = re.compile(line_re), set(), {f: f.stat().st_size for f in files()}
        while not stop.wait(0.01):
            new = ""
            for f in files():  # only what was written since the last look
                with open(f, "rb") as fh:
                    fh.seek(offsets.get(f, 0))
                    chunk = fh.read()
                cut = chunk.rfind(b"\n") + 1
                offsets[f] = offsets.get(f, 0) + cut
                new += chunk[:cut].decode(errors="replace")
            for m in pat.finditer(new):
                step = int(m.group(1))
                if step % every or m.group(0) in done:
                    continue
                done.add(m.group(0))
                try:
                    os.kill(pid, signal.SIGSTOP)
                    time.sleep(stop_ms / 1000)
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    return


def _workers_of(pid: int) -> list[int]:
    """The DataLoader worker processes of a rank: its python children (forked, same command line)."""
    out = []
    for c in _children(pid):
        try:
            if Path(f"/proc/{c}/cmdline").read_bytes() == Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(c)
        except OSError:
            continue
    return out


def _act_batch5(sc: Scenario, procs: list[subprocess.Popen], stop: threading.Event, wd: Path) -> None:
    kind = sc.action[0]
    roots = [p.pid for p in procs]
    if kind == "pyspy":
        _, after, nranks, delay_s = sc.action
        if _waited4(stop, after, wd) or stop.wait(delay_s):
            return
        pids = [_rank_pid(roots, r, sc.file, time.time() + 5) for r in range(nranks)]
        snap = wd / "dumps" / time.strftime("%Y%m%dT%H%M%S")
        snap.mkdir(parents=True)
        for r, pid in enumerate(pids):
            if pid is None:
                continue
            res = subprocess.run([str(VENV / "bin" / "py-spy"), "dump", "--pid", str(pid)], capture_output=True,
                                 text=True)
            (snap / f"rank-{r}.txt").write_text(res.stdout + res.stderr)
        return
    pid = _scenario_rank_pid(roots, sc)
    if pid is None:
        return
    if kind == "worker_cgroup":
        _, _, mib, after = sc.action
        if _waited4(stop, after, wd):
            return
        workers: list[int] = []
        while not workers and not stop.wait(0.05):
            workers = _workers_of(pid)
        CGROUP.mkdir(exist_ok=True)
        (CGROUP / "memory.limit_in_bytes").write_text(str(mib * 1024 * 1024))
        for w in workers:
            with contextlib.suppress(OSError):
                (CGROUP / "cgroup.procs").write_text(str(w))
    elif kind == "tc_rate":
        _, _, after, rate = sc.action
        if _waited4(stop, after, wd):
            return
        ports = sorted({local.rsplit(":", 1)[1] for local, _ in _sockets_of(pid)})
        _lo_rate_limit(ports, rate)
        print(f"  tc_rate: rank {sc.action[1]} ports {ports} at {rate}", file=sys.stderr)
        stop.wait()
        subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], capture_output=True)
    elif kind == "kill_when_file":
        _, _, sig, path, min_bytes = sc.action
        f = wd / path
        while not stop.wait(0.002):
            with contextlib.suppress(OSError):
                if f.stat().st_size >= min_bytes:
                    os.kill(pid, sig)
                    return


def _act_batch6(sc: Scenario, procs: list[subprocess.Popen], stop: threading.Event, wd: Path) -> None:
    kind = sc.action[0]
    roots = [p.pid for p in procs]
    if kind == "cpuset_shrink":
        # the container's cpuset is cut to `cores` mid-run (a CPU manager / an operator resizing the pod): every
        # process and thread of the job is re-pinned
        _, after, cores = sc.action
        if _waited4(stop, after, wd):
            return
        for pid in [d for r in roots for d in [r, *_descendants(r)]]:
            subprocess.run(["taskset", "-a", "-p", "-c", cores, str(pid)], capture_output=True)
        print(f"  cpuset_shrink: job on cores {cores}", file=sys.stderr)
        return
    pid = _scenario_rank_pid(roots, sc)
    if pid is None:
        return
    if kind == "freeze":
        # the rank's container is paused (cgroup v1 freezer, as `docker pause` does) and thawed thaw_s later
        _, _, after, thaw_s = sc.action
        if _waited4(stop, after, wd):
            return
        FREEZER_CGROUP.mkdir(exist_ok=True)
        for p in [pid, *_descendants(pid)]:
            with contextlib.suppress(OSError):
                (FREEZER_CGROUP / "cgroup.procs").write_text(str(p))
        (FREEZER_CGROUP / "freezer.state").write_text("FROZEN")
        print(f"  freeze: rank {sc.action[1]} frozen", file=sys.stderr)
        stop.wait(thaw_s)
        (FREEZER_CGROUP / "freezer.state").write_text("THAWED")
        print("  freeze: thawed", file=sys.stderr)
    elif kind == "tc_flap":
        # from the trigger on, the rank's link drops to `rate` for down_s every period_s (a flapping port)
        _, _, after, rate, down_s, period_s = sc.action
        if _waited4(stop, after, wd):
            return
        ports = sorted({local.rsplit(":", 1)[1] for local, _ in _sockets_of(pid)})
        subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb", "default", "10"], check=True)
        subprocess.run(["tc", "class", "add", "dev", "lo", "parent", "1:", "classid", "1:10", "htb", "rate", "100gbit",
                        "ceil", "100gbit"], check=True, capture_output=True)
        subprocess.run(["tc", "class", "add", "dev", "lo", "parent", "1:", "classid", "1:20", "htb", "rate", "100gbit",
                        "ceil", "100gbit"], check=True, capture_output=True)
        for port in ports:
            for field_ in ("sport", "dport"):
                subprocess.run(["tc", "filter", "add", "dev", "lo", "parent", "1:0", "protocol", "ip", "prio", "1",
                                "u32", "match", "ip", field_, port, "0xffff", "flowid", "1:20"], check=True)
        print(f"  tc_flap: rank {sc.action[1]} ports {ports} {rate} for {down_s}s every {period_s}s", file=sys.stderr)
        while True:
            subprocess.run(["tc", "class", "change", "dev", "lo", "parent", "1:", "classid", "1:20", "htb", "rate",
                            rate, "ceil", rate], capture_output=True)
            if stop.wait(down_s):
                break
            subprocess.run(["tc", "class", "change", "dev", "lo", "parent", "1:", "classid", "1:20", "htb", "rate",
                            "100gbit", "ceil", "100gbit"], capture_output=True)
            if stop.wait(period_s - down_s):
                break
        subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], capture_output=True)


def _act_batch7(sc: Scenario, procs: list[subprocess.Popen], stop: threading.Event, wd: Path) -> None:
    kind = sc.action[0]
    roots = [p.pid for p in procs]
    if kind == "freeze_node":
        # a whole simulated node (its agent and every worker) paused, as a hypervisor pauses a VM (live migration,
        # host maintenance): cgroup v1 freezer, thawed thaw_s later
        _, node, after, thaw_s = sc.action
        if _waited4(stop, after, wd):
            return
        FREEZER_CGROUP.mkdir(exist_ok=True)
        root = procs[node].pid
        for p in [root, *_descendants(root)]:
            with contextlib.suppress(OSError):
                (FREEZER_CGROUP / "cgroup.procs").write_text(str(p))
        (FREEZER_CGROUP / "freezer.state").write_text("FROZEN")
        print(f"  freeze_node: node {node} frozen", file=sys.stderr)
        stop.wait(thaw_s)
        (FREEZER_CGROUP / "freezer.state").write_text("THAWED")
        print("  freeze_node: thawed", file=sys.stderr)
        return
    if kind == "ray_ss_kill":
        # a Ray Train worker's established TCP connections destroyed (ss -K), as a switch or NIC reset does
        _, rank, after = sc.action
        pid = _ray_rank_pid(wd, rank, time.time() + 80)
        if pid is None:
            print(f"  !! ray worker {rank} not found", file=sys.stderr)
            return
        if _waited4(stop, after, wd):
            return
        pairs = _sockets_of(pid)
        for local, peer in pairs:
            lh, lp = local.rsplit(":", 1)
            ph, pp = peer.rsplit(":", 1)
            subprocess.run(["ss", "-K", "dst", ph, "dport", "=", pp, "src", lh, "sport", "=", lp], capture_output=True)
        print(f"  ray_ss_kill: worker {rank} pid {pid}: {len(pairs)} connections", file=sys.stderr)
        return
    pid = _scenario_rank_pid(roots, sc)
    if pid is None:
        return
    # ("rank_quota", rank, after, percent): the rank (and its threads and children) in a CPU cgroup at `percent` of
    # one core (its container's CPU limit lowered, a noisy neighbour's share) | ("worker_quota", rank, after, percent):
    # only the rank's DataLoader workers in that cgroup (its data-loading processes starved of CPU)
    _, _, after, percent = sc.action
    if _waited4(stop, after, wd):
        return
    RANK_CPU_CGROUP.mkdir(exist_ok=True)
    (RANK_CPU_CGROUP / "cpu.cfs_period_us").write_text("100000")
    (RANK_CPU_CGROUP / "cpu.cfs_quota_us").write_text(str(percent * 1000))
    targets = [pid, *_descendants(pid)] if kind == "rank_quota" else _workers_of(pid)
    for p in targets:
        with contextlib.suppress(OSError):
            (RANK_CPU_CGROUP / "cgroup.procs").write_text(str(p))
    print(f"  {kind}: rank {sc.action[1]} pids {targets} at {percent}%", file=sys.stderr)


def _act_batch8(sc: Scenario, procs: list[subprocess.Popen], stop: threading.Event, wd: Path) -> None:
    kind = sc.action[0]
    roots = [p.pid for p in procs]
    pid = _scenario_rank_pid(roots, sc)
    if pid is None:
        return
    if kind == "worker_stop":
        # ("worker_stop", rank, after): one of the rank's DataLoader workers stopped (SIGSTOP) and never continued
        _, _, after = sc.action
        if _waited4(stop, after, wd):
            return
        workers: list[int] = []
        while not workers and not stop.wait(0.05):
            workers = _workers_of(pid)
        if workers:
            os.kill(min(workers), signal.SIGSTOP)
            print(f"  worker_stop: rank {sc.action[1]} worker {min(workers)} of {workers} stopped", file=sys.stderr)
    elif kind == "autogroup_nice":
        # ("autogroup_nice", rank, after, nice): the rank's scheduling group (its session's autogroup, which is what
        # `renice` changes on this host) set to `nice`, as a node's priority daemon does
        _, _, after, nice = sc.action
        if _waited4(stop, after, wd):
            return
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))
        print(f"  autogroup_nice: rank {sc.action[1]} {Path(f'/proc/{pid}/autogroup').read_text().strip()}",
              file=sys.stderr)
    elif kind == "mem_squeeze":
        # ("mem_squeeze", rank, after, headroom_mib): the rank runs in a memory cgroup (v1) from its start, without a
        # limit; from the trigger the limit is its anonymous memory + headroom_mib (the container's limit lowered):
        # the page cache it had is reclaimed and every later read of it faults again
        _, _, after, headroom = sc.action
        CGROUP.mkdir(exist_ok=True)
        for p in [pid, *_descendants(pid)]:
            with contextlib.suppress(OSError):
                (CGROUP / "cgroup.procs").write_text(str(p))
        if _waited4(stop, after, wd):
            return
        stat = dict(line.split() for line in (CGROUP / "memory.stat").read_text().splitlines())
        limit = int(stat["total_rss"]) + headroom * 1024 * 1024
        (CGROUP / "memory.limit_in_bytes").write_text(str(limit))
        print(f"  mem_squeeze: rank {sc.action[1]} rss {int(stat['total_rss']) >> 20} MiB cache "
              f"{int(stat['total_cache']) >> 20} MiB -> limit {limit >> 20} MiB", file=sys.stderr)


def _run_pids(run_id: str) -> list[int]:
    """Batch 9: every process that inherited this run's ZOO_RUN variable (the job's processes)."""
    return [int(p.name) for p in Path("/proc").iterdir()
            if p.name.isdigit() and int(p.name) != os.getpid() and _env_of(int(p.name)).get("ZOO_RUN") == run_id]


def _act_batch9(sc: Scenario, procs: list[subprocess.Popen], stop: threading.Event, wd: Path) -> None:
    kind = sc.action[0]
    if kind == "oom_pause":
        # ("oom_pause", rank, MiB): the rank (and what it forks) in a memory cgroup (v1) of MiB with the OOM killer
        # disabled (memory.oom_control = 1, as a container run with --oom-kill-disable): at the limit the kernel
        # neither reclaims enough nor kills; the rank's allocating thread waits in the cgroup's OOM wait queue
        _, rank, mib = sc.action
        pid = _rank_pid([p.pid for p in procs], rank, sc.file, time.time() + 30)
        if pid is None:
            print(f"  !! rank {rank} not found", file=sys.stderr)
            return
        CGROUP.mkdir(exist_ok=True)
        (CGROUP / "memory.limit_in_bytes").write_text(str(mib * 1024 * 1024))
        (CGROUP / "memory.oom_control").write_text("1")
        (CGROUP / "cgroup.procs").write_text(str(pid))
        print(f"  oom_pause: rank {rank} pid {pid} at {mib} MiB, oom_kill_disable 1", file=sys.stderr)
    elif kind == "blkio_iops":
        # ("blkio_iops", after, mount_dir, iops): from the trigger every process of the job is in a blkio cgroup (v1)
        # whose writes to the block device behind mount_dir (a loop-mounted ext4 set up by the scenario, standing in
        # for a shared filesystem) are throttled to `iops` per second: the filesystem turned slow
        _, after, mnt, iops = sc.action
        if _waited4(stop, after, wd):
            return
        src = subprocess.run(["findmnt", "-no", "SOURCE", str(wd / mnt)], capture_output=True, text=True).stdout.strip()
        dev = subprocess.run(["lsblk", "-no", "MAJ:MIN", src], capture_output=True, text=True).stdout.strip()
        BLKIO_CGROUP.mkdir(exist_ok=True)
        (BLKIO_CGROUP / "blkio.throttle.write_iops_device").write_text(f"{dev} {iops}")
        pids = _run_pids(sc.id)
        for p in pids:
            with contextlib.suppress(OSError):
                (BLKIO_CGROUP / "cgroup.procs").write_text(str(p))
        print(f"  blkio_iops: {src} ({dev}) writes at {iops}/s for {len(pids)} processes", file=sys.stderr)
    elif kind == "swap_squeeze":
        # ("swap_squeeze", rank, after, below_mib): as batch 8's mem_squeeze, but the limit goes BELOW the rank's
        # anonymous memory (total_rss - below_mib) on a node with swap (set up by the scenario), lowered 16 MiB at a
        # time (a single write that far below usage fails with EBUSY): the rank's own pages are swapped out and
        # faulted back in as it touches them
        _, rank, after, below = sc.action
        pid = _rank_pid([p.pid for p in procs], rank, sc.file, time.time() + 30)
        if pid is None:
            print(f"  !! rank {rank} not found", file=sys.stderr)
            return
        CGROUP.mkdir(exist_ok=True)
        for p in [pid, *_descendants(pid)]:
            with contextlib.suppress(OSError):
                (CGROUP / "cgroup.procs").write_text(str(p))
        if _waited4(stop, after, wd):
            return
        stat = dict(line.split() for line in (CGROUP / "memory.stat").read_text().splitlines())
        target = int(stat["total_rss"]) - below * 1024 * 1024
        cur = int(stat["total_rss"])
        give_up = time.time() + 30
        while cur > target and not stop.is_set() and time.time() < give_up:
            nxt = max(target, cur - 16 * 1024 * 1024)
            try:
                (CGROUP / "memory.limit_in_bytes").write_text(str(nxt))
                cur = nxt
            except OSError:  # reclaim (swap-out) still in progress: try the same step again
                stop.wait(0.2)
        got = int((CGROUP / "memory.limit_in_bytes").read_text())
        print(f"  swap_squeeze: rank {rank} rss {int(stat['total_rss']) >> 20} MiB -> limit {got >> 20} MiB",
              file=sys.stderr)


B10_ACTIONS = ("pyspy_record", "strace_attach", "repin", "blkio_read", "blkio_write")


def _act_batch10(sc: Scenario, procs: list[subprocess.Popen], stop: threading.Event, wd: Path) -> None:
    kind = sc.action[0]
    roots = [p.pid for p in procs]
    pid = _scenario_rank_pid(roots, sc)
    if pid is None:
        return
    if kind == "pyspy_record":
        # ("pyspy_record", rank, after, rate): from the trigger on, `py-spy record` samples the rank at `rate` Hz
        # (its default blocking mode: the process is stopped while each sample is read), as an engineer profiling a
        # live job does; ended with the run
        _, _, after, rate = sc.action
        if _waited4(stop, after, wd):
            return
        spy = subprocess.Popen([str(VENV / "bin" / "py-spy"), "record", "--pid", str(pid), "--rate", str(rate),
                                "--threads", "-o", str(wd.parent / f"{sc.id}.pyspy.svg")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        print(f"  pyspy_record: rank {sc.action[1]} pid {pid} at {rate} Hz", file=sys.stderr)
        stop.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(spy.pid, signal.SIGKILL)
    elif kind == "strace_attach":
        # ("strace_attach", rank, after, expr): `strace -f -p` attached to the rank and every thread (a node's
        # syscall auditing / a debugging session left attached); output discarded; detached when the run ends
        _, _, after, expr = sc.action
        if _waited4(stop, after, wd):
            return
        st = subprocess.Popen(["strace", "-f", "-qq", "-e", expr, "-o", "/dev/null", "-p", str(pid)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        print(f"  strace_attach: rank {sc.action[1]} pid {pid} -e {expr}", file=sys.stderr)
        stop.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(st.pid, signal.SIGKILL)
    elif kind == "repin":
        # ("repin", rank, after, cores): every thread of the rank (and its children) re-pinned to `cores`, as a
        # node's CPU manager re-applying a stale cpuset does
        _, _, after, cores = sc.action
        if _waited4(stop, after, wd):
            return
        for p in [pid, *_descendants(pid)]:
            subprocess.run(["taskset", "-a", "-p", "-c", cores, str(p)], capture_output=True)
        print(f"  repin: rank {sc.action[1]} pid {pid} -> cores {cores}", file=sys.stderr)
    elif kind in ("blkio_read", "blkio_write"):
        # ("blkio_read" | "blkio_write", rank, after, mount_dir, bps): from the trigger, the rank (and its children)
        # in a blkio cgroup (v1) whose reads from / writes to the block device behind mount_dir are throttled to `bps`
        # bytes/s (writes: those the rank submits itself, e.g. by fsync)
        _, _, after, mnt, bps = sc.action
        if _waited4(stop, after, wd):
            return
        src = subprocess.run(["findmnt", "-no", "SOURCE", str(wd / mnt)], capture_output=True, text=True).stdout.strip()
        dev = subprocess.run(["lsblk", "-no", "MAJ:MIN", src], capture_output=True, text=True).stdout.strip()
        RANK_BLKIO_CGROUP.mkdir(exist_ok=True)
        rw = "read" if kind == "blkio_read" else "write"
        (RANK_BLKIO_CGROUP / f"blkio.throttle.{rw}_bps_device").write_text(f"{dev} {bps}")
        pids = [pid, *_descendants(pid)]
        for p in pids:
            with contextlib.suppress(OSError):
                (RANK_BLKIO_CGROUP / "cgroup.procs").write_text(str(p))
        print(f"  {kind}: rank {sc.action[1]} {src} ({dev}) {rw}s at {bps} B/s for {pids}", file=sys.stderr)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


NODE_MEM_CGROUP = Path(f"/sys/fs/cgroup/memory/zoo_node{_TAG}")  # batch 48


def _uptime() -> float:
    return float(Path("/proc/uptime").read_text().split()[0])


def _act_node_mem(sc: Scenario, procs: list[subprocess.Popen], stop: threading.Event, wd: Path) -> None:
    """Batch 48: ("node_mem", node, after, mib): from the trigger on, one simulated node's agent and every process under
    it in one memory cgroup (v1) of `mib` MiB (the node's memory, or its pod's limit; `after` 0 = from the agent's start,
    so that everything its processes allocate is charged there): the kernel OOM killer picks its
    largest process when they outgrow it. When the run ends, the host kernel's log lines of that OOM event (from
    'invoked oom-killer' to the kill, as `dmesg` prints them) are written to logs/node<node>/dmesg.txt, as an on-call
    engineer collects them from the node; the cgroup's name in them reads 'node<node>'."""
    _, node, after, mib = sc.action
    t0 = _uptime()
    if _waited4(stop, after, wd):
        return
    root = procs[node].pid
    NODE_MEM_CGROUP.mkdir(exist_ok=True)
    (NODE_MEM_CGROUP / "memory.limit_in_bytes").write_text(str(mib * 1024 * 1024))
    pids = [root, *_descendants(root)]
    for p in pids:
        with contextlib.suppress(OSError):
            (NODE_MEM_CGROUP / "cgroup.procs").write_text(str(p))
    usage = int((NODE_MEM_CGROUP / "memory.usage_in_bytes").read_text()) >> 20
    print(f"  node_mem: node {node} ({len(pids)} processes, {usage} MiB) at {mib} MiB", file=sys.stderr)
    stop.wait()
    lines, keep = [], False
    for line in subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines():
        m = re.match(r"\[\s*(\d+\.\d+)\]", line)
        if not m or float(m.group(1)) < t0:
            continue
        if "invoked oom-killer" in line:
            keep = True
        if keep:
            lines.append(line.replace(f"/zoo_node{_TAG}", f"/node{node}"))
        if "Killed process" in line or "oom_reaper" in line:
            keep = "Killed process" in line  # the reaper's line follows the kill
    if lines:
        out = wd / "logs" / f"node{node}" / "dmesg.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n")
    peak = int((NODE_MEM_CGROUP / "memory.max_usage_in_bytes").read_text()) >> 20
    print(f"  node_mem: peak {peak} MiB, {len(lines)} kernel lines kept", file=sys.stderr)


def _write_dmesg(wd: Path, since: float, name: str) -> None:
    """Batch 53: the host kernel's OOM-killer events since ``since`` (uptime seconds) that happened in this recorder's
    cgroups (``zoo_*<TAG>``; other sessions on the host have their own), written to ``wd/dmesg.txt`` with those cgroup
    names read as ``name``."""
    time.sleep(0.5)  # the reaper's line follows the kill
    out = subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines()
    events, cur = [], None
    for line in out:
        m = re.match(r"\[\s*(\d+\.\d+)\]", line)
        if not m or float(m.group(1)) < since:
            continue
        if "invoked oom-killer" in line:
            cur = [line]
            events.append(cur)
        elif cur is not None:
            cur.append(line)
            if "Killed process" in line:
                cur = None
        elif "oom_reaper" in line and events:
            events[-1].append(line)
    cg = re.compile(rf"/zoo_[a-z0-9]+{re.escape(_TAG)}[A-Za-z0-9_]*") if _TAG else None
    lines = []
    for ev in events:
        if cg is None or not any(cg.search(x) for x in ev):
            continue
        lines += [cg.sub(name, x) if cg else x for x in ev]
    if lines:
        (wd / "dmesg.txt").write_text("\n".join(lines) + "\n")
    print(f"  dmesg: {len(lines)} kernel lines kept", file=sys.stderr)


def _act_ranks_quota(sc: Scenario, procs: list[subprocess.Popen], stop: threading.Event, wd: Path) -> None:
    """Batch 41: ("ranks_quota", nranks, after, percent): every rank in a CPU cgroup (v1) of its own at `percent` of
    one core from the trigger on (each rank's container limit lowered, as a resize of every pod of the job does)."""
    _, nranks, after, percent = sc.action
    roots = [p.pid for p in procs]
    pids = [_rank_pid(roots, r, sc.file, time.time() + 40) for r in range(nranks)]
    if _waited4(stop, after, wd):
        return
    for r, pid in enumerate(pids):
        if pid is None:
            print(f"  !! rank {r} not found", file=sys.stderr)
            continue
        cg = CPU_CGROUP.parent / f"{RANKS_CPU_PREFIX}{r}"
        cg.mkdir(exist_ok=True)
        (cg / "cpu.cfs_period_us").write_text("100000")
        (cg / "cpu.cfs_quota_us").write_text(str(percent * 1000))
        for p in [pid, *_descendants(pid)]:
            with contextlib.suppress(OSError):
                (cg / "cgroup.procs").write_text(str(p))
        print(f"  ranks_quota: rank {r} pid {pid} at {percent}%", file=sys.stderr)


def _act_ranks_tc_rate(sc: Scenario, procs: list[subprocess.Popen], stop: threading.Event, wd: Path) -> None:
    """Batch 42: ("ranks_tc_rate", nranks, after, rate): from the trigger, the established TCP connections of every
    rank (their local ports on lo) go through one htb class of `rate` (tc), as a job's links through a degraded
    switch or an oversubscribed uplink do; removed when the run ends."""
    _, nranks, after, rate = sc.action
    roots = [p.pid for p in procs]
    pids = [_rank_pid(roots, r, sc.file, time.time() + 40) for r in range(nranks)]
    if _waited4(stop, after, wd):
        return
    ports = sorted({local.rsplit(":", 1)[1] for pid in pids if pid is not None for local, _ in _sockets_of(pid)})
    _lo_rate_limit(ports, rate)
    print(f"  ranks_tc_rate: ranks {list(range(nranks))} pids {pids} ports {ports} at {rate}", file=sys.stderr)
    stop.wait()
    subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], capture_output=True)


def _lo_rate_limit(ports: list[str], rate: str) -> None:
    """Send the loopback traffic of ``ports`` (either end) through one HTB class at ``rate`` (tc syntax, e.g.
    ``28gbit``); other loopback traffic is left at 100gbit. Removed with ``tc qdisc del dev lo root``."""
    subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb", "default", "10"], check=True)
    for cid, r in (("1:10", "100gbit"), ("1:20", rate)):
        subprocess.run(["tc", "class", "add", "dev", "lo", "parent", "1:", "classid", cid, "htb", "rate", r, "ceil", r],
                       check=True, capture_output=True)
    for port in ports:
        for field_ in ("sport", "dport"):
            subprocess.run(["tc", "filter", "add", "dev", "lo", "parent", "1:0", "protocol", "ip", "prio", "1",
                            "u32", "match", "ip", field_, port, "0xffff", "flowid", "1:20"], check=True)


def _job_cgroups(sc: Scenario) -> list[Path]:
    """Batch 6: create the job's memory / pids cgroups (v1) before it starts; the launcher joins them in preexec."""
    out = []
    if sc.job_mem_mib:
        JOB_MEM_CGROUP.mkdir(exist_ok=True)
        (JOB_MEM_CGROUP / "memory.limit_in_bytes").write_text(str(sc.job_mem_mib * 1024 * 1024))
        out.append(JOB_MEM_CGROUP)
    if sc.job_pids_max:
        JOB_PIDS_CGROUP.mkdir(exist_ok=True)
        (JOB_PIDS_CGROUP / "pids.max").write_text(str(sc.job_pids_max))
        out.append(JOB_PIDS_CGROUP)
    return out


def _leftovers(run_id: str) -> None:
    """Kill what the job left running (Ray's raylet, GCS and idle workers outlive a killed driver): every process
    that inherited this run's ZOO_RUN variable."""
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and int(p.name) != os.getpid() and _env_of(int(p.name)).get("ZOO_RUN") == run_id:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(p.name), signal.SIGKILL)


def _act(sc: Scenario, proc: subprocess.Popen, stop: threading.Event, procs: list | None = None,
         wd: Path | None = None) -> None:
    if not sc.action or sc.action[0] == "hold_port":
        return
    kind = sc.action[0]
    if kind == "both":  # batch 44: two actions at once, each on a copy of the scenario carrying one of them
        import dataclasses

        ths = [threading.Thread(target=_act, args=(dataclasses.replace(sc, action=a), proc, stop, procs, wd),
                                daemon=True) for a in sc.action[1:]]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        return
    if kind == "node_quota":  # batch 46: one node's agent tree in the job's CPU cgroup (removed after the run)
        _, node, after, percent = sc.action
        if _waited4(stop, after, wd):
            return
        root = (procs or [proc])[node].pid
        _cpu_quota([root], percent)
        print(f"  node_quota: node {node} (agent {root}, {len(_descendants(root))} processes) at {percent}%",
              file=sys.stderr)
        return
    if kind == "node_mem":  # batch 48
        _act_node_mem(sc, procs or [proc], stop, wd)
        return
    if kind == "kill_node_agent":
        # batch 48: ("kill_node_agent", node, sig, after): the signal to the node's torchrun itself (found under the
        # node's wrapper, e.g. PID 1 of its container's PID namespace), not to its workers
        _, node, sig, after = sc.action
        if _waited4(stop, after, wd):
            return
        root = (procs or [proc])[node].pid
        agents = [p for p in [root, *_descendants(root)]  # the agent itself, not a wrapper naming it in its argv
                  if any(a.endswith(b"/torchrun") or a in (b"torchrun", b"torch.distributed.run")
                         for a in _cmdline(p).split(b"\0")[:3])]
        if not agents:
            print(f"  !! node {node}: no torchrun found", file=sys.stderr)
            return
        os.kill(agents[0], sig)
        print(f"  kill_node_agent: node {node} torchrun pid {agents[0]} signal {sig}", file=sys.stderr)
        return
    if kind == "shell4":
        # batch 39: ("shell4", after, bash) as "shell", but the trigger (a line fragment) is also looked for in the
        # job's logs/ files (a launcher writing one file per pod): the command runs once it appears
        _, after, cmd = sc.action
        if not _waited4(stop, after, wd):
            subprocess.run(["bash", "-c", cmd], cwd=wd)
        return
    if kind == "ranks_quota":  # batch 41
        _act_ranks_quota(sc, procs or [proc], stop, wd)
        return
    if kind == "ranks_tc_rate":  # batch 42
        _act_ranks_tc_rate(sc, procs or [proc], stop, wd)
        return
    if kind in B10_ACTIONS:  # batch 10
        _act_batch10(sc, procs or [proc], stop, wd)
        return
    if kind in ("oom_pause", "blkio_iops", "swap_squeeze"):  # batch 9
        _act_batch9(sc, procs or [proc], stop, wd)
        return
    if kind in ("worker_stop", "autogroup_nice", "mem_squeeze"):  # batch 8
        _act_batch8(sc, procs or [proc], stop, wd)
        return
    if kind in ("freeze_node", "rank_quota", "worker_quota", "ray_ss_kill"):  # batch 7
        _act_batch7(sc, procs or [proc], stop, wd)
        return
    if kind.startswith("ray_"):
        _act_ray(sc, stop, wd)
        return
    deadline = time.time() + 30
    if kind in ("hogx", "stopcont_until", "stall_every", "quota_until", "pin_hogx"):
        _act_batch4(sc, procs or [proc], stop, wd)
        return
    if kind in ("freeze", "tc_flap", "cpuset_shrink"):
        _act_batch6(sc, procs or [proc], stop, wd)
        return
    if kind in ("worker_cgroup", "kill_when_file", "pyspy", "tc_rate"):
        _act_batch5(sc, procs or [proc], stop, wd)
        return
    if kind in ("ss_kill", "kill_node", "kill_node_launcher", "shell", "hog", "pin_hog", "stopcont", "cpu_quota"):
        _act_batch2(sc, procs or [proc], stop, wd)
        return
    stop = _StopAfter(stop, wd)  # batch 3: "kill" and "kill_launcher" also take a console line fragment
    if kind == "kill_launcher":
        _, sig, after = sc.action
        if not stop.wait(after):
            os.kill(proc.pid, sig)  # bash execs the launcher
        return
    pid = _rank_pid(procs and [p.pid for p in procs] or proc.pid, sc.action[1], sc.file, deadline)
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


def _ports(value: str, port: int) -> str:
    """A scenario's environment value with its ports filled in: {port}, and (batch 34) the ports of services the
    job uses, {port_asset} (the scenario's port + 3) and {port_mirror1} (+ 4, the second node's)."""
    return (value.replace("{port_asset}", str(port + 3)).replace("{port_mirror1}", str(port + 4))
            .replace("{port}", str(port)))


def record(sc: Scenario, i: int) -> None:
    global _KEEP
    _KEEP = sc.keep  # batch 65
    wd = WORK / sc.id
    if wd.exists():
        shutil.rmtree(wd)
    wd.mkdir(parents=True)
    shutil.copy(SCRIPTS / f"{sc.id}.py", wd / sc.file)
    port = _port(i)
    env = {k: v for k, v in os.environ.items() if k not in sc.unset and not k.startswith(("MASTER_", "TORCH", "RANK"))}
    env.update(PATH=f"{VENV}/bin:{env['PATH']}", PYTHONUNBUFFERED="1", ZOO_PORT=str(port), ZOO_RUN=sc.id)
    env.update({k: _ports(v, port) for k, v in sc.env.items()})
    env.pop("VIRTUAL_ENV", None)
    if sc.setup:
        # batch 7: {port_asset} is a port of a service the job uses (the scenario's port + 3)
        setup = sc.setup.replace("{port_asset}", str(port + 3)).replace("{port}", str(port))
        subprocess.run(["bash", "-c", setup], cwd=wd, env=env, check=True)
    cmd = sc.cmd.replace("{port}", str(port))
    holder = None
    if sc.action and sc.action[0] == "hold_port":
        holder = socket.socket()
        holder.bind(("0.0.0.0", port))
        holder.listen()
    load_before = Path("/proc/loadavg").read_text().split()[0]
    uptime0 = _uptime()  # batch 53: the kernel's clock at the job's start (dmesg)
    t0 = time.time()
    if sc.cmd2:
        rc = _run_two_nodes(sc, cmd, wd, env, port)
    else:
        with open(wd / "console.log", "wb") as out:
            out.write(f"$ {cmd}\n".encode())
            out.flush()
            argv = ["bash", "-c", cmd]
            if sc.shm_mb:  # batch 5: the container's /dev/shm size, in a mount namespace of the job's own
                argv = ["unshare", "-m", "--propagation", "private", "bash", "-c",
                        f"mount -t tmpfs -o size={sc.shm_mb}m tmpfs /dev/shm && exec bash -c {shlex.quote(cmd)}"]
            proc = subprocess.Popen(_nodac(sc, argv), cwd=wd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=_limits(sc),
                                    stdin=subprocess.PIPE if sc.stdin_open else None)  # batch 8
            stop = threading.Event()
            th = threading.Thread(target=_act, args=(sc, proc, stop, None, wd), daemon=True)
            th.start()
            try:
                rc = proc.wait(HARD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
                print(f"  !! {sc.id}: hard timeout", file=sys.stderr)
            stop.set()
            th.join(5)
    if sc.orphans_s:  # batch 53: orphaned workers of a launcher that died run on until they end by themselves
        end = time.time() + sc.orphans_s
        while _run_pids(sc.id) and time.time() < end:
            time.sleep(0.2)
        left = _run_pids(sc.id)
        print(f"  orphans: {len(left)} of the job's processes still running after the launcher's end", file=sys.stderr)
    _leftovers(sc.id)
    if holder:
        holder.close()
    if sc.teardown:
        subprocess.run(["bash", "-c", sc.teardown], cwd=wd)
    if CGROUP.exists():
        _rmcgroup()
    if CPU_CGROUP.exists():
        _rmcgroup(CPU_CGROUP)
    if RANK_CPU_CGROUP.exists():  # batch 7
        _rmcgroup(RANK_CPU_CGROUP)
    if BLKIO_CGROUP.exists():  # batch 9
        _rmcgroup(BLKIO_CGROUP)
    if RANK_BLKIO_CGROUP.exists():  # batch 10
        _rmcgroup(RANK_BLKIO_CGROUP)
    for cg in sorted(CPU_CGROUP.parent.glob(f"{RANKS_CPU_PREFIX}*")):  # batch 41
        _rmcgroup(cg)
    if NODE_MEM_CGROUP.exists():  # batch 48
        _rmcgroup(NODE_MEM_CGROUP)
    for cg in (JOB_MEM_CGROUP, JOB_PIDS_CGROUP, FREEZER_CGROUP):  # batch 6
        if cg.exists():
            if cg == FREEZER_CGROUP:
                with contextlib.suppress(OSError):
                    (cg / "freezer.state").write_text("THAWED")
            _rmcgroup(cg)
    dt = time.time() - t0
    if sc.dmesg:  # batch 53
        _write_dmesg(wd, uptime0, sc.dmesg)
    load_after = Path("/proc/loadavg").read_text().split()[0]
    dest = (ZOO / "clean" / "runs" if sc.clean else RUNS) / sc.id
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for con in sorted([*wd.glob("console*.log"), *wd.glob("dmesg.txt")]):  # dmesg.txt: batch 53
        _copy_rewritten(con, dest / con.name, wd)
    for f in _kept_files(wd):  # batch 65: per-rank / per-task / per-node files outside logs/
        target = dest / f.relative_to(wd)
        target.parent.mkdir(parents=True, exist_ok=True)
        _copy_rewritten(f, target, wd)
    for sub in ("logs", "dumps", "fr"):  # dumps/: batch 5's py-spy snapshots; fr/: batch 44's Flight Recorder dumps
        if not (wd / sub).is_dir():
            continue
        for f in sorted((wd / sub).rglob("*")):
            if f.is_file():
                target = dest / sub / f.relative_to(wd / sub)
                target.parent.mkdir(parents=True, exist_ok=True)
                if sub == "fr":
                    _copy_fr_rewritten(f, target, wd)
                else:
                    _copy_rewritten(f, target, wd)
    print(f"{sc.id}: rc={rc} {dt:.1f}s load {load_before} -> {load_after}")


def _limits(sc: Scenario):
    cgroups = _job_cgroups(sc)
    if not sc.nofile and not sc.fsize and not sc.cpu_s and not cgroups:
        return None

    def apply() -> None:
        import resource

        if sc.nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (sc.nofile, sc.nofile))
        if sc.fsize:  # batch 6
            resource.setrlimit(resource.RLIMIT_FSIZE, (sc.fsize, sc.fsize))
        if sc.cpu_s:  # batch 10: soft limit SIGXCPU, hard limit a little later (SIGKILL), as the kernel does
            resource.setrlimit(resource.RLIMIT_CPU, (sc.cpu_s, sc.cpu_s + 30))
        for cg in cgroups:  # batch 6: the job's container cgroups
            with open(cg / "cgroup.procs", "w") as fh:
                fh.write(str(os.getpid()))

    return apply


def _run_two_nodes(sc: Scenario, cmd: str, wd: Path, env: dict[str, str], port: int) -> int:
    """Two launcher agents on this host, each as a node with its own terminal (console_node<k>.log)."""
    # batch 5: {port_next} is the port after the scenario's (a second node typed with another port)
    cmds = [cmd, sc.cmd2.replace("{port}", str(port)).replace("{port_next}", str(port + 1))]
    procs, outs = [], []
    for k, c in enumerate(cmds):
        if k:
            time.sleep(sc.cmd2_delay_s)
        out = open(wd / f"console_node{k}.log", "wb")  # noqa: SIM115 (closed below, after both agents end)
        out.write(f"$ {c}\n".encode())
        out.flush()
        outs.append(out)
        argv = ["bash", "-c", c]
        if not k and sc.hosts1:  # batch 59: node 0's own /etc/hosts
            argv = ["unshare", "-m", "--propagation", "private", "bash", "-c",
                    f"mount --bind {shlex.quote(sc.hosts1)} /etc/hosts && exec bash -c {shlex.quote(c)}"]
        if k and sc.netns2:  # batch 6: node 1 in its own network namespace
            argv = ["ip", "netns", "exec", sc.netns2, *argv]
        if k and sc.mask2:  # batch 11
            argv = ["unshare", "-m", "--propagation", "private", "bash", "-c",
                    f"mount -t tmpfs -o size={sc.mask2_size or '1m'} tmpfs {shlex.quote(sc.mask2)} && "
                    f"exec bash -c {shlex.quote(c)}"]
        if k and sc.hosts2:  # batch 19
            argv = ["unshare", "-m", "--propagation", "private", "bash", "-c",
                    f"mount --bind {shlex.quote(sc.hosts2)} /etc/hosts && exec bash -c {shlex.quote(c)}"]
        if k and (sc.shm2_mb or sc.bind2 or sc.pidns2):  # batch 48: node 1's container
            mounts = []
            if sc.shm2_mb:
                mounts.append(f"mount -t tmpfs -o size={sc.shm2_mb}m tmpfs /dev/shm")
            if sc.bind2:
                src, dst = sc.bind2.split(":")
                mounts.append(f"mount --bind {shlex.quote(src)} {shlex.quote(dst)}")
            inner = " && ".join([*mounts, f"exec bash -c {shlex.quote(c)}"])
            argv = ["unshare", "-m", "--propagation", "private", *(["-p", "-f", "--mount-proc"] if sc.pidns2 else []),
                    "bash", "-c", inner]
            if sc.netns2:
                argv = ["ip", "netns", "exec", sc.netns2, *argv]
        env2 = {key: _ports(v, port) for key, v in sc.env2.items()}  # batch 34: ports in the second node's profile
        env_k = {key: v for key, v in {**env, **env2}.items() if key not in sc.unset2} if k else env  # batch 61
        procs.append(subprocess.Popen(_nodac(sc, argv), cwd=wd, env=env_k, stdout=out,
                                      stderr=subprocess.STDOUT, start_new_session=True))
    stop = threading.Event()
    th = threading.Thread(target=_act, args=(sc, procs[0], stop, procs, wd), daemon=True)
    th.start()
    end = time.time() + HARD_TIMEOUT_S
    rcs = []
    for p in procs:
        try:
            rcs.append(p.wait(max(1.0, end - time.time())))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            rcs.append(p.wait())
            print(f"  !! {sc.id}: hard timeout", file=sys.stderr)
    stop.set()
    th.join(5)
    for out in outs:
        out.close()
    return max(rcs, key=abs)


def _rmcgroup(path: Path = CGROUP) -> None:
    # move what is left back to the root before removing
    if path in (CPU_CGROUP, RANK_CPU_CGROUP, FREEZER_CGROUP, BLKIO_CGROUP, RANK_BLKIO_CGROUP) or \
            path.name.startswith(RANKS_CPU_PREFIX):  # batch 41
        for pid in (path / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (path.parent / "cgroup.procs").write_text(pid)
    for _ in range(50):
        try:
            path.rmdir()
            return
        except OSError:
            time.sleep(0.1)


def _copy_rewritten(src: Path, dst: Path, wd: Path) -> None:
    text = src.read_bytes().decode(errors="surrogateescape")
    for a, b in [(str(wd), "/home/user/proj"), *REWRITES]:
        text = text.replace(a, b)
    dst.write_bytes(text.encode(errors="surrogateescape"))


def _copy_fr_rewritten(src: Path, dst: Path, wd: Path) -> None:
    """Batch 44: a Flight Recorder dump (a pickled dict, as ``_dump_fr_trace()`` returns it) with the paths in its
    strings (the frames' file names) rewritten like the text files: loaded, rewritten, pickled again (a byte-level
    replacement would break the pickle's string lengths). Anything that is not a pickle is copied as text."""
    import pickle

    pairs = [(str(wd), "/home/user/proj"), *REWRITES]

    def fix(o):
        if isinstance(o, str):
            for a, b in pairs:
                o = o.replace(a, b)
            return o
        if isinstance(o, dict):
            return {fix(k): fix(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return type(o)(fix(x) for x in o)
        return o

    try:
        obj = pickle.loads(src.read_bytes())
    except Exception:  # noqa: BLE001 (a JSON or text dump)
        _copy_rewritten(src, dst, wd)
        return
    dst.write_bytes(pickle.dumps(fix(obj)))


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
