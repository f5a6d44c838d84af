"""Live governance against the lab's truth and against the post-hoc analysis of the same runs (issue 22).

Input: a suite folder made by ``diag lab suite --watch`` (each run folder has ``live.json``, ``truth.json``).
For each run: the delays from the fault's onset to the agents' detection and to the service's first and
final diagnosis, and whether the live diagnosis agrees with ``diag diagnose --no-kb --no-llm`` of the run
folder afterwards (failure mode, category and first failing rank). Clean runs (no fault) count a false
alarm when the live job reported a failure or a hang.

    python eval/live_eval.py SUITE_DIR [--out eval/results/live_eval.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from diag_service.pipeline import DiagnoseRequest, diagnose  # noqa: E402


def _q(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))], 3)


def evaluate(suite: Path) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for run in sorted(p for p in suite.iterdir() if (p / "truth.json").is_file()):
        truth = json.loads((run / "truth.json").read_text())
        live_path = run / "live.json"
        live = json.loads(live_path.read_text()) if live_path.is_file() else {}
        post = diagnose(DiagnoseRequest(path=str(run), kb=False, llm=False, recovery=False))
        ld = live.get("diagnosis") or {}
        clean = bool(truth.get("control")) or (truth.get("fault") or {}).get("kind") == "none"
        row = {
            "run": run.name,
            "mode": truth.get("failure_mode"),
            "clean": clean,
            # a fail-slow run is detected by the service's slow alarm, a stop or hang by the agents' event
            "detect_delay_s": (live.get("slow_detect_delay_s") if truth.get("failure_mode") == "fail_slow"
                               else live.get("detect_delay_s")),
            "first_diagnosis_delay_s": live.get("first_diagnosis_delay_s"),
            "final_diagnosis_delay_s": live.get("final_diagnosis_delay_s"),
            "live_status": live.get("status"),
            "live": [ld.get("failure_mode"), ld.get("category"), ld.get("first_failing_rank")],
            "post_hoc": [post.failure_mode.value, post.category.value, post.first_failing_rank],
        }
        row["agree"] = bool(ld) and row["live"] == row["post_hoc"]
        row["false_alarm"] = clean and live.get("status") in ("failed", "hung")
        rows.append(row)
    by_mode: dict[str, Any] = {}
    for mode in sorted({r["mode"] for r in rows if r["mode"]}):
        rs = [r for r in rows if r["mode"] == mode and not r["clean"]]
        if not rs:
            continue
        by_mode[mode] = {
            "runs": len(rs),
            "detected": sum(r["detect_delay_s"] is not None for r in rs),
            **{f"{k}_{stat}": f(sorted(r[k] for r in rs if r[k] is not None), q)
               for k in ("detect_delay_s", "first_diagnosis_delay_s", "final_diagnosis_delay_s")
               for stat, f, q in (("median", _q, 0.5), ("p90", _q, 0.9))},
            "agree_with_post_hoc": round(sum(r["agree"] for r in rs) / len(rs), 3),
        }
    clean = [r for r in rows if r["clean"]]
    return {
        "suite": str(suite),
        "runs": len(rows),
        "by_mode": by_mode,
        "agree_with_post_hoc": (round(statistics.mean(r["agree"] for r in rows if not r["clean"]), 3)
                                if any(not r["clean"] for r in rows) else None),
        "clean_runs": len(clean),
        "clean_false_alarms": sum(r["false_alarm"] for r in clean),
        "rows": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "eval" / "results" / "live_eval.json")
    a = ap.parse_args()
    res = evaluate(a.suite)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps({k: v for k, v in res.items() if k != "rows"}, indent=2))
    for r in res["rows"]:
        if (not r["agree"] and not r["clean"]) or r["false_alarm"]:
            print("disagree" if not r["agree"] else "false alarm", r["run"], "live", r["live"], "post-hoc", r["post_hoc"])


if __name__ == "__main__":
    main()
