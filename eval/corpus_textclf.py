"""Would a text classifier trained on the corpus's labelled dev logs name the categories the rules leave open?

An experiment on the public corpus's **dev** split only (never test). Features: the log's lines that carry an
error word (:data:`ERROR_WORDS`, the last 200 of them, digits masked), TF-IDF of words and word pairs; model:
multinomial logistic regression (scikit-learn). The rules' answers are each dev case's *first contact*
(``eval/results/corpus_first_contact_dev.jsonl``: the diagnosis by the code of the commit that froze the case,
before any rule was written from it), so the rules are measured as they meet a new log.

Two ways to train, reported side by side:

* ``lso`` (leave one shard out): the classifier for a shard's cases is trained on every other shard, later ones
  included (optimistic: it has seen shards collected after the case);
* ``temporal``: the classifier for the cases frozen at a commit is trained only on cases frozen before it (how it
  would meet a new thread in service).

Per threshold: answers the rules left ``unknown`` that the classifier would name (its top class, not ``unknown``,
at that probability or more), of which right (``gain``) and wrong where ``unknown`` was right (``loss``).

    .venv/bin/python eval/corpus_textclf.py     # ~2 min on 2 cores; writes eval/results/corpus_textclf.json
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "eval" / "corpus"
RESULTS = REPO / "eval" / "results"
FIRST_CONTACT = RESULTS / "corpus_first_contact_dev.jsonl"
ERROR_WORDS = re.compile(
    r"error|exception|fail|fatal|killed|abort|timeout|timed out|denied|not found|no such|unable|cannot|can't|invalid"
    r"|refused|reset|oom|memory|signal|exit|warn|mismatch|unexpected|traceback|segmentation", re.I)
THRESHOLDS = (0.3, 0.4, 0.5, 0.6)


def _text(case_id: str) -> str:
    log = next(CORPUS.glob(f"logs/{case_id}.*"))
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ERROR_WORDS.search(ln)]
    return re.sub(r"\d+", "0", "\n".join(lines[-200:]))


def _fit_predict(train_x: list[str], train_y: list[str], test_x: list[str]) -> tuple[list[str], list[float]]:
    vec = TfidfVectorizer(token_pattern=r"[A-Za-z_][A-Za-z_]+", ngram_range=(1, 2), min_df=2, sublinear_tf=True,
                          max_features=50000)
    model = LogisticRegression(C=3.0, max_iter=2000).fit(vec.fit_transform(train_x), train_y)
    p = model.predict_proba(vec.transform(test_x))
    return [str(model.classes_[i]) for i in p.argmax(axis=1)], [float(v) for v in p.max(axis=1)]


def _score(rules: list[dict[str, Any]], truth: list[str], pred: list[str | None], prob: list[float]) -> list[dict]:
    out = []
    for t in THRESHOLDS:
        gain = loss = changed = 0
        for r, y, p, q in zip(rules, truth, pred, prob, strict=True):
            if p is None or r["category"] != "unknown" or p == "unknown" or q < t:
                continue
            changed += 1
            gain += p == y
            loss += y == "unknown"
        out.append({"threshold": t, "changed": changed, "gain": gain, "loss": loss, "net": gain - loss})
    return out


def main() -> int:
    labels: dict[str, dict[str, Any]] = {}
    shard: dict[str, str] = {}
    for f in sorted((CORPUS / "labels").glob("*.jsonl")):
        for line in f.read_text().splitlines():
            if line.strip():
                d = json.loads(line)
                labels[d["id"]], shard[d["id"]] = d, f.stem
    rules = [json.loads(x) for x in FIRST_CONTACT.read_text().splitlines() if x.strip()]
    ids = [r["id"] for r in rules]
    x = [_text(i) for i in ids]
    y = [labels[i]["category"] for i in ids]
    n = len(ids)
    right = sum(r["category"] == t for r, t in zip(rules, y, strict=True))
    res: dict[str, Any] = {"cases": n, "rules_first_contact_right": right}
    pred: list[str | None] = [None] * n
    prob = [0.0] * n
    for s in sorted(set(shard[i] for i in ids)):
        te = [k for k in range(n) if shard[ids[k]] == s]
        tr = [k for k in range(n) if shard[ids[k]] != s]
        p, q = _fit_predict([x[k] for k in tr], [y[k] for k in tr], [x[k] for k in te])
        for j, k in enumerate(te):
            pred[k], prob[k] = p[j], q[j]
    res["lso_classifier_alone_right"] = sum(p == t for p, t in zip(pred, y, strict=True))
    res["lso"] = _score(rules, y, pred, prob)
    order = subprocess.run(["git", "log", "--reverse", "--format=%H"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    pos = {c[:12]: i for i, c in enumerate(order)}
    when = [pos.get(r["commit"][:12], -1) for r in rules]
    pred = [None] * n
    prob = [0.0] * n
    for c in sorted(set(when))[1:]:
        te = [k for k in range(n) if when[k] == c]
        tr = [k for k in range(n) if when[k] < c]
        p, q = _fit_predict([x[k] for k in tr], [y[k] for k in tr], [x[k] for k in te])
        for j, k in enumerate(te):
            pred[k], prob[k] = p[j], q[j]
    res["temporal_cases"] = sum(p is not None for p in pred)
    res["temporal"] = _score(rules, y, pred, prob)
    (RESULTS / "corpus_textclf.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
