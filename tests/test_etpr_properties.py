"""Property tests of the ETPR ledger (hypothesis).

* For generated, well-formed lifecycles whose allocated time is known by construction, the buckets add
  up to the allocated time (wall and GPU-weighted), every bucket is >= 0 and ETPR is in [0, 1].
* For arbitrary event soup (any type, any order, duplicates, missing fields) the ledger never raises,
  ETPR stays in [0, 1], and no job is charged more time than its events span.
* Shifting every time, or listing the events in another order, changes nothing; more GPUs scale GPU time.
"""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diag_service.etpr import compute_ledger
from diag_service.etpr.accounting import ALLOC_BUCKET_NAMES, bucket_totals_frame
from diag_service.etpr.loaders import normalize_events, rows_to_frame
from diag_service.etpr.schema import EventType

T0 = 1_700_000_000.0
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
gap = st.floats(min_value=0.5, max_value=5000.0, allow_nan=False)


@st.composite
def lifecycle(draw, job: str) -> tuple[list[dict], float, float]:
    """Rows of one well-formed job, its allocated wall seconds and its queue + requeue wall seconds."""
    gpus = draw(st.integers(1, 64))
    t = T0 + draw(st.floats(0, 1e6))
    rows: list[dict] = [{"job": job, "event": "submitted", "time": t, "gpus": gpus}]
    allocated = waiting = 0.0
    for _alloc in range(draw(st.integers(1, 2))):
        q = draw(gap)
        waiting += q
        t += q
        a0 = t
        rows.append({"job": job, "event": "allocated", "time": t})
        for att in range(draw(st.integers(1, 3))):
            t += draw(gap)
            rows.append({"job": job, "event": "started" if att == 0 else "restart", "time": t})
            if draw(st.booleans()):
                g = draw(gap)
                t += g
                rows.append({"job": job, "event": "checkpoint_loaded", "time": t,
                             "duration": draw(st.floats(0, 2 * g))})
            if draw(st.integers(0, 9)) == 0:  # fails during start-up
                t += draw(gap)
                rows.append({"job": job, "event": "failure", "time": t})
                continue
            t += draw(gap)
            rows.append({"job": job, "event": "first_step", "time": t})
            for _ in range(draw(st.integers(0, 4))):
                g = draw(gap)
                t += g
                kind = draw(st.sampled_from(["progress", "checkpoint_saved", "slow_detected"]))
                row = {"job": job, "event": kind, "time": t}
                if kind == "progress":
                    row["throughput"] = draw(st.floats(0, 200))
                elif kind == "checkpoint_saved":
                    row["duration"] = draw(st.floats(0, 2 * g))
                else:
                    row["ratio"] = draw(st.floats(0, 1))
                rows.append(row)
            end = draw(st.sampled_from(["failure", "hang", "ok"]))
            g = draw(gap)
            t += g
            if end == "failure":
                rows.append({"job": job, "event": "failure", "time": t, "onset_time": t - draw(st.floats(0, 2 * g)),
                             "category": draw(st.sampled_from(["network", "gpu_hardware", "unknown"]))})
                if draw(st.booleans()):
                    t += draw(gap)
                    rows.append({"job": job, "event": "diagnosed", "time": t, "node": "n1"})
            elif end == "hang":
                rows.append({"job": job, "event": "hang_detected", "time": t,
                             "last_progress_time": t - draw(st.floats(0, 2 * g))})
        t += draw(gap)
        rows.append({"job": job, "event": draw(st.sampled_from(["finished", "killed", "released"])), "time": t})
        allocated += t - a0
    return rows, allocated, waiting


def wall_by_job(led) -> dict[str, dict[str, float]]:
    w = bucket_totals_frame(led.parts, ["jid"]).join(led.jobs.select("jid", "job"), on="jid")
    return {r["job"]: r for r in w.iter_rows(named=True)}


@SETTINGS
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=6, unique=True).flatmap(
    lambda ids: st.tuples(*[lifecycle(f"j{i}") for i in ids])))
def test_terms_add_up_to_allocated_time(jobs):
    rows = [r for job_rows, _, _ in jobs for r in job_rows]
    ev, _ = normalize_events(rows_to_frame(rows))
    led = compute_ledger(ev)
    w = wall_by_job(led)
    for job_rows, allocated, waiting in jobs:
        r = w[job_rows[0]["job"]]
        assert sum(r["wall_" + b] for b in ALLOC_BUCKET_NAMES) == pytest.approx(allocated, rel=1e-9, abs=1e-6)
        assert r["wall_queue"] + r["wall_requeue"] == pytest.approx(waiting, rel=1e-9, abs=1e-6)
        gpus = job_rows[0]["gpus"]
        assert r["allocated"] == pytest.approx(gpus * allocated, rel=1e-9, abs=1e-6)
        assert 0.0 <= r["etpr"] <= 1.0 + 1e-12
        assert all(r["wall_" + b] >= -1e-9 for b in ALLOC_BUCKET_NAMES)
    assert led.parts.get_column("wall_s").min() >= -1e-9


EVENTS = [e.value for e in EventType]
soup_row = st.fixed_dictionaries(
    {"job": st.sampled_from(["a", "b", "c"]), "event": st.sampled_from(EVENTS + ["bogus"]),
     "time": st.floats(T0, T0 + 1e5)},
    optional={"gpus": st.integers(-2, 16), "duration": st.floats(-10, 1e4), "throughput": st.floats(-1, 500),
              "onset_time": st.floats(T0 - 1e3, T0 + 1e5), "rollback_time": st.floats(T0 - 1e3, T0 + 1e5),
              "ratio": st.floats(-1, 3), "expected_throughput": st.floats(-1, 500),
              "category": st.sampled_from(["network", "cosmic", "unknown"]),
              "mode": st.sampled_from(["fail_stop", "fail_hang", "fail-slow", "x"]),
              "status": st.sampled_from(["succeeded", "failed"])})


@SETTINGS
@given(st.lists(soup_row, min_size=1, max_size=40))
def test_event_soup_never_breaks_the_ledger(rows):
    ev, _ = normalize_events(rows_to_frame(rows + rows[:3]))  # a few exact duplicates too
    led = compute_ledger(ev, by_week=True)
    w = wall_by_job(led)
    spans = ev.group_by("job").agg(span=pl.col("time").max() - pl.col("time").min())
    for job, span in spans.iter_rows():
        if job not in w:
            continue
        r = w[job]
        total = sum(r["wall_" + b] for b in [*ALLOC_BUCKET_NAMES, "queue", "requeue"])
        assert total <= span + 1e-6
        if r["etpr"] is not None:
            assert 0.0 <= r["etpr"] <= 1.0 + 1e-12
    assert led.parts.height == 0 or led.parts.get_column("wall_s").min() >= -1e-9


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lifecycle("x"), st.floats(-1e8, 1e8), st.integers(1, 7), st.randoms(use_true_random=False))
def test_shift_permutation_and_gpu_scaling_invariance(job, shift, k, rnd):
    rows, _, _ = job
    base = wall_by_job(compute_ledger(normalize_events(rows_to_frame(rows))[0]))["x"]
    moved = [dict(r, time=r["time"] + shift, **({"onset_time": r["onset_time"] + shift} if "onset_time" in r else {}),
                  **({"last_progress_time": r["last_progress_time"] + shift} if "last_progress_time" in r else {}))
             for r in rows]
    rnd.shuffle(moved)
    other = wall_by_job(compute_ledger(normalize_events(rows_to_frame(moved))[0]))["x"]
    for b in ALLOC_BUCKET_NAMES:
        assert other["wall_" + b] == pytest.approx(base["wall_" + b], rel=1e-6, abs=1e-3)
    scaled = [dict(r, gpus=r["gpus"] * k) if "gpus" in r else r for r in rows]
    s = wall_by_job(compute_ledger(normalize_events(rows_to_frame(scaled))[0]))["x"]
    assert s["allocated"] == pytest.approx(k * base["allocated"], rel=1e-9)
    assert s["etpr"] == pytest.approx(base["etpr"], rel=1e-9, abs=1e-12)
