"""Scorecard functions for fail-slow detection (issue 7).

* :func:`score_lab_runs` scores lab run directories (``truth.json`` + ``timing.jsonl``, written by
  ``diag lab run|suite``): straggler precision / recall, detection delay in steps, false alarms on the
  clean controls. The scorecard calls it with the run directories it has.
* :func:`bytedance_comparison` compares our what-if slowdowns and our blamed ranks / stages with the
  published results of ``bytedance_straggler_whatif`` (``result-*.json``).
* :func:`alibaba_comparison` lists what we find in the PAI mini-batch traces next to their README's
  observations.
* :func:`score_synthetic_suite` runs the lab's slow scenarios on synthetic feeds (no shared-host noise)
  and scores them the same way, as a reference for the lab numbers.

Run ``.venv/bin/python eval/slow_eval.py --lab-root eval/results/lab_runs_slow_v4 --out /tmp/slow_eval.json`` to print (and
save) all three.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from diag_service.slow import SlowConfig, SlowReport, analyze_slow
from diag_service.slow.synth import Fault, SynthConfig, make_feed
from diag_service.slow.whatif import load_pipeline_trace, relative_error, whatif_slowdown

TRACES = Path("/work/shared/data/traces")
BYTEDANCE = TRACES / "bytedance_straggler_whatif"
ALIBABA = TRACES / "alibaba_pai2020_minibatch"

#: Straggler kind expected for each lab fault kind.
FAULT_KIND = {"slow_compute": "compute", "slow_comm": "communication", "slow_data": "data"}


def _truth_stragglers(truth: dict[str, Any]) -> set[int]:
    """Ranks that are stragglers by construction: a per-rank fault's affected ranks; none for job-wide faults."""
    fault = truth.get("fault") or {}
    if truth.get("control") or fault.get("scope") == "all" or truth.get("faulty_rank") is None:
        return set()
    return {int(r) for r in truth.get("affected_ranks") or [truth["faulty_rank"]]}


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def score_lab_runs(run_dirs: Iterable[str | Path], config: SlowConfig | None = None) -> dict[str, Any]:
    """Score fail-slow detection on lab runs.

    ``run_dirs``: directories holding ``truth.json`` and ``timing.jsonl`` (other failure modes and runs
    whose fault did not fire are skipped and counted). Per run, the predicted stragglers are the report's
    ``stragglers`` ranks; the true ones are the affected ranks of per-rank faults (none for job-wide
    faults and clean controls). Returns the dict of :func:`score_reports` plus ``skipped``. Raises nothing
    on a bad run directory: it is listed under ``skipped``.
    """
    pairs: list[tuple[str, dict[str, Any], SlowReport]] = []
    dirs: list[Path] = []
    skipped: list[dict[str, str]] = []
    for d in map(Path, run_dirs):
        try:
            truth = json.loads((d / "truth.json").read_text())
        except (OSError, ValueError) as exc:
            skipped.append({"run": str(d), "reason": f"truth.json: {exc}"})
            continue
        if truth.get("failure_mode") != "fail_slow":
            skipped.append({"run": str(d), "reason": f"failure mode {truth.get('failure_mode')}"})
            continue
        if not truth.get("control") and not truth.get("fault_fired", True):
            skipped.append({"run": str(d), "reason": "fault did not fire"})
            continue
        if not (d / "timing.jsonl").is_file():
            skipped.append({"run": str(d), "reason": "no timing.jsonl"})
            continue
        pairs.append((d.name, truth, analyze_slow(d / "timing.jsonl", config)))
        dirs.append(d)
    res = score_reports(pairs)
    for row, (_, _, rep), d in zip(res["runs"], pairs, dirs, strict=True):
        row["host_other_cores"] = host_load_during_episodes(d, rep)
    return {**res, "skipped": skipped}


def host_load_during_episodes(run_dir: Path, rep: SlowReport) -> dict[str, float | int | None] | None:
    """Median CPU cores used by *other* work on the host during the report's job episodes and outside them.

    Reads the lab's ``host_cpu.jsonl`` (``diag_service.lab.runner.HostCpuSampler``; fail-slow runs since
    it exists, None otherwise), limited to the training steps (first ``start`` to last ``end`` of
    ``timing.jsonl``). Evidence for the scorecard only: the detector never reads it. A job episode on a
    clean control with more "other" cores inside than outside it is a slowdown the host caused, not one
    the lab injected.
    """
    path = run_dir / "host_cpu.jsonl"
    if not path.is_file():
        return None
    recs = [json.loads(x) for x in (run_dir / "timing.jsonl").read_text().splitlines() if x.strip()]
    lo, hi = min(r["start"] for r in recs), max(r["end"] for r in recs)
    rows = [r for r in (json.loads(x) for x in path.read_text().splitlines() if x.strip()) if lo <= r["time"] <= hi]
    spans = [(e.start_time, e.end_time if e.end_time is not None else hi)
             for e in rep.job_slowdown if e.start_time is not None]

    def med(v: list[float]) -> float | None:
        return round(statistics.median(v), 3) if v else None

    inside = [r["other_cores"] for r in rows if any(a <= r["time"] <= b for a, b in spans)]
    outside = [r["other_cores"] for r in rows if not any(a <= r["time"] <= b for a, b in spans)]
    return {"in_episodes": med(inside), "outside": med(outside), "samples": len(rows)}


def score_reports(pairs: Iterable[tuple[str, dict[str, Any], SlowReport]]) -> dict[str, Any]:
    """Score ``(name, truth, report)`` triples; ``truth`` has the lab's ``truth.json`` keys.

    Per run:

    * a predicted straggler is a true positive only if it is a truly affected rank *and* was detected at
      or after the onset; a rank flagged before the fault existed is a false positive (``early``), even
      when it happens to be the rank that later becomes faulty (1 in 4 by chance with 4 ranks);
    * ``delay_steps``: for per-rank faults, the first true-positive straggler's detection step minus the
      onset (localisation, not just "something is slow"); for job-wide faults, the first job episode
      detected at or after the onset; ``job_delay_steps``: the first job episode at or after the onset;
    * clean controls: ``straggler_alarm`` = any straggler or node/stage finding (a straggler false
      alarm); ``job_episode`` = any job-level slowdown episode. A job episode on a control is reported
      apart: it says the job really ran slower than its own baseline (on this shared host, other work
      took CPU from every rank), which is not a straggler and not something the lab injected.

    Aggregates (overall, ``localisable`` = without the lab's slow-link scenario, and per scenario):
    micro-averaged straggler ``precision``/``recall``, delay median/max, ``within_20_steps`` (fraction of
    faulty runs detected within 20 steps of the onset), ``false_alarm_rate`` = controls with a straggler
    false alarm, ``job_episode_rate_controls`` = controls with a job episode, ``any_alarm_rate_controls``
    = controls with any finding (the strictest reading of "no alarm on clean control runs"),
    ``kind_accuracy`` on the true positives; and one row per run (with the lab's ``measured`` ratios).
    """
    rows: list[dict[str, Any]] = []
    for name, truth, rep in pairs:
        true = _truth_stragglers(truth)
        control = bool(truth.get("control"))
        onset = None if control else truth.get("onset_step")
        floor = onset if onset is not None else -1
        hits = [s for s in rep.stragglers if s.rank in true and s.detected_at_step >= floor]
        tp_ranks = {s.rank for s in hits}
        pred = {s.rank for s in rep.stragglers}
        fp_stragglers = [s for s in rep.stragglers if s.rank not in tp_ranks]
        ep_after = [e.detected_at_step for e in rep.job_slowdown if e.detected_at_step >= floor]
        job_first = min(ep_after) if ep_after else None
        if control:
            first = None
        elif true:
            first = min(s.detected_at_step for s in hits) if hits else None
        else:
            first = job_first
        want_kind = FAULT_KIND.get((truth.get("fault") or {}).get("kind", ""))
        rows.append({
            "run": name, "scenario": truth.get("scenario"), "control": control,
            "ranks": truth.get("ranks"), "nodes": truth.get("nodes"), "onset_step": onset,
            "true_stragglers": sorted(true), "predicted_stragglers": sorted(pred),
            "tp": len(tp_ranks), "fp": len(fp_stragglers), "fn": len(true - tp_ranks),
            "early": sorted({s.rank for s in fp_stragglers if s.rank in true}),
            "stragglers": [(s.rank, str(s.kind), s.first_step, s.detected_at_step, s.slowdown_factor)
                           for s in rep.stragglers],
            "kinds": [str(s.kind) for s in hits], "expected_kind": want_kind,
            "traced": "comm_wait" in rep.input.phases,
            "episodes": [(e.start_step, e.end_step, e.detected_at_step, e.slowdown_factor) for e in rep.job_slowdown],
            "groups": [(g.group, g.name, str(g.kind)) for g in rep.groups],
            "first_alarm_step": first,
            "delay_steps": (first - onset) if (first is not None and onset is not None) else None,
            "job_delay_steps": (job_first - onset) if (job_first is not None and onset is not None) else None,
            "straggler_alarm": bool(rep.stragglers or rep.groups),
            "job_episode": bool(rep.job_slowdown),
            "any_finding": rep.failure_mode is not None,
            "measured": truth.get("measured"),
        })

    def agg(rs: list[dict[str, Any]]) -> dict[str, Any]:
        tp, fp, fn = (sum(r[k] for r in rs) for k in ("tp", "fp", "fn"))
        faulty = [r for r in rs if not r["control"]]
        delays = [r["delay_steps"] for r in faulty if r["delay_steps"] is not None]
        clean = [r for r in rs if r["control"]]
        matched = [(k, r["expected_kind"]) for r in rs for k in r["kinds"] if r["expected_kind"]]
        return {
            "runs": len(rs), "faulty_runs": len(faulty), "clean_runs": len(clean),
            "per_rank_fault_runs": sum(1 for r in faulty if r["true_stragglers"]),
            "tp": tp, "fp": fp, "fn": fn, "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn),
            "detected_runs": len(delays), "detection_delay_steps_median": statistics.median(delays) if delays else None,
            "detection_delay_steps_max": max(delays) if delays else None,
            "within_20_steps": _ratio(sum(1 for x in delays if x <= 20), len(faulty)),
            "false_alarm_runs": sum(1 for r in clean if r["straggler_alarm"]),
            "false_alarm_rate": _ratio(sum(1 for r in clean if r["straggler_alarm"]), len(clean)),
            "job_episode_rate_controls": _ratio(sum(1 for r in clean if r["job_episode"]), len(clean)),
            "any_alarm_rate_controls": _ratio(sum(1 for r in clean if r["any_finding"]), len(clean)),
            "kind_accuracy": _ratio(sum(1 for k, w in matched if k == w), len(matched)),
        }

    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_scenario.setdefault(str(r["scenario"]), []).append(r)
    localisable = [r for r in rows if r["expected_kind"] != "communication" or r["traced"]]
    return {
        "overall": agg(rows),
        "localisable": agg(localisable),
        "by_scenario": {k: agg(v) for k, v in sorted(by_scenario.items())},
        "runs": rows,
        "note": ("'localisable' leaves out slow_rank_comm runs without a collective trace (comm_wait_s): the lab delays "
                 "the faulty rank's all-reduce buckets, so every rank's comm phase grows alike and no per-rank duration "
                 "can tell the faulty rank; the trace's per-rank wait for the last peer can (docs/slow.md). "
                 "false_alarm_rate counts straggler/node/stage findings on clean controls; job-level episodes on "
                 "controls are job_episode_rate_controls (any_alarm_rate_controls counts both)."),
    }


#: The lab's fail-slow scenarios (eval/lab/scenarios/slow_*.yaml) as synthetic faults; ``k`` = faulty rank.
SYNTH_SCENARIOS: dict[str, Any] = {
    "slow_control_clean": lambda k, s: ([], "none", "sync"),
    "slow_job_compute": lambda k, s: ([Fault("job", s, 1.6)], "slow_compute", "sync"),
    "slow_rank_compute": lambda k, s: ([Fault("compute", s, 1.8, (k,))], "slow_compute", "sync"),
    "slow_rank_compute_intermittent": lambda k, s: ([Fault("compute", s, 2.5, (k,), period=8, duty=3)], "slow_compute",
                                                    "sync"),
    # a slow link as a transfer-time profiler sees it (comm_s without waiting); the lab's all-reduce delay is not
    "slow_rank_comm": lambda k, s: ([Fault("comm", s, extra_s=0.3, ranks=(k,))], "slow_comm", "transfer"),
}


def score_synthetic_suite(runs: int = 30, seed: int = 0, ranks: int = 8, jitter: float = 0.05) -> dict[str, Any]:
    """The lab's slow scenarios on synthetic feeds (no shared-host noise), scored like lab runs.

    ``runs`` runs cycle through :data:`SYNTH_SCENARIOS` with a random faulty rank, a random onset in
    [30, 80] (as the lab's ``onset_range``), 120 steps, ``jitter`` log-normal noise per phase, 8 warm-up
    steps, evaluation every 50 and checkpoint every 40 steps. Returns :func:`score_reports`' dict.
    """
    rng = random.Random(seed)
    names = sorted(SYNTH_SCENARIOS)
    pairs = []
    for i in range(runs):
        name = names[i % len(names)]
        k, onset = rng.randrange(ranks), rng.randint(30, 80)
        faults, kind, comm_model = SYNTH_SCENARIOS[name](k, onset)
        cfg = SynthConfig(ranks=ranks, ranks_per_node=4, steps=120, jitter=jitter, warmup=8, eval_every=50, ckpt_every=40,
                          comm_model=comm_model, seed=rng.randrange(1 << 30), faults=faults)
        per_rank = name.startswith("slow_rank")
        truth = {"scenario": name, "failure_mode": "fail_slow", "control": kind == "none",
                 "fault": {"kind": kind, "scope": "rank" if per_rank else "all"},
                 "faulty_rank": k if per_rank else None, "affected_ranks": [k] if per_rank else [],
                 "onset_step": onset, "ranks": ranks}
        pairs.append((f"{i:03d}-{name}", truth, analyze_slow(make_feed(cfg))))
    res = score_reports(pairs)
    res["note"] = "synthetic feeds (diag_service.slow.synth); the comm scenario uses transfer-time comm_s"
    return res


def bytedance_comparison(trace_dir: str | Path = BYTEDANCE, tolerance: float = 0.10) -> dict[str, Any]:
    """Our slowdowns and blame vs the published what-if results, for the AR, SE and ST traces.

    For each trace: ``S`` (Eq. 1), the DP rank and stage with the largest ``S_w`` (Eq. 4) and the
    relative errors of every ``S_w``, from our 1F1B replay (:mod:`diag_service.slow.whatif`), against
    ``result-*.json``; and what ``analyze_slow`` blames on the per-rank feed (ranks, stages). ``ok`` is
    True when S and the top DP rank's and stage's ``S_w`` are within ``tolerance`` and the blamed
    rank / stage agrees with the published one. Raises ``FileNotFoundError`` if a trace is missing.
    """
    d = Path(trace_dir)
    out: dict[str, Any] = {}
    for name in ("AR", "SE", "ST"):
        pub = json.loads((d / f"result-{name}.json").read_text())
        wi = whatif_slowdown(load_pipeline_trace(d / f"trace-{name}.parquet"))
        pub_dp = {int(k): float(v) for k, v in pub["blocking_decompose_by_dp_rank"].items()}
        pub_st = {int(k): float(v) for k, v in pub["blocking_decompose_by_stage"].items()}
        err_dp = {k: round(relative_error(wi.by_dp_rank[k], v), 4) for k, v in pub_dp.items()}
        err_st = {k: round(relative_error(wi.by_stage[k], v), 4) for k, v in pub_st.items()}
        top_dp_pub, top_st_pub = max(pub_dp, key=pub_dp.get), max(pub_st, key=pub_st.get)
        top_dp, top_st = max(wi.by_dp_rank, key=wi.by_dp_rank.get), max(wi.by_stage, key=wi.by_stage.get)
        rep = analyze_slow(d / f"trace-{name}.parquet")
        blamed_ranks = sorted({s.rank for s in rep.stragglers})
        blamed_stages = sorted({int(g.name) for g in rep.groups if g.group == "stage"})
        s_err = relative_error(wi.slowdown, float(pub["blocking_slowdown"]))
        # published blame: one worker for AR (S_w of DP rank 0 ~ S), the last stage for ST, spread for SE
        spread = (max(pub_dp.values()) - 1) < 0.5 * (float(pub["blocking_slowdown"]) - 1)
        if spread:
            blame_ok = not blamed_ranks or len(blamed_ranks) > len(pub_dp) // 2
            expected_blame = "no single rank (spread over DP ranks)"
        elif pub_st[top_st_pub] - 1 > 0.5 * (float(pub["blocking_slowdown"]) - 1) and pub_dp[top_dp_pub] - 1 < 0.5 * (
                float(pub["blocking_slowdown"]) - 1):
            blame_ok = blamed_stages == [top_st_pub]
            expected_blame = f"stage {top_st_pub}"
        else:
            blame_ok = top_st_pub in blamed_stages or bool(blamed_ranks)
            expected_blame = f"DP rank {top_dp_pub} / stage {top_st_pub}"
        out[name] = {
            "published": {"S": round(float(pub["blocking_slowdown"]), 4), "top_dp_rank": top_dp_pub,
                          "S_top_dp": round(pub_dp[top_dp_pub], 4), "top_stage": top_st_pub,
                          "S_top_stage": round(pub_st[top_st_pub], 4), "expected_blame": expected_blame},
            "ours": {"S": wi.slowdown, "S_observed": wi.slowdown_observed, "top_dp_rank": top_dp,
                     "S_top_dp": wi.by_dp_rank[top_dp], "top_stage": top_st, "S_top_stage": wi.by_stage[top_st],
                     "ideal_step_s": wi.ideal_step_s, "blamed_ranks": blamed_ranks, "blamed_stages": blamed_stages,
                     "summary": rep.summary},
            "rel_error": {"S": round(s_err, 4), "by_dp_rank_max": max(err_dp.values()),
                          "by_stage_max": max(err_st.values())},
            "ok": bool(s_err <= tolerance and top_dp == top_dp_pub and top_st == top_st_pub
                       and err_dp[top_dp_pub] <= tolerance and err_st[top_st_pub] <= tolerance and blame_ok),
        }
    out["all_ok"] = all(v["ok"] for v in out.values() if isinstance(v, dict))
    return out


def alibaba_comparison(trace_dir: str | Path = ALIBABA) -> dict[str, Any]:
    """What we find in the PAI jobs 1-4 next to the observations their README quotes from upstream."""
    expected = {
        1: "straggler (worker 6) emerges in the middle of the training",
        2: "stable variation, different workers have different mini-batch times",
        3: "multiple stragglers",
        4: "multiple stragglers; workers 0, 5-8 slow (per-worker medians ~195-262 vs ~57-62)",
    }
    out: dict[str, Any] = {}
    for j in range(1, 5):
        rep = analyze_slow(Path(trace_dir) / f"job_{j}_norm.csv")
        out[f"job_{j}"] = {
            "upstream": expected[j],
            "stragglers": [{"rank": s.rank, "factor": s.slowdown_factor, "first_step": s.first_step,
                            "present_at_start": s.present_at_start, "intermittent": s.intermittent}
                           for s in sorted(rep.stragglers, key=lambda s: s.rank)],
            "episodes": [(e.start_step, e.end_step, e.slowdown_factor) for e in rep.job_slowdown],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    """Print (and optionally save) the lab score, the ByteDance and the PAI comparisons."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lab-root", action="append", default=[], help="Folder of lab runs (searched for truth.json).")
    ap.add_argument("--out", type=Path, help="Write the JSON here too.")
    a = ap.parse_args(argv)
    missing = [r for r in a.lab_root if not Path(r).is_dir()]
    if missing:
        ap.error(f"no such lab run folder(s): {', '.join(missing)} (not in git; run the lab suite first)")
    runs = sorted({p.parent for root in a.lab_root for p in Path(root).rglob("truth.json")})
    res = {"lab": score_lab_runs(runs) if runs else None, "synthetic": score_synthetic_suite(),
           "bytedance": bytedance_comparison(), "alibaba": alibaba_comparison()}
    text = json.dumps(res, indent=2, default=str)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n")
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
