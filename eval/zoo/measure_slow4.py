"""Batch 4: the size of each fail_slow run's slowdown, measured from the run's own logged step times.

For every run a parser turns its log lines into (step, seconds since the first logged point) as the line
itself says (a per-interval ms/step, it/s, tokens/s or samples/sec figure is integrated over its interval;
a timestamp or cumulative elapsed time is used as it is; a tqdm bar's rate is integrated over the steps since
the previous refresh). The factor is the mean time per step in the slowed window (onset to the end of the
run or of the episode) over the mean time per step in the baseline (the first logged point at or after
step 20 up to the onset step); warm-up before step 20 is left out. For periodic stalls the mean includes the
stalled steps, so it is the average cost of the duty cycle.

    .venv/bin/python eval/zoo/measure_slow4.py        # prints one JSON line per run
"""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime
from pathlib import Path

RUNS = Path(__file__).resolve().parent / "runs"


def _tqdm(text: str, total: int, epoch_len: int | None = None) -> list[tuple[int, float]]:
    """(global step, time) from a tqdm bar's refreshes ('n/total [..., R it/s' or 's/it'), rate integrated."""
    pts, t, last_n, base, last_global = [], 0.0, 0, 0, 0
    pat = re.compile(rf"(\d+)/{total} \[[^,\]]*, *([\d.]+)(it/s|s/it)")
    for m in pat.finditer(text.replace("\r", "\n")):
        n, rate = int(m.group(1)), float(m.group(2))
        sec = 1 / rate if m.group(3) == "it/s" else rate
        if epoch_len and n < last_n:  # a new epoch's bar
            base += epoch_len
            last_n = 0
        g = base + n
        if g <= last_global:
            continue
        t += (n - last_n) * sec
        last_n, last_global = n, g
        pts.append((g, t))
    return pts


def _interval(text: str, pat: str, per_step) -> list[tuple[int, float]]:
    """Lines with a step number and a figure for the interval since the previous logged line."""
    pts, t, last = [], 0.0, None
    for m in re.finditer(pat, text):
        step = int(m.group(1))
        if last is not None and step <= last:
            continue
        k = step - (last if last is not None else 0)
        t += k * per_step(m)
        pts.append((step, t))
        last = step
    return pts


def _stamped(text: str, pat: str, fmt: str) -> list[tuple[int, float]]:
    pts, seen = [], set()
    for m in re.finditer(pat, text):
        step = int(m.group(2))
        if step in seen:
            continue
        seen.add(step)
        pts.append((step, datetime.strptime(m.group(1), fmt).timestamp()))
    return pts


def _read(run: str, rel: str = "console.log") -> str:
    return (RUNS / run / rel).read_text(errors="replace")


def _logdir(run: str, rank: int, name: str = "stdout.log") -> str:
    """Rank ``rank``'s file of the launcher's --log-dir tree (``<run_id>/attempt_0/<rank>/<name>``)."""
    return "".join(p.read_text(errors="replace") for p in (RUNS / run / "logs").glob(f"*/attempt_0/{rank}/{name}"))


def series(run: str) -> list[tuple[int, float]]:
    text = _read(run)
    if run == "slow4_hf_tqdm_hog_all":
        return _tqdm(text, 500)
    if run == "slow4_hf_tqdm_hogduty_mild":
        return _tqdm(text, 700)
    if run == "slow4_tqdm_loop_quota":
        return _tqdm(text, 800)
    if run == "slow4_accel_tqdm_uc_gradnorm":
        return _tqdm(text, 125, epoch_len=125)
    if run == "slow4_msstep_quota_4r":
        return _interval(text, r"step (\d+)/\d+ \| loss [\d.]+ \| ([\d.]+) ms/step", lambda m: float(m.group(2)) / 1000)
    if run == "slow4_hf_nobar_stopcont_r1":
        return _stamped(text, r"(\d\d/\d\d/\d{4} \d\d:\d\d:\d\d) - INFO - __main__ - step (\d+): \{'loss'",
                        "%m/%d/%Y %H:%M:%S")
    if run == "slow4_accel_data_r1":
        return _interval(text, r"Epoch 1 Batch (\d+)/\d+ loss=[\d.]+ ([\d.]+) it/s", lambda m: 1 / float(m.group(2)))
    if run == "slow4_ray_stopcont_r0":  # rank 0's lines: Ray prints each worker's lines with its pid prefix
        pid = re.search(r"pid=(\d+)\) world_rank=0,", text).group(1)
        return _interval(text, rf"pid={pid}[^)]*\)(?:\x1b\[0m)? \[iter (\d+)\] time ([\d.]+)s", lambda m: float(m.group(2)) / 10)
    if run == "slow4_logdir_stall5_r2":  # rank 0 waits for rank 2 in every all_reduce, so its step_time shows it
        return _interval(_logdir(run, 0), r"rank0 step (\d+) loss [\d.]+ step_time ([\d.]+)ms",
                         lambda m: float(m.group(2)) / 1000)
    if run == "slow4_logging_pinhog_r1":
        return _stamped(text, r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \[INFO\] \[rank0\] step (\d+) ",
                        "%Y-%m-%d %H:%M:%S,%f")
    if run == "slow4_uc_grow_history":
        return _interval(text, r"rank 0: iter (\d+) loss [\d.]+(?: div [\d.-]+)? time ([\d.]+)s", lambda m: float(m.group(2)))
    if run == "slow4_elapsed_episode_hog":
        return [(int(a), float(b)) for a, b in re.findall(r"it: (\d+) loss: [\d.]+ elapsed: ([\d.]+)s", text)]
    if run == "slow4_tokens_stopcont_r3":
        return _interval(text, r"train \| step +(\d+) \| ([\d,]+) tokens/s",
                         lambda m: 8 * 64 * 4 / float(m.group(2).replace(",", "")))
    if run == "slow4_samples_data_r0":
        return _interval(text, r"\[rank1\] step (\d+) loss [\d.]+ samples/sec ([\d.]+)", lambda m: 32 / float(m.group(2)))
    if run == "slow4_epochbatch_stall10_r1":  # rank 0's line per batch; 3 epochs of 180 batches as global steps
        pts, t, g = [], 0.0, 0
        for m in re.finditer(r"\[rank0\] Epoch (\d+) Batch (\d+)/180 loss=[\d.]+ ([\d.]+) it/s", text):
            g = (int(m.group(1)) - 1) * 180 + int(m.group(2))
            t += 1 / float(m.group(3))
            pts.append((g, t))
        return pts
    if run == "slow4_logdir_episode_stopcont_r1":
        return _interval(_logdir(run, 0, "stderr.log"), r"step (\d+) loss [\d.]+ time/step ([\d.]+)ms",
                         lambda m: float(m.group(2)) / 1000)
    raise KeyError(run)


#: run -> (onset step, end step of the slowed window or None for the run's end)
WINDOWS = {
    "slow4_hf_tqdm_hog_all": (80, None),
    "slow4_msstep_quota_4r": (150, None),
    "slow4_hf_nobar_stopcont_r1": (400, None),
    "slow4_tqdm_loop_quota": ("[00:03<", None),  # the trigger was the bar's first refresh at 3 s elapsed
    "slow4_accel_data_r1": (150, None),
    "slow4_ray_stopcont_r0": (100, None),
    "slow4_logdir_stall5_r2": (100, None),
    "slow4_logging_pinhog_r1": (200, None),
    "slow4_uc_grow_history": (150, None),
    "slow4_elapsed_episode_hog": (150, 400),
    "slow4_tokens_stopcont_r3": (150, None),
    "slow4_samples_data_r0": (250, None),
    "slow4_epochbatch_stall10_r1": (60, None),
    "slow4_hf_tqdm_hogduty_mild": (150, None),
    "slow4_logdir_episode_stopcont_r1": (150, 400),
    "slow4_accel_tqdm_uc_gradnorm": (125, None),
}


def _at(pts: list[tuple[int, float]], step: int) -> tuple[int, float]:
    """The logged point nearest to ``step``."""
    return min(pts, key=lambda p: (abs(p[0] - step), p[0]))


def measure(run: str) -> dict:
    pts = series(run)
    onset, end = WINDOWS[run]
    if isinstance(onset, str):  # a tqdm bar's elapsed time: the step of the first refresh that shows it
        m = re.search(r"(\d+)/\d+ " + re.escape(onset), _read(run).replace("\r", "\n"))
        onset = int(m.group(1))
    start = next(p for p in pts if p[0] >= 20)
    o = _at(pts, onset)
    e = _at(pts, end) if end else pts[-1]
    base = (o[1] - start[1]) / (o[0] - start[0])
    slow = (e[1] - o[1]) / (e[0] - o[0])
    out = {"id": run, "onset_step": o[0], "baseline_ms_per_step": round(1000 * base, 1),
           "slow_ms_per_step": round(1000 * slow, 1), "measured_factor": round(slow / base, 2),
           "baseline_steps": [start[0], o[0]], "slow_steps": [o[0], e[0]]}
    if end:
        after = (pts[-1][1] - e[1]) / (pts[-1][0] - e[0])
        out["after_episode_factor"] = round(after / base, 2)
    if run == "slow4_uc_grow_history":  # grows: also the last 100 steps alone
        a = _at(pts, pts[-1][0] - 100)
        out["last_100_factor"] = round((pts[-1][1] - a[1]) / (pts[-1][0] - a[0]) / base, 2)
    return out


def main(argv: list[str]) -> None:
    for run in argv or list(WINDOWS):
        if not (RUNS / run).exists():
            print(json.dumps({"id": run, "missing": True}))
            continue
        try:
            print(json.dumps(measure(run)))
        except (StopIteration, AttributeError, ValueError, ZeroDivisionError) as e:  # no usable lines
            print(json.dumps({"id": run, "error": repr(e)}))


if __name__ == "__main__":
    main(sys.argv[1:])
