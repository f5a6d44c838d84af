#!/usr/bin/env python3
"""Cold start of the ``diag`` command (issue 21): what an on-call engineer waits for at a terminal.

Times, as fresh processes (``python -m diag_service.cli ...``, so every import is paid), medians of
``--runs`` runs each:

* ``help``: ``diag --help``;
* ``diagnose``: ``diag diagnose EXAMPLE --no-kb --no-llm --json`` (signatures, localisation, recovery);
* ``diagnose_kb``: the same with the knowledge base (``--no-llm``), after one warm-up run that prepares
  the embedding cache (the ONNX export of the model, made once per cache);
* ``diagnose_kb_torch``: the same with ``DIAG_ONNX=0`` (the sentence-transformers path every run paid
  before the export), as the reference of the same machine and moment;
* ``diagnose_llm``: ``diag diagnose EXAMPLE --json`` with the knowledge base and the summary (the
  default), the summary cache file removed before each run so that every run loads the model and
  generates (model file assembled and ONNX export made beforehand: the cost of a new job's summary).
  The kept llama.cpp prompt state (``<cache>/llm/kv``) is another job's, written once beforehand by a
  diagnosis of ``console_node0.log`` alone, so each run reuses only the prompt prefix the two jobs
  share (system prompt, few-shot example), as a new job would.

And the demo (``make demo``: ``diag diagnose EXAMPLE``, the terminal report) twice in a fresh cache
of its own: ``demo_first_run`` (assembles the model file, writes the ONNX export, generates) and
``demo_second_run`` (the same command again: what a user who reruns the demo waits for). For these two
the total the demo prints (``total N ms``) is recorded as well as the wall time.

The cases that run the model (``diagnose_llm``, the demo) depend on the machine's load far more than
the others: on 2 cores llama.cpp uses 1 thread when the 1-minute load average is at least 1.5
(``LlmConfig.resolved_threads``), and shares it. They are marked ``load_sensitive`` and each run
records the 1-minute load average before and after it; the ``load_average`` of the document is
``os.getloadavg()`` at the start and the end of the bench.

The example is the bundled ``examples/torchrun_shape_mismatch_2x2``. Temporary ``DIAG_CACHE_DIR`` and
``DIAG_HOME`` keep the user's own caches out of it.

    .venv/bin/python eval/bench/bench_cold.py [--runs 5] [--only help,diagnose,demo]

Writes ``eval/bench/results/bench_cold.json``: per case the runs (s), the median, the target and
whether it is met, and the ratio of the ONNX retrieval path to the torch one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "torchrun_shape_mismatch_2x2"
#: a job whose prompt differs from EXAMPLE's beyond the fixed prefix (one node's log of the same failure)
OTHER_JOB = EXAMPLE / "console_node0.log"
#: issue 21's targets (seconds): medians of --help (a command that runs no model), diagnose without
#: and with KB, with the summary; the total the demo prints on its second run
TARGETS = {"help": 0.5, "diagnose": 1.0, "diagnose_kb": 3.0, "diagnose_llm": 12.0, "demo_second_run": 15.0}
LOAD_SENSITIVE = ("diagnose_llm", "demo_first_run", "demo_second_run")
_TOTAL = re.compile(r"\btotal\s+(\d+)\s*ms\b")


def _load1() -> float:
    return round(os.getloadavg()[0], 2)


def _run(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds and stdout of one ``diag`` process; exits on a failed command."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "diag_service.cli", *args], env=env, cwd=REPO,
                       capture_output=True, text=True, timeout=900)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"diag {' '.join(args)} failed ({r.returncode}): {r.stderr[-1000:]}")
    return dt, r.stdout


def _printed_total_s(stdout: str) -> float:
    """The ``total N ms`` of the report's stage timings, in seconds."""
    m = _TOTAL.search(stdout)
    if m is None:
        raise SystemExit(f"no 'total N ms' in the demo's report: {stdout[-500:]}")
    return int(m.group(1)) / 1000


def _case(name: str, runs: list[dict[str, float]], key: str = "wall_s") -> dict[str, object]:
    med = statistics.median(r[key] for r in runs)
    target = TARGETS.get(name)
    out: dict[str, object] = {"runs_s": [round(r["wall_s"], 3) for r in runs], "median_s": round(med, 3),
                              "target_s": target, "met": None if target is None else med <= target}
    if name in LOAD_SENSITIVE:
        out["load_sensitive"] = True
        out["load_average_1m_before_after"] = [[r["load_before"], r["load_after"]] for r in runs]
    if key != "wall_s":
        out["printed_total_s"] = [round(r[key], 3) for r in runs]
        out["median_of"] = "printed_total_s"
    return out


def _timed(args: list[str], env: dict[str, str], before: object = None) -> dict[str, float]:
    if callable(before):
        before()
    lb = _load1()
    dt, stdout = _run(args, env)
    row = {"wall_s": dt, "load_before": lb, "load_after": _load1()}
    if "--json" not in args and args and args[0] == "diagnose":
        row["printed_total_s"] = _printed_total_s(stdout)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated cases (help, diagnose, diagnose_kb, "
                    "diagnose_kb_torch, diagnose_llm, demo); default all")
    ap.add_argument("--out", type=Path, default=REPO / "eval" / "bench" / "results" / "bench_cold.json")
    a = ap.parse_args(argv)
    only = {s.strip() for s in a.only.split(",") if s.strip()}
    want = (lambda name: not only or name in only)  # noqa: E731
    base = {**os.environ, "COLUMNS": "200"}  # the demo's report unwrapped, so its total line parses
    out: dict[str, object] = {"example": EXAMPLE.name, "runs": a.runs, "python": sys.version.split()[0],
                              "cpu_count": os.cpu_count(), "load_average": {"start": list(os.getloadavg())},
                              "cases": {}}
    cases: dict[str, object] = out["cases"]  # type: ignore[assignment]
    if want("demo"):
        with tempfile.TemporaryDirectory() as tmp:
            env = {**base, "DIAG_CACHE_DIR": str(Path(tmp) / "cache"), "DIAG_HOME": str(Path(tmp) / "home")}
            demo = ["diagnose", str(EXAMPLE)]
            for name in ("demo_first_run", "demo_second_run"):
                row = _timed(demo, env)
                cases[name] = _case(name, [row], key="printed_total_s")
                print(f"[bench] {name}: printed total {row['printed_total_s']:.2f} s, wall {row['wall_s']:.2f} s "
                      f"(load {row['load_before']} -> {row['load_after']})")
    with tempfile.TemporaryDirectory() as tmp:
        env = {**base, "DIAG_CACHE_DIR": str(Path(tmp) / "cache"), "DIAG_HOME": str(Path(tmp) / "home")}
        summaries = Path(tmp) / "cache" / "llm" / "summaries.sqlite"
        plain: dict[str, tuple[list[str], dict[str, str]]] = {
            "help": (["--help"], env),
            "diagnose": (["diagnose", str(EXAMPLE), "--no-kb", "--no-llm", "--json"], env),
            "diagnose_kb": (["diagnose", str(EXAMPLE), "--no-llm", "--json"], env),
            "diagnose_kb_torch": (["diagnose", str(EXAMPLE), "--no-llm", "--json"], {**env, "DIAG_ONNX": "0"}),
            "diagnose_llm": (["diagnose", str(EXAMPLE), "--json"], env),
        }
        if any(want(k) for k in ("diagnose_kb", "diagnose_kb_torch", "diagnose_llm")):
            warm, _ = _run(plain["diagnose_kb"][0], env)  # builds the KB and writes the embedding export once
            out["first_kb_run_s"] = round(warm, 3)
        if want("diagnose_llm"):
            t0 = time.perf_counter()
            _run(plain["diagnose_llm"][0], env)  # assembles and verifies the model file once
            out["first_llm_run_s"] = round(time.perf_counter() - t0, 3)
            shutil.rmtree(Path(tmp) / "cache" / "llm" / "kv", ignore_errors=True)
            _run(["diagnose", str(OTHER_JOB), "--json"], env)  # the kept prompt state: another job's
        for name, (args, e) in plain.items():
            if not want(name):
                continue
            before = (lambda: summaries.unlink(missing_ok=True)) if name == "diagnose_llm" else None
            rows = [_timed(args, e, before) for _ in range(a.runs)]
            cases[name] = _case(name, rows)
            walls = ", ".join(f"{r['wall_s']:.2f}" for r in rows)
            print(f"[bench] {name}: median {cases[name]['median_s']:.2f} s of {a.runs} "  # type: ignore[index]
                  f"({walls}; load {rows[0]['load_before']} -> {rows[-1]['load_after']})")
    if "diagnose_kb" in cases and "diagnose_kb_torch" in cases:
        out["kb_onnx_over_torch"] = round(cases["diagnose_kb"]["median_s"] / cases["diagnose_kb_torch"]["median_s"], 3)  # type: ignore[index]
    out["load_average"]["end"] = list(os.getloadavg())  # type: ignore[index]
    out["targets_met"] = {k: c["met"] for k, c in cases.items() if c.get("met") is not None}  # type: ignore[union-attr]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"[bench] ONNX/torch retrieval ratio {out.get('kb_onnx_over_torch')}; targets met: {out['targets_met']}; "
          f"load {out['load_average']}; wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
