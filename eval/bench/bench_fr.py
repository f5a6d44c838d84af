#!/usr/bin/env python3
"""Benchmark the Flight Recorder analysis at scale on dumps generated from a real dump's schema.

Generates ``--ranks`` dumps of ``--entries`` entries each (the entry layout, keys and frames of
``tests/fixtures/flight_recorder/two_faulty/nccl_trace_rank_0``, a real torch 2.13 gloo dump; groups:
the world, tensor-parallel groups of 8 and data-parallel groups across them, every collective completed
except the last, which one rank of one tensor-parallel group never joins), writes them as pickles in a
temporary folder, then times in a child process (wall time, peak RSS from ``os.wait4``) reading and
analysing them with :func:`diag_service.hang.flight.analyze_fr_folder`. Reference: ``pickle.loads`` of
the same bytes in the same child (the floor any reader of the pickle form pays).

    .venv/bin/python eval/bench/bench_fr.py --ranks 1024 --entries 2000

Writes ``eval/bench/results/bench_fr.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
FIX = REPO / "tests" / "fixtures" / "flight_recorder" / "two_faulty" / "nccl_trace_rank_0"
OUT = REPO / "eval" / "bench" / "results" / "bench_fr.json"


def generate(folder: Path, ranks: int, entries: int, culprit: int) -> None:
    base = pickle.loads(FIX.read_bytes())  # our own fixture, written by torch
    proto = base["entries"][0]
    tp = 8
    for r in range(ranks):
        groups = [("0", "default_pg"), (str(1 + r // tp), "tp"), (str(1 + ranks // tp + r % tp), "dp")]
        ents = []
        seq = {g[0]: 0 for g in groups}
        n = entries if r != culprit else entries - 1
        for i in range(n):
            g = groups[i % 3]
            seq[g[0]] += 1
            done = i < entries - 3
            ents.append({**proto, "record_id": i, "pg_id": i % 3, "process_group": g, "collective_seq_id": seq[g[0]],
                         "op_id": i, "retired": done, "state": "completed" if done else "scheduled",
                         "time_created_ns": proto["time_created_ns"] + i * 1000})
        status = {str(k): {"last_enqueued_collective": seq[g[0]], "last_started_collective": -1,
                           "last_completed_collective": seq[g[0]] - (0 if k == 0 and r == culprit else 1) if r != culprit
                           else seq[g[0]]} for k, g in enumerate(groups)}
        doc = {**base, "pg_status": status, "entries": ents}
        (folder / f"nccl_trace_rank_{r}").write_bytes(pickle.dumps(doc))


def child(folder: str, mode: str) -> None:
    t0 = time.perf_counter()
    if mode == "pickle":
        for p in sorted(Path(folder).iterdir()):
            pickle.loads(p.read_bytes())
        out: dict = {}
    else:
        from diag_service.hang.flight import analyze_fr_folder

        rep = analyze_fr_folder(folder)
        assert rep is not None
        out = {"culprits": [c.rank for c in rep.culprits][:4], "stalls": len(rep.stalls)}
    print(json.dumps({"seconds": round(time.perf_counter() - t0, 3), **out}))


def run_child(folder: Path, mode: str) -> dict:
    proc = subprocess.Popen([sys.executable, __file__, "--_child", str(folder), mode], stdout=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    assert proc.stdout is not None
    res = json.loads(proc.stdout.read())
    res["peak_rss_mb"] = round(usage.ru_maxrss / 1024, 1)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--entries", type=int, default=2000)
    ap.add_argument("--_child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._child:
        child(*args._child)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        generate(folder, args.ranks, args.entries, culprit=args.ranks // 2 + 3)
        gen_s = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in folder.iterdir())
        ref = run_child(folder, "pickle")
        ours = run_child(folder, "analyze")
    res = {"ranks": args.ranks, "entries": args.entries, "bytes": size, "generate_s": round(gen_s, 2),
           "pickle_loads": ref, "analyze": ours, "ratio_to_pickle_loads": round(ours["seconds"] / max(ref["seconds"], 1e-9), 2),
           "expected_culprit": args.ranks // 2 + 3}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
