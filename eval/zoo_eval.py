"""Diagnosis on the zoo (``eval/zoo/``): real failing gloo/CPU training runs written and recorded blind to the rules.

Each run directory goes through the same call as ``diag diagnose --json --no-llm`` (signatures, context rules,
knowledge-base retrieval, no summary), from a neutral copy named ``job`` so that the scenario's id (which names
the injected fault) never reaches the diagnosis. Per split (``eval/zoo/split.json``): category accuracy,
failure-mode accuracy, first-failing-rank accuracy over the cases whose label names a faulty rank, confidently
wrong (confidence >= 0.5 and the category wrong, over all cases) and the unknown rate.

Later batches of runs are listed in ``split.json`` under ``additions`` (each with the labels commit it was frozen
at); their cases are also in the ``dev``/``test`` unions, and are reported once more on their own: ``dev_new`` and,
with ``--test``, ``test_new`` (aggregates only), the cases of the latest addition.

Writes ``eval/results/zoo.json`` (aggregates) and ``eval/results/zoo_dev_cases.jsonl`` (per case, dev only).
The test split is scored only when asked, and every such run appends one line to ``eval/zoo/test_looks.jsonl``
(date, commit, why); a dev-only run keeps the last test aggregates in ``zoo.json`` with the commit they were
scored at (``test_scored_at``).

    .venv/bin/python eval/zoo_eval.py                       # dev only
    .venv/bin/python eval/zoo_eval.py --test --why "..."    # dev and test (counted as a look)
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "eval"))

from corpus_eval import _commit, record_test_look  # noqa: E402

ZOO = REPO / "eval" / "zoo"
RESULTS = REPO / "eval" / "results"
CONFIDENT = 0.5  # same threshold as eval/corpus_eval.py


def load_labels() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (ZOO / "labels.jsonl").read_text().splitlines() if line.strip()]


def load_split() -> dict[str, Any]:
    """``split.json``: ``dev`` and ``test`` id lists (every batch), ``labels_commit``, ``additions`` (later batches)."""
    return json.loads((ZOO / "split.json").read_text())


def run_case(case: dict[str, Any], tmp: Path) -> dict[str, Any]:
    from diag_service.pipeline import DiagnoseRequest, diagnose

    job = tmp / "job"
    if job.exists():
        shutil.rmtree(job)
    shutil.copytree(ZOO / "runs" / case["id"], job)
    try:
        d = diagnose(DiagnoseRequest(path=str(job), kb=True, llm=False))
    except Exception as e:  # a crash is a result too: scored as unknown
        return {"category": "unknown", "failure_mode": None, "confidence": 0.0, "first_failing_rank": None,
                "summary": f"error: {type(e).__name__}: {e}"}
    return {"category": d.category.value, "failure_mode": d.failure_mode.value, "confidence": d.confidence,
            "first_failing_rank": d.first_failing_rank, "summary": d.root_cause.summary}


def score(cases: list[dict[str, Any]], got: dict[str, dict[str, Any]]) -> dict[str, Any]:
    n = len(cases)
    cat = sum(got[c["id"]]["category"] == c["category"] for c in cases)
    mode = sum(got[c["id"]]["failure_mode"] == c["failure_mode"] for c in cases)
    ranked = [c for c in cases if c["faulty_rank"] is not None]
    rank = sum(got[c["id"]]["first_failing_rank"] == c["faulty_rank"] for c in ranked)
    conf_wrong = sum(got[c["id"]]["confidence"] >= CONFIDENT and got[c["id"]]["category"] != c["category"] for c in cases)
    unknown = sum(got[c["id"]]["category"] == "unknown" for c in cases)
    return {
        "cases": n,
        "category_accuracy": round(cat / n, 4) if n else None,
        "category_right": cat,
        "failure_mode_accuracy": round(mode / n, 4) if n else None,
        "first_rank_accuracy": round(rank / len(ranked), 4) if ranked else None,
        "first_rank_right": rank,
        "first_rank_cases": len(ranked),
        "confidently_wrong": conf_wrong,
        "confidently_wrong_rate": round(conf_wrong / n, 4) if n else None,
        "unknown_rate": round(unknown / n, 4) if n else None,
    }


LOOKS = ZOO / "test_looks.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--test", action="store_true", help="also score the frozen test split (recorded as a look)")
    ap.add_argument("--why", default="", help="why test is looked at (required with --test)")
    args = ap.parse_args()
    if args.test and not args.why.strip():
        ap.error("--test needs --why")
    labels = load_labels()
    frozen = load_split()
    split = {i: name for name in ("dev", "test") for i in frozen[name]}
    splits = ("dev", "test") if args.test else ("dev",)
    t0 = time.time()
    got: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="zoo_eval_") as tmp:
        for c in labels:
            if split[c["id"]] in splits:
                got[c["id"]] = run_case(c, Path(tmp))
    elapsed = time.time() - t0
    commit = _commit()
    out: dict[str, Any] = {"commit": commit, "date": time.strftime("%Y-%m-%d"), "seconds": round(elapsed, 1),
                           "labels_commit": frozen["labels_commit"]}
    for name in splits:
        out[name] = score([c for c in labels if split[c["id"]] == name], got)
    additions = frozen.get("additions", [])
    newest = additions[-1] if additions else None
    if newest:  # the latest batch on its own (its cases are in the dev/test unions above too)
        out["new_batch"] = {"labels_commit": newest["labels_commit"], "date": newest["date"]}
        for name in splits:
            out[f"{name}_new"] = score([c for c in labels if c["id"] in set(newest[name])], got)
    previous = json.loads((RESULTS / "zoo.json").read_text()) if (RESULTS / "zoo.json").exists() else {}
    if args.test:
        out["test_scored_at"] = commit
        record_test_look(args.why, commit, LOOKS)
    elif "test" in previous:
        out["test"] = previous["test"]
        if "test_new" in previous and newest and previous.get("new_batch") == out.get("new_batch"):
            out["test_new"] = previous["test_new"]
        out["test_scored_at"] = previous.get("test_scored_at", previous.get("commit"))
    out["test_looks"] = sum(1 for ln in LOOKS.read_text().splitlines() if ln.strip()) if LOOKS.exists() else 0
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "zoo.json").write_text(json.dumps(out, indent=1) + "\n")
    with open(RESULTS / "zoo_dev_cases.jsonl", "w") as fh:
        for c in labels:
            if split[c["id"]] != "dev":
                continue
            g = got[c["id"]]
            fh.write(json.dumps({
                "id": c["id"], "new_batch": bool(newest and c["id"] in newest["dev"]),
                "truth": {k: c[k] for k in ("category", "failure_mode", "faulty_rank")},
                "category": g["category"], "failure_mode": g["failure_mode"], "confidence": g["confidence"],
                "first_failing_rank": g["first_failing_rank"], "summary": (g["summary"] or "")[:300],
            }) + "\n")
    print(f"{'split':8} {'n':>3} {'category':>9} {'mode':>6} {'1st rank':>9} {'conf.wrong':>10} {'unknown':>8}")
    for name in ("dev", "test", "dev_new", "test_new"):
        if name not in out:
            continue
        s = out[name]
        fr = f"{s['first_rank_right']}/{s['first_rank_cases']}"
        print(f"{name:8} {s['cases']:>3} {s['category_accuracy']:>9} {s['failure_mode_accuracy']:>6} {fr:>9} "
              f"{s['confidently_wrong']:>10} {s['unknown_rate']:>8}"
              + ("" if name.split("_")[0] in splits else f"  (scored at {str(out.get('test_scored_at'))[:7]})"))
    print(f"({elapsed:.0f} s; test looked at {out['test_looks']} time(s))")


if __name__ == "__main__":
    main()
