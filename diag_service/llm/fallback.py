"""The deterministic summary, written from the evidence pack when no model answer is usable.

Two or three sentences, each citing the pack items it rests on:

1. what failed first and where: the deciding signature's name (else a short quote of the first
   failure's log line), or the hang/slow finding;
2. the other ranks' errors as consequences (cascade items), when there are any;
3. the closest past incident, when one is in the pack.
"""

from __future__ import annotations

from diag_service.llm.pack import CATEGORY_WORDS, MODE_WORDS, EvidencePack, PackItem

_EXCERPT = 140


def _excerpt(text: str, n: int = _EXCERPT) -> str:
    """``text`` up to ``n`` characters, cut at a word boundary (not inside a word) and marked with "...";
    a trailing full stop is left off."""
    text = text.strip().rstrip(".")
    if len(text) <= n:
        return text
    cut = text[: n - 3]
    space = cut.rfind(" ")
    if space >= n // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:([") + "..."


def _first(pack: EvidencePack, kind: str) -> PackItem | None:
    return next((i for i in pack.items if i.kind == kind), None)


def fallback_summary(pack: EvidencePack) -> tuple[str, list[str]]:
    """``(text, citations)`` from ``pack`` alone; an empty pack gives a sentence that says so, without citations."""
    f = pack.facts
    sentences: list[tuple[str, list[str]]] = []
    first = _first(pack, "first_failure")
    sig = _first(pack, "signature")
    finding = _first(pack, "hang") or _first(pack, "slow")
    rank = f.get("first_failing_rank")
    node = f.get("first_failing_node")
    where = f"Rank {rank}" if rank is not None else "The job"
    if rank is not None and node:
        where += f" on node {node}"
    if first is not None:
        # a signature's name when one matched (our words); else a short quote of the log line
        what = f'"{_excerpt(first.text, 120)}"'
        cites = [first.id]
        if sig is not None and sig.label.count('"') >= 2:
            what = sig.label.split('"')[1]
            cites.append(sig.id)
        if rank is not None and first.ranks and rank not in first.ranks:
            # the first error line is another rank's report about the named one (a hang's silent rank, a rank killed
            # without a traceback): not "rank 2 failed first with <rank 0's timeout>" (a new user's trial 41, r02)
            state = "is the rank the job hung on" if f.get("failure_mode") == "fail_hang" else "failed first"
            sentences.append((f"{where} {state}; the first error, reported by a peer, was {what}", cites))
        else:
            verb = "failed first with" if rank is not None else "failed with"
            sentences.append((f"{where} {verb} {what}", cites))
    elif finding is not None:
        sentences.append((f"{_excerpt(finding.text, 220)}", [finding.id]))
    elif sig is not None:
        sentences.append((f"{where} matched the known failure signature {sig.label.split(',')[0]}", [sig.id]))
    if finding is not None and first is not None:
        sentences.append((_excerpt(finding.text, 220), [finding.id]))
    cascade = [i for i in pack.items if i.kind == "cascade"][:3]
    if cascade and len(sentences) < 3:
        others = f.get("other_failed_ranks")
        on = f", on {others} other rank(s)," if isinstance(others, int) and others else ""
        after = f" rank {rank}'s failure" if rank is not None else " the first failure"
        # (neutral words: a cascade item can be the launcher's own action, "Sending process N closing signal
        # SIGTERM", not an error of another rank)
        sentences.append((f"What the logs show after{after}{on} (such as \"{_excerpt(cascade[0].text, 90)}\") "
                          "follows from it", [i.id for i in cascade]))
    similar = _first(pack, "similar")
    if similar is not None and len(sentences) < 3:
        title = similar.text.split(":", 1)[0]
        sentences.append((f"It resembles {similar.label.split(',')[0]} ({_excerpt(title, 100)})", [similar.id]))
    if not sentences:
        mode, cat = str(f.get("failure_mode")), str(f.get("category"))
        return (f"No failure evidence was found ({MODE_WORDS.get(mode, mode.replace('_', ' '))}; cause: "
                f"{CATEGORY_WORDS.get(cat, cat.replace('_', ' '))}).", [])
    text = " ".join(f"{s if s.endswith('...') else s.rstrip('.')} [{', '.join(c)}]." for s, c in sentences[:3])
    cites: list[str] = []
    for _, c in sentences[:3]:
        cites.extend(x for x in c if x not in cites)
    return text, cites
