"""Global ranks for events known only by their node and local rank.

On a multi-node torchrun job a rank's own lines often carry only its local rank: the ``--tee`` prefix
(``[default1]:``, ``[${role}${local_rank}]``) and the folder of torchrun's ``--log-dir`` tree
(``<run_id>/attempt_N/<local_rank>/stderr.log``) count from 0 on every node. The same node's torchelastic failure table
says which global rank each local rank was (``rank : 3 (local_rank: 1)``; torch/distributed/elastic/multiprocessing/
errors/__init__.py), as do lines that carry both prefixes (``[default1]:[rank3]:``). :func:`fill_global_ranks` learns
that map from the events that state both numbers on a known node and gives the global rank to the events of the same
node and local rank that lack it, so that node1's ``[default1]:Fatal Python error: Segmentation fault`` is rank 3's,
not a rank of no number beside node0's later rank-1 abort.
"""

from __future__ import annotations

from diag_service.contracts import TemplateGroup


def global_rank_map(groups: list[TemplateGroup]) -> dict[tuple[str, int], int]:
    """``(node, local rank) -> global rank`` from the events (first, examples, each rank's first) that state all
    three, for the pairs that every such event maps to the same global rank (a contradiction drops the pair)."""
    seen: dict[tuple[str, int], set[int]] = {}
    for g in groups:
        for ev in _events(g):
            if ev.rank is not None and ev.local_rank is not None and ev.node is not None:
                seen.setdefault((ev.node, ev.local_rank), set()).add(ev.rank)
    return {k: next(iter(v)) for k, v in seen.items() if len(v) == 1}


def fill_global_ranks(groups: list[TemplateGroup]) -> int:
    """Set the global rank of every kept event (a group's first, examples and per-rank firsts) that has a node and a
    local rank but no rank, from :func:`global_rank_map`, and add it to its group's ranks. Returns how many events got
    one; 0 on a bundle of one node (whose local ranks the localizer reads as the global ones) or when no event states
    both numbers."""
    if len({n for g in groups for n in g.nodes}) < 2:
        return 0
    table = global_rank_map(groups)
    if not table:
        return 0
    filled = 0
    for g in groups:
        for ev in _events(g):
            if ev.rank is None and ev.local_rank is not None and ev.node is not None:
                rank = table.get((ev.node, ev.local_rank))
                if rank is None:
                    continue
                ev.rank = rank
                filled += 1
                g.ranks.add(rank)
                g.rank_first.setdefault(rank, ev)
                if ev.ts is not None and (rank not in g.rank_first_ts or ev.ts < g.rank_first_ts[rank]):
                    g.rank_first_ts[rank] = ev.ts
    return filled


def _events(g: TemplateGroup) -> list:
    evs = list(g.examples)
    if g.first is not None and all(g.first is not e for e in evs):
        evs.append(g.first)
    evs.extend(e for e in g.rank_first.values() if all(e is not x for x in evs))
    return evs


__all__ = ["fill_global_ranks", "global_rank_map"]
