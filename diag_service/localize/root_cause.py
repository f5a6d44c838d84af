"""Root cause versus cascade.

Rules, in order (each documented where it acts):

1. **Root signatures compete by priority, then time.** A hardware report (Xid, ECC) outranks the
   CUDA and NCCL errors it causes on the same rank; among equals the earliest wins. Symptoms
   (watchdog timeouts, broken pipes, SIGTERM from the agent) and launcher summaries never win, and a
   rank's report of a lost peer yields to another rank's own failure (:func:`_peer_loss_yields`).
2. **Confidence gate.** A root whose signature confidence is below :data:`MIN_CONFIDENCE` is
   reported as a suspicion with category ``unknown``: a confident wrong answer is worse.
3. **Failure mode.** The winning signature's mode, except: stack dumps in the logs and no process
   termination anywhere mean the job was alive and stuck (``fail_hang``); with no confident root,
   collective timeouts mean ``fail_hang`` and a throughput collapse before the end ``fail_slow``; a
   training job's log that ends with no error, exit or launcher report at all (NCCL warnings aside: NCCL
   warns and retries, and an error it returns becomes the rank's exception) was still running when it
   was taken: ``fail_hang`` at :data:`ALIVE_NO_ERROR_CONFIDENCE`, to be confirmed (public corpus dev
   split: of the 14 such logs without NCCL warnings, 8 are hangs, 4 slowdowns, 2 stops; of the 5 with
   them, 4 hangs); unless a file ends with the run's own report of completion
   (:data:`~diag_service.extract.events.COMPLETION_VENDOR`): then ``none``, no failure.
4. **First failing rank** only when the evidence names one: the winning event on a single rank,
   the earliest rank by timestamp, torchelastic's "Root Cause (first observed failure)" (or mpirun's and
   horovodrun's "The first process to do so was"), the one rank of a suspect too weak to name the
   category (its own error, not a lost peer), or, for
   hangs, the minority rank of a collective mismatch / the ranks behind in SeqNum / the one rank
   that is not waiting.
5. **Faulty nodes** only for node-level categories (GPU hardware, network, host OOM, storage,
   infrastructure) and only when the fault sits on few of the nodes seen.
"""

from __future__ import annotations

import re
import statistics
import sys
import textwrap
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from diag_service.contracts import Localization, ProgressLog, RawEvent, TemplateGroup
from diag_service.domain import (
    DEFAULT_RESPONSIBLE,
    Category,
    Diagnosis,
    EventKind,
    EventRole,
    EventTemplate,
    Evidence,
    FailureMode,
    HangReport,
    HangSuspect,
    Responsible,
    SignatureHit,
    SimilarIncident,
    node_names,
    refused_nodes_finding,
)
from diag_service.limits import LIMITS
from diag_service.localize.attempts import attempt_of
from diag_service.logformat import SRUN_REPORT, attribute, iso, parse_timestamp
from diag_service.signatures import SignatureSet
from diag_service.signatures.catalog import frame_file_owner
from diag_service.slow.material import immaterial
from diag_service.slow.models import SlowReport

MIN_CONFIDENCE = 0.4
#: An nccl-tests benchmark that completed, read as a possible slowdown: the log cannot say whether its bandwidth is
#: low for the fabric (public corpus dev: 2 of 2 such pastes were labelled slow).
BENCHMARK_CONFIDENCE = 0.2
LATE_ROOT_PRIORITY = 50
LATE_ROOT_S = 1.0
HARDWARE_PRIORITY = 80
LATER_FAILURE_S = 5.0
#: Training progress after a warning that shows the job went on: distinct steps logged afterwards by one stream.
PROGRESS_AFTER_STEPS = 2
SLOWDOWN_FACTOR = 3.0
SEVERE_SLOWDOWN = 2.0
NODE_LEVEL = {Category.GPU_HARDWARE, Category.NETWORK, Category.HOST_OOM, Category.STORAGE, Category.INFRASTRUCTURE}
TERMINATION_KINDS = {EventKind.TRACEBACK, EventKind.EXIT, EventKind.ELASTIC_SUMMARY}
_KIND_SUSPICION = {
    EventKind.TRACEBACK: 0.7,
    EventKind.EXCEPTION: 0.6,
    EventKind.KERNEL: 0.6,
    EventKind.NCCL: 0.5,
    EventKind.EXIT: 0.45,
    EventKind.ELASTIC_SUMMARY: 0.3,
    EventKind.ERROR_LINE: 0.3,
    EventKind.CPP_FRAMES: 0.15,
    EventKind.STACK_DUMP: 0.1,
    EventKind.WARNING: 0.1,
    EventKind.PROGRESS: 0.0,
}


def _evidence(ev: RawEvent, text: str | None = None) -> Evidence:
    return Evidence(
        file=ev.path, line=ev.line, rank=ev.rank, node=ev.node, timestamp=iso(ev.ts),
        timestamp_approx=ev.ts is not None and ev.ts_approx, text=(text if text is not None else ev.key)[:2000],
    )


#: Two ranks whose first events carry only borrowed (lower-bound) times are ordered only this far apart (seconds).
BORROWED_ORDER_S = 1.0


#: Signatures of an agent that waited in the rendezvous for nodes that never came: the node that reports one is a node
#: that arrived (torch.distributed.elastic.rendezvous: the join timeout elapses on the agents that joined).
RENDEZVOUS_WAITS = frozenset({"rendezvous_timeout"})
#: Launcher or framework summaries whose line names the one rank whose own exception they re-raise (PyTorch
#: Lightning's "DeadLock detected from rank: N", strategies/ddp.py reconciliate_processes): when no rank's own
#: error line names a rank, that rank failed first.
RAISER_SUMMARIES = frozenset({"lightning_deadlock_detected"})


def _rendezvous_waiters(reported: list[str], nodes_seen: set[str]) -> tuple[str, bool]:
    """What a rendezvous timeout reported by the agents of ``reported`` says about the nodes (a sentence), and whether
    every node in the logs waited alone (they never met: their launch commands disagree, the job's configuration), or
    the reporting node waited for others that never joined (it is not the one at fault)."""
    nodes = set(reported)
    names, _ = node_names(sorted(nodes))
    shown = ", ".join(names or sorted(nodes))
    if len(nodes) >= 2 and nodes >= nodes_seen:
        return (f"Every node in these logs ({shown}) timed out in it: each agent waited for the others and they never "
                "met, so their launch commands most likely disagree (the --rdzv-endpoint host or port, --rdzv-id or "
                "--nnodes): relaunching the same commands fails the same way."), True
    return (f"The agent of {shown} reported it: {'that node' if len(nodes) == 1 else 'those nodes'} arrived "
            "and waited; the node at fault is one that never joined (not launched, or launched with another endpoint "
            "or id), and it has no logs here."), False


def _where(rank: int | None, local_rank: int | None, node: str | None) -> str:
    parts = []
    if rank is not None:
        parts.append(f"rank {rank}")
    elif local_rank is not None:
        parts.append(f"local rank {local_rank}")
    if node:
        parts.append(f"node {node}")
    return " on ".join(parts) if parts else "an unattributed rank"


@dataclass
class _Slowdown:
    factor: float
    baseline_s: float
    last_s: float
    stream: str


#: An end-of-run interval is a collapse only when no earlier interval of the series was at least this share of it long.
RECURRING_PAUSE_SHARE = 0.5


#: c10d's lookup of the store host printed at least this many times: its client retrying a name that never resolves
#: (a working run prints it once or twice per process as it starts, then connects over IPv4).
STORE_LOOKUP_RETRIES = 10
_STORE_LOOKUP = re.compile(r"The IPv6 network addresses of \((?P<host>[^,()]{0,253}), \d+\) cannot be retrieved")
STORE_LOOKUP_FINDING = (
    "The logs hold c10d's lookup of the store host {host!r} repeated {n} times and nothing a worker wrote: the name "
    "never resolved (its client retried until it was stopped), so the job never got past its rendezvous. The launch "
    "passes a store address that does not exist (a stale or mistyped MASTER_ADDR / --master-addr / --rdzv-endpoint, a "
    "short pod name from another namespace): fix it and launch again; a restart with the same address waits the same way."
)


def _store_lookup_retries(hits: list[SignatureHit], by_tid: dict[int, list[TemplateGroup]]) -> tuple[str, int] | None:
    """``(host, times)`` when c10d's IPv6 lookup warning of one store host (context rule ``c10d_ipv6_lookup_warning``)
    was printed :data:`STORE_LOOKUP_RETRIES` times or more; None otherwise."""
    tids = {t for h in hits if h.details.get("context_rule") == "c10d_ipv6_lookup_warning" for t in h.template_ids}
    hosts: Counter[str] = Counter()
    for tid in tids:
        for g in by_tid.get(tid, []):
            m = _STORE_LOOKUP.search(g.first.key) if g.first is not None else None
            if m is not None:
                hosts[m.group("host")] += g.count
    if not hosts:
        return None
    host, n = hosts.most_common(1)[0]
    return (host, n) if n >= STORE_LOOKUP_RETRIES else None


def _slowdown(progress: ProgressLog) -> _Slowdown | None:
    """Throughput collapse at the end of any progress series: the last three step intervals' max
    against the median of the earlier ones, per step; needs at least three earlier intervals. In a run that
    reported its own completion the collapse must hold over the last three intervals (their least): one long last
    interval of a finished run is its final evaluation or save, or a periodic pause, not a collapse (e.g.
    a clean run whose last interval held its final 4 s evaluation would read "collapsed about 49x"). Nor is an end
    interval that an earlier one of the series matched (:data:`RECURRING_PAUSE_SHARE`): the job's periodic pause."""
    best: _Slowdown | None = None
    for (path, _rank, _node), series in progress.series.items():
        # a step is reached when it is first reported: a later line naming the same step ("eval at step 200: ...", a
        # second logger) adds a pause after it, not to the interval that led to it
        first: dict[int, float] = {}
        for t, st in series:
            if st not in first or t < first[st]:
                first[st] = t
        pts = sorted(((t, st) for st, t in first.items()), key=lambda p: p[1])
        rates: list[float] = []
        for (t0, s0), (t1, s1) in zip(pts, pts[1:], strict=False):
            if s1 > s0 and t1 >= t0:
                rates.append((t1 - t0) / (s1 - s0))
        if len(rates) < 3:
            continue
        head, tail = rates[:-1], rates[-1:]
        if len(rates) >= 6:
            head, tail = rates[:-3], rates[-3:]
        base = statistics.median(head)
        if base <= 0:
            continue
        last = min(tail) if progress.completed and len(tail) >= 3 else max(tail)
        if max(head) >= RECURRING_PAUSE_SHARE * last:
            # an interval as long came earlier in the run and training went on after it: the job's own recurring pause
            # (an evaluation, a checkpoint), caught again just before the end, is no collapse (a new user's trial 29,
            # r03 and r21: a 1-s evaluation every 100 steps read "Throughput collapsed about 9x")
            continue
        factor = last / base
        if factor >= SLOWDOWN_FACTOR and (best is None or factor > best.factor):
            best = _Slowdown(factor, base, max(tail), path)
    return best


#: The largest SeqNum gap read as a few ranks ahead of the rest in one process group. A rank-dependent path issues a
#: handful of extra collectives; reports thousands apart are of different process groups (each counts its own), and
#: a rank's lowest SeqNum then mixes them (e.g. a public report with 1008 on one group, 956300 on another).
SEQ_AHEAD_MAX = 16
#: ProcessGroupNCCL's OpTypes whose element count is the same on every rank of one call (torch.distributed's
#: collectives: all_reduce, broadcast, reduce, all_gather(_into_tensor), reduce_scatter(_tensor), barrier). Not
#: COALESCED (a batch of ops, e.g. FSDP's uneven shards), ALLTOALL(_BASE) (uneven splits), GATHER/SCATTER (the root's
#: count differs) or SEND/RECV.
NUMEL_MUST_MATCH = frozenset({"ALLREDUCE", "BROADCAST", "REDUCE", "ALLGATHER", "_ALLGATHER_BASE", "REDUCE_SCATTER",
                              "_REDUCE_SCATTER_BASE", "BARRIER"})
#: One rank's send and its peer's receive are one point-to-point transfer, not two different collectives.
_P2P = {"SEND": "P2P", "RECV": "P2P", "RECVANYSOURCE": "P2P"}


#: The signature of init_process_group's store-based barrier still waiting (knowledge_base rendezvous.yaml).
STORE_BARRIER_WAIT = "c10d_store_barrier_waiting"
#: ``(world_size=8, worker_count=2, ...)`` (torch 1.x-2.0; ``num_workers_joined`` in later wording).
_STORE_BARRIER_COUNTS = re.compile(r"world_size=(\d+), (?:worker_count|num_workers_joined)=(\d+)")


def _store_barrier_finding(events: list[RawEvent]) -> str:
    """What the latest of the barrier's waiting reports says: how many of the group's ranks checked in.

    torch's ``_store_based_barrier`` (distributed_c10d.py, v1.13-2.0) logs the counts every 10 s while it waits."""
    counts = None
    for ev in events:  # (in time order: the last report is the latest count)
        m = _STORE_BARRIER_COUNTS.search(ev.key) or next(
            (m for m in map(_STORE_BARRIER_COUNTS.search, ev.lines) if m), None)
        if m:
            counts = (int(m.group(1)), int(m.group(2)))
    head = "init_process_group's store-based barrier was still waiting for the group's ranks to check in"
    if counts is None:
        return head + " when the logs end: some rank never reached init_process_group."
    world, joined = counts
    if joined < world:
        return (f"{head}: {joined} of {world} had ({world - joined} missing) when the logs end. The missing ranks never "
                "reached init_process_group: not launched, crashed or still loading before it, or given another "
                "MASTER_ADDR/MASTER_PORT; their own output says which.")
    return (f"{head}: {joined} processes checked in for a group of {world}. More than the group's size joined the same "
            "store key: a relaunch reusing a store that was still up, two jobs on one port, or a world size other "
            "than the number of processes the launcher started.")


def _hang_analysis(progress: ProgressLog, ranks_seen: set[int]) -> tuple[list[str], list[int], bool]:
    """Findings, suspect ranks, and whether the ranks at the most common SeqNum issued different collectives
    (OpType / numel), from collective-timeout reports."""
    findings: list[str] = []
    suspects: list[int] = []
    recs = [c for c in progress.collectives if c.rank is not None]
    if not recs:
        return findings, suspects, False
    per_rank: dict[int, tuple[int, str, int | None]] = {}
    for c in recs:
        cur = per_rank.get(c.rank)  # type: ignore[arg-type]
        if cur is None or c.seq < cur[0] or (c.seq == cur[0] and not cur[1]):
            per_rank[c.rank] = (c.seq, c.op, c.numel)  # type: ignore[index]
    seqs = Counter(v[0] for v in per_rank.values())
    top_seq = seqs.most_common(1)[0][0]
    # (a collective whose per-rank sizes may differ - a coalesced batch of uneven shards, an all-to-all's splits, a
    # gather's root - or one rank's send and its peer's receive, is no mismatch: only op and size that must agree)
    # (a report that does not say its op -- the watchdog's "failure detected ... at work sequence id" -- differs from none)
    at_top = {r: (v[0], _P2P.get(v[1], v[1]), v[2] if v[1] in NUMEL_MUST_MATCH else None)
              for r, v in per_rank.items() if v[0] == top_seq and v[1]}
    ops = Counter((v[1], v[2]) for v in at_top.values())
    if len(ops) > 1:
        desc = "; ".join(
            f"{op}{f'(numel {numel})' if numel is not None else ''} on rank(s) "
            f"{sorted(r for r, v in at_top.items() if (v[1], v[2]) == (op, numel))[:8]}"
            for (op, numel), _ in ops.most_common()
        )
        findings.append(f"Collective mismatch at SeqNum {top_seq}: ranks issued different collectives: {desc}.")
        (maj_key, maj_n), *rest = ops.most_common()
        minority = [r for r, v in at_top.items() if (v[1], v[2]) != maj_key]
        if maj_n >= 2 * len(minority) and maj_n >= 2:
            suspects = sorted(minority)
    if len(seqs) > 1:
        low = min(seqs)
        behind = sorted(r for r, v in per_rank.items() if v[0] == low)
        ahead = sorted(set(per_rank) - set(behind))
        if len(seqs) == 2 and len(behind) >= 2 * len(ahead) and max(seqs) - low <= SEQ_AHEAD_MAX:
            # the odd one out is ahead: most ranks wait at one SeqNum and a few count further, i.e. those issued
            # collectives the others never did (a rank-dependent path: a log or metric all-reduce on rank 0 only)
            # or completed ones the others still wait in (a broadcast's root); either way the few are where to look
            findings.append(
                f"Collective timeouts at different SeqNums: rank(s) {ahead[:8]} time out at {max(seqs)}, the "
                f"others ({len(behind)}) at {low}: the few ahead issued or finished collectives the others did not "
                "(a rank-dependent code path), and are the ones to look at first."
            )
            if not suspects:
                suspects = ahead
        else:
            findings.append(
                f"Collective timeouts at different SeqNums: rank(s) {behind[:8]} time out at {low}, "
                f"the others at up to {max(seqs)}; the lower ones are behind."
            )
            if not suspects and len(behind) < len(per_rank):
                suspects = behind
    waiting = set(per_rank)
    missing = sorted(ranks_seen - waiting)
    if not suspects and len(waiting) >= 2 and 0 < len(missing) <= max(1, len(ranks_seen) // 8):
        findings.append(
            f"{len(waiting)} rank(s) time out waiting in a collective; rank(s) {missing[:8]} do not: "
            "they never reached it and are the likely culprits."
        )
        suspects = missing
    if not findings:
        seq, op, numel = max(per_rank.values(), key=lambda v: bool(v[1]))  # one that says its op, if any does
        findings.append(
            f"{len(per_rank)} rank(s) timed out in {op or 'a collective'} at SeqNum {seq}; {NOBODY_NAMED} "
            f"({DUMPS_ADVICE})."
        )
    if set(seqs) == {1}:
        findings.append(FIRST_COLLECTIVE_FINDING)
    return findings, suspects, len(ops) > 1


def _iso_ts(value: str | None) -> float | None:
    """Unix seconds of an ISO-8601 evidence timestamp, None without one."""
    import datetime as _dt

    if not value:
        return None
    try:
        return _dt.datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def _ts_of(h: SignatureHit) -> float | None:
    """Unix seconds of the hit's first occurrence, None without a time."""
    return _iso_ts(h.first_timestamp)


def _cascade(h: SignatureHit, sigs: SignatureSet | None) -> str | None:
    """The hit's signature's cascade class (``silent_death`` / ``peer_loss``), None if it has none."""
    if sigs is None:
        return None
    try:
        return sigs.by_id(h.signature_id).cascade
    except KeyError:
        return None


def _cascade_name(h: SignatureHit, sigs: SignatureSet | None, line: str | None) -> str:
    """How ``h`` is named in another cause's cascade: its signature's ``cascade_name`` (its context rule's,
    when one refined it) with ``{message}`` the first line it matched (``line``, shortened to 120
    characters), else its name."""
    if sigs is None or line is None:
        return h.name
    if "context_rule" in h.details:
        rule = sigs.rule_by_id(h.signature_id, h.details["context_rule"])
        form = rule.cascade_name if rule is not None else None
    else:
        try:
            form = sigs.by_id(h.signature_id).cascade_name
        except KeyError:
            return h.name
    if form is None:
        return h.name
    return form.format(message=textwrap.shorten(line, 120, placeholder=" …"))


def _progressed_after(progress: ProgressLog, t: float) -> bool:
    """Some stream logged :data:`PROGRESS_AFTER_STEPS` or more training steps, each beyond the last step it
    had logged by time ``t`` (unix s), stamped after ``t``."""
    for series in progress.series.values():
        before = max((step for ts, step in series if ts <= t), default=None)
        later = {step for ts, step in series if ts > t and (before is None or step > before)}
        if len(later) >= PROGRESS_AFTER_STEPS:
            return True
    return False


def _retried_warnings(roots: list[SignatureHit], events: dict[int, list[RawEvent]], progress: ProgressLog,
                      findings: list[str]) -> set[int]:
    """Roots whose every event is a line of C++ logging at warning severity (``fields['severity']``, set by the
    extractor from the glog header: PyTorch's c10d ``socket.cpp`` logs each failed connection attempt as a
    warning and raises only when its timeout expires) stamped at an exact time after which the job still made
    training progress (:func:`_progressed_after`): an operation that was retried and then succeeded (a store
    connection refused while rank 0's store was starting), not a failure. ``events``: each root's events by
    ``id(hit)`` (a signature refined by a context rule has one hit per rule). Returns the ``id()`` of those hits."""
    out: set[int] = set()
    for h in roots:
        evs = events.get(id(h)) or []
        if not evs or not all(ev.fields.get("severity") == "warning" for ev in evs):
            continue
        if all(ev.ts is not None and not ev.ts_approx and _progressed_after(progress, ev.ts) for ev in evs):
            out.add(id(h))
            findings.append(f"{h.name}: logged as a warning, and training went on after it: a retried operation, "
                            "not the failure.")
    return out


#: Roots that say the whole job was stopped from outside (a scheduler's preemption, cancellation or time limit, a
#: cloud's reclaim, torchrun's agent signalled): the job did not fail by itself, and a restart does not meet it again.
EXTERNAL_STOPS = frozenset({"elastic_agent_death_signal", "slurm_time_limit", "slurm_node_failure", "slurm_cancelled",
                            "h_cloud_instance_preempted", "vs_k8s_preempted_or_tainted", "va_tpu_preemption_notice",
                            "vs_lightning_slurm_requeue"})
#: Seconds before a resumption line that its attempt may have begun failing (another rank's load failed first).
RESUME_LEAD_S = 60.0
RESUMED_AFTER_STOP_FINDING = (
    "The job was stopped from outside at {stop} ({name}: a preemption, cancellation or time limit; it did not fail by "
    "itself), then started again and resumed from its checkpoint at {resumed}; that attempt failed on its own, and that "
    "failure is what stops the job now (a restart meets it again).")


def _resumed_after_stop(roots: list[SignatureHit], saves: list[tuple[float, int | None, str, str, bool]],
                        findings: list[str]) -> float | None:
    """Where the later attempt begins (unix seconds) when the first root is an external stop (:data:`EXTERNAL_STOPS`),
    the job was resumed from a checkpoint after it (a ``resumed`` entry of ``saves``) and a root of another kind was
    first seen in that attempt (the later attempt's own failure), with a finding saying so; else None. The attempt
    begins :data:`RESUME_LEAD_S` before its resumption line (a rank may fail loading before another prints it), but
    not within :data:`LATER_FAILURE_S` of the stop (the stopped attempt's teardown)."""
    # (a borrowed time is a lower bound: a root stamped so at or after the attempt's start is in it)
    timed = [(t, h) for h in roots for t in [_ts_of(h)] if t is not None]
    if not timed:
        return None
    t0, first = min(timed, key=lambda x: x[0])
    if first.signature_id not in EXTERNAL_STOPS or first.first_timestamp_approx:
        return None
    resumed = min((ts for ts, _step, _path, kind, approx in saves if kind == "resumed" and not approx and ts > t0),
                  default=None)
    if resumed is None:
        return None
    begins = max(t0 + LATER_FAILURE_S, resumed - RESUME_LEAD_S)
    if not any(t >= begins and h.signature_id not in EXTERNAL_STOPS for t, h in timed):
        return None
    findings.append(RESUMED_AFTER_STOP_FINDING.format(stop=iso(t0), name=first.name, resumed=iso(resumed)))
    return begins


def _demote_late_roots(
    roots: list[SignatureHit], hits: list[SignatureHit], findings: list[str], sigs: SignatureSet | None = None,
    launches: list[float] | None = None,
) -> list[SignatureHit]:
    """The first failure is the cause; what follows is cascade. Three rules, on timestamped hits:

    - teardown: a low-priority root (below :data:`LATE_ROOT_PRIORITY`: store, connection and
      launcher errors) first seen more than :data:`LATE_ROOT_S` after the job's first failure
      evidence (any root or symptom) is part of the cascade. A root that is no peer-loss report
      (``cascade: peer_loss`` in the catalog) is measured against the first evidence that is not one
      either: its peers' reports of losing it may be stamped first (a rank killed by a signal prints
      nothing and its launcher reports it on its next poll; a rank whose own host aborted its socket
      finds out on its next send, after its peers read the reset; with a log collector's stamp on
      every line those reports carry exact times);
    - later failure: any root below :data:`HARDWARE_PRIORITY` first seen more than
      :data:`LATER_FAILURE_S` after an earlier root, or after a lost peer reported at an exact time
      (a ``cascade: peer_loss`` symptom, not a scheduler's summary: a failure had happened by then), is a
      consequence of it (a restarted job that then fails to re-rendezvous). A silent death
      (``cascade: silent_death``) is measured against roots that are not peer-loss reports. An
      approximate (borrowed, earlier) time is a lower bound, so it may only make a root later, never
      earlier. Hardware reports keep their rank: the kernel log often stamps them after the
      application error they caused;
    - later attempt: a root first seen at or after a launcher started the job again (``launches``: torchrun's
      start banner or torchelastic's "will restart worker group", stamped after an earlier failure) belongs to
      a later attempt, whatever its delay (a retry loop or ``--max-restarts`` re-runs the job within seconds):
      the first attempt's failure is the root cause, and the later attempt's is reported beside it, since the
      next restart meets it too (a checkpoint its killed predecessor left half-written, the same error again).
    """

    evidence = [h for h in hits if h.role in (EventRole.ROOT, EventRole.SYMPTOM)]
    # the reference of "later" must be an exact time: a borrowed one is only a lower bound of its event's
    times = [t for h in evidence if not h.first_timestamp_approx for t in [_ts_of(h)] if t is not None]
    if not times:
        return roots
    first_any = min(times)
    first_not_peer_loss = min((t for h in evidence if _cascade(h, sigs) != "peer_loss" and not h.first_timestamp_approx
                               for t in [_ts_of(h)] if t is not None), default=None)
    root_times = [t for h in roots for t in [_ts_of(h)] if t is not None and not h.first_timestamp_approx]
    # a killed rank's peers report the loss (peer-loss roots such as a reset connection) before its launcher
    # reports the death on its next poll: a silent death is measured against the other roots only
    first_own_root = min((t for h in roots if _cascade(h, sigs) != "peer_loss" and not h.first_timestamp_approx
                          for t in [_ts_of(h)] if t is not None), default=None)
    # a lost peer reported at an exact time means a failure had happened by then (a rank's SIGTERM from its
    # agent, a closed connection): a root seen long after it is that failure's consequence too
    loss_times = [t for h in hits if h.role is EventRole.SYMPTOM and _cascade(h, sigs) == "peer_loss"
                  and not h.first_timestamp_approx for t in [_ts_of(h)] if t is not None]
    first_failure = min(root_times + loss_times) if root_times or loss_times else None
    restart = min((x for x in launches or () if first_failure is not None and x > first_failure), default=None)
    kept: list[SignatureHit] = []
    again: list[str] = []  # the later attempt's failures, said in one finding
    for h in roots:
        t = _ts_of(h)
        if t is not None and restart is not None and t >= restart and h.priority < HARDWARE_PRIORITY:
            if h.name not in again:
                again.append(h.name)
            continue
        start = first_any
        earlier = first_failure
        if _cascade(h, sigs) != "peer_loss":
            # a failure of the rank's own is not measured against its peers' reports of losing it: they may be
            # stamped first (a killed rank is reported on its launcher's next poll; a rank whose socket its own
            # host aborted finds out on its next send, after the peers read the reset)
            start = first_not_peer_loss if first_not_peer_loss is not None else t
        if _cascade(h, sigs) == "silent_death":
            earlier = first_own_root  # its peers notice a killed rank before its launcher reports it
        if t is not None and start is not None and h.priority < LATE_ROOT_PRIORITY and t > start + LATE_ROOT_S:
            findings.append(f"{h.name} came {t - start:.0f} s after the first failure evidence: treated as teardown.")
            continue
        if (t is not None and earlier is not None and h.priority < HARDWARE_PRIORITY
                and t > earlier + LATER_FAILURE_S):
            findings.append(f"{h.name} came {t - earlier:.0f} s after an earlier failure: treated as its consequence.")
            continue
        kept.append(h)
    if again and restart is not None:
        findings.append(f"The job was started again at {iso(restart)} and that attempt failed too: {'; '.join(again[:4])}."
                        " The root cause above is the first attempt's; fix this one as well before the next restart.")
    return kept


#: The kernel's OOM killer naming its victim (mm/oom_kill.c: "Out of memory: Killed process %d (%s)", the memory
#: cgroup's "Memory cgroup out of memory: Killed process %d (%s)").
_OOM_KILLED_PID = re.compile(r"\bKilled process (\d{1,10}) \(")


def _oom_killed_rank(pevs: list[RawEvent], groups: list[TemplateGroup], one_node: bool) -> int | None:
    """The rank of the one process the OOM killer's report (``pevs``, the root's events) names, from torchelastic's
    report of that process id ("failed (exitcode: -9) local_rank: R (pid: P)", ``fields['agent_pid']``): its global
    rank, or on one node its local rank; None when the report names no pid, several, or no agent line names it
    (zoo dev b64: the kernel killed pid 20382, the agent's line says local_rank 1, and the later attempt's table
    named rank 2)."""
    pids = {m.group(1) for ev in pevs for ln in ev.lines[:4] if (m := _OOM_KILLED_PID.search(ln))}
    if len(pids) != 1:
        return None
    pid = next(iter(pids))
    ranks = {ev.rank if ev.rank is not None else ev.local_rank if one_node else None
             for g in groups for ev in g.examples if ev.fields.get("agent_pid") == pid}
    ranks.discard(None)
    return next(iter(ranks)) if len(ranks) == 1 else None  # type: ignore[return-value]


def _later_attempt_folders(roots: list[SignatureHit], by_tid: dict[int, list[TemplateGroup]],
                           findings: list[str]) -> list[SignatureHit]:
    """The roots seen only in a later ``attempt_N`` folder of torchelastic's ``--log-dir`` than another root's
    (``<log_dir>/<run_id>/attempt_N/<local_rank>/``, N counting the agent's restarts) are that later attempt's: the
    first attempt's failure is the cause, whatever the times (a first attempt's traceback often has none, while a
    later one's logger stamps its lines; zoo dev b64: attempt 0's bad JSON line, attempt 1's "File exists" for the run
    directory attempt 0 had made). Said in a finding, as :func:`_demote_late_roots` says a later attempt's failure.
    Hardware reports keep their place."""
    seen: dict[int, int] = {}
    for h in roots:
        att = [a for tid in h.template_ids for g in by_tid.get(tid, []) for p in g.paths
               if (a := attempt_of(p)) is not None]
        if att:
            seen[id(h)] = min(att)
    if len(set(seen.values())) < 2:
        return roots
    first = min(seen.values())
    later = [h for h in roots if seen.get(id(h), first) > first and h.priority < HARDWARE_PRIORITY]
    if not later:
        return roots
    names = list(dict.fromkeys(h.name for h in later))
    findings.append(f"A later attempt of the job (torchelastic's attempt_{max(seen[id(h)] for h in later)} logs) failed "
                    f"too: {'; '.join(names[:4])}. The root cause above is attempt_{first}'s; fix this one as well before "
                    "the next restart.")
    return [h for h in roots if h not in later]


_SRUN_CLEANUP = ("Killed", "Terminated")


def _srun_cleanup(roots: list[SignatureHit], groups: list[TemplateGroup], root_events: dict[int, list[RawEvent]],
                  findings: list[str]) -> list[SignatureHit]:
    """srun reports the step's tasks in the order they ended. Once one task ended abnormally (an abort, a non-zero
    exit, a crash), srun terminates the rest of the step (``--kill-on-bad-exit``; ``--wait``'s "terminating all
    remaining tasks", srun(1)), and reports them ``Killed`` or ``Terminated``. A root whose every line is such a
    later ``Killed``/``Terminated`` report, after an earlier report of another ending in the same file, is that
    cleanup, not a cause (a hang whose watchdog aborted ranks 0-2, and srun then killed the silent rank 3, is not
    rank 3's host OOM). ``root_events``: each root's example events, by ``id(hit)``."""
    first_other: dict[str, int] = {}  # per file, the first srun report of an ending that is not a kill
    for g in groups:
        for ev in g.examples:
            m = SRUN_REPORT.match(ev.key)
            if m and not m.group("status").startswith(_SRUN_CLEANUP):
                first_other[ev.path] = min(ev.line, first_other.get(ev.path, ev.line))
    if not first_other:
        return roots
    kept: list[SignatureHit] = []
    for h in roots:
        evs = root_events.get(id(h), [])
        late = [ev for ev in evs if (m := SRUN_REPORT.match(ev.key)) and m.group("status").startswith(_SRUN_CLEANUP)
                and ev.line > first_other.get(ev.path, ev.line)]
        if evs and len(late) == len(evs):
            findings.append(f"{h.name}: srun reported those tasks after another task of the step had ended: srun "
                            "terminating the rest of the step, not a cause.")
            continue
        kept.append(h)
    return kept


#: torchelastic's failure-table signals of its own teardown: after a worker fails, the agent stops the others with
#: SIGTERM and SIGKILLs those still alive after the grace period (torch/distributed/elastic/multiprocessing/api.py,
#: ``PContext.close``: ``death_sig``, then SIGKILL after ``timeout``, 30 s by default)
_ELASTIC_STOP_SIGNALS = ("-9", "-15")


def _elastic_teardown_kill(roots: list[SignatureHit], groups: list[TemplateGroup],
                           root_events: dict[int, list[RawEvent]], findings: list[str]) -> list[SignatureHit]:
    """A rank whose only failure is an entry of torchelastic's failure table ending by SIGKILL or SIGTERM, stamped more
    than :data:`LATER_FAILURE_S` after another entry of the same table that ended with a non-zero exit code of its own
    (a worker that raised), was stopped by its agent's teardown after that failure, not a cause of it (a rank SIGKILLed
    31 s after its peers exited with code 1 is the grace period running out, not the host OOM killer). ``root_events``:
    each root's example events, by ``id(hit)``."""
    first_exit: dict[str, float] = {}  # per file, the first table entry of a worker that exited with an error
    for g in groups:
        if g.kind is not EventKind.ELASTIC_SUMMARY:
            continue
        for ev in g.examples:
            code = ev.fields.get("exitcode", "")
            if ev.ts is not None and code.isdigit() and int(code) > 0:
                first_exit[ev.path] = min(ev.ts, first_exit.get(ev.path, ev.ts))
    if not first_exit:
        return roots
    kept: list[SignatureHit] = []
    for h in roots:
        # (one template holds every entry of the table: its entries with an exit code of their own are not this hit's)
        evs = [ev for ev in root_events.get(id(h), []) if ev.kind is not EventKind.ELASTIC_SUMMARY
               or not ev.fields.get("exitcode", "").isdigit()]
        late = [ev for ev in evs if ev.kind is EventKind.ELASTIC_SUMMARY and ev.ts is not None
                and ev.fields.get("exitcode", "") in _ELASTIC_STOP_SIGNALS and ev.path in first_exit
                and ev.ts > first_exit[ev.path] + LATER_FAILURE_S]
        if evs and len(late) == len(evs):
            gap = min(ev.ts - first_exit[ev.path] for ev in late if ev.ts is not None)
            findings.append(f"{h.name}: torchelastic recorded it {gap:.0f} s after another worker had exited with an "
                            "error: the agent stopping the remaining workers (SIGTERM, then SIGKILL after its grace "
                            "period), not a cause.")
            continue
        kept.append(h)
    return kept


def _plain_cut(h: SignatureHit) -> bool:
    """A traceback cut before its exception line whose context rule names no cause (only the frame it stopped in)."""
    return h.signature_id == "traceback_cut_short" and h.details.get("context_rule", "") in _CUT_SHORT_PLAIN


#: An agent's loss of the c10d store, which the agent of the rendezvous endpoint's node hosts.
#: (A store timeout there is the same loss, as the agent's keep-alive to the rendezvous words it: "has failed to send a
#: keep-alive heartbeat to the rendezvous ... RendezvousConnectionError".)
STORE_LOSSES = frozenset({"c10d_store_connection_closed", "c10d_store_lost_mid_run", "c10d_store_timeout"})
STORE_AFTER_EXIT_FINDING = (
    "{name} on {nodes} came after node {other}'s agent reported its own worker's failure ({when}): that agent exited "
    "and took the c10d store it hosted with it, so the store's loss is a consequence; the cause is node {other}'s "
    "worker's failure and what led to it.")


def _store_gone_after_worker_exit(roots: list[SignatureHit], groups: list[TemplateGroup],
                                  findings: list[str]) -> list[SignatureHit]:
    """``roots`` without the losses of the c10d store (:data:`STORE_LOSSES`) that an agent on another node's report
    of its own worker's exit ("failed (exitcode: 1) local_rank: 0", an exit event with a time of its own) precedes,
    within :data:`LATE_ROOT_S` (the store's host exits with its workers: the agent of node 1 loses the store 25 ms
    after node 0's rank timed out in a collective and its agent exited)."""
    losses = [h for h in roots if h.signature_id in STORE_LOSSES or h.details.get("context_rule") in STORE_LOSSES]
    if not losses:
        return roots
    exits = [(ev.ts, ev.node) for g in groups if g.kind is EventKind.EXIT for ev in g.examples
             if ev.ts is not None and not ev.ts_approx and ev.node is not None]
    gone = []
    for h in losses:
        t = _ts_of(h)
        nodes = set(h.nodes)
        before = [(ts, n) for ts, n in exits if nodes and n not in nodes and t is not None and ts <= t + LATE_ROOT_S]
        if before:
            ts, other = min(before)
            gone.append(h)
            findings.append(STORE_AFTER_EXIT_FINDING.format(name=h.name, nodes=", ".join(sorted(nodes)), other=other,
                                                            when=iso(ts)))
    return [h for h in roots if h not in gone] if gone else roots


def _peer_loss_yields(roots: list[SignatureHit], findings: list[str], sigs: SignatureSet | None) -> list[SignatureHit]:
    """A rank's report of a lost peer (``cascade: peer_loss``: a closed or reset connection, NCCL's remote
    error, a store timeout) is what every cause of a vanished peer produces, so it yields to a failure of
    the peer's own: such a report moves behind every other root on a rank it does not name, unless that
    root was first stamped more than :data:`LATE_ROOT_S` after it (then it may be the loss's
    consequence) or names no category (a traceback cut before its exception says nothing of a failure).
    The other root needs ranks; a report without ranks (an elastic agent's own lost connection to the c10d store,
    which the agent of the store's node hosts and takes with it when its workers fail) yields to any such root,
    unless a context rule refined it (it then names a cause of its own).
    The order among the rest is kept.

    PyTorch's gloo transport words it itself: "Connection closed by peer ... This is typically caused by a
    remote worker crashing. Check the logs of the remote worker" (``gloo/transport/tcp/pair.cc``)."""

    def yields(h: SignatureHit) -> bool:
        if _cascade(h, sigs) != "peer_loss" or (not h.ranks and h.details.get("context_rule")):
            return False  # a context rule that refined a report without ranks named a cause of its own
        t = _ts_of(h)
        for o in roots:
            if (o is h or _cascade(o, sigs) == "peer_loss" or o.category is Category.UNKNOWN or not o.ranks
                    or set(o.ranks) <= set(h.ranks) or _plain_cut(o)):
                continue
            to = _ts_of(o)
            if t is None or to is None or to <= t + LATE_ROOT_S:
                return True
        return False

    moved = [h for h in roots if yields(h)]
    if not moved:
        return roots
    rest = [h for h in roots if h not in moved]
    names = ", ".join(dict.fromkeys(h.name for h in moved))
    findings.append(f"{names}: a lost peer, reported while another rank failed of its own: treated as its consequence.")
    return rest + moved


#: At most this many lines per launcher start banner make logs that hold nothing else: torchrun's banner is 4 lines
#: (its OMP_NUM_THREADS notice between two rules and a blank glog line), plus its warnings on the launch's arguments.
BANNER_LINES = 8
#: ... and this many bytes per banner (its lines are about 130 to 250 characters; a progress bar that redraws itself
#: on one line is a worker's output of thousands)
BANNER_BYTES = 2048
#: The context rules of a cut traceback that name no cause of their own (a library's frame is only where it was cut).
_CUT_SHORT_PLAIN = frozenset({"", "cut_short_in_framework"})


#: A launcher signalled this long after the job's last progress line, in multiples of the job's own interval between
#: progress lines and at least :data:`STALL_MIN_S` seconds, was signalled after the job had stopped making progress
#: (:func:`_signal_after_stall`): a preemption or time limit arrives while steps still come (within about one
#: interval of the last); an operator, or a watchdog, ends a job that has been silent for many.
STALL_INTERVALS = 20
STALL_MIN_S = 10.0
#: Fewest progress lines of one stream before the job's interval between them is trusted.
STALL_MIN_POINTS = 5
#: The context-rule id a signal after a stall is marked with, and what the answer says of it.
SIGNAL_AFTER_STALL = "signalled_after_stall"
#: The last words of :data:`STALLED_FINDING`, dropped where the stacks say why (:func:`combine_hang`).
STALL_UNEXPLAINED = " Nothing in the logs says why it stalled; a restart may stall at the same point."
STALLED_FINDING = ("no rank reported an error or a timeout, and the launcher was signalled {gap} after the job's last "
                   "progress line (step {step}; its progress lines had come every {every}): the job had stopped making "
                   "progress, and whoever sent the signal ended a hang. Nothing in the logs says why it stalled; a "
                   "restart may stall at the same point.")


def _pace_before(t: float, progress: ProgressLog) -> tuple[tuple[float, int], float] | None:
    """The job's last progress line at or before ``t`` (``(unix seconds, step)``) and its median interval between
    progress lines in seconds, over the streams with at least :data:`STALL_MIN_POINTS` lines then; None without."""
    gaps: list[float] = []
    last: tuple[float, int] | None = None
    for series in progress.series.values():
        pts = sorted(p for p in series if p[0] <= t)
        if len(pts) < STALL_MIN_POINTS:
            continue
        gaps.extend(b[0] - a[0] for a, b in zip(pts, pts[1:], strict=False) if b[0] > a[0])
        if last is None or pts[-1][0] > last[0]:
            last = pts[-1]
    if last is None or not gaps:
        return None
    return last, float(sorted(gaps)[len(gaps) // 2])


def _signal_after_stall(roots: list[SignatureHit], progress: ProgressLog) -> list[SignatureHit]:
    """The roots without the torchrun agent's report of a death signal (SIGTERM, SIGHUP; ``elastic_agent_death_signal``)
    that came long after the job's last progress line: at least :data:`STALL_INTERVALS` of the job's own intervals
    between progress lines (the median over its streams, each of at least :data:`STALL_MIN_POINTS` lines) and
    :data:`STALL_MIN_S` seconds. Such a hit becomes a hang symptom in place (``fail_hang``, role symptom, category
    unknown, ``details['context_rule']`` :data:`SIGNAL_AFTER_STALL` with the gap): the signal ended a job that had
    stopped making progress (e.g. steps every 12 ms, 15 s of silence, then an operator's SIGTERM to torchrun,
    which would otherwise read "the scheduler cancelled healthy workers, restart"). A signal within a few intervals of the last
    step (a preemption, a time limit) stays the root."""
    hit = next((h for h in roots if h.signature_id == "elastic_agent_death_signal"
                and not h.details.get("context_rule") and not h.first_timestamp_approx), None)
    t_sig = _ts_of(hit) if hit is not None else None
    if hit is None or t_sig is None:
        return roots
    pace = _pace_before(t_sig, progress)
    if pace is None:
        return roots
    last, every = pace
    gap = t_sig - last[0]
    if gap < max(STALL_INTERVALS * every, STALL_MIN_S):
        return roots
    hit.role = EventRole.SYMPTOM
    hit.failure_mode = FailureMode.FAIL_HANG
    hit.category = Category.UNKNOWN
    hit.details = {**hit.details, "context_rule": SIGNAL_AFTER_STALL, "stalled_s": f"{gap:.1f}",
                   "last_step": str(last[1]), "every_s": f"{every:.3g}"}
    hit.name = "The launcher was signalled after the job had stopped making progress"
    return [h for h in roots if h is not hit]


def _cut_traceback_yields(roots: list[SignatureHit], hits: list[SignatureHit], findings: list[str]) -> list[SignatureHit]:
    """A traceback cut before its exception line (``traceback_cut_short``, unrefined or refined only by the library
    frame it stops in) is no root when the logs report a collective or store timeout (a hit of mode ``fail_hang``):
    the timeout is the one error the logs name, and a rank's traceback through ``backward()`` or a collective is
    how that timeout surfaced (PyTorch raises the watchdog's timeout from the waiting call). It becomes a symptom."""
    if not any(h.failure_mode is FailureMode.FAIL_HANG and h.role in (EventRole.ROOT, EventRole.SYMPTOM)
               for h in hits):
        return roots
    cut = [h for h in roots if _plain_cut(h)]
    if not cut:
        return roots
    findings.append("A traceback cut before its exception line, beside a collective or store timeout: read as the "
                    "timeout's own traceback.")
    return [h for h in roots if h not in cut]


#: Event kinds a rank writes about a failure of its own (a launcher's exit report or summary is not one).
_OWN_ERROR_KINDS = frozenset({EventKind.TRACEBACK, EventKind.EXCEPTION, EventKind.CPP_FRAMES, EventKind.NCCL,
                              EventKind.KERNEL, EventKind.ERROR_LINE})


def _agent_failed_rank(groups: list[TemplateGroup]) -> int | None:
    """The one local rank that a torchelastic agent reports as failed (``failed (exitcode: N) local_rank: R
    (pid: P)``, logged by ``torch.distributed.elastic.multiprocessing.api`` for the first worker it finds
    exited; the extractor puts N in the event's ``agent_exitcode``, on the agent's own line or on the
    traceback it was pasted into) with an exit of its own, or None. Workers the agent then stops
    (``closing signal SIGTERM``, exit -15) do not count. Callers use it only for one node without global
    ranks, where local ranks are global."""
    found = {ev.local_rank for g in groups for ev in g.examples
             if ev.local_rank is not None and ev.fields.get("agent_exitcode", "-15") != "-15"}
    return next(iter(found)) if len(found) == 1 else None


def _earlier(hit: SignatureHit, root: SignatureHit) -> bool:
    """True when ``hit`` was first stamped strictly before ``root`` (both stamped).

    A borrowed (approximate) time is a lower bound of the real one, so it may stand for ``root`` but
    not for ``hit``. A whole-second stamp (torchelastic's failure table: ``time : 2026-12-06_19:31:16``) is any time
    in that second: it is earlier than a root stamped within the same second only if it ends before it."""
    a, b = _ts_of(hit), _ts_of(root)
    if a is None or b is None or hit.first_timestamp_approx:
        return False
    return a + 1.0 <= b if a == int(a) and b != int(b) else a < b


#: A caller's report that an NCCL call returned an error: one of the result strings of NCCL's
#: ``ncclGetErrorString`` (nccl src/init.cc) after "failed: " or "NCCL error", e.g. XLA's "Execution of replica 0
#: failed: INTERNAL: NCCL operation ncclAllReduce(...) failed: invalid argument". NCCL's own WARN/INFO lines are not
#: matched by it (they report retries and set-up steps, see :func:`_own_errors`).
_NCCL_CALL_FAILED = re.compile(
    r"(?:failed: |NCCL error[^\n]{0,200}?)(?:unhandled cuda error|unhandled system error|internal error|"
    r"invalid argument|invalid usage|remote process exited or there was a network error)")


def _rank_node(rank: int, groups: list[TemplateGroup], also: set[str] | frozenset[str] = frozenset()) -> str | None:
    """The one node that ``rank``'s own lines name (each template's first event of the rank, and ``also``: nodes its
    other lines gave, e.g. its progress lines' streams), as :func:`node_names` names it; None when they name none or
    several."""
    where = set(also) | {g.rank_first[rank].node for g in groups if rank in g.rank_first and g.rank_first[rank].node}
    named, _ = node_names(sorted(where))
    return named[0] if len(where) == 1 and named else None


def _own_errors(groups: list[TemplateGroup], nccl: bool = True, benign: frozenset[int] = frozenset()) -> bool:
    """True when some rank wrote an error of its own: an exception, an error line, a kernel report, C++ frames or
    (with ``nccl``) an NCCL warning; NCCL INFO lines are not errors, nor are the templates in ``benign`` (template
    ids that only context-role signatures matched: lines the catalogue knows to be harmless)."""
    for g in groups:
        if g.template_id in benign:
            continue
        if g.kind is EventKind.NCCL:
            if g.first is None:
                continue
            lines = (g.first.key, *g.first.lines)
            if nccl and any(" NCCL WARN " in ln for ln in lines):
                return True
            if any(_NCCL_CALL_FAILED.search(ln) and " NCCL WARN " not in ln and " NCCL INFO " not in ln
                   for ln in lines):
                return True  # a caller's report that an NCCL call returned an error: not a warning
        elif g.kind in _OWN_ERROR_KINDS:
            return True
    return False


def _own_roots(hits: list[SignatureHit], sigs: SignatureSet | None) -> set[int | None]:
    """The ranks (None for an unattributed one) of the root hits that are a rank's own error: not a lost peer (its
    ``peer_loss`` cascade), nor a traceback cut before its exception line (which may be one)."""
    return {r for h in hits if h.role is EventRole.ROOT and _cascade(h, sigs) != "peer_loss"
            and h.signature_id != "traceback_cut_short" for r in (h.ranks or [None])}


def _training_output(groups: list[TemplateGroup], progress: ProgressLog, ranks_seen: set[int],
                     nodes_seen: set[str]) -> bool:
    """True when the text is recognisably a distributed job's output: a line only such a job writes
    (:data:`~diag_service.extract.events.JOB_OUTPUT`), ranks or nodes attributed, training progress lines,
    a training step's loss (``progress.trained``), NCCL's own lines, or an NCCL communicator's world size. A
    text with none of these (not a training log) is not called hung for lacking an error."""
    return bool(progress.job_output or ranks_seen or nodes_seen or progress.ranks or progress.series
                or progress.trained or progress.world_size or any(g.kind is EventKind.NCCL for g in groups))


def _sole_erring_rank(events: list[EventTemplate], lost_peer: frozenset[int] = frozenset()) -> int | None:
    """The one rank that wrote an error of its own (traceback, exception, NCCL error, error line) when no
    other rank did, or None.

    Events judged symptoms of another rank's failure (a lost peer, a watchdog timeout) or launcher
    summaries do not count, and a rank that also reported losing or waiting for a peer is not named: it
    noticed a failure elsewhere. Used when no signature named the rank, e.g. a pasted console where one
    rank's traceback carries a ``[rankN]:`` or Open MPI ``[1,N]<stderr>:`` prefix. ``lost_peer``: template ids of
    lost-peer reports (``cascade: peer_loss`` signatures, whatever their role), not counted either.
    """
    ranks: set[int] = set()
    for e in events:
        if e.kind is EventKind.NCCL and " NCCL WARN " not in e.first.text:
            continue  # NCCL INFO lines (and garbled interleavings of them) are not errors
        if e.template_id in lost_peer:
            continue  # a lost peer's report (cascade peer_loss): the noticing rank's, not its own failure
        if e.kind in _OWN_ERROR_KINDS and e.role not in (EventRole.SYMPTOM, EventRole.SUMMARY):
            if e.n_ranks > 1:
                return None
            ranks.update(e.ranks)
            if len(ranks) > 1:
                return None
    if len(ranks) != 1:
        return None
    rank = next(iter(ranks))
    if any(e.role is EventRole.SYMPTOM and rank in e.ranks for e in events):
        return None  # it also reported waiting for / losing a peer: its traceback is that peer's doing
    return rank


def _silent_rank(hits: list[SignatureHit], ranks: set[int], sigs: SignatureSet,
                 heard: frozenset[int] = frozenset()) -> int | None:
    """The one rank that says nothing while the other ranks report losing a peer, or None.

    The widest peer-loss report (``cascade: peer_loss`` signatures: closed connection, broken pipe,
    collective timeout; the earliest among equals) names every known rank but one, and that rank has no failure of its own
    (no signature hit other than peer-loss reports): a rank that vanished without a word (SIGKILL)
    is the one its peers lost. Later waves (a restarted group's rendezvous errors) do not count.
    Global ranks are dense, so a gap below the highest rank seen is a rank. Needs two reporters; in a job of two,
    one, when both ranks' own output is in the logs (``heard``: ranks with progress lines of their own), so the
    other's silence is not a file left out of the paste.
    """
    if ranks:
        ranks = set(range(max(ranks) + 1))
    pair = len(ranks) == 2 and heard >= ranks
    if len(ranks) < 3 and not pair:
        return None

    loss = [h for h in hits if _cascade(h, sigs) == "peer_loss" and h.ranks]
    if not loss:
        return None
    # the widest report (earliest among equals): a restarted group's later wave names fewer ranks
    first = min(loss, key=lambda h: (-len(h.ranks), _ts_of(h) is None, _ts_of(h) or 0.0))
    quiet = ranks - set(first.ranks)
    if len(quiet) != 1 or len(first.ranks) < (1 if pair else 2):
        return None
    rank = next(iter(quiet))
    if any(rank in h.ranks for h in hits if _cascade(h, sigs) != "peer_loss" and h.role is EventRole.ROOT):
        return None
    return rank


#: What :func:`_left_cleanly`'s rank did.
#: torch.multiprocessing.spawn's warning for each process it ends after another failed ("Terminating process P via
#: signal SIGTERM", torch/multiprocessing/spawn.py): that process was still alive (e.g. a rank waiting in its
#: all-reduce when its peer's barrier failed and spawn reported the peer).
SPAWN_TERMINATING = "Terminating process"
CLEAN_EXIT_FINDING = (
    "Every other rank lost its connection to rank {rank}, and the launcher's failure report lists them but not rank "
    "{rank}: it ended with exit code 0 while its peers still waited on it. The job's own code let one rank finish or "
    "return early (an early stop or a data loop that ends on one rank, a rank-dependent exit): every rank must leave "
    "the training loop together (PyTorch distributed docs: all ranks must call each collective)."
)


#: A rank's own line announcing that it leaves its loop (an early stop, a stop file, "training finished"): what its code
#: said as it returned.
_STOP_ANNOUNCED = re.compile(r"(?i)\b(?:early[ _-]?stop\w*|stopping|stop(?:ped)? training|finished|done|exiting|"
                             r"leaving|break(?:ing)? out|stop file)\b")


def _spawn_world(groups: list[TemplateGroup]) -> int | None:
    """The job's process count under torch.multiprocessing.spawn when its logs tell it: spawn reported the failed
    process and terminated each other live one with its own line ("Terminating process P via signal SIGTERM"), so
    the failed one plus those; None without spawn's report or with no other process terminated."""
    if not any(SPAWN_REPORT in g.template for g in groups):
        return None
    n = 1 + sum(g.count for g in groups if SPAWN_TERMINATING in g.template)
    return n if n >= 2 else None


def _elastic_world(groups: list[TemplateGroup]) -> int | None:
    """The job's process count from one torchrun agent's failure table when it lists every rank 0..n-1 (n >= 3) with
    its local rank equal to its rank, all on one node: after one worker fails the agent stops every other one, and the
    table lists each (torch/distributed/elastic/multiprocessing/errors/__init__.py; a rank that had already exited 0
    is not listed, so a gap leaves the size unknown). None otherwise: several nodes' tables each list only their own
    workers. (Trial 39 r05: 3 ranks, the table the one place that says so.) Node 0's table of a multi-node job pasted
    alone looks the same; the all-but-one reading it feeds names a rank only when every other listed rank timed out,
    which a cause on another node does not give (node 0's ranks all wait for it)."""
    ranks: set[int] = set()
    nodes: set[str] = set()
    for g in groups:
        if g.kind is not EventKind.ELASTIC_SUMMARY:
            continue
        for ev in (*g.examples, *g.rank_first.values()):
            if ev.rank is None or ev.local_rank != ev.rank:
                return None
        ranks |= g.ranks
        nodes |= g.nodes
    n = len(ranks)
    return n if n >= 3 and ranks == set(range(n)) and len(nodes) <= 1 else None


def _announced_stop(progress: ProgressLog, rank: int) -> bool:
    """True when ``rank``'s last line of its own (``progress.last_lines``) announces that it stops (an early stop, a
    stop file, the end of its loop): the rank's code returned on purpose."""
    lines = progress.last_lines.get(rank) or []
    return bool(lines) and _STOP_ANNOUNCED.search(lines[-1][3]) is not None


#: torch.multiprocessing.spawn's report of the process that failed (torch/multiprocessing/spawn.py, ProcessContext.join).
SPAWN_REPORT = "terminated with the following error"
SPAWN_CLEAN_EXIT_FINDING = (
    "Every other rank lost its connection to rank {rank}, and the launcher's failure report lists them but not rank "
    "{rank}: it ended with exit code 0 while its peers still waited on it, and its last line says nothing of stopping. Under "
    "torch.multiprocessing.spawn that is either the job's own code letting one rank return early (an early stop or a "
    "data loop that ends on one rank) or a SIGINT to that rank (an operator's Ctrl-C, a signal meant for another "
    "process): spawn's child wrapper swallows KeyboardInterrupt and exits 0 (torch/multiprocessing/spawn.py, _wrap). "
    "Check who signalled rank {rank}'s process, and whether its loop can end before its peers'."
)


OWN_ERROR_FINDING = ("Rank {rank}, the launcher's first observed failure, logged or raised an error of its own before it "
                     "exited ({where}: {text!r}): its program's own words for why it stopped, though no catalogued "
                     "message names a cause; the other ranks' errors follow from its exit.")


#: What a rank's own error may be for :func:`_exited_ranks_own_error`: its logger's error line, or an exception (a
#: traceback's last line) that no signature knows.
OWN_ERROR_KINDS = frozenset({EventKind.ERROR_LINE, EventKind.EXCEPTION, EventKind.TRACEBACK})


def _exited_ranks_own_error(events: list[EventTemplate], elastic_root: RawEvent | None) -> EventTemplate | None:
    """The latest error of its own (an unmatched error line or exception, :data:`OWN_ERROR_KINDS`: a logger's ERROR,
    an ``error:`` line, an uncatalogued exception) of the rank the launcher's failure report names first
    (``elastic_root``), written on that rank alone and no later than its reported exit (the report's time is to the
    second), or None. A program that logs why it gives up and exits with a code of its own (``logger.error(...)``,
    then an exit status of 3) leaves no traceback: that line is its cause as it saw it."""
    if elastic_root is None or elastic_root.rank is None:
        return None
    r, t_exit = elastic_root.rank, elastic_root.ts
    own = [e for e in events if e.kind in OWN_ERROR_KINDS and e.role is EventRole.CONTEXT and e.ranks == [r]
           and (t_exit is None or (t := _iso_ts(e.first.timestamp)) is None or t <= t_exit + 1.0)]
    return max(own, key=lambda e: (e.first.timestamp or "", e.first.line), default=None)


def _left_cleanly(rank: int, groups: list[TemplateGroup], launches: int) -> bool:
    """True when torchelastic's failure report (one agent, no restart of the worker group) lists every other rank as
    failed but not ``rank``: the agent reports every worker that exited non-zero or by a signal, so a worker it leaves
    out exited 0. After a restart the report is the last attempt's, and a worker killed in an earlier one is not in it
    (the lab's ``stop_sigkill_restart``); with several agents (nodes) the rank may be another agent's."""
    if launches > 1:
        return False
    summaries = [g for g in groups if g.kind is EventKind.ELASTIC_SUMMARY]
    reported = {r for g in summaries for r in g.ranks}
    agents = {n for g in summaries for n in g.nodes}
    # every other rank is in the report: a report cut short by the paste (a SIGKILLed rank's entry missing) says nothing
    return bool(reported) and reported == set(range(max(reported | {rank}) + 1)) - {rank} and len(agents) <= 1


def _event_templates(
    groups: list[TemplateGroup], per_group: dict[int, list[str]], hits_by_id: dict[str, SignatureHit],
    ranks_seen: int,
) -> list[EventTemplate]:
    out: list[EventTemplate] = []
    for gi, g in enumerate(groups):
        sids = per_group.get(gi, [])
        roles = [hits_by_id[s].role for s in sids if s in hits_by_id]
        role = (
            EventRole.ROOT if EventRole.ROOT in roles else
            EventRole.SYMPTOM if EventRole.SYMPTOM in roles else
            EventRole.SUMMARY if EventRole.SUMMARY in roles else EventRole.CONTEXT
        )
        base = _KIND_SUSPICION.get(g.kind, 0.2)
        if ranks_seen > 1 and g.ranks:
            base *= 1.0 + 0.5 * (1 - len(g.ranks) / ranks_seen)  # rarer across ranks: more suspicious
        if role is EventRole.ROOT:
            base = max(base, 0.9)
        elif role in (EventRole.SYMPTOM, EventRole.SUMMARY):
            base = min(base, 0.3)
        assert g.first is not None
        out.append(
            EventTemplate(
                template_id=g.template_id, template=g.template[:2000], kind=g.kind, role=role, count=g.count,
                ranks=sorted(g.ranks)[:64], n_ranks=len(g.ranks), nodes=sorted(g.nodes)[:64],
                first_timestamp=iso(g.first_ts), first=_evidence(g.first), signature_ids=sids,
                suspicion=round(min(base, 1.0), 3),
            )
        )
    return out


def localize(
    groups: list[TemplateGroup],
    hits: list[SignatureHit],
    per_group: dict[int, list[str]],
    progress: ProgressLog,
    sigs: SignatureSet,
    ranks_seen: set[int],
    nodes_seen: set[str],
) -> Localization:
    """Decide failure mode, category, first failing rank, faulty nodes, summary and evidence.

    ``groups`` are the deduplicated templates, ``hits`` the signature hits sorted by priority then
    time, ``per_group`` the signature ids per group index.
    """
    hits_by_id = {h.signature_id: h for h in hits}
    by_tid: dict[int, list[TemplateGroup]] = {}
    for g in groups:
        by_tid.setdefault(g.template_id, []).append(g)
    events = _event_templates(groups, per_group, hits_by_id, len(ranks_seen))
    findings: list[str] = []
    rank_node: tuple[int, str] | None = None  # (a hang's culprit, the node its own lines come from)
    # templates that only context-role signatures matched (lines known to be harmless), and lines their logger
    # marked informational that no signature matched: not a rank's own error
    matched = {tid for h in hits if h.role is not EventRole.CONTEXT for tid in h.template_ids}
    benign = frozenset(({tid for h in hits if h.role is EventRole.CONTEXT for tid in h.template_ids}
                        | {g.template_id for g in groups if g.kind is EventKind.ERROR_LINE and g.first is not None
                           and g.first.fields.get("severity") == "info"}) - matched)
    root_events = {id(h): [ev for tid in h.template_ids for g in by_tid.get(tid, []) for ev in g.examples]
                   for h in hits if h.role is EventRole.ROOT}
    retried = _retried_warnings([h for h in hits if h.role is EventRole.ROOT], root_events, progress, findings)
    if retried:
        hits = [h for h in hits if id(h) not in retried]
    all_roots = [h for h in hits if h.role is EventRole.ROOT]
    resumed = _resumed_after_stop(all_roots, progress.saves, findings)
    if resumed is None:
        roots = _demote_late_roots(all_roots, hits, findings, sigs, progress.launches)
    else:  # the attempt that resumed is judged on its own hits; what came before it precedes it
        after = [h for h in hits if (t := _ts_of(h)) is None or t >= resumed]
        roots = _demote_late_roots([h for h in after if h.role is EventRole.ROOT], after, findings, sigs,
                                   progress.launches)
    roots = _later_attempt_folders(roots, by_tid, findings)
    roots = _srun_cleanup(roots, groups, root_events, findings)
    roots = _elastic_teardown_kill(roots, groups, root_events, findings)
    roots = _peer_loss_yields(roots, findings, sigs)
    roots = _store_gone_after_worker_exit(roots, groups, findings)
    roots = _cut_traceback_yields(roots, hits, findings)
    roots = _signal_after_stall(roots, progress)
    thread_death = _thread_death_then_hang(roots, hits, root_events)
    if thread_death is not None:  # (and the other signatures that matched the same lines: one event, one story)
        roots = [h for h in roots if h is not thread_death and not set(h.template_ids) <= set(thread_death.template_ids)]
    handled = _handled_then_hang(roots, hits, root_events, by_tid) if thread_death is None else None
    if handled is not None:
        roots = [h for h in roots if h is not handled[0]]
    symptoms = [h for h in hits if h.role is EventRole.SYMPTOM or (h.role is EventRole.ROOT and h not in roots)]
    primary = roots[0] if roots else None
    confident = primary is not None and primary.confidence >= MIN_CONFIDENCE
    kinds_present = {g.kind for g in groups}
    terminated = bool(kinds_present & TERMINATION_KINDS)
    slow = _slowdown(progress)
    size = (progress.world_size or progress.launch_world or progress.stated_world or _spawn_world(groups)
            or _elastic_world(groups))
    world = set(range(size)) if size and size <= LIMITS.max_rank + 1 else set()
    hang_findings, hang_suspects, mismatched = _hang_analysis(progress, ranks_seen | world)
    # Each node's agent reports its own "first observed failure" (torchelastic's table; Ray's raylet naming a dead
    # worker's pid): the job's is the earliest of them.
    elastic_roots = [
        ev for g in groups if g.kind in (EventKind.ELASTIC_SUMMARY, EventKind.ERROR_LINE, EventKind.EXIT)
        for ev in g.examples if ev.fields.get("root") == "1"
    ]
    elastic_root = min(elastic_roots, key=lambda e: (e.ts is None, e.ts or 0.0), default=None)
    # every rank of the launcher's table ended by the same signal in the same second: one signal to them all (the
    # scheduler's to the agent, forwarded), so its "first observed failure" is a tie, not a rank or node at fault
    broadcast = _same_signal_at_once(
        [ev for g in groups if g.kind is EventKind.ELASTIC_SUMMARY for ev in g.examples])
    if broadcast:
        elastic_root = None
        findings.append(BROADCAST_FINDING)
    elif elastic_root is not None and elastic_root.node:
        srun_first = _srun_overrules(groups, elastic_root.node)
        if srun_first is not None:
            elastic_root = None
            findings.append(srun_first)

    evidence: list[Evidence] = []
    first_rank: int | None = None
    faulty_nodes: list[str] = []

    def primary_events(h: SignatureHit) -> list[RawEvent]:
        evs = [g.first for tid in h.template_ids for g in by_tid.get(tid, []) if g.first is not None]
        return sorted(evs, key=lambda e: (e.ts is None, e.ts or 0.0))

    if primary is not None and confident:
        category = primary.category
        mode = primary.failure_mode
        spec = sigs.by_id(primary.signature_id)
        responsible = spec.responsible or DEFAULT_RESPONSIBLE[category]
        confidence = primary.confidence
        # A lost peer reported at several layers (the socket's error, NCCL's remote error, Python's
        # connection reset) is one observation, and one that every cause of a vanished peer produces:
        # peer-loss reports never corroborate a root.
        corroborating = [h for h in roots[1:] if h.category == category and h.signature_id != primary.signature_id
                         and _cascade(h, sigs) != "peer_loss"]
        if corroborating:
            confidence = min(0.97, confidence + 0.05 * len(corroborating))
        pevs = primary_events(primary)
        for ev in pevs[:3]:
            evidence.append(_evidence(ev))
        # First failing rank.
        rank_ts: dict[int, float] = {}
        rank_approx: dict[int, bool] = {}  # the rank's earliest time is borrowed from an earlier line (a lower bound)
        for tid in primary.template_ids:
            for g in by_tid.get(tid, []):
                for r, t in g.rank_first_ts.items():
                    if r not in rank_ts or t < rank_ts[r]:
                        rank_ts[r] = t
                        ev_r = g.rank_first.get(r)
                        rank_approx[r] = bool(ev_r is not None and ev_r.ts_approx)
        waiting = _cascade(primary, sigs) == "peer_loss"  # the rank that reports it waited for another
        corroborated_node: str | None = None
        hang_root = primary.failure_mode is FailureMode.FAIL_HANG and not primary.ranks  # on no rank's line
        if (waiting and primary.failure_mode is FailureMode.FAIL_HANG) or hang_root:
            # the rank the others waited for, when their reports tell: a hang cause read from the waiting ranks'
            # reports (main_process_first), or one on a line no rank wrote (a debugger's prompt), where the first
            # to exit is a waiting rank, so the launcher's table does not tell
            reports = [primary, *symptoms] if waiting else symptoms
            absent, why = _reported_absentees(reports, ranks_seen | world, sigs, world_known=bool(world) and not waiting)
            first_rank = absent[0] if len(absent) == 1 else None
            if (first_rank is not None and why is not None and why.startswith(TWO_RANK_ABSENT)
                    and _lost_before_timeout(first_rank, reports + roots, by_tid, sigs, groups)):
                # the "absent" rank lost its connection before its peer timed out: the link between them failed
                why = MUTUAL_LOSS_FINDING.format(rank=first_rank)
                first_rank = None
                category, responsible = Category.NETWORK, DEFAULT_RESPONSIBLE[Category.NETWORK]
                confidence = min(confidence, 0.35)
                findings.append(why)
            elif first_rank is not None and why:
                findings.append(why)
        elif len(primary.ranks) == 1 and not waiting:
            first_rank = primary.ranks[0]
        elif len(rank_ts) >= 2 and not waiting:
            ordered = sorted(rank_ts.items(), key=lambda kv: kv[1])
            # two ranks whose times are both borrowed from earlier lines (lower bounds) are ordered only when they
            # lie more than BORROWED_ORDER_S apart: a few milliseconds between two bounds say nothing of which rank
            # raised first, and a harmless timed line in between reorders them (eval/noise_eval.py)
            gap = ordered[1][1] - ordered[0][1]
            borrowed = all(rank_approx.get(r, False) for r, _t in ordered[:2])
            if gap >= (BORROWED_ORDER_S if borrowed else 0.001):
                first_rank = ordered[0][0]
        if first_rank is None and not primary.ranks and len(nodes_seen | progress.source_nodes) <= 1:
            # the root's own lines sit in one rank's file of torchrun's --log-dir tree on the one node (local rank =
            # global rank): that rank failed, whatever the agent observed first (e.g. rank 1's
            # faulthandler dump in attempt_0/1/stderr.log while the agent's table is rooted at rank 0's later abort)
            # (or a --tee prefix, "[default2]:", whose global rank the bundle shows equal to the local one: a line
            # logged before the rank's first "[rank2]:" line carries only the local rank)
            same = _local_is_global(groups)
            own = {ev.local_rank for ev in pevs if ev.local_rank is not None and ev.kind is not EventKind.NCCL
                   and (progress.launcher_local_ranks.get(ev.path) == ev.local_rank or same)}
            if len(own) == 1:
                first_rank = next(iter(own))
        if first_rank is None and not primary.ranks and category is Category.HOST_OOM:
            # the kernel's OOM report names the process it killed, and the agent's "failed (exitcode: -9) local_rank: R
            # (pid: P)" names the rank of that process: the rank (before a later attempt's table names another)
            first_rank = _oom_killed_rank(pevs, groups, len(nodes_seen | progress.source_nodes) <= 1)
        if elastic_root is not None and elastic_root.rank is not None and not waiting and not hang_root and (
            first_rank is None and (not primary.ranks or elastic_root.rank in primary.ranks)
            # a cause reported only on other nodes (an agent signalled on node1): another node's table is a cascade
            and (primary.ranks or not primary.nodes or elastic_root.node is None or elastic_root.node in primary.nodes)
        ):
            first_rank = elastic_root.rank
            evidence.append(_evidence(elastic_root))
        if first_rank is None and not ranks_seen and len(nodes_seen | progress.source_nodes) <= 1:
            # One node and no global rank anywhere (a single torchrun agent's console): local ranks
            # are the global ranks, so the agent's "failed (exitcode) local_rank: N" names the rank.
            # (not NCCL's "[dev]", which is a CUDA device index and is 0 in every process that sees one GPU)
            # So does the folder of torchrun's --log-dir tree that holds the failing rank's stderr.
            locals_ = {ev.local_rank for ev in pevs if ev.local_rank is not None
                       and (ev.kind is EventKind.EXIT or progress.launcher_local_ranks.get(ev.path) == ev.local_rank)}
            first_rank = next(iter(locals_)) if len(locals_) == 1 else _agent_failed_rank(groups)
        if first_rank is None and not primary.ranks:
            # a cause on no rank's line (an agent signalled on node1): the one rank that reported losing its peer
            # noticed it, it did not fail first (else a survivor on node0 is named for node1's preemption)
            first_rank = _sole_erring_rank(events, frozenset(
                tid for h in hits if _cascade(h, sigs) == "peer_loss" for tid in h.template_ids))
        if first_rank is None and not primary.ranks:
            raisers = {r for h in hits if h.signature_id in RAISER_SUMMARIES for r in h.ranks}
            first_rank = next(iter(raisers)) if len(raisers) == 1 else None
        if first_rank is None and not primary.ranks and not waiting:
            # A cause stated on no rank's line (Slurm's "Detected 1 oom_kill event in StepId=...", the kernel's
            # OOM report) whose own effect the launcher states for one rank ("srun: error: node: task 1:
            # Killed"): a root of the same category on exactly one rank is that rank.
            same = {r for h in corroborating for r in h.ranks}
            if len(same) == 1:
                first_rank = next(iter(same))
                # and its node, when the launcher's line names it (srun's report does) and the message does not
                same_nodes = {n for h in corroborating if first_rank in h.ranks for n in h.nodes}
                if not primary.nodes and len(same_nodes) == 1:
                    corroborated_node = next(iter(same_nodes))
        # a hang's reporter (Horovod's coordinator, rank 0) is not its culprit: the rank it names as missing is
        out_of_step = ""
        absent = _one_named_missing(hits)
        silent_collector = _one_unanswered_by(hits) if absent is None else None
        lone = (_lone_submitter(hits, progress.world_size, ranks_seen | progress.ranks)
                if absent is None and silent_collector is None else None)
        if absent is not None and (first_rank is None or primary.failure_mode is FailureMode.FAIL_HANG):
            first_rank = absent
            findings.append(f"Rank {absent} is the one rank the logs name as never having arrived.")
        elif silent_collector is not None and (first_rank is None or primary.failure_mode is FailureMode.FAIL_HANG):
            first_rank = silent_collector
            findings.append(f"Rank {silent_collector} collects monitored_barrier and answered no rank, and its logs name "
                            "no missing rank: it never took part.")
        elif lone is not None and (first_rank is None or primary.failure_mode is FailureMode.FAIL_HANG):
            first_rank = lone
            findings.append(LONE_FINDING.format(rank=lone))
        elif primary.signature_id in COLLECTIVE_MISMATCHES and (ahead := _out_of_step_rank(progress)) is not None:
            first_rank, out_of_step = ahead
            findings.append(out_of_step)
        elif primary.signature_id in COLLECTIVE_MISMATCHES and (dev := _deviating_rank(events, primary)) is not None:
            first_rank, out_of_step = dev
            findings.append(out_of_step)
        alike = 0  # every rank raised the cause's error at once: how many
        if first_rank is not None and mode is FailureMode.FAIL_STOP and category not in NOT_SHARED \
                and _cascade(primary, sigs) != "peer_loss" and _raised_alike(primary, by_tid, rank_ts, ranks_seen):
            findings.append(RAISED_ALIKE_FINDING.format(n=len(ranks_seen), rank=first_rank))
            first_rank, alike = None, len(ranks_seen)
        stated = _checkpoint_failed_ranks(groups) if mode is FailureMode.FAIL_STOP else None
        if stated is not None and len(stated) == 1 and first_rank not in stated:
            first_rank = next(iter(stated))
            findings.append(CHECKPOINT_ONE_FINDING.format(rank=first_rank))
        elif stated is not None and len(stated) >= 2 and first_rank in stated and category not in NOT_SHARED:
            findings.append(CHECKPOINT_ALL_FINDING.format(ranks=", ".join(map(str, sorted(stated))), rank=first_rank))
            first_rank = None
            alike = len(stated) if stated >= ranks_seen else 0
        lone_cat = spec.one_rank_category
        # the ranks the logs show (a rank numbered N says the job has at least N + 1)
        known = max(len(ranks_seen | world), first_rank + 1 if first_rank is not None else 0)
        if (lone_cat is not None and mode is FailureMode.FAIL_STOP and first_rank is not None and not alike
                and len(primary.ranks) <= 1 and known >= 2 and "context_rule" not in primary.details):
            category = primary.category = lone_cat
            responsible = spec.responsible or DEFAULT_RESPONSIBLE[category]
            findings.append(ONE_RANK_FINDING.format(rank=first_rank, n=known, name=primary.name))
        named_node = primary.details.get("node")
        lost_said: str | None = None  # a node lost whole, said ahead of the finding's own summary
        if broadcast:
            pass  # one signal to every rank: no node singled out
        elif category in NODE_LEVEL and isinstance(named_node, str) and named_node:
            # the message names the node it is about ("Node failure on gpu-node-003"), not the host that wrote it
            faulty_nodes = [named_node]
        elif category in NODE_LEVEL and primary.nodes and not waiting:
            # (a lost connection's report names the node that noticed, not the faulty one); the same error on every
            # node of two or more (a corrupt file on shared storage read by all) singles none out
            every = len(primary.nodes) >= 2 and set(primary.nodes) >= (nodes_seen | progress.source_nodes)
            if len(primary.nodes) <= max(4, len(nodes_seen) // 10) and not every:
                faulty_nodes = list(primary.nodes)
        elif category in NODE_LEVEL and elastic_root is not None and elastic_root.node and first_rank == elastic_root.rank:
            faulty_nodes = [elastic_root.node]
        elif category in NODE_LEVEL and corroborated_node is not None:
            faulty_nodes = [corroborated_node]
        elif category in NODE_LEVEL and waiting and (lost := _lost_node(
                hits, progress.source_nodes, nodes_seen, sigs, progress.completed, progress.source_node_files)):
            # the finding is a lost peer or store (it names the node that noticed): the one node whose logs just stop
            # is the one lost (trial 36 r11: node 1's agent and ranks killed at once, node 0's agent lost the store)
            faulty_nodes, lost_said = [lost], lost
            findings.append(LOST_NODE_FINDING.format(node=lost))
        faulty_nodes, refused = node_names(faulty_nodes)
        if refused:
            findings.append(refused_nodes_finding(refused))
        # Failure mode adjustments.
        if progress.stack_dumps and not terminated:
            mode = FailureMode.FAIL_HANG
            findings.append("Stack dumps were taken and no process exited: the job was alive but stuck.")
        first_ev = pevs[0] if pevs else None
        # the node and local rank said with the first failing rank are that rank's own: the earliest event of the
        # cause may be another rank's (every rank raised the same error; a launcher's table named the first)
        where_ev = first_ev
        if first_rank is not None and first_ev is not None and first_ev.rank not in (None, first_rank):
            where_ev = next((ev for ev in pevs if ev.rank == first_rank), None) or next(
                (g.rank_first[first_rank] for tid in primary.template_ids for g in by_tid.get(tid, [])
                 if first_rank in g.rank_first), None)
            if where_ev is None and elastic_root is not None and elastic_root.rank == first_rank:
                where_ev = elastic_root
            if where_ev is not None:
                # the answer's first evidence line is the named rank's own (not another rank's copy of the same error under
                # a header naming this one)
                own = _evidence(where_ev)
                evidence[:] = [own, *(e for e in evidence if e != own)]
        ev_node = where_ev.node if where_ev is not None and where_ev.node not in refused else None
        # the rank's own event says its node; a faulty node stands in only when it is the one named (not a lost node:
        # the finding is then another node's report of losing it)
        where = _where(first_rank, where_ev.local_rank if where_ev else None,
                       ev_node if ev_node is not None and (first_rank is not None or lost_said is not None)
                       else faulty_nodes[0] if len(faulty_nodes) == 1 else ev_node)
        if alike:
            where = f"every rank ({alike})"
        when = ""
        if first_ev and first_ev.ts is not None:
            # a line without a stamp of its own borrows the last earlier stamp of its writer: a lower bound
            when = f" at or after {iso(first_ev.ts)}" if first_ev.ts_approx else f" at {iso(first_ev.ts)}"
        detail = ""
        if primary.details:
            shown = {k: v for k, v in primary.details.items() if k in ("code", "peer", "status", "sig", "exc", "op", "dev")}
            if shown:
                detail = " (" + ", ".join(f"{k}={v}" for k, v in shown.items()) + ")"
        summary = f"{primary.name}{detail} on {where}{when}. {primary.explanation}"
        if out_of_step:
            where_seen = sorted(primary.ranks)
            summary = (f"{primary.name}{detail}{when}: " + (f"reported by rank(s) {', '.join(map(str, where_seen))}; "
                       if where_seen else "") + f"{out_of_step} {primary.explanation}")
        if primary.signature_id in RENDEZVOUS_WAITS and primary.nodes and first_rank is None:
            said, apart = _rendezvous_waiters(primary.nodes, nodes_seen)
            summary = f"{primary.name}{when}. {said} {primary.explanation}"
            if apart:  # every node waited alone: their launch commands disagree
                # (the hit is refined with it, as a context rule refines one: it stays the diagnosis' primary hit)
                category, responsible = Category.CONFIG, DEFAULT_RESPONSIBLE[Category.CONFIG]
                primary.category = Category.CONFIG
        cascade = [h for h in hits if h.role in (EventRole.SYMPTOM, EventRole.SUMMARY)]
        cascade += [h for h in roots[1:] if h.priority < primary.priority and h.category != category]
        # A hit on the root cause's own lines (a generic signature matching the same event) is not its cascade.
        root_lines = set(primary.template_ids)
        cascade = [h for h in cascade if not set(h.template_ids) <= root_lines]
        # A symptom stamped before the root cause is a precursor (e.g. fp16 overflows before the loss
        # scale hits its minimum), not its consequence: it is named as what came first.
        # So is a routine message the catalogue marks as a precursor (``cascade: precursor``, e.g. fp16 loss-scale
        # overflows before the scale's minimum): no failure evidence of its own, but the story when one follows.
        before = [h for h in cascade if h.role is EventRole.SYMPTOM and _earlier(h, primary)
                  and not (h.signature_id == "process_sigterm" and _cascade(primary, sigs) == "silent_death")]
        # (torchelastic stops the other workers, "Sending process N closing signal SIGTERM", before it logs the killed
        # one's "failed (exitcode: -9) local_rank: R": the teardown is stamped first and is the kill's consequence;
        # torch/distributed/elastic/multiprocessing/api.py; a new user's trial 42, r02)
        before += [h for h in hits if h.role is EventRole.CONTEXT and _cascade(h, sigs) == "precursor"
                   and _earlier(h, primary) and not set(h.template_ids) <= root_lines]
        cascade = [h for h in cascade if h not in before]
        def label(h: SignatureHit) -> str:
            evs = primary_events(h)
            return _cascade_name(h, sigs, evs[0].key if evs else None)

        if before:
            names = ", ".join(dict.fromkeys(label(h) for h in before[:4]))
            findings.append(f"Before it, the logs reported: {names}.")
            summary += f" Preceded by: {names}."
        if cascade:
            other_ranks = sorted({r for h in cascade for r in h.ranks} - ({first_rank} if first_rank is not None else set()))
            names = ", ".join(dict.fromkeys(label(h) for h in cascade[:4]))
            # (the names are not all the other ranks': the root's own rank may report more of the same failure, a
            # chained exception or its launcher's signal)
            who = f"{len(other_ranks)} other rank(s)" if other_ranks else "The logs"
            findings.append(f"{who} then reported: {names}. These follow from the root cause above.")
            summary += f" Cascade: {names}" + (f" ({len(other_ranks)} other rank(s) failed after it)" if other_ranks
                                               else "") + "."
        if slow is not None:
            findings.append(f"Throughput fell {slow.factor:.0f}x before the failure ({slow.stream}).")
        if lost_said is not None:
            summary = LOST_NODE_SUMMARY.format(node=lost_said) + " " + summary
    else:
        category = Category.UNKNOWN
        responsible = Responsible.PLATFORM
        nccl_waiting = False  # the one rank whose NCCL warned is named, as for a failed one
        if symptoms and any(h.failure_mode is FailureMode.FAIL_HANG for h in symptoms) and slow is None \
                and not _stopped_before_hang(hits, sigs):
            mode = FailureMode.FAIL_HANG
            confidence = 0.3
            mismatch = bool(hang_suspects) and mismatched
            lone = None if hang_suspects else _lone_submitter(symptoms, progress.world_size, ranks_seen | progress.ranks)
            if lone is not None:
                # one rank issued a collective that every peer skipped: its code took a path theirs did not
                hang_suspects, mismatch = [lone], True
                hang_findings.append(LONE_FINDING.format(rank=lone))
            read_sites: dict[bool, dict[int, tuple[tuple[str, str], str | None]]] = {}

            def sites(wide: bool) -> dict[int, tuple[tuple[str, str], str | None]]:
                """Where each rank waited (:func:`_wait_sites`), read once each when needed: from its collective
                timeout, or (``wide``) also from its report of a lost peer (raised in the collective it was in)."""
                if wide not in read_sites:
                    reports = symptoms + [h for h in roots if _cascade(h, sigs) == "peer_loss"] if wide else symptoms
                    read_sites[wide] = _wait_sites(reports, by_tid, sigs, any_mode=wide)
                return read_sites[wide]

            mutual_loss = False
            if not hang_suspects:
                hang_suspects, why = _reported_absentees(symptoms, ranks_seen | world, sigs, world_known=bool(world),
                                                         hits=hits, heard=frozenset(progress.rank_last_step))
                if len(hang_suspects) == 1 and why is not None and not why.startswith(TWO_RANK_ABSENT):
                    present = _present_absentee(hang_suspects[0], sites(False), sites(True))
                    if present is not None:
                        hang_suspects, why = [], present
                if len(hang_suspects) == 1 and why is not None and why.startswith(TWO_RANK_ABSENT):
                    # the rank that did not time out may have been waiting too, in another collective: its report of
                    # the lost peer (raised where it waited) says where
                    pair = _pair_wait_sites(sites(True), progress)
                    if pair is not None:
                        hang_suspects, why = pair
                        mismatch = True
                    elif _lost_before_timeout(hang_suspects[0], symptoms + roots, by_tid, sigs, groups):
                        # the "absent" rank had lost its connection before its peer timed out: it was in the
                        # collective, and the connection between the two failed (e.g. a middlebox's resets)
                        other, hang_suspects = hang_suspects[0], []
                        why = MUTUAL_LOSS_FINDING.format(rank=other)
                        mutual_loss = True
                if not hang_suspects and not mismatch and not mutual_loss:
                    hang_suspects, why = _pair_wait_sites(sites(False), progress) or _odd_wait_site(sites(False))
                    if not hang_suspects:
                        # the ranks whose peer's exit ended their wait say where they waited too (a lost peer's error
                        # is raised in the collective the rank was in): with them, a rank in another collective than
                        # the rest may stand out (trial 44 r06: rank 1, a step ahead, timed out alone in the final
                        # barrier; ranks 0 and 2, still in step 120's all_reduce, saw its connection close)
                        odd, odd_why = (_odd_wait_site(sites(True), "wait (until a timeout or a lost peer ended it)")
                                        if len(sites(True)) > len(sites(False)) else ([], None))
                        if odd:
                            hang_suspects, why = odd, odd_why
                    mismatch = why is not None  # a site apart, named or not: ranks in different collectives
                if why:
                    hang_findings.append(why)
                if hang_suspects:
                    # the timeouts alone named nobody ("the logs do not show which rank never joined"); now a
                    # report or the job's size did: that sentence no longer holds
                    hang_findings = [f for f in hang_findings if NOBODY_NAMED not in f]
            common = None
            if mutual_loss:
                category, responsible, confidence = Category.NETWORK, DEFAULT_RESPONSIBLE[Category.NETWORK], 0.35
            elif not hang_suspects and not mismatch:
                common = _common_wait_site(sites(False), world or ranks_seen)
                if common is None:
                    # ranks whose lost peer ended the wait were in it too (their error is raised where they waited)
                    common = _common_wait_site(sites(True), world or ranks_seen,
                                               "waited (until a timeout or a lost peer ended it)")
                late = _late_timeout(groups, world or ranks_seen) if common is not None else None
                if late is not None:
                    # the same collective, but one rank's timeout fired long after its peers': it entered late
                    hang_suspects, common = [late[0]], None
                    hang_findings.append(LATE_TIMEOUT_FINDING.format(rank=late[0], gap=f"{late[1]:.0f} s"))
            if common is not None:
                # every rank waits in the same call of the same collective: none is late, none is elsewhere (the
                # link); or in the same point-to-point call: a wait cycle of the job's own send/recv order
                finding, category = common
                responsible, confidence = DEFAULT_RESPONSIBLE[category], 0.45
                hang_findings.append(finding)
            if mismatch:
                # ranks that issued different collectives at the same point: the job's own code (the rule of
                # MISMATCH_KINDS for stack dumps; PyTorch distributed docs, "Collective functions")
                category, responsible, confidence = Category.USER_CODE, DEFAULT_RESPONSIBLE[Category.USER_CODE], 0.45
                hang_findings.append("Ranks in different collectives at the same point: the job's code takes a "
                                     "rank-dependent path (uneven data, a rank-only branch) around a collective.")
            findings.extend(hang_findings)
            if hang_suspects:
                first_rank = hang_suspects[0] if len(hang_suspects) == 1 else None
                if first_rank is not None:
                    # the node the silent rank's own lines come from (its progress lines' file or prefix, its events)
                    node = _rank_node(first_rank, groups,
                                      {n for (_p, r, n) in progress.series if r == first_rank and n})
                    if node is not None:
                        rank_node = (first_rank, node)
                        # where to look (py-spy, its kernel log), said in words; faulty_nodes (the node to act on,
                        # and a node fault in the recovery history) only for a node-level category: a rank stuck in
                        # the job's code or its data says nothing against its node
                        hang_findings.append(f"Rank {first_rank} runs on node {node}.")
                        findings.append(hang_findings[-1])
                        if category in NODE_LEVEL:
                            faulty_nodes = [node]
            if handled is not None:
                # the rank went on after its own error and then waited in a collective: the error path is where its
                # peers' collectives and its own parted (a skipped barrier or save), or what it no longer did
                err, erring = handled
                first_rank = erring
                hang_suspects = [erring]
                if category is Category.UNKNOWN and not mismatch:
                    category, responsible = err.category, DEFAULT_RESPONSIBLE[err.category]
                confidence = max(confidence, 0.4)
                hang_findings.insert(0, HANDLED_THEN_HANG_FINDING.format(rank=erring, error=err.name))
                evidence.insert(0, _evidence(primary_events(err)[0]))
            if thread_death is not None and category is Category.UNKNOWN and not mismatch:
                # a thread of a rank died on an error and its process went on without it: the collective it no
                # longer fed (or the rank it blocked) is where its peers waited; the thread's error is the cause
                dead = primary_events(thread_death)[0]
                category, responsible = thread_death.category, DEFAULT_RESPONSIBLE[thread_death.category]
                confidence = max(confidence, 0.4)
                hang_findings.insert(0, THREAD_DEATH_FINDING.format(
                    thread=dead.fields.get("thread", "?"), error=dead.key[:200]))
                evidence.append(_evidence(dead))
            before_init = False  # only init_process_group's store-based barrier was seen waiting
            interrupted = not hang_findings and _interrupted_only(symptoms)
            stalled = next((h for h in symptoms if h.details.get("context_rule") == SIGNAL_AFTER_STALL), None)
            if interrupted and stalled is not None:
                hang_findings = [STALLED_FINDING.format(gap=f"{float(stalled.details['stalled_s']):.0f} s",
                                                        step=stalled.details["last_step"],
                                                        every=f"{float(stalled.details['every_s']):.3g} s")]
                findings.extend(hang_findings)
            elif interrupted and (going := _still_progressing(symptoms, progress, groups)) is not None:
                # the steps came until the interrupt (e.g. Ctrl-C to torchrun while it trained): a person
                # stopped a running job; nothing here failed or hung
                mode = FailureMode.FAIL_STOP
                hang_findings = [INTERRUPTED_RUNNING_FINDING.format(*going)]
                findings.extend(hang_findings)
            elif interrupted:
                hang_findings = [INTERRUPTED_FINDING]
                findings.extend(hang_findings)
            elif not hang_findings:
                stuck = [h for h in symptoms if h.failure_mode is FailureMode.FAIL_HANG]
                if stuck and all(h.signature_id == "nccl_heartbeat_monitor" for h in stuck):
                    # no collective timed out: the watchdog thread itself was blocked (a CUDA or NCCL call that never
                    # returned), which ProcessGroupNCCL's heartbeat monitor reports and then aborts the process
                    where = sorted({r for h in stuck for r in h.ranks})
                    who = (f"rank(s) {where[:8]}" if where else "a rank")
                    hang_findings = [f"The NCCL watchdog thread of {who} was stuck inside a CUDA or NCCL call (no "
                                     "collective timeout was reported): the process hung; the logs do not name the "
                                     "rank at fault."]
                elif stuck and all(h.signature_id == STORE_BARRIER_WAIT for h in stuck):
                    before_init = True
                    hang_findings = [_store_barrier_finding([ev for h in stuck for ev in primary_events(h)])]
                else:
                    hang_findings = ["Ranks timed out waiting in collectives; the logs do not name the rank that never "
                                     "joined."]
                findings.extend(hang_findings)
            lead = ("The job stalled, then was stopped: " if interrupted and stalled is not None
                    else "The job was stopped while it ran: " if interrupted and mode is FailureMode.FAIL_STOP
                    else "The job was interrupted: " if interrupted
                    else "The job hung creating a process group: " if before_init else "The job hung in a collective: ")
            summary = lead + " ".join(hang_findings)
            for h in symptoms:  # evidence: the report that names the culprit, or the culprit's own report, first
                if len(evidence) >= 2:
                    break
                if _missing_ranks(h):
                    evidence += [_evidence(ev) for ev in primary_events(h)[:1]]
                elif first_rank is not None and h.failure_mode is FailureMode.FAIL_HANG:
                    evidence += [_evidence(g.rank_first[first_rank]) for tid in h.template_ids
                                 for g in by_tid.get(tid, []) if first_rank in g.rank_first][:1]
            for h in symptoms[:2]:
                for ev in primary_events(h)[:2]:
                    evidence.append(_evidence(ev))
        elif slow is not None and not _own_roots(hits, sigs):
            # a collapse read from the step lines is the story only when no rank raised an error of its own: a job
            # that crashed is fail_stop whatever its last steps' pace (zoo dev b65: a rank's topk on an empty
            # candidate set, unmatched, read "Throughput collapsed about 3x"). A lost peer after the collapse is no
            # error of its own (incidents_dev dev-013: the slowdown, then a gloo "Connection reset by peer")
            mode = FailureMode.FAIL_SLOW
            confidence = 0.35
            summary = (
                f"Throughput collapsed about {slow.factor:.0f}x before the job ended ({slow.baseline_s:.2f} s/step "
                f"normally, {slow.last_s:.2f} s/step at the end, from {slow.stream}); the cause is not in the logs."
            )
            if progress.completed and not _own_errors(groups, nccl=False, benign=benign):
                # the run then reported its own completion (e.g. every rank's "training complete: 150
                # steps" in torchrun's --log-dir files): nothing to restart (the policy's slow_after_completion)
                path, line = next(iter(progress.completed.items()))
                summary += (f" The run then reported its own completion ({line!r} in {path}): there is no job to "
                            "restart; deal with the slowdown before its next run.")
                findings.append(COMPLETED_SLOW_FINDING)
            for g in groups:
                if g.first is not None and g.kind in (EventKind.TRACEBACK, EventKind.EXCEPTION, EventKind.NCCL):
                    evidence.append(_evidence(g.first))
                    break
        elif progress.stack_dumps and not terminated:
            mode = FailureMode.FAIL_HANG
            confidence = 0.25
            summary = "Stack dumps were taken and no process exited: the job hung; no known cause in the logs."
        elif progress.benchmarks and not terminated:
            # an nccl-tests run that went through every size with its data check passed: nothing failed, and the
            # figure it ends with is the finding (public corpus dev: such pastes report a fabric slower than it
            # should be); whether it is slow depends on the fabric, which the log does not give
            mode = FailureMode.FAIL_SLOW
            confidence = BENCHMARK_CONFIDENCE
            path, line = next(iter(progress.benchmarks.items()))
            summary = (
                f"An nccl-tests benchmark ran through every message size and its data check passed ({line}, {path}): "
                "no process failed. Judge the bus bandwidth against the fabric's: NVLink within a node and 400 Gb/s "
                "InfiniBand or RoCE between nodes reach tens to hundreds of GB/s at large sizes; far less means a "
                "slow path (NCCL fell back to sockets, a NIC or GPU on the wrong PCIe switch, a degraded link), to "
                "check with NCCL_DEBUG=INFO's transport lines."
            )
            findings.append("The logs end with an nccl-tests summary: a completed benchmark, not a failed job.")
        elif not terminated and not _own_errors(groups, nccl=False, benign=benign) and _training_output(
                groups, progress, ranks_seen, nodes_seen):
            mode = FailureMode.FAIL_HANG
            confidence = ALIVE_NO_ERROR_CONFIDENCE
            nccl_waiting = _own_errors(groups, benign=benign)
            if progress.completed and not nccl_waiting:
                mode = FailureMode.NONE
                path, line = next(iter(progress.completed.items()))
                summary = (
                    "No failure in these logs: they show no error, exit code or launcher failure report, and end "
                    f"with the run's own report that it finished ({line!r} in {path}"
                    + (f" and {len(progress.completed) - 1} other file(s)" if len(progress.completed) > 1 else "")
                    + "). If the job did fail, these are not the failed attempt's logs."
                )
                findings.append(COMPLETED_FINDING)
            elif nccl_waiting:
                summary = (
                    "The logs end without an error, an exit code or a launcher's failure report, after NCCL "
                    "warnings that no rank turned into an error: NCCL was still retrying or waiting (a hang, "
                    "typically in communicator set-up), unless the excerpt stops short."
                )
                findings.append("NCCL warned, but no rank raised an error or exited: the job was alive and waiting.")
            elif progress.launcher_started and not groups and not ranks_seen and not progress.ranks \
                    and not progress.series and 0 < progress.lines_read <= BANNER_LINES * progress.launcher_started \
                    and progress.bytes_read <= BANNER_BYTES * progress.launcher_started:
                summary = (
                    "The logs hold only the launcher's start-up lines (torchrun's banner) and nothing a worker wrote, "
                    "and no error or exit: the job was still starting when they were taken. If its workers never "
                    "started, it is stuck in the rendezvous: check that the --rdzv-endpoint host and port are the same "
                    "on every node, reachable and not held by another process, that --rdzv-id matches and that every "
                    "node was launched; if they did start, these logs lack their output (torchrun --tee 3 or "
                    "--log-dir)."
                )
            elif (looked := _store_lookup_retries(hits, by_tid)) is not None and not progress.series:
                host, n = looked
                category, responsible = Category.CONFIG, DEFAULT_RESPONSIBLE[Category.CONFIG]
                confidence = 0.45
                summary = STORE_LOOKUP_FINDING.format(host=host, n=n)
                findings.append(STORE_LOOKUP_FINDING.format(host=host, n=n))
            else:
                summary = ALIVE_SUMMARY
                findings.append(ALIVE_FINDING)
        else:
            mode = FailureMode.FAIL_STOP
            confidence = 0.15 if groups else 0.05
            shown = [h for h in hits if primary is None or h.name != primary.name]  # the suspect is named below
            if shown:  # the report must not deny what the diagnosis' signature_hits list
                weak = ", ".join(dict.fromkeys(f"{h.name} ({h.role.value})" for h in shown[:4]))
                more = f" and {len(shown) - 4} more" if len(shown) > 4 else ""
                summary = f"No signature matched strongly enough to name the cause; matched weakly: {weak}{more}."
            elif primary is not None:
                summary = "No signature matched strongly enough to name the cause."
            else:
                summary = "No known failure signature matched with enough confidence."
        # a lost peer in a hang whose absentee is named is that hang's doing, not a suspect of its own
        explained = (primary is not None and mode is FailureMode.FAIL_HANG and bool(hang_suspects)
                     and _cascade(primary, sigs) == "peer_loss")
        own_line = _exited_ranks_own_error(events, elastic_root) if mode is FailureMode.FAIL_STOP else None
        # ... and so is a lost peer beside the exited rank's own error line: it noticed that rank's exit
        explained = explained or (own_line is not None and primary is not None and _cascade(primary, sigs) == "peer_loss")
        # ... and so is an abort in a hang its collective timeouts show: the NCCL watchdog takes a timed-out rank down
        # with SIGABRT (exit -6; "To avoid data inconsistency, we are taking the entire process down")
        explained = explained or (primary is not None and mode is FailureMode.FAIL_HANG
                                  and primary.signature_id == "abort_core_dump" and bool(progress.collectives))
        if primary is not None and not explained:
            summary += f" Suspected: {primary.name} ({primary.explanation.split('. ')[0]})."
            confidence = max(confidence, min(primary.confidence, 0.39))
            for ev in primary_events(primary)[:2]:
                evidence.append(_evidence(ev))
        ranked = sorted(events, key=lambda e: -e.suspicion)
        if own_line is not None:
            ranked = [own_line, *(e for e in ranked if e is not own_line)]
            evidence.insert(0, own_line.first)
            findings.append(OWN_ERROR_FINDING.format(rank=own_line.ranks[0], text=own_line.first.text[:200],
                                                     where=f"{own_line.first.file}:{own_line.first.line}"))
        if not evidence:
            evidence = [e.first for e in ranked[:3]]
        if ranked:
            summary += " Most suspicious events: " + "; ".join(f"'{e.first.text[:160]}'" for e in ranked[:3]) + "."
        # ranks whose own output is in the logs: progress lines, or (one node: local ranks are global) a file of
        # torchrun's --log-dir tree
        heard = set(progress.rank_last_step)
        if len(progress.source_nodes) <= 1:  # the files' own nodes (a host named on a pasted NCCL line is no agent)
            heard |= set(progress.launcher_local_ranks.values())
        # a node whose logs just stop while the other nodes lose their peers went away whole: read first, so that
        # its silent rank is not taken for one that returned early (its agent's report went with it)
        lost = (_lost_node(hits, progress.source_nodes, nodes_seen, sigs, progress.completed,
                           progress.source_node_files)
                if mode is FailureMode.FAIL_STOP and first_rank is None else None)
        # under torch.multiprocessing.spawn a rank's error reaches the output only through spawn's one report, and a
        # rank spawn SIGTERMed was still alive: its silence says nothing of an early end
        silent = (None if any(SPAWN_TERMINATING in g.template for g in groups)
                  else _silent_rank(hits, ranks_seen | world, sigs, frozenset(heard)))
        if silent is not None and first_rank is None:
            first_rank = silent
            if lost is not None:
                pass  # the lost node's rank: the node's reading below says why
            elif (clean := _left_cleanly(silent, groups, len(progress.launches))) and any(
                    SPAWN_REPORT in g.template for g in groups) and not _announced_stop(progress, silent):
                # torch.multiprocessing.spawn's child wrapper swallows KeyboardInterrupt and returns: a SIGINT to one
                # rank (an operator's Ctrl-C meant for another process) ends it with exit code 0 too, without a line
                category, responsible, confidence = Category.UNKNOWN, DEFAULT_RESPONSIBLE[Category.UNKNOWN], 0.3
                summary = SPAWN_CLEAN_EXIT_FINDING.format(rank=silent) + " " + summary
                findings.append(SPAWN_CLEAN_EXIT_FINDING.format(rank=silent))
            elif clean:
                # torchelastic lists every worker of its agent that failed (exit code or signal): one it leaves out
                # ended with exit code 0 while its peers were still in a collective with it
                category, responsible, confidence = Category.USER_CODE, DEFAULT_RESPONSIBLE[Category.USER_CODE], 0.4
                summary = CLEAN_EXIT_FINDING.format(rank=silent) + " " + summary
                findings.append(CLEAN_EXIT_FINDING.format(rank=silent))
            else:
                findings.append(SILENT_DEATH_FINDING.format(rank=silent))
        if lost is not None:
            category, responsible, confidence = Category.INFRASTRUCTURE, DEFAULT_RESPONSIBLE[Category.INFRASTRUCTURE], 0.45
            faulty_nodes = [lost]
            summary = LOST_NODE_SUMMARY.format(node=lost) + " " + summary
            findings.append(LOST_NODE_FINDING.format(node=lost))
        noticed = False  # the one rank in the logs only noticed a lost peer: no fallback below names it
        if (elastic_root is not None and elastic_root.rank is not None and first_rank is None and lost is None
                and mode is FailureMode.FAIL_STOP):
            if noticed := _only_noticed(elastic_root.rank, hits, sigs, ranks_seen):
                # the launcher's first failure is the one rank in the logs, and its own error is a lost peer: it
                # noticed; the rank that failed first is another, whose logs are not here
                other = sorted(world - {elastic_root.rank})
                if len(other) == 1:
                    first_rank = other[0]
                findings.append(NOTICED_ONLY_FINDING.format(rank=elastic_root.rank) + (
                    f" The job has two ranks: rank {first_rank} is the one it lost." if len(other) == 1 else ""))
                summary = findings[-1] + " " + summary
            else:
                first_rank = elastic_root.rank
                evidence.append(_evidence(elastic_root))
        if (first_rank is None and not noticed and mode is FailureMode.FAIL_STOP and primary is not None
                and len(primary.ranks) == 1 and _cascade(primary, sigs) != "peer_loss"):
            # a suspect too weak to name the category (e.g. an unspecified launch failure) is still that rank's
            # own error: the rank it happened on failed first. A lost peer's report names the rank that noticed.
            first_rank = primary.ranks[0]
        if (first_rank is None and not noticed and mode is FailureMode.FAIL_STOP and primary is not None
                and _cascade(primary, sigs) == "peer_loss"):
            # the suspect is a lost peer, noticed by the ranks it names; one rank that did not notice but raised an
            # error of its own (a root too weak to name the category) is the peer they lost, whatever the clocks of
            # their nodes say (zoo dev b65: rank 3's RuntimeError stamped after its peers' "Connection closed by peer"
            # by node 1's clock running 8 s ahead)
            own = _own_roots(hits, sigs)
            if len(own) == 1 and None not in own and not own & set(primary.ranks):
                first_rank = next(iter(own))
        if first_rank is None and lost is None and not noticed and (mode is FailureMode.FAIL_STOP or nccl_waiting):
            # (a lost node's ranks wrote nothing; the one erring rank is then a survivor that noticed)
            first_rank = _sole_erring_rank(events)
        if first_rank is None and not noticed and mode is FailureMode.FAIL_STOP and not ranks_seen \
                and len(nodes_seen) <= 1:
            first_rank = _agent_failed_rank(groups)
    if primary is not None and confident:
        # Root-signature events of another category and lower priority are part of the cascade.
        for e in events:
            same = [hits_by_id[s] for s in e.signature_ids if s in hits_by_id]
            if e.role is EventRole.ROOT and not any(h.category == category and h.role is EventRole.ROOT for h in same):
                e.role = EventRole.SYMPTOM
    after = None
    if mode is FailureMode.FAIL_STOP:
        after = _failed_after_completion(events, benign, progress)
    elif mode is FailureMode.FAIL_HANG and not _one_ranks_completion(progress, ranks_seen):
        after = _failed_after_completion(events, benign, progress, HUNG_AFTER_COMPLETION_FINDING)
    if after is not None:
        summary = after + " " + summary
        findings.append(after)
    elif mode is FailureMode.FAIL_STOP and (early := _finished_before_peers(events, benign, progress)) is not None:
        summary = early[0] + " " + summary
        findings.append(early[0])
        if early[1] is not None:  # the rank that left first is where the peers' losses start
            first_rank = early[1]
            # it ended on its own (its completion report), not by a signal: the silent-death reading of it goes, and
            # an unexplained failure is the job's own step count (as for a worker torchelastic saw exit 0)
            findings = [f for f in findings if f != SILENT_DEATH_FINDING.format(rank=first_rank)]
            if category is Category.UNKNOWN:
                category, responsible = Category.USER_CODE, DEFAULT_RESPONSIBLE[Category.USER_CODE]
                confidence = max(confidence, 0.4)
    if broadcast and first_rank is not None and BROADCAST_FINDING in findings:
        # the table ties, the ranks' own lines do not (else "no rank is singled out" stands beside the rank named)
        findings[findings.index(BROADCAST_FINDING)] = (
            "Every rank in the launcher's failure table ended by the same signal in the same second, so the table "
            f"alone singles out no rank; rank {first_rank}'s own lines show it stopped first.")
    recovered = None
    if mode is FailureMode.FAIL_STOP and after is None:
        recovered = _recovered_after_failure(events, benign, progress)
    if mode is FailureMode.FAIL_STOP and recovered is None:
        recovered = _handled_before_completion(events, benign, progress)
        if recovered is not None:
            # a handled error is not the run's verdict: the category is left to what else the logs show (a slowdown
            # the same errors caused, e.g. an object store's throttling retried until the run finished)
            category, responsible, first_rank = Category.UNKNOWN, DEFAULT_RESPONSIBLE[Category.UNKNOWN], None
    if recovered is not None:
        # the job finished after it: nothing to restart (the policy's run_completed); the failure stays explained
        mode = FailureMode.NONE
        summary = recovered + " " + summary
        findings.append(recovered)
    if first_rank is not None and (rank_node is None or rank_node[0] != first_rank):
        # the node of the first failing rank from any line of its that names one (a Slurm report "srun: error:
        # gpu-node02: task 6: Exited with exit code 1" under srun -l, whose traceback lines name no host)
        node = _rank_node(first_rank, groups)
        if node is not None:
            rank_node = (first_rank, node)
    events.sort(key=lambda e: ({EventRole.ROOT: 0, EventRole.SYMPTOM: 2, EventRole.SUMMARY: 3}.get(e.role, 1), -e.suspicion))
    unique_evidence = list({(e.file, e.line, e.text): e for e in evidence}.values())
    return Localization(
        failure_mode=mode, category=category, responsible=responsible, confidence=round(confidence, 3),
        summary=summary, evidence=unique_evidence[:8], first_failing_rank=first_rank, faulty_nodes=faulty_nodes,
        events=events[:200], findings=findings,
        first_failing_node=rank_node[1] if rank_node is not None and rank_node[0] == first_rank else None,
    )


#: A failure written after the run's own report of completion (recovery rule ``failed_after_completion``).
AFTER_COMPLETION_FINDING = (
    "Training had completed before this failure ({mark!r} at {file}:{line}): it failed at shutdown, after its last "
    "step, so the trained model and the checkpoints written before it stand; do not re-run the training.")


#: The same for a hang (:func:`_failed_after_completion` in a ``fail_hang``): the processes hung on their way out.
HUNG_AFTER_COMPLETION_FINDING = (
    "Training had completed before this hang: the processes hung at shutdown, after their last step (a process group "
    "left for the garbage collector or a destructor to tear down -- PyTorch warns that destroy_process_group() was "
    "not called -- a non-daemon thread, a last collective only some ranks reached), so the trained model and the "
    "checkpoints written before it stand; stop the processes and do not re-run the training ({mark!r} at "
    "{file}:{line})."
)


_FAILURE_KINDS = _OWN_ERROR_KINDS | {EventKind.EXIT, EventKind.ELASTIC_SUMMARY}


def _failure_firsts(events: list[EventTemplate], benign: frozenset[int]) -> list[Evidence]:
    """The first occurrence of every failure event: an error, traceback, exit or launcher report that is not a
    known-harmless line (``benign`` template ids)."""
    return [e.first for e in events if e.kind in _FAILURE_KINDS and e.template_id not in benign]


def _failed_after_completion(events: list[EventTemplate], benign: frozenset[int],
                             progress: ProgressLog, finding: str = AFTER_COMPLETION_FINDING) -> str | None:
    """``finding`` (:data:`AFTER_COMPLETION_FINDING` by default; :data:`HUNG_AFTER_COMPLETION_FINDING` for a hang)
    when every file that holds a failure event (an error, traceback, exit or launcher report that is not a
    known-harmless line) holds the run's own report of completion (``ProgressLog.completed_line``) and each such event
    first occurs after it, else None."""
    marks = _current_completions(progress)
    if not marks:
        return None
    failing = _failure_firsts(events, benign)
    if not failing or any(ev.file not in marks or ev.line <= marks[ev.file] for ev in failing):
        return None
    file = failing[0].file
    return finding.format(mark=progress.completed.get(file, "")[:120], file=file, line=marks[file])


def _one_ranks_completion(progress: ProgressLog, ranks_seen: set[int]) -> bool:
    """True when a completion report (``ProgressLog.completed``) is one rank's own line (a torchrun tee prefix or its
    own rank marker) in a job of several ranks: that rank finished its loop, which says nothing of the job's (a rank
    that left its loop early while its peers trained on is a hang's cause, not a shutdown: trial 37 r06)."""
    if len(ranks_seen) < 2:
        return False
    for line in progress.completed.values():
        att = attribute(line, frozenset())
        if att.rank is not None or att.local_rank is not None:
            return True
    return False


#: Some of the job's logs report the end of training while the others hold the failure (``_finished_before_peers``).
FINISHED_BEFORE_PEERS_FINDING = (
    "{file} reports the end of training ({mark!r}, line {line}) while the job's other logs hold its failure: that rank or "
    "node finished its loop and left while its peers were still training, so they lost it (the connection errors "
    "below). The ranks disagree on how many steps to run: a setting that differs between them (epochs, max_steps, "
    "the data path) or an uneven number of batches per rank (a sampler without drop_last, per-rank shards of "
    "different sizes; DDP's Join handles uneven inputs). Compare the ranks' command lines and batch counts.")


def _completion_ts(progress: ProgressLog, file: str, year: int | None = None) -> float | None:
    """The time on ``file``'s completion line (``ProgressLog.completed``), unix seconds, or None; a line without a
    year (glog's) is read in ``year``, by default the year of the logs' first file start (else this year)."""
    text = progress.completed.get(file)
    if not text:
        return None
    if year is None:
        ref = next(iter(progress.file_start.values()), None)
        year = datetime.fromtimestamp(ref, UTC).year if ref is not None else datetime.now(UTC).year
    return parse_timestamp(text, year)


def _restarted_after_completion(progress: ProgressLog, file: str) -> bool:
    """True when a launcher's restart (``ProgressLog.launches``) is stamped after ``file``'s completion line."""
    t = _completion_ts(progress, file) if progress.launches else None
    return t is not None and any(x > t for x in progress.launches)


def _current_completions(progress: ProgressLog) -> dict[str, int]:
    """``ProgressLog.completed_line`` less the completions a restart of the launcher followed (a second start banner in
    the same console): those are an earlier attempt's, and a failure after them is the new attempt's, not one at
    shutdown."""
    return {f: n for f, n in progress.completed_line.items() if not _restarted_after_completion(progress, f)}


#: A script's rank marker in a line (``[node1 rank1]``, ``rank 2:``, ``rank=3``).
_MARK_RANK = re.compile(r"(?i)(?:^|(?<=[\s\[(|,]))rank[\s:=#]?\s?(\d{1,6})\b(?![./])")


def _finished_before_peers(events: list[EventTemplate], benign: frozenset[int],
                           progress: ProgressLog) -> tuple[str, int | None] | None:
    """(:data:`FINISHED_BEFORE_PEERS_FINDING`, the finished file's one rank or None) when some file holds the run's own
    report of completion and no failure event before it, while another file holds a failure event and no such report
    (e.g. node 1 ran 2 epochs and logged "training finished", node 0 ran a third and lost its peer); else
    None."""
    marks = _current_completions(progress)
    if not marks:
        return None
    failing = _failure_firsts(events, benign)
    others = [ev for ev in failing if ev.file not in marks]
    done = [f for f in marks if not any(ev.file == f and ev.line < marks[f] for ev in failing)]
    # a file that began after the finished one reported its completion is a later attempt (a resume, a new launch),
    # not a peer of that run still training
    ended = [t for f in done if (t := _completion_ts(progress, f)) is not None]
    if ended:
        others = [ev for ev in others if (start := progress.file_start.get(ev.file)) is None or start <= min(ended)]
    if not others or not done:
        return None
    file = sorted(done)[0]
    ranks = {e.first.rank for e in events if e.first.file == file and e.first.rank is not None}
    if (m := _MARK_RANK.search(progress.completed.get(file, ""))) is not None:
        # the completion line's own rank marker ("[node1 rank1] INFO training finished"): that rank, whatever other
        # ranks write to the same file (a node's console holds its peers' losses too)
        ranks = {int(m.group(1))}
    said = FINISHED_BEFORE_PEERS_FINDING.format(file=file, mark=progress.completed.get(file, "")[:120], line=marks[file])
    return said, ranks.pop() if len(ranks) == 1 else None


#: Every collective timeout is in the job's first collective (ProcessGroupNCCL numbers a process group's collectives
#: from 1: WorkNCCL(SeqNum=1, ...), "Timeout at NCCL work: 1 ... last completed NCCL work: -1").
FIRST_COLLECTIVE_FINDING = (
    "The timeouts are in the job's first collective (SeqNum 1): no collective ever completed, so the ranks never "
    "communicated at all (the transport between them, the communicator's set-up, or a rank that never got there).")
#: The collective timeouts' reading when they name no rank (dropped when another reading names one).
NOBODY_NAMED = "the logs do not show which rank never joined"
#: One rank silent while every other reports losing a peer (``_silent_rank``), read as a death by a signal.
SILENT_DEATH_FINDING = (
    "Every other rank reports a lost peer (closed connection, broken pipe, timeout); rank {rank} reports nothing of "
    "its own: it died first, without a traceback (killed by a signal, e.g. the OOM killer; check the node's dmesg).")
#: The launcher's table of a signal that reached every rank at once (``_same_signal_at_once``).
BROADCAST_FINDING = ("Every rank in the launcher's failure table ended by the same signal in the same second: one "
                     "signal reached them all, so no rank or node is singled out.")
#: A failure the job got past: a later attempt (a launcher's restart) or the same run went on to report completion.
RECOVERED_FINDING = (
    "The job recovered: after this failure it reported its own completion ({mark!r} at {file}:{line}), so a restart "
    "(or the job itself) got past it and nothing needs restarting now; if the failure below recurs, it is the cause "
    "of the lost attempt.")
_ATTEMPT_DIR = re.compile(r"/attempt_(\d+)/")


def _recovered_after_failure(events: list[EventTemplate], benign: frozenset[int], progress: ProgressLog) -> str | None:
    """:data:`RECOVERED_FINDING` when a process ended in failure (a traceback, an exit, a launcher report) and every
    failure event (an error, traceback, exit or launcher report that is not a known-harmless line) came before a
    restart and a report of completion: in an earlier attempt than the completed one (torchrun's ``--log-dir``
    ``attempt_N`` folders), or before a launcher's restart line (``ProgressLog.launches``) and earlier in its file or by
    its time than the completion line; else None (e.g. torchrun restarted the job after a
    ConnectionResetError and the second attempt reported "training finished")."""
    if not progress.completed:
        return None
    failing = _failure_firsts(events, benign)
    # a failure that ended a process (a traceback, an exit, a launcher's report), not error-looking lines of a run that
    # went on (e.g. "loss nan" on every step until "training complete ... final loss nan", or Ray's
    # state-API warnings in a clean run)
    ended = [e for e in events if e.kind in (EventKind.TRACEBACK, EventKind.EXIT, EventKind.ELASTIC_SUMMARY)
             and e.template_id not in benign]
    if not failing or not ended:
        return None
    year = next((int(ev.timestamp[:4]) for ev in failing if ev.timestamp), 1970)
    done_ts = [t for f in progress.completed if (t := _completion_ts(progress, f, year)) is not None]
    done_attempts = [int(m.group(1)) for p in progress.completed if (m := _ATTEMPT_DIR.search(p))]
    # ... and a restart after it: a later attempt_N folder, or a launcher's (re)start line after the failure
    restarts = sorted(progress.launches)
    failed_attempts = [int(m.group(1)) for ev in failing if (m := _ATTEMPT_DIR.search(ev.file))]
    restarted_attempt = bool(done_attempts) and bool(failed_attempts) and min(failed_attempts) < max(done_attempts)

    def before(ev: Evidence) -> bool:
        m = _ATTEMPT_DIR.search(ev.file)
        if m is not None and done_attempts and int(m.group(1)) < max(done_attempts):
            return True
        ts = _iso_ts(ev.timestamp)
        if ts is None or not (restarted_attempt or any(r > ts for r in restarts)):
            return False  # no restart after it: the run did not get past it by starting again
        mark = progress.completed_line.get(ev.file)
        if mark is not None:
            return ev.line < mark
        return bool(done_ts) and ts < max(done_ts)

    if not all(before(ev) for ev in failing):
        return None
    path = max(progress.completed, key=lambda p: (
        int(m.group(1)) if (m := _ATTEMPT_DIR.search(p)) else -1, progress.completed_line.get(p, 0)))
    return RECOVERED_FINDING.format(mark=progress.completed[path][:120], file=path,
                                    line=progress.completed_line.get(path, "?"))


#: Errors the run logged and went past on its own (:func:`_handled_before_completion`).
HANDLED_FINDING = (
    "The errors below were handled: no process ended with them, and the run went on training and reported its own "
    "completion after them ({mark!r} at {file}:{line}), so nothing needs restarting; what failed (a side task the job "
    "catches and logs) is worth fixing on its own.")


#: A completion line that reports a loss that is not a number: the run ended, its training did not succeed (e.g.
#: "training complete: 300 steps in 7.0 s, final loss nan").
_NAN_FINISH = re.compile(r"(?i)(?:\b|_)(?:loss|ppl|perplexity)\b\W{0,3}(?:[\w ]{0,12}[:=]\s*)?[-+]?(?:nan|inf)\b")


def _handled_before_completion(events: list[EventTemplate], benign: frozenset[int],
                               progress: ProgressLog) -> str | None:
    """:data:`HANDLED_FINDING` when every failure event (an error or traceback that is not a known-harmless line) lies
    before the run's own report of completion in the same file, and no process ended in failure (no exit, signal or
    launcher failure report); else None (e.g. rank 0 catches and logs a ConnectionRefusedError
    traceback at each evaluation, "metrics push failed; continuing without it", and both ranks log "training
    finished": not fail_stop, "restart once")."""
    marks = {f: n for f, n in progress.completed_line.items() if not _NAN_FINISH.search(progress.completed.get(f, ""))}
    if not marks:
        return None
    failing = _failure_firsts(events, benign)
    if not failing or any(e.kind in (EventKind.EXIT, EventKind.ELASTIC_SUMMARY, EventKind.KERNEL)
                          for e in events if e.template_id not in benign):
        return None
    if any(ev.file not in marks or ev.line >= marks[ev.file] for ev in failing):
        return None
    file = max(marks, key=lambda f: marks[f])
    return HANDLED_FINDING.format(mark=progress.completed.get(file, "")[:120], file=file, line=marks[file])


#: The finding of a run that reported its own completion (failure mode ``none``); dropped when a slowdown replaces it.
COMPLETED_FINDING = "The run reported its own completion; nothing here needs recovery."
#: The same run, slow: nothing to restart; the slowdown is for the next run (the policy's ``slow_after_completion``).
COMPLETED_SLOW_FINDING = ("The run reported its own completion: there is no job to restart; deal with the slowdown "
                          "before its next run.")

#: Confidence of a hang inferred only from a training log that ends without any error, exit or launcher report.
#: Below every other hang's (0.25 stack dumps, 0.3 collective timeouts): a timing feed's slowdown overrides it.
ALIVE_NO_ERROR_CONFIDENCE = 0.15

#: What the log stage advises when the logs cannot say who hung; dropped once a hang analysis is folded in.
DUMPS_ADVICE = "take stack dumps of every rank, or enable the Flight Recorder"

#: The reading of training logs that end without any error, exit or launcher report, and its finding.
ALIVE_SUMMARY = ("The logs end without an error, an exit code or a launcher's failure report: the job was still running "
                 f"when they were taken, so it stopped making progress (a hang; {DUMPS_ADVICE}) or ran slowly, unless "
                 "the excerpt stops short or the run ended without a last line of its own (torchrun prints nothing "
                 "when every worker exits 0: the launcher's exit status tells).")
ALIVE_FINDING = "No rank reports an error or an exit, and no launcher reports a failure: the job was alive."
ALIVE_PACING_FINDING = ("No rank reports an error or an exit, and no launcher reports a failure, and the job's own step "
                        "lines report its pace to the end: the job was alive and making progress.")
#: Fewest timed step records (step lines with a time per step or a throughput) that make such logs a report of the
#: job's pace (:func:`combine_pace`).
PACE_RECORDS = 2

#: Below this confidence a category read from the logs yields the first failing rank to a hang culprit.
CONFIDENT_LOGS = 0.5


def _stopped_before_hang(hits: list[SignatureHit], sigs: SignatureSet | None) -> bool:
    """True when several ranks reported a lost peer of the stopping kind (a closed or reset connection, a
    ``peer_loss`` hit whose mode is ``fail_stop``) more than :data:`LATE_ROOT_S` before the first collective
    timeout: a rank had died, and the timeouts came later (a restarted group waiting for it), so the job
    stopped rather than hung."""
    hang = [t for h in hits if h.failure_mode is FailureMode.FAIL_HANG for t in [_ts_of(h)] if t is not None]
    if not hang:
        return False
    first_hang = min(hang)
    return any(_cascade(h, sigs) == "peer_loss" and h.failure_mode is FailureMode.FAIL_STOP and len(h.ranks) >= 2
               and h.role is not EventRole.SUMMARY and (t := _ts_of(h)) is not None and t < first_hang - LATE_ROOT_S
               for h in hits)


#: :func:`_lost_node`'s node, said in the summary and in the findings.
LOST_NODE_SUMMARY = (
    "Node {node} was lost: its logs end without an error, an exit or its launcher's report, while the ranks of the "
    "other nodes lost their connections to their peers (the machine, its container or its launcher went away at "
    "once). Check the node's state and kernel log; replace it if it does not come back."
)
LOST_NODE_FINDING = (
    "The logs of node {node} stop without a failure of their own; the other nodes' ranks report closed connections: "
    "the node was lost."
)


def _lost_node(hits: list[SignatureHit], source_nodes: set[str], nodes_seen: set[str],
               sigs: SignatureSet | None, completed: Mapping[str, str], completed_nodes: Mapping[str, str]) -> str | None:
    """The one node whose log files hold no event at all while ranks on other nodes report closed connections
    (``peer_loss`` hits of mode ``fail_stop``) and nobody reports a failure of their own (a root of a known
    category that is not a lost peer), or None. A live launcher reports its workers' exits; a node's console
    that just stops while its peers lose their connections went away whole (machine, container or agent).
    Needs files of at least two nodes. A node one of whose files (``completed_nodes``: file -> node) ends with the run's
    own completion report (``completed``: file -> line) finished; it is not lost."""
    quiet = source_nodes - nodes_seen
    if len(source_nodes) < 2 or len(quiet) != 1:
        return None
    if any(completed_nodes.get(path) in quiet for path in completed):
        return None  # its log ends with the run's own report of completion: it finished, it was not lost (trial 30 r14)
    if any(h.role is EventRole.ROOT and h.category is not Category.UNKNOWN and _cascade(h, sigs) != "peer_loss"
           for h in hits):
        return None
    node = next(iter(quiet))
    closed = [h for h in hits if _cascade(h, sigs) == "peer_loss" and h.failure_mode is FailureMode.FAIL_STOP
              and h.role is not EventRole.SUMMARY and h.nodes and node not in h.nodes]
    return node if closed else None


def _rank_list(h: SignatureHit, key: str) -> set[int]:
    return {int(x) for x in str(h.details.get(key) or "").replace(" ", "").split(",") if x.isdigit()}


def _missing_ranks(h: SignatureHit) -> set[int]:
    """The ranks a hit's ``missing`` detail names (monitored_barrier's "Ranks 1, 2 failed to pass", Horovod's
    "[missing ranks: 1]"); failing that, the gaps below the highest rank of its ``ready`` detail (Horovod before
    0.16 lists the ranks that did submit a stalled tensor, "[ready ranks: 0, 2, 3]" (operations.cc): rank 1 never
    did; ranks above the highest listed may be missing too, but the job's size is not printed); empty without
    either."""
    named = _rank_list(h, "missing")
    ready = _rank_list(h, "ready")
    if not named and ready:
        named = set(range(max(ready) + 1)) - ready
    return named


def _one_unanswered_by(hits: list[SignatureHit]) -> int | None:
    """The one rank that ranks waiting in monitored_barrier got no answer from (the hits' ``unanswered_by`` detail:
    "received errors while waiting for send/recv from rank 0"), when no hit names missing ranks; else None."""
    if any(_missing_ranks(h) for h in hits):
        return None
    named = {int(h.details["unanswered_by"]) for h in hits if str(h.details.get("unanswered_by", "")).isdigit()}
    return next(iter(named)) if len(named) == 1 else None


def _one_named_missing(hits: list[SignatureHit]) -> int | None:
    """The one rank that the hits' ``missing`` details name, or None when they name none or several."""
    named = {r for h in hits for r in _missing_ranks(h)}
    return next(iter(named)) if len(named) == 1 else None


#: srun's report of one task's end (``srun: error: cn01: task 0: Exited with exit code 1``; srun.c, the step's
#: task-exit messages): the node, the task(s), and how it ended
_SRUN_TASK_END = re.compile(r"srun: error: (?P<node>[\w.-]+): tasks? (?P<tasks>[\d,-]+): "
                            r"(?P<how>Exited with exit code (?P<code>\d+)|Terminated|Killed)")


def _srun_overrules(groups: list[TemplateGroup], root_node: str) -> str | None:
    """A finding when srun's report says the node of a torchelastic "first observed failure" was not where the job
    failed first, else None: srun lists each task's end as it sees it; the first that ``Exited with exit code`` N > 0
    was another node's, and ``root_node``'s task only ``Terminated`` or was ``Killed`` (srun ends the other tasks
    once one fails, ``--kill-on-bad-exit``). Each node's agent prints its own table, whose "first observed failure" is
    that node's first, not the job's (trial 33, r20: cn02's table named rank 4; srun: cn01's task 0 exited first)."""
    ends: list[tuple[str, int, str, str]] = []  # (path, line, node, how)
    for g in groups:
        for ev in g.examples:
            text = ev.lines[0] if ev.lines else ev.key
            m = _SRUN_TASK_END.search(text)
            if m is not None:
                ends.append((ev.path, ev.line, m.group("node"), m.group("how")))
    if not ends:
        return None
    ends.sort()

    def short(name: str) -> str:
        return name.split(".", 1)[0]
    first = next(((node, how) for _p, _l, node, how in ends
                  if how.startswith("Exited") and not how.endswith(" 0")), None)
    root = short(root_node)
    if first is None or short(first[0]) == root:
        return None
    ended = {how for _p, _l, node, how in ends if short(node) == root}
    if not ended or any(h.startswith("Exited") for h in ended):
        return None
    return (f"srun reports node {first[0]}'s task as the first to exit with an error ({first[1].lower()}), while "
            f"node {root_node}'s task was {'terminated' if 'Terminated' in ended else 'killed'} by srun after it: "
            f"that node's launcher table, whose \"first observed failure\" is the node's own first, does not name "
            f"the job's first failing rank. The failing rank's own error is in {first[0]}'s logs.")


def _same_signal_at_once(table: list[RawEvent]) -> bool:
    """True when the launcher's failure table (torchelastic's entries, :data:`EventKind.ELASTIC_SUMMARY`) lists two or
    more ranks, every one ended by the same signal (one negative exit code) and all stamped within one second."""
    codes = {ev.fields.get("exitcode", "") for ev in table}
    times = [ev.ts for ev in table]
    ranks = {ev.rank for ev in table}
    return (len(ranks) >= 2 and len(codes) == 1 and next(iter(codes)).startswith("-")
            and all(t is not None for t in times) and max(times) - min(times) <= 1.0)  # type: ignore[type-var,operator]


#: What an answer whose only hang evidence is an interrupt says (:func:`_interrupted_only`).
INTERRUPTED_FINDING = ("it was stopped from the keyboard (Ctrl-C, SIGINT) and no rank reported an error or a timeout "
                       "before it: someone stopped it, usually because it had stopped making progress. Where each rank "
                       "was when interrupted is in its KeyboardInterrupt traceback; nothing here says why it stalled.")


#: An interrupt that came while the steps still came (:func:`_still_progressing`).
INTERRUPTED_RUNNING_FINDING = (
    "it was stopped from the keyboard (Ctrl-C, SIGINT) {0} after its last progress line (step {1}; its progress lines "
    "had come every {2}), while it was still making progress, and no rank reported an error or a timeout before it: "
    "a person stopped a running job; nothing here failed or hung. Ask who stopped it; if that was not meant, restart "
    "from the last checkpoint.")


def _still_progressing(symptoms: list[SignatureHit], progress: ProgressLog,
                       groups: list[TemplateGroup] | None = None) -> tuple[str, int, str] | None:
    """``(gap, last step, interval)`` as text when the interrupt (the earliest time of the interrupt hits) came within
    :data:`STALL_INTERVALS` of the job's own intervals between progress lines (and :data:`STALL_MIN_S`) of its last
    one: the job was making progress when it was stopped. None when the times or the progress lines do not say.
    A KeyboardInterrupt traceback has no time of its own: then the launcher's stamped report of the process that
    ended by SIGINT (torchelastic's agent, ``failed (exitcode: -2)``, in ``groups``) stands for it, an upper bound (without
    it, SIGINT to one rank while it trained reads as a stalled job)."""
    times = [t for h in symptoms if h.failure_mode is FailureMode.FAIL_HANG and not h.first_timestamp_approx
             for t in [_ts_of(h)] if t is not None]
    if not times and groups:
        times = [ev.ts for g in groups if g.kind in (EventKind.EXIT, EventKind.ELASTIC_SUMMARY) for ev in g.examples
                 if ev.ts is not None and not ev.ts_approx
                 and (ev.fields.get("agent_exitcode") == "-2" or ev.fields.get("exitcode") == "-2")]
    if not times:
        return None
    t_int = min(times)
    pace = _pace_before(t_int, progress)
    if pace is None:
        return None
    last, every = pace
    gap = t_int - last[0]
    if gap >= max(STALL_INTERVALS * every, STALL_MIN_S):
        return None
    return f"{gap:.1f} s", last[1], f"{every:.3g} s"


def _interrupted_only(symptoms: list[SignatureHit]) -> bool:
    """True when every hang symptom is an interrupt (Python's KeyboardInterrupt, torchrun's agent receiving SIGINT:
    ``keyboard_interrupt``, the ``elastic_agent_interrupted`` rule) and there is at least one: no collective or store
    timeout, no stall report, nothing but the operator's Ctrl-C says the job hung."""
    hangs = [h for h in symptoms if h.failure_mode is FailureMode.FAIL_HANG]
    return bool(hangs) and all(
        h.signature_id == "keyboard_interrupt"
        or h.details.get("context_rule") in ("elastic_agent_interrupted", SIGNAL_AFTER_STALL)
        for h in hangs)


#: Roots that say the ranks called different collectives (or one with different sizes) at the same point.
COLLECTIVE_MISMATCHES = frozenset({"gloo_collective_size_mismatch", "collective_mismatch_detected"})


def _out_of_step_rank(progress: ProgressLog) -> tuple[int, str] | None:
    """The one rank whose last logged training step differs from every other rank's, when at least three ranks log
    their steps, all the others stopped at the same step and every progress line was read
    (``progress.steps_sampled`` false), with what to say of it; else None. In a collective
    mismatch the rank whose code took another path around a collective (it skipped one its peers called, or called
    one they did not) leaves the others' step: the rank that reports the mismatch is the one whose receive did not
    fit, a victim as often as not (e.g. rank 1 skips a metric all-reduce and logs step 20,
    ranks 0 and 2 stop at 19, and rank 0's gloo abort reports the mismatch)."""
    last = progress.rank_last_step
    if progress.steps_sampled or len(last) < 3:
        return None
    counts = Counter(last.values())  # one pass: a job may log thousands of ranks
    if len(counts) != 2:
        return None
    (others, _), (odd_step, n_odd) = counts.most_common()
    if n_odd != 1:
        return None
    rank = next(r for r, st in last.items() if st == odd_step)
    return rank, (f"Rank {rank} logged step {last[rank]} while every other rank stopped at step {others}: it was out of "
                  "step with its peers when the collectives stopped matching, so its code took another path around a "
                  "collective (skipped one they called, or called one they did not).")


#: Seconds before a collective mismatch within which one rank's warning that it failed or skipped something names it.
DEVIATION_S = 30.0
_DEVIATED = re.compile(r"(?i)\b(?:skip(?:s|ped|ping)?|fail(?:s|ed|ing)?|error|exception|giving up|ignor(?:e|ed|ing))\b")


def _deviating_rank(events: list[EventTemplate], primary: SignatureHit) -> tuple[int, str] | None:
    """(rank, finding) when exactly one rank logged a warning or error line of its own that says it failed or skipped
    something (:data:`_DEVIATED`) within :data:`DEVIATION_S` before the collective mismatch ``primary`` was first
    seen, on a rank other than those reporting the mismatch: the rank that caught an error and went on (a try/except
    around an evaluation that skips its all-reduce) called other collectives than its peers. Else None."""
    t = _ts_of(primary)
    if t is None:
        return None
    found: dict[int, EventTemplate] = {}
    for e in events:
        if e.kind not in (EventKind.WARNING, EventKind.ERROR_LINE) or e.role is not EventRole.CONTEXT or len(e.ranks) != 1:
            continue
        if e.ranks[0] in primary.ranks or not _DEVIATED.search(e.first.text):
            continue
        te = _iso_ts(e.first.timestamp)
        if te is not None and t - DEVIATION_S <= te <= t + LATE_ROOT_S:
            found.setdefault(e.ranks[0], e)
    if len(found) != 1:
        return None
    rank, e = next(iter(found.items()))
    return rank, (f"Rank {rank} logged that it failed or skipped a step of its own just before the ranks' collectives "
                  f"stopped matching ({e.first.file}:{e.first.line}: {e.first.text[:200]!r}): it went on past its error "
                  "and called other collectives than its peers, so it is the rank out of step; the rank that aborted "
                  "only received what it did not expect.")


#: What :func:`_lone_submitter`'s rank is said to have done.
#: Seconds within which every rank's first copy of one exception counts as raised at once (:func:`_raised_alike`): the
#: ranks of a data-parallel job run the same step within a step time of each other, and a launcher's teardown begins
#: a few seconds after the first exit.
RAISED_ALIKE_S = 5.0
#: ... unless its category is a node's or a link's: every rank reports a lost peer or a dying node alike.
NOT_SHARED = frozenset({Category.NETWORK, Category.GPU_HARDWARE, Category.INFRASTRUCTURE, Category.HOST_OOM})
RAISED_ALIKE_FINDING = ("Every rank ({n}) raised this same error within seconds: its cause is what the ranks share (the "
                        "code, its configuration or the data), not one rank's, so no rank is singled out (rank {rank}'s "
                        "copy is only the first the logs show).")


#: torch.distributed.checkpoint's gathered failure: ``CheckpointException(msg, failures)`` prints
#: ``"CheckpointException ranks:" + str(failures.keys())``, the ranks whose local save or load step raised
#: (torch/distributed/checkpoint/api.py), and every rank re-raises the same exception.
CHECKPOINT_RANKS = re.compile(r"CheckpointException ranks:\s*dict_keys\(\[([\d,\s]*)\]\)")
CHECKPOINT_ALL_FINDING = ("torch.distributed.checkpoint reports that its step failed on ranks {ranks} (its "
                          "CheckpointException lists them): the same save or load failed on each, so no rank is singled "
                          "out (rank {rank}'s copy is only the first the logs show).")
ONE_RANK_FINDING = ("{name}: rank {rank} alone of the {n} or more ranks the logs show. The ranks run the same code and "
                    "settings, so what differs is that rank's own input: look at the batch it was on.")
CHECKPOINT_ONE_FINDING = ("torch.distributed.checkpoint reports that its step failed on rank {rank} alone (its "
                          "CheckpointException lists it; every rank re-raises the exception): rank {rank}'s own error is "
                          "the cause, the other ranks' copies follow from it.")


def _checkpoint_failed_ranks(groups: list[TemplateGroup]) -> frozenset[int] | None:
    """The ranks the earliest torch.distributed.checkpoint ``CheckpointException`` in ``groups`` lists as failed
    (:data:`CHECKPOINT_RANKS`), or None when no line states them (shape: a set of global ranks, never empty)."""
    for g in sorted(groups, key=lambda g: g.first_order):
        for ev in g.examples:
            for line in ev.lines:
                m = CHECKPOINT_RANKS.search(line) if "CheckpointException" in line else None
                if m:
                    ranks = frozenset(int(x) for x in re.findall(r"\d+", m.group(1)) if int(x) <= LIMITS.max_rank)
                    return ranks or None
    return None


def _raised_alike(primary: SignatureHit, by_tid: dict[int, list[TemplateGroup]], rank_ts: dict[int, float],
                  ranks_seen: set[int]) -> bool:
    """Every rank of ``ranks_seen`` (at least two) raised the cause's own exception (a traceback or exception line of
    ``primary``'s templates), the first copies that have times of their own within :data:`RAISED_ALIKE_S` of each
    other (``rank_ts``)."""
    if len(ranks_seen) < 2:
        return False
    raised = {r for tid in primary.template_ids for g in by_tid.get(tid, [])
              if g.kind in (EventKind.TRACEBACK, EventKind.EXCEPTION) for r in g.ranks}
    # the ranks whose copy has a time of its own (a traceback's lines often have none): within seconds of each other
    times = [rank_ts[r] for r in ranks_seen if r in rank_ts]
    return raised >= ranks_seen and (len(times) < 2 or max(times) - min(times) <= RAISED_ALIKE_S)


#: What the logs of one rank that only lost its peer say (:func:`_only_noticed`); ``{rank}``.
NOTICED_ONLY_FINDING = (
    "Only rank {rank}'s output is in these logs, and its own error is a lost peer (a closed or reset connection: the "
    "peer's process ended first); its exit after that (an abort, the launcher's report) follows from it. The rank that "
    "failed first is another one: get the logs of the other ranks and nodes, whose own error is the cause.")


def _only_noticed(rank: int, hits: list[SignatureHit], sigs: SignatureSet | None, ranks_seen: set[int]) -> bool:
    """``rank`` is the only rank the logs show (``ranks_seen``) and one of its hits is a lost connection's report (a
    ``peer_loss`` cascade of the network category), with no confident root of another kind on it: it noticed another
    rank's end."""
    if not ranks_seen <= {rank}:
        return False
    own = [h for h in hits if rank in h.ranks or not h.ranks]
    # a lost connection's own report (gloo's "Connection closed by peer", NCCL's remote error: network peer-loss
    # signatures), not a launcher's summary or a SIGTERM the launcher sent
    if not any(_cascade(h, sigs) == "peer_loss" and h.category is Category.NETWORK and h.role is not EventRole.SUMMARY
               and rank in h.ranks for h in own):
        return False
    return not any(h.role is EventRole.ROOT and h.confidence >= MIN_CONFIDENCE and _cascade(h, sigs) != "peer_loss"
                   for h in own)


LONE_FINDING = ("Every other rank is named missing: rank {rank} alone issued the collective, so its code took a path "
                "that its peers did not (a branch on rank, work on rank 0 only).")


def _lone_submitter(hits: list[SignatureHit], world_size: int | None, ranks_seen: set[int]) -> int | None:
    """The one rank that a hang report leaves out of its ``missing`` list when that list names every other rank of
    a job of at least three (Horovod's "[missing ranks: 1, 2, 3]" in a 4-rank job: rank 0 alone submitted the
    tensor), else None. One rank issuing a collective that all its peers skip is the odd one out (Horovod's stall
    warning: "only subset of ranks is submitting tensors"). The job's size must be known: NCCL's ``nranks``, or
    at least three ranks seen in the logs reaching as high as the named ones (a paste of the coordinator's lines
    alone cannot tell a 16-rank job from a 32-rank one)."""
    for h in hits:
        named = _missing_ranks(h)
        if len(named) < 2:
            continue
        if world_size is not None:
            world = set(range(world_size))
        elif len(ranks_seen) >= 3 and max(ranks_seen) >= max(named):
            world = set(range(max(ranks_seen) + 1))
        else:
            continue
        rest = world - named
        if len(rest) == 1 and named <= world:
            return next(iter(rest))
    return None


def _reported_absentees(symptoms: list[SignatureHit], ranks: set[int],
                        sigs: SignatureSet | None, world_known: bool = False,
                        hits: list[SignatureHit] | None = None,
                        heard: frozenset[int] = frozenset()) -> tuple[list[int], str | None]:
    """Ranks that hang reports name as never having arrived, and why; ``([], None)`` when none do.

    - ``monitored_barrier``: rank 0 names the ranks that did not pass it ("Ranks 1, 2 failed to pass
      monitoredBarrier", captured as the hit's ``missing`` detail; PyTorch docs, ``monitored_barrier``);
    - two ranks: when the logs show ranks 0 and 1 and no other (or NCCL's world size is 2) and only one
      reports a collective timeout (a ``peer_loss`` hang symptom naming one rank), the other one never
      entered that collective; a collective of two has no third party to wait for. A paste of one rank's
      log shows one rank only, and names nobody;
    - all but one: in a job of three or more whose size is known (``world_known``: NCCL's ``nranks`` or the
      launch command's process count, and ``ranks`` is exactly ``0..n-1``), every rank but one reported a
      collective timeout: the silent one is the rank they waited for (it never entered the collective; a rank
      that crashed instead is named by its own exit before this is asked). With ``hits`` (every signature hit) and
      ``heard`` (ranks whose own progress lines are in the logs): every rank but one timed out (at least one) or
      reported a closed connection (a timed-out peer's abort closes its sockets: gloo's "Connection closed by peer"),
      and the one left is heard and named by no root hit: its own lines end without an error (trial 36 r05).
    """
    for h in symptoms:
        named = sorted(_missing_ranks(h))
        if named:
            who = "Horovod's stall warning" if h.signature_id == "horovod_missing_ranks" else "monitored_barrier"
            shown = f"{named[:8]}"[:-1] + (f", ... ({len(named)} in all)]" if len(named) > 8 else "]")
            return named, f"{who} reports that rank(s) {shown} never reached it."
    # monitored_barrier's other side: a rank that reached the barrier and got no answer from the rank that collects
    # it (rank 0; ProcessGroupGloo.cpp monitoredBarrier: "... received errors while waiting for send/recv from rank
    # 0. Please check rank 0 logs for faulty rank."). With no "failed to pass" report from that rank (checked above),
    # it never took part: it is the one they waited for.
    r = _one_unanswered_by(symptoms)
    if r is not None:
        waiting = sorted({x for h in symptoms if h.details.get("unanswered_by") is not None for x in h.ranks} - {r})
        return [r], ("monitored_barrier: " + (f"rank(s) {waiting[:8]} " if waiting else "a rank ") + "reached the barrier and "
                     f"got no answer from rank {r}, whose logs name no missing rank: rank {r} never took part in it.")
    n = len(ranks)
    if ranks == set(range(n)) and (n == 2 or (n >= 3 and world_known)):
        waiting = {r for h in symptoms if h.failure_mode is FailureMode.FAIL_HANG and _cascade(h, sigs) == "peer_loss"
                   for r in h.ranks}
        if len(waiting) == n - 1 and waiting <= ranks:
            other = next(iter(ranks - waiting))
            if n == 2:
                return [other], (f"{TWO_RANK_ABSENT} rank {next(iter(waiting))} timed out waiting in a "
                                 f"collective: rank {other} never entered it.")
            return [other], (f"Of the job's {n} ranks every one but rank {other} timed out waiting in a collective: "
                             f"rank {other} never entered it.")
        if n >= 3 and world_known and waiting and hits:
            # a rank's own report of a closed connection (a root; the launcher's SIGTERM of a live rank is teardown,
            # a symptom, and its failure table a summary: neither is the rank's own word)
            closed = {r for h in hits if h.role is EventRole.ROOT and h.failure_mode is FailureMode.FAIL_STOP
                      and _cascade(h, sigs) == "peer_loss" for r in h.ranks}
            told = waiting | closed
            if len(told) == n - 1 and told <= ranks:
                other = next(iter(ranks - told))
                if other in heard and not any(other in h.ranks for h in hits if h.role is EventRole.ROOT):
                    return [other], ALL_BUT_ONE_SILENT_FINDING.format(n=n, rank=other)
    return [], None


#: :func:`_reported_absentees`' reading of a hang where each other rank either timed out or lost a peer.
ALL_BUT_ONE_SILENT_FINDING = (
    "Of the job's {n} ranks every one but rank {rank} timed out waiting in a collective or lost its connection to a "
    "peer that did, while rank {rank}'s own lines end without an error: rank {rank} never entered the collective."
)


_FRAME_SITE = re.compile(r'^\s*File "(?P<file>[^"\n]*)", line (?P<line>\d+), in (?P<func>[\w.<>]+)')


def _wait_sites(symptoms: list[SignatureHit], by_tid: dict[int, list[TemplateGroup]],
                sigs: SignatureSet | None, any_mode: bool = False) -> dict[int, tuple[tuple[str, str], str | None]]:
    """Per rank, where its collective timeout waited: ``{rank: ((file name, function), call)}`` from the traceback of
    its first ``peer_loss`` hang symptom (gloo's "Timed out waiting ...ms for recv operation"); the site is the
    innermost frame, ``call`` the innermost frame of the job's own code as ``file:line`` (None without one). Ranks
    whose report carries no frame are left out. ``any_mode``: also a lost peer's report that ends the rank (gloo's
    "Connection closed by peer" raised where the rank waited), not only a timeout."""
    found: dict[int, tuple[tuple[str, str], str | None]] = {}
    for h in symptoms:
        if (h.failure_mode is not FailureMode.FAIL_HANG and not any_mode) or _cascade(h, sigs) != "peer_loss":
            continue
        for tid in h.template_ids:
            for g in by_tid.get(tid, []):
                for rank, ev in g.rank_first.items():
                    frames = [m for ln in ev.lines for m in [_FRAME_SITE.match(ln)] if m]
                    if not frames or rank in found:
                        continue
                    own = [m for m in frames if frame_file_owner(m.group("file")) == "user"]
                    call = f"{own[-1].group('file').rsplit('/', 1)[-1]}:{own[-1].group('line')}" if own else None
                    found[rank] = ((frames[-1].group("file").rsplit("/", 1)[-1], frames[-1].group("func")), call)
    return found


#: Two ranks that lost each other, the one that did not time out first (:func:`_lost_before_timeout`).
MUTUAL_LOSS_FINDING = (
    "Rank {rank} did not time out, but it reported its connection to its peer lost before the peer's timeout: it was in "
    "the collective, and the connection between the two ranks failed (the network path between their hosts: a link, a "
    "firewall or middlebox resetting or dropping their traffic), not a rank that never came.")


def _lost_before_timeout(rank: int, hits: list[SignatureHit], by_tid: dict[int, list[TemplateGroup]],
                         sigs: SignatureSet | None, groups: list[TemplateGroup]) -> bool:
    """True when ``rank`` (that did not time out) was in the collective when its connection failed: its first report
    of a lost peer (a ``peer_loss`` hit of any mode: a closed connection, a reset) is stamped, with a time of its own,
    before every other rank's first collective timeout; or, without such times, its process ended (the launcher's
    failure table, torchelastic's ``time`` field) more than a second before every other rank's. A rank that only
    came late finds the connection its peer's timeout closed, after that timeout. False when the times are missing."""
    own: list[float] = []
    timeouts: list[float] = []
    for h in hits:
        if _cascade(h, sigs) != "peer_loss":
            continue
        for tid in h.template_ids:
            for g in by_tid.get(tid, []):
                for r, t in g.rank_first_ts.items():
                    ev = g.rank_first.get(r)
                    if ev is None or ev.ts_approx:
                        continue
                    if r == rank:
                        own.append(t)
                    elif h.failure_mode is FailureMode.FAIL_HANG:
                        timeouts.append(t)
    if own and timeouts:
        return min(own) < min(timeouts)
    ends = _process_ends(groups)
    others = [t for r, t in ends.items() if r != rank]
    return rank in ends and bool(others) and ends[rank] + 1.0 < min(others)


#: A rank named absent by the others' timeouts whose own report of a lost peer was raised in the same call
#: (:func:`_present_absentee`); ``{rank}``, ``{site}``.
PRESENT_ABSENTEE_FINDING = (
    "Rank {rank} did not time out, but its own error (a lost peer) was raised in the same collective call as the "
    "others' timeouts ({site}): it was in the collective too, not the rank that never came.")


def _present_absentee(rank: int, timeouts: dict[int, tuple[tuple[str, str], str | None]],
                      wide: dict[int, tuple[tuple[str, str], str | None]]) -> str | None:
    """The finding when ``rank`` (the one rank of several that did not time out) reported a lost peer from the very
    call every timed-out rank waited in (the innermost frame and the job's own line, :func:`_wait_sites`): a rank's
    lost-peer error is raised where it waited, so it had entered that collective (zoo dev b59_hang_fw_drop_data_ports: a
    firewall dropping one node's traffic; the one rank whose connection closed first was named as never entering);
    None otherwise. ``timeouts``: the ranks' :func:`_wait_sites` from their timeouts; ``wide``: also from their
    reports of a lost peer."""
    if rank in timeouts or not timeouts or len(set(timeouts.values())) != 1:
        return None
    site = next(iter(timeouts.values()))
    if site[1] is None:
        return None
    return PRESENT_ABSENTEE_FINDING.format(rank=rank, site=site[1]) if wide.get(rank) == site else None


#: How :func:`_reported_absentees`' two-rank reading begins ("... only rank 0 timed out ...: rank 1 never entered it").
TWO_RANK_ABSENT = "Of the job's two ranks only"


def _pair_wait_sites(sites: dict[int, tuple[tuple[str, str], str | None]],
                     progress: ProgressLog | None = None) -> tuple[list[int], str] | None:
    """Two ranks that both wait, in different collectives (``sites``: :func:`_wait_sites`; None unless it holds exactly
    two ranks at two sites): the job's code took a
    rank-dependent path around a collective (every rank must call the same collectives in the same order, PyTorch
    distributed docs). Which of the two left the common path is not in the sites: a rank whose data ran out waits in
    an end-of-epoch barrier while its peer is still in the step's gradient all-reduce, but a rank that skipped a step
    (an empty batch it ``continue``d past) is the one in the all-reduce, ahead of its peer
    (both orders occur in injected hangs of each kind). No rank is named from the sites; with ``progress``, the one
    rank whose own last line announces that it stops (:func:`_announced_stop`: "training finished", "epoch done", an
    early stop) left the loop first (trial 37 r06: its shard ran out at step 32 while its peer trained on)."""
    if len(sites) != 2 or len(set(sites.values())) != 2:
        return None
    (ra, (sa, ca)), (rb, (sb, cb)) = sorted(sites.items())
    said = (f"The job's two ranks wait in different collectives (rank {ra} in {sa[1]} ({ca or sa[0]}); rank {rb} in "
            f"{sb[1]} ({cb or sb[0]})), each for the other: the job's code took a different path on each around a "
            "collective")
    stopped = [r for r in (ra, rb) if progress is not None and _announced_stop(progress, r)]
    if len(stopped) == 1:
        r = stopped[0]
        last = progress.last_lines[r][-1][3][:120]  # type: ignore[union-attr]
        return [r], (f"{said}; rank {r}'s own last line says it stopped ({last!r}): it left the training loop first "
                     "while its peer trained on (uneven data per rank, or a rank-dependent stop).")
    return [], f"{said}; which rank left the common path is not in these reports (compare their last logged steps)."


def _odd_wait_site(found: dict[int, tuple[tuple[str, str], str | None]],
                   verb: str = "time out") -> tuple[list[int], str | None]:
    """The ranks that time out in another place than their peers, from the tracebacks of their collective
    timeouts (``found``: :func:`_wait_sites`, from a ``peer_loss`` hang symptom such as gloo's "Timed out waiting
    ...ms for recv operation"), and why; ``([], None)`` when the sites agree or too few ranks report.

    A rank's site is its traceback's innermost frame (file name and function: ``barrier`` in
    distributed_c10d.py, ``_engine_run_backward`` for DDP's gradient all-reduce). Every rank of a process
    group must call the same collectives in the same order (PyTorch distributed docs, "Collective
    functions"), so with at least three reporting ranks, the ranks outside a site held by at least twice
    as many ranks are in another collective: they are the ones the others wait for (the rule of
    :func:`_hang_analysis` for NCCL's SeqNum/OpType, read here from the frames). Ranks at different sites
    without such a majority (two ranks, one in ``all_reduce`` and one in ``barrier``) are a mismatch too, with
    no rank named: ``([], why)``. When every rank's innermost frame is the same function, the innermost frame of
    the job's own code (file and line) tells the calls apart: ``all_reduce`` called at train.py:20 on one rank
    and at train.py:23 on another is two collectives; without such a frame on every rank, nothing is claimed."""
    sites = {r: site for r, (site, _call) in found.items()}
    calls = {r: call for r, (_site, call) in found.items() if call is not None}  # which call of the collective
    if len(sites) >= 2 and len(set(sites.values())) < 2 and len(calls) == len(sites) and len(set(calls.values())) > 1:
        # the same collective function, called from different lines of the job's code: different calls of it
        # (two all_reduce calls on two groups, a rank-only branch), as different a place as another function
        sites = {r: (calls[r], sites[r][1]) for r in sites}
    if len(sites) < 2 or len(set(sites.values())) < 2:
        return [], None
    counts = Counter(sites.values())
    (top, n_top), *_ = counts.most_common()
    odd = sorted(r for r, s in sites.items() if s != top)
    if len(sites) < 3 or n_top < 2 or n_top < 2 * len(odd):
        # the ranks wait in different collectives, and no site is held by enough of them to name the others
        where = "; ".join(f"rank {r} in {f} ({fl})" for r, (fl, f) in sorted(sites.items())[:4])
        return [], f"The ranks {verb} in different collectives ({where}): no rank is named."
    where = "; ".join(f"rank {r} in {sites[r][1]} ({sites[r][0]})" for r in odd[:4])
    return odd, (f"{n_top} rank(s) {verb} in {top[1]} ({top[0]}), but {where}: ranks in another collective "
                 "than their peers are the ones the others wait for.")


def _local_is_global(groups: list[TemplateGroup]) -> bool:
    """True when the bundle's events that carry both a global and a local rank all have them equal (one node, or the
    first node of several: local rank = global rank), and at least one does."""
    pairs = [(ev.rank, ev.local_rank) for g in groups for ev in g.examples
             if ev.rank is not None and ev.local_rank is not None and ev.kind is not EventKind.NCCL]
    return bool(pairs) and all(r == lr for r, lr in pairs)


#: A thread's death before a hang (:func:`_thread_death_then_hang`); ``{thread}`` its name, ``{error}`` its exception.
THREAD_DEATH_FINDING = (
    "A thread of the job died first (\"Exception in thread {thread}:\" {error}): its process went on without it, so "
    "whatever waited for that thread (a prefetch queue, a loader, a sender) blocked, and the ranks then timed out in "
    "a collective. The thread's error is the cause; the timeouts follow from it.")


def _thread_death_then_hang(roots: list[SignatureHit], hits: list[SignatureHit],
                            root_events: dict[int, list[RawEvent]]) -> SignatureHit | None:
    """The root whose every event is a thread's traceback (threading's "Exception in thread NAME:", the
    event's ``thread`` field) when a collective timeout (a ``fail_hang`` hit) comes after it, else None. An exception
    in a thread ends the thread, not its process (Python's threading.excepthook): the job hangs on what the thread
    no longer does (e.g. a prefetch thread's KeyError, its rank blocked on the queue, the peer
    timing out 46 s later and looking like the one that failed)."""
    for h in roots:
        evs = root_events.get(id(h), [])
        if not evs or not all(ev.fields.get("thread") for ev in evs):
            continue
        t0 = min((ev.ts for ev in evs if ev.ts is not None), default=None)
        if any(o.failure_mode is FailureMode.FAIL_HANG and (t0 is None or (t := _ts_of(o)) is None or t >= t0)
               for o in hits if o is not h):
            return h
    return None


#: A rank's error the rank outlived (:func:`_handled_then_hang`); ``{rank}``, ``{error}`` the error's name.
HANDLED_THEN_HANG_FINDING = (
    "Rank {rank} went on after its own error ({error}): it reported a collective timeout itself afterwards, so the "
    "error was caught and the job continued, and the ranks then hung. The error is the cause: its handling made rank "
    "{rank} skip or add a collective (a save's barrier, an evaluation) or stop doing what its peers waited for; fix "
    "the error, and let the error path keep every rank's collectives in step (or fail the job).")


def _handled_then_hang(roots: list[SignatureHit], hits: list[SignatureHit], root_events: dict[int, list[RawEvent]],
                       by_tid: dict[int, list[TemplateGroup]]) -> tuple[SignatureHit, int] | None:
    """``(root, rank)`` when the first of ``roots`` is one rank's error that the same rank outlived: that rank's own
    collective timeout (a ``fail_hang`` hit) comes after the error (later in the same file, or more than
    :data:`LATER_FAILURE_S` later by exact times), and another rank times out too. An uncaught exception ends its
    process, so a rank that later waits in a collective caught its error and went on; else None."""
    if not roots:
        return None
    h = roots[0]
    evs = root_events.get(id(h), [])
    ranks = {ev.rank for ev in evs}
    if h.failure_mode is not FailureMode.FAIL_STOP or len(ranks) != 1 or None in ranks or not evs:
        return None
    (rank,) = ranks
    err = min(evs, key=lambda ev: (ev.path, ev.line))
    hangs = [o for o in hits if o is not h and o.failure_mode is FailureMode.FAIL_HANG]

    def after(ev: RawEvent) -> bool:
        if ev.path == err.path:
            return ev.line > err.line
        return (ev.ts is not None and err.ts is not None and not ev.ts_approx and not err.ts_approx
                and ev.ts > err.ts + LATER_FAILURE_S)

    own = any(after(g.rank_first[rank]) for o in hangs for tid in o.template_ids for g in by_tid.get(tid, [])
              if rank in g.rank_first)
    others = any(set(o.ranks) - {rank} for o in hangs)
    return (h, rank) if own and others else None


#: Ranks that time out in one collective enter it within about a step of each other, so their timeouts fire within about
#: a step too; a rank whose own timeout ends it this much later than every peer's entered the collective that much late
#: (e.g. a rank frozen 65 s by the cgroup freezer times out 65 s after its peer).
LATE_TIMEOUT_S = 30.0
LATE_TIMEOUT_FINDING = (
    "Every rank timed out in the same collective, but rank {rank}'s process ended {gap} after its peers': it entered "
    "the collective that much later, so it had stopped running before it (paused or frozen, swapping, or stalled in a "
    "blocking call) while its peers waited; not the connection between them. Check that rank's node for the stall.")


def _process_ends(groups: list[TemplateGroup]) -> dict[int, float]:
    """Per rank, the earliest time the launcher's failure report (torchelastic's table, its ``time`` field; the other
    launchers' first-failure reports) gives for the rank's process ending."""
    ends: dict[int, float] = {}
    for g in groups:
        if g.kind is not EventKind.ELASTIC_SUMMARY:
            continue
        for ev in g.examples:
            if ev.rank is not None and ev.ts is not None:
                ends[ev.rank] = min(ends.get(ev.rank, ev.ts), ev.ts)
    return ends


def _late_timeout(groups: list[TemplateGroup], world: set[int]) -> tuple[int, float] | None:
    """``(rank, seconds)`` when every rank of ``world`` has a process end time (the launcher's failure table,
    torchelastic's ``time`` field) and exactly one ended more than :data:`LATE_TIMEOUT_S` after all the others, which
    ended within that window of each other; else None."""
    ends = _process_ends(groups)
    if len(world) < 2 or set(ends) != world:
        return None
    (last, t_last), *rest = sorted(ends.items(), key=lambda kv: -kv[1])
    t_first = min(t for _r, t in rest)
    t_second = max(t for _r, t in rest)
    if t_second - t_first > LATE_TIMEOUT_S or t_last - t_second <= LATE_TIMEOUT_S:
        return None
    return last, t_last - t_second


#: What :func:`_common_wait_site` finds; ``{n}`` ranks, ``{site}`` the job's call of the collective.
COMMON_SITE_FINDING = (
    "All {n} ranks of the job {waited} in the same collective, called from the same place ({site}): every "
    "rank had joined it and none was elsewhere, so its data never arrived. The connection between the ranks failed "
    "(a link or interface down, a partition, a firewall dropping the traffic), not a rank's code; check the path "
    "between the hosts on the interface the job uses (GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME).")


#: torch.distributed's point-to-point calls (distributed_c10d.py): a rank blocked in one waits for one peer's matching
#: call, not for a collective that every rank joins.
#: Collectives with a root (``src`` / ``dst``), which must be the same on every rank (PyTorch distributed docs,
#: "Collective functions"): every rank waiting in one of them at the same line may also be ranks that disagree on its
#: root (each waits for a different source), which the stacks cannot tell from a failed link.
ROOTED_CALLS = frozenset({"broadcast", "reduce", "scatter", "gather", "broadcast_object_list", "scatter_object_list",
                          "gather_object"})
#: What :func:`_common_wait_site` finds when the shared call is a rooted collective; ``{n}``, ``{op}``, ``{site}``.
ROOTED_SITE_FINDING = (
    "All {n} ranks of the job timed out waiting in the same {op}, called from the same place ({site}): every rank had "
    "joined it, and its data never arrived. A {op} has a root (src / dst) that must be the same on every rank: ranks "
    "that compute it differently (from a local rank, a node index or a per-rank value) each wait for another source, "
    "which the stacks cannot tell from a failed connection. Check that every rank passes the same root (log it at the "
    "call); if they do, check the path between the hosts (GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME).")
P2P_CALLS = frozenset({"recv", "send", "irecv", "isend", "batch_isend_irecv", "recv_object_list", "send_object_list",
                       "wait"})
#: What :func:`_common_wait_site` finds when the shared call is point-to-point; ``{n}``, ``{op}``, ``{site}``.
P2P_CYCLE_FINDING = (
    "All {n} ranks of the job timed out in the same point-to-point {op}, called from the same place ({site}): each "
    "waits for a peer that is itself waiting, so no matching call was ever posted (every rank receives before it "
    "sends, or the ranks' send/recv order differs). A wait cycle in the job's own code, not the network; restarting "
    "repeats it at the same step.")


def _common_wait_site(sites: dict[int, tuple[tuple[str, str], str | None]],
                      world: set[int], waited: str = "timed out waiting") -> tuple[str, Category] | None:
    """``(finding, category)`` when every rank of the job times out in one and the same call, else None (``sites``:
    :func:`_wait_sites`): ``network`` for a collective, ``user_code`` for a point-to-point call (:data:`P2P_CALLS`:
    every rank blocked in the same recv or send waits for a peer that waits too, a cycle of the job's own order),
    ``unknown`` for a collective with a root (:data:`ROOTED_CALLS`: a disagreement on the root or a failed link).

    Read from the tracebacks of a synchronous backend's transport timeouts (a ``peer_loss`` hang symptom whose
    report carries the rank's stack, such as gloo's "Timed out waiting ...ms for recv operation"; gloo runs the
    collective on the calling thread, so the traceback shows the rank inside it). Every rank of a group calls the
    same collectives in the same order (PyTorch distributed docs, "Collective functions"); a hang's culprits are
    the ranks missing at the first collective the others wait in (the rule of the Flight Recorder's analysis,
    NVIDIA/nvidia-resiliency-ext ``fr_attribution``: group by process group and sequence, suspects are the
    missing ranks). When every rank of ``world`` (at least two, numbered from 0) reports the timeout from the same
    innermost frame and the same line of the job's own code, no rank is missing and none is in another
    collective: the transport between them failed. NCCL's watchdog reports are not read here: NCCL is
    asynchronous, so a timed-out work item does not show that the rank's device ever reached the collective."""
    if len(world) < 2 or world != set(range(len(world))):
        return None
    if set(sites) != world or len(set(sites.values())) != 1:
        return None
    ((file, func), call), = set(sites.values())
    if call is None:
        return None
    if file == "distributed_c10d.py" and func in P2P_CALLS:
        return P2P_CYCLE_FINDING.format(n=len(world), op=func, site=call), Category.USER_CODE
    if file == "distributed_c10d.py" and func in ROOTED_CALLS:
        return ROOTED_SITE_FINDING.format(n=len(world), op=func, site=call), Category.UNKNOWN
    return COMMON_SITE_FINDING.format(n=len(world), site=call, waited=waited), Category.NETWORK


def _hang_source(hang: HangReport) -> str:
    names = {("flight_recorder",): "Hang analysis", ("stacks", "flight_recorder"): "Hang analysis (stacks and Flight Recorder)"}
    return names.get(tuple(hang.evidence), "Stack dumps")


#: Hang culprit kinds (:class:`~diag_service.domain.HangSuspect`) that are the job's own code whatever the frames:
#: ranks that issued different collectives at the same point. Every rank of a process group must call the same
#: collectives in the same order (PyTorch distributed docs, "Collective functions"; TORCH_DISTRIBUTED_DEBUG=DETAIL
#: reports such a mismatch as the program's error).
MISMATCH_KINDS = ("collective_mismatch", "mismatch", "split_mismatch")
#: The stack suspect kind of as many ranks waiting in another collective than their peers (no majority).
SPLIT_MISMATCH = "split_mismatch"
SPLIT_FINDING = ("Category user_code from the stacks: the ranks wait in different collectives, as many on each side, so "
                 "the job's code took different paths around a collective (a collective called on some ranks only, e.g. "
                 "a distributed checkpoint save or an evaluation under `if rank == 0:`, or a rank that skipped a step); "
                 "every rank must call the same collectives in the same order, and a restart hangs the same way.")
#: The stack suspect kind of ranks that wait in one collective called from different lines (they wait for each other).
ORDER_MISMATCH = "call_order_mismatch"
_SHORT_FRAME = re.compile(r"^(?P<name>.*) \((?P<file>.+?)(?::\d+)?\)$")


def _stack_file_owner(path: str) -> str:
    """:func:`~diag_service.signatures.catalog.frame_file_owner` of a stack dump's frame file, where py-spy
    shortens the standard library's paths to the module's (``threading.py``, ``multiprocessing/connection.py``:
    a relative path whose first component is a module of :data:`sys.stdlib_module_names`)."""
    if not path.startswith(("/", "<")) and path.split("/", 1)[0].removesuffix(".py") in sys.stdlib_module_names:
        return "stdlib"
    return frame_file_owner(path)


#: A frame of PyTorch's multi-process DataLoader waiting for its workers' batches (:func:`hang_culprit_category`).
_DATALOADER_WAIT = re.compile(r"^_MultiProcessingDataLoaderIter\._(?:get_data|next_data|try_get_data) \(")
#: A DataLoader fetching a sample in the rank's own process (num_workers=0): the dataset's code runs under the fetcher
#: (torch/utils/data/_utils/fetch.py), so a rank stuck there is where a worker would be, in its read of the data.
_IN_PROCESS_FETCH = re.compile(r"^_(?:Map|Iterable)DatasetFetcher\.fetch\b")
#: The standard library's writes of a process's output (logging's stream handler, a text or buffered stream's write).
_OUTPUT_WAIT = re.compile(r"^(?:StreamHandler\.(?:emit|flush) \((?:.*/)?logging/__init__\.py"
                          r"|(?:TextIOWrapper|BufferedWriter)\.(?:write|flush) \()")
#: A wait for a lock file: torch.utils.file_baton's FileBaton.wait (torch/utils/file_baton.py polls while the lock
#: file exists; torch.utils.cpp_extension takes it around a JIT build) and the filelock package's acquire loop (the
#: Hugging Face datasets and hub caches lock with it; py-filelock.readthedocs.io).
_LOCK_WAIT = re.compile(r"^(?:FileBaton\.wait \((?:.*/)?torch/utils/file_baton\.py"
                        r"|[\w.]+ \((?:.*/)?filelock/[\w/]+\.py)")
#: The standard library's network reads, by file: a rank stuck in one waits for a server (:func:`hang_culprit_category`).
_NETWORK_WAIT = re.compile(r"(?:^|/)(?:socket|ssl|http/client|urllib/request|selectors)\.py$")


#: multiprocessing.Pool's waits for a task's result (multiprocessing/pool.py: ApplyResult.wait/get, Pool.map, the
#: imap iterators' next).
_POOL_WAIT = re.compile(r"\((?:.*/)?multiprocessing/pool\.py:\d+\)$")


def _pool_wait(frames: list[str]) -> tuple[str, str] | None:
    """``(the pool's frame, the caller's frame)`` when the innermost frames, up to the first outside the standard
    library, wait in multiprocessing.Pool for a result; else None. ``frames``: 'function (file:line)', innermost
    first."""
    for i, f in enumerate(frames):
        m = _SHORT_FRAME.match(f)
        if m is None:
            return None
        if _stack_file_owner(m.group("file")) != "stdlib":
            return None
        if _POOL_WAIT.search(f):
            caller = next((g for g in frames[i + 1:] if (n := _SHORT_FRAME.match(g)) is not None
                           and _stack_file_owner(n.group("file")) != "stdlib"), frames[-1])
            return f, caller
    return None


def hang_culprit_category(top: HangSuspect) -> tuple[Category, str] | None:
    """``(category, why)`` that a hang's single culprit implies, or None: ``user_code`` when it issued another
    collective than its peers (:data:`MISMATCH_KINDS`), or when it is stuck outside any collective (or still running,
    its stack changing between dumps, while its peers wait) and the innermost of its ``top_frames`` ('function
    (file:line)', innermost first) that is not the standard library's is the job's own file (not site-packages, not a
    framework package:
    :func:`~diag_service.signatures.catalog.frame_file_owner`). A rank stuck inside a library (a data
    loader, a checkpoint write, a framework's own wait) names no category: the stacks do not say why."""
    if top.kind in MISMATCH_KINDS:
        return Category.USER_CODE, "it called another collective than its peers at the same point"
    if top.kind == ORDER_MISMATCH and len(top.top_frames) > 1 and (m := _SHORT_FRAME.match(top.top_frames[1])) \
            and _stack_file_owner(m.group("file")) == "user":
        return Category.USER_CODE, ("the ranks wait in the same collective called from different lines of the job's own "
                                    f"code ({top.top_frames[1]} against its peers'): they issue their collectives in "
                                    "different orders or on different groups, so each waits for the others; every "
                                    "rank must call the same collectives in the same order")
    if top.kind not in ("outside_collective", "not_joined", "moving") or not top.top_frames:
        return None
    first = _SHORT_FRAME.match(top.top_frames[0])
    if first is not None and _NETWORK_WAIT.search(first.group("file")) and all(
            (m := _SHORT_FRAME.match(f)) is None or _stack_file_owner(m.group("file")) in ("stdlib", "user")
            for f in top.top_frames):
        # a read of the standard library's socket, ssl or HTTP client called from the job (a metrics push, an upload,
        # a request to a service): it waits for a server that does not answer, and only a timeout ends the wait
        # (e.g. urlopen() without a timeout to a gateway that never answers)
        return Category.USER_CODE, (f"stuck outside any collective in a network call of its own ({top.top_frames[0]}): "
                                    "a request or socket read without a timeout, waiting for a service that does not "
                                    "answer; give the call a timeout (urlopen(..., timeout=), requests' timeout=, "
                                    "socket.settimeout) or move it off the training loop")
    if first is not None and _OUTPUT_WAIT.match(top.top_frames[0]):
        # a write of the process's own log output that does not return: its stdout/stderr is a pipe whose reader stopped
        # (a log shipper, tee or collector paused or dead), and the write blocks once the pipe's buffer is full (e.g.
        # a SIGSTOPped log shipper leaves its rank in StreamHandler.emit; not "unknown", restart)
        return Category.INFRASTRUCTURE, (f"stuck writing its own log output ({top.top_frames[0]}): its stdout/stderr is "
                                         "a pipe whose reader stopped (a log shipper, tee or collector paused or dead), "
                                         "and the write blocks once the pipe is full; restart or replace the reader, or "
                                         "send the output to a file")
    lock = next((f for f in top.top_frames if _LOCK_WAIT.match(f)), None)
    if lock is not None and top.kind != "moving":
        # the rank polls for a lock file that another process holds, or that a killed process left behind (a
        # torch_extensions build lock after a preempted build, a datasets cache lock): nothing releases a stale one
        return Category.STORAGE, (f"stuck outside any collective waiting for a lock file ({lock}): another process "
                                  "holds it, or a process killed while holding it left it behind (a torch_extensions "
                                  "build lock, a datasets or hub cache lock), and nothing removes a stale one; find "
                                  "who holds it (fuser/lsof on the lock file), remove a stale lock, or give each node "
                                  "its own cache directory")
    loader = next((f for f in top.top_frames if _DATALOADER_WAIT.search(f)), None)
    if loader is not None:
        # the rank waits for its DataLoader workers' next batch (PyTorch's _MultiProcessingDataLoaderIter): a worker
        # is stuck in its read (a hung network mount, a blocking file) or in its own loop (e.g.
        # a worker blocked opening a FIFO; not "unknown", restart)
        return Category.STORAGE, (f"stuck outside any collective waiting for its DataLoader workers ({loader}): a "
                                  "worker is blocked reading its data (a hung network mount, a file that never "
                                  "answers) or loops in its own code; py-spy dump --subprocesses shows where the "
                                  "workers are")
    pool = _pool_wait(top.top_frames)
    if pool is not None and top.kind != "moving":
        return Category.UNKNOWN, (
            f"stuck outside any collective waiting for a result from a multiprocessing pool it started ({pool[0]}, "
            f"called from {pool[1]}): a pool worker that died (the OOM killer, a segfault in native code) leaves "
            "multiprocessing.Pool waiting forever (CPython issue 22393), so the worker's end is in that node's kernel "
            "log (dmesg: a segfault or an OOM kill), not in these logs")
    fetch = next((i for i, f in enumerate(top.top_frames) if _IN_PROCESS_FETCH.match(f)), None)
    if fetch is not None and top.kind != "moving":
        # the dataset's own code, called by a DataLoader in the rank's process, does not return: the read of a sample
        # blocks (the same wait a worker's read is when num_workers > 0; trial 39 r05: a shard on a hung mount, open()
        # in ShardDataset.__getitem__); a loop in that code would show the rank moving between dumps
        where = top.top_frames[0]
        return Category.STORAGE, (f"stuck outside any collective reading a sample in its DataLoader ({where}, under "
                                  f"{top.top_frames[fetch].split(' (')[0]}): the read of its data blocks (a hung network "
                                  "mount, a file that never answers); check that node's data mount")
    child = None  # a wait for a child process the rank started (subprocess.py), innermost
    for f in top.top_frames:  # innermost first
        m = _SHORT_FRAME.match(f)
        owner = _stack_file_owner(m.group("file")) if m else "stdlib"
        if owner == "stdlib":
            if child is None and m is not None and m.group("file").endswith("subprocess.py"):
                child = f
            continue  # a wait in threading / multiprocessing belongs to whoever called it
        if owner != "user":
            return None
        if top.kind == "moving":
            # alive, its stack changing between dumps, in the job's own code while its peers wait in a collective: a
            # loop that does not end on this rank, or work far longer than its peers' (e.g. a sampling loop
            # that never ends on one rank's data)
            return Category.USER_CODE, (f"still running in the job's own code ({f}) while its peers wait: a loop that "
                                        "does not end on this rank (or work far longer than its peers'); check what "
                                        "ends that loop for this rank's data")
        if child is not None:
            # (e.g. a pre-evaluation hook that runs a command on a dead network mount; Popen(stdout=PIPE) then wait()
            # on a child whose output fills the pipe)
            return Category.USER_CODE, (f"stuck outside any collective waiting for a child process it started ({child}, "
                                        f"called from {f}): the command never returned (a command on a hung mount, a "
                                        "tool waiting for input, or a pipe nobody reads: Popen(stdout=PIPE) then wait() "
                                        "blocks once the pipe is full); give it a timeout, or read its output with "
                                        "communicate()")
        return Category.USER_CODE, f"stuck outside any collective in the job's own code ({f})"
    return None


def _drop_dumps_advice(d: Diagnosis, findings: bool) -> None:
    """Remove :data:`DUMPS_ADVICE` from the summary (and the findings when ``findings``), in place."""
    for advice in (f"; {DUMPS_ADVICE}", f" ({DUMPS_ADVICE})"):
        d.root_cause.summary = d.root_cause.summary.replace(advice, "")
        if findings:
            d.findings = [f.replace(advice, "") for f in d.findings]


def combine_hang(d: Diagnosis, hang: HangReport) -> None:
    """Fold a hang analysis (stack dumps, Flight Recorder dumps or both) into a diagnosis (in place).

    A hung job is ``fail_hang`` whatever the logs said; the logs' category stands when a confident
    root cause was found (a GPU that fell off the bus hangs its peers), otherwise it stays
    ``unknown`` and the stack contrast names the culprit: the first failing rank is the top suspect
    when it scores at least :attr:`HangSuspect.SINGLED_OUT` (0.7) and no other suspect ties it. A category the
    logs give with confidence below :data:`CONFIDENT_LOGS` keeps its category but yields the first failing rank
    to a suspect scoring 0.9 or more.
    """
    if not hang.hung:
        d.findings.append(f"{_hang_source(hang)}: " + hang.explanation)
        if hang.snapshots:  # dumps were taken: the finding says what more they need, not to take dumps
            _drop_dumps_advice(d, findings=False)
        return
    d.failure_mode = FailureMode.FAIL_HANG
    _drop_dumps_advice(d, findings=True)  # they were taken: the advice is moot
    d.findings.insert(0, f"{_hang_source(hang)}: " + hang.explanation)
    _teardown_is_not_the_cause(d, hang)
    top = hang.suspects[0] if hang.suspects else None
    unique = top is not None and hang.lone_suspect() is top and top.score >= HangSuspect.SINGLED_OUT
    if d.category is Category.UNKNOWN:
        logs_said = d.root_cause.summary
        if unique and top is not None:  # the stacks name the rank the logs could not: the logs' words say "alone"
            logs_said = "Logs: " + logs_said.replace("the logs do not name the rank that never joined",
                                                     "the logs alone do not name the rank").replace(
                NOBODY_NAMED, "the logs alone do not show which rank never joined")
        d.root_cause.summary = hang.explanation + " " + logs_said
        if unique and top is not None:
            if top.kind != ORDER_MISMATCH:  # ranks that wait for each other in opposite orders: none is first
                d.first_failing_rank = top.rank
            d.confidence = max(d.confidence, top.confidence())
            cause = hang_culprit_category(top)
            if cause is not None:
                d.category, why = cause
                d.responsible = DEFAULT_RESPONSIBLE[d.category]
                d.category_source = "analyzers"
                d.findings.append(f"Category {d.category.value} from the hang's culprit, rank {top.rank}: {why}.")
                # the stacks say why it stalled: the logs' "nothing says why" no longer holds
                d.root_cause.summary = d.root_cause.summary.replace(STALL_UNEXPLAINED, "") + (
                    f" The stacks say why: {why}." if top.kind == ORDER_MISMATCH else
                    f" Rank {top.rank}'s stack says why: {why}.")
        elif top is not None and top.kind == SPLIT_MISMATCH:
            # as many ranks on each side of a collective mismatch: no rank is singled out, but the code took different
            # paths around a collective, which is the job's own (MISMATCH_KINDS)
            d.category, d.responsible = Category.USER_CODE, DEFAULT_RESPONSIBLE[Category.USER_CODE]
            d.category_source = "analyzers"
            d.findings.append(SPLIT_FINDING)
            d.root_cause.summary = d.root_cause.summary.replace(STALL_UNEXPLAINED, "") + " " + SPLIT_FINDING
    elif unique and top is not None and top.score >= 0.9 and d.confidence < CONFIDENT_LOGS:
        # a weak log verdict (e.g. the agent was signalled from outside: someone killed the hung job)
        # does not outrank a culprit the hang evidence singles out
        d.first_failing_rank = top.rank
        d.root_cause.summary = hang.explanation + " Logs: " + d.root_cause.summary
    elif unique and top is not None and d.first_failing_rank is None and top.kind != ORDER_MISMATCH:
        # a confident log verdict that names no rank (a debugger prompt on no rank's line): the culprit the stacks
        # single out is its rank (else the text names a rank while first_failing_rank stays null)
        d.first_failing_rank = top.rank
    if unique and top is not None and top.node and not d.faulty_nodes and d.category in NODE_LEVEL:
        _set_faulty_nodes(d, [top.node])


def _teardown_is_not_the_cause(d: Diagnosis, hang: HangReport) -> None:
    """A log verdict first stamped after the ranks were seen stuck (the hang's first stuck snapshot) is the
    hang's teardown (the job killed from outside, peers' connections and store lookups failing, watchdog
    timeouts), not its cause: the category goes back to ``unknown``, the nodes it named are dropped, and the stacks
    name the culprit. The hang began at the first stuck snapshot, or else when the stalled collective was first
    enqueued (Flight Recorder). A cause logged before the hang (a GPU that fell off the bus) keeps its category."""
    hit = d.primary_hit()
    t = _ts_of(hit) if hit is not None and d.category is not Category.UNKNOWN else None
    if hit is None or t is None or hang.stuck_since_time is None or t <= hang.stuck_since_time:
        return
    d.findings.append(
        f"The logs' '{hit.name}' came after the ranks were already stuck (from {iso(hang.stuck_since_time)}): "
        "a consequence of the hang (its teardown), not its cause."
    )
    d.category = Category.UNKNOWN
    d.responsible = Responsible.PLATFORM
    d.faulty_nodes = []  # the teardown's nodes (every node whose agent was signalled), not the hang's


def combine_pace(d: Diagnosis, records: int, last_step: int | None = None, last_s: float | None = None) -> None:
    """Read logs that end without an error while the job's own step lines report its pace as a job that was
    making progress (in place): ``fail_slow`` instead of the hang :data:`ALIVE_SUMMARY` infers, category unchanged.

    ``records``: timed step records of the logs' series (step lines with a time per step or a throughput,
    :func:`~diag_service.slow.logs.log_feed`); ``last_step``, ``last_s``: the last one's step and seconds per step
    (None when unknown or the series is not in seconds). Only for that inferred hang (:data:`ALIVE_FINDING`, no
    hang analysis) and from :data:`PACE_RECORDS` records up to fewer than the whole-log change test needs (the
    pipeline's ``MIN_STEP_RECORDS``): a short excerpt of step lines with no error is, far more often than a hang, a
    report of the job's speed (public corpus dev, such logs: 8 slowdowns, 1 hang whose watchdog line was cut mid-word,
    1 failure), while a longer log that the change test read without finding a slowdown is a job that ran at its pace
    (the zoo's clean control runs), and stays the hang reading. The summary still says what to do if it had stopped.
    """
    if (d.failure_mode is not FailureMode.FAIL_HANG or d.hang is not None or ALIVE_FINDING not in d.findings
            or records < PACE_RECORDS):
        return
    d.failure_mode = FailureMode.FAIL_SLOW
    pace = f"; the last, step {last_step}, took {last_s:.3g} s" if last_step is not None and last_s is not None else ""
    said = (f"The logs end without an error, an exit code or a launcher's failure report while the job's own step lines "
            f"still report its pace ({records} timed step lines{pace}): it was making progress when they were taken, "
            "too few lines to tell whether its pace changed. If the complaint is its speed, compare that pace with "
            "the expected one (a timing feed or NCCL_DEBUG=INFO's transport lines show where the time goes: a slow "
            "network path, data loading, a straggler); if it stopped after its last step line, it hung: "
            f"{DUMPS_ADVICE}.")
    d.root_cause.summary = d.root_cause.summary.replace(ALIVE_SUMMARY, said) if ALIVE_SUMMARY in d.root_cause.summary \
        else said
    d.findings = [ALIVE_PACING_FINDING if f == ALIVE_FINDING else f for f in d.findings]


def combine_slow(d: Diagnosis, slow: SlowReport, sigs: SignatureSet | None = None, cpu_job: bool = False) -> None:
    """Fold a fail-slow report into a diagnosis (in place).

    A confident fail-stop or hang diagnosis keeps its mode; the slowdown is a finding. A hang inferred
    only from logs that stop without an error (:data:`ALIVE_NO_ERROR_CONFIDENCE`) yields to the slowdown. Otherwise a
    slowdown makes the diagnosis ``fail_slow`` with the report's category and summary, the top
    straggler as first failing rank when its confidence is at least 0.7, and the blamed node(s). A job-wide
    slowdown (no straggler) in logs that show a setting which slows every step (a ``cascade: slows``
    signature of ``sigs``, e.g. autograd anomaly detection) takes that setting's category. ``cpu_job``: the logs name
    only the gloo backend (no NCCL): a compute straggler's device is a CPU, so its category is the host's
    (infrastructure: contention, throttling, a CPU quota), not ``gpu_hardware``.
    """
    if slow.failure_mode is not FailureMode.FAIL_SLOW:
        return
    factor = max([e.slowdown_factor for e in slow.job_slowdown] + [s.slowdown_factor for s in slow.stragglers], default=1.0)
    if factor < 1.1 and not slow.groups:
        return  # an episode that opened and averaged out (0.99x over its steps): nothing to tell
    finding = ("Step times in the logs: " if slow.input.format.startswith("logs") else "Timing feed: ") + slow.summary
    inferred_hang = d.hang is None and d.confidence <= ALIVE_NO_ERROR_CONFIDENCE  # the logs only stopped
    decided = d.primary_hit()  # a catalogued error whose category the catalogue leaves open (a NaN loss on every rank)
    named = decided is not None and decided.confidence >= MIN_CONFIDENCE and d.failure_mode is FailureMode.FAIL_STOP
    if d.category is not Category.UNKNOWN or named or (d.failure_mode is FailureMode.FAIL_HANG and not inferred_hang):
        d.findings.append(finding)
        return
    terminated = any(e.kind in TERMINATION_KINDS for e in d.events)
    # A job that died of an unexplained error stays fail_stop unless it had collapsed first (>= 2x);
    # a live job is fail_slow from the detector's minimum effect on.
    if factor < (SEVERE_SLOWDOWN if terminated else 1.1):
        d.findings.append(finding)
        return
    # a run still going when its logs were taken (an inferred hang) is judged as a feed that may still grow: a slowdown
    # it got over that cost a sliver is no verdict either, one still open at the end is
    why = (immaterial(slow) if d.failure_mode is FailureMode.NONE
           else immaterial(slow, finished=False) if inferred_hang else None)
    if why is not None:
        # a finished run whose slowdown cost a sliver of it: the run's verdict stays "finished"; the slowdown is told,
        # not the cause of anything
        d.findings.append(finding + f" ({why})")
        return
    if not inferred_hang:  # otherwise the summary below is this finding, word for word
        d.findings.append(finding)
    if d.failure_mode is FailureMode.NONE:  # it finished, slowly: the slowdown is what needs a look
        d.findings = [f for f in d.findings if f != COMPLETED_FINDING]
        d.findings.append(COMPLETED_SLOW_FINDING)
    d.failure_mode = FailureMode.FAIL_SLOW
    d.category = slow.category
    if cpu_job and d.category is Category.GPU_HARDWARE:
        d.category = Category.INFRASTRUCTURE
        d.findings.append("The job runs on CPUs (its logs name the gloo backend and no NCCL): a rank whose compute is "
                          "slow is slowed by its host (CPU contention, throttling or a CPU quota), not by a GPU.")
    d.category_source = "analyzers"
    d.responsible = DEFAULT_RESPONSIBLE[d.category]
    # the inferred hang's "still running, stopped making progress" is what the slowdown replaces
    d.root_cause.summary = slow.summary if inferred_hang else slow.summary + " " + d.root_cause.summary
    setting = next((h for h in d.signature_hits if _cascade(h, sigs) == "slows"), None) if not slow.stragglers else None
    if setting is not None:
        d.category = setting.category
        d.responsible = DEFAULT_RESPONSIBLE[setting.category]
        d.root_cause.summary += f" The logs show {setting.name.lower()}: {setting.explanation}"
        d.findings.append(f"Category {setting.category.value} from a setting in the logs that slows every step: "
                          f"{setting.name}.")
    top = slow.stragglers[0] if slow.stragglers else None
    # one rank named (in one phase or several: a straggler's slow compute also shows in its communication)
    one_rank = top is not None and all(s.rank == top.rank for s in slow.stragglers)
    unique = one_rank or (top is not None and slow.stragglers[1].confidence < top.confidence)
    if top is not None and unique and (top.confidence >= 0.7 or (one_rank and top.confidence >= 0.5)):
        d.first_failing_rank = top.rank
        d.confidence = max(d.confidence, round(min(0.8, top.confidence), 3))
    nodes = [g.name for g in slow.groups if g.group == "node"]
    if nodes:
        _set_faulty_nodes(d, nodes[:8])
    elif top is not None and top.node and d.first_failing_rank == top.rank and d.category in NODE_LEVEL:
        _set_faulty_nodes(d, [top.node])  # (a straggler of the job's own code or config blames no node)


def _set_faulty_nodes(d: Diagnosis, names: list[str]) -> None:
    """Set ``d.faulty_nodes`` to the accepted ``names``; refused ones are named in a finding instead."""
    d.faulty_nodes, refused = node_names(names)
    if refused:
        d.findings.append(refused_nodes_finding(refused))


#: Cosine score of the default (hybrid MiniLM + lexical) embedder above which the best past incident may name
#: a category. Leave-one-out over the seed KB + incidents_dev (eval/kb_eval.py items): top-1 category
#: precision is flat at 0.75-0.77 between 0.6 and 0.8; 0.70 covers 67% of items, as 0.75 did (74%) for
#: MiniLM alone, whose scores run higher.
RETRIEVAL_MIN_SCORE = 0.70


def combine_retrieval(d: Diagnosis, incidents: list[SimilarIncident], novel: bool) -> None:
    """Fold knowledge-base retrieval into a diagnosis (in place).

    Signatures decide when they are confident; retrieval only names a category when no root
    signature matched at all (not when one was too weak), the logs' only failure evidence is not a timeout
    (a collective or store timeout reads the same whatever its cause: public corpus dev, retrieval named 0 of
    5 such hangs right), the incident is not novel, and the best past incident scores at
    least :data:`RETRIEVAL_MIN_SCORE` (cosine). Its top-1 category is used, not a vote (the KB
    evaluation found top-1 more accurate). ``category_source`` records which source decided.
    """
    d.similar_incidents = incidents
    d.novel = novel
    if d.category is not Category.UNKNOWN or novel or not incidents:
        return
    if any(h.role is EventRole.ROOT for h in d.signature_hits):
        return  # a known signature was judged too weak to name a category: retrieval does not overrule that
    if any(h.role is EventRole.SYMPTOM and h.failure_mode is FailureMode.FAIL_HANG for h in d.signature_hits):
        return  # a timeout's text is the same whatever kept the peer away (docs/kb.md): nothing to match on
    best = incidents[0]
    if best.score < RETRIEVAL_MIN_SCORE or best.category is Category.UNKNOWN:
        return
    d.category = best.category
    d.responsible = DEFAULT_RESPONSIBLE[best.category]
    d.category_source = "retrieval"
    d.confidence = round(max(d.confidence, min(0.6, best.score * 0.7)), 3)
    d.findings.append(f"Category from the most similar past incident {best.incident_id} ({best.score:.2f}): {best.title}.")
