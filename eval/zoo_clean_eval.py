"""False alarms on the zoo's clean control runs (``eval/zoo/clean/``): real training runs with no fault.

Each run goes through the same call as ``diag diagnose --json --no-llm`` (from a neutral copy named ``job``), as
in ``eval/zoo_eval.py``. A clean run has no failure to find; what is counted per split
(``eval/zoo/clean/split.json``) is how often the diagnosis claims something a person would act on:

* ``fail_slow``: a slowdown reported (the false alarm this set exists for: fail-slow from the logs' step lines);
* ``named_category``: any category other than ``unknown`` (a cause claimed for a run that had none);
* the failure modes seen: ``none`` when the logs end with the run's own report of completion (since
  2026-12-05); a clean run whose logs just end without an error reads as an inferred hang at confidence 0.15.

The test split is scored only with ``--test`` and each such run appends a line to ``eval/zoo/test_looks.jsonl``.

    .venv/bin/python eval/zoo_clean_eval.py            # dev
    .venv/bin/python eval/zoo_clean_eval.py --test --why "..."
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "eval"))

from corpus_eval import record_test_look  # noqa: E402

CLEAN = REPO / "eval" / "zoo" / "clean"
RESULTS = REPO / "eval" / "results"


def _run_dir(run_id: str) -> Path:
    for d in (CLEAN / "runs" / run_id, REPO / "eval" / "zoo" / "runs" / run_id):
        if d.is_dir():
            return d
    raise FileNotFoundError(f"no run folder for {run_id}")


def diagnose_run(run_id: str, tmp: Path) -> dict[str, Any]:
    from diag_service.pipeline import DiagnoseRequest, diagnose

    job = tmp / "job"
    if job.exists():
        shutil.rmtree(job)
    shutil.copytree(_run_dir(run_id), job)
    d = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))
    return {"id": run_id, "failure_mode": d.failure_mode.value, "category": d.category.value,
            "confidence": d.confidence, "slow": bool(d.slow is not None and d.slow_found()),
            "summary": d.root_cause.summary[:300]}


def score(ids: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as t:
        rows = [diagnose_run(i, Path(t)) for i in ids]
    return {"n": len(rows), "fail_slow": sum(r["failure_mode"] == "fail_slow" for r in rows),
            "slow_found": sum(r["slow"] for r in rows),
            "named_category": sum(r["category"] != "unknown" for r in rows),
            "modes": dict(collections.Counter(r["failure_mode"] for r in rows)), "cases": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--test", action="store_true", help="also score the test split (counted as a look)")
    ap.add_argument("--why", default="", help="why test is looked at (recorded)")
    a = ap.parse_args(argv)
    split = json.loads((CLEAN / "split.json").read_text())
    out: dict[str, Any] = {"dev": score(split["dev"])}
    if a.test:
        out["test"] = score(split["test"])
        out["test"].pop("cases")  # aggregates only for test
        record_test_look("zoo clean controls: " + (a.why or "unspecified"),
                         looks=REPO / "eval" / "zoo" / "test_looks.jsonl")
    for name, res in out.items():
        print(f"{name}: {res['n']} clean runs; fail_slow {res['fail_slow']}, slowdown found {res['slow_found']}, "
              f"a category named {res['named_category']}; modes {res['modes']}")
        if name == "dev":
            for r in res["cases"]:
                print(f"  {r['id']}: {r['failure_mode']} {r['category']} {r['confidence']}  {r['summary'][:110]}")
    (RESULTS / "zoo_clean.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
