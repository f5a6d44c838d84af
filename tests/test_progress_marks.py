"""Training-progress marks read by the extractor (``ProgressLog.series``): a step counter's own word, not a
configuration key or a timer that ends in ``step`` (DeepSpeed's ``fwd_microstep: 298.18`` was read as step 298,
``warmup_steps = 2000`` as step 2000, and a job's real steps after it then looked like no progress)."""

from __future__ import annotations

from pathlib import Path

from diag_service.domain import InputReport
from diag_service.extract import ProgressLog, extract_events
from diag_service.ingest import read_bundle

FIXTURE = Path(__file__).parent / "fixtures" / "slow" / "logs" / "deepspeed.log"


def _series(path: Path) -> dict[tuple, list[tuple[float, int]]]:
    pl = ProgressLog()
    list(extract_events(read_bundle(path, InputReport(path=str(path))), pl))
    return {k: list(v) for k, v in pl.series.items()}


def test_deepspeed_timer_lines_are_not_steps() -> None:
    """DeepSpeed's wall_clock_breakdown line (``fwd_microstep: 298.18 | bwd_microstep: 687.51``) beside its
    ``step=N, skipped=0`` and ``global_step=N`` lines: only the step counters count."""
    series = _series(FIXTURE)
    steps = sorted({s for pts in series.values() for _, s in pts})
    assert steps and max(steps) == 40
    for pts in series.values():
        ordered = [s for _, s in pts]
        assert ordered == sorted(ordered)


def test_configuration_dumps_are_not_steps(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"
    p.write_text(
        "[2024-11-14 09:00:08,907] [INFO] [config.py:211:dump] warmup_steps              = 2000\n"
        "[2024-11-14 09:00:08,907] [INFO] [config.py:211:dump] max_steps = 10000\n"
        "[2024-11-14 09:00:08,908] [INFO] [config.py:211:dump] save_steps: 500\n"
        + "".join(f"[2024-11-14 09:0{i}:00,000] [INFO] [train.py:140:train] step {i} | loss 3.1\n" for i in range(1, 6))
    )
    steps = sorted({s for pts in _series(p).values() for _, s in pts})
    assert steps == [1, 2, 3, 4, 5]
