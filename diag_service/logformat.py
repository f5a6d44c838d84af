"""Knowledge of how training launchers format log lines: per-line prefixes and timestamps.

A library, not a stage: ingest uses it to detect each file's layout, extract uses it to attribute
candidate lines to a rank and node and to read their time.

Prefixes recognised (outermost first, several may nest, e.g. ``0: [default3]:``):

- ``[rank7]:`` PyTorch C++/Python logging with the global rank (torch >= 2.2).
- ``[default3]:`` / ``[trainer3]:`` torchrun ``--tee`` output: ``[${role_name}${local_rank}]:``
  (torch.distributed.elastic LocalElasticAgent docs); ``[12]:`` when the template is ``[${rank}]:``.
- ``3: `` Slurm ``srun -l`` task label (the task id; the rank when srun starts one task per GPU,
  the node index when it starts one torchrun per node).
- ``gpu-node-040: `` pdsh / DeepSpeed launcher host prefix.
- ``(RayTrainWorker pid=2123, ip=10.0.0.2) `` Ray's driver echoing a worker's, actor's or daemon's
  output (``(raylet)``, ``(pid=81331)``); SkyPilot's ``(head, rank=0, pid=4773)`` / ``(worker1, rank=1,
  pid=…, ip=…)`` on multi-node tasks. The ``ip`` (or SkyPilot's node name) is the node.
- ``trainer/0 `` TorchX's ``{role}/{replica}`` in front of each replica's lines (``torchx log``; a replica is one
  node's torchrun agent), read only before a torchrun ``[roleN]:`` / ``[rankN]:`` prefix; stripped (it names no host).
- ``2024-03-14T13:02:41.118123456Z `` a log collector's stamp in front of every line
  (``kubectl logs --timestamps``, ``docker logs -t``), outside all the others.

NCCL's own lines carry ``host:pid:tid [cudaDev]`` (NCCL_DEBUG docs), and c10d messages carry
``[Rank N]``; both are read from the line body.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date as _date

# --- prefixes -------------------------------------------------------------------------------------

RANK_PREFIX = re.compile(r"\[rank(\d{1,6})\]:\s?")
#: TorchX's replica prefix (``{role}/{replica_id} ``, torchx's log streaming), only right before torchrun's tee prefix;
#: a role name may start with a digit (a CI job's ``4-task-1-0/0 [default7]:[rank7]: ...``, corpus dev n42d-005)
TORCHX_PREFIX = re.compile(r"(\w[\w.-]{0,63}/\d{1,5}) (?=\[[A-Za-z_]*\d{1,6}\]:)")
ROLE_PREFIX = re.compile(r"\[([A-Za-z_][A-Za-z_]*?)(\d{1,6})\]:\s?")
NUM_PREFIX = re.compile(r"\[(\d{1,6})\]:\s?")
SRUN_PREFIX = re.compile(r"\s{0,5}(\d{1,6}): ")
#: Open MPI's ``mpirun --tag-output`` (``[jobid,rank]<stdout>:``; also horovodrun, which passes it on),
#: and Horovod's Gloo launcher (``[rank]<stderr>:``). The number after the comma is MPI_COMM_WORLD rank
#: (https://docs.open-mpi.org/en/main/man-openmpi/man1/mpirun.1.html, ``--tag-output``). With
#: ``--timestamp-output`` as well, the tag starts with the C library's ``ctime()`` text, its newline removed
#: (``Tue Nov 27 13:49:06 2018[1,10]<stdout>:``; Open MPI's orte/mca/iof/base/iof_base_output.c).
MPI_PREFIX = re.compile(
    r"(?P<ts>(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}\d{1,2} "
    r"\d\d:\d\d:\d\d \d{4})?\[(?:\d{1,9},)?(?P<rank>\d{1,6})\]<std(?:out|err|diag)>:\s?"
)
#: Ray's prefix on output it forwards to the driver: ``(<actor or task name> pid=<pid>[, ip=<ip>])``,
#: ``(pid=<pid>)``, ``(raylet[, ip=<ip>])`` and its other daemons (Ray's worker.py print_worker_logs and
#: the "Log deduplication" section of https://docs.ray.io/en/latest/ray-observability/user-guides/
#: configure-logging.html); SkyPilot's ``(head, rank=0, pid=N[, ip=...])`` / ``(worker1, rank=1, ...)``
#: (the rank there is the node's, SKYPILOT_NODE_RANK). A name alone needs ``pid=``/``ip=``/``rank=`` or a
#: Ray daemon's name, so that a shell prompt's ``(venv) `` is not taken for one. A prefix with nothing after it (an empty
#: line the worker printed, or a paste cut right after the prefix) is one too (a new user's trial 46, p03: the bare
#: "(SGLangWorker pid=8544)" ending a cut traceback was read as its exception line).
RAY_PREFIX = re.compile(
    r"\((?:(?P<name>[A-Za-z_][\w.:<>-]{0,80})(?: pid=\d+)?(?:, ?(?:rank|pid|ip|node)=[\w.:-]{1,64})*"
    r"|pid=\d+(?:, ?ip=[\w.:-]{1,64})?)\)(?: ?\[repeated \d+x across cluster\])?(?: |$)"
)
_RAY_DAEMONS = frozenset({"raylet", "gcs_server", "autoscaler", "monitor", "dashboard", "dashboard_agent",
                          "log_monitor", "runtime_env_agent"})
_RAY_REPEATED = re.compile(r" ?\[repeated \d+x across cluster\]$")  # Ray's log deduplication
_RAY_IP = re.compile(r"\bip=([\w.:-]+)")


_RAY_PID = re.compile(r"\bpid=(\d+)")


def _ray_prefix(text: str) -> tuple[int, str | None, int | None] | None:
    """(end of Ray's or SkyPilot's prefix, node it names, pid it names) when ``text`` starts with one, else None."""
    m = RAY_PREFIX.match(text)
    if m is None:
        return None
    head = m.group(0)
    name = m.group("name")
    if name is not None and "pid=" not in head and "ip=" not in head and "rank=" not in head \
            and name not in _RAY_DAEMONS:
        return None
    ip = _RAY_IP.search(head)
    node = ip.group(1) if ip else (name if name and "rank=" in head else None)
    pid = _RAY_PID.search(head) if "pid=" in head else None
    return m.end(), node, int(pid.group(1)) if pid else None


# A host name: letters, digits, dots, dashes; must contain a digit or a dash so that words such as
# "RuntimeError: " or "INFO: " are never mistaken for hosts.
#: A syslog line as /var/log/syslog, /var/log/messages and `journalctl -o short` write it: the time, the host,
#: the program and its pid (``Nov 30 03:12:55 gpu-node-042 kernel: NVRM: Xid ...``). The host is the node.
SYSLOG_PREFIX = re.compile(
    r"((?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}\d{1,2} \d\d:\d\d:\d\d) "
    r"([A-Za-z0-9][A-Za-z0-9.-]{0,62}) [A-Za-z_][\w./-]{0,63}(?:\[\d+\])?: "
)
HOST_PREFIX = re.compile(r"((?=[A-Za-z0-9.-]*[0-9-])[A-Za-z0-9][A-Za-z0-9.-]{0,62}): ")
_NOT_HOSTS = re.compile(r"(?i)^(?:.*(?:error|exception|warning)|info|warn|debug|fatal|note|error|nccl)$")

NCCL_ORIGIN = re.compile(r"(?:^|\s)([A-Za-z0-9][\w.-]*):(\d+):(\d+) \[(\d+)\] (?:\S+ )?NCCL ")
#: What every NCCL_ORIGIN match holds, led by a literal: ``re`` jumps between colons, where NCCL_ORIGIN tries a host
#: name after every space (~15 us on a 150-character ``ProcessGroupNCCL.cpp`` line without an origin)
_NCCL_ORIGIN_HINT = re.compile(r":\d+:\d+ \[\d+\] ")
#: Lines that name the rank they are about: PyTorch's ``[Rank N]`` / ``[PG ... Rank N]``, NCCL's ``rank N nranks M``,
#: scripts' ``Rank N:`` / ``[rank: N]`` / ``[rankN] `` at the start of a line, a Python logging format's ``[rank N]``
#: field at the start or after a bracketed time (``[2026-12-04 10:11:12,345][rank 1][ERROR] ...``) or after a plain
#: time and level (``2026-12-06 07:28:25,161 INFO [rank1] step 10/300 ...``: a script's own logging format) or after
#: Python logging's ``%(asctime)s - %(levelname)s - %(name)s - `` (``... - ERROR - __main__ - [RANK 1] ...``),
#: Open MPI's ``mpirun noticed that process rank N``, MPICH's ``Abort(c) on
#: node n (rank N in comm 0): Fatal error in ...`` (the process that aborted), and PaddlePaddle's launcher ``Container
#: rank N status failed`` (paddle.distributed.launch's report of the failed worker), and MosaicML Composer's launcher
#: ``Rank N crashed with exit code C`` and ``Global rank N (PID P) exited with code C`` (composer/cli/launcher.py),
#: horovodrun's gloo launcher's ``Process N exit with status code C.`` and ``Terminating remaining workers after failure
#: of Process N.`` (N the slot's rank; horovod/runner/gloo_run.py), and PyTorch Lightning's ``DeadlockDetectedException:
#: DeadLock detected from rank: N`` (the rank whose exception it re-raises; strategies/ddp.py reconciliate_processes),
#: and HPE Cray PALS ``mpiexec``'s report of a rank that ended, ``<host>: rank N exited with code C`` / ``rank N died
#: from signal S [and dumped core]`` (ALCF Polaris/Aurora; pmodels/mpich#7569, saforem2/ezpz#210), and Megatron-Core's
#: rerun state machine, ``Unexpected result nan on rank N at iteration #I`` / ``Rank N, node H, device D, iteration I:
#: Unexpected result ...`` (megatron/core/rerun_state_machine.py).
INLINE_RANK = re.compile(
    r"\[(?:PG [^\]]*?)?Rank (\d{1,6})\]|\brank[ :=]\s?(\d{1,6}) nranks \d+|^Rank (\d{1,6}):"
    r"|^\[?(?:rank|RANK)\s?[:=]\s*(\d{1,6})\]?\s?[|:\]]|^\[rank(\d{1,6})\] "
    r"|^(?:\[\d{4}-\d\d-\d\d[ T][\d:.,]+\]\s?)?\[(?:rank|RANK) (\d{1,6})\]\s?[\[:]"
    r"|^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})? (?:\[?(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\]? )?"
    r"\[(?:rank|RANK) ?(\d{1,6})\] "
    r"|^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})? - (?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL) - [\w.]{1,80} - "
    r"\[(?:rank|RANK) ?(\d{1,6})\] "
    r"|^mpirun noticed that process rank (\d{1,6}) with PID"
    r"|^Abort\(-?\d+\) on node \d+ \(rank (\d{1,6}) in comm \d+\)"
    r"|^Container rank (\d{1,6}) status failed"
    r"|(?:^|composer\.cli\.launcher:)Rank (\d{1,6}) crashed with exit code|\bGlobal rank (\d{1,6}) \(PID \d+\) exited with code"
    r"|^Process (\d{1,6}) exit with status code|Terminating remaining workers after failure of Process (\d{1,6})\."
    r"|DeadlockDetectedException: DeadLock detected from rank: (\d{1,6})"
    r"|(?:^|: )rank (\d{1,6}) (?:exited with code -?\d+|died from signal \d+)"
    r"|\bUnexpected result \S+ on rank (\d{1,6}) at iteration #"
    r"|(?:^|Error: )Rank (\d{1,6}), node \S+, device \d+, iteration -?\d+:"
)
#: Python multiprocessing's name of a process started by torch.multiprocessing.spawn, as a logging format's
#: ``%(processName)s`` or multiprocessing's own "Process SpawnProcess-2:" header prints it: spawn starts processes 0..n-1
#: in order and multiprocessing numbers a parent's children from 1, so ``SpawnProcess-N`` is rank N - 1 (the zoo's spawn
#: runs log "SpawnProcess-1 ... rank 0", "SpawnProcess-2 ... rank 1"). Read only when the line names no rank otherwise.
SPAWN_PROCESS = re.compile(r"(?:^|(?<=[\s\[(]))SpawnProcess-(\d{1,5})(?=[\]\s:)]|$)")
#: The JAX / XLA coordination service's report of a task that failed: its heartbeat lost (``/job:jax_worker/replica:0/
#: task:37 has been set to ERROR in coordination service``, ``Task .../task:3 heartbeat timeout``) or restarted
#: (``task:1 unexpectedly tried to connect with a different incarnation``); the task id is the JAX process index
#: (tsl/distributed_runtime/coordination/coordination_service.cc).
JAX_TASK = re.compile(
    r"/job:[\w-]+/replica:\d+/task:(\d{1,6}) (?:has been set to ERROR|unexpectedly tried to connect|heartbeat timeout)"
)
#: Slurm's report of tasks that ended abnormally: ``srun: error: gpu-node-001: task 3: Out Of Memory``,
#: ``srun: error: gpu-node-001: tasks 0-2: Aborted (core dumped)`` (task = SLURM_PROCID; the host is the node the tasks
#: ran on; srun's own wording). Groups: ``host``, ``tasks`` (one id, or a list/range), ``status``.
SRUN_REPORT = re.compile(r"^srun: error: (?P<host>\S+): tasks? (?P<tasks>[\d,\-]+): (?P<status>.+)$")

#: Determined AI's trial logs (``det trial logs``, the web UI's copy): ``[<UTC time>] <container id, 8 hex digits>
#: [rank=N] || <level>: <line>`` (master/static/srv/get_trial_logs.sql: ``[YYYY-MM-DD"T"HH24:MI:SS"Z"]``, then the
#: container id cut to 8 characters or ``[UNKNOWN CONTAINER]``, then `` [rank=N]`` where the line has a rank, then
#: `` || ``); an empty container shows as ``[]``. The ``[rank=N] `` itself is the launch wrapper's
#: (determined/launch/wrap_rank.py prefixes each line of a worker's output). Read only with the container and the rank
#: both present, so that a script's own ``[rank=N]`` lines are left to :data:`INLINE_RANK`.
DETERMINED_PREFIX = re.compile(
    r"(?:\[(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z)\] |\[UNKNOWN TIME\] )?"
    r"(?:[0-9a-f]{8} |\[UNKNOWN CONTAINER\] |\[[0-9a-f]{0,64}\] )\[rank=(?P<rank>\d{1,6})\] (?:\|\| )?"
)

# RFC 3339 with nanoseconds and a zone, then one space: what kubectl/docker put before each line.
COLLECTOR_TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d):? ")

PREFIX_KINDS = ("stamp", "syslog", "torchx", "ray", "mpi", "rank", "role", "num", "srun", "host")


def _unnamed(pattern: str) -> str:
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


#: MPI_PREFIX, SRUN_PREFIX, RANK_PREFIX, ROLE_PREFIX, NUM_PREFIX and HOST_PREFIX in one alternation, in the order
#: detect_prefixes tries them: a match at a line's start is the first of them that matches there (the group named
#: after its kind; ``hostname``: HOST_PREFIX's group 1), in one call instead of up to six
_ANY_PREFIX = re.compile(
    f"(?P<mpi>{_unnamed(MPI_PREFIX.pattern)})|(?P<srun>{SRUN_PREFIX.pattern})|(?P<rank>{RANK_PREFIX.pattern})"
    f"|(?P<role>{ROLE_PREFIX.pattern})|(?P<num>{NUM_PREFIX.pattern})"
    f"|(?P<host>{HOST_PREFIX.pattern.replace('(', '(?P<hostname>', 1)})"
)
#: Prefix kinds that cannot be mistaken for message text: they are stripped from every line, whether
#: or not the file's sample showed them. A combined console carries ``[rankN]:`` only on the lines the
#: excepthook and C++ logging wrote (tracebacks, c10d errors), often far fewer than 20% of the lines,
#: and often first after a long preamble; ``[defaultN]:`` only on the workers' lines, not the agent's.
UNAMBIGUOUS_KINDS = frozenset({"rank", "role", "mpi", "ray", "torchx"})
#: A plain date-time in front of a writer's own prefix (``2024-11-20 14:37:16 [rank3]: ...``: a console piped through
#: ``ts`` or a collector that writes local time): taken as the line's stamp only right before a ``[rankN]:``,
#: ``[roleN]:`` or Open MPI tag, so that an application's own dated log records are left whole.
STAMP_BEFORE_PREFIX = re.compile(
    r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?) (?=\[(?:[A-Za-z_]+\d{1,6}\]:|\d{1,9},\d{1,6}\]<std))")


@dataclass(slots=True)
class Attribution:
    """Who wrote a line, as far as its prefixes and body say. ``text`` is the line without prefixes."""

    text: str
    rank: int | None = None
    local_rank: int | None = None
    node: str | None = None
    task: int | None = None
    stamp: str | None = None  # a log collector's timestamp removed from the front of the line
    pid: int | None = None  # the writing process's pid in Ray's ``(name pid=N)`` prefix


def detect_prefixes(sample_lines: list[str]) -> frozenset[str]:
    """Return the prefix kinds used by a file, from a sample of its first lines.

    A kind is kept when at least 20% of the non-empty sample lines carry it, so that a stray
    ``word: `` inside a message does not turn a plain file into a "host-prefixed" one; ``[rankN]:``
    and ``[roleN]:`` when one line does; a collector's stamp when 80% do (a collector stamps every
    line, an application that logs RFC 3339 times only its own log records).
    """
    counts = dict.fromkeys(PREFIX_KINDS, 0)
    hosts: dict[str, int] = {}
    n = 0
    for raw in sample_lines:
        if not raw.strip():
            continue
        n += 1
        line = raw
        m = COLLECTOR_TS.match(line)
        if m:
            counts["stamp"] += 1
            line = line[m.end():]
        elif line[:1].isdigit() and (m := STAMP_BEFORE_PREFIX.match(line)) is not None:
            line = line[m.end():]
        m = SYSLOG_PREFIX.match(line)
        if m:
            counts["syslog"] += 1
            line = line[m.end():]
        if line[:1].isalnum() and (m := TORCHX_PREFIX.match(line)) is not None:
            counts["torchx"] += 1
            line = line[m.end():]
        for _ in range(3):
            r = _ray_prefix(line) if line.startswith("(") else None
            if r is not None:
                counts["ray"] += 1
                line = line[r[0]:]
                continue
            m = _ANY_PREFIX.match(line)  # MPI, srun, rank, role, num, host: the first that matches, as in turn
            if m is None:
                break
            kind = m.lastgroup
            if kind == "host":
                host = m.group("hostname")
                if _NOT_HOSTS.match(host):
                    break
                hosts[host] = hosts.get(host, 0) + 1
            else:
                counts[kind] += 1  # type: ignore[index]
            line = line[m.end():]
    # A host prefix is only believed when few distinct hosts explain many lines.
    host_lines = sum(hosts.values())
    if hosts and host_lines >= 2 * len(hosts):
        counts["host"] = host_lines
    if n == 0:
        return frozenset()
    def needed(kind: str) -> float:
        if kind in UNAMBIGUOUS_KINDS:
            return 1
        return max(1, (0.8 if kind == "stamp" else 0.2) * n)

    return frozenset(k for k, c in counts.items() if c >= needed(k))


def attribute(line: str, kinds: frozenset[str]) -> Attribution:
    """Strip the prefixes of ``kinds`` from ``line`` and read rank, local rank, node and task.

    ``[rankN]:`` and ``[roleN]:`` prefixes (:data:`UNAMBIGUOUS_KINDS`) are read whatever ``kinds`` says.
    In-line markers (``[Rank N]``, NCCL ``host:pid:tid [dev]``) fill what the prefixes left open.
    The Slurm task id is reported as ``task``; the caller decides whether it is a rank or a node.
    """
    att = Attribution(text=line)
    dated = STAMP_BEFORE_PREFIX.match(line) if line[:1].isdigit() else None
    if kinds - UNAMBIGUOUS_KINDS or line.startswith(("[", "(")) or "mpi" in kinds or "torchx" in kinds \
            or dated is not None:
        kinds = kinds | UNAMBIGUOUS_KINDS
        text = line
        if "stamp" in kinds:
            m = COLLECTOR_TS.match(text)
            if m:
                att.stamp = m.group(0).rstrip()
                text = text[m.end():]
        if att.stamp is None and dated is not None:  # (text is still the whole line: no collector stamp was cut)
            att.stamp = dated.group(1)
            text = text[dated.end():]
        if text[:1] in "[0123456789abcdef" and (m := DETERMINED_PREFIX.match(text)) is not None:
            att.stamp = att.stamp or m.group("ts")
            att.rank = int(m.group("rank"))
            text = text[m.end():]
        if "syslog" in kinds:
            m = SYSLOG_PREFIX.match(text)
            if m:
                att.stamp = att.stamp or m.group(1)
                att.node = m.group(2)
                text = text[m.end():]
        if "torchx" in kinds and text[:1].isalnum():
            m = TORCHX_PREFIX.match(text)
            if m:  # the replica (role/index) names no host: the node stays for the line's other marks
                text = text[m.end():]
        for _ in range(4):
            r = _ray_prefix(text) if text.startswith("(") else None
            if r is not None:
                att.node = att.node or r[1]
                att.pid = r[2] if att.pid is None else att.pid
                text = _RAY_REPEATED.sub("", text[r[0]:])
                continue
            m = MPI_PREFIX.match(text)
            if m:  # repeated when two writers interleave ("[1,0]<stderr>:[1,0]<stderr>:Traceback")
                att.rank = int(m.group("rank")) if att.rank is None else att.rank
                att.stamp = att.stamp or m.group("ts")
                text = text[m.end():]
                continue
            if "srun" in kinds and att.task is None:
                m = SRUN_PREFIX.match(text)
                if m:
                    att.task = int(m.group(1))
                    text = text[m.end():]
                    continue
            if "host" in kinds and att.node is None:
                m = HOST_PREFIX.match(text)
                if m and not _NOT_HOSTS.match(m.group(1)):
                    att.node = m.group(1)
                    text = text[m.end():]
                    continue
            if "rank" in kinds and att.rank is None:
                m = RANK_PREFIX.match(text)
                if m:
                    att.rank = int(m.group(1))
                    text = text[m.end():]
                    continue
            if "role" in kinds and att.local_rank is None:
                m = ROLE_PREFIX.match(text)
                if m and m.group(1) != "rank":
                    att.local_rank = int(m.group(2))
                    text = text[m.end():]
                    continue
            if "num" in kinds and att.rank is None:
                m = NUM_PREFIX.match(text)
                if m:
                    att.rank = int(m.group(1))
                    text = text[m.end():]
                    continue
            break
        att.text = text
    body = att.text
    if att.rank is None and ("Rank" in body or "rank" in body or "RANK" in body):
        m = INLINE_RANK.search(body)
        if m:
            att.rank = int(next(g for g in m.groups() if g is not None))
    if att.rank is None and att.local_rank is None and "SpawnProcess-" in body:
        m = SPAWN_PROCESS.search(body)
        if m and 1 <= int(m.group(1)) <= 4096:
            att.rank = int(m.group(1)) - 1
    if att.rank is None and "/task:" in body:
        m = JAX_TASK.search(body)
        if m:
            att.rank = int(m.group(1))
    if att.task is None and body.startswith("srun: error: "):
        m = SRUN_REPORT.match(body)
        if m and m.group("tasks").isdigit() and len(m.group("tasks")) <= 6:  # one task, not a list or range
            att.task = int(m.group("tasks"))
            if att.node is None:
                att.node = m.group("host")
    if "NCCL " in body and _NCCL_ORIGIN_HINT.search(body):  # both are in every NCCL_ORIGIN match
        m = NCCL_ORIGIN.search(body)
        if m:
            if att.node is None:
                att.node = m.group(1)
            if att.local_rank is None:
                att.local_rank = int(m.group(4))
    return att


# --- timestamps -----------------------------------------------------------------------------------

_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}
ISO_TS = re.compile(
    r"(\d{4})[-/](\d{2})[-/](\d{2})[ T_](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?\s?(Z|[+-]\d{2}:?\d{2})?"
)
#: ``12/04/2026 21:18:28``: the ``datefmt="%m/%d/%Y %H:%M:%S"`` of transformers' example scripts
#: (``examples/pytorch/*/run_*.py``' ``logging.basicConfig``); a first field above 12 is a day (``%d/%m/%Y``).
US_TS = re.compile(r"(?<![\d/])(\d{2})/(\d{2})/(\d{4})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?")
# glog's MMDD; PyTorch's C++ logging drops the month's leading zero ("E726" is 26 July).
#: A terminal echoes Ctrl-C as "^C" before the next line it prints (the agent's "Received 2 death signal" line).
GLOG_TS = re.compile(r"(?:(?<![\w])|(?<=\^C))[IWEF](\d{1,2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?")
SYSLOG_TS = re.compile(
    r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}(\d{1,2}) (\d{2}):(\d{2}):(\d{2})(?: (\d{4})\b)?"
)
#: What a match of each of ISO_TS, GLOG_TS and SYSLOG_TS holds (``\d\d:\d\d:\d\d``), led by its colon so that ``re``
#: jumps between colons
_CLOCK = re.compile(r":\d\d:\d\d")
# Leading timestamp (plus optional level) to strip before template mining.
#: A Python traceback frame line (``  File "path", line N, in f``).
FRAME_LINE = re.compile(r'^\s*File "[^"\n]*", line \d+')
LEADING_TS = re.compile(
    r"^\s*\[?(?:\d{4}[-/]\d{2}[-/]\d{2}[ T_]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\s?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}\d{1,2} \d{2}:\d{2}:\d{2})\]?[\s|:-]*"
)


_MONTH_START: dict[tuple[int, int], int] = {}
_EPOCH_ORDINAL = _date(1970, 1, 1).toordinal()


def _timegm(year: int, month: int, day: int, hour: int, minute: int, second: int) -> int:
    """``calendar.timegm((year, month, day, hour, minute, second, ...))`` (the same arithmetic, out-of-range days and
    hours included, and the same ValueError for a month or year ``datetime.date`` refuses), with the day number of
    each month's first day kept: ``date(...).toordinal()`` was a third of a parse"""
    first = _MONTH_START.get((year, month))
    if first is None:
        first = _date(year, month, 1).toordinal() - _EPOCH_ORDINAL
        if len(_MONTH_START) < 4096:
            _MONTH_START[(year, month)] = first
    return ((first + day - 1) * 24 + hour) * 3600 + minute * 60 + second


def _frac(s: str | None) -> float:
    return float("0." + s) if s else 0.0


def parse_timestamp(text: str, default_year: int) -> float | None:
    """Return the first timestamp in the first 120 characters of ``text`` as unix seconds.

    Formats: ISO-8601 and Python logging (``2024-04-10 04:59:03,123``, optional zone), transformers' example
    scripts (``12/04/2026 21:18:28``, :data:`US_TS`), glog
    (``E0726 13:23:24.941166``, as PyTorch's C++ logging prints it; no year, so ``default_year``),
    syslog (``Jul 26 13:23:24``) and ``dmesg -T`` (``[Fri Jul 26 13:23:24 2024]``, with its year).
    Times without a zone are taken as UTC. Returns ``None`` when
    the line has no timestamp or the fields are out of range.
    """
    head = text[:120]
    if not _CLOCK.search(head):  # every format has one (a line without is answered at once)
        return None
    try:
        m = ISO_TS.search(head) if "-" in head or "/" in head else None  # its date has one of them
        if m:
            y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
            ts = _timegm(y, mo, d, h, mi, s) + _frac(m.group(7))
            zone = m.group(8)
            if zone and zone != "Z":
                sign = 1 if zone[0] == "+" else -1
                digits = zone[1:].replace(":", "")
                ts -= sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)
            return ts if 1 <= mo <= 12 and 1 <= d <= 31 else None
        m = US_TS.search(head) if "/" in head else None
        if m:
            mo, d, y, h, mi, s = (int(g) for g in m.groups()[:6])
            if mo > 12:
                mo, d = d, mo
            if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24):
                return None
            return _timegm(y, mo, d, h, mi, s) + _frac(m.group(7))
        m = GLOG_TS.search(head)
        if m:
            mo, d, h, mi, s = (int(g) for g in m.groups()[:5])
            if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24):
                return None
            return _timegm(default_year, mo, d, h, mi, s) + _frac(m.group(6))
        m = SYSLOG_TS.search(head)
        if m:
            mo = _MONTHS[m.group(1)]
            d, h, mi, s = (int(g) for g in m.groups()[1:5])
            year = int(m.group(6)) if m.group(6) else default_year  # ``dmesg -T`` prints the year
            return _timegm(year, mo, d, h, mi, s)
    except (ValueError, OverflowError):
        return None
    return None


def iso(ts: float | None) -> str | None:
    """Format unix seconds as ISO-8601 UTC with milliseconds, or ``None``."""
    if ts is None:
        return None
    import datetime as _dt

    try:
        return _dt.datetime.fromtimestamp(ts, tz=_dt.UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return None
