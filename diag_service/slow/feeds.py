"""Per-rank step timing feeds: the columnar :class:`StepBatch` and the JSONL / CSV / Parquet loaders.

The lab's format (``diag_service/lab/train.py``) is one JSON object per rank per step::

    {"rank": 3, "node": "node1", "step": 120, "start": 1795943642.03, "end": 1795943642.11,
     "compute_s": 0.069, "comm_s": 0.004, "data_s": 0.005, "attempt": 0}

``start``/``end`` are unix seconds, the phases are seconds and optional. Optional extras understood here:
``stage`` (pipeline stage, used as the peer group), ``kind`` (``train``/``eval``/``checkpoint``),
``step_time_s`` (a step duration when ``start``/``end`` are absent), ``iterations`` (how many
iterations one record covers, for logs that print averages over an interval) and ``comm_wait_s``: the
part of ``comm_s`` the rank spent inside its collectives waiting for the last peer to issue them, i.e.
``sum over the step's collectives of (latest peer's start - own start)``. A collector computes it from
per-rank collective traces aligned by sequence number (the PyTorch Flight Recorder records each
collective's start time per rank; the lab computes it with one small all-gather per step). With it the
detector can name a rank whose own communication is slow while its compute is not (``docs/slow.md``).

Bad input never raises out of a loader: unparseable lines, non-objects, negative or non-finite
numbers, ``end < start`` and missing ``rank``/``step`` are skipped and counted in
:class:`~diag_service.slow.models.FeedStats`. Only a path that does not exist, or a file whose
format cannot be read at all, raises :class:`FeedError`.
"""

from __future__ import annotations

import contextlib
import gzip
import heapq
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from diag_service.domain import Evidence
from diag_service.errors import DiagError, ErrorKind
from diag_service.jsonl import BadLine, iter_jsonl
from diag_service.limits import LIMITS
from diag_service.slow.models import FeedStats, StepKind

KIND_CODE: dict[str, int] = {"train": 0, "eval": 1, "evaluation": 1, "validation": 1, "val": 1, "checkpoint": 2, "ckpt": 2}
KIND_NAMES = (StepKind.TRAIN, StepKind.EVAL, StepKind.CHECKPOINT)
#: Bounds on values that size the detector's tables (:data:`diag_service.limits.LIMITS`): a record beyond
#: them is invalid, counted and reported, never allocated for.
MAX_RANK = LIMITS.max_rank
MAX_STEP = LIMITS.max_step
MAX_STAGE = LIMITS.max_stage

#: Accepted column names, first match wins (lab format first; common alternatives after).
ALIASES: dict[str, tuple[str, ...]] = {
    "rank": ("rank", "global_rank", "worker", "rank_id"),
    "node": ("node", "host", "hostname", "node_name"),
    "step": ("step", "iteration", "iter", "global_step"),
    "start": ("start", "start_time", "start_ts", "t_start"),
    "end": ("end", "end_time", "end_ts", "t_end"),
    "compute_s": ("compute_s", "compute", "compute_time_s"),
    "comm_s": ("comm_s", "comm", "communication_s", "comm_time_s"),
    "data_s": ("data_s", "data", "data_time_s", "dataload_s"),
    "comm_wait_s": ("comm_wait_s", "wait_s", "collective_wait_s"),
    "stage": ("stage", "pp_rank", "pipeline_stage"),
    "kind": ("kind", "step_kind", "phase"),
    "attempt": ("attempt", "restart", "restart_count"),
    "step_time_s": ("step_time_s", "duration_s", "iter_time_s", "elapsed_s"),
    "iterations": ("iterations", "n_iters", "interval"),
}


#: The array columns of a :class:`StepBatch`, in order.
COLUMNS = ("step", "rank", "start", "end", "compute", "comm", "data", "node", "stage", "kind", "attempt", "weight",
           "step_time", "line", "comm_wait")


class FeedError(DiagError):
    """The feed cannot be read at all (missing path, unreadable or unrecognised file)."""

    kind = ErrorKind.INPUT


@dataclass
class StepBatch:
    """Columnar step records (numpy arrays of equal length ``n``).

    ``step``/``rank`` int64 (``rank`` is -1 for job-level series such as log iteration lines);
    ``start``/``end`` unix seconds, ``compute``/``comm``/``data``/``step_time`` seconds (NaN = absent);
    ``comm_wait`` seconds of ``comm`` spent waiting for the last peer to issue each collective (NaN = absent);
    ``node`` int32 code into :attr:`node_names` (-1 unknown); ``stage`` int32 (-1 unknown);
    ``kind`` int8 (0 train, 1 eval, 2 checkpoint); ``attempt`` int32; ``weight`` iterations covered by the
    record (1.0); ``line`` the source line (1-based, -1 unknown).
    """

    step: np.ndarray
    rank: np.ndarray
    start: np.ndarray
    end: np.ndarray
    compute: np.ndarray
    comm: np.ndarray
    data: np.ndarray
    node: np.ndarray
    stage: np.ndarray
    kind: np.ndarray
    attempt: np.ndarray
    weight: np.ndarray
    step_time: np.ndarray
    line: np.ndarray
    comm_wait: np.ndarray
    node_names: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.step.shape[0])

    @staticmethod
    def empty() -> StepBatch:
        """A batch with no records."""
        return StepBatch.from_columns(step=np.zeros(0, np.int64), rank=np.zeros(0, np.int64))

    @staticmethod
    def from_columns(
        *,
        step: Sequence[int] | np.ndarray,
        rank: Sequence[int] | np.ndarray,
        start: Sequence[float] | np.ndarray | None = None,
        end: Sequence[float] | np.ndarray | None = None,
        compute: Sequence[float] | np.ndarray | None = None,
        comm: Sequence[float] | np.ndarray | None = None,
        data: Sequence[float] | np.ndarray | None = None,
        node: Sequence[int] | np.ndarray | None = None,
        node_names: list[str] | None = None,
        stage: Sequence[int] | np.ndarray | None = None,
        kind: Sequence[int] | np.ndarray | None = None,
        attempt: Sequence[int] | np.ndarray | None = None,
        weight: Sequence[float] | np.ndarray | None = None,
        step_time: Sequence[float] | np.ndarray | None = None,
        line: Sequence[int] | np.ndarray | None = None,
        comm_wait: Sequence[float] | np.ndarray | None = None,
    ) -> StepBatch:
        """Build a batch from columns (the fast path of the streaming API; no per-record Python work).

        Missing optional columns become NaN / -1 / 0 / 1 as documented on the class. Raises
        ``ValueError`` if the columns do not all have the length of ``step``.
        """
        st = np.asarray(step, dtype=np.int64)
        n = st.shape[0]

        def f(a: Any) -> np.ndarray:
            return np.full(n, np.nan) if a is None else np.asarray(a, dtype=np.float64)

        def i(a: Any, fill: int, dt: type) -> np.ndarray:
            return np.full(n, fill, dtype=dt) if a is None else np.asarray(a, dtype=dt)

        b = StepBatch(
            step=st, rank=i(rank, -1, np.int64), start=f(start), end=f(end), compute=f(compute), comm=f(comm),
            data=f(data), node=i(node, -1, np.int32), stage=i(stage, -1, np.int32), kind=i(kind, 0, np.int8),
            attempt=i(attempt, 0, np.int32), weight=np.ones(n) if weight is None else np.asarray(weight, np.float64),
            step_time=f(step_time), line=i(line, -1, np.int64), node_names=list(node_names or []),
            comm_wait=f(comm_wait),
        )
        for name in COLUMNS[1:]:
            if getattr(b, name).shape != (n,):
                raise ValueError(f"column {name!r} has shape {getattr(b, name).shape}, expected ({n},)")
        return b

    def take(self, idx: np.ndarray) -> StepBatch:
        """The records at ``idx`` (an index or boolean array), sharing :attr:`node_names`."""
        return StepBatch(
            step=self.step[idx], rank=self.rank[idx], start=self.start[idx], end=self.end[idx],
            compute=self.compute[idx], comm=self.comm[idx], data=self.data[idx], node=self.node[idx],
            stage=self.stage[idx], kind=self.kind[idx], attempt=self.attempt[idx], weight=self.weight[idx],
            step_time=self.step_time[idx], line=self.line[idx], node_names=self.node_names,
            comm_wait=self.comm_wait[idx],
        )

    @staticmethod
    def concat(parts: list[StepBatch]) -> StepBatch:
        """One batch of the records of ``parts`` in order (they share the first part's node names)."""
        if len(parts) == 1:
            return parts[0]
        return StepBatch(**{n: np.concatenate([getattr(p, n) for p in parts]) for n in COLUMNS},
                         node_names=parts[0].node_names)

    def phases(self) -> list[str]:
        """Names of the phases with at least one value: ``compute``, ``comm``, ``data`` and ``comm_wait`` (traced)."""
        cols = (("compute", self.compute), ("comm", self.comm), ("data", self.data), ("comm_wait", self.comm_wait))
        return [p for p, a in cols if np.isfinite(a).any()]


@dataclass
class Feed:
    """A loaded feed: its records, what the loader saw, and (for logs) the lines behind the series."""

    batch: StepBatch
    stats: FeedStats
    units: str = "seconds"
    log_evidence: dict[int, Evidence] = field(default_factory=dict)
    #: for logs whose step lines give every rank's own step and data-loading times: those, one record per rank
    #: and step (``step_time`` and ``data``), for the straggler test only (the job's series is ``batch``)
    rank_batch: StepBatch | None = None
    #: for logs: the steps whose reading covers a checkpoint save (a save line before it in the same file)
    save_steps: frozenset[int] = frozenset()
    #: for logs whose save lines state their own duration (``saved checkpoint ... in 0.12s``): (step of the reading
    #: before the save, seconds), in log order, for the writer with the most of them
    save_durations: tuple[tuple[int, float], ...] = ()
    #: for logs whose evaluation or other periodic passes state their own duration (``eval at step 109 done in
    #: 0.22s``): per writer ``(rank or -1)``, (step of the reading before the pass, seconds), in log order
    pause_durations: dict[int, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    #: for logs with ``rank_batch``: (rank, step) -> that rank's line, for lines whose data wait stands out
    rank_evidence: dict[tuple[int, int], Evidence] = field(default_factory=dict)
    #: for logs: the lines that are neither step readings nor errors, each with the step of its file's last reading
    #: before it, in log order (the last :data:`~diag_service.slow.logs.NOTE_LINES`): what the job said between steps
    notes: tuple[tuple[int, str], ...] = ()


def merge_rank_feeds(feeds: list[Feed], source: str) -> Feed | None:
    """One feed of several that each hold other ranks' records (one file per rank, ``timing-rank<R>.jsonl``, as each
    rank of a job naturally writes its own): their records together, node codes mapped to one table. None when a rank
    has records in two of them (another attempt or a copy of the same run: not one job's ranks side by side) or a
    feed has no per-rank record. ``source``: the merged feed's name in :attr:`FeedStats.source`."""
    seen: set[int] = set()
    for f in feeds:
        ranks = {int(r) for r in np.unique(f.batch.rank) if r >= 0}
        if not ranks or ranks & seen:
            return None
        seen |= ranks
    names: list[str] = []
    pos: dict[str, int] = {}
    parts = []
    for f in feeds:
        b = f.batch
        node = b.node
        if b.node_names:
            m = np.array([pos.setdefault(n, len(pos)) for n in b.node_names], dtype=np.int32)
            node = np.where(b.node >= 0, m[np.clip(b.node, 0, len(m) - 1)], -1).astype(np.int32)
        parts.append(replace(b, node=node, node_names=names))
    names.extend(sorted(pos, key=lambda n: pos[n]))
    batch = StepBatch.concat(parts)
    warnings = [f"{Path(f.stats.source).name}: {w}" for f in feeds for w in f.stats.warnings]
    stats = FeedStats(source=source, format=feeds[0].stats.format, records=len(batch),
                      bad_records=sum(f.stats.bad_records for f in feeds), warnings=warnings, phases=batch.phases())
    return Feed(batch, stats, units=feeds[0].units)


def _pick(rec: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    for n in names:
        v = rec.get(n)
        if v is not None:
            return v
    return None


def _num(v: Any) -> float:
    """A finite non-negative float, or NaN (absent); raises ValueError on a bad value."""
    if v is None or v == "":
        return math.nan
    if isinstance(v, bool):
        raise ValueError("boolean where a number was expected")
    x = float(v)
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"not a finite non-negative number: {v!r}")
    return x


def _int(v: Any) -> int:
    if isinstance(v, bool):
        raise ValueError("boolean where an integer was expected")
    if isinstance(v, float):
        if not v.is_integer():
            raise ValueError(f"not an integer: {v!r}")
        return int(v)
    return int(v)


class RecordConverter:
    """Turns mappings (JSON objects, ``StepRecord``-like dicts) into a :class:`StepBatch`.

    Keeps the node-name table across calls, so that a streaming detector sees stable node codes.
    Invalid records are skipped and counted in :attr:`bad`, with the first few reasons in :attr:`reasons`.
    """

    def __init__(self, node_names: list[str] | None = None) -> None:
        self.node_names: list[str] = node_names if node_names is not None else []
        self._node_code: dict[str, int] = {n: i for i, n in enumerate(self.node_names)}
        self.bad = 0
        self.reasons: list[str] = []
        self.dropped_nodes = 0  # records whose node name was over a bound (see node_code)

    def node_code(self, name: Any) -> int:
        """Code of a node name (new names are appended); -1 (unknown node) for None/empty or a value that is
        not a string or number, for a name
        longer than ``LIMITS.max_node_name_chars`` and for new names past ``LIMITS.max_nodes`` distinct
        ones (each such record is analysed without its node; the first few are reported in ``reasons``)."""
        if name is None or name == "" or not isinstance(name, str | int | float):
            return -1  # a list or object where a node name belongs: the record is kept, without its node
        s = str(name)
        c = self._node_code.get(s)
        if c is None:
            if len(s) > LIMITS.max_node_name_chars or len(self.node_names) >= LIMITS.max_nodes:
                self.dropped_nodes += 1
                if self.dropped_nodes == 1 and len(self.reasons) < 20:
                    self.reasons.append(f"node names beyond {LIMITS.max_nodes} distinct ones or longer than "
                                        f"{LIMITS.max_node_name_chars} characters are taken as an unknown node")
                return -1
            c = len(self.node_names)
            self.node_names.append(s)
            self._node_code[s] = c
        return c

    def _reject(self, where: str, why: str) -> None:
        self.bad += 1
        if len(self.reasons) < 20:
            self.reasons.append(f"{where}: {why}")

    _FAST = ("rank", "step", "start", "end", "compute_s", "comm_s", "data_s", "node", "attempt", "comm_wait_s")

    def _convert_fast(self, records: list[Any]) -> StepBatch | None:
        """Vectorised conversion of lab-format dicts that all carry the first record's keys; None to fall back."""
        first = records[0]
        if not isinstance(first, dict) or not {"rank", "step"} <= first.keys():
            return None
        keys = [k for k in self._FAST if k in first]
        if len(first) != len(keys):
            return None  # other columns (aliases, kind, stage...): the general path
        n = len(records)
        try:
            if any(len(r) != len(keys) for r in records):
                return None  # a record with other fields (kind, stage...) must not lose them: the general path
            arr = {k: np.fromiter((r[k] for r in records), np.float64, n) for k in keys if k != "node"}
        except (KeyError, TypeError, ValueError, OverflowError):
            return None
        nan = np.full(n, np.nan)
        step, rank = arr["step"], arr["rank"]
        start, end = arr.get("start", nan), arr.get("end", nan)
        ph = [arr.get(k, nan) for k in ("compute_s", "comm_s", "data_s", "comm_wait_s")]
        att = arr.get("attempt", np.zeros(n))
        with np.errstate(invalid="ignore"):
            good = np.isfinite(step) & (step >= 0) & (step == np.round(step))
            good &= np.isfinite(rank) & (rank >= -1) & (rank == np.round(rank)) & (rank <= MAX_RANK)
            good &= step <= MAX_STEP
            for a in (start, end, *ph):
                good &= np.isnan(a) | (np.isfinite(a) & (a >= 0))
            good &= ~(end < start)
            good &= np.isfinite(att) & (att >= 0) & (att <= LIMITS.max_attempt)
        if "node" in keys:
            names = [r["node"] for r in records]
            if not all(isinstance(nm, str | int | float) or nm is None for nm in names):
                return None  # a list or object as a node name: the general path drops the node, keeps the record
            table = {nm: self.node_code(nm) for nm in set(names)}
            node = np.fromiter((table[nm] for nm in names), np.int32, n)
        else:
            node = np.full(n, -1, np.int32)
        bad = int(n - good.sum())
        if bad:
            self.bad += bad
            if len(self.reasons) < 20:
                self.reasons.append(
                    f"{bad} record(s): negative, non-finite or non-integer values, end before start, "
                    f"a rank above {MAX_RANK} or an attempt above {LIMITS.max_attempt}"
                )
        idx = np.flatnonzero(good)
        return StepBatch.from_columns(
            step=step[idx].astype(np.int64), rank=rank[idx].astype(np.int64), start=start[idx], end=end[idx],
            compute=ph[0][idx], comm=ph[1][idx], data=ph[2][idx], node=node[idx], attempt=att[idx].astype(np.int32),
            node_names=self.node_names, comm_wait=ph[3][idx],
        )

    def convert(self, records: Iterable[Any], lines: Iterable[int] | None = None) -> StepBatch:
        """Convert ``records`` (mappings or objects with ``model_dump()``) to a batch; bad ones are skipped.

        Lists of lab-format dicts take a vectorised path; anything else (aliases, extra fields, pydantic
        objects, odd values) the per-record path, which gives a reason for every rejected record.
        """
        if lines is None and isinstance(records, list) and records:
            fast = self._convert_fast(records)
            if fast is not None:
                return fast
        cols: dict[str, list[Any]] = {k: [] for k in (
            "step", "rank", "start", "end", "compute", "comm", "data", "node", "stage", "kind", "attempt", "weight",
            "step_time", "line", "comm_wait")}
        line_iter = iter(lines) if lines is not None else None
        a = ALIASES
        for i, rec in enumerate(records):
            ln = next(line_iter) if line_iter is not None else -1
            where = f"line {ln}" if ln >= 0 else f"record {i}"
            if not isinstance(rec, Mapping):
                dump = getattr(rec, "model_dump", None)
                if dump is None:
                    self._reject(where, "not an object")
                    continue
                rec = dump()
            try:
                rank_v = _pick(rec, a["rank"])
                step_v = _pick(rec, a["step"])
                if step_v is None:
                    raise ValueError("no step")
                step = _int(step_v)
                rank = _int(rank_v) if rank_v is not None else -1
                if step < 0 or rank < -1:
                    raise ValueError("negative step or rank")
                if rank > MAX_RANK or step > MAX_STEP:
                    raise ValueError(f"rank above {MAX_RANK} or step above {MAX_STEP}")
                stage_v = _pick(rec, a["stage"])
                if stage_v is not None and not -1 <= _int(stage_v) <= MAX_STAGE:
                    raise ValueError(f"stage outside -1..{MAX_STAGE}")
                start = _num(_pick(rec, a["start"]))
                end = _num(_pick(rec, a["end"]))
                if end < start:
                    raise ValueError("end before start")
                kind_v = _pick(rec, a["kind"])
                kind = KIND_CODE.get(str(kind_v).lower(), 0) if kind_v is not None else 0
                att_v = _pick(rec, a["attempt"])
                if att_v is not None and not 0 <= _int(att_v) <= LIMITS.max_attempt:
                    raise ValueError(f"attempt outside 0..{LIMITS.max_attempt}")
                w_v = _num(_pick(rec, a["iterations"]))
                row = (
                    step, rank, start, end, _num(_pick(rec, a["compute_s"])), _num(_pick(rec, a["comm_s"])),
                    _num(_pick(rec, a["data_s"])), self.node_code(_pick(rec, a["node"])),
                    _int(stage_v) if stage_v is not None else -1, kind, _int(att_v) if att_v is not None else 0,
                    w_v if w_v == w_v and w_v > 0 else 1.0, _num(_pick(rec, a["step_time_s"])), ln,
                    _num(_pick(rec, a["comm_wait_s"])),
                )
            except (ValueError, TypeError, OverflowError) as exc:
                self._reject(where, str(exc))
                continue
            for k, v in zip(cols, row, strict=True):
                cols[k].append(v)
        return StepBatch.from_columns(**cols, node_names=self.node_names)


#: Longest JSONL record line read (bytes; characters for text lines); one record is ~200. A longer line (a
#: file without newlines) is skipped as malformed, read in pieces, never held whole.
MAX_FEED_LINE_CHARS = 1 << 20


def jsonl_records(source: str | Path | BinaryIO | Iterable[str], first_line: int = 1
                  ) -> tuple[list[Any], list[int], int]:
    """The records of JSONL ``source`` for :meth:`RecordConverter.convert`, read by
    :func:`diag_service.jsonl.iter_jsonl` (a path, a binary stream or text lines).

    Returns ``(records, line numbers, malformed)``: a line that is JSON but not an object stays in
    ``records`` as ``None`` (the converter rejects it as "not an object", with its line); a line that is
    not JSON (truncated, nested too deep, a number too long, longer than :data:`MAX_FEED_LINE_CHARS`) is
    only counted in ``malformed``. Raises ``OSError`` only as reading ``source`` does.
    """
    skipped: list[BadLine] = []
    recs: list[Any] = []
    line_nos: list[int] = []
    for ln, rec in iter_jsonl(source, skipped, first_line=first_line, max_line_bytes=MAX_FEED_LINE_CHARS):
        recs.append(rec)
        line_nos.append(ln)
    not_objects = [b.line for b in skipped if b.kind == "not_object"]
    if not_objects:  # back in file order, so that the converter's reasons follow the file
        merged = list(heapq.merge(zip(line_nos, recs, strict=True), ((n, None) for n in not_objects),
                                  key=lambda t: t[0]))
        line_nos, recs = [n for n, _ in merged], [r for _, r in merged]
    return recs, line_nos, len(skipped) - len(not_objects)


def load_jsonl(path: str | Path, fh: BinaryIO | None = None) -> Feed:
    """Load a JSONL (optionally ``.gz``) timing feed. Malformed lines (and lines longer than
    :data:`MAX_FEED_LINE_CHARS`) are skipped and counted. ``fh``: the file, already opened (and checked)
    by the caller; else ``path`` is opened.

    Raises :class:`FeedError` if the file cannot be opened or read.
    """
    p = Path(path)
    try:
        with contextlib.ExitStack() as stack:
            raw = fh if fh is not None else stack.enter_context(open(p, "rb"))
            stream = stack.enter_context(gzip.GzipFile(fileobj=raw)) if p.suffix == ".gz" else raw
            recs, line_nos, malformed = jsonl_records(stream)
    except (OSError, EOFError) as exc:
        raise FeedError(f"cannot read {p}: {exc}") from exc
    return _jsonl_feed(recs, line_nos, malformed, str(p))


def jsonl_feed(lines: Iterable[str], source: str, first_line: int = 1) -> Feed:
    """A feed from JSONL text lines (a file, or a member read from an archive): one record per line,
    malformed lines skipped and counted. ``first_line``: the number of the first line, for evidence."""
    return _jsonl_feed(*jsonl_records(lines, first_line), source)


def _jsonl_feed(recs: list[Any], line_nos: list[int], malformed: int, source: str) -> Feed:
    conv = RecordConverter()
    batch = conv.convert(recs, line_nos)
    return Feed(batch, _stats(source, "jsonl", batch, conv.bad + malformed, conv.reasons, malformed,
                              conv.dropped_nodes))


def csv_feed(text: str, source: str) -> Feed:
    """A feed from CSV text with the lab's columns (aliases in :data:`ALIASES`). Raises :class:`FeedError`."""

    import polars as pl

    try:
        df = pl.read_csv(io.StringIO(text), infer_schema_length=10000, ignore_errors=True)
    except pl.exceptions.PolarsError as exc:
        raise FeedError(f"cannot read {source}: {exc}") from exc
    return _table_to_feed(df, source, "csv")


#: Largest JSON-array feed read into memory at once (bytes); larger feeds should be JSONL (streamed).
MAX_JSON_ARRAY_BYTES = 512 * 2**20


def is_json_array(path: str | Path, fh: BinaryIO | None = None) -> bool:
    """Whether the file's first non-blank character is ``[`` (a JSON array), reading at most 4 KiB
    (of ``fh`` from its start, when given, which is then rewound)."""
    try:
        if fh is not None:
            fh.seek(0)
            head = fh.read(4096)
            fh.seek(0)
        else:
            with open(path, "rb") as f:
                head = f.read(4096)
    except OSError:
        return False
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[")


def load_json_array(path: str | Path, fh: BinaryIO | None = None) -> Feed:
    """Load a ``.json`` file holding one array of step records (the lab's format). ``fh``: the file,
    already opened (and checked) by the caller; else ``path`` is opened.

    Raises :class:`FeedError` if the file cannot be read, is not valid JSON, is not an array, or is larger
    than :data:`MAX_JSON_ARRAY_BYTES` (write such feeds as JSONL, one record per line); the size is that
    of the bytes read, not what the file system says (a device or a growing file says 0).
    """
    p = Path(path)
    try:
        if fh is not None:
            raw = fh.read(MAX_JSON_ARRAY_BYTES + 1)
        else:
            with open(p, "rb") as f:
                raw = f.read(MAX_JSON_ARRAY_BYTES + 1)
        if len(raw) > MAX_JSON_ARRAY_BYTES:
            raise FeedError(f"{p}: a JSON array over {MAX_JSON_ARRAY_BYTES} bytes; write feeds this large as JSONL "
                            "(one record per line)")
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except OSError as exc:
        raise FeedError(f"cannot read {p}: {exc}") from exc
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, a number over the digit limit; deep nesting
        raise FeedError(f"{p}: not valid JSON ({exc}); a feed is JSONL (one record per line) or one JSON array") from exc
    if not isinstance(data, list):
        raise FeedError(f"{p}: a JSON {type(data).__name__}, not an array of step records")
    conv = RecordConverter()
    batch = conv.convert(data)
    return Feed(batch, _stats(str(p), "json", batch, conv.bad, conv.reasons, 0, conv.dropped_nodes))


def _table_to_feed(df: Any, source: str, fmt: str) -> Feed:
    """Convert a polars DataFrame with timing columns (aliases allowed) into a feed."""
    cols = {c.lower(): c for c in df.columns}
    rename = {}
    for canon, names in ALIASES.items():
        for n in names:
            if n in cols:
                rename[cols[n]] = canon
                break
    if "step" not in rename.values():
        raise FeedError(f"{source}: no step column (expected one of {ALIASES['step']})")
    df = df.select(list(rename)).rename(rename)
    conv = RecordConverter()
    batch = conv.convert(df.iter_rows(named=True), range(2, df.height + 2))
    return Feed(batch, _stats(source, fmt, batch, conv.bad, conv.reasons, 0, conv.dropped_nodes))


def load_table(path: str | Path, fh: BinaryIO | None = None) -> Feed:
    """Load a CSV or Parquet timing feed with the lab's columns (aliases in :data:`ALIASES`). ``fh``: the
    file, already opened (and checked) by the caller; else ``path`` is opened.

    Raises :class:`FeedError` if the file cannot be read or has no step column.
    """
    import polars as pl

    p = Path(path)
    src: Any = p
    if fh is not None:
        fh.seek(0)
        src = fh
    try:
        if p.suffix.lower() == ".parquet":
            df = pl.read_parquet(src)
            fmt = "parquet"
        else:
            df = pl.read_csv(src, infer_schema_length=10000, ignore_errors=True)
            fmt = "csv"
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise FeedError(f"cannot read {p}: {exc}") from exc
    return _table_to_feed(df, str(p), fmt)


def dropped_nodes_warning(n: int) -> str:
    return (f"{n} record(s) named a node beyond {LIMITS.max_nodes} distinct ones or longer than "
            f"{LIMITS.max_node_name_chars} characters; analysed as an unknown node")


def _stats(source: str, fmt: str, batch: StepBatch, bad: int, reasons: list[str], malformed: int,
           dropped_nodes: int = 0) -> FeedStats:
    warnings = []
    if dropped_nodes:
        warnings.append(dropped_nodes_warning(dropped_nodes))
    if malformed:
        warnings.append(f"{malformed} line(s) are not valid JSON and were skipped")
    if bad - malformed > 0:
        warnings.append(f"{bad - malformed} record(s) were invalid and skipped, e.g. " + "; ".join(reasons[:3]))
    if len(batch) == 0:
        warnings.append("no usable step records")
    return FeedStats(source=source, format=fmt, records=len(batch), bad_records=bad, warnings=warnings,
                     phases=batch.phases())
