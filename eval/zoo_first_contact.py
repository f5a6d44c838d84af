"""The zoo's dev runs as the rules of each batch's freezing commit answered them (first contact).

    .venv/bin/python eval/zoo_first_contact.py [--refresh]

For every batch of ``eval/zoo/split.json`` (batch 1 at ``labels_commit``, each addition at its own
``labels_commit``, the merge that brought the batch in) the commit is checked out in a temporary worktree and its
pipeline diagnoses the batch's dev runs (``kb=False, llm=False``; each run copied to a folder named ``job`` so its id
cannot reach the diagnosis). Those rules had never seen the runs, so the answers are what a new run meets; the
current code's answers on the same runs are in sample (its rules were written with them in view).

Writes ``eval/results/zoo_first_contact_dev.jsonl``: one object per run, ``{id, category, failure_mode, confidence,
first_failing_rank, category_source, commit, batch}`` (``error`` instead when that code crashed on the run). Batches
already in the file are kept unless ``--refresh``. ``eval/calibrate.py`` fits the analyzers' constant on it. Needs
the full git history (a shallow clone cannot check the commits out).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "eval"))

from calibrate import run_at_commit  # noqa: E402

ZOO = REPO / "eval" / "zoo"
OUT = REPO / "eval" / "results" / "zoo_first_contact_dev.jsonl"

#: Run inside the worktree of the batch's commit: argv = runs folder, comma-separated ids.
_RUNNER = r"""
import json, shutil, sys, tempfile
from pathlib import Path
from diag_service.pipeline import DiagnoseRequest, diagnose
runs, ids = Path(sys.argv[1]), sys.argv[2].split(",")
with tempfile.TemporaryDirectory() as tmp:
    for rid in ids:
        job = Path(tmp) / rid / "job"
        shutil.copytree(runs / rid, job)
        try:
            d = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))
            row = dict(id=rid, category=d.category.value, failure_mode=d.failure_mode.value, confidence=d.confidence,
                       first_failing_rank=d.first_failing_rank, category_source=getattr(d, "category_source", None))
        except Exception as e:  # the old code's crash is an answer too
            row = dict(id=rid, error=repr(e)[:300])
        print(json.dumps(row))
"""


def batches() -> list[tuple[int, str, list[str]]]:
    """``[(batch, commit, dev ids)]`` from ``split.json``, batch 1 first."""
    doc = json.loads((ZOO / "split.json").read_text())
    adds = doc.get("additions", [])
    added = {x for a in adds for x in a["dev"]}
    out = [(1, doc["labels_commit"], [x for x in doc["dev"] if x not in added])]
    out += [(int(a["batch"]), a["labels_commit"], list(a["dev"])) for a in adds]
    return out


def first_contact(refresh: bool = False) -> list[dict[str, Any]]:
    """Every zoo dev run's first-contact answer (module docstring), read from :data:`OUT` and completed with the
    batches not yet in it. Raises ``subprocess.CalledProcessError`` when a commit cannot be checked out."""
    rows: list[dict[str, Any]] = []
    if OUT.exists() and not refresh:
        rows = [json.loads(x) for x in OUT.read_text().splitlines() if x.strip()]
    done = {r["id"] for r in rows}
    for batch, sha, ids in batches():
        ids = [i for i in ids if i not in done]
        if not ids:
            continue
        rows += [{**r, "commit": sha[:12], "batch": batch}
                 for r in run_at_commit(sha, _RUNNER, [str(ZOO / "runs"), ",".join(ids)])]
        print(f"zoo first contact: batch {batch}, {len(ids)} dev runs at {sha[:12]}", file=sys.stderr)
    OUT.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refresh", action="store_true", help="re-run every batch instead of completing the file")
    a = ap.parse_args()
    rows = first_contact(a.refresh)
    labels = {c["id"]: c for c in (json.loads(x) for x in (ZOO / "labels.jsonl").read_text().splitlines() if x.strip())}
    ok = [r for r in rows if "error" not in r]
    right = sum(r["category"] == labels[r["id"]]["category"] for r in ok)
    mode = sum(r["failure_mode"] == labels[r["id"]]["failure_mode"] for r in ok)
    print(f"{len(rows)} dev runs at first contact: category {right} ({right / max(1, len(rows)):.2f}), "
          f"failure mode {mode} ({mode / max(1, len(rows)):.2f}); {len(rows) - len(ok)} crashed")


if __name__ == "__main__":
    main()
