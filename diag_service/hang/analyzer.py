"""Temporal stack invariance and cross-rank contrast over periodic stack dumps of every rank.

Method (after the "temporal invariance" idea used by production hang detectors, e.g. the stack-
analysis approach described for Alibaba's and ByteDance's training clusters):

1. Each rank's main-thread stack is normalised to a signature: ``function (file:line)`` per frame,
   innermost first, with wrapper noise (threading, functools, contextlib, c10d logging wrappers,
   torchelastic's ``@record``) removed.
2. A rank is *stuck* when its signature is unchanged over the last ``min_stuck_snapshots`` dumps;
   the job is *hung* when every dumped rank is stuck, or when most ranks are stuck in a collective
   (it cannot complete while the others do something else).
3. Stuck ranks are grouped by signature. The majority normally waits in a collective; suspects are
   the ranks stuck outside any collective (data loading, checkpoint I/O, a lock, a sleep), ranks
   still moving while the others wait, ranks in another collective or call site, and ranks whose
   dumps stopped (process gone).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field

from diag_service.domain import HangReport, HangSuspect, StackGroup
from diag_service.errors import DiagError, ErrorKind
from diag_service.hang.dumps import DumpError, Frame, ThreadStack, parse_dump
from diag_service.ingest.members import RANK_FILE, DumpFile, DumpPath, StackDumps, find_fr_folder
from diag_service.limits import LIMITS

NOISE_FILE = re.compile(
    r"(?:^|/)(?:threading|functools|contextlib|runpy|selectors|queue)\.py$|c10d_logger\.py$"
    r"|elastic/multiprocessing/errors/__init__\.py$|^<frozen |/_contextlib\.py$"
)
COLLECTIVE_NAMES = {
    "all_reduce", "allreduce", "all_gather", "all_gather_into_tensor", "_all_gather_base", "all_gather_object",
    "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base", "broadcast", "broadcast_object_list",
    "barrier", "monitored_barrier", "reduce", "all_to_all", "all_to_all_single", "gather", "scatter", "send",
    "recv", "isend", "irecv", "batch_isend_irecv", "wait", "synchronize", "_wait", "wait_stream", "allreduce_coalesced",
}
COMM_FILE = re.compile(r"torch/distributed/|deepspeed/comm|megatron/core/.*parallel|/comm\.py$|nccl|gloo")
# Process and thread ids differ between ranks whose stacks are the same; blank them to share parses.
_IDS_TEXT = re.compile(rb"^(?:Process \d+:.*|Python v.*|Thread \S+)", re.MULTILINE)
_IDS_JSON = re.compile(rb'"(?:pid|thread_id|os_thread_id)": \d+')


def _cache_key(data: bytes) -> bytes:
    return _IDS_JSON.sub(b"", data) if data[:1] in (b"[", b"{") else _IDS_TEXT.sub(b"", data)


MAX_FRAMES = 24
#: Frames kept per stack group and suspect, innermost first: enough to reach the job's call into a library from a wait
#: several standard-library frames deep (a DataLoader's queue read under multiprocessing's connection: 10
#: frames).
TOP_FRAMES = 12


class HangInputError(DiagError, ValueError):
    """Nothing to analyse: the dumps folder does not exist, or holds neither a parseable stack dump nor a
    Flight Recorder dump (an input error: CLI exit 2, HTTP 422)."""

    kind = ErrorKind.INPUT


class HangRequest(BaseModel):
    """``dumps_dir``: ``<snapshot>/rank-<R>.txt|.json`` folders (sorted by name = time order),
    optional ``ranks.json`` {rank: {node, pid, local_rank}} and ``index.json`` [{dir, time}]; and/or
    Flight Recorder dumps. ``world_size``: ranks expected (ranks without any dump are then reported).
    ``hung_from_logs``: the job's logs show the hang (collective timeouts): fewer snapshots then place the ranks
    (:func:`analyze_dumps`)."""

    dumps_dir: str
    min_stuck_snapshots: int = Field(default=3, ge=1, le=10_000)
    world_size: int | None = Field(default=None, ge=1, le=LIMITS.max_world_size)
    hung_from_logs: bool = False


def find_dumps_dir(bundle: str | os.PathLike[str]) -> Path | None:
    """The stack-dump folder of a bundle directory (``dumps/`` or the bundle itself), or None."""
    p = Path(bundle)
    if not p.is_dir():
        return None
    for cand in (p / "dumps", p):
        if not cand.is_dir():
            continue
        try:
            subs = [d for d in cand.iterdir() if d.is_dir()]
        except OSError:
            continue
        if any(RANK_FILE.match(f.name) for d in subs[:50] for f in _safe_iter(d)):
            return cand
    return None


def one_snapshot(folder: Path) -> StackDumps | None:
    """The stack dumps of one snapshot given as its own folder (``<folder>/rank-<R>.txt|.json``, no snapshot
    sub-folders: one ``py-spy dump`` per rank into one folder), or None when ``folder`` holds no rank file. Only
    regular files directly in it are taken (read later under ``folder``, links refused)."""
    if not folder.is_dir():
        return None
    found = StackDumps(where=str(folder))
    for f in sorted(_safe_iter(folder))[: LIMITS.max_world_size * 2]:
        m = RANK_FILE.match(f.name)
        if m is None or int(m.group(1)) > LIMITS.max_rank or f.is_symlink() or not f.is_file():
            continue
        found.add(DumpPath(root="", snapshot=folder.name or "snapshot", rank=int(m.group(1))),
                  DumpFile(name=f"{folder.name}/{f.name}", path=str(f), root=str(folder)))
    return found if found.snapshots else None


def _safe_iter(d: Path) -> list[Path]:
    try:
        return list(d.iterdir())
    except OSError:
        return []


def _meaningful(frames: list[Frame]) -> list[Frame]:
    return [f for f in frames if not NOISE_FILE.search(f.file)][:MAX_FRAMES]


#: DDP's gradient all-reduce as py-spy shows it: the autograd engine's call, waiting in C++ for the reducer's
#: buckets (torch/autograd/graph.py ``_engine_run_backward``); a rank that stays there waits for its peers
_BACKWARD_FILE = re.compile(r"torch/autograd/graph\.py$")


def _collective(frames: list[Frame]) -> str | None:
    for f in frames[:4]:
        short = f.name.rsplit(".", 1)[-1]
        if short in COLLECTIVE_NAMES and COMM_FILE.search(f.file):
            return short
        if short == "_engine_run_backward" and _BACKWARD_FILE.search(f.file):
            return "backward (DDP gradient all-reduce)"
    return None


def _signature(frames: list[Frame]) -> str:
    return " < ".join(f.short() for f in frames)


def _main(threads: list[ThreadStack]) -> ThreadStack:
    return next((t for t in threads if t.is_main), threads[0])


def analyze_hang(req: HangRequest) -> HangReport:
    """Analyse a hang from what ``req.dumps_dir`` holds: stack snapshots (a folder
    ``<snapshot>/rank-<R>.txt|.json``, or a bundle whose ``dumps/`` holds them, or a
    ``.tar``/``.tar.gz``/``.zip`` of one), PyTorch Flight Recorder dumps (one file per rank, the rank
    as the name's suffix, in the folder or a sub-folder of it), the PyTorch debug server's ``dump_dir``
    (``stacks_<time>.txt`` / ``pyspy_dump_<time>.txt``), or stacks and Flight Recorder together, fused
    (:func:`diag_service.hang.fusion.fuse`). Raises :class:`HangInputError` if the path is missing or
    if it holds neither a parseable stack dump nor a Flight Recorder dump; damaged dumps
    of some ranks are warnings in the report."""
    from diag_service.hang.debugserver import debug_server_dumps
    from diag_service.hang.flight import analyze_fr_files, analyze_fr_members
    from diag_service.hang.fusion import fuse
    from diag_service.ingest.open import open_bundle

    root = Path(req.dumps_dir)
    if not root.exists():
        raise HangInputError(f"no such dumps folder: {root}")
    found = find_fr_folder(root)
    fr = analyze_fr_files(found.files, found.warnings, req.world_size) if found is not None else None
    stacks: HangReport | None = None
    inner = find_dumps_dir(root)
    served, served_warnings = debug_server_dumps(root) if inner is None and root.is_dir() else (None, [])
    one = one_snapshot(root) if inner is None and served is None and fr is None else None
    fr_hung = fr is not None and fr.stalled
    if served is not None:  # the PyTorch debug server's dump_dir
        stacks = analyze_dumps(served, req.min_stuck_snapshots, hung_from_logs=req.hung_from_logs or fr_hung)
        stacks.warnings = [*served_warnings, *stacks.warnings][:200]
    elif one is not None:  # one snapshot's folder itself (py-spy dump of each rank into one folder)
        stacks = analyze_dumps(one, req.min_stuck_snapshots, hung_from_logs=req.hung_from_logs or fr_hung)
    elif inner is not None or fr is None:
        bundle = open_bundle(inner if inner is not None else root, dumps_only=True)
        for _ in bundle.blocks():  # a folder's dumps are read from disk by the analysis; an archive's now
            pass
        if fr is None:
            fr = analyze_fr_members(bundle.fr_archive_dumps(), req.world_size)
            if fr is not None:  # what reading the archive ran into (truncation, damage) goes with the report
                fr.warnings = [*bundle.report.warnings[:20], *fr.warnings][:200]
        dumps = bundle.dumps()
        if dumps is None:
            if fr is None:
                raise HangInputError(f"no parseable stack dump or Flight Recorder dump under {root}")
        else:
            stacks = analyze_dumps(dumps, req.min_stuck_snapshots,
                                   hung_from_logs=req.hung_from_logs or fr_hung)
            stacks.warnings = [*bundle.report.warnings[:20], *stacks.warnings][:200]
    return fuse(stacks, fr)


def analyze_dumps(dumps: StackDumps, min_stuck_snapshots: int = 3, hung_from_logs: bool = False) -> HangReport:
    """Analyse stack snapshots however they were packed (:class:`~diag_service.ingest.members.StackDumps`,
    from :meth:`~diag_service.ingest.open.Bundle.dumps`). Raises :class:`HangInputError` (a ``ValueError``) if no snapshot holds a
    parseable dump; damaged dumps of some ranks are warnings in the report.

    ``hung_from_logs``: other evidence already shows the hang (the logs' collective timeouts, or Flight Recorder
    dumps with a collective some members never joined). Then fewer snapshots than
    ``min_stuck_snapshots`` (one ``py-spy dump`` per rank, the usual first response) still place the ranks: each
    rank's last stack is where it waits, and the rank outside the collective the others wait in is the suspect.
    The hang itself is the logs' finding, not the stacks'."""
    root = dumps.where
    warnings: list[str] = []
    nodes: dict[int, str] = {}
    if dumps.ranks_json is not None:
        try:
            rj = json.loads(dumps.ranks_json)
            for r, v in list(rj.items())[: LIMITS.max_world_size]:
                rank = int(r) if isinstance(r, str) and r.isascii() and r.isdigit() and len(r) <= 7 else -1
                if isinstance(v, dict) and v.get("node") and 0 <= rank <= LIMITS.max_rank:
                    nodes[rank] = str(v["node"])[: LIMITS.max_node_name_chars]
        except (ValueError, AttributeError, TypeError, RecursionError) as exc:
            warnings.append(f"ranks.json unreadable ({exc}); nodes unknown")
    times: dict[str, float] = {}
    if dumps.index_json is not None:
        try:
            for entry in json.loads(dumps.index_json):
                if isinstance(entry, dict) and "dir" in entry and isinstance(entry.get("time"), int | float):
                    times[str(entry["dir"])] = float(entry["time"])
        except (ValueError, TypeError, RecursionError) as exc:
            warnings.append(f"index.json unreadable ({exc}); snapshot times unknown")

    snapshots = sorted(dumps.snapshots)
    # sigs[rank][snapshot index] = (signature, meaningful frames)
    sigs: dict[int, dict[int, tuple[str, list[Frame]]]] = defaultdict(dict)
    bad: Counter[int] = Counter()
    cache: dict[bytes, tuple[str, list[Frame]]] = {}
    for si, snap in enumerate(snapshots):
        for rank, files in sorted(dumps.snapshots[snap].items()):
            # prefer JSON (structured), fall back to text
            for f in sorted(files, key=lambda f: not f.name.endswith(".json")):
                short = f.name.rsplit("/", 1)[-1]
                try:
                    data = f.read()[: 8 << 20]
                except OSError as exc:
                    warnings.append(f"{snap}/{short}: {exc}")
                    continue
                key = _cache_key(data)
                parsed = cache.get(key)
                if parsed is None:
                    try:
                        frames = _meaningful(_main(parse_dump(data)).frames)
                    except DumpError as exc:
                        warnings.append(f"{snap}/{short}: {exc}")
                        continue
                    parsed = (_signature(frames), frames)
                    if len(cache) < 100_000:
                        cache[key] = parsed
                sigs[rank][si] = parsed
                break
            else:
                bad[rank] += 1
    all_ranks = sorted(set(sigs) | set(nodes))
    if not sigs:
        raise HangInputError(f"no parseable stack dump under {root}")
    n = len(snapshots)
    k = max(2, min_stuck_snapshots)
    placed = hung_from_logs and n < k  # too few snapshots to time the hang: the logs did, the stacks place it
    if placed:
        k = max(1, n)
    elif hung_from_logs:
        # the logs report the hang: a rank whose last two dumps agree is stuck, whatever an earlier dump of the job
        # still training showed (trial 40 r02: the first of three rounds taken just before the hang read every rank
        # as "still changing its stack", and the job as not hung)
        k = min(k, 2)
    tail = set(range(max(0, n - k), n))
    stuck: dict[int, int] = {}  # rank -> first snapshot of its final unchanged run
    moving: list[int] = []
    silent: list[int] = []
    for r in all_ranks:
        seen = sigs.get(r, {})
        present_tail = sorted(i for i in seen if i in tail)
        if len(present_tail) < min(k, 2):
            silent.append(r)
            continue
        last = seen[max(seen)][0]
        run_start = max(seen)
        for i in sorted(seen, reverse=True):
            if seen[i][0] != last:
                break
            run_start = i
        if sum(1 for i in seen if i >= run_start) >= k:
            stuck[r] = run_start
        else:
            moving.append(r)
    groups = _stack_groups(sigs, stuck)
    # How routine each stuck place is: how often any rank was seen there before the job stopped
    # moving. With two ranks (or two equal groups) the routine place is the training loop's own
    # collective, and the rank stuck somewhere new is the culprit.
    first_stuck = min(stuck.values()) if stuck else n
    routine: Counter[str] = Counter(
        sig for per_rank in sigs.values() for i, (sig, _f) in per_rank.items() if i < first_stuck
    )
    groups.sort(key=lambda g: (-len(g.ranks), -routine[g.signature], min(g.ranks)))
    coll_groups = [g for g in groups if g.in_collective]
    majority = coll_groups[0] if coll_groups else (groups[0] if groups else None)
    dumped = [r for r in all_ranks if r not in silent]
    all_stuck = bool(dumped) and len(stuck) == len(dumped)
    waiting = sum(len(g.ranks) for g in coll_groups)
    hung = bool(stuck) and (all_stuck or (majority is not None and majority.in_collective and waiting >= len(dumped) / 2))

    suspects: list[HangSuspect] = []
    if hung:
        for g in groups:
            if g is majority and (g.in_collective or not hung_from_logs or len(groups) > 1):
                continue
            # (the only group, when every dumped rank sits at one place outside any collective while the logs show the
            # others waiting in one: a rank that never entered it, and the dumps caught only it; trial 30, r12)
            if not g.in_collective:
                reason = f"stuck outside any collective in {g.top_frames[0] if g.top_frames else '?'}"
                score, why = 0.9, "outside_collective"
            elif majority is not None and (
                len(g.ranks) < len(majority.ranks) or routine[g.signature] < routine[majority.signature]
            ):
                where = majority.top_frames[1] if len(majority.top_frames) > 1 else "?"
                kind = "collective mismatch" if g.collective != majority.collective else "call-site mismatch"
                why = "collective_mismatch" if g.collective != majority.collective else "call_site_mismatch"
                reason = f"{kind}: stuck in {g.collective} while the majority waits in {majority.collective} at {where}"
                score = 0.7
            elif majority is not None and g.collective == majority.collective and len(g.top_frames) > 1 \
                    and len(majority.top_frames) > 1 and g.top_frames[1] != majority.top_frames[1]:
                # as many ranks, the same collective, called from another place: the ranks issue their collectives in
                # different orders or on different groups, and each waits for the others at its own call (e.g.
                # two groups' all_reduces issued in opposite orders, one line apart in the same file)
                reason = (f"call-site mismatch: stuck in {g.collective} at {g.top_frames[1]} while rank(s) "
                          f"{majority.ranks[:8]} wait in {majority.collective} at {majority.top_frames[1]}: the ranks "
                          "call their collectives in different orders (or on different groups), each waiting for the "
                          "others at its own call")
                score, why = 0.7, "call_order_mismatch"
            elif majority is not None and g.collective != majority.collective:
                # as many ranks on each side, in different collectives (e.g. rank 0 in a checkpoint save's all_gather
                # called under `if rank == 0:`, rank 1 already in the barrier after it): the ranks' code took different
                # paths around a collective; the stacks do not say which side left the common path
                theirs = majority.top_frames[1] if len(majority.top_frames) > 1 else "?"
                reason = (f"collective mismatch with no majority: stuck in {g.collective} while rank(s) "
                          f"{majority.ranks[:8]} wait in {majority.collective} at {theirs}: the ranks' code took "
                          "different paths around a collective (one called on some ranks only); the stacks do not "
                          "tell which side left the common path")
                score, why = 0.5, "split_mismatch"
            else:
                reason = f"stuck in {g.collective}, as many ranks as the group in {majority.collective if majority else '?'}"
                score, why = 0.5, "same_collective"
            for r in g.ranks:
                suspects.append(HangSuspect(rank=r, node=nodes.get(r), score=score, reason=reason,
                                            top_frames=g.top_frames, kind=why))
        for r in moving:
            frames = sigs[r][max(sigs[r])][1]
            suspects.append(HangSuspect(
                rank=r, node=nodes.get(r), score=0.85, top_frames=[f.short() for f in frames[:TOP_FRAMES]], kind="moving",
                reason="still running (its stack changes between dumps) while the others wait" +
                       (f" in {majority.collective}" if majority and majority.in_collective else ""),
            ))
        for r in silent:
            suspects.append(HangSuspect(
                rank=r, node=nodes.get(r), score=0.6, kind="no_stack",
                reason="no readable stack in the last dumps: the process exited, or could not be dumped",
            ))
    suspects.sort(key=lambda s: (-s.score, s.rank))
    suspect_nodes = sorted({s.node for s in suspects if s.node and s.score >= 0.7})
    since_idx = max(stuck.values()) if (hung and stuck) else None
    since = snapshots[since_idx] if since_idx is not None else None
    if placed:
        since = None  # too few snapshots to say since when
    undecided = not hung and not hung_from_logs and n < k
    # the ranks whose stack is the same in every snapshot taken (what two dumps of a hang show, and of a long call too)
    unchanged = sum(1 for r in all_ranks if len(sigs.get(r, {})) >= 2 and len({v[0] for v in sigs[r].values()}) == 1)
    explanation = _explain(hung, len(all_ranks), stuck, moving, groups, majority, suspects, since, n, placed,
                           need=k if undecided else 0, unchanged=unchanged)
    if undecided:
        explanation += _last_placement(_stack_groups(sigs, sigs))
    for r in sorted(bad):
        if r not in sigs:
            warnings.append(f"rank {r}: no readable dump in any snapshot")
    return HangReport(
        hung=hung, undecided=undecided, snapshots=n, ranks=len(all_ranks), stuck_ranks=sorted(stuck), moving_ranks=sorted(moving),
        stuck_since=since, stuck_since_time=times.get(since) if since else None, groups=groups, suspects=suspects,
        suspect_nodes=suspect_nodes, explanation=explanation, warnings=warnings[:200],
    )


def _stack_groups(sigs: dict[int, dict[int, tuple[str, list]]], ranks: Iterable[int]) -> list[StackGroup]:
    """``ranks`` grouped by the stack of their last dump (``sigs``: rank -> snapshot -> (signature, frames)), the
    largest group first, then by lowest rank."""
    by_sig: dict[str, list[int]] = defaultdict(list)
    for r in ranks:
        by_sig[sigs[r][max(sigs[r])][0]].append(r)
    groups: list[StackGroup] = []
    for sig, members in sorted(by_sig.items(), key=lambda kv: (-len(kv[1]), min(kv[1]))):
        frames = sigs[members[0]][max(sigs[members[0]])][1]
        coll = _collective(frames)
        groups.append(
            StackGroup(signature=sig, ranks=sorted(members), top_frames=[f.short() for f in frames[:TOP_FRAMES]],
                       in_collective=coll is not None, collective=coll)
        )
    return groups


def _last_placement(groups: list[StackGroup]) -> str:
    """Where each rank's last dump places it (``groups``: :func:`_stack_groups` of every rank), when too few snapshots
    decide a hang: the places, the largest group first (at most three), and, when some wait in one collective and others
    in another or in none, that this is what a hang's culprit looks like if the job is stuck (a clean-clone check,
    session 28: one snapshot showed three ranks in all_reduce and one in barrier, and the report said only
    "undecided"). '' without two places."""
    if len(groups) < 2:
        return ""
    parts = []
    for g in groups[:3]:
        site = (g.top_frames[1] if g.in_collective and len(g.top_frames) > 1
                else g.top_frames[0] if g.top_frames else "?")
        where = f"in {g.collective} at {site}" if g.in_collective else f"outside any collective in {site}"
        parts.append(f"rank(s) {g.ranks[:8]}{'...' if len(g.ranks) > 8 else ''} {where}")
    more = f"; {len(groups) - 3} more place(s)" if len(groups) > 3 else ""
    odd = groups[0].in_collective and any(g.collective != groups[0].collective for g in groups[1:3])
    why = (" If the job is stuck, the ranks outside the first group are where a hang's culprit would be: they are not in "
           "the collective the others wait in." if odd else "")
    return f" The last snapshot places them: {'; '.join(parts)}{more}.{why}"


def _explain(
    hung: bool, n_ranks: int, stuck: dict[int, int], moving: list[int], groups: list[StackGroup],
    majority: StackGroup | None, suspects: list[HangSuspect], since: str | None, n_snap: int, placed: bool = False,
    need: int = 0, unchanged: int = 0,
) -> str:
    if not hung:
        if need:
            seen = (f" In these {n_snap}, {unchanged} of {n_ranks} rank(s) show the same stack in every one (as a hung "
                    "rank would, and a rank in one long call too)." if n_snap >= 2 else "")
            return (f"Not enough snapshots ({n_snap}) to call a hang: at least {need} are needed; take {need - n_snap} "
                    f"more of every rank, some seconds apart, while it is stuck, or give the job's logs (--logs DIR): "
                    f"collective timeouts there show the hang, and the snapshots then place the ranks.{seen}")
        return (f"Not hung: {len(moving)} of {n_ranks} rank(s) still change their stacks between dumps"
                f"{'' if not stuck else f'; {len(stuck)} look stuck'}.")
    parts = ([f"The logs (collective timeouts, or no progress long before the job was stopped) or the Flight Recorder "
              f"show the hang; {n_snap} stack snapshot(s) place its {n_ranks} rank(s)."]
             if placed else [f"Hung since snapshot {since}: {len(stuck)} of {n_ranks} rank(s) have not moved."])
    if majority is not None and majority.in_collective:
        site = majority.top_frames[1] if len(majority.top_frames) > 1 else majority.top_frames[0]
        p2p = majority.collective in ("send", "recv", "isend", "irecv", "batch_isend_irecv")
        parts.append(
            f"{len(majority.ranks)} rank(s) wait in {majority.collective} at {site}; "
            + ("a point-to-point call completes only when its peer posts the matching one." if p2p else
               "a collective completes only when every rank joins it.")
        )
    if suspects:
        top = suspects[0]
        # below HangSuspect.SINGLED_OUT the stacks do not single the rank out (as many ranks wait in the other collective: which
        # of them left the common path is not in the stacks), so it is a suspect only
        lead = "Culprit" if top.score >= HangSuspect.SINGLED_OUT else "Suspect (not singled out: as many ranks wait elsewhere)"
        parts.append(f"{lead}: rank {top.rank}" + (f" on {top.node}" if top.node else "") + f", {top.reason}.")
        if len(suspects) > 1:
            parts.append("Other suspects: " + "; ".join(f"rank {s.rank} ({s.reason})" for s in suspects[1:4]) + ".")
    elif majority is not None and not majority.in_collective and len(stuck) == len(majority.ranks):
        # every dumped rank sits at one place outside any collective (one rank dumped, or all in one wait): no peer to
        # contrast it with in these dumps
        where = majority.top_frames[0] if majority.top_frames else "?"
        parts.append(
            f"Every dumped rank is stuck outside any collective, at {where}: if the job has ranks not dumped here that "
            "wait in a collective, these are the ranks they wait for (give the job's logs with --logs, or dump every "
            "rank); if these are all its ranks, they wait for something outside the job (a file, a lock, a service)."
        )
    else:
        parts.append(
            "Every rank waits at the same place, so the stacks do not name a culprit: look for a rank whose process "
            "died or whose GPU/network failed (logs, Xid, NCCL errors), or enable the Flight Recorder."
        )
    return " ".join(parts)
