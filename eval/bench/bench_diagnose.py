#!/usr/bin/env python3
"""Benchmark the diagnosis pipeline on a generated 1,024-rank, ~1 GB log bundle against ``grep -E``.

What it does (see ``eval/bench/README.md`` for the numbers and how to read them):

1. **Generate** a bundle: ``--ranks`` ranks (default 1,024 = 128 nodes x 8 GPUs) of realistic
   torchrun/NCCL training chatter, about ``--size-gb`` GB (default 1.0), with ONE real failure
   buried in it: rank ``--fail-rank`` (default 611, node ``gpu-node-076``, local rank 3) dies of a
   CUDA OOM in ``backward()`` at ~55 % of the run; its agent SIGTERMs the node's other workers and
   prints a ChildFailedError report naming rank 611; ten minutes later every rank on the other
   nodes prints the NCCL watchdog timeout cascade (SeqNum of the never-completed ALLREDUCE, the
   ``taking the entire process down`` abort, ``terminate called after throwing`` + C++ frames) and
   each of their agents a ChildFailedError report with exitcode -6 (SIGABRT).
   Layouts (``--layout``): ``console`` (default), one file per node as torchrun >= 2.2 prints it to
   the console, every worker line prefixed ``[rankN]:`` and the agent's own lines unprefixed;
   ``tree``, torchrun ``--log-dir`` trees ``gpu-node-NNN/<run_id>/attempt_0/<local_rank>/{stdout,stderr}.log``
   without prefixes plus one ``gpu-node-NNN/torchrun.log`` agent log per node.
   The chatter also holds what real logs hold and a diagnoser must not take for the cause: NCCL's
   ``libnccl-net.so ... No such file or directory`` plugin probe on every rank, c10d
   ``failed to connect`` retries at start-up, rendezvous ``timeout`` settings, AMP gradient-overflow
   skips, UserWarnings.
2. **Diagnose** it in a child process (``python bench_diagnose.py --_child``), so that the peak
   RSS (``ru_maxrss`` from ``os.wait4`` on that child only) and the wall time (interpreter start,
   imports and signature loading included) are the pipeline's alone. ``--runs`` N gives medians.
3. **Reference**: ``LC_ALL=C grep -E -c -r -f <patterns>`` over the same files, with every
   signature regex of ``knowledge_base/signatures`` that ERE can express (converted: named and
   non-capturing groups to plain groups, ``\\d``/``\\s``/``\\S``/``\\D`` to POSIX classes, lazy
   quantifiers made greedy, ``(?i)`` patterns expanded to ``[Aa]`` letter classes so that one
   case-sensitive pass covers all; patterns with look-arounds are left out and listed). The
   conversion is checked on the signatures' own examples (grep vs Python ``re``).
4. **Write** ``eval/bench/results/bench_diagnose.json`` (``--out``): bundle size, lines, ranks,
   wall seconds, per-stage ms and lines/s, peak RSS, grep seconds, ratio to grep, the targets
   (<= 60 s, <= 2 GiB, <= 10x grep) and whether they were met, whether the diagnosis found the
   buried failure (category ``gpu_oom``, first failing rank 611), machine and date.

``--profile FILE.prof`` runs the child under cProfile instead (timings then carry its overhead)
and prints the top functions; use a ~100 MB bundle (``--size-gb 0.1``).

Usage::

    .venv/bin/python eval/bench/bench_diagnose.py                      # full size, 1 run
    .venv/bin/python eval/bench/bench_diagnose.py --size-gb 0.1 --runs 3 --out /tmp/small.json
    .venv/bin/python eval/bench/bench_diagnose.py --bundle /data/bundle   # reuse a kept bundle
    .venv/bin/python eval/bench/bench_diagnose.py --size-gb 0.1 --profile /tmp/diag.prof
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import platform
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "eval" / "bench" / "results" / "bench_diagnose.json"
TARGET_WALL_S = 60.0
TARGET_RSS_MB = 2048.0
TARGET_GREP_RATIO = 10.0
STAGES = ("ingest", "extract", "redact", "templates", "signatures", "localize", "total")

# =================================================================================================
# Bundle generator
# =================================================================================================

PY_SITE = "/usr/local/lib/python3.10/dist-packages"
RUN_ID = "llama-pretrain-7741"
STEP_SECONDS = 0.62
NCCL_TIMEOUT_MS = 600_000


class _Clock:
    """Wall-clock strings for the generated logs, cached per second (formatting is the hot path)."""

    def __init__(self, start: dt.datetime) -> None:
        self.start = start.replace(tzinfo=dt.UTC)
        self.t0 = self.start.timestamp()
        self._cache: dict[int, tuple[str, str, str, str]] = {}

    def _parts(self, sec: int) -> tuple[str, str, str, str]:
        p = self._cache.get(sec)
        if p is None:
            d = dt.datetime.fromtimestamp(sec, tz=dt.UTC)
            # iso "2024-11-14 09:02:13", glog "1114 09:02:13" (month/day as c10 logging prints them;
            # the default date is in November so that zero-padded and unpadded months agree),
            # elastic "2024-11-14_09:02:13", glog month-day alone
            p = (
                d.strftime("%Y-%m-%d %H:%M:%S"),
                f"{d.month}{d.day:02d} {d:%H:%M:%S}",
                d.strftime("%Y-%m-%d_%H:%M:%S"),
                f"{d.month}{d.day:02d}",
            )
            self._cache[sec] = p
        return p

    def iso_ms(self, t: float) -> str:
        """Python logging: ``2024-11-14 09:02:13,481``."""
        sec = int(t)
        return f"{self._parts(sec)[0]},{int((t - sec) * 1000):03d}"

    def glog_ns(self, t: float) -> str:
        """c10 logging: ``1114 09:02:13.481166255`` (severity letter added by the caller)."""
        sec = int(t)
        return f"{self._parts(sec)[1]}.{int((t - sec) * 1e9):09d}"

    def glog_us(self, t: float) -> str:
        """torchelastic's Python logging (glog style, microseconds): ``1114 09:02:13.481000``."""
        sec = int(t)
        return f"{self._parts(sec)[1]}.{min(999_999, round((t - sec) * 1e6)):06d}"

    def elastic(self, t: float) -> str:
        return self._parts(int(t))[2]


class BundleSpec:
    """Shape of the generated job; all derived numbers in one place."""

    def __init__(self, ranks: int, gpus_per_node: int, size_bytes: int, fail_rank: int, seed: int,
                 start: dt.datetime, layout: str) -> None:
        if ranks % gpus_per_node:
            raise SystemExit(f"--ranks ({ranks}) must be a multiple of --gpus-per-node ({gpus_per_node})")
        self.ranks = ranks
        self.gpn = gpus_per_node
        self.nodes = ranks // gpus_per_node
        self.size_bytes = size_bytes
        self.fail_rank = fail_rank if 0 <= fail_rank < ranks else (ranks * 3) // 5
        self.fail_node = self.fail_rank // gpus_per_node
        self.fail_local = self.fail_rank % gpus_per_node
        self.seed = seed
        self.clock = _Clock(start)
        self.layout = layout
        # Measured: ~23 KB of start-up, NCCL init and failure cascade per rank; step lines fill the
        # rest. The job dies at 55 % of its planned steps, so the logs hold steps [0, fail_step).
        self.fixed_bytes_per_rank = 23_000 if layout == "console" else 21_000
        self.step_line_bytes = 191 if layout == "console" else 181
        per_rank = max(size_bytes / ranks - self.fixed_bytes_per_rank, 20 * self.step_line_bytes)
        self.fail_step = max(20, int(per_rank / self.step_line_bytes))
        self.steps = int(self.fail_step / 0.55)
        self.t_train = self.clock.t0 + 95.0  # first step after start-up and NCCL init
        self.t_fail = self.t_train + self.fail_step * STEP_SECONDS + 0.31
        self.seq_fail = 40 + self.fail_step * 12 + 7  # the ALLREDUCE rank fail_rank never joined
        self.numel = 268_435_456 // 8

    def host(self, node: int) -> str:
        return f"gpu-node-{node:03d}"

    def pid(self, rank: int) -> int:
        return 41_000 + (rank % self.gpn) * 3 + (rank // self.gpn) * 17 % 9000


def _nccl_init(spec: BundleSpec, rank: int, rnd: random.Random) -> list[str]:
    """What NCCL_DEBUG=INFO prints on one rank while creating the world, TP and DP communicators."""
    host = spec.host(rank // spec.gpn)
    lr = rank % spec.gpn
    pid = spec.pid(rank)
    o = f"{host}:{pid}:{pid} [{lr}] NCCL INFO "
    ip = f"10.0.{rank // spec.gpn // 256}.{rank // spec.gpn % 256}"
    out = [
        f"{o}cudaDriverVersion 12040",
        f"{o}Bootstrap : Using eth0:{ip}<0>",
        f"{o}NCCL version 2.21.5+cuda12.4",
        f"{o}NET/Plugin: Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared object file: "
        "No such file or directory : when loading libnccl-net.so",
        f"{o}NET/Plugin: Using internal network plugin.",
        f"{o}NCCL_IB_HCA set to mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7",
        f"{o}NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [4]mlx5_4:1/IB "
        f"[5]mlx5_5:1/IB [6]mlx5_6:1/IB [7]mlx5_7:1/IB [RO]; OOB eth0:{ip}<0>",
        f"{o}Using non-device net plugin version 0",
        f"{o}Using network IB",
    ]
    bus = ("18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000")[lr % 8]
    comms = (("world", spec.ranks, rank, 32), ("tp", spec.gpn, lr, 24), ("dp", spec.nodes, rank // spec.gpn, 16))
    for _name, nranks, crank, nch in comms:
        comm = f"0x{rnd.getrandbits(44):x}"
        cid = f"0x{rnd.getrandbits(64):x}"
        nxt, prv = (crank + 1) % nranks, (crank - 1) % nranks
        out += [
            f"{o}ncclCommInitRank comm {comm} rank {crank} nranks {nranks} cudaDev {lr} nvmlDev {lr} busId {bus} "
            f"commId {cid} - Init START",
            f"{o}Setting affinity for GPU {lr} to ffffff,ffffffff",
            f"{o}NVLS multicast support is not available on dev {lr}",
            f"{o}comm {comm} rank {crank} nRanks {nranks} nNodes {max(1, nranks // spec.gpn)} localRanks "
            f"{min(nranks, spec.gpn)} localRank {lr} MNNVL 0",
            f"{o}Trees [0] {nxt}/-1/-1->{crank}->{prv} [1] {nxt}/-1/-1->{crank}->{prv} [2] -1/-1/-1->{crank}->{prv}",
            f"{o}P2P Chunksize set to 131072",
        ]
        for ch in range(nch):
            via = f"NET/IB/{ch % 8}/GDRDMA" if nranks > spec.gpn and lr in (0, spec.gpn - 1) else "P2P/CUMEM/read"
            out.append(f"{o}Channel {ch:02d}/0 : {crank}[{lr}] -> {nxt}[{(lr + 1) % spec.gpn}] via {via}")
        out += [f"{o}Connected all rings"]
        for ch in range(0, nch, 2):
            out.append(f"{o}Channel {ch:02d}/0 : {crank}[{lr}] -> {prv}[{(lr - 1) % spec.gpn}] via P2P/CUMEM/read")
        out += [
            f"{o}Connected all trees",
            f"{o}threadThresholds 8/8/64 | {8 * nranks}/8/64 | 512 | 512",
            f"{o}{nch} coll channels, {nch} collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
            f"{o}TUNER/Plugin: Plugin load returned 2 : libnccl-tuner.so: cannot open shared object file: No such file or "
            "directory : when loading libnccl-tuner.so",
            f"{o}TUNER/Plugin: Using internal tuner plugin.",
            f"{o}ncclCommInitRank comm {comm} rank {crank} nranks {nranks} cudaDev {lr} nvmlDev {lr} busId {bus} "
            f"commId {cid} - Init COMPLETE",
        ]
    return out


def _startup(spec: BundleSpec, rank: int, rnd: random.Random) -> tuple[list[str], list[str]]:
    """(stdout, stderr) lines of one worker before training: config, warnings, connect retries."""
    c = spec.clock
    t = c.t0 + 8.0 + rnd.random() * 2
    lr = rank % spec.gpn
    out: list[str] = []
    err: list[str] = []
    if rnd.random() < 0.05:  # c10d store not up yet: retried, harmless
        for k in range(rnd.randint(1, 3)):
            err.append(
                f"[W{c.glog_ns(t + k)} socket.cpp:752] [c10d] The client socket has failed to connect to "
                f"[gpu-node-000]:29500 (errno: 111 - Connection refused)."
            )
    out.append(f"[{c.iso_ms(t)}] [INFO] [train.py:88:main] world_size={spec.ranks} rank={rank} local_rank={lr} "
               f"node={spec.host(rank // spec.gpn)} master=gpu-node-000:29500 backend=nccl timeout=0:10:00")
    for k, v in (("model", "llama-13b"), ("seq_len", 4096), ("micro_batch_size", 2), ("global_batch_size", 2048),
                 ("lr", "3.0e-4"), ("warmup_steps", 2000), ("zero_stage", 1), ("activation_checkpointing", True),
                 ("dataloader_num_workers", 12), ("bf16", True)):
        out.append(f"[{c.iso_ms(t + 0.01)}] [INFO] [config.py:211:dump] {k:<26}= {v}")
    err += [
        f"{PY_SITE}/torch/utils/data/dataloader.py:557: UserWarning: This DataLoader will create 12 worker processes in "
        "total. Our suggested max number of worker in current system is 10, which is smaller than what this DataLoader "
        "is going to create. Please be aware that excessive worker creation might get DataLoader running slow or even "
        "freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
        "  warnings.warn(_create_warning_msg(",
        f"[W{c.glog_ns(t + 20)} ProcessGroupNCCL.cpp:4115] [PG ID 0 PG GUID 0 Rank {rank}]  using GPU {lr} to perform "
        "barrier as devices used by this process are currently unknown. This can potentially cause a hang if this rank "
        "to GPU mapping is incorrect.Specify device_ids in barrier() to force use of a particular device,or call "
        "init_process_group() with a device_id.",
        f"{PY_SITE}/torch/utils/checkpoint.py:1399: FutureWarning: `torch.cpu.amp.autocast(args...)` is deprecated. "
        "Please use `torch.amp.autocast('cpu', args...)` instead.",
        "  with device_autocast_ctx, torch.cpu.amp.autocast(**cpu_autocast_kwargs), recompute_context:  "
        "# type: ignore[attr-defined]",
    ]
    return out, err


def _steps(spec: BundleSpec, rank: int, first: int, last: int) -> list[str]:
    """Per-step training log lines of one rank for steps [first, last)."""
    c = spec.clock
    lines = []
    j = (rank * 7919) % 997
    loss_tab = _LOSS_TAB
    for s in range(first, last):
        t = spec.t_train + s * STEP_SECONDS + ((j + s * 31) % 40) / 1000
        lt = loss_tab[(s + rank * 13) & 4095]
        lines.append(
            f"[{c.iso_ms(t)}] [INFO] [trainer.py:412:log_step] step {s}/{spec.steps}"
            f" | loss {lt[0] + 3.0 * 600 / (s + 600):.4f}"
            f" | lr {lt[1]} | grad_norm {lt[2]} | tflops {lt[3]} | tok/s {10100 + (j + s) % 300} | step_time {lt[4]}s"
            f" | mem {lt[5]}GiB"
        )
        if s % 733 == 511:  # fp16/bf16 loss scaler: harmless skipped step on every rank
            lines.append(
                f"[{c.iso_ms(t + 0.001)}] [WARNING] [loss_scaler.py:183:update_scale] [Rank {rank}] Gradient overflow. "
                f"Skipping step, loss scale reduced from 65536 to 32768"
            )
        if rank == 0 and s and s % 1000 == 0:
            lines.append(f"[{c.iso_ms(t + 0.2)}] [INFO] [checkpoint.py:96:save] saving checkpoint at step {s} to "
                         f"/checkpoints/{RUN_ID}/step_{s}")
            lines.append(f"[{c.iso_ms(t + 14.1)}] [INFO] [checkpoint.py:131:save] checkpoint saved in 13.9s")
    return lines


def _make_loss_tab() -> list[tuple[float, str, str, str, str, str]]:
    r = random.Random(1234)
    return [
        (r.gauss(0, 0.08), f"{3.0e-4 * (0.9 + 0.1 * r.random()):.3e}", f"{0.6 + r.random() * 0.5:.3f}",
         f"{180 + r.random() * 12:.1f}", f"{STEP_SECONDS + r.gauss(0, 0.01):.3f}", f"{60 + r.random() * 3:.2f}")
        for _ in range(4096)
    ]


_LOSS_TAB = _make_loss_tab()


def _oom_traceback(spec: BundleSpec, rank: int) -> list[str]:
    lr = rank % spec.gpn
    return [
        "Traceback (most recent call last):",
        '  File "/workspace/train.py", line 512, in <module>',
        "    main()",
        f'  File "{PY_SITE}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
        "    return f(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^",
        '  File "/workspace/train.py", line 498, in main',
        "    loss = train_step(model, batch, optimizer, scaler)",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        '  File "/workspace/train.py", line 301, in train_step',
        "    scaler.scale(loss).backward()",
        f'  File "{PY_SITE}/torch/_tensor.py", line 521, in backward',
        "    torch.autograd.backward(",
        f'  File "{PY_SITE}/torch/autograd/__init__.py", line 289, in backward',
        "    _engine_run_backward(",
        f'  File "{PY_SITE}/torch/autograd/graph.py", line 768, in _engine_run_backward',
        "    return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.88 GiB. GPU {lr} has a total capacity of 79.15 "
        f"GiB of which 2.31 GiB is free. Process {spec.pid(rank)} has 76.83 GiB memory in use. Of the allocated memory "
        "71.20 GiB is allocated by PyTorch, and 4.12 GiB is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
    ]


_FRAMES = [
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3b6a9b7f86 in {site}/torch/lib/libc10.so)",
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, "
    "1000l> > >) + 0x1d2 (0x7f3b1c7c4a42 in {site}/torch/lib/libtorch_cuda.so)",
    "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f3b1c7cb4b3 in {site}/torch/lib/libtorch_cuda.so)",
    "frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f3b1c7cd09d in {site}/torch/lib/libtorch_cuda.so)",
    "frame #4: <unknown function> + 0xdc253 (0x7f3b6a6b0253 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
    "frame #5: <unknown function> + 0x94ac3 (0x7f3b6b2e2ac3 in /lib/x86_64-linux-gnu/libc.so.6)",
    "frame #6: clone + 0x44 (0x7f3b6b373a04 in /lib/x86_64-linux-gnu/libc.so.6)",
]


def _watchdog(spec: BundleSpec, rank: int, rnd: random.Random) -> list[str]:
    """ProcessGroupNCCL's timeout cascade on a rank left waiting in the ALLREDUCE the failed rank never joined."""
    c = spec.clock
    t = spec.t_fail - 0.31 + 0.05 + NCCL_TIMEOUT_MS / 1000 + rnd.random() * 0.9
    ran = NCCL_TIMEOUT_MS + int(rnd.random() * 900)
    seq = spec.seq_fail
    enq = seq + 3
    work = (f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={spec.numel}, NumelOut={spec.numel}, "
            f"Timeout(ms)={NCCL_TIMEOUT_MS}) ran for {ran} milliseconds before timing out.")
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"

    def e(dt_s: float, where: str) -> str:
        return f"[E{c.glog_ns(t + dt_s)} {where}]"

    frames = [f.format(site=PY_SITE) for f in _FRAMES]
    return [
        f"{e(0, 'ProcessGroupNCCL.cpp:616')} [Rank {rank}] Watchdog caught collective operation timeout: {work}",
        f"{e(0.0002, 'ProcessGroupNCCL.cpp:1785')} {pg} Exception (either an error or timeout) detected by watchdog at "
        f"work: {seq}, last enqueued NCCL work: {enq}, last completed NCCL work: {seq - 1}.",
        f"{e(0.0003, 'ProcessGroupNCCL.cpp:1834')} {pg} Timeout at NCCL work: {seq}, last enqueued NCCL work: {enq}, "
        f"last completed NCCL work: {seq - 1}.",
        f"{e(0.0004, 'ProcessGroupNCCL.cpp:630')} [Rank {rank}] Some NCCL operations have failed or timed out. Due to the "
        "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        f"{e(0.0005, 'ProcessGroupNCCL.cpp:636')} [Rank {rank}] To avoid data inconsistency, we are taking the entire "
        "process down.",
        f"{e(0.0021, 'ProcessGroupNCCL.cpp:1595')} {pg} Process group watchdog thread terminated with exception: "
        f"[Rank {rank}] Watchdog caught collective operation timeout: {work}",
        "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call first):",
        *frames,
        "",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {pg} Process group watchdog thread terminated with exception: [Rank {rank}] Watchdog caught "
        f"collective operation timeout: {work}",
        "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call first):",
        *frames,
        "",
        "Exception raised from ncclCommWatchdog at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1601 "
        "(most recent call first):",
        *frames[:1],
        *frames[3:],
        "",
    ]


def _agent_start(spec: BundleSpec, node: int) -> list[str]:
    c = spec.clock
    t = c.t0 + 1.2
    pid = 140_000 + node
    w = f"W{c.glog_us(t)} {pid} torch/distributed/run.py:779]"
    i = f"I{c.glog_us(t + 0.006)} {pid} torch/distributed/launcher/api.py:188]"
    return [
        f"{w} ",
        f"{w} *****************************************",
        f"{w} Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being "
        "overloaded, please further tune the variable for optimal performance in your application as needed. ",
        f"{w} *****************************************",
        f"{i} Starting elastic_operator with launch configs:",
        f"{i}   entrypoint       : train.py",
        f"{i}   min_nodes        : {spec.nodes}",
        f"{i}   max_nodes        : {spec.nodes}",
        f"{i}   nproc_per_node   : {spec.gpn}",
        f"{i}   run_id           : {RUN_ID}",
        f"{i}   rdzv_backend     : c10d",
        f"{i}   rdzv_endpoint    : gpu-node-000:29500",
        f"{i}   rdzv_configs     : {{'timeout': 900}}",
        f"{i}   max_restarts     : 0",
        f"{i}   monitor_interval : 0.1",
        f"{i}   log_dir          : /tmp/torchelastic_{RUN_ID}",
        f"{i}   metrics_cfg      : {{}}",
        f"I{c.glog_us(t + 3.1)} {pid} torch/distributed/elastic/agent/server/api.py:879] [default] starting workers for "
        f"entrypoint: python3",
        f"I{c.glog_us(t + 3.1)} {pid} torch/distributed/elastic/agent/server/api.py:681] [default] Rendezvous'ing worker "
        "group",
        f"I{c.glog_us(t + 6.4)} {pid} torch/distributed/elastic/agent/server/api.py:525] [default] Rendezvous complete for "
        f"workers. Result: restart_count=0 master_addr=gpu-node-000 master_port=29500 group_rank={node} "
        f"group_world_size={spec.nodes} local_ranks={list(range(spec.gpn))} "
        f"role_ranks={list(range(node * spec.gpn, node * spec.gpn + spec.gpn))} "
        f"global_ranks={list(range(node * spec.gpn, node * spec.gpn + spec.gpn))} role_world_sizes={[spec.ranks] * spec.gpn} "
        f"global_world_sizes={[spec.ranks] * spec.gpn}",
    ]


def _agent_failure(spec: BundleSpec, node: int) -> list[str]:
    """torchrun's own lines when its workers fail: SIGTERM to the survivors, then the ChildFailedError report."""
    c = spec.clock
    pid = 140_000 + node
    host = spec.host(node)
    base = node * spec.gpn
    if node == spec.fail_node:
        t = spec.t_fail + 0.4
        first_lr, exitcode, failed = spec.fail_local, 1, [spec.fail_local]
        tb = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    else:
        t = spec.t_fail - 0.31 + NCCL_TIMEOUT_MS / 1000 + 1.3
        first_lr, exitcode, failed = 0, -6, list(range(spec.gpn))
        tb = None
    out = []
    if node == spec.fail_node:
        for lr in range(spec.gpn):
            if lr != first_lr:
                out.append(f"W{c.glog_us(t + lr * 0.001)} {pid} torch/distributed/elastic/multiprocessing/api.py:858] "
                           f"Sending process {spec.pid(base + lr)} closing signal SIGTERM")
    out.append(f"E{c.glog_us(t + 1.2)} {pid} torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: "
               f"{exitcode}) local_rank: {first_lr} (pid: {spec.pid(base + first_lr)}) of binary: /usr/bin/python3")
    out += [
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        "             ^^^^^^",
        f'  File "{PY_SITE}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
        "    return f(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^",
        f'  File "{PY_SITE}/torch/distributed/run.py", line 919, in main',
        "    run(args)",
        f'  File "{PY_SITE}/torch/distributed/run.py", line 910, in run',
        "    elastic_launch(",
        f'  File "{PY_SITE}/torch/distributed/launcher/api.py", line 138, in __call__',
        "    return launch_agent(self._config, self._entrypoint, list(args))",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{PY_SITE}/torch/distributed/launcher/api.py", line 269, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
    ]

    def entry(i: int, lr: int) -> list[str]:
        p = spec.pid(base + lr)
        return [
            f"[{i}]:",
            f"  time      : {c.elastic(t + 1.2)}",
            f"  host      : {host}",
            f"  rank      : {base + lr} (local_rank: {lr})",
            f"  exitcode  : {exitcode} (pid: {p})",
            "  error_file: <N/A>",
            f"  traceback : {tb or f'Signal 6 (SIGABRT) received by PID {p}'}",
        ]

    others = [lr for lr in failed if lr != first_lr]
    if others:
        for i, lr in enumerate(others, 1):
            out += entry(i, lr)
    else:
        out.append("  <NO_OTHER_FAILURES>")
    out += ["------------------------------------------------------------", "Root Cause (first observed failure):"]
    out += entry(0, first_lr)
    out.append("============================================================")
    return out


def _interleave(per_rank: list[list[str]], prefixes: list[str]) -> list[str]:
    """Round-robin merge of the local ranks' lines (each with its ``[rankN]:`` prefix), as a console shows them."""
    out: list[str] = []
    n = max(len(x) for x in per_rank)
    for k in range(n):
        for lines, p in zip(per_rank, prefixes, strict=True):
            if k < len(lines):
                out.append(p + lines[k])
    return out


def _node_files(spec: BundleSpec, node: int) -> Iterator[tuple[str, list[str]]]:
    """(relative path, lines) of the files one node contributes, for the chosen layout."""
    rnd = random.Random(spec.seed * 100_003 + node)
    ranks = [node * spec.gpn + lr for lr in range(spec.gpn)]
    failed_node = node == spec.fail_node
    nccl = [_nccl_init(spec, r, rnd) for r in ranks]
    start = [_startup(spec, r, rnd) for r in ranks]
    # Training: on the failed node every worker stops after step fail_step - 1 (rank fail_rank dies in
    # backward of fail_step, the others are SIGTERMed while blocked in its all-reduce); elsewhere
    # everyone blocks in the same all-reduce and the watchdog fires NCCL_TIMEOUT_MS later.
    tail_err: list[list[str]] = []
    for r in ranks:
        if failed_node:
            tail_err.append(_oom_traceback(spec, r) if r == spec.fail_rank else [])
        else:
            tail_err.append(_watchdog(spec, r, rnd))
    agent = _agent_start(spec, node)
    agent_fail = _agent_failure(spec, node)
    chunk = 600  # steps per interleaving chunk, so a console file is written in time order
    if spec.layout == "console":
        pre = [f"[rank{r}]:" for r in ranks]
        lines = list(agent)
        lines += _interleave([s[0] for s in start], pre)
        lines += _interleave([s[1] for s in start], pre)
        lines += _interleave(nccl, pre)
        for first in range(0, spec.fail_step, chunk):
            last = min(first + chunk, spec.fail_step)
            lines += _interleave([_steps(spec, r, first, last) for r in ranks], pre)
        lines += _interleave(tail_err, pre)
        lines += agent_fail
        yield f"{spec.host(node)}.log", lines
        return
    # tree: torchrun --log-dir, one directory per node
    root = f"{spec.host(node)}/{RUN_ID}_{node:03d}k9/attempt_0"
    for lr, r in enumerate(ranks):
        stdout = start[lr][0] + nccl[lr] + _steps(spec, r, 0, spec.fail_step)
        yield f"{root}/{lr}/stdout.log", stdout
        yield f"{root}/{lr}/stderr.log", start[lr][1] + tail_err[lr]
    yield f"{spec.host(node)}/torchrun.log", agent + agent_fail


def generate_bundle(spec: BundleSpec, dest: Path) -> dict:
    """Write the bundle under ``dest``; return files, bytes, lines and seconds."""
    t0 = time.perf_counter()
    dest.mkdir(parents=True, exist_ok=True)
    n_files = n_bytes = n_lines = 0
    for node in range(spec.nodes):
        for rel, lines in _node_files(spec, node):
            data = ("\n".join(lines) + "\n").encode()
            p = dest / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            n_files += 1
            n_bytes += len(data)
            n_lines += len(lines)
    return {"files": n_files, "bytes": n_bytes, "lines": n_lines, "seconds": round(time.perf_counter() - t0, 2)}


# =================================================================================================
# Signature patterns -> grep -E
# =================================================================================================

_CLASS_ESC = {"d": "0-9", "s": "[:space:]", "w": "[:alnum:]_"}
_OUT_ESC = {"d": "[0-9]", "D": "[^0-9]", "s": "[[:space:]]", "S": "[^[:space:]]"}


class Unconvertible(ValueError):
    pass


def _case_fold(ch: str) -> str:
    return f"[{ch.upper()}{ch.lower()}]" if ch.isalpha() and ch.upper() != ch.lower() else ch


def _class_end(pattern: str, i: int) -> int:
    """Index of the ``]`` closing the bracket expression that opens at ``pattern[i]``."""
    j = i + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1  # a leading ']' is literal
    while j < len(pattern):
        if pattern[j] == "\\":
            j += 2
            continue
        if pattern[j] == "]":
            return j
        j += 1
    raise Unconvertible("unterminated class")


def _class_to_ere(body: str, icase: bool) -> str:
    """A Python class body (without brackets) as a POSIX bracket expression (where backslash is literal)."""
    neg = body.startswith("^")
    if neg:
        body = body[1:]
    if neg and body == "\\n":
        return "."  # grep sees one line at a time
    items: list[str] = []
    rbracket = dash = caret = False
    j = 0
    while j < len(body):
        c = body[j]
        if c == "\\":
            e = body[j + 1]
            j += 2
            if e in _CLASS_ESC:
                items.append(_CLASS_ESC[e])
            elif e == "]":
                rbracket = True
            elif e == "-":
                dash = True
            elif e == "^":
                caret = True
            elif e == "n":
                continue  # never inside a line
            elif e == "t":
                items.append("\t")
            elif e.isalnum():
                raise Unconvertible(f"class escape \\{e}")
            else:
                items.append(e)  # \\ . [ etc.: literal
            continue
        if c == "-" and (j == 0 or j == len(body) - 1):
            dash = True
        elif c == "]" and j == 0:
            rbracket = True
        elif c == "^":
            caret = True
        elif icase and c.isalpha() and not (j + 1 < len(body) and body[j + 1] == "-") and not (j and body[j - 1] == "-"):
            items.append(c.lower() + c.upper())
        elif icase and c == "-" and body[j - 1].isalpha() and body[j + 1].isalpha():
            lo, hi = body[j - 1], body[j + 1]
            items.append(f"-{hi}{lo.swapcase()}-{hi.swapcase()}")
            j += 2
            continue
        else:
            items.append(c)
        j += 1
    return "[" + ("^" if neg else "") + ("]" if rbracket else "") + "".join(items) + ("^" if caret else "") + (
        "-" if dash else "") + "]"


def to_ere(pattern: str) -> str:
    """Convert one Python regex to a POSIX ERE for GNU grep, or raise :class:`Unconvertible`.

    Handles what the signature catalog uses: ``(?P<name>``/``(?:`` groups, a leading ``(?i)``
    (expanded to ``[Aa]`` classes), ``\\d \\D \\s \\S`` (``\\w \\b`` are GNU extensions and kept),
    escapes inside bracket expressions, lazy quantifiers. Look-arounds, back-references, ``\\A
    \\Z`` and inline flags other than a leading ``(?i)`` are refused.
    """
    icase = False
    if pattern.startswith("(?i)"):
        icase, pattern = True, pattern[4:]
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= n:
                raise Unconvertible("trailing backslash")
            nx = pattern[i + 1]
            if nx in _OUT_ESC:
                out.append(_OUT_ESC[nx])
            elif nx in "wWbB<>":
                out.append("\\" + nx)
            elif nx.isdigit() or nx in "AZzGpPNux":
                raise Unconvertible(f"escape \\{nx}")
            elif nx == "n":
                raise Unconvertible("newline in pattern")
            elif nx == "t":
                out.append("\t")
            elif nx.isalnum():
                raise Unconvertible(f"escape \\{nx}")
            else:
                out.append("\\" + nx)  # escaped punctuation: literal in ERE as well
            i += 2
        elif ch == "[":
            end = _class_end(pattern, i)
            out.append(_class_to_ere(pattern[i + 1:end], icase))
            i = end + 1
        elif ch == "(":
            if pattern.startswith("(?P<", i):
                i = pattern.index(">", i) + 1
                out.append("(")
            elif pattern.startswith("(?:", i):
                out.append("(")
                i += 3
            elif pattern.startswith("(?", i):
                raise Unconvertible("look-around or inline flag")
            else:
                out.append("(")
                i += 1
        elif ch in "*+?}" and i + 1 < n and pattern[i + 1] == "?":
            out.append(ch)  # lazy quantifier: same set of matching lines
            i += 2
        elif ch in "{":
            end = pattern.find("}", i)
            if end == -1 or not re.fullmatch(r"\{\d*(?:,\d*)?\}", pattern[i:end + 1]):
                out.append("\\{")
                i += 1
            else:
                out.append(pattern[i:end + 1])
                i = end + 1
        else:
            out.append(_case_fold(ch) if icase else ch)
            i += 1
    return "".join(out)


def grep_patterns() -> tuple[list[str], list[tuple[str, str, str]], int, list[str]]:
    """(ERE patterns, skipped [(signature id, pattern, reason)], total, all example lines)."""
    sys.path.insert(0, str(REPO))
    from diag_service.signatures import load_signatures

    sigs = load_signatures()
    eres: list[str] = []
    skipped: list[tuple[str, str, str]] = []
    examples: list[str] = []
    total = 0
    for c in sigs.signatures:
        examples += [e for e in c.spec.examples + c.spec.counter_examples if "\n" not in e]
        for p in c.spec.patterns:
            total += 1
            try:
                eres.append(to_ere(p))
            except Unconvertible as exc:
                skipped.append((c.spec.id, p, str(exc)))
    return eres, skipped, total, examples


def check_conversion(eres: list[str], skipped: list[tuple[str, str, str]], examples: list[str], tmp: Path) -> dict:
    """Compare, line by line, grep -E with the converted patterns and Python re with the converted-from ones."""
    sys.path.insert(0, str(REPO))
    from diag_service.signatures import load_signatures

    sigs = load_signatures()
    skip = {p for _, p, _ in skipped}
    pats = [re.compile(p) for c in sigs.signatures for p in c.spec.patterns if p not in skip]
    ex_file, pat_file = tmp / "examples.txt", tmp / "patterns.ere"
    ex_file.write_text("\n".join(examples) + "\n")
    pat_file.write_text("\n".join(eres) + "\n")
    r = subprocess.run(["grep", "-E", "-n", "-f", str(pat_file), str(ex_file)], capture_output=True, text=True,
                       env={**os.environ, "LC_ALL": "C"})
    if r.returncode > 1:
        raise SystemExit(f"grep rejected the converted patterns: {r.stderr.strip()}")
    grep_hits = {int(x.split(":", 1)[0]) - 1 for x in r.stdout.splitlines() if x}
    py_hits = {i for i, e in enumerate(examples) if any(p.search(e) for p in pats)}
    return {
        "example_lines": len(examples),
        "agree": len(examples) - len(grep_hits ^ py_hits),
        "only_grep": [examples[i][:160] for i in sorted(grep_hits - py_hits)][:10],
        "only_python": [examples[i][:160] for i in sorted(py_hits - grep_hits)][:10],
    }


def _timed_run(cmd: list[str]) -> tuple[float, float, str, int]:
    """(wall seconds, CPU seconds, stdout, exit code) of one command with ``LC_ALL=C``; CPU from wait4."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"})
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        text = out.read().decode(errors="replace")
    return wall, ru.ru_utime + ru.ru_stime, text, os.waitstatus_to_exitcode(status)


def run_grep(bundle: Path, pat_file: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and matching-line count of ``LC_ALL=C grep -E -c -r -f patterns bundle``."""
    wall, cpu, text, rc = _timed_run(["grep", "-E", "-c", "-r", "-f", str(pat_file), str(bundle)])
    if rc > 1:
        raise SystemExit(f"grep failed with exit code {rc}")
    return wall, cpu, sum(int(x.rsplit(":", 1)[1]) for x in text.splitlines() if x)


def run_read_floor(bundle: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``LC_ALL=C grep -c -r '' bundle`` (read and count lines: the I/O floor)."""
    wall, cpu, _, _ = _timed_run(["grep", "-c", "-r", "", str(bundle)])
    return wall, cpu


# =================================================================================================
# Pipeline child process
# =================================================================================================


def _diagnosis_sha256(d: object) -> str:
    """SHA-256 of the diagnosis's JSON without any ``timings_ms`` (as ``diagnosis_identity.py`` compares it)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from diagnosis_identity import _without_timings

    doc = _without_timings(d.model_dump(mode="json"))  # type: ignore[attr-defined]
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def child_main(bundle: str, out: str, profile: str | None) -> None:
    """Run the pipeline once in this (fresh) process and write what the parent needs as JSON."""
    t0 = time.perf_counter()
    sys.path.insert(0, str(REPO))
    from diag_service.pipeline import DiagnoseRequest, diagnose
    from diag_service.signatures import site_catalog

    # the catalogue diagnose() then reuses (site_catalog is cached per process), as `diag diagnose` loads it once;
    # not part of timings_ms
    site_catalog()
    t_import = time.perf_counter() - t0
    if profile:
        import cProfile

        prof = cProfile.Profile()
        d = prof.runcall(diagnose, DiagnoseRequest(path=bundle))
        prof.dump_stats(profile)
    else:
        d = diagnose(DiagnoseRequest(path=bundle))
    res = {
        "import_and_signatures_s": round(t_import, 3),
        "in_process_s": round(time.perf_counter() - t0, 3),
        "timings_ms": d.timings_ms,
        "lines": d.input.lines,
        "bytes_read": d.input.bytes_read,
        "files": d.input.files,
        "warnings": d.input.warnings[:20],
        "ranks_seen": d.input.ranks_seen,
        "failure_mode": str(d.failure_mode),
        "category": str(d.category),
        "first_failing_rank": d.first_failing_rank,
        "faulty_nodes": d.faulty_nodes,
        "confidence": d.confidence,
        "summary": d.root_cause.summary,
        "evidence": [e.model_dump(mode="json") for e in d.root_cause.evidence[:5]],
        "event_templates": len(d.events),
        "event_occurrences": sum(e.count for e in d.events),
        "signature_hits": [h.signature_id for h in d.signature_hits][:20],
        # the whole diagnosis without timings (eval/bench/diagnosis_identity.py): equal across code versions
        # that must not change the answer
        "diagnosis_sha256": _diagnosis_sha256(d),
        "self_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    Path(out).write_text(json.dumps(res, default=str))


def run_pipeline(bundle: Path, tmp: Path, profile: str | None = None) -> dict:
    """Diagnose ``bundle`` in a child process; add its wall time and peak RSS (from wait4)."""
    out = tmp / "child.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_child", str(bundle), "--_child-out", str(out)]
    if profile:
        cmd += ["--_child-profile", profile]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"pipeline child failed ({proc.returncode}):\n{err[-4000:]}")
    res = json.loads(out.read_text())
    res["wall_s"] = round(wall, 3)
    res["peak_rss_mb"] = round(ru.ru_maxrss / 1024, 1)
    res["user_cpu_s"] = round(ru.ru_utime, 2)
    res["sys_cpu_s"] = round(ru.ru_stime, 2)
    return res


# =================================================================================================
# Main
# =================================================================================================


def _machine() -> dict:
    info = {
        "nproc": os.cpu_count(),
        "sched_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    try:
        cpu = Path("/proc/cpuinfo").read_text()
        m = re.search(r"model name\s*:\s*(.+)", cpu)
        info["cpu"] = m.group(1).strip() if m else None
        m = re.search(r"MemTotal:\s*(\d+) kB", Path("/proc/meminfo").read_text())
        info["mem_total_gb"] = round(int(m.group(1)) / 1024 / 1024, 1) if m else None
    except OSError:
        pass
    r = subprocess.run(["grep", "--version"], capture_output=True, text=True)
    info["grep"] = r.stdout.splitlines()[0] if r.stdout else None
    r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    info["git_commit"] = r.stdout.strip() or None
    r = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "diag_service", "knowledge_base"],
                       capture_output=True, text=True)
    info["diag_service_dirty"] = bool(r.stdout.strip())
    # The tree is edited concurrently: a content hash of the code and signatures that were measured.
    h = hashlib.sha256()
    for p in sorted([*REPO.glob("diag_service/**/*.py"), *REPO.glob("knowledge_base/signatures/*.yaml")]):
        h.update(p.relative_to(REPO).as_posix().encode() + b"\0" + p.read_bytes())
    info["code_sha256"] = h.hexdigest()[:16]
    return info


def _median(xs: list[float]) -> float:
    return round(statistics.median(xs), 3)


def _tree_stats(bundle: Path) -> dict:
    files = [p for p in bundle.rglob("*") if p.is_file()]
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files), "lines": None, "seconds": None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-gb", type=float, default=1.0, help="approximate bundle size in GB (10^9 bytes); default 1.0")
    ap.add_argument("--ranks", type=int, default=1024, help="world size; default 1024")
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--fail-rank", type=int, default=611, help="the rank that dies of CUDA OOM; default 611")
    ap.add_argument("--layout", choices=("console", "tree"), default="console")
    ap.add_argument("--start", default="2024-11-14T09:00:00", help="job start (UTC), ISO format")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=1, help="pipeline runs (median reported); default 1")
    ap.add_argument("--grep-runs", type=int, default=3, help="grep runs (median reported); default 3")
    ap.add_argument("--dir", help="generate the bundle here (default: a temporary directory)")
    ap.add_argument("--bundle", help="benchmark this existing bundle (one this script generated with the same --ranks and "
                    "--fail-rank) instead of generating one")
    ap.add_argument("--keep", action="store_true", help="keep the generated bundle")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help=f"result JSON (default {DEFAULT_OUT.relative_to(REPO)})")
    ap.add_argument("--note", help="a sentence on the conditions of this run, kept in the JSON's config")
    ap.add_argument("--profile", help="run the pipeline once under cProfile, save stats here, print the top functions")
    ap.add_argument("--_child", help=argparse.SUPPRESS)
    ap.add_argument("--_child-out", help=argparse.SUPPRESS)
    ap.add_argument("--_child-profile", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a._child:
        child_main(a._child, a._child_out, a._child_profile)
        return 0

    machine = _machine()
    tmp = Path(tempfile.mkdtemp(prefix="bench_diag_"))
    gen_dir: Path | None = None
    try:
        spec = BundleSpec(a.ranks, a.gpus_per_node, int(a.size_gb * 1e9), a.fail_rank, a.seed,
                          dt.datetime.fromisoformat(a.start), a.layout)
        if a.bundle:
            bundle = Path(a.bundle)
            gen = _tree_stats(bundle)
            # assume it was generated by this script with the same --ranks/--fail-rank
            expected = {"category": "gpu_oom", "first_failing_rank": spec.fail_rank, "failure_mode": "fail_stop",
                        "fail_node": spec.host(spec.fail_node)}
            print(f"[bench] using existing bundle {bundle}: {gen['files']} files, {gen['bytes'] / 1e9:.3f} GB", flush=True)
        else:
            if a.dir:
                if Path(a.dir).exists() and any(Path(a.dir).iterdir()):
                    raise SystemExit(f"--dir {a.dir} is not empty (it is deleted after the run unless --keep)")
                gen_dir = Path(a.dir)
            elif a.keep:
                gen_dir = Path(tempfile.mkdtemp(prefix="bench_bundle_"))
            else:
                gen_dir = tmp / "bundle"
            bundle = gen_dir
            print(f"[bench] generating {spec.ranks} ranks ({spec.nodes} nodes x {spec.gpn}), ~{a.size_gb} GB, "
                  f"layout {a.layout}, failure: rank {spec.fail_rank} CUDA OOM at step {spec.fail_step}/{spec.steps} ...",
                  flush=True)
            gen = generate_bundle(spec, gen_dir)
            expected = {"category": "gpu_oom", "first_failing_rank": spec.fail_rank, "failure_mode": "fail_stop",
                        "fail_node": spec.host(spec.fail_node)}
            print(f"[bench] wrote {gen['files']} files, {gen['bytes'] / 1e9:.3f} GB, {gen['lines']:,} lines "
                  f"in {gen['seconds']} s", flush=True)

        if a.profile:
            res = run_pipeline(bundle, tmp, profile=a.profile)
            import pstats

            print(f"[bench] profiled run: wall {res['wall_s']} s, timings_ms {res['timings_ms']}")
            st = pstats.Stats(a.profile)
            st.sort_stats("tottime").print_stats(30)
            st.sort_stats("cumulative").print_stats(40)
            return 0

        # grep reference
        eres, skipped, total, examples = grep_patterns()
        pat_file = tmp / "patterns.ere"
        conv = check_conversion(eres, skipped, examples, tmp)
        grep_secs: list[float] = []
        grep_cpu: list[float] = []
        grep_count = 0
        floor = run_read_floor(bundle)  # also warms the page cache for grep and the pipeline alike
        for k in range(a.grep_runs):
            s, c, grep_count = run_grep(bundle, pat_file)
            grep_secs.append(s)
            grep_cpu.append(c)
            print(f"[bench] grep run {k + 1}/{a.grep_runs}: {s:.2f} s ({c:.2f} s CPU), {grep_count:,} matching lines",
                  flush=True)

        # pipeline
        runs = []
        for k in range(a.runs):
            r = run_pipeline(bundle, tmp)
            runs.append(r)
            print(f"[bench] pipeline run {k + 1}/{a.runs}: wall {r['wall_s']} s, peak RSS {r['peak_rss_mb']} MB, "
                  f"{r['category']} rank {r['first_failing_rank']}, timings_ms {r['timings_ms']}", flush=True)

        lines = runs[0]["lines"]
        keys = [s for s in STAGES if s in runs[0]["timings_ms"]]
        keys[-1:-1] = [k for k in runs[0]["timings_ms"] if k not in STAGES]  # stages added later, before total
        stages_ms = {s: _median([r["timings_ms"].get(s, math.nan) for r in runs]) for s in keys}
        stage_lps = {s: (round(lines / (ms / 1000)) if ms and ms > 0 else None) for s, ms in stages_ms.items()}
        wall = _median([r["wall_s"] for r in runs])
        rss = _median([r["peak_rss_mb"] for r in runs])
        gsec = _median(grep_secs)
        gcpu = _median(grep_cpu)
        cpu = _median([r["user_cpu_s"] + r["sys_cpu_s"] for r in runs])
        ratio = round(wall / gsec, 2) if gsec > 0 else None
        last = runs[-1]
        got = {k: last[k] for k in ("category", "failure_mode", "first_failing_rank", "faulty_nodes", "confidence",
                                    "summary", "evidence", "signature_hits", "diagnosis_sha256")}
        correct = None
        if expected:
            correct = {
                "category": last["category"] == expected["category"],
                "first_failing_rank": last["first_failing_rank"] == expected["first_failing_rank"],
                "failure_mode": last["failure_mode"] == expected["failure_mode"],
            }
            correct["all"] = all(correct.values())
        result = {
            "benchmark": "bench_diagnose",
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "machine": machine,
            # with --bundle, the size is the bundle's own and the generator's step numbers are unknown
            "config": {"size_gb": a.size_gb if not a.bundle else round(gen["bytes"] / 1e9, 3), "ranks": spec.ranks,
                       "nodes": spec.nodes, "gpus_per_node": spec.gpn,
                       "layout": a.layout if not a.bundle else None, "fail_rank": spec.fail_rank,
                       "fail_step": spec.fail_step if not a.bundle else None,
                       "steps_per_rank": spec.steps if not a.bundle else None, "seed": a.seed, "runs": a.runs,
                       "grep_runs": a.grep_runs, "bundle": str(bundle) if (a.bundle or a.keep) else None,
                       "note": a.note},
            "bundle": {"files": gen["files"], "bytes": gen["bytes"], "lines_written": gen["lines"],
                       "lines_read_by_pipeline": lines, "bytes_read_by_pipeline": runs[0]["bytes_read"],
                       "generate_seconds": gen["seconds"]},
            "pipeline": {
                "wall_s": wall,
                "wall_s_runs": [r["wall_s"] for r in runs],
                "import_and_signatures_s": _median([r["import_and_signatures_s"] for r in runs]),
                "stages_ms": stages_ms,
                "stage_lines_per_s": stage_lps,
                "lines_per_s_wall": round(lines / wall) if wall else None,
                "mb_per_s_wall": round(runs[0]["bytes_read"] / 1e6 / wall, 1) if wall else None,
                "peak_rss_mb": rss,
                "peak_rss_mb_runs": [r["peak_rss_mb"] for r in runs],
                "cpu_s": cpu,
                # The machine is shared: wall time includes waiting for a core. cpu_share = CPU / wall;
                # stages_ms_cpu_est scales each stage by it (assumes the contention was uniform).
                "cpu_share": round(cpu / wall, 3) if wall else None,
                "stages_ms_cpu_est": {k: round(v * cpu / wall, 1) for k, v in stages_ms.items()} if wall else None,
                "lines_per_s_cpu": round(lines / cpu) if cpu else None,
                "cpu_s_runs": [round(r["user_cpu_s"] + r["sys_cpu_s"], 2) for r in runs],
                "event_templates": last["event_templates"],
                "event_occurrences": last["event_occurrences"],
                "ranks_seen": last["ranks_seen"],
                "input_warnings": last["warnings"],
            },
            "grep": {
                "command": "LC_ALL=C grep -E -c -r -f patterns.ere BUNDLE",
                "patterns_total": total,
                "patterns_to_grep": len(eres),
                "patterns_skipped": [{"signature": s, "pattern": p, "reason": why} for s, p, why in skipped],
                "case_insensitive_expanded": "(?i) patterns expanded to [Aa] classes, one pass",
                "conversion_check_on_signature_examples": conv,
                "seconds": gsec,
                "seconds_runs": [round(x, 3) for x in grep_secs],
                "cpu_s": _median(grep_cpu),
                "read_floor_grep_c_empty_pattern_s": round(floor[0], 3),
                "read_floor_cpu_s": round(floor[1], 3),
                "matching_lines": grep_count,
                "lines_per_s": round(lines / gsec) if gsec else None,
                "lines_per_s_cpu": round(lines / gcpu) if gcpu else None,
            },
            "ratio_to_grep": ratio,
            "ratio_to_grep_cpu": round(cpu / gcpu, 2) if gcpu > 0 else None,
            "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
            "targets": {
                "wall_s_max": TARGET_WALL_S, "peak_rss_mb_max": TARGET_RSS_MB, "ratio_to_grep_max": TARGET_GREP_RATIO,
                "wall_ok": wall <= TARGET_WALL_S, "rss_ok": rss <= TARGET_RSS_MB,
                "ratio_ok": ratio is not None and ratio <= TARGET_GREP_RATIO,
            },
            "diagnosis": {"expected": expected, "got": got, "correct": correct},
        }
        t = result["targets"]
        t["met"] = bool(t["wall_ok"] and t["rss_ok"])
        t["met_including_ratio"] = bool(t["met"] and t["ratio_ok"])
        out = Path(a.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2, default=str) + "\n")
        print(f"[bench] wall {wall} s (target {TARGET_WALL_S}), peak RSS {rss} MB (target {TARGET_RSS_MB}), "
              f"grep {gsec} s, ratio {ratio}x (CPU {result['ratio_to_grep_cpu']}x); targets met: {t['met']}; diagnosis correct: "
              f"{correct['all'] if correct else 'n/a'}", flush=True)
        print(f"[bench] wrote {out}")
        return 0
    finally:
        if gen_dir is not None and a.keep:
            print(f"[bench] bundle kept at {gen_dir}")
        elif gen_dir is not None and a.dir:
            shutil.rmtree(gen_dir, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
