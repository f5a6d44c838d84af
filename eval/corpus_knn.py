"""Would the corpus's own dev cases, as retrieval records, name categories the signatures leave open?

An experiment on the public corpus's **dev** split only (never test). Each dev log goes through
``diag diagnose --no-llm`` (knowledge base on, as shipped); its knowledge-base text
(:func:`diag_service.kb.text.diagnosis_text`) is embedded with the default embedder. Then, per case,
the nearest *other* dev cases stand in for a store of labelled past incidents:

* ``unknown``: when the diagnosis says ``unknown``, take the neighbours' category (top-1 or a vote of
  the top 3 above a cosine threshold; a neighbour labelled ``unknown`` keeps the answer);
* ``weak``: when the diagnosis names a category below a confidence, let a neighbour above the threshold
  replace it.

Neighbours come from all other dev cases (``loo``) or only from other shards (``lso``: the shards were
collected by different people at different times, closer to how a new thread relates to the corpus).
Reported per variant: answers changed, of which now right (``gain``) and no longer right (``loss``).

    .venv/bin/python eval/corpus_knn.py      # ~1 min on 2 cores; writes eval/results/corpus_knn.json
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "eval"))
sys.path.insert(0, str(REPO / "eval" / "corpus"))

from check import load_labels  # noqa: E402
from corpus_eval import CORPUS, RESULTS, assign  # noqa: E402

THRESHOLDS = (0.6, 0.7, 0.8, 0.85, 0.9, 0.95)


def _one(case_id: str) -> dict[str, Any]:
    from diag_service.kb.text import diagnosis_text
    from diag_service.pipeline import DiagnoseRequest, diagnose

    d = diagnose(DiagnoseRequest(path=str(CORPUS / "logs" / f"{case_id}.log"), kb=True, llm=False, recovery=False))
    return {"id": case_id, "pred": d.category.value, "conf": d.confidence, "text": diagnosis_text(d)}


def _shard(case_id: str) -> str:
    return case_id.rsplit("-", 1)[0]


def neighbours_experiment(rows: list[dict[str, Any]], sims: np.ndarray) -> list[dict[str, Any]]:
    """Per variant: ``{"variant", "neighbours", "threshold", "k" | "max_conf", "changed", "gain", "loss"}``.

    ``rows``: per case ``id``, ``truth``, ``pred``, ``conf``, ``text``; ``sims``: their cosine matrix.
    """
    n = len(rows)
    out: list[dict[str, Any]] = []
    has_text = np.array([bool(r["text"]) for r in rows])
    for nb in ("loo", "lso"):
        masked = sims.copy()
        masked[:, ~has_text] = -9.0
        np.fill_diagonal(masked, -9.0)
        if nb == "lso":
            shards = np.array([_shard(r["id"]) for r in rows])
            masked[shards[:, None] == shards[None, :]] = -9.0
        order = np.argsort(-masked, axis=1)
        for t in THRESHOLDS:
            for k in (1, 3):
                c = Counter()
                for i in range(n):
                    r = rows[i]
                    if r["pred"] != "unknown" or not r["text"] or masked[i, order[i, 0]] < t:
                        continue
                    votes = Counter(rows[j]["truth"] for j in order[i, :k] if masked[i, j] >= t)
                    cat = votes.most_common(1)[0][0]
                    if cat == "unknown":
                        continue
                    c["changed"] += 1
                    c["gain"] += cat == r["truth"]
                    c["loss"] += r["truth"] == "unknown"
                out.append({"variant": "unknown", "neighbours": nb, "threshold": t, "k": k, **c})
            for max_conf in (0.3, 0.5):
                c = Counter()
                for i in range(n):
                    r = rows[i]
                    j = order[i, 0]
                    if r["pred"] == "unknown" or r["conf"] >= max_conf or not r["text"] or masked[i, j] < t:
                        continue
                    cat = rows[j]["truth"]
                    if cat == r["pred"]:
                        continue
                    c["changed"] += 1
                    c["gain"] += cat == r["truth"]
                    c["loss"] += r["pred"] == r["truth"]
                out.append({"variant": "weak", "neighbours": nb, "threshold": t, "max_conf": max_conf, **c})
    for v in out:
        v.setdefault("changed", 0), v.setdefault("gain", 0), v.setdefault("loss", 0)
        v["net"] = v["gain"] - v["loss"]
    return out


def main() -> None:
    from diag_service.kb.embed import default_embedder

    labels = load_labels(CORPUS)
    split = assign(labels)
    truth = {c["id"]: c["category"] for c in labels if split[c["id"]] == "dev"}
    with ProcessPoolExecutor(2) as ex:
        rows = list(ex.map(_one, sorted(truth), chunksize=4))
    for r in rows:
        r["truth"] = truth[r["id"]]
    x = np.asarray(default_embedder().encode([r["text"] or " " for r in rows]), dtype=np.float32)
    res = neighbours_experiment(rows, x @ x.T)
    base = sum(r["pred"] == r["truth"] for r in rows)
    best = max(res, key=lambda v: v["net"])
    doc = {"dev_cases": len(rows), "right_as_shipped": base, "best_variant": best, "variants": res}
    (RESULTS / "corpus_knn.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"dev {base}/{len(rows)} right as shipped; best neighbour variant: {best}")


if __name__ == "__main__":
    main()
