"""Clean batch 6: record one clean run on a shared host, with the host's load beside it; cut a run's logs.

    .venv/bin/python eval/zoo/clean6_record.py run ID          # wait for load < 2.5 (<= 2 min), record, sample load
    .venv/bin/python eval/zoo/clean6_record.py cut ID REGEX    # keep each log file up to its first line matching REGEX

``run`` waits up to two minutes for the 1-minute load to fall under 2.5, then runs ``record.py ID`` with a work dir
under ``/tmp/c6_zoo`` and the scenario's port moved into 29850-29890, sampling ``/proc/loadavg`` once a second into
``clean/hostload/<ID>.txt`` (``unix_time load1 load5 load15 running/total``; outside the run folder, so the run holds
only what the user would hand over). ``cut`` makes a run whose logs were copied while it was still going: every log
file of ``clean/runs/<ID>/`` (console, ``--log-dir`` files, ``timing.jsonl``) ends at its first line matching REGEX
(a step line); the ``timing.jsonl`` feed keeps the records that ended before the console's cut step.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ZOO = Path(__file__).resolve().parent
HOSTLOAD = ZOO / "clean" / "hostload"
META = Path("/tmp/c6_meta")
PORT0 = 29850


def _load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def run(run_id: str) -> None:
    sys.path.insert(0, str(ZOO))
    from record import _port
    from scenarios import SCENARIOS

    ids = [s.id for s in SCENARIOS]
    i = ids.index(run_id)
    own = [s for s in ids if s.startswith("clean6_")].index(run_id)
    port = PORT0 + 3 * own if own < 14 else PORT0 + 1 + 3 * (own - 14)  # 29850-29889: 29850 + 3k, then 29851 + 3k
    offset = port - (_port(i) - int(os.environ.get("ZOO_PORT_OFFSET", "0")))
    waited = 0.0
    t = time.time()
    while _load1() >= 2.5 and time.time() - t < 120:
        time.sleep(2)
    waited = time.time() - t
    load_before = _load1()
    HOSTLOAD.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    samples: list[float] = []

    def sample() -> None:
        with open(HOSTLOAD / f"{run_id}.txt", "w") as fh:
            fh.write(f"# {run_id}: /proc/loadavg once a second during the recording (unix_time load1 load5 load15 "
                     f"running/total); waited {waited:.0f} s for load1 < 2.5, load1 {load_before} at the start\n")
            while not stop.is_set():
                la = Path("/proc/loadavg").read_text().split()
                samples.append(float(la[0]))
                fh.write(f"{time.time():.1f} {' '.join(la[:4])}\n")
                fh.flush()
                stop.wait(1.0)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    env = {**os.environ, "ZOO_WORK": "/tmp/c6_zoo", "ZOO_PORT_OFFSET": str(offset), "ZOO_CGROUP_TAG": "_c6_"}
    t0 = time.time()
    out = subprocess.run([sys.executable, str(ZOO / "record.py"), run_id], env=env, capture_output=True, text=True)
    dt = time.time() - t0
    stop.set()
    th.join(3)
    print(out.stdout, out.stderr, end="")
    m = re.search(rf"{run_id}: rc=(-?\d+) ([\d.]+)s load ([\d.]+) -> ([\d.]+)", out.stdout)
    meta = {"id": run_id, "port": port, "waited_s": round(waited), "load_before": load_before,
            "load_max": max(samples) if samples else None, "rc": int(m.group(1)) if m else None,
            "duration_s": float(m.group(2)) if m else round(dt, 1), "load_after": float(m.group(4)) if m else None}
    META.mkdir(exist_ok=True)
    (META / f"{run_id}.json").write_text(json.dumps(meta))
    print(json.dumps(meta))


def cut(run_id: str, regex: str) -> None:
    root = ZOO / "clean" / "runs" / run_id
    pat = re.compile(regex)
    cut_time = None
    for f in sorted(root.rglob("*")):
        if not f.is_file() or f.name == "timing.jsonl":
            continue
        lines = f.read_bytes().decode(errors="surrogateescape").splitlines(keepends=True)
        for n, line in enumerate(lines):
            if pat.search(line):
                f.write_bytes("".join(lines[: n + 1]).encode(errors="surrogateescape"))
                print(f"{f.relative_to(root)}: kept {n + 1} of {len(lines)} lines")
                break
        else:
            print(f"{f.relative_to(root)}: no match, kept whole ({len(lines)} lines)")
    meta = META / f"{run_id}.json"
    for f in root.rglob("timing.jsonl"):
        recs = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        m = re.search(r"(\d+)", regex.split("step")[-1]) if "step" in regex else None
        last = int(m.group(1)) if m else None
        keep = [r for r in recs if last is None or r["step"] <= last]
        cut_time = max((r["end"] for r in keep), default=None)
        f.write_text("".join(json.dumps(r) + "\n" for r in keep))
        print(f"{f.relative_to(root)}: kept {len(keep)} of {len(recs)} records")
    if meta.exists():
        d = json.loads(meta.read_text())
        d["cut"] = regex
        d["cut_time"] = cut_time
        meta.write_text(json.dumps(d))


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2])
    elif sys.argv[1] == "cut":
        cut(sys.argv[2], sys.argv[3])
