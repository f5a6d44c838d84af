"""Live ETPR against the post-hoc ``diag etpr`` of the same lab runs (issue 22: "live ETPR of a lab suite equals
the post-hoc ``diag etpr`` of the same runs within 1 %").

Input: a suite folder made by ``diag lab suite --watch`` (each run folder has ``live.json`` naming its live job)
and the data folder of the suite's ``diag serve`` (``[lab] live service data in DIR``; the live jobs are
``DIR/live/<job_id>/``). For each run, two ledgers of the same run:

* **live**: the ``live`` event source over the service's job folder (the agents' lifecycle events merged over
  the nodes, the service's ``slow_detected`` / ``diagnosed``); with ``--serve``, also the service's own
  ``GET /v1/live/jobs/{id}/etpr`` on that data folder, which must give the same numbers;
* **post-hoc**: ``diag etpr <run folder>`` (the ``lab`` source: the lab runner's ``events.jsonl``, the merged
  ``timing.jsonl``, ``truth.json`` attribution).

Reported per run and summed over the suite: allocated GPU-seconds ``A``, the four terms (productive ``P``,
pre-execution, unproductive, reduced quality), ETPR = P / A, and the relative difference live vs post-hoc
(``(live - post) / post``); per run also the start and end of each ledger and the events only one side has,
which are where the gaps come from.

    python eval/live_etpr.py SUITE_DIR --live-data DATA_DIR [--serve] [--out eval/results/live_etpr.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from diag_service.etpr import build_report, compute_ledger, load_events  # noqa: E402
from diag_service.etpr.schema import EtprReport  # noqa: E402

TERMS = ("productive", "pre_execution", "unproductive", "reduced_quality")
#: The issue's target: live totals within 1 % of the post-hoc ones.
TARGET_REL = 0.01


def _report(path: Path, source: str, job: str) -> EtprReport:
    events, issues = load_events(path, source=source, job_id=job)
    return build_report(compute_ledger(events), source=str(path), by="category", issues=issues)


def _summary(rep: EtprReport | dict[str, Any]) -> dict[str, Any]:
    """A (GPU-s), the terms (GPU-s), ETPR, the ledger's span and its event kinds, from one job's report."""
    d = rep.model_dump(mode="json") if isinstance(rep, EtprReport) else rep
    c = d["cluster"]
    acct = d["job_accounts"][0] if d["job_accounts"] else {}
    return {
        "allocated_gpu_s": round(c["allocated_gpu_s"], 3),
        **{t: round(c["terms_gpu_s"].get(t, 0.0), 3) for t in TERMS},
        "buckets_gpu_s": {k: round(v, 3) for k, v in c["buckets_gpu_s"].items() if v},
        "etpr": None if c["etpr"] is None else round(c["etpr"], 5),
        "first_time": acct.get("first_time"),
        "last_time": acct.get("last_time"),
        "gpus": acct.get("gpus"),
        "issues": sorted(f"{i['code']}x{i['count']}" for i in d["issues"]),
    }


def _rel(live: float | None, post: float | None) -> float | None:
    if live is None or post is None:
        return None
    if post == 0:
        return 0.0 if live == 0 else None
    return round((live - post) / post, 5)


def _kinds(path: Path) -> Counter[str]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return Counter()
    return Counter(json.loads(x).get("event") for x in lines if x.strip())


def _service_reports(data: Path, jobs: list[str]) -> dict[str, dict[str, Any]]:
    """``GET /v1/live/jobs/{id}/etpr`` of every job from a ``diag serve`` started on ``data`` (the lab's)."""
    import httpx

    from diag_service.lab.live import LiveService

    out: dict[str, dict[str, Any]] = {}
    with LiveService(data) as svc:
        for job in jobs:
            r = httpx.get(f"{svc.url}/v1/live/jobs/{job}/etpr", timeout=60.0)
            if r.status_code == 200:
                out[job] = r.json()
    return out


def evaluate(suite: Path, data: Path, serve: bool = False) -> dict[str, Any]:
    """Both ledgers of every watched run of ``suite``; see the module docstring. Raises ``FileNotFoundError``
    when ``data/live`` is missing."""
    live_root = data / "live"
    if not live_root.is_dir():
        raise FileNotFoundError(f"{live_root}: no live jobs (give the suite's service data folder)")
    runs: list[tuple[Path, str, dict[str, Any]]] = []
    for run in sorted(p for p in suite.iterdir() if (p / "live.json").is_file()):
        live = json.loads((run / "live.json").read_text())
        truth = json.loads((run / "truth.json").read_text()) if (run / "truth.json").is_file() else {}
        runs.append((run, str(live["job_id"]), truth))
    served = _service_reports(data, [j for _, j, _ in runs]) if serve else {}
    rows: list[dict[str, Any]] = []
    for run, job, truth in runs:
        folder = live_root / job
        if not folder.is_dir():
            rows.append({"run": run.name, "job_id": job, "error": "no live job folder"})
            continue
        post = _summary(_report(run, "lab", run.name))
        live = _summary(_report(folder, "live", job))
        row: dict[str, Any] = {
            "run": run.name,
            "job_id": job,
            "mode": truth.get("failure_mode"),
            "clean": bool(truth.get("control")) or (truth.get("fault") or {}).get("kind") == "none",
            "live": live,
            "post_hoc": post,
            "rel_diff": {k: _rel(live[k], post[k]) for k in ("allocated_gpu_s", *TERMS, "etpr")},
            "start_diff_s": (None if live["first_time"] is None or post["first_time"] is None
                             else round(live["first_time"] - post["first_time"], 3)),
            "end_diff_s": (None if live["last_time"] is None or post["last_time"] is None
                           else round(live["last_time"] - post["last_time"], 3)),
            "events_live": dict(_kinds(folder / "events.jsonl")),
            "events_post_hoc": dict(_kinds(run / "events.jsonl")),
        }
        if serve:
            got = served.get(job)
            row["service_matches_folder"] = got is not None and _summary(got)["allocated_gpu_s"] == live[
                "allocated_gpu_s"] and _summary(got)["etpr"] == live["etpr"]
        rows.append(row)
    ok = [r for r in rows if "error" not in r]

    def total(side: str, key: str, rs: list[dict[str, Any]]) -> float:
        return round(sum(r[side][key] for r in rs), 3)

    def totals(rs: list[dict[str, Any]]) -> dict[str, Any]:
        t: dict[str, Any] = {"runs": len(rs)}
        for side in ("live", "post_hoc"):
            t[side] = {k: total(side, k, rs) for k in ("allocated_gpu_s", *TERMS)}
            a = t[side]["allocated_gpu_s"]
            t[side]["etpr"] = round(t[side]["productive"] / a, 5) if a else None
        t["rel_diff"] = {k: _rel(t["live"][k], t["post_hoc"][k]) for k in ("allocated_gpu_s", *TERMS, "etpr")}
        t["within_1pct"] = {k: v is not None and abs(v) <= TARGET_REL for k, v in t["rel_diff"].items()
                            if k in ("allocated_gpu_s", "productive", "etpr")}
        return t

    by_mode: dict[str, Any] = {}
    for key in sorted({("clean" if r["clean"] else str(r["mode"])) for r in ok}):
        by_mode[key] = totals([r for r in ok if ("clean" if r["clean"] else str(r["mode"])) == key])
    rel_a = sorted(abs(r["rel_diff"]["allocated_gpu_s"] or 0.0) for r in ok)
    return {
        "suite": str(suite),
        "live_data": str(data),
        "target_rel": TARGET_REL,
        "suite_totals": totals(ok),
        "by_mode": by_mode,
        "runs_allocated_within_1pct": sum(x <= TARGET_REL for x in rel_a),
        "runs_etpr_within_1pct": sum(r["rel_diff"]["etpr"] is not None and abs(r["rel_diff"]["etpr"]) <= TARGET_REL
                                     for r in ok),
        "median_start_diff_s": _median([r["start_diff_s"] for r in ok]),
        "median_end_diff_s": _median([r["end_diff_s"] for r in ok]),
        **({"service_matches_folder": sum(bool(r.get("service_matches_folder")) for r in ok)} if serve else {}),
        "errors": [r for r in rows if "error" in r],
        "rows": ok,
    }


def _median(xs: list[float | None]) -> float | None:
    v = sorted(x for x in xs if x is not None)
    return v[len(v) // 2] if v else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", type=Path)
    ap.add_argument("--live-data", type=Path, required=True, help="the suite's diag serve data folder")
    ap.add_argument("--serve", action="store_true", help="also read GET /v1/live/jobs/{id}/etpr from a diag serve "
                                                         "started on --live-data")
    ap.add_argument("--out", type=Path, default=ROOT / "eval" / "results" / "live_etpr.json")
    a = ap.parse_args()
    res = evaluate(a.suite, a.live_data, serve=a.serve)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps({k: v for k, v in res.items() if k not in ("rows", "by_mode")}, indent=2))
    for k, v in res["by_mode"].items():
        print(k, v["runs"], "rel diff", v["rel_diff"])
    for r in res["rows"]:
        print(f"{r['run']:40s} A {r['rel_diff']['allocated_gpu_s']!s:>9} P {r['rel_diff']['productive']!s:>9} "
              f"ETPR {r['live']['etpr']!s:>8} vs {r['post_hoc']['etpr']!s:>8}  start {r['start_diff_s']} "
              f"end {r['end_diff_s']}")


if __name__ == "__main__":
    main()
