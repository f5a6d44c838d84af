#!/usr/bin/env python3
"""Leave-one-out evaluation of the incident knowledge base (retrieval of the right category, novelty).

Pool: every seed incident of ``knowledge_base/incidents`` (text = its evidence lines run through the
diagnosis stages, :func:`diag_service.kb.text_for_log`) plus every labelled case of
``../shared/data/incidents_dev`` (text = :func:`diag_service.kb.diagnosis_text` of the diagnosis of
its full log). Each item is embedded once; search is exact cosine over the rest of the pool (the
same ranking as the store's flat FAISS index).

Metrics (:func:`evaluate_kb` returns them as a dict):

- ``recall_at_1`` / ``recall_at_5``: an item is held out, the rest is the knowledge base; a hit when
  the best record (any of the best 5) has the item's category. Given overall, for seeds and for
  the development cases.
- ``vote_accuracy``: the score-weighted category vote of the top 5 (:func:`diag_service.kb.vote_category`)
  equals the item's category.
- ``leave_family_out``: the same recalls when every item of the held-out item's family is removed
  too (the incident kind is new; only other kinds of the same category can help).
- ``novelty_auroc``: how well the best score separates *novel* queries from *known* ones. Known: an
  item whose family still has another member in the pool. Novel: an item whose family has no other
  member, plus, for each family of two or more, each member queried with its whole family removed.
  Score = best cosine similarity (lower = more novel). Also precision/recall of ``is_novel`` at the
  threshold the store calibrates on the seed records alone (:func:`diag_service.kb.calibrate`).

Families of the development cases are labelled by hand below (:data:`DEV_FAMILIES`), against the
seed families, from each case's labelled root cause; a case whose cause has no seed family is
novel. Usage::

    .venv/bin/python eval/kb_eval.py                 # prints the JSON
    .venv/bin/python eval/kb_eval.py --embedder hashing --out /tmp/kb_eval.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEV_DIR = ROOT.parent / "shared" / "data" / "incidents_dev"

#: Root-cause family of each development case (hand-labelled from labels.jsonl; see the module doc).
DEV_FAMILIES: dict[str, str] = {
    "dev-001": "collective-timeout",  # ALLREDUCE hang, uneven per-rank batches at epoch end
    "dev-002": "gpu-uncorrectable-ecc",
    "dev-003": "device-assignment",  # two ranks on one CUDA device (Ray GPU assignment)
    "dev-004": "checkpoint-write-race",  # every rank rotates the same checkpoint dir
    "dev-005": "label-out-of-range",  # bad samples trigger a device-side assert
    "dev-006": "dataloader-worker-oom",
    "dev-007": "collective-mismatch",  # ranks issue different collectives at one SeqNum
    "dev-008": "master-port-in-use",
    "dev-009": "checkpoint-write-race",  # rank 0 mkdir vs other ranks' torch.save
    "dev-010": "nccl-socket-reset",
    "dev-011": "gpu-fell-off-bus",  # GPU inaccessible, workers defunct
    "dev-012": "ib-retry-exceeded",
    "dev-013": "dev-013-slowdown-then-gloo-reset",  # cause never established: no seed family
    "dev-014": "gpu-uncorrectable-ecc",
    "dev-015": "rendezvous-timeout",
    "dev-016": "cuda-oom",  # optimizer-state allocation
}


def _items(incidents_dir: Path | None, dev_dir: Path | None) -> list[dict]:
    from diag_service.kb import analyze_bundle, diagnosis_text, load_records, text_for_log

    items: list[dict] = []
    for r in load_records(incidents_dir):
        items.append({"id": r.id, "source": "seed", "category": r.category.value, "family": r.family or r.id,
                      "text": text_for_log("\n".join(r.evidence)) or r.title})
    if dev_dir is not None and (dev_dir / "labels.jsonl").is_file():
        for line in (dev_dir / "labels.jsonl").read_text().splitlines():
            if not line.strip():
                continue
            case = json.loads(line)
            d = analyze_bundle(dev_dir / "logs" / f"{case['id']}.log")
            items.append({"id": case["id"], "source": "dev", "category": case["category"],
                          "family": DEV_FAMILIES.get(case["id"], case["id"]), "text": diagnosis_text(d)})
    return items


def _auroc(novel_scores: list[float], known_scores: list[float]) -> float | None:
    if not novel_scores or not known_scores:
        return None
    from sklearn.metrics import roc_auc_score

    y = [1] * len(novel_scores) + [0] * len(known_scores)
    s = [-x for x in novel_scores + known_scores]
    return round(float(roc_auc_score(y, s)), 4)


def evaluate_kb(
    incidents_dir: str | Path | None = None,
    dev_dir: str | Path | None = DEV_DIR,
    embedder: object | None = None,
    k: int = 5,
) -> dict:
    """Leave-one-out recall@1/@k of the category and novelty AUROC over the seed KB plus the dev set.

    ``incidents_dir``: seed folder (default ``knowledge_base/incidents``); ``dev_dir``: the
    development set (skipped when absent or ``None``); ``embedder``: a
    :class:`diag_service.kb.Embedder` (default: the knowledge base's own,
    :func:`diag_service.kb.embed.default_embedder`, all-MiniLM-L6-v2 + lexical hashing; ~8 s to load). Returns a JSON-able
    dict: ``n_items``, ``recall_at_1``, ``recall_at_5`` (by subset), ``vote_accuracy``,
    ``leave_family_out``, ``novelty_auroc``, ``novelty_at_threshold``, per-item ``misses``, the
    model name and seconds. Raises :class:`diag_service.kb.KBError` on invalid seed YAML.
    """
    from diag_service.domain import Category, SimilarIncident
    from diag_service.kb import calibrate, vote_category
    from diag_service.kb.embed import default_embedder

    t0 = time.perf_counter()
    emb = embedder if embedder is not None else default_embedder()
    items = _items(Path(incidents_dir) if incidents_dir else None, Path(dev_dir) if dev_dir else None)
    n = len(items)
    vecs = emb.encode([it["text"] for it in items])
    sims = vecs @ vecs.T
    cats = np.array([it["category"] for it in items])
    fams = np.array([it["family"] for it in items])
    src = np.array([it["source"] for it in items])

    def ranked(i: int, exclude: np.ndarray) -> np.ndarray:
        s = sims[i].copy()
        s[exclude] = -np.inf
        order = np.argsort(-s, kind="stable")
        return order[np.isfinite(s[order])][:k]

    per = {"loo": [], "lfo": []}
    novel_scores: list[float] = []
    known_scores: list[float] = []
    novel_lab: list[tuple[float, bool]] = []
    vote_hits = []
    misses = []
    for i in range(n):
        self_only = np.zeros(n, dtype=bool)
        self_only[i] = True
        top = ranked(i, self_only)
        hit1 = bool(len(top) and cats[top[0]] == cats[i])
        hitk = bool(np.any(cats[top] == cats[i]))
        per["loo"].append((src[i], hit1, hitk))
        incs = [SimilarIncident(incident_id=items[j]["id"], title="", score=float(sims[i, j]), category=Category(cats[j]),
                                root_cause="", action="") for j in top]
        vote, _share = vote_category(incs, min_score=-1.0)
        vote_hits.append((src[i], vote is not None and vote.value == cats[i]))
        if not hit1:
            misses.append({"id": items[i]["id"], "category": cats[i], "top1": items[int(top[0])]["id"] if len(top) else None,
                           "top1_category": cats[top[0]] if len(top) else None, "hit_at_k": hitk})
        best = float(sims[i, top[0]]) if len(top) else -1.0
        family_mates = (fams == fams[i]) & ~self_only
        if family_mates.any():
            known_scores.append(best)
            novel_lab.append((best, False))
            fam_out = fams == fams[i]
            top2 = ranked(i, fam_out)
            per["lfo"].append((src[i], bool(len(top2) and cats[top2[0]] == cats[i]), bool(np.any(cats[top2] == cats[i]))))
            b2 = float(sims[i, top2[0]]) if len(top2) else -1.0
            novel_scores.append(b2)
            novel_lab.append((b2, True))
        else:
            novel_scores.append(best)
            novel_lab.append((best, True))
            per["lfo"].append((src[i], hit1, hitk))

    def rates(rows: list[tuple], subset: str | None) -> dict:
        sel = [r for r in rows if subset is None or r[0] == subset]
        if not sel:
            return {"n": 0}
        return {"n": len(sel), "at_1": round(sum(r[1] for r in sel) / len(sel), 4),
                "at_k": round(sum(r[2] for r in sel) / len(sel), 4)}

    loo = {s or "all": rates(per["loo"], s) for s in (None, "seed", "dev")}
    lfo = {s or "all": rates(per["lfo"], s) for s in (None, "seed", "dev")}
    seed_idx = [i for i in range(n) if src[i] == "seed"]
    cal = calibrate(vecs[seed_idx], [items[i]["family"] for i in seed_idx])
    thr = cal.threshold if cal else None
    at_thr = None
    if thr is not None:
        tp = sum(1 for s, nov in novel_lab if nov and s < thr)
        fp = sum(1 for s, nov in novel_lab if not nov and s < thr)
        fn = sum(1 for s, nov in novel_lab if nov and s >= thr)
        at_thr = {"threshold": thr, "precision": round(tp / (tp + fp), 4) if tp + fp else None,
                  "recall": round(tp / (tp + fn), 4) if tp + fn else None,
                  "false_novel_rate": round(fp / max(1, sum(1 for _, nv in novel_lab if not nv)), 4)}
    dev_votes = [(s, h) for s, h in vote_hits if s == "dev"]
    dev_known = [i for i in range(n) if src[i] == "dev" and ((fams == fams[i]).sum() > 1)]
    return {
        "model": emb.name,
        "k": k,
        "n_items": n,
        "n_seed": int((src == "seed").sum()),
        "n_dev": int((src == "dev").sum()),
        "recall_at_1": loo["all"].get("at_1"),
        "recall_at_5": loo["all"].get("at_k"),
        "recall_at_1_dev": loo["dev"].get("at_1"),
        "recall_at_5_dev": loo["dev"].get("at_k"),
        "leave_family_out_recall_at_5": lfo["all"].get("at_k"),
        "recall_by_subset": loo,
        "vote_accuracy": round(sum(h for _, h in vote_hits) / n, 4) if n else None,
        "vote_accuracy_dev": round(sum(h for s, h in dev_votes) / max(1, len(dev_votes)), 4),
        "leave_family_out": lfo,
        "novelty_auroc": _auroc(novel_scores, known_scores),
        "novelty_samples": {"novel": len(novel_scores), "known": len(known_scores)},
        "novelty_at_threshold": at_thr,
        "calibration_on_seed": cal.model_dump() if cal else None,
        "dev_cases_with_seed_family": len(dev_known),
        "misses_at_1": misses,
        "seconds": round(time.perf_counter() - t0, 2),
    }


def evaluate(**kwargs: object) -> dict:
    """What ``eval/scorecard.py`` calls: :func:`evaluate_kb` with its defaults (the KB's embedder, seed KB + dev set)."""
    return evaluate_kb(**kwargs)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", choices=["hybrid", "minilm", "hashing"], default="hybrid",
                    help="hybrid: the knowledge base's default (MiniLM 0.7 + lexical hashing 0.3); minilm: MiniLM alone; "
                         "hashing: lexical alone.")
    ap.add_argument("--out", type=Path, default=None, help="Also write the JSON here.")
    ap.add_argument("--no-dev", action="store_true", help="Seed KB only.")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from diag_service.kb import HashingEmbedder, MiniLMEmbedder
    from diag_service.kb.embed import DEFAULT_LEXICAL_DIM, default_embedder

    emb = {"hybrid": default_embedder, "minilm": MiniLMEmbedder,
           "hashing": lambda: HashingEmbedder(DEFAULT_LEXICAL_DIM)}[args.embedder]()
    res = evaluate_kb(dev_dir=None if args.no_dev else DEV_DIR, embedder=emb)
    text = json.dumps(res, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
