"""Scorecard section ``labelling``: does ``diag label`` agree with the labels, at the accuracy of ``diag diagnose``?

Runs batch labelling (:func:`diag_service.label.label_archive`, what ``diag label`` runs; local
engine; no model and no knowledge base by default, to stay fast) over two sources, and the pipeline
(:func:`diag_service.pipeline.diagnose`, what ``diag diagnose`` runs) over the same inputs:

- ``../shared/data/incidents_dev/``: its 16 logs, truth from ``labels.jsonl`` (``category``,
  ``failure_mode``), exactly as ``score_incidents_dev`` in ``eval/scorecard.py`` reads them;
- the lab run folders given (``truth.json`` of every run found below them): each run folder is one
  job; ``truth.json``, ``run.json``, ``events.jsonl`` (and the suite index) are excluded from what
  both analyzers read. Accuracy is scored on the runs whose fault fired and whose mode is
  ``fail_stop`` or ``fail_hang`` (fail-slow runs are the straggler detector's, from the metrics feed:
  they are labelled and compared with ``diagnose`` but not scored against truth).

Jobs are given to ``label_archive`` as a JSONL manifest (so lab runs from several folders keep
distinct job ids) and the output goes to a temporary folder. Reported per source: label and
diagnose category accuracy, label and diagnose failure-mode accuracy, and the number of jobs on
which the two disagree on any of failure mode, category, responsible, confidence, first failing
rank, faulty nodes or recovery level (should be 0: both run the same pipeline), plus the labelling
run's wall time in seconds. Top-level numbers are the scorecard's rows; ``per_job`` lists the
disagreements and misses.

    .venv/bin/python eval/label_eval.py [--lab-dir eval/results/lab_runs ...] [--kb off|auto] [--llm]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from diag_service.label import LabelOptions, LabelRequest, label_archive, read_labels  # noqa: E402
from diag_service.pipeline import DiagnoseRequest, diagnose  # noqa: E402

DEV = REPO.parent / "shared" / "data" / "incidents_dev"
#: What the analyzers must not read in a lab run folder (ground truth and the runner's own records).
NOT_FOR_ANALYZERS = ["truth.json", "run.json", "events.jsonl", "suite.jsonl", "index.json"]
#: Row fields that labelling and diagnose must agree on.
COMPARED = ("failure_mode", "category", "responsible", "confidence", "first_failing_rank", "faulty_nodes",
            "recovery_level")


def _dev_cases(dev: Path) -> list[dict[str, Any]]:
    """incidents_dev cases: job id, log path, truth (category, failure_mode)."""
    labels = dev / "labels.jsonl"
    if not labels.exists():
        return []
    cases = []
    for line in labels.read_text().splitlines():
        if line.strip():
            c = json.loads(line)
            cases.append({"job_id": c["id"], "path": str(dev / "logs" / f"{c['id']}.log"),
                          "category": c["category"], "failure_mode": c["failure_mode"], "scored": True})
    return cases


def _lab_cases(dirs: list[Path]) -> list[dict[str, Any]]:
    """Lab runs below ``dirs`` (every folder holding a readable truth.json), with their truth."""
    cases = []
    for i, d in enumerate(dirs):
        for t in sorted(Path(d).glob("**/truth.json")):
            try:
                truth = json.loads(t.read_text())
            except ValueError:
                continue
            scored = truth.get("fault_fired", True) and truth.get("failure_mode") in ("fail_stop", "fail_hang")
            jid = t.parent.name if len(dirs) == 1 else f"{i}-{t.parent.name}"
            cases.append({"job_id": jid, "path": str(t.parent.resolve()), "category": truth.get("category"),
                          "failure_mode": truth.get("failure_mode"), "scored": bool(scored)})
    return cases


def _row_of_diagnosis(d: Any) -> dict[str, Any]:
    return {"failure_mode": d.failure_mode.value, "category": d.category.value, "responsible": d.responsible.value,
            "confidence": d.confidence, "first_failing_rank": d.first_failing_rank,
            "faulty_nodes": list(d.faulty_nodes), "recovery_level": d.recovery.level.value if d.recovery else None}


def score_source(name: str, cases: list[dict[str, Any]], exclude: list[str], work: Path, kb: str = "off",
                 llm: bool = False, workers: int | None = None) -> dict[str, Any]:
    """Label ``cases`` with ``label_archive`` and diagnose each with the pipeline; accuracies and disagreements.

    Keys are prefixed with ``name`` (``dev_label_category_accuracy`` ...); ``{name}_label_s`` is the
    labelling run's wall time in seconds (engine start-up included).
    """
    manifest = work / f"{name}.jsonl"
    manifest.write_text("".join(json.dumps({"job_id": c["job_id"], "path": c["path"]}) + "\n" for c in cases))
    out = work / f"{name}-labels"
    t0 = time.perf_counter()
    label_archive(LabelRequest(archive=str(manifest), out=str(out), engine="local", workers=workers, llm=llm,
                               options=LabelOptions(kb=kb, exclude=exclude)))  # type: ignore[arg-type]
    label_s = time.perf_counter() - t0
    rows = {r["job_id"]: r for r in read_labels(out).to_dicts()}
    scored = [c for c in cases if c["scored"]]
    lab_cat = lab_mode = dia_cat = dia_mode = stop_n = stop_lab = stop_dia = 0
    disagree, errors, per_job = 0, 0, []
    for c in cases:
        r = rows.get(c["job_id"])
        d = _row_of_diagnosis(diagnose(DiagnoseRequest(path=c["path"], job_id=c["job_id"], exclude=exclude,
                                                       kb=kb != "off")))
        if r is None or r["status"] != "ok":
            errors += 1
            disagree += 1
            per_job.append({"job_id": c["job_id"], "label_error": r["error"] if r else "no row"})
            continue
        diff = [f for f in COMPARED if r[f] != d[f]]
        disagree += bool(diff)
        if c["scored"]:
            lab_cat += r["category"] == c["category"]
            lab_mode += r["failure_mode"] == c["failure_mode"]
            dia_cat += d["category"] == c["category"]
            dia_mode += d["failure_mode"] == c["failure_mode"]
            if c["failure_mode"] == "fail_stop":
                stop_n += 1
                stop_lab += r["category"] == c["category"]
                stop_dia += d["category"] == c["category"]
        miss = c["scored"] and (r["category"] != c["category"] or r["failure_mode"] != c["failure_mode"])
        if diff or miss:
            per_job.append({"job_id": c["job_id"], "truth": [c["failure_mode"], c["category"]],
                            "label": [r["failure_mode"], r["category"]], "diagnose": [d["failure_mode"], d["category"]],
                            "differs_in": diff})
    n = max(1, len(scored))
    stop: dict[str, Any] = {}
    if 0 < stop_n < len(scored):  # the fail-stop subset, comparable with the scorecard's lab fail-stop row
        stop = {f"{name}_fail_stop_scored": stop_n,
                f"{name}_fail_stop_label_category_accuracy": round(stop_lab / stop_n, 4),
                f"{name}_fail_stop_diagnose_category_accuracy": round(stop_dia / stop_n, 4)}
    return {
        f"{name}_jobs": len(cases),
        f"{name}_scored": len(scored),
        f"{name}_label_category_accuracy": round(lab_cat / n, 4),
        f"{name}_diagnose_category_accuracy": round(dia_cat / n, 4),
        f"{name}_label_failure_mode_accuracy": round(lab_mode / n, 4),
        f"{name}_diagnose_failure_mode_accuracy": round(dia_mode / n, 4),
        **stop,
        f"{name}_label_vs_diagnose_disagreements": disagree,
        f"{name}_label_error_rows": errors,
        f"{name}_label_s": round(label_s, 1),
        f"{name}_per_job": per_job,
    }


def evaluate(lab_dirs: list[Path] | None = None, dev_dir: Path = DEV, kb: str = "off", llm: bool = False,
             workers: int | None = None, **_: Any) -> dict[str, Any]:
    """The ``labelling`` section of the scorecard (see the module docstring). Sources that are absent are skipped.

    ``kb``: ``off`` (default) labels and diagnoses without the knowledge base, ``auto``/``on`` with it
    (both sides). ``llm``: add cluster summaries (slow; they do not change categories).
    """
    t0 = time.perf_counter()
    res: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="label_eval_") as tmp:
        work = Path(tmp)
        dev = _dev_cases(Path(dev_dir))
        if dev:
            res |= score_source("dev", dev, [], work, kb=kb, llm=llm, workers=workers)
        lab = _lab_cases([Path(d) for d in lab_dirs or [] if Path(d).exists()])
        if lab:
            res |= score_source("lab", lab, NOT_FOR_ANALYZERS, work, kb=kb, llm=llm, workers=workers)
    if not res:
        raise FileNotFoundError(f"nothing to label: {dev_dir} has no labels.jsonl and no lab run was given")
    res["disagreements"] = sum(v for k, v in res.items() if k.endswith("_label_vs_diagnose_disagreements"))
    res["seconds"] = round(time.perf_counter() - t0, 1)
    res["settings"] = {"engine": "local", "kb": kb, "llm": llm, "workers": workers,
                       "lab_scored": "fault fired, fail_stop or fail_hang (fail_slow runs compared, not scored)"}
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lab-dir", nargs="*", default=[str(REPO / "eval" / "results" / "lab_runs")])
    ap.add_argument("--kb", default="off", choices=["off", "auto", "on"])
    ap.add_argument("--llm", action="store_true")
    a = ap.parse_args()
    print(json.dumps(evaluate([Path(d) for d in a.lab_dir], kb=a.kb, llm=a.llm), indent=2))


if __name__ == "__main__":
    main()
