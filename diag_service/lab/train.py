"""Tiny data-parallel training job for the fault-injection lab, launched by ``torchrun``.

One process per rank. It trains a small MLP on synthetic data with the gloo backend and an
explicit gradient all-reduce after ``backward()`` (the collective DDP issues, made explicit so
that the compute, communication and data phases of a step can be timed separately). A step takes
20-100 ms on a shared 2-core CPU.

The script is run as a plain file (``torchrun .../diag_service/lab/train.py --config cfg.json``),
so it imports only the standard library and torch. The JSON configuration is written by
:mod:`diag_service.lab.runner`; its keys are documented in :class:`TrainConfig`.

What it writes besides its stdout/stderr (which torchrun redirects into its log tree), all in
``parts_dir`` and merged by the runner after the run:

- ``rank-<R>.json``: ``{"rank", "node", "pid", "local_rank", "attempt", "time"}`` once the process
  group is up (overwritten on every restart attempt);
- ``timing-rank-<R>.jsonl``: one line per completed step, unix seconds;
- ``events-rank-<R>.jsonl``: lifecycle events this rank saw (``first_step``, ``checkpoint_saved``,
  ``restart``);
- ``fault-rank-<R>.json``: ground truth, written the moment a fault fires (never read by analyzers).

Exactly one fault is injected, on the configured rank (or on every rank for job-wide faults),
from the configured onset step, with real torch / OS behaviour: a shape mismatch raised by
``torch.nn.functional.linear``, a real ``KeyError``/``ImportError``, ``SIGKILL``, a real
``EROFS``/``ENOSPC``/``EACCES`` from the file system, a real DataLoader worker death, a real gloo
collective timeout, and so on.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import socket
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.elastic.multiprocessing.errors import record
from torch.utils.data import DataLoader, Dataset

IN_FEATURES = 128
N_CLASSES = 16


@dataclass
class TrainConfig:
    """Configuration of one training run (times in seconds).

    ``fault`` is ``{"kind": ..., <parameters>}``; ``faulty_rank`` is the global rank that carries
    the fault (``None`` for job-wide faults and controls); ``onset_step`` is the first step at which
    the fault acts.
    """

    scenario: str
    parts_dir: str
    ckpt_dir: str
    fault: dict[str, Any] = field(default_factory=lambda: {"kind": "none"})
    faulty_rank: int | None = None
    onset_step: int = 0
    steps: int = 60
    seed: int = 0
    batch_size: int = 1024
    hidden: int = 512
    n_buckets: int = 2
    num_workers: int = 0
    collective_timeout_s: float = 30.0
    ckpt_every: int = 0
    ckpt_pause_s: float = 0.0
    eval_every: int = 0
    eval_s: float = 0.0
    fault_ckpt_dir: str | None = None
    fault_on_restart: bool = False
    jitter_s: float = 0.0
    trace_comm: bool = False
    tp_size: int = 1
    fr_dir: str | None = None
    fr_request: str | None = None


class _Writer:
    """Line-buffered JSONL appender (one ``write`` per line, flushed at once)."""

    def __init__(self, path: Path) -> None:
        self._f = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - lives as long as the rank

    def write(self, record_: dict[str, Any]) -> None:
        self._f.write(json.dumps(record_, sort_keys=False) + "\n")
        self._f.flush()


class SyntheticBatches(Dataset):
    """Map-style dataset whose item ``i`` is the whole batch of step ``i`` (use ``batch_size=None``).

    Data faults act here, inside ``__getitem__``, so that they happen where a real data pipeline
    fails: in the DataLoader worker process when ``num_workers > 0``, else in the rank itself.
    """

    def __init__(self, cfg: TrainConfig, rank: int) -> None:
        self.cfg = cfg
        self.rank = rank
        self.kind = cfg.fault.get("kind", "none")
        self.faulty = cfg.faulty_rank == rank and _fault_active_in_attempt(cfg)

    def __len__(self) -> int:
        return self.cfg.steps

    def __getitem__(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(self.cfg.seed * 1_000_003 + self.rank * 10_007 + step)
        features = IN_FEATURES
        if self.faulty and step == self.cfg.onset_step:
            if self.kind == "exception" and self.cfg.fault.get("error") == "shape_mismatch":
                # A feature-pipeline bug: one feature column dropped for this shard.
                features = IN_FEATURES - int(self.cfg.fault.get("dropped_features", 1))
            elif self.kind == "dataloader_worker_killed":
                _note_fault(self.cfg, self.rank, step, {"pid": os.getpid(), "where": "dataloader_worker"})
                os.kill(os.getpid(), signal.SIGKILL)  # as the kernel OOM killer would
            elif self.kind == "data_block":
                _note_fault(self.cfg, self.rank, step, {"pid": os.getpid(), "where": "dataset_read"})
                _open_shard(Path(self.cfg.parts_dir) / f"shard-rank-{self.rank}.fifo")
        x = torch.randn(self.cfg.batch_size, features, generator=g)
        y = torch.randint(0, N_CLASSES, (self.cfg.batch_size,), generator=g)
        if self.faulty and step == self.cfg.onset_step and self.kind == "nan_loss":
            x[0, :] = float("inf")  # a corrupt record: inf * 0 weights later gives NaN
        return x, y


def _open_shard(fifo: Path) -> bytes:
    """Open a data shard that never delivers (a FIFO with no writer): blocks in ``open(2)``."""
    if not fifo.exists():
        os.mkfifo(fifo)
    with open(fifo, "rb") as f:
        return f.read()


def _fault_active_in_attempt(cfg: TrainConfig) -> bool:
    """Whether the fault acts in this torchelastic attempt (restart count 0, or always)."""
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    return attempt == 0 or cfg.fault_on_restart


def _note_fault(cfg: TrainConfig, rank: int, step: int, extra: dict[str, Any] | None = None) -> None:
    """Record ground truth: the fault fired on ``rank`` at ``step`` now (unix seconds)."""
    path = Path(cfg.parts_dir) / f"fault-rank-{rank}.json"
    if path.exists():
        return
    rec = {"rank": rank, "step": step, "time": time.time(), "kind": cfg.fault.get("kind")}
    rec.update(extra or {})
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec))
    tmp.replace(path)


class MLP(nn.Module):
    """Three-layer MLP classifier (0.34 M parameters at ``hidden=512``)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(IN_FEATURES, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, N_CLASSES),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class MetricsBuffer:
    """Step metrics shared with a background flusher thread, guarded by two locks.

    The flusher takes ``io_lock`` then ``buf_lock``; the training loop takes ``buf_lock`` then
    ``io_lock`` only on the deadlock fault path, which produces a real lock-order deadlock.
    """

    def __init__(self, path: Path) -> None:
        self.buf_lock = threading.Lock()
        self.io_lock = threading.Lock()
        self.items: list[dict[str, Any]] = []
        self.path = path
        self._stop = threading.Event()
        self._flusher_has_io = threading.Event()
        self._grab_io_now = threading.Event()
        self.thread = threading.Thread(target=self._run, name="metrics-flusher", daemon=True)
        self.thread.start()

    def add(self, item: dict[str, Any]) -> None:
        with self.buf_lock:
            self.items.append(item)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            if self._grab_io_now.is_set():
                self._grab_io_now.clear()
                with self.io_lock:
                    self._flusher_has_io.set()
                    time.sleep(0.05)
                    self._flush_locked()
            else:
                with self.io_lock:
                    self._flush_locked()

    def _flush_locked(self) -> None:
        with self.buf_lock:
            items, self.items = self.items, []
        if items:
            with open(self.path, "a", encoding="utf-8") as f:
                for it in items:
                    f.write(json.dumps(it) + "\n")

    def flush_now(self) -> None:
        """Deadlock path: hold ``buf_lock`` while the flusher holds ``io_lock``, then take it."""
        with self.buf_lock:
            self._grab_io_now.set()
            self._flusher_has_io.wait(5.0)
            with self.io_lock:
                self._flush_locked()

    def close(self) -> None:
        self._stop.set()
        self.thread.join(timeout=1.0)


def _lr_at(step: int, schedule: dict[str, Any]) -> float:
    """Linear warm-up then step decay; reads its keys from the (per-rank) schedule config."""
    if step < schedule["warmup_steps"]:
        return schedule["base_lr"] * (step + 1) / schedule["warmup_steps"]
    decay_every = schedule["decay_every"]
    return schedule["base_lr"] * schedule["decay_factor"] ** (step // decay_every)


def _load_fused_clip() -> Any:
    """Import an optional fused kernel extension that the job image does not have."""
    from fused_optim_ext import clip_grad_norm_  # type: ignore[import-not-found]

    return clip_grad_norm_


def _allreduce_grads(model: nn.Module, world: int, n_buckets: int, delay_s: float) -> list[float]:
    """Average gradients across ranks with ``n_buckets`` gloo all-reduces (``delay_s`` per bucket).

    Returns the unix time (s) at which this rank issued each bucket's all-reduce, as a collective trace
    (the PyTorch Flight Recorder's per-collective start time) would record it.
    """
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    buckets = torch.chunk(flat, max(1, n_buckets))
    reduced = []
    issued: list[float] = []
    for b in buckets:
        if delay_s > 0:
            time.sleep(delay_s)  # a slow link: every message of this rank arrives late
        b = b.clone()
        issued.append(time.time())
        dist.all_reduce(b)
        reduced.append(b)
    out = torch.cat(reduced) / world
    offset = 0
    for g in grads:
        n = g.numel()
        g.copy_(out[offset : offset + n].view_as(g))
        offset += n
    return issued


def _comm_wait_s(issued: list[float], n_buckets: int) -> float:
    """Seconds this rank waited in the step's all-reduces for the last rank to issue each of them.

    All ranks exchange their per-collective issue times (one small all-gather, outside the timed step) and
    the wait is ``sum_b (max_r issued[r, b] - issued[self, b])``: what a collector computes from per-rank
    collective traces aligned by sequence number. All lab ranks share one host clock.
    """
    mine = torch.zeros(max(1, n_buckets), dtype=torch.float64)
    mine[: len(issued)] = torch.tensor(issued, dtype=torch.float64)
    everyone = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, mine)
    latest = torch.stack(everyone).max(dim=0).values
    return float((latest - mine).clamp(min=0).sum())


def _refresh_lease(seconds: float) -> None:
    """Wait for a host-side lease renewal (the hang fault makes it never return in time)."""
    time.sleep(seconds)


def _sync_metrics(variant: str, flat_numel: int) -> None:
    """Rank-local metrics sync; on the faulty rank it issues a collective the others do not."""
    if variant == "skip":
        return
    if variant == "barrier":
        dist.barrier()
    elif variant == "broadcast":
        dist.broadcast(torch.zeros(flat_numel), src=dist.get_rank())
    elif variant == "allreduce_size":
        dist.all_reduce(torch.zeros(max(1, flat_numel // 3)))
    else:
        raise ValueError(f"unknown collective mismatch variant {variant!r}")


def _flight_recorder_dumper(rank: int, request: Path, out_dir: Path) -> None:
    """Wait (in a daemon thread) for the runner's request, then write this rank's Flight Recorder dump as
    ``<out_dir>/nccl_trace_rank_<rank>`` (the name ``TORCH_FR_DUMP_TEMP_FILE`` + rank would give). A thread,
    because a rank stuck in a collective never returns to Python's main loop to run a signal handler."""
    while not request.exists():
        time.sleep(0.1)
    try:
        data = torch._C._distributed_c10d._dump_fr_trace()
    except (RuntimeError, AttributeError) as exc:  # no Flight Recorder in this build
        print(f"[lab] rank {rank}: no Flight Recorder dump ({exc})", flush=True)
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".nccl_trace_rank_{rank}.tmp"
    tmp.write_bytes(data)
    tmp.replace(out_dir / f"nccl_trace_rank_{rank}")


def _save_checkpoint(model: nn.Module, opt: torch.optim.Optimizer, step: int, directory: Path) -> Path:
    """Write ``step-<N>.pt`` (model, optimizer, step) atomically-ish into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"step-{step:06d}.pt"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
    return path


def _latest_checkpoint(directory: Path) -> Path | None:
    if not directory.is_dir():
        return None
    cands = sorted(directory.glob("step-*.pt"))
    return cands[-1] if cands else None


@record
def main(argv: list[str] | None = None) -> int:
    """Train for ``cfg.steps`` steps, injecting the configured fault; return 0 on success."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--config", required=True, help="JSON file with the TrainConfig fields")
    args = ap.parse_args(argv)
    raw = json.loads(Path(args.config).read_text())
    cfg = TrainConfig(**raw)

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    node = os.environ.get("LAB_NODE", socket.gethostname())
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    parts = Path(cfg.parts_dir)
    parts.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)

    # Fallback stack dumps for hosts without ptrace: the runner sends SIGUSR1.
    fh_file = open(parts / f"faulthandler-rank-{rank}.txt", "a", encoding="utf-8")  # noqa: SIM115
    faulthandler.register(signal.SIGUSR1, file=fh_file, all_threads=True, chain=False)

    kind = cfg.fault.get("kind", "none")
    second = cfg.fault.get("second_rank_offset")
    fault_here = _fault_active_in_attempt(cfg) and (
        cfg.faulty_rank == rank
        or (cfg.faulty_rank is None and cfg.fault.get("scope") == "all")
        or (second is not None and cfg.faulty_rank is not None and (cfg.faulty_rank + int(second)) % world == rank)
    )

    print(f"[lab] rank {rank}/{world} node={node} local_rank={local_rank} pid={os.getpid()} attempt={attempt}", flush=True)
    dist.init_process_group("gloo", timeout=timedelta(seconds=cfg.collective_timeout_s))
    if cfg.fr_dir and cfg.fr_request:
        threading.Thread(target=_flight_recorder_dumper, args=(rank, Path(cfg.fr_request), Path(cfg.fr_dir)),
                         daemon=True, name="lab-fr-dumper").start()
    tp_group = None
    if cfg.tp_size > 1:
        # every rank creates every group, in the same order (torch.distributed.new_group's contract)
        for start in range(0, world, cfg.tp_size):
            g = dist.new_group(list(range(start, start + cfg.tp_size)))
            if start <= rank < start + cfg.tp_size:
                tp_group = g
    info = {
        "rank": rank,
        "node": node,
        "pid": os.getpid(),
        "local_rank": local_rank,
        "attempt": attempt,
        "world_size": world,
        "time": time.time(),
    }
    tmp = parts / f"rank-{rank}.json.tmp"
    tmp.write_text(json.dumps(info))
    tmp.replace(parts / f"rank-{rank}.json")

    timing = _Writer(parts / f"timing-rank-{rank}.jsonl")
    events = _Writer(parts / f"events-rank-{rank}.jsonl")
    metrics = MetricsBuffer(parts / f"metrics-rank-{rank}.jsonl")

    model = MLP(cfg.hidden)
    # Same initial weights everywhere, as DDP guarantees with its initial broadcast.
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    schedule: dict[str, Any] = {"base_lr": 0.05, "warmup_steps": 5, "decay_every": 20, "decay_factor": 0.7}
    if kind == "exception" and cfg.fault.get("error") == "key_error" and fault_here:
        # This rank's config came from an older template: a longer warm-up, and the decay
        # section spelled differently, so the first post-warm-up step fails its lookup.
        schedule["warmup_steps"] = cfg.onset_step
        schedule.pop(str(cfg.fault.get("missing_key", "decay_every")), None)
        schedule["decay_steps"] = 20
    ckpt_dir = Path(cfg.ckpt_dir)

    start_step = 0
    if attempt > 0:
        if rank == 0:
            events.write({"event": "restart", "time": time.time(), "attempt": attempt})
        last = _latest_checkpoint(ckpt_dir)
        if last is not None:
            state = torch.load(last, weights_only=True)
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            start_step = int(state["step"]) + 1
            print(f"[lab] rank {rank} resumed from {last.name} at step {start_step}", flush=True)

    ds = SyntheticBatches(cfg, rank)
    loader = DataLoader(
        torch.utils.data.Subset(ds, range(start_step, cfg.steps)),
        batch_size=None,
        shuffle=False,
        num_workers=cfg.num_workers,
        persistent_workers=False,
    )
    jitter = torch.Generator().manual_seed(cfg.seed + 7 * rank)
    compute_hist: list[float] = []
    slow_base_s: float | None = None  # job-wide slow_compute: the common base of the extra time (s)
    n_params = sum(p.numel() for p in model.parameters())

    step = start_step
    it = iter(loader)
    while step < cfg.steps:
        t0 = time.time()
        x, y = next(it)
        t1 = time.time()
        at_onset = fault_here and step == cfg.onset_step
        if at_onset and kind in ("exception", "nan_loss", "dataloader_worker_killed", "data_block"):
            _note_fault(cfg, rank, step)
        for group in opt.param_groups:
            group["lr"] = _lr_at(step, schedule)
        if at_onset and kind == "exception" and cfg.fault.get("error") == "import_error":
            _note_fault(cfg, rank, step)
            _load_fused_clip()
        if at_onset and kind == "sigkill":
            _note_fault(cfg, rank, step)
            os.kill(os.getpid(), signal.SIGKILL)

        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = loss_fn(out, y)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"Loss is {loss.item()} at step {step} on rank {rank}; stopping to protect the checkpoint")
        loss.backward()
        if cfg.jitter_s > 0:
            time.sleep(float(torch.rand(1, generator=jitter)) * cfg.jitter_s)
        t_compute = time.time() - t1
        if step < cfg.onset_step or not compute_hist:
            compute_hist.append(t_compute)
        if kind == "slow_compute" and fault_here and step == cfg.onset_step and cfg.fault.get("scope") == "all":
            # a job-wide slowdown stretches every rank by the same amount: the mean of the ranks' median
            # pre-onset compute (a rank that happened to get less CPU before the onset must not become a straggler)
            job_base = torch.tensor([statistics.median(compute_hist)], dtype=torch.float64)
            dist.all_reduce(job_base)
            slow_base_s = float(job_base.item()) / world
        if kind == "slow_compute" and fault_here and step >= cfg.onset_step and _slow_now(cfg, step):
            base_s = slow_base_s if slow_base_s is not None else statistics.median(compute_hist)
            if step == cfg.onset_step or not (parts / f"fault-rank-{rank}.json").exists():
                _note_fault(cfg, rank, step, {"base_compute_s": base_s})
            extra = base_s * float(cfg.fault.get("extra_pct", 50)) / 100.0
            time.sleep(extra)  # the host waits on a throttled device
        t2 = time.time()

        tp_hang = cfg.fault.get("where") == "before_tp_allreduce"
        if at_onset and kind == "hang_sleep" and not tp_hang:
            _note_fault(cfg, rank, step)
            _refresh_lease(float(cfg.fault.get("sleep_s", 3600)))
        if at_onset and kind == "lock_deadlock":
            _note_fault(cfg, rank, step)
            metrics.flush_now()
        if at_onset and kind == "collective_mismatch":
            _note_fault(cfg, rank, step, {"variant": cfg.fault.get("variant", "barrier")})
            _sync_metrics(str(cfg.fault.get("variant", "barrier")), n_params)
            if cfg.fault.get("variant", "barrier") != "skip":
                _allreduce_grads(model, world, cfg.n_buckets, 0.0)
            issued: list[float] = []
        elif kind == "slow_comm" and fault_here and step >= cfg.onset_step:
            if step == cfg.onset_step:
                _note_fault(cfg, rank, step)
            issued = _allreduce_grads(model, world, cfg.n_buckets, float(cfg.fault.get("delay_s", 0.03)))
        else:
            issued = _allreduce_grads(model, world, cfg.n_buckets, 0.0)
        if tp_group is not None:
            if at_onset and kind == "hang_sleep" and tp_hang:
                _note_fault(cfg, rank, step)
                _refresh_lease(float(cfg.fault.get("sleep_s", 3600)))
            # the tensor-parallel group averages its loss for logging (a collective inside the sub-group)
            dist.all_reduce(loss.detach().clone(), group=tp_group)
        t3 = time.time()
        opt.step()
        t4 = time.time()
        record = {
            "rank": rank,
            "node": node,
            "step": step,
            "start": round(t0, 6),
            "end": round(t4, 6),
            "compute_s": round(t2 - t1 + (t4 - t3), 6),
            "comm_s": round(t3 - t2, 6),
            "data_s": round(t1 - t0, 6),
            "attempt": attempt,
        }
        if cfg.trace_comm and issued:
            record["comm_wait_s"] = round(min(_comm_wait_s(issued, cfg.n_buckets), t3 - t2), 6)
        timing.write(record)
        metrics.add({"step": step, "loss": float(loss.detach())})
        if step == start_step and rank == 0:
            events.write({"event": "first_step", "time": t4, "step": step, "attempt": attempt})

        if cfg.ckpt_every and rank == 0 and (step + 1) % cfg.ckpt_every == 0 and step + 1 < cfg.steps:
            # the lines of HF Trainer / Megatron: a log reader knows a pause without steps is a save
            print(f"[lab] rank {rank} saving checkpoint at step {step} to {ckpt_dir}", flush=True)
            path = _save_checkpoint(model, opt, step, ckpt_dir)
            if cfg.ckpt_pause_s > 0:
                time.sleep(cfg.ckpt_pause_s)  # a large checkpoint written to a slow shared file system
            print(f"[lab] rank {rank} successfully saved checkpoint at step {step}", flush=True)
            events.write({"event": "checkpoint_saved", "time": time.time(), "step": step, "path": str(path)})
        if cfg.eval_every and (step + 1) % cfg.eval_every == 0 and step + 1 < cfg.steps:
            _evaluate(model, loss_fn, x, y, cfg, rank, step)
        if at_onset and kind == "checkpoint_write":
            _note_fault(cfg, rank, step, {"dir": cfg.fault_ckpt_dir})
            assert cfg.fault_ckpt_dir is not None
            _save_checkpoint_as_configured(model, opt, step, Path(cfg.fault_ckpt_dir), cfg)
        if step % 10 == 0:
            print(f"[lab] rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        step += 1

    metrics.close()
    dist.barrier()
    print(f"[lab] rank {rank} finished {cfg.steps} steps", flush=True)
    dist.destroy_process_group()
    # Leave without the interpreter's teardown: gloo's C++ destructors at exit occasionally abort a rank that
    # has finished every step ("terminate called without an active exception", SIGABRT; seen once in about
    # 150 runs), and its agent then reports the healthy run as failed. Every file is flushed and closed.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _evaluate(model: nn.Module, loss_fn: nn.Module, x: torch.Tensor, y: torch.Tensor, cfg: TrainConfig, rank: int,
              step: int) -> None:
    """An evaluation pass: forward passes without gradients for ``cfg.eval_s`` seconds, then the ranks average
    the evaluation loss (one all-reduce), announced as HF Trainer does: by the main process only ("Running
    Evaluation"), so an agent on another node sees its ranks stop without a phase line of their own."""
    if rank == 0:
        print(f"[lab] rank {rank} ***** Running Evaluation ***** at step {step}", flush=True)
    t_end = time.time() + cfg.eval_s
    total, n = 0.0, 0
    with torch.no_grad():
        while True:
            total += float(loss_fn(model(x), y))
            n += 1
            if time.time() >= t_end:
                break
            time.sleep(min(0.05, max(0.0, t_end - time.time())))
    avg = torch.tensor([total / max(n, 1)], dtype=torch.float64)
    dist.all_reduce(avg)
    if rank == 0:
        print(f"[lab] rank {rank} eval_loss {float(avg.item()) / dist.get_world_size():.4f} at step {step}", flush=True)


def _slow_now(cfg: TrainConfig, step: int) -> bool:
    """Whether the slow-compute fault acts at ``step`` (persistent, or ``period``/``duty`` steps)."""
    period = int(cfg.fault.get("period", 0) or 0)
    if period <= 0:
        return True
    duty = int(cfg.fault.get("duty", 1))
    return (step - cfg.onset_step) % period < duty


def _save_checkpoint_as_configured(
    model: nn.Module, opt: torch.optim.Optimizer, step: int, directory: Path, cfg: TrainConfig
) -> None:
    """Save into the faulty checkpoint directory; drop root privileges first if the runner asked."""
    if cfg.fault.get("drop_privileges") and os.geteuid() == 0:
        os.seteuid(65534)  # permission bits are not enforced for root
    _save_checkpoint(model, opt, step, directory)


if __name__ == "__main__":
    sys.exit(main())
