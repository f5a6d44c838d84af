"""The interleaved overhead design of eval/bench/live_overhead.py: which steps count for which block."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("live_overhead", ROOT / "eval" / "bench" / "live_overhead.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _steps(t0: float, n: int, dt: float, rank: int = 0) -> list[dict]:
    return [{"rank": rank, "step": i, "start": t0 + i * dt, "end": t0 + (i + 1) * dt - 1e-6} for i in range(n)]


def test_block_ratios_pairs_on_with_off_and_drops_steps_across_a_boundary() -> None:
    bench = _bench()
    blocks = [(100.0, 103.0, True), (103.0, 106.0, False), (106.0, 109.0, True), (109.0, 112.0, False)]
    # 0.11 s steps while the agents run, 0.10 s while stopped; a step straddling 103.0 counts nowhere
    recs = _steps(100.0, 27, 0.11) + [{"rank": 0, "step": 99, "start": 102.95, "end": 103.2}]
    recs += _steps(103.0, 30, 0.10) + _steps(106.0, 27, 0.11) + _steps(109.0, 30, 0.10)
    recs += [{"rank": 0, "step": 500, "kind": "eval", "start": 104.0, "end": 104.5}]  # not a train step
    rows, on, off = bench.block_ratios(blocks, recs)
    assert [r["block"] for r in rows] == [0, 2]
    assert all(r["ratio_median"] == pytest.approx(1.1, rel=1e-3) for r in rows)
    assert len(on) == 54 and len(off) == 60
    assert max(off) < 0.1 + 1e-9  # neither the straddling step nor the eval step was counted


def test_block_ratios_leaves_out_pairs_with_too_few_steps() -> None:
    bench = _bench()
    blocks = [(0.0, 3.0, True), (3.0, 6.0, False)]
    rows, on, off = bench.block_ratios(blocks, _steps(0.0, 4, 0.5) + _steps(3.0, 20, 0.1))
    assert rows == [] and len(on) == 4 and len(off) == 20
