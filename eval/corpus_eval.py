"""Diagnosis on the public real-failure corpus (``eval/corpus/``), dev and test side by side.

Each case's log goes through the same call as ``diag diagnose --json --no-llm`` (signatures, context
rules, knowledge-base retrieval, no summary). Per split: category accuracy, macro-F1 over categories,
confidently-wrong rate (confidence >= 0.5 and the category wrong, over all cases), unknown rate,
failure-mode accuracy, first-failing-rank accuracy over the cases whose log shows the rank, and a
reliability table (confidence bins against accuracy, with the expected calibration error).

The split of a case depends only on its thread (:func:`split_of`); ``eval/corpus/split.json``
records the frozen assignment and the commit that froze it. Per-case results are written for
``dev`` only (``eval/results/corpus_dev_cases.jsonl``): test results are aggregates, and every run
that computes them appends one line to ``eval/corpus/test_looks.jsonl`` (date, commit, why), so the
scorecard can say how many times the test split was looked at.

    .venv/bin/python eval/corpus_eval.py                      # dev only
    .venv/bin/python eval/corpus_eval.py --test --why "..."   # dev and test (counted as a look)
    .venv/bin/python eval/corpus_eval.py --freeze             # write split.json (once, when the corpus is collected)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "eval"))
sys.path.insert(0, str(REPO / "eval" / "corpus"))

from check import load_labels, normalise_url  # noqa: E402
from scorecard import macro_f1  # noqa: E402

CORPUS = REPO / "eval" / "corpus"
RESULTS = REPO / "eval" / "results"
SPLIT_FILE = CORPUS / "split.json"
LOOKS_FILE = CORPUS / "test_looks.jsonl"
#: Share of threads in the test split (decided before the corpus was collected, by thread hash).
TEST_SHARE = 0.42
CONFIDENT = 0.5
BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0001)


def split_of(url: str) -> str:
    """``test`` or ``dev`` for a thread URL: the first 8 hex digits of sha256 of the normalised URL,
    as a fraction of 2**32, below :data:`TEST_SHARE` is test."""
    h = int(hashlib.sha256(normalise_url(url).encode()).hexdigest()[:8], 16)
    return "test" if h / 2**32 < TEST_SHARE else "dev"


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def frozen_split() -> dict[str, str]:
    """Case id -> split from ``split.json`` (the first freeze and its ``additions``); cases added after
    the last freeze fall back to :func:`split_of`."""
    if not SPLIT_FILE.exists():
        return {}
    doc = json.loads(SPLIT_FILE.read_text())
    out: dict[str, str] = {}
    for part in [doc, *doc.get("additions", [])]:
        out |= {cid: "test" for cid in part.get("test", [])} | {cid: "dev" for cid in part.get("dev", [])}
    return out


def newest_test() -> tuple[str | None, set[str]]:
    """The commit and test ids of the latest addition to the corpus (``None, set()`` without one): cases
    collected after the rules they are scored with were written."""
    if not SPLIT_FILE.exists():
        return None, set()
    adds = json.loads(SPLIT_FILE.read_text()).get("additions", [])
    return (adds[-1]["commit"], set(adds[-1]["test"])) if adds else (None, set())


def assign(labels: list[dict[str, Any]]) -> dict[str, str]:
    frozen = frozen_split()
    return {c["id"]: frozen.get(c["id"], split_of(c["source_url"])) for c in labels}


def diagnose_case(case: dict[str, Any], raw: bool = False) -> dict[str, Any]:
    """One case through the pipeline; ``raw`` skips the confidence calibration (to fit it)."""
    from diag_service.pipeline import DiagnoseRequest, diagnose

    path = CORPUS / "logs" / f"{case['id']}.log"
    try:
        extra = {"calibration": None} if raw else {}
        d = diagnose(DiagnoseRequest(path=str(path), kb=True, llm=False, recovery=True, **extra))
    except Exception as exc:  # noqa: BLE001 - a crash on a real log is a result to report, not to hide
        return {"id": case["id"], "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {
        "id": case["id"], "category": d.category.value, "failure_mode": d.failure_mode.value,
        "confidence": d.confidence, "first_failing_rank": d.first_failing_rank,
        "category_source": getattr(d, "category_source", None),
        "recovery": d.recovery.level.value if d.recovery else None,
        "summary": d.root_cause.summary[:400],
    }


def score(cases: list[dict[str, Any]], got: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Aggregate metrics of one split (see the module docstring)."""
    n = len(cases)
    if not n:
        return {"cases": 0}
    pairs, mode_ok, conf_wrong, unknown, errors = [], 0, 0, 0, 0
    rank_n = rank_ok = rec_n = rec_ok = 0
    bins: list[list[tuple[float, bool]]] = [[] for _ in BINS[:-1]]
    for c in cases:
        g = got[c["id"]]
        if "error" in g:
            errors += 1
            g = {"category": "unknown", "failure_mode": "fail_stop", "confidence": 0.0, "first_failing_rank": None}
        ok = g["category"] == c["category"]
        pairs.append((c["category"], g["category"]))
        mode_ok += g["failure_mode"] == c["failure_mode"]
        conf_wrong += (not ok) and g["confidence"] >= CONFIDENT
        unknown += g["category"] == "unknown"
        if c.get("faulty_rank") is not None:
            rank_n += 1
            rank_ok += g["first_failing_rank"] == c["faulty_rank"]
        if g.get("recovery"):
            rec_n += 1
            rec_ok += g["recovery"] == c["recovery_level"]
        for i in range(len(BINS) - 1):
            if BINS[i] <= g["confidence"] < BINS[i + 1]:
                bins[i].append((g["confidence"], ok))
    table = []
    ece = 0.0
    for i, b in enumerate(bins):
        if not b:
            table.append({"bin": f"{BINS[i]:.1f}-{min(BINS[i + 1], 1.0):.1f}", "cases": 0})
            continue
        acc = sum(ok for _, ok in b) / len(b)
        mean_c = sum(c for c, _ in b) / len(b)
        ece += len(b) / n * abs(acc - mean_c)
        table.append({"bin": f"{BINS[i]:.1f}-{min(BINS[i + 1], 1.0):.1f}", "cases": len(b),
                      "mean_confidence": round(mean_c, 3), "accuracy": round(acc, 3)})
    return {
        "cases": n,
        "category_accuracy": round(sum(t == p for t, p in pairs) / n, 4),
        "category_macro_f1": macro_f1(pairs, over_predicted=False),
        "confidently_wrong_rate": round(conf_wrong / n, 4),
        "unknown_rate": round(unknown / n, 4),
        "failure_mode_accuracy": round(mode_ok / n, 4),
        "first_rank_accuracy": round(rank_ok / rank_n, 4) if rank_n else None,
        "first_rank_cases": rank_n,
        "recovery_level_agreement": round(rec_ok / rec_n, 4) if rec_n else None,
        "errors": errors,
        "reliability": table,
        "ece": round(ece, 4),
        "truth_categories": dict(Counter(c["category"] for c in cases).most_common()),
    }


def record_test_look(why: str, commit: str | None = None, looks: Path = LOOKS_FILE) -> None:
    """Append one line (date, commit, ``why``) to ``test_looks.jsonl`` (``looks``; another corpus passes its own):
    a run that computed test results.

    ``commit``: the code that computed them (default: ``HEAD`` now; a long run passes the one it started at).
    """
    with looks.open("a") as fh:
        fh.write(json.dumps({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit or _commit(),
                             "why": why or "unspecified"}) + "\n")


def evaluate(test: bool = False, why: str = "") -> dict[str, Any]:
    """Score dev (and test when asked, appending a line to ``test_looks.jsonl``)."""
    labels = load_labels(CORPUS)
    if not labels:
        return {"available": False, "reason": "eval/corpus/labels holds no case"}
    split = assign(labels)
    splits = ["dev", "test"] if test else ["dev"]
    new_commit, new_ids = newest_test()
    doc = json.loads(SPLIT_FILE.read_text()) if SPLIT_FILE.exists() else {}
    out: dict[str, Any] = {"available": True, "frozen_at": doc.get("commit"),
                           "cases": {s: sum(1 for v in split.values() if v == s) for s in ("dev", "test")}}
    for s in splits:
        cases = [c for c in labels if split[c["id"]] == s]
        got = {c["id"]: diagnose_case(c) for c in cases}
        out[s] = score(cases, got)
        if s == "test" and new_ids:
            fresh = [c for c in cases if c["id"] in new_ids]
            out["test_new"] = score(fresh, {c["id"]: got[c["id"]] for c in fresh}) | {"frozen_at": new_commit}
        if s == "test":
            # each part of the corpus on its own, in the order it was frozen: how the current rules hold on cases
            # collected after ever later rules (the first part was frozen with the first rules)
            out["test_by_part"] = []
            for part in [doc, *doc.get("additions", [])] if doc else []:
                ids = set(part.get("test", []))
                sub = [c for c in cases if c["id"] in ids]
                if sub:
                    sc = score(sub, {c["id"]: got[c["id"]] for c in sub})
                    out["test_by_part"].append({"frozen_at": str(part.get("commit", ""))[:12], "date": part.get("date"),
                                                **{k: sc.get(k) for k in ("cases", "category_accuracy",
                                                                          "confidently_wrong_rate",
                                                                          "failure_mode_accuracy")}})
        if s == "dev":
            RESULTS.mkdir(parents=True, exist_ok=True)
            with (RESULTS / "corpus_dev_cases.jsonl").open("w") as fh:
                for c in cases:
                    fh.write(json.dumps({"truth": {k: c[k] for k in ("category", "failure_mode", "faulty_rank",
                                                                       "recovery_level")}, **got[c["id"]]}) + "\n")
    if test:
        record_test_look(why)
    out["test_looks"] = sum(1 for line in LOOKS_FILE.read_text().splitlines() if line.strip()) if LOOKS_FILE.exists() else 0
    return out


ROWS = ("cases", "category_accuracy", "category_macro_f1", "confidently_wrong_rate", "unknown_rate",
        "failure_mode_accuracy", "first_rank_accuracy", "first_rank_cases", "recovery_level_agreement", "ece", "errors")


def markdown(res: dict[str, Any]) -> str:
    if not res.get("available"):
        return f"corpus: absent ({res.get('reason')})\n"
    lines = [f"Public corpus (frozen at {res.get('frozen_at') or 'not frozen'}; test looked at "
             f"{res.get('test_looks', 0)} time(s)); test_new: the test cases of the latest addition "
             f"(frozen at {(res.get('test_new') or {}).get('frozen_at') or '-'}), collected after the rules "
             "scored on them were written", "", "| metric | dev | test (all) | test_new |", "|---|---|---|---|"]
    for k in ROWS:
        lines.append(f"| {k} | {res.get('dev', {}).get(k, '-')} | {res.get('test', {}).get(k, 'not run')} | "
                     f"{res.get('test_new', {}).get(k, 'not run')} |")
    if res.get("test_by_part"):
        lines += ["", "Test split by part of the corpus (in freezing order): frozen at | date | cases | category | "
                  "confidently wrong | failure mode", "|---|---|---|---|---|---|"]
        for p in res["test_by_part"]:
            lines.append(f"| {p['frozen_at']} | {p['date']} | {p['cases']} | {p['category_accuracy']} | "
                         f"{p['confidently_wrong_rate']} | {p['failure_mode_accuracy']} |")
    for s in ("dev", "test"):
        if s in res and res[s].get("reliability"):
            lines += ["", f"Reliability ({s}): confidence bin | cases | mean confidence | accuracy", "|---|---|---|---|"]
            for b in res[s]["reliability"]:
                lines.append(f"| {b['bin']} | {b['cases']} | {b.get('mean_confidence', '-')} | {b.get('accuracy', '-')} |")
    return "\n".join(lines) + "\n"


def _batch(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """A frozen batch of ``split.json``: commit, date and the cases' ids on each side by :func:`split_of`."""
    split = {c["id"]: split_of(c["source_url"]) for c in cases}
    return {"commit": _commit(), "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "test": sorted(k for k, v in split.items() if v == "test"),
            "dev": sorted(k for k, v in split.items() if v == "dev")}


def freeze() -> None:
    doc = {"rule": f"sha256(normalised source_url)[:8] / 2**32 < {TEST_SHARE} -> test", **_batch(load_labels(CORPUS))}
    SPLIT_FILE.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"froze {len(doc['test'])} test and {len(doc['dev'])} dev cases at {doc['commit'][:12]}")


def freeze_additions() -> None:
    """Record the cases not yet frozen as a new batch of ``split.json`` (by the same rule)."""
    doc = json.loads(SPLIT_FILE.read_text())
    frozen = frozen_split()
    new = [c for c in load_labels(CORPUS) if c["id"] not in frozen]
    if not new:
        print("nothing to freeze")
        return
    batch = _batch(new)
    doc.setdefault("additions", []).append(batch)
    SPLIT_FILE.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"froze {len(batch['test'])} test and {len(batch['dev'])} dev new cases at {batch['commit'][:12]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--test", action="store_true", help="also score the frozen test split (counted as a look)")
    ap.add_argument("--why", default="", help="why the test split is looked at (recorded)")
    ap.add_argument("--freeze", action="store_true", help="write eval/corpus/split.json from the current labels")
    ap.add_argument("--freeze-additions", action="store_true",
                    help="append the cases not yet in split.json to it as a new frozen batch (same rule)")
    ap.add_argument("--out", default=str(RESULTS / "corpus.json"))
    a = ap.parse_args()
    if a.freeze_additions:
        freeze_additions()
        return
    if a.freeze:
        if SPLIT_FILE.exists():
            ap.error(f"{SPLIT_FILE} exists: the split is frozen")
        freeze()
        return
    res = evaluate(test=a.test, why=a.why)
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
    print(markdown(res))


if __name__ == "__main__":
    main()
