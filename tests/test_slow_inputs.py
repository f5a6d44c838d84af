"""Inputs of ``diag slow``: JSONL/CSV/Parquet feeds, log iteration lines, public traces, the CLI, a lab run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from diag_service.slow import FeedError, SlowReport, StragglerKind, analyze_slow, load_feed
from diag_service.slow.cli import app
from diag_service.slow.synth import Fault, SynthConfig, make_feed, to_records
from diag_service.slow.whatif import load_pipeline_trace, simulate_1f1b, whatif_slowdown

FIX = Path(__file__).parent / "fixtures" / "slow"
LOGS = FIX / "logs"
TRACES = Path("/work/shared/data/traces")
CFG = SynthConfig(seed=31, steps=100, faults=[Fault("compute", 50, 1.7, (4,))])


def _write_jsonl(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def _key(r: SlowReport) -> tuple:
    return ([(s.rank, s.kind, s.first_step, s.detected_at_step) for s in r.stragglers],
            [(e.start_step, e.detected_at_step, e.slowdown_factor) for e in r.job_slowdown])


def test_jsonl_csv_parquet_give_the_same_report(tmp_path: Path) -> None:
    recs = to_records(make_feed(CFG))
    j = analyze_slow(_write_jsonl(tmp_path / "timing.jsonl", recs))
    df = pl.DataFrame(recs).rename({"rank": "global_rank", "step": "iteration"})  # aliases are understood
    df.write_csv(tmp_path / "timing.csv")
    df.write_parquet(tmp_path / "timing.parquet")
    c = analyze_slow(tmp_path / "timing.csv")
    p = analyze_slow(tmp_path / "timing.parquet")
    assert _key(j) == _key(c) == _key(p)
    assert [s.rank for s in j.stragglers] == [4]
    assert (j.input.format, c.input.format, p.input.format) == ("jsonl", "csv", "parquet")
    assert analyze_slow(tmp_path).input.source.endswith("timing.jsonl")  # a run folder: its feed


def test_malformed_feed_lines_are_counted(tmp_path: Path) -> None:
    recs = to_records(make_feed(SynthConfig(seed=32, steps=40)))
    text = "".join(json.dumps(r) + "\n" for r in recs)
    text += "{not json\n[1, 2]\n\n" + json.dumps({"rank": 1, "step": 2, "start": 3.0, "end": 1.0}) + "\n"
    (tmp_path / "timing.jsonl").write_text(text)
    rep = analyze_slow(tmp_path / "timing.jsonl")
    assert rep.input.records == len(recs) and rep.input.bad_records == 3
    assert any("not valid JSON" in w for w in rep.input.warnings)
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(FeedError, match="no usable step records"):  # an error, as in the CLI and the service
        analyze_slow(tmp_path / "empty.jsonl")
    with pytest.raises(FeedError):
        analyze_slow(tmp_path / "missing.jsonl")
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(FeedError, match="no step column"):
        analyze_slow(tmp_path / "x.csv")


def _iteration_lines(path: Path, pattern: str) -> int:
    return sum(1 for line in path.read_text().splitlines() if re.search(pattern, line))


def test_megatron_log_series_and_episode() -> None:
    f = load_feed(LOGS / "megatron_slow.log")
    n = _iteration_lines(LOGS / "megatron_slow.log", r"iteration\s+\d+/")
    assert len(f.batch) == n and f.stats.format == "logs:megatron"
    assert (f.batch.weight[1:] == 10).all()  # log_interval 10: each line covers ten iterations
    ms = [float(m.group(1)) for m in re.finditer(r"per iteration \(ms\): ([\d.]+)", (LOGS / "megatron_slow.log").read_text())]
    assert np.allclose(f.batch.step_time, np.array(ms) / 1000)
    rep = analyze_slow(LOGS / "megatron_slow.log")
    assert len(rep.job_slowdown) == 1 and not rep.stragglers
    ep = rep.job_slowdown[0]
    steps = f.batch.step
    before, after = np.median(f.batch.step_time[steps <= 600]), np.median(f.batch.step_time[steps > 610])
    assert 600 <= ep.start_step <= 620 and ep.detected_at_step <= 700
    assert ep.slowdown_factor == pytest.approx(after / before, rel=0.03)
    lost = ((f.batch.step_time - rep.baseline.step_time_s) * f.batch.weight)[steps >= ep.start_step].sum()
    assert ep.time_lost_s == pytest.approx(lost, rel=0.02)
    assert rep.log_evidence and rep.log_evidence[0].file.endswith("megatron_slow.log")
    assert any(e.line > 1 and "iteration" in e.text for e in rep.log_evidence)


@pytest.mark.parametrize("name,fmt,pattern", [
    ("deepspeed.log", "logs:deepspeed", r"time \(ms\)"),
    ("hf_trainer.log", "logs:hf_trainer", r"\d+/60 \["),
    ("lightning.log", "logs:lightning", r"^Epoch \d+:"),
])
def test_other_framework_iteration_lines(name: str, fmt: str, pattern: str) -> None:
    f = load_feed(LOGS / name)
    assert f.stats.format == fmt
    assert len(f.batch) == _iteration_lines(LOGS / name, pattern)
    assert np.all(np.diff(f.batch.step) > 0) and np.all(f.batch.step_time > 0)
    rep = analyze_slow(LOGS / name)
    assert rep.failure_mode is None


def test_deepspeed_step_time_and_phases() -> None:
    text = (LOGS / "deepspeed.log").read_text()
    f = load_feed(LOGS / "deepspeed.log")
    m = re.search(r"fwd_microstep: ([\d.]+) \| bwd_microstep: ([\d.]+) .*"
                  r"bwd_allreduce_microstep: ([\d.]+) \| step_microstep: ([\d.]+)", text)
    fwd, bwd, ar, stp = (float(x) for x in m.groups())
    i = int(np.argmin(f.batch.step))
    # the wall-clock breakdown and the throughput line (64 / CurrSamplesPerSec, 3 decimals) agree
    assert f.batch.step_time[i] == pytest.approx((fwd + bwd + stp) / 1000, rel=1e-4)
    assert f.batch.comm[i] == pytest.approx(ar / 1000) and f.batch.compute[i] == pytest.approx((fwd + bwd + stp - ar) / 1000)


def test_lightning_steps_continue_across_epochs() -> None:
    f = load_feed(LOGS / "lightning.log")
    per_epoch = _iteration_lines(LOGS / "lightning.log", r"^Epoch 0:")
    assert int(f.batch.step.max()) == _iteration_lines(LOGS / "lightning.log", r"^Epoch \d+:") == 2 * per_epoch


def test_log_bundle_without_iteration_lines(tmp_path: Path) -> None:
    (tmp_path / "rank-0.log").write_text("hello\nTraceback (most recent call last):\nValueError: x\n")
    with pytest.raises(FeedError, match="no iteration lines"):
        analyze_slow(tmp_path)


def test_lab_run_fixture_is_localised_in_time() -> None:
    run = FIX / "lab_slow_rank_compute"
    truth = json.loads((run / "truth.json").read_text())
    rep = analyze_slow(run)
    hit = [s for s in rep.stragglers if s.rank == truth["faulty_rank"]]
    assert hit and hit[0].kind is StragglerKind.COMPUTE
    assert truth["onset_step"] <= hit[0].detected_at_step <= truth["onset_step"] + 20
    assert abs(hit[0].first_step - truth["onset_step"]) <= 5
    assert rep.job_slowdown and rep.job_slowdown[0].detected_at_step <= truth["onset_step"] + 20


def test_cli_json_and_text(tmp_path: Path) -> None:
    feed = _write_jsonl(tmp_path / "timing.jsonl", to_records(make_feed(CFG)))
    runner = CliRunner()
    res = runner.invoke(app, [str(feed), "--json"])
    assert res.exit_code == 0, res.output
    rep = SlowReport.model_validate_json(res.output)
    assert [s.rank for s in rep.stragglers] == [4]
    text = runner.invoke(app, [str(feed)])
    assert text.exit_code == 0 and "FAIL-SLOW" in text.output and "stragglers" in text.output
    bad = runner.invoke(app, [str(tmp_path / "nope.jsonl")])
    assert bad.exit_code == 2 and "error" in bad.output
    # mounted the way ``diag`` will mount it
    parent = typer.Typer()
    parent.add_typer(app, name="slow")

    @parent.command("other")
    def _other() -> None:  # a second command, so that "slow" is a sub-command
        pass

    mounted = runner.invoke(parent, ["slow", str(feed), "--json"])
    assert mounted.exit_code == 0 and SlowReport.model_validate_json(mounted.output).stragglers


def test_1f1b_replay_matches_the_bubble_formula_and_blames_the_slow_worker() -> None:
    p, m, f, b = 4, 8, 0.5, 1.0
    F, B = np.full((3, p, m), f), np.full((3, p, m), b)
    assert np.allclose(simulate_1f1b(F, B, 0.0), (m + p - 1) * (f + b))
    F[1, 2] *= 2  # DP rank 1, stage 2 computes twice as long
    B[1, 2] *= 2
    t = simulate_1f1b(F, B, 0.0)
    assert t[1] > t[0] == t[2]
    slow_stage = 2 * (f + b)
    # its stage is the bottleneck: at least m of its microbatches, at most the sum of stages + (m - 1) bottlenecks
    assert m * slow_stage <= t[1] <= (p - 1) * (f + b) + slow_stage + (m - 1) * slow_stage
    with pytest.raises(ValueError):
        simulate_1f1b(F, B[:, :2], 0.0)


@pytest.mark.skipif(not (TRACES / "bytedance_straggler_whatif" / "trace-ST.parquet").exists(), reason="traces absent")
def test_bytedance_st_matches_the_published_slowdown() -> None:
    d = TRACES / "bytedance_straggler_whatif"
    pub = json.loads((d / "result-ST.json").read_text())
    wi = whatif_slowdown(load_pipeline_trace(d / "trace-ST.parquet"))
    assert wi.slowdown == pytest.approx(pub["blocking_slowdown"], rel=0.10)
    pub_stage = {int(k): v for k, v in pub["blocking_decompose_by_stage"].items()}
    top = max(pub_stage, key=pub_stage.get)
    assert max(wi.by_stage, key=wi.by_stage.get) == top
    assert wi.by_stage[top] == pytest.approx(pub_stage[top], rel=0.10)
    rep = analyze_slow(d / "trace-ST.parquet")
    assert [(g.group, g.name) for g in rep.groups] == [("stage", str(top))] and not rep.stragglers


@pytest.mark.skipif(not (TRACES / "alibaba_pai2020_minibatch" / "job_1_norm.csv").exists(), reason="traces absent")
def test_alibaba_job1_worker_emerging_mid_training() -> None:
    path = TRACES / "alibaba_pai2020_minibatch" / "job_1_norm.csv"
    rep = analyze_slow(path)
    assert rep.units == "normalised"
    df = pl.read_csv(path)
    half = (df["time"].min() + df["time"].max()) / 2
    # upstream: "Straggler (worker 6) emerges in the middle of the training"
    assert [s.rank for s in rep.stragglers] == [6]
    assert rep.stragglers[0].first_step > half * 0.5 and not rep.stragglers[0].present_at_start


def test_bundle_with_a_feed_inside_an_archive_and_etpr_events(tmp_path: Path) -> None:
    import tarfile

    from diag_service.slow import analyze_bundle, etpr_events

    run = FIX / "lab_slow_rank_compute"
    with tarfile.open(tmp_path / "bundle.tar.gz", "w:gz") as t:
        t.add(run, arcname="job")
    rep = analyze_bundle(tmp_path / "bundle.tar.gz")
    direct = analyze_slow(run)
    assert rep is not None and rep.input.source.endswith("job/timing.jsonl")
    assert _key(rep) == _key(direct)
    ev = etpr_events(rep, "job-1")
    assert [e["event"] for e in ev] == ["slow_detected" for _ in rep.job_slowdown]
    assert ev[0]["time"] == rep.job_slowdown[0].start_time and ev[0]["slowdown"] == rep.job_slowdown[0].slowdown_factor
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "rank-0.log").write_text("nothing to see\n")
    assert analyze_bundle(tmp_path / "plain") is None


def test_record_lists_keep_fields_only_some_records_carry() -> None:
    """The vectorised dict path must not drop a field the first record lacks (an eval step's ``kind``)."""
    from diag_service.slow.feeds import RecordConverter

    recs = to_records(make_feed(SynthConfig(seed=3, steps=3, ranks=4)))
    recs[5] = {**recs[5], "kind": "eval", "comm_wait_s": 0.01}
    b = RecordConverter().convert(recs)
    assert len(b) == len(recs)
    assert b.kind.tolist() == [1 if i == 5 else 0 for i in range(len(recs))]
    assert np.isnan(b.comm_wait[0]) and b.comm_wait[5] == 0.01
    fast = RecordConverter().convert([{k: v for k, v in r.items() if k != "kind"} for r in recs])
    assert fast.comm_wait[5] == 0.01 and np.isnan(fast.comm_wait[4])


def test_a_json_array_of_records_is_a_feed(tmp_path: Path) -> None:
    recs = to_records(make_feed(CFG))
    (tmp_path / "timing.json").write_text(json.dumps(recs))
    a = analyze_slow(tmp_path / "timing.json")
    assert _key(a) == _key(analyze_slow(_write_jsonl(tmp_path / "timing.jsonl", recs))) and a.input.format == "json"
    (tmp_path / "obj.json").write_text('[{"rank": 0, "step": 1}')  # truncated
    with pytest.raises(FeedError, match="not valid JSON"):
        analyze_slow(tmp_path / "obj.json")
    (tmp_path / "nums.json").write_text("[1, 2, 3]")
    with pytest.raises(FeedError, match="no usable step records"):
        analyze_slow(tmp_path / "nums.json")


def test_a_record_with_an_absurd_rank_or_step_is_rejected_not_allocated_for() -> None:
    """Issue 19: rank 5e7 in one stream record made the detector allocate a 400 MB rank table."""
    from diag_service.slow import SlowDetector
    from diag_service.slow.feeds import MAX_RANK

    recs = [{"rank": r, "step": s, "start": s * 1.0, "end": s + 0.9, "compute_s": 0.5, "comm_s": 0.3}
            for s in range(30) for r in range(4)]
    recs += [
        {"rank": 50_000_000, "step": 31, "start": 31.0, "end": 31.9, "compute_s": 0.5, "comm_s": 0.3},
        {"rank": 10**9, "step": 31, "start": 31.0, "end": 31.9},
        {"rank": 1, "step": 2**60, "start": 31.0, "end": 31.9},
        {"rank": 1, "step": 32, "stage": 10**12, "start": 31.0, "end": 31.9, "kind": "train"},
    ]
    det = SlowDetector()
    det.update(recs[:120])
    det.update(recs[120:])  # the general path (a record with other fields) and the fast one
    rep = det.report()
    assert rep.input.bad_records == 4 and rep.input.ranks == 4
    assert any(str(MAX_RANK) in w for w in rep.input.warnings)
    assert det.rank_keys.size == 4


def test_rich_markup_in_a_node_name_is_printed_as_text(tmp_path: Path) -> None:
    """Issue 19: a node name "[/]" from a feed crashed `diag slow` (Rich read it as a closing tag)."""
    feed = tmp_path / "timing.jsonl"
    rows = []
    for s in range(60):
        rows.append({"rank": 0, "node": "[bold red]gpu-node-001", "step": s, "start": s, "end": s + 0.5,
                     "compute_s": 0.3, "comm_s": 0.2})
        rows.append({"rank": 1, "node": "[/]", "step": s, "start": s, "end": s + 0.9, "compute_s": 0.7, "comm_s": 0.2})
    feed.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = CliRunner().invoke(app, [str(feed)])
    assert res.exit_code == 0, res.output
    assert "[/]" in res.output


def test_a_scripts_own_step_lines_and_mmengine_lines_make_a_series(tmp_path) -> None:
    from diag_service.slow.logs import load_log_bundle

    lines = [f"17:05:{i:02d} it {10 * i} loss 1.0 time_ms {150 + i} samples/s 900 elapsed {i}s" for i in range(1, 6)]
    lines += ["Epoch 1 step 7 time: 2024-01-01 12:00:00"]  # a date is not a step time
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
    feed = load_log_bundle(tmp_path)
    assert feed.stats.format == "logs:step_lines"
    assert list(feed.batch.step) == [10, 20, 30, 40, 50]
    assert abs(float(feed.batch.step_time[0]) - 0.151) < 1e-9  # time_ms is milliseconds
    assert list(feed.batch.weight) == [1.0, 10.0, 10.0, 10.0, 10.0]  # a line covers the steps since the last
    mm = ["Iter(train) [  100/10000]  lr: 1.0e-02  eta: 2:05:08  time: 0.7522  data_time: 0.0112  memory: 3000",
          "Iter(train) [  150/10000]  lr: 1.0e-02  eta: 2:05:00  time: 0.7511  data_time: 0.0110  memory: 3000"]
    (tmp_path / "a.log").write_text("\n".join(mm) + "\n")
    feed = load_log_bundle(tmp_path)
    assert feed.stats.format == "logs:mmengine" and list(feed.batch.step) == [100, 150]
    assert abs(float(feed.batch.step_time[1]) - 0.7511) < 1e-9
