"""Grouping accuracy of our template stage on the Loghub-2k benchmark (16 systems, 2,000 lines each).

Grouping accuracy (GA, Zhu et al., "Tools and Benchmarks for Automated Log Parsing", ICSE 2019): a
line counts as correct when the set of lines in its predicted group is exactly the set of lines in
its ground-truth group; GA is the share of correct lines. Ground truth: ``<S>_2k.log_structured.csv``
(the original annotation the published Drain figure of 0.865 average was measured on).

Two configurations are scored on the ``Content`` column:

- ``deployed``: exactly the miner `diag diagnose` uses (our training-log masks, Drain3 sim 0.4,
  depth 4), to show how our masks behave on logs they were not written for;
- ``benchmark``: Drain3 with the per-dataset ``regex``, ``st`` and ``depth`` of the published Drain
  benchmark (``drain_benchmark_settings.json``), comparable to Drain's published average.
"""

from __future__ import annotations

import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOGHUB = REPO.parent / "shared" / "data" / "loghub"
DRAIN_PUBLISHED_AVG = 0.865  # Zhu et al. ICSE 2019, Table of parsing accuracy, Drain average over 16 systems


def grouping_accuracy(truth: list[str], pred: list[int]) -> float:
    """GA of predicted group ids against ground-truth event ids, both one per line."""
    true_groups: dict[str, set[int]] = defaultdict(set)
    pred_groups: dict[int, set[int]] = defaultdict(set)
    for i, (t, p) in enumerate(zip(truth, pred, strict=True)):
        true_groups[t].add(i)
        pred_groups[p].add(i)
    correct = 0
    for members in pred_groups.values():
        some = next(iter(members))
        if true_groups[truth[some]] == members:
            correct += len(members)
    return correct / len(truth) if truth else 0.0


def _rows(system: str) -> list[dict[str, str]]:
    path = LOGHUB / system / f"{system}_2k.log_structured.csv"
    with path.open(newline="", encoding="utf-8", errors="replace") as fh:
        return list(csv.DictReader(fh))


def evaluate(root: Path = LOGHUB) -> dict:
    """Return ``{"available": bool, "systems": {S: {"deployed": GA, "benchmark": GA}}, "average": {...}}``."""
    sys.path.insert(0, str(REPO))
    from drain3.masking import MaskingInstruction

    from diag_service.templates import make_miner

    settings_file = root / "drain_benchmark_settings.json"
    if not settings_file.exists():
        return {"available": False, "reason": f"{root} not present"}
    settings = json.loads(settings_file.read_text())["datasets"]
    out: dict[str, dict[str, float]] = {}
    for system, cfg in sorted(settings.items()):
        rows = _rows(system)
        truth = [r["EventId"] for r in rows]
        contents = [r["Content"] for r in rows]
        deployed = make_miner()
        pred_a = [deployed.add_log_message(c)["cluster_id"] for c in contents]
        bench = make_miner(sim_th=cfg["st"], depth=cfg["depth"], masks=[])
        bench.config.masking_instructions = [MaskingInstruction(rx, "*") for rx in cfg["regex"]]
        from drain3.masking import LogMasker

        bench.masker = LogMasker(bench.config.masking_instructions, "<", ">")
        pred_b = [bench.add_log_message(c)["cluster_id"] for c in contents]
        out[system] = {
            "deployed": round(grouping_accuracy(truth, pred_a), 4),
            "benchmark": round(grouping_accuracy(truth, pred_b), 4),
            "lines": len(rows),
        }
    avg = {k: round(sum(v[k] for v in out.values()) / len(out), 4) for k in ("deployed", "benchmark")}
    return {"available": True, "systems": out, "average": avg, "drain_published_average": DRAIN_PUBLISHED_AVG}


if __name__ == "__main__":
    print(json.dumps(evaluate(), indent=2))
