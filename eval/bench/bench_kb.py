#!/usr/bin/env python3
"""Benchmark the incident knowledge base at 1,000,000 synthetic records: build, query latency, memory.

What it does:

1. **Generate** ``--n`` records (default 1,000,000): valid record JSON (id, title, category, family,
   evidence, root cause, recovery) and a unit vector each, of the default embedder's dimension
   (``--dim``, 512: MiniLM's 384 + 128 lexical buckets). Vectors are clustered like real
   incidents: ``n / 50`` incident kinds (centres) with per-record noise (``--noise``), fixed seed.
   Vectors are synthetic: embedding 1M texts with MiniLM on 2 CPU cores would take hours and would
   measure the model, not the store. The model's own cost per query is measured separately (step 5).
2. **Insert** them into the SQLite store of a :class:`diag_service.kb.KnowledgeBase` (WAL,
   synchronous=FULL, one transaction per 50,000 rows, :meth:`Store.insert_many`).
3. **Build the index** the way ``diag kb build`` does after loading: read every vector back from
   SQLite, build the approximate IVF index (``n`` is above the 50,000 threshold), write it
   atomically (temporary file, fsync, sha256, rename, manifest).
4. **Query** from a fresh :class:`KnowledgeBase` (the index is loaded and verified from disk; that
   load time is reported): ``--queries`` noisy copies of stored records, one at a time, through
   :meth:`KnowledgeBase.search_vectors` (what a search pays after embedding: the freshness check
   against SQLite plus the FAISS search), and through FAISS alone. p50/p90/p99 in milliseconds.
   Recall@10 of the IVF index against exact search on 200 of the queries.
5. **Model cost** (unless ``--no-model``): the default embedder's encode time of one diagnosis
   text (all-MiniLM-L6-v2 + lexical hashing), and, when ``--dim`` is its dimension, the end-to-end
   encode + search + fetch latency over 50 queries.
6. **Memory**: peak RSS of this process (``ru_maxrss``) after each phase; sizes of the SQLite file
   and the index file.

Writes ``eval/bench/results/bench_kb.json`` (``--out``) with the numbers, the targets (p99 ≤ 10 ms
per query with the approximate index) and the machine. Timings on a shared machine are noisy;
quote medians.

Usage::

    .venv/bin/python eval/bench/bench_kb.py                          # 1,000,000 records
    .venv/bin/python eval/bench/bench_kb.py --n 100000 --out /tmp/bench_kb_100k.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from diag_service.kb.embed import DEFAULT_LEXICAL_DIM  # noqa: E402

#: The default embedder's dimension (all-MiniLM-L6-v2's 384 + the lexical buckets), without loading it.
DEFAULT_DIM = 384 + DEFAULT_LEXICAL_DIM

CATEGORIES = ["gpu_hardware", "network", "gpu_oom", "host_oom", "user_code", "config", "data", "storage", "framework",
              "infrastructure", "unknown"]
LEVELS = ["L0", "L1", "L2", "L3", "L4"]


def rss_mb() -> float:
    """Peak resident set size of this process so far, MiB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def pct(xs: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(xs), q)), 4)


class FixedDim:
    """Stands in for the embedder during build/load: the store checks the name and dimension only."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def encode(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - not used
        raise RuntimeError("synthetic benchmark: vectors are given")


def make_vectors(rng: np.random.Generator, centres: np.ndarray, kinds: np.ndarray, noise: float) -> np.ndarray:
    v = centres[kinds] + noise * rng.standard_normal((len(kinds), centres.shape[1]), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v.astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=DEFAULT_DIM, help="Vector dimension (default: the default embedder's).")
    ap.add_argument("--noise", type=float, default=0.06, help="Per-coordinate noise around each kind's centre.")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--nprobe", type=int, default=32)
    ap.add_argument("--batch", type=int, default=50_000)
    ap.add_argument("--search-threads", type=int, default=None,
                    help="FAISS OpenMP threads during the query phase (default: FAISS's own, = CPUs).")
    ap.add_argument("--workdir", type=Path, default=None, help="Where the store is written (default: a temp dir).")
    ap.add_argument("--keep", action="store_true", help="Keep the store after the run.")
    ap.add_argument("--no-model", action="store_true", help="Skip the MiniLM encode measurements.")
    ap.add_argument("--out", type=Path, default=ROOT / "eval" / "bench" / "results" / "bench_kb.json")
    args = ap.parse_args(argv)

    import faiss

    from diag_service.kb import IndexParams, KBConfig, KnowledgeBase
    from diag_service.kb import index as ix

    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-kb-"))
    work.mkdir(parents=True, exist_ok=True)
    res: dict = {
        "n_records": args.n, "dim": args.dim, "queries": args.queries, "nprobe": args.nprobe,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
                    "faiss": faiss.__version__, "faiss_threads": faiss.omp_get_max_threads(),
                    "load_avg_start": os.getloadavg()},
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "vectors": "synthetic, clustered (see module docstring)",
    }
    rng = np.random.default_rng(20240601)
    n_kinds = max(10, args.n // 50)
    centres = rng.standard_normal((n_kinds, args.dim), dtype=np.float32) / np.sqrt(args.dim) * 1.0
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    noise = args.noise

    # 1-2. generate and insert ------------------------------------------------------------------
    name = f"synthetic-{args.dim}"
    kb = KnowledgeBase(KBConfig(home=work, index=IndexParams(nprobe=args.nprobe)), FixedDim(name, args.dim))
    t0 = time.perf_counter()
    gen_s = 0.0
    all_kinds = np.empty(args.n, dtype=np.int64)
    with kb.store.connect() as db:
        kb.store.set_meta(db, model=name, dim=str(args.dim))
        for start in range(0, args.n, args.batch):
            g0 = time.perf_counter()
            m = min(args.batch, args.n - start)
            kinds = rng.integers(0, n_kinds, m)
            all_kinds[start:start + m] = kinds
            vecs = make_vectors(rng, centres, kinds, noise)
            rows = []
            for j in range(m):
                i = start + j
                k = int(kinds[j])
                cat = CATEGORIES[k % len(CATEGORIES)]
                rid = f"syn-{i:07d}"
                body = json.dumps({
                    "id": rid, "title": f"Synthetic incident {i} of kind {k}", "failure_mode": "fail_stop", "category": cat,
                    "family": f"kind-{k}", "evidence": [f"RuntimeError: synthetic failure kind {k} on rank {i % 4096}"],
                    "root_cause": f"Synthetic root cause of kind {k}.",
                    "recovery": {"level": LEVELS[k % 5], "action": f"Synthetic action for kind {k}."},
                    "references": [], "tags": ["synthetic"],
                })
                rows.append((rid, "synthetic", cat, f"kind-{k}", body, f"synthetic failure kind {k}", vecs[j].tobytes()))
            gen_s += time.perf_counter() - g0
            with kb.store.tx(db):
                kb.store.insert_many(db, rows)
    res["insert_s"] = round(time.perf_counter() - t0 - gen_s, 2)
    res["generate_s"] = round(gen_s, 2)
    res["rss_mb_after_insert"] = rss_mb()

    # 3. build the index from the store ------------------------------------------------------------
    t0 = time.perf_counter()
    ids, vecs = kb.store.vectors(dim=args.dim)
    res["read_vectors_s"] = round(time.perf_counter() - t0, 2)
    t1 = time.perf_counter()
    li = ix.build_index(ids, vecs, name, 0, kb.config.index)
    res["index_build_s"] = round(time.perf_counter() - t1, 2)
    res["index_kind"] = li.kind
    res["nlist"] = int(faiss.extract_index_ivf(li.index).nlist) if li.kind == "ivf" else None
    t1 = time.perf_counter()
    man = ix.save_index(kb.index_dir, li)
    res["index_write_s"] = round(time.perf_counter() - t1, 2)
    res["build_total_s"] = round(time.perf_counter() - t0, 2)
    res["rss_mb_after_build"] = rss_mb()
    res["sqlite_mb"] = round((kb.dir / "kb.sqlite").stat().st_size / 2**20, 1)
    res["index_file_mb"] = round((kb.index_dir / man.file).stat().st_size / 2**20, 1)
    del li

    # 4. query from a fresh instance ----------------------------------------------------------------
    kb2 = KnowledgeBase(KBConfig(home=work, index=IndexParams(nprobe=args.nprobe)), FixedDim(name, args.dim))
    t0 = time.perf_counter()
    kb2.search_vectors(vecs[:1], 5)  # loads + verifies the index
    res["index_load_verify_s"] = round(time.perf_counter() - t0, 2)
    res["rebuilds_on_load"] = kb2.rebuilds
    if args.search_threads:
        faiss.omp_set_num_threads(args.search_threads)
    res["search_threads"] = faiss.omp_get_max_threads()
    pick = rng.integers(0, args.n, args.queries)
    q = vecs[pick] + (noise / 2) * rng.standard_normal((args.queries, args.dim), dtype=np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    store_ms, faiss_ms, store_cpu, faiss_cpu = [], [], [], []
    for i in range(args.queries):
        t, c = time.perf_counter(), time.thread_time()
        kb2.search_vectors(q[i:i + 1], 5)
        store_ms.append((time.perf_counter() - t) * 1000)
        store_cpu.append((time.thread_time() - c) * 1000)
    li2 = kb2._loaded  # noqa: SLF001 - the benchmark measures the bare FAISS call too
    assert li2 is not None
    for i in range(args.queries):
        t, c = time.perf_counter(), time.thread_time()
        li2.search(q[i:i + 1], 5, args.nprobe)
        faiss_ms.append((time.perf_counter() - t) * 1000)
        faiss_cpu.append((time.thread_time() - c) * 1000)
    res["query_ms"] = {"kb_search_vectors": {"p50": pct(store_ms, 50), "p90": pct(store_ms, 90), "p99": pct(store_ms, 99),
                                             "max": round(max(store_ms), 3)},
                       "faiss_only": {"p50": pct(faiss_ms, 50), "p90": pct(faiss_ms, 90), "p99": pct(faiss_ms, 99)}}
    # CPU time of the calling thread: what a query costs whatever the machine's load (with --search-threads 1
    # the whole search runs in that thread; with more, the other threads' share is not counted).
    res["query_cpu_ms"] = {"kb_search_vectors": {"p50": pct(store_cpu, 50), "p99": pct(store_cpu, 99)},
                           "faiss_only": {"p50": pct(faiss_cpu, 50), "p99": pct(faiss_cpu, 99)}}
    # recall of IVF against exact on 200 queries (brute force in numpy, chunked)
    nq = min(200, args.queries)
    _, approx = li2.search(q[:nq], 10, args.nprobe)
    exact = np.zeros((nq, 10), dtype=np.int64)
    best = np.full((nq, 10), -np.inf, dtype=np.float32)
    for start in range(0, args.n, 200_000):
        s = q[:nq] @ vecs[start:start + 200_000].T
        cand_s = np.concatenate([best, s], axis=1)
        cand_i = np.concatenate([exact, ids[start:start + 200_000][None, :].repeat(nq, 0)], axis=1)
        top = np.argpartition(-cand_s, 10, axis=1)[:, :10]
        best = np.take_along_axis(cand_s, top, 1)
        exact = np.take_along_axis(cand_i, top, 1)
    overlap = [len(set(a) & set(e)) / 10 for a, e in zip(approx, exact, strict=True)]
    res["ivf_recall_at_10_vs_exact"] = round(float(np.mean(overlap)), 4)
    # What retrieval needs: a record of the query's own incident kind first. (The exact top 10 are 10 of
    # ~50 near-equidistant members of the kind, so recall@10 against them understates this.)
    qk = all_kinds[pick[:nq]]
    res["ivf_top1_same_kind"] = round(float(np.mean(all_kinds[approx[:, 0] - 1] == qk)), 4)
    res["exact_top1_same_kind"] = round(float(np.mean(all_kinds[exact[np.arange(nq), np.argmax(best, axis=1)] - 1] == qk)), 4)
    res["rss_mb_after_queries"] = rss_mb()

    # 5. the model's share -------------------------------------------------------------------------------
    if not args.no_model:
        from diag_service.kb.embed import default_embedder

        emb = default_embedder()
        t0 = time.perf_counter()
        emb.encode(["warm up"])
        res["model_load_s"] = round(time.perf_counter() - t0, 2)
        text = ("NCCL NET/IB completion error (status 12). transport/net_ib.cc: NCCL WARN NET/IB Got completion from peer "
                "with status= opcode= len= vendor err (Send)")
        enc = []
        for _ in range(50):
            t = time.perf_counter()
            v = emb.encode([text])
            enc.append((time.perf_counter() - t) * 1000)
        res["model_encode_ms"] = {"p50": pct(enc, 50), "p99": pct(enc, 99)}
        # end to end through the store: encode (same dimension as this index) + search + record fetch
        if emb.dim == args.dim:
            e2e = []
            for i in range(50):
                t = time.perf_counter()
                sv, si = kb2.search_vectors(emb.encode([f"{text} {i}"]), 5)
                kb2.store.get_by_rowids([int(x) for x in si[0] if x >= 0])
                e2e.append((time.perf_counter() - t) * 1000)
            res["end_to_end_ms"] = {"p50": pct(e2e, 50), "p99": pct(e2e, 99),
                                    "note": "default embedder encode + search + fetch of 5 records"}
        del v
        res["rss_mb_after_model"] = rss_mb()

    p99 = res["query_ms"]["kb_search_vectors"]["p99"]
    res["targets"] = {"query_p99_ms_max": 10.0, "met": p99 <= 10.0}
    res["machine"]["load_avg_end"] = os.getloadavg()
    if not args.keep and args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    else:
        res["store"] = str(work)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
