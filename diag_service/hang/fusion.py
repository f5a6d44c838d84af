"""One hang report from two kinds of evidence: collective traces and stack snapshots.

The Flight Recorder view (:class:`~diag_service.domain.CollectiveReport`) says *which* ranks are
missing from *which* collective of *which* process group; the stack snapshots
(:func:`diag_service.hang.analyzer.analyze_dumps`) say *where* each rank is. :func:`fuse` makes one
culprit list: a rank both name gets both pieces of evidence; either analysis alone still gives a
report.

Scores (0-1, an ordering, not a probability): a Flight Recorder culprit 0.9 (0.97 when the stacks
also single it out, 0.7 when it is only a rank without a readable dump, 0.6 for a wait cycle); stack
suspects keep their own score, capped at 0.6 when the Flight Recorder names other culprits.
"""

from __future__ import annotations

from diag_service.domain import CollectiveReport, FRCulprit, HangReport, HangSuspect
from diag_service.hang.flight import fmt_ranks

#: Score of a Flight Recorder culprit by kind (see the module docstring).
FR_SCORE = {"not_joined": 0.9, "mismatch": 0.9, "p2p": 0.9, "no_dump": 0.7, "cycle": 0.6}


def _fr_score(c: FRCulprit) -> float:
    return FR_SCORE[c.kind]


def explain_collectives(fr: CollectiveReport) -> str:
    """A few sentences on the stalled collectives and the culprits."""
    if not fr.stalls and not fr.p2p:
        return (
            f"Flight Recorder ({len(fr.ranks_dumped)} rank dumps): every recorded collective completed on every "
            "rank that recorded it; no stalled collective."
        )
    parts: list[str] = []
    for st in sorted(fr.stalls, key=lambda s: len(s.group_ranks))[:3]:
        grp = f"group {st.group}" + (f" ({st.group_desc})" if st.group_desc else "")
        s = f"{st.op} #{st.seq} of {grp}, ranks {fmt_ranks(st.group_ranks)}"
        if st.where:
            s += f", called at {st.where}"
        s += f": joined {fmt_ranks(st.joined)}"
        if st.missing:
            s += ", never joined: " + fmt_ranks(st.missing)
        if st.mismatched:
            s += f"; mismatched: {st.mismatch_detail}"
        parts.append(s)
    for p in fr.p2p[:3]:
        parts.append(f"rank {p.rank}'s {p.op} with rank {p.peer} in group {p.group} has no matching op on rank {p.peer}")
    text = "Flight Recorder: " + "; ".join(parts) + "."
    if len(fr.stalls) > 3:
        text += f" ({len(fr.stalls) - 3} more group(s) stalled behind these.)"
    return text


def _stall_began(fr: CollectiveReport) -> float | None:
    """Unix seconds when the earliest stalled collective was first enqueued (a bound on when the hang began), or
    None when the dumps record no creation time."""
    return min((st.since for st in fr.stalls if st.since is not None), default=None)


def _report_from_fr(fr: CollectiveReport) -> HangReport:
    suspects = [HangSuspect(rank=c.rank, score=_fr_score(c), reason=c.reason, kind=c.kind) for c in fr.culprits]
    suspects.sort(key=lambda s: (-s.score, s.rank))
    hung = fr.stalled
    explanation = explain_collectives(fr)
    if suspects:
        explanation += f" Culprit: rank {suspects[0].rank}, {suspects[0].reason}."
        if len(suspects) > 1:
            explanation += " Also: " + "; ".join(f"rank {s.rank} ({s.reason})" for s in suspects[1:4]) + "."
    return HangReport(
        hung=hung,
        snapshots=0,
        ranks=len(fr.ranks_dumped) + len(fr.ranks_missing_dump),
        stuck_ranks=sorted(int(r) for r in fr.waiting),
        stuck_since_time=_stall_began(fr),
        suspects=suspects,
        explanation=explanation,
        warnings=list(fr.warnings),
        evidence=["flight_recorder"],
        collectives=fr,
    )


def fuse(stacks: HangReport | None, fr: CollectiveReport | None) -> HangReport:
    """Combine the stack analysis and the Flight Recorder analysis (either may be None, not both).

    Raises ``ValueError`` when both are None.
    """
    if stacks is None and fr is None:
        raise ValueError("no evidence: neither stack snapshots nor Flight Recorder dumps")
    if fr is None:
        assert stacks is not None
        stacks.evidence = ["stacks"]
        return stacks
    if stacks is None:
        return _report_from_fr(fr)
    where: dict[int, list[str]] = {}
    for g in stacks.groups:
        for r in g.ranks:
            where.setdefault(r, g.top_frames[:6])
    by_rank = {s.rank: s for s in stacks.suspects}
    merged: list[HangSuspect] = []
    for c in fr.culprits:
        st = by_rank.get(c.rank)
        frames = (st.top_frames if st and st.top_frames else where.get(c.rank, []))[:6]
        reason = c.reason
        if st is not None:
            reason += f"; stacks: {st.reason}"
        elif frames:
            reason += f"; stacks: stuck at {frames[0]}"
        score = 0.97 if st is not None and st.score >= 0.5 else _fr_score(c)
        # the Flight Recorder's kind, unless it only says "not joined" and the stacks say where the rank is instead
        kind = st.kind if c.kind == "not_joined" and st is not None and st.kind == "outside_collective" else c.kind
        merged.append(HangSuspect(rank=c.rank, node=st.node if st else None, score=score, reason=reason,
                                  top_frames=frames, kind=kind))
    named = {c.rank for c in fr.culprits}
    for s in stacks.suspects:
        if s.rank in named:
            continue
        merged.append(s.model_copy(update={"score": min(s.score, 0.6)}) if named else s)
    merged.sort(key=lambda s: (-s.score, s.rank))
    explanation = explain_collectives(fr)
    if merged:
        top = merged[0]
        explanation += f" Culprit: rank {top.rank}" + (f" on {top.node}" if top.node else "") + f", {top.reason}."
        if len(merged) > 1 and merged[1].score >= 0.9:
            explanation += " Also: " + "; ".join(f"rank {s.rank} ({s.reason})" for s in merged[1:4] if s.score >= 0.9) + "."
    explanation += " Stacks: " + stacks.explanation
    return stacks.model_copy(
        update={
            "hung": stacks.hung or fr.stalled,
            "suspects": merged,
            "suspect_nodes": sorted({s.node for s in merged if s.node and s.score >= 0.7}),
            "explanation": explanation,
            "warnings": [*stacks.warnings, *fr.warnings][:200],
            "evidence": ["stacks", "flight_recorder"],
            "collectives": fr,
            "stuck_since_time": stacks.stuck_since_time if stacks.stuck_since_time is not None else _stall_began(fr),
        }
    )
