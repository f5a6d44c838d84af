"""Collective traces (``comm_wait_s``): naming the rank whose own communication is late.

The real feed is a lab run (``diag lab run slow_rank_comm``, 4 ranks on 2 nodes, gloo on CPU): from the
onset the faulty rank issues each all-reduce bucket 30 ms late, so every rank's ``comm_s`` grows alike and
only the per-rank wait for the last peer tells who is late.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from diag_service.slow import StragglerKind, analyze_slow, load_feed
from diag_service.slow.synth import Fault, SynthConfig, make_feed, to_records

RUN = Path(__file__).parent / "fixtures" / "slow" / "lab_slow_rank_comm"


def _records() -> list[dict]:
    return [json.loads(line) for line in (RUN / "timing.jsonl").read_text().splitlines() if line.strip()]


def _write(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_lab_slow_link_is_named_from_the_collective_trace() -> None:
    truth = json.loads((RUN / "truth.json").read_text())
    rep = analyze_slow(RUN / "timing.jsonl")
    assert [s.rank for s in rep.stragglers] == [truth["faulty_rank"]]
    s = rep.stragglers[0]
    assert s.kind is StragglerKind.COMMUNICATION and s.node == truth["faulty_node"]
    assert truth["onset_step"] <= s.detected_at_step <= truth["onset_step"] + 20
    assert abs(s.first_step - truth["onset_step"]) <= 3
    assert s.slowdown_factor > 2  # its own part of the all-reduce, against the peers' own parts
    # the evidence shows why: it waited (almost) nothing while its own part was long
    ev = s.evidence[0]
    assert ev.comm_wait_s is not None and ev.comm_wait_s < 0.01 and ev.comm_s > 2 * ev.peer_comm_s
    assert rep.category.value == "network"
    assert rep.job_slowdown and rep.job_slowdown[0].kind is StragglerKind.COMMUNICATION


def test_without_the_trace_the_same_run_names_no_rank(tmp_path: Path) -> None:
    recs = _records()
    for r in recs:
        r.pop("comm_wait_s", None)
    rep = analyze_slow(_write(tmp_path / "timing.jsonl", recs))
    assert rep.stragglers == [] and rep.groups == []
    assert rep.job_slowdown and rep.job_slowdown[0].kind is StragglerKind.COMMUNICATION


def test_csv_alias_and_bad_waits(tmp_path: Path) -> None:
    recs = _records()
    pl.DataFrame(recs).rename({"comm_wait_s": "wait_s"}).write_csv(tmp_path / "timing.csv")
    a, b = analyze_slow(RUN / "timing.jsonl"), analyze_slow(tmp_path / "timing.csv")
    assert [(s.rank, s.kind, s.first_step) for s in a.stragglers] == [(s.rank, s.kind, s.first_step) for s in b.stragglers]
    # a wait longer than the communication phase (clock skew between hosts) counts as the whole phase;
    # a negative one is an invalid record
    skewed = [dict(r) for r in recs]
    for r in skewed:
        if r["rank"] == 0:
            r["comm_wait_s"] = r["comm_s"] * 5
    skewed[0]["comm_wait_s"] = -1.0
    feed = load_feed(_write(tmp_path / "skewed.jsonl", skewed))
    assert feed.stats.bad_records == 1
    rep = analyze_slow(feed)
    assert all(s.rank != 0 for s in rep.stragglers)  # a rank that "waited all the time" is never the culprit


def test_traced_compute_straggler_is_still_compute_and_victims_are_not_blamed() -> None:
    cfg = SynthConfig(seed=5, steps=120, ranks=16, comm_model="traced", faults=[Fault("compute", 60, 1.6, (3,))])
    rep = analyze_slow(make_feed(cfg))
    assert [(s.rank, s.kind) for s in rep.stragglers] == [(3, StragglerKind.COMPUTE)]
    # and the traced slow link on synthetic feeds, through the record path
    cfg = SynthConfig(seed=6, steps=120, ranks=16, comm_model="traced", faults=[Fault("comm", 60, ranks=(9,), extra_s=0.2)])
    recs = to_records(make_feed(cfg))
    assert "comm_wait_s" in recs[0]
    rep = analyze_slow(recs)
    assert [(s.rank, s.kind) for s in rep.stragglers] == [(9, StragglerKind.COMMUNICATION)]
    assert 60 <= rep.stragglers[0].detected_at_step <= 80  # issue 7: within 20 steps of the onset


def test_traced_slow_node_is_blamed_as_a_node() -> None:
    cfg = SynthConfig(seed=7, steps=120, ranks=24, ranks_per_node=8, comm_model="traced",
                      faults=[Fault("comm", 50, ranks="node:node2", extra_s=0.3)])
    rep = analyze_slow(make_feed(cfg))
    nodes = [(g.group, g.name, g.kind) for g in rep.groups]
    assert ("node", "node2", StragglerKind.COMMUNICATION) in nodes
    assert {s.rank for s in rep.stragglers} <= set(range(16, 24))  # only node2's ranks, if any
    assert all(g.name == "node2" for g in rep.groups)


def test_a_partial_trace_is_not_used_and_says_so(tmp_path: Path) -> None:
    recs = _records()
    for r in recs:
        if r["rank"] in (0, 3):  # two ranks' collector lost its traces
            r.pop("comm_wait_s", None)
    rep = analyze_slow(_write(tmp_path / "timing.jsonl", recs))
    assert rep.stragglers == []  # no rank blamed for keeping its wait in its communication time
    assert any("comm_wait_s for only some ranks" in w for w in rep.input.warnings)
    assert rep.job_slowdown and rep.job_slowdown[0].kind is StragglerKind.COMMUNICATION
