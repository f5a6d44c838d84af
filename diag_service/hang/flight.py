"""PyTorch Flight Recorder dumps: safe readers and the cross-rank collective analysis.

A Flight Recorder dump (``TORCH_FR_BUFFER_SIZE`` / ``TORCH_NCCL_TRACE_BUFFER_SIZE``; written on a
watchdog timeout to ``TORCH_FR_DUMP_TEMP_FILE``/``TORCH_NCCL_DEBUG_INFO_TEMP_FILE`` + rank, or returned
by ``torch._C._distributed_c10d._dump_fr_trace()`` / ``_dump_fr_trace_json()``) is one rank's ring
buffer of its last collectives: a dict with ``version``, ``pg_config`` (process group name ->
``{name, desc, ranks}``), ``pg_status`` (name -> last enqueued / started / completed collective
sequence id) and ``entries`` (one per collective or P2P op: ``process_group`` (name, desc),
``collective_seq_id``, ``p2p_seq_id``, ``profiling_name`` such as ``nccl:all_reduce`` or
``nccl:send 0->1``, ``state`` scheduled/started/completed, ``retired``, sizes, dtypes, ``frames``).
Schema as read by PyTorch's own analyser, ``torch/distributed/flight_recorder/components/loader.py``
and ``builder.py``; versions 2.x as written by torch 2.4-2.13 (older dumps name the sequence id ``seq_id``).

Dumps are untrusted: the pickle form is read with :class:`RestrictedUnpickler`, which admits only the
protocol's plain containers and scalars (any ``GLOBAL``/``STACK_GLOBAL`` reference, i.e. anything that
could run code on load, is refused); the JSON form is plain JSON. Malformed, truncated or foreign files
are skipped with a warning.

Analysis (:func:`analyze_collectives`), per process group (its ranks from ``pg_config``, else the ranks
that recorded it; the default group spans every dumped rank):

- the *wavefront* is the first collective sequence id that not every member completed; members that
  never enqueued it did not join, members that enqueued it with another op or other sizes mismatch;
- a non-joining rank that is itself waiting in an incomplete collective (of any group) is blocked by
  whoever is missing from *that* one; culprits are where these waits lead: ranks that are in no
  collective at all (stuck in compute, data loading, I/O, a lock), ranks that joined with the wrong
  op or sizes, and the ranks of a wait cycle (collectives issued in a different order);
- P2P: a send or recv enqueued and not completed whose peer never enqueued the matching op;
- ranks of the world with no dump are suspects as well (process gone or unresponsive).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diag_service.domain import CollectiveReport, CollectiveStall, FRCulprit, P2PStall
from diag_service.errors import DiagError, ErrorKind
from diag_service.fsutil import read_regular
from diag_service.ingest.members import find_fr_dumps
from diag_service.limits import LIMITS

#: Largest dump read (a 2,000-entry buffer with frames is ~2-5 MB; bounded against hostile files).
MAX_DUMP_BYTES = 256 << 20
#: Completed collectives kept per group and rank for the cross-rank op and size check (the most recent ones: a
#: mismatch that matters is next to where the job stopped; 16 x a few hundred bytes per rank and group).
KEEP_DONE = 16
#: Ops whose input sizes differ across ranks by design (uneven splits, a root's buffer): compared by op only.
#: The same exemptions as PyTorch's own matcher (``torch/distributed/flight_recorder/components/types.py``,
#: ``Op.match``: all_to_all and scatter inputs), plus the ``_v`` (variable size) collectives.
_SIZES_VARY = re.compile(r"all_?to_?all|^scatter|gather$|_v(?:_single)?$", re.IGNORECASE)
_P2P_NAME = re.compile(r"(?P<op>send|recv)\s+(?P<a>\d+)\s*(?:->|<-)\s*(?P<b>\d+)")


class FlightRecorderError(DiagError, ValueError):
    """A file is not a readable Flight Recorder dump (the message says why)."""

    kind = ErrorKind.INPUT


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickles only plain containers and scalars: every global lookup is refused.

    Flight Recorder dumps hold dicts, lists, tuples, strings, numbers, booleans and None only, so a
    dump that names any class or function is not one, and loading it could run code.
    """

    def find_class(self, module: str, name: str) -> Any:  # noqa: ANN401 - pickle's own signature
        raise pickle.UnpicklingError(f"refused: the pickle references {module}.{name} (a Flight Recorder dump never does)")


def _restricted_loads(data: bytes) -> Any:  # noqa: ANN401
    return RestrictedUnpickler(io.BytesIO(data)).load()


@dataclass(frozen=True, slots=True)
class FREntry:
    """One recorded op. ``seq``: collective sequence id within its group (None for P2P); ``p2p_seq``:
    P2P sequence id; ``done``: completed or retired; ``peer``: the other rank of a send/recv."""

    pg: str
    pg_desc: str
    seq: int | None
    p2p_seq: int | None
    op: str
    is_p2p: bool
    state: str
    done: bool
    in_sizes: str
    out_sizes: str
    dtypes: str
    time_ns: int | None
    where: str
    peer: int | None = None


@dataclass(slots=True)
class FRDump:
    """One rank's dump, normalised. ``status``: group name -> (last enqueued, last completed) collective
    seq, from ``pg_status``; ``entries``: the ops not completed (a completed collective was joined by every
    member, so the wavefront lies after it)."""

    rank: int
    source: str
    version: str
    entries: list[FREntry]
    group_ranks: dict[str, list[int]] = field(default_factory=dict)
    group_desc: dict[str, str] = field(default_factory=dict)
    status: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    #: group name -> [highest collective seq recorded, highest completed]; completed collectives are
    #: counted here and not kept in ``entries`` (which holds the incomplete ones and P2P ops)
    seen: dict[str, list[int]] = field(default_factory=dict)
    #: group name -> seq -> the last :data:`KEEP_DONE` completed collectives of the group, for the size and op
    #: check across ranks (a collective can complete on one rank with other sizes than its peers')
    done: dict[str, dict[int, FREntry]] = field(default_factory=dict)


def _int(v: Any) -> int | None:  # noqa: ANN401
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):  # None, text, a float infinity or NaN
        return None


def _ranks(v: Any) -> list[int]:  # noqa: ANN401
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            return []
    if isinstance(v, list | tuple):
        out = [_int(x) for x in v]
        return sorted({x for x in out if x is not None and 0 <= x <= LIMITS.max_rank})
    return []


def _where(frames: Any) -> str:  # noqa: ANN401
    """The innermost frame outside torch.distributed, as ``function (file:line)``."""
    if not isinstance(frames, list):
        return ""
    picked = None
    for f in frames:
        if not isinstance(f, dict):
            continue
        fn = str(f.get("filename", ""))
        if picked is None:
            picked = f
        if "torch/distributed/" not in fn and "/torch/" not in fn:
            picked = f
            break
    if picked is None:
        return ""
    return f"{picked.get('name', '?')} ({os.path.basename(str(picked.get('filename', '?')))}:{picked.get('line', '?')})"


def parse_fr_dump(data: bytes, rank: int, source: str = "") -> FRDump:
    """Parse one dump (pickle or JSON bytes) of ``rank``. Raises :class:`FlightRecorderError` when the
    data is not a Flight Recorder dump; odd entries inside a dump are skipped."""
    if len(data) > MAX_DUMP_BYTES:
        raise FlightRecorderError(f"{source}: larger than {MAX_DUMP_BYTES} bytes, not read")
    doc: Any
    head = data.lstrip()[:1]
    try:
        if head in (b"{", b"["):
            doc = json.loads(data.decode("utf-8", errors="replace"))
        elif data[:1] == b"\x80":
            doc = _restricted_loads(data)
        else:
            raise FlightRecorderError(f"{source}: neither a pickle nor JSON")
    except FlightRecorderError:
        raise
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        IndexError,
        KeyError,
        AttributeError,
        MemoryError,
        RecursionError,
        UnicodeDecodeError,
        OverflowError,  # a pickle opcode declaring an absurd length
    ) as exc:
        raise FlightRecorderError(
            f"{source}: not a readable Flight Recorder dump ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        raise FlightRecorderError(f"{source}: no 'entries' list: not a Flight Recorder dump")
    dump = FRDump(rank=rank, source=source, version=str(doc.get("version", "?")), entries=[])
    cfg = doc.get("pg_config")
    if isinstance(cfg, dict):
        for key, g in cfg.items():
            if not isinstance(g, dict):
                continue
            name = str(g.get("name") or key)
            ranks = _ranks(g.get("ranks"))
            if name and ranks:
                dump.group_ranks[name] = ranks
            if name and g.get("desc"):
                dump.group_desc[name] = str(g["desc"])
    id_to_name: dict[str, str] = {}
    groups: dict[Any, tuple[str, str]] = {}  # process_group value -> (name, desc), parsed once
    seen = dump.seen
    for e in doc["entries"]:
        if not isinstance(e, dict):
            continue
        pgv = e.get("process_group")
        key = tuple(pgv) if isinstance(pgv, list | tuple) else pgv
        try:
            pg, desc = groups[key]
        except (KeyError, TypeError):
            if isinstance(pgv, list | tuple) and pgv:
                pg, desc = str(pgv[0]), str(pgv[1]) if len(pgv) > 1 else ""
            else:
                pg, desc = str(e.get("pg_id", "?")), ""
            with contextlib.suppress(TypeError):
                groups[key] = (pg, desc)
            if desc and pg not in dump.group_desc:
                dump.group_desc[pg] = desc
        if e.get("pg_id") is not None and isinstance(pgv, list | tuple):
            id_to_name[str(e["pg_id"])] = pg
        state = e.get("state")
        done = state == "completed" or bool(e.get("retired"))
        is_p2p = bool(e.get("is_p2p"))
        seq = _int(e.get("collective_seq_id", e.get("seq_id")))
        if not is_p2p and seq is not None:
            prog = seen.get(pg)
            if prog is None:
                seen[pg] = prog = [0, 0]
            if seq > prog[0]:
                prog[0] = seq
            if done and seq > prog[1]:
                prog[1] = seq
        name = str(e.get("profiling_name") or "")
        if done and not is_p2p and seq is not None:
            # a completed collective: the counters above place the wavefront past it; its op and sizes are kept
            # (the last KEEP_DONE of the group) for the check across ranks
            op = name.split(":", 1)[-1].strip() or "?"
            if _P2P_NAME.search(op) is None:
                kept = dump.done.setdefault(pg, {})
                kept[seq] = FREntry(pg=pg, pg_desc=desc, seq=seq, p2p_seq=None, op=op, is_p2p=False,
                                    state=str(state or ""), done=True, in_sizes=str(e.get("input_sizes", ""))[:200],
                                    out_sizes="", dtypes="", time_ns=_int(e.get("time_created_ns")), where="")
                if len(kept) > 2 * KEEP_DONE:
                    for old in sorted(kept)[:-KEEP_DONE]:
                        del kept[old]
            continue
        op = name.split(":", 1)[-1].strip()
        peer = None
        m = _P2P_NAME.search(op)
        if m:
            is_p2p = True
            a, b = int(m.group("a")), int(m.group("b"))
            peer = b if a == rank else a  # 'send 0->1' on rank 0 / 'recv 1<-0' on rank 1
            op = m.group("op")
        dump.entries.append(
            FREntry(
                pg=pg,
                pg_desc=desc,
                seq=None if is_p2p else seq,
                p2p_seq=_int(e.get("p2p_seq_id")),
                op=op or "?",
                is_p2p=is_p2p,
                state=str(state or ""),
                done=done,
                in_sizes=str(e.get("input_sizes", ""))[:200],
                out_sizes=str(e.get("output_sizes", ""))[:200],
                dtypes=str(e.get("input_dtypes", ""))[:100],
                time_ns=_int(e.get("time_created_ns")),
                where=_where(e.get("frames")),
                peer=peer,
            )
        )
    for kept in dump.done.values():
        for old in sorted(kept)[:-KEEP_DONE]:
            del kept[old]
    # pg_status is keyed by the rank-local pg_id (FlightRecorder.hpp), not by the group's global name
    st = doc.get("pg_status")
    if isinstance(st, dict):
        for key, s in st.items():
            name = id_to_name.get(str(key))
            if isinstance(s, dict) and name is not None:
                dump.status[name] = (_int(s.get("last_enqueued_collective")), _int(s.get("last_completed_collective")))
    return dump


#: From this many dumps on, they are read by a pool of processes (one per core): decoding the pickles
#: is the cost (about 1.6 ms per 2,000-entry dump on this project's 2-core reference machine).
PARALLEL_FROM = 256


def _load_one(item: tuple[int, str]) -> tuple[int, FRDump | None, str | None]:
    r, path = item
    p = Path(path)
    try:
        # a file found in a folder, not a link: checked again as it is opened (a link swapped in, a device
        # or a pipe is refused), and read to at most the cap whatever the file system says its size is
        data = read_regular(p, MAX_DUMP_BYTES + 1)
        if len(data) > MAX_DUMP_BYTES:
            return r, None, f"{p.name}: larger than {MAX_DUMP_BYTES} bytes, not read"
        return r, parse_fr_dump(data, r, p.name), None
    except FlightRecorderError as exc:
        return r, None, str(exc)
    except OSError as exc:
        return r, None, f"{p.name}: unreadable ({exc})"


def load_fr_dumps(files: dict[int, Path], workers: int | None = None) -> tuple[dict[int, FRDump], list[str]]:
    """Read every file (rank -> path); unreadable ones become warnings. From :data:`PARALLEL_FROM` files
    on, ``workers`` processes (default: the CPU count) read them; only the parsed dumps (their incomplete
    ops and counters) come back."""
    items = [(r, str(p)) for r, p in sorted(files.items())]
    n = workers if workers is not None else (os.cpu_count() or 1)
    results: list[tuple[int, FRDump | None, str | None]]
    if len(items) >= PARALLEL_FROM and n > 1:
        from concurrent.futures import ProcessPoolExecutor

        try:
            with ProcessPoolExecutor(max_workers=n) as pool:
                results = list(pool.map(_load_one, items, chunksize=max(1, len(items) // (n * 8))))
        except (OSError, RuntimeError):  # no processes here (sandbox, fork limits): read them in this one
            results = [_load_one(it) for it in items]
    else:
        results = [_load_one(it) for it in items]
    dumps = {r: d for r, d, _ in results if d is not None}
    return dumps, [w for _, _, w in results if w]


# --- analysis ---------------------------------------------------------------------------------------


def _members(dumps: dict[int, FRDump]) -> tuple[dict[str, list[int]], dict[str, str]]:
    ranks: dict[str, set[int]] = {}
    desc: dict[str, str] = {}
    for d in dumps.values():
        for g, rs in d.group_ranks.items():
            ranks.setdefault(g, set()).update(rs)
        desc.update(d.group_desc)
        for g in {e.pg for e in d.entries} | set(d.status):
            ranks.setdefault(g, set()).add(d.rank)
    everyone = set(dumps)
    for g in ranks:
        if g == "0" or desc.get(g) == "default_pg":
            ranks[g] |= everyone
    return {g: sorted(rs) for g, rs in ranks.items()}, desc


def _progress(d: FRDump, g: str) -> tuple[int, int, dict[int, FREntry]]:
    """(last enqueued, last completed, seq -> entry) of rank ``d`` in group ``g``; 0 when nothing. The entries are
    the incomplete ones and the last :data:`KEEP_DONE` completed ones."""
    by_seq = dict(d.done.get(g, {}))
    by_seq.update({e.seq: e for e in d.entries if e.pg == g and e.seq is not None})
    enq, done = d.seen.get(g, (0, 0))
    st_enq, st_done = d.status.get(g, (None, None))
    if st_enq is not None and st_enq >= 0:
        enq = max(enq, st_enq)
    if st_done is not None and st_done >= 0:
        done = max(done, st_done)
    return enq, min(done, enq), by_seq


def analyze_collectives(dumps: dict[int, FRDump], world_size: int | None = None) -> CollectiveReport:
    """Cross-rank view of the dumps (see the module docstring). ``world_size``: ranks expected, when known
    (else the highest dumped rank + 1); ranks without a dump are reported."""
    rep = CollectiveReport(ranks_dumped=sorted(dumps))
    if not dumps:
        return rep
    versions = Counter(d.version for d in dumps.values())
    rep.version = versions.most_common(1)[0][0]
    if len(versions) > 1:
        rep.warnings.append(f"dumps of different versions: {dict(versions)}")
    world = min(world_size or (max(dumps) + 1), LIMITS.max_world_size)
    rep.ranks_missing_dump = sorted(set(range(world)) - set(dumps))
    members, desc = _members(dumps)
    for g in members:  # the default group spans the world, dumped or not
        if g == "0" or desc.get(g) == "default_pg":
            members[g] = sorted(set(members[g]) | set(range(world)))
    # 1. Where each rank waits: its incomplete collectives.
    pending: dict[int, list[tuple[str, int]]] = {}
    prog: dict[tuple[str, int], tuple[int, int, dict[int, FREntry]]] = {}
    for g, ranks in members.items():
        for r in ranks:
            if r in dumps:
                prog[(g, r)] = p = _progress(dumps[r], g)
                if p[0] > p[1]:
                    pending.setdefault(r, []).append((g, p[1] + 1))
    # 2. The wavefront of every group with unfinished work.
    blockers: dict[tuple[str, int], set[int]] = {}
    held: set[tuple[str, int]] = set()
    for g, ranks in sorted(members.items(), key=lambda kv: (kv[0] != "0", kv[0])):
        have = [r for r in ranks if (g, r) in prog]
        if not have:
            continue
        front = min(prog[(g, r)][1] for r in have) + 1
        if all(prog[(g, r)][0] < front for r in have):
            continue  # nobody enqueued beyond what everyone completed: the group is idle
        # A collective that every member enqueued, before the wavefront, with other sizes or another op on a
        # minority: completed (or failed and retired) on some ranks, it holds the others (an empty tensor's all_reduce
        # returns at once on its rank, which goes on to the next collective while its peers wait in this one).
        early = None
        for seq in sorted({q for r in have for q in prog[(g, r)][2] if q < front}):
            entries = {r: prog[(g, r)][2][seq] for r in have if seq in prog[(g, r)][2]}
            if len(entries) == len(have) and _mismatch(entries)[0]:
                early = seq
                break
        fronts = [early, front] if early is not None else [front]
        for seq in fronts:
            if seq == front:
                joined = [r for r in have if prog[(g, r)][0] >= front]
                missing = sorted([r for r in have if prog[(g, r)][0] < front] + [r for r in ranks if r not in dumps])
            else:
                joined, missing = list(have), []
            entries = {r: e for r in joined if (e := prog[(g, r)][2].get(seq)) is not None}
            mismatched, detail, (op, sizes) = _mismatch(entries)
            created = [e.time_ns for e in entries.values() if e.time_ns]
            # the call site of the majority's collective (a mismatched rank's own site is in its detail)
            where = next((e.where for r, e in sorted(entries.items()) if r not in mismatched and e.where), "")
            rep.stalls.append(
                CollectiveStall(
                    group=g,
                    group_desc="" if desc.get(g) in (None, "undefined") else desc[g],
                    group_ranks=ranks,
                    seq=seq,
                    op=op,
                    sizes=sizes,
                    joined=joined,
                    missing=missing,
                    mismatched=mismatched,
                    mismatch_detail=detail,
                    where=where,
                    since=min(created) / 1e9 if created else None,
                )
            )
            if seq == front:
                for r in joined:
                    blockers[(g, r)] = set(missing) | set(mismatched)
            else:  # members that stopped at the mismatched collective are held by it, not stuck elsewhere
                held.update((g, r) for r in have if prog[(g, r)][0] == seq)
    for r, waits in pending.items():
        # the oldest incomplete collective it enqueued is the one it waits in
        entries = [(g, s, prog[(g, r)][2].get(s)) for g, s in waits]
        g, s, e = min(entries, key=lambda w: (w[2].time_ns or 0) if w[2] is not None else 0)
        rep.waiting[r] = f"{g}:{s} {e.op if e else '?'}"
    # 3. P2P ops whose peer never posted the match.
    for r, d in dumps.items():
        for e in d.entries:
            if e.is_p2p and not e.done and e.peer is not None:
                want = "recv" if e.op == "send" else "send"
                peer = dumps.get(e.peer)
                matched = peer is not None and any(
                    p.is_p2p and p.op == want and p.peer == r and p.pg == e.pg
                    for p in peer.entries
                    if p.p2p_seq is None or e.p2p_seq is None or p.p2p_seq == e.p2p_seq
                )
                if not matched:
                    rep.p2p.append(P2PStall(group=e.pg, rank=r, op=e.op, peer=e.peer, p2p_seq=e.p2p_seq))
    # 4. Culprits: follow each wait to the ranks it waits for.
    culprits: dict[int, FRCulprit] = {}
    for st in sorted(rep.stalls, key=lambda st: len(st.group_ranks)):  # the narrowest group names it best
        for r in st.mismatched:
            culprits[r] = _stall_culprit(r, st, "mismatch", f"joined collective #{st.seq} of group {st.group} with "
                                                            f"another op or size ({st.mismatch_detail})")
        for r in st.missing:
            if r in culprits or (st.group, r) in held:
                continue
            if r not in dumps:
                culprits[r] = _stall_culprit(r, st, "no_dump", f"never joined {st.op} #{st.seq} of group {st.group} and "
                                                               "left no Flight Recorder dump (process gone or unresponsive)")
            elif r not in pending:
                culprits[r] = _stall_culprit(
                    r, st, "not_joined", f"never joined {st.op} #{st.seq} of group {st.group} (members "
                    f"{fmt_ranks(st.group_ranks)}) and is in no collective: stuck outside communication "
                    "(compute, data loading, I/O, a lock)")
    for p in rep.p2p:
        if p.peer not in culprits and p.peer not in pending:
            culprits[p.peer] = FRCulprit(
                rank=p.peer, kind="p2p", group=p.group, op=p.op,
                reason=f"rank {p.rank}'s {p.op} to/from it never got the matching {'recv' if p.op == 'send' else 'send'}",
            )
    if not culprits and rep.stalls:
        # Every non-joining rank waits elsewhere: a cycle (collectives issued in different orders).
        edges = {r: {m for (g, j), ms in blockers.items() if j == r for m in ms} for r in dumps}
        for r in _cycle_ranks(edges):
            culprits[r] = FRCulprit(
                rank=r, kind="cycle", group=rep.waiting.get(r, "").split(":")[0] or None,
                reason=f"in a wait cycle: it waits in {rep.waiting.get(r, '?')} while ranks it waits for wait for it "
                "(collectives issued in a different order on different ranks)",
            )
    if not culprits and rep.ranks_missing_dump and (rep.stalls or pending):
        for r in rep.ranks_missing_dump:
            culprits[r] = FRCulprit(rank=r, kind="no_dump", reason="left no readable Flight Recorder dump while other "
                                                                   "ranks wait in collectives (process gone or unresponsive)")
    rep.culprits = sorted(culprits.values(), key=lambda c: c.rank)
    rep.stalls.sort(key=lambda st: (len(st.group_ranks), st.group))  # narrowest first, as the text shows them
    return rep


def _signature(e: FREntry) -> tuple[str, str]:
    return (e.op, "" if _SIZES_VARY.search(e.op) else e.in_sizes)


def _mismatch(entries: dict[int, FREntry]) -> tuple[list[int], str, tuple[str, str]]:
    """(mismatched ranks, detail, the majority's (op, sizes)) of the entries ranks recorded at one seq: with a
    majority, the ranks outside it; with none, every rank; ([], "", ...) when all agree (("?", "") for none)."""
    sigs = {r: _signature(e) for r, e in entries.items()}
    common = Counter(sigs.values()).most_common()
    if not common:
        return [], "", ("?", "")
    top = common[0][0]
    shown = {r: (e.op, e.in_sizes) for r, e in entries.items()}
    op_sizes = next(shown[r] for r in sorted(shown) if sigs[r] == top)
    if len(common) == 1:
        return [], "", op_sizes
    if common[0][1] > common[1][1]:  # a majority: the others are the odd ones out
        mismatched = sorted(r for r, sg in sigs.items() if sg != top)
        detail = "; ".join(f"rank {r}: {shown[r][0]} {shown[r][1]}" for r in mismatched[:8])
        return mismatched, detail + f" (others: {op_sizes[0]} {op_sizes[1]})", op_sizes
    mismatched = sorted(sigs)  # no majority: every rank is suspect
    return mismatched, "; ".join(f"rank {r}: {shown[r][0]} {shown[r][1]}" for r in mismatched[:8]), op_sizes


def _cycle_ranks(edges: dict[int, set[int]]) -> list[int]:
    """Ranks on a cycle of the waits-for graph (``edges``: rank -> ranks it waits for)."""
    out: set[int] = set()
    for start in edges:
        path: list[int] = []
        cur: int | None = start
        while cur is not None and cur in edges and cur not in path:
            path.append(cur)
            nxt = sorted(edges[cur])
            cur = nxt[0] if nxt else None
        if cur is not None and cur in path:
            out.update(path[path.index(cur) :])
    return sorted(out)


def fmt_ranks(ranks: list[int], limit: int = 16) -> str:
    """``0,1,2…``: at most ``limit`` ranks, an ellipsis when there are more, ``-`` for none."""
    if not ranks:
        return "-"
    return ",".join(map(str, ranks[:limit])) + ("…" if len(ranks) > limit else "")


def _stall_culprit(rank: int, st: CollectiveStall, kind: str, reason: str) -> FRCulprit:
    return FRCulprit(rank=rank, kind=kind, group=st.group, seq=st.seq, op=st.op, reason=reason)  # type: ignore[arg-type]


def analyze_fr_members(members: dict[int, tuple[str, bytes]], world_size: int | None = None) -> CollectiveReport | None:
    """Analyse Flight Recorder dumps given as bytes (read from an archive): rank -> (member name, data).
    None when there are none; unreadable ones are warnings."""
    if not members:
        return None
    dumps: dict[int, FRDump] = {}
    warnings: list[str] = []
    for r, (name, data) in sorted(members.items()):
        try:
            dumps[r] = parse_fr_dump(data, r, name)
        except FlightRecorderError as exc:
            warnings.append(str(exc))
    rep = analyze_collectives(dumps, world_size or max(members) + 1)
    rep.warnings = [*warnings, *rep.warnings][:200]
    return rep


def analyze_fr_files(files: dict[int, Path], warnings: list[str] | None = None,
                     world_size: int | None = None) -> CollectiveReport | None:
    """Read and analyse dump files (rank -> path, as :func:`~diag_service.ingest.members.find_fr_dumps`
    found them, with its ``warnings``); None when there are none."""
    if not files:
        return None
    dumps, w2 = load_fr_dumps(files)
    # a rank whose file is there but unreadable still belongs to the world
    rep = analyze_collectives(dumps, world_size or max(files) + 1)
    rep.warnings = [*(warnings or []), *w2, *rep.warnings][:200]
    return rep


def analyze_fr_folder(folder: str | Path, world_size: int | None = None) -> CollectiveReport | None:
    """Find, read and analyse the Flight Recorder dumps directly in ``folder``; None when it holds none."""
    files, warnings = find_fr_dumps(folder)
    return analyze_fr_files(files, warnings, world_size)
