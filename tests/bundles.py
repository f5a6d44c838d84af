"""Realistic multi-rank log bundles for the input-side tests.

One failure scenario, written out in every layout real launchers produce:

- 2 nodes x 4 GPUs, world size 8 (``gpu-node-001`` holds ranks 0-3, ``gpu-node-002`` ranks 4-7);
- rank 5 (node 1, local rank 1) dies of a CUDA OOM: Python traceback printed through
  torch.distributed's excepthook (every line prefixed ``[rank5]: ``, distributed_c10d.py), plus a
  torchelastic ``error.json`` (ErrorHandler.record_exception format);
- node 1's torchrun agent SIGTERMs ranks 4, 6, 7 and raises ``ChildFailedError`` whose report (exact
  ``_MSG_FORMAT_TEMPLATE`` / ``_FAILURE_FORMAT_TEMPLATE`` format) names rank 5 as the
  "Root Cause (first observed failure)";
- ranks 0-3 on node 0 keep waiting in the ALLREDUCE and, 600 s later, their ProcessGroupNCCL
  watchdog times out (``[rank0]:[E314 ...] [Rank 0] Watchdog caught collective operation timeout``),
  the process aborts (SIGABRT) and node 0's agent reports its own ChildFailedError.

Every layout writer returns a :class:`Built` with the bundle path and where the OOM line is, so
tests can check the evidence's file, line, rank and node against the bundle's own content.
"""

from __future__ import annotations

import calendar
import datetime as dt
import gzip
import io
import json
import re
import signal
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

# --- the scenario --------------------------------------------------------------------------------

# glog lines carry no year: the tool reads them in the current year, or the one before when that would put them in
# the future. The scenario's day (March 14) is taken in the latest year in which it has passed, so that the bundles'
# dated lines and their glog lines agree whenever the tests run.
_NOW = dt.datetime.now(dt.UTC)
YEAR = _NOW.year if (_NOW.month, _NOW.day) > (3, 16) else _NOW.year - 1
NODES = ("gpu-node-001", "gpu-node-002")
NPROC = 4
WORLD = len(NODES) * NPROC
OOM_RANK = 5
WATCHDOG_RANKS = (0, 1, 2, 3)
SEQ = 2403
RUN_ID = "llama7b-sft_k3j9x2qa"  # tempfile.mkdtemp(prefix=f"{rdzv_run_id}_")
BASE_PID = 48210

OOM_MSG = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB of which "
    "1.06 GiB is free. Process 48215 has 78.08 GiB memory in use. Of the allocated memory 75.31 GiB is "
    "allocated by PyTorch, and 1.21 GiB is reserved by PyTorch but unallocated. If reserved but unallocated "
    "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
    "See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)
OOM_LINE = "torch.OutOfMemoryError: " + OOM_MSG
SITE = "/usr/local/lib/python3.11/site-packages"

OOM_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/workspace/train.py", line 212, in <module>',
    "    main()",
    '  File "/workspace/train.py", line 188, in main',
    "    loss = model(**batch).loss",
    "           ^^^^^^^^^^^^^^^",
    f'  File "{SITE}/torch/nn/modules/module.py", line 1751, in _wrapped_call_impl',
    "    return self._call_impl(*args, **kwargs)",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    f'  File "{SITE}/torch/nn/modules/module.py", line 1762, in _call_impl',
    "    return forward_call(*args, **kwargs)",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    f'  File "{SITE}/torch/nn/parallel/distributed.py", line 1637, in forward',
    "    else self._run_ddp_forward(*inputs, **kwargs)",
    '  File "/workspace/model.py", line 97, in forward',
    "    attn = torch.softmax(scores, dim=-1)",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    OOM_LINE,
]

TORCHRUN_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    "             ^^^^^^",
    f'  File "{SITE}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
    "    return f(*args, **kwargs)",
    "           ^^^^^^^^^^^^^^^^^^",
    f'  File "{SITE}/torch/distributed/run.py", line 918, in main',
    "    run(args)",
    f'  File "{SITE}/torch/distributed/run.py", line 909, in run',
    "    elastic_launch(",
    f'  File "{SITE}/torch/distributed/launcher/api.py", line 138, in __call__',
    "    return launch_agent(self._config, self._entrypoint, list(args))",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    f'  File "{SITE}/torch/distributed/launcher/api.py", line 269, in launch_agent',
    "    raise ChildFailedError(",
]


def epoch(h: int, m: int, s: int, month: int = 3, day: int = 14) -> int:
    return calendar.timegm((YEAR, month, day, h, m, s, 0, 0, 0))


T_OOM = epoch(13, 2, 47)
T_KILL = epoch(13, 2, 48)
T_WATCHDOG = epoch(13, 12, 48)


def node_of(rank: int) -> int:
    return rank // NPROC


def local_of(rank: int) -> int:
    return rank % NPROC


def pid_of(rank: int) -> int:
    return BASE_PID + 100 * node_of(rank) + local_of(rank) + 1


def pylog(t: float, level: str, msg: str, name: str = "train") -> str:
    """A Python ``logging`` line, format ``%(asctime)s - %(name)s - %(levelname)s - %(message)s``."""
    d = dt.datetime.fromtimestamp(t, dt.UTC)
    return f"{d:%Y-%m-%d %H:%M:%S},{int(t * 1000) % 1000:03d} - {name} - {level} - {msg}"


def glog(t: float, level: str, src: str, msg: str, frac: str | None = None, pid: int | None = None) -> str:
    """A c10 (glog-style) line: ``E0314 13:12:48.402118271 ProcessGroupNCCL.cpp:632] msg``."""
    d = dt.datetime.fromtimestamp(t, dt.UTC)
    frac = frac or "402118271"
    mid = f" {pid}" if pid is not None else ""
    return f"{level}{d:%m%d %H:%M:%S}.{frac}{mid} {src}] {msg}"


def worker_stdout(rank: int) -> list[str]:
    return [
        f"[config] world_size={WORLD} rank={rank} local_rank={local_of(rank)} micro_batch=8 grad_accum=4",
        "[config] seq_len=4096 max_tokens=4096 keyword_filter=on",
        "loading checkpoint shards: 100%|##########| 3/3 [00:04<00:00,  1.52s/it]",
    ]


def worker_stderr(rank: int) -> list[str]:
    """What one worker writes to stderr, as it appears in its torchrun ``stderr.log``."""
    lines = [pylog(epoch(13, 0, 1) + 0.2 * rank, "INFO", f"initialized process group: rank {rank} of {WORLD}")]
    for i, step in enumerate((1198, 1199, 1200)):
        t = epoch(13, 2, 41) + 1.84 * i + 0.013 * rank
        lines.append(pylog(t, "INFO", f"step {step} | loss {2.3141 - 0.0021 * i:.4f} | lr 2.9e-04 | 1.84 s/it"))
    if rank == OOM_RANK:
        lines.append(pylog(T_OOM - 0.4, "INFO", "step 1201 | starting forward"))
        lines += [f"[rank{rank}]: {x}" for x in OOM_TRACEBACK]
    elif rank in WATCHDOG_RANKS:
        w = T_WATCHDOG + 0.01 * rank
        lines += [
            f"[rank{rank}]:"
            + glog(w, "E", "ProcessGroupNCCL.cpp:632",
                   f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={SEQ}, "
                   "OpType=ALLREDUCE, NumelIn=7020002, NumelOut=7020002, Timeout(ms)=600000) ran for "
                   f"{600051 + rank} milliseconds before timing out.", frac=f"4021{rank}8271"),
            f"[rank{rank}]:"
            + glog(w, "E", "ProcessGroupNCCL.cpp:1785",
                   f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}] Exception (either an error or timeout) detected by "
                   f"watchdog at work: {SEQ}, last enqueued NCCL work: {SEQ}, last completed NCCL work: {SEQ - 1}.",
                   frac=f"4023{rank}1538"),
            f"[rank{rank}]:"
            + glog(w, "E", "ProcessGroupNCCL.cpp:684",
                   f"[Rank {rank}] Some NCCL operations have failed or timed out. Due to the asynchronous nature of "
                   "CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
                   frac=f"4024{rank}2104"),
            f"[rank{rank}]:"
            + glog(w, "E", "ProcessGroupNCCL.cpp:698",
                   f"[Rank {rank}] To avoid data inconsistency, we are taking the entire process down.",
                   frac=f"4024{rank}7295"),
        ]
    return lines


# --- torchelastic ---------------------------------------------------------------------------------

# Verbatim from torch/distributed/elastic/multiprocessing/errors/__init__.py (tested against it).
_FAILURE_FORMAT_TEMPLATE = """[${idx}]:
  time      : ${time}
  host      : ${hostname}
  rank      : ${rank} (local_rank: ${local_rank})
  exitcode  : ${exitcode} (pid: ${pid}) ${signal_name}
  error_file: ${error_file}
  traceback : ${message}"""

_MSG_FORMAT_TEMPLATE = """
${boarder}
${title}
${section}
Failures:
${other_failures}
${section}
Root Cause (first observed failure):
${root_failure}
${boarder}"""


@dataclass
class Failure:
    """What torchelastic's ``ProcessFailure`` holds for one failed worker."""

    rank: int
    exitcode: int
    timestamp: int
    error_file: str = "<N/A>"
    message: str | dict = ""
    host: str = ""
    local_rank: int = -1
    pid: int = 0

    def __post_init__(self) -> None:
        self.local_rank = local_of(self.rank) if self.local_rank < 0 else self.local_rank
        self.pid = self.pid or pid_of(self.rank)
        self.host = self.host or NODES[node_of(self.rank)]
        if not self.message:
            if self.exitcode < 0:
                self.message = f"Signal {-self.exitcode} ({signal.Signals(-self.exitcode).name}) received by PID {self.pid}"
            else:
                self.message = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"


def elastic_time(ts: int) -> str:
    """``ProcessFailure.timestamp_isoformat``: local time, ``YYYY-MM-DD_HH:MM:SS``; here the machine
    that ran the job is taken to be on UTC, so that the bundle does not depend on the test host."""
    return dt.datetime.fromtimestamp(ts, dt.UTC).replace(tzinfo=None).isoformat(sep="_")


def child_failed_report(name: str, failures: list[Failure]) -> str:
    """``str(ChildFailedError(name, failures))``: the same algorithm as ``ChildFailedError.format_msg``."""
    title = f"{name} FAILED"
    root = min(failures, key=lambda f: f.timestamp)
    root_fmt, others, width = "", [], len(title)
    for idx, f in enumerate(failures):
        msg = f.message
        if isinstance(msg, dict):
            msg = msg.get("extraInfo", {}).get("py_callstack", msg.get("message", "<N/A>")).replace("\n", "\n  ")
        sig = f" ({signal.Signals(-f.exitcode).name})" if f.exitcode < 0 else ""
        fmt = Template(_FAILURE_FORMAT_TEMPLATE).substitute(
            idx=idx, time=elastic_time(f.timestamp), hostname=f.host,
            rank=f.rank, local_rank=f.local_rank, exitcode=f.exitcode, pid=f.pid, signal_name=sig,
            error_file=f.error_file, message=msg,
        )
        width = max(width, *(len(x) for x in fmt.split("\n")))
        if f is root:
            root_fmt = fmt
        else:
            others.append(fmt)
    width = min(width, 60)
    return Template(_MSG_FORMAT_TEMPLATE).substitute(
        boarder="=" * width, title=title, section="-" * width, root_failure=root_fmt,
        other_failures="\n".join(others or ["  <NO_OTHER_FAILURES>"]),
    )


def error_json(rank: int) -> str | None:
    """torchelastic ``error.json`` as ``ErrorHandler.record_exception`` writes it, for the failed rank."""
    if rank != OOM_RANK:
        return None
    return json.dumps({
        "message": {
            "message": f"OutOfMemoryError: {OOM_MSG}",
            "extraInfo": {"py_callstack": "\n".join(OOM_TRACEBACK) + "\n", "timestamp": str(T_OOM)},
        }
    })


def error_file_path(rank: int) -> str:
    return f"/tmp/torchelastic_x8d2kq1v/{RUN_ID}/attempt_0/{local_of(rank)}/error.json"


def node_failures(node: int) -> list[Failure]:
    ranks = range(node * NPROC, (node + 1) * NPROC)
    out = []
    for r in ranks:
        if r == OOM_RANK:
            out.append(Failure(r, 1, T_OOM, error_file_path(r), json.loads(error_json(r) or "{}")["message"]))
        elif r in WATCHDOG_RANKS:
            out.append(Failure(r, -6, T_WATCHDOG + 1 + (r % NPROC)))
        else:
            out.append(Failure(r, -15, T_KILL + 1))
    # torchelastic keeps failures in a dict keyed by global rank, in the order workers were polled
    return out


def agent_output(node: int) -> list[str]:
    """The torchrun (elastic agent) process's own stderr on one node, ending in ChildFailedError."""
    agent_pid = BASE_PID + 100 * node
    fails = node_failures(node)
    root = min(fails, key=lambda f: f.timestamp)
    api = "torch/distributed/elastic/multiprocessing/api.py"
    lines = [
        glog(epoch(12, 58, 2), "W", "torch/distributed/run.py:793", "", frac="113000", pid=agent_pid).rstrip(),
        glog(epoch(12, 58, 2), "W", "torch/distributed/run.py:793", "*" * 50, frac="113000", pid=agent_pid),
        glog(epoch(12, 58, 2), "W", "torch/distributed/run.py:793",
             "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
             "system being overloaded, please further tune the variable for optimal performance in your "
             "application as needed.", frac="113000", pid=agent_pid),
    ]
    t_fail = root.timestamp + 1
    for f in fails:
        if f is not root and f.exitcode == -15:
            lines.append(glog(t_fail, "W", f"{api}:897", f"Sending process {f.pid} closing signal SIGTERM",
                              frac="331000", pid=agent_pid))
    lines.append(glog(t_fail, "E", f"{api}:869",
                      f"failed (exitcode: {root.exitcode}) local_rank: {root.local_rank} (pid: {root.pid}) of binary: "
                      "/usr/bin/python3", frac="906000", pid=agent_pid))
    lines += TORCHRUN_TRACEBACK
    report = child_failed_report("train.py", fails)
    lines.append("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: " + report.split("\n", 1)[0])
    lines += report.split("\n")[1:]
    return lines


# --- layouts -------------------------------------------------------------------------------------


@dataclass
class Built:
    """A bundle on disk and what a correct diagnosis must say about where the OOM is."""

    path: Path
    oom_file: str  # path inside the bundle, '/'-separated, as Evidence.file must show it
    oom_line: int  # 1-based line of the ``torch.OutOfMemoryError`` line in that file
    oom_node: str | None
    watchdog_nodes: list[str]
    first_rank_known: bool = True
    files: dict[str, bytes] = field(default_factory=dict)


def as_bytes(lines: list[str], newline: str = "\n") -> bytes:
    return (newline.join(lines) + newline).encode()


def _line_of(content: bytes, needle: str) -> int:
    for i, line in enumerate(content.decode("utf-8", "replace").split("\n"), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in content")


def pack_folder(folder: Path, out: Path) -> tuple[Path, Path]:
    """``folder`` packed as a collector would: ``<out>/<name>.tar.gz`` holding the folder itself, and
    ``<out>/<name>.zip`` holding its contents at the top. Returns ``(tar.gz, zip)``."""
    tgz = out / f"{folder.name}.tar.gz"
    with tarfile.open(tgz, "w:gz") as t:
        t.add(folder, arcname=folder.name)
    zpath = out / f"{folder.name}.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(folder).as_posix())
    return tgz, zpath


def write_files(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def torchrun_logdir_files(gzip_members: bool = False) -> dict[str, bytes]:
    """``torchrun --log-dir=logs --redirects 3`` on each node, copied into ``node0/`` and ``node1/``,
    plus each agent's console output in ``nodeN/torchrun.log``."""
    files: dict[str, bytes] = {}
    for n in range(len(NODES)):
        base = f"node{n}/{RUN_ID}/attempt_0"
        for lr in range(NPROC):
            r = n * NPROC + lr
            files[f"{base}/{lr}/stdout.log"] = as_bytes(worker_stdout(r))
            files[f"{base}/{lr}/stderr.log"] = as_bytes(worker_stderr(r))
            ej = error_json(r)
            if ej is not None:
                files[f"{base}/{lr}/error.json"] = ej.encode()
        files[f"node{n}/torchrun.log"] = as_bytes(agent_output(n))
    if gzip_members:
        files = {k + ".gz": gzip.compress(v, mtime=0) for k, v in files.items()}
    return files


def oom_member(gz: bool = False) -> str:
    return f"node1/{RUN_ID}/attempt_0/{local_of(OOM_RANK)}/stderr.log" + (".gz" if gz else "")


def torchrun_logdir(tmp: Path, gzip_members: bool = False) -> Built:
    root = tmp / "job_logs"
    files = torchrun_logdir_files(gzip_members)
    write_files(root, files)
    oom = oom_member(gzip_members)
    content = gzip.decompress(files[oom]) if gzip_members else files[oom]
    return Built(root, oom, _line_of(content, OOM_LINE), "node1", ["node0"], files=files)


def _interleave(streams: list[list[str]]) -> list[str]:
    """Round-robin merge: what a shared console shows when several processes write at once."""
    out: list[str] = []
    iters = [iter(s) for s in streams]
    while iters:
        for it in list(iters):
            try:
                out.append(next(it))
            except StopIteration:
                iters.remove(it)
    return out


def without_rank_prefix(lines: list[str]) -> list[str]:
    """The same output from a torch without the ``[rankN]:`` excepthook / c10 prefixes (< 2.2)."""
    return [re.sub(r"^\[rank\d+\]: ?", "", x) for x in lines]


def combined_rank_lines(node: int, rank_prefix: bool = True) -> list[str]:
    """One node's console with plain ``torchrun`` (no --tee): workers' stderr interleaved (the
    excepthook and c10 logging already put ``[rankN]:`` on tracebacks and C++ lines), then the agent."""
    ranks = range(node * NPROC, (node + 1) * NPROC)
    workers = _interleave([worker_stderr(r) for r in ranks])
    return (workers if rank_prefix else without_rank_prefix(workers)) + agent_output(node)


def combined_rank_file(tmp: Path, name: str = "train-job-8812.out", rank_prefix: bool = True) -> Built:
    """Both nodes' consoles in one file (e.g. a Slurm job's output without ``-l``), node 0 first."""
    lines = combined_rank_lines(0, rank_prefix) + combined_rank_lines(1, rank_prefix)
    content = as_bytes(lines)
    p = tmp / name
    p.write_bytes(content)
    return Built(p, name, _line_of(content, OOM_LINE), None, [], files={name: content})


def tee_prefix(rank: int, line: str) -> str:
    """``torchrun --tee 3``: every worker line gets ``[${role_name}${local_rank}]:`` (role ``default``)."""
    return f"[default{local_of(rank)}]:{line}"


def combined_default_file(tmp: Path) -> Built:
    """``torchrun --tee 3`` consoles of both nodes in one file (node 0, then node 1): every line a
    worker writes is prefixed ``[defaultN]:`` with its *local* rank; the agent's own lines are not."""
    lines: list[str] = []
    for n in range(len(NODES)):
        ranks = range(n * NPROC, (n + 1) * NPROC)
        lines += _interleave([[tee_prefix(r, x) for x in worker_stdout(r) + worker_stderr(r)] for r in ranks])
        lines += agent_output(n)
    content = as_bytes(lines)
    p = tmp / "console.log"
    p.write_bytes(content)
    return Built(p, "console.log", _line_of(content, OOM_LINE), None, [], files={"console.log": content})


def sbatch_preamble() -> list[str]:
    """What a typical sbatch script prints before ``srun`` starts: ``nvidia-smi`` and ``pip list``."""
    lines = [
        f"Thu Mar 14 12:57:31 {YEAR}",
        "+-----------------------------------------------------------------------------------------+",
        "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |",
        "|-----------------------------------------+------------------------+----------------------+",
    ]
    for g in range(NPROC):
        lines += [
            f"|   {g}  NVIDIA H100 80GB HBM3          On  |   00000000:{0x18 + 0x1a * g:02X}:00.0 Off |                    0 |",
            "| N/A   31C    P0             71W /  700W |       1MiB /  81559MiB |      0%      Default |",
        ]
    lines += ["Package                  Version", "------------------------ ------------"]
    lines += [f"pkg-{i:03d}                  {i % 7}.{i % 13}.{i % 5}" for i in range(420)]
    return lines


def srun_file(tmp: Path) -> Built:
    """``srun -l --ntasks=8 python train.py`` from an sbatch script: Slurm starts one task per GPU
    (task id = global rank) and labels every line of the tasks' output ``N: ``; the script's own
    preamble and srun's messages carry no label; there is no torchrun agent."""
    lines = sbatch_preamble()
    lines += _interleave([[f"{r}: {x}" for x in worker_stderr(r)] for r in range(WORLD)])
    lines += [
        f"srun: error: {NODES[1]}: task {OOM_RANK}: Exited with exit code 1",
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
        f"slurmstepd: error: *** STEP 8812.0 ON {NODES[0]} CANCELLED AT {YEAR}-03-14T13:02:49 ***",
    ]
    content = as_bytes(lines)
    p = tmp / "slurm-8812.out"
    p.write_bytes(content)
    return Built(p, "slurm-8812.out", _line_of(content, OOM_LINE), None, [], files={"slurm-8812.out": content})


def pdsh_file(tmp: Path) -> Built:
    """DeepSpeed multi-node launcher (pdsh): every line of node N prefixed ``gpu-node-00N: ``; each
    node runs ``deepspeed.launcher.launch``, which reports the failed local process."""
    lines: list[str] = []
    for n, host in enumerate(NODES):
        ranks = range(n * NPROC, (n + 1) * NPROC)
        node_lines = _interleave([worker_stderr(r) for r in ranks])
        if n == node_of(OOM_RANK):
            node_lines.append(
                f"[{YEAR}-03-14 13:02:48,512] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python3', '-u', "
                f"'train.py', '--local_rank={local_of(OOM_RANK)}', '--deepspeed', 'ds_config.json'] exits with return code = 1"
            )
        lines += [f"{host}: {x}" for x in node_lines]
    content = as_bytes(lines)
    p = tmp / "deepspeed-run.log"
    p.write_bytes(content)
    return Built(p, "deepspeed-run.log", _line_of(content, OOM_LINE), NODES[1], [NODES[0]],
                 files={"deepspeed-run.log": content})


_OWN_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d),(\d{3})|\[?[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6})")


def kubectl_timestamps(lines: list[str], start: float) -> list[str]:
    """``kubectl logs --timestamps``: the container runtime's RFC 3339 receive time (nanoseconds,
    UTC) before every line; it never goes backwards and follows the line's own time when it has one."""
    out, cursor = [], start
    for i, line in enumerate(lines):
        m = _OWN_TIME.search(line[:80])
        if m and m.group(1):
            y, mo, d, h, mi, sec, ms = (int(g) for g in m.groups()[:7])
            cursor = max(cursor, calendar.timegm((y, mo, d, h, mi, sec, 0, 0, 0)) + ms / 1000 + 0.004)
        elif m:
            mo, d, h, mi, sec, us = (int(g) for g in m.groups()[7:])
            cursor = max(cursor, calendar.timegm((YEAR, mo, d, h, mi, sec, 0, 0, 0)) + us / 1e6 + 0.004)
        t = cursor + i * 1e-6
        out.append(f"{dt.datetime.fromtimestamp(int(t), dt.UTC):%Y-%m-%dT%H:%M:%S}.{round((t % 1) * 1e9):09d}Z {line}")
    return out


def per_pod_files(gz: bool = False, timestamps: bool = False) -> dict[str, bytes]:
    """Kubeflow PyTorchJob: ``kubectl logs [--timestamps]`` of each worker pod (one torchrun per pod)."""
    files = {}
    for n in range(len(NODES)):
        name = f"pytorchjob-worker-{n}.log"
        lines = combined_rank_lines(n)
        data = as_bytes(kubectl_timestamps(lines, epoch(12, 58, 0)) if timestamps else lines)
        files[name + (".gz" if gz else "")] = gzip.compress(data, mtime=0) if gz else data
    return files


def per_pod_dir(tmp: Path, gz: bool = False, timestamps: bool = False) -> Built:
    root = tmp / "pods"
    files = per_pod_files(gz, timestamps)
    write_files(root, files)
    name = f"pytorchjob-worker-{node_of(OOM_RANK)}.log" + (".gz" if gz else "")
    content = gzip.decompress(files[name]) if gz else files[name]
    return Built(root, name, _line_of(content, OOM_LINE), name.split(".")[0], ["pytorchjob-worker-0"], files=files)


def make_tar(path: Path, files: dict[str, bytes], mode: str = "w") -> Path:
    with tarfile.open(path, mode) as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = T_WATCHDOG
            tf.addfile(info, io.BytesIO(data))
    return path


def make_zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def archived_logdir(tmp: Path, kind: str) -> Built:
    """The two nodes' torchrun ``--log-dir`` trees packed as ``tar -czf job_logs.tar.gz job_logs/``
    would (members under ``job_logs/``), as ``.tar``, ``.tar.gz`` or ``.zip``."""
    files = {f"job_logs/{k}": v for k, v in torchrun_logdir_files().items()}
    if kind == "zip":
        path = make_zip(tmp / "job_logs.zip", files)
    else:
        path = make_tar(tmp / f"job_logs.{kind}", files, "w:gz" if kind == "tar.gz" else "w")
    oom = "job_logs/" + oom_member()
    return Built(path, oom, _line_of(files[oom], OOM_LINE), "node1", ["node0"], files=files)


def rank_stderr_file(tmp: Path) -> Built:
    """A single file: the failed rank's own ``stderr.log``, copied out on its own."""
    content = as_bytes(worker_stderr(OOM_RANK))
    p = tmp / "stderr.log"
    p.write_bytes(content)
    return Built(p, "stderr.log", _line_of(content, OOM_LINE), None, [], files={"stderr.log": content})



# --- reading a built bundle back (independently of the code under test) --------------------------


def member_bytes(built: Built, name: str) -> bytes:
    data = built.files[name]
    return gzip.decompress(data) if name.endswith(".gz") else data


def line_at(built: Built, name: str, line: int) -> str:
    """Line ``line`` (1-based) of member ``name`` as ``sed -n {line}p`` would print it."""
    return member_bytes(built, name).decode("utf-8", "replace").split("\n")[line - 1]


def total_lines(built: Built) -> int:
    """Lines of every member, a last line without newline included (what ``wc -l`` misses)."""
    n = 0
    for name in built.files:
        data = member_bytes(built, name)
        n += data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    return n
