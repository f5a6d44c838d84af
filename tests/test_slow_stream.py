"""Streaming detector: same answer as batch; out-of-order, duplicate, missing and bad records handled."""

from __future__ import annotations

import numpy as np
import pytest

from diag_service.slow import SlowConfig, SlowDetector, SlowReport, analyze_slow
from diag_service.slow.synth import Fault, SynthConfig, iter_steps, make_feed, to_records

CFG = SynthConfig(seed=21, steps=120, ranks=16, faults=[Fault("compute", 50, 1.6, (6,)), Fault("job", 90, 1.3)])


def _essence(r: SlowReport) -> dict:
    """The findings, without timings and input bookkeeping."""
    d = r.model_dump(mode="json", exclude={"timings_ms", "input", "log_evidence"})
    for a in d["alarms"]:
        a.pop("time", None)
    return d


def test_streaming_equals_batch() -> None:
    batch = analyze_slow(make_feed(CFG))
    det = SlowDetector()
    raised = []
    for b in iter_steps(CFG):
        raised += det.update(to_records(b))  # the lab's dicts, one call per step
    stream = det.report()
    assert _essence(stream) == _essence(batch)
    assert [a.message for a in raised] == [a.message for a in stream.alarms]
    assert {a.scope for a in raised} >= {"job", "rank"}
    assert stream.input.records == batch.input.records == CFG.steps * CFG.ranks


def test_alarm_is_raised_by_the_update_that_completes_the_step() -> None:
    det = SlowDetector()
    first_rank_alarm = None
    for b in iter_steps(CFG):
        for a in det.update(b):
            if a.scope == "rank" and first_rank_alarm is None:
                first_rank_alarm = (int(b.step[0]), a)
    assert first_rank_alarm is not None
    step, alarm = first_rank_alarm
    assert alarm.step == step and alarm.subject == "6" and 50 <= step <= 70
    assert alarm.evidence and alarm.evidence[0].rank == 6 and alarm.evidence[0].compute_s > alarm.evidence[0].peer_compute_s


def test_out_of_order_and_duplicates_within_the_lag() -> None:
    recs = [r for b in iter_steps(CFG) for r in to_records(b)]
    rng = np.random.default_rng(3)
    # shuffle within windows of two steps; a collector retry re-sends 5 % of the records right away
    key = np.array([r["step"] // 2 for r in recs]) + rng.random(len(recs)) * 0.9
    shuffled = [recs[i] for i in np.argsort(key, kind="stable")]
    resend = set(rng.choice(len(shuffled), len(shuffled) // 20, replace=False).tolist())
    stream = []
    for i, r in enumerate(shuffled):
        stream.append(r)
        if i in resend:
            stream.append(dict(r))
    stream.insert(len(stream) // 3, dict(recs[-1]))  # one stray record from the last step, far ahead
    dups = len(resend) + 1
    det = SlowDetector()
    for i in range(0, len(stream), 37):  # arbitrary chunks that cut across steps
        det.update(stream[i: i + 37])
    rep = det.report()
    ref = analyze_slow(recs)
    assert [(s.rank, s.kind, s.first_step) for s in rep.stragglers] == [(s.rank, s.kind, s.first_step) for s in ref.stragglers]
    assert [(e.start_step, e.detected_at_step) for e in rep.job_slowdown] == [
        (e.start_step, e.detected_at_step) for e in ref.job_slowdown]
    assert rep.input.out_of_order > 0
    assert rep.input.duplicates == dups and rep.input.late == 0
    assert any("duplicate" in w or "after their step" in w for w in rep.input.warnings)


def test_duplicate_of_a_restarted_attempt_wins() -> None:
    slow = to_records(make_feed(SynthConfig(seed=22, steps=90, faults=[Fault("compute", 40, 2.0, (3,))])))
    normal = to_records(make_feed(SynthConfig(seed=22, steps=90)))
    for r in slow:
        r["attempt"] = 0
    assert [s.rank for s in analyze_slow(slow).stragglers] == [3]  # the failed attempt alone blames rank 3
    redo = [dict(r, attempt=1) for r in normal if r["step"] >= 40]  # the restart replays steps 40-89 normally
    rep = analyze_slow(slow + redo)
    assert rep.input.duplicates == len(redo)
    assert not rep.stragglers


def test_missing_ranks_and_steps() -> None:
    b = make_feed(SynthConfig(seed=23, steps=150, faults=[Fault("compute", 70, 1.6, (9,))]))
    rng = np.random.default_rng(4)
    keep = rng.random(len(b)) > 0.05  # 5 % of the records lost
    keep &= ~np.isin(b.step, [40, 41, 90])  # three whole steps lost
    keep &= ~((b.rank == 2) & (b.step >= 100))  # rank 2 stops reporting
    rep = analyze_slow(b.take(keep))
    assert [s.rank for s in rep.stragglers] == [9]
    assert rep.stragglers[0].detected_at_step <= 90
    assert rep.input.incomplete_steps > 50 and rep.input.steps == 147
    assert any("missing some ranks" in w for w in rep.input.warnings)
    clean = make_feed(SynthConfig(seed=24, steps=150))
    keep = rng.random(len(clean)) > 0.1
    assert analyze_slow(clean.take(keep)).failure_mode is None


def test_late_records_are_counted_and_dropped() -> None:
    det = SlowDetector(SlowConfig(max_lag_steps=2))
    steps = list(iter_steps(SynthConfig(seed=25, steps=40)))
    held = steps[5].take(np.array([0]))
    for i, b in enumerate(steps):
        det.update(b.take(np.arange(1, len(b))) if i == 5 else b)
    det.update(held)  # 34 steps late
    rep = det.report()
    assert rep.input.late == 1 and rep.input.incomplete_steps == 1


def test_bad_records_never_raise() -> None:
    good = to_records(next(iter_steps(SynthConfig(seed=26, ranks=4, steps=1))))
    bad = [
        {"rank": 0, "step": -1, "start": 1.0, "end": 2.0},
        {"rank": 1, "step": 3, "start": 5.0, "end": 4.0},
        {"rank": 2, "step": 3, "compute_s": -0.5},
        {"rank": 3, "step": 3, "compute_s": float("nan")},
        {"rank": "x", "step": 3},
        {"step": 3.5, "rank": 1},
        {"rank": True, "step": 3},
        "not a record",
        None,
        {"rank": 1},
    ]
    det = SlowDetector()
    det.update(good + bad)
    det.update([])
    rep = det.report()
    assert rep.input.bad_records == len(bad)
    assert rep.input.records == len(good)
    assert rep.failure_mode is None
    # a stream says why, as a file's report does
    assert any(w.startswith(f"{len(bad)} record(s) were invalid") and "negative" in w for w in rep.input.warnings)


def test_state_is_bounded() -> None:
    cfg = SlowConfig(max_alarms=5, max_lag_steps=3)
    det = SlowDetector(cfg)
    many = SynthConfig(seed=27, ranks=24, steps=200,
                       faults=[Fault("compute", 40 + 10 * k, 1.8, (k,)) for k in range(12)])
    sizes = []
    for b in iter_steps(many):
        det.update(b.take(np.argsort(-b.rank)))
        sizes.append(len(det.pending))
        assert det.job.held is None or det.job.held.step >= int(b.step[0]) - 1
    rep = det.report()
    assert max(sizes) <= cfg.max_lag_steps + 1
    assert len(rep.alarms) == 5 and len(rep.stragglers) >= 10
    assert det.ranks.cap <= max(64, 2 * many.ranks) and det.ranks._bufs is None  # sized by ranks; buffer freed


@pytest.mark.parametrize("world", [None, 16])
def test_world_size_known_or_learned(world: int | None) -> None:
    det = SlowDetector(world_size=world)
    for b in iter_steps(SynthConfig(seed=28, steps=30)):
        det.update(b)
        assert len(det.pending) == 0  # every step is complete when its last rank arrives
    assert det.report().input.steps == 30
