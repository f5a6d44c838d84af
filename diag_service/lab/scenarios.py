"""Fault-injection scenarios: pydantic models and loading of the built-in ``*.yaml`` scenarios
(``eval/lab/scenarios/`` in a source checkout, shipped in the wheel: :data:`DEFAULT_SCENARIO_DIR`).

A scenario is data: which fault to inject (``fault.kind`` plus its parameters), on which rank
and from which step, with which ground-truth labels (``failure_mode``, ``category``) and which
time bounds (all in seconds). See ``eval/lab/README.md`` for the file format.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from diag_service.domain import Category, FailureMode
from diag_service.resources import builtin

try:
    #: The built-in scenarios, found as the knowledge base is (:func:`diag_service.resources.builtin`):
    #: ``diag_service/_data/lab_scenarios`` in an installed wheel, ``eval/lab/scenarios`` in a checkout.
    DEFAULT_SCENARIO_DIR = builtin("lab_scenarios")
except FileNotFoundError:  # a broken install: loading then names the folder the scenarios should be in
    DEFAULT_SCENARIO_DIR = Path(__file__).resolve().parents[1] / "_data" / "lab_scenarios"


class _Fault(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @property
    def per_rank(self) -> bool:
        """Whether the fault lives on one rank (``faulty_rank`` required) or is job-wide."""
        return True


class NoFault(_Fault):
    """Clean control run: no fault, only natural (plus optional ``jitter_s``) noise."""

    kind: Literal["none"]

    @property
    def per_rank(self) -> bool:
        """A control run has no faulty rank."""
        return False


class ExceptionFault(_Fault):
    """A Python exception raised by real code on the faulty rank at the onset step.

    ``shape_mismatch``: the data pipeline drops ``dropped_features`` columns, so the first
    ``nn.Linear`` raises ``RuntimeError: mat1 and mat2 shapes cannot be multiplied``;
    ``key_error``: the rank's LR-schedule config (an older template whose warm-up ends at the onset
    step) lacks ``missing_key``, read on the first post-warm-up step (``KeyError``);
    ``import_error``: an optional fused-kernel module is imported and missing (``ModuleNotFoundError``).
    """

    kind: Literal["exception"]
    error: Literal["shape_mismatch", "key_error", "import_error"]
    dropped_features: int = Field(default=1, ge=1, le=64)
    missing_key: str = "decay_every"


class SigkillFault(_Fault):
    """The faulty rank receives ``SIGKILL`` at the onset step, as from the kernel OOM killer."""

    kind: Literal["sigkill"]


class CheckpointWriteFault(_Fault):
    """The faulty rank saves a checkpoint at the onset step into a broken file system.

    ``fs: readonly`` mounts a read-only tmpfs (``EROFS``); ``fs: full`` mounts a ``size_kib``
    tmpfs filled to the brim (``ENOSPC``). Where mounting is not permitted the runner falls back
    (read-only: permission bits, dropping root's effective uid; full: a ``/dev/full`` symlink) and
    records the method in ``truth.json``.
    """

    kind: Literal["checkpoint_write"]
    fs: Literal["readonly", "full"] = "readonly"
    size_kib: int = Field(default=256, ge=16, le=65536)


class NanLossFault(_Fault):
    """A corrupt record (``inf`` features) on the faulty rank makes the loss NaN; a check raises."""

    kind: Literal["nan_loss"]


class DataloaderWorkerKilledFault(_Fault):
    """The faulty rank's DataLoader worker is SIGKILLed while producing the onset batch."""

    kind: Literal["dataloader_worker_killed"]


class RendezvousPortInUseFault(_Fault):
    """The rendezvous port is held by another process before launch, so the store cannot bind."""

    kind: Literal["rendezvous_port_in_use"]

    @property
    def per_rank(self) -> bool:
        """The fault hits the launcher (node0's agent), before any rank exists."""
        return False


class HangSleepFault(_Fault):
    """The faulty rank blocks for ``sleep_s`` seconds just before the gradient all-reduce (or, with
    ``where: before_tp_allreduce``, before its tensor-parallel group's all-reduce)."""

    kind: Literal["hang_sleep"]
    sleep_s: float = Field(default=3600.0, gt=0)
    where: Literal["before_allreduce", "before_tp_allreduce"] = Field(
        default="before_allreduce",
        description="Before the world gradient all-reduce, or before the step's all-reduce inside its tensor-parallel group.",
    )
    second_rank_offset: int | None = Field(
        default=None, ge=1,
        description="Also hang rank (faulty_rank + offset) % ranks at the same step (two faulty ranks, e.g. in two groups).",
    )


class DataBlockFault(_Fault):
    """The faulty rank's data read blocks forever (a shard that never delivers: a FIFO)."""

    kind: Literal["data_block"]


class CollectiveMismatchFault(_Fault):
    """The faulty rank issues a different collective at the onset step.

    ``barrier``/``broadcast``: it calls that instead of (before) the all-reduce: every rank hangs
    until the gloo timeout. ``skip``: it skips one all-reduce, so the ranks silently desynchronise
    and hang at the end of training. ``allreduce_size``: a wrongly sized all-reduce (gloo aborts).
    """

    kind: Literal["collective_mismatch"]
    variant: Literal["barrier", "broadcast", "skip", "allreduce_size"] = "barrier"


class LockDeadlockFault(_Fault):
    """Lock-order deadlock between the training loop and a background metrics-flusher thread."""

    kind: Literal["lock_deadlock"]


class SlowComputeFault(_Fault):
    """Extra compute time on the faulty rank (``scope: rank``) or on all ranks (``scope: all``).

    From the onset step, each step's compute is stretched by ``extra_pct`` percent of the rank's
    median pre-onset compute time (the host waits, as on a throttled device). ``period > 0`` makes
    it intermittent: slow for ``duty`` steps out of every ``period``.
    """

    kind: Literal["slow_compute"]
    extra_pct: float = Field(default=100.0, gt=0, le=2000)
    period: int = Field(default=0, ge=0)
    duty: int = Field(default=1, ge=1)
    scope: Literal["rank", "all"] = "rank"

    @property
    def per_rank(self) -> bool:
        """One rank for ``scope: rank``; the whole job for ``scope: all``."""
        return self.scope == "rank"


class SlowCommFault(_Fault):
    """A slow link: every all-reduce bucket sent by the faulty rank is delayed by ``delay_s``."""

    kind: Literal["slow_comm"]
    delay_s: float = Field(default=0.03, gt=0, le=5)


Fault = Annotated[
    NoFault
    | ExceptionFault
    | SigkillFault
    | CheckpointWriteFault
    | NanLossFault
    | DataloaderWorkerKilledFault
    | RendezvousPortInUseFault
    | HangSleepFault
    | DataBlockFault
    | CollectiveMismatchFault
    | LockDeadlockFault
    | SlowComputeFault
    | SlowCommFault,
    Field(discriminator="kind"),
]


class Timeouts(BaseModel):
    """Time bounds of one run, in seconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    collective_s: float = Field(default=30.0, gt=0, description="gloo collective timeout.")
    run_s: float = Field(default=180.0, gt=0, description="Hard bound of the whole run.")
    hang_detect_s: float = Field(default=3.0, gt=0, description="No step on any rank for this long.")
    dump_interval_s: float = Field(default=2.0, gt=0, description="Between two stack snapshots.")
    grace_s: float = Field(default=20.0, gt=0, description="After the first agent exits, for the rest.")


class Scenario(BaseModel):
    """One fault-injection scenario, loaded from YAML."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9_]+$")
    description: str = ""
    failure_mode: FailureMode
    category: Category
    fault: Fault
    faulty_rank: int | None = Field(default=1, ge=0)
    onset_step: int = Field(default=20, ge=0)
    onset_range: tuple[int, int] | None = Field(default=None, description="Inclusive range the suite draws the onset step from.")
    steps: int = Field(default=60, ge=1, le=10_000)
    ranks: int = Field(default=2, ge=1, le=8)
    tp_size: int = Field(
        default=1, ge=1, le=8,
        description="Ranks per tensor-parallel group (consecutive ranks); above 1 each step also all-reduces inside the group.",
    )
    nodes: Literal[1, 2] = 1
    num_workers: int = Field(default=0, ge=0, le=4, description="DataLoader workers per rank.")
    ckpt_every: int = Field(default=0, ge=0, description="Rank 0 checkpoints every N steps (0: never).")
    ckpt_pause_s: float = Field(default=0.0, ge=0, le=120,
                                description="Extra seconds each checkpoint save takes (a large save to a slow file system).")
    eval_every: int = Field(default=0, ge=0, description="Every rank evaluates every N steps (0: never).")
    eval_s: float = Field(default=0.0, ge=0, le=120, description="Seconds an evaluation takes (forward passes, no step).")
    max_restarts: int = Field(default=0, ge=0, le=3)
    fault_on_restart: bool = False
    jitter_s: float = Field(default=0.0, ge=0, description="Extra uniform 0..jitter_s sleep per step.")
    batch_size: int = Field(default=1024, ge=1)
    hidden: int = Field(default=512, ge=8)
    dumps: Literal["auto", "always", "never"] = Field(
        default="auto", description="Stack snapshots: auto = for fail_hang scenarios only."
    )
    timeouts: Timeouts = Timeouts()

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if self.fault.per_rank and self.faulty_rank is None:
            raise ValueError(f"fault kind {self.fault.kind!r} needs a faulty_rank")
        if self.onset_step >= self.steps:
            raise ValueError("onset_step must be smaller than steps")
        if self.onset_range is not None:
            lo, hi = self.onset_range
            if not 0 <= lo <= hi < self.steps:
                raise ValueError("onset_range must satisfy 0 <= lo <= hi < steps")
        if self.ranks % self.nodes:
            raise ValueError("ranks must be a multiple of nodes")
        if self.ranks % self.tp_size:
            raise ValueError("ranks must be a multiple of tp_size")
        if getattr(self.fault, "where", None) == "before_tp_allreduce" and self.tp_size < 2:
            raise ValueError("hang_sleep where=before_tp_allreduce needs tp_size >= 2")
        if self.fault.kind == "dataloader_worker_killed" and self.num_workers < 1:
            raise ValueError("dataloader_worker_killed needs num_workers >= 1")
        return self

    @property
    def fault_is_per_rank(self) -> bool:
        """Whether the fault lives on one rank (else it is job-wide or absent)."""
        return self.fault.per_rank

    @property
    def wants_dumps(self) -> bool:
        """Whether the runner takes stack snapshots for this scenario."""
        if self.dumps == "auto":
            return self.failure_mode == FailureMode.FAIL_HANG
        return self.dumps == "always"

    @property
    def planned_pause_s(self) -> float:
        """Seconds without a step that the scenario itself schedules, at most, at one point: a checkpoint save's
        ``ckpt_pause_s`` plus an evaluation's ``eval_s`` (they can fall on the same step). The runner's own hang
        check waits this much longer than ``timeouts.hang_detect_s``: a planned pause is not a hang."""
        return (self.ckpt_pause_s if self.ckpt_every else 0.0) + (self.eval_s if self.eval_every else 0.0)

    @property
    def nominal_slowdown(self) -> float | None:
        """Nominal compute slowdown factor of a slow-compute fault (1 + extra_pct/100), else None."""
        if isinstance(self.fault, SlowComputeFault):
            return 1.0 + self.fault.extra_pct / 100.0
        if isinstance(self.fault, NoFault):
            return 1.0
        return None


def load_scenario(path: Path) -> Scenario:
    """Parse and validate one scenario YAML file; its ``name`` must match the file stem."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a scenario file must hold a mapping")
    scenario = Scenario.model_validate(data)
    if scenario.name != path.stem:
        raise ValueError(f"{path}: name {scenario.name!r} differs from the file name")
    return scenario


def load_scenarios(directory: Path = DEFAULT_SCENARIO_DIR) -> dict[str, Scenario]:
    """Load every ``*.yaml`` scenario in ``directory``, keyed by name (sorted)."""
    out: dict[str, Scenario] = {}
    for path in sorted(directory.glob("*.yaml")):
        sc = load_scenario(path)
        out[sc.name] = sc
    return out


def resolve_scenario(name_or_path: str, directory: Path = DEFAULT_SCENARIO_DIR) -> Scenario:
    """Find a scenario by name in ``directory``, or load it from an explicit YAML path."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        return load_scenario(p)
    candidate = directory / f"{name_or_path}.yaml"
    if candidate.is_file():
        return load_scenario(candidate)
    known = ", ".join(sorted(s.stem for s in directory.glob("*.yaml")))
    raise FileNotFoundError(f"no scenario {name_or_path!r} in {directory} (known: {known})")
