"""The issue-18 cells of eval/slow_power.py (same draws for a given --seed) for the diag_service on PYTHONPATH.

Usage: PYTHONPATH=<tree> .venv/bin/python eval/slow_power_cells.py --repo <tree> --fa --lownoise --out OUT.json
(helper h2, 2026-12-04: before = main exported to a folder, after = this branch; dev feeds only, test feeds
for false alarms).

``--split test`` injects into the held-back test feeds instead of the dev ones (a measurement, never a
place to set a constant; record each look in ``eval/slow_feeds/split.json``'s ``test_looks``).
Groups ``rank18`` (one rank's compute 1.3x and 2x every step, 2x on 1 step in 5 and in 10), ``comm``
(one rank's collectives late, 1.3x and 2x every step) and ``node13`` (one node's compute 1.3x) are
issue 18's rank-level cells alone."""
import argparse
import json
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--repo", required=True)
ap.add_argument("--trials", type=int, default=24)
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--groups", nargs="+", default=["rank", "node", "job"])
ap.add_argument("--tags", nargs="+", default=["quiet", "loaded"])
ap.add_argument("--fa", action="store_true")
ap.add_argument("--lownoise", action="store_true")
ap.add_argument("--split", choices=("dev", "test"), default="dev",
                help="feeds the slowdowns are injected into (test: held back; measure, never tune)")
ap.add_argument("--workers", type=int, default=2, help="trial processes (1 on a shared host)")
ap.add_argument("--out", required=True)
a = ap.parse_args()
sys.path.insert(0, a.repo + "/eval")
import slow_power as sp  # noqa: E402

import diag_service  # noqa: E402

print("diag_service:", diag_service.__file__, file=sys.stderr)
GROUPS = {"rank": (("rank_compute",), (1.2, 1.3, 2.0), (1, 5, 10)),
          "node": (("node_compute",), (1.3, 2.0), (1, 5)),
          "job": (("job_compute", "job_comm"), (1.2, 1.3), (1,)),
          "rank18": [(("rank_compute",), (1.3, 2.0), (1,)), (("rank_compute",), (2.0,), (5, 10))],
          "comm": (("rank_comm",), (1.3, 2.0), (1,)),
          "node13": (("node_compute",), (1.3,), (1,))}
BOUND = {("rank_compute", 1): 20, ("rank_compute", 5): 60, ("rank_compute", 10): 60, ("node_compute", 1): 20,
         ("node_compute", 5): 60, ("job_compute", 1): 30, ("job_comm", 1): 30, ("rank_comm", 1): 20}
split = sp.load_split()
out = {"diag_service": diag_service.__file__, "trials": a.trials, "seed": a.seed, "split": a.split, "cells": {}}
t0 = time.time()
def summarise(cells, tag):
    for c in cells:
        b = BOUND.get((c["kind"], c["duty"]))
        c["bound"] = b
        c["p_within"] = round(sum(1 for d in c["delays"] if d <= b) / c["trials"], 3) if b else None
        key = f"{tag}:{c['kind']}:{c['factor']}:1in{c['duty']}"
        out["cells"][key] = {k: c[k] for k in ("p_detect", "p_within", "bound", "median_delay", "p90_delay",
                                                 "kind_right", "early_alarms", "wrong_names", "trials")}
        print(f"{key:36s} P={c['p_detect']:.3f} P<={b}={c['p_within']} med={c['median_delay']} "
              f"p90={c['p90_delay']} early={c['early_alarms']} wrong={c['wrong_names']}", flush=True)
for tag in a.tags:
    names = [n for n in split[a.split] if n.startswith(tag + "-")]
    for g in a.groups:
        for kinds, factors, duties in GROUPS[g] if isinstance(GROUPS[g], list) else [GROUPS[g]]:
            summarise(sp.grid(names, a.trials, a.seed, kinds=kinds, factors=factors, duties=duties,
                              workers=a.workers),
                      f"{a.split}_lab_{tag}" if a.split != "dev" else "lab_" + tag)
if a.lownoise:
    for tag in ("synth1", "synth3"):
        cells = sp.grid([f"{tag}-{i}" for i in range(4)], max(4, a.trials // 2), a.seed + 1,
                        kinds=("job_compute", "rank_compute"), factors=(1.05, 1.1, 1.2, 1.3), duties=(1,))
        for c in cells:
            c["delays"] = c["delays"]
            key = f"{tag}:{c['kind']}:{c['factor']}:1in{c['duty']}"
            w3 = round(sum(1 for d in c["delays"] if d <= 3) / c["trials"], 3)
            out["cells"][key] = {"p_detect": c["p_detect"], "p_within3": w3, "median_delay": c["median_delay"],
                                 "p90_delay": c["p90_delay"], "early_alarms": c["early_alarms"], "trials": c["trials"]}
            print(f"{key:36s} P={c['p_detect']:.3f} P<=3={w3} med={c['median_delay']} "
                  f"p90={c['p90_delay']} early={c['early_alarms']}", flush=True)
if a.fa:
    for label, names in (("test_quiet", [n for n in split["test"] if n.startswith("quiet-")]),
                         ("test_loaded", [n for n in split["test"] if n.startswith("loaded-")]),
                         ("dev_quiet", [n for n in split["dev"] if n.startswith("quiet-")]),
                         ("dev_loaded", [n for n in split["dev"] if n.startswith("loaded-")])):
        fa = sp.false_alarms(names)
        out["fa_" + label] = fa
        print(label, {k: v for k, v in fa.items() if k != "feeds"}, flush=True)
out["seconds"] = round(time.time() - t0, 1)
with open(a.out, "w") as fh:
    json.dump(out, fh, indent=1)
print("seconds", out["seconds"], file=sys.stderr)
