"""The columnar ledger gives the numbers it gave before its optimisation (commit 86d39d8's implementation).

A few thousand synthetic jobs (the benchmark's generator, seeded), clean and "messy" (3% of the events
dropped, 2% duplicated, no expected_throughput for half of the jobs so that the quantile rule applies,
2% of the times moved back by 5000 s): the cluster buckets, the per-job means, the issue counts and a
fingerprint of the per-job bucket totals (sum, sum of squares, and sum weighted by the job's rank in name
order, per bucket; GPU-seconds) must match the values the pre-optimisation implementation produced, to a
relative 1e-9. There is one ledger implementation; this pins the optimised one to the old one's output.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from diag_service.etpr import build_report, compute_ledger
from diag_service.etpr.accounting import job_totals_frame
from diag_service.etpr.loaders import normalize_events
from diag_service.etpr.schema import Bucket
from diag_service.etpr.synth import synth_events

#: Computed by the implementation of commit 86d39d8 (before the optimisation) on the inputs below.
PINNED = {
    "clean": {
        "cluster": {
            "productive": 12259376777.448015,
            "scheduling": 16776861.060951233,
            "init": 82213550.23371887,
            "ckpt_load": 29079419.252887726,
            "detection": 7980448.486415863,
            "hang": 2398905.182909012,
            "diagnosis": 48133787.62545776,
            "recovery": 24992288.7105999,
            "lost_work": 1299367597.852499,
            "ckpt_stall": 18915162.500593185,
            "slow": 204440849.34248108
        },
        "queue": 185415126.6865387,
        "requeue": 0.0,
        "job_etpr_mean": 0.8609002206499363,
        "job_ettr_mean": 0.8785396600018328,
        "issues": [
            [
                "out_of_order",
                16743
            ]
        ],
        "jobs": {
            "productive": [
                12259376777.448017,
                4.609599933513997e+17,
                18922938718444.4
            ],
            "scheduling": [
                16776861.060951233,
                1196241890491.3347,
                25545852592.055443
            ],
            "init": [
                82213550.23371887,
                18119217776598.742,
                125295986019.43134
            ],
            "ckpt_load": [
                29079419.252887726,
                2306176995859.126,
                43455555357.72676
            ],
            "detection": [
                7980448.486415863,
                1212099308498.1064,
                14516254873.121294
            ],
            "hang": [
                2398905.182909012,
                335721665283.4467,
                3921549145.684181
            ],
            "diagnosis": [
                48133787.62545776,
                65910961853953.336,
                86706196749.47174
            ],
            "recovery": [
                24992288.7105999,
                9379512476544.139,
                41351928195.97836
            ],
            "lost_work": [
                1299367597.852499,
                1.2924364004003372e+16,
                2187861009268.9521
            ],
            "ckpt_stall": [
                18915162.500593185,
                883456203734.7856,
                28856640796.442833
            ],
            "slow": [
                204440849.34248108,
                1541111652019897.8,
                342130511189.67334
            ],
            "queue": [
                185415126.6865387,
                148560311355667.06,
                294956044089.08075
            ],
            "requeue": [
                0.0,
                0.0,
                0.0
            ]
        }
    },
    "messy": {
        "cluster": {
            "productive": 11922162171.25544,
            "scheduling": 39403261.5996232,
            "init": 236302724.37789488,
            "ckpt_load": 27225827.609903336,
            "detection": 7099809.193753481,
            "hang": 1989782.0792310238,
            "diagnosis": 51660470.37050319,
            "recovery": 53076596.59724665,
            "lost_work": 1270143492.8457053,
            "ckpt_stall": 17872194.118118763,
            "slow": 182648528.17585766
        },
        "queue": 194541053.3273983,
        "requeue": 2328545.799232483,
        "job_etpr_mean": 0.8404385433115162,
        "job_ettr_mean": 0.8559280468658235,
        "issues": [
            [
                "allocated_while_allocated",
                134
            ],
            [
                "allocation_from_first_activity",
                86
            ],
            [
                "allocation_from_started",
                149
            ],
            [
                "diagnosed_without_failure",
                26
            ],
            [
                "duplicate_event",
                673
            ],
            [
                "duplicate_first_step",
                23
            ],
            [
                "event_after_end",
                32
            ],
            [
                "expected_throughput_quantile",
                1500
            ],
            [
                "failure_outside_allocation",
                13
            ],
            [
                "failure_then_success",
                3
            ],
            [
                "first_step_without_restart",
                42
            ],
            [
                "missing_first_step",
                154
            ],
            [
                "no_gpus",
                97
            ],
            [
                "out_of_order",
                16299
            ],
            [
                "progress_after_failure",
                5
            ],
            [
                "restart_outside_allocation",
                16
            ],
            [
                "restart_without_failure",
                45
            ],
            [
                "started_while_running",
                63
            ],
            [
                "submitted_while_active",
                182
            ]
        ],
        "jobs": {
            "productive": [
                11922162171.25544,
                4.547585775506326e+17,
                18502400516617.56
            ],
            "scheduling": [
                39403261.5996232,
                44486414937540.25,
                63550745139.09877
            ],
            "init": [
                236302724.37789488,
                608609032444269.6,
                331375308817.34045
            ],
            "ckpt_load": [
                27225827.609903336,
                2176739357011.9238,
                40720138429.6714
            ],
            "detection": [
                7099809.193753481,
                1008077568272.438,
                12566949778.906553
            ],
            "hang": [
                1989782.0792310238,
                269860947727.5709,
                3186174220.854642
            ],
            "diagnosis": [
                51660470.37050319,
                104083130422754.52,
                95647550822.43721
            ],
            "recovery": [
                53076596.59724665,
                90100413191997.44,
                75590865698.82979
            ],
            "lost_work": [
                1270143492.8457053,
                1.4410048432385092e+16,
                2121980983264.631
            ],
            "ckpt_stall": [
                17872194.118118763,
                807154078175.999,
                27488953596.573067
            ],
            "slow": [
                182648528.17585766,
                1294793017955941.2,
                303764455978.2025
            ],
            "queue": [
                194541053.3273983,
                226560900190599.84,
                315398946862.7517
            ],
            "requeue": [
                2328545.799232483,
                2304912304430.6636,
                4648905498.218052
            ]
        }
    }
}


def _messy(raw: pl.DataFrame) -> pl.DataFrame:
    rng = np.random.default_rng(5)
    m = raw.filter(pl.Series(rng.random(raw.height) > 0.03))
    m = pl.concat([m, m.sample(fraction=0.02, seed=1)])
    odd = pl.col("job").str.slice(-1).is_in(["1", "3", "5", "7", "9"])
    return m.with_columns(expected_throughput=pl.when(odd).then(None).otherwise(pl.col("expected_throughput")),
                          time=pl.when(pl.Series(rng.random(m.height) < 0.02)).then(pl.col("time") - 5000.0)
                          .otherwise(pl.col("time"))).sample(fraction=1.0, shuffle=True, seed=2)


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


@pytest.fixture(scope="module")
def raw() -> pl.DataFrame:
    return synth_events(3000, seed=3)


@pytest.mark.parametrize("variant", ["clean", "messy"])
def test_matches_pre_optimisation_numbers(raw: pl.DataFrame, variant: str) -> None:
    events = raw if variant == "clean" else _messy(raw)
    ev, issues = normalize_events(events)
    led = compute_ledger(ev)
    rep = build_report(led, source="synthetic", issues=issues)
    want = PINNED[variant]
    for b, v in want["cluster"].items():
        assert _close(rep.cluster.buckets_gpu_s[b], v), (b, rep.cluster.buckets_gpu_s[b], v)
    assert _close(rep.cluster.queue_gpu_s, want["queue"])
    assert _close(rep.cluster.requeue_gpu_s, want["requeue"])
    assert _close(rep.job_etpr_mean, want["job_etpr_mean"])
    assert _close(rep.job_ettr_mean, want["job_ettr_mean"])
    assert sorted([i.code, i.count] for i in rep.issues) == want["issues"]
    w = job_totals_frame(led).join(led.jobs.select("jid", "job"), on="jid").sort("job")
    idx = np.arange(w.height, dtype=float)
    for b in [b.value for b in Bucket]:
        v = w.get_column(b).to_numpy()
        got = [float(v.sum()), float((v * v).sum()), float((v * idx).sum())]
        assert all(_close(x, y) for x, y in zip(got, want["jobs"][b], strict=True)), (b, got, want["jobs"][b])
