"""Live governance against the lab's truth and against the post-hoc analysis of the same runs (issue 22).

Input: a suite folder made by ``diag lab suite --watch`` (each run folder has ``live.json``, ``truth.json``).
For each run: the delays from the fault's onset to the agents' detection and to the service's first and
final diagnosis, and whether the live diagnosis agrees with ``diag diagnose --no-kb --no-llm`` of the run
folder afterwards (failure mode, category and first failing rank). Clean runs (no fault) count a false
alarm when the live job reported a failure or a hang.

    python eval/live_eval.py SUITE_DIR [--out eval/results/live_eval.json] [--load-log FILE]

``--live-data DIR`` (the suite's ``diag serve`` data folder): also the service's *last* diagnosis of each job from
its store (``agree_last``), which can come after ``live.json`` was written when the service is behind, and the
time and mode of the job's ``diagnosed`` event (the service's first diagnosis after the first failure or hang
detection: ``diagnosed_delay_s`` from the onset, the "posted diagnosis" of a fail-stop or fail-hang).
``--load-log``: lines ``<unix seconds> <load 1 min> <5 min> <15 min> ...`` (``/proc/loadavg`` with a time stamp,
sampled while the suite ran): the 1-minute load over the suite's span is summarised in the result (``machine``).
"""

from __future__ import annotations

import argparse
import json
import os
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


def last_diagnoses(data: Path) -> dict[str, dict[str, Any]]:
    """The last finished diagnosis of every live job in a ``diag serve`` data folder (its store, read only):
    what the service eventually posted, also after ``live.json`` was written (the lab waits 30 s for it)."""
    import sqlite3

    con = sqlite3.connect(f"file:{data / 'diag.sqlite'}?mode=ro", uri=True)
    try:
        rows = con.execute("select job_id, finished_at, result from jobs where status = 'done' and result is not null "
                           "order by finished_at").fetchall()
    finally:
        con.close()
    out: dict[str, dict[str, Any]] = {}
    for job, fin, res in rows:
        d = json.loads(res)
        out[str(job)] = {"finished_at": fin, "diagnosis": [d.get("failure_mode"), d.get("category"),
                                                           d.get("first_failing_rank")]}
    return out


def evaluate(suite: Path, live_data: Path | None = None) -> dict[str, Any]:
    last = last_diagnoses(live_data) if live_data is not None else {}
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
        if live_data is not None:
            got = last.get(str(live.get("job_id")))
            row["live_last"] = got["diagnosis"] if got else None
            row["live_last_delay_s"] = (round(got["finished_at"] - truth["onset_time"], 3)
                                        if got and truth.get("onset_time") is not None else None)
            row["agree_last"] = got is not None and got["diagnosis"] == row["post_hoc"]
            # the service's `diagnosed` event: its first diagnosis after the job's first failure or hang detection
            ev_path = live_data / "live" / str(live.get("job_id")) / "events.jsonl"
            dg = next((e for e in (json.loads(x) for x in (ev_path.read_text().splitlines() if ev_path.is_file() else [])
                                   if x.strip()) if e.get("event") == "diagnosed"), None)
            row["diagnosed_mode"] = dg.get("mode") if dg else None
            row["diagnosed_delay_s"] = (round(float(dg["time"]) - truth["onset_time"], 3)
                                        if dg and truth.get("onset_time") is not None else None)
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
            **({"agree_last_with_post_hoc": round(sum(r["agree_last"] for r in rs) / len(rs), 3),
                "diagnosed_own_mode": sum(r["diagnosed_mode"] == mode for r in rs),
                "diagnosed_delay_s_median": _q(sorted(r["diagnosed_delay_s"] for r in rs
                                                      if r["diagnosed_delay_s"] is not None), 0.5),
                "diagnosed_delay_s_p90": _q(sorted(r["diagnosed_delay_s"] for r in rs
                                                   if r["diagnosed_delay_s"] is not None), 0.9)}
               if live_data is not None else {}),
        }
    clean = [r for r in rows if r["clean"]]
    return {
        "suite": str(suite),
        "runs": len(rows),
        "by_mode": by_mode,
        "agree_with_post_hoc": (round(statistics.mean(r["agree"] for r in rows if not r["clean"]), 3)
                                if any(not r["clean"] for r in rows) else None),
        **({"agree_last_with_post_hoc": round(statistics.mean(r["agree_last"] for r in rows if not r["clean"]), 3)}
           if live_data is not None and any(not r["clean"] for r in rows) else {}),
        "clean_runs": len(clean),
        "clean_false_alarms": sum(r["false_alarm"] for r in clean),
        "rows": rows,
    }


def load_summary(path: Path, suite: Path) -> dict[str, Any]:
    """The 1-minute load average while ``suite`` ran (its runs' ``run.json`` span), from a ``--load-log`` file."""
    spans = [json.loads((p / "run.json").read_text()) for p in suite.iterdir() if (p / "run.json").is_file()]
    t0, t1 = min(s["submitted"] for s in spans), max(s["ended"] for s in spans)
    loads = [float(x.split()[1]) for x in path.read_text().splitlines()
             if len(x.split()) > 1 and t0 <= float(x.split()[0]) <= t1]
    return {"cpus": os.cpu_count(), "samples": len(loads), "load1_min": min(loads, default=None),
            "load1_median": statistics.median(loads) if loads else None, "load1_max": max(loads, default=None),
            "suite_start": t0, "suite_end": t1}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "eval" / "results" / "live_eval.json")
    ap.add_argument("--load-log", type=Path, default=None)
    ap.add_argument("--live-data", type=Path, default=None,
                    help="the suite's diag serve data folder: also compare the service's last diagnosis of each job")
    a = ap.parse_args()
    res = evaluate(a.suite, a.live_data)
    if a.load_log is not None:
        res = {"machine": load_summary(a.load_log, a.suite), **res}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps({k: v for k, v in res.items() if k != "rows"}, indent=2))
    for r in res["rows"]:
        if (not r["agree"] and not r["clean"]) or r["false_alarm"]:
            print("disagree" if not r["agree"] else "false alarm", r["run"], "live", r["live"], "post-hoc", r["post_hoc"])


if __name__ == "__main__":
    main()
