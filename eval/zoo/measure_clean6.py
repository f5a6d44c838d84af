"""Clean batch 6: each run's step pace and benign pauses, measured from the run's own output (as kept, so a cut run
is measured up to its cut).

    .venv/bin/python eval/zoo/measure_clean6.py [ID ...]     # prints one JSON object per run

For every run a reader of its own lines gives intervals ``(first_step, last_step, seconds)`` of plain training and the
pauses ``(name, seconds)``. The step time is an interval's seconds over its steps; ``pace_drift`` is the median step
time of the intervals in the last quarter of the kept steps over that of the first quarter, with every interval that
holds a pause left out (a pause's own record, or the logged interval its time falls into). A pause's length in steps'
time is its seconds over the run's median step time. Where the output states a pause's time (a `saved in 0.11s`, an
`eval_time`, a timing record of kind checkpoint/eval) that is used; where it does not, the excess of the interval that
holds it over the local pace (the median of up to three pause-free intervals on each side).
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

RUNS = Path(__file__).resolve().parent / "clean" / "runs"


def _text(run: str, name: str = "console.log") -> str:
    return (RUNS / run / name).read_text(errors="replace")


def _feed(run: str, rank: int = 0) -> list[dict]:
    recs = [json.loads(x) for x in (RUNS / run / "logs" / "timing.jsonl").read_text().splitlines() if x.strip()]
    return [r for r in recs if r["rank"] == rank]


def _intervals_from_lines(text: str, rx: str, every: int, per_step) -> list[tuple[int, int, float]]:
    """Lines that each report an interval ending at step N with a per-step time (seconds)."""
    out = []
    for m in re.finditer(rx, text):
        n = int(m.group("step"))
        out.append((n - every + 1, n, per_step(m) * every))
    return out


def _excess(iv: list[tuple[int, int, float]], steps: list[int], med: float) -> list[tuple[int, float]]:
    """(step, seconds beyond the local pace of the interval holding the time after that step), for the pause steps
    the kept output reaches."""
    holding = {j for j, (a, b, _) in enumerate(iv) for s in steps if a <= s + 1 <= b or (s == 0 and a == 1)}
    out = []
    for s in steps:
        for j, (a, b, sec) in enumerate(iv):
            if a <= s + 1 <= b or (s == 0 and a == 1):
                # the local pace: up to 3 intervals on each side that hold no pause (the run's median if none)
                near = [x[2] / (x[1] - x[0] + 1) for k, x in enumerate(iv) if 0 < abs(k - j) <= 3 and k not in holding]
                base = statistics.median(near) if near else med
                out.append((s, max(0.0, sec - (b - a + 1) * base)))
                break
    return out


def ckpt_every_rank(run):
    t = _text(run)
    iv = _intervals_from_lines(t, r"\[rank0\] step (?P<step>\d+)/\d+ loss \S+ \| (?P<ms>[\d.]+) ms/step", 20,
                               lambda m: float(m.group("ms")) / 1000)
    saves = [float(x) for x in re.findall(r"checkpoint saved \([\d.]+ MB, ([\d.]+)s\)", t)]
    return iv, [150, 300, 450, 600], [("checkpoint (gzip torch.save, rank 0, barrier)", s) for s in saves]


def tee_dcp_timing(run):
    recs = _feed(run)
    iv = [(r["step"], r["step"], r["end"] - r["start"]) for r in recs if r.get("kind") == "train"]
    ck = [r["end"] - r["start"] for r in recs if r.get("kind") == "checkpoint"]
    return iv, [], [("dcp.save (every rank, own records kind=checkpoint)", s) for s in ck]


def logdir_eval_cut(run):
    f = sorted((RUNS / run / "logs").rglob("0/stdout.log"))[0]
    t = f.read_text()
    iv = _intervals_from_lines(t, r"rank 0 step (?P<step>\d+) loss \S+ time/step (?P<s>[\d.]+)s", 10,
                               lambda m: float(m.group("s")))
    ev = [float(x) for x in re.findall(r"rank 0 eval step \d+ acc \S+ eval_time ([\d.]+)s", t)]
    return iv, [], [("validation (12 batches, all_reduce)", s) for s in ev]


def pyrun_megatron_warmup(run):
    t = _text(run)
    iv = _intervals_from_lines(t, r"iteration\s+(?P<step>\d+)/\s*\d+ \|.*?elapsed time per iteration \(ms\): "
                                  r"(?P<ms>[\d.]+)", 10, lambda m: float(m.group("ms")) / 1000)
    med = statistics.median(sec / (b - a + 1) for a, b, sec in iv)
    ex = _excess(iv, [0, 250, 500, 750], med)
    return iv, [0, 250, 500, 750], [("first interval (sample index built on first access)" if s == 0 else
                                     f"checkpoint at iteration {s} (in the next interval)", e) for s, e in ex]


def spawn_loader_epochs(run):
    recs = _feed(run)
    iv = [(r["step"], r["step"], r["end"] - r["start"]) for r in recs]
    firsts = [r for i, r in enumerate(recs) if i % 100 == 0]
    iv = [x for x in iv if (x[0] - 1) % 100 != 0]
    return iv, [], [("first step of an epoch (DataLoader workers started, sampler reshuffled; data_s)", r["data_s"])
                    for r in firsts]


def accel_grad_accum(run):
    t = _text(run)
    rows = re.findall(r"epoch (\d+) batch (\d+)/(\d+) loss \S+ sync=(True|False) ([\d.]+) ms", t)
    iv, sync = [], []
    for e, b, n, s, ms in rows:
        step = int(e) * int(n) + int(b)
        if s == "True":
            sync.append(float(ms) / 1000)
        iv.append((step, step, float(ms) / 1000))
    saves = [float(x) for x in re.findall(r"state saved to \S+ \(([\d.]+)s\)", t)]
    nos = [x[2] for x in iv if (x[0] % 4) != 0]
    pauses = [("save_state at the epoch's end", s) for s in saves]
    pauses.append(("accumulation boundary (sync micro-batch) median", statistics.median(sync)))
    pauses.append(("non-sync micro-batch median", statistics.median(nos)))
    return iv, [], pauses


def twonode_rank0_eval(run):
    t = _text(run, "console_node0.log")
    iv = _intervals_from_lines(t, r"rank0\] step (?P<step>\d+)/\d+ recon_loss \S+ (?P<ms>[\d.]+)ms/step", 50,
                               lambda m: float(m.group("ms")) / 1000)
    ev = [float(x) for x in re.findall(r"rank0\] eval step \d+: .*?\(([\d.]+)s\)", t)]
    return iv, [], [("rank-0-only evaluation (8 batches; rank 1 in a barrier)", s) for s in ev]


def ray_epoch_eval_report(run):
    t = _text(run)
    seen, iv = set(), []
    for m in re.finditer(r"epoch (\d) iter (\d+)/150 loss (\S+) ([\d.]+) samples/s", t):
        key = m.group(0)
        if key in seen:  # Ray prints each worker line twice on this host
            continue
        seen.add(key)
        step = int(m.group(1)) * 150 + int(m.group(2))
        iv.append((step - 24, step, 25 * 64 / float(m.group(4))))
    ev = []
    for m in re.finditer(r"epoch (\d) val_acc \S+ \(validation ([\d.]+)s\)", t):
        if m.group(0) not in seen:
            seen.add(m.group(0))
            ev.append(float(m.group(2)))
    # ray.train.report with the checkpoint is not timed in the output (the interval clock restarts after it)
    return iv, [150, 300], [("validation (12 batches of 256)", s) for s in ev]


def hf_trainer_dicts_cut(run):
    t = _text(run)
    rates = {}
    for m in re.finditer(r"(\d+)/600 \[[\d:]+<[\d:?]+, +([\d.]+)(it/s|s/it)", t):
        n, r = int(m.group(1)), float(m.group(2))
        rates[n] = 1 / r if m.group(3) == "it/s" else r
    iv = [(n, n, s) for n, s in sorted(rates.items())]
    ev = [float(x) for x in re.findall(r"'eval_runtime': '?([\d.]+)", t)]
    return iv, [100, 150, 200, 300], [("evaluation (Trainer eval loop, eval_runtime)", s) for s in ev]


def tqdm_slow_validation(run):
    recs = _feed(run)
    iv = [(r["step"], r["step"], r["end"] - r["start"]) for r in recs if r["kind"] == "train"]
    per_epoch: dict[int, float] = {}
    vb = []
    for r in recs:
        if r["kind"] == "eval":
            per_epoch[r["step"]] = per_epoch.get(r["step"], 0.0) + r["end"] - r["start"]
            vb.append(r["end"] - r["start"])
    return iv, [], [("validation loop (8 full-size batches, records kind=eval)", s) for s in per_epoch.values()] + \
        [("one validation batch, median", statistics.median(vb))]


def samples_logging_burst_4r(run):
    t = _text(run)
    iv = _intervals_from_lines(t, r"\[rank0\] step +(?P<step>\d+)/\d+ \| loss \S+ \| +(?P<sps>[\d.]+) samples/s", 20,
                               lambda m: 64 / float(m.group("sps")))
    return iv, [100, 200, 300, 400, 500], "excess:per-parameter statistics burst (24 lines, rank 0)"


def logdir_tokens_warmup_cut(run):
    f = sorted((RUNS / run / "logs").rglob("0/stderr.log"))[0]
    t = f.read_text()
    iv = _intervals_from_lines(t, r"step (?P<step>\d+)/\d+ \| lr \S+ \| loss \S+ \| (?P<tps>\d+) tokens/s", 20,
                               lambda m: 16 * 48 * 3 / float(m.group("tps")))
    return iv, [0], "excess:first step (vocabulary learned on the first batch)"


def pyrun_save_pretrained_timing(run):
    recs = _feed(run)
    iv = [(r["step"], r["step"], r["end"] - r["start"]) for r in recs]
    med = statistics.median(x[2] for x in iv)
    sv = [(r["end"] - r["start"]) - med for r in recs if r["step"] % 250 == 0]
    iv = [x for x in iv if x[0] % 250 != 0]
    what = "save_pretrained + optimizer torch.save + tar.gz archive (rank 0, in the iteration's own record)"
    return iv, [], [(what, s) for s in sv]


def elapsed_eval_epoch_cut(run):
    t = _text(run)
    pts = [(int(a), float(b)) for a, b in re.findall(r"\] it: (\d+) loss: \S+ elapsed: ([\d.]+)s", t)]
    iv = [(a0 + 1, a1, e1 - e0) for (a0, e0), (a1, e1) in zip(pts, pts[1:], strict=False)]
    at = dict(pts)
    ev = [("evaluation (30 batches, all_reduce): its `eval` line's elapsed minus the iteration line's", float(e) - at[int(i)])
          for i, e in re.findall(r"eval it: (\d+) rmse: \S+ elapsed: ([\d.]+)s", t)]
    med = statistics.median(sec / (b - a + 1) for a, b, sec in iv)
    ep = [("epoch boundary reshuffle (excess of the interval holding it)", e) for _, e in _excess(iv, [468, 936], med)]
    return iv, [250, 468, 500, 750, 936, 1000], ev + ep


def c10d_deepspeed_lines(run):
    t = _text(run)
    iv = _intervals_from_lines(t, r"global_step=(?P<step>\d+)\|loss=\S+?\|samples/sec=[\d.]+\|elapsed time per iteration "
                                  r"\(s\)=(?P<s>[\d.]+)", 20, lambda m: float(m.group("s")))
    return iv, [150, 300, 450], "excess:checkpoint (rank 0 model states + every rank's optimizer shard, barrier)"


def spawn_generate_eval(run):
    t = _text(run)
    iv = _intervals_from_lines(t, r"\[rank 0\] INFO: step (?P<step>\d+)/\d+ loss \S+ \((?P<ms>[\d.]+) ms/step\)", 25,
                               lambda m: float(m.group("ms")) / 1000)
    ev = [float(x) for x in re.findall(r"\[rank 0\] INFO: eval step \d+: .*?greedy decoding, ([\d.]+)s\)", t)]
    return iv, [], [("greedy-decoding evaluation (96 sequences one at a time, all_reduce; rank 0's line)", s) for s in ev]


READERS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k != "main"}


def measure(run: str) -> dict:
    name = run.removeprefix("clean6_")
    iv, pause_steps, pauses = READERS[name](run)
    hold = set()
    for s in pause_steps:
        for j, (a, b, _) in enumerate(iv):
            if a <= s + 1 <= b or (s == 0 and a == 1):
                hold.add(j)
    clean = [(a, b, sec / (b - a + 1)) for j, (a, b, sec) in enumerate(iv) if j not in hold]
    med = statistics.median(x[2] for x in clean)
    last = max(b for _, b, _ in iv)
    first_q = [x[2] for x in clean if x[1] <= last / 4]
    last_q = [x[2] for x in clean if x[0] > 3 * last / 4]
    out = {"id": run, "steps_seen": last, "median_step_s": round(med, 4),
           "first_quarter_s": round(statistics.median(first_q), 4), "last_quarter_s": round(statistics.median(last_q), 4)}
    out["pace_drift"] = round(out["last_quarter_s"] / out["first_quarter_s"], 2)
    if isinstance(pauses, str):  # lengths from the excess of the intervals holding them
        label = pauses.removeprefix("excess:")
        pauses = [(f"{label} after step {s}", e) for s, e in _excess(iv, pause_steps, med)]
    res = []
    for lab, sec in pauses:
        res.append({"what": lab, "s": round(sec, 3), "steps": round(sec / med, 1)})
    out["pauses"] = res
    return out


def main(argv: list[str]) -> None:
    ids = argv or sorted(p.name for p in RUNS.iterdir() if p.name.startswith("clean6_"))
    for run in ids:
        try:
            print(json.dumps(measure(run)))
        except Exception as e:  # noqa: BLE001 (a run not recorded yet)
            print(json.dumps({"id": run, "error": repr(e)}))


if __name__ == "__main__":
    main(sys.argv[1:])
