"""One evaluation scorecard for every analyzer the project has (``make eval``).

Sources:

- the fault-injection lab: runs a suite (``diag lab suite``) or reuses a folder of runs, then scores
  fail-stop category and first-failing-rank accuracy, hang culprit top-1/top-3 and no hang on the
  lab's healthy snapshots, and straggler precision/recall/delay (``eval/slow_eval.py``);
- ``slow_power``: fail-slow detection probability and delay by fault size, kind and duty cycle on real
  clean lab feeds, false alarms per 10,000 clean steps (``eval/slow_power.py``);
- ``eval/corpus``: the public real-failure corpus, dev and frozen test side by side (category
  accuracy, macro-F1, confidently wrong, unknown, failure mode, first rank, reliability table;
  ``eval/corpus_eval.py``; every run counts as a look at the test split);
- ``../shared/data/incidents_dev``: category accuracy and macro-F1, failure-mode accuracy, faulty
  rank accuracy where labelled, recovery-level agreement (``eval/recovery_levels_dev.yaml``);
- Loghub-2k: grouping accuracy of the template stage (``eval/loghub_eval.py``) against Drain's
  published 0.865;
- the knowledge base, the LLM summaries and batch labelling, when those modules exist (``eval/kb_eval.py``,
  ``eval/llm_eval.py``, ``eval/label_eval.py``); an analyzer that does not exist is reported as absent,
  never as zero.

Analyzers never see ground truth: ``truth.json``, ``run.json``, ``events.jsonl`` and the suite index
are excluded from what they read; only this file opens them, to score.

    .venv/bin/python eval/scorecard.py [--lab-runs 20] [--lab-dir eval/results/lab_runs] [--reuse-lab DIR ...] [--skip-lab]
    .venv/bin/python eval/scorecard.py --reuse-lab DIR ... --only llm,labelling   # re-score some sections, keep the rest
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "eval"))

DEV = REPO.parent / "shared" / "data" / "incidents_dev"
RESULTS = REPO / "eval" / "results"
NOT_FOR_ANALYZERS = ["truth.json", "run.json", "events.jsonl", "suite.jsonl", "index.json"]


def macro_f1(pairs: list[tuple[str, str]], over_predicted: bool = True) -> float:
    """Macro-averaged F1; pairs are (truth, predicted). The average runs over the labels present in
    the truth, and also over those only predicted when ``over_predicted`` (then a rare wrong
    prediction counts as a category with F1 0)."""
    labels = sorted({t for t, _ in pairs} | ({p for _, p in pairs} if over_predicted else set()))
    f1s = []
    for lab in labels:
        tp = sum(1 for t, p in pairs if t == lab and p == lab)
        fp = sum(1 for t, p in pairs if t != lab and p == lab)
        fn = sum(1 for t, p in pairs if t == lab and p != lab)
        f1s.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return round(sum(f1s) / len(f1s), 4) if f1s else 0.0


# --- incidents_dev ------------------------------------------------------------------------------


def score_incidents_dev() -> dict[str, Any]:
    from diag_service.pipeline import DiagnoseRequest, diagnose

    labels_file = DEV / "labels.jsonl"
    if not labels_file.exists():
        return {"available": False, "reason": f"{DEV} absent"}
    import yaml

    levels = yaml.safe_load((REPO / "eval" / "recovery_levels_dev.yaml").read_text())["levels"]
    cases = [json.loads(x) for x in labels_file.read_text().splitlines() if x.strip()]
    cat_pairs, mode_ok, rank_total, rank_ok, rec_ok, per_case = [], 0, 0, 0, 0, []
    for c in cases:
        d = diagnose(DiagnoseRequest(path=str(DEV / "logs" / f"{c['id']}.log")))
        cat_pairs.append((c["category"], d.category.value))
        mode_ok += d.failure_mode.value == c["failure_mode"]
        if c.get("faulty_rank") is not None:
            rank_total += 1
            rank_ok += d.first_failing_rank == c["faulty_rank"]
        lvl = d.recovery.level.value if d.recovery else None
        rec_ok += lvl == levels.get(c["id"])
        per_case.append({"id": c["id"], "truth": c["category"], "got": d.category.value, "mode": d.failure_mode.value,
                         "confidence": d.confidence, "recovery": lvl, "recovery_truth": levels.get(c["id"])})
    n = len(cases)
    return {
        "available": True, "cases": n,
        "category_accuracy": round(sum(t == p for t, p in cat_pairs) / n, 4),
        "category_macro_f1": macro_f1(cat_pairs),
        "failure_mode_accuracy": round(mode_ok / n, 4),
        "faulty_rank_accuracy": round(rank_ok / rank_total, 4) if rank_total else None, "faulty_rank_cases": rank_total,
        "recovery_level_agreement": round(rec_ok / n, 4),
        "per_case": per_case,
    }


# --- lab ----------------------------------------------------------------------------------------


def run_lab_suite(out: Path, runs: int, seed: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cmd = [str(REPO / ".venv" / "bin" / "diag"), "lab", "suite", "--out", str(out), "--runs", str(runs), "--seed", str(seed)]
    if not Path(cmd[0]).exists():
        cmd[0:1] = [sys.executable, "-m", "diag_service.cli.main"]
    print(f"[eval] lab suite: {' '.join(cmd)}", flush=True)
    subprocess.run(cmd, check=False)


def _runs(dirs: list[Path]) -> list[tuple[Path, dict]]:
    found = []
    for d in dirs:
        for t in sorted(d.glob("**/truth.json")):
            try:
                found.append((t.parent, json.loads(t.read_text())))
            except ValueError:
                continue
    return found


def score_lab(dirs: list[Path]) -> dict[str, Any]:
    from diag_service.hang import HangRequest, analyze_hang
    from diag_service.pipeline import DiagnoseRequest, diagnose

    runs = _runs(dirs)
    if not runs:
        return {"available": False, "reason": "no lab runs"}
    stop = [(p, t) for p, t in runs if t["failure_mode"] == "fail_stop" and t.get("fault_fired", True)]
    hang = [(p, t) for p, t in runs if t["failure_mode"] == "fail_hang" and t.get("fault_fired", True)]
    slow = [p for p, t in runs if t["failure_mode"] == "fail_slow"]
    res: dict[str, Any] = {"available": True, "runs": len(runs)}

    import yaml

    expected_levels = yaml.safe_load((REPO / "eval" / "recovery_levels_lab.yaml").read_text())["levels"]
    rec_total = rec_ok = 0
    rec_rows = []

    def _recovery(d: Any, t: dict) -> None:
        nonlocal rec_total, rec_ok
        want = expected_levels.get(t["scenario"])
        if want is None or d.recovery is None:
            return
        rec_total += 1
        rec_ok += d.recovery.level.value == want
        rec_rows.append({"scenario": t["scenario"], "want": want, "got": d.recovery.level.value, "rule": d.recovery.rule_id})

    cat_pairs, rank_ok, mode_ok, rows = [], 0, 0, []
    for p, t in stop:
        d = diagnose(DiagnoseRequest(path=str(p), exclude=NOT_FOR_ANALYZERS))
        _recovery(d, t)
        cat_pairs.append((t["category"], d.category.value))
        rank_ok += d.first_failing_rank == t["faulty_rank"]
        mode_ok += d.failure_mode.value == "fail_stop"
        rows.append({"run": p.name, "truth": t["category"], "got": d.category.value,
                     "rank_truth": t["faulty_rank"], "rank_got": d.first_failing_rank})
    if stop:
        res["fail_stop"] = {
            "cases": len(stop), "category_accuracy": round(sum(a == b for a, b in cat_pairs) / len(stop), 4),
            "category_macro_f1": macro_f1(cat_pairs), "first_failing_rank_accuracy": round(rank_ok / len(stop), 4),
            "failure_mode_accuracy": round(mode_ok / len(stop), 4), "per_run": rows,
        }
    top1 = top3 = hung_ok = 0
    healthy_checked = healthy_false = 0
    kinds: Counter[str] = Counter()
    hrows = []
    for p, t in hang:
        kinds[t.get("fault", {}).get("kind", t["scenario"])] += 1
        try:
            rep = analyze_hang(HangRequest(dumps_dir=str(p / "dumps")))
        except (OSError, ValueError) as exc:
            hrows.append({"run": p.name, "error": str(exc)})
            continue
        _recovery(diagnose(DiagnoseRequest(path=str(p), exclude=NOT_FOR_ANALYZERS)), t)
        ranks = [s.rank for s in rep.suspects]
        top1 += bool(ranks) and ranks[0] == t["faulty_rank"]
        top3 += t["faulty_rank"] in ranks[:3]
        hung_ok += rep.hung
        hrows.append({"run": p.name, "truth": t["faulty_rank"], "suspects": ranks[:3], "hung": rep.hung})
        # the snapshots taken while the job was still stepping must not look hung
        index = p / "dumps" / "index.json"
        if index.exists():
            before = [e["dir"] for e in json.loads(index.read_text()) if e.get("phase") == "before_hang"]
            if before:
                import shutil
                import tempfile

                with tempfile.TemporaryDirectory() as tmp:
                    for name in before:
                        shutil.copytree(p / "dumps" / name, Path(tmp) / name)
                    healthy_checked += 1
                    healthy_false += analyze_hang(HangRequest(dumps_dir=tmp)).hung
    if hang:
        res["fail_hang"] = {
            "cases": len(hang), "kinds": dict(kinds), "culprit_top1": round(top1 / len(hang), 4),
            "culprit_top3": round(top3 / len(hang), 4), "hung_detected": round(hung_ok / len(hang), 4),
            "healthy_snapshot_sets": healthy_checked, "healthy_false_hangs": healthy_false, "per_run": hrows,
        }
    if rec_total:
        res["recovery"] = {"cases": rec_total, "level_agreement": round(rec_ok / rec_total, 4), "per_run": rec_rows}
    if slow and importlib.util.find_spec("slow_eval") is not None:
        import slow_eval

        try:
            res["fail_slow"] = slow_eval.score_lab_runs(slow)
        except Exception as exc:  # noqa: BLE001 - a broken scorer is reported, not fatal
            res["fail_slow"] = {"error": repr(exc)}
    return res


# --- optional analyzers -------------------------------------------------------------------------


def _optional(module: str, func: str, **kwargs: Any) -> dict[str, Any]:
    path = REPO / "eval" / f"{module}.py"
    if not path.exists():
        return {"available": False, "reason": f"eval/{module}.py absent"}
    try:
        mod = __import__(module)
        return {"available": True, **getattr(mod, func)(**kwargs)}
    except Exception as exc:  # noqa: BLE001
        return {"available": False, "reason": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]}


# --- report -------------------------------------------------------------------------------------


def markdown(card: dict[str, Any]) -> str:
    import corpus_eval

    head = corpus_eval.markdown(card["corpus"]) + "\n" if card.get("corpus") else ""
    if card.get("slow_power"):
        import slow_power

        head += "Fail-slow power curves (eval/slow_power.py)\n\n" + slow_power.markdown(card["slow_power"]) + "\n\n"
    return head + _markdown(card)


def _markdown(card: dict[str, Any]) -> str:
    def fmt(v: Any) -> str:
        return "absent" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))

    lines = [f"# Scorecard ({card['date']})", "", "| source | metric | value | cases |", "|---|---|---|---|"]
    dev = card.get("incidents_dev") or {}
    if dev.get("available"):
        for k in ("category_accuracy", "category_macro_f1", "failure_mode_accuracy", "faulty_rank_accuracy",
                  "recovery_level_agreement"):
            lines.append(f"| incidents_dev | {k} | {fmt(dev.get(k))} | {dev['cases']} |")
    else:
        lines.append(f"| incidents_dev | - | absent | {dev.get('reason', '')} |")
    lab = card.get("lab") or {}
    if lab.get("available"):
        fs = lab.get("fail_stop")
        if fs:
            for k in ("category_accuracy", "category_macro_f1", "first_failing_rank_accuracy"):
                lines.append(f"| lab fail-stop | {k} | {fmt(fs[k])} | {fs['cases']} |")
        fh = lab.get("fail_hang")
        if fh:
            for k in ("culprit_top1", "culprit_top3", "hung_detected"):
                lines.append(f"| lab fail-hang | {k} | {fmt(fh[k])} | {fh['cases']} |")
            lines.append(f"| lab fail-hang | false hangs on healthy snapshots | {fh['healthy_false_hangs']} | "
                         f"{fh['healthy_snapshot_sets']} |")
        rc = lab.get("recovery")
        if rc:
            lines.append(f"| lab recovery | level_agreement | {fmt(rc['level_agreement'])} | {rc['cases']} |")
        sl = lab.get("fail_slow")
        ls = card.get("lab_slow") or {}
        if ls.get("available"):
            sl = ls["fail_slow"]  # the dedicated slow suite replaces the main suite's slow runs
        if isinstance(sl, dict):
            ov = sl.get("overall", sl)
            rows = (("straggler precision", "precision", "per_rank_fault_runs"),
                    ("straggler recall", "recall", "per_rank_fault_runs"),
                    ("straggler false_alarm_rate (clean controls)", "false_alarm_rate", "clean_runs"),
                    ("detection delay, median steps (all faulty runs)", "detection_delay_steps_median", "faulty_runs"),
                    ("detected within 20 steps of onset (all faulty runs)", "within_20_steps", "faulty_runs"),
                    ("job_episode_rate_controls", "job_episode_rate_controls", "clean_runs"),
                    ("any_alarm_rate_controls", "any_alarm_rate_controls", "clean_runs"),
                    ("straggler kind_accuracy", "kind_accuracy", "per_rank_fault_runs"))
            for label, k, n in rows:
                if k in ov:
                    lines.append(f"| lab fail-slow | {label} | {fmt(ov[k])} | {ov.get(n, ov.get('runs', ''))} |")
        bd = ls.get("bytedance") if ls.get("available") else None
        if isinstance(bd, dict):
            for name in ("AR", "SE", "ST"):
                t = bd.get(name)
                if isinstance(t, dict):
                    pub, ours = t["published"], t["ours"]
                    lines.append(f"| ByteDance what-if {name} | slowdown S ours / published (rel. error) | "
                                 f"{ours['S']:.3f} / {pub['S']:.3f} ({t['rel_error']['S']:.1%}) | "
                                 f"blame: {pub['expected_blame']}; ours ranks {ours['blamed_ranks']}, "
                                 f"stages {ours['blamed_stages']}; ok={t['ok']} |")
    else:
        lines.append("| lab | - | absent | |")
    hf = card.get("hang_fr") or {}
    if hf.get("available"):
        for view, label in (("fr", "Flight Recorder only"), ("stacks", "stacks only"), ("both", "both, fused")):
            lines.append(f"| lab fail-hang culprits | top-1, {label} | {hf['top1'][view]} | {hf['runs']} runs |")
        if "fr_group_and_collective_right" in hf["top1"]:
            lines.append(f"| lab fail-hang culprits | Flight Recorder names the right group and collective | "
                         f"{hf['top1']['fr_group_and_collective_right']} | {hf['runs']} runs |")
        for sc, cells in sorted(hf["per_scenario"].items()):
            lines.append(f"| lab fail-hang culprits | {sc}: FR / stacks / both | {cells['fr']} / {cells['stacks']} / "
                         f"{cells['both']} | " + (f"all faulty named (both): {cells['both_all_faulty_named']}"
                                                  if "both_all_faulty_named" in cells else "") + " |")
    lh = card.get("loghub") or {}
    if lh.get("available"):
        bench = fmt(lh["average"]["benchmark"])
        lines.append(f"| Loghub-2k | grouping accuracy, Drain benchmark settings | {bench} | 16 systems "
                     f"(Drain published {lh['drain_published_average']}) |")
        lines.append(f"| Loghub-2k | grouping accuracy, our deployed masks | {fmt(lh['average']['deployed'])} | 16 systems |")
    for name in ("knowledge_base", "llm", "labelling"):
        sec = card.get(name) or {"available": False}
        if not sec.get("available"):
            lines.append(f"| {name} | - | absent | |")
            continue
        for k, v in sec.items():
            rows = {f"{k}_{kk}": vv for kk, vv in v.items()} if k == "latency_s" and isinstance(v, dict) else {k: v}
            for kk, vv in rows.items():
                if isinstance(vv, int | float) and not isinstance(vv, bool):
                    lines.append(f"| {name} | {kk} | {fmt(vv)} | |")
    return "\n".join(lines) + "\n"


SECTIONS = ("corpus", "incidents_dev", "lab", "lab_slow", "slow_power", "hang_fr", "loghub", "knowledge_base", "llm",
            "labelling")


def score_slow_lab(dirs: list[Path]) -> dict[str, Any]:
    """Fail-slow scoring of the runs under ``dirs`` alone (``--slow-lab``: a dedicated 4-rank slow suite)."""
    slow = [p for p, t in _runs(dirs) if t["failure_mode"] == "fail_slow"]
    if not slow:
        return {"available": False, "reason": f"no fail-slow runs under {', '.join(map(str, dirs))}"}
    import slow_eval

    out: dict[str, Any] = {"available": True, "dirs": [str(d) for d in dirs], "fail_slow": slow_eval.score_lab_runs(slow)}
    try:
        out["bytedance"] = slow_eval.bytedance_comparison()
    except FileNotFoundError as exc:  # the public traces live in ../shared
        out["bytedance"] = {"available": False, "reason": str(exc)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lab-runs", type=int, default=20)
    ap.add_argument("--lab-seed", type=int, default=0)
    ap.add_argument("--lab-dir", default=str(RESULTS / "lab_runs"))
    ap.add_argument("--reuse-lab", nargs="*", default=None, help="score these existing run folders instead of running a suite")
    ap.add_argument("--skip-lab", action="store_true")
    ap.add_argument("--slow-lab", nargs="*", default=None,
                    help="a dedicated fail-slow lab suite; its rows replace the fail-slow rows of the main lab section")
    ap.add_argument("--only", default=None,
                    help=f"comma-separated sections to (re)score, keeping the others from --out: {','.join(SECTIONS)}")
    ap.add_argument("--out", default=str(RESULTS / "scorecard.json"))
    a = ap.parse_args()
    t0 = time.time()
    out = Path(a.out)
    only = set(a.only.split(",")) if a.only else set(SECTIONS)
    unknown = only - set(SECTIONS)
    if unknown:
        ap.error(f"unknown section(s) {sorted(unknown)}; choose from {','.join(SECTIONS)}")
    # lab run folders are gitignored: a missing one must not replace committed results with "unavailable"
    missing = [d for d in [*(a.slow_lab or []), *(a.reuse_lab or [])] if not Path(d).is_dir()]
    if missing:
        ap.error(f"no such lab run folder(s): {', '.join(missing)} (they are not in git; run the lab suite first, "
                 "see eval/lab/README.md)")
    if "lab_slow" in only and a.only and not a.slow_lab:
        ap.error("--only lab_slow needs --slow-lab FOLDER(S)")
    card: dict[str, Any] = {}
    if a.only and out.exists():
        card = json.loads(out.read_text())
    card["date"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    lab_dirs = [Path(x) for x in a.reuse_lab] if a.reuse_lab else [Path(a.lab_dir)]
    if a.skip_lab:
        lab_dirs = []
    if "corpus" in only:
        print("[eval] public corpus, dev and frozen test (counted as a look at test)", flush=True)
        import corpus_eval

        card["corpus"] = corpus_eval.evaluate(test=True, why="scorecard (make eval)")
    if "incidents_dev" in only:
        print("[eval] incidents_dev", flush=True)
        card["incidents_dev"] = score_incidents_dev()
    if "lab" in only:
        if a.skip_lab:
            card["lab"] = {"available": False, "reason": "--skip-lab"}
        else:
            if not a.reuse_lab:
                run_lab_suite(Path(a.lab_dir), a.lab_runs, a.lab_seed)
            print("[eval] scoring lab runs", flush=True)
            card["lab"] = score_lab(lab_dirs)
    if "lab_slow" in only and a.slow_lab:
        print("[eval] scoring the fail-slow lab suite", flush=True)
        card["lab_slow"] = score_slow_lab([Path(x) for x in a.slow_lab])
    if "slow_power" in only:
        print("[eval] fail-slow power curves on real clean feeds (~5 min)", flush=True)
        import slow_power

        card["slow_power"] = slow_power.evaluate(trials=6, factors=(1.1, 1.2, 1.3, 1.5, 2.0), duties=(1, 5, 10))
    if "hang_fr" in only:
        # the lab runs take ~30 min (eval/lab_hang_fr.py); the scorecard reports its committed result
        res = RESULTS / "lab_hang_fr.json"
        if res.exists():
            doc = json.loads(res.read_text())
            card["hang_fr"] = {"available": True, "runs": doc["runs"], "top1": doc["top1"],
                               "per_scenario": doc["per_scenario"], "source": "eval/results/lab_hang_fr.json"}
        else:
            card["hang_fr"] = {"available": False, "reason": "run eval/lab_hang_fr.py first"}
    if "loghub" in only:
        print("[eval] loghub", flush=True)
        import loghub_eval

        card["loghub"] = loghub_eval.evaluate()
    if "knowledge_base" in only:
        print("[eval] knowledge base", flush=True)
        card["knowledge_base"] = _optional("kb_eval", "evaluate")
    if "llm" in only:
        print("[eval] llm summaries (incidents_dev and lab fail-stop/hang runs)", flush=True)
        card["llm"] = _optional("llm_eval", "evaluate", lab_dirs=[p for p in lab_dirs if p.exists()])
    if "labelling" in only:
        print("[eval] batch labelling agreement", flush=True)
        card["labelling"] = _optional("label_eval", "evaluate", lab_dirs=[p for p in lab_dirs if p.exists()])
    card["seconds"] = round(time.time() - t0, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(card, indent=2, default=str) + "\n")
    md = markdown(card)
    out.with_suffix(".md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
