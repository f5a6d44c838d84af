"""Hang culprits from Flight Recorder dumps, stack snapshots, and both: real lab runs.

Each hang scenario runs with a random faulty rank and onset on 4 ranks over 2 nodes; every rank's
Flight Recorder is dumped into ``<run>/fr/`` when the runner detects the hang, and the runner takes
stack snapshots into ``<run>/dumps/``. Each run is analysed three ways, as ``diag hang`` would:
``<run>/fr`` (Flight Recorder only), ``<run>/dumps`` (stacks only) and ``<run>`` (both, fused). A run
counts as right when the top suspect is a faulty rank (truth.json); with two faulty ranks it also
counts whether both are among the suspects scored 0.9 or more; for Flight Recorder views each row
records the group and op of the top culprit's stalled collective.

    .venv/bin/python eval/lab_hang_fr.py --runs 36 --seed 5 --out /tmp/hfr     # run and score (~30 min)
    .venv/bin/python eval/lab_hang_fr.py --runs 8 --scenarios hang_two_subgroups --out /tmp/hfr2
    .venv/bin/python eval/lab_hang_fr.py --score /tmp/hfr /tmp/hfr2            # score existing runs

Writes ``eval/results/lab_hang_fr.json`` (per run and per scenario x evidence kind).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from diag_service.hang import HangRequest, analyze_hang  # noqa: E402

SCENARIOS = (
    "hang_sleep_before_allreduce", "hang_subgroup_sleep", "hang_data_loading", "hang_lock_deadlock",
    "hang_collective_mismatch", "hang_collective_skip", "hang_two_subgroups",
)
RESULT = REPO / "eval" / "results" / "lab_hang_fr.json"
VIEWS = {"fr": "fr", "stacks": "dumps", "both": ""}


def _view(run: Path, sub: str) -> dict[str, Any]:
    path = run / sub if sub else run
    if not path.exists():
        return {"error": "missing"}
    try:
        rep = analyze_hang(HangRequest(dumps_dir=str(path)))
    except (FileNotFoundError, ValueError) as exc:
        return {"error": str(exc)[:200]}
    top = rep.suspects[0] if rep.suspects else None
    out: dict[str, Any] = {"hung": rep.hung, "top": top.rank if top else None, "top_score": top.score if top else None,
                           "suspects": [s.rank for s in rep.suspects[:4]],
                           "named": sorted(s.rank for s in rep.suspects if s.score >= 0.9)}
    if rep.collectives is not None:
        cul = next((c for c in rep.collectives.culprits if top and c.rank == top.rank), None)
        stall = next((s for s in rep.collectives.stalls if cul and s.group == cul.group), None)
        out["group"] = stall.group_ranks if stall else None
        out["op"] = stall.op if stall else None
    return out


def score(suite_dirs: list[Path]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    runs = sorted(p for d in suite_dirs for p in d.iterdir() if (p / "truth.json").is_file())
    for run in runs:
        truth = json.loads((run / "truth.json").read_text())
        row: dict[str, Any] = {"run": run.name, "scenario": truth.get("scenario"), "faulty_rank": truth.get("faulty_rank"),
                               "affected": truth.get("affected_ranks") or [truth.get("faulty_rank")]}
        for name, sub in VIEWS.items():
            row[name] = _view(run, sub)
        rows.append(row)
    def right(r: dict[str, Any], name: str) -> bool:
        return r[name].get("top") in r["affected"]

    def all_named(r: dict[str, Any], name: str) -> bool:
        return set(r["affected"]) <= set(r[name].get("named", []))

    table: dict[str, dict[str, Any]] = defaultdict(dict)
    for sc in sorted({r["scenario"] for r in rows}):
        rs = [r for r in rows if r["scenario"] == sc]
        for name in VIEWS:
            table[sc][name] = f"{sum(right(r, name) for r in rs)}/{len(rs)}"
            if any(len(r["affected"]) > 1 for r in rs):
                table[sc][name + "_all_faulty_named"] = f"{sum(all_named(r, name) for r in rs)}/{len(rs)}"
    totals = {name: f"{sum(right(r, name) for r in rows)}/{len(rows)}" for name in VIEWS}
    # the Flight Recorder view must name the (top) faulty rank's own narrowest group (its tensor-parallel group
    # in tp scenarios, else the world) and the collective it failed to join (the all-reduce)
    from diag_service.lab.scenarios import load_scenarios

    tp = {k: v.tp_size for k, v in load_scenarios().items()}

    def group_right(r: dict[str, Any]) -> bool:
        top = r["fr"].get("top")
        f, size = (top if top in r["affected"] else r["faulty_rank"]), tp.get(r["scenario"], 1)
        want = list(range(f - f % size, f - f % size + size)) if size > 1 else None
        g = r["fr"].get("group")
        return r["fr"].get("op") == "all_reduce" and (g == want if want else g is not None and len(g) >= 4)

    totals["fr_group_and_collective_right"] = f"{sum(group_right(r) for r in rows)}/{len(rows)}"
    return {"suites": [str(d) for d in suite_dirs], "runs": len(rows), "top1": totals, "per_scenario": dict(table), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--score", type=Path, nargs="+", help="score these existing suite folders instead of running one")
    ap.add_argument("--out", type=Path, help="where to run the suite (empty or absent)")
    ap.add_argument("--runs", type=int, default=36)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated subset to run")
    args = ap.parse_args(argv)
    if args.score is None:
        if args.out is None:
            ap.error("--out is needed to run a suite")
        from diag_service.lab.runner import run_suite
        from diag_service.lab.scenarios import load_scenarios

        wanted = set(args.scenarios.split(","))
        scenarios = {k: v for k, v in load_scenarios().items() if k in wanted}
        run_suite(scenarios, args.out, args.runs, seed=args.seed, ranks=4, nodes=2, echo=print)
        suite = args.out
        suites = [suite]
    else:
        suites = args.score
    res = score(suites)
    RESULT.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps({"runs": res["runs"], "top1": res["top1"], "per_scenario": res["per_scenario"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
