"""Fail-slow from a log's own step lines: the step-time reader, the whole-log change test
(``diag_service.slow.offline``) and ``diag diagnose`` on real slow runs (the zoo's dev split) and real clean
runs (``eval/slow_feeds``' dev split)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from diag_service.ingest.open import Bundle
from diag_service.pipeline import DiagnoseRequest, diagnose
from diag_service.slow.logs import load_log_bundle, log_feed
from diag_service.slow.offline import ALPHA, CRITICAL, find_shift, kuiper_sf, whole_log_episode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "eval"))

from slow_logs_power import job_series  # noqa: E402  (a real clean lab run's job step time per step)

ZOO = ROOT / "eval" / "zoo"
FEEDS = ROOT / "eval" / "slow_feeds"
DEV_RUNS = set(json.loads((ZOO / "split.json").read_text())["dev"])
DEV_FEEDS = json.loads((FEEDS / "split.json").read_text())["dev"]


@pytest.mark.parametrize(("line", "step", "seconds"), [
    ("step 120/2000 | loss 2.31 | 148.2 ms/step", 120, 0.1482),
    ("[iter 100] loss=3.2 0.52 s/it", 100, 0.52),
    ("rank 0 | step   13 | loss 1.0037 |    10.8 ms |  11831.1 samples/s", 13, 0.0108),
    ("Epoch 0 | batch 30/200 | loss 0.7 | 4.0 it/s", 30, 0.25),
    ("Epoch 2 Batch 30/200 loss=0.7 4.0 it/s", 430, 0.25),  # a counter within an epoch: 2 x 200 + 30
    # the PyTorch tutorials' line: epochs counted from 1 out of a total, a capitalised named time
    ("Epoch [2/4], Step [10/150], Loss: 1.6721, Time: 0.013s", 160, 0.013),
    # a JSON-lines logger: quoted keys before the colon
    ('{"ts": "2026-12-06T04:00:03.860+00:00", "rank": 0, "event": "train", "step": 10, "loss": 3.13, "data_ms": 0.14, '
     '"step_ms": 27.8}', 10, 0.0278),
])
def test_step_lines_whose_unit_says_it_is_a_step_time(tmp_path: Path, line: str, step: int, seconds: float) -> None:
    (tmp_path / "a.log").write_text(line + "\n")
    feed = load_log_bundle(tmp_path)
    assert list(feed.batch.step) == [step]
    assert abs(float(feed.batch.step_time[0]) - seconds) < 1e-9


@pytest.mark.parametrize("line", [
    "step 10 | data 5.0 ms | fwd 30.0 ms | loss 1.2",  # two unnamed ms columns: parts of a step, not the step
    "Loading checkpoint shards: step 1/3 took 12 ms/shard",  # a unit per shard, not per step
    "step 10 | loss 1.2 | elapsed 12.3 s",  # a cumulative clock
    "2026-12-04 21:22:19,363 [INFO] starting training: 600 steps, batch 256",  # a batch size, not a step
])
def test_lines_without_a_per_step_time_are_not_read(tmp_path: Path, line: str) -> None:
    (tmp_path / "a.log").write_text(line + "\n")
    assert len(load_log_bundle(tmp_path).batch) == 0


def test_every_redraw_of_a_tqdm_bar_is_a_reading() -> None:
    """transformers.Trainer's bar is redrawn with ``\\r`` on one line; a terminal (and the log pass) keeps the
    last redraw, the step-time reader every one of them. Real run: eval/zoo/runs/hf_slow_stopcont_rank0."""
    run = ZOO / "runs" / "hf_slow_stopcont_rank0"
    feed = load_log_bundle(run)
    assert feed.stats.format == "logs:hf_trainer"
    assert len(feed.batch) > 100  # one reading per step update, not one per newline
    assert np.all(np.diff(feed.batch.step) > 0)


def test_a_pasted_log_is_read_for_step_times_too() -> None:
    text = "".join(f"step {i} loss 1.0 time_ms {40 if i < 60 else 90}.0\n" for i in range(1, 121))
    feed = log_feed(Bundle.from_text(text).step_blocks(), "pasted")
    assert len(feed.batch) == 120


def test_the_threshold_is_kuipers_at_the_stated_false_alarm_rate() -> None:
    assert abs(kuiper_sf(CRITICAL) - ALPHA) / ALPHA < 0.01
    assert 2.2 < CRITICAL < 2.4


@pytest.mark.parametrize("name", DEV_FEEDS[:8])
def test_real_clean_runs_are_not_called_slow_and_a_2x_stretch_in_them_is(name: str) -> None:
    t = job_series(name)
    steps = np.arange(1, t.size + 1)
    assert whole_log_episode(steps, t, np.ones_like(t)) is None
    onset = t.size // 2
    x = t.copy()
    x[onset:] *= 2.0
    ep = whole_log_episode(steps, x, np.ones_like(x))
    assert ep is not None and ep.ongoing
    assert onset - 10 <= ep.start_step <= onset + 15
    assert 1.7 < ep.slowdown_factor < 2.3


def test_a_slow_start_is_warm_up_not_a_slowdown() -> None:
    t = job_series(DEV_FEEDS[0]).copy()
    t[:30] *= 3.0  # compilation, cache warm-up, the first data-loader fill
    steps = np.arange(1, t.size + 1)
    assert find_shift(steps, t, np.ones_like(t)) is None


def test_a_stretch_that_ends_is_an_episode_with_an_end() -> None:
    t = job_series(DEV_FEEDS[1]).copy()
    t[150:250] *= 1.8
    ep = whole_log_episode(np.arange(1, t.size + 1), t, np.ones_like(t))
    assert ep is not None and not ep.ongoing
    assert 140 <= ep.start_step <= 165 and 235 <= (ep.end_step or 0) <= 265


def _diagnose(run: str, tmp_path: Path):
    assert run in DEV_RUNS, f"{run} is not a dev run"
    job = tmp_path / "job"
    shutil.copytree(ZOO / "runs" / run, job)
    return diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))


@pytest.mark.parametrize(("run", "onset"), [
    # two busy processes per core from step 100 on; log lines every 10 steps (30 records)
    ("slow_cpu_hog_all", 100),
    # rank 1 SIGSTOPped 150 ms of every 250 ms from step 80: every third step ~4.6x, every step printed
    ("slow_stopcont_rank1_step80", 80),
    # transformers.Trainer's tqdm bar only, rank 0 throttled from about step 100
    ("hf_slow_stopcont_rank0", 100),
    # batch 5: rank 2 stopped 100 ms of every 150 ms from global step 200; rank 0 prints the PyTorch tutorials'
    # "Epoch [e/4], Step [s/150], ..., Time: Ys" every 10 steps
    ("b5_slow_epochstep_stopcont_r2", 200),
])
def test_diagnose_reads_a_slowdown_from_the_logs_step_lines(run: str, onset: int, tmp_path: Path) -> None:
    d = _diagnose(run, tmp_path)
    assert d.failure_mode.value == "fail_slow"
    assert d.category.value == "infrastructure"
    assert d.slow is not None and d.slow.job_slowdown
    ep = d.slow.job_slowdown[0]
    assert onset - 20 <= ep.start_step <= onset + 30
    assert "still running" not in d.root_cause.summary  # not the inferred hang's wording
    assert d.root_cause.summary.startswith(("The job ran", "The step time"))
    assert not any(f.startswith("Step times in the logs:") for f in d.findings)  # said once, as the root cause


@pytest.mark.parametrize("run", [
    "long_net_ss_kill_rank0",  # 81 step lines, then a socket killed
    "hf_st_disk_full",  # a transformers.Trainer bar, then the disk fills
])
def test_a_failed_run_with_step_lines_keeps_its_failure(run: str, tmp_path: Path) -> None:
    """A run that died of its own error stays fail_stop whatever its step times did before."""
    assert len(load_log_bundle(ZOO / "runs" / run).batch) >= 7
    d = _diagnose(run, tmp_path)
    assert d.failure_mode.value == "fail_stop"


def test_a_step_time_that_climbs_through_the_log_is_growth_not_a_step() -> None:
    """Stack Overflow 50899548 ("PyTorch LSTM: why does each epoch get slower?"): the time per 10 epochs as
    its log prints it; the hidden state was carried without detach(), so each backward ran through all
    earlier epochs."""
    per_10_epochs = [0.005673, 0.208632, 0.494301, 0.784275, 1.074783, 1.372082, 1.659371, 1.958451, 2.262113]
    ep = whole_log_episode(np.arange(9) * 10, np.array(per_10_epochs), np.ones(9))
    assert ep is not None and ep.growth and ep.ongoing


@pytest.mark.parametrize("name", [n for n in DEV_FEEDS if n.startswith("quiet")][:6])
def test_growth_and_a_step_on_real_clean_runs_are_told_apart(name: str) -> None:
    """On a quiet host (a loaded host's own wander can make a ramp look like a step: 2 of 26 dev runs at 3x)."""
    t = job_series(name)
    steps = np.arange(1, t.size + 1)
    ramp = whole_log_episode(steps, t * np.linspace(1.0, 3.0, t.size), np.ones_like(t))
    assert ramp is not None and ramp.growth
    x = t.copy()
    x[t.size // 2:] *= 2.0
    step = whole_log_episode(steps, x, np.ones_like(x))
    assert step is not None and not step.growth


def test_growth_reads_as_user_code() -> None:
    from diag_service.slow.analyze import analyze_slow
    from diag_service.slow.feeds import Feed, StepBatch
    from diag_service.slow.models import FeedStats

    t = job_series(DEV_FEEDS[2]) * np.linspace(1.0, 2.5, 400)
    n = t.size
    batch = StepBatch.from_columns(step=np.arange(1, n + 1), rank=np.full(n, -1), step_time=t, weight=np.ones(n),
                                   end=np.full(n, np.nan), compute=np.full(n, np.nan), comm=np.full(n, np.nan))
    rep = analyze_slow(Feed(batch, FeedStats(source="x", format="logs:step_lines", records=n)))
    assert rep.category.value == "user_code"
    assert "grew steadily" in rep.summary


def test_transformers_example_scripts_stamps_are_read() -> None:
    """``datefmt="%m/%d/%Y %H:%M:%S"`` of transformers' examples/pytorch scripts."""
    from diag_service.logformat import parse_timestamp

    assert parse_timestamp("12/04/2026 21:18:28 - INFO - __main__ - step 360: {'loss': 6.9}", 2000) == 1796419108.0
    assert parse_timestamp("25/04/2026 21:18:28 - INFO - x", 2000) == parse_timestamp("2026-04-25 21:18:28 x", 2000)


def test_step_times_from_the_timestamps_of_step_lines(tmp_path: Path) -> None:
    """python logging's stamp on a step line without a step time: (time between lines) / (steps between)."""
    import datetime as dt

    t, lines = 1_700_000_000.0, []
    for i in range(1, 301):
        t += 0.5 if i < 150 else 1.0
        if i % 10 == 0:
            stamp = dt.datetime.fromtimestamp(t, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
            lines.append(f"{stamp} - train - INFO - step {i}, loss 2.31")
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    feed = load_log_bundle(tmp_path)
    assert feed.stats.format == "logs:step_clock"
    assert abs(float(feed.batch.step_time[0]) - 0.5) < 1e-6 and abs(float(feed.batch.step_time[-1]) - 1.0) < 1e-6
    from diag_service.slow.analyze import analyze_slow

    rep = analyze_slow(feed)
    assert rep.job_slowdown and 140 <= rep.job_slowdown[0].start_step <= 170


def test_stamps_to_the_second_are_read_over_ten_seconds_or_more(tmp_path: Path) -> None:
    lines = [f"2024-05-01 10:{(i * 3) // 60:02d}:{(i * 3) % 60:02d} step {i} loss 2.0" for i in range(1, 40)]
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
    feed = load_log_bundle(tmp_path)
    assert set(np.round(feed.batch.step_time, 6)) == {3.0}
    assert all(w >= 4 for w in feed.batch.weight)  # 4 steps of 3 s: 12 s >= 10 s


@pytest.mark.parametrize(("lines", "fmt", "first", "last"), [
    # a cumulative clock: the step time is its rise over the steps between lines
    ([f"it: {i * 10} loss 2.0 elapsed: {i * (5.0 if i <= 20 else 10.0) - (0 if i <= 20 else 100.0):.1f}s"
      for i in range(1, 41)], "logs:elapsed_clock", 0.5, 1.0),
    ([f"step {i * 50} | time elapsed {(i * 100) // 3600}:{(i * 100) % 3600 // 60:02d}:{i * 100 % 60:02d}"
      for i in range(1, 30)], "logs:elapsed_clock", 2.0, 2.0),
    # throughput only: seconds per unit of work
    ([f"step {i} loss 2.0 {4000.0 if i < 30 else 2000.0:.1f} tokens/s" for i in range(1, 60)],
     "logs:throughput", 1 / 4000, 1 / 2000),
    ([f"[iter {i}] samples_per_second: {80.0:.1f}" for i in range(1, 20)], "logs:throughput", 1 / 80, 1 / 80),
])
def test_step_times_from_a_cumulative_clock_or_a_throughput(tmp_path: Path, lines: list[str], fmt: str,
                                                            first: float, last: float) -> None:
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
    feed = load_log_bundle(tmp_path)
    assert feed.stats.format == fmt
    assert abs(float(feed.batch.step_time[0]) - first) < 1e-9 and abs(float(feed.batch.step_time[-1]) - last) < 1e-9


def test_a_step_time_beats_a_throughput_on_the_same_lines(tmp_path: Path) -> None:
    """eval/zoo/runs/slow_quota_midrun prints both: ``rank 0 | step 13 | loss 1.0 | 10.8 ms | 11831.1 samples/s``."""
    feed = load_log_bundle(ZOO / "runs" / "slow_quota_midrun")
    assert feed.stats.format == "logs:step_lines"


def test_a_slow_log_piped_in_is_read_for_step_times(tmp_path: Path) -> None:
    """``kubectl logs POD | diag diagnose /dev/stdin``: a pipe cannot be read twice, so the log pass keeps its
    blocks for the step-time reader."""
    import os
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    data = (ZOO / "runs" / "slow_cpu_hog_all" / "console.log").read_bytes()

    def feed() -> None:
        with open(fifo, "wb") as w:
            w.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    d = diagnose(DiagnoseRequest(path=str(fifo), kb=False, llm=False))
    writer.join(5)
    assert d.failure_mode.value == "fail_slow" and d.category.value == "infrastructure"


def test_a_long_log_is_merged_to_at_most_log_max_records_and_keeps_its_slowdown(tmp_path: Path) -> None:
    """A tqdm-length log (20,000 step lines) reaches the analyzers as at most LOG_MAX_RECORDS records, with the
    iterations it merged; a 1.5x slowdown over its last 8,000 steps is still found, placed after the onset."""
    from diag_service.slow.logs import LOG_MAX_RECORDS

    rng = np.random.default_rng(7)
    base = np.exp(rng.normal(np.log(0.040), 0.1, 20_000))
    base[12_000:] *= 1.5
    (tmp_path / "console.log").write_text(
        "".join(f"step {i + 1}/20000 | loss 0.41 | {t * 1000:.1f} ms/step\n" for i, t in enumerate(base)))
    feed = load_log_bundle(str(tmp_path / "console.log"))
    assert len(feed.batch) <= LOG_MAX_RECORDS and abs(float(np.sum(feed.batch.weight)) - 20_000) < 1e-6
    assert any("merged" in w for w in feed.stats.warnings)
    d = diagnose(DiagnoseRequest(path=str(tmp_path), kb=False, llm=False))
    assert d.failure_mode.value == "fail_slow" and d.slow is not None
    ep = d.slow.job_slowdown[0]
    assert 11_000 <= ep.start_step <= 13_500 and 1.3 <= ep.slowdown_factor <= 1.7, ep


def test_an_alarm_the_rest_of_the_log_averaged_out_is_no_slowdown() -> None:
    """A real clean run (zoo clean controls, dev): the streaming detector alarms at step 510 (1.16x over 20 steps) and
    the log's last 100 steps average 0.99x of the baseline. Read after the fact, that is no slowdown."""
    run = ROOT / "eval" / "zoo" / "clean" / "runs" / "clean_msstep_eval_4r"
    assert "clean_msstep_eval_4r" in json.loads((ROOT / "eval" / "zoo" / "clean" / "split.json").read_text())["dev"]
    from diag_service.slow import analyze_slow

    rep = analyze_slow(load_log_bundle(str(run)))
    assert rep.alarms and rep.failure_mode is None and not rep.job_slowdown


def test_a_slowdown_with_a_debug_setting_that_slows_every_step_is_the_jobs(tmp_path: Path) -> None:
    """Batch 5's b5_slow_asctime_uc_anomaly: from epoch 1 the script turns on autograd anomaly detection (its log
    says so); the job runs several times slower. PyTorch documents the mode as slow and for debugging only: the
    job's own setting (user_code), not the host."""
    d = _diagnose("b5_slow_asctime_uc_anomaly", tmp_path)
    assert (d.failure_mode.value, d.category.value) == ("fail_slow", "user_code")
    assert any("slows every step" in f for f in d.findings)


@pytest.mark.parametrize("setting", [
    "autograd anomaly detection enabled",
    "STAGE:2024-06-02 03:57:04 6093:6093 ActivityProfilerController.cpp:314] Completed Stage: Warm Up",
])
def test_the_same_setting_without_a_slowdown_changes_nothing(tmp_path: Path, setting: str) -> None:
    log = tmp_path / "train.log"
    log.write_text(setting + "\n" + "".join(
        f"step {i} | loss 0.5 | 20.0 ms/step\n" for i in range(1, 200)))
    d = diagnose(DiagnoseRequest(path=str(log), kb=False, llm=False))
    assert d.failure_mode.value != "fail_slow" and d.category.value == "unknown"


def test_a_slowdown_with_the_profiler_recording_is_the_jobs(tmp_path: Path) -> None:
    """Zoo dev b9_slow_uc_profiler_left_on: from step 150 the script enters torch.profiler.profile(record_shapes,
    with_stack, profile_memory) and never leaves it until exit; Kineto logs ``profiler_start``. A profiler
    records every op of every step it is on (PyTorch's profiler docs): the job's own setting, user_code."""
    run = "b9_slow_uc_profiler_left_on"
    assert run in DEV_RUNS
    d = _diagnose(run, tmp_path)
    assert (d.failure_mode.value, d.category.value) == ("fail_slow", "user_code")
    assert any("Torch profiler recording" in f for f in d.findings)




@pytest.mark.parametrize(("line", "seconds", "data"), [
    ("rank 2 step 90 loss 7.273 time_ms 669.6 data_ms 220.2", 0.6696, 0.2202),
    # YOLOX's trainer line (seconds, named units)
    ("epoch: 1/100, iter: 240/983, mem: 7746Mb, iter_time: 8.711s, data_time: 8.409s, total_loss: 5.8", 8.711, 8.409),
    ("[rank1] step 86 loss 1.0433 step_time 179.4ms data 169.5ms fwd_bwd 9.9ms", 0.1794, 0.1695),
    # a bare number takes the step time's unit
    ("step 12 | time_ms 40.0 | data 12.5", 0.040, 0.0125),
    # not a data wait: a path, a longer "data" word, a wait longer than the step
    ("step 10 time 0.5 data/train.json", 0.5, None),
    ("step 10 time 0.5 metadata 0.3", 0.5, None),
    ("step 10 time_ms 50 data_ms 80", 0.05, None),
])
def test_a_step_lines_data_wait_is_read_with_its_unit(tmp_path: Path, line: str, seconds: float,
                                                       data: float | None) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(line.replace(" 10 ", f" {i} ").replace(" 12 ", f" {i} ").replace(" 90 ", f" {i} ")
                             .replace(" 86 ", f" {i} ").replace(" 240/", f" {i}/") for i in range(1, 4)) + "\n")
    b = load_log_bundle(log).batch
    assert len(b) == 3 and b.step_time[0] == pytest.approx(seconds)
    if data is None:
        assert np.isnan(b.data).all()
    else:
        assert b.data[0] == pytest.approx(data)
        assert b.compute[0] == pytest.approx(seconds - data)  # the rest of the step


def test_a_rank_whose_data_wait_the_others_wait_for_is_named_from_every_ranks_step_lines(tmp_path: Path) -> None:
    """Zoo dev run: rank 1 SIGSTOPped 150 ms of every 250 ms from step 80; both ranks print ``step_time``,
    ``data`` and ``fwd_bwd`` every step, on the console and in torchrun's --log-dir files (each line counted
    once). Rank 0 waits inside its fwd_bwd (the all-reduce), rank 1's wait shows in its data phase: the
    streaming rank test names rank 1; the category stays the job finding's (the pause is the host's)."""
    run = "slow_stopcont_rank1_step80"
    assert run in DEV_RUNS
    feed = load_log_bundle(ZOO / "runs" / run)
    assert feed.rank_batch is not None and sorted(set(feed.rank_batch.rank.tolist())) == [0, 1]
    assert len(feed.rank_batch) == 500  # 250 steps x 2 ranks, not the 1,000 lines that hold them
    d = _diagnose(run, tmp_path)
    assert d.failure_mode.value == "fail_slow" and d.category.value == "infrastructure"
    assert d.first_failing_rank == 1
    s = d.slow.stragglers[0]
    assert s.rank == 1 and s.kind.value == "data" and 80 <= s.first_step <= 110
    assert "Rank 1 is an intermittent data straggler" in d.root_cause.summary


def test_a_short_log_names_the_rank_whose_data_wait_made_the_episode(tmp_path: Path) -> None:
    """Zoo dev run: rank 2's shard holds heavier samples from step 50; three ranks print ``time_ms`` and
    ``data_ms`` every 10 steps (10 lines each: too few for the streaming rank test). The whole-log episode's
    steps show rank 2's data wait rising by most of the job's rise, significantly: rank 2 is named."""
    run = "slow_data_skew_rank2"
    assert run in DEV_RUNS
    d = _diagnose(run, tmp_path)
    assert d.failure_mode.value == "fail_slow" and d.first_failing_rank == 2
    assert [s.rank for s in d.slow.stragglers] == [2] and d.slow.stragglers[0].confidence >= 0.7


def test_equal_data_waits_name_no_rank(tmp_path: Path) -> None:
    """Counter-example from the same run: every rank given rank 0's data wait (the job still slows from step 50)
    -> a job episode, no straggler."""
    lines = (ZOO / "runs" / "slow_data_skew_rank2" / "console.log").read_text().splitlines()
    waits = {}
    for ln in lines:
        p = ln.split()
        if len(p) > 9 and p[0] == "rank" and p[1] == "0" and p[8] == "data_ms":
            waits[p[3]] = p[9]
    out = []
    for ln in lines:
        p = ln.split()
        if len(p) > 9 and p[0] == "rank" and p[8] == "data_ms" and p[3] in waits:
            p[9] = waits[p[3]]
            ln = " ".join(p)
        out.append(ln)
    assert len(waits) == 10
    log = tmp_path / "console.log"
    log.write_text("\n".join(out) + "\n")
    from diag_service.slow.analyze import analyze_slow

    rep = analyze_slow(log)
    assert rep.job_slowdown and not rep.stragglers


def test_a_short_log_names_the_rank_whose_own_compute_made_the_episode(tmp_path: Path) -> None:
    """Zoo dev run: rank 1 held to 30 % of a core from step 200; both ranks print ``fwd_bwd`` and ``allreduce``
    every 25 steps (20 lines each: too few for the streaming rank test). Both step times rise 25.7 -> 71.9 ms;
    only rank 1's fwd_bwd rises (21 -> 62 ms), rank 0's wait shows in its all-reduce. The whole-log episode
    names rank 1 as a compute straggler (it named no rank when only the data wait was compared)."""
    run = "b36_slow_rank_quota_plain_r1"
    assert run in DEV_RUNS
    d = _diagnose(run, tmp_path)
    assert d.failure_mode.value == "fail_slow" and d.first_failing_rank == 1
    assert [(s.rank, s.kind.value) for s in d.slow.stragglers] == [(1, "compute")]
    assert 200 <= d.slow.stragglers[0].first_step <= 250
    assert "Rank 1 is a persistent compute straggler" in d.root_cause.summary


def test_equal_compute_rises_name_no_rank(tmp_path: Path) -> None:
    """Counter-example from the same run: rank 0's fwd_bwd and allreduce given rank 1's on every line (a job-wide
    slowdown of the compute, as a throttled whole node gives) -> a job episode, no straggler."""
    import re

    lines = (ZOO / "runs" / "b36_slow_rank_quota_plain_r1" / "console.log").read_text().splitlines()
    parts = re.compile(r"rank (\d) step (\d+)/500 .*?(fwd_bwd \S+ ms allreduce \S+ ms)")
    own = {m.group(2): m.group(3) for ln in lines if (m := parts.search(ln)) and m.group(1) == "1"}
    out = [parts.sub(lambda m: m.group(0).replace(m.group(3), own.get(m.group(2), m.group(3))), ln) for ln in lines]
    assert len(own) == 20 and out != lines
    log = tmp_path / "console.log"
    log.write_text("\n".join(out) + "\n")
    from diag_service.slow.analyze import analyze_slow

    rep = analyze_slow(log)
    assert rep.job_slowdown and not rep.stragglers


@pytest.mark.parametrize("name", DEV_FEEDS[:6])
def test_clean_runs_read_as_step_and_data_lines_name_no_straggler(name: str) -> None:
    """Real clean lab runs (dev feeds) reduced to what such step lines give per rank: step time and data
    wait. The rank test names no one (with the rest of the step passed as communication it named 5 ranks over
    the 26 dev feeds: a rank with a shorter data wait has a longer rest)."""
    from diag_service.slow.analyze import analyze_slow
    from diag_service.slow.feeds import StepBatch, load_jsonl

    b = load_jsonl(FEEDS / f"{name}.jsonl.gz").batch
    t = b.end - b.start
    ok = np.isfinite(t) & np.isfinite(b.data)
    rb = StepBatch.from_columns(step=b.step[ok], rank=b.rank[ok], step_time=t[ok], data=b.data[ok])
    assert not analyze_slow(rb).stragglers



@pytest.mark.parametrize(("lines", "fmt", "steps", "seconds"), [
    # torchvision's references MetricLogger (utils.py log_every): the iteration counts from 0 within the epoch
    (["Epoch: [0]  [ 10/468]  eta: 0:00:07  loss: 2.3129 (2.3120)  lr: 0.0500 (0.0500)  img/s: 2189.9  time: 0.0163  "
      "data: 0.0006  max mem: 120",
      "Epoch: [0]  [ 20/468]  eta: 0:00:07  loss: 2.3039 (2.3062)  time: 0.0157  data: 0.0004",
      "Epoch: [1]  [  0/468]  eta: 0:00:09  loss: 2.1 (2.1)  time: 0.0201  data: 0.0050",
      "Test:  [ 10/79]  eta: 0:00:01  loss: 2.2  time: 0.0100  data: 0.0010"],  # evaluation: not a training step
     "logs:metric_logger", [10, 20, 468], [0.0163, 0.0157, 0.0201]),
    # fairseq's train_inner line: 1 / ups, at the global update count
    (["2026-12-05 11:19:22 | INFO | train_inner | epoch 001:     75 / 700 loss=9.970, ppl=1003.26, wps=43221.0, "
      "ups=28.14, wpb=1536, bsz=64, num_updates=75, lr=0.0005, gnorm=0.051, train_wall=2, gb_free=0, wall=2",
      "2026-12-05 11:19:23 | INFO | train_inner | epoch 001:    100 / 700 loss=9.968, ppl=1001.72, wps=43418.3, "
      "ups=25.0, wpb=1536, bsz=64, num_updates=100, lr=0.0005, gnorm=0.052, train_wall=3, gb_free=0, wall=3"],
     "logs:fairseq", [75, 100], [1 / 28.14, 0.04]),
])
def test_framework_step_lines_are_read(tmp_path: Path, lines: list[str], fmt: str, steps: list[int],
                                       seconds: list[float]) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    f = load_log_bundle(log)
    assert f.stats.format == fmt
    assert f.batch.step.tolist() == steps and f.batch.step_time.tolist() == pytest.approx(seconds)


def test_checkpoint_saves_that_got_slower_are_the_checkpoint_storage(tmp_path: Path) -> None:
    """Zoo dev b10_slow_ckpt_volume_r0: rank 0 saves a checkpoint every 50 steps (``saved ckpt/last.pt (step N)``,
    then its ``step N/600 ... (Y ms/step)`` line); from step 200 its checkpoint volume is throttled: every reading
    that covers a save takes ~280 ms/step instead of ~28, the others stay. The streaming detector drops those
    recurring outliers as checkpoint pauses; comparing the saves with each other finds it: storage."""
    run = "b10_slow_ckpt_volume_r0"
    d = _diagnose(run, tmp_path)
    assert (d.failure_mode.value, d.category.value) == ("fail_slow", "storage"), d.root_cause.summary
    ep = d.slow.job_slowdown[0]
    assert 150 <= ep.start_step <= 250 and ep.slowdown_factor > 2
    assert d.root_cause.summary.startswith("Checkpoint saves got slower")


def test_saves_that_were_always_slow_are_the_jobs_pause(tmp_path: Path) -> None:
    """Counter-example from the same run: every save's reading as slow as the late ones, from the first save on
    (a job whose checkpoint simply takes 2.5 s): no checkpoint finding."""
    text = (ZOO / "runs" / "b10_slow_ckpt_volume_r0" / "console.log").read_text()
    out, after_save = [], False
    for ln in text.splitlines():
        if "saved ckpt/last.pt" in ln:
            after_save = True
        elif after_save and "ms/step)" in ln:
            ln = ln[: ln.rindex("(")] + "(281.0 ms/step)"
            after_save = False
        out.append(ln)
    log = tmp_path / "console.log"
    log.write_text("\n".join(out) + "\n")
    from diag_service.slow.analyze import analyze_slow

    rep = analyze_slow(log)
    assert not rep.summary.startswith("Checkpoint saves got slower") and rep.category.value != "storage"


def test_a_warm_up_block_and_a_stall_over_two_blocks_do_not_hide_a_step_up(tmp_path: Path) -> None:
    """Zoo dev b10_slow_net_egress_node1: rank 0 logs every 10 steps; its first reading is a 176 ms warm-up, a host
    stall spans the readings at steps 110-120 (94 and 261 ms, two of the test's blocks), and from step 210 node 1's
    egress is shaped: ~18 -> ~28 ms for 600 steps. The warm-up block and the two-block stall inflated the noise and
    took the best stretch; flattened as lone pauses, the step up is found."""
    run = "b10_slow_net_egress_node1"
    assert run in DEV_RUNS
    feed = load_log_bundle(ZOO / "runs" / run)
    ep = whole_log_episode(feed.batch.step, feed.batch.step_time, feed.batch.weight)
    assert ep is not None and ep.ongoing and 200 <= ep.start_step <= 240 and 1.4 < ep.slowdown_factor < 1.8


@pytest.mark.parametrize("name", DEV_FEEDS[:4])
def test_a_stall_over_two_log_intervals_in_a_clean_run_is_no_slowdown(name: str) -> None:
    """Counter-example on real clean runs (dev feeds) logged every 10 steps: two consecutive readings 5x and 12x
    (a stall straddling a log line) and a 6x first reading -> no stretch."""
    t = job_series(name)
    n = t.size // 10
    x = t[: n * 10].reshape(n, 10).mean(axis=1)
    x[0] *= 6.0
    x[n // 3] *= 5.0
    x[n // 3 + 1] *= 12.0
    steps = np.arange(10, 10 * n + 1, 10)
    assert whole_log_episode(steps, x, np.full(n, 10.0)) is None


def _per_rank_files(tmp_path: Path, ranks: int = 8, slow_rank: int = 6, onset: int = 200) -> Path:
    """One file per rank (``worker-R.log``), a line every 10 steps with the rank's step time and data wait, as
    a script's logger writes them; from ``onset`` ``slow_rank``'s reader takes 250 ms more and every rank's step
    time grows by it (the others wait in their all-reduce)."""
    import random

    rnd = random.Random(3)
    d = tmp_path / "job"
    d.mkdir()
    for r in range(ranks):
        lines = []
        for step in range(10, 510, 10):
            extra = 0.25 if step >= onset else 0.0
            data = 0.010 + rnd.random() * 0.003 + (extra if r == slow_rank else 0.0)
            t = 0.450 + rnd.random() * 0.010 + extra
            lines.append(f"rank {r} step {step} loss 7.{rnd.randint(10, 99)} time_ms {t * 1000:.1f} data_ms {data * 1000:.1f}")
        (d / f"worker-{r}.log").write_text("\n".join(lines) + "\n")
    return d


def test_diagnose_reads_every_ranks_file_when_the_lines_give_data_waits(tmp_path: Path) -> None:
    """A new user's trial: ``diag slow`` named rank 6 of a folder of per-rank files, ``diag diagnose`` (which reads
    the step lines of two members, enough for the job's series) named no one. Lines that give each rank's data
    wait make every member worth reading; the straggler's time lost counts the 10 steps each line stands for."""
    from diag_service.slow.analyze import analyze_slow

    job = _per_rank_files(tmp_path)
    d = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))
    assert d.failure_mode.value == "fail_slow" and d.first_failing_rank == 6
    rep = analyze_slow(job)
    assert [s.rank for s in rep.stragglers] == [6] and rep.input.ranks == 8
    ep = rep.job_slowdown[0]
    assert 0.7 * ep.time_lost_s < rep.stragglers[0].time_lost_s < 1.3 * ep.time_lost_s  # both in seconds of the job
    assert not any("not enough to learn a baseline" in w for w in rep.input.warnings)
    assert rep.log_evidence[0].text.startswith("rank 6 step ")  # the straggler's own line is cited first
    # (one rank's reader lags on every step: its data, handed to the owner, not a node to drain)
    assert d.category.value == "data"
    assert d.recovery is not None and d.recovery.rule_id == "slow_data_straggler_owner"
    assert "Keep training" in d.recovery.action


def test_a_log_line_stamp_gives_the_episodes_start_time(tmp_path: Path) -> None:
    """Stamped step lines without a start time (the episode's start is the stamp of the line before it, less the
    steps that line covers): YOLOX-style lines every 10 iterations, 2x from iteration 300."""
    import datetime as dt

    t0 = dt.datetime(2026, 12, 4, 8, 0, 0)
    lines, now = [], t0
    for it in range(10, 610, 10):
        per = 0.5 if it <= 300 else 1.0
        now += dt.timedelta(seconds=10 * per)
        lines.append(f"{now:%Y-%m-%d %H:%M:%S} | INFO     | yolox.core.trainer:261 - epoch: 1/300, iter: {it}/983, "
                     f"mem: 18342Mb, iter_time: {per:.3f}s, data_time: 0.010s, total_loss: 6.1")
    log = tmp_path / "train_log.txt"
    log.write_text("\n".join(lines) + "\n")
    from diag_service.slow.analyze import analyze_slow

    ep = analyze_slow(log).job_slowdown[0]
    assert ep.start_time is not None and 280 <= ep.start_step <= 330
    assert abs(ep.start_time - (t0 + dt.timedelta(seconds=150)).replace(tzinfo=dt.UTC).timestamp()) < 60


def test_a_world_size_below_the_ranks_seen_is_said() -> None:
    """A new user's trial: ``--world-size 2`` on a 4-rank feed gave no word. A real clean 4-rank lab feed (dev):
    a warning with both numbers; the right world size gives none."""
    from diag_service.slow.analyze import analyze_slow

    feed = FEEDS / f"{next(n for n in DEV_FEEDS if n.startswith('quiet-r4'))}.jsonl.gz"
    said = [w for w in analyze_slow(feed, world_size=2).input.warnings if "world size" in w]
    assert said and said[0].startswith("4 ranks seen, more than the given world size 2")
    assert not [w for w in analyze_slow(feed, world_size=4).input.warnings if "world size" in w]


def test_random_stalls_on_a_log_sampled_every_ten_steps_are_not_a_periodic_phase() -> None:
    """Zoo dev run b17_slow_stopcont_r2_json: JSON step lines every 10 steps, rank 2 stopped and continued from step
    ~200, so about a third of the logged steps are slow at no fixed period. A "period" of the log's own interval
    took every record, and slow steps that fell three times on one phase by chance took every later step of it:
    the stalls were excluded as an evaluation-like phase and the run read as healthy. A period must span at least
    two record intervals, and a step at its phase at the normal pace undoes it."""
    feed = load_log_bundle(ZOO / "runs" / "b17_slow_stopcont_r2_json")
    assert len(feed.batch) == 80 and set(np.unique(feed.batch.step % 10)) == {0}
    d = diagnose(DiagnoseRequest(path=str(ZOO / "runs" / "b17_slow_stopcont_r2_json"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_slow", d.root_cause.summary


def test_a_bracketed_rank_and_a_step_time_keyed_step_are_read(tmp_path: Path) -> None:
    """Zoo dev b25_slow_data_parquet_rowgroups_r1: each rank prints ``[1] it  225/500 | loss 0.35 | data   10.1 ms |
    step   24.7 ms``; from step 201 rank 1's parquet parts hold 4-row row groups. The step time under the key ``step``
    (with its unit) and the bracketed rank were not read: no step timing, and the run read as a hang. Now the job's
    1.7x slowdown is found and rank 1 named by its data time."""
    run = "b25_slow_data_parquet_rowgroups_r1"
    assert run in DEV_RUNS
    feed = load_log_bundle(ZOO / "runs" / run)
    assert feed.rank_batch is not None and sorted(set(feed.rank_batch.rank.tolist())) == [0, 1]
    d = _diagnose(run, tmp_path)
    assert d.failure_mode.value == "fail_slow" and d.first_failing_rank == 1, d.root_cause.summary


def test_the_shells_job_control_lines_are_not_a_rank(tmp_path: Path) -> None:
    """``[1] 4242`` (a job put in the background) and ``[1]+  Done`` carry no step counter: no rank is read from them, and
    a bracketed number only counts in front of a step line."""
    log = tmp_path / "train.log"
    log.write_text("[1] 4242\n" + "".join(f"step {i} | loss 0.5 | 20.0 ms/step\n" for i in range(1, 40)) + "[1]+  Done\n")
    b = load_log_bundle(log)
    assert b.rank_batch is None or set(b.rank_batch.rank.tolist()) <= {-1}


@pytest.mark.parametrize(("run", "rank", "category"), [
    # rank 1's parquet parts re-exported with 4-row row groups from step 201: its reader lags on every step
    ("b25_slow_data_parquet_rowgroups_r1", 1, "data"),
    # rank 1 SIGSTOPped 150 ms of every 250 ms: an intermittent "data" straggler on these lines, the host's doing
    ("slow_stopcont_rank1_step80", 1, "infrastructure"),
])
def test_a_rank_whose_data_lags_on_every_step_is_its_data(run: str, rank: int, category: str, tmp_path: Path) -> None:
    """Zoo dev: a job-wide slowdown whose lines split out each rank's data wait, one rank's lagging behind. On every
    step (a persistent straggler) it is that rank's data; on some steps only (intermittent), the job's category
    stands, as a rank paused anywhere in its step shows as a data wait too."""
    d = _diagnose(run, tmp_path)
    assert d.failure_mode.value == "fail_slow" and d.first_failing_rank == rank, d.root_cause.summary
    assert d.category.value == category


def test_a_short_logs_rank_whose_compute_rose_over_its_peers_is_named_without_a_job_episode() -> None:
    """Zoo dev b43_slow_rank_quota_r1_tee (3 ranks, a line every 20 steps, 18 lines): rank 1's CPU quota cut to 40 %
    of a core from step 100, its compute_ms 22.6 -> 31.3 while its peers' stay, the job 1.18x (below the whole-log
    test's least effect): it said "no failure". The stretch of rank 1's compute over its peers' names it; the real
    clean dev feeds read as such lines (compute on every 10th or 20th step) name no rank."""
    from diag_service.slow.analyze import analyze_slow
    from diag_service.slow.feeds import StepBatch, load_jsonl

    rep = analyze_slow(ZOO / "runs" / "b43_slow_rank_quota_r1_tee")
    assert [(s.rank, s.kind.value) for s in rep.stragglers] == [(1, "compute")], rep.summary
    assert rep.failure_mode.value == "fail_slow" and 100 <= rep.stragglers[0].first_step <= 140
    split = json.loads((FEEDS / "split.json").read_text())
    for name in split["dev"][:12]:
        b = load_jsonl(FEEDS / f"{name}.jsonl.gz").batch
        t = b.end - b.start
        for every in (10, 20):
            ok = np.isfinite(t) & np.isfinite(b.compute) & (b.step % every == 0)
            lines = StepBatch.from_columns(step=b.step[ok], rank=b.rank[ok], step_time=t[ok], compute=b.compute[ok],
                                           weight=np.full(int(ok.sum()), float(every)))
            assert not analyze_slow(lines).stragglers, (name, every)
