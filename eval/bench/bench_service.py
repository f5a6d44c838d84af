#!/usr/bin/env python3
"""Load numbers of ``diag serve``: p50/p95 latency of diagnosing a 10 MB bundle at 1, 4 and 16 concurrent
clients, and the throughput. Loopback only, bounded in requests and time; it stops by itself.

What it does:

1. **Generates** a 10 MB log bundle with ``bench_diagnose.py``'s generator (64 ranks = 8 nodes x 8
   GPUs of torchrun console logs with one CUDA OOM on rank 38 and the NCCL watchdog cascade on the
   other nodes), and packs it as ``.tar.gz`` (what a job controller uploads).
2. **Starts** ``diag serve`` (the ``serve`` command function) as a subprocess on 127.0.0.1 with a
   fresh data folder: process workers (``--workers``, default 2: one per core here), the default
   limits, synchronous answers for bundles this size.
3. **Measures**, per concurrency level (``--levels``, default 1 4 16): ``--requests`` uploads per
   client thread (default 3), each ``POST /v1/diagnoses`` multipart, timed from the first byte sent
   to the diagnosis received (a 503 -- too many uploads at once -- is retried after its Retry-After,
   within the same timing, as a well-behaved client does). Reports p50, p95, max, throughput
   (diagnoses/s over the level's wall time), the 503 retries, and checks every answer found the OOM
   on rank 38.
4. **Reference**: the same bundle through ``diagnose()`` in-process (median of 3), so the service's
   overhead (upload, inspection, queue, JSON) is visible.
5. **Writes** ``eval/bench/results/bench_service.json`` (``--out``).

Usage::

    .venv/bin/python eval/bench/bench_service.py
    .venv/bin/python eval/bench/bench_service.py --levels 1 4 --requests 2 --size-mb 5 --out /tmp/s.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))


def make_bundle(dest: Path, size_mb: float) -> tuple[bytes, dict[str, Any], int]:
    """Generate the logs under ``dest`` and return them as .tar.gz bytes, the generator's stats and the fail rank."""
    import bench_diagnose as bd

    spec = bd.BundleSpec(ranks=64, gpus_per_node=8, size_bytes=int(size_mb * 1e6), fail_rank=38, seed=7,
                         start=dt.datetime(2024, 11, 14, 9, 0, 0), layout="console")
    stats = bd.generate_bundle(spec, dest)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tf:
        tf.add(dest, arcname="job-bench")
    return buf.getvalue(), stats, spec.fail_rank


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(data: Path, port: int, workers: int, kb: bool) -> subprocess.Popen[bytes]:
    cfg = data / "settings.json"
    cfg.write_text(json.dumps({
        "data_dir": str(data / "service"), "worker_mode": "process", "workers": workers, "queue_max": 64,
        "kb_enabled": kb, "sync_max_bytes": 64 << 20, "sync_wait_s": 600, "request_timeout_s": 900,
        "rate_per_minute": 1e6, "rate_burst": 100000, "recovery_history": False,
    }))
    code = ("from pathlib import Path\nfrom diag_service.service.cli import serve\n"
            f"serve(host='127.0.0.1', port={port}, config=Path({str(cfg)!r}), log_level='warning')\n")
    log = open(data / "server.log", "ab")  # noqa: SIM115 - kept open for the child's lifetime
    return subprocess.Popen([sys.executable, "-c", code], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_ready(url: str, timeout: float) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                return time.monotonic() - t0
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"server not ready within {timeout:.0f} s")


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def run_level(url: str, data: bytes, clients: int, per_client: int, fail_rank: int, deadline: float) -> dict[str, Any]:
    lat: list[float] = []
    codes: dict[str, int] = {}
    wrong = 0
    retries = [0]
    lock = threading.Lock()

    def client() -> None:
        nonlocal wrong
        with httpx.Client(base_url=url, timeout=900) as c:
            for i in range(per_client):
                if time.monotonic() > deadline:
                    return
                t0 = time.perf_counter()
                for _attempt in range(50):  # a well-behaved client: 503 -> wait Retry-After, try again
                    r = c.post("/v1/diagnoses", files={"bundle": ("job-bench.tar.gz", data)}, data={"job_id": f"bench-{i}"})
                    if r.status_code != 503 or time.monotonic() > deadline:
                        break
                    with lock:
                        retries[0] += 1
                    time.sleep(min(float(r.headers.get("retry-after", "1")), 2.0))
                dt_s = time.perf_counter() - t0
                with lock:
                    codes[str(r.status_code)] = codes.get(str(r.status_code), 0) + 1
                    if r.status_code == 200:
                        lat.append(dt_s)
                        d = r.json()["diagnosis"]
                        if d["category"] != "gpu_oom" or d["first_failing_rank"] != fail_rank:
                            wrong += 1

    threads = [threading.Thread(target=client) for _ in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {"clients": clients, "requests": sum(codes.values()), "status_codes": codes, "retries_after_503": retries[0],
            "wrong_diagnoses": wrong,
            "p50_s": round(pct(lat, 0.5), 3), "p95_s": round(pct(lat, 0.95), 3),
            "max_s": round(max(lat, default=float("nan")), 3),
            "throughput_per_s": round(len(lat) / wall, 3) if wall else None, "wall_s": round(wall, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--requests", type=int, default=3, help="uploads per client thread at each level")
    ap.add_argument("--size-mb", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--kb", action="store_true", help="with the knowledge base (MiniLM; loads once per worker)")
    ap.add_argument("--max-seconds", type=float, default=900, help="stop starting requests after this long")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "bench_service.json")
    args = ap.parse_args()
    if any(c < 1 or c > 64 for c in args.levels) or not 1 <= args.requests <= 20:
        raise SystemExit("levels must be within 1..64 and --requests within 1..20")

    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp_s:
        tmp = Path(tmp_s)
        t0 = time.perf_counter()
        data, gen, fail_rank = make_bundle(tmp / "logs", args.size_mb)
        print(f"bundle: {gen['bytes'] / 1e6:.1f} MB of logs in {gen['files']} files, {len(data) / 1e6:.2f} MB as .tar.gz "
              f"({time.perf_counter() - t0:.1f} s to generate)")
        from diag_service.pipeline import DiagnoseRequest, diagnose

        inproc = []
        for _ in range(3):
            t1 = time.perf_counter()
            d = diagnose(DiagnoseRequest(path=str(tmp / "logs"), recovery=True))
            inproc.append(time.perf_counter() - t1)
        assert d.first_failing_rank == fail_rank, d.root_cause.summary
        print(f"in-process diagnose(): median {statistics.median(inproc):.3f} s")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        (tmp / "srv").mkdir()
        proc = start_server(tmp / "srv", port, args.workers, args.kb)
        try:
            ready_s = wait_ready(url, 300)
            print(f"server ready in {ready_s:.1f} s ({args.workers} process workers)")
            deadline = time.monotonic() + args.max_seconds
            run_level(url, data, 1, 1, fail_rank, deadline)  # warm the connection path
            levels = []
            for c in args.levels:
                res = run_level(url, data, c, args.requests, fail_rank, deadline)
                levels.append(res)
                print(f"{c:3d} clients: {res['requests']:3d} requests  p50 {res['p50_s']:.3f} s  p95 {res['p95_s']:.3f} s  "
                      f"max {res['max_s']:.3f} s  {res['throughput_per_s']:.2f} diagnoses/s  codes {res['status_codes']}"
                      f"  503 retries {res['retries_after_503']}  wrong {res['wrong_diagnoses']}")
            metrics = httpx.get(url + "/metrics", timeout=10).text
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(10)
    stage_sums = {}
    for line in metrics.splitlines():
        if line.startswith("diag_stage_duration_seconds_sum"):
            stage = line.split('stage="')[1].split('"')[0]
            stage_sums[stage] = float(line.rsplit(" ", 1)[1])
    out = {
        "what": "POST /v1/diagnoses (multipart .tar.gz) on 127.0.0.1, answered synchronously with the diagnosis",
        "bundle": {"log_bytes": gen["bytes"], "files": gen["files"], "lines": gen["lines"], "upload_bytes": len(data),
                   "ranks": 64, "fail_rank": fail_rank},
        "server": {"workers": args.workers, "worker_mode": "process", "kb": args.kb, "ready_s": round(ready_s, 2)},
        "in_process_diagnose_s": {"median": round(statistics.median(inproc), 3), "runs": [round(x, 3) for x in inproc]},
        "levels": levels,
        "stage_seconds_total": stage_sums,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
