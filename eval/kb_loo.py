"""Would past labelled dev cases, used as knowledge-base incidents, name the category of the cases the
signatures leave ``unknown``? Leave-one-thread-out on the corpus's dev split (issue 16).

Every dev case goes through the same call as ``eval/corpus_eval.py`` (signatures, context rules, seed
retrieval, recovery, calibration); a retriever wrapper keeps a copy of the diagnosis as retrieval sees it.
Retrieval is then simulated offline over an incident set = the seed incidents + the dev cases as
incidents, without any case of the query's own thread (the split unit: a thread's cases share a cause),
and :func:`~diag_service.localize.combine_retrieval` plus the confidence calibration are applied again.

What represents a dev case as an incident (``--variant``):

* ``evidence``: its labelled evidence lines, embedded as a seed record's evidence is
  (:func:`~diag_service.kb.text.texts_for_logs`): exactly what shipping the case as a YAML incident does;
* ``diagnosis``: the text of its own diagnosis (:func:`~diag_service.kb.text.diagnosis_text`), i.e. the
  same text as its query.

Reports, for thresholds 0.50-0.90: on the dev cases that reach retrieval with no category (the ones
``combine_retrieval`` may name), how many the top-1 incident names and how many of those are right; and
the dev metrics of ``corpus_eval`` (category accuracy, macro-F1, confidently-wrong, unknown) with seed
incidents only and with seed + dev incidents. ``--overrule`` also measures letting retrieval replace a weak
signature answer. Dev only: no test case is read.

    .venv/bin/python eval/kb_loo.py [--cache /tmp/kb_loo.jsonl] [--out eval/results/kb_loo.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "eval"))
sys.path.insert(0, str(REPO / "eval" / "corpus"))

from check import load_labels, normalise_url  # noqa: E402
from corpus_eval import CORPUS, assign, score  # noqa: E402

from diag_service.domain import Category, Diagnosis, EventRole, SimilarIncident  # noqa: E402

THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)


def dev_cases() -> list[dict[str, Any]]:
    labels = load_labels(CORPUS)
    split = assign(labels)
    return [c for c in labels if split[c["id"]] == "dev"]


class Capture:
    """A Retriever that keeps a copy of the diagnosis it is asked about and answers with ``inner``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: Diagnosis | None = None

    def similar_incidents(self, diagnosis: Diagnosis, k: int = 5) -> tuple[list[SimilarIncident], bool]:
        self.seen = diagnosis.model_copy(deep=True)
        return self.inner.similar_incidents(diagnosis, k)


def run_cases(cases: list[dict[str, Any]], cache: Path | None) -> list[dict[str, Any]]:
    """Per case: the final diagnosis (seed retrieval, as corpus_eval) and the one retrieval saw."""
    if cache is not None and cache.exists():
        rows = [json.loads(line) for line in cache.read_text().splitlines() if line.strip()]
        if [r["id"] for r in rows] == [c["id"] for c in cases]:
            return rows
    from diag_service.kb import DefaultRetriever
    from diag_service.pipeline import DiagnoseRequest, diagnose

    inner = DefaultRetriever()
    rows = []
    for c in cases:
        cap = Capture(inner)
        try:
            d = diagnose(DiagnoseRequest(path=str(CORPUS / "logs" / f"{c['id']}.log"), kb=True, llm=False,
                                         recovery=True, retriever=cap))
        except Exception as exc:  # noqa: BLE001 - reported like corpus_eval does
            rows.append({"id": c["id"], "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        rows.append({"id": c["id"], "final": d.model_dump_json(), "pre": cap.seen.model_dump_json() if cap.seen else None})
    if cache is not None:
        cache.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def _result(d: Diagnosis) -> dict[str, Any]:
    return {"category": d.category.value, "failure_mode": d.failure_mode.value, "confidence": d.confidence,
            "first_failing_rank": d.first_failing_rank, "recovery": None}


def simulate(rows: list[dict[str, Any]], cases: list[dict[str, Any]], variant: str, thresholds=THRESHOLDS,
             overrule: float | None = None, dev_unknown: bool = True, agree: float | None = None,
             weak_root: bool = False) -> dict[str, Any]:
    """Leave-one-thread-out retrieval over seeds + dev incidents (``variant`` text), per threshold.

    ``agree``: name the category only when the top-1's category also holds at least this share of the
    score-weighted top-5 vote (:func:`~diag_service.kb.vote_category`) among incidents above the threshold.
    ``weak_root``: also let retrieval name the category when a root signature matched but was too weak.
    """
    import diag_service.localize.root_cause as rc
    from diag_service.calibrate import load_calibration
    from diag_service.kb import default_kb, load_records, vote_category
    from diag_service.kb.text import diagnosis_text, texts_for_logs

    kb = default_kb()
    emb = kb.embedder
    cal = load_calibration()
    seeds = load_records()
    seed_vec = emb.encode(texts_for_logs(["\n".join(r.evidence) for r in seeds]))
    seed_cat = [r.category for r in seeds]
    by_id = {c["id"]: c for c in cases}
    pre = {r["id"]: Diagnosis.model_validate_json(r["pre"]) for r in rows if r.get("pre")}
    final = {r["id"]: Diagnosis.model_validate_json(r["final"]) for r in rows if r.get("final")}
    qtext = {i: diagnosis_text(d) for i, d in pre.items()}
    # dev incidents
    inc_ids = [c["id"] for c in cases if dev_unknown or c["category"] != "unknown"]
    if variant == "evidence":
        itext = texts_for_logs(["\n".join(by_id[i]["evidence"]) or by_id[i]["root_cause"] for i in inc_ids])
    else:
        itext = [qtext.get(i, "") for i in inc_ids]
    keep = [n for n, t in enumerate(itext) if t.strip()]
    inc_ids = [inc_ids[n] for n in keep]
    inc_vec = emb.encode([itext[n] for n in keep]) if keep else np.zeros((0, emb.dim), np.float32)
    inc_cat = [Category(by_id[i]["category"]) for i in inc_ids]
    inc_thread = [normalise_url(by_id[i]["source_url"]) for i in inc_ids]
    qids = [i for i in pre if qtext[i]]
    qvec = dict(zip(qids, emb.encode([qtext[i] for i in qids]), strict=True)) if qids else {}
    thr_novel = kb.novelty_threshold

    def top(i: str, with_dev: bool) -> list[SimilarIncident]:
        q = qvec[i]
        sc = [(float(s), seed_cat[n], seeds[n].id) for n, s in enumerate(seed_vec @ q)]
        if with_dev:
            th = normalise_url(by_id[i]["source_url"])
            sc += [(float(s), inc_cat[n], f"corpus-{inc_ids[n]}") for n, s in enumerate(inc_vec @ q) if inc_thread[n] != th]
        sc.sort(key=lambda x: -x[0])
        return [SimilarIncident(incident_id=rid, title="past incident", score=round(s, 4), category=cat, root_cause="-",
                                action="-", recovery_level="L2") for s, cat, rid in sc[:5]]

    out: dict[str, Any] = {"variant": variant, "novelty_threshold": thr_novel, "dev_incidents": len(inc_ids),
                           "overrule": overrule, "agree": agree, "weak_root": weak_root, "curve": [], "metrics": {}}
    saved = rc.RETRIEVAL_MIN_SCORE
    try:
        for with_dev in (False, True):
            for t in thresholds:
                rc.RETRIEVAL_MIN_SCORE = t
                got: dict[str, dict[str, Any]] = {}
                named = right = eligible = over_n = over_right = over_sig_right = 0
                for c in cases:
                    i = c["id"]
                    if i not in final:
                        got[i] = {"error": "x"}
                        continue
                    if i not in qvec:
                        got[i] = _result(final[i])
                        continue
                    d = pre[i].model_copy(deep=True)
                    hits = top(i, with_dev)
                    novel = not hits or hits[0].score < thr_novel
                    weak = any(h.role is EventRole.ROOT for h in d.signature_hits)
                    if d.category is Category.UNKNOWN and (weak_root or not weak):
                        eligible += 1
                    if agree is not None and hits:
                        cat, share = vote_category(hits, t)
                        if cat is not hits[0].category or share < agree:
                            hits = [h.model_copy(update={"score": -1.0}) for h in hits]
                    if weak_root and d.category is Category.UNKNOWN and weak:
                        d.signature_hits = [h for h in d.signature_hits if h.role is not EventRole.ROOT]
                    before = d.category
                    if (overrule is not None and before is not Category.UNKNOWN and d.confidence < overrule
                            and hits and not novel and hits[0].score >= t and hits[0].category not in (before, Category.UNKNOWN)):
                        over_n += 1
                        over_right += hits[0].category.value == c["category"]
                        over_sig_right += before.value == c["category"]
                        d.category = Category.UNKNOWN
                        d.signature_hits = [h for h in d.signature_hits if h.role is not EventRole.ROOT]
                    rc.combine_retrieval(d, hits, novel)
                    if before is Category.UNKNOWN and d.category is not Category.UNKNOWN:
                        named += 1
                        right += d.category.value == c["category"]
                    cal.apply(d)
                    got[i] = _result(d)
                m = score(cases, got)
                key = f"{'seed+dev' if with_dev else 'seed'}@{t}"
                out["metrics"][key] = {k: m[k] for k in ("category_accuracy", "category_macro_f1",
                                                         "confidently_wrong_rate", "unknown_rate")}
                out["curve"].append({"incidents": "seed+dev" if with_dev else "seed", "threshold": t,
                                     "eligible_unknown": eligible, "named": named, "right": right,
                                     "accuracy_named": round(right / named, 3) if named else None,
                                     "overruled": over_n, "overruled_right": over_right,
                                     "overruled_signature_was_right": over_sig_right, **out["metrics"][key]})
    finally:
        rc.RETRIEVAL_MIN_SCORE = saved
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=None, help="per-case diagnoses (reused when the ids match)")
    ap.add_argument("--variant", choices=("evidence", "diagnosis", "both"), default="both")
    ap.add_argument("--overrule", type=float, default=None, help="also let retrieval overrule signature answers whose "
                    "raw confidence is below this")
    ap.add_argument("--no-unknown-incidents", action="store_true", help="dev cases labelled unknown are not incidents")
    ap.add_argument("--agree", type=float, default=None, help="name only when the top-1 category holds this share "
                    "of the top-5 vote above the threshold")
    ap.add_argument("--weak-root", action="store_true", help="let retrieval name the category behind a weak root signature")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    cases = dev_cases()
    rows = run_cases(cases, a.cache)
    base = {r["id"]: r for r in rows}
    print(f"{len(cases)} dev cases; errors {sum('error' in r for r in base.values())}")
    fin = {i: Diagnosis.model_validate_json(r["final"]) for i, r in base.items() if r.get("final")}
    m = score(cases, {c["id"]: _result(fin[c["id"]]) if c["id"] in fin else {"error": "x"} for c in cases})
    print("pipeline as is:", {k: m[k] for k in ("category_accuracy", "category_macro_f1", "confidently_wrong_rate",
                                                  "unknown_rate")})
    res = []
    for v in (("evidence", "diagnosis") if a.variant == "both" else (a.variant,)):
        r = simulate(rows, cases, v, overrule=a.overrule, dev_unknown=not a.no_unknown_incidents, agree=a.agree,
                     weak_root=a.weak_root)
        res.append(r)
        print(f"\n== variant {v}: {r['dev_incidents']} dev incidents, novelty threshold {r['novelty_threshold']:.3f}")
        print("incidents thr eligible named right acc_named | acc  macroF1 conf_wrong unknown | overruled right sig_right")
        for p in r["curve"]:
            print(f"{p['incidents']:8s} {p['threshold']:.2f} {p['eligible_unknown']:4d} {p['named']:4d} {p['right']:4d} "
                  f"{p['accuracy_named'] if p['accuracy_named'] is not None else '-':>6} | {p['category_accuracy']:.4f} "
                  f"{p['category_macro_f1']:.4f} {p['confidently_wrong_rate']:.4f} {p['unknown_rate']:.4f} | "
                  f"{p['overruled']} {p['overruled_right']} {p['overruled_signature_was_right']}")
    if a.out:
        a.out.write_text(json.dumps({"as_is": {k: m[k] for k in ("category_accuracy", "category_macro_f1",
                                                                   "confidently_wrong_rate", "unknown_rate")},
                                     "runs": res, "truth": dict(Counter(c["category"] for c in cases))}, indent=1) + "\n")


if __name__ == "__main__":
    main()
