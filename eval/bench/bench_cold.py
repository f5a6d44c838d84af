#!/usr/bin/env python3
"""Cold start of the ``diag`` command (issue 21): what an on-call engineer waits for at a terminal.

Times, as fresh processes (``python -m diag_service.cli ...``, so every import is paid), medians of
``--runs`` runs each:

* ``help``: ``diag --help``;
* ``diagnose``: ``diag diagnose EXAMPLE --no-kb --no-llm --json`` (signatures, localisation, recovery);
* ``diagnose_kb``: the same with the knowledge base (``--no-llm``), after one warm-up run that prepares
  the embedding cache (the ONNX export of the model, made once per cache);
* ``diagnose_kb_torch``: the same with ``DIAG_ONNX=0`` (the sentence-transformers path every run paid
  before the export), as the reference of the same machine and moment.

The summary model is not timed here (``eval/bench/bench_llm.py``). The example is the bundled
``examples/torchrun_shape_mismatch_2x2``. A temporary ``DIAG_CACHE_DIR`` and ``DIAG_HOME`` keep the
user's own caches out of it.

    .venv/bin/python eval/bench/bench_cold.py [--runs 5]

Writes ``eval/bench/results/bench_cold.json``: per case the runs (s), the median, and the ratio of the
ONNX retrieval path to the torch one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "torchrun_shape_mismatch_2x2"
#: issue 21's targets (seconds, medians): --help (a command that runs no model), diagnose without and with KB
TARGETS = {"help": 0.5, "diagnose": 1.0, "diagnose_kb": 3.0}


def _run(args: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "diag_service.cli", *args], env=env, cwd=REPO,
                       capture_output=True, text=True, timeout=600)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"diag {' '.join(args)} failed ({r.returncode}): {r.stderr[-1000:]}")
    return dt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=REPO / "eval" / "bench" / "results" / "bench_cold.json")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DIAG_CACHE_DIR": str(Path(tmp) / "cache"), "DIAG_HOME": str(Path(tmp) / "home")}
        cases = {
            "help": (["--help"], env),
            "diagnose": (["diagnose", str(EXAMPLE), "--no-kb", "--no-llm", "--json"], env),
            "diagnose_kb": (["diagnose", str(EXAMPLE), "--no-llm", "--json"], env),
            "diagnose_kb_torch": (["diagnose", str(EXAMPLE), "--no-llm", "--json"], {**env, "DIAG_ONNX": "0"}),
        }
        warm = _run(cases["diagnose_kb"][0], env)  # builds the KB and writes the embedding export once
        out: dict[str, object] = {"example": EXAMPLE.name, "runs": a.runs, "first_kb_run_s": round(warm, 3),
                                  "python": sys.version.split()[0], "cases": {}}
        for name, (args, e) in cases.items():
            times = [_run(args, e) for _ in range(a.runs)]
            med = statistics.median(times)
            out["cases"][name] = {"runs_s": [round(t, 3) for t in times], "median_s": round(med, 3),  # type: ignore[index]
                                  "target_s": TARGETS.get(name)}
            print(f"[bench] {name}: median {med:.2f} s of {a.runs} ({', '.join(f'{t:.2f}' for t in times)})")
        c = out["cases"]  # type: ignore[assignment]
        out["kb_onnx_over_torch"] = round(c["diagnose_kb"]["median_s"] / c["diagnose_kb_torch"]["median_s"], 3)
        out["targets_met"] = all(c[k]["median_s"] <= v for k, v in TARGETS.items())
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"[bench] ONNX/torch retrieval ratio {out['kb_onnx_over_torch']}; targets met: {out['targets_met']}; "
          f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
