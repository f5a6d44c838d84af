"""ETPR event sources: the registry (one ``load_events(path, source=...)`` entry point, auto-detection) and
job ids for events that carry none (issue 19, finding 10: a lab run's own ``events.jsonl``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from diag_service.etpr import EtprInputError, EtprReport, compute_ledger, load_events
from diag_service.etpr.cli import app
from diag_service.etpr.loaders import FORMATS, detect_format
from diag_service.etpr.sources import register_source, sources
from diag_service.etpr.sources.base import LoadOptions, rows_to_frame

FIX = Path(__file__).parent / "fixtures" / "etpr"
RUN = FIX / "lab_stop_sigkill_restart"


def codes(issues) -> set[str]:  # noqa: ANN001 - list of Issue
    return {i.code for i in issues}


# ---- a lab run's own events.jsonl (issue 19, finding 10) ----

def test_lab_events_file_takes_the_job_id_of_its_run():
    ev_file, issues = load_events(RUN / "events.jsonl")
    ev_dir, _ = load_events(RUN)
    assert "missing_job" not in codes(issues)
    assert set(ev_file.get_column("job")) == {"lab_stop_sigkill_restart"}
    assert ev_file.equals(ev_dir)  # the same events as the run folder (with its timing and truth)
    led = compute_ledger(ev_file)
    assert (led.jobs.row(0, named=True)["attempts"], led.jobs.height) == (2, 1)


def test_cli_on_lab_events_file_reports_an_etpr():
    res = CliRunner().invoke(app, [str(RUN / "events.jsonl"), "--json"])
    assert res.exit_code == 0, res.output
    rep = EtprReport.model_validate_json(res.stdout)
    assert rep.jobs == 1 and rep.cluster.etpr is not None and 0.0 < rep.cluster.etpr < 1.0
    assert "missing_job" not in codes(rep.issues)


def test_events_without_job_ids_say_how_to_give_one_and_job_id_option_gives_it(tmp_path):
    # the lab's event lines on their own (no run.json / truth.json beside them): nothing names the job
    lone = tmp_path / "events.jsonl"
    shutil.copy(RUN / "events.jsonl", lone)
    assert detect_format(lone) == "events"
    ev, issues = load_events(lone)
    assert ev.height == 0
    miss = next(i for i in issues if i.code == "missing_job")
    assert "--job-id" in miss.message
    res = CliRunner().invoke(app, [str(lone), "--job-id", "train-42", "--json"])
    assert res.exit_code == 0, res.output
    rep = EtprReport.model_validate_json(res.stdout)
    assert [a.job for a in rep.job_accounts] == ["train-42"] and rep.cluster.etpr is not None
    assert "missing_job" not in codes(rep.issues)


def test_job_id_fills_only_rows_without_one(tmp_path):
    f = tmp_path / "mixed.jsonl"
    rows = [{"job": "a", "event": "started", "time": 0, "gpus": 2}, {"event": "started", "time": 0, "gpus": 4},
            {"job_id": "b", "event": "started", "time": 0}, {"job": "", "event": "first_step", "time": 5},
            {"job": "a", "event": "finished", "time": 10, "status": "succeeded"}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ev, issues = load_events(f, job_id="x")
    assert ev.get_column("job").to_list() == ["a", "x", "b", "x", "a"]
    assert "missing_job" not in codes(issues)


def test_job_id_names_a_lab_run_and_is_refused_for_a_suite():
    ev, _ = load_events(RUN, job_id="sigkill-1")
    assert set(ev.get_column("job")) == {"sigkill-1"}
    with pytest.raises(EtprInputError, match="2 lab runs"):
        load_events(FIX, job_id="one")
    res = CliRunner().invoke(app, [str(FIX), "--job-id", "one"])
    assert res.exit_code == 2 and "2 lab runs" in res.output
    with pytest.raises(EtprInputError, match="empty"):
        load_events(RUN, job_id=" ")


# ---- the registry ----

def test_auto_detection_and_named_sources():
    assert detect_format(FIX) == "lab"
    assert detect_format(RUN) == "lab"
    assert detect_format(FIX / "synthetic_philly_cluster_job_log.json") == "philly"
    assert detect_format(FIX / "synthetic_timelines.jsonl") == "events"
    assert {"auto", "events", "lab", "live", "glm130b", "philly", "stepfun"} == set(FORMATS)
    assert [s.name for s in sources()][-1] == "events"  # accepts any path, so it is tried last
    a, _ = load_events(FIX / "synthetic_philly_cluster_job_log.json")
    b, _ = load_events(FIX / "synthetic_philly_cluster_job_log.json", source="philly")
    assert a.equals(b) and a.height > 0
    with pytest.raises(EtprInputError, match="unknown format 'sacct'; one of auto, live, lab"):
        load_events(FIX / "synthetic_timelines.jsonl", source="sacct")


def test_a_registered_source_is_detected_and_read(tmp_path):
    def load(path: Path, issues: list, options: LoadOptions) -> pl.DataFrame:
        lines = path.read_text().split()
        return rows_to_frame([{"job": "k", "event": e, "time": i * 10.0, "gpus": 1} for i, e in enumerate(lines)])

    register_source("words_test", detect=lambda p: p.suffix == ".words", priority=50, description="test")(load)
    try:
        f = tmp_path / "x.words"
        f.write_text("started first_step finished")
        assert detect_format(f) == "words_test"
        ev, _ = load_events(f)
        assert ev.get_column("event").cast(pl.String).to_list() == ["started", "first_step", "finished"]
        with pytest.raises(ValueError, match="already registered"):
            register_source("words_test", detect=lambda p: False, priority=1, description="")(load)
    finally:
        from diag_service.etpr import sources as registry

        registry._SOURCES.pop("words_test", None)


def test_quantile_assumption_examples_are_in_job_order():
    # the full join behind the expected-rate rule returned jobs in hash order, so the examples changed
    # from run to run; they follow the job table now, like every other issue's examples
    ev, _ = load_events(FIX, use_truth=False)
    for _ in range(8):
        led = compute_ledger(ev)
        (q,) = [i for i in led.issues if i.code == "expected_throughput_quantile"]
        assert q.examples == led.jobs.get_column("job").to_list()[:5]


def test_lab_source_named_on_another_file_is_an_input_error():
    with pytest.raises(EtprInputError, match="events.jsonl"):
        load_events(RUN / "timing.jsonl", source="lab")
    ev, _ = load_events(RUN / "events.jsonl", source="lab")
    assert set(ev.get_column("job")) == {"lab_stop_sigkill_restart"}


def test_time_between_steps_is_not_a_slower_rate_when_the_steps_give_their_own_time():
    # trial 44 r14: a clean 2-rank run evaluating every 40 steps (a 3 s pause between two steps) was booked 18.5 %
    # reduced quality, the pause read as a slow stretch; the steps' own times say the rate never changed
    from diag_service.etpr.sources.lab import timing_progress

    recs, t = [], 1000.0
    for step in range(1, 81):
        if step == 41:
            t += 3.0  # an evaluation pass between steps 40 and 41
        t += 0.25
        recs += [{"step": step, "rank": r, "step_time_s": 0.25, "end": t} for r in (0, 1)]
    rates = [p["throughput"] for p in timing_progress(recs, "j")]
    assert len(rates) == 15 and max(rates) == pytest.approx(4.0) and min(rates) == pytest.approx(4.0)
    # without a step time of their own, the records keep the wall-clock rate (the pause slows its sample)
    bare = [{k: v for k, v in r.items() if k != "step_time_s"} for r in recs]
    assert min(p["throughput"] for p in timing_progress(bare, "j")) < 2.0
