"""ETPR accounting: hand-built timelines with known answers, input problems, loaders, report and CLI.

Known answers are worked out by hand in the comments (seconds; GPU-seconds = GPUs x seconds) and must match
to 0.1 percentage point (ETPR) or 1e-6 relative (bucket seconds).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from diag_service.etpr import EtprEvent, EtprReport, build_report, compute_ledger, load_events, render_html
from diag_service.etpr.cli import app
from diag_service.etpr.loaders import normalize_events, rows_to_frame
from diag_service.etpr.report import bucket_totals_frame

FIX = Path(__file__).parent / "fixtures" / "etpr"
TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces"
T = 1_700_000_000.0


def ledger_of(rows: list[dict], **kw):
    ev, issues = normalize_events(rows_to_frame(rows))
    led = compute_ledger(ev, **kw)
    return led, issues + led.issues


def job_wall(led, job: str) -> dict[str, float]:
    """Wall seconds per bucket (and etpr) for one job."""
    w = bucket_totals_frame(led.parts, ["jid"]).join(led.jobs.select("jid", "job"), on="jid")
    row = w.filter(pl.col("job") == job).row(0, named=True)
    return {k[len("wall_"):]: v for k, v in row.items() if k.startswith("wall_")} | {"etpr": row["etpr"],
                                                                                     "gpu_alloc": row["allocated"]}


def codes(issues) -> set[str]:
    return {i.code for i in issues}


@pytest.fixture(scope="module")
def timelines():
    ev, issues = load_events(FIX / "synthetic_timelines.jsonl", jobs=FIX / "synthetic_jobs.csv")
    led = compute_ledger(ev)
    return led, issues + led.issues


def test_clean_job_known_answer(timelines):
    # allocated 100..3460 = 3360 s; scheduling 100..160; init 160..280 + 400..460; ckpt load 280..400;
    # productive 460..1400 + 1460..3460 = 2940; ckpt stall 1400..1460; queue 0..100.
    led, _ = timelines
    w = job_wall(led, "clean")
    assert w["allocated"] == pytest.approx(3360)
    assert w["scheduling"] == pytest.approx(60)
    assert w["init"] == pytest.approx(180)
    assert w["ckpt_load"] == pytest.approx(120)
    assert w["ckpt_stall"] == pytest.approx(60)
    assert w["productive"] == pytest.approx(2940)
    assert w["queue"] == pytest.approx(100)
    assert 100 * w["etpr"] == pytest.approx(100 * 2940 / 3360, abs=0.1)
    assert w["gpu_alloc"] == pytest.approx(8 * 3360)


def test_fail_stop_detection_diagnosis_recovery_lost_work(timelines):
    # init 0..100; productive 100..1100; lost 1100..1500 (since the checkpoint); detection 1500..1600;
    # diagnosis 1600..1900; recovery 1900..2200; re-init 2200..2300; productive 2300..4300.
    led, _ = timelines
    w = job_wall(led, "failstop")
    assert (w["init"], w["lost_work"], w["detection"], w["diagnosis"], w["recovery"]) == pytest.approx(
        (200, 400, 100, 300, 300))
    assert w["productive"] == pytest.approx(3000)
    assert 100 * w["etpr"] == pytest.approx(69.77, abs=0.1)
    # every failure-caused second is attributed to the network failure on n7, re-init included
    p = led.parts.join(led.jobs.select("jid", "job"), on="jid").filter(pl.col("job") == "failstop")
    by = p.group_by(["category", "node", "phase"]).agg(pl.col("wall_s").sum())
    net = by.filter((pl.col("category") == "network") & (pl.col("node") == "n7"))
    assert net.get_column("wall_s").sum() == pytest.approx(400 + 100 + 300 + 300 + 100)
    assert set(net.get_column("phase").cast(pl.String)) == {"lost_work", "detection", "diagnosis", "recovery", "reinit"}


def test_hang_known_answer(timelines):
    # init 50; productive 50..550; lost 550..700; hang 700..1000; recovery 1000..1100 (no diagnosis);
    # re-init 1100..1150; productive 1150..2150. ETPR = 1500/2150.
    led, _ = timelines
    w = job_wall(led, "hang")
    assert (w["hang"], w["lost_work"], w["recovery"], w["init"]) == pytest.approx((300, 150, 100, 100))
    assert 100 * w["etpr"] == pytest.approx(100 * 1500 / 2150, abs=0.1)


def test_fail_slow_reduced_quality_and_jobs_table(timelines):
    # expected 100/s; the sample at 2000 says 50/s over 1000..2000: slow = 1000 x (1 - 0.5) = 500.
    # gpus (4) come from the jobs table.
    led, issues = timelines
    w = job_wall(led, "slowjob")
    assert w["slow"] == pytest.approx(500)
    assert w["productive"] == pytest.approx(2500)
    assert w["gpu_alloc"] == pytest.approx(4 * 3000)
    slow = led.parts.join(led.jobs.select("jid", "job"), on="jid").filter(
        (pl.col("job") == "slowjob") & (pl.col("bucket") == "slow"))
    # the slow_detected at 1100 attributes what follows it; the 100 s before it stay unattributed
    by_node = dict(slow.group_by(pl.col("node").cast(pl.String)).agg(pl.col("wall_s").sum()).iter_rows())
    assert by_node == pytest.approx({"n9": 450.0, "unknown": 50.0})
    assert "gpu_hardware" in set(slow.get_column("category").cast(pl.String))
    assert "no_gpus" not in codes(issues)


def test_requeue_outside_allocation(timelines):
    # allocated 10..130 and 200..310; requeue 130..200 is not allocated; the failed attempt's 100 s are lost.
    led, _ = timelines
    w = job_wall(led, "requeue")
    assert w["allocated"] == pytest.approx(230)
    assert w["requeue"] == pytest.approx(70)
    assert w["lost_work"] == pytest.approx(100)
    assert 100 * w["etpr"] == pytest.approx(100 * 100 / 230, abs=0.1)


def test_rollback_loses_work_past_the_last_checkpoint(timelines):
    led, _ = timelines
    w = job_wall(led, "rollback")
    assert w["lost_work"] == pytest.approx(200)
    assert 100 * w["etpr"] == pytest.approx(50.0, abs=0.1)


def test_implicit_failure_when_restart_has_no_failure():
    # first_step 0, progress 100, restart 150: failure assumed at 100 (last sign of life); lost 0..100,
    # recovery 100..150, re-init 150..160, productive 160..260.
    rows = [{"job": "a", "event": e, "time": T + t, **kw} for e, t, kw in [
        ("allocated", 0, {"gpus": 2}), ("first_step", 0, {}), ("progress", 100, {"throughput": 1}),
        ("restart", 150, {}), ("first_step", 160, {}), ("finished", 260, {})]]
    led, issues = ledger_of(rows)
    w = job_wall(led, "a")
    assert (w["lost_work"], w["recovery"], w["init"], w["productive"]) == pytest.approx((100, 50, 10, 100))
    assert "restart_without_failure" in codes(issues)


def test_killed_job_loses_work_since_checkpoint():
    rows = [{"job": "k", "event": e, "time": T + t, **kw} for e, t, kw in [
        ("allocated", 0, {"gpus": 1}), ("first_step", 10, {}), ("checkpoint_saved", 60, {}), ("killed", 100, {})]]
    led, _ = ledger_of(rows)
    w = job_wall(led, "k")
    assert w["lost_work"] == pytest.approx(40)
    assert w["productive"] == pytest.approx(50)
    modes = set(led.parts.filter(pl.col("bucket") == "lost_work").get_column("mode").cast(pl.String))
    assert modes == {"killed"}


def test_what_if_no_stragglers_and_faster_diagnosis(timelines):
    led, issues = timelines
    rep = build_report(led, source="t", issues=issues)
    wi = {w.name: w for w in rep.what_if}
    c = rep.cluster
    p, a = c.buckets_gpu_s["productive"], c.allocated_gpu_s
    assert wi["no_stragglers"].etpr == pytest.approx(p / (a - c.buckets_gpu_s["slow"]))
    assert wi["diagnosis_10x_faster"].saved_gpu_s == pytest.approx(0.9 * c.buckets_gpu_s["diagnosis"])
    assert all((w.delta_pp or 0) >= 0 for w in wi.values() if w.name != "checkpoint_2x_often")


def test_gpu_weighting_is_per_gpu_in_force():
    # 2 GPUs for 100 s, then an elastic change to 6 GPUs for 100 s: 800 GPU-s allocated.
    rows = [{"job": "e", "event": e, "time": T + t, **kw} for e, t, kw in [
        ("allocated", 0, {"gpus": 2}), ("first_step", 0, {}), ("progress", 100, {"gpus": 6, "throughput": 1}),
        ("finished", 200, {})]]
    led, _ = ledger_of(rows)
    assert job_wall(led, "e")["gpu_alloc"] == pytest.approx(800)


def test_week_split_sums_to_total():
    monday = 1_700_438_400.0  # 2023-11-20T00:00:00Z, a Monday
    rows = [{"job": "w", "event": e, "time": monday + t, **kw} for e, t, kw in [
        ("allocated", -3600, {"gpus": 1}), ("first_step", -1800, {}), ("finished", 7200, {})]]
    ev, _ = normalize_events(rows_to_frame(rows))
    led = compute_ledger(ev, by_week=True)
    wk = led.parts.group_by("week").agg(pl.col("wall_s").sum()).sort("week")
    assert wk.get_column("week").to_list() == ["2023-W46", "2023-W47"]
    assert wk.get_column("wall_s").to_list() == pytest.approx([3600, 7200])
    rep = build_report(led, source="w", by="week")
    assert {p.key for p in rep.pareto} == {"2023-W46"}  # the start-up loss falls in the first week


# ---------------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------------

def test_malformed_input_gives_warnings_not_crashes():
    ev, issues = load_events(FIX / "synthetic_malformed.jsonl")
    led = compute_ledger(ev)
    rep = build_report(led, source="malformed", issues=issues)
    got = codes(rep.issues)
    for code in ["malformed_json", "not_an_object", "unknown_event", "missing_job", "bad_time", "invalid_duration",
                 "duplicate_event", "invalid_category", "out_of_order", "no_gpus", "restart_without_failure",
                 "diagnosed_without_failure"]:
        assert code in got, code
    assert rep.cluster.etpr is not None and 0.0 <= rep.cluster.etpr <= 1.0
    dup = next(i for i in rep.issues if i.code == "duplicate_event")
    assert dup.count == 2  # the repeated checkpoint line and the repeated finished line


def test_out_of_order_events_are_sorted_and_counted():
    ordered = [{"job": "o", "event": e, "time": T + t} for e, t in [
        ("allocated", 0), ("started", 5), ("first_step", 20), ("checkpoint_saved", 50), ("finished", 100)]]
    shuffled = [ordered[i] for i in (3, 0, 4, 1, 2)]
    a, ia = ledger_of(ordered)
    b, ib = ledger_of(shuffled)
    assert job_wall(a, "o") == job_wall(b, "o")
    assert "out_of_order" not in codes(ia) and "out_of_order" in codes(ib)


def test_spurious_hang_before_first_step_is_ignored():
    # the lab's runner reports hang_detected during start-up (no step yet): that time stays pre-execution
    rows = [{"job": "h", "event": e, "time": T + t, **kw} for e, t, kw in [
        ("started", 0, {"gpus": 2}), ("hang_detected", 8, {"last_progress_time": T + 5}), ("first_step", 10, {}),
        ("finished", 30, {"status": "succeeded"})]]
    led, issues = ledger_of(rows)
    w = job_wall(led, "h")
    assert (w["init"], w["productive"], w["hang"]) == pytest.approx((10, 20, 0))
    assert {"hang_before_first_step", "allocation_from_started"} <= codes(issues)


def test_empty_and_missing_inputs(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    ev, issues = load_events(empty)
    rep = build_report(compute_ledger(ev), source="empty", issues=issues)
    assert rep.jobs == 0 and rep.cluster.etpr is None
    res = CliRunner().invoke(app, [str(tmp_path / "nope.jsonl")])
    assert res.exit_code == 2 and "no such file" in res.output


def test_event_model_validates():
    e = EtprEvent.model_validate({"job_id": 7, "event": "failure", "time": T, "category": "network", "mode": "fail_stop"})
    assert e.job == "7"
    with pytest.raises(ValidationError):
        EtprEvent.model_validate({"job": "j", "event": "failure", "time": T, "category": "cosmic_rays"})
    with pytest.raises(ValidationError):
        EtprEvent.model_validate({"job": "j", "event": "teleported", "time": T})


# ---------------------------------------------------------------------------------------------------
# loaders on real and synthetic traces
# ---------------------------------------------------------------------------------------------------

def test_lab_run_restart_real_events():
    ev, issues = load_events(FIX / "lab_stop_sigkill_restart")
    led = compute_ledger(ev)
    jobs = led.jobs.row(0, named=True)
    assert (jobs["attempts"], jobs["failures"], jobs["gpus"]) == (2, 1, 2.0)
    w = job_wall(led, "lab_stop_sigkill_restart")
    # SIGKILL 0.50 s after the step-29 checkpoint (truth onset), torchelastic restarted 7.85 s after detection
    assert w["lost_work"] == pytest.approx(0.506, abs=0.01)
    assert w["recovery"] == pytest.approx(7.848, abs=0.01)
    cats = set(led.parts.filter(pl.col("bucket") == "lost_work").get_column("category").cast(pl.String))
    assert cats == {"host_oom"}
    assert "lab_truth_attribution" in codes(issues + led.issues)


def test_lab_run_without_truth_has_unknown_category():
    ev, _ = load_events(FIX / "lab_hang_sleep_before_allreduce", use_truth=False)
    led = compute_ledger(ev)
    cats = set(led.parts.filter(pl.col("mode") != "none").get_column("category").cast(pl.String))
    assert cats == {"unknown"}


def test_philly_synthetic_fixture():
    ev, issues = load_events(FIX / "synthetic_philly_cluster_job_log.json", fmt="philly")
    led = compute_ledger(ev)
    rep = build_report(led, source="philly", issues=issues)
    acc = {a.job: a for a in rep.job_accounts}
    assert set(acc) == {"application_0001", "application_0002", "application_0003", "application_0004"}
    assert acc["application_0004"].totals.etpr is None  # never started: nothing allocated
    assert acc["application_0001"].totals.etpr == pytest.approx(1.0)
    # 0002: 4 GPUs; attempt 1 (30 min) lost, requeue 30 min, attempt 2 (20 min) fails and is lost too
    a2 = acc["application_0002"]
    assert a2.attempts == 2 and a2.failures == 2
    assert a2.wall_s["lost_work"] == pytest.approx(3000)
    assert a2.wall_s["requeue"] == pytest.approx(1800)
    assert acc["application_0003"].wall_s["lost_work"] == pytest.approx(900)
    assert {"philly_no_steps", "philly_bad_record"} <= codes(rep.issues)


@pytest.mark.skipif(not (TRACES / "training_logbooks" / "glm130b_incidents.csv").exists(),
                    reason="../shared/data/traces/training_logbooks not available")
def test_glm130b_timeline():
    ev, issues = load_events(TRACES / "training_logbooks" / "glm130b_incidents.csv")
    led = compute_ledger(ev)
    rep = build_report(led, source="glm", issues=issues)
    assert rep.jobs == 1 and rep.job_accounts[0].gpus == 768
    assert 0.85 < rep.cluster.etpr < 0.97
    # the Lustre failure: heading 2022-05-30 14:00 UTC+8, relaunch 2022-05-31 02:18:24 UTC -> 20.31 h x 768 GPUs
    storage = [a for a in rep.attribution if a.category == "storage" and a.bucket == "recovery"]
    assert sum(a.gpu_s for a in storage) / 3600 == pytest.approx(768 * (20 + 18 / 60 + 24 / 3600), rel=1e-6)
    assert {p.key for p in rep.pareto[:4]} >= {"config", "storage"}


@pytest.mark.skipif(not (TRACES / "stepfun_infinitehbd_faults" / "fault_trace.json").exists(),
                    reason="../shared/data/traces/stepfun_infinitehbd_faults not available")
def test_stepfun_replay_attributes_to_nodes():
    ev, issues = load_events(TRACES / "stepfun_infinitehbd_faults" / "fault_trace.json")
    led = compute_ledger(ev)
    rep = build_report(led, source="stepfun", by="node", issues=issues)
    assert rep.jobs == 1 and 0.5 < rep.cluster.etpr < 1.0
    assert rep.job_accounts[0].failures > 400  # 584 faults, some merged into ongoing recoveries
    assert len(rep.pareto[0].key) == 36  # a node UUID tops the Pareto
    assert "stepfun_model" in codes(rep.issues)


# ---------------------------------------------------------------------------------------------------
# report and CLI
# ---------------------------------------------------------------------------------------------------

def test_cli_json_html_and_jobs_out(tmp_path):
    html, jobs_out = tmp_path / "r.html", tmp_path / "jobs.csv"
    res = CliRunner().invoke(app, [str(FIX / "synthetic_timelines.jsonl"), "--jobs", str(FIX / "synthetic_jobs.csv"),
                                   "--json", "--html", str(html), "--jobs-out", str(jobs_out), "--by", "node"])
    assert res.exit_code == 0, res.output
    rep = EtprReport.model_validate_json(res.stdout)
    assert rep.jobs == 6 and rep.by == "node"
    assert rep.pareto[0].key == "n7"  # the network failure on n7 is the largest lever
    page = html.read_text()
    assert page.count("<script") >= 5 and "Loss waterfall" in page and "Pareto" in page and "Per-job timeline" in page
    assert "cdn.plot.ly" not in page.split("<body>", 1)[1][:2000]  # plotly.js is inline, not fetched
    tbl = pl.read_csv(jobs_out)
    assert {"job", "etpr", "productive", "lost_work"} <= set(tbl.columns) and tbl.height == 6


def test_cli_text_and_bad_option():
    runner = CliRunner()
    res = runner.invoke(app, [str(FIX / "synthetic_timelines.jsonl")])
    assert res.exit_code == 0 and res.output.startswith("ETPR ")
    assert "levers" in res.output
    res = runner.invoke(app, [str(FIX / "synthetic_timelines.jsonl"), "--by", "colour"])
    assert res.exit_code == 2


def test_html_renders_for_lab_runs():
    ev, issues = load_events(FIX)  # the fixture folder holds two lab runs
    led = compute_ledger(ev)
    rep = build_report(led, source="lab", issues=issues)
    assert rep.jobs == 2
    page = render_html(rep, led)
    assert "ETPR report" in page and json.dumps(rep.source)[1:-1] in page


def test_hang_then_successful_finish_keeps_progress():
    # the lab's runner reports hang_detected during teardown of a successful run: nothing is lost
    rows = [{"job": "t", "event": e, "time": T + t, **kw} for e, t, kw in [
        ("started", 0, {"gpus": 2}), ("first_step", 10, {}), ("hang_detected", 44, {"last_progress_time": T + 41}),
        ("finished", 47, {"status": "succeeded"})]]
    led, issues = ledger_of(rows)
    w = job_wall(led, "t")
    assert (w["productive"], w["lost_work"], w["hang"], w["recovery"]) == pytest.approx((31, 0, 3, 3))
    assert "failure_then_success" in codes(issues)


def test_registers_in_a_main_cli_as_diag_etpr():
    import typer

    main = typer.Typer()

    @main.command()
    def other() -> None:
        """Another command, so that the main app is a group like ``diag``."""

    main.add_typer(app, name="etpr")
    res = CliRunner().invoke(main, ["etpr", str(FIX / "synthetic_timelines.jsonl"), "--by", "node"])
    assert res.exit_code == 0, res.output
    assert "largest losses by node" in res.output
