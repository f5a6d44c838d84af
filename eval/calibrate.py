"""Fit ``knowledge_base/calibration.yaml`` on the development split of the public corpus (never test).

Confidence must mean the probability of being right *on logs the rules have not seen*. Raw outputs of
the current rules on dev are in-sample (the rules were tuned on those very cases: dev category 0.64
against 0.48 on test at the twelfth look), so a map fitted on them is over-confident on new input.
The default source is therefore each dev case's **first contact**: its diagnosis by the code of the
commit that froze its part of the corpus (``split.json``: the first freeze and every ``additions``
entry name the commit whose rules had not seen those cases), run from a temporary ``git worktree``
of that commit. This is cross-validated calibration (a held-out fit, as scikit-learn's
``CalibratedClassifierCV``) with the corpus's own history as the folds. ``--source current`` fits the
current code's dev outputs instead (the method before 2026-12-05).

The fit: isotonic regression (pool-adjacent-violators) of "category right" on the raw confidence for
named categories, then per category a log-odds offset (a ridge-penalised logistic fit on top of the knots,
:func:`fit_offsets`, lowering only; ``--cv`` compares both without the batch scored); for ``unknown`` diagnoses,
the smoothed share of right answers per situation (failure mode and raw confidence, each a constant of the
localizer: a hang known only from timeouts, an unexplained failure, logs with no event) with at least ``--min-bin``
answers, capped at ``UNKNOWN_MAX``, and over all of them for the rest. Bins with fewer than ``--min-bin`` cases are
pooled with their neighbour so that no step rests on a handful of cases.
First-contact outputs are kept in ``eval/results/corpus_first_contact_dev.jsonl`` (new additions are
appended on the next run; ``--refresh`` rebuilds all, about 4 minutes on 2 cores).

    .venv/bin/python eval/calibrate.py [--source first-contact|current] [--refresh] [--min-bin 8]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "eval"))

import yaml  # noqa: E402
from corpus_eval import CORPUS, SPLIT_FILE, _commit, assign, diagnose_case, load_labels  # noqa: E402

from diag_service.calibrate import UNKNOWN_MAX, Calibration  # noqa: E402
from diag_service.domain import Category  # noqa: E402

FIRST_CONTACT = REPO / "eval" / "results" / "corpus_first_contact_dev.jsonl"

#: Run inside a worktree of an old commit: diagnose the given dev cases without calibration (older
#: commits have no ``calibration`` field: their confidence is already raw) and print one JSON line each.
_RUNNER = """\
import json, sys
from diag_service.pipeline import DiagnoseRequest, diagnose
logs, ids = sys.argv[1], sys.argv[2].split(",")
for cid in ids:
    kw = dict(path=f"{logs}/{cid}.log", kb=True, llm=False, recovery=True)
    if "calibration" in DiagnoseRequest.model_fields:
        kw["calibration"] = None
    try:
        d = diagnose(DiagnoseRequest(**kw))
        out = {"id": cid, "category": d.category.value, "confidence": d.confidence,
               "failure_mode": d.failure_mode.value}
    except Exception as exc:  # a crash of old code on a case is its first-contact answer: unknown
        out = {"id": cid, "error": repr(exc)[:200]}
    print(json.dumps(out), flush=True)
"""


def first_contact(refresh: bool = False) -> list[dict[str, Any]]:
    """Every dev case's diagnosis by the code of the commit that froze it (module docstring).

    Returns ``[{id, commit, category, confidence, failure_mode}]`` (``error`` instead of the answer
    when that code crashed on the case), read from :data:`FIRST_CONTACT` unless ``refresh``. Raises
    ``subprocess.CalledProcessError`` when a commit cannot be checked out (a shallow clone). Parts of
    ``split.json`` not yet in the file (a new addition) are run and appended."""
    rows: list[dict[str, Any]] = []
    if FIRST_CONTACT.exists() and not refresh:
        rows = [json.loads(line) for line in FIRST_CONTACT.read_text().splitlines() if line.strip()]
    done = {r["id"] for r in rows}
    doc = json.loads(SPLIT_FILE.read_text())
    for part in [doc, *doc.get("additions", [])]:
        sha, ids = part["commit"], [i for i in part.get("dev", []) if i not in done]
        if not ids:
            continue
        rows += [{**r, "commit": sha[:12]} for r in run_at_commit(sha, _RUNNER, [str(CORPUS / "logs"), ",".join(ids)])]
        print(f"first contact: {len(ids)} dev cases at {sha[:12]}", file=sys.stderr)
    FIRST_CONTACT.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def run_at_commit(sha: str, runner: str, args: list[str]) -> list[dict[str, Any]]:
    """Run ``runner`` (Python source) with ``args`` in a temporary git worktree of commit ``sha``, its own
    ``diag_service`` first on the path, and return the JSON objects it prints (one per line; other lines are
    ignored). Raises ``subprocess.CalledProcessError`` when the commit cannot be checked out (a shallow clone) or
    the runner fails; the worktree is removed either way."""
    with tempfile.TemporaryDirectory(prefix="first-contact-") as tmp:
        wt = Path(tmp) / sha[:12]
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(wt), sha], cwd=REPO, check=True)
        try:
            env = {**os.environ, "PYTHONPATH": str(wt)}
            res = subprocess.run([sys.executable, "-c", runner, *args], cwd=wt, env=env, capture_output=True,
                                 text=True, check=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(wt)], cwd=REPO, check=False)
    return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]


def wilson_lower(k: float, n: float, z: float) -> float:
    """Wilson score lower bound of a proportion ``k / n`` at ``z`` standard errors (Wilson 1927)."""
    if n <= 0:
        return 0.0
    p = k / n
    den = 1 + z * z / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - half) / den)


def pav(points: list[tuple[float, int]], min_bin: int, z: float = 0.0) -> list[tuple[float, float]]:
    """Isotonic step fit of 0/1 outcomes on scores: ``[(upper score, value)]``, non-decreasing, each step
    holding at least ``min_bin`` points (answers of one score always in one step). ``value`` is the
    Laplace-smoothed mean (``z = 0``) or, for ``z > 0``, the step's Wilson lower bound at ``z`` made
    non-decreasing by taking, for each step, the smallest bound of it and the steps above it (never above any
    step's own bound)."""
    # tied scores form one starting block: a step's edge cannot fall between two answers of the same score, which
    # the lookup (every score up to a step's upper bound gets that step) could not honour
    tied: dict[float, list[float]] = {}
    for x, y in points:
        t = tied.setdefault(x, [0.0, 0.0])
        t[0] += y
        t[1] += 1
    blocks: list[list[float]] = []  # [sum, count, upper]
    for x in sorted(tied):
        blocks.append([tied[x][0], tied[x][1], x])
        while len(blocks) > 1 and (blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]
                                   or blocks[-2][1] < min_bin):
            s, n, up = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
            blocks[-1][2] = up
    if len(blocks) > 1 and blocks[-1][1] < min_bin:
        s, n, up = blocks.pop()
        blocks[-1][0] += s
        blocks[-1][1] += n
        blocks[-1][2] = up
    vals = [(b[0] + 1) / (b[1] + 2) if z <= 0 else wilson_lower(b[0], b[1], z) for b in blocks]
    for i in range(len(vals) - 2, -1, -1):
        vals[i] = min(vals[i], vals[i + 1])
    out = [(round(b[2], 3), round(v, 3)) for b, v in zip(blocks, vals, strict=True)]
    out[-1] = (1.0, out[-1][1])
    return out


#: Prior sd (log-odds) of a category's offset, and the fewest first-contact answers of a category to fit one: a
#: penalised (ridge) logistic fit shrinks a category with few answers toward the knots. Chosen by the
#: leave-one-batch-out comparison of ``--cv`` on dev first contact (2026-12-05: tau 0.5 / 1 / 2 and 10 / 20 answers
#: gave the same held-out figures within one answer).
OFFSET_TAU = 1.0
OFFSET_MIN = 20


def _prob(knots: list[tuple[float, float]], offsets: dict[str, float], cat: str, raw: float) -> float:
    """What the service would state for a named ``cat`` answer at ``raw`` under these knots and offsets: the
    production map itself (:meth:`Calibration.probability`), so that the fit and the comparison score what runs."""
    cal = Calibration(fitted_on="eval", knots=knots, unknown=0.0,
                      category_offsets={Category(c): b for c, b in offsets.items()})
    return cal.probability(raw, Category(cat))


def _logit(p: float) -> float:
    p = min(max(p, 0.02), 0.98)
    return math.log(p / (1 - p))


def fit_offsets(named: list[tuple[str, float, int]], knots: list[tuple[float, float]], tau: float = OFFSET_TAU,
                min_n: int = OFFSET_MIN) -> dict[str, float]:
    """Per category, the log-odds shift ``b`` that maximises the likelihood of "category right" given the knots'
    probability (``logit(p) + b``), with a normal prior of sd ``tau`` on ``b`` (Newton's method; ``named``:
    ``(category, raw confidence, right)``). Categories with fewer than ``min_n`` answers get none, and so do those
    whose fit is positive: an offset only lowers. Raising a category's answers above what their raw score says would
    override the rules that mark some of them uncertain (a pod evicted for node memory pressure is host_oom with a low
    raw score; host_oom answers are right 0.9 of the time at first contact, and +1.7 took that one to 0.77).
    Leave-one-batch-out on dev first contact (2026-12-05): confidently wrong 47 (knots) -> 39 (both signs) -> 31
    (lowering only) of 792, Brier 0.212 -> 0.182 -> 0.195; forward: 23 -> 16 -> 14 of 558, Brier 0.220 -> 0.201 ->
    0.209."""
    by: dict[str, list[tuple[float, int]]] = {}
    for cat, raw, y in named:
        by.setdefault(cat, []).append((_logit(_prob(knots, {}, cat, raw)), y))
    out: dict[str, float] = {}
    for cat, v in sorted(by.items()):
        if len(v) < min_n:
            continue
        b = 0.0
        for _ in range(50):
            ps = [1 / (1 + math.exp(-(x + b))) for x, _ in v]
            g = sum(y - p for (_, y), p in zip(v, ps, strict=True)) - b / tau**2
            h = -sum(p * (1 - p) for p in ps) - 1 / tau**2
            step = g / h
            b -= step
            if abs(step) < 1e-9:
                break
        if b < 0:
            out[cat] = round(b, 3)
    return out


def cross_validate(named: list[tuple[str, float, int, str]], min_bin: int, n_all: dict[str, int],
                   forward: bool = False) -> dict[str, Any]:
    """Comparison of the knots alone and the knots with category offsets, each fitted without the batch it scores (a
    batch: the dev cases one commit froze, in freezing order): leave-one-batch-out, or ``forward`` (fitted on the
    earlier batches only, from the first batch with 100 earlier named answers: how a new addition meets the map).
    Confidently wrong (probability >= 0.5 and wrong, over all the scored batches' answers, ``n_all`` per batch,
    ``unknown`` ones included, which never reach 0.5), Brier score and ECE (5 bins) of the named answers.
    ``named``: ``(category, raw, right, batch)``."""
    batches = list(dict.fromkeys(b for *_, b in named))
    preds: dict[str, list[tuple[float, int]]] = {"knots": [], "knots+offsets": []}
    scored = 0
    for i, held in enumerate(batches):
        train = [x for x in named if (batches.index(x[3]) < i if forward else x[3] != held)]
        if forward and len(train) < 100:
            continue
        scored += n_all.get(held, 0)
        knots = pav([(raw, y) for _, raw, y, _ in train], min_bin)
        offsets = fit_offsets([(c, raw, y) for c, raw, y, _ in train], knots)
        for c, raw, y, b in named:
            if b == held:
                preds["knots"].append((_prob(knots, {}, c, raw), y))
                preds["knots+offsets"].append((_prob(knots, offsets, c, raw), y))
    out: dict[str, Any] = {"mode": "forward" if forward else "leave-one-batch-out", "batches": len(batches),
                           "named_scored": len(preds["knots"]), "all_scored": scored}
    for name, pv in preds.items():
        bins: dict[int, list[float]] = {}
        for p, y in pv:
            b = bins.setdefault(min(int(p * 5), 4), [0, 0.0, 0])
            b[0] += 1
            b[1] += p
            b[2] += y
        cw = sum(1 for p, y in pv if p >= 0.5 and not y)
        out[name] = {"confidently_wrong": cw, "confidently_wrong_rate": round(cw / max(scored, 1), 4),
                     "brier": round(sum((p - y) ** 2 for p, y in pv) / len(pv), 4),
                     "ece_named": round(sum(abs(b[1] - b[2]) for b in bins.values()) / len(pv), 4)}
    return out


#: The zoo's dev runs as the rules of each batch's freezing commit answered them (first contact: rules that had never
#: seen them), one JSON object per run (``eval/results/zoo_first_contact_dev.jsonl``, written by
#: ``eval/zoo_first_contact.py``; ``category_source`` included).
ZOO_FIRST_CONTACT = REPO / "eval" / "results" / "zoo_first_contact_dev.jsonl"

#: Fewest first-contact analyzer answers to fit the constant on.
ANALYZERS_MIN = 5


def fit_analyzers() -> tuple[float | None, str]:
    """The probability that a slowdown's named category decided by the analyzers (``category_source ==
    "analyzers"``, ``fail_slow``) is right: the Laplace estimate (right + 1) / (n + 2), as for the ``unknown``
    cells, over the zoo's dev runs answered that way at first contact (:data:`ZOO_FIRST_CONTACT`; the public
    corpus has almost no step-time slowdowns). In sample, the current code is right on nearly all such dev runs,
    because its step-time rules were written with them in view; first contact is what a new run meets.
    Capped at ``UNKNOWN_MAX``: such a category is right about half the time at first contact (17 of 31 when fitted on
    2026-12-07), so it is not presented as a confident answer (at 0.545 the zoo's slowdowns were 18 of its 25
    confidently wrong dev answers). Returns ``(value, provenance)``, ``(None, ...)`` with fewer than
    :data:`ANALYZERS_MIN` such answers."""
    zoo = REPO / "eval" / "zoo"
    labels = {c["id"]: c for c in (json.loads(x) for x in (zoo / "labels.jsonl").read_text().splitlines() if x.strip())}
    rows = [json.loads(x) for x in ZOO_FIRST_CONTACT.read_text().splitlines() if x.strip()]
    answers = [r for r in rows if r.get("category_source") == "analyzers" and r.get("failure_mode") == "fail_slow"
               and r.get("category") not in (None, "unknown")]
    n = len(answers)
    right = sum(r["category"] == labels[r["id"]]["category"] for r in answers)
    if n < ANALYZERS_MIN:
        return None, f"zoo dev first contact: {n} analyzer answers, too few"
    basis = (f"zoo dev first contact ({len(rows)} runs, batches 1-{max(r.get('batch', 0) for r in rows)}), {right} of {n} "
             "slowdown categories the analyzers decided right, Laplace estimate")
    return round(min((right + 1) / (n + 2), UNKNOWN_MAX), 3), basis + f", capped at {UNKNOWN_MAX}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", choices=("first-contact", "current"), default="first-contact",
                    help="fit on each dev case's diagnosis by the commit that froze it (default; out of sample) "
                         "or by the current code (in sample, over-confident on new input)")
    ap.add_argument("--refresh", action="store_true", help="re-run the first-contact diagnoses")
    ap.add_argument("--min-bin", type=int, default=8)
    ap.add_argument("--z", type=float, default=0.0,
                    help="fit each step's Wilson lower bound at z standard errors instead of the smoothed mean "
                         "(0). Tried z=1 on dev (2026-12-02): confidently wrong stayed at 7.7 %%, ECE rose from "
                         "0.105 to 0.145, so the mean fit stays the default")
    ap.add_argument("--out", default=str(REPO / "knowledge_base" / "calibration.yaml"))
    ap.add_argument("--cv", action="store_true",
                    help="also compare the knots alone and the knots with category offsets by leave-one-batch-out "
                         "(eval/results/calibration_cv.json)")
    a = ap.parse_args()
    labels = load_labels(CORPUS)
    split = assign(labels)
    truth = {c["id"]: c["category"] for c in labels if split[c["id"]] == "dev"}
    if a.source == "first-contact":
        answers = [g for g in first_contact(a.refresh) if g["id"] in truth]
        basis = f"first contact (the code of each part's freezing commit), fitted at commit {_commit()[:12]}"
    else:
        answers = [diagnose_case({"id": cid}, raw=True) for cid in truth]
        basis = f"current code at commit {_commit()[:12]}"
    named: list[tuple[float, int]] = []
    named_cat: list[tuple[str, float, int, str]] = []
    unk_right = unk_n = 0
    cells: dict[tuple[str, float], list[int]] = {}
    for g in answers:
        if "error" in g:
            continue
        right = int(g["category"] == truth[g["id"]])
        if g["category"] == "unknown":
            unk_n += 1
            unk_right += right
            cells.setdefault((g["failure_mode"], round(g["confidence"], 3)), []).append(right)
        else:
            named.append((g["confidence"], right))
            named_cat.append((g["category"], g["confidence"], right, g.get("commit", "")))
    knots = pav(named, a.min_bin, a.z)
    offsets = fit_offsets([(c, raw, y) for c, raw, y, _ in named_cat], knots)
    if a.cv:
        per_batch: dict[str, int] = {}
        for g in answers:
            per_batch[g.get("commit", "")] = per_batch.get(g.get("commit", ""), 0) + 1
        cv = [cross_validate(named_cat, a.min_bin, per_batch, forward=f) for f in (False, True)]
        (REPO / "eval" / "results" / "calibration_cv.json").write_text(json.dumps(cv, indent=1) + "\n")
        print(json.dumps(cv, indent=1))
    unknown_by = [{"failure_mode": mode, "raw": raw, "probability": round(min((sum(v) + 1) / (len(v) + 2), UNKNOWN_MAX), 3),
                   "cases": len(v)} for (mode, raw), v in sorted(cells.items()) if len(v) >= a.min_bin]
    analyzers, analyzers_basis = fit_analyzers()
    doc = {
        "fitted_on": f"eval/corpus dev split, {len(named)} named + {unk_n} unknown diagnoses, {basis}, "
                     f"Wilson lower bound z={a.z}; analyzers: {analyzers_basis}",
        "knots": [list(k) for k in knots],
        "unknown": round((unk_right + 1) / (unk_n + 2), 3),
        "unknown_by": unknown_by,
        "analyzers": analyzers,
        "category_offsets": offsets,
    }
    Path(a.out).write_text("# Fitted by eval/calibrate.py on the public corpus's dev split (never test); see "
                           "diag_service/calibrate.\n" + yaml.safe_dump(doc, sort_keys=False))
    print(yaml.safe_dump(doc, sort_keys=False))


if __name__ == "__main__":
    main()
