#!/usr/bin/env python3
"""The pre-filter union's scan speed on varied real error text, by RE2 memory budget.

The extractor finds candidate lines with one RE2 union of its own alternatives and every catalogue pattern
(``diag_service.extract.events.prefilter_with``). RE2 runs a lazily built DFA whose state cache is bounded by
the regex's ``max_mem`` option; when the cache fills it is flushed and rebuilt, and when that keeps happening
the search falls back to the much slower NFA (RE2's ``re2.h``, "max_mem"; Russ Cox, "Regular Expression
Matching in the Wild"). The union's program grows with the catalogue (about 114,000 instructions for ~850
patterns), and so does each DFA state, so a budget that sufficed for a smaller catalogue starts to thrash on
text with many distinct lines: real failure excerpts, every line a different error.

Text: every dev log of the public corpus (``eval/corpus/logs``, the dev split of ``split.json``)
concatenated, about 0.5 MB of distinct error lines; and the same text with ``--extra N`` synthetic
patterns added to the union (a catalogue that grew by N entries). Per budget (``--budgets``, MiB;
the first is the reference), over ``--runs`` fresh compilations: the median first scan (seconds, MB/s:
the DFA's states are built as the text needs them, what one diagnosis in a new process pays) and the
median second scan of the same text by the same regex (what states the budget kept: a service's later
requests), the number of matches (identical for every budget: asserted), and the process's peak RSS after
each budget's scans and the growth of the resident set over a first scan (MiB; RE2 allocates its cache as it
needs it, so the growth tells what a budget actually cost). Budgets run in the order given, in one process,
interleaved run by run.

    .venv/bin/python eval/bench/bench_prefilter.py [--budgets 64,128,256] [--runs 5] [--extra 0,300]

Writes ``eval/bench/results/bench_prefilter.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import re2

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from diag_service.extract import events as E  # noqa: E402
from diag_service.signatures.catalog import site_catalog  # noqa: E402


def _dev_text() -> bytes:
    split = json.loads((REPO / "eval" / "corpus" / "split.json").read_text())
    ids = list(split["dev"]) + [i for part in split.get("additions", []) for i in part.get("dev", [])]
    logs = REPO / "eval" / "corpus" / "logs"
    return b"".join((logs / f"{i}.log").read_bytes() for i in sorted(ids) if (logs / f"{i}.log").exists())


def _rss_now_mib() -> float:
    """The process's resident set now (MiB, Linux ``/proc/self/statm``)."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budgets", default="64,128,256", help="RE2 max_mem values in MiB; the first is the reference")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--extra", default="0,300", help="synthetic patterns added to the union, one row each")
    ap.add_argument("--out", default=str(REPO / "eval" / "bench" / "results" / "bench_prefilter.json"))
    a = ap.parse_args()
    budgets = [int(b) for b in a.budgets.split(",")]
    text = _dev_text()
    cat = site_catalog(None)
    union = E.prefilter_with(cat.prefilter_patterns())
    parts = list(E._UNION_PARTS[union.pattern])
    rows: list[dict[str, Any]] = []
    for n_extra in (int(x) for x in a.extra.split(",")):
        extra = [rf"synthetic{i} failure in (?:module|package) mod{i}\w* with code \d+ at [A-Za-z_.]+"
                 for i in range(n_extra)]
        pattern = "(?m)" + "|".join(parts + extra)
        times: dict[int, list[float]] = {b: [] for b in budgets}
        warm: dict[int, list[float]] = {b: [] for b in budgets}
        matches: dict[int, int] = {}
        rss: dict[int, float] = {}
        prog = 0
        grown: dict[int, list[float]] = {b: [] for b in budgets}
        for run in range(a.runs):
            for b in budgets:
                o = re2.Options()
                o.max_mem = b << 20
                o.never_capture = True
                # a fresh DFA (a never-matching alternative of its own: the wrapper caches regexes by pattern),
                # whose first scan builds its states as a new process's diagnosis does
                rx = re2.compile(pattern + f"|\\x00fresh{run}x{b}\\x00", o)
                prog = rx.programsize
                before = _rss_now_mib()
                t0 = time.perf_counter()
                n = sum(1 for _m in rx.finditer(text))
                times[b].append(time.perf_counter() - t0)
                grown[b].append(_rss_now_mib() - before)
                t0 = time.perf_counter()  # the same text again: the states that survived in the budget
                sum(1 for _m in rx.finditer(text))
                warm[b].append(time.perf_counter() - t0)
                matches[b] = n
                rss[b] = _rss_mib()
        assert len(set(matches.values())) == 1, matches
        ref, ref_w = statistics.median(times[budgets[0]]), statistics.median(warm[budgets[0]])
        for b in budgets:
            med, med_w = statistics.median(times[b]), statistics.median(warm[b])
            rows.append({
                "extra_patterns": n_extra, "program_size": prog, "max_mem_mib": b,
                "first_scan_s": round(med, 4), "first_scan_mb_per_s": round(len(text) / med / 1e6, 3),
                "first_ratio_to_reference": round(med / ref, 3),
                "second_scan_s": round(med_w, 4), "second_scan_mb_per_s": round(len(text) / med_w / 1e6, 3),
                "second_ratio_to_reference": round(med_w / ref_w, 3),
                "rss_growth_first_scan_mib": round(statistics.median(grown[b]), 1),
                "matches": matches[b], "peak_rss_mib_after": round(rss[b], 1),
            })
            print(f"extra {n_extra:4d} prog {prog:7d} max_mem {b:4d} MiB: first {med:.3f} s "
                  f"({len(text) / med / 1e6:.2f} MB/s, x{med / ref:.2f}), second {med_w:.3f} s "
                  f"({len(text) / med_w / 1e6:.2f} MB/s, x{med_w / ref_w:.2f}), RSS +{statistics.median(grown[b]):.0f} MiB")
    doc = {"bench": "prefilter", "text_bytes": len(text), "text": "corpus dev logs concatenated",
           "runs": a.runs, "reference_budget_mib": budgets[0], "load_average": os.getloadavg(), "rows": rows,
           "shipped_max_mem_mib": E._SCAN_OPTIONS.max_mem >> 20}
    Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
