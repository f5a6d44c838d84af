"""Iteration lines of training logs -> one job-level step-time series.

Formats (each documented by the line its framework prints):

* **Megatron-LM** ``training_log()``: `` iteration      100/  500000 | consumed samples: ... | elapsed time
  per iteration (ms): 1234.5 | throughput per GPU (TFLOP/s/GPU): 150.2 | ...``. The elapsed time is the
  mean over the ``log_interval`` iterations since the previous line, so each line covers
  (this iteration - previous iteration) iterations.
* **DeepSpeed**: the ThroughputTimer line ``epoch=0/micro_step=40/global_step=10,
  RunningAvgSamplesPerSec=.., CurrSamplesPerSec=.., ...`` (step time = ``train_batch_size`` /
  CurrSamplesPerSec when the config dump gives the batch size, else seconds per sample); the
  ``wall_clock_breakdown`` line ``time (ms) | fwd: .. | bwd: .. | bwd_inner: .. | bwd_allreduce: .. |
  step: ..`` (or the ``*_microstep`` variant), which also gives compute and communication.
* **Hugging Face Trainer** and **PyTorch Lightning**: their tqdm progress bars ``  45%|####  | 450/1000
  [01:30<01:50,  4.98it/s]`` (Lightning prefixes ``Epoch N:`` and restarts the count each epoch; tqdm's
  rate is an exponential moving average, so the series is smoothed).
* **MMEngine** (OpenMMLab): ``Iter(train) [ 100/1000] ... time: 0.4234`` / ``Epoch(train) [1][ 50/1251] ... time:``
  (:data:`MMENGINE`).
* **pytorch/examples' ImageNet ProgressMeter**: ``Epoch: [0][ 10/5005]  Time  0.403 ( 0.536)  Data ...``
  (:data:`IMAGENET_PROGRESS`).
* **torchvision's reference MetricLogger** (also DETR, DeiT, MAE): ``Epoch: [0]  [ 10/468]  eta: ...  time: 0.0163
  data: 0.0006`` (:data:`METRIC_LOGGER`), and **fairseq**'s ``epoch 001: 100 / 700 ..., ups=28.27, ...,
  num_updates=100`` (:data:`FAIRSEQ`, step time 1 / ups).
* **A script's own step lines**: a step counter, then a per-step time under a key that names it
  (``step 120 loss 2.31 time_ms 148.2``; :data:`GENERIC_STEP`).

Lines are attributed to ranks and nodes with :mod:`diag_service.logformat` and a script's own rank marker
(:data:`SCRIPT_RANK`); when several ranks print the same iteration, the median of their values is used. A step
line's data wait (:data:`DATA_PHASE`) becomes the series' data phase and, when two or more ranks print it, every
rank's own record for the straggler test (:attr:`~diag_service.slow.feeds.Feed.rank_batch`), as does a line's
named compute and communication time (:data:`COMPUTE_PHASE`, :data:`COMM_PHASE`; the rank test only).
Unparseable numbers are skipped and counted. A bundle
member named ``timing*.jsonl`` (a per-rank timing feed, e.g. inside a ``.tar.gz``) is read as the feed
instead, since it says more than iteration lines.
"""

from __future__ import annotations

import collections
import datetime as _dt
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from diag_service.domain import Evidence, InputReport
from diag_service.ingest import read_bundle
from diag_service.ingest.bundle import Block
from diag_service.ingest.members import FEED_MEMBER
from diag_service.ingest.open import excluded_by, read_diagignore
from diag_service.limits import LIMITS
from diag_service.logformat import attribute, iso, parse_timestamp
from diag_service.slow.feeds import Feed, RecordConverter, StepBatch, jsonl_records
from diag_service.slow.models import FeedStats

#: At most this many job-level records go to the analyzers: a longer log's consecutive steps are merged
#: ``ceil(n / LOG_MAX_RECORDS)`` at a time (iteration-weighted mean step time, summed iterations). The streaming
#: detector costs about 0.25 ms per record on this host (15 s for a log of 60,000 step lines, a tqdm bar's redraws of a
#: few hours' run), and a job-level slowdown shorter than 1/4,096 of a run is not one an operator acts on.
LOG_MAX_RECORDS = 4096

MEGATRON = re.compile(
    r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|.*?elapsed time per iteration \(ms\):\s*([0-9.]+(?:[eE][+-]?\d+)?)"
)
DS_THROUGHPUT = re.compile(r"global_step=(\d+),.*?CurrSamplesPerSec=([0-9.]+(?:[eE][+-]?\d+)?)")
DS_STEP = re.compile(r"\bstep=(\d+), skipped=\d+")
DS_TIMERS = re.compile(r"time \(ms\) \|((?:\s*[a-z_]+: [0-9.]+(?:[eE][+-]?\d+)?\s*\|?)+)")
DS_BATCH = re.compile(r"""["']?train_batch_size["']?\s*(?:\.{2,}|:|=)\s*(\d+)""")
#: The end of a number's unit on a step line: no word, dot, colon, slash or dash after it -- or the next record's start
#: glued to it, when two ranks wrote at once and the newline between them was lost ("step_time 25.6 msstep 605/2000 ...";
#: trial 37 r10: the unit was dropped and 25.6 read as seconds).
_UNIT_END = r"(?:(?![\w.:/-])|(?<=s)(?=(?i:step|iter|epoch|rank)\b))"
#: A training script's own step line: a step counter (``step 120``, ``step 120/2000``, ``[iter 100]``, the PyTorch
#: tutorials' ``Epoch [1/5], Step [100/600]``), then a
#: per-step time under a key that names it (``step 120 loss 2.31 time_ms 148.2``, ``iter: 40 | step_time: 0.52s``);
#: ``_ms`` keys and an ``ms`` unit are milliseconds, others seconds. Cumulative clocks (``elapsed``, ``eta``) are
#: not step times.
STEP_COUNTER = (r"(?:\b(?i:step|iter|iteration|it)\b[\"']?\s*[:=#]?\s*\[?\s*(\d+)\b(?:\s*/\s*(\d+)\b)?\]?"
                r"|\b(?i:batch)\s*[:=#]?\s*\[?\s*(\d+)\s*/\s*(\d+)\b\]?)(?!\s*[%/])")  # "batch 256" is a size
#: An epoch number before a step counter that restarts every epoch (``Epoch 2 Batch 30/180``).
#: ``Epoch [2/4]`` counts epochs from 1 out of a total (the PyTorch tutorials' form), ``Epoch 2`` from 0 (Lightning).
EPOCH_BEFORE = re.compile(r"\b(?i:epoch)\s*[:=#]?\s*\[?\s*(\d+)\b(\s*/\s*\d+)?")
GENERIC_STEP = re.compile(
    STEP_COUNTER + r".{0,200}?"
    r"\b((?i:time_ms|step_time_ms|iter_time_ms|batch_time_ms|step_ms|time|step_time|iter_time|batch_time))\b[\"']?\s*[:=]?\s*"
    r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?\d+)?)\s*(ms|s)?" + _UNIT_END
)
#: ... or the step's own name as the key of its time, which then needs its unit (``it 225/500 | loss 0.35 | data 10.1 ms |
#: step 24.7 ms``; a bare ``step 24`` is a counter). Groups as :data:`GENERIC_STEP`'s.
GENERIC_STEP_UNIT = re.compile(
    STEP_COUNTER + r".{0,200}?"
    r"\b((?i:step|iter|batch|total))\b\s*[:=]?\s*([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?\d+)?)\s*(ms|s)" + _UNIT_END
)
#: The same step counter with an unnamed time that its unit makes a per-step time: ``148.2 ms/step``,
#: ``0.52 s/it``, ``3.1 it/s`` (a rate), or a lone ``10.8 ms`` column (``step 13 | loss 1.0 | 10.8 ms |``; used
#: only when the line holds one such number, since ``data 5 ms | fwd 30 ms`` names parts of a step).
UNIT_TIME = re.compile(
    r"(?<![\w.])([0-9]+(?:\.[0-9]+)?)\s*(?:(ms|s|sec)\s*/\s*(?:step|it|iter|iteration|batch)\b|(it/s)\b|(ms)\b(?!\s*/))"
)
STEP_ONLY = re.compile(STEP_COUNTER)
#: A training script's own rank marker on its step line (``[rank1] step 86``, ``rank 2 step 90``, ``Rank 0 |``,
#: ``[RANK 3]``); ``nranks``, ``world_rank`` and ``rank/``-style keys are not markers.
SCRIPT_RANK = re.compile(r"(?:^|(?<=[\s\[(|,;{\"']))(?i:rank)[\"']?\s?[:=#]?\s?(\d{1,6})\b(?![./])")
#: ... or a bare bracketed number in front of a step line (``[1] it 225/500 | ... | step 24.7 ms``: a script's
#: ``print(f"[{rank}] ...")``; ``[r1] step 20/300``); read only on a line with a step counter (the shell's job-control
#: ``[1] 4242`` and ``[1]+  Done`` are not step lines).
BRACKET_RANK = re.compile(r"\[[rR]?(\d{1,5})\] (?=\S)")
#: The data-loading part of a step on the same line as its step time (``step 90 time_ms 669.6 data_ms 220.2``,
#: ``iter_time: 8.711s, data_time: 8.409s`` (YOLOX), ``step_time 46.9ms data 30.2ms fwd_bwd 16.7ms``, MMEngine's
#: ``time: 0.42  data_time: 0.02``): the time the rank waited for its next batch, which every one of these loggers
#: counts inside the step time. ``_ms`` keys and an ``ms`` unit are milliseconds; a bare number takes the step
#: time's unit.
DATA_PHASE = re.compile(
    r"\b(?i:data|data[ _]time|data[ _]?load(?:ing|er)?(?:[ _]time)?|dataloader(?:[ _]time)?|data[ _]wait)(_ms)?\b[\"']?"
    r"\s*[:=]?\s*([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?\d+)?)\s*(ms|s)?" + _UNIT_END
)
#: A named phase's value after its name: an optional ``_time``, a ``_ms`` suffix, the number and its unit.
_PHASE_VALUE = r"(?:[ _]time)?(_ms)?\b[\"']?\s*[:=]?\s*([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?\d+)?)\s*(ms|s)?" + _UNIT_END
#: A step line's compute time and its communication time, both named (``compute 82.0 ms allreduce 12.8 ms``,
#: ``fwd_bwd_ms=41.2 comm_ms=9.7``): a synchronous job's ranks wait for the slowest inside the communication, so a
#: rank's own compute, beside its peers', names the rank the others wait for. Groups: ``_ms`` suffix, value, unit.
COMPUTE_PHASE = re.compile(r"\b(?i:compute|fwd[ _+/-]?bwd|forward[ _+/-]backward|fwd[ _]?bwd[ _]?opt)" + _PHASE_VALUE)
#: The forward and the backward pass named apart (``fwd 11.6 bwd 24.8``, ``forward_ms=12 backward_ms=25``): their sum
#: is the line's compute (groups as :data:`COMPUTE_PHASE`'s, for each).
FWD_PHASE = re.compile(r"\b(?i:fwd|forward)" + _PHASE_VALUE)
BWD_PHASE = re.compile(r"\b(?i:bwd|backward)" + _PHASE_VALUE)
COMM_PHASE = re.compile(
    r"\b(?i:comm|communication|all[ _-]?reduce|allgather|all[ _-]gather|reduce[ _-]scatter|sync|grad[ _]sync)"
    r"(?:[ _](?:time|wait))?(_ms)?\b[\"']?\s*[:=]?\s*([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?\d+)?)\s*(ms|s)?" + _UNIT_END
)
#: A cumulative clock on a step line (``it: 100 elapsed: 12.3s``, ``time elapsed 0:01:23``): the step time is
#: its rise over the steps between two lines.
CUM_CLOCK = re.compile(
    r"\b(?:elapsed(?:[ _]time)?|time[ _]elapsed|wall[ _]?(?:clock)?(?:[ _]time)?|total[ _]time)\b\s*[:=]?\s*"
    r"(?:(\d+):(\d{2}):(\d{2}(?:\.\d+)?)|([0-9]+(?:\.[0-9]+)?)\s*(ms|s|sec|secs|seconds|min|m)?\b)"
)
#: Throughput on a step line without a step time (``1234.5 tokens/s``, ``samples/sec: 88.1``,
#: ``tokens_per_second=5120``): its inverse is the time per unit of work, which moves with the step time
#: while the batch is fixed.
THROUGHPUT = re.compile(
    r"(?<![\w.])([0-9]+(?:\.[0-9]+)?)\s*(?:tokens|toks?|samples|seqs|sequences|images|imgs)\s*/\s*(?:s|sec|second)\b"
    r"|\b(?:tokens|samples|seqs|sequences|images)(?:[ _]per[ _]sec(?:ond)?|/s(?:ec)?)\b\s*[:=]\s*([0-9]+(?:\.[0-9]+)?)"
)
#: MMEngine's LogProcessor line (mmengine/runner/log_processor.py): ``Iter(train) [ 100/1000] ... time: 0.4234``
#: or ``Epoch(train) [1][ 50/1251] ... time: 0.4234`` (seconds per iteration, averaged over the log interval).
MMENGINE = re.compile(
    r"(?:Iter|Epoch)\(train\)\s*(?:\[\s*(\d+)\])?\s*\[\s*(\d+)\s*/\s*(\d+)\].{0,400}?\btime:\s*([0-9]+(?:\.[0-9]+)?)"
)
#: torchvision's reference scripts' MetricLogger.log_every (references/classification/utils.py; also DETR, DeiT, MAE):
#: ``Epoch: [0]  [ 10/468]  eta: 0:00:07  loss: 2.31 (2.31)  ...  time: 0.0163  data: 0.0006  max mem: 1234``, the
#: step's time and data wait in seconds (averages over the logger's window); the iteration counts from 0 within the
#: epoch. Evaluation (``Test:``) lines have no ``Epoch:`` header.
METRIC_LOGGER = re.compile(
    r"Epoch: \[(\d+)\](?:\s*\[[^\]]{0,20}\])?\s+\[\s*(\d+)\s*/\s*(\d+)\].{0,600}?"
    r"\btime: ([0-9]+(?:\.[0-9]+)?)\s+data: ([0-9]+(?:\.[0-9]+)?)"
)
#: pytorch/examples' ImageNet script's ProgressMeter of AverageMeters (imagenet/main.py, copied by many training
#: scripts): ``Epoch: [0][ 10/5005]\tTime  0.403 ( 0.536)\tData  0.001 ( 0.125)\tLoss ...``: each meter's value for
#: this batch, then its running average in brackets, seconds; the batch counts from 0 within the epoch, epochs from 0.
IMAGENET_PROGRESS = re.compile(
    r"Epoch: \[(\d+)\]\[\s*(\d+)\s*/\s*(\d+)\]\s+Time\s+([0-9]+(?:\.[0-9]+)?)\s+\(\s*[0-9.]+\)"
    r"(?:\s+Data\s+([0-9]+(?:\.[0-9]+)?)\s+\(\s*[0-9.]+\))?"
)
#: The ``Epoch: [E]...[N/T]`` lines, by format name: each gives epoch, batch, batches per epoch, seconds and data seconds.
_EPOCH_BATCH_FORMATS = (("imagenet_progress", IMAGENET_PROGRESS), ("metric_logger", METRIC_LOGGER))
#: fairseq's training log line (fairseq/logging/progress_bar.py; ``train_inner``): ``epoch 001:  100 / 700 loss=9.968,
#: ..., ups=28.27, ..., num_updates=100, ...``: updates per second over the log interval, and the global update count.
FAIRSEQ = re.compile(r"\bups=([0-9]+(?:\.[0-9]+)?)\b.{0,200}?\bnum_updates=(\d+)\b")
#: A checkpoint being saved, as frameworks log it: transformers' Trainer ``Saving model checkpoint to out/checkpoint-500``,
#: Lightning's ModelCheckpoint ``... saving model to '.../epoch=1.ckpt'``, DeepSpeed's ``Saving model checkpoint: ...``,
#: Megatron-LM's ``saving checkpoint at iteration 100 to ...``, accelerate's ``Saving current state to ...``, MMEngine's
#: ``Saving checkpoint at 100 iterations``, and scripts' ``saved ckpt/last.pt``, ``checkpoint saved to ...``. Loading
#: (``Loading checkpoint``, ``resume from``) is not saving.
SAVE_LINE = re.compile(
    r"(?i)\b(?:sav(?:e|ed|ing)|wrote|writing)\b[^\n]{0,60}?(?:checkpoint|ckpt|\.pth?\b|\.safetensors\b|\bmodel to\b"
    r"|\bstate to\b)|\bcheckpoint\b[^\n]{0,40}?\b(?:saved|written)\b"
)
#: The duration a save line states for itself (``saved checkpoint ckpt/step_40.pt in 0.12s``, ``checkpoint saved
#: (took 3.2 s)``, ``Saving ... done in 850 ms``): seconds or milliseconds after ``in``/``took``/``after``, or in brackets.
SAVE_DURATION = re.compile(
    r"(?:\b(?:in|took|taking|after)\s+|\(\s*)([0-9]+(?:\.[0-9]+)?)\s*(ms|s|secs?|seconds)\b"
)
#: A periodic pass between training steps that states its own duration (with :data:`SAVE_DURATION`): evaluation or
#: validation (``eval at step 109 done in 0.22s``, ``validation took 3.1 s``), an upload or sync of the job's own
#: (``uploaded snapshot ... in 1.54 s``). Checkpoint saves are :data:`SAVE_LINE`'s.
PAUSE_LINE = re.compile(r"(?i)\b(?:eval(?:uation|uating|uated)?|validat(?:ion|ing|ed|e)|upload(?:ed|ing)?|sync(?:ed|ing)?)\b")
#: At most this many writers' periodic passes are kept (the test runs per writer).
PAUSE_WRITERS_MAX = 64
#: A progress table printed once with its header, then rows of numbers only (``  step |  loss |  lr | step_ms``):
#: the header names a step column and a per-step time column whose name gives its unit (``step_ms``, ``time_ms``,
#: ``ms``: milliseconds; ``time``, ``step_time``, ``sec``, ``s/it``, ``dt``: seconds). Columns are ``|``-separated and
#: every header cell is one name, so a Megatron line (``iteration 100/ 1000 | consumed samples: ...``) is no header.
TABLE_CELL = re.compile(r"[A-Za-z_][\w/().%-]*")
TABLE_STEP = re.compile(r"(?i)(?:global_)?(?:step|iter(?:ation)?|it)s?")
TABLE_MS = re.compile(r"(?i)(?:(?:step|iter|batch|time)_?)?ms|(?:step_|iter_|batch_)?time_?(?:ms|\(ms\))")
TABLE_S = re.compile(r"(?i)(?:(?:step|iter|batch)_?)?(?:time|dt|sec)(?:_s|\(s\))?|s/it|sec/it")
TQDM = re.compile(
    r"(?:(?i:epoch) (\d+):\s*)?\s*\d{1,3}%\|[^|]*\|\s*(\d+)/(\d+)\s*\[[0-9:]+<[0-9:?]+,\s*([0-9.]+)(it/s|s/it)"
)


@dataclass
class _Point:
    step: int
    value: float
    weight: float
    rank: int
    time: float | None
    compute: float = math.nan
    comm: float = math.nan
    #: the data-loading part of ``value`` (seconds; NaN when the line does not give it)
    data: float = math.nan
    #: the rank's own compute and communication seconds of a script's step line (:func:`_work_phases`), for the rank
    #: test only: a rank's communication time holds its wait for the slowest rank, so the job's series keeps neither
    own: tuple[float, float] = (math.nan, math.nan)
    evidence: _Ev | None = None
    #: the interval this reading covers held a checkpoint save (a :data:`SAVE_LINE` of the same file before it)
    save: bool = False


@dataclass
class _State:
    points: list[_Point] = field(default_factory=list)
    formats: set[str] = field(default_factory=set)
    batch_size: int | None = None
    ds_step: int | None = None
    ds_rate: list[tuple[int, float, _Ev, float | None]] = field(default_factory=list)
    bad: int = 0
    prev: dict[tuple[str, int], int] = field(default_factory=dict)
    epoch_len: dict[str, int] = field(default_factory=dict)
    #: per writer, the (epoch, counter) of its last ``Epoch E ... N/M`` line, and the writers whose counter went on
    #: across an epoch change (a global step printed beside the epoch, not one restarting every epoch)
    epoch_counter: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    global_counter: set[tuple[str, int]] = field(default_factory=set)
    #: step lines without a step time but with a timestamp, per writer: (step, unix seconds, evidence)
    clock: dict[tuple[str, int], list[tuple[int, float, _Ev]]] = field(default_factory=dict)
    #: step lines with a cumulative clock (step, seconds since the start, evidence), and with a throughput
    #: only (step, seconds per unit of work, evidence)
    cum: dict[tuple[str, int], list[tuple[int, float, _Ev]]] = field(default_factory=dict)
    thr: dict[tuple[str, int], list[tuple[int, float, _Ev]]] = field(default_factory=dict)
    #: files with a checkpoint save line not yet followed by a step reading
    pending_save: set[str] = field(default_factory=set)
    #: per writer (file, rank): the durations its save lines state, with the step of the writer's file's last
    #: reading before each: (step, seconds)
    save_durations: dict[tuple[str, int], list[tuple[int, float]]] = field(default_factory=dict)
    pause_durations: dict[tuple[str, int], list[tuple[int, float]]] = field(default_factory=dict)
    #: per file, the progress table its header opened (:data:`TABLE_CELL`): (step column, time column, seconds per
    #: unit of the time column, number of columns)
    tables: dict[str, tuple[int, int, float, int]] = field(default_factory=dict)


#: A log line behind a reading, kept as a plain tuple (path, line, text, rank, node, unix time) and made an
#: :class:`~diag_service.domain.Evidence` only for the steps of the series (most lines are other ranks' copies).
_Ev = tuple[str, int, str, int | None, str | None, float | None]


#: How many of a log's note lines (neither step readings nor errors: what the job said between its steps) are kept, the
#: last ones (:attr:`~diag_service.slow.feeds.Feed.notes`).
NOTE_LINES = 4096
_NOT_A_NOTE = re.compile(r"^\s*(?:File \"|Traceback|\^|\[?\w*\]?:?\s*$)|(?i:error|exception|warning|traceback)"
                         r"|\d%\||\bit/s\b|\bs/it\b|(?i:\bloss\b)\s*[=:]?\s*-?\d")  # (a bar or step line not read)


def _is_note(line: str) -> bool:
    """True for a line that says something of its own (letters, 12 characters or more) and is no error, warning or
    traceback line: an announcement between steps ("enabling augmentation", "metrics thread started")."""
    t = line.strip()
    return len(t) >= 12 and sum(c.isalpha() for c in t) >= 8 and not _NOT_A_NOTE.search(t)


def _ev(path: str, line: int, text: str, rank: int | None, node: str | None, ts: float | None) -> _Ev:
    return (path, line, text, rank, node, ts)


def _evidence(ev: _Ev) -> Evidence:
    path, line, text, rank, node, ts = ev
    return Evidence(file=path, line=line, rank=rank, node=node, timestamp=iso(ts), text=text[:2000])


def _num(s: str | None) -> float | None:
    """A finite number from log text (``1.2.3``, ``..`` or ``1e999`` are None)."""
    try:
        x = float(s)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _count(s: str | None) -> int | None:
    """A step, iteration or batch count from log text; None above ``LIMITS.max_step`` (a longer number is
    not a step a job ran, and would not fit the detector's int64 steps)."""
    if s is None or len(s) > 16:
        return None
    n = int(s)
    return n if n <= LIMITS.max_step else None


def _stated_duration(into: dict[tuple[str, int], list[tuple[int, float]]], st: _State, path: str, raw: str,
                     rank: int | None, d: re.Match[str] | None, writers: int = 1 << 30) -> None:
    """A pass's own stated duration (``d``, a :data:`SAVE_DURATION` match on ``raw``) into ``into``, per writer (the
    file and the rank, a script's ``rank N`` on the line first), after the writer's last step reading; at most
    ``writers`` writers."""
    if d is None:
        return
    sec = float(d.group(1)) / (1000.0 if d.group(2) == "ms" else 1.0)
    r = rank if rank is not None else -1
    sr = SCRIPT_RANK.search(raw) if "ank" in raw else None
    if sr is not None:
        r = int(sr.group(1))
    last = next((p.step for p in reversed(st.points[-64:]) if p.evidence is None or p.evidence[0] == path), None)
    if math.isfinite(sec) and last is not None and ((path, r) in into or len(into) < writers):
        into.setdefault((path, r), []).append((last, sec))


def parse_line(st: _State, path: str, lineno: int, raw: str, rank: int | None, node: str | None, year: int) -> None:
    """Parse one log line into ``st`` (see the module docstring for the formats)."""
    if ("av" in raw or "rit" in raw or "heckpoint" in raw) and SAVE_LINE.search(raw) and "oad" not in raw:
        st.pending_save.add(path)
        _stated_duration(st.save_durations, st, path, raw, rank, SAVE_DURATION.search(raw))
    elif ("val" in raw or "load" in raw or "ync" in raw) and PAUSE_LINE.search(raw):
        _stated_duration(st.pause_durations, st, path, raw, rank, SAVE_DURATION.search(raw), PAUSE_WRITERS_MAX)
    if st.tables and path in st.tables and "|" in raw and _table_row(st, path, lineno, raw, rank, node, year):
        return
    if not ("iter" in raw or "step" in raw or "it/s" in raw or "s/it" in raw or "train_batch_size" in raw
            or "time" in raw or "Time" in raw or "atch" in raw or "it:" in raw or "elapsed" in raw or "Step" in raw
            or "Iter" in raw or "ups=" in raw):
        return
    if "|" in raw and (header := _table_header(raw)) is not None:
        st.tables[path] = header
        return
    att = attribute(raw, frozenset())
    text = att.text
    if att.rank is not None:
        rank = att.rank
    elif "ank" in text and (sr := SCRIPT_RANK.search(text)) is not None:
        rank = int(sr.group(1))
    elif rank is None and att.local_rank is not None:  # torchrun's --tee prefix ("[default1]:") on one node
        rank = att.local_rank
    elif rank is None and (br := BRACKET_RANK.match(text)) is not None and STEP_ONLY.search(text, br.end()):
        rank = int(br.group(1))
    node = att.node or node
    r = rank if rank is not None else -1
    ts = parse_timestamp(raw, year)
    key = (path, r)
    m = MEGATRON.search(text) if "per iteration" in text else None
    if m:
        it, ms = _count(m.group(1)), _num(m.group(3))
        if it is None or ms is None or ms <= 0:
            st.bad += 1
            return
        prev = st.prev.get(key)
        w = float(it - prev) if prev is not None and it > prev else 1.0
        st.prev[key] = it
        st.formats.add("megatron")
        st.points.append(_Point(it, ms / 1000.0, w, r, ts, evidence=_ev(path, lineno, raw, rank, node, ts)))
        return
    m = DS_BATCH.search(text) if "train_batch_size" in text else None
    if m and st.batch_size is None:
        st.batch_size = _count(m.group(1)) or None
    m = DS_THROUGHPUT.search(text) if "CurrSamplesPerSec" in text else None
    if m:
        rate, ds_step = _num(m.group(2)), _count(m.group(1))
        if rate is not None and rate > 0 and ds_step is not None:
            st.formats.add("deepspeed")
            st.ds_rate.append((ds_step, rate, _ev(path, lineno, raw, rank, node, ts), ts))
        else:
            st.bad += 1
        return
    m = DS_STEP.search(text) if "skipped=" in text else None
    if m:
        st.ds_step = _count(m.group(1))
        return
    m = DS_TIMERS.search(text) if "time (ms)" in text else None
    if m:
        vals = {}
        for part in m.group(1).split("|"):
            if ":" in part:
                k, v = part.split(":", 1)
                x = _num(v)
                if x is None:
                    st.bad += 1
                else:
                    vals[k.strip().removesuffix("_microstep")] = x
        fwd, bwd, stp = vals.get("fwd", vals.get("forward")), vals.get("bwd", vals.get("backward")), vals.get("step")
        if fwd is None or bwd is None:
            return
        comm = vals.get("bwd_allreduce", vals.get("backward_allreduce", 0.0))
        total = (fwd + bwd + (stp or 0.0)) / 1000.0
        step = st.ds_step if st.ds_step is not None else (st.prev.get(key, -1) + 1)
        st.prev[key] = step
        st.formats.add("deepspeed")
        st.points.append(_Point(step, total, 1.0, r, ts, compute=total - comm / 1000.0, comm=comm / 1000.0,
                                evidence=_ev(path, lineno, raw, rank, node, ts)))
        return
    m = MMENGINE.search(text) if "(train)" in text else None
    if m:
        epoch, n, total, sec = _count(m.group(1)), _count(m.group(2)), _count(m.group(3)), _num(m.group(4))
        if n is None or total is None or sec is None or sec <= 0 or (m.group(1) is not None and epoch is None):
            st.bad += 1
            return
        step = n if epoch is None else (epoch - 1) * total + n  # MMEngine counts epochs from 1
        _add_step(st, "mmengine", key, step, sec, r, ts, _ev(path, lineno, raw, rank, node, ts),
                  _data_phase(text, sec, ms=False))
        return
    for fmt, pattern in _EPOCH_BATCH_FORMATS if "Epoch: [" in text else ():
        # (groups: epoch, batch within it, batches per epoch, seconds, data seconds; both count from 0)
        m = pattern.search(text)
        if m is None:
            continue
        epoch, n, total, sec, data = (_count(m.group(1)), _count(m.group(2)), _count(m.group(3)), _num(m.group(4)),
                                      _num(m.group(5)))
        if epoch is None or n is None or total is None or sec is None or sec <= 0 or epoch * total + n > LIMITS.max_step:
            st.bad += 1
            return
        _add_step(st, fmt, key, epoch * total + n, sec, r, ts, _ev(path, lineno, raw, rank, node, ts),
                  data if data is not None and data <= 1.05 * sec else math.nan)
        return
    m = FAIRSEQ.search(text) if "num_updates=" in text else None
    if m:
        ups, step = _num(m.group(1)), _count(m.group(2))
        if ups is None or step is None or ups <= 0:
            st.bad += 1
            return
        _add_step(st, "fairseq", key, step, 1.0 / ups, r, ts, _ev(path, lineno, raw, rank, node, ts))
        return
    m = TQDM.search(text) if "%|" in text else None
    if m:
        epoch, n, total, rate, unit = _count(m.group(1)), _count(m.group(2)), _count(m.group(3)), _num(m.group(4)), m.group(5)
        if rate is None or n is None or total is None or (m.group(1) is not None and epoch is None):
            st.bad += 1
            return
        if rate <= 0 or n <= 0:
            return
        sec = 1.0 / rate if unit == "it/s" else rate
        if epoch is not None:
            st.epoch_len[path] = max(st.epoch_len.get(path, 0), total)
            step = epoch * st.epoch_len[path] + n
            if step > LIMITS.max_step:
                st.bad += 1
                return
        else:
            step = n
        _add_step(st, "lightning" if epoch is not None else "hf_trainer", key, step, sec, r, ts,
                  _ev(path, lineno, raw, rank, node, ts))
        return
    m = GENERIC_STEP.search(text) or GENERIC_STEP_UNIT.search(text)
    if m:
        step, x = _global_step(m, text, st, key), _num(m.group(6))
        if step is None or x is None or x <= 0:
            st.bad += 1
            return
        ms = m.group(5).lower().endswith("_ms") or m.group(7) == "ms"
        sec = x / 1000.0 if ms else x
        _add_step(st, "step_lines", key, step, sec, r, ts, _ev(path, lineno, raw, rank, node, ts),
                  _data_phase(text, sec, ms), _work_phases(text, sec, ms))
        return
    m = STEP_ONLY.search(text)
    if m is None or (step := _global_step(m, text, st, key)) is None:
        return
    if ts is not None:
        seen = st.clock.setdefault(key, [])
        if len(seen) < _CLOCK_POINTS and (not seen or step > seen[-1][0]):
            seen.append((step, ts, _ev(path, lineno, raw, rank, node, ts)))
    if "ms" in text or "/s" in text or "s/" in text:
        units = list(UNIT_TIME.finditer(text, m.end()))
        per_step = [u for u in units if u.group(2) or u.group(3)]
        lone_ms = [u for u in units if u.group(4)]
        u = per_step[0] if per_step else lone_ms[0] if len(lone_ms) == 1 else None
        x = _num(u.group(1)) if u is not None else None
        if u is not None and x is not None and x > 0:
            in_ms = not u.group(3) and (u.group(2) or u.group(4)) == "ms"
            sec = 1.0 / x if u.group(3) else x / 1000.0 if in_ms else x
            # (the line's own phases, as on the named step-time lines: "| 64.2 ms/step | fwd 11.1 bwd 25.0 allreduce
            # 26.7": a bare number takes the step time's unit)
            _add_step(st, "step_lines", key, step, sec, r, ts, _ev(path, lineno, raw, rank, node, ts),
                      _data_phase(text, sec, in_ms), _work_phases(text, sec, in_ms))
            return
    c = CUM_CLOCK.search(text, m.end())
    if c is not None:
        if c.group(1) is not None:
            elapsed = int(c.group(1)) * 3600 + int(c.group(2)) * 60 + float(c.group(3))
        else:
            v = _num(c.group(4))
            unit = (c.group(5) or "s").lower()
            elapsed = None if v is None else v / 1000.0 if unit == "ms" else v * 60.0 if unit in ("min", "m") else v
        cum = st.cum.setdefault(key, [])
        if elapsed is not None and len(cum) < _CLOCK_POINTS and (not cum or (step > cum[-1][0] and elapsed >= cum[-1][1])):
            cum.append((step, elapsed, _ev(path, lineno, raw, rank, node, ts)))
    t = THROUGHPUT.search(text, m.end())
    if t is not None:
        x = _num(t.group(1) or t.group(2))
        thr = st.thr.setdefault(key, [])
        if x is not None and x > 0 and len(thr) < _CLOCK_POINTS and (not thr or step > thr[-1][0]):
            thr.append((step, 1.0 / x, _ev(path, lineno, raw, rank, node, ts)))


class StepLineReader:
    """Step records from a live log, line by line: the formats :func:`parse_line` reads (each line's step and the
    time per step it states, and its data wait), for a streaming :class:`~diag_service.slow.SlowDetector`.

    :meth:`read` takes one line of file ``path`` (with the rank and node its file gives, when known) and returns the
    records of the docs/slow.md format it yields: ``{"step", "step_time_s", "iterations"}`` (the steps since the
    writer's previous line), ``rank`` and ``node`` when known, ``end`` (the line's own time, unix seconds, when it has
    one), ``data_s`` when the line states the data wait, and ``kind: checkpoint`` for the first reading after a
    checkpoint save line of the same file (it covers the save: excluded by the detector). Lines that only carry a
    clock or a throughput (read as a whole series by :func:`log_feed`) give none; DeepSpeed's throughput lines give
    records once its batch size is known. Bounded state: the last step per writer."""

    def __init__(self, year: int | None = None) -> None:
        self._st = _State()
        self._year = year if year is not None else _dt.datetime.now(_dt.UTC).year

    def read(self, path: str, line: str, rank: int | None = None, node: str | None = None) -> list[dict[str, Any]]:
        st = self._st
        for seg in line.split("\r") if "\r" in line else (line,):  # a progress bar's redraws: each is a reading
            before = len(st.points)
            parse_line(st, path, 0, seg, rank, node, self._year)
            if len(st.points) > before and path in st.pending_save:  # the reading after a save covers it
                st.pending_save.discard(path)
                for p in st.points[before:]:
                    p.save = True
        st.clock.clear()  # series that only a whole log gives (clocks, throughputs): not kept
        st.cum.clear()
        st.thr.clear()
        if st.ds_rate and st.batch_size:
            for step, rate, _, ts in st.ds_rate:
                st.points.append(_Point(step, st.batch_size / rate, 1.0, -1, ts))
        st.ds_rate.clear()
        out: list[dict[str, Any]] = []
        for p in st.points:
            if not (math.isfinite(p.value) and p.value > 0):
                continue
            rec: dict[str, Any] = {"step": p.step, "step_time_s": p.value, "iterations": p.weight}
            if p.rank >= 0:
                rec["rank"] = p.rank
            if node is not None:
                rec["node"] = node
            if p.time is not None:
                rec["end"] = p.time
            if math.isfinite(p.data):
                rec["data_s"] = p.data
            if p.save:
                rec["kind"] = "checkpoint"  # a reading that covers a checkpoint save is not a training step's time
            out.append(rec)
        st.points.clear()
        return out


def _counter_steps(st: _State, key: tuple[str, int], total: int) -> None:
    """The writer ``key``'s readings so far, read as ``epoch x total + counter`` before its counter was found to go
    on across epochs, back to the counter itself (``total`` is the counter's stated total): otherwise every later
    reading is below the last one and dropped as a redraw (e.g. ``epoch 1 step 20/1200`` ...
    ``epoch 2 step 140/1200`` would keep 6 readings of 120 and hide a 5x slowdown)."""

    def counter(step: int) -> int:
        return step - ((step - 1) // total) * total if step > total else step

    path, rank = key
    for p in st.points:
        if p.rank == rank and p.evidence is not None and p.evidence[0] == path:
            p.step = counter(p.step)
    if key in st.clock:
        st.clock[key] = [(counter(s), t, ev) for s, t, ev in st.clock[key]]
    if key in st.prev:
        st.prev[key] = counter(st.prev[key])


def _global_step(m: re.Match[str], text: str, st: _State, key: tuple[str, int]) -> int | None:
    """The step of a :data:`STEP_COUNTER` match; a counter out of a total after an epoch number (``Epoch 2
    Batch 30/180``) restarts every epoch, so its step is ``epoch x total + counter`` -- unless the writer's counter
    went on across an epoch change (``epoch 0 step 35/200`` then ``epoch 1 step 40/200``: the global step beside the
    epoch, whose 137 steps would otherwise read as steps 250 to 720), from then on the counter itself."""
    n, of = (m.group(1), m.group(2)) if m.group(1) is not None else (m.group(3), m.group(4))
    step = _count(n)
    if step is None or of is None:
        return step
    e = EPOCH_BEFORE.search(text, 0, m.start())
    if e is None:
        return step
    total, epoch = _count(of), _count(e.group(1))
    if key in st.global_counter:
        return step
    if epoch is not None:
        last = st.epoch_counter.get(key)
        st.epoch_counter[key] = (epoch, step)
        if last is not None and epoch > last[0] and step > last[1]:
            st.global_counter.add(key)
            if total:
                _counter_steps(st, key, total)
            return step
    if epoch is not None and e.group(2) is not None and epoch > 0:
        epoch -= 1  # "Epoch [1/4]" is the first epoch
    if total is None or epoch is None or epoch * total + step > LIMITS.max_step:
        return None
    return epoch * total + step


def _table_cells(raw: str) -> list[str]:
    """The ``|``-separated cells of a progress table's line, stripped (outer bars dropped)."""
    return [c.strip() for c in raw.strip().strip("|").split("|")]


def _table_header(raw: str) -> tuple[int, int, float, int] | None:
    """(step column, time column, seconds per unit, columns) when ``raw`` is a progress table's header
    (:data:`TABLE_CELL`), else None."""
    cells = _table_cells(raw)
    if len(cells) < 3 or not all(TABLE_CELL.fullmatch(c) for c in cells):
        return None
    step = next((i for i, c in enumerate(cells) if TABLE_STEP.fullmatch(c)), None)
    ms = next((i for i, c in enumerate(cells) if TABLE_MS.fullmatch(c)), None)
    sec = next((i for i, c in enumerate(cells) if TABLE_S.fullmatch(c)), None)
    if step is None or (ms is None and sec is None):
        return None
    return (step, ms, 1e-3, len(cells)) if ms is not None else (step, sec, 1.0, len(cells))  # type: ignore[return-value]


def _table_row(st: _State, path: str, lineno: int, raw: str, rank: int | None, node: str | None, year: int) -> bool:
    """Read ``raw`` as a row of ``path``'s progress table (:meth:`_State.tables`); False when it is not one."""
    step_i, time_i, unit, n = st.tables[path]
    cells = _table_cells(raw)
    if len(cells) != n:
        return False
    step, val = _count(cells[step_i]), _num(cells[time_i])
    if step is None or val is None or val <= 0:
        return False
    r = rank if rank is not None else -1
    ts = parse_timestamp(raw, year)
    _add_step(st, "table", (path, r), step, val * unit, r, ts, _ev(path, lineno, raw, rank, node, ts))
    return True


def _add_step(st: _State, fmt: str, key: tuple[str, int], step: int, sec: float, r: int, ts: float | None,
              ev: _Ev, data: float = math.nan, phases: tuple[float, float] = (math.nan, math.nan)) -> None:
    """One logged step of ``sec`` seconds per iteration (``data`` of them waiting for the batch, when the line
    says); a line covers the iterations since the same writer's previous one (a log interval), a repeated or
    earlier step is a redraw and is skipped."""
    prev = st.prev.get(key)
    if prev is not None and step <= prev:
        return
    st.prev[key] = step
    st.formats.add(fmt)
    st.points.append(_Point(step, sec, float(step - prev) if prev is not None else 1.0, r, ts, data=data, own=phases,
                            evidence=ev))


def _data_phase(text: str, step_sec: float, ms: bool) -> float:
    """The data-loading seconds a step line gives (:data:`DATA_PHASE`), NaN when it gives none or one that
    cannot be part of a step of ``step_sec`` seconds (more than 1.05 x the step: another quantity, or a time
    the logger keeps outside the step). ``ms``: the step time's unit was milliseconds (a bare number takes it)."""
    if "ata" not in text:
        return math.nan
    sec = _phase_seconds(DATA_PHASE.search(text), ms)
    return sec if sec is not None and sec <= 1.05 * step_sec else math.nan


def _phase_seconds(m: re.Match[str] | None, ms: bool) -> float | None:
    """The seconds a phase pattern's match gives (groups: ``_ms`` suffix, value, unit; :data:`DATA_PHASE`,
    :data:`COMPUTE_PHASE`, :data:`COMM_PHASE`), None without a match or a usable value. ``ms``: the step time's unit
    was milliseconds (a bare number takes it)."""
    x = _num(m.group(2)) if m is not None else None
    if m is None or x is None or x < 0:
        return None
    in_ms = m.group(3) == "ms" or m.group(1) is not None or (m.group(3) is None and ms)
    return x / 1000.0 if in_ms else x


def _work_phases(text: str, step_sec: float, ms: bool) -> tuple[float, float]:
    """The compute and communication seconds a step line gives (:data:`COMPUTE_PHASE`, :data:`COMM_PHASE`), both or
    neither (NaN, NaN): one without the other does not say which rank waits. Also neither when together they exceed
    1.05 x the step of ``step_sec`` seconds (other quantities). ``ms``: the step time's unit (a bare number takes it)."""
    if "omp" not in text and "wd" not in text and "orward" not in text:
        return math.nan, math.nan
    compute, comm = _phase_seconds(COMPUTE_PHASE.search(text), ms), _phase_seconds(COMM_PHASE.search(text), ms)
    if compute is None:
        fwd, bwd = _phase_seconds(FWD_PHASE.search(text), ms), _phase_seconds(BWD_PHASE.search(text), ms)
        compute = fwd + bwd if fwd is not None and bwd is not None else None
    if compute is None or comm is None or compute + comm > 1.05 * step_sec:
        return math.nan, math.nan
    return compute, comm


#: Timestamped step lines kept per writer for :func:`_clock_points` (bounded state).
_CLOCK_POINTS = 100_000
#: A step time from two timestamps needs them this many timestamp resolutions apart (10: at most 10 % error
#: from rounding; a stamp to the second is then read over 10 s or more).
_CLOCK_SPAN = 10


def _clock_points(st: _State, series: dict[tuple[str, int], list[tuple[int, float, _Ev]]], fmt: str,
                  fine: bool = False) -> None:
    """Step times from a clock on step lines without a step time: a writer's timestamps (``2024-05-01
    10:00:01 step 300 loss 2.1``) or its own cumulative clock (``it: 300 elapsed: 61.2s``) give (clock rise
    between lines) / (steps between them), over spans of at least :data:`_CLOCK_SPAN` clock resolutions (a
    second for stamps without fractions, a millisecond otherwise; ``fine``: the clock prints fractions)."""
    for (_path, r), seen in series.items():
        if len(seen) < 3:
            continue
        res = 0.001 if fine or any(ts % 1 for _s, ts, _e in seen) else 1.0
        a_step, a_ts, _ = seen[0]
        for step, ts, ev in seen[1:]:
            if ts - a_ts < _CLOCK_SPAN * res or step <= a_step:
                continue
            st.points.append(_Point(step, (ts - a_ts) / (step - a_step), float(step - a_step), r, _stamp(ev),
                                    evidence=ev))
            a_step, a_ts = step, ts
    if st.points:
        st.formats.add(fmt)


def _stamp(ev: _Ev) -> float | None:
    """The unix time of an evidence line's timestamp, if it had one."""
    return ev[5]


def load_log_bundle(path: str | Path) -> Feed:
    """Parse the iteration lines of a log bundle (directory, archive or file) into a job-level series.

    Returns a :class:`~diag_service.slow.feeds.Feed` whose records have ``rank = -1`` and ``step_time``
    set (seconds per iteration), ``weight`` = iterations covered. Raises
    :class:`~diag_service.ingest.BundleError` if the path cannot be opened; a bundle without iteration
    lines gives an empty feed with a warning.
    """
    report = InputReport(path=str(path))
    # the bundle's own .diagignore holds for this reader too, as for the diagnosis (trial 45: `diag slow` read the
    # notes a user had excluded)
    skip = excluded_by(read_diagignore(str(path), report)) if os.path.isdir(path) else None
    return log_feed(read_bundle(path, report, skip=skip, redraws=True), str(path), report)


def _median(vals: list[float]) -> float:
    """The median of a short list (a step's readings: mostly one), without numpy's per-call cost."""
    if len(vals) == 1:
        return float(vals[0])
    v = sorted(vals)
    h = len(v) // 2
    return float(v[h]) if len(v) % 2 else (v[h - 1] + v[h]) / 2.0


def _merge_steps(cols: dict[str, list[float]], k: int) -> dict[str, list[float]]:
    """Consecutive records merged ``k`` at a time: the last step and end time, summed iterations, and the
    iteration-weighted mean step, compute and communication times (NaN-aware)."""
    n = len(cols["step"])
    pad = -n % k  # the last group may be short

    def grid(key: str, fill: float) -> np.ndarray:
        return np.concatenate([np.asarray(cols[key], dtype=float), np.full(pad, fill)]).reshape(-1, k)

    w = grid("weight", 0.0)
    out: dict[str, list[float]] = {"step": [cols["step"][min(i + k, n) - 1] for i in range(0, n, k)],
                                   "weight": w.sum(axis=1).tolist()}
    for key in ("step_time", "compute", "comm", "data"):
        x = grid(key, math.nan)
        ok = np.isfinite(x) & (w > 0)
        den = np.where(ok, w, 0.0).sum(axis=1)
        num = np.where(ok, x * w, 0.0).sum(axis=1)
        out[key] = np.where(den > 0, num / np.where(den > 0, den, 1.0), math.nan).tolist()
    end = grid("end", math.nan)
    out["end"] = np.where(np.isfinite(end).any(axis=1), np.nanmax(np.where(np.isfinite(end), end, -np.inf), axis=1),
                          math.nan).tolist()
    return out


def log_feed(blocks: Iterable[Block], source: str, report: InputReport | None = None,
             max_members: int | None = None) -> Feed:
    """:func:`load_log_bundle` of blocks already being read (``read_bundle(..., redraws=True)``, or
    :meth:`~diag_service.ingest.open.Bundle.step_blocks`); ``source`` names the input in the feed's stats,
    ``report`` holds the read's warnings. A block of a member named like a timing feed is read as that feed.
    ``max_members``: stop at the first member after this many have given step lines (the ranks of a
    synchronous job step together, so a few writers give the job's series; a 1,024-rank bundle need not be
    read whole for it), unless their lines give each rank's data wait: then every member is read for the
    straggler test, up to :data:`RANK_PHASE_MAX_RECORDS` readings."""
    report = report if report is not None else InputReport(path=source)
    path = source
    st = _State()
    year = 1970
    feed_recs: list[Any] = []
    feed_lines: list[int] = []
    feed_bad = 0
    feed_src: str | None = None
    stepped: set[str] = set()  # members that gave step lines
    last_step: dict[str, int] = {}  # per file, the step of its last reading
    notes: collections.deque[tuple[int, str]] = collections.deque(maxlen=NOTE_LINES)
    phased = False  # some rank's lines give its data wait
    seen_lines = 0
    for block in blocks:
        src = block.source
        if max_members is not None and src.path not in stepped and len(stepped) >= max_members and not (
                phased and len(st.points) <= RANK_PHASE_MAX_RECORDS):
            break  # (every rank's file when they give data waits: the straggler test needs all of them)
        if FEED_MEMBER.search(src.path) and not src.path.lower().endswith((".csv", ".parquet")):
            # a JSONL timing feed inside the bundle (archive member or file)
            feed_src = feed_src or src.path
            recs, line_nos, malformed = jsonl_records(block.text.splitlines(), block.first_line)
            feed_recs += recs
            feed_lines += line_nos
            feed_bad += malformed
            continue
        for i, line in enumerate(block.text.split("\n")[: block.newlines or None]):
            if year == 1970:
                ts = parse_timestamp(line, 2000)
                if ts is not None:
                    year = _dt.datetime.fromtimestamp(ts, tz=_dt.UTC).year
            # a progress bar's redraws (``\r``) are the updates a terminal overwrote: each is a reading
            for seg in line.split("\r") if "\r" in line else (line,):
                before = len(st.points)
                parse_line(st, src.path, block.first_line + i, seg, src.rank, src.node, year if year != 1970 else 2024)
                if len(st.points) > before:
                    last_step[src.path] = st.points[-1].step
                elif src.path in last_step and _is_note(seg):
                    notes.append((last_step[src.path], seg.strip()[:300]))
                if len(st.points) > before and src.path in st.pending_save:  # the reading after a save covers it
                    st.pending_save.discard(src.path)
                    for p in st.points[before:]:
                        p.save = True
        phased = phased or any(p.rank >= 0 and (math.isfinite(p.data) or math.isfinite(p.own[0]))
                               for p in st.points[-8:])
        found = len(st.points) + len(st.ds_rate) + sum(map(len, st.clock.values())) + sum(map(len, st.cum.values())) \
            + sum(map(len, st.thr.values()))
        if found > seen_lines:
            stepped.add(src.path)
            seen_lines = found
    if feed_recs:
        conv = RecordConverter()
        batch = conv.convert(feed_recs, feed_lines)
        warnings = list(report.warnings)
        if feed_bad or conv.bad:
            warnings.append(f"{feed_bad + conv.bad} line(s) of {feed_src} were not valid records and were skipped")
        return Feed(batch, FeedStats(source=f"{path}:{feed_src}", format="jsonl", records=len(batch),
                                     bad_records=feed_bad + conv.bad, warnings=warnings, phases=batch.phases()))
    units = "seconds"
    if not st.points and not st.ds_rate:
        if any(len(v) >= 3 for v in st.thr.values()):
            units = "seconds per unit of work (1 / throughput)"
            for key, seen in st.thr.items():  # no step time was read, so no writer has a previous step yet
                for step, sec, ev in seen:
                    _add_step(st, "throughput", key, step, sec, key[1], _stamp(ev), ev)
        else:
            _clock_points(st, st.cum, "elapsed_clock")
            if not st.points:
                _clock_points(st, st.clock, "step_clock")
    for step, rate, ev, ts in st.ds_rate:
        if st.batch_size:
            st.points.append(_Point(step, st.batch_size / rate, 1.0, ev[3] if ev[3] is not None else -1, ts, evidence=ev))
        else:
            units = "seconds per sample"
            st.points.append(_Point(step, 1.0 / rate, 1.0, ev[3] if ev[3] is not None else -1, ts, evidence=ev))
    by_step: dict[int, list[_Point]] = {}
    for p in st.points:
        by_step.setdefault(p.step, []).append(p)
    steps = sorted(by_step)
    raw_ev: dict[int, Any] = {}
    cols: dict[str, list[float]] = {k: [] for k in ("step", "step_time", "weight", "end", "compute", "comm", "data")}
    for s in steps:
        ps = by_step[s]
        cols["step"].append(s)
        t = _median([p.value for p in ps])
        cols["step_time"].append(t)
        cols["weight"].append(_median([p.weight for p in ps]))
        times = [p.time for p in ps if p.time is not None]
        cols["end"].append(max(times) if times else math.nan)
        comp = [p.compute for p in ps if math.isfinite(p.compute)]
        comm = [p.comm for p in ps if math.isfinite(p.comm)]
        data = [p.data for p in ps if math.isfinite(p.data)]
        d = _median(data) if data else math.nan
        cols["data"].append(d)
        # a line giving the data wait but no other phase: the rest of the step is compute (and communication)
        cols["compute"].append(_median(comp) if comp else max(t - d, 0.0) if data and not comm else math.nan)
        cols["comm"].append(_median(comm) if comm else math.nan)
        if ps[0].evidence is not None:
            raw_ev[s] = ps[0].evidence
    merged = len(steps) > LOG_MAX_RECORDS
    if merged:
        cols = _merge_steps(cols, math.ceil(len(steps) / LOG_MAX_RECORDS))
    evidence = {s: _evidence(raw_ev[s]) for s in cols["step"] if s in raw_ev}
    n = len(cols["step"])
    batch = StepBatch.from_columns(step=cols["step"], rank=np.full(n, -1), step_time=cols["step_time"],
                                   weight=cols["weight"], end=cols["end"], compute=cols["compute"], comm=cols["comm"],
                                   data=cols["data"])
    warnings = list(report.warnings)
    if not n:
        warnings.append("no iteration lines (Megatron-LM, DeepSpeed, Hugging Face Trainer, Lightning) found")
    if st.bad:
        warnings.append(f"{st.bad} iteration line(s) with unusable numbers skipped")
    if units == "seconds per sample":
        warnings.append("DeepSpeed throughput without train_batch_size: the series is seconds per sample")
    elif units != "seconds":
        warnings.append("no step time on the step lines: the series is their throughput's inverse (seconds per sample "
                        "or token), so its level is not a step time")
    if merged:
        warnings.append(f"{len(steps)} steps read: consecutive steps merged {math.ceil(len(steps) / LOG_MAX_RECORDS)} "
                        f"at a time ({n} records)")
    # the ranks and nodes the lines came from, though the job's series is their median per step (a user who gave
    # four ranks' files reads "0 ranks" as files not read; new-user trials 39 r06, 40 r05)
    stats = FeedStats(source=str(path), format="logs:" + ",".join(sorted(st.formats)) if st.formats else "logs",
                      records=n, bad_records=st.bad, warnings=warnings,
                      ranks=len({p.rank for p in st.points if p.rank >= 0}),
                      nodes=len({p.evidence[4] for p in st.points if p.evidence is not None and p.evidence[4]}))
    saves = frozenset(p.step for p in st.points if p.save) if not merged else frozenset()
    rank_batch = _rank_phases(st.points)
    stated = max(st.save_durations.values(), key=len) if st.save_durations and not merged else []
    return Feed(batch, stats, units=units, log_evidence=evidence, rank_batch=rank_batch, save_steps=saves,
                save_durations=tuple(stated),
                # per rank, the file that states most of its passes (a rank's lines may be in several files)
                pause_durations={} if merged else {r: tuple(v) for (_p, r), v in sorted(
                    st.pause_durations.items(), key=lambda kv: len(kv[1]))},
                rank_evidence=_waiting_lines(st.points) if rank_batch is not None else {}, notes=tuple(notes))


#: At most this many per-rank lines are kept as a straggler's evidence (:func:`_waiting_lines`).
RANK_EVIDENCE_MAX = 4096


def _waiting_lines(points: list[_Point]) -> dict[tuple[int, int], Evidence]:
    """(rank, step) -> the rank's own line, for the lines whose data wait is at least 1.5x the step's median over
    ranks (the lines a data straggler's report cites); at most :data:`RANK_EVIDENCE_MAX`."""
    by_step: dict[int, list[_Point]] = {}
    for p in points:
        if p.rank >= 0 and math.isfinite(p.data) and p.evidence is not None:
            by_step.setdefault(p.step, []).append(p)
    out: dict[tuple[int, int], Evidence] = {}
    for step in sorted(by_step):
        ps = by_step[step]
        if len(ps) < 2:
            continue
        med = _median([p.data for p in ps])
        for p in ps:
            if p.data >= 1.5 * med and p.data > 0 and (p.rank, step) not in out:
                out[(p.rank, step)] = _evidence(p.evidence)  # type: ignore[arg-type]
                if len(out) >= RANK_EVIDENCE_MAX:
                    return out
    return out


#: Per-rank data-loading times go to the streaming rank test with at least two ranks giving them on at least this
#: many steps each (its warm-up and baseline take 25 steps; SlowConfig); to the whole-log comparison of a job
#: episode's steps (:func:`diag_service.slow.analyze._episode_phase_straggler`) with at least
#: :data:`RANK_PHASE_MIN_LINES` (a log line every 10-50 steps).
RANK_PHASE_MIN_STEPS = 30
RANK_PHASE_MIN_LINES = 6
#: ... and with at most this many (rank, step) records: the rank test costs about 1 ms per step of a 64-rank job on
#: this host, so a log of thousands of ranks printing every step is not read per rank (its job series still is).
RANK_PHASE_MAX_RECORDS = 262_144


def _rank_phases(points: list[_Point]) -> StepBatch | None:
    """Every rank's own step and data-loading times, and its compute and communication times where its lines name
    both (:attr:`~diag_service.slow.feeds.Feed.rank_batch`), when at least two ranks print them on at least
    :data:`RANK_PHASE_MIN_LINES` steps, the log is not merged (at most :data:`LOG_MAX_RECORDS` steps) and the records
    are at most :data:`RANK_PHASE_MAX_RECORDS`; else None.

    In a synchronous job every rank's step time is the slowest rank's, so a straggler shows only in a part of
    the step: a rank whose data wait is longer than its peers' is the one the others wait for, inside the rest of
    their step. The rest (compute and the all-reduce's wait, which these lines do not split) is not passed on: a
    rank with a shorter data wait has a longer rest, which is not a fault (as ``comm`` it gave 5 communication
    stragglers on the 26 clean dev feeds of ``eval/slow_feeds`` read this way; data alone gave none). Lines that
    name the compute and the communication themselves split the rest: those go as they are (the same 26 feeds read
    with their own compute and comm: no straggler).
    """
    by_rank: dict[int, list[_Point]] = {}
    seen: set[tuple[int, int]] = set()
    for p in points:  # a rank's line read twice (the console and torchrun's --log-dir file) counts once
        if p.rank >= 0 and (math.isfinite(p.data) or math.isfinite(p.own[0])) and (p.rank, p.step) not in seen:
            seen.add((p.rank, p.step))
            by_rank.setdefault(p.rank, []).append(p)
    ranks = [r for r, ps in by_rank.items() if len(ps) >= RANK_PHASE_MIN_LINES]
    if len(ranks) < 2 or len({p.step for r in ranks for p in by_rank[r]}) > LOG_MAX_RECORDS \
            or sum(len(by_rank[r]) for r in ranks) > RANK_PHASE_MAX_RECORDS:
        return None
    ps = [p for r in ranks for p in by_rank[r]]
    # each rank's node, where its lines' file or prefix names one (a two-node --log-dir tree under node0/, node1/):
    # the straggler's node is then the one to look at
    nodes = [p.evidence[4] if p.evidence is not None else None for p in ps]
    names = sorted({n for n in nodes if n})
    col = {n: i for i, n in enumerate(names)}
    return StepBatch.from_columns(step=[p.step for p in ps], rank=[p.rank for p in ps],
                                  step_time=[p.value for p in ps], weight=[p.weight for p in ps],
                                  data=[p.data for p in ps], compute=[p.own[0] for p in ps], comm=[p.own[1] for p in ps],
                                  node=[col[n] if n else -1 for n in nodes] if names else None,
                                  node_names=names or None)
