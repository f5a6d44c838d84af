"""Candidate-event extraction over streamed blocks.

Speed: a block is never split into Python line objects. One compiled pre-filter regex
(:data:`PREFILTER`) jumps from candidate line to candidate line at C speed; only those lines (and
the lines of a traceback that one of them opens) are looked at in Python. A 1 GB bundle with a few
thousand candidate lines therefore costs about one regex pass (see ``eval/bench/bench_diagnose.py``).

Events:

- a Python traceback (``Traceback (most recent call last):`` … ``SomeError: msg``, chained
  exceptions included, or a headless run of ``File "…", line N`` frames) is one event keyed by its
  exception line;
- C++ frame dumps (``Exception raised from … (most recent call first):`` and ``frame #N:``) collapse
  into one event;
- NCCL's ``Last error:`` is joined with the line that follows it;
- torchelastic's failure report (``Root Cause (first observed failure):`` and ``Failures:``)
  becomes structured events naming rank, host, exit code and signal; Open MPI's and horovodrun's
  "The first process to do so was:" report becomes the same kind of first-observed-failure event;
- torchelastic ``error.json`` files become traceback events with their exact failure time;
- every other pre-filter hit is a single-line event.
"""

from __future__ import annotations

import bisect
import json
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from pathlib import Path

import re2  # google-re2: linear-time DFA matching; Python's re backtracks through every alternative

from diag_service.contracts import CollectiveTimeout, ProgressLog, RawEvent
from diag_service.domain import LOOPBACK, EventKind
from diag_service.extract.literal_scan import BUILD_AFTER_BYTES, LiteralScan, literal_scan_available
from diag_service.ingest import Block, Source
from diag_service.limits import LIMITS
from diag_service.logformat import (
    FRAME_LINE,
    LEADING_TS,
    NCCL_ORIGIN,
    Attribution,
    attribute,
    parse_timestamp,
)
from diag_service.re2fast import start_finder

MAX_EVENT_LINES = 80
MAX_LINE_CHARS = 4000
MAX_TRACEBACK_SCAN = 400
PROGRESS_SAMPLES = 64

#: The pre-filter's own alternatives (the catalogue's patterns are added to them by prefilter_with). Case variants are
#: spelled out: Python's re is much faster on literals than with (?i).
#: The innermost frame of a gdb / pstack backtrace (``#0  0x00007f87915e4ce3 in MPIC_Wait () from libmpi.so.12``,
#: ``#0  syscall () at ...``): a stack dump (:data:`STACK_DUMP`)
GDB_TOP_FRAME = r"#0 +(?:0x[0-9a-fA-F]+ in )?[^\s(]+ \("
PREFILTER_PARTS = (
    r"Traceback \(most recent call last\)",
    r'File "[^"\n]*", line \d',
    r"Error\b",
    r"Exception\b",
    r"[Ee]rror",
    r"ERROR",
    r"[Ff]ail",
    r"FAIL",
    r"NCCL WARN",
    r"\bXid\b",
    r"\bECC\b",
    r"[Oo]ut of memory|\bOOM\b|oom[-_]kill",
    r"[Kk]illed",
    r"\bSIG[A-Z]{2,5}\b|[Ss]ignal \d",
    r"[Ss]egmentation fault|core dumped|[Aa]borted|[Bb]us error",
    r"[Tt]imed out|[Tt]imeout\b|TIMEOUT|[Tt]imeoutError",
    r"[Ee]xit ?code|exit status|[Ee]xited with|returned non-zero",
    r"frame #\d+:",
    r"Last error:",
    r"Root Cause \(first observed failure\)|^Failures:",
    r"The first process to do so was",
    r"^=\s+RANK \d+ PID \d+ RUNNING AT ",
    r"process exited without calling finalize",
    r"\b[Ff]atal\b|FATAL|[Pp]anic\b",
    r"[Aa]ssert",
    r"[Ll]oss[^\n]{0,40}\b(?:[Nn]a[Nn]|[Ii]nf)\b|\b(?:[Nn]a[Nn]|[Ii]nf)\b[^\n]{0,20}[Ll]oss",
    r"No space left|[Pp]ermission denied|[Rr]ead-only file system",
    r"[Cc]onnection (?:reset|refused|closed)|[Bb]roken pipe|[Aa]ddress already in use|[Uu]nreachable",
    r"Thread (?:0x[0-9a-fA-F]+|\d+) \((?:idle|active|gil|Thread 0x)",
    "^" + GDB_TOP_FRAME,
    r"[ \t:\]]" + GDB_TOP_FRAME,  # (the same behind a collector's time or a rank prefix)
    r"<defunct>",
    r"Unable to determine the device handle|fallen off the bus",
)
PREFILTER = re.compile("|".join(PREFILTER_PARTS), re.MULTILINE)
#: a training-progress mark: a step or iteration counter and its number. The word must start a word, so that
#: configuration dumps (``warmup_steps = 2000``, ``max_steps=10000``, ``save_steps: 500``) and timers
#: (DeepSpeed's ``fwd_microstep: 298.18``) are not read as steps. Each alternative is led by a literal, the case
#: variants spelled out (``re`` then skips to the positions where one of I, i, S, s, g stands, ~2.7x faster on a
#: trainer's step line than ``[Ii]teration|[Ii]ter|[Ss]tep|global_step``; the teration forms are still tried
#: before the ter ones).
PROGRESS_PATTERN = (
    r"\b(?:Iteration|iteration|Iter|iter|Step|step|global_step)s?(?: at)?[\"']?\s*[:=#]?\s*\[?\s*(\d{1,12})\b"
)
PROGRESS_RE = re.compile(PROGRESS_PATTERN)


def ascii_bytes_pattern(pattern: str, flags: int = 0) -> re.Pattern[bytes]:
    """``pattern`` compiled for ASCII bytes, matching where the text pattern matches the same ASCII text.

    ``\\d``, ``\\w`` and ``\\b`` already agree on ASCII; ``\\s`` and ``\\S`` are spelled out, because a
    text pattern's ``\\s`` also takes the separators U+001C..U+001F (``str.isspace``) and a bytes pattern's
    does not. Only for patterns without ``\\s``/``\\S`` inside a ``[...]`` class (checked: ValueError)."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            esc = pattern[i : i + 2]
            if esc in ("\\s", "\\S"):
                if in_class:
                    raise ValueError(f"\\s or \\S inside a class: {pattern!r}")
                esc = "[\\t-\\r\\x1c-\\x1f ]" if esc == "\\s" else "[^\\t-\\r\\x1c-\\x1f ]"
            out.append(esc)
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            j = i + 1
            j += pattern[j : j + 1] == "^"
            j += pattern[j : j + 1] == "]"  # a ']' first in a class is a member
            out.append(pattern[i:j])
            i = j
            continue
        if c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return re.compile("".join(out).encode("ascii"), flags)


PROGRESS_BYTES = ascii_bytes_pattern(PROGRESS_PATTERN)  # over an ASCII block's bytes (Block.ascii)
#: Lines only a distributed training job writes: NCCL's INFO lines, rank / world-size banners (torchrun's
#: environment, Lightning's "GLOBAL_RANK: 0, MEMBER: 1/8", DETR-style "| distributed init (rank 1, world 2)"),
#: tqdm progress bars ("12/1752 [00:57<1:22:40, 2.86s/it]"), loss and step lines, launcher and framework names;
#: and a program logger's own marks: glog's prefix ("I0411 01:28:05.820414"), a source location
#: ("src/postoffice.cc:25:", "[block_pool.py:264]"), an upper-case level word ("INFO"). Used only to tell a log
#: that ends without any error (a job still running: hung or slow) from a text that is not a program's output
#: (notes, a host name file). Public corpus dev: pastes of a job's start-up lines only (ps-lite's ZMQ van, glog,
#: vLLM's INFO lines) were of hung jobs in most threads.
JOB_OUTPUT = (
    r"NCCL INFO|GLOBAL_RANK|LOCAL_RANK|local_rank|[Ww]orld[_ ]size|WORLD_SIZE|MASTER_ADDR|(?:\d+(?:\.\d+)?|\?)(?:it/s|s/it)\]"
    r"|'loss':|\bloss[:=]\s*\d|\b(?:[Ii]teration|global_step)\b|\b[Ee]poch\b|torch\.distributed|torchrun|[Dd]eep[Ss]peed"
    r"|[Aa]ccelerate|[Ll]ightning|[Hh]orovod|TorchTrainer|ray\.train|Megatron|NeMo|\bDDP\b|\bFSDP\b"
    r"|distributed init|\b[IWEF]\d{4} \d\d:\d\d:\d\d\.\d|[\w/.-]\.(?:py|cc|cpp|cu|h|hpp):\d+\b|\b(?:INFO|DEBUG|WARNING|ERROR)\b"
)
JOB_OUTPUT_FAST = re2.compile(JOB_OUTPUT)
#: The collective backend a job names: its own banner (``backend=gloo``, ``dist_backend: nccl``), PyTorch's process
#: group classes (``ProcessGroupGloo``, ``ProcessGroupNCCL``) or NCCL's own INFO/WARN lines (which only a job using
#: NCCL writes). Read on each block's head and tail (bounded cost); used to tell a CPU job (gloo only) from a GPU one.
BACKEND = re.compile(r"""(?i:backend)['"]?\s*[=:]\s*['"]?(gloo|nccl|mpi|hccl|xccl|ucc)\b|ProcessGroup(Gloo|NCCL)\b"""
                     r"|\bNCCL (INFO|WARN)\b")
#: A run's own report that it finished, looked for only near the end of each file (the last block's tail) and used
#: only where the logs show no failure at all, to tell a completed run from one whose logs stop while it hangs:
#: transformers' Trainer ("Training completed. Do not forget to share your model ...", and the final metrics'
#: ``'train_runtime':``; trainer.py), Lightning's "`Trainer.fit` stopped: `max_epochs=5` reached." (loops/fit_loop.py)
#: and EarlyStopping's "Signaling Trainer to stop." (callbacks/early_stopping.py), torchelastic's agent "[default]
#: worker group successfully finished." and "Local worker group finished (SUCCEEDED)" (elastic/agent/server/api.py),
#: DeepSpeed's launcher "Process 4242 exits successfully." (launcher/launch.py), fairseq's "done training in 61.2
#: seconds" (fairseq_cli/train.py), Megatron's "[after training is done] datetime: ..." (training.py).
COMPLETION_VENDOR = (
    r"Training completed\. Do not forget to share|'train_runtime': |`Trainer\.fit` stopped: `max_(?:epochs|steps|time)="
    r"|Signaling Trainer to stop\.|worker group successfully finished|[Ww]orker group finished \((?:WorkerState\.)?SUCCEEDED\)"
    r"|Process \d+ exits successfully\.|done training in \d|\[after training is done\]"
    # ms-swift's pipeline after its run() returned (swift/llm/base.py SwiftPipeline.main: "End time of running main: ...")
    r"|End time of running main: "
)
#: A script's own words for the same ("Training finished", "training completed in 3h", "Done training."): counted
#: unless the line says the opposite or reports an iteration ("waiting until training is done", Ray Tune's
#: "Training finished iteration 3").
COMPLETION_WORDS = (r"(?i)\b(?:training|train) (?:is |has )?(?:finished|completed?|done)\b"
                    r"|\b(?:finished|done|completed) training\b"
                    # the run's closing report of its final score ("Done! Final validation accuracy 0.9870")
                    r"|\bfinal (?:validation|val|test|eval(?:uation)?) (?:accuracy|acc|loss|score|metrics?|results?)\b")
_COMPLETION_FAST = re2.compile(("(?:" + COMPLETION_VENDOR + ")|(?:" + COMPLETION_WORDS + ")").encode())
_COMPLETION_VENDOR_RE = re.compile(COMPLETION_VENDOR)
_COMPLETION_NOT = re.compile(r"(?i)\b(?:not|until|before|unless|when|once|if|wait\w*)\s+(?:the\s+)?(?:training|train)\b"
                             r"|\b(?:finished|completed?|done)\s+iteration|\bnot\s+(?:finished|completed?|done)\b")
#: A step counter at its declared total on the file's last step line (``step 600/600``, ``iter 1000/1000``); not an
#: epoch's own counter (``Epoch 2 Batch 180/180`` ends every epoch). Looked for in the last 4 KiB of a file.
_STEP_AT_TOTAL = re.compile(r"(?i)\b(?:step|iter(?:ation)?)\s*[:=#]?\s*\[?\s*(\d+)\s*/\s*(\d+)\b(?!\s*[%/])")
#: ... unless the epoch is at its total too (``Epoch [4/4], Step [150/150]``: the last step of the last epoch)
_EPOCH_AT_TOTAL = re.compile(r"(?i)\bepoch\s*[:=#]?\s*\[?\s*(\d+)\s*/\s*(\d+)\b")
COMPLETION_TAIL_BYTES = 4096


def completion_mark(tail: bytes) -> tuple[str, int] | None:
    """The last line of ``tail`` (a file's last bytes, UTF-8) in which the run reports its own completion
    (:data:`COMPLETION_VENDOR`, :data:`COMPLETION_WORDS`, or its step counter at the declared total), its first 300
    characters, and the number of newlines in ``tail`` before it; else None."""
    found = None
    for m in _COMPLETION_FAST.finditer(tail):
        a = tail.rfind(b"\n", 0, m.start()) + 1
        b = tail.find(b"\n", m.end())
        line = tail[a : b if b >= 0 else len(tail)].decode("utf-8", "replace").strip()
        if _COMPLETION_VENDOR_RE.search(line) or not _COMPLETION_NOT.search(line):
            found = (line, a)
    if found is not None:
        return found[0][:300], tail.count(b"\n", 0, found[1])
    cut = max(0, len(tail) - COMPLETION_TAIL_BYTES)
    end = tail[cut:].decode("utf-8", "replace")
    lines = end.splitlines()
    steps = [i for i, ln in enumerate(lines) if _STEP_AT_TOTAL.search(ln)]
    last = lines[steps[-1]] if steps else ""
    e = _EPOCH_AT_TOTAL.search(last) if steps else None
    if steps and ("epoch" not in last.lower() or (e is not None and e.group(1) == e.group(2))):
        m = list(_STEP_AT_TOTAL.finditer(last))[-1]
        if m.group(1) == m.group(2) and int(m.group(2)) >= 10:
            return last.strip()[:300], tail.count(b"\n", 0, cut) + steps[-1]
    return None


#: The last line nccl-tests prints when a benchmark ran through every size (src/common.cu: ``# Avg bus bandwidth    :
#: 12.3456``, GB/s), and its data check before it (``# Out of bounds values : 0 OK``, or ``N FAILED``); after whatever
#: a collector or launcher puts in front of a line (``kubectl logs --timestamps``' stamp, ``[1,0]<stdout>:``, ``0: ``).
_BENCH_AVG = re.compile(r"^[^#\n]{0,80}# Avg bus bandwidth\s*: *([0-9.]+(?:e[-+]?\d+)?)\s*$", re.M)
_BENCH_OOB = re.compile(r"^[^#\n]{0,80}# Out of bounds values\s*: *(\d+) (OK|FAILED)\s*$", re.M)


#: A world-size banner of the job's own output (scripts print ``world_size=4``; torchrun's environment is
#: ``WORLD_SIZE``; ``world size: 4``): the number of processes the job was started with.
STATED_WORLD = re.compile(r"(?<![Ll]ocal )(?<!LOCAL )\b(?:world_size|world size|WORLD_SIZE|World size)\s?[=:]\s?(\d{1,6})\b")
STATED_WORLD_BYTES = re.compile(STATED_WORLD.pattern.encode("ascii"))
#: a yearless time more than this far ahead of the clock is read in the year before (clock skew between hosts)
FUTURE_SLACK_S = 2 * 86400.0
#: a worker's file of a later attempt in torchrun's --log-dir tree (``<run id>/attempt_1/0/stderr.log``)
LATER_ATTEMPT = re.compile(r"(?:^|/)attempt_[1-9]\d*/\d+/(?:stderr|stdout)\.log$")
#: how this tool's live agent (``diag watch``) starts its own messages on stderr: not the job's lines
OWN_AGENT_PREFIX = "[diag watch] "
#: a rank's banner "rank 2/3 started", "[Rank 0/8]", "rank=1/4": the rank out of the world size (not "local rank")
RANK_OF_WORLD = re.compile(r"(?<![Ll]ocal )(?<![Ll]ocal_)\b[Rr]ank[ =:]?\s?(\d{1,6})\s?/\s?(\d{1,6})\b(?![/.]\d)")
RANK_OF_WORLD_BYTES = re.compile(RANK_OF_WORLD.pattern.encode("ascii"))


def launch_world(text: str) -> int | None:
    """The job's number of processes from a launch command in ``text`` (:data:`LAUNCH_NPROC`, :data:`LAUNCH_ACCEL`),
    or None when there is none, its node count is a range, or it is more ranks than ``LIMITS.max_rank`` allows."""
    m = LAUNCH_NPROC.search(text)
    if m is not None:
        nodes = LAUNCH_NNODES.search(m.group(0))
        if nodes is not None and nodes.group(2):
            return None
        n = int(m.group(1)) * (int(nodes.group(1)) if nodes is not None else 1)
    else:
        m = LAUNCH_ACCEL.search(text)
        n = int(m.group(1)) if m is not None else 0
    return n if 0 < n <= LIMITS.max_rank + 1 else None


def benchmark_line(tail: str) -> str | None:
    """The summary of an nccl-tests run in ``tail`` (a file's last characters) that went through every size and
    whose data check passed: ``"Avg bus bandwidth 0.51 GB/s"``; None when there is no such line, or the check
    reported wrong values (a correctness failure, not a completed benchmark)."""
    avg = list(_BENCH_AVG.finditer(tail))
    if not avg:
        return None
    oob = list(_BENCH_OOB.finditer(tail))
    if oob and oob[-1].group(2) != "OK":
        return None
    return f"Avg bus bandwidth {float(avg[-1].group(1)):.3g} GB/s"


def _last_block_mark(marks: dict[str, str], path: str, line: str | None) -> None:
    """Keep ``line`` as ``path``'s mark (first 4,096 files), or drop the mark when this block has none: a file's
    mark counts only from its last block read."""
    if line is None:
        marks.pop(path, None)
    elif path in marks or len(marks) < 4096:
        marks[path] = line


#: A line reporting a training step's result: a loss value in the forms of the common trainers (Hugging Face's
#: ``{'loss': 2.04``, Megatron's ``lm loss: 2.3E+00``, Lightning's ``loss=2.31``, nanoGPT's ``iter 100: loss
#: 2.34``, torchtitan's ``loss: 7.9``) or DeepSpeed's ``step=10, skipped=6``. A job that printed one trained
#: before it failed; data-preparation progress bars print none.
#: Also a named loss of RL and multi-task trainers (OpenRLHF's tqdm postfix ``act_loss=0.0466``, ``policy_loss``,
#: ``critic_loss``).
TRAINING_LINE = (
    r"""(?i)(?:['"]?\b(?:lm |train(?:ing)?_?|total_?|avg_?|mean_?|[a-z]{1,16}_)?loss['"]?\s*[:=]\s*|\bloss\s+)"""
    r"[-+]?(?:\d+(?:\.\d+)?(?:e[-+]?\d+)?|nan|inf)\b|\bstep=\d+, skipped=\d+"
)
TRAINING_FAST = re2.compile(TRAINING_LINE)
#: A step counter's line shape: the line with every run of digits masked, so that ``rank 0 epoch 0 step 0`` and
#: ``rank 1 epoch 0 step 20`` are one loop's lines (first :data:`STEP_SHAPE_CHARS` characters; at most
#: :data:`STEP_SHAPE_MAX` shapes are kept). Read on the progress lines the extractor samples (``_progress``).
STEP_SHAPE_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")
STEP_SHAPE_CHARS = 160
STEP_SHAPE_MAX = 4096
#: A checkpoint written at a step or iteration after the first (``saved /mnt/ckpt/step_000050.pt``, Trainer's
#: ``Saving model checkpoint to out/checkpoint-500``, DeepSpeed's ``global_step500``, Megatron's ``saving checkpoint
#: at iteration 100``): the job trained before it (its save lines in transformers, DeepSpeed and Megatron-LM).
STEP_SAVED = (
    r"(?i)\b(?:sav(?:ed|ing)|wr(?:ote|iting))\b[^\n]{0,160}?\b(?:global_)?(?:step|checkpoint|iter(?:ation)?|ckpt)"
    r"(?:[-_]|\s*[=:]?\s*)0*[1-9]\d*\b"
)
STEP_SAVED_FAST = re2.compile(STEP_SAVED)
#: At most this many of a block's save words, from its end, are read for a checkpoint save with a time.
SAVE_LINES = 16
SAVES_KEPT = 256

STEP_SAVED_RE = re.compile(STEP_SAVED)
#: A run starting from a step's checkpoint (``Resuming from checkpoint at step 500``, Trainer's ``Continuing training
#: from global step 500``, DeepSpeed's ``loading checkpoint ... global_step500``, Megatron's ``successfully loaded
#: checkpoint from ... at iteration 1000``, Lightning's ``Restoring states from the checkpoint path at
#: .../epoch=3-step=5000.ckpt``, torchtitan's ``Loading the checkpoint at step 500``): the checkpoint a restart goes
#: back to when nothing is saved after it. Not HF's ``Loading checkpoint shards: 2/2`` (no step).
RESUMED_FROM = re.compile(
    r"(?i)\b(?:resum(?:e|ed|es|ing)|continuing training|load(?:ed|ing)|restor(?:e|ed|es|ing))\b[^\n]{0,200}?"
    r"\b(?:global_)?(?:step|iter(?:ation)?|ckpt|checkpoint)(?:[-_=]|\s*[=:]?\s*)0*([1-9]\d{0,11})\b"
)
#: a save reported done (``saved``, ``wrote``), not begun (``Saving``, ``writing``: the failure may be in it)
_SAVE_DONE = re.compile(r"(?i)(?:saved|wrote)\b")
#: a line about resuming or loading a step's state, not a step taken (Trainer's "Continuing training from global
#: step", DeepSpeed's "loading checkpoint ... global_step500", Megatron's "loaded checkpoint ... at iteration"),
#: or a count of steps to take (a Trainer header's "Total optimization steps = 1,000")
_RESUME_WORDS = re.compile(
    r"(?i)\b(?:resum(?:e|ed|es|ing)|continu(?:e|ed|es|ing)|load(?:s|ed|ing)?|restor(?:e|ed|es|ing)|skipp(?:ed|ing)"
    r"|total (?:optimization |training )?steps|max_steps|num_steps|steps_per)\b"
)
#: Marks of the scheduler a log was written under (Slurm's srun/slurmstepd lines and variables, the
#: Kubernetes kubelet's and the Kubeflow operator's words, Volcano's job kinds, Ray Train's actors): which platform's commands
#: a recovery plan should give when the caller did not say.
PLATFORM_MARKS = {
    "slurm": ("srun: ", "slurmstepd", "SLURM_JOB_ID", "SLURM_PROCID", "sbatch: "),
    "kubernetes": ("kubectl ", "kubelet", "OOMKilled", "PyTorchJob", "training.kubeflow.org"),
    "volcano": ("volcano.sh", "vcjob", "vcctl "),
    # Ray Train's worker and controller actors, as Ray prefixes their output (``(RayTrainWorker pid=...)``)
    "ray": ("(RayTrainWorker pid=", "(TrainController pid=", "ray.train.", "TorchTrainer"),
}
#: Slurm's job id in its own lines: slurmstepd's ``*** JOB 48213 ON gpu-node-001 CANCELLED AT ...`` / ``*** STEP 48213.0
#: ON ...``, ``Detected 1 oom_kill event in StepId=48213.0``, ``srun: job 48213 queued and waiting for resources``,
#: ``SLURM_JOB_ID=48213`` in a dumped environment; and a batch job's output file ``slurm-48213.out`` (sbatch's default
#: name, ``slurm-%j.out``; an array task's ``slurm-%A_%a.out``).
SLURM_JOB_ID = re.compile(
    r"\*\*\* (?:JOB|STEP) (\d{1,12})(?:[._]\d+)? ON \S+ CANCELLED|\bStepId=(\d{1,12})[._]"
    r"|^srun: job (\d{1,12}) (?:queued|has been allocated)|\bSLURM_JOB_ID=(\d{1,12})\b", re.MULTILINE
)
SLURM_OUT_NAME = re.compile(r"slurm-(\d{1,12}(?:_\d{1,9})?)\.out")
#: The Kubernetes namespace a log states (in a block that carries a Kubernetes mark): ``kubectl describe``'s
#: ``Namespace:    ml-train`` line, or a structured ``namespace=team-nlp`` / ``"namespace": "team-nlp"`` field; a DNS-1123
#: label (Kubernetes' rule for namespace names).
K8S_NAMESPACE = re.compile(
    r"^Namespace:\s+([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)\s*$"
    r"|\bnamespace\"?\s*[=:]\s*\"?([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)(?![-\w.])", re.MULTILINE)
#: Any mark of any platform: one re2 pass over a window instead of a substring search per mark
ANY_PLATFORM_MARK = re2.compile("|".join(re2.escape(m) for marks in PLATFORM_MARKS.values() for m in marks))
JOB_WINDOW = 64 << 10
#: How much of each block's end is read for each rank's last lines (:meth:`Extractor._last_lines`): a rank that went
#: quiet while its peers kept writing for longer than this keeps the last lines an earlier block showed.
LAST_LINES_BYTES = 32 << 10
#: Where a file's start time is looked for (:attr:`~diag_service.contracts.ProgressLog.file_start`): its first lines.
FILE_START_LINES = 40
FILE_START_BYTES = 16 << 10
#: A rank's lines of a block's tail window looked at for its last ones (the latest by time when every one has a time).
LAST_LINES_SCAN = 64
#: Lines kept per rank (:attr:`~diag_service.contracts.ProgressLog.last_lines`), and characters kept of each (a
#: progress bar's last redraw only).
LAST_LINES = 3
LAST_LINE_CHARS = 300
#: every platform mark, in order
_PLATFORM_MARK_LIST = tuple(m for marks in PLATFORM_MARKS.values() for m in marks)
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.max_mem = 64 << 20
#: The pre-filter's options: only where a match starts is read, so no group is captured. With the catalogue's
#: ~750 patterns the union holds hundreds of groups, and RE2 ran its submatch engine over every match to fill
#: them: about 10 us per match, 0.7 s for the ~70,000 matches of the bench bundle's failure cascade.
#: Its memory budget bounds the DFA's state cache, and each state grows with the union's program (~114,000
#: instructions for ~850 catalogue patterns): at 64 MiB the cache thrashed on text of many distinct lines (the
#: corpus dev logs, 0.5 MB: 2.5 s a scan, the second as slow as the first); at 256 MiB the first scan takes 0.6x
#: as long, a second one (a service's later requests) 0.01x, for +69 MiB of resident cache against +28
#: (``eval/bench/bench_prefilter.py``; RE2 allocates the cache as it needs it).
_SCAN_OPTIONS = re2.Options()
_SCAN_OPTIONS.max_mem = 256 << 20
_SCAN_OPTIONS.never_capture = True
#: the words a save line starts from: the literal scan's marks (:data:`SCAN_MARKS`, found in its one pass over an
#: ASCII block), else this RE2 scan (0.7 GB/s on this host: a second pass over the bench bundle cost 0.4 s)
SAVE_MARKS = ("saved", "Saved", "SAVED", "saving", "Saving", "SAVING", "wrote", "Wrote", "writing", "Writing",
              # a run resuming from a checkpoint: what a restart goes back to when nothing was saved after it
              "Resum", "resum", "RESUM", "Continuing training", "oading checkpoint", "oaded checkpoint",
              "oading the checkpoint", "Restor", "restor")
SAVE_WORD_FAST = re2.compile("|".join(re2.escape(m) for m in SAVE_MARKS), _SCAN_OPTIONS)
PREFILTER_FAST = re2.compile("(?m)" + PREFILTER.pattern, _SCAN_OPTIONS)
#: the alternatives of each pre-filter union built here, by its pattern (for literal_scan.LiteralScan)
_UNION_PARTS: dict[str, tuple[str, ...]] = {PREFILTER_FAST.pattern: PREFILTER_PARTS}
_LITERAL_SCANS: dict[str, LiteralScan | None] = {}


def _literal_cache_dir() -> Path | None:
    """Where built literal scans are kept (``<cache>/literal_scan``, :func:`diag_service.resources.cache_home`)."""
    try:
        from diag_service.resources import cache_home

        return cache_home() / "literal_scan"
    except Exception:  # noqa: BLE001 - no cache folder: build each time
        return None


def literal_scan_for(prefilter: re2._Regexp) -> LiteralScan | None:
    """The :class:`~diag_service.extract.literal_scan.LiteralScan` of a pre-filter union built here (once per
    process), or None: ``hyperscan`` is not installed, the union is not one of this module's, or one of its
    alternatives cannot be scanned so (the RE2 scan then stays)."""
    key = prefilter.pattern
    if key in _LITERAL_SCANS:
        return _LITERAL_SCANS[key]
    parts = _UNION_PARTS.get(key)
    scan = None
    if parts is not None and literal_scan_available():
        try:
            scan = LiteralScan.cached(list(parts), _literal_cache_dir(), marks=SCAN_MARKS)
        except Exception:  # noqa: BLE001 - any refusal (Hyperscan's compile errors included) keeps the RE2 scan
            scan = None
    for old in list(_LITERAL_SCANS)[:-7]:  # as many as prefilter_with keeps unions
        _LITERAL_SCANS.pop(old, None)
    _LITERAL_SCANS[key] = scan
    return scan


_LOOKAROUND = re.compile(r"\(\?<?[=!]|\\[1-9]")
#: A line-start anchor at the front of a catalogue pattern, bare or inside the group the catalogue wraps each pattern
#: in (``(?:^...)``, ``(?i:^...)``): the pre-filter runs on raw lines, where a writer's tag, a collector's stamp or a
#: task label may stand before the text the signature then reads.
_UNANCHOR = re.compile(r"^((?:\(\?[aiLmsux]*:)?)\^")
#: Leading white space of a catalogue pattern (``^\s*Failed ...``, once unanchored): left in the pre-filter, RE2's
#: leftmost match of ``\s*Failed`` starts at the previous line's newline, and that line, not the one holding the
#: text, became the candidate. Dropped, the pre-filter still finds every line the pattern matches (a superset).
_LEADING_SPACE = re.compile(r"^((?:\(\?[aiLmsux]*:)?)\\s[*+]")


@lru_cache(maxsize=8)
def prefilter_with(extra: tuple[str, ...]) -> re2._Regexp:
    """:data:`PREFILTER` extended by ``extra`` regexes (a signature catalog's patterns), as one re2.

    A pattern re2 cannot compile (look-arounds) or that would only match at a line start is
    skipped or unanchored: the pre-filter may find more candidates than the signatures match, never
    fewer, so every catalogue entry reaches the signature stage.
    """
    parts = list(PREFILTER_PARTS)
    # re2 has no look-arounds or back-references (and would log its refusal to stderr)
    wanted = [q for q in (_LEADING_SPACE.sub(r"\1", _UNANCHOR.sub(r"\1", p)) for p in extra)
              if not _LOOKAROUND.search(q)]
    try:
        # Each pattern compiles in Python (the catalogue checks it), so its brackets balance and an re2 syntax error
        # in it is one in the union too: when the union compiles, so does each of them alone, and the ~800 single
        # compiles (~60 ms of every start) are spared
        union = re2.compile("(?m)" + "|".join(parts + wanted), _SCAN_OPTIONS)
        parts += wanted
    except re2.error:
        for p in wanted:
            try:
                re2.compile(p, _RE2_OPTIONS)
            except re2.error:
                continue
            parts.append(p)
        union = re2.compile("(?m)" + "|".join(parts), _SCAN_OPTIONS)
    _UNION_PARTS[union.pattern] = tuple(parts)
    return union


PROGRESS_FAST = re2.compile(PROGRESS_PATTERN, _RE2_OPTIONS)
_PROGRESS_START = start_finder(PROGRESS_FAST)
#: A literal searched in a block's UTF-8 bytes: an ASCII literal is in the bytes exactly when it is in the text,
#: and re2 finds it at about 20 GB/s where ``str.__contains__`` ran at 2.8 (4 MiB console block without it)
_NCCL_INFO = re2.compile(b"NCCL INFO")
#: the raylet's report of a dead worker names its process (``... Worker PID: 6517 Worker exit type: SYSTEM_ERROR``)
_RAYLET_DEAD_PID = re.compile(r"Worker PID: (\d+)")
#: Ray Train's statements of which worker process holds which rank: a worker's ``Setting up process group for:
#: env:// [rank=R, world_size=W]`` (ray/train/torch/config.py) and the train controller's worker table
#: ``- (ip=A, pid=P) world_rank=R, local_rank=L, node_rank=N`` (Ray Train v2); and a Ray actor's line from DeepSpeed's
#: ``log_dist``, which states the writer's own rank (``[logging.py:96:log_dist] [Rank 0] ...``: deepspeed/utils/
#: logging.py, ``"[Rank {}] {}".format(my_rank, message)``; ``-1`` before the process group exists, not read), as
#: Ray-based trainers (OpenRLHF, verl) run DeepSpeed inside actors.
RAY_WORKER_RANK = re.compile(
    r"\((?:[\w.:<>-]+ )?pid=(\d+)(?:, ?ip=[\w.:-]+)?\)[^\n]{0,200}?"
    r"Setting up process group for: \S+ \[rank=(\d+), world_size=\d+\]"
    r"|\(ip=[\w.:-]+, pid=(\d+)\) world_rank=(\d+)"
    r"|\((?:[\w.:<>-]+ )?pid=(\d+)(?:, ?ip=[\w.:-]+)?\)[^\n]{0,200}?:log_dist\] \[Rank (\d+)\]"
)
#: torchrun ``--tee`` prefix then torch's ``[rankN]:`` prefix (torch >= 2.2 writes it on every traceback line of a
#: worker): the role's local rank and the global rank on one line; the role ``rank`` itself is not a role
_ROLE_RANK_AHEAD = re.compile(rb"\[(?!rank\d)[A-Za-z_][A-Za-z_]*?(\d{1,6})\]:\[rank(\d{1,6})\]:")
#: bytes of a block searched for those prefixes (a block is at most a few MiB; the prefixes of a traceback are many)
OFFSET_AHEAD_BYTES = 8 << 20
#: Literals every match of RAY_WORKER_RANK holds one of: a block without them is not searched with it (looked for in
#: the literal scan's own pass over an ASCII block, LiteralScan's ``marks``)
RAY_MARKS = ("process group for: ", ") world_rank=", ":log_dist] [Rank ")
#: The literals the literal scan also reports where it finds them (LiteralScan's ``marks``): Ray's rank statements
#: and the platform marks, each otherwise searched for over the block or its head and tail windows
SCAN_MARKS = RAY_MARKS + _PLATFORM_MARK_LIST + SAVE_MARKS
#: a line that opens with a full date, after any bracketed writer prefixes (``2024-11-14 09:00:08``,
#: ``[rank0]:[2024-11-14 09:00:08,897]``, DeepSpeed's and accelerate's ``[2024-11-14 09:00:08,897] [INFO]``): the
#: year glog lines (``E1114 09:00:08.123``, no year) are read in. A date later in a line may be a message's own.
LEAD_DATE = re.compile(r"(?:\[[^\[\]\n]{0,32}\]:?\s?)*\[?((?:19|20)\d\d)[-/]\d\d[-/]\d\d[ T]\d\d:\d\d")
LEAD_DATE_BLOCK = re2.compile(b"(?m)^" + LEAD_DATE.pattern.encode())  # the same, at every line start of a block
#: ... or, with no such line, the date of torchelastic's failure table (``  time      : 2024-08-14_13:16:02``,
#: torch/distributed/elastic/multiprocessing/errors/__init__.py): a paste of glog lines (``E814 13:15:58``) above the
#: table was read in today's year and the table in its own, "events span 730 days" (trial 39 r15)
ELASTIC_TIME_BLOCK = re2.compile(rb"(?m)^\s*(?:\[\w+\]:)?\s*time\s*:\s*((?:19|20)\d\d)-\d\d-\d\d_\d\d:\d\d")
#: how far into a file's first block the year is looked for before its lines are read
YEAR_SCAN_BYTES = 1 << 16

EXCEPTION_LINE = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure|Warning|Timeout)\b(?::|$)"
)
#: An exception line with an empty message (``RuntimeError:``), whose text follows on the next line.
BARE_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\s*:\s*$")
#: The header PyTorch's ExceptionWrapper (torch/_utils.py) puts inside a re-raised DataLoader worker exception's
#: message: "Caught X in DataLoader worker process N.\nOriginal Traceback (most recent call last): ...".
WRAPPED_TRACEBACK = "Original Traceback (most recent call last)"
CHAINED = re.compile(r"^(?:During handling of the above exception|The above exception was the direct cause)")
#: A line after a traceback's frames that cannot be its exception line: it starts with a digit (an exception
#: line starts with the exception's type name, an identifier) and names no exception, e.g. lspci or
#: nvidia-smi output pasted after a cut traceback. The traceback ends there, incomplete.
NOT_AN_EXCEPTION_LINE = re.compile(r"^\d(?!.*(?:Error|Exception|Exit|Interrupt|Killed)\b)")
CPP_FRAME = re.compile(r"^frame #\d+:")
GLOG_HEADER = re.compile(r"^\[?[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+(?: +\d+)?(?: [\w./-]+:\d+)?\]\s*")
#: a glog header at warning severity (``W1114 09:00:08.013196468 socket.cpp:752]``, optionally bracketed) or c10's
#: older ``[W socket.cpp:601]``: PyTorch's C++ code logs retried operations this way
GLOG_WARNING = re.compile(r"^\[?W\d{4} \d\d:\d\d:\d\d|^\[W [\w.]+:\d+\]")
#: a line whose logger says it is informational: glog ``I1204 16:54:11``, vLLM's ``INFO 07-17 23:41:30``, Python
#: logging's ``2024-11-14 09:00:08,907 - name - INFO - `` / ``[2024-11-14 09:00:08,907] [INFO]`` / ``INFO:name:``,
#: loguru's ``| INFO |``
INFO_LINE = re.compile(
    r"^(?:\[?I\d{4} \d\d:\d\d:\d\d|INFO[: ]|\[INFO\]"
    r"|\[?\d{4}-\d\d-\d\d[ T][\d:.,]+\]?\s*(?:-\s*\S+\s*-\s*INFO\b|\[INFO\]|\|\s*INFO\s*\||INFO\b))"
)
LEVEL_HEADER = re.compile(r"^(?:\[?(?:INFO|WARNING|WARN|ERROR|CRITICAL|DEBUG|FATAL)\]?[\s:|-]+)+")
#: py-spy's thread header (its native thread id in decimal, or in hex as older py-spy and macOS print it: ``Thread
#: 0x7FA6E7C01740 (idle): "MainThread"``; the hang analyzer's ``PYSPY_THREAD`` reads both) or gdb's ``Thread 2
#: (Thread 0x7f... (LWP N))`` (``thread apply all bt`` on a process), or the innermost frame of a gdb / pstack backtrace
#: (``#0  0x00007f87915e4ce3 in MPIC_Wait () from libmpi.so.12``, ``#0  syscall () at ...``): taken of a live
#: process, attached while it hung, unless the logs show it ended (public corpus dev: of the 6 pastes with one, 5 are
#: hangs; the sixth shows its process's SIGBUS)
STACK_DUMP = re.compile(r"^(?:Thread (?:0x[0-9a-fA-F]+|\d+) \((?:idle|active|gil|Thread 0x[0-9a-fA-F]+ \(LWP \d+\)\))"
                        "|" + GDB_TOP_FRAME + ")")
_ELASTIC_ENTRY = re.compile(r"^\[\d+\]:$")  # an entry's "[1]:" in the failure report's list
ELASTIC_FIELD = re.compile(r"^\s*(time|host|rank|exitcode|error_file|traceback)\s*:\s?(.*)$")
ELASTIC_RANK = re.compile(r"(\d+)\s*\(local[_ ]rank:?\s*(\d+)\)")
ELASTIC_EXIT = re.compile(r"(-?\d+)\s*\(pid:\s*(\d+)\)\s*((?:SIG|Signal)\w*)?")
#: The same report flattened into one line by copying GitHub's rendered table
#: (``rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>``): fields found anywhere.
ELASTIC_INLINE = re.compile(r"(?<!local )(?<!local_)(rank|exitcode|error[_ ]file|traceback)\s*:\s*")
RANK_PREFIX_ALL = re.compile(r"^(?:\d+: )?\[rank(\d{1,6})\]:", re.MULTILINE)
#: RANK_PREFIX_ALL after a newline: led by a literal, so ``re`` jumps between line starts (about 4x faster
#: than trying ``^`` at every offset)
RANK_PREFIX_NL = re.compile(r"\n(?:\d+: )?\[rank(\d{1,6})\]:")
#: Byte versions of patterns run over an ASCII block's bytes (Block.ascii): on ASCII, ``\\d``, ``\\s`` and ``\\b``
#: mean the same for bytes and text, so the matches are the text patterns' matches
RANK_PREFIX_ALL_BYTES = ascii_bytes_pattern(RANK_PREFIX_ALL.pattern, re.MULTILINE)
RANK_PREFIX_NL_BYTES = ascii_bytes_pattern(RANK_PREFIX_NL.pattern)
#: Open MPI's ``--tag-output`` prefix (``[jobid,rank]<stdout>:``, logformat.MPI_PREFIX; ``--timestamp-output``'s ctime
#: text before it is skipped by matching anywhere in the line's first 40 characters)
MPI_RANK_ALL = re.compile(r"^.{0,40}?\[(?:\d{1,9},)?(\d{1,6})\]<std(?:out|err|diag)>:", re.MULTILINE)
MPI_RANK_NL = re.compile(r"\n.{0,40}?\[(?:\d{1,9},)?(\d{1,6})\]<std(?:out|err|diag)>:")
MPI_RANK_ALL_BYTES = ascii_bytes_pattern(MPI_RANK_ALL.pattern, re.MULTILINE)
MPI_RANK_NL_BYTES = ascii_bytes_pattern(MPI_RANK_NL.pattern)
RANK_WINDOW = 128 << 10
#: A launcher starting (again) the job's processes: torchrun prints its OMP_NUM_THREADS banner at every start
#: (torch/distributed/run.py), and torchelastic's agent "will restart worker group" before each restart
#: (torch/distributed/elastic/agent/server/api.py). Two starts in one console are two attempts (a retry loop,
#: --max-restarts): a failure after the second start belongs to the later attempt.
LAUNCH_MARKS = ("Setting OMP_NUM_THREADS environment variable for each process", "will restart worker group")
NRANKS_RE = re.compile(r" rank \d+ nranks (\d+) ")
NRANKS_BYTES = ascii_bytes_pattern(NRANKS_RE.pattern)
#: The launch command when a console shows it (a terminal copied with its prompt, a job script's ``set -x``):
#: torchrun / ``python -m torch.distributed.run|launch`` with ``--nproc-per-node N`` and ``--nnodes M`` (absent: one
#: node; an elastic range ``M:K`` gives no size), or ``accelerate launch --num_processes N`` (the total). Read in the
#: first :data:`JOB_WINDOW` of a file's blocks; NCCL's own ``nranks`` wins.
LAUNCH_NPROC = re.compile(
    r"(?:torchrun|torch\.distributed\.(?:run|launch))\b[^\n]{0,500}?--nproc[-_]per[-_]node[= ](\d{1,5})\b[^\n]*")
LAUNCH_NNODES = re.compile(r"--nnodes[= ](\d{1,5})(:\d+)?\b")
LAUNCH_ACCEL = re.compile(r"accelerate launch\b[^\n]{0,500}?--num[-_]processes[= ](\d{1,6})\b")
NCCL_ORIGIN_BYTES = ascii_bytes_pattern(NCCL_ORIGIN.pattern)
WORK_RE = re.compile(r"WorkNCCL\(SeqNum=(\d+), OpType=(\w+)(?:, NumelIn=(\d+))?")
#: the watchdog's "last completed NCCL work: N" (ProcessGroupNCCL before torch 2.3) or its "PG status: last enqueued
#: work: N, last completed work: M" (since)
LAST_DONE_RE = re.compile(r"last completed (?:NCCL )?work: (\d+)")
#: ProcessGroupNCCL's watchdog's "failure detected by watchdog at work sequence id: N PG status: ..." (torch >= 2.4,
#: ProcessGroupNCCL.cpp) or "Exception (either an error or timeout) detected by watchdog at work: N, last enqueued NCCL
#: work: M, ..." (torch 2.2-2.3): the SeqNum of the collective that failed on this rank, its op not said
WATCHDOG_SEQ_RE = re.compile(r"(?:failure|\(either an error or timeout\)) detected by watchdog at work(?: sequence id)?: (\d+)")
#: ProcessGroupNCCL's "[Rank N]" (or "[PG ID 0 PG GUID 0(default_pg) Rank N]") before its report
WATCHDOG_RANK = re.compile(r"\[(?:PG [^\]]{0,80}?)?Rank (\d{1,6})\]")
#: NCCL INFO lines that state the writing process's own rank, with the ``host:pid:tid [dev]`` origin
#: NCCL puts before every line (src/include/debug.h): the communicator init line
#: (``comm 0x.. rank R nranks N cudaDev D ...``, init.cc) and a channel / ring connection line
#: (``Channel 00/0 : R[dev] -> P[dev] via ...``; transport/*.cc print it from the connecting rank,
#: except NET's ``[receive]`` side, which prints ``peer -> R``).
NCCL_SELF_RANK = re.compile(
    r"\] NCCL INFO (?:"
    r"comm 0x[0-9a-f]+ rank (\d+) nranks (\d+)"
    r"|(?:Channel|Ring) \d+(?:/\d+)? : (\d+)(?:\[[0-9a-fx]+\])? -> (\d+)(?:\[[0-9a-fx]+\])?( \[receive\])?)"
)
#: torchelastic's agent line for a worker that exited (torch/distributed/elastic/multiprocessing/api.py).
AGENT_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)")
#: Open MPI's mpirun/mpiexec (help-orterun.txt ``orterun:non-zero-exit``: "... detected that one or more processes
#: exited with non-zero status, thus causing the job to be terminated. The first process to do so was:" then
#: "Process name: [[jobfamily,job],vpid]" and "Exit code: N", vpid being the MPI_COMM_WORLD rank) and horovodrun's
#: Gloo launcher (horovod/runner/gloo_run.py, the same words with "Process name: <rank>").
FIRST_PROCESS = "The first process to do so was"
FIRST_PROCESS_NAME = re.compile(r"Process name:\s*(?:\[\[\d+,\d+\],(\d{1,6})\]|(\d{1,6}))\s*$")
FIRST_PROCESS_EXIT = re.compile(r"Exit code:\s*(-?\d+)\s*$")
FIRST_PROCESS_LINES = 6
#: Horovod's stall inspector (horovod/common/stall_inspector.cc, 0.20 and later) lists the ranks that have not
#: submitted a stalled tensor after "Stalled ranks:" (some releases: "Missing ranks:"), one "rank: [tensor names]"
#: line each, the rank followed by "!" when it has shut down; older versions append "[missing ranks: N]" to each
#: tensor's line instead.
HOROVOD_MISSING = ("Missing ranks:", "Stalled ranks:")
HOROVOD_MISSING_RANK = re.compile(r"\s*(\d{1,6})!?: \[")
HOROVOD_MISSING_LINES = 64
#: Open MPI's report of the process whose abnormal end made it abort the job (help-errmgr-base.txt, "%s noticed that
#: process rank %s with PID %s on node %s exited on signal %d (%s)."; PRRTE's prterun says the same): the first
#: failed process in the launcher's view, named by its MPI_COMM_WORLD rank.
#: Open MPI's other two reports of the process whose end aborted the job: help-mpi-api.txt ``mpi-abort`` ("MPI_ABORT
#: was invoked on rank %d in communicator %s with errorcode %d", the rank being MPI_COMM_WORLD's when the communicator
#: is it or a duplicate of it, "MPI COMMUNICATOR N DUP FROM 0") and help-orterun.txt ``orterun:proc-exit-no-sync``
#: ("%s has exited due to process rank %d with PID %d on node %s exiting improperly").
MPI_ABORT_RANK = re.compile(r"\bMPI_ABORT was invoked on rank (\d{1,6}) in communicator "
                            r"(?:MPI_COMM_WORLD|MPI COMMUNICATOR \d+ DUP FROM 0)\b")
MPI_EXITED_RANK = re.compile(r"\b(?:mpirun|mpiexec|orterun|prterun) has exited due to process rank (\d{1,6}) with PID \d+")
MPI_NOTICED = re.compile(r"\b(?:mpirun|mpiexec|orterun|prterun) noticed that process rank (\d{1,6}) with PID \d+ on node "
                         r"\S+ exited on signal (\d{1,3})")
#: HPE Cray PALS ``mpiexec``'s report of a rank that ended (``<host>: rank N exited with code C``, ``rank N died from
#: signal S [and dumped core]``; ALCF Polaris/Aurora, pmodels/mpich#7569). PALS SIGTERMs the other ranks once one
#: fails, so a report of signal 15 is its teardown, not a first failure (pmodels/mpich#7605: signal 6, then 15).
PALS_RANK = re.compile(r"(?:^|: )rank (\d{1,6}) (?:exited with code (-?\d+)|died from signal (\d{1,3}))")
PALS_TEARDOWN_SIGNAL = "15"
#: MPICH / Intel MPI Hydra's "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES" banner names the process it saw
#: end badly: ``=   RANK 2 PID 28469 RUNNING AT gpu-node-001`` (the lines after it give the exit code or signal;
#: pmodels/mpich src/pm/hydra, mpiexec's exit-status report). Groups: rank, host.
HYDRA_RANK = re.compile(r"^=\s+RANK (\d{1,6}) PID \d+ RUNNING AT (\S+)")
#: Microsoft MPI's ``job aborted:`` table: ``[1] process exited without calling finalize`` is the process that ended
#: on its own, ``[0] terminated`` the ones mpiexec then stopped (MS-MPI's mpiexec error report; CNTK's threads).
MSMPI_EXITED = re.compile(r"^(?:\[(\d{1,6})\] )?process exited without calling finalize$")
#: Python's faulthandler dump after a fatal error: its thread header, and how many lines of it are read.
FAULTHANDLER_THREAD = re.compile(r"^(?:Current thread|Thread) 0x[0-9a-fA-F]+ (?:\[[^\]]*\] )?\(most recent call first\):$")
FAULTHANDLER_MAX_LINES = 40
#: Ray Train's report of a worker actor that died (RayActorError): ``Worker N has failed.``, N the worker's index in
#: the worker group, which is its world rank (ray/train/_internal/utils.py, check_for_failure).
RAY_TRAIN_FAILED = re.compile(r"\bWorker (\d{1,6}) has failed\.\s*$")
#: Launchers' reports of the first process they saw fail, each printed once: Composer's ``Rank N crashed with exit code
#: C.`` (composer/cli/launcher.py: the monitor loop stops at the first crash) and horovodrun's gloo launcher's
#: ``Terminating remaining workers after failure of Process N.`` (horovod/runner/gloo_run.py: printed by the first
#: failure only). N is the global rank.
LAUNCHER_FIRST_CRASH = re.compile(r"(?:^|composer\.cli\.launcher:)Rank (\d{1,6}) crashed with exit code (-?\d+)"
                                  r"|Terminating remaining workers after failure of Process (\d{1,6})\.")
#: PaddlePaddle's ``paddle.distributed.launch`` (python/paddle/distributed/utils/launch_utils.py, watch_local_trainers):
#: ``ABORT!!! Out of all N trainers, the trainer process with rank=[R] was aborted. Please check its log.``, the list
#: being the trainers whose processes had exited with an error at that poll; one rank listed is the first failure.
PADDLE_ABORTED = re.compile(r"ABORT!!! Out of all \d+ trainers, the trainer process with rank=\[(\d{1,6})\] was aborted")

#: A launcher's report of the process it saw fail first, read from one line: (global rank, exit code, signal, the host
#: the line names or None), or None when the line is not one. Arguments: the line's body, the body stripped, the rank
#: the line's own prefix gives (or None).
_FirstFailure = tuple[int, str, str, str | None]


def _mpirun_noticed(body: str, _stripped: str, _rank: int | None) -> _FirstFailure | None:
    m = MPI_NOTICED.search(body)
    return (int(m.group(1)), "", m.group(2), None) if m else None


def _pals_ended(body: str, _stripped: str, _rank: int | None) -> _FirstFailure | None:
    m = PALS_RANK.search(body)
    if m is None or m.group(3) == PALS_TEARDOWN_SIGNAL or m.group(2) == "0":
        return None
    return int(m.group(1)), m.group(2) or "", m.group(3) or "", None


def _hydra_banner(_body: str, stripped: str, _rank: int | None) -> _FirstFailure | None:
    m = HYDRA_RANK.match(stripped)
    return (int(m.group(1)), "", "", m.group(2)) if m else None


def _msmpi_exited(_body: str, stripped: str, rank: int | None) -> _FirstFailure | None:
    m = MSMPI_EXITED.match(stripped)
    if m is None or (m.group(1) is None and rank is None):
        return None
    return int(m.group(1)) if m.group(1) is not None else rank, "", "", None  # type: ignore[return-value]


def _launcher_crash(_body: str, stripped: str, _rank: int | None) -> _FirstFailure | None:
    m = LAUNCHER_FIRST_CRASH.search(stripped)
    return (int(m.group(1) or m.group(3)), m.group(2) or "", "", None) if m else None


def _ray_train_failed(body: str, _stripped: str, _rank: int | None) -> _FirstFailure | None:
    m = RAY_TRAIN_FAILED.search(body)
    return (int(m.group(1)), "", "", None) if m else None


def _paddle_aborted(body: str, _stripped: str, _rank: int | None) -> _FirstFailure | None:
    m = PADDLE_ABORTED.search(body)
    return (int(m.group(1)), "", "", None) if m else None


def _mpi_abort(body: str, _stripped: str, _rank: int | None) -> _FirstFailure | None:
    m = MPI_ABORT_RANK.search(body) or MPI_EXITED_RANK.search(body)
    return (int(m.group(1)), "", "", None) if m else None


#: The launchers' first-failure reports, in the order they are tried: (literals one of which the line must hold, the
#: reader, whether the event takes the line's own time). Each match becomes an ``elastic_summary`` root event, as
#: torchelastic's "first observed failure" (:meth:`Extractor._spawn_first`); the line stays an event of its own.
FIRST_FAILURE_READERS: tuple[tuple[tuple[str, ...], Callable[[str, str, int | None], _FirstFailure | None], bool],
                             ...] = (
    (("noticed that process rank",), _mpirun_noticed, True),
    (("exited with code", "died from signal"), _pals_ended, True),
    (("RUNNING AT",), _hydra_banner, False),
    (("without calling finalize",), _msmpi_exited, False),
    (("crashed with exit code", "after failure of Process"), _launcher_crash, True),
    (("has failed.",), _ray_train_failed, True),
    (("MPI_ABORT was invoked", "has exited due to process rank"), _mpi_abort, True),
    (("trainer process with rank=",), _paddle_aborted, True),
)
#: torch.multiprocessing.spawn's report of the process whose failure ended ``spawn()``/``join()`` (the first
#: one seen failing; PyTorch torch/multiprocessing/spawn.py, ProcessContext.join): ProcessRaisedException's
#: "-- Process N terminated with the following error:" and ProcessExitedException's "process N terminated with
#: exit code C" / "with signal S" (or the line cut right after "terminated with", as pastes cut it: the process is
#: named, its end not). N is the spawn index, the function's first argument: the local rank.
#: Lines from spawn's "-- Process N terminated with the following error:" to the "Traceback" it quotes (the next line,
#: or a few more where a paste put blank lines or the report's own lines in between).
SPAWN_QUOTE_LINES = 5
SPAWN_PROCESS = re.compile(
    r"(?:^-- Process (\d{1,6}) terminated with the following error:|"
    r"\bprocess (\d{1,6}) terminated with(?: exit code (-?\d+)| signal (SIG[A-Z]+)|\s*$))"
)


def _spawn_match(s: str) -> tuple[int, str, str] | None:
    """``(spawn index, exit code, signal)`` of a :data:`SPAWN_PROCESS` report in ``s`` ("" when not given), or None."""
    m = SPAWN_PROCESS.search(s) if "rocess " in s else None  # in both forms ("ProcessGroupNCCL" is not)
    return (int(m.group(1) or m.group(2)), m.group(3) or "", m.group(4) or "") if m else None


ELASTIC_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[_ ](\d{2}):(\d{2}):(\d{2})")


def _inline_fields(s: str) -> dict[str, str]:
    """Fields of a flattened torchelastic report line (see ``ELASTIC_INLINE``); a bare date line
    is the ``time`` field. Returns ``{}`` for any other line."""
    if ELASTIC_TIME.fullmatch(s):
        return {"time": s}
    if s.startswith("rank") and ELASTIC_RANK.match(s, 4):
        s = "rank: " + s[4:]
    marks = list(ELASTIC_INLINE.finditer(s))
    out: dict[str, str] = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(s)
        out[m.group(1).replace(" ", "_")] = s[m.end():end].strip()
    return out


_ROOT_CAUSE = "Root Cause (first observed failure)"
_FLAT_TIME_HOST = re.compile(r"\b(time|host)\s*:\s*(\S+)")


def _flat_root_entry(line: str) -> dict[str, str]:
    """The root entry of torchelastic's failure report flattened onto its ``Root Cause (first observed failure):``
    line (``... [0]: time : 2024-05-01_10:11:12 host : node rank : 3 (local_rank: 3) exitcode : -9 (pid: 1)
    error_file: <N/A> traceback : Signal 9 (SIGKILL) received by PID 1 ====``): its fields up to the report's next
    rule; ``{}`` unless a ``rank : N (local_rank: M)`` or an ``exitcode : N (pid: P)`` field is on the line."""
    at = line.find(_ROOT_CAUSE)
    if at < 0:
        return {}
    tail = line[at + len(_ROOT_CAUSE):]
    for rule in ("====", "----"):
        cut = tail.find(rule)
        if cut >= 0:
            tail = tail[:cut]
    fields = _inline_fields(tail.strip(" :"))
    if not (ELASTIC_RANK.match(fields.get("rank", "")) or ELASTIC_EXIT.match(fields.get("exitcode", ""))):
        return {}
    head = ELASTIC_INLINE.search(tail)
    for m in _FLAT_TIME_HOST.finditer(tail, 0, head.start() if head else len(tail)):
        fields[m.group(1)] = m.group(2)
    return fields


def clean_key(text: str) -> str:
    """Remove a leading timestamp, glog header and log level so that templates group well."""
    text = text.strip()[: MAX_LINE_CHARS + 200]
    for _ in range(2):
        c = text[:1]
        if not c or not (c.isdigit() or c.isupper() or c == "["):
            break
        new = LEADING_TS.sub("", text, count=1)
        new = GLOG_HEADER.sub("", new, count=1)
        new = LEVEL_HEADER.sub("", new, count=1)
        if new == text:
            break
        text = new
    return text[:MAX_LINE_CHARS]


class _BlockReader:
    """Line access inside one block by offset; attribution cached per line text (the cascade's
    tracebacks, frame dumps and backward timestamp searches attribute the same lines many times).

    ``hay`` is what offsets index: an ASCII block's bytes (:attr:`Block.ascii`: the block is never decoded
    whole, only the lines read are), else its text; ``nl`` is the newline of that type."""

    __slots__ = ("block", "hay", "nl", "size", "ascii", "src", "kinds", "data", "_attrs", "_before")

    def __init__(self, block: Block) -> None:
        self.block = block
        self.src = block.source
        self.kinds = block.source.prefixes
        self.ascii = block.ascii
        self.hay: str | bytes
        if block.ascii:
            assert block.data is not None
            self.hay, self.nl, self.data = block.data, b"\n", block.data
        else:
            self.hay, self.nl = block.text, "\n"
            #: the block's UTF-8 bytes, for re2 (see _candidate_lines); equal offsets when ``text.isascii()``
            self.data = block.data if block.data is not None else _utf8(block.text)
        self.size = len(self.hay)
        self._attrs: dict[str, Attribution] = {}
        self._before: dict[int, tuple[Attribution, tuple[int | None, int | None, str | None]]] = {}

    def slice(self, start: int, end: int) -> str:
        """The text at offsets ``[start, end)``."""
        part = self.hay[start:end]
        return part.decode("ascii") if isinstance(part, bytes) else part

    def line_at(self, start: int) -> tuple[str, int]:
        end = self.hay.find(self.nl, start)  # type: ignore[arg-type]
        if end == -1:
            end = self.size
        return self.slice(start, end), end + 1

    def attr(self, line: str) -> Attribution:
        """``attribute()`` of the line (first MAX_LINE_CHARS characters); callers do not modify the result."""
        att = self._attrs.get(line)
        if att is None:
            if len(self._attrs) >= 1 << 16:
                self._attrs.clear()
            att = self._attrs[line] = attribute(line[:MAX_LINE_CHARS], self.kinds)
        return att

    def line_before(self, pos: int) -> tuple[int, Attribution, tuple[int | None, int | None, str | None]]:
        """``(start, attribution, writer)`` of the line that ends just before line start ``pos`` (> 0),
        cached by its start: neighbouring events search back over the same lines."""
        prev = self.hay.rfind(self.nl, 0, pos - 1) + 1  # type: ignore[arg-type]
        got = self._before.get(prev)
        if got is None:
            if len(self._before) >= 1 << 16:
                self._before.clear()
            att = self.attr(self.slice(prev, pos - 1))
            got = self._before[prev] = (att, _who(self.src, att))
        return prev, got[0], got[1]


def _as_str(part: str | bytes) -> str:
    """A piece of a block's text, or of an ASCII block's bytes, as text."""
    return part.decode("ascii") if isinstance(part, bytes) else part


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8 (lone surrogates, which only an in-memory text can hold, passed through)."""
    return text.encode("ascii") if text.isascii() else text.encode("utf-8", "surrogatepass")


def _candidate_lines(regex: re2._Regexp, text: str | bytes, data: bytes) -> Iterator[int]:
    """Character offset in ``text`` of the line start of each ``regex`` match, in order, a line once per run
    of matches on it. ``data`` is ``_utf8(text)``.

    The regex runs over the bytes: google-re2's wrapper encodes a ``str`` to UTF-8 on every call and converts
    each match's byte offsets back to characters from the previous match, which made a ``str`` scan about
    15x slower than the same scan over bytes (2 MB console file, 755-branch pre-filter: 50 ms vs 3 ms).
    The matches are those of ``regex.finditer(text)``; for a non-ASCII block the byte offset of each
    candidate line start (always a character boundary) is turned into a character offset by decoding the
    bytes since the previous one, so the whole block is decoded at most once more.
    """
    last = -1
    if len(data) == len(text):  # ASCII: byte and character offsets agree
        for m in regex.finditer(data):
            ls = data.rfind(b"\n", 0, m.start()) + 1
            if ls != last:
                last = ls
                yield ls
        return
    chars = done = 0
    for m in regex.finditer(data):
        ls = data.rfind(b"\n", 0, m.start()) + 1
        if ls != last:
            last = ls
            chars += len(data[done:ls].decode("utf-8", "surrogatepass"))
            done = ls
            yield chars


def _line_numbers(text: str | bytes, starts: list[int], first_line: int, newlines: int | None = None) -> list[int]:
    """The line number of each line start in ``starts`` (ascending offsets in ``text``): ``first_line`` plus
    ``text.count("\\n", 0, start)``.

    With ``newlines`` (``text.count("\\n")``, which the reader counted) the newlines are counted forward up to
    the widest stretch between neighbouring starts (or the block's ends) and backward from the end after it:
    that stretch, often the whole middle of a console between its start-up warnings and its failure, is not
    counted again.
    """
    n = len(starts)
    split = n
    if newlines is not None and n:
        widest = len(text) - starts[-1]
        if starts[0] > widest:
            split, widest = 0, starts[0]
        for i in range(1, n):
            if starts[i] - starts[i - 1] > widest:
                split, widest = i, starts[i] - starts[i - 1]
    out = [0] * n
    nl = b"\n" if isinstance(text, bytes) else "\n"
    line, at = first_line, 0
    for i in range(split):
        line += text.count(nl, at, starts[i])  # type: ignore[arg-type]
        at = starts[i]
        out[i] = line
    if split < n and newlines is not None:
        line, at = first_line + newlines, len(text)
        for i in range(n - 1, split - 1, -1):
            line -= text.count(nl, starts[i], at)  # type: ignore[arg-type]
            at = starts[i]
            out[i] = line
    return out


def _line_ranks(text: str | bytes, pos: int, endpos: int, mpi: bool = False) -> set[str] | set[bytes]:
    """The rank numbers of ``RANK_PREFIX_ALL.findall(text, pos, endpos)``: the lines starting in
    ``[pos, endpos)`` (``^`` there follows a newline, or is the text's start) with a ``[rankN]:`` prefix
    (``mpi``: Open MPI's ``[jobid,N]<stdout>:`` instead). Over ASCII bytes the numbers are bytes (``int()``
    reads both)."""
    if isinstance(text, bytes):
        nl_re, all_re = (MPI_RANK_NL_BYTES, MPI_RANK_ALL_BYTES) if mpi else (RANK_PREFIX_NL_BYTES, RANK_PREFIX_ALL_BYTES)
    else:
        nl_re, all_re = (MPI_RANK_NL, MPI_RANK_ALL) if mpi else (RANK_PREFIX_NL, RANK_PREFIX_ALL)  # type: ignore[assignment]
    found = set(nl_re.findall(text, pos - 1 if pos > 0 else 0, endpos))  # type: ignore[arg-type]
    if pos == 0:
        m = all_re.match(text, 0, endpos)  # type: ignore[arg-type]
        if m:
            found.add(m.group(1))
    return found


_NOBODY = (None, None, None)
#: What every timestamp parse_timestamp reads holds (ISO_TS, GLOG_TS and SYSLOG_TS all have ``\d\d:\d\d:\d\d``), led
#: by its colon so that ``re`` jumps between colons; the bytes form for an ASCII block's bytes
_CLOCK = re.compile(r":\d\d:\d\d")
_CLOCK_BYTES = re.compile(rb":\d\d:\d\d")


def _compatible(a: tuple, b: tuple) -> bool:
    """Two writers ``(rank, local_rank, node)`` that no field tells apart: each field is unknown on one side
    or equal (``_NOBODY`` is compatible with every writer)."""
    a0, a1, a2 = a  # written out: the backward timestamp search asks this ~200,000 times on the bench's cascade
    b0, b1, b2 = b
    return (a0 is None or b0 is None or a0 == b0) and (a1 is None or b1 is None or a1 == b1) and (
        a2 is None or b2 is None or a2 == b2)


def _who(src: Source, att: Attribution) -> tuple[int | None, int | None, str | None]:
    """Combine path and line attribution. A Slurm task id is a rank unless a finer prefix exists."""
    rank = att.rank if att.rank is not None else src.rank
    local_rank = att.local_rank if att.local_rank is not None else src.local_rank
    node = att.node or src.node
    if att.node is not None and src.node is not None and att.node != src.node and LOOPBACK.match(att.node):
        # torchrun's failure table says ``host : localhost`` on every node: the file's node says which one it was
        node = src.node
    if att.task is not None:
        if rank is None and local_rank is None:
            rank = att.task  # srun -l with one task per GPU: the task id is the rank
        elif node is None and att.task != att.rank and att.rank is None:
            node = f"task{att.task}"  # one torchrun per srun task: the task id is the node index
    return rank, local_rank, node


class Extractor:
    """Stateful extractor; feed blocks in order, then call :meth:`finish`."""

    def __init__(self, progress: ProgressLog, prefilter: re2._Regexp | None = None) -> None:
        self.progress = progress
        self.prefilter = prefilter if prefilter is not None else PREFILTER_FAST
        #: the pre-filter's literal scan (ASCII blocks), looked up once BUILD_AFTER_BYTES have been fed: a small
        #: input does not pay for compiling it
        self._literal: LiteralScan | None = None
        self._fed = 0
        #: the year of glog lines, which print none: this year until a line opening with a full date says
        #: otherwise (each file's first block is searched for one before its lines are read, so the glog lines
        #: above a job's first dated line are read in the job's year, not today's)
        self.year = time.gmtime().tm_year
        self._year_learned = False
        self._starts_seen: dict[str, float | None] = {}  # per file, the time of its launcher's first start line
        self._step_shapes: dict[str, int] = {}  # per step-line shape, the first step counter it showed
        # parse_timestamp(text, year) per (first 120 characters, year): a pure function of those, asked again for
        # the same lines by the backward timestamp search of neighbouring events
        self._ts_cache: dict[tuple[str, int], float | None] = {}
        self._json_buf: dict[str, list[str]] = {}
        # per file (one node's console or one worker's log): global rank minus local rank, learnt from
        # lines that carry both ("[default1]:[rank5]:"); torchrun gives a node's workers contiguous ranks
        self._rank_offset: dict[str, int] = {}
        #: where the last traceback's exception line was (start, line, line number), when it is a launcher's
        #: "The first process to do so was:" (horovodrun raises it as a RuntimeError)
        self._first_in_traceback: tuple[int, str, int] | None = None
        self._spawn_in_traceback: tuple[int, str, str, int] | None = None
        #: (path, line, spawn index) of the last ProcessRaisedException report, for the traceback it quotes next
        self._spawn_quoted: tuple[str, int, int] | None = None
        #: (path, line number, thread name) of the last "Exception in thread NAME:" line, for the traceback after it
        self._thread_exc: tuple[str, int, str] | None = None
        # per NCCL process (host, pid): the (nranks, rank) of its largest communicator (the world's;
        # a sub-communicator's rank is not the global one), and the ranks its connection lines state
        self._nccl_comm: dict[tuple[str, str], tuple[int, int]] = {}
        self._nccl_conn: dict[tuple[str, str], set[int]] = {}
        # the NCCL INFO ranges of the blocks fed so far, not yet parsed: learning is an accumulation in block
        # order, so it can wait until a line without a rank needs it (most bundles never ask); bounded in size
        self._nccl_pending: list[tuple[str | bytes, tuple[str, str] | None]] = []  # bytes: decoded when learnt
        #: Ray Train worker pid -> global rank (:data:`RAY_WORKER_RANK`), for lines behind Ray's ``(name pid=N)``
        self._ray_rank: dict[int, int] = {}
        self._nccl_pending_chars = 0

    # -- helpers -----------------------------------------------------------------------------------

    def _ts(self, text: str) -> float | None:
        """Unix time of a line; lines with a full date also set the year used for glog lines."""
        key = (text[:120], self.year)  # parse_timestamp reads the first 120 characters only
        if key in self._ts_cache:
            ts = self._ts_cache[key]
        else:
            if len(self._ts_cache) >= 1 << 16:
                self._ts_cache.clear()
            ts = self._ts_cache[key] = parse_timestamp(text, self.year)
        if ts is not None and (text[:1].isdigit() or text[:1] == "[") and LEAD_DATE.match(text):
            self.year = time.gmtime(ts).tm_year
            self._year_learned = True
        elif ts is not None and not self._year_learned and ts > time.time() + FUTURE_SLACK_S:
            # a line without a year (glog's "E1229 16:47:25"), read in this year, would be in the future: no log
            # was written then, so it is last year's (a paste from a thread of an earlier December)
            ts = parse_timestamp(text, self.year - 1)
        return ts

    def _ts_before(self, rd: _BlockReader, start: int, who: tuple) -> float | None:
        """Nearest earlier timestamp of the same writer within 40 lines (approximate event time).
        In a file of one process (torchrun's per-rank stderr.log, a per-rank file), every line is
        that writer's, prefixed or not."""
        single_writer = rd.src.rank is not None or rd.src.local_rank is not None
        # The walk's 40 lines are [ws, start). A line gives a time only when it holds a clock (every format
        # parse_timestamp reads, and every collector's stamp attribute() strips, has one; both are parts of the
        # line): only those lines are visited, nearest first, and a window without one has no time (most walks:
        # the bench's start-up NCCL lines)
        hay, nl = rd.hay, rd.nl
        ws = start
        for _ in range(40):
            if ws <= 0:
                break
            ws = hay.rfind(nl, 0, ws - 1) + 1  # type: ignore[arg-type]
        clock = _CLOCK_BYTES if rd.ascii else _CLOCK
        found = [m.start() for m in clock.finditer(hay, ws, start)]  # type: ignore[arg-type]
        last = -1
        for p in reversed(found):
            if p >= last >= 0:  # on the line just visited
                continue
            end = hay.find(nl, p, start)  # type: ignore[arg-type]
            _ls, att, w = rd.line_before(end + 1)
            last = _ls
            if not single_writer and w != who and not _compatible(w, who):
                continue
            ts = self._line_ts(att, att.text)
            if ts is not None:
                return ts
        return None

    def _ts_before_walk(self, rd: _BlockReader, start: int, who: tuple) -> float | None:
        """:meth:`_ts_before` line by line (its definition; the tests hold the fast one to it)."""
        single_writer = rd.src.rank is not None or rd.src.local_rank is not None
        pos = start
        for _ in range(40):
            if pos <= 0:
                return None
            pos, att, w = rd.line_before(pos)
            # skip lines that name another writer; unattributed lines, and lines naming the same writer by fewer
            # fields (torchrun's "[default1]:" worker line beside the same worker's "[default1]:[rank1]:" traceback),
            # do not contradict this one
            if not single_writer and w != who and not _compatible(w, who):
                continue
            ts = self._line_ts(att, att.text)
            if ts is not None:
                return ts
        return None

    # -- main loop ---------------------------------------------------------------------------------

    def feed(self, block: Block) -> Iterator[RawEvent]:
        src = block.source
        if src.path.rsplit("/", 1)[-1] in ("error.json", "error.json.gz"):
            buf = self._json_buf.setdefault(src.path, [])
            if sum(len(x) for x in buf) < 4 << 20:
                buf.append(block.text)
            return
        rd = _BlockReader(block)
        text = rd.hay  # the block's text, or its bytes when ASCII (the same offsets, lines decoded when read)
        asc = rd.ascii
        if not self._year_learned and block.first_line <= 1:
            m_year = LEAD_DATE_BLOCK.search(rd.data[:YEAR_SCAN_BYTES]) or ELASTIC_TIME_BLOCK.search(
                rd.data[:YEAR_SCAN_BYTES])
            if m_year is not None:
                self.year = int(m_year.group(1))
                self._year_learned = True
        self._progress(rd)
        self._launches(rd)
        obs = self.progress
        if block.first_line <= 1 and src.path not in obs.file_start and len(obs.file_start) < 4096:
            # the file's first time (within its first lines): when this console or worker log began
            for first in rd.data[:FILE_START_BYTES].decode("utf-8", "replace").split("\n")[:FILE_START_LINES]:
                if (ts := self._ts(rd.attr(first).text)) is not None:
                    obs.file_start[src.path] = ts
                    # torchrun's --log-dir keeps each attempt of the worker group apart (attempt_0, attempt_1, ...):
                    # a worker file of a later attempt began with the group's restart (--max-restarts)
                    if LATER_ATTEMPT.search(src.path) is not None:
                        # (events' times are compared at millisecond resolution); the attempt's workers' files begin
                        # within a second of each other, the earliest of them when the attempt began (trial 36 r03:
                        # rank 1's file began with its error 0.1 s before its peers' first lines)
                        near = next((i for i, x in enumerate(obs.launches) if abs(x - ts) <= 1.0), None)
                        if near is not None:
                            obs.launches[near] = min(obs.launches[near], ts - 0.001)
                        elif len(obs.launches) < 1024:
                            obs.launches.append(ts - 0.001)
                    break
        if src.rank is not None:
            obs.ranks.add(src.rank)
        if src.node is not None and len(obs.source_nodes) < 4096:
            obs.source_nodes.add(src.node)
        if src.node is not None and len(obs.source_node_files) < 4096:
            obs.source_node_files[src.path] = src.node
        if src.layout == "torchrun_logdir" and src.local_rank is not None and len(obs.launcher_local_ranks) < 4096:
            obs.launcher_local_ranks[src.path] = src.local_rank
        for kind in ("rank", "mpi"):
            if kind in src.prefixes:
                # Writers interleave: three 128 KiB windows per block see every rank of a node's console.
                mid = len(text) // 2
                for a in (0, max(0, mid - RANK_WINDOW // 2), max(0, len(text) - RANK_WINDOW)):
                    obs.ranks.update(int(r) for r in _line_ranks(text, a, a + RANK_WINDOW, mpi=kind == "mpi"))
        if _NCCL_INFO.search(rd.data) is not None:  # == "NCCL INFO" in text (an ASCII literal), at re2's speed
            self._defer_nccl_ranks(text)
        # One linear-time pass finds every candidate, and where the block holds a literal of SCAN_MARKS (when it is
        # ASCII and the literal scan ran; else ``seen`` is None); lines are then handled in order.
        starts, seen = self._candidate_starts(rd)
        # the head and tail of the block suffice for marks that recur: a bounded cost per block
        windows: set[str] | None
        head, tail = text[:JOB_WINDOW], text[-JOB_WINDOW:]
        if asc:
            tail_bytes = tail
            window_bytes = list({head, tail})
            windows = None  # decoded below, when a platform mark is in them (most blocks have none)
        else:
            windows = {head, tail}  # type: ignore[misc]
            tail_bytes = _utf8(tail)  # type: ignore[arg-type]
            window_bytes = [tail_bytes] if head == tail else [_utf8(head), tail_bytes]  # type: ignore[arg-type]
        if not obs.job_output:
            obs.job_output = any(JOB_OUTPUT_FAST.search(t) is not None for t in window_bytes)
        if "nccl" not in obs.backends and len(obs.backends) < 4:  # NCCL settles it: a GPU job
            for t in window_bytes:
                if (b"ackend" in t or b"ProcessGroup" in t or b"NCCL " in t):  # type: ignore[operator]
                    for m in BACKEND.finditer(t.decode("utf-8", "replace")):  # type: ignore[union-attr]
                        name = m.group(1) or m.group(2) or "nccl"
                        obs.backends.add(name.lower())
        # a file's completion counts only from its last block read (a later block without one clears it), unless that
        # block is blank: a file's last line without its newline (a paste's trailing ">" or spaces) comes alone
        if not tail_bytes.isspace():  # type: ignore[union-attr]
            mark = completion_mark(tail_bytes)  # type: ignore[arg-type]
            _last_block_mark(obs.completed, src.path, mark[0] if mark else None)
            if mark is None:
                obs.completed_line.pop(src.path, None)
            elif src.path in obs.completed:
                # the mark's line in its file: the block's first line, the block's lines before its tail, the tail's
                obs.completed_line[src.path] = (block.first_line + text.count("\n" if not asc else b"\n", 0,  # type: ignore[arg-type]
                                                                     len(text) - len(tail)) + mark[1])
            end_bytes = tail_bytes[-COMPLETION_TAIL_BYTES:]  # type: ignore[index]
            bench = benchmark_line(end_bytes.decode("utf-8", "replace")) if b"Avg bus bandwidth" in end_bytes else None
            _last_block_mark(obs.benchmarks, src.path, bench)
        name = src.path.rsplit("/", 1)[-1]
        if name.startswith("slurm-") and name.endswith(".out"):
            obs.platforms["slurm"] += 1
            m_job = SLURM_OUT_NAME.fullmatch(name)
            if m_job is not None and obs.scheduler_job_id is None:
                obs.scheduler_job_id = m_job.group(1)
        if seen is not None:  # a mark wholly inside the head window ends by JOB_WINDOW, in the tail one starts after
            tail = max(0, rd.size - JOB_WINDOW)
            in_window = any(to <= JOB_WINDOW or to - len(m) >= tail for m in _PLATFORM_MARK_LIST for to in seen.get(m, ()))
        else:
            in_window = any(ANY_PLATFORM_MARK.search(t) is not None for t in window_bytes)
        if in_window:  # most blocks have none
            if windows is None:
                windows = {t.decode("ascii") for t in window_bytes}  # type: ignore[union-attr]
            for platform, marks in PLATFORM_MARKS.items():
                if any(mark in t for mark in marks for t in windows):
                    obs.platforms[platform] += 1
                    if platform == "slurm" and obs.scheduler_job_id is None:
                        m_job = next((m for m in map(SLURM_JOB_ID.search, windows) if m is not None), None)
                        if m_job is not None:
                            obs.scheduler_job_id = next(g for g in m_job.groups() if g is not None)
                    if platform == "kubernetes" and obs.k8s_namespace is None:
                        m_ns = next((m for m in map(K8S_NAMESPACE.search, windows) if m is not None), None)
                        if m_ns is not None:
                            obs.k8s_namespace = next(g for g in m_ns.groups() if g is not None)
        if not obs.trained and ((b"oss" in text or b"skipped=" in text) if asc else ("oss" in text or "skipped=" in text)):  # type: ignore[operator]
            obs.trained = TRAINING_FAST.search(rd.data) is not None
        if not obs.trained and ((b"av" in text or b"rot" in text) if asc else ("av" in text or "rot" in text)):  # type: ignore[operator]
            obs.trained = STEP_SAVED_FAST.search(rd.data) is not None
        self._last_save(rd, seen)
        if obs.world_size is None and ((b"nranks" in text) if asc else ("nranks" in text)):  # type: ignore[operator]
            m_world = (NRANKS_BYTES if asc else NRANKS_RE).search(text)  # type: ignore[arg-type]
            if m_world:
                obs.world_size = int(m_world.group(1))
        if obs.launch_world is None and ((b"--n" in head) if asc else ("--n" in head)):  # type: ignore[operator]
            obs.launch_world = launch_world(head if not asc else head.decode("ascii"))  # type: ignore[union-attr,arg-type]
        if obs.stated_world is None and block.first_line <= 1 and (
                (b"orld" in head) if asc else ("orld" in head)):  # type: ignore[operator]
            m_stated = (STATED_WORLD_BYTES if asc else STATED_WORLD).search(head)  # type: ignore[arg-type]
            if m_stated is not None and 0 < int(m_stated.group(1)) <= LIMITS.max_rank + 1:
                obs.stated_world = int(m_stated.group(1))
        if obs.stated_world is None and block.first_line <= 1 and (
                (b"ank" in head) if asc else ("ank" in head)):  # type: ignore[operator]
            # a start-up banner's "rank 2/3": the rank out of the world size (every such line of the head agreeing)
            worlds = {int(m.group(2)) for m in (RANK_OF_WORLD_BYTES if asc else RANK_OF_WORLD).finditer(head)  # type: ignore[arg-type]
                      if int(m.group(1)) < int(m.group(2)) <= LIMITS.max_rank + 1}
            if len(worlds) == 1:
                obs.stated_world = worlds.pop()
        consumed: set[int] = set()
        if src.path not in self._rank_offset and len(self._rank_offset) < 65536 and (
                (b"]:[rank" in text) if asc else ("]:[rank" in text)):  # type: ignore[operator]
            self._offset_ahead(src.path, rd.data)
        if len(self._ray_rank) < 65536 and (
            any(m in seen for m in RAY_MARKS) if seen is not None else any(m.encode() in rd.data for m in RAY_MARKS)
        ):
            for m_ray in RAY_WORKER_RANK.finditer(rd.data.decode("utf-8", "replace")):
                pid, rank_s = next((m_ray.group(i), m_ray.group(i + 1)) for i in (1, 3, 5) if m_ray.group(i))
                self._ray_rank.setdefault(int(pid), int(rank_s))
        self._last_lines(rd, starts)
        for ls, line_no in zip(starts, _line_numbers(text, starts, block.first_line, block.newlines), strict=True):
            if ls in consumed:
                continue
            line, _ = rd.line_at(ls)
            yield from self._handle(rd, ls, line, line_no, consumed)

    def _offset_ahead(self, path: str, data: bytes) -> None:
        """Learn the file's global-minus-local rank offset from the block's ``[default1]:[rank5]:`` prefixes before
        its lines are read, so that a line above the first of them (torchelastic's ``failed (exitcode: -9)
        local_rank: 1``, written before the surviving workers' tracebacks) gets its global rank too. Only when every
        such prefix in the block agrees: a file of several nodes' consoles (``srun -l``) has one offset per node."""
        offsets = {int(m.group(2)) - int(m.group(1)) for m in _ROLE_RANK_AHEAD.finditer(data[:OFFSET_AHEAD_BYTES])}
        if len(offsets) == 1:
            self._rank_offset[path] = offsets.pop()

    def _last_lines(self, rd: _BlockReader, starts: list[int]) -> None:
        """Each rank's last :data:`LAST_LINES` lines in the block's last :data:`LAST_LINES_BYTES` that are not
        failure candidates (``starts``, the pre-filter's line starts) and come before the rank's first failure candidate
        or traceback in the window (after it, its lines report the failure), into ``progress.last_lines``; a rank found
        here replaces what an earlier block said of it. Bounded per block: the window's lines are attributed once each."""
        text, nl = rd.hay, rd.nl
        lo = max(0, rd.size - LAST_LINES_BYTES)
        if lo:
            lo = text.find(nl, lo) + 1  # type: ignore[arg-type]
            if lo == 0:
                return  # one line longer than the window
        bad = set(starts[bisect.bisect_left(starts, lo):])
        line_no = _line_numbers(text, [lo], rd.block.first_line, rd.block.newlines)[0]  # counted back from the end
        last = self.progress.last_lines
        found: dict[int, deque[tuple[int, str]]] = {}
        ended: set[int] = set()  # ranks whose failure began in the window: what follows is its report, not its work
        ls = lo
        for line in rd.slice(lo, rd.size).split("\n"):
            if line.strip():
                att = rd.attr(line.rstrip("\r"))
                rank = self._writer(rd, att)[0]  # the tail is read out of order
                if rank is None or rank in ended:
                    pass
                elif ls in bad or att.text.startswith("Traceback (most recent call last)"):
                    ended.add(rank)
                elif att.text.strip() and (rank in last or rank in found or len(last) < 4096):
                    found.setdefault(rank, deque(maxlen=LAST_LINES_SCAN)).append((line_no, att.text))
            ls += len(line) + 1
            line_no += 1
        for rank, got in found.items():
            lines = [(rd.src.path, n, self._ts(body), body.rsplit("\r", 1)[-1].strip()[:LAST_LINE_CHARS])
                     for n, body in got]
            if all(x[2] is not None for x in lines):
                # the rank's last lines by their own times: a collector that prints a worker's buffered lines late
                # (Ray's de-duplicated worker output) puts earlier lines after the rank's real last one
                lines.sort(key=lambda x: (x[2], x[1]))
            last[rank] = lines[-LAST_LINES:]

    def _candidate_starts(self, rd: _BlockReader) -> tuple[list[int], dict[str, list[int]] | None]:
        """The line starts of the pre-filter's matches in the block (``_candidate_lines``), found through the
        literal scan when the block is ASCII and the scan is available; and where the block holds each literal of
        :data:`SCAN_MARKS` when that scan says (else None)."""
        if self._fed < BUILD_AFTER_BYTES:
            self._fed += rd.size
            if self._fed >= BUILD_AFTER_BYTES:
                self._literal = literal_scan_for(self.prefilter)
        marks = None
        if self._literal is not None and rd.ascii:
            got, marks = self._literal.scan(self.prefilter, rd.data)
            if got is not None:  # None: a match may cross a line in this block, which RE2 then scans
                return got, marks
        return list(_candidate_lines(self.prefilter, rd.hay, rd.data)), marks

    def _progress(self, rd: _BlockReader) -> None:
        """Sample progress lines, at most about 64 per block (evenly spread, the last one kept), so that
        per-step logging on every rank does not dominate the cost; the series stays long enough to
        see a throughput collapse before the end."""
        text = rd.hay
        n = len(text)
        if n <= 256 << 10:
            positions = [m.start() for m in (PROGRESS_BYTES if rd.ascii else PROGRESS_RE).finditer(text)]  # type: ignore[arg-type]
            if len(positions) > PROGRESS_SAMPLES:
                self.progress.steps_sampled = True
                step = len(positions) / PROGRESS_SAMPLES
                positions = [positions[int(i * step)] for i in range(PROGRESS_SAMPLES)] + [positions[-1]]
        else:
            self.progress.steps_sampled = True
            stride = n // PROGRESS_SAMPLES
            positions = []
            # re2 on a slice (its wrapper re-encodes a whole str on every call), of the bytes when they have
            # the same offsets; the slice overlaps the next window so a line cut at the boundary is still seen.
            # (a memoryview of the bytes: slicing it copies nothing)
            if len(rd.data) == n:
                hay, find = memoryview(rd.data), _PROGRESS_START
                for w in range(0, n, stride):
                    window = hay[w : w + stride + 512]
                    at = find(window, 0, len(window))
                    if 0 <= at < stride:
                        positions.append(w + at)
            else:
                for w in range(0, n, stride):
                    m = PROGRESS_FAST.search(text[w : w + stride + 512])
                    if m is not None and m.start() < stride:
                        positions.append(w + m.start())
        last_ls = -1
        for pos in positions:
            ls = text.rfind(rd.nl, 0, pos) + 1  # type: ignore[arg-type]
            if ls == last_ls:
                continue
            last_ls = ls
            line, _ = rd.line_at(ls)
            mm = PROGRESS_RE.search(line)
            if mm is not None and not self.progress.trained:
                self.progress.trained = self._step_advanced(line, int(mm.group(1)))
            att = rd.attr(line)
            if mm is None:
                continue
            rank, _lr, node = _who(rd.src, att)
            step_no = int(mm.group(1))
            if rank is not None and (rank in self.progress.rank_last_step or len(self.progress.rank_last_step) < 4096):
                self.progress.rank_last_step[rank] = step_no  # the last read (a config banner's "steps=60" comes first)
            path = rd.src.path
            if path in self.progress.file_last_step or len(self.progress.file_last_step) < 4096:
                self.progress.file_last_step[path] = step_no
            ts = self._ts(att.text)
            if ts is None:
                continue
            self.progress.add((rd.src.path, rank, node), ts, step_no)

    def _last_save(self, rd: _BlockReader, seen: dict[str, list[int]] | None) -> None:
        """The block's checkpoint saves of a step after the first (:data:`STEP_SAVED`) and resumptions from one
        (:data:`RESUMED_FROM`) with a time on their line or their writer's last earlier one (:meth:`_ts_before`),
        into ``progress.saves``: the last :data:`SAVE_LINES` save words of the block are read (a save every step on
        every rank, or a log that says "writing" on every line, is still a bounded cost). The save words come from
        the literal scan's marks (``seen``, :meth:`_candidate_starts`), else from :data:`SAVE_WORD_FAST`."""
        data = rd.data
        if seen is not None:
            found = sorted(to - 1 for w in SAVE_MARKS for to in seen.get(w, ()))
        else:
            found = [m.start() for m in SAVE_WORD_FAST.finditer(data)]
        saves = self.progress.saves
        last_ls = -1
        for at in reversed(found[-SAVE_LINES:]):
            ls = data.rfind(b"\n", 0, at) + 1
            if ls == last_ls:
                continue
            last_ls = ls
            le = data.find(b"\n", at)
            line = data[ls : le if le >= 0 else len(data)][:MAX_LINE_CHARS].decode("utf-8", "replace")
            r = RESUMED_FROM.search(line)
            if r is not None:
                step: int | None = int(r.group(1))
                kind = "resumed"
            else:
                m = STEP_SAVED_RE.search(line)
                if m is None or _RESUME_WORDS.search(line):
                    continue
                digits = re.findall(r"\d+", m.group())
                step = int(digits[-1]) if digits else None
                kind = "saved" if _SAVE_DONE.match(m.group()) is not None else "begun"
            att = rd.attr(line)
            ts = self._ts(att.text)
            if ts is None:  # a collector's stamp in front of it (kubectl --timestamps), or another prefix stamp
                ts = self._line_ts(att, att.text)
            approx = False
            if ts is None:
                # a save line without a time of its own (``saved /ckpt/step_000200.pt`` printed bare) takes its
                # writer's last earlier time, as an event does (:meth:`_ts_before`): a lower bound
                ts, approx = self._ts_before(rd, ls, _who(rd.src, att)), True
            if ts is not None:
                saves.append((ts, step, rd.src.path, kind, approx))
        if len(saves) > 2 * SAVES_KEPT:
            saves.sort(key=lambda s: s[0])
            del saves[:-SAVES_KEPT]

    def _step_advanced(self, line: str, step: int) -> bool:
        """True when ``line``'s shape (every digit run masked, :data:`STEP_SHAPE_DIGITS`) showed a smaller step
        counter before: a loop printing its step (``rank 0 epoch 0 step 20``) trained, loss or not. One mention
        of a step (a resume's ``Continuing training from global step 500``, a Trainer header's ``Total
        optimization steps = 1,000``: :data:`_RESUME_WORDS`) is no progress. Keeps at most
        :data:`STEP_SHAPE_MAX` shapes, each with the first counter it showed."""
        if _RESUME_WORDS.search(line):
            return False
        shape = STEP_SHAPE_DIGITS.sub("#", line.strip())[:STEP_SHAPE_CHARS]
        before = self._step_shapes.get(shape)
        if before is None and len(self._step_shapes) < STEP_SHAPE_MAX:
            self._step_shapes[shape] = step
        return before is not None and step > before

    def _launches(self, rd: _BlockReader) -> None:
        """Record the times of a launcher's restarts, at most 64 per block: a start line (:data:`LAUNCH_MARKS`) in
        a file that already showed one (the same console: a retry loop), or torchelastic's "will restart worker
        group". Each node's console starts once: two consoles' banners are two nodes, not a restart."""
        text = rd.hay
        obs = self.progress
        starts = self._starts_seen
        for i, mark in enumerate(LAUNCH_MARKS):
            needle: str | bytes = mark.encode() if rd.ascii else mark
            at = text.find(needle)  # type: ignore[arg-type]
            seen = 0
            while at >= 0 and seen < 64 and len(obs.launches) < 1024:
                seen += 1
                ls = text.rfind(rd.nl, 0, at) + 1  # type: ignore[arg-type]
                line, _ = rd.line_at(ls)
                ts = self._ts(rd.attr(line).text)
                first = rd.src.path not in starts
                starts.setdefault(rd.src.path, ts)
                if first and i == 0:
                    obs.launcher_started += 1
                restart = i > 0 or (not first and ts is not None and abs(ts - (starts[rd.src.path] or ts)) > 0.5)
                if restart and ts is not None and (not obs.launches or abs(obs.launches[-1] - ts) > 0.5):
                    obs.launches.append(ts)  # one banner's several lines (a framed block) are one start
                nxt = text.find(rd.nl, at)  # type: ignore[arg-type]
                if nxt < 0:
                    break
                at = text.find(needle, nxt)  # type: ignore[arg-type]

    def _defer_nccl_ranks(self, text: str | bytes) -> None:
        """Keep what :meth:`_learn_nccl_ranks` would read of ``text`` (a block's text, or its bytes when ASCII),
        to learn from it when a rank is first asked (:meth:`_nccl_known`): learning only accumulates, in block
        order, and most bundles never ask. Past 64 Mi characters kept, learn from them now."""
        if isinstance(text, bytes):
            info, nl, nccl, origin_re = b"] NCCL INFO ", b"\n", b"NCCL ", NCCL_ORIGIN_BYTES
        else:
            info, nl, nccl, origin_re = "] NCCL INFO ", "\n", "NCCL ", NCCL_ORIGIN  # type: ignore[assignment]
        first = text.find(info)  # type: ignore[arg-type]
        if first == -1:
            return
        # every match lies between the first and the last line holding the literal (NCCL's start-up,
        # usually the head of the first block): that range, from its line start, is kept
        start = text.rfind(nl, 0, first) + 1  # type: ignore[arg-type]
        end = text.find(nl, text.rfind(info)) + 1 or len(text)  # type: ignore[arg-type]
        head = None
        if start and text.find(nccl, 0, start) != -1:  # type: ignore[arg-type]
            # a line with more than 512 characters before its INFO words is searched for its origin from the
            # text's start: the first origin before the range is that answer (see _learn_nccl_ranks)
            m = origin_re.search(text, 0, start)  # type: ignore[arg-type]
            head = (_as_str(m.group(1)), _as_str(m.group(2))) if m else None
        self._nccl_pending.append((text[start:end], head))
        self._nccl_pending_chars += end - start
        if self._nccl_pending_chars > 64 << 20:
            self._nccl_known()

    def _nccl_known(self) -> bool:
        """Learn from every deferred range (in block order); True when some NCCL process's rank is known."""
        if self._nccl_pending:
            pending, self._nccl_pending, self._nccl_pending_chars = self._nccl_pending, [], 0
            for part, head in pending:
                self._learn_nccl_ranks(_as_str(part), head)
        return bool(self._nccl_comm or self._nccl_conn)

    def _learn_nccl_ranks(self, text: str, head: tuple[str, str] | None = None) -> None:
        """Learn which global rank each NCCL process (host, pid) is, from its INFO lines (NCCL_SELF_RANK).
        ``head``: for a range cut from a larger text at a line start, the (host, pid) of that text's first
        NCCL origin before the range, if any (what the whole text's search from its start finds)."""
        # The literal "] NCCL INFO " leads the pattern (a fast scan); the origin is read from the line's start.
        first = text.find("] NCCL INFO ")
        if first == -1:
            return
        end = text.find("\n", text.rfind("] NCCL INFO ")) + 1 or len(text)
        for m in NCCL_SELF_RANK.finditer(text, first, end):
            ls = text.rfind("\n", max(0, m.start() - 512), m.start())  # the newline before the line
            if ls == -1 and head is not None and m.start() >= 512:
                key = head
            else:
                origin = NCCL_ORIGIN.search(text, max(ls, 0), m.start() + 8)
                if origin is None:
                    continue
                key = (origin.group(1), origin.group(2))
            if m.group(1) is not None:
                cur = self._nccl_comm.get(key)
                cand = (int(m.group(2)), int(m.group(1)))
                if cur is None or cand[0] > cur[0]:
                    self._nccl_comm[key] = cand
            elif len(conn := self._nccl_conn.setdefault(key, set())) < 4:
                conn.add(int(m.group(4) if m.group(5) else m.group(3)))

    def _nccl_rank(self, body: str) -> int | None:
        """The global rank of the NCCL process that wrote ``body``, when its INFO lines said it:
        the largest communicator's rank, else the one rank all its connection lines agree on."""
        m = NCCL_ORIGIN.search(body)
        if m is None:
            return None
        key = (m.group(1), m.group(2))
        if key in self._nccl_comm:
            return self._nccl_comm[key][1]
        conn = self._nccl_conn.get(key)
        return next(iter(conn)) if conn is not None and len(conn) == 1 else None

    def _global(self, path: str, who: tuple[int | None, int | None, str | None],
                learn: bool = True) -> tuple[int | None, int | None, str | None]:
        """Fill a missing global rank from the local rank and the file's learnt offset (and learn it, unless ``learn``
        is false: a reader out of the file's order must not teach it)."""
        rank, local, node = who
        if rank is not None and local is not None:
            if learn:
                self._rank_offset.setdefault(path, rank - local)
        elif rank is None and local is not None and path in self._rank_offset:
            rank = local + self._rank_offset[path]
        return rank, local, node

    def _writer(self, rd: _BlockReader, att: Attribution) -> tuple[int | None, int | None, str | None]:
        """The writer of a line, ``(rank, local rank, node)``, its global rank filled from the file's learnt offset (as
        an event's own writer is); the line teaches no offset: it is read out of the file's order (a traceback's
        continuation, the block's tail)."""
        return self._global(rd.src.path, _who(rd.src, att), learn=False)

    def _handle(self, rd: _BlockReader, ls: int, line: str, line_no: int, consumed: set[int]) -> Iterator[RawEvent]:
        att = rd.attr(line)
        body = att.text
        stripped = body.strip()
        if stripped.startswith(OWN_AGENT_PREFIX):
            return  # the live agent's own messages, mixed into the console it launched (``diag watch -- torchrun``)
        who = _who(rd.src, att)
        fields: dict[str, str] = {}
        if "local_rank: " in body:
            m_agent = AGENT_FAILED.search(body)
            if m_agent:  # a torchelastic agent's "failed (exitcode: N) local_rank: R (pid: P)"
                fields["agent_exitcode"] = m_agent.group(1)
                fields["agent_pid"] = m_agent.group(3)
                if who[1] is None:
                    who = (who[0], int(m_agent.group(2)), who[2])
        who = self._global(rd.src.path, who)
        if who[0] is None and self._ray_rank:
            if att.pid is not None and att.pid in self._ray_rank:
                who = (self._ray_rank[att.pid], who[1], who[2])
            elif "Worker PID: " in body:
                # the raylet's report of a dead worker is about that worker, and like torchelastic's "first observed
                # failure" it is the node agent's report of the process that failed (fields['root'])
                m_pid = _RAYLET_DEAD_PID.search(body)
                if m_pid is not None and int(m_pid.group(1)) in self._ray_rank:
                    who = (self._ray_rank[int(m_pid.group(1))], who[1], who[2])
                    fields = {**fields, "root": "1"}
        if who[0] is None and "NCCL" in body and self._nccl_known():
            who = (self._nccl_rank(body), who[1], who[2])
        if "Traceback (most recent call last)" in body or FRAME_LINE.match(body):
            self._first_in_traceback = self._spawn_in_traceback = None
            ev = self._traceback(rd, ls, line_no, who, consumed)
            quoted, self._spawn_quoted = self._spawn_quoted, None
            if ev is not None and quoted is not None and quoted[0] == ev.path and ev.rank is None \
                    and ev.local_rank is None and 0 < line_no - quoted[1] <= SPAWN_QUOTE_LINES:
                # spawn's ProcessRaisedException quotes the failed process's own traceback right after its "-- Process
                # N terminated with the following error:": that error is process N's, whoever printed the report. N is
                # the spawn index, the local rank; it is the rank too unless the file is one node's of several (a
                # node's spawn numbers its processes from 0: zoo dev b65, node 1's "Process 1" is rank 3)
                ev.local_rank = quoted[2]
                if ev.node is None:
                    ev.rank = quoted[2]
            thread, self._thread_exc = self._thread_exc, None
            if ev is not None and thread is not None and thread[0] == ev.path and 0 < line_no - thread[1] <= 2:
                # threading's excepthook: "Exception in thread NAME:" then the thread's traceback. The thread died;
                # its process went on without it
                ev.fields["thread"] = thread[2]
            if ev is not None:
                # a paste whose newlines were lost runs the agent's "failed (exitcode: N) local_rank: R" and
                # the traceback together on one line: the agent's report stays with the event
                ev.fields.update(fields)
                yield ev
            if self._spawn_in_traceback is not None and ev is not None:
                idx, code, sig, at = self._spawn_in_traceback
                if not code and not sig:  # the raised form: the quoted traceback follows
                    self._spawn_quoted = (ev.path, at, idx)
                yield self._spawn_first(ev.path, ev.node, ev.ts, ev.ts_approx, *self._spawn_in_traceback)
            if self._first_in_traceback is not None:
                first = self._first_process(rd, *self._first_in_traceback, who)
                if first is not None:
                    yield first
            return
        if "Root Cause (first observed failure)" in body or stripped == "Failures:":
            yield from self._elastic(rd, ls, line_no, who, consumed, root=stripped != "Failures:")
            return
        if stripped.startswith("exitcode") and (m_field := ELASTIC_FIELD.match(stripped)) is not None \
                and ELASTIC_EXIT.match(m_field.group(2)):
            headless = self._elastic_headless(rd, ls, line_no, who, consumed)
            if headless is not None:
                yield headless
                return
        if CPP_FRAME.match(stripped) or "(most recent call first)" in body:
            yield self._cpp_frames(rd, ls, line_no, who, consumed, body)
            return
        if stripped in HOROVOD_MISSING:
            missing = self._horovod_missing(rd, ls, line, line_no, who, consumed)
            if missing is not None:
                yield missing
                return
        if FIRST_PROCESS in body:
            first = self._first_process(rd, ls, line, line_no, who)
            if first is not None:
                yield first  # the line itself is still an event of its own (the launcher's summary)
        for hints, read, own_time in FIRST_FAILURE_READERS:
            if any(h in body for h in hints) and (got := read(body, stripped, who[0])) is not None:
                rank, exitcode, signal, host = got
                ts, approx = self._time_or_before(rd, ls, who, self._ts(body) if own_time else None)
                # (the line itself stays an event of its own)
                yield self._spawn_first(rd.src.path, who[2] or host, ts, approx, rank, exitcode, signal, line_no,
                                        local=False)
        if stripped.startswith("Exception in thread ") and stripped.endswith(":"):
            self._thread_exc = (rd.src.path, line_no, stripped[len("Exception in thread "):-1][:80])
        spawned = _spawn_match(stripped)
        if spawned is not None:  # the line itself stays an event of its own
            if not spawned[1] and not spawned[2]:  # the raised form: the quoted traceback follows
                self._spawn_quoted = (rd.src.path, line_no, spawned[0])
            ts, approx = self._time_or_before(rd, ls, who, self._ts(body))
            yield self._spawn_first(rd.src.path, who[2], ts, approx, *spawned, line_no)
        key = clean_key(body)
        kind = _classify(stripped, key)
        if stripped == "Last error:":
            nxt_line, _ = rd.line_at(ls + len(line) + 1)
            nxt_att = rd.attr(nxt_line)
            if nxt_line and self._writer(rd, nxt_att) == who:
                key = "Last error: " + clean_key(nxt_att.text)
                consumed.add(ls + len(line) + 1)
                kind = EventKind.NCCL
        if not key:
            return
        ts = self._line_ts(att, body)
        approx = False
        if kind is not EventKind.STACK_DUMP:
            ts, approx = self._time_or_before(rd, ls, who, ts)
        if kind is EventKind.STACK_DUMP:
            self.progress.stack_dumps += 1
        if "NCCL work" in key or "WorkNCCL" in key or "work sequence id" in key:
            self._collective(key, who, ts)
        if stripped[:1] in "[W" and GLOG_WARNING.match(stripped):
            fields = {**fields, "severity": "warning"}
        elif INFO_LINE.match(stripped):
            fields = {**fields, "severity": "info"}
        lines = [key]
        if stripped.startswith("Fatal Python error: "):
            lines += self._faulthandler_frames(rd, ls + len(line) + 1, consumed)
        yield RawEvent(
            kind=kind, key=key, lines=lines, path=rd.src.path, line=line_no,
            rank=who[0], local_rank=who[1], node=who[2], ts=ts, ts_approx=approx, fields=fields,
        )

    def _faulthandler_frames(self, rd: _BlockReader, pos: int, consumed: set[int]) -> list[str]:
        """The current thread's frames of Python's faulthandler dump after a "Fatal Python error:" line (a blank line,
        ``Current thread 0x... (most recent call first):`` or ``Thread 0x...``, then ``  File "path", line N in
        func`` lines), innermost last as a traceback lists them, so the catalogue's frame rules read the crash's
        innermost frame the same way (Python's faulthandler, dump_traceback); [] when no dump follows."""
        frames: list[str] = []
        for i in range(FAULTHANDLER_MAX_LINES):
            if pos >= rd.size:
                break
            raw, nxt = rd.line_at(pos)
            t = rd.attr(raw).text.rstrip()
            if i == 0 and not t.strip():  # the blank line after "Fatal Python error:"
                pos = nxt
                continue
            if not frames and FAULTHANDLER_THREAD.match(t.strip()):
                consumed.add(pos)
                pos = nxt
                continue
            if FRAME_LINE.match(t):
                frames.append(t.strip()[:MAX_LINE_CHARS])
                consumed.add(pos)
                pos = nxt
                continue
            break
        return frames[::-1][-MAX_EVENT_LINES:]

    def _horovod_missing(self, rd: _BlockReader, ls: int, line: str, line_no: int, who: tuple,
                         consumed: set[int]) -> RawEvent | None:
        """Horovod's stall report in its multi-line form (:data:`HOROVOD_MISSING` then one ``rank: [tensors]`` line
        per rank that has not submitted them) as one event worded as the one-line form, ``[missing ranks: 1, 3]``
        (what the catalogue's ``horovod_missing_ranks`` reads); None when no rank line follows."""
        ranks: list[str] = []
        pos = ls + len(line) + 1
        for _ in range(HOROVOD_MISSING_LINES):
            if pos >= rd.size:
                break
            nxt_line, nxt = rd.line_at(pos)
            att = rd.attr(nxt_line)
            m = HOROVOD_MISSING_RANK.match(att.text)
            if m is not None:
                ranks.append(m.group(1))
            elif att.task is not None and att.text.startswith("["):  # "1: [" read as srun -l's task prefix
                ranks.append(str(att.task))
            else:
                break
            consumed.add(pos)
            pos = nxt
        if not ranks:
            return None
        ts, approx = self._time_or_before(rd, ls, who, None)
        key = f"Horovod stall: [missing ranks: {', '.join(dict.fromkeys(ranks))}]"
        return RawEvent(kind=EventKind.WARNING, key=key, lines=[key], path=rd.src.path, line=line_no, rank=who[0],
                        local_rank=who[1], node=who[2], ts=ts, ts_approx=approx, fields={})

    def _first_process(self, rd: _BlockReader, ls: int, line: str, line_no: int, who: tuple) -> RawEvent | None:
        """The launcher's "The first process to do so was:" report (:data:`FIRST_PROCESS`) as a first observed
        failure (an ``elastic_summary`` event with ``root`` set, as torchelastic's), when one of the next
        :data:`FIRST_PROCESS_LINES` lines names the process by its rank; None otherwise (e.g. an elastic
        Horovod worker named by host and slot)."""
        rank = exitcode = None
        pos = ls + len(line) + 1
        for _ in range(FIRST_PROCESS_LINES):
            if pos >= rd.size:
                break
            nxt_line, pos = rd.line_at(pos)
            s = rd.attr(nxt_line).text.rstrip()
            m = FIRST_PROCESS_NAME.search(s)
            if m and rank is None:
                rank = int(m.group(1) or m.group(2))
            m = FIRST_PROCESS_EXIT.search(s)
            if m and exitcode is None:
                exitcode = m.group(1)
            if rank is not None and exitcode is not None:
                break
        if rank is None:
            return None
        ts, approx = self._time_or_before(rd, ls, who, self._ts(rd.attr(line).text))
        key = f"launcher first observed failure: rank {rank} exitcode: {exitcode or ''}".strip()
        return RawEvent(
            kind=EventKind.ELASTIC_SUMMARY, key=key, lines=[key], path=rd.src.path, line=line_no,
            rank=rank, local_rank=None, node=None, ts=ts, ts_approx=approx,
            fields={"root": "1", "exitcode": exitcode or "", "signal": ""},
        )

    def _front_ts(self, att: Attribution) -> float | None:
        """The time of a dated stamp put in front of the line by whatever collected it (a log collector's RFC 3339
        stamp, ``kubectl logs --timestamps``, ``docker logs -t``; a plain date before a writer's prefix, ``ts``):
        one clock for every line and writer. None for other prefix stamps (syslog's and Open MPI's start with a
        weekday or month name) and for lines without one."""
        return self._ts(att.stamp) if att.stamp and att.stamp[:1].isdigit() else None

    def _line_ts(self, att: Attribution, text: str) -> float | None:
        """A line's time: the collector's stamp in front of it first (:meth:`_front_ts`; the writers' own stamps
        may be in local time or another zone, and Python tracebacks have none), then the line's own time, then any
        other prefix stamp (syslog's, Open MPI's ``--timestamp-output``)."""
        ts = self._front_ts(att)
        if ts is not None:
            return ts
        ts = self._ts(text)
        if ts is None and att.stamp:
            ts = self._ts(att.stamp)
        return ts

    def _time_or_before(self, rd: _BlockReader, ls: int, who: tuple, ts: float | None) -> tuple[float | None, bool]:
        """``(ts, False)`` when the line gave a time, else the writer's earlier stamped line's (:meth:`_ts_before`)
        and whether there was one (the event's time is then approximate)."""
        if ts is not None:
            return ts, False
        ts = self._ts_before(rd, ls, who)
        return ts, ts is not None

    def _spawn_report(self, s: str, line_no: int) -> None:
        """Remember torch.multiprocessing.spawn's report of the failed process (:func:`_spawn_match`) in a
        traceback's exception line or message, the first one only."""
        if self._spawn_in_traceback is None and (got := _spawn_match(s)) is not None:
            self._spawn_in_traceback = (*got, line_no)

    def _spawn_first(self, path: str, node: str | None, ts: float | None, approx: bool, idx: int, exitcode: str,
                     signal: str, line_no: int, local: bool = True) -> RawEvent:
        """An ``elastic_summary`` root event (as torchelastic's "first observed failure") for the process that
        torch.multiprocessing.spawn reports failed (at ``line_no`` of ``path``). The spawn index is the local
        rank; on one node (spawn's usual use) it is the rank too, but not in a file of one node of several (``node``
        given: each node's spawn numbers its processes from 0), whose global rank comes from elsewhere or not at all.
        ``local=False``: ``idx`` is a global rank only (mpirun's :data:`MPI_NOTICED`)."""
        key = f"launcher first observed failure: rank {idx} exitcode: {exitcode}".strip()
        if signal:
            key += f" signal: {signal}"
        return RawEvent(
            kind=EventKind.ELASTIC_SUMMARY, key=key, lines=[key], path=path, line=line_no,
            rank=idx if not local or node is None else None, local_rank=idx if local else None, node=node, ts=ts,
            ts_approx=approx, fields={"root": "1", "exitcode": exitcode, "signal": signal},
        )

    def _collective(self, key: str, who: tuple, ts: float | None) -> None:
        obs = self.progress
        if ("aught collective operation timeout" in key or "timed out in blocking wait" in key) \
                and len(obs.collectives) < 100_000:
            found = list(WORK_RE.finditer(key))
            for m in found[:64]:
                rank = who[0]
                if len(found) > 1:
                    # several ranks' reports run together on one line (a paste whose newlines were lost after a
                    # progress bar's carriage returns): each WorkNCCL is the rank named just before it ("[Rank 1]")
                    named = [int(r.group(1)) for r in WATCHDOG_RANK.finditer(key, 0, m.start())]
                    rank = named[-1] if named else rank
                obs.collectives.append(
                    CollectiveTimeout(
                        rank=rank, node=who[2], seq=int(m.group(1)), op=m.group(2),
                        numel=int(m.group(3)) if m.group(3) else None, ts=ts,
                    )
                )
        elif " detected by watchdog at work" in key and len(obs.collectives) < 100_000:
            # the same report in the watchdog's own words, without the WorkNCCL (its op is not said)
            m = WATCHDOG_SEQ_RE.search(key)
            if m:
                obs.collectives.append(CollectiveTimeout(rank=who[0], node=who[2], seq=int(m.group(1)), op="",
                                                         numel=None, ts=ts))
        m = LAST_DONE_RE.search(key)
        if m and who[0] is not None:
            obs.last_completed[who[0]] = int(m.group(1))

    def _traceback(
        self, rd: _BlockReader, ls: int, line_no: int, who: tuple, consumed: set[int]
    ) -> RawEvent | None:
        """Collect one Python traceback of one writer, skipping interleaved lines of other writers."""
        size = rd.size
        lines: list[str] = []
        header_ts: float | None = None
        exc_line: str | None = None
        exc_line_no = line_no
        chained_exc: str | None = None  # the exception before a "direct cause" / "During handling" line
        chained_no = line_no
        pos = ls
        n = line_no
        scanned = 0
        frames = 0
        # Python prints frames ("  File ...") 2 deeper than the header and the exception line, their source lines
        # deeper still; torchelastic's failure report ("  traceback : Traceback ...") and indented pastes shift every
        # line alike. A line at least as deep as the latest frame (before any frame: deeper than the header) is a
        # source line; a shallower one is the exception.
        source_from = 1
        while pos < size and scanned < MAX_TRACEBACK_SCAN:
            line, nxt = rd.line_at(pos)
            scanned += 1
            att = rd.attr(line)
            # ``who`` is the header's writer with its global rank filled from the file's offset: so is each line's
            if self._writer(rd, att) != who and scanned > 1:
                pos, n = nxt, n + 1
                continue
            body = att.text
            s = body.strip()
            is_header = "Traceback (most recent call last)" in body
            indent = len(body) - len(body.lstrip(" \t"))
            if scanned == 1:
                header_ts = self._line_ts(att, body)
                source_from = indent + 1
            if is_header and exc_line is not None and s.startswith(WRAPPED_TRACEBACK):
                # a DataLoader worker's exception re-raised in the rank: its message carries the worker's
                # original traceback, whose last exception is the cause (kept as the key, as for a chain)
                lines.append(s)
                consumed.add(pos)
                chained_exc, chained_no = exc_line, exc_line_no
                exc_line = None
            elif is_header or FRAME_LINE.match(body):
                if is_header and exc_line is not None:
                    break  # a new traceback starts
                if not is_header:
                    source_from = indent  # the latest frame's: a paste's first line often lost its indentation
                frames += 0 if is_header else 1
                lines.append(s if is_header else body.rstrip()[:MAX_LINE_CHARS])
                consumed.add(pos)
            elif exc_line is None and s and (s.startswith(("^", "~")) or indent >= source_from):
                lines.append(body.rstrip()[:MAX_LINE_CHARS])  # source line under a frame
                consumed.add(pos)
            elif exc_line is None and s and lines and NOT_AN_EXCEPTION_LINE.match(s):
                break
            elif exc_line is None and s and lines:
                exc_line = clean_key(body)
                exc_line_no = n
                if FIRST_PROCESS in body:
                    self._first_in_traceback = (pos, line, n)
                self._spawn_report(s, n)
                lines.append(exc_line)
                consumed.add(pos)
            elif exc_line is not None and CHAINED.match(s):
                lines.append(s)
                consumed.add(pos)
                chained_exc, chained_no = exc_line, exc_line_no
                exc_line = None  # chained: the cause we keep is the last exception printed
            elif exc_line is not None and s and not PREFILTER.search(body) and len(lines) < MAX_EVENT_LINES:
                lines.append(s[:MAX_LINE_CHARS])  # multi-line exception message
                consumed.add(pos)
                self._spawn_report(s, n)
                if BARE_EXCEPTION.match(exc_line):
                    # raise X("""\n  message"""): the message starts on the next line; key on it
                    exc_line = clean_key(f"{exc_line.rstrip()} {s}")
            elif not s and exc_line is None and lines and lines[-1].startswith(("During", "The above")):
                pass
            else:
                break
            if len(lines) >= MAX_EVENT_LINES:
                break
            pos, n = nxt, n + 1
        if not lines:
            return None
        if exc_line is None and chained_exc is not None:
            # The chain's last traceback was cut: the last exception printed in full is the key.
            exc_line, exc_line_no = chained_exc, chained_no
        if exc_line is None:
            # Cut by the block end or the log's end: keep what we have, keyed by the last frame.
            key = "Traceback (incomplete): " + clean_key(lines[-1])
            kind = EventKind.TRACEBACK
        else:
            key = exc_line
            kind = EventKind.TRACEBACK
        ts = header_ts
        if ts is None and exc_line is not None:
            ts = self._ts(exc_line)
        ts, approx = self._time_or_before(rd, ls, who, ts)
        return RawEvent(
            kind=kind, key=key, lines=lines, path=rd.src.path, line=exc_line_no,
            rank=who[0], local_rank=who[1], node=who[2], ts=ts, ts_approx=approx,
            fields={"frames": str(frames)},
        )

    def _cpp_frames(
        self, rd: _BlockReader, ls: int, line_no: int, who: tuple, consumed: set[int], first: str
    ) -> RawEvent:
        pos = ls
        lines: list[str] = []
        size = rd.size
        while pos < size and len(lines) < 200:
            line, nxt = rd.line_at(pos)
            att = rd.attr(line)
            s = att.text.strip()
            if self._writer(rd, att) != who:
                break
            if not (CPP_FRAME.match(s) or "(most recent call first)" in s or (not lines and s)):
                break
            lines.append(s[:MAX_LINE_CHARS])
            consumed.add(pos)
            pos = nxt
        key = clean_key(first)
        return RawEvent(
            kind=EventKind.CPP_FRAMES, key=key, lines=lines[:MAX_EVENT_LINES], path=rd.src.path, line=line_no,
            rank=who[0], local_rank=who[1], node=who[2], fields={"frames": str(len(lines))},
        )

    def _elastic(
        self, rd: _BlockReader, ls: int, line_no: int, who: tuple, consumed: set[int], root: bool
    ) -> Iterator[RawEvent]:
        """Parse torchelastic's ChildFailedError report (``_FAILURE_FORMAT_TEMPLATE`` in
        torch.distributed.elastic.multiprocessing.errors)."""
        size = rd.size
        head, pos = rd.line_at(ls)
        # the report's "time" field is the agent's local time; a log collector's stamp on the report is the clock
        # every other line of the bundle is read by (``_line_ts``)
        collected = self._front_ts(rd.attr(head))
        n = line_no + 1
        consumed.add(ls)
        if root and (flat := _flat_root_entry(rd.attr(head).text)):
            # the whole report on one line (a paste whose newlines were lost): its root entry is on this line
            yield self._elastic_event(rd, flat, line_no, who, root, collected)
            return
        entry: dict[str, str] = {}
        entry_line = n
        for _ in range(200):
            if pos >= size:
                break
            line, nxt = rd.line_at(pos)
            s = rd.attr(line).text.strip()
            if not s:  # a copy from a rendered page puts a blank line between the fields
                consumed.add(pos)
                pos, n = nxt, n + 1
                continue
            if _ELASTIC_ENTRY.match(s) or s.startswith(("----", "====")):
                if entry:
                    yield self._elastic_event(rd, entry, entry_line, who, root, collected)
                    entry = {}
                    if root:
                        break
                if s.startswith(("----", "====")):
                    break
                entry_line = n + 1
            else:
                m = ELASTIC_FIELD.match(s)
                if m and not ELASTIC_INLINE.search(s, m.end(1)):
                    entry[m.group(1)] = m.group(2).strip()
                elif s.startswith(("<NO_OTHER_FAILURES>", "<NO OTHER FAILURES>")):
                    break
                else:
                    entry.update(_inline_fields(s))
            consumed.add(pos)
            pos, n = nxt, n + 1
        if entry:
            yield self._elastic_event(rd, entry, entry_line, who, root, collected)

    def _elastic_headless(
        self, rd: _BlockReader, ls: int, line_no: int, who: tuple, consumed: set[int]
    ) -> RawEvent | None:
        """One record of torchelastic's failure report pasted without the report's heading (a paste that starts
        at ``time :`` or ``host :``): the ``exitcode`` line at ``ls`` and the field lines around it, when a
        ``rank : N (local_rank: M)`` field is among them (the report's own shape; a lone ``exitcode :`` is not
        enough). The record is the report's root cause when the report's closing ``====`` rule or the end of the
        text follows it; ``----`` or the next ``[n]:`` entry means it was one of the other failures. None when
        the lines are not such a record."""
        entry: dict[str, str] = {}
        first_line, pos, back = line_no, ls, []
        for _ in range(3):  # time, host, rank come before exitcode in _FAILURE_FORMAT_TEMPLATE
            if pos <= 0:
                break
            prev, att, _w = rd.line_before(pos)
            m = ELASTIC_FIELD.match(att.text.strip())
            if m is None or m.group(1) not in ("time", "host", "rank"):
                break
            entry[m.group(1)] = m.group(2).strip()
            back.append(prev)
            pos, first_line = prev, first_line - 1
        if not ELASTIC_RANK.match(entry.get("rank", "")):
            return None
        line, pos = rd.line_at(ls)
        entry["exitcode"] = ELASTIC_FIELD.match(rd.attr(line).text.strip()).group(2).strip()  # type: ignore[union-attr]
        ends = [ls, *back]
        root = True
        for _ in range(3):
            if pos >= rd.size:
                break
            line, nxt = rd.line_at(pos)
            s = rd.attr(line).text.strip()
            m = ELASTIC_FIELD.match(s)
            if m is not None and m.group(1) in ("error_file", "traceback"):
                entry[m.group(1)] = m.group(2).strip()
                ends.append(pos)
                pos = nxt
                continue
            root = not (s.startswith("----") or _ELASTIC_ENTRY.match(s))
            break
        consumed.update(ends)
        return self._elastic_event(rd, entry, first_line, who, root)

    def _elastic_event(self, rd: _BlockReader, entry: dict[str, str], line_no: int, who: tuple, root: bool,
                       collected: float | None = None) -> RawEvent:
        rank = local_rank = None
        m = ELASTIC_RANK.search(entry.get("rank", ""))
        if m:
            rank, local_rank = int(m.group(1)), int(m.group(2))
        exitcode, signal = "", ""
        m = ELASTIC_EXIT.search(entry.get("exitcode", ""))
        if m:
            exitcode, signal = m.group(1), m.group(3) or ""
        ts = collected
        m = ELASTIC_TIME.search(entry.get("time", ""))
        if m and ts is None:
            ts = parse_timestamp("{}-{}-{} {}:{}:{}".format(*m.groups()), self.year)
        host = entry.get("host") or who[2]
        if who[2] and LOOPBACK.match(host):  # every agent's table says "localhost"; the file's node says which one
            host = who[2]
        what = "first observed failure" if root else "failure"
        key = f"torchelastic {what}: rank {rank} (local_rank {local_rank}) exitcode: {exitcode} {signal}".strip()
        fields = {k: v for k, v in entry.items() if k != "traceback"}
        fields.update({"root": "1" if root else "0", "exitcode": exitcode, "signal": signal})
        if entry.get("traceback") and entry["traceback"] not in ("<N/A>", "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"):
            fields["traceback"] = entry["traceback"][:MAX_LINE_CHARS]
        return RawEvent(
            kind=EventKind.ELASTIC_SUMMARY, key=key, lines=[key], path=rd.src.path, line=line_no,
            rank=rank, local_rank=local_rank, node=host, ts=ts, fields=fields,
        )

    def finish(self) -> Iterator[RawEvent]:
        """Parse buffered torchelastic ``error.json`` files (their failure time is exact)."""
        for path, parts in self._json_buf.items():
            src_rank, src_local, src_node = _path_who(path)
            try:
                doc = json.loads("".join(parts))
                msg = doc.get("message", {})
                if isinstance(msg, str):
                    message, extra = msg, {}
                else:
                    message, extra = str(msg.get("message", "")), msg.get("extraInfo", {}) or {}
                stack = str(extra.get("py_callstack", ""))
                ts_raw = extra.get("timestamp")
                ts = float(ts_raw) if ts_raw not in (None, "") else None
            except (ValueError, TypeError, AttributeError, RecursionError):  # RecursionError: nesting too deep
                continue
            lines = [ln for ln in stack.splitlines() if ln.strip()][-MAX_EVENT_LINES:] or [message]
            exc = message.strip().splitlines()[0] if message.strip() else (lines[-1] if lines else "")
            if not exc:
                continue
            yield RawEvent(
                kind=EventKind.TRACEBACK, key=clean_key(exc), lines=lines, path=path, line=1,
                rank=src_rank, local_rank=src_local, node=src_node, ts=ts, fields={"error_file": "1"},
            )


def _path_who(path: str) -> tuple[int | None, int | None, str | None]:
    from diag_service.ingest.bundle import attribute_path

    s = attribute_path(path)
    return s.rank, s.local_rank, s.node


_KERNEL = re.compile(r"\bXid\b|NVRM|\bECC\b|mce:|kernel:|Hardware Error|fallen off the bus|device handle")
_NCCL = re.compile(r"NCCL|nccl[A-Z]")
#: (ProcessGroupNCCL's watchdog ends its own process after a collective timeout: "Terminating the process after
#: attempting to dump debug info" (its fatal log line before abort), "we are taking the entire process down")
_EXIT = re.compile(r"[Ee]xit ?code|exit status|[Ee]xited with|[Kk]illed|\bSIG[A-Z]{2,5}\b|[Ss]ignal \d|core dumped"
                   r"|Terminating the process after|taking the entire process down")


PY_WARNING = re.compile(r"(?:^|[\s:])(?:[\w.]+\.)?[A-Z]\w*Warning: |^warnings\.warn\(")
# Substrings every match of these regexes holds: tested first, they spare the backtracking searches
# (about 10 us each on a 150-character line) on the lines that cannot match.
_KERNEL_LITERALS = ("Xid", "NVRM", "ECC", "mce:", "kernel:", "Hardware Error", "fallen off the bus", "device handle")
_EXIT_LITERALS = ("xit", "illed", "SIG", "ignal ", "core dumped", "Terminating the process", "entire process down")


def _classify(s: str, key: str | None = None) -> EventKind:
    """The kind of the line ``s``; ``key``: ``clean_key(s)`` when the caller has it (it strips ``s`` first, so
    ``clean_key(line)`` of an unstripped line is the same)."""
    body = clean_key(s) if key is None else key
    if STACK_DUMP.match(body):
        return EventKind.STACK_DUMP
    if ("Warning: " in body or body.startswith("warnings.warn(")) and PY_WARNING.search(body):
        return EventKind.WARNING
    if EXCEPTION_LINE.match(body):
        return EventKind.EXCEPTION
    if any(w in body for w in _KERNEL_LITERALS) and _KERNEL.search(body):
        return EventKind.KERNEL
    if _NCCL.search(body):
        return EventKind.NCCL
    if any(w in body for w in _EXIT_LITERALS) and _EXIT.search(body):
        return EventKind.EXIT
    return EventKind.ERROR_LINE


def extract_events(
    blocks: Iterable[Block], progress: ProgressLog, extra_patterns: tuple[str, ...] = (),
) -> Iterator[RawEvent]:
    """Yield candidate events from ``blocks`` (in bundle order); fill ``progress`` on the way.

    ``extra_patterns``: regexes that must also make a line a candidate (the signature catalog's
    patterns, so that a catalogue entry is never hidden by the built-in pre-filter).
    """
    ex = Extractor(progress, prefilter_with(extra_patterns) if extra_patterns else None)
    for block in blocks:
        yield from ex.feed(block)
    yield from ex.finish()
