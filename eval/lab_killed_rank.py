"""Is the SIGKILLed rank named? Real lab runs of ``stop_sigkill_oom`` and ``stop_sigkill_restart``.

A rank killed by a signal prints no traceback; its peers print "Connection closed by peer" and the
like, often earlier than the kill shows in torchrun's summary. The diagnosis must name the killed
rank as the first failing rank (issue 16's criterion: at least 19 of 20 runs, random faulty ranks,
2 nodes). Each run is diagnosed as ``diag diagnose --json --no-llm --no-kb RUN_DIR`` would
(``.diagignore`` keeps ``truth.json`` out of the analysis; the score reads it afterwards).

    .venv/bin/python eval/lab_killed_rank.py --runs 20 --seed 77 --out /tmp/sk    # run and score (~6 min)
    .venv/bin/python eval/lab_killed_rank.py --score /tmp/sk                      # score existing runs

Writes ``eval/results/lab_killed_rank.json`` (per run: scenario, faulty rank, named rank,
category, confidence; and the totals).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from diag_service.pipeline import DiagnoseRequest, diagnose  # noqa: E402

SCENARIOS = ("stop_sigkill_oom", "stop_sigkill_restart")
RESULT = REPO / "eval" / "results" / "lab_killed_rank.json"


def score(suite_dir: Path) -> dict[str, Any]:
    """Diagnose every run folder under ``suite_dir`` that has a ``truth.json``; returns the totals and rows."""
    rows: list[dict[str, Any]] = []
    for run in sorted(p for p in suite_dir.iterdir() if (p / "truth.json").is_file()):
        truth = json.loads((run / "truth.json").read_text())
        d = diagnose(DiagnoseRequest(path=str(run)))
        rows.append({
            "run": run.name, "scenario": truth.get("scenario"), "faulty_rank": truth.get("faulty_rank"),
            "named_rank": d.first_failing_rank, "category": d.category.value,
            "confidence": round(d.confidence, 3),
        })
    named = sum(r["named_rank"] == r["faulty_rank"] for r in rows)
    return {"suite": str(suite_dir), "runs": len(rows), "killed_rank_named": named,
            "category_host_oom": sum(r["category"] == "host_oom" for r in rows), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--score", type=Path, help="score this existing suite folder instead of running one")
    ap.add_argument("--out", type=Path, help="where to run the suite (empty or absent)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=77)
    args = ap.parse_args(argv)
    if args.score is None:
        if args.out is None:
            ap.error("--out is needed to run a suite")
        from diag_service.lab.runner import run_suite
        from diag_service.lab.scenarios import load_scenarios

        scenarios = {k: v for k, v in load_scenarios().items() if k in SCENARIOS}
        run_suite(scenarios, args.out, args.runs, seed=args.seed, ranks=4, nodes=2, echo=print)
        suite = args.out
    else:
        suite = args.score
    res = score(suite)
    RESULT.write_text(json.dumps(res, indent=1) + "\n")
    print(f"killed rank named in {res['killed_rank_named']} of {res['runs']} runs "
          f"(category host_oom in {res['category_host_oom']}); {RESULT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
